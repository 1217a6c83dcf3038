// The controller's CPU per steady-state tick over many deployments (issue 15: a tick over 1,000
// deployments <= 100 ms of controller CPU). One process holds the controller (real SQLite store,
// the real planner and renderer) and the in-memory ECS fake it calls (testing/fake_ecs.h); each
// answer goes through serialize + parse as on the wire, and the CPU spent in the fake and in
// serializing is subtracted, so what is printed is the controller's own, parsing included.
//
//   build/release/src/deploy/deploy_tick_bench [deployments=1000] [ticks=10]
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "deploy/controller.h"
#include "deploy/testing/fake_ecs.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::deploy {
namespace {

double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Between the controller and the fake, as the wire would be: each answer serialized by the "server"
// and parsed by the "client". CPU inside the fake and its serialization is counted apart, so the
// controller's own share (parsing included) can be told from the fake's.
class Wire final : public Aws {
 public:
  explicit Wire(Aws& server) : server_(server) {}
  StatusOr<boost::json::value> Call(AwsService service, std::string_view action, const boost::json::object& body) override {
    const double t0 = ThreadCpuMs();
    StatusOr<boost::json::value> v = server_.Call(service, action, body);
    std::string text = v.ok() ? boost::json::serialize(*v) : "";
    server_ms_ += ThreadCpuMs() - t0;
    if (!v.ok()) return v;
    return boost::json::parse(text);
  }
  double server_ms() const { return server_ms_; }

 private:
  Aws& server_;
  double server_ms_ = 0;
};

class AllUp final : public EdgeView {
 public:
  explicit AllUp(const testing::FakeEcs& ecs) : ecs_(ecs) {}
  StatusOr<std::map<std::string, std::string>> Servers() override {
    std::map<std::string, std::string> out;
    for (const testing::FakeTask& t : ecs_.RunningTasks()) {
      if (t.port) out[fmt::format("http://{}:{}", t.address, *t.port)] = "UP";
    }
    return out;
  }

 private:
  const testing::FakeEcs& ecs_;
};

int Main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int ticks = argc > 2 ? std::atoi(argv[2]) : 10;
  std::string dir = (std::filesystem::temp_directory_path() / "paddock-tick-bench-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return 1;
  auto store = store::SqliteStore::Open({.path = dir + "/controller.db", .schemas = {kSchema}});
  if (!store.ok()) return 1;
  paddock::testing::FakeClock clock;
  testing::FakeEcs ecs(clock);
  Deployments deployments(**store, clock);
  AllUp edge(ecs);
  ControllerOptions o;
  o.settings.subnets = {"subnet-0a1b"};
  o.sleep = [&](std::chrono::milliseconds d) { clock.Advance(d); };
  o.register_spacing = std::chrono::milliseconds(0);
  Wire wire(ecs);
  Controller controller(**store, deployments, wire, &edge, clock, o);
  for (int i = 0; i < n; ++i) {
    NewDeployment nd;
    nd.project = fmt::format("app{:04d}", i);
    nd.spec.project = nd.project;
    ContainerSpec web;
    web.name = "web";
    web.image = "registry.local/web:1";
    web.port = 8080;
    web.health_check = HealthCheck{"/healthz", 10, 5};
    nd.spec.containers.push_back(web);
    nd.spec.deploy.replicas = 2;
    nd.spec.routes.push_back({"/", "web", Access::kPublic});
    if (auto d = deployments.Create(nd); !d.ok()) {
      fmt::print(stderr, "create: {}\n", d.status().ToString());
      return 1;
    }
  }
  // Converge: create, run, Healthy.
  for (int i = 0; i < 6; ++i) {
    auto r = controller.Tick();
    if (!r.ok()) {
      fmt::print(stderr, "tick: {}\n", r.status().ToString());
      return 1;
    }
    ecs.Settle();
    clock.Advance(std::chrono::seconds(1));
  }
  std::vector<double> cpu;
  int reads = 0, writes = 0;
  for (int i = 0; i < ticks; ++i) {
    const double before = ThreadCpuMs(), server_before = wire.server_ms();
    auto r = controller.Tick();
    cpu.push_back(ThreadCpuMs() - before - (wire.server_ms() - server_before));
    if (!r.ok()) return 1;
    reads = r->reads;
    writes = r->writes;
    clock.Advance(std::chrono::seconds(30));
  }
  std::sort(cpu.begin(), cpu.end());
  auto healthy = deployments.List("", "", "", 100);
  fmt::print("steady-state tick over {} deployments (1 service, 2 tasks each): controller CPU p50 {:.1f} ms, max {:.1f} ms "
             "(the fake ECS's own time and its serialization excluded; parsing its answers included); "
             "{} AWS reads, {} writes per tick (first page: {})\n",
             n, cpu[cpu.size() / 2], cpu.back(), reads, writes,
             healthy.ok() && !healthy->deployments.empty() ? StateName(healthy->deployments[0].state) : "?");
  (*store)->Close();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace paddock::deploy

int main(int argc, char** argv) { return paddock::deploy::Main(argc, argv); }
