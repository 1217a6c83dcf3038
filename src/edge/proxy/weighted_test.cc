// Traefik v3's weighted services (pkg/server/service/loadbalancer/wrr, service.go
// getWRRServiceHandler): the EDF schedule pick by pick, a child without a routable server skipped,
// weighted.sticky naming the child, compiled from the runtime by name (cycles and depth bounded),
// and served by the proxy to real backends; and Traefik's failover services (failover.go,
// getFailoverServiceHandler) served the same way.
#include "edge/proxy/table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include "edge/proxy/compile.h"
#include "edge/proxy/proxy.h"
#include "edge/proxy/sticky.h"
#include "edge/runtime.h"
#include "http/client.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A loadBalancer of one server at a port nothing listens on (Pick never connects).
std::shared_ptr<Backend> Leaf(ServerRegistry& registry, const std::string& name) {
  auto b = std::make_shared<Backend>();
  b->name = name;
  const std::string url = "http://127.0.0.1:1/" + name;
  b->servers.push_back({registry.Get(name, url, "127.0.0.1", 1), 1});
  return b;
}

std::shared_ptr<Backend> Weighted(const std::string& name, std::vector<std::pair<std::shared_ptr<Backend>, int>> kids) {
  auto w = std::make_shared<Backend>();
  w->name = name;
  w->weighted = true;
  for (auto& [kid, weight] : kids)
    w->children.push_back(Backend::Child{.name = kid->name, .backend = kid, .weight = weight,
                                         .sticky_hash = StickyServerHash(kid->name)});
  w->StartSchedule();
  return w;
}

// The picks of `w` as letters: 'A' for its first child, 'B' for the second, ...
std::string Picks(const Backend& w, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    auto server = w.Pick();
    if (!server) {
      out += '-';
      continue;
    }
    for (size_t k = 0; k < w.children.size(); ++k)
      if (w.children[k].backend->servers[0].state == server) out += static_cast<char>('A' + k);
  }
  return out;
}

// The sequences are Traefik's: its Balancer (EDF deadlines += 1/weight in float64, Go's
// container/heap with its tie order), worked pick by pick; the float sums make 3:1 irregular.
TEST(WeightedScheduleTest, PicksInTraefiksEdfOrderExactly) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b"), c = Leaf(registry, "c");
  const std::string three_to_one = Picks(*Weighted("w", {{a, 3}, {b, 1}}), 40);
  EXPECT_EQ(three_to_one, "AABAAAABAABAAABAAAABAAABAAABAAABAAABAABA");
  EXPECT_EQ(std::count(three_to_one.begin(), three_to_one.end(), 'A'), 30);
  EXPECT_EQ(Picks(*Weighted("w", {{a, 1}, {b, 1}, {c, 1}}), 12), "ACBCBABACACB");  // Go's heap ties
  EXPECT_EQ(Picks(*Weighted("w", {{a, 5}, {b, 2}, {c, 1}}), 16), "AABAABACAABAAABC");
}

