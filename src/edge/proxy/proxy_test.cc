#include "edge/proxy/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <boost/json/parse.hpp>

#include "edge/middleware.h"
#include "edge/proxy/sticky.h"
#include "edge/proxy/switching_upstream_testing.h"
#include "http/client.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

using testing::SwitchingUpstream;

// A backend: answers "<name> <path>" and echoes the forwarding headers it got.
class Backend_ {
 public:
  explicit Backend_(std::string name, std::function<void(const http::Request&)> before = nullptr)
      : name_(std::move(name)), server_({}, [this, before](const http::Request& r) {
          if (before) before(r);
          hits_.fetch_add(1);
          http::Response resp;
          resp.body = name_ + " " + r.target;
          resp.SetHeader("X-Seen-Host", std::string(r.GetHeader("Host")));
          resp.SetHeader("X-Seen-For", std::string(r.GetHeader("X-Forwarded-For")));
          resp.SetHeader("X-Seen-Connection", std::string(r.GetHeader("Connection")));
          resp.SetHeader("X-Seen-Custom", std::string(r.GetHeader("X-Custom")));
          resp.SetHeader("X-Seen-Added", std::string(r.GetHeader("X-Added")));
          resp.SetHeader("X-Seen-Prefix", std::string(r.GetHeader("X-Forwarded-Prefix")));
          resp.SetHeader("X-Seen-Proto", std::string(r.GetHeader("X-Forwarded-Proto")));
          if (r.target == "/grpc") resp.SetHeader("Grpc-Status", "5");
          if (r.target == "/stream") {
            resp.stream = [](http::BodyWriter& w) {
              w.Write("one,");
              w.Write("two");
            };
          }
          return resp;
        }) {}
  uint16_t Start() {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    return port_;
  }
  void Stop() { server_.Stop(); }
  uint16_t port() const { return port_; }
  int hits() const { return hits_.load(); }

 private:
  std::string name_;
  http::Server server_;
  uint16_t port_ = 0;
  std::atomic<int> hits_{0};
};

Route MakeRoute(std::string name, std::string rule, int priority, std::shared_ptr<const Backend> backend) {
  auto parsed = Rule::Parse(rule);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return Route{.name = std::move(name), .rule = *parsed, .priority = priority, .chain = {},
               .backend = std::move(backend)};
}

std::shared_ptr<Backend> MakeBackend(ServerRegistry& registry, std::string name, std::vector<uint16_t> ports) {
  auto b = std::make_shared<Backend>();
  b->name = name;
  for (uint16_t p : ports) {
    std::string url = "http://127.0.0.1:" + std::to_string(p);
    b->servers.push_back({registry.Get(name, url, "127.0.0.1", p), 1});
  }
  return b;
}

http::Request Get(std::string target, std::string host = "") {
  http::Request r;
  r.method = "GET";
  r.target = std::move(target);
  if (!host.empty()) r.headers.push_back({"Host", std::move(host)});
  return r;
}

class ProxyTest : public ::testing::Test {
 protected:
  void StartProxy(int io_threads = 2) {
    StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = io_threads});
  }
  void StartProxy(ProxyOptions options) {
    proxy_ = std::make_unique<Proxy>(std::move(options));
    auto ports = proxy_->Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    port_ = ports->at("web");
  }
  void TearDown() override {
    if (proxy_) proxy_->Stop();
  }
  void Serve(std::vector<Route> routes, std::vector<std::shared_ptr<Backend>> backends) {
    Table t;
    std::sort(routes.begin(), routes.end(), [](const Route& a, const Route& b) {
      return a.priority != b.priority ? a.priority > b.priority : a.name < b.name;
    });
    t.routes["web"] = std::move(routes);
    for (auto& b : backends) t.backends[b->name] = b;
    proxy_->SetTable(std::make_shared<const Table>(std::move(t)));
  }

  // One router, every path, to the server on `port` (service a@test).
  void RouteAllTo(uint16_t port) {
    auto lb = MakeBackend(registry_, "a@test", {port});
    Serve({MakeRoute("a@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  }

  ServerRegistry registry_;
  std::unique_ptr<Proxy> proxy_;
  uint16_t port_ = 0;
};

TEST_F(ProxyTest, RoutesByRuleThenPriority) {
  Backend_ a("a"), b("b");
  a.Start();
  b.Start();
  StartProxy();
  auto ba = MakeBackend(registry_, "a@test", {a.port()});
  auto bb = MakeBackend(registry_, "b@test", {b.port()});
  Serve({MakeRoute("host@test", "Host(`a.test`)", 100, ba), MakeRoute("all@test", "PathPrefix(`/`)", 1, bb)},
        {ba, bb});
  http::Client client("127.0.0.1", port_);
  auto r1 = client.Send(Get("/x?y=1", "a.test:8000"));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->body, "a /x?y=1");
  EXPECT_EQ(r1->GetHeader("X-Seen-Host"), "a.test:8000");  // passHostHeader
  EXPECT_EQ(r1->GetHeader("X-Seen-For"), "127.0.0.1");
  auto r2 = client.Send(Get("/z", "other.test"));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->body, "b /z");
}

TEST_F(ProxyTest, ThePathIsSanitizedBeforeRoutingAndForwardedSoAndABadEscapeIs400) {
  Backend_ a("a");
  a.Start();
  StartProxy();
  auto ba = MakeBackend(registry_, "a@test", {a.port()});
  Serve({MakeRoute("exact@test", "Path(`/a/c`)", 10, ba)}, {ba});
  http::Client client("127.0.0.1", port_);
  auto r1 = client.Send(Get("/a/b/../c?x=1;y=2", "a.test"));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->body, "a /a/c?x=1&y=2");
  auto r2 = client.Send(Get("/a//%2e/c", "a.test"));
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2->body, "a /a/c");
  auto r3 = client.Send(Get("/a#c", "a.test"));
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  EXPECT_EQ(r3->status, 400);
  EXPECT_EQ(r3->body, "");
  http::Client other("127.0.0.1", port_);
  auto r4 = other.Send(Get("/%zz", "a.test"));
  ASSERT_TRUE(r4.ok()) << r4.status().ToString();
  EXPECT_EQ(r4->status, 400);
  EXPECT_EQ(r4->body, "400 Bad Request");
  EXPECT_EQ(a.hits(), 2);
}

TEST_F(ProxyTest, NoRouterIs404AndNoServerIs503InTraefiksWords) {
  StartProxy();
  auto empty = std::make_shared<Backend>();
  empty->name = "none@test";
  Serve({MakeRoute("none@test", "Host(`none.test`)", 10, empty)}, {empty});
  http::Client client("127.0.0.1", port_);
  auto r1 = client.Send(Get("/", "nothing.test"));
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->status, 404);
  EXPECT_EQ(r1->body, "404 page not found\n");
  auto r2 = client.Send(Get("/", "none.test"));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->status, 503);
  EXPECT_EQ(r2->body, "no available server\n");
}

TEST_F(ProxyTest, RoundRobinsAndReusesUpstreamConnections) {
  Backend_ a("a"), b("b");
  a.Start();
  b.Start();
  StartProxy();
  auto lb = MakeBackend(registry_, "ab@test", {a.port(), b.port()});
  Serve({MakeRoute("ab@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 20; ++i) {
    auto r = client.Send(Get("/"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200);
  }
  EXPECT_EQ(a.hits(), 10);
  EXPECT_EQ(b.hits(), 10);
  ProxyCounters c = proxy_->counters();
  EXPECT_LE(c.upstream_connects, 4u);  // at most one per server per I/O thread
  EXPECT_GE(c.upstream_reuses, 16u);
}

// The metrics are counted just after the answer's last byte is written: wait for them.
template <typename Pred>
void WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

// The protocol label is Traefik's getRequestProtocol; a gRPC request's code label is the answer's
// Grpc-Status (Unknown, 2, without one), at the entry point and the service alike.
TEST_F(ProxyTest, MetricsLabelTheProtocolAndAGrpcRequestsCodeIsItsStatus) {
  Backend_ a("a");
  a.Start();
  StartProxy();
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  Serve({MakeRoute("a@test", "Host(`a.test`)", 10, lb)}, {lb});
  http::Client client("127.0.0.1", port_);
  auto send = [&](std::string target, std::string name, std::string value) {
    http::Request r = Get(std::move(target), "a.test");
    r.headers.push_back({std::move(name), std::move(value)});
    auto resp = client.Send(r);
    ASSERT_TRUE(resp.ok());
    EXPECT_EQ(resp->status, 200);
  };
  send("/grpc", "Content-Type", "application/grpc-web+proto");
  send("/", "Content-Type", "application/grpc");
  send("/", "Accept", "text/event-stream");
  send("/", "X-Custom", "plain");
  WaitFor([&] {
    uint64_t n = 0;
    for (const auto& [key, series] : proxy_->Metrics().entry_point_requests) n += series.requests;
    return n == 4;
  });
  MetricsSnapshot m = proxy_->Metrics();
  std::map<std::string, uint64_t> entry, service;
  for (const auto& [key, series] : m.entry_point_requests)
    entry[key.code + " " + key.method + " " + key.protocol + " " + key.name] = series.requests;
  for (const auto& [key, series] : m.service_requests)
    service[key.code + " " + key.protocol + " " + key.name] = series.requests;
  EXPECT_EQ(entry, (std::map<std::string, uint64_t>{{"5 GET grpc-web web", 1},
                                                    {"2 GET grpc web", 1},
                                                    {"200 GET sse web", 1},
                                                    {"200 GET http web", 1}}));
  EXPECT_EQ(service, (std::map<std::string, uint64_t>{{"5 grpc-web a@test", 1},
                                                      {"2 grpc a@test", 1},
                                                      {"200 sse a@test", 1},
                                                      {"200 http a@test", 1}}));
}

TEST_F(ProxyTest, MetricsOptionsChooseTheBucketsAndLeaveFamiliesOut) {
  Backend_ a("a");
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 2,
                          .entry_point_metrics = false,
                          .duration_buckets = {0.5, 10}});
  RouteAllTo(a.port());
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(client.Send(Get("/", "a.test"))->status, 200);
  WaitFor([&] {
    uint64_t n = 0;
    for (const auto& [key, series] : proxy_->Metrics().service_requests) n += series.requests;
    return n == 3;
  });
  MetricsSnapshot m = proxy_->Metrics();
  EXPECT_TRUE(m.entry_point_requests.empty());  // Traefik's addEntryPointsLabels=false
  ASSERT_EQ(m.service_requests.size(), 1u);
  const Histogram& h = m.service_requests.begin()->second.duration;
  EXPECT_EQ(h.bounds, (std::vector<double>{0.5, 10}));
  EXPECT_EQ(h.count, 3u);
  const std::string text = RenderPrometheus(m);
  EXPECT_NE(text.find("traefik_service_request_duration_seconds_bucket{code=\"200\",method=\"GET\",protocol=\"http\","
                      "service=\"a@test\",le=\"10\"} 3"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("le=\"0.3\""), std::string::npos) << text;
  EXPECT_EQ(text.find("traefik_entrypoint_requests_total"), std::string::npos) << text;
  EXPECT_NE(text.find("traefik_open_connections"), std::string::npos) << text;  // not an entry-point family

  // addServicesLabels=false: no traefik_service_* family, the entry point's with Traefik's buckets.
  proxy_->Stop();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1, .service_metrics = false});
  RouteAllTo(a.port());
  http::Client again("127.0.0.1", port_);
  ASSERT_EQ(again.Send(Get("/", "a.test"))->status, 200);
  WaitFor([&] { return !proxy_->Metrics().entry_point_requests.empty(); });
  m = proxy_->Metrics();
  EXPECT_TRUE(m.service_requests.empty());
  ASSERT_EQ(m.entry_point_requests.size(), 1u);
  EXPECT_EQ(m.entry_point_requests.begin()->second.duration.bounds, (std::vector<double>{0.1, 0.3, 1.2, 5}));
  EXPECT_EQ(RenderPrometheus(m).find("traefik_service_"), std::string::npos);
}

