#include "edge/edge.h"

#include <stdlib.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include "edge/proxy/compile.h"
#include "edge/proxy/sticky.h"
#include "edge/proxy/tls.h"
#include "edge/rule.h"
#include "edge/runtime.h"
#include "http/client.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

class FakeSource : public TaskSource {
 public:
  StatusOr<TaskRead> Read() override {
    std::lock_guard lock(mu_);
    return TaskRead{tasks_, {}};
  }
  void Set(std::vector<EcsTask> tasks) {
    std::lock_guard lock(mu_);
    tasks_ = std::move(tasks);
  }

 private:
  std::mutex mu_;
  std::vector<EcsTask> tasks_;
};

class FakeHolds : public DrainHoldSink {
 public:
  Status Put(std::string_view, const std::vector<Hold>& holds, std::chrono::milliseconds) override {
    std::lock_guard lock(mu_);
    held_.clear();
    for (const Hold& h : holds) held_[h.task_arn] = h.drain_timeout;
    return OkStatus();
  }
  Status Release(std::string_view, std::string_view task_arn) override {
    {
      std::lock_guard lock(mu_);
      released_.emplace_back(task_arn);
      held_.erase(std::string(task_arn));
    }
    cv_.notify_all();
    return OkStatus();
  }
  bool Holds(const std::string& arn) {
    std::lock_guard lock(mu_);
    return held_.count(arn) > 0;
  }
  std::chrono::milliseconds TimeoutOf(const std::string& arn) {
    std::lock_guard lock(mu_);
    return held_.at(arn);
  }
  bool Released(const std::string& arn) {
    std::lock_guard lock(mu_);
    return std::find(released_.begin(), released_.end(), arn) != released_.end();
  }
  bool WaitReleased(const std::string& arn, std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return std::find(released_.begin(), released_.end(), arn) != released_.end(); });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::chrono::milliseconds> held_;
  std::vector<std::string> released_;
};

EcsTask WebTask(const std::string& id, uint16_t port, std::map<std::string, std::string> extra = {}) {
  EcsTask t;
  t.task_arn = "arn:aws:ecs:us-east-1:123456789012:task/default/" + id;
  t.cluster = "default";
  t.group = "service:web";
  t.last_status = "RUNNING";
  t.desired_status = "RUNNING";
  t.health_status = "UNKNOWN";
  t.network_mode = "awsvpc";
  t.has_attachments = true;
  EcsContainer c;
  c.name = "app";
  c.private_ip = "127.0.0.1";
  c.port_mappings = {{port, port, "tcp"}};
  c.labels = {{"traefik.http.routers.web.rule", "Host(`web.test`)"}};
  for (auto& [k, v] : extra) c.labels[k] = v;
  t.containers.push_back(std::move(c));
  return t;
}

http::Request Get(std::string target) {
  http::Request r;
  r.method = "GET";
  r.target = std::move(target);
  r.headers.push_back({"Host", "web.test"});
  return r;
}

class EdgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<http::Server>(http::ServerOptions{}, [this](const http::Request& r) {
      if (r.target == "/slow") {
        std::unique_lock lock(mu_);
        ++slow_waiting_;
        cv_.notify_all();
        cv_.wait(lock, [&] { return release_slow_; });
      }
      http::Response resp;
      resp.body = "hello " + r.target;
      return resp;
    });
    auto port = backend_->Start();
    ASSERT_TRUE(port.ok());
    backend_port_ = *port;
  }
  void TearDown() override {
    {
      std::lock_guard lock(mu_);
      release_slow_ = true;
    }
    cv_.notify_all();
    if (edge_) edge_->Stop();
    backend_->Stop();
  }
  void StartEdge(std::string file = "", bool api = false) {
    EdgeOptions o;
    if (api) o.api = EntryPointOptions{"traefik", "127.0.0.1", 0};
    o.file = std::move(file);
    o.entry_points = {{"web", "127.0.0.1", 0}};
    o.resync = std::chrono::hours(1);  // only Wake and Rebuild read
    o.drain_timeout = std::chrono::seconds(30);
    edge_ = std::make_unique<Edge>(o, source_, &holds_);
    auto ports = edge_->Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    port_ = ports->at("web");
    if (api) api_port_ = ports->at("traefik");
  }

  FakeSource source_;
  FakeHolds holds_;
  std::unique_ptr<http::Server> backend_;
  uint16_t backend_port_ = 0;
  std::unique_ptr<Edge> edge_;
  uint16_t port_ = 0;
  uint16_t api_port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  int slow_waiting_ = 0;
  bool release_slow_ = false;
};