// Pick is called from every I/O thread: the schedule is one, whatever the interleaving (TSan
// checks the rest).
TEST(WeightedScheduleTest, ConcurrentPickersShareOneSchedule) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b");
  auto w = Weighted("w", {{a, 3}, {b, 1}});
  std::atomic<int> to_a{0}, to_b{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10'000; ++i) {
        auto server = w->Pick();
        (server == a->servers[0].state ? to_a : to_b).fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(to_a.load(), 30'000);  // Traefik's first 40,000 picks at 3:1
  EXPECT_EQ(to_b.load(), 10'000);
}

TEST(WeightedScheduleTest, AChildWithoutARoutableServerIsSkippedAndWithNoneLeftThereIsNoServer) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b"), c = Leaf(registry, "c");
  auto w = Weighted("w", {{a, 3}, {b, 1}, {c, 2}});
  a->servers[0].state->set_health(Health::kDown);
  // Traefik's nextServer with A down: A's turns are spent, not given to the next in line.
  EXPECT_EQ(Picks(*w, 12), "CCBCCBCCBCCB");
  b->servers[0].state->set_health(Health::kPending);
  c->servers[0].state->Fence([] {});
  EXPECT_EQ(w->Pick(), nullptr);
  EXPECT_FALSE(w->HasRoutable());
  EXPECT_EQ(w->Choose(nullptr).server, nullptr);
  EXPECT_EQ(Weighted("none", {})->Pick(), nullptr);  // no child (all weights 0): 503
}

TEST(WeightedScheduleTest, NestedWeightedServicesPickTheirChildsChild) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b"), c = Leaf(registry, "c");
  auto inner = Weighted("inner", {{b, 1}, {c, 1}});
  auto outer = Weighted("outer", {{a, 1}, {inner, 1}});
  std::map<std::string, int> seen;
  for (int i = 0; i < 40; ++i) {
    Selection s = outer->Choose(nullptr);
    ASSERT_NE(s.server, nullptr);
    ASSERT_NE(s.leaf, nullptr);
    EXPECT_EQ(s.leaf->servers[0].state, s.server);
    ++seen[s.leaf->name];
  }
  EXPECT_EQ(seen["a"], 20);
  EXPECT_EQ(seen["b"], 10);
  EXPECT_EQ(seen["c"], 10);
  EXPECT_EQ(outer->ServerCount(), 3u);
}

TEST(WeightedStickyTest, TheCookieNamesTheChildByItsNameAndKeepsTheClientThere) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b");
  auto w = Weighted("w@file", {{a, 1}, {b, 1}});
  w->sticky = StickyCookie{.name = StickyCookieName("", "w@file")};
  const std::string name = StickyCookieName("", "w@file");

  Selection first = w->Choose(nullptr);  // no cookie: the schedule picks, the cookie names the pick
  ASSERT_EQ(first.set_cookies.size(), 1u);
  EXPECT_EQ(first.set_cookies[0], name + "=" + StickyServerHash(first.leaf->name) + "; Path=/");

  const HeaderList stuck_to_b = {{"Cookie", name + "=" + StickyServerHash("b")}};
  for (int i = 0; i < 10; ++i) {
    Selection s = w->Choose(&stuck_to_b);
    EXPECT_EQ(s.leaf, b.get());
    EXPECT_THAT(s.set_cookies, IsEmpty());
  }
  // Traefik's older forms (the raw name, its FNV-1 hash, that hash hashed) stick and are rewritten.
  for (const std::string& old : {std::string("b"), StickyFnvHash("b"), StickyFnvHash(StickyFnvHash("b"))}) {
    const HeaderList h = {{"Cookie", name + "=" + old}};
    Selection s = w->Choose(&h);
    EXPECT_EQ(s.leaf, b.get()) << old;
    EXPECT_THAT(s.set_cookies, ::testing::ElementsAre(name + "=" + StickyServerHash("b") + "; Path=/"));
  }
  // A cookie naming a child with no routable server: the schedule picks another, and a new cookie.
  b->servers[0].state->set_health(Health::kDown);
  Selection moved = w->Choose(&stuck_to_b);
  EXPECT_EQ(moved.leaf, a.get());
  EXPECT_THAT(moved.set_cookies, ::testing::ElementsAre(name + "=" + StickyServerHash("a") + "; Path=/"));
}

TEST(WeightedStickyTest, NestedStickyLevelsWriteTheirCookiesRootFirst) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a");
  a->sticky = StickyCookie{.name = "server"};
  auto w = Weighted("w@file", {{a, 1}});
  w->sticky = StickyCookie{.name = "child"};
  Selection s = w->Choose(nullptr);
  ASSERT_EQ(s.leaf, a.get());
  EXPECT_THAT(s.set_cookies, ::testing::ElementsAre("child=" + StickyServerHash("a") + "; Path=/",
                                                    "server=" + StickyServerHash(a->servers[0].state->url()) +
                                                        "; Path=/"));
  const HeaderList both = {{"Cookie", s.set_cookies[0].substr(0, s.set_cookies[0].find(';')) + "; " +
                                          s.set_cookies[1].substr(0, s.set_cookies[1].find(';'))}};
  EXPECT_THAT(w->Choose(&both).set_cookies, IsEmpty());
}