TEST_F(ProxyTest, MetricsCountRequestsByEntryPointAndServiceWithBoundedLabels) {
  Backend_ a("a");
  a.Start();
  StartProxy();
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  auto empty = std::make_shared<Backend>();
  empty->name = "none@test";
  Serve({MakeRoute("a@test", "Host(`a.test`)", 10, lb), MakeRoute("none@test", "Host(`none.test`)", 10, empty)},
        {lb, empty});
  {
    http::Client client("127.0.0.1", port_);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(client.Send(Get("/", "a.test"))->status, 200);
    http::Request purge = Get("/", "a.test");
    purge.method = "PURGE";
    ASSERT_EQ(client.Send(purge)->status, 200);
    ASSERT_EQ(client.Send(Get("/", "nothing.test"))->status, 404);
    ASSERT_EQ(client.Send(Get("/", "none.test"))->status, 503);
    WaitFor([&] {
      auto m = proxy_->Metrics();
      uint64_t n = 0;
      for (const auto& [key, series] : m.entry_point_requests) n += series.requests;
      return n == 6;
    });
    MetricsSnapshot m = proxy_->Metrics();
    EXPECT_EQ(m.open_connections, (std::map<std::string, int64_t>{{"web", 1}}));
    std::map<std::string, uint64_t> entry;
    for (const auto& [key, series] : m.entry_point_requests) {
      entry[key.code + " " + key.method + " " + key.protocol + " " + key.name] = series.requests;
      EXPECT_EQ(series.duration.count, series.requests);
    }
    EXPECT_EQ(entry, (std::map<std::string, uint64_t>{{"200 GET http web", 3},
                                                      {"200 EXTENSION_METHOD http web", 1},
                                                      {"404 GET http web", 1},
                                                      {"503 GET http web", 1}}));
    std::map<std::string, uint64_t> service;
    for (const auto& [key, series] : m.service_requests)
      service[key.code + " " + key.method + " " + key.name] = series.requests;
    // The 404 reached no service; the 503 is its service's (it has no server).
    EXPECT_EQ(service, (std::map<std::string, uint64_t>{{"200 GET a@test", 3},
                                                        {"200 EXTENSION_METHOD a@test", 1},
                                                        {"503 GET none@test", 1}}));
    EXPECT_TRUE(m.server_up.empty());  // no health checks
  }
  WaitFor([&] { return proxy_->Metrics().open_connections.at("web") == 0; });
  EXPECT_EQ(proxy_->Metrics().open_connections.at("web"), 0);
  // A service the table no longer has leaves the metrics.
  Serve({MakeRoute("a@test", "Host(`a.test`)", 10, lb)}, {lb});
  for (const auto& [key, series] : proxy_->Metrics().service_requests) EXPECT_EQ(key.name, "a@test");
}

// Traefik's capture sizes: the request body bytes read (a forwarded request's; none for one no
// router took) and the response body bytes written (a server's, streamed or not, or the edge's own
// answer), on the entry point's and the service's series alike. No router series without
// router_metrics (Traefik's addRoutersLabels defaults to false).
TEST_F(ProxyTest, MetricsCountRequestAndResponseBodyBytes) {
  Backend_ a("a");
  a.Start();
  StartProxy(1);
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  Serve({MakeRoute("ra@test", "Host(`a.test`)", 10, lb)}, {lb});
  http::Client client("127.0.0.1", port_);
  http::Request post = Get("/upload", "a.test");
  post.method = "POST";
  post.body = std::string(1000, 'x');
  auto posted = client.Send(post);
  ASSERT_TRUE(posted.ok());
  ASSERT_EQ(posted->body, "a /upload");  // 9 bytes
  auto streamed = client.Send(Get("/stream", "a.test"));
  ASSERT_TRUE(streamed.ok());
  ASSERT_EQ(streamed->body, "one,two");  // 7 bytes, relayed chunked
  http::Request stray = Get("/", "nothing.test");
  stray.method = "POST";
  stray.body = "unread";
  auto missing = client.Send(stray);
  ASSERT_TRUE(missing.ok());
  ASSERT_EQ(missing->status, 404);  // "404 page not found\n": 19 bytes
  auto series_of = [](const std::map<RequestKey, RequestSeries>& all) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;  // "code method name" -> (in, out)
    for (const auto& [key, s] : all) {
      auto& [in, sent] = out[key.code + " " + key.method + " " + key.name];
      in += s.request_bytes;
      sent += s.response_bytes;
    }
    return out;
  };
  WaitFor([&] {
    uint64_t n = 0;
    for (const auto& [key, s] : proxy_->Metrics().entry_point_requests) n += s.requests;
    return n == 3;
  });
  const MetricsSnapshot m = proxy_->Metrics();
  using Bytes = std::map<std::string, std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(series_of(m.entry_point_requests),
            (Bytes{{"200 POST web", {1000, 9}}, {"200 GET web", {0, 7}}, {"404 POST web", {0, 19}}}));
  EXPECT_EQ(series_of(m.service_requests), (Bytes{{"200 POST a@test", {1000, 9}}, {"200 GET a@test", {0, 7}}}));
  EXPECT_TRUE(m.router_requests.empty());
  EXPECT_TRUE(m.router_tls_requests.empty());
  const std::string text = RenderPrometheus(m);
  EXPECT_NE(text.find("traefik_entrypoint_requests_bytes_total{code=\"200\",entrypoint=\"web\",method=\"POST\","
                      "protocol=\"http\"} 1000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("traefik_service_responses_bytes_total{code=\"200\",method=\"GET\",protocol=\"http\","
                      "service=\"a@test\"} 7\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("traefik_router_"), std::string::npos);
}

// With router_metrics (Traefik's addRoutersLabels): traefik_router_* by router and its service,
// not for @internal routers; a router the table no longer has loses its series (dropped, not
// hidden: it starts anew when it comes back).
TEST_F(ProxyTest, RouterSeriesOnlyWithRouterMetricsAndDroppedWhenTheRouterLeaves) {
  Backend_ a("a");
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1, .router_metrics = true});
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  auto both = [&] {
    Serve({MakeRoute("one@file", "Host(`one.test`)", 10, lb), MakeRoute("two@file", "Host(`two.test`)", 10, lb),
           MakeRoute("web-to-websecure@internal", "Host(`internal.test`)", 10, lb)},
          {lb});
  };
  auto routers = [&] {
    std::map<std::string, uint64_t> out;  // "code method router service" -> requests
    for (const auto& [key, s] : proxy_->Metrics().router_requests)
      out[key.code + " " + key.method + " " + key.name + " " + key.service] += s.requests;
    return out;
  };
  both();
  http::Client client("127.0.0.1", port_);
  ASSERT_EQ(client.Send(Get("/", "one.test"))->status, 200);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(client.Send(Get("/", "two.test"))->status, 200);
  ASSERT_EQ(client.Send(Get("/", "internal.test"))->status, 200);
  ASSERT_EQ(client.Send(Get("/", "nothing.test"))->status, 404);  // no router: no router series
  WaitFor([&] {
    uint64_t n = 0;
    for (const auto& [key, s] : proxy_->Metrics().entry_point_requests) n += s.requests;
    return n == 5;
  });
  using Counts = std::map<std::string, uint64_t>;
  EXPECT_EQ(routers(), (Counts{{"200 GET one@file a@test", 1}, {"200 GET two@file a@test", 2}}));
  const MetricsSnapshot m = proxy_->Metrics();
  for (const auto& [key, s] : m.router_requests) {
    EXPECT_EQ(s.duration.count, s.requests);
    EXPECT_EQ(s.response_bytes, s.requests * std::string("a /").size());
  }
  EXPECT_NE(RenderPrometheus(m).find("traefik_router_requests_total{code=\"200\",method=\"GET\",protocol=\"http\","
                                     "router=\"two@file\",service=\"a@test\"} 2\n"),
            std::string::npos);

  Serve({MakeRoute("one@file", "Host(`one.test`)", 10, lb)}, {lb});
  ASSERT_EQ(client.Send(Get("/", "one.test"))->status, 200);  // the worker takes the table without two
  WaitFor([&] { return routers()["200 GET one@file a@test"] == 2; });
  EXPECT_EQ(routers(), (Counts{{"200 GET one@file a@test", 2}}));
  both();
  ASSERT_EQ(client.Send(Get("/", "two.test"))->status, 200);
  WaitFor([&] { return routers()["200 GET two@file a@test"] >= 1; });
  EXPECT_EQ(routers(), (Counts{{"200 GET one@file a@test", 2}, {"200 GET two@file a@test", 1}}))
      << "two's earlier series went with it, not merely hidden";
}

TEST_F(ProxyTest, AServiceThatLeavesAndComesBackStartsItsSeriesAnew) {
  Backend_ a("a"), b("b");
  a.Start();
  b.Start();
  StartProxy(1);  // one worker: the request after a swap is the one that takes it
  auto ba = MakeBackend(registry_, "a@test", {a.port()});
  auto bb = MakeBackend(registry_, "b@test", {b.port()});
  auto both = [&] {
    Serve({MakeRoute("a@test", "Host(`a.test`)", 10, ba), MakeRoute("b@test", "Host(`b.test`)", 10, bb)}, {ba, bb});
  };
  auto count = [&](const std::string& service) {
    uint64_t n = 0;
    for (const auto& [key, series] : proxy_->Metrics().service_requests)
      if (key.name == service) n += series.requests;
    return n;
  };
  both();
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(client.Send(Get("/", "b.test"))->status, 200);
  ASSERT_EQ(client.Send(Get("/", "a.test"))->status, 200);
  WaitFor([&] { return count("a@test") == 1; });
  EXPECT_EQ(count("b@test"), 3u);
  Serve({MakeRoute("a@test", "Host(`a.test`)", 10, ba)}, {ba});
  ASSERT_EQ(client.Send(Get("/", "a.test"))->status, 200);  // the worker takes the table without b
  WaitFor([&] { return count("a@test") == 2; });
  both();
  ASSERT_EQ(client.Send(Get("/", "b.test"))->status, 200);
  WaitFor([&] { return count("b@test") >= 1; });
  EXPECT_EQ(count("b@test"), 1u) << "b's earlier series went with it, not merely hidden";
  EXPECT_EQ(count("a@test"), 2u);
}

TEST_F(ProxyTest, ConnectionsPastTheCapAreClosedAtOnce) {
  Backend_ a("a");
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 2, .max_client_connections = 2});
  auto ba = MakeBackend(registry_, "a@test", {a.port()});
  Serve({MakeRoute("a@test", "PathPrefix(`/`)", 1, ba)}, {ba});
  auto first = std::make_unique<http::Client>("127.0.0.1", port_);
  http::Client second("127.0.0.1", port_);
  ASSERT_EQ(first->Send(Get("/"))->status, 200);  // both kept open
  ASSERT_EQ(second.Send(Get("/"))->status, 200);
  {
    http::Client third("127.0.0.1", port_);
    EXPECT_FALSE(third.Send(Get("/")).ok());
  }
  EXPECT_EQ(proxy_->counters().refused_connections, 1u);
  first.reset();
  WaitFor([&] { return proxy_->counters().open_connections == 1; });
  http::Client fourth("127.0.0.1", port_);
  auto r = fourth.Send(Get("/"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

// A connection on which the test writes raw bytes.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ~RawConnection() { ::close(fd_); }
  void Write(std::string_view data) { EXPECT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size())); }
  // Reads until `needle` has arrived (or the peer closed).
  std::string ReadUntil(std::string_view needle) {
    std::string got;
    char buf[4096];
    while (got.find(needle) == std::string::npos) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }

 private:
  int fd_;
};

