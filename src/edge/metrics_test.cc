#include "edge/metrics.h"

#include <gtest/gtest.h>

namespace paddock::edge {
namespace {

TEST(MetricMethod, StandardMethodsAsTheyAreOthersAsExtension) {
  EXPECT_EQ(MetricMethod("GET"), "GET");
  EXPECT_EQ(MetricMethod("PATCH"), "PATCH");
  EXPECT_EQ(MetricMethod("TRACE"), "TRACE");
  EXPECT_EQ(MetricMethod("get"), "EXTENSION_METHOD");
  EXPECT_EQ(MetricMethod("PROPFIND"), "EXTENSION_METHOD");
  EXPECT_EQ(MetricMethod(""), "EXTENSION_METHOD");
}

// Traefik's getRequestProtocol and containsHeader: first values, items trimmed and lower-cased,
// websocket before sse before grpc-web before grpc.
TEST(MetricProtocol, IsTraefiksRequestProtocol) {
  EXPECT_EQ(MetricProtocol("", "", "", ""), "http");
  EXPECT_EQ(MetricProtocol("keep-alive, Upgrade", "WebSocket", "", ""), "websocket");
  EXPECT_EQ(MetricProtocol("keep-alive", "websocket", "", ""), "http");  // no upgrade in Connection
  EXPECT_EQ(MetricProtocol("upgrade", "h2c", "", ""), "http");
  EXPECT_EQ(MetricProtocol("", "", "text/html, Text/Event-Stream ", ""), "sse");
  EXPECT_EQ(MetricProtocol("", "", "text/event-stream;q=1", ""), "http");  // the item must equal it
  EXPECT_EQ(MetricProtocol("", "", "", "application/grpc-web+proto"), "grpc-web");
  EXPECT_EQ(MetricProtocol("", "", "", "application/grpc"), "grpc");
  EXPECT_EQ(MetricProtocol("", "", "", "application/grpc+json"), "grpc");
  EXPECT_EQ(MetricProtocol("", "", "", "Application/grpc"), "http");  // a prefix, case and all
  EXPECT_EQ(MetricProtocol("Upgrade", "websocket", "text/event-stream", "application/grpc"), "websocket");
  EXPECT_EQ(MetricProtocol("", "", "text/event-stream", "application/grpc"), "sse");
}

TEST(MetricProtocol, GrpcStatusIsTheHeadersCodeElseUnknown) {
  EXPECT_EQ(GrpcStatusCode("0"), 0);
  EXPECT_EQ(GrpcStatusCode("14"), 14);
  EXPECT_EQ(GrpcStatusCode("16"), 16);
  for (const char* bad : {"", "17", "-1", "+5", "5 ", "OK", "99999999999"}) EXPECT_EQ(GrpcStatusCode(bad), 2) << bad;
  EXPECT_TRUE(IsGrpcProtocol("grpc"));
  EXPECT_TRUE(IsGrpcProtocol("grpc-web"));
  EXPECT_FALSE(IsGrpcProtocol("sse"));
}

TEST(Histogram, BucketsAreUpperBoundsInclusive) {
  Histogram h = Histogram::RequestDurations();
  h.Observe(0.1);   // le 0.1
  h.Observe(0.2);   // le 0.3
  h.Observe(9);     // +Inf
  EXPECT_EQ(h.counts, (std::vector<uint64_t>{1, 1, 0, 0, 1}));
  EXPECT_EQ(h.count, 3u);
  EXPECT_DOUBLE_EQ(h.sum, 9.3);
}

TEST(RenderPrometheus, EmptySnapshotHasTheUnlabelledFamiliesOnly) {
  EXPECT_EQ(RenderPrometheus(MetricsSnapshot{}),
            "# HELP paddock_edge_drain_seconds How long servers taken out of the configuration took to finish "
            "their requests, from fence to release.\n"
            "# TYPE paddock_edge_drain_seconds histogram\n"
            "paddock_edge_drain_seconds_bucket{le=\"0.1\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"0.5\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"1\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"5\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"15\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"30\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"60\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"300\"} 0\n"
            "paddock_edge_drain_seconds_bucket{le=\"+Inf\"} 0\n"
            "paddock_edge_drain_seconds_sum 0\n"
            "paddock_edge_drain_seconds_count 0\n"
            "# HELP paddock_edge_drain_timeouts_total Drains whose deadline passed before their requests finished.\n"
            "# TYPE paddock_edge_drain_timeouts_total counter\n"
            "paddock_edge_drain_timeouts_total 0\n"
            "# HELP traefik_config_last_reload_success Last config reload success\n"
            "# TYPE traefik_config_last_reload_success gauge\n"
            "traefik_config_last_reload_success 0\n"
            "# HELP traefik_config_reloads_total Config reloads\n"
            "# TYPE traefik_config_reloads_total counter\n"
            "traefik_config_reloads_total 0\n");
}

TEST(RenderPrometheus, GoldenTextForASmallSnapshot) {
  MetricsSnapshot m;
  m.config_reloads = 3;
  m.config_last_reload_success = 1764740000;
  m.open_connections = {{"web", 2}};
  RequestSeries ok;
  ok.requests = 2;
  ok.duration.Observe(0.05);
  ok.duration.Observe(0.5);
  ok.request_bytes = 10;
  ok.response_bytes = 38;
  RequestSeries missing;
  missing.requests = 1;
  missing.duration.Observe(0.25);
  missing.response_bytes = 19;
  m.entry_point_requests[{"200", "GET", "http", "web"}] = ok;
  m.entry_point_requests[{"404", "EXTENSION_METHOD", "http", "web"}] = missing;
  m.service_requests[{"200", "GET", "http", "app@ecs"}] = ok;
  m.server_up[{"app@ecs", "http://10.0.0.1:80"}] = 1;
  m.server_up[{"app@ecs", "http://10.0.0.2:80"}] = 0;
  m.drain_seconds.Observe(2);
  m.drain_timeouts = 1;
  const std::string text = RenderPrometheus(m);
  const std::string expected =
      "# HELP paddock_edge_drain_seconds How long servers taken out of the configuration took to finish "
      "their requests, from fence to release.\n"
      "# TYPE paddock_edge_drain_seconds histogram\n"
      "paddock_edge_drain_seconds_bucket{le=\"0.1\"} 0\n"
      "paddock_edge_drain_seconds_bucket{le=\"0.5\"} 0\n"
      "paddock_edge_drain_seconds_bucket{le=\"1\"} 0\n"
      "paddock_edge_drain_seconds_bucket{le=\"5\"} 1\n"
      "paddock_edge_drain_seconds_bucket{le=\"15\"} 1\n"
      "paddock_edge_drain_seconds_bucket{le=\"30\"} 1\n"
      "paddock_edge_drain_seconds_bucket{le=\"60\"} 1\n"
      "paddock_edge_drain_seconds_bucket{le=\"300\"} 1\n"
      "paddock_edge_drain_seconds_bucket{le=\"+Inf\"} 1\n"
      "paddock_edge_drain_seconds_sum 2\n"
      "paddock_edge_drain_seconds_count 1\n"
      "# HELP paddock_edge_drain_timeouts_total Drains whose deadline passed before their requests finished.\n"
      "# TYPE paddock_edge_drain_timeouts_total counter\n"
      "paddock_edge_drain_timeouts_total 1\n"
      "# HELP traefik_config_last_reload_success Last config reload success\n"
      "# TYPE traefik_config_last_reload_success gauge\n"
      "traefik_config_last_reload_success 1764740000\n"
      "# HELP traefik_config_reloads_total Config reloads\n"
      "# TYPE traefik_config_reloads_total counter\n"
      "traefik_config_reloads_total 3\n"
      "# HELP traefik_entrypoint_request_duration_seconds How long it took to process the request on an "
      "entrypoint, partitioned by status code, protocol, and method.\n"
      "# TYPE traefik_entrypoint_request_duration_seconds histogram\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\",le=\"0.1\"} 1\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\",le=\"0.3\"} 1\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\",le=\"1.2\"} 2\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\",le=\"5\"} 2\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\",le=\"+Inf\"} 2\n"
      "traefik_entrypoint_request_duration_seconds_sum{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\"} 0.55\n"
      "traefik_entrypoint_request_duration_seconds_count{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\"} 2\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\",le=\"0.1\"} 0\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\",le=\"0.3\"} 1\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\",le=\"1.2\"} 1\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\",le=\"5\"} 1\n"
      "traefik_entrypoint_request_duration_seconds_bucket{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\",le=\"+Inf\"} 1\n"
      "traefik_entrypoint_request_duration_seconds_sum{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\"} 0.25\n"
      "traefik_entrypoint_request_duration_seconds_count{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\"} 1\n"
      "# HELP traefik_entrypoint_requests_bytes_total The total size of requests in bytes handled by an entrypoint, "
      "partitioned by status code, protocol, and method.\n"
      "# TYPE traefik_entrypoint_requests_bytes_total counter\n"
      "traefik_entrypoint_requests_bytes_total{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\"} 10\n"
      "traefik_entrypoint_requests_bytes_total{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\"} 0\n"
      "# HELP traefik_entrypoint_requests_total How many HTTP requests processed on an entrypoint, partitioned "
      "by status code, protocol, and method.\n"
      "# TYPE traefik_entrypoint_requests_total counter\n"
      "traefik_entrypoint_requests_total{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\"} 2\n"
      "traefik_entrypoint_requests_total{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\"} 1\n"
      "# HELP traefik_entrypoint_responses_bytes_total The total size of responses in bytes handled by an entrypoint, "
      "partitioned by status code, protocol, and method.\n"
      "# TYPE traefik_entrypoint_responses_bytes_total counter\n"
      "traefik_entrypoint_responses_bytes_total{code=\"200\",entrypoint=\"web\",method=\"GET\",protocol=\"http\"} 38\n"
      "traefik_entrypoint_responses_bytes_total{code=\"404\",entrypoint=\"web\",method=\"EXTENSION_METHOD\",protocol=\"http\"} 19\n"
      "# HELP traefik_open_connections How many open connections exist, by entryPoint and protocol\n"
      "# TYPE traefik_open_connections gauge\n"
      "traefik_open_connections{entrypoint=\"web\",protocol=\"TCP\"} 2\n"
      "# HELP traefik_service_request_duration_seconds How long it took to process the request on a service, "
      "partitioned by status code, protocol, and method.\n"
      "# TYPE traefik_service_request_duration_seconds histogram\n"
      "traefik_service_request_duration_seconds_bucket{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\",le=\"0.1\"} 1\n"
      "traefik_service_request_duration_seconds_bucket{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\",le=\"0.3\"} 1\n"
      "traefik_service_request_duration_seconds_bucket{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\",le=\"1.2\"} 2\n"
      "traefik_service_request_duration_seconds_bucket{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\",le=\"5\"} 2\n"
      "traefik_service_request_duration_seconds_bucket{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\",le=\"+Inf\"} 2\n"
      "traefik_service_request_duration_seconds_sum{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\"} 0.55\n"
      "traefik_service_request_duration_seconds_count{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\"} 2\n"
      "# HELP traefik_service_requests_bytes_total The total size of requests in bytes received by a service, "
      "partitioned by status code, protocol, and method.\n"
      "# TYPE traefik_service_requests_bytes_total counter\n"
      "traefik_service_requests_bytes_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\"} 10\n"
      "# HELP traefik_service_requests_total How many HTTP requests processed on a service, partitioned by "
      "status code, protocol, and method.\n"
      "# TYPE traefik_service_requests_total counter\n"
      "traefik_service_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\"} 2\n"
      "# HELP traefik_service_responses_bytes_total The total size of responses in bytes returned by a service, "
      "partitioned by status code, protocol, and method.\n"
      "# TYPE traefik_service_responses_bytes_total counter\n"
      "traefik_service_responses_bytes_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\"app@ecs\"} 38\n"
      "# HELP traefik_service_server_up service server is up, described by gauge value of 0 or 1.\n"
      "# TYPE traefik_service_server_up gauge\n"
      "traefik_service_server_up{service=\"app@ecs\",url=\"http://10.0.0.1:80\"} 1\n"
      "traefik_service_server_up{service=\"app@ecs\",url=\"http://10.0.0.2:80\"} 0\n";
  EXPECT_EQ(text, expected);
}

TEST(RenderPrometheus, TlsRequestsSortBetweenTheEntryPointsDurationsAndTotals) {
  MetricsSnapshot m;
  RequestSeries one;
  one.requests = 1;
  one.duration.Observe(0.01);
  m.entry_point_requests[{"200", "GET", "http", "websecure"}] = one;
  m.entry_point_tls_requests[{"websecure", "1.3", "TLS_AES_128_GCM_SHA256"}] = 1;
  const std::string text = RenderPrometheus(m);
  const size_t durations = text.find("# TYPE traefik_entrypoint_request_duration_seconds histogram");
  const size_t tls = text.find(
      "# HELP traefik_entrypoint_requests_tls_total How many HTTP requests with TLS processed on an entrypoint, "
      "partitioned by TLS Version and TLS cipher Used.\n"
      "# TYPE traefik_entrypoint_requests_tls_total counter\n"
      "traefik_entrypoint_requests_tls_total{entrypoint=\"websecure\",tls_cipher=\"TLS_AES_128_GCM_SHA256\","
      "tls_version=\"1.3\"} 1\n");
  const size_t totals = text.find("# TYPE traefik_entrypoint_requests_total counter");
  ASSERT_NE(tls, std::string::npos) << text;
  EXPECT_LT(durations, tls);
  EXPECT_LT(tls, totals);
}

// Router series (Traefik's addRoutersLabels), the service TLS and retry families: Traefik's names,
// help, label order, and the families' order by name.
TEST(RenderPrometheus, GoldenTextForRouterServiceTlsAndRetries) {
  MetricsSnapshot m;
  m.open_connections = {{"web", 1}};
  RequestSeries one;
  one.requests = 1;
  one.duration.Observe(0.01);
  one.request_bytes = 5;
  one.response_bytes = 7;
  m.router_requests[{"200", "POST", "http", "api@file", "app@ecs"}] = one;
  m.router_tls_requests[{"api@file", "1.3", "TLS_AES_128_GCM_SHA256", "app@ecs"}] = 1;
  m.service_tls_requests[{"app@ecs", "1.3", "TLS_AES_128_GCM_SHA256"}] = 1;
  m.service_retries["app@ecs"] = 2;
  const std::string text = RenderPrometheus(m);
  const std::string router_labels = "code=\"200\",method=\"POST\",protocol=\"http\",router=\"api@file\",service=\"app@ecs\"";
  const std::string expected =
      "# HELP traefik_open_connections How many open connections exist, by entryPoint and protocol\n"
      "# TYPE traefik_open_connections gauge\n"
      "traefik_open_connections{entrypoint=\"web\",protocol=\"TCP\"} 1\n"
      "# HELP traefik_router_request_duration_seconds How long it took to process the request on a router, "
      "partitioned by service, status code, protocol, and method.\n"
      "# TYPE traefik_router_request_duration_seconds histogram\n"
      "traefik_router_request_duration_seconds_bucket{" + router_labels + ",le=\"0.1\"} 1\n"
      "traefik_router_request_duration_seconds_bucket{" + router_labels + ",le=\"0.3\"} 1\n"
      "traefik_router_request_duration_seconds_bucket{" + router_labels + ",le=\"1.2\"} 1\n"
      "traefik_router_request_duration_seconds_bucket{" + router_labels + ",le=\"5\"} 1\n"
      "traefik_router_request_duration_seconds_bucket{" + router_labels + ",le=\"+Inf\"} 1\n"
      "traefik_router_request_duration_seconds_sum{" + router_labels + "} 0.01\n"
      "traefik_router_request_duration_seconds_count{" + router_labels + "} 1\n"
      "# HELP traefik_router_requests_bytes_total The total size of requests in bytes handled by a router, "
      "partitioned by service, status code, protocol, and method.\n"
      "# TYPE traefik_router_requests_bytes_total counter\n"
      "traefik_router_requests_bytes_total{" + router_labels + "} 5\n"
      "# HELP traefik_router_requests_tls_total How many HTTP requests with TLS are processed on a router, "
      "partitioned by service, TLS Version, and TLS cipher Used.\n"
      "# TYPE traefik_router_requests_tls_total counter\n"
      "traefik_router_requests_tls_total{router=\"api@file\",service=\"app@ecs\",tls_cipher=\"TLS_AES_128_GCM_SHA256\","
      "tls_version=\"1.3\"} 1\n"
      "# HELP traefik_router_requests_total How many HTTP requests are processed on a router, partitioned by "
      "service, status code, protocol, and method.\n"
      "# TYPE traefik_router_requests_total counter\n"
      "traefik_router_requests_total{" + router_labels + "} 1\n"
      "# HELP traefik_router_responses_bytes_total The total size of responses in bytes handled by a router, "
      "partitioned by service, status code, protocol, and method.\n"
      "# TYPE traefik_router_responses_bytes_total counter\n"
      "traefik_router_responses_bytes_total{" + router_labels + "} 7\n"
      "# HELP traefik_service_requests_tls_total How many HTTP requests with TLS processed on a service, "
      "partitioned by TLS version and TLS cipher.\n"
      "# TYPE traefik_service_requests_tls_total counter\n"
      "traefik_service_requests_tls_total{service=\"app@ecs\",tls_cipher=\"TLS_AES_128_GCM_SHA256\",tls_version=\"1.3\"} 1\n"
      "# HELP traefik_service_retries_total How many request retries happened on a service.\n"
      "# TYPE traefik_service_retries_total counter\n"
      "traefik_service_retries_total{service=\"app@ecs\"} 2\n";
  const size_t from = text.find("# HELP traefik_open_connections");
  ASSERT_NE(from, std::string::npos) << text;
  EXPECT_EQ(text.substr(from), expected);
}

// Traefik's TLS certificate gauge: labels cn, sans, serial (sorted by name), the value notAfter in
// unix seconds; series sorted by their label tuple; the family last (families sort by name).
TEST(RenderPrometheus, TlsCertificatesNotAfter) {
  MetricsSnapshot m;
  m.server_up[{"s", "http://10.0.0.1:80"}] = 1;
  m.tls_certs_not_after[{"b.example.com", "42", "b.example.com,c.example.com"}] = 1798761600;
  m.tls_certs_not_after[{"a default", "7", ""}] = 1767225600;
  const std::string text = RenderPrometheus(m);
  const std::string expected =
      "# HELP traefik_service_server_up service server is up, described by gauge value of 0 or 1.\n"
      "# TYPE traefik_service_server_up gauge\n"
      "traefik_service_server_up{service=\"s\",url=\"http://10.0.0.1:80\"} 1\n"
      "# HELP traefik_tls_certs_not_after Certificate expiration timestamp\n"
      "# TYPE traefik_tls_certs_not_after gauge\n"
      "traefik_tls_certs_not_after{cn=\"a default\",sans=\"\",serial=\"7\"} 1767225600\n"
      "traefik_tls_certs_not_after{cn=\"b.example.com\",sans=\"b.example.com,c.example.com\",serial=\"42\"} "
      "1798761600\n";
  const size_t from = text.find("# HELP traefik_service_server_up");
  ASSERT_NE(from, std::string::npos) << text;
  EXPECT_EQ(text.substr(from), expected);
  EXPECT_EQ(RenderPrometheus(MetricsSnapshot()).find("traefik_tls_certs_not_after"), std::string::npos);
}

TEST(RenderPrometheus, EscapesLabelValues) {
  MetricsSnapshot m;
  m.server_up[{"a\"b\\c\nd", "u"}] = 1;
  EXPECT_NE(RenderPrometheus(m).find("traefik_service_server_up{service=\"a\\\"b\\\\c\\nd\",url=\"u\"} 1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace paddock::edge
