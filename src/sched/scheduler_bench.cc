// scheduler_bench [--tasks=N] [--runs=N] [--durable]: what one task's report costs the service
// scheduler, for a service of N tasks (default 1000). Each round is an agent's report about one
// RUNNING task (Tasks::ReportState) and the scheduler's pass over its service (Scheduler::Pass)
// that the report wakes: read the service and its tasks, decide (nothing to do: the service is
// steady), write nothing. "before" forgets the tasks the scheduler holds before each pass, so the
// pass reads every task of the service, as every pass did before the per-service projection;
// "after" re-reads only the reported task (ecs::task::GroupProjection). The rounds alternate
// (before, after) three times, so a change in the machine's load shows as a difference between
// passes. SQLite in a temp dir, without fsync unless --durable. No agent, no containers.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "cli/schemas.h"
#include "common/testing/bench.h"
#include "common/testing/fake_clock.h"
#include "ecs/cluster/clusters.h"
#include "ecs/instance/instances.h"
#include "ecs/service/services.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"
#include "sched/scheduler.h"
#include "store/sqlite/sqlite_store.h"
#include "vpc/default_vpc.h"

namespace {

using namespace paddock;
using Steady = std::chrono::steady_clock;
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";
constexpr std::string_view kAgent = "fargate-local";

struct Round {
  std::vector<double> report_ms, pass_ms;
};

}  // namespace

int main(int argc, char** argv) {
  int tasks_per_service = 1000;
  int runs = 300;
  bool durable = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tasks=", 0) == 0) {
      tasks_per_service = std::max(1, atoi(a.c_str() + 8));
    } else if (a.rfind("--runs=", 0) == 0) {
      runs = std::max(1, atoi(a.c_str() + 7));
    } else if (a == "--durable") {
      durable = true;
    } else {
      std::fprintf(stderr, "usage: scheduler_bench [--tasks=N] [--runs=N] [--durable]\n");
      return 2;
    }
  }
  std::string dir = (std::filesystem::temp_directory_path() / "paddock-scheduler-bench-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return 1;
  {
    auto opened =
        store::SqliteStore::Open({.path = dir + "/state.db", .durable = durable, .schemas = cli::NodeSchemas()});
    bench::CheckOk(opened.status(), "open");
    store::SqliteStore& store = **opened;
    paddock::testing::FakeClock clock;
    ecs::taskdef::TaskDefinitions tds(store);
    ecs::cluster::Clusters clusters(store);
    ecs::instance::ContainerInstances instances(store, clusters);
    ecs::task::Tasks tasks(store, tds, clusters, std::string(kAgent), &instances);
    ecs::service::Services services(store, tds, clusters);
    tds.AddReferenceCheck(tasks.reference_check());
    tds.AddReferenceCheck(services.reference_check());
    clusters.AddUsage(tasks.cluster_usage());
    clusters.AddUsage(services.cluster_usage());
    bench::CheckOk(clusters.Create(kScope, json::parse(R"({"clusterName":"default"})").as_object()).status(), "cluster");
    bench::CheckOk(tds.Register(kScope, kCaller,
                       json::parse(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                                   R"("cpu":"256","memory":"512","containerDefinitions":[{"name":"app","image":"nginx"}]})")
                           .as_object(),
                       clock.Now())
              .status(),
          "register");
    const std::string subnet = vpc::DefaultVpcFor(kScope).subnets[0].id;
    bench::CheckOk(services
              .Create(kScope, kCaller,
                      json::parse(fmt::format(R"({{"serviceName":"api","taskDefinition":"web","launchType":"FARGATE",)"
                                              R"("desiredCount":{},"networkConfiguration":{{"awsvpcConfiguration":)"
                                              R"({{"subnets":["{}"]}}}}}})",
                                              tasks_per_service, subnet))
                          .as_object(),
                      clock.Now())
              .status(),
          "create service");
    sched::SchedulerOptions options;
    sched::Scheduler scheduler(store, services, tasks, &instances, clock, options);
    auto led = scheduler.Lead();
    bench::CheckOk(led.status(), "lease");
    if (!led->has_value()) bench::CheckOk(Internal("no lease"), "lease");
    uint64_t epoch = **led;
    const ecs::service::ServiceKey key{kScope, "default", "api"};

    // The service's tasks launched, RUNNING and settled: a steady service.
    bench::CheckOk(scheduler.Pass(key, epoch), "launch");
    std::vector<std::string> arns;
    bench::CheckOk(store.Read([&](store::ReadTxn& txn) -> Status {
            ASSIGN_OR_RETURN(auto group, tasks.GroupTasks(txn, kScope, "default", "service:api"));
            for (const auto& t : group) arns.push_back("arn:aws:ecs:us-east-1:123456789012:task/default/" + t.id);
            return OkStatus();
          }),
          "read");
    if (static_cast<int>(arns.size()) != tasks_per_service)
      bench::CheckOk(Internal(fmt::format("{} tasks launched, not {}", arns.size(), tasks_per_service)), "launch");
    ecs::task::TaskStateChange running;
    running.last_status = "RUNNING";
    for (const auto& arn : arns) bench::CheckOk(tasks.ReportState(kAgent, arn, running, clock.Now()), "report");
    clock.Advance(std::chrono::minutes(1));  // past the settle time, and the lease's: take it again
    led = scheduler.Lead();
    bench::CheckOk(led.status(), "lease");
    if (!led->has_value()) bench::CheckOk(Internal("no lease"), "lease");
    epoch = **led;
    for (int i = 0; i < 3; ++i) bench::CheckOk(scheduler.Pass(key, epoch), "settle");

    auto measure = [&](bool forget) {
      Round r;
      for (int i = 0; i < runs; ++i) {
        const std::string& arn = arns[static_cast<size_t>(i) % arns.size()];
        if (forget) scheduler.ForgetTasks();
        const auto t0 = Steady::now();
        bench::CheckOk(tasks.ReportState(kAgent, arn, running, clock.Now()), "report");
        const auto t1 = Steady::now();
        bench::CheckOk(scheduler.Pass(key, epoch), "pass");
        const auto t2 = Steady::now();
        r.report_ms.push_back(bench::Ms(t1 - t0));
        r.pass_ms.push_back(bench::Ms(t2 - t1));
      }
      return r;
    };
    std::printf("one task's report and the pass it wakes, %d tasks in the service, %d rounds each%s\n",
                tasks_per_service, runs, durable ? " (durable)" : "");
    for (int pass = 1; pass <= 3; ++pass) {
      Round before = measure(true);
      Round after = measure(false);
      auto line = [](const char* name, const Round& r) {
        std::printf("  %-7s report p50 %7.3f ms | pass p50 %7.3f ms p99 %7.3f ms\n", name, bench::Percentile(r.report_ms, 50),
                    bench::Percentile(r.pass_ms, 50), bench::Percentile(r.pass_ms, 99));
      };
      line("before", before);
      line("after", after);
      const double b = bench::Percentile(before.report_ms, 50) + bench::Percentile(before.pass_ms, 50);
      const double a = bench::Percentile(after.report_ms, 50) + bench::Percentile(after.pass_ms, 50);
      std::printf("  pass %d: the pass %.1fx cheaper (p50), report + pass %.1fx\n", pass,
                  bench::Percentile(before.pass_ms, 50) / bench::Percentile(after.pass_ms, 50), b / a);
    }
    store.Close();
  }
  std::filesystem::remove_all(dir);
  return 0;
}