TEST_F(ProxyTest, TheEdgesOwnAnswerToHeadHasItsLengthAndNoBody) {
  StartProxy(1);
  Serve({}, {});  // no router: the edge's 404
  RawConnection c(port_);
  c.Write("HEAD / HTTP/1.1\r\nHost: nothing.test\r\n\r\nGET / HTTP/1.1\r\nHost: nothing.test\r\n\r\n");
  const std::string got = c.ReadUntil("404 page not found\n");
  const std::string head = "Content-Length: 19\r\n\r\n";
  const size_t first = got.find(head);
  ASSERT_NE(first, std::string::npos) << got;
  // The second answer follows the first's head at once: no body of the first came between.
  EXPECT_TRUE(got.substr(first + head.size()).starts_with("HTTP/1.1 404 Not Found\r\n")) << got;
}

TEST_F(ProxyTest, RequestBodiesTogetherStayWithinTheBudgetAndItIsGivenBack) {
  Backend_ a("a");
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 2,
                          .max_request_body_bytes = 100, .max_buffered_request_bytes = 100});
  auto ba = MakeBackend(registry_, "a@test", {a.port()});
  Serve({MakeRoute("a@test", "PathPrefix(`/`)", 1, ba)}, {ba});
  auto post = [](size_t bytes) {
    http::Request r = Get("/upload");
    r.method = "POST";
    r.body.assign(bytes, 'x');
    return r;
  };
  // A body on its way holds 80 of the 100 bytes...
  RawConnection slow(port_);
  slow.Write("POST /slow HTTP/1.1\r\nHost: a.test\r\nContent-Length: 80\r\n\r\n" + std::string(10, 'x'));
  WaitFor([&] { return proxy_->counters().buffered_request_bytes == 80; });
  ASSERT_EQ(proxy_->counters().buffered_request_bytes, 80u);
  http::Client client("127.0.0.1", port_);
  const int hits = a.hits();
  auto refused = client.Send(post(30));
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 503) << "30 more would put 110 in memory";
  EXPECT_EQ(a.hits(), hits) << "the refused body was never read nor forwarded";
  // ...and gives them back once it is answered.
  slow.Write(std::string(70, 'x'));
  EXPECT_NE(slow.ReadUntil("a /slow").find("200 OK"), std::string::npos);
  WaitFor([&] { return proxy_->counters().buffered_request_bytes == 0; });  // released once answered
  ASSERT_EQ(proxy_->counters().buffered_request_bytes, 0u);
  http::Client again("127.0.0.1", port_);
  auto ok = again.Send(post(30));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
  // A declared length over max_request_body_bytes is still 413, as before.
  http::Client big("127.0.0.1", port_);
  EXPECT_EQ(big.Send(post(101))->status, 413);
}

TEST_F(ProxyTest, HopByHopHeadersAreNotForwardedAndStreamsAreRelayed) {
  Backend_ a("a");
  a.Start();
  StartProxy();
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  Serve({MakeRoute("a@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  http::Client client("127.0.0.1", port_);
  http::Request req = Get("/");
  req.headers.push_back({"Connection", "keep-alive, X-Custom"});
  req.headers.push_back({"X-Custom", "secret"});
  req.headers.push_back({"X-Forwarded-For", "6.6.6.6"});
  auto r = client.Send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->GetHeader("X-Seen-Custom"), "");  // named by Connection: hop-by-hop
  EXPECT_EQ(r->GetHeader("X-Seen-For"), "127.0.0.1");  // the client's own is not believed
  auto s = client.Send(Get("/stream"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->body, "one,two");
}

Step MiddlewareStep(std::string name, std::string_view config) {
  auto built = BuildMiddleware(boost::json::parse(config).as_object());
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  std::shared_ptr<const ForwardAuth> auth;
  if (built->forward_auth) {
    auto fa = ForwardAuth::Build(*built->forward_auth);
    EXPECT_TRUE(fa.ok()) << fa.status().ToString();
    if (fa.ok()) auth = *fa;
  }
  return Step{.name = std::move(name), .middleware = built->middleware, .forward_auth = built->forward_auth,
              .auth = std::move(auth), .retry = built->retry, .buffering = built->buffering,
              .compress = built->compress, .errors = built->errors};
}

TEST_F(ProxyTest, AChainChangesTheRequestAndTheResponseAndItsAnswersKeepTheHeadersBeforeThem) {
  Backend_ a("a");
  a.Start();
  StartProxy();
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  Route open = MakeRoute("api@test", "PathPrefix(`/api`)", 10, lb);
  open.chain = {MiddlewareStep("h@test", R"({"headers":{"customRequestHeaders":{"X-Added":"1"},
                                                         "customResponseHeaders":{"X-Edge":"yes"}}})"),
                MiddlewareStep("strip@test", R"({"stripPrefix":{"prefixes":["/api"]}})")};
  Route closed = MakeRoute("private@test", "PathPrefix(`/private`)", 20, lb);
  closed.chain = {MiddlewareStep("h@test", R"({"headers":{"customResponseHeaders":{"X-Edge":"yes"}}})"),
                  MiddlewareStep("auth@test", R"({"basicAuth":{"users":["u:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="]}})")};
  Serve({open, closed}, {lb});
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/api/items?x=1", "a.test"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "a /items?x=1");
  EXPECT_EQ(r->GetHeader("X-Seen-Added"), "1");
  EXPECT_EQ(r->GetHeader("X-Seen-Prefix"), "/api");
  EXPECT_EQ(r->GetHeader("X-Seen-Proto"), "http");
  EXPECT_EQ(r->GetHeader("X-Edge"), "yes");
  auto denied = client.Send(Get("/private", "a.test"));
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->GetHeader("X-Edge"), "yes");
  EXPECT_NE(denied->GetHeader("WWW-Authenticate").find("Basic realm="), std::string_view::npos);
  EXPECT_EQ(a.hits(), 1);
}

TEST_F(ProxyTest, ACircuitBreakerTripsOnWhatItsRequestsWereAnsweredAndThenAnswersForTheServer) {
  std::atomic<int> hits{0};
  http::Server backend({}, [&](const http::Request&) {
    hits.fetch_add(1);
    http::Response resp;
    resp.status = 502;  // as a server behind it failing
    resp.body = "down";
    return resp;
  });
  auto port = backend.Start();
  ASSERT_TRUE(port.ok());
  StartProxy(1);
  auto lb = MakeBackend(registry_, "a@test", {*port});
  Route route = MakeRoute("a@test", "PathPrefix(`/`)", 1, lb);
  route.chain = {MiddlewareStep("cb@test", R"({"circuitBreaker":{"expression":"NetworkErrorRatio() > 0.5"}})")};
  Serve({route}, {lb});
  http::Client client("127.0.0.1", port_);
  // The first answer is measured once its request is over, and the first check comes then: 1 of 1.
  auto first = client.Send(Get("/", "a.test"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 502);
  EXPECT_EQ(first->body, "down");
  auto tripped = client.Send(Get("/", "a.test"));  // the same connection: after the first was over
  ASSERT_TRUE(tripped.ok());
  EXPECT_EQ(tripped->status, 503);
  EXPECT_EQ(tripped->body, "Service Unavailable");
  EXPECT_EQ(hits.load(), 1);  // the server was not asked again
  backend.Stop();
}

std::string Gunzipped(std::string_view in) {
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[4096];
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : "not a whole gzip stream";
}

TEST_F(ProxyTest, CompressEncodesWhatTraefikWouldAndLeavesTheRestAsItCame) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "line " + std::to_string(i) + " of a compressible answer\n";
  http::Server backend({}, [&](const http::Request& r) {
    http::Response resp;
    resp.SetHeader("Content-Type", "text/plain; charset=utf-8");
    if (r.target == "/small") {
      resp.body = text.substr(0, 100);
    } else if (r.target == "/png") {
      resp.SetHeader("Content-Type", "image/png");
      resp.body = text;
    } else if (r.target == "/encoded") {
      resp.SetHeader("Content-Encoding", "gzip");
      resp.body = text;
    } else if (r.target == "/stream") {  // chunked, in pieces: decided after 1 KiB has come
      resp.stream = [&](http::BodyWriter& w) {
        for (size_t at = 0; at < text.size(); at += 700) w.Write(text.substr(at, 700));
      };
    } else {
      resp.SetHeader("Accept-Ranges", "bytes");
      resp.body = text;
    }
    return resp;
  });
  auto port = backend.Start();
  ASSERT_TRUE(port.ok());
  StartProxy();
  auto lb = MakeBackend(registry_, "a@test", {*port});
  Route route = MakeRoute("a@test", "PathPrefix(`/`)", 1, lb);
  route.chain = {MiddlewareStep("c@test", R"({"compress":{"excludedContentTypes":["image/png"]}})")};
  Route held = MakeRoute("b@test", "PathPrefix(`/b`)", 10, lb);  // the response read whole first
  held.chain = {MiddlewareStep("c@test", R"({"compress":{}})"), MiddlewareStep("buf@test", R"({"buffering":{}})")};
  Serve({route, held}, {lb});
  http::Client client("127.0.0.1", port_);
  auto get = [&](std::string path, std::string accept, std::string method = "GET") {
    http::Request req = Get(path, "a.test");
    req.method = method;
    if (!accept.empty()) req.headers.push_back({"Accept-Encoding", accept});
    auto r = client.Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  };
  // gzip: encoded, with Vary; gzhttp drops Accept-Ranges; the whole body came with its head: a length.
  http::Response gz = get("/text", "gzip, deflate");
  EXPECT_EQ(gz.GetHeader("Content-Encoding"), "gzip");
  EXPECT_EQ(gz.GetHeader("Vary"), "Accept-Encoding");
  EXPECT_EQ(gz.GetHeader("Accept-Ranges"), "");
  EXPECT_EQ(Gunzipped(gz.body), text);
  EXPECT_LT(gz.body.size(), text.size() / 4);
  // A body without a length is flushed as it comes (Go's ReverseProxy): both writers decide on
  // its first piece (700 bytes here, below the minimum), then it is encoded piece by piece, chunked.
  http::Response streamed = get("/stream", "gzip");
  EXPECT_EQ(streamed.GetHeader("Content-Encoding"), "gzip");
  EXPECT_EQ(streamed.GetHeader("Transfer-Encoding"), "chunked");
  EXPECT_EQ(Gunzipped(streamed.body), text);
  http::Response buffered = get("/b/text", "gzip");
  EXPECT_EQ(buffered.GetHeader("Content-Encoding"), "gzip");
  EXPECT_EQ(Gunzipped(buffered.body), text);
  // br and zstd are Traefik's writer's (their bytes are checked in compress_test.cc).
  EXPECT_EQ(get("/text", "br").GetHeader("Content-Encoding"), "br");
  EXPECT_EQ(get("/text", "zstd;q=0.9, br;q=0.5").GetHeader("Content-Encoding"), "zstd");
  // As it came: too small (with Vary), an excluded type, already encoded, not asked for, HEAD.
  for (const char* path : {"/small", "/png", "/encoded"}) {
    SCOPED_TRACE(path);
    http::Response plain = get(path, "gzip");
    EXPECT_NE(plain.GetHeader("Content-Encoding"), "br");
    EXPECT_EQ(plain.GetHeader("Vary"), "Accept-Encoding");
    EXPECT_EQ(plain.body, std::string(path) == "/small" ? text.substr(0, 100) : text);
  }
  EXPECT_EQ(get("/encoded", "gzip").GetHeader("Content-Encoding"), "gzip");  // the server's own
  http::Response unasked = get("/text", "");
  EXPECT_EQ(unasked.GetHeader("Content-Encoding"), "");
  EXPECT_EQ(unasked.GetHeader("Vary"), "");
  EXPECT_EQ(unasked.body, text);
  http::Response head = get("/text", "gzip", "HEAD");
  EXPECT_EQ(head.GetHeader("Content-Encoding"), "");
  EXPECT_EQ(head.GetHeader("Vary"), "");

  // A minimum past the edge's bound on what it holds (a body with a length: read ahead toward the
  // minimum): what was read ahead goes as it came, then the rest.
  proxy_->Stop();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1,
                          .max_buffered_response_bytes = 2000});
  route.chain = {MiddlewareStep("c@test", R"({"compress":{"minResponseBodyBytes":100000000}})")};
  Serve({route}, {lb});
  http::Client bounded("127.0.0.1", port_);
  http::Request req = Get("/text", "a.test");
  req.headers.push_back({"Accept-Encoding", "br"});
  auto big = bounded.Send(req);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->GetHeader("Content-Encoding"), "");
  EXPECT_EQ(big->body, text);
  WaitFor([&] { return proxy_->counters().buffered_request_bytes == 0; });  // given back once it is over
  EXPECT_EQ(proxy_->counters().buffered_request_bytes, 0u);
  backend.Stop();
}