TEST_F(EdgeTest, RoutesATasksLabelsAndHoldsItBeforeRouting) {
  source_.Set({WebTask("t1", backend_port_, {{"paddock.edge.drain-timeout", "5s"}})});
  StartEdge();
  EXPECT_TRUE(holds_.Holds("arn:aws:ecs:us-east-1:123456789012:task/default/t1"));
  EXPECT_EQ(holds_.TimeoutOf("arn:aws:ecs:us-east-1:123456789012:task/default/t1"), std::chrono::seconds(5));
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello /x");
  EXPECT_TRUE(edge_->Snapshot().errors.empty());
}

TEST_F(EdgeTest, ATaskThatLeavesIsReleasedOnlyOnceItsRequestsInFlightAreDone) {
  const std::string arn = "arn:aws:ecs:us-east-1:123456789012:task/default/t1";
  source_.Set({WebTask("t1", backend_port_)});
  StartEdge();
  auto slow = std::async(std::launch::async, [&] {
    http::Client c("127.0.0.1", port_);
    return c.Send(Get("/slow"));
  });
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return slow_waiting_ > 0; });
  }
  // The task is asked to stop: it leaves the configuration, and new requests find no server.
  source_.Set({});
  ASSERT_TRUE(edge_->Rebuild().ok());
  http::Client client("127.0.0.1", port_);
  auto after = client.Send(Get("/new"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 404);  // its router left with it
  EXPECT_FALSE(holds_.Released(arn));
  ASSERT_EQ(edge_->Snapshot().drains.size(), 1u);
  EXPECT_EQ(edge_->Snapshot().drains[0].in_flight, 1);
  {
    std::lock_guard lock(mu_);
    release_slow_ = true;
  }
  cv_.notify_all();
  auto done = slow.get();
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->status, 200);  // the request in flight was answered
  EXPECT_TRUE(holds_.WaitReleased(arn, std::chrono::seconds(10)));
}

// /metrics on the API entry point: Traefik's request, reload and health families, and the drains.
TEST_F(EdgeTest, MetricsCountRequestsReloadsAndDrainsAndAreServedOnTheApiEntryPoint) {
  const std::string arn = "arn:aws:ecs:us-east-1:123456789012:task/default/t1";
  source_.Set({WebTask("t1", backend_port_)});
  StartEdge("", /*api=*/true);
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(client.Send(Get("/x"))->status, 200);
  // Counted just after the answer's last byte: wait for the second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto served = [&] {
    uint64_t n = 0;
    for (const auto& [key, s] : edge_->Metrics().entry_point_requests) n += s.requests;
    return n;
  };
  while (served() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  MetricsSnapshot m = edge_->Metrics();
  EXPECT_EQ(m.config_reloads, 1u);
  EXPECT_TRUE(m.config_last_reload_success.has_value());
  ASSERT_EQ(m.service_requests.size(), 1u);
  const auto& [key, series] = *m.service_requests.begin();
  EXPECT_EQ(key.code, "200");
  EXPECT_EQ(key.method, "GET");
  EXPECT_TRUE(key.name.ends_with("@ecs")) << key.name;
  EXPECT_EQ(series.requests, 2u);

  http::Client api("127.0.0.1", api_port_);
  auto r = api.Send([] {
    http::Request q;
    q.method = "GET";
    q.target = "/metrics";
    return q;
  }());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->GetHeader("Content-Type"), kPrometheusContentType);
  EXPECT_NE(r->body.find("traefik_entrypoint_requests_total{code=\"200\",entrypoint=\"web\",method=\"GET\","
                         "protocol=\"http\"} 2\n"),
            std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("traefik_config_reloads_total 1\n"), std::string::npos);
  // Traefik's /api/overview names its metrics backend when one is on: ours always is.
  auto overview = api.Send([] {
    http::Request q;
    q.method = "GET";
    q.target = "/api/overview";
    return q;
  }());
  ASSERT_TRUE(overview.ok()) << overview.status().ToString();
  EXPECT_NE(overview->body.find(R"("metrics":"Prometheus")"), std::string::npos) << overview->body;
  EXPECT_NE(r->body.find("traefik_service_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\""
                         + key.name + "\"} 2\n"),
            std::string::npos);

  // The task leaves with nothing in flight: one drain observed, none timed out.
  source_.Set({});
  ASSERT_TRUE(edge_->Rebuild().ok());
  EXPECT_TRUE(holds_.WaitReleased(arn, std::chrono::seconds(10)));
  m = edge_->Metrics();
  EXPECT_EQ(m.config_reloads, 2u);
  EXPECT_EQ(m.drain_seconds.count, 1u);
  EXPECT_EQ(m.drain_timeouts, 0u);
  EXPECT_TRUE(m.service_requests.empty());  // its service left the table
}

