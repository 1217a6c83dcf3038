// Traefik's mirroring services (pkg/server/service/loadbalancer/mirror, service.go
// getMirrorServiceHandler): compiled from the runtime with Traefik's defaults and errors, each
// mirror taking its percent of the requests in Traefik's order, and served by the proxy — the
// client answered by the main service alone, the mirrors sent copies afterwards whose answers are
// dropped, mirrorBody and maxBodySize as Traefik reads them, a mirror that is down or slow never
// in the client's way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>

#include "edge/proxy/compile.h"
#include "edge/proxy/proxy.h"
#include "edge/proxy/table.h"
#include "edge/runtime.h"
#include "http/client.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

RuntimeConfig Runtime(std::string_view file_json) {
  return BuildRuntime({{"file", boost::json::parse(file_json).as_object()}}, {"web"}, {"web"},
                      [](std::string_view) { return std::string(); });
}

TEST(MirroringCompileTest, TheMainAndItsMirrorsAreCompiledWithTraefiksDefaults) {
  RuntimeConfig rt = Runtime(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"m"},"q":{"rule":"Path(`/q`)","service":"quiet"}},
    "services":{"m":{"mirroring":{"service":"main","mirrors":[{"name":"a","percent":10},{"name":"b","percent":100}]}},
                "quiet":{"mirroring":{"service":"main","mirrorBody":false,"maxBodySize":1024,
                                      "mirrors":[{"name":"a"}]}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}},
                "a":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:2"}]}},
                "b":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:3"}]}}}}})j");
  ASSERT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kEnabled);
  ServerRegistry registry;
  CompileResult c = Compile(rt, registry);
  EXPECT_THAT(c.errors, IsEmpty());
  const Backend& m = *c.table->backends.at("m@file");
  ASSERT_TRUE(m.mirroring);
  EXPECT_TRUE(m.mirror_body);               // Traefik's MirroringDefaultMirrorBody
  EXPECT_EQ(m.max_mirror_body_bytes, -1);   // and MirroringDefaultMaxBodySize: no limit
  ASSERT_EQ(m.children.size(), 1u);
  EXPECT_EQ(m.children[0].backend->name, "main@file");
  ASSERT_EQ(m.mirrors.size(), 2u);
  EXPECT_EQ(m.mirrors[0].backend->name, "a@file");
  EXPECT_EQ(m.mirrors[0].percent, 10);
  EXPECT_EQ(m.mirrors[1].percent, 100);
  EXPECT_EQ(m.ServerCount(), 1u);  // the main's: a refused connection is tried on the main's servers only
  const Backend& quiet = *c.table->backends.at("quiet@file");
  EXPECT_FALSE(quiet.mirror_body);
  EXPECT_EQ(quiet.max_mirror_body_bytes, 1024);
  EXPECT_EQ(quiet.mirrors[0].percent, 0);  // Traefik's zero value: no copies
}

TEST(MirroringCompileTest, APercentOutsideZeroToAHundredOrAMissingMirrorIsTheServicesError) {
  RuntimeConfig rt = Runtime(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"m"},"g":{"rule":"Path(`/g`)","service":"gone"}},
    "services":{"m":{"mirroring":{"service":"main","mirrors":[{"name":"main","percent":101}]}},
                "gone":{"mirroring":{"service":"main","mirrors":[{"name":"nothing","percent":5}]}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}}}}})j");
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
  EXPECT_THAT(rt.services.at("m@file").errors, ElementsAre("percent must be between 0 and 100"));
  EXPECT_EQ(rt.routers.at("g@file").status, RuntimeStatus::kDisabled);
  EXPECT_THAT(rt.services.at("gone@file").errors, ElementsAre("the service \"nothing@file\" does not exist"));
}

// Traefik's getActiveMirrors, request by request: each mirror takes a request while the copies it
// has taken are fewer than its percent of the requests counted.
TEST(MirroringScheduleTest, EachMirrorTakesItsPercentOfTheRequestsInTraefiksOrder) {
  Backend m;
  m.mirroring = true;
  auto named = [](std::string name) {
    auto b = std::make_shared<Backend>();
    b->name = std::move(name);
    return b;
  };
  m.mirrors = {{named("half"), 50}, {named("tenth"), 10}, {named("all"), 100}, {named("none"), 0}};
  std::map<std::string, std::string> taken;
  for (int request = 0; request < 20; ++request) {
    std::vector<std::shared_ptr<const Backend>> active = m.ActiveMirrors();
    for (const Backend::Mirror& mirror : m.mirrors) {
      bool in = false;
      for (const auto& a : active) in = in || a == mirror.backend;
      taken[mirror.backend->name] += in ? 'x' : '.';
    }
  }
  EXPECT_EQ(taken["half"], "x.x.x.x.x.x.x.x.x.x.");
  EXPECT_EQ(taken["tenth"], "x.........x.........");
  EXPECT_EQ(taken["all"], "xxxxxxxxxxxxxxxxxxxx");
  EXPECT_EQ(taken["none"], "....................");
}

// --- served ---