// --- compiled from the runtime ---

ProviderConfiguration Provider(std::string name, std::string_view json) {
  return {std::move(name), boost::json::parse(json).as_object()};
}

RuntimeConfig Runtime(std::string_view file_json) {
  return BuildRuntime({Provider("file", file_json)}, {"web"}, {"web"}, [](std::string_view) { return std::string(); });
}

TEST(WeightedCompileTest, ChildrenAreCompiledByNameQualifiedWithTheParentsProvider) {
  RuntimeConfig rt = Runtime(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"canary"}},
    "services":{"canary":{"weighted":{"services":[{"name":"v1","weight":3},{"name":"v2","weight":1},
                                                  {"name":"off","weight":0}],
                                      "sticky":{"cookie":{}}}},
                "v1":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}},
                "v2":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:2"}],"passHostHeader":false}},
                "off":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:3"}]}}}}})j");
  ASSERT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kEnabled);
  ServerRegistry registry;
  CompileResult c = Compile(rt, registry);
  EXPECT_THAT(c.errors, IsEmpty());
  ASSERT_EQ(c.table->routes.at("web").size(), 1u);
  const Backend& w = *c.table->routes.at("web")[0].backend;
  EXPECT_EQ(w.name, "canary@file");
  ASSERT_TRUE(w.weighted);
  ASSERT_EQ(w.children.size(), 2u);  // weight 0: left out, as Traefik's balancer leaves it
  EXPECT_EQ(w.children[0].name, "v1");
  EXPECT_EQ(w.children[0].backend->name, "v1@file");
  EXPECT_EQ(w.children[1].backend->name, "v2@file");
  EXPECT_FALSE(w.children[1].backend->pass_host_header);
  ASSERT_TRUE(w.sticky.has_value());
  EXPECT_EQ(w.sticky->name, StickyCookieName("", "canary@file"));
  EXPECT_EQ(c.table->backends.count("v1@file"), 1u);  // children are the table's, for health and metrics
}

// The runtime refuses a cycle first (RuntimeTest.ServicesReferringToEachOtherAreARecursion); the
// compiler, given one anyway, fails the router instead of recursing.
TEST(WeightedCompileTest, ACycleOrAMissingChildFailsTheRouterNotTheStack) {
  RuntimeConfig rt = Runtime(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"a"},"m":{"rule":"Path(`/m`)","service":"missing"}},
    "services":{"a":{"weighted":{"services":[{"name":"b"}]}},"b":{"weighted":{"services":[{"name":"a"}]}},
                "missing":{"weighted":{"services":[{"name":"gone"}]}}}}})j");
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("m@file").status, RuntimeStatus::kDisabled);
  EXPECT_THAT(rt.services.at("missing@file").errors,
              ::testing::ElementsAre("building HTTP service \"gone\": the service \"gone@file\" does not exist"));
  for (auto& [name, router] : rt.routers) router.status = RuntimeStatus::kEnabled;  // past the runtime's verdict
  ServerRegistry registry;
  CompileResult c = Compile(rt, registry);
  EXPECT_TRUE(c.table->routes.empty() || c.table->routes.at("web").empty());
  ASSERT_EQ(c.errors.size(), 2u);
  EXPECT_THAT(c.errors[0], HasSubstr("the service \"gone@file\" does not exist"));
  EXPECT_THAT(c.errors[1], HasSubstr("a cycle"));
}

