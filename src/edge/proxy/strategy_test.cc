// A loadBalancer's strategies besides round robin (Traefik v3.7's p2c, hrw and leasttime balancers,
// pkg/server/service/loadbalancer): what each picks from its servers' state, then the strategy read
// from the configuration and served by the proxy (edge/proxy/table.h, LbStrategy).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <set>
#include <string>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include "edge/proxy/compile.h"
#include "edge/proxy/proxy.h"
#include "edge/proxy/table.h"
#include "edge/runtime.h"
#include "http/client.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

struct Servers {
  ServerRegistry registry;
  std::shared_ptr<Backend> backend = std::make_shared<Backend>();
  Servers(LbStrategy strategy, std::vector<int> weights) {
    backend->name = "app@file";
    backend->strategy = strategy;
    for (size_t i = 0; i < weights.size(); ++i) {
      const std::string url = fmt::format("http://10.0.0.{}:80", i + 1);
      backend->servers.push_back({registry.Get("app@file", url, fmt::format("10.0.0.{}", i + 1), 80), weights[i]});
    }
  }
  ServerState& at(size_t i) { return *backend->servers[i].state; }
  std::map<std::string, int> Picks(int n, std::string_view client_ip = {}) {
    std::map<std::string, int> seen;
    for (int i = 0; i < n; ++i) {
      Selection s = backend->Choose(nullptr, client_ip);
      seen[s.server ? s.server->url() : "none"]++;
    }
    return seen;
  }
};

TEST(LoadBalancerStrategyTest, TwoChoicesPicksTheLessBusyOfTwoAndIgnoresWeights) {
  Servers s(LbStrategy::kP2c, {1, 1});
  for (int i = 0; i < 3; ++i) s.at(0).Begin();  // three requests in flight on the first
  EXPECT_EQ(s.Picks(50), (std::map<std::string, int>{{"http://10.0.0.2:80", 50}}));
  for (int i = 0; i < 3; ++i) s.at(0).End();
  // Even: both are picked (each pick compares the same two, the first wins ties: random order).
  std::map<std::string, int> even = s.Picks(400);
  EXPECT_GT(even["http://10.0.0.1:80"], 100);
  EXPECT_GT(even["http://10.0.0.2:80"], 100);
  s.at(1).set_health(Health::kDown);
  EXPECT_EQ(s.Picks(10), (std::map<std::string, int>{{"http://10.0.0.1:80", 10}})) << "only routable servers";
  s.at(0).set_health(Health::kDown);
  EXPECT_EQ(s.Picks(1), (std::map<std::string, int>{{"none", 1}}));
}

TEST(LoadBalancerStrategyTest, RendezvousKeepsAClientOnOneServerWhileItIsUp) {
  Servers s(LbStrategy::kHrw, {1, 1, 1});
  std::set<std::string> used;
  for (int c = 1; c <= 30; ++c) {
    const std::string ip = fmt::format("192.0.2.{}", c);
    std::map<std::string, int> picks = s.Picks(5, ip);
    ASSERT_EQ(picks.size(), 1u) << ip << " moved between servers";
    used.insert(picks.begin()->first);
  }
  EXPECT_EQ(used.size(), 3u) << "thirty clients spread over the three servers";
  // A client's server going down moves only that client; it comes back when the server does.
  const std::string first = s.Picks(1, "192.0.2.7").begin()->first;
  size_t down = 0;
  while (s.backend->servers[down].state->url() != first) ++down;
  s.at(down).set_health(Health::kDown);
  EXPECT_NE(s.Picks(1, "192.0.2.7").begin()->first, first);
  s.at(down).set_health(Health::kUp);
  EXPECT_EQ(s.Picks(1, "192.0.2.7").begin()->first, first);
}