// A backend that answers "main" (or whatever it is told) and keeps every request it got; the
// test waits for them by condition, not by time. `Hold()` makes it keep its answers until
// `Release()`.
class Recorder {
 public:
  explicit Recorder(std::string answer)
      : answer_(std::move(answer)), server_({}, [this](const http::Request& req) {
          std::unique_lock lock(mu_);
          got_.push_back(req);
          cv_.notify_all();
          cv_.wait(lock, [this] { return !held_; });
          http::Response resp;
          resp.body = answer_;
          return resp;
        }) {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = port.ok() ? *port : 0;
  }
  ~Recorder() {
    Release();
    server_.Stop();
  }
  uint16_t port() const { return port_; }
  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  // The requests it got once it has `n` of them (fewer: all it got in 10 s).
  std::vector<http::Request> WaitFor(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return got_.size() >= n; });
    return got_;
  }

 private:
  std::string answer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<http::Request> got_;  // GUARDED_BY(mu_)
  bool held_ = false;               // GUARDED_BY(mu_)
  http::Server server_;
  uint16_t port_ = 0;
};

class MirroringProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proxy_ = std::make_unique<Proxy>(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1});
    auto ports = proxy_->Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    port_ = ports->at("web");
  }
  void TearDown() override { proxy_->Stop(); }
  // Serves `json` with "{main}" and "{shadow}" replaced by the backends' ports ("{down}": a port
  // nothing listens on).
  void Serve(std::string json) {
    for (auto [key, port] : {std::pair<std::string, uint16_t>{"{main}", main_.port()},
                             {"{shadow}", shadow_.port()}, {"{down}", 1}})
      for (size_t at; (at = json.find(key)) != std::string::npos;) json.replace(at, key.size(), std::to_string(port));
    CompileResult c = Compile(Runtime(json), registry_);
    ASSERT_THAT(c.errors, IsEmpty());
    proxy_->SetTable(c.table);
  }
  http::Response Post(http::Client& client, std::string path, std::string body) {
    http::Request req;
    req.method = "POST";
    req.target = std::move(path);
    req.headers.push_back({"Host", "app.test"});
    req.headers.push_back({"X-Trace", "t1"});
    req.body = std::move(body);
    auto r = client.Send(req);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : http::Response{};
  }

  Recorder main_{"main"}, shadow_{"shadow"};
  ServerRegistry registry_;
  std::unique_ptr<Proxy> proxy_;
  uint16_t port_ = 0;
};

TEST_F(MirroringProxyTest, TheClientGetsTheMainsAnswerAndTheMirrorACopyOfEverySecondRequest) {
  Serve(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"m"}},
    "services":{"m":{"mirroring":{"service":"main","mirrors":[{"name":"shadow","percent":50}]}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{main}"}]}},
                "shadow":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{shadow}"}]}}}}})j");
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 10; ++i) {
    http::Response r = Post(client, "/orders?n=" + std::to_string(i), "order-" + std::to_string(i));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "main");  // never the mirror's
  }
  EXPECT_EQ(main_.WaitFor(10).size(), 10u);
  std::vector<http::Request> copies = shadow_.WaitFor(5);
  ASSERT_EQ(copies.size(), 5u);
  std::vector<std::string> bodies;
  for (const http::Request& c : copies) bodies.push_back(c.target + " " + c.body);
  EXPECT_THAT(bodies, ::testing::UnorderedElementsAre("/orders?n=0 order-0", "/orders?n=2 order-2",
                                                      "/orders?n=4 order-4", "/orders?n=6 order-6",
                                                      "/orders?n=8 order-8"));
  // A copy is the request as the main service got it: the client's Host, its headers, the
  // edge's X-Forwarded-*.
  const http::Request& copy = copies[0];
  EXPECT_EQ(copy.method, "POST");
  EXPECT_EQ(copy.GetHeader("Host"), "app.test");
  EXPECT_EQ(copy.GetHeader("X-Trace"), "t1");
  EXPECT_EQ(copy.GetHeader("X-Forwarded-For"), "127.0.0.1");
  EXPECT_EQ(copy.GetHeader("X-Forwarded-Host"), "app.test");
  // Counted: the proxy's copies, and the mirror's loadBalancer series as Traefik's service metrics.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (proxy_->counters().mirrored < 5 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(proxy_->counters().mirrored, 5u);
  EXPECT_EQ(proxy_->counters().mirror_failed, 0u);
  std::map<std::string, uint64_t> service;
  do {  // a request is counted just after its answer's last byte
    service.clear();
    for (const auto& [key, series] : proxy_->Metrics().service_requests)
      service[key.code + " " + key.method + " " + key.name] += series.requests;
  } while (service["200 POST main@file"] < 10 && std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::yield(), true));
  EXPECT_EQ(service["200 POST shadow@file"], 5u);
  EXPECT_EQ(service["200 POST main@file"], 10u);
}