// errors: its service is compiled as any other, in the middleware's provider; a missing one fails
// the routers that use the middleware.
TEST(ErrorPagesCompileTest, TheErrorServiceIsCompiledAndAMissingOneFailsTheRouter) {
  RuntimeConfig rt = Runtime(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"app","middlewares":["e"]},
               "m":{"rule":"Path(`/m`)","service":"app","middlewares":["broken"]}},
    "middlewares":{"e":{"errors":{"status":["500-599"],"service":"pages","query":"/{status}"}},
                   "broken":{"errors":{"status":["500"],"service":"nothing"}}},
    "services":{"app":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}},
                "pages":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:2"}]}}}}})j");
  ServerRegistry registry;
  CompileResult c = Compile(rt, registry);
  ASSERT_EQ(c.table->routes.at("web").size(), 1u);
  const Route& r = c.table->routes.at("web").front();
  ASSERT_EQ(r.chain.size(), 1u);
  ASSERT_NE(r.chain[0].error_backend, nullptr);
  EXPECT_EQ(r.chain[0].error_backend->name, "pages@file");
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_THAT(c.errors[0], HasSubstr("the service \"nothing@file\" does not exist"));
}

TEST(WeightedCompileTest, NestingIsBounded) {
  std::string services;
  for (int i = 0; i < 40; ++i)
    services += fmt::format(R"j("s{}":{{"weighted":{{"services":[{{"name":"s{}"}}]}}}},)j", i, i + 1);
  services += R"j("s40":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:1"}]}})j";
  RuntimeConfig rt = Runtime(R"j({"http":{"routers":{"r":{"rule":"PathPrefix(`/`)","service":"s0"}},"services":{)j" +
                             services + "}}}");
  ServerRegistry registry;
  CompileResult c = Compile(rt, registry);
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_THAT(c.errors[0], HasSubstr("nested deeper than 16"));
}

// The failover's own 503 comes from the level that answers for itself, however deep: an outer
// failover that does not report its status falls back to an inner one that does.
// A failover service of `main` and `fallback`.
std::shared_ptr<Backend> Failover(std::string name, std::shared_ptr<Backend> main, std::shared_ptr<Backend> fallback) {
  auto f = std::make_shared<Backend>();
  f->name = std::move(name);
  f->failover = true;
  f->children.push_back(Backend::Child{.name = main->name, .backend = main, .sticky_hash = {}});
  f->children.push_back(Backend::Child{.name = fallback->name, .backend = fallback, .sticky_hash = {}});
  return f;
}

TEST(FailoverScheduleTest, TheLevelThatReportsItsStatusAnswersTheUnavailable) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b"), c = Leaf(registry, "c");
  auto inner = Failover("inner", b, c);
  inner->reports_status = true;
  auto outer = Failover("outer", a, inner);
  EXPECT_EQ(outer->Choose(nullptr).server, a->servers[0].state);
  a->servers[0].state->set_health(Health::kDown);
  EXPECT_EQ(outer->Choose(nullptr).server, b->servers[0].state);
  b->servers[0].state->set_health(Health::kDown);
  EXPECT_EQ(outer->Choose(nullptr).server, c->servers[0].state);
  c->servers[0].state->set_health(Health::kDown);
  Selection none = outer->Choose(nullptr);
  EXPECT_EQ(none.server, nullptr);
  EXPECT_EQ(none.unavailable, "Service Unavailable\n");
  inner->reports_status = false;  // then the fallback's balancer answers
  EXPECT_EQ(outer->Choose(nullptr).unavailable, "no available server\n");
}