TEST(LoadBalancerStrategyTest, LeastTimeFavoursTheFasterServerAndTakesTurnsOnTies) {
  Servers s(LbStrategy::kLeastTime, {1, 2});
  // No response yet: every score is 0, a tie broken by weighted turns (1:2, give or take the start).
  std::map<std::string, int> turns = s.Picks(300);
  EXPECT_NEAR(turns["http://10.0.0.1:80"], 100, 1);
  EXPECT_NEAR(turns["http://10.0.0.2:80"], 200, 1);
  s.at(0).RecordResponseTime(std::chrono::milliseconds(2));
  s.at(1).RecordResponseTime(std::chrono::milliseconds(10));
  // 2 ms × 1 / 1 < 10 ms × 1 / 2.
  EXPECT_EQ(s.Picks(5), (std::map<std::string, int>{{"http://10.0.0.1:80", 5}}));
  for (int i = 0; i < 3; ++i) s.at(0).Begin();  // 2 × 4 / 1 = 8 > 5
  EXPECT_EQ(s.Picks(5), (std::map<std::string, int>{{"http://10.0.0.2:80", 5}}));
  for (int i = 0; i < 3; ++i) s.at(0).End();
  // The mean is of the last 100 responses only.
  for (int i = 0; i < 100; ++i) s.at(0).RecordResponseTime(std::chrono::milliseconds(30));
  EXPECT_DOUBLE_EQ(s.at(0).AverageResponseMs(), 30);
  EXPECT_EQ(s.Picks(5), (std::map<std::string, int>{{"http://10.0.0.2:80", 5}}));
}

TEST(LoadBalancerStrategyTest, TheStrategyIsReadFromTheConfiguration) {
  for (const auto& [name, want] : std::map<std::string, LbStrategy>{
           {"", LbStrategy::kWrr}, {"wrr", LbStrategy::kWrr}, {"p2c", LbStrategy::kP2c},
           {"hrw", LbStrategy::kHrw}, {"leasttime", LbStrategy::kLeastTime}}) {
    const std::string strategy = name.empty() ? "" : fmt::format(R"("strategy":"{}",)", name);
    const std::string file = fmt::format(
        R"j({{"http":{{"routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"app"}}}},)j"
        R"j("services":{{"app":{{"loadBalancer":{{{}"servers":[{{"url":"http://127.0.0.1:1"}}]}}}}}}}}}})j",
        strategy);
    RuntimeConfig rt = BuildRuntime({{"file", boost::json::parse(file).as_object()}}, {"web"}, {"web"},
                                    [](std::string_view) { return std::string(); });
    ServerRegistry registry;
    CompileResult c = Compile(rt, registry);
    EXPECT_TRUE(c.errors.empty()) << name;
    ASSERT_EQ(c.table->backends.count("app@file"), 1u) << name;
    EXPECT_EQ(c.table->backends.at("app@file")->strategy, want) << name;
  }
}

// Through the proxy: the response times it measures steer leasttime away from a slow server.
TEST(LoadBalancerStrategyTest, TheProxyTimesResponsesForLeastTime) {
  auto serving = [](std::string name, std::chrono::milliseconds delay) {
    return std::make_unique<http::Server>(http::ServerOptions{}, [name, delay](const http::Request&) {
      std::this_thread::sleep_for(delay);  // the slow server's slowness, the behaviour under test
      http::Response r;
      r.body = name;
      return r;
    });
  };
  auto fast = serving("fast", std::chrono::milliseconds(0));
  auto slow = serving("slow", std::chrono::milliseconds(30));
  auto fast_port = fast->Start();
  auto slow_port = slow->Start();
  ASSERT_TRUE(fast_port.ok() && slow_port.ok());
  Proxy proxy(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1});
  auto ports = proxy.Start();
  ASSERT_TRUE(ports.ok());
  const std::string file = fmt::format(
      R"j({{"http":{{"routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"app"}}}},"services":{{"app":)j"
      R"j({{"loadBalancer":{{"strategy":"leasttime","servers":[{{"url":"http://127.0.0.1:{}"}},{{"url":"http://127.0.0.1:{}"}}]}}}}}}}}}})j",
      *slow_port, *fast_port);
  RuntimeConfig rt = BuildRuntime({{"file", boost::json::parse(file).as_object()}}, {"web"}, {"web"},
                                  [](std::string_view) { return std::string(); });
  ServerRegistry registry;
  CompileResult c = Compile(rt, registry);
  ASSERT_TRUE(c.errors.empty());
  proxy.SetTable(c.table);
  std::map<std::string, int> seen;
  http::Client client("127.0.0.1", ports->at("web"));
  for (int i = 0; i < 40; ++i) {
    http::Request req;
    req.method = "GET";
    req.target = "/";
    auto r = client.Send(req);
    ASSERT_TRUE(r.ok());
    ++seen[r->body];
  }
  // Each server is tried while it has no measure (a score of 0); after that the fast one wins.
  EXPECT_LE(seen["slow"], 2);
  EXPECT_GE(seen["fast"], 38);
  proxy.Stop();
  fast->Stop();
  slow->Stop();
}

}  // namespace
}  // namespace paddock::edge