TEST_F(MirroringProxyTest, MirrorBodyFalseSendsCopiesWithoutTheBodyAndABodyOverMaxBodySizeIsNotMirrored) {
  Serve(R"j({"http":{
    "routers":{"bare":{"rule":"Path(`/bare`)","service":"bare"},"small":{"rule":"Path(`/small`)","service":"small"}},
    "services":{"bare":{"mirroring":{"service":"main","mirrorBody":false,"maxBodySize":2,
                                  "mirrors":[{"name":"shadow","percent":100}]}},
                "small":{"mirroring":{"service":"main","maxBodySize":4,"mirrors":[{"name":"shadow","percent":100}]}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{main}"}]}},
                "shadow":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{shadow}"}]}}}}})j");
  http::Client client("127.0.0.1", port_);
  EXPECT_EQ(Post(client, "/bare", "secret").body, "main");  // over maxBodySize, which only a mirrored body heeds
  std::vector<http::Request> copies = shadow_.WaitFor(1);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].body, "");
  EXPECT_EQ(copies[0].GetHeader("Content-Length"), "0");
  EXPECT_EQ(main_.WaitFor(1)[0].body, "secret");  // the main got it whole

  EXPECT_EQ(Post(client, "/small", "hello").body, "main");  // 5 bytes > 4: not mirrored
  EXPECT_EQ(Post(client, "/small", "hey").body, "main");
  EXPECT_EQ(Post(client, "/small", "abc").body, "main");
  copies = shadow_.WaitFor(3);
  std::vector<std::string> bodies;
  for (const http::Request& c : copies) bodies.push_back(c.body);
  EXPECT_THAT(bodies, ::testing::UnorderedElementsAre("", "hey", "abc"));  // copies race each other
  EXPECT_EQ(main_.WaitFor(4).size(), 4u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (proxy_->counters().mirrored < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  const ProxyCounters counted = proxy_->counters();
  EXPECT_EQ(counted.mirrored + counted.mirror_failed + counted.mirror_dropped, 3u);  // "hello" was never sent
}

TEST_F(MirroringProxyTest, AMirrorThatIsDownOrSlowNeverDelaysOrChangesTheClientsAnswer) {
  Serve(R"j({"http":{
    "routers":{"down":{"rule":"Path(`/down`)","service":"down"},"slow":{"rule":"Path(`/slow`)","service":"slow"}},
    "services":{"down":{"mirroring":{"service":"main","mirrors":[{"name":"gone","percent":100}]}},
                "slow":{"mirroring":{"service":"main","mirrors":[{"name":"shadow","percent":100}]}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{main}"}]}},
                "gone":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{down}"}]}},
                "shadow":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{shadow}"}]}}}}})j");
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Post(client, "/down", "x").body, "main");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (proxy_->counters().mirror_failed < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(proxy_->counters().mirror_failed, 3u);  // refused: nothing to answer, nothing in the way

  // The mirror holds its answers: every client is still answered at once, while the copies wait.
  shadow_.Hold();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Post(client, "/slow", "y").body, "main");
  EXPECT_FALSE(shadow_.WaitFor(1).empty());  // copies are there, unanswered
  EXPECT_EQ(proxy_->counters().mirrored, 0u);
  shadow_.Release();
  EXPECT_EQ(shadow_.WaitFor(5).size(), 5u);
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (proxy_->counters().mirrored < 5 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(proxy_->counters().mirrored, 5u);
}

// Copies are bounded, never queued: a copy's body comes out of the edge's request-body budget
// (max_buffered_request_bytes, with the requests being read), so while a slow mirror holds the
// copies taken, further ones are dropped and counted, and the clients are answered all the same.
TEST_F(MirroringProxyTest, CopiesPastTheRequestBodyBudgetAreDroppedNotQueued) {
  proxy_->Stop();
  proxy_ = std::make_unique<Proxy>(ProxyOptions{
      .entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1, .max_buffered_request_bytes = 20});
  auto ports = proxy_->Start();
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  port_ = ports->at("web");
  Serve(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"m"}},
    "services":{"m":{"mirroring":{"service":"main","mirrors":[{"name":"shadow","percent":100}]}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{main}"}]}},
                "shadow":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{shadow}"}]}}}}})j");
  shadow_.Hold();
  http::Client client("127.0.0.1", port_);
  // 8 bytes each: the request's own 8 and the first copy's 8 fit in 20; a second copy would not.
  EXPECT_EQ(Post(client, "/", "body-one").body, "main");
  EXPECT_EQ(shadow_.WaitFor(1).size(), 1u);  // held by the mirror, its 8 bytes still reserved
  EXPECT_EQ(Post(client, "/", "body-two").body, "main");
  EXPECT_EQ(Post(client, "/", "body-333").body, "main");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  // (decided just after each answer's last byte)
  while (proxy_->counters().mirror_dropped < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(proxy_->counters().mirror_dropped, 2u);
  shadow_.Release();
  while (proxy_->counters().mirrored < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(proxy_->counters().mirrored, 1u);
  EXPECT_EQ(shadow_.WaitFor(1).size(), 1u);
  // The budget is given back once the copy is done: the next request is mirrored.
  while (proxy_->counters().buffered_request_bytes > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(Post(client, "/", "body-four").body, "main");
  EXPECT_EQ(shadow_.WaitFor(2).size(), 2u);
}

}  // namespace
}  // namespace paddock::edge