TEST_F(ProxyTest, ErrorsAnswersWithTheServicesPageForTheStatusesItCatches) {
  http::Server app({}, [](const http::Request& r) {
    http::Response resp;
    resp.status = r.target.starts_with("/fail") ? 500 : r.target.starts_with("/missing") ? 404 : 200;
    resp.body = "the app's own " + std::to_string(resp.status);
    return resp;
  });
  http::Server pages({}, [](const http::Request& r) {
    http::Response resp;
    resp.SetHeader("Content-Type", "text/html");
    resp.SetHeader("X-Page-Host", std::string(r.GetHeader("Host")));
    resp.SetHeader("X-Page-Custom", std::string(r.GetHeader("X-Custom")));
    resp.body = "page " + r.target;
    return resp;
  });
  auto app_port = app.Start();
  auto pages_port = pages.Start();
  ASSERT_TRUE(app_port.ok() && pages_port.ok());
  StartProxy(1);
  auto lb = MakeBackend(registry_, "app@test", {*app_port});
  auto page_lb = MakeBackend(registry_, "pages@test", {*pages_port});
  auto gone = std::make_shared<Backend>();  // a service with no server: its own 503 is caught too
  gone->name = "gone@test";
  auto with_errors = [&](std::string name, std::string rule, std::shared_ptr<const Backend> to, std::string config,
                         std::vector<Step> after = {}) {
    Route r = MakeRoute(std::move(name), std::move(rule), 10, std::move(to));
    Step s = MiddlewareStep("e@test", config);
    s.error_backend = page_lb;
    r.chain = {s};
    for (Step& a : after) r.chain.push_back(std::move(a));
    return r;
  };
  Serve({with_errors("a@test", "Host(`a.test`)", lb,
                     R"({"errors":{"status":["500-599","404"],"service":"pages","query":"/{status}.html?from={url}"}})"),
         with_errors("b@test", "Host(`b.test`)", lb,
                     R"({"errors":{"status":["500"],"statusRewrites":{"500-599":503},"service":"pages",
                                   "query":"{status}/{originalStatus}","errorRequestHeaders":["X-Custom"]}})"),
         with_errors("c@test", "Host(`c.test`)", gone, R"({"errors":{"status":["503"],"service":"pages"}})"),
         with_errors("d@test", "Host(`d.test`)", lb, R"({"errors":{"status":["401"],"service":"pages","query":"/401"}})",
                     {MiddlewareStep("auth@test", R"({"basicAuth":{"users":["u:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="]}})")}),
         // A breaker inside the errors step sees the server's 500, not the page's rewritten 200.
         with_errors("f@test", "Host(`f.test`)", lb,
                     R"({"errors":{"status":["500"],"statusRewrites":{"500":200},"service":"pages"}})",
                     {MiddlewareStep("cb@test", R"({"circuitBreaker":{"expression":"ResponseCodeRatio(500, 600, 0, 600) > 0.5"}})")})},
        {lb, page_lb, gone});
  // The middlewares before an errors step wrap its page, as they wrap any answer.
  {
    Table t = *proxy_->table();
    Route wrapped = MakeRoute("e@test", "Host(`e.test`)", 10, lb);
    Step errors = MiddlewareStep("e@test", R"({"errors":{"status":["500"],"service":"pages"}})");
    errors.error_backend = page_lb;
    wrapped.chain = {MiddlewareStep("h@test", R"({"headers":{"customResponseHeaders":{"X-Outer":"yes"}}})"), errors};
    t.routes["web"].push_back(wrapped);
    proxy_->SetTable(std::make_shared<const Table>(std::move(t)));
  }
  http::Client client("127.0.0.1", port_);
  auto get = [&](std::string path, std::string host, HeaderList extra = {}, std::string method = "GET") {
    http::Request req = Get(path, host);
    req.method = method;
    for (auto& [n, v] : extra) req.headers.push_back({n, v});
    auto r = client.Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  };
  // The server's 500: the page for it, its status kept; {url} is the request's URL, query-escaped.
  http::Response failed = get("/fail?x=1", "a.test", {{"X-Custom", "yes"}});
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(failed.body, "page /500.html?from=http%3A%2F%2Fa.test%2Ffail%3Fx%3D1");
  EXPECT_EQ(failed.GetHeader("Content-Type"), "text/html");
  EXPECT_EQ(failed.GetHeader("X-Page-Host"), "a.test");  // the request's Host
  EXPECT_EQ(failed.GetHeader("X-Page-Custom"), "yes");   // every header of the request, by default
  EXPECT_EQ(get("/missing", "a.test").body, "page /404.html?from=http%3A%2F%2Fa.test%2Fmissing");
  http::Response fine = get("/ok", "a.test");
  EXPECT_EQ(fine.status, 200);
  EXPECT_EQ(fine.body, "the app's own 200");
  // statusRewrites: the page is asked for, and answers with, the rewritten status; only the listed
  // request headers go to it.
  http::Response rewritten = get("/fail", "b.test", {{"X-Custom", "yes"}, {"X-Other", "no"}});
  EXPECT_EQ(rewritten.status, 503);
  EXPECT_EQ(rewritten.body, "page /503/500");
  EXPECT_EQ(rewritten.GetHeader("X-Page-Custom"), "yes");
  EXPECT_EQ(get("/missing", "b.test").body, "the app's own 404");  // not a status it catches
  // The edge's own 503 (no server), and a later middleware's 401, are caught as a server's.
  http::Response none = get("/", "c.test");
  EXPECT_EQ(none.status, 503);
  EXPECT_EQ(none.body, "page /");
  http::Response refused = get("/", "d.test");
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.body, "page /401");
  http::Response outer = get("/fail", "e.test");
  EXPECT_EQ(outer.status, 500);
  EXPECT_EQ(outer.GetHeader("X-Outer"), "yes");
  // HEAD: the page's head and length, no body — the connection goes on with the next answer.
  http::Response head = get("/missing", "a.test", {}, "HEAD");
  EXPECT_EQ(head.status, 404);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(get("/ok", "a.test").body, "the app's own 200");
  http::Response rewritten_ok = get("/fail", "f.test");
  EXPECT_EQ(rewritten_ok.status, 200);
  http::Response tripped = get("/fail", "f.test");
  EXPECT_EQ(tripped.status, 503);
  EXPECT_EQ(tripped.body, "Service Unavailable");
  // The page service down: its 502 text, under the caught status.
  pages.Stop();
  http::Response no_page = get("/fail", "a.test");
  EXPECT_EQ(no_page.status, 500);
  EXPECT_EQ(no_page.body, "Bad Gateway");
  app.Stop();
}