// failover.errors: the innermost failover with statuses whose main is chosen is the one the
// proxy falls back through; its fallback's choice answers for itself as Choose does.
TEST(FailoverScheduleTest, TheInnermostFailoverWithStatusesIsTheOneAnAnswerFallsBackThrough) {
  ServerRegistry registry;
  auto a = Leaf(registry, "a"), b = Leaf(registry, "b"), c = Leaf(registry, "c");
  auto inner = Failover("inner", a, b);
  auto outer = Failover("outer", inner, c);
  inner->failover_statuses = outer->failover_statuses = {{500, 599}};
  Selection s = outer->Choose(nullptr);
  EXPECT_EQ(s.server, a->servers[0].state);
  EXPECT_EQ(s.failover, inner.get());
  Selection fallback = s.failover->ChooseFallback(nullptr);
  EXPECT_EQ(fallback.server, b->servers[0].state);
  EXPECT_EQ(fallback.failover, nullptr);  // the fallback's answer is the answer
  EXPECT_EQ(Failover("plain", a, b)->Choose(nullptr).failover, nullptr);
  b->servers[0].state->set_health(Health::kDown);
  EXPECT_EQ(inner->ChooseFallback(nullptr).unavailable, "no available server\n");
  inner->reports_status = true;
  EXPECT_EQ(inner->ChooseFallback(nullptr).unavailable, "Service Unavailable\n");
}

// --- highestRandomWeight ---

// Traefik's getNodeScore: FNV-1a 64 of address + name over 2^64, then weight / -ln of it (the
// expected values worked out independently of this code).
TEST(HrwTest, ScoresAreTraefiksRendezvousHash) {
  EXPECT_NEAR(HrwScore("10.0.0.1", "v1", 1), 0.23202724572815997, 1e-15);
  EXPECT_NEAR(HrwScore("10.0.0.1", "v1", 3), 0.6960817371844799, 1e-15);
}

TEST(HrwTest, EachClientKeepsToItsHighestScoringRoutableChild) {
  ServerRegistry registry;
  auto hrw = std::make_shared<Backend>();
  hrw->name = "h@file";
  hrw->hrw = true;
  for (const char* name : {"stable", "next", "other"})
    hrw->children.push_back(Backend::Child{.name = name, .backend = Leaf(registry, name), .sticky_hash = {}});
  auto child_of = [&](std::string_view ip) -> std::string {
    Selection s = hrw->Choose(nullptr, ip);
    if (!s.server) return "-";
    for (const Backend::Child& c : hrw->children)
      if (c.backend->servers[0].state == s.server) return c.name;
    return "?";
  };
  // Scores (stable, next, other): 127.0.0.1 2.80 0.45 0.38; 10.0.0.1 1.09 2.53 42.6;
  // 192.168.1.7 0.32 4.28 0.63.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(child_of("127.0.0.1"), "stable");
    EXPECT_EQ(child_of("10.0.0.1"), "other");
    EXPECT_EQ(child_of("192.168.1.7"), "next");
  }
  hrw->children[2].backend->servers[0].state->set_health(Health::kDown);  // "other" down
  EXPECT_EQ(child_of("10.0.0.1"), "next");                               // its next best
  EXPECT_EQ(child_of("127.0.0.1"), "stable");                            // others stay
  for (const Backend::Child& c : hrw->children) c.backend->servers[0].state->set_health(Health::kDown);
  EXPECT_EQ(child_of("127.0.0.1"), "-");
  EXPECT_FALSE(hrw->HasRoutable());
}

// --- served ---

class Named {
 public:
  explicit Named(std::string name)
      : name_(std::move(name)), server_({}, [this](const http::Request&) {
          http::Response resp;
          resp.body = name_;
          return resp;
        }) {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = port.ok() ? *port : 0;
  }
  ~Named() { server_.Stop(); }
  uint16_t port() const { return port_; }

 private:
  std::string name_;
  http::Server server_;
  uint16_t port_ = 0;
};

// GET / (what every client of these tests asks).
http::Request GetRoot() {
  http::Request req;
  req.method = "GET";
  req.target = "/";
  return req;
}

class WeightedProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proxy_ = std::make_unique<Proxy>(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 2});
    auto ports = proxy_->Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    port_ = ports->at("web");
  }
  void TearDown() override { proxy_->Stop(); }
  // Serves the file provider's `json` ("{v1}", "{v2}", "{v3}" replaced by the backends' ports).
  void Serve(std::string json) {
    for (auto [key, port] : {std::pair{"{v1}", v1_.port()}, {"{v2}", v2_.port()}, {"{v3}", v3_.port()}})
      for (size_t at; (at = json.find(key)) != std::string::npos;) json.replace(at, 4, std::to_string(port));
    RuntimeConfig rt = Runtime(json);
    CompileResult c = Compile(rt, registry_);
    ASSERT_THAT(c.errors, IsEmpty());
    table_ = c.table;
    proxy_->SetTable(table_);
  }
  std::map<std::string, int> Count(int n, const std::string& cookie = "") {
    std::map<std::string, int> seen;
    http::Client client("127.0.0.1", port_);
    for (int i = 0; i < n; ++i) {
      http::Request req = GetRoot();
      if (!cookie.empty()) req.headers.push_back({"Cookie", cookie});
      auto r = client.Send(req);
      EXPECT_TRUE(r.ok());
      if (r.ok()) ++seen[r->status == 200 ? r->body : std::to_string(r->status)];
    }
    return seen;
  }

  Named v1_{"v1"}, v2_{"v2"}, v3_{"v3"};
  ServerRegistry registry_;
  std::unique_ptr<Proxy> proxy_;
  uint16_t port_ = 0;
  std::shared_ptr<const Table> table_;
};

constexpr std::string_view kCanary = R"j({"http":{
  "routers":{"r":{"rule":"PathPrefix(`/`)","service":"canary"}},
  "services":{"canary":{"weighted":{"services":[{"name":"stable","weight":3},{"name":"next","weight":1}]}},
              "stable":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v1}"},{"url":"http://127.0.0.1:{v2}"}]}},
              "next":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v3}"}]}}}}})j";

TEST_F(WeightedProxyTest, TrafficIsSplitByWeightAndAChildWithEveryServerDownIsSkipped) {
  Serve(std::string(kCanary));
  // 40 requests: 30 to stable (round robin over its two servers), 10 to next.
  auto seen = Count(40);
  EXPECT_EQ(seen["v1"] + seen["v2"], 30);
  EXPECT_EQ(seen["v1"], 15);
  EXPECT_EQ(seen["v3"], 10);

  // stable's servers DOWN: every request goes to next; next DOWN too: Traefik's 503.
  for (uint16_t p : {v1_.port(), v2_.port()})
    registry_.Get("stable@file", "http://127.0.0.1:" + std::to_string(p), "127.0.0.1", p)->set_health(Health::kDown);
  seen = Count(8);
  EXPECT_EQ(seen["v3"], 8);
  registry_.Get("next@file", "http://127.0.0.1:" + std::to_string(v3_.port()), "127.0.0.1", 0)
      ->set_health(Health::kDown);
  seen = Count(3);
  EXPECT_EQ(seen["503"], 3);
}