TEST_F(EdgeTest, ATaskThatLeavesWithNothingInFlightIsReleasedAtOnce) {
  const std::string arn = "arn:aws:ecs:us-east-1:123456789012:task/default/t1";
  source_.Set({WebTask("t1", backend_port_)});
  StartEdge();
  source_.Set({});
  edge_->Wake();
  EXPECT_TRUE(holds_.WaitReleased(arn, std::chrono::seconds(10)));
  EXPECT_FALSE(holds_.Holds(arn));
}

TEST_F(EdgeTest, AFileRouterRoutesToAnEcsServiceByItsQualifiedName) {
  std::string dir = (std::filesystem::temp_directory_path() / "edge-test-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string file = dir + "/dynamic.yml";
  std::ofstream(file) << "http:\n  routers:\n    f:\n      rule: PathPrefix(`/f`)\n      service: web@ecs\n";
  source_.Set({WebTask("t1", backend_port_,
                       {{"traefik.http.services.web.loadbalancer.server.port", std::to_string(backend_port_)}})});
  StartEdge(file);
  http::Client client("127.0.0.1", port_);
  http::Request req = Get("/f/x");
  req.headers = {{"Host", "other.test"}};  // the ecs router (Host(`web.test`)) does not match
  auto r = client.Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello /f/x");
  req.target = "/g";
  auto other = client.Send(req);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status, 404);
  EXPECT_TRUE(edge_->Snapshot().errors.empty());
  // The file's server is the ecs task's: held for the drain like any other.
  EXPECT_TRUE(holds_.Holds("arn:aws:ecs:us-east-1:123456789012:task/default/t1"));
  std::filesystem::remove_all(dir);
}

// Labels: the task's server is https (`server.scheme`) and reached through the file's servers
// transport (`serverstransport=backend@file`): its roots and serverName verify the task's
// certificate. The task's TLS side is a proxy serving web.test's certificate in front of the backend.
TEST_F(EdgeTest, ATaskLabelledHttpsIsReachedOverTlsThroughTheFilesServersTransport) {
  std::string dir = (std::filesystem::temp_directory_path() / "edge-test-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const PemPair pair = GenerateSelfSigned("web.test", {"web.test"}, 30, /*ec=*/true);
  std::ofstream(dir + "/web.crt") << pair.cert;
  std::ofstream(dir + "/web.key") << pair.key;
  Proxy tls_side(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1});
  auto tls_ports = tls_side.Start();
  ASSERT_TRUE(tls_ports.ok());
  ServerRegistry registry;
  const std::string tls_config = fmt::format(
      R"J({{"http":{{"routers":{{"r":{{"rule":"Host(`web.test`)","service":"s","tls":{{}}}}}},
                    "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"http://127.0.0.1:{}"}}]}}}}}}}},
          "tls":{{"certificates":[{{"certFile":"{}/web.crt","keyFile":"{}/web.key"}}]}}}})J",
      backend_port_, dir, dir);
  CompileResult compiled = Compile(
      BuildRuntime({{"file", boost::json::parse(tls_config).as_object()}}, {"web"}, {"web"},
                   [](std::string_view rule) {
                     auto parsed = Rule::Parse(rule);
                     return parsed.ok() ? std::string() : std::string(parsed.status().message());
                   }),
      registry);
  ASSERT_TRUE(compiled.errors.empty()) << compiled.errors.front();
  tls_side.SetTable(compiled.table);

  const std::string file = dir + "/dynamic.yml";
  std::ofstream(file) << "http:\n  serversTransports:\n    backend:\n      serverName: web.test\n"
                      << "      rootCAs:\n        - " << dir << "/web.crt\n";
  source_.Set({WebTask("t1", tls_ports->at("web"),
                       {{"traefik.http.services.web.loadbalancer.server.scheme", "https"},
                        {"traefik.http.services.web.loadbalancer.serverstransport", "backend@file"}})});
  StartEdge(file);
  EXPECT_TRUE(edge_->Snapshot().errors.empty()) << edge_->Snapshot().errors.front();
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello /x");
  EXPECT_EQ(edge_->proxy().counters().upstream_tls_failures, 0u);
  tls_side.Stop();
  std::filesystem::remove_all(dir);
}

