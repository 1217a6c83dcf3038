// edge/metrics: the edge's Prometheus metrics under Traefik's names (research note §2, §6.5) and
// Paddock's drain metrics, rendered in the Prometheus text format 0.0.4 by a pure function from a
// snapshot, so the bytes can be pinned by a golden test and the server around it stays thin.
//
// Families (Traefik's pkg/observability/metrics names, labels and help):
//   traefik_config_reloads_total, traefik_config_last_reload_success (unix seconds of the last
//   good reload), traefik_open_connections{entrypoint,protocol="TCP"},
//   traefik_entrypoint_requests_total{code,entrypoint,method,protocol} (protocol: MetricProtocol;
//   a gRPC request's code is its Grpc-Status),
//   traefik_entrypoint_request_duration_seconds (histogram, buckets 0.1 0.3 1.2 5),
//   traefik_service_requests_total{code,method,protocol,service},
//   traefik_service_request_duration_seconds, traefik_service_server_up{service,url} (1/0, only
//   health-checked servers that have been probed),
//   traefik_{entrypoint,service}_{requests,responses}_bytes_total (counters, the request series'
//   labels: body bytes read from the client / written to it),
//   traefik_service_requests_tls_total{service,tls_cipher,tls_version},
//   traefik_service_retries_total{service} (a retry middleware's extra attempts),
//   traefik_router_{requests_total,request_duration_seconds,requests_bytes_total,
//   responses_bytes_total}{code,method,protocol,router,service} and
//   traefik_router_requests_tls_total{router,service,tls_cipher,tls_version} (only when the
//   edge's router metrics are on: Traefik's metrics.prometheus.addRoutersLabels),
//   traefik_tls_certs_not_after{cn,sans,serial} (gauge, unix seconds: each configured
//   certificate's notAfter; the generated default is left out, as Traefik leaves out its own),
//   paddock_edge_drain_seconds (histogram, fence -> release), paddock_edge_drain_timeouts_total.
// Labels within a series are sorted by name and series by their label values (client_golang's
// order); families by name. Codes and methods come from fixed sets (MetricMethod).
//
//   edge::MetricsSnapshot m = proxy.Metrics();
//   m.config_reloads = 3;
//   std::string text = edge::RenderPrometheus(m);   // Content-Type: kPrometheusContentType
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <string_view>
#include <utility>
#include <vector>

namespace paddock::edge {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Upper bounds (seconds, ascending; +Inf implied) and per-bucket (not cumulative) counts.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // bounds.size() + 1 (the last is +Inf)
  uint64_t count = 0;
  double sum = 0;

  static Histogram WithBounds(std::vector<double> bounds);
  static Histogram RequestDurations();  // Traefik's default buckets: 0.1, 0.3, 1.2, 5
  static Histogram DrainDurations();    // 0.1, 0.5, 1, 5, 15, 30, 60, 300
  void Observe(double seconds);
  // Adds `other`'s observations; an empty histogram takes `other`'s bounds, and a non-empty one
  // ignores a histogram of other bounds.
  void Merge(const Histogram& other);
};

// One request series' labels: `name` is the entry point, the service or the router; `service`
// is the router's service (router series only, else empty).
struct RequestKey {
  std::string code;      // "200"
  std::string method;    // MetricMethod
  std::string protocol;  // "http"
  std::string name;
  std::string service = {};
  auto operator<=>(const RequestKey&) const = default;
};

struct RequestSeries {
  uint64_t requests = 0;
  Histogram duration = Histogram::RequestDurations();
  uint64_t request_bytes = 0;   // the requests' body bytes read (Traefik's capture RequestSize)
  uint64_t response_bytes = 0;  // the responses' body bytes written (capture ResponseSize)
  void Merge(const RequestSeries& other);
};

// A TLS series' labels: `name` is the entry point, the service or the router; `service` the
// router's (router series only).
struct TlsKey {
  std::string name;
  std::string tls_version;  // "1.3"
  std::string tls_cipher;   // IANA name
  std::string service = {};
  auto operator<=>(const TlsKey&) const = default;
};

struct MetricsSnapshot {
  uint64_t config_reloads = 0;
  std::optional<double> config_last_reload_success;  // unix seconds; absent: never (renders 0)
  std::map<std::string, int64_t> open_connections;   // by entry point (protocol "TCP")
  std::map<RequestKey, RequestSeries> entry_point_requests;
  // Requests answered over TLS by entry point, tls_version and tls_cipher:
  // traefik_entrypoint_requests_tls_total.
  std::map<TlsKey, uint64_t> entry_point_tls_requests;
  std::map<RequestKey, RequestSeries> service_requests;
  std::map<TlsKey, uint64_t> service_tls_requests;  // traefik_service_requests_tls_total
  std::map<std::string, uint64_t> service_retries;  // traefik_service_retries_total, by service
  // Router series (name: the router, service: its service); empty unless router metrics are on.
  std::map<RequestKey, RequestSeries> router_requests;
  std::map<TlsKey, uint64_t> router_tls_requests;  // traefik_router_requests_tls_total
  std::map<std::pair<std::string, std::string>, int> server_up;  // (service, url) -> 1 or 0
  Histogram drain_seconds = Histogram::DrainDurations();
  uint64_t drain_timeouts = 0;
  // traefik_tls_certs_not_after: (cn, serial, sans) -> notAfter in unix seconds, for the
  // certificates the current configuration serves (TlsCertificates::Reported).
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> tls_certs_not_after;
};

// The method as a label: the nine standard methods as they are, anything else "EXTENSION_METHOD"
// (Traefik's getMethod).
std::string_view MetricMethod(std::string_view method);

// The protocol label of a request, from its first Connection, Upgrade, Accept and Content-Type
// values (Traefik's getRequestProtocol): "websocket" (Connection lists upgrade and Upgrade
// websocket), "sse" (Accept lists text/event-stream), "grpc-web" and "grpc" (Content-Type starts
// with application/grpc-web, application/grpc), else "http"; list items compared trimmed and
// lower-cased, in that order of precedence.
std::string_view MetricProtocol(std::string_view connection, std::string_view upgrade, std::string_view accept,
                                std::string_view content_type);
// Whether `protocol` is one whose code label is the gRPC status (GrpcStatusCode), not the HTTP one.
bool IsGrpcProtocol(std::string_view protocol);
// The gRPC status a response's Grpc-Status header value names (Traefik's grpcStatusCode): a
// decimal code below 17, else 2 (Unknown) — also when the header is absent.
int GrpcStatusCode(std::string_view grpc_status);

// The whole exposition, families sorted by name; a labelled family with no series is left out
// (as client_golang does), the unlabelled ones are always there.
std::string RenderPrometheus(const MetricsSnapshot& snapshot);

}  // namespace paddock::edge