// Traefik's failover: the main service while its health check finds a server up, else the
// fallback; neither: the failover's own 503 (it reports its status: failover.healthCheck). The
// servers' first probes (at once) pass; the next would come in an hour, so the test then sets
// their health by hand without a probe racing it.
TEST_F(WeightedProxyTest, AFailoverSendsToItsMainWhileItIsUpElseToItsFallback) {
  Serve(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"safe"}},
    "services":{"safe":{"failover":{"service":"main","fallback":"backup","healthCheck":{}}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v1}"},{"url":"http://127.0.0.1:{v2}"}],
                                        "healthCheck":{"path":"/","interval":"1h"}}},
                "backup":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v3}"}],
                                          "healthCheck":{"path":"/","interval":"1h"}}}}}})j");
  auto server = [&](const char* service, uint16_t port) {
    return registry_.Get(service, "http://127.0.0.1:" + std::to_string(port), "127.0.0.1", port);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto all_up = [&] {
    return server("main@file", v1_.port())->health() == Health::kUp &&
           server("main@file", v2_.port())->health() == Health::kUp &&
           server("backup@file", v3_.port())->health() == Health::kUp;
  };
  while (!all_up() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(all_up());
  auto seen = Count(10);
  EXPECT_EQ(seen["v1"], 5);
  EXPECT_EQ(seen["v2"], 5);

  server("main@file", v1_.port())->set_health(Health::kDown);
  EXPECT_EQ(Count(4)["v2"], 4);  // the main is up while one of its servers is
  server("main@file", v2_.port())->set_health(Health::kDown);
  EXPECT_EQ(Count(4)["v3"], 4);
  server("backup@file", v3_.port())->set_health(Health::kDown);
  http::Client client("127.0.0.1", port_);
  auto r = client.Send(GetRoot());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "Service Unavailable\n");
  server("main@file", v2_.port())->set_health(Health::kUp);
  EXPECT_EQ(Count(3)["v2"], 3);  // back to the main as soon as it is up again
}

// Traefik v3.7's failover.errors: the main's answer with one of the statuses is dropped and the
// request, body and all, goes to the fallback; other answers are the main's; the main needs no
// health check; a body over maxRequestBodyBytes is Traefik's 413.
TEST_F(WeightedProxyTest, FailoverErrorsSendAnAnswerWithOneOfTheStatusesToTheFallback) {
  http::Server main({}, [](const http::Request& req) {
    http::Response resp;
    if (req.Query().starts_with("status=")) resp.status = std::stoi(std::string(req.Query().substr(7)));
    resp.body = "main:" + req.body;
    return resp;
  });
  http::Server backup({}, [](const http::Request& req) {
    http::Response resp;
    resp.body = "backup:" + req.method + ":" + req.body;
    return resp;
  });
  auto main_port = main.Start();
  auto backup_port = backup.Start();
  ASSERT_TRUE(main_port.ok() && backup_port.ok());
  std::string json = R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"safe"},"small":{"rule":"PathPrefix(`/small`)","service":"small"}},
    "services":{"safe":{"failover":{"service":"main","fallback":"backup","errors":{"status":["500-502","429"]}}},
                "small":{"failover":{"service":"main","fallback":"backup",
                                     "errors":{"status":["500"],"maxRequestBodyBytes":4}}},
                "main":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:MAIN"}]}},
                "backup":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:BACKUP"}]}}}}})j";
  json.replace(json.find("MAIN"), 4, std::to_string(*main_port));
  json.replace(json.find("BACKUP"), 6, std::to_string(*backup_port));
  Serve(json);
  http::Client client("127.0.0.1", port_);
  auto send = [&](std::string method, std::string target, std::string body) {
    http::Request req;
    req.method = std::move(method);
    req.target = std::move(target);
    req.body = std::move(body);
    auto r = client.Send(req);
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::to_string(r->status) + " " + r->body : std::string("error");
  };
  EXPECT_EQ(send("GET", "/", ""), "200 main:");
  EXPECT_EQ(send("POST", "/?status=500", "order"), "200 backup:POST:order");  // the body sent again
  EXPECT_EQ(send("GET", "/?status=502", ""), "200 backup:GET:");
  EXPECT_EQ(send("GET", "/?status=429", ""), "200 backup:GET:");
  EXPECT_EQ(send("GET", "/?status=503", ""), "503 main:");  // not one of them: the main's answer
  EXPECT_EQ(send("GET", "/?status=404", ""), "404 main:");
  EXPECT_EQ(send("POST", "/small?status=500", "tiny"), "200 backup:POST:tiny");
  EXPECT_EQ(send("POST", "/small?status=500", "too big"), "413 Request body too large\n");
  main.Stop();
  backup.Stop();
}