TEST_F(ProxyTest, InFlightReqHoldsItsSlotUntilTheResponsesLastByteWasRelayed) {
  std::promise<void> streaming, release;
  std::shared_future<void> released = release.get_future().share();
  http::Server backend({}, [&](const http::Request& r) {
    http::Response resp;
    if (r.target == "/long") {  // the head and half the body, the rest once the test says
      resp.stream = [&](http::BodyWriter& w) {
        w.Write("one,");
        streaming.set_value();
        released.wait();
        w.Write("two");
      };
    } else {
      resp.body = "quick";
    }
    return resp;
  });
  auto port = backend.Start();
  ASSERT_TRUE(port.ok());
  StartProxy(1);  // one I/O thread: the long request is over before the next is read
  auto lb = MakeBackend(registry_, "a@test", {*port});
  Route route = MakeRoute("a@test", "PathPrefix(`/`)", 1, lb);
  route.chain = {MiddlewareStep("limit@test", R"({"inFlightReq":{"amount":1}})")};
  Serve({route}, {lb});
  std::thread long_request([&] {
    http::Client client("127.0.0.1", port_);
    auto r = client.Send(Get("/long", "a.test"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "one,two");
  });
  streaming.get_future().wait();  // its head went out; its body is not over
  http::Client client("127.0.0.1", port_);
  auto refused = client.Send(Get("/", "a.test"));
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->body, "max connections reached: 1");
  EXPECT_EQ(refused->GetHeader("Content-Type"), "text/plain; charset=utf-8");
  auto other_host = client.Send(Get("/", "b.test"));  // counted by host: another has its own slot
  ASSERT_TRUE(other_host.ok());
  EXPECT_EQ(other_host->status, 200);
  release.set_value();
  long_request.join();
  // The slot is free once the long answer's last byte was relayed (the thread has read it all).
  auto after = client.Send(Get("/", "a.test"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->body, "quick");
  backend.Stop();
}

TEST_F(ProxyTest, AServerThatRefusesTheConnectionHandsTheRequestToAnother) {
  Backend_ a("a");
  a.Start();
  uint16_t dead_port = 0;
  {
    Backend_ gone("gone");
    dead_port = gone.Start();
    gone.Stop();  // nothing listens there now: connections are refused
  }
  StartProxy();
  auto lb = MakeBackend(registry_, "ab@test", {dead_port, a.port()});
  Serve({MakeRoute("ab@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 6; ++i) {
    auto r = client.Send(Get("/"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "a /");
  }
  EXPECT_EQ(proxy_->counters().bad_gateway, 0u);
  // With no server left to try: 502.
  auto only_dead = MakeBackend(registry_, "dead@test", {dead_port});
  Serve({MakeRoute("dead@test", "PathPrefix(`/`)", 1, only_dead)}, {only_dead});
  auto r = client.Send(Get("/"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
}

TEST_F(ProxyTest, AServerThatClosedItsIdleConnectionGetsTheRequestOnANewOne) {
  auto a = std::make_unique<Backend_>("a");
  const uint16_t port = a->Start();
  StartProxy(/*io_threads=*/1);  // one thread: one pool, which holds the connections the server closes
  auto lb = MakeBackend(registry_, "a@test", {port});
  Serve({MakeRoute("a@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  {
    http::Client client("127.0.0.1", port_);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(client.Send(Get("/")).ok());
  }
  // The backend restarts on the same port: every pooled connection is now closed by its peer.
  a->Stop();
  a.reset();
  http::ServerOptions again;
  again.port = port;
  std::atomic<int> hits{0};
  http::Server b(again, [&](const http::Request&) {
    hits.fetch_add(1);
    http::Response resp;
    resp.body = "b";
    return resp;
  });
  ASSERT_TRUE(b.Start().ok());
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 4; ++i) {
    auto r = client.Send(Get("/"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "b");
  }
  EXPECT_EQ(hits.load(), 4);
  EXPECT_GE(proxy_->counters().retried_stale, 1u);
  b.Stop();
}

TEST_F(ProxyTest, AFencedServerTakesNoNewRequestsAndDrainsWhenItsLastRequestEnds) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> waiting{0};
  Backend_ slow("slow", [&](const http::Request& r) {
    if (r.target != "/slow") return;
    waiting.fetch_add(1);
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  Backend_ other("other");
  slow.Start();
  other.Start();
  StartProxy();
  auto lb = MakeBackend(registry_, "s@test", {slow.port(), other.port()});
  Serve({MakeRoute("s@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  std::shared_ptr<ServerState> slow_state = lb->servers[0].state;

  // One request in flight on the slow server.
  auto in_flight = std::async(std::launch::async, [&] {
    http::Client c("127.0.0.1", port_);
    for (;;) {  // round robin: ask until the slow server has it
      auto r = c.Send(Get("/slow"));
      if (!r.ok() || r->body.rfind("slow", 0) == 0) return r;
    }
  });
  while (waiting.load() == 0) std::this_thread::yield();
  std::promise<void> drained;
  slow_state->Fence([&] { drained.set_value(); });
  auto drained_future = drained.get_future();
  EXPECT_EQ(drained_future.wait_for(std::chrono::seconds(0)), std::future_status::timeout);

  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 6; ++i) {
    auto r = client.Send(Get("/"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->body, "other /");  // never the fenced server
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  auto r = in_flight.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);  // the request in flight finished
  EXPECT_EQ(drained_future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(slow_state->in_flight(), 0);
}

// A server on a raw socket: bound at once, so its port is known, and listening only from Listen —
// until then a connect to it is refused, as to a task whose server has not started yet. Each
// connection gets `answer` byte for byte once its request's head has arrived, and is closed.
class RawUpstream {
 public:
  RawUpstream() : fd_(testing::BindLoopback(&port_)) {}
  ~RawUpstream() {
    ::shutdown(fd_, SHUT_RDWR);  // ends a blocked accept
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  void Listen(std::string answer) {
    ASSERT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this, answer = std::move(answer)] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        testing::ReadThroughHead(c);
        ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }

 private:
  uint16_t port_ = 0;
  int fd_;
  std::thread thread_;
};

TEST_F(ProxyTest, AWebSocketUpgradeIsRelayedBothWaysUntilEitherSideCloses) {
  SwitchingUpstream upstream("websocket", "hello;");
  StartProxy(1);
  RouteAllTo(upstream.port());
  const std::string upgrade =
      "GET /chat HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  {
    RawConnection ws(port_);
    ws.Write(upgrade + "early;");  // a frame sent before the answer came goes on too
    const std::string got = ws.ReadUntil("early;");
    EXPECT_TRUE(got.starts_with("HTTP/1.1 101 Switching Protocols\r\n")) << got;
    // The server's head as it sent it (Go writes a 101's headers untouched), then its bytes.
    EXPECT_NE(got.find("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: abc\r\n\r\nhello;"),
              std::string::npos)
        << got;
    EXPECT_TRUE(got.ends_with("hello;early;")) << got;
    for (const char* message : {"one", "two", "three"}) {
      ws.Write(message);
      EXPECT_EQ(ws.ReadUntil(message), message);
    }
    ASSERT_EQ(upstream.heads().size(), 1u);
    const std::string head = upstream.heads()[0];
    // Go's ReverseProxy: hop-by-hop headers dropped, then "Connection: Upgrade" and the Upgrade.
    EXPECT_NE(head.find("\r\nConnection: Upgrade\r\nUpgrade: websocket"), std::string::npos) << head;
    EXPECT_EQ(head.find("keep-alive"), std::string::npos) << head;
    EXPECT_NE(head.find("\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"), std::string::npos) << head;
  }  // the client closes: the edge closes the server's side too
  WaitFor([&] { return upstream.closed() == 1; });
  EXPECT_EQ(upstream.closed(), 1);
  // The switched connections are the peers': the edge goes on serving others. One whose request
  // came with a body of undeclared length (chunked, empty) holds nothing of the body budget.
  RawConnection again(port_);
  const std::string chunked = "GET /chat HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
  again.Write(chunked);
  EXPECT_NE(again.ReadUntil("hello;").find("101 Switching Protocols"), std::string::npos);
  EXPECT_EQ(proxy_->counters().buffered_request_bytes, 0u);
  // Stop ends a switched connection at once, both ways, rather than waiting out its grace.
  const auto began = std::chrono::steady_clock::now();
  proxy_->Stop(std::chrono::seconds(60));
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(30));
  EXPECT_EQ(again.ReadUntil("never sent"), "");  // closed
  WaitFor([&] { return upstream.closed() == 2; });
  EXPECT_EQ(upstream.closed(), 2);
}

// A drain of the server's task waits for its open WebSockets (up to the drain timeout, the driver's).
TEST_F(ProxyTest, ASwitchedConnectionHoldsItsServerInFlightUntilItEnds) {
  SwitchingUpstream upstream("websocket", "hello;");
  StartProxy(1);
  auto lb = MakeBackend(registry_, "ws@test", {upstream.port()});
  Serve({MakeRoute("ws@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  std::shared_ptr<ServerState> state = lb->servers[0].state;
  std::promise<void> drained;
  auto drained_future = drained.get_future();
  {
    RawConnection ws(port_);
    ws.Write("GET / HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    ASSERT_NE(ws.ReadUntil("hello;").find("101 Switching Protocols"), std::string::npos);
    EXPECT_EQ(state->in_flight(), 1);
    state->Fence([&] { drained.set_value(); });
    ws.Write("still here;");
    EXPECT_EQ(ws.ReadUntil("still here;"), "still here;");  // fenced: no new requests, this one goes on
    EXPECT_EQ(drained_future.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  }  // the client closes: the switched connection ends, and with it the server's last request
  EXPECT_EQ(drained_future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(state->in_flight(), 0);
}

TEST_F(ProxyTest, ASwitchToAnotherProtocolThanAskedOrUnaskedIs502) {
  SwitchingUpstream upstream("h2c");
  StartProxy(1);
  RouteAllTo(upstream.port());
  RawConnection ws(port_);
  ws.Write("GET / HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nframe");
  const std::string got = ws.ReadUntil("Bad Gateway");
  EXPECT_TRUE(got.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << got;
  EXPECT_EQ(got.find("frame"), std::string::npos) << got;  // nothing of the client's reached it
  // A protocol name that is not printable ASCII is not sent on (Go: invalid protocol): 502.
  RawConnection odd(port_);
  odd.Write("GET / HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: web\xc3\xa9socket\r\n\r\n");
  EXPECT_TRUE(odd.ReadUntil("Bad Gateway").starts_with("HTTP/1.1 502 Bad Gateway\r\n"));
  EXPECT_EQ(upstream.heads().size(), 1u);  // only the first request reached the server
  // A 101 to a request that asked for nothing is 502 too.
  http::Client client("127.0.0.1", port_);
  auto plain = client.Send(Get("/", "a.test"));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->status, 502);
  EXPECT_EQ(plain->body, "Bad Gateway");
}

TEST_F(ProxyTest, AHealthCheckedServerIsNotRoutedBeforeItsFirstProbePasses) {
  std::atomic<bool> healthy{false};
  std::atomic<int> probes{0};
  http::Server a({}, [&](const http::Request& r) {
    http::Response resp;
    if (r.target == "/health") {
      probes.fetch_add(1);
      resp.status = healthy.load() ? 200 : 503;
      return resp;
    }
    resp.body = "a";
    return resp;
  });
  auto port = a.Start();
  ASSERT_TRUE(port.ok());
  StartProxy();
  auto lb = MakeBackend(registry_, "h@test", {*port});
  HealthCheckConfig check;
  check.path = "/health";
  check.interval = std::chrono::milliseconds(50);
  check.unhealthy_interval = std::chrono::milliseconds(50);
  lb->health_check = check;
  std::shared_ptr<ServerState> state = lb->servers[0].state;
  Serve({MakeRoute("h@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  // Until a probe passes: pending or down, never routed.
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  while (probes.load() == 0) std::this_thread::yield();
  healthy.store(true);
  while (state->health() != Health::kUp) std::this_thread::yield();
  EXPECT_EQ(proxy_->Metrics().server_up, (std::map<std::pair<std::string, std::string>, int>{
                                              {{"h@test", state->url()}, 1}}));  // traefik_service_server_up
  auto ok = client.Send(Get("/"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  // A new table with the same server keeps its health (no reset to pending).
  auto lb2 = MakeBackend(registry_, "h@test", {*port});
  lb2->health_check = lb->health_check;
  EXPECT_EQ(lb2->servers[0].state.get(), state.get());
  Serve({MakeRoute("h@test", "PathPrefix(`/`)", 1, lb2)}, {lb2});
  EXPECT_EQ(state->health(), Health::kUp);
  auto still = client.Send(Get("/"));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->status, 200);
  a.Stop();
}

// A server whose first probe fails — its task's server not listening yet, as on a loaded machine —
// is probed again after a short backoff, not a whole interval (30 s here) later: it is UP and
// routed soon after it starts answering.
TEST_F(ProxyTest, AServerWhoseFirstProbeFailsIsProbedAgainSoonAndRoutedOnceItAnswers) {
  RawUpstream task;  // bound, not listening: the first probe's connect is refused
  StartProxy();
  auto lb = MakeBackend(registry_, "h@test", {task.port()});
  HealthCheckConfig check;
  check.path = "/health";
  check.interval = std::chrono::seconds(30);
  check.unhealthy_interval = std::chrono::seconds(30);
  lb->health_check = check;
  std::shared_ptr<ServerState> state = lb->servers[0].state;
  Serve({MakeRoute("h@test", "PathPrefix(`/`)", 1, lb)}, {lb});
  WaitFor([&] { return state->health() == Health::kDown; });
  ASSERT_EQ(state->health(), Health::kDown);
  http::Client client("127.0.0.1", port_);
  auto down = client.Send(Get("/"));
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_EQ(down->status, 503);  // not routed
  task.Listen("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  WaitFor([&] { return state->health() == Health::kUp; });  // gives up after 10 s, a third of the interval
  ASSERT_EQ(state->health(), Health::kUp);
  EXPECT_EQ(proxy_->Metrics().server_up, (std::map<std::pair<std::string, std::string>, int>{
                                              {{"h@test", state->url()}, 1}}));
  auto up = client.Send(Get("/"));
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->status, 200);
  EXPECT_EQ(up->body, "ok");
}

// Go's client, which Traefik forwards with, ends each line of a response's head at an LF, a CR
// before it or not: a server whose head has bare LFs — all of them, or mixed with CRLFs — is
// relayed (its head as the edge writes heads, its body byte for byte, bare LFs and all) and passes
// a health probe.
TEST_F(ProxyTest, AResponseHeadWithBareLfLineEndingsIsReadAsGosClientReadsIt) {
  struct Case {
    std::string answer;
    std::string body;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "ok"},
      {"HTTP/1.1 200 OK\r\nX-Seen-Custom: a\nContent-Length: 4\r\nX-Seen-Added: b\n\r\n1\n2\n", "1\n2\n"},
      {"HTTP/1.1 200 OK\nX-Seen-Custom: a\r\nX-Seen-Added: b\r\n\nno length\n", "no length\n"},
  };
  StartProxy();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.answer);
    RawUpstream server;
    server.Listen(c.answer);
    auto lb = MakeBackend(registry_, "lf@test", {server.port()});
    HealthCheckConfig check;
    check.interval = std::chrono::seconds(30);
    lb->health_check = check;
    std::shared_ptr<ServerState> state = lb->servers[0].state;
    Serve({MakeRoute("lf@test", "PathPrefix(`/`)", 1, lb)}, {lb});
    WaitFor([&] { return state->health() != Health::kPending; });
    EXPECT_EQ(state->health(), Health::kUp);  // the probe read the same head
    http::Client client("127.0.0.1", port_);
    auto r = client.Send(Get("/"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, c.body);
    if (c.answer.find("X-Seen-Custom") != std::string::npos) {
      EXPECT_EQ(r->GetHeader("X-Seen-Custom"), "a");
      EXPECT_EQ(r->GetHeader("X-Seen-Added"), "b");
    }
  }
  EXPECT_EQ(proxy_->counters().bad_gateway, 0u);
}

// What Go's client refuses stays refused, as Beast refused it: a CR that is not part of a line's
// end (it never separates lines, so no header line can be smuggled in with one), a head the server
// closes before its blank line, one that is not a response, one past the head limit: 502.
TEST_F(ProxyTest, AMalformedResponseHeadIs502) {
  const std::string answers[] = {
      "HTTP/1.1 200 OK\nX-Seen-Custom: a\rSet-Cookie: stolen=1\nContent-Length: 2\n\nok",
      "HTTP/1.1 200 OK\r\nX-Seen-Custom: a\r\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\nContent-Length: 2\n",
      "garbage\n\nok",
      "HTTP/1.1 200 OK\nX-Big: " + std::string(40 << 10, 'a') + "\n\nok",  // max_header_bytes is 32 KiB
  };
  StartProxy();
  uint64_t bad_gateway = 0;
  for (const std::string& answer : answers) {
    SCOPED_TRACE(answer.substr(0, 60));
    RawUpstream server;
    server.Listen(answer);
    RouteAllTo(server.port());
    http::Client client("127.0.0.1", port_);
    auto r = client.Send(Get("/"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 502);
    EXPECT_EQ(r->body, "Bad Gateway");
    EXPECT_EQ(r->GetHeader("Set-Cookie"), "");
    EXPECT_EQ(proxy_->counters().bad_gateway, ++bad_gateway);
  }
}

}  // namespace
}  // namespace paddock::edge

namespace paddock::edge {
namespace {

// An auth server: answers by its path, records the last request it got.
class AuthServer {
 public:
  AuthServer()
      : server_({}, [this](const http::Request& r) {
          {
            std::lock_guard lock(mu_);
            last_ = r;
          }
          http::Response resp;
          std::string_view path = r.Path();
          if (path == "/ok") {
            resp.headers.push_back({"X-Auth-User", "alice"});
            resp.headers.push_back({"X-Auth-Role", "admin"});
            resp.headers.push_back({"X-Other", "not copied"});
            resp.headers.push_back({"Set-Cookie", "sess=abc; Path=/"});
            resp.headers.push_back({"Set-Cookie", "ignored=1"});
          } else if (path == "/deny") {
            resp.status = 401;
            resp.body = "no entry";
            resp.headers.push_back({"X-Why", "because"});
          } else if (path == "/endless") {  // a refusal whose body goes on (4 KiB here)
            resp.status = 403;
            resp.stream = [](http::BodyWriter& w) {
              for (int i = 0; i < 4; ++i) w.Write(std::string(1024, 'n'));
            };
          } else if (path == "/redirect") {
            resp.status = 302;
            resp.headers.push_back({"Location", "/login?next=1"});
          }
          return resp;
        }) {}
  uint16_t Start() {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    return port_ = *port;
  }
  std::string Url(std::string path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  http::Request last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  std::mutex mu_;
  http::Request last_;
  http::Server server_;
  uint16_t port_ = 0;
};

class ForwardAuthTest : public ProxyTest {
 protected:
  void SetUp() override {
    auth_.Start();
    backend_.Start();
    StartProxy();
    lb_ = MakeBackend(registry_, "app@test", {backend_.port()});
  }
  void Route_(std::string config) {
    Route r = MakeRoute("app@test", "PathPrefix(`/`)", 1, lb_);
    r.chain = {MiddlewareStep("auth@test", config)};
    Serve({r}, {lb_});
  }
  std::string seen(std::string_view name) {
    std::lock_guard lock(mu_);
    return std::string(backend_request_.GetHeader(name));
  }

  AuthServer auth_;
  std::mutex mu_;
  http::Request backend_request_;
  Backend_ backend_{"app", [this](const http::Request& r) {
                      std::lock_guard lock(mu_);
                      backend_request_ = r;
                    }};
  std::shared_ptr<Backend> lb_;
};

TEST_F(ForwardAuthTest, TheAuthServerIsAskedOverAKeptAliveConnection) {
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/ok") + R"("}})");
  http::Client client("127.0.0.1", port_);  // one connection: one I/O thread, one pool
  std::set<std::string> auth_peers;
  for (int i = 0; i < 5; ++i) {
    auto r = client.Send(Get("/page", "app.test"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    http::Request seen_by_auth = auth_.last();
    EXPECT_NE(seen_by_auth.GetHeader("Connection"), "close");
    auth_peers.insert(seen_by_auth.remote_address);
  }
  EXPECT_EQ(auth_peers.size(), 1u) << "five calls, one connection (Traefik's client keeps it alive too)";
}

TEST_F(ForwardAuthTest, A2xxLetsTheRequestOnWithTheAuthResponseHeadersReplacingTheClients) {
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/ok") +
         R"(","authResponseHeaders":["X-Auth-User"],"authResponseHeadersRegex":"^X-Auth-R",
             "addAuthCookiesToResponse":["sess"]}})");
  http::Client client("127.0.0.1", port_);
  http::Request req = Get("/page?q=1", "app.test");
  req.headers.push_back({"X-Auth-User", "mallory"});
  req.headers.push_back({"X-Custom", "kept"});
  auto r = client.Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "app /page?q=1");
  EXPECT_EQ(seen("X-Auth-User"), "alice");  // the client's replaced
  EXPECT_EQ(seen("X-Auth-Role"), "admin");  // by the regex
  EXPECT_EQ(seen("X-Other"), "");
  EXPECT_EQ(r->GetHeader("Set-Cookie"), "sess=abc; Path=/");  // named in addAuthCookiesToResponse only
  // What the auth server saw: a GET with the request's headers and Traefik's X-Forwarded-*.
  http::Request a = auth_.last();
  EXPECT_EQ(a.method, "GET");
  EXPECT_EQ(a.target, "/ok");
  EXPECT_EQ(a.GetHeader("X-Custom"), "kept");
  EXPECT_EQ(a.GetHeader("X-Forwarded-Method"), "GET");
  EXPECT_EQ(a.GetHeader("X-Forwarded-Uri"), "/page?q=1");
  EXPECT_EQ(a.GetHeader("X-Forwarded-Host"), "app.test");
  EXPECT_EQ(a.GetHeader("X-Forwarded-Proto"), "http");
  EXPECT_EQ(a.GetHeader("X-Forwarded-Port"), "80");  // from the Host header (no port: 80), as Traefik's
  EXPECT_EQ(a.GetHeader("X-Forwarded-For"), "127.0.0.1");
  EXPECT_FALSE(a.HasHeader("X-Real-Ip"));  // trustForwardHeader false: the edge's own dropped too
}

TEST_F(ForwardAuthTest, ARefusalGoesToTheClientAsIsAndTheBackendIsNeverCalled) {
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/deny") + R"("}})");
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->body, "no entry");
  EXPECT_EQ(r->GetHeader("X-Why"), "because");
  EXPECT_EQ(backend_.hits(), 0);
}

// The auth server's answer is read whole (a refusal's body goes to the client), so the edge bounds
// it whatever maxResponseBodySize says (-1, Traefik's default, is no limit there): past
// max_auth_response_bytes it is as over maxResponseBodySize — 401, and nothing of it held.
TEST_F(ForwardAuthTest, AnAuthAnswerPastTheEdgesBoundIsAsOverMaxResponseBodySize) {
  proxy_->Stop();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1, .max_auth_response_bytes = 2048});
  http::Client client("127.0.0.1", port_);
  for (const std::string limit : {"", R"(,"maxResponseBodySize":1000000)"}) {
    Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/endless") + "\"" + limit + "}}");
    auto r = client.Send(Get("/x"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 401) << limit;
    EXPECT_EQ(r->body, "");
  }
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/deny") + R"("}})");  // within the bound: as it is
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->body, "no entry");
  EXPECT_EQ(backend_.hits(), 0);
}

TEST_F(ForwardAuthTest, ARedirectsLocationIsMadeAbsoluteAgainstTheAddressUnlessPreserved) {
  http::Client client("127.0.0.1", port_);
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/redirect") + R"("}})");
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->GetHeader("Location"), auth_.Url("/login?next=1"));
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/redirect") + R"(","preserveLocationHeader":true}})");
  auto p = client.Send(Get("/x"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->GetHeader("Location"), "/login?next=1");
  EXPECT_EQ(backend_.hits(), 0);
}

TEST_F(ForwardAuthTest, AuthSigninUrlTurnsA401IntoA302ToIt) {
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/deny") + R"(","authSigninURL":"https://login.test/?a=1&b=2"}})");
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->GetHeader("Location"), "https://login.test/?a=1&b=2");
  EXPECT_EQ(r->body, "<a href=\"https://login.test/?a=1&amp;b=2\">Found</a>.\n\n");  // Go's http.Redirect
}

// The auth server's answer is read as Go's client reads it too: its head's lines may end in a bare LF.
TEST_F(ForwardAuthTest, AnAuthAnswerWithBareLfLineEndingsIsReadAsGosClientReadsIt) {
  RawUpstream auth;
  auth.Listen("HTTP/1.1 200 OK\nX-Auth-User: bob\nContent-Length: 0\n\n");
  Route_(R"({"forwardAuth":{"address":"http://127.0.0.1:)" + std::to_string(auth.port()) +
         R"(/ok","authResponseHeaders":["X-Auth-User"]}})");
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/page", "app.test"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(seen("X-Auth-User"), "bob");
}

TEST_F(ForwardAuthTest, AnAuthServerThatCannotBeReachedIs500WithNoBody) {
  uint16_t dead_port = 0;
  {
    AuthServer gone;
    dead_port = gone.Start();
  }
  Route_(R"({"forwardAuth":{"address":"http://127.0.0.1:)" + std::to_string(dead_port) + R"(/ok"}})");
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(backend_.hits(), 0);
}

TEST_F(ForwardAuthTest, ForwardBodyAndPreserveRequestMethodAndMaxBodySize) {
  Route_(R"({"forwardAuth":{"address":")" + auth_.Url("/ok") +
         R"(","forwardBody":true,"maxBodySize":8,"preserveRequestMethod":true}})");
  http::Client client("127.0.0.1", port_);
  http::Request post = Get("/submit");
  post.method = "POST";
  post.body = "a=1&b=2";
  auto r = client.Send(post);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  http::Request a = auth_.last();
  EXPECT_EQ(a.method, "POST");
  EXPECT_EQ(a.body, "a=1&b=2");
  EXPECT_EQ(a.GetHeader("X-Forwarded-Method"), "POST");
  EXPECT_EQ(backend_request_.body, "a=1&b=2");  // the backend still gets it
  post.body = "123456789";  // over maxBodySize: Traefik's 401
  auto big = client.Send(post);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->status, 401);
  EXPECT_EQ(backend_.hits(), 1);
}

TEST(ForwardAuthAddressTest, OnlyHttpIsTaken) {
  auto a = ParseAuthAddress("http://auth.internal:9000/verify?x=1");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "auth.internal");
  EXPECT_EQ(a->port, 9000);
  EXPECT_EQ(a->target, "/verify?x=1");
  EXPECT_EQ(ParseAuthAddress("http://[::1]")->target, "/");
  EXPECT_FALSE(ParseAuthAddress("https://auth/verify").ok());
  EXPECT_FALSE(ParseAuthAddress("auth:9000").ok());
  EXPECT_EQ(ResolveLocation(*a, "../login"), "http://auth.internal:9000/login");
  EXPECT_EQ(ResolveLocation(*a, "//other/x"), "http://other/x");
  EXPECT_EQ(ResolveLocation(*a, "https://else/"), "https://else/");
}

TEST_F(ProxyTest, RetryAsksAgainOnARetryStatusAndOnARefusedConnection) {
  std::atomic<int> calls{0};
  http::Server flaky({}, [&](const http::Request&) {
    http::Response resp;
    if (calls.fetch_add(1) == 0) resp.status = 503;
    resp.body = "flaky";
    return resp;
  });
  auto flaky_port = flaky.Start();
  ASSERT_TRUE(flaky_port.ok());
  StartProxy();
  auto lb = MakeBackend(registry_, "flaky@test", {*flaky_port});
  Route r = MakeRoute("flaky@test", "PathPrefix(`/`)", 1, lb);
  r.chain = {MiddlewareStep("retry@test", R"({"retry":{"attempts":2,"status":["503"]}})")};
  Serve({r}, {lb});
  http::Client client("127.0.0.1", port_);
  auto ok = client.Send(Get("/"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(calls.load(), 2);
  // traefik_service_retries_total: the extra attempt.
  WaitFor([&] { return !proxy_->Metrics().service_retries.empty(); });
  EXPECT_EQ(proxy_->Metrics().service_retries, (std::map<std::string, uint64_t>{{"flaky@test", 1}}));

  // Network errors: a backend whose every server refuses is tried `attempts` times, then 502.
  uint16_t dead_port = 0;
  {
    Backend_ gone("gone");
    dead_port = gone.Start();
  }
  auto dead = MakeBackend(registry_, "dead@test", {dead_port});
  Route d = MakeRoute("dead@test", "PathPrefix(`/`)", 1, dead);
  d.chain = {MiddlewareStep("retry@test", R"({"retry":{"attempts":3}})")};
  Serve({d}, {dead});
  auto bad = client.Send(Get("/"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 502);
  EXPECT_EQ(proxy_->counters().bad_gateway, 1u);
  // Two extra attempts; flaky@test left the table, and its series with it.
  WaitFor([&] { return proxy_->Metrics().service_retries.count("dead@test") > 0; });
  EXPECT_EQ(proxy_->Metrics().service_retries, (std::map<std::string, uint64_t>{{"dead@test", 2}}));
}

// buffering's retryExpression (oxy's buffer): the request goes again while the predicate holds,
// after a response read whole or a network error, to a fresh pick; never after the 10th attempt.
TEST_F(ProxyTest, ABufferingRetryExpressionSendsTheRequestAgainWhileItHolds) {
  std::atomic<int> flaky_calls{0}, down_calls{0};
  http::Server flaky({}, [&](const http::Request&) {
    http::Response resp;
    if (flaky_calls.fetch_add(1) < 2) resp.status = 503;
    resp.body = "flaky";
    return resp;
  });
  http::Server down({}, [&](const http::Request&) {
    down_calls.fetch_add(1);
    http::Response resp;
    resp.status = 503;
    resp.body = "down";
    return resp;
  });
  auto flaky_port = flaky.Start();
  auto down_port = down.Start();
  ASSERT_TRUE(flaky_port.ok() && down_port.ok());
  uint16_t dead_port = 0;
  {
    Backend_ gone("gone");
    dead_port = gone.Start();
  }
  StartProxy();
  auto lb_flaky = MakeBackend(registry_, "flaky@test", {*flaky_port});
  auto lb_down = MakeBackend(registry_, "down@test", {*down_port});
  auto lb_dead = MakeBackend(registry_, "dead@test", {dead_port});
  Route r1 = MakeRoute("flaky@test", "PathPrefix(`/flaky`)", 3, lb_flaky);
  r1.chain = {MiddlewareStep("buf@test", R"j({"buffering":{"retryExpression":"ResponseCode() == 503 && Attempts() < 5"}})j")};
  Route r2 = MakeRoute("down@test", "PathPrefix(`/down`)", 2, lb_down);
  r2.chain = {MiddlewareStep("buf@test", R"j({"buffering":{"retryExpression":"ResponseCode() == 503"}})j")};
  Route r3 = MakeRoute("dead@test", "PathPrefix(`/dead`)", 1, lb_dead);
  r3.chain = {MiddlewareStep("buf@test", R"j({"buffering":{"retryExpression":"IsNetworkError() && Attempts() < 3"}})j")};
  Serve({r1, r2, r3}, {lb_flaky, lb_down, lb_dead});
  http::Client client("127.0.0.1", port_);
  // Two 503s, then the answer: the client sees only that.
  auto ok = client.Send(Get("/flaky"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "flaky");
  EXPECT_EQ(flaky_calls.load(), 3);
  // A predicate that always holds: 11 attempts (the 10th is the last that asks), then its answer.
  auto gave_up = client.Send(Get("/down"));
  ASSERT_TRUE(gave_up.ok());
  EXPECT_EQ(gave_up->status, 503);
  EXPECT_EQ(gave_up->body, "down");
  EXPECT_EQ(down_calls.load(), 11);
  // A server that cannot be reached: the 502 each attempt gets is what IsNetworkError() sees.
  auto bad = client.Send(Get("/dead"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 502);
  EXPECT_EQ(proxy_->counters().bad_gateway, 1u);
}

// --- sticky sessions (loadBalancer.sticky.cookie; edge/proxy/sticky.h) ---

std::vector<std::string> SetCookies(const http::Response& r) {
  std::vector<std::string> out;
  for (const auto& h : r.headers)
    if (h.name == "Set-Cookie" || h.name == "set-cookie") out.push_back(h.value);
  return out;
}

class StickyTest : public ProxyTest {
 protected:
  void SetUp() override {
    for (auto* b : {&a_, &b_, &c_}) b->Start();
    StartProxy();
  }
  // A three-server service with `cookie`; the servers' names by their sticky hash.
  void ServeSticky(StickyCookie cookie, const std::string& service = "app@test") {
    lb_ = MakeBackend(registry_, service, {a_.port(), b_.port(), c_.port()});
    lb_->sticky = std::move(cookie);
    Serve({MakeRoute("app@test", "PathPrefix(`/`)", 1, lb_)}, {lb_});
  }
  StatusOr<http::Response> Send(http::Client& client, const std::string& cookie) {
    http::Request req = Get("/");
    if (!cookie.empty()) req.headers.push_back({"Cookie", cookie});
    return client.Send(req);
  }
  // Which server (its index in lb_) a cookie value names.
  int Named(const std::string& value) const {
    for (size_t i = 0; i < lb_->servers.size(); ++i)
      if (lb_->servers[i].state->sticky_hash() == value) return static_cast<int>(i);
    return -1;
  }
  static int Answered(const http::Response& r) { return r.body[0] - 'a'; }

  Backend_ a_{"a"}, b_{"b"}, c_{"c"};
  std::shared_ptr<Backend> lb_;
};

TEST_F(StickyTest, TheCookieIsSetWithTraefiksNameAndAttributesOnlyWhenTheRequestHadNoValidOne) {
  struct Case {
    std::string name;
    StickyCookie cookie;
    std::string cookie_name;
    std::string attributes;  // what follows "name=value"
  };
  const Case cases[] = {
      {"defaults (sticky.cookie=true)", StickyCookie{.name = StickyCookieName("", "app@test")},
       StickyCookieName("", "app@test"), "; Path=/"},
      {"every option",
       StickyCookie{.name = "sess", .secure = true, .http_only = true, .same_site = SameSite::kStrict, .max_age = 60,
                    .path = "/app", .domain = "example.test"},
       "sess", "; Path=/app; Domain=example.test; Max-Age=60; HttpOnly; Secure; SameSite=Strict"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServeSticky(c.cookie);
    http::Client client("127.0.0.1", port_);
    auto first = Send(client, "");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->status, 200);
    std::vector<std::string> set = SetCookies(*first);
    ASSERT_EQ(set.size(), 1u);
    const std::string prefix = c.cookie_name + "=";
    ASSERT_EQ(set[0].rfind(prefix, 0), 0u) << set[0];
    const std::string value = set[0].substr(prefix.size(), 16);
    EXPECT_EQ(set[0], prefix + value + c.attributes);
    EXPECT_EQ(Named(value), Answered(*first));  // the cookie names the server that answered

    // 20 requests with the cookie: one server, and no new cookie.
    for (int i = 0; i < 20; ++i) {
      auto r = Send(client, "other=1; " + c.cookie_name + "=" + value);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(Answered(*r), Named(value));
      EXPECT_TRUE(SetCookies(*r).empty());
    }
  }
}

TEST_F(StickyTest, ACookieForAServerDownFencedGoneOrBogusGoesByRoundRobinAndGetsANewCookie) {
  const std::string name = StickyCookieName("", "app@test");
  struct Case {
    std::string name;
    std::function<std::string(Backend&)> cookie;  // sets the scene, returns the cookie value
    int unwanted;                                    // the server it must not reach; -1: none
  };
  const Case cases[] = {
      {"bogus", [](Backend&) { return std::string("bogus"); }, -1},
      {"a server not in the service", [](Backend&) { return StickyServerHash("http://127.0.0.1:1"); }, -1},
      {"down",
       [](Backend& lb) {
         lb.servers[0].state->set_health(Health::kDown);
         return lb.servers[0].state->sticky_hash();
       },
       0},
      {"fenced (drain before stop)",
       [](Backend& lb) {
         lb.servers[1].state->Fence([] {});
         return lb.servers[1].state->sticky_hash();
       },
       1},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServeSticky(StickyCookie{.name = name}, fmt::format("app{}@test", ++n));  // fresh server states
    const std::string value = c.cookie(*lb_);
    http::Client client("127.0.0.1", port_);
    std::set<int> reached;
    for (int i = 0; i < 6; ++i) {
      auto r = Send(client, name + "=" + value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->status, 200);
      reached.insert(Answered(*r));
      std::vector<std::string> set = SetCookies(*r);
      ASSERT_EQ(set.size(), 1u);
      EXPECT_EQ(set[0], name + "=" + lb_->servers[static_cast<size_t>(Answered(*r))].state->sticky_hash() + "; Path=/");
    }
    EXPECT_EQ(reached.count(c.unwanted), 0u);
    EXPECT_EQ(reached.size(), 2u + (c.unwanted < 0 ? 1 : 0));  // round robin over the routable ones
  }
}

TEST_F(StickyTest, AnOlderTraefikCookieFormSticksAndIsRewritten) {
  const std::string name = StickyCookieName("", "app@test");
  ServeSticky(StickyCookie{.name = name});
  const ServerState& second = *lb_->servers[1].state;
  http::Client client("127.0.0.1", port_);
  for (const std::string& old : {second.url(), StickyFnvHash(second.url())}) {
    auto r = Send(client, name + "=" + old);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(Answered(*r), 1);
    EXPECT_EQ(SetCookies(*r), std::vector<std::string>{name + "=" + second.sticky_hash() + "; Path=/"});
  }
}

// --- buffering (edge/proxy/buffering.h) ---

// A buffering middleware holds a response in memory (oxy would spill it to disk), so the edge bounds
// it whatever maxResponseBodyBytes says: past max_buffered_response_bytes, or past what is left of
// the body budget, the client gets oxy's 500 — a server cannot make the edge hold more — and the
// budget is given back.
TEST_F(ProxyTest, ABufferedResponseIsHeldOnlyUpToTheEdgesBoundAndItsBodyBudget) {
  const std::string big(100 << 10, 'z');
  http::Server server({}, [&](const http::Request& r) {
    http::Response resp;
    const size_t n = r.target.ends_with("/small") ? 30 << 10 : big.size();
    if (r.target.starts_with("/chunked")) {
      resp.stream = [&, n](http::BodyWriter& w) {
        for (size_t i = 0; i < n; i += 8192) w.Write(big.substr(i, std::min<size_t>(8192, n - i)));
      };
    } else {
      resp.body = big.substr(0, n);
    }
    return resp;
  });
  auto server_port = server.Start();
  ASSERT_TRUE(server_port.ok());
  for (const auto& [response_bound, budget] : {std::pair<uint64_t, uint64_t>{64 << 10, 512 << 20},
                                               std::pair<uint64_t, uint64_t>{16 << 20, 64 << 10}}) {
    SCOPED_TRACE("bound " + std::to_string(response_bound) + ", budget " + std::to_string(budget));
    if (proxy_) proxy_->Stop();
    StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                            .io_threads = 1,
                            .max_buffered_request_bytes = budget,
                            .max_buffered_response_bytes = response_bound});
    auto lb = MakeBackend(registry_, "big@test", {*server_port});
    Route route = MakeRoute("buffered@test", "PathPrefix(`/`)", 1, lb);
    route.chain = {MiddlewareStep("buf@test", R"j({"buffering":{}})j")};  // no maxResponseBodyBytes: Traefik's no limit
    Serve({route}, {lb});
    http::Client client("127.0.0.1", port_);
    for (const std::string target : {"/whole", "/chunked"}) {
      auto r = client.Send(Get(target));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->status, 500) << target;
      EXPECT_EQ(r->body, "Internal Server Error");
      auto small = client.Send(Get(target + "/small"));
      ASSERT_TRUE(small.ok());
      EXPECT_EQ(small->status, 200) << target;
      EXPECT_EQ(small->body.size(), size_t{30 << 10});
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (proxy_->counters().buffered_request_bytes > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    WaitFor([&] { return proxy_->counters().buffered_request_bytes == 0; });  // given back once it is over
  EXPECT_EQ(proxy_->counters().buffered_request_bytes, 0u);
  }
}

TEST_F(ProxyTest, BufferingRefusesARequestOverItsLimitAndAnswers500ForAResponseOverIts) {
  Backend_ a("a");
  a.Start();
  // Larger bodies, whole and chunked in pieces (more than one relay read).
  const std::string big(40000, 'y');
  http::Server large({}, [&](const http::Request& r) {
    http::Response resp;
    if (r.target == "/u/chunked") {
      resp.stream = [&](http::BodyWriter& w) {
        for (size_t i = 0; i < big.size(); i += 5000) w.Write(big.substr(i, 5000));
      };
    } else {
      resp.body = big;
    }
    return resp;
  });
  auto large_port = large.Start();
  ASSERT_TRUE(large_port.ok());
  StartProxy();
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  auto lb_large = MakeBackend(registry_, "large@test", {*large_port});
  // Bodies: the backend answers "a <target>" (2 + target bytes); "/stream" is chunked ("one,two").
  Route limited = MakeRoute("limited@test", "PathPrefix(`/`)", 1, lb);
  limited.chain = {MiddlewareStep("hdr@test", R"j({"headers":{"customResponseHeaders":{"X-Outer":"1"}}})j"),
                   MiddlewareStep("buf@test", R"j({"buffering":{"maxRequestBodyBytes":10,"maxResponseBodyBytes":8}})j")};
  Route unlimited = MakeRoute("unlimited@test", "PathPrefix(`/u/`)", 2, lb_large);
  unlimited.chain = {MiddlewareStep("buf0@test", R"j({"buffering":{}})j")};
  Serve({limited, unlimited}, {lb, lb_large});
  http::Client client("127.0.0.1", port_);
  struct Case {
    std::string method, target, body;
    int status;
    std::string response;
    bool reached_backend;
  };
  const Case cases[] = {
      {"POST", "/", std::string(10, 'x'), 200, "a /", true},                       // at the limit
      {"POST", "/", std::string(11, 'x'), 413, "Request Entity Too Large", false},  // limit + 1
      {"GET", "/12345", "", 200, "a /12345", true},                                // 8 bytes: at the limit
      {"GET", "/123456", "", 500, "Internal Server Error", true},                   // 9 bytes
      {"GET", "/stream", "", 200, "one,two", true},                                 // chunked, 7 bytes
      {"GET", "/u/whole", "", 200, big, false},                                     // no limit
      {"GET", "/u/chunked", "", 200, big, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.target + " body " + std::to_string(c.body.size()));
    const int hits = a.hits();
    http::Request req = Get(c.target);
    req.method = c.method;
    req.body = c.body;
    auto r = client.Send(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, c.status);
    EXPECT_EQ(r->body.size(), c.response.size());
    EXPECT_TRUE(r->body == c.response) << r->body.substr(0, 40);
    EXPECT_EQ(a.hits() - hits, c.reached_backend ? 1 : 0);
    if (c.status == 200) {
      // Buffered: sent whole, with its length, never chunked.
      EXPECT_EQ(r->GetHeader("Content-Length"), std::to_string(c.response.size()));
      EXPECT_EQ(r->GetHeader("Transfer-Encoding"), "");
    } else {
      EXPECT_EQ(r->GetHeader("Content-Type"), "text/plain; charset=utf-8");
      EXPECT_EQ(r->GetHeader("X-Seen-Host"), "");  // none of the backend's headers
    }
    if (c.target.rfind("/u/", 0) != 0) {
      EXPECT_EQ(r->GetHeader("X-Outer"), "1");  // the middleware before it wraps it
    }
  }
  large.Stop();
}

// --- entryPoints.<name>.http.sanitizePath ---

TEST_F(ProxyTest, SanitizePathFalseRoutesAndForwardsThePathAsReceived) {
  Backend_ a("a");
  a.Start();
  proxy_ = std::make_unique<Proxy>(ProxyOptions{
      .entry_points = {{"web", "127.0.0.1", 0}, {.name = "raw", .port = 0, .sanitize_path = false}}});
  auto ports = proxy_->Start();
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  auto lb = MakeBackend(registry_, "a@test", {a.port()});
  Table t;
  t.routes["web"] = {MakeRoute("a@test", "PathPrefix(`/`)", 1, lb)};
  t.routes["raw"] = {MakeRoute("a@test", "PathPrefix(`/a/`)", 1, lb)};
  t.backends["a@test"] = lb;
  proxy_->SetTable(std::make_shared<const Table>(std::move(t)));
  struct Case {
    std::string entry_point, target;
    int status;
    std::string body;
  };
  const Case cases[] = {
      {"web", "/a/../b", 200, "a /b"},
      {"raw", "/a/../b", 200, "a /a/../b"},
      {"raw", "/a//./c/", 200, "a /a//./c/"},
      {"raw", "/a/%7e%2f", 200, "a /a/~%2F"},  // still normalized (step 3), only not cleaned
      {"raw", "/a/%zz", 400, "400 Bad Request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry_point + " " + c.target);
    http::Client client("127.0.0.1", ports->at(c.entry_point));
    auto r = client.Send(Get(c.target));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, c.status);
    EXPECT_EQ(r->body, c.body);
  }
}

// Waits until `d` has passed on the steady clock: what a test of a timeout waits for.
void WaitOut(std::chrono::steady_clock::duration d) {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  const auto until = std::chrono::steady_clock::now() + d;
  cv.wait_until(lock, until, [&] { return std::chrono::steady_clock::now() >= until; });
}

TEST_F(ProxyTest, AnIdleConnectionClosesAfterTheIdleTimeoutAndAHalfSentRequestAfterTheReadTimeout) {
  Backend_ a("a");
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 1,
                          .client_read_timeout = std::chrono::milliseconds(300),
                          .client_idle_timeout = std::chrono::milliseconds(600)});
  RouteAllTo(a.port());
  const auto began = std::chrono::steady_clock::now();
  RawConnection idle(port_), half(port_), served(port_);
  half.Write("GET / HTTP/1.1\r\nHost: a");
  served.Write("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_NE(served.ReadUntil("a /x").find("a /x"), std::string::npos);
  // Each is closed by the edge (the read ends) without an answer, not before its timeout.
  EXPECT_EQ(half.ReadUntil("never"), "");
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(300));
  EXPECT_EQ(idle.ReadUntil("never"), "");
  EXPECT_EQ(served.ReadUntil("never"), "");  // idle again once answered
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(600));
  WaitFor([&] { return proxy_->counters().open_connections == 0; });  // counted just after the close
  EXPECT_EQ(proxy_->counters().open_connections, 0u);
}

TEST_F(ProxyTest, AnAnswerSlowerThanTheReadTimeoutIsNotCut) {
  // Traefik's readTimeout bounds reading the request; its writeTimeout is 0 by default.
  Backend_ a("a", [](const http::Request&) { WaitOut(std::chrono::milliseconds(700)); });
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 1,
                          .client_read_timeout = std::chrono::milliseconds(200)});
  RouteAllTo(a.port());
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/slow"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "a /slow");
}

TEST_F(ProxyTest, TheResponseHeaderTimeoutIs504AndABodyThatComesLaterIsNotCut) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  http::Server backend({}, [&](const http::Request& r) {
    http::Response resp;
    if (r.target == "/silent") {
      released.wait();  // answers only once the test is over
      resp.body = "too late";
    } else {  // the head at once, the body's second half after three timeouts
      resp.stream = [](http::BodyWriter& w) {
        w.Write("one,");
        WaitOut(std::chrono::milliseconds(600));
        w.Write("two");
      };
    }
    return resp;
  });
  auto port = backend.Start();
  ASSERT_TRUE(port.ok());
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 1,
                          .upstream_response_timeout = std::chrono::milliseconds(200)});
  RouteAllTo(*port);
  http::Client client("127.0.0.1", port_);
  const auto began = std::chrono::steady_clock::now();
  auto late = client.Send(Get("/silent"));
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_EQ(late->status, 504);
  EXPECT_EQ(late->body, "Gateway Timeout");
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(200));
  EXPECT_EQ(proxy_->counters().gateway_timeout, 1u);
  EXPECT_EQ(proxy_->counters().bad_gateway, 0u);
  auto slow = client.Send(Get("/trickle"));  // the same client connection: a 504 keeps it
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(slow->status, 200);
  EXPECT_EQ(slow->body, "one,two");
  release.set_value();
  backend.Stop();
}

// A server that takes no connection: its listen queue is full, so the kernel drops the edge's SYN
// and the connect waits until upstream_connect_timeout.
TEST_F(ProxyTest, AConnectThatTimesOutIs504) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);
  std::vector<int> fill;  // the queue's one place taken (the next connects are dropped, left pending)
  for (int i = 0; i < 2; ++i) {
    fill.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    ::connect(fill.back(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));  // EINPROGRESS
  }
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 1,
                          .upstream_connect_timeout = std::chrono::milliseconds(300)});
  RouteAllTo(port);
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 504);
  EXPECT_EQ(r->body, "Gateway Timeout");
  EXPECT_EQ(proxy_->counters().gateway_timeout, 1u);
  EXPECT_EQ(proxy_->counters().bad_gateway, 0u);
  for (int fd : fill) ::close(fd);
  ::close(listener);
}

