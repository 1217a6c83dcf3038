// task_run_bench [DIR] [--runs=N] [--nondurable]: what RunTask's transaction costs in the task owner, with and
// without the node's Fargate capacity admission (ecs/task/fargate_capacity.h). Each round is a
// Tasks::Run of one awsvpc Fargate task (resolve, address, records, indexes, assignment, tags, and
// with admission two O(1) totals and a reservation) and its ReportState(STOPPED) (which releases
// them), on a durable SQLite store in DIR (default: a temp dir; put it on the disk being measured;
// --nondurable leaves out the fsync, whose noise hides a few microseconds of CPU).
// No agent, no containers: the control plane's share of RunTask -> RUNNING.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/clock.h"
#include "common/testing/bench.h"
#include "ecs/cluster/clusters.h"
#include "ecs/task/fargate_capacity.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"
#include "store/sqlite/sqlite_store.h"
#include "vpc/default_vpc.h"
#include "cli/schemas.h"

namespace {

using namespace paddock;
using Clock = std::chrono::steady_clock;
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

void Bench(const std::string& dir, const char* name, bool admission, int runs, bool durable) {
  auto opened = store::SqliteStore::Open(
      {.path = fmt::format("{}/{}.db", dir, name), .durable = durable, .schemas = cli::NodeSchemas()});
  bench::CheckOk(opened.status(), "open");
  store::SqliteStore& store = **opened;
  ecs::taskdef::TaskDefinitions tds(store);
  ecs::cluster::Clusters clusters(store);
  ecs::task::FargateCapacity capacity({.cpu = 1 << 20, .memory = 1 << 24, .vcpus_per_account = 4000});
  ecs::task::Tasks tasks(store, tds, clusters, "fargate-local", nullptr, admission ? &capacity : nullptr);
  const TimePoint now = SystemClock::Get().Now();
  bench::CheckOk(clusters.Create(kScope, json::parse(R"({"clusterName":"default"})").as_object()).status(), "cluster");
  bench::CheckOk(tds.Register(kScope, kCaller,
                     json::parse(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                                 R"("cpu":"256","memory":"512","containerDefinitions":[{"name":"app","image":"nginx"}]})")
                         .as_object(),
                     now)
            .status(),
        "register");
  ecs::task::RunRequest req;
  req.task_definition = "web";
  req.launch_type = "FARGATE";
  req.network_configuration = json::object{
      {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
  ecs::task::TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  std::vector<double> run_ms, stop_ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    auto r = tasks.Run(kScope, kCaller, req, now);
    const auto t1 = Clock::now();
    bench::CheckOk(r.status(), "run");
    if (r->tasks.size() != 1) bench::CheckOk(Internal("a run placed no task"), "run");
    const std::string arn(json::parse(r->tasks[0]).at("taskArn").as_string());
    const auto t2 = Clock::now();
    bench::CheckOk(tasks.ReportState("fargate-local", arn, stopped, now), "stop");
    const auto t3 = Clock::now();
    run_ms.push_back(bench::Ms(t1 - t0));
    stop_ms.push_back(bench::Ms(t3 - t2));
  }
  std::printf("%-22s Run p50 %.3f ms p99 %.3f ms | STOPPED report p50 %.3f ms p99 %.3f ms (n=%d)\n", name,
              bench::Percentile(run_ms, 50), bench::Percentile(run_ms, 99), bench::Percentile(stop_ms, 50),
              bench::Percentile(stop_ms, 99), runs);
  store.Close();
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> dir;
  int runs = 500;
  bool durable = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--runs=", 0) == 0) {
      runs = std::max(1, atoi(a.c_str() + 7));
    } else if (a == "--nondurable") {
      durable = false;
    } else {
      dir = a;
    }
  }
  std::string tmp;
  if (!dir) {
    tmp = (std::filesystem::temp_directory_path() / "paddock-task-run-bench-XXXXXX").string();
    if (mkdtemp(tmp.data()) == nullptr) return 1;
    dir = tmp;
  }
  // Alternating, three times, so a change in the machine's load shows as a difference between passes.
  for (int pass = 1; pass <= 3; ++pass) {
    Bench(*dir, fmt::format("no-admission-{}", pass).c_str(), false, runs, durable);
    Bench(*dir, fmt::format("fargate-admission-{}", pass).c_str(), true, runs, durable);
  }
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return 0;
}