// A highestRandomWeight service served: this client (127.0.0.1) scores "stable" highest, so every
// request of it goes there; with stable's server down, to its next best ("next").
TEST_F(WeightedProxyTest, AHighestRandomWeightServiceKeepsAClientOnOneChild) {
  Serve(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"h"}},
    "services":{"h":{"highestRandomWeight":{"services":[{"name":"other"},{"name":"next"},{"name":"stable"}]}},
                "stable":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v1}"}]}},
                "next":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v2}"}]}},
                "other":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v3}"}]}}}}})j");
  EXPECT_EQ(Count(6)["v1"], 6);
  registry_.Get("stable@file", "http://127.0.0.1:" + std::to_string(v1_.port()), "127.0.0.1", v1_.port())
      ->set_health(Health::kDown);
  EXPECT_EQ(Count(4)["v2"], 4);
}

// Traefik's service metrics wrap loadBalancers only: a weighted service's requests are counted
// under the child that answered, and its own 503 (no child has a server) under no service.
TEST_F(WeightedProxyTest, ServiceMetricsAreTheLoadBalancerThatAnswered) {
  Serve(std::string(kCanary));
  EXPECT_EQ(Count(8)["v3"], 2);
  for (uint16_t p : {v1_.port(), v2_.port(), v3_.port()})
    registry_.Get(p == v3_.port() ? "next@file" : "stable@file", "http://127.0.0.1:" + std::to_string(p),
                  "127.0.0.1", p)
        ->set_health(Health::kDown);
  EXPECT_EQ(Count(1)["503"], 1);
  std::map<std::string, uint64_t> entry, service;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {  // counted just after each answer's last byte: wait for all nine
    entry.clear();
    for (const auto& [key, series] : proxy_->Metrics().entry_point_requests) entry[key.code] += series.requests;
  } while (entry["200"] + entry["503"] < 9 && std::chrono::steady_clock::now() < deadline &&
           (std::this_thread::yield(), true));
  EXPECT_EQ(entry, (std::map<std::string, uint64_t>{{"200", 8}, {"503", 1}}));
  for (const auto& [key, series] : proxy_->Metrics().service_requests) service[key.code + " " + key.name] += series.requests;
  EXPECT_EQ(service, (std::map<std::string, uint64_t>{{"200 stable@file", 6}, {"200 next@file", 2}}));
}

TEST_F(WeightedProxyTest, WeightedStickyKeepsAClientOnOneChild) {
  Serve(R"j({"http":{
    "routers":{"r":{"rule":"PathPrefix(`/`)","service":"canary"}},
    "services":{"canary":{"weighted":{"services":[{"name":"stable","weight":1},{"name":"next","weight":1}],
                                      "sticky":{"cookie":{"name":"lane","httpOnly":true}}}},
                "stable":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v1}"},{"url":"http://127.0.0.1:{v2}"}]}},
                "next":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:{v3}"}]}}}}})j");
  http::Client client("127.0.0.1", port_);
  http::Request req = GetRoot();
  auto first = client.Send(req);
  ASSERT_TRUE(first.ok());
  std::string set_cookie;
  for (const auto& h : first->headers)
    if (h.name == "Set-Cookie" || h.name == "set-cookie") set_cookie = h.value;
  const std::string child = first->body == "v3" ? "next" : "stable";
  EXPECT_EQ(set_cookie, "lane=" + StickyServerHash(child) + "; Path=/; HttpOnly");
  // With the cookie: always that child (stable's two servers still take turns), no new cookie.
  auto seen = Count(12, "lane=" + StickyServerHash(child));
  if (child == "next") {
    EXPECT_EQ(seen["v3"], 12);
  } else {
    EXPECT_EQ(seen["v1"], 6);
    EXPECT_EQ(seen["v2"], 6);
  }
  seen = Count(12, "lane=" + StickyServerHash("next"));
  EXPECT_EQ(seen["v3"], 12);
}

}  // namespace
}  // namespace paddock::edge