// Traefik's respondingTimeouts per entry point: writeTimeout cuts an answer slower than it (the
// client gets no answer); an entry point's idleTimeout replaces the proxy's.
TEST_F(ProxyTest, AnEntryPointsOwnWriteAndIdleTimeouts) {
  Backend_ a("a", [](const http::Request& r) {
    if (r.target == "/slow") WaitOut(std::chrono::milliseconds(700));
  });
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{.name = "web",
                                            .write_timeout = std::chrono::milliseconds(200),
                                            .idle_timeout = std::chrono::milliseconds(300)}},
                          .io_threads = 1});
  RouteAllTo(a.port());
  RawConnection slow(port_);
  slow.Write("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(slow.ReadUntil("never"), "");  // closed at the write deadline, unanswered
  const auto began = std::chrono::steady_clock::now();
  RawConnection idle(port_);  // opened now: its first request is sent well within the idle timeout
  idle.Write("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_NE(idle.ReadUntil("a /fast").find("a /fast"), std::string::npos);
  EXPECT_EQ(idle.ReadUntil("never"), "");  // then closed after 300 ms idle, not the default 180 s
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(30));
}

// Traefik's idleConnTimeout: a pooled connection to a server unused that long is closed, and the
// next request opens a new one (not a stale-connection retry: the edge never tries the closed one).
TEST_F(ProxyTest, APooledConnectionIdleLongerThanTheIdleConnTimeoutIsClosed) {
  Backend_ a("a");
  a.Start();
  StartProxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 1,
                          .upstream_idle_timeout = std::chrono::milliseconds(200)});
  RouteAllTo(a.port());
  http::Client client("127.0.0.1", port_);
  ASSERT_EQ(client.Send(Get("/"))->status, 200);
  ASSERT_EQ(client.Send(Get("/"))->status, 200);
  EXPECT_EQ(proxy_->counters().upstream_connects, 1u);  // the second reused the first's
  WaitOut(std::chrono::milliseconds(1'500));  // past the timeout and the once-a-second prune
  ASSERT_EQ(client.Send(Get("/"))->status, 200);
  const ProxyCounters c = proxy_->counters();
  EXPECT_EQ(c.upstream_connects, 2u);
  EXPECT_EQ(c.upstream_reuses, 1u);
  EXPECT_EQ(c.retried_stale, 0u);
}

}  // namespace
}  // namespace paddock::edge