TEST_F(EdgeTest, AnHttpProviderCaThatCannotBeReadIsRefusedAtStart) {
  EdgeOptions o;
  o.entry_points = {{"web", "127.0.0.1", 0}};
  o.http_endpoint = "https://config.test/";
  o.http_tls = HttpProviderTls{.ca = "/nonexistent/paddock-ca.pem"};
  Edge edge(o, source_, nullptr);
  auto ports = edge.Start();
  ASSERT_FALSE(ports.ok());
  EXPECT_EQ(ports.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ports.status().message().find("the http provider: tls.ca: cannot read /nonexistent/paddock-ca.pem"),
            std::string::npos)
      << ports.status().message();
}

// Labels to the proxy: sticky.cookie and buffering.
TEST_F(EdgeTest, AStickyLabelSetsTraefiksCookieAndBufferingLabelsLimitTheBody) {
  source_.Set({WebTask("t1", backend_port_,
                       {{"traefik.http.services.web.loadbalancer.server.port", std::to_string(backend_port_)},
                        {"traefik.http.services.web.loadbalancer.sticky.cookie", "true"},
                        {"traefik.http.services.web.loadbalancer.sticky.cookie.httponly", "true"},
                        {"traefik.http.middlewares.small.buffering.maxrequestbodybytes", "4"},
                        {"traefik.http.routers.web.middlewares", "small"}})});
  StartEdge();
  EXPECT_TRUE(edge_->Snapshot().errors.empty());
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  // "_34851": "_" + hex(SHA-1("_TRAEFIK_BACKEND_web@ecs"))[:5], the name Traefik gives web@ecs.
  const std::string url = "http://127.0.0.1:" + std::to_string(backend_port_);
  EXPECT_EQ(r->GetHeader("Set-Cookie"), "_34851=" + StickyServerHash(url) + "; Path=/; HttpOnly");
  http::Request post = Get("/x");
  post.method = "POST";
  post.body = "12345";
  auto refused = client.Send(post);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 413);
  EXPECT_EQ(refused->body, "Request Entity Too Large");
}

// A retryExpression label is taken (edge/retry_expression.h); one oxy's parser refuses leaves its
// router out with the parser's words, as Traefik does.
TEST_F(EdgeTest, ABufferingRetryExpressionLabelIsTaken) {
  source_.Set({WebTask("t1", backend_port_,
                       {{"traefik.http.middlewares.retrying.buffering.retryexpression", "IsNetworkError() && Attempts() < 2"},
                        {"traefik.http.routers.web.middlewares", "retrying"}})});
  StartEdge();
  EXPECT_TRUE(edge_->Snapshot().errors.empty());
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
}

TEST_F(EdgeTest, ABadBufferingRetryExpressionIsAConfigurationError) {
  source_.Set({WebTask("t1", backend_port_,
                       {{"traefik.http.middlewares.retrying.buffering.retryexpression", "Retries() < 2"},
                        {"traefik.http.routers.web.middlewares", "retrying"}})});
  StartEdge();
  std::vector<std::string> errors = edge_->Snapshot().errors;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("unsupported function: Retries"), std::string::npos) << errors[0];
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(Get("/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);  // the router is left out
}

}  // namespace
}  // namespace paddock::edge
