// The agent's container semantics (dependsOn, health checks, restart policies, exit and stop
// codes, stopTimeout, OOM, imageDigest) over a real Tasks on a temp-dir store, a real ImageStore
// and FakeRuntime + FakeClock: containers exit when the test says, time moves when the test
// advances it. Waits are bounded polls of the task as DescribeTasks shows it, or of what the
// runtime was asked; no sleeps.
#include "agent/agent.h"
#include "agent/inprocess/inprocess_control.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "agent/metadata/metadata.h"
#include "agent/runtime/testing/fake_runtime.h"
#include "common/testing/fake_clock.h"
#include "agent/sweep.h"
#include "ecs/cluster/clusters.h"
#include "ecs/drain/drain_holds.h"
#include "ecs/drain/task_lookup.h"
#include "ecs/common/records.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "http/client.h"
#include "vpc/default_vpc.h"
#include "vpc/testing/free_addresses.h"

namespace paddock::agent {
namespace {
namespace json = boost::json;
namespace fs = std::filesystem;
using runtime::ContainerId;
using runtime::ContainerStatus;
using runtime::ExecResult;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";
constexpr std::string_view kAgentId = "fargate-local";
constexpr std::string_view kImage = "busybox:agenttest";

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

std::string Str(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

class AgentTest : public ::testing::Test {
 protected:
  AgentTest() {
    control_.SetDrainHolds(&drain_);
    EXPECT_TRUE(clusters_.Create(kScope, Parse(R"({"clusterName":"default"})")).ok());
    fs::path rootfs = fs::path(store_.dir()) / "rootfs";
    fs::create_directories(rootfs / "bin");
    std::ofstream(rootfs / "bin" / "sh") << "not really a shell\n";
    images::ImageConfig config;
    config.cmd = {"/bin/sh"};
    auto ref = images_.ImportRootfs(rootfs.string(), kImage, config);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    auto resolved = images_.Resolve(kImage);
    EXPECT_TRUE(resolved.ok());
    if (resolved.ok()) digest_ = resolved->manifest_digest.str();
  }
  ~AgentTest() override {
    if (agent_) agent_->Stop();
    tasks_.SetChangeListener(nullptr);
  }

  void StartAgent(metadata::MetadataService* metadata = nullptr) {
    AgentOptions o;
    o.metadata = metadata;
    o.instance = "t1";
    o.task_networks = false;
    o.poll_interval = poll_interval_;
    o.monitor_interval = std::chrono::milliseconds(1);
    o.container_owner = owner_;
    o.tasks_dir = tasks_dir_;
    agent_ = std::make_unique<Agent>(control_, images_, rt_, o, clock_);
    tasks_.SetChangeListener([this] { agent_->Notify(); });
    ASSERT_TRUE(agent_->Start().ok());
  }

  // StartAgent with a metadata service of the fixture's on 127.0.0.1 (an ephemeral port, no
  // source check, a fixed id key). The fixture destroys the agent before the service: a driver
  // unregisters its task from the service when it is destroyed (TSan: use of a destroyed mutex
  // otherwise).
  metadata::MetadataService& StartAgentWithMetadata() {
    metadata::MetadataServiceOptions mo;
    mo.host = "127.0.0.1";
    mo.port = 0;
    mo.check_source = false;
    mo.id_key = std::string(32, 'k');
    metadata_ = std::make_unique<metadata::MetadataService>(mo);
    EXPECT_TRUE(metadata_->Start().ok());
    StartAgent(metadata_.get());
    return *metadata_;
  }

  // As a node restart does: the agent goes (containers stay), a new one comes over the same
  // store and runtime.
  void RestartAgent() {
    tasks_.SetChangeListener(nullptr);
    agent_->Stop();
    agent_.reset();
  }

  // Registers a Fargate task definition with these containerDefinitions (a JSON array) and runs
  // one task of it; returns its ARN.
  // `extra`: more task-level members, as ',"taskRoleArn":"…"'.
  std::string Run(std::string_view containers, std::string_view extra = {}) {
    std::string family = fmt::format("f{}", ++families_);
    auto def = Parse(fmt::format(
        R"({{"family":"{}","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",)"
        R"("memory":"512","containerDefinitions":{}{}}})",
        family, containers, extra));
    auto reg = tds_.Register(kScope, kCaller, std::move(def), clock_.Now());
    EXPECT_TRUE(reg.ok()) << reg.status().ToString();
    ecs::task::RunRequest r;
    r.task_definition = family;
    r.launch_type = "FARGATE";
    r.network_configuration = json::object{
        {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
    auto res = tasks_.Run(kScope, kCaller, r, clock_.Now());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok() || res->tasks.empty()) return {};
    return Str(Parse(res->tasks[0]), "taskArn");
  }

  ContainerId Id(const std::string& arn, int index) {
    return ContainerId(fmt::format("pdk-t1-{}-{}", arn.substr(arn.rfind('/') + 1), index));
  }

  json::object Describe(const std::string& arn) {
    auto d = tasks_.Describe(kScope, std::nullopt, {arn}, false, kCaller);
    EXPECT_TRUE(d.ok() && d->tasks.size() == 1);
    return d.ok() && d->tasks.size() == 1 ? Parse(d->tasks[0]) : json::object();
  }

  static json::object Container(const json::object& task, std::string_view name) {
    for (const auto& c : task.at("containers").as_array())
      if (c.as_object().at("name").as_string() == name) return c.as_object();
    ADD_FAILURE() << "no container " << name;
    return {};
  }

  // Polls `done` until it holds (10 s real time at most; a shorter `limit` where a test shows that
  // something does not happen).
  bool WaitUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::milliseconds(10'000)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
  json::object WaitTask(const std::string& arn, const std::function<bool(const json::object&)>& done) {
    json::object last;
    bool ok = WaitUntil([&] {
      last = Describe(arn);
      return done(last);
    });
    EXPECT_TRUE(ok) << "gave up waiting; the task is " << json::serialize(last);
    return last;
  }
  json::object WaitStatus(const std::string& arn, std::string_view status) {
    return WaitTask(arn, [&](const json::object& t) { return Str(t, "lastStatus") == status; });
  }
  // Edge "edge-1" holds `arn` for `drain_timeout`, its lease 300 s (the longest).
  void HoldForDrain(const std::string& arn, std::chrono::seconds drain_timeout) {
    ASSERT_TRUE(drain_.Put(kScope, ecs::drain::EdgeId("edge-1"), {{arn, drain_timeout}}, std::chrono::seconds(300),
                           clock_.Now())
                    .ok());
  }
  bool Exists(const ContainerId& id) { return rt_.State(id).ok(); }
  bool Running(const ContainerId& id) {
    auto st = rt_.State(id);
    return st.ok() && st->status == ContainerStatus::kRunning;
  }
  size_t Execs() { return rt_.execs().size(); }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  ecs::taskdef::TaskDefinitions tds_{*store_};
  ecs::cluster::Clusters clusters_{*store_};
  ecs::task::Tasks tasks_{*store_, tds_, clusters_, std::string(kAgentId)};
  // The edges' drain holds the agent waits on before it stops a task (an edge is the test).
  ecs::drain::TasksLookup drain_lookup_{tasks_};
  ecs::drain::DrainHolds drain_{*store_, drain_lookup_, clock_};
  TasksControl control_{tasks_};  // the caller wakes the agent (Tasks::SetChangeListener)
  images::ImageStore images_{*store_, store_.dir() + "/images", clock_};
  runtime::FakeRuntime rt_;
  std::unique_ptr<metadata::MetadataService> metadata_;  // StartAgentWithMetadata; outlives agent_
  std::unique_ptr<Agent> agent_;
  // The agent's pass interval (StartAgent). A test that must tell "at once" from "at the next pass"
  // makes it an hour: then only the changes the agent is told of (Tasks' listener) wake it.
  std::chrono::milliseconds poll_interval_{20};
  std::string digest_;
  int families_ = 0;
  std::string owner_;  // AgentOptions::container_owner: empty, no sweep
  std::string tasks_dir_;  // AgentOptions::tasks_dir: empty, no /etc files or volumes
};

TEST_F(AgentTest, DependsOnSuccessStartsTheAppAfterTheInitContainerExitsZero) {
  StartAgent();
  std::string arn = Run(R"([{"name":"init","image":"busybox:agenttest","essential":false},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"init","condition":"SUCCESS"}]}])");
  // The app waits for its dependency; the task is not RUNNING while a container waits to start.
  json::object t = WaitTask(arn, [](const json::object& x) { return Str(Container(x, "init"), "lastStatus") == "RUNNING"; });
  EXPECT_FALSE(Exists(Id(arn, 1)));
  EXPECT_EQ(Str(t, "lastStatus"), "ACTIVATING");
  EXPECT_EQ(Str(Container(t, "init"), "lastStatus"), "RUNNING");
  EXPECT_EQ(Str(Container(t, "init"), "imageDigest"), digest_);

  rt_.Exit(Id(arn, 0), 0);
  t = WaitStatus(arn, "RUNNING");
  EXPECT_TRUE(Running(Id(arn, 1)));
  EXPECT_EQ(Str(Container(t, "init"), "lastStatus"), "STOPPED");
  EXPECT_EQ(Container(t, "init").at("exitCode"), 0);
  EXPECT_EQ(Str(Container(t, "app"), "lastStatus"), "RUNNING");
  EXPECT_EQ(Str(Container(t, "app"), "imageDigest"), digest_);
  EXPECT_EQ(Str(Container(t, "app"), "runtimeId"), Id(arn, 1).str());

  // The init container's exit (non-essential) does not stop the task; the app's does.
  rt_.Exit(Id(arn, 1), 0);
  t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
  EXPECT_EQ(Str(t, "stoppedReason"), "Essential container in task exited");
}

TEST_F(AgentTest, StartAndCompleteConditionsOrderTheStarts) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest",
        "dependsOn":[{"containerName":"side","condition":"START"},{"containerName":"setup","condition":"COMPLETE"}]},
      {"name":"side","image":"busybox:agenttest","essential":false},
      {"name":"setup","image":"busybox:agenttest","essential":false}])");
  ASSERT_TRUE(WaitUntil([&] { return Running(Id(arn, 1)) && Running(Id(arn, 2)); }));
  EXPECT_FALSE(Exists(Id(arn, 0)));
  rt_.Exit(Id(arn, 2), 5);  // COMPLETE: any exit code
  json::object t = WaitStatus(arn, "RUNNING");
  EXPECT_TRUE(Running(Id(arn, 0)));
  EXPECT_EQ(Container(t, "setup").at("exitCode"), 5);
  EXPECT_EQ(Str(Container(t, "side"), "lastStatus"), "RUNNING");
}

TEST_F(AgentTest, DependsOnSuccessWithANonZeroExitFailsTheTask) {
  StartAgent();
  std::string arn = Run(R"([{"name":"init","image":"busybox:agenttest","essential":false},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"init","condition":"SUCCESS"}]}])");
  ASSERT_TRUE(WaitUntil([&] { return Running(Id(arn, 0)); }));
  rt_.Exit(Id(arn, 0), 2);
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"),
            "CannotStartContainerError: dependency graph: failed to resolve container ordering dependency [init] for "
            "target [app] as dependency did not exit successfully.");
  EXPECT_EQ(Container(t, "init").at("exitCode"), 2);
  EXPECT_FALSE(Container(t, "app").contains("exitCode"));  // it never ran
  EXPECT_EQ(Str(Container(t, "app"), "reason"), Str(t, "stoppedReason"));
  EXPECT_FALSE(Exists(Id(arn, 0)));
}

TEST_F(AgentTest, HealthyDependencyWaitsForTheFirstPassingCheck) {
  StartAgent();
  std::string arn = Run(R"([{"name":"db","image":"busybox:agenttest",
        "healthCheck":{"command":["CMD-SHELL","pg_isready || exit 1"],"interval":10}},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"db","condition":"HEALTHY"}]}])");
  ASSERT_TRUE(WaitUntil([&] { return Running(Id(arn, 0)); }));
  json::object t = Describe(arn);
  EXPECT_EQ(Str(Container(t, "db"), "healthStatus"), "UNKNOWN");
  EXPECT_EQ(Execs(), 0u);  // the first check runs `interval` after the start
  clock_.Advance(std::chrono::seconds(10));
  t = WaitStatus(arn, "RUNNING");
  ASSERT_EQ(Execs(), 1u);
  EXPECT_EQ(rt_.execs()[0].first, Id(arn, 0));
  EXPECT_EQ(rt_.execs()[0].second, (std::vector<std::string>{"/bin/sh", "-c", "pg_isready || exit 1"}));
  EXPECT_EQ(Str(Container(t, "db"), "healthStatus"), "HEALTHY");
  // The task's health: its essential containers with health checks (db) are all HEALTHY.
  EXPECT_EQ(Str(t, "healthStatus"), "HEALTHY");
  EXPECT_TRUE(Running(Id(arn, 1)));
}

TEST_F(AgentTest, HealthyDependencyNeverReachedTimesOutAndFailsTheTask) {
  rt_.SetExecHandler([](const ContainerId&, const std::vector<std::string>&) -> StatusOr<ExecResult> {
    ExecResult r;
    r.exit_code = 1;
    return r;
  });
  StartAgent();
  std::string arn = Run(R"([{"name":"db","image":"busybox:agenttest","startTimeout":30,
        "healthCheck":{"command":["CMD","check"],"interval":5,"retries":1}},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"db","condition":"HEALTHY"}]}])");
  ASSERT_TRUE(WaitUntil([&] { return Running(Id(arn, 0)); }));
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(WaitUntil([&] { return Execs() == 1; }));
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(WaitUntil([&] { return Execs() == 2; }));
  json::object t = Describe(arn);
  EXPECT_EQ(Str(Container(t, "db"), "healthStatus"), "UNHEALTHY");
  EXPECT_EQ(Str(t, "lastStatus"), "ACTIVATING");  // UNHEALTHY may still turn HEALTHY: wait for startTimeout
  EXPECT_FALSE(Exists(Id(arn, 1)));
  clock_.Advance(std::chrono::seconds(20));
  t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"),
            "CannotStartContainerError: dependency graph: container ordering dependency [db] for target [app] has timed "
            "out.");
}

TEST_F(AgentTest, WithoutAStartTimeoutADependencyIsWaitedOnAsLongAsTheTaskLives) {
  StartAgent();
  // init's health check is only a marker: its first run (300 s in, ECS's longest interval) proves
  // a pass after the advance.
  std::string arn = Run(R"([{"name":"init","image":"busybox:agenttest","essential":false,
        "healthCheck":{"command":["CMD","true"],"interval":300}},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"init","condition":"SUCCESS"}]}])");
  ASSERT_TRUE(WaitUntil([&] { return Running(Id(arn, 0)); }));
  clock_.Advance(std::chrono::seconds(300));
  ASSERT_TRUE(WaitUntil([&] { return Execs() == 1; }));
  EXPECT_EQ(Str(Describe(arn), "lastStatus"), "ACTIVATING");
  EXPECT_FALSE(Exists(Id(arn, 1)));
  rt_.Exit(Id(arn, 0), 0);
  WaitStatus(arn, "RUNNING");
}

TEST_F(AgentTest, HealthyDependencyWithoutAHealthCheckFailsTheTask) {
  StartAgent();
  std::string arn = Run(R"([{"name":"db","image":"busybox:agenttest"},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"db","condition":"HEALTHY"}]}])");
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"),
            "CannotStartContainerError: dependency graph: failed to resolve container ordering dependency [db] for "
            "target [app] as dependency has no health check.");
}

// Holds each exec until the test releases it, so a test can look at the task while check n is
// in flight (n-1 collected and reported, n not yet). Shared with the handler, which may outlive
// the test body; everything is released when the gate goes.
struct ExecGate {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    size_t calls = 0;
    size_t released = 0;
    bool pass = false;
  };
  std::shared_ptr<State> state = std::make_shared<State>();

  runtime::FakeRuntime::ExecHandler Handler() {
    return [st = state](const ContainerId&, const std::vector<std::string>&) -> StatusOr<ExecResult> {
      std::unique_lock lock(st->mu);
      const size_t me = ++st->calls;
      st->cv.wait(lock, [&] { return st->released >= me; });
      ExecResult r;
      r.exit_code = st->pass ? 0 : 1;
      return r;
    };
  }
  void Release(size_t n, std::optional<bool> pass = std::nullopt) {
    std::lock_guard lock(state->mu);
    state->released = std::max(state->released, n);
    if (pass) state->pass = *pass;
    state->cv.notify_all();
  }
  ~ExecGate() { Release(SIZE_MAX); }
};

TEST_F(AgentTest, HealthCheckCountsFailuresAfterTheStartPeriodAndAStandaloneTaskKeepsRunning) {
  ExecGate gate;
  rt_.SetExecHandler(gate.Handler());
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest",
        "healthCheck":{"command":["CMD","/bin/check","--quick"],"interval":5,"retries":2,"startPeriod":12}},
      {"name":"side","image":"busybox:agenttest","essential":false,
        "healthCheck":{"command":["CMD","true"],"interval":300}}])");
  json::object t = WaitStatus(arn, "RUNNING");
  EXPECT_EQ(Str(t, "healthStatus"), "UNKNOWN");
  // Inside the start period (12 s) a check comes every second (the start interval) and its
  // failure does not count: checks 1..12 at 1..12 s... the one at 12 s is past it and counts once.
  for (size_t n = 1; n <= 12; ++n) {
    clock_.Advance(std::chrono::seconds(1));
    // Check n started (it waits at the gate): n-1 is collected and reported.
    ASSERT_TRUE(WaitUntil([&] { return Execs() == n; })) << "check " << n;
    t = Describe(arn);
    EXPECT_EQ(Str(Container(t, "app"), "healthStatus"), "UNKNOWN") << "after check " << n - 1;
    gate.Release(n);
  }
  EXPECT_EQ(rt_.execs()[0].second, (std::vector<std::string>{"/bin/check", "--quick"}));
  // Past the start period, the interval: nothing at 16 s, the next check at 17 s — the second
  // counted failure, UNHEALTHY, and the task with it; a task run on its own keeps running (no
  // service replaces it).
  clock_.Advance(std::chrono::seconds(4));
  EXPECT_FALSE(WaitUntil([&] { return Execs() == 13; }, std::chrono::milliseconds(300)));
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(WaitUntil([&] { return Execs() == 13; }));
  gate.Release(13);
  t = WaitTask(arn, [](const json::object& x) { return Str(x, "healthStatus") == "UNHEALTHY"; });
  EXPECT_EQ(Str(Container(t, "app"), "healthStatus"), "UNHEALTHY");
  EXPECT_EQ(Str(t, "lastStatus"), "RUNNING");
  // The non-essential container's own health does not decide the task's.
  EXPECT_EQ(Str(Container(t, "side"), "healthStatus"), "UNKNOWN");
  gate.Release(SIZE_MAX, /*pass=*/true);
  clock_.Advance(std::chrono::seconds(5));  // check 14 (22 s) passes
  t = WaitTask(arn, [](const json::object& x) { return Str(x, "healthStatus") == "HEALTHY"; });
  EXPECT_EQ(Str(Container(t, "app"), "healthStatus"), "HEALTHY");
}

// A container that passes inside its start period is HEALTHY after the first start interval
// (1 s), not its interval, and from then on is checked every interval.
TEST_F(AgentTest, AContainerPassingInItsStartPeriodIsHealthyWithinASecond) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest",
        "healthCheck":{"command":["CMD","true"],"interval":30,"startPeriod":300}}])");
  WaitStatus(arn, "RUNNING");
  clock_.Advance(std::chrono::seconds(1));
  json::object t = WaitTask(arn, [](const json::object& x) { return Str(x, "healthStatus") == "HEALTHY"; });
  EXPECT_EQ(Str(Container(t, "app"), "healthStatus"), "HEALTHY");
  const size_t after_pass = Execs();
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_FALSE(WaitUntil([&] { return Execs() > after_pass + 1; }, std::chrono::milliseconds(300)))
      << "healthy: at most the one check already due, then every 30 s";
}

TEST_F(AgentTest, RestartPolicyRestartsInPlaceAfterTheAttemptPeriod) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest",
        "restartPolicy":{"enabled":true,"ignoredExitCodes":[7],"restartAttemptPeriod":60}}])");
  WaitStatus(arn, "RUNNING");
  const ContainerId id = Id(arn, 0);
  const int first_pid = rt_.State(id)->pid;
  clock_.Advance(std::chrono::seconds(60));
  rt_.Exit(id, 1);
  // Restarted under the same id (a new process), and the essential container's exit does not
  // stop the task.
  ASSERT_TRUE(WaitUntil([&] {
    auto st = rt_.State(id);
    return st.ok() && st->status == ContainerStatus::kRunning && st->pid != first_pid;
  }));
  json::object t = Describe(arn);
  EXPECT_EQ(Str(t, "lastStatus"), "RUNNING");
  EXPECT_EQ(Str(Container(t, "app"), "lastStatus"), "RUNNING");
  // 59 s after that restart is too soon: the next exit is final.
  clock_.Advance(std::chrono::seconds(59));
  rt_.Exit(id, 2);
  t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 2);
}

TEST_F(AgentTest, RestartPolicyIgnoresListedExitCodesAndEarlyExits) {
  StartAgent();
  const std::string def = R"([{"name":"app","image":"busybox:agenttest",
        "restartPolicy":{"enabled":true,"ignoredExitCodes":[7]}}])";
  std::string ignored = Run(def);
  std::string early = Run(def);
  WaitStatus(ignored, "RUNNING");
  WaitStatus(early, "RUNNING");
  rt_.Exit(Id(early, 0), 1);  // ran less than the default 300 s
  json::object t = WaitStatus(early, "STOPPED");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 1);
  clock_.Advance(std::chrono::seconds(300));
  rt_.Exit(Id(ignored, 0), 7);
  t = WaitStatus(ignored, "STOPPED");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 7);
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
}

TEST_F(AgentTest, StopTimeoutSendsSigkillOnlyAfterTheContainersStopTimeout) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest","stopTimeout":10}])");
  WaitStatus(arn, "RUNNING");
  const ContainerId id = Id(arn, 0);
  rt_.SetIgnoresSigterm(id, true);
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  auto sent = [&](int sig) {
    for (const auto& [cid, s] : rt_.signals())
      if (cid == id && s == sig) return true;
    return false;
  };
  ASSERT_TRUE(WaitUntil([&] { return sent(SIGTERM); }));
  EXPECT_FALSE(sent(SIGKILL));  // the clock has not moved: no stopTimeout has passed
  clock_.Advance(std::chrono::seconds(10));
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_TRUE(sent(SIGKILL));
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 137);
}

// Drain before stop (docs/contracts/task.md): a stopped task an edge holds stays DEACTIVATING —
// its containers untouched — until the hold is released; only then STOPPING and SIGTERM.
TEST_F(AgentTest, SigtermIsSentOnlyAfterTheEdgesHoldIsReleased) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  const ecs::drain::EdgeId edge("edge-1");
  ASSERT_TRUE(drain_.Put(kScope, edge, {{arn, std::chrono::seconds(30)}}, std::chrono::seconds(15), clock_.Now()).ok());
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  ASSERT_TRUE(WaitUntil([&] { return drain_.remembered() == 1; }));  // DEACTIVATING reported, and it asked
  EXPECT_EQ(Str(Describe(arn), "lastStatus"), "DEACTIVATING");
  EXPECT_TRUE(rt_.signals().empty());
  EXPECT_TRUE(Running(Id(arn, 0)));
  ASSERT_TRUE(drain_.Release(kScope, edge, arn).ok());
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{Id(arn, 0), SIGTERM}}));
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
}

// A DEACTIVATING report the control plane fails (here: unreachable) does not leave the task's
// containers up until the agent's next pass (an hour away here): the stop goes on at once, without
// waiting on the edge's hold (the drain wait needs the control plane that just failed), and the
// reports after it bring the task to STOPPED.
TEST_F(AgentTest, AFailedDeactivatingReportStillStopsTheContainersAtOnce) {
  poll_interval_ = std::chrono::hours(1);
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  HoldForDrain(arn, std::chrono::seconds(30));
  std::atomic<int> failed{0};
  control_.SetReportFault([&](const ecs::task::TaskStateChange& c) {
    if (c.last_status != "DEACTIVATING") return OkStatus();
    ++failed;
    return Unavailable("the control plane is unreachable");
  });
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  ASSERT_TRUE(WaitUntil([&] { return !Exists(Id(arn, 0)); })) << "the container is still up";
  json::object t = WaitStatus(arn, "STOPPED");
  control_.SetReportFault(nullptr);
  EXPECT_EQ(failed.load(), 1);
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{Id(arn, 0), SIGTERM}}));
  EXPECT_EQ(drain_.remembered(), 0u) << "it did not ask to drain";
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
}

// The agent's own stop (an essential container exited) whose DEACTIVATING report is refused: the
// other containers are stopped at once all the same, and the stop code and reason the refused
// report carried reach the task with STOPPING.
TEST_F(AgentTest, AStopCodeARefusedDeactivatingReportCarriedArrivesWithStopping) {
  poll_interval_ = std::chrono::hours(1);
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"},)"
                        R"({"name":"side","image":"busybox:agenttest","essential":false}])");
  WaitStatus(arn, "RUNNING");
  control_.SetReportFault([&](const ecs::task::TaskStateChange& c) {
    return c.last_status == "DEACTIVATING" ? Internal("the control plane refused the report") : OkStatus();
  });
  rt_.Exit(Id(arn, 0), 3);
  ASSERT_TRUE(WaitUntil([&] { return !Running(Id(arn, 1)); })) << "the non-essential container is still up";
  json::object t = WaitStatus(arn, "STOPPED");
  control_.SetReportFault(nullptr);
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
  EXPECT_EQ(Str(t, "stoppedReason"), "Essential container in task exited");
}

// Nothing to drain once the essential container exited: the stop does not wait on the hold.
TEST_F(AgentTest, ATaskWhoseEssentialContainerExitedIsNotHeldForDrain) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  HoldForDrain(arn, std::chrono::seconds(3600));
  rt_.Exit(Id(arn, 0), 3);
  json::object t = WaitStatus(arn, "STOPPED");  // the clock never moved, the hold is live
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
  EXPECT_EQ(drain_.remembered(), 0u);  // it never asked
}

// An agent stopped mid-drain leaves at once (it does not sit out its ask); the next agent
// re-adopts the DEACTIVATING task and waits on — bounded from the first ask, not its own.
TEST_F(AgentTest, AnAgentStoppedMidDrainLeavesPromptlyAndTheNextOneKeepsTheFirstAsksBound) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  HoldForDrain(arn, std::chrono::seconds(30));
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  ASSERT_TRUE(WaitUntil([&] { return drain_.remembered() == 1; }));
  const auto stopping = std::chrono::steady_clock::now();
  RestartAgent();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(10));  // an ask lasts 20 s
  EXPECT_EQ(Str(Describe(arn), "lastStatus"), "DEACTIVATING");
  EXPECT_TRUE(Running(Id(arn, 0)));
  EXPECT_TRUE(rt_.signals().empty());

  clock_.Advance(std::chrono::seconds(20));
  StartAgent();  // asks again at first ask + 20 s: the bound stays first ask + 30 s
  clock_.Advance(std::chrono::seconds(10));
  drain_.Wake();  // the fake clock jumped
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{Id(arn, 0), SIGTERM}}));
}

TEST_F(AgentTest, ShutdownIsTheReverseOfTheDependencyOrder) {
  StartAgent();
  std::string arn = Run(R"([{"name":"db","image":"busybox:agenttest"},
      {"name":"app","image":"busybox:agenttest","stopTimeout":10,
        "dependsOn":[{"containerName":"db","condition":"START"}]}])");
  WaitStatus(arn, "RUNNING");
  const ContainerId db = Id(arn, 0), app = Id(arn, 1);
  rt_.SetIgnoresSigterm(app, true);
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  ASSERT_TRUE(WaitUntil([&] { return !rt_.signals().empty(); }));
  // db waits for its dependant: only app got SIGTERM, and nothing moves until app's stopTimeout.
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{app, SIGTERM}}));
  EXPECT_TRUE(Running(db));
  clock_.Advance(std::chrono::seconds(10));
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{app, SIGTERM}, {app, SIGKILL}, {db, SIGTERM}}));
  EXPECT_EQ(Container(t, "app").at("exitCode"), 137);
  EXPECT_EQ(Container(t, "db").at("exitCode"), 0);
}

TEST_F(AgentTest, OomKillAndNonEssentialExitCodes) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"},
      {"name":"side","image":"busybox:agenttest","essential":false}])");
  WaitStatus(arn, "RUNNING");
  rt_.Exit(Id(arn, 1), 128 + SIGINT);
  json::object t = WaitTask(arn, [](const json::object& x) { return Str(Container(x, "side"), "lastStatus") == "STOPPED"; });
  EXPECT_EQ(Container(t, "side").at("exitCode"), 130);
  EXPECT_EQ(Str(t, "lastStatus"), "RUNNING");
  rt_.Exit(Id(arn, 0), 137, /*oom_killed=*/true);
  t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 137);
  EXPECT_EQ(Str(Container(t, "app"), "reason"), "OutOfMemoryError: Container killed due to memory usage");
  EXPECT_FALSE(Exists(Id(arn, 0)));
  EXPECT_FALSE(Exists(Id(arn, 1)));
}

TEST_F(AgentTest, AgentRestartReadoptsARunningTaskWithoutRestartingIt) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"},
      {"name":"lost","image":"busybox:agenttest","essential":false},
      {"name":"done","image":"busybox:agenttest","essential":false}])");
  WaitStatus(arn, "RUNNING");
  const int app_pid = rt_.State(Id(arn, 0))->pid;
  RestartAgent();
  rt_.ExitUnknown(Id(arn, 1));  // died with no one to see its exit code
  rt_.Exit(Id(arn, 2), 4);
  StartAgent();
  json::object t = WaitTask(arn, [](const json::object& x) {
    return Str(Container(x, "lost"), "lastStatus") == "STOPPED" && Str(Container(x, "done"), "lastStatus") == "STOPPED";
  });
  EXPECT_EQ(Str(Container(t, "lost"), "reason"),
            "the container's exit code is unknown: it was started before the agent restarted");
  EXPECT_FALSE(Container(t, "lost").contains("exitCode"));
  EXPECT_EQ(Container(t, "done").at("exitCode"), 4);
  EXPECT_EQ(Str(t, "lastStatus"), "RUNNING");
  EXPECT_EQ(rt_.State(Id(arn, 0))->pid, app_pid);  // the same process: not restarted
  // Watched again: stopping works as for any task.
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 0);  // FakeRuntime: SIGTERM ends it with 0
  EXPECT_FALSE(Exists(Id(arn, 0)));
}

TEST_F(AgentTest, AgentRestartStopsATaskWhoseEssentialContainerDiedMeanwhile) {
  StartAgent();
  // Its restart policy no longer applies once re-adopted (the task's files are not rebuilt).
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest",
        "restartPolicy":{"enabled":true,"restartAttemptPeriod":60}}])");
  WaitStatus(arn, "RUNNING");
  RestartAgent();
  clock_.Advance(std::chrono::seconds(120));
  rt_.Exit(Id(arn, 0), 3);
  StartAgent();
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "EssentialContainerExited");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 3);
  EXPECT_FALSE(Exists(Id(arn, 0)));
}

// A task caught mid-launch (ACTIVATING: its init container running, the app waiting on it) is
// launched again by the next agent — what the interrupted launch made stopped and removed, the
// launch started over — and reaches RUNNING under its ARN and address, with nothing reported as
// a failure. An agent stopped again mid-relaunch leaves the same to the one after it.
TEST_F(AgentTest, AgentRestartLaunchesATaskCaughtMidLaunchAgain) {
  StartAgent();
  const std::string arn = Run(R"([{"name":"init","image":"busybox:agenttest","essential":false},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"init","condition":"SUCCESS"}]}])");
  auto address = [&](const json::object& t) {
    return json::serialize(Container(t, "app").at("networkInterfaces"));
  };
  json::object before =
      WaitTask(arn, [](const json::object& x) { return Str(Container(x, "init"), "lastStatus") == "RUNNING"; });
  ASSERT_EQ(Str(before, "lastStatus"), "ACTIVATING");
  const ContainerId init = Id(arn, 0);
  auto pid = [&] {
    auto st = rt_.State(init);
    return st.ok() && st->status == ContainerStatus::kRunning ? st->pid : 0;
  };
  const int first = pid();
  ASSERT_NE(first, 0);

  RestartAgent();
  EXPECT_EQ(pid(), first);  // a stopping agent leaves it as it is
  StartAgent();
  // The earlier launch's init is stopped (SIGTERM, as a teardown does) and a new one started.
  // One reading per poll: two could straddle the teardown (the old pid, then 0) and pass early.
  auto running_other_than = [&](int old) {
    const int now = pid();
    return now != 0 && now != old;
  };
  ASSERT_TRUE(WaitUntil([&] { return running_other_than(first); }));
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{init, SIGTERM}}));
  EXPECT_FALSE(Exists(Id(arn, 1)));
  const int second = pid();

  // Stopped again mid-relaunch: the next agent starts over once more.
  RestartAgent();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return running_other_than(second); }));

  // The init the live agent waits on exits successfully. Only a running init is ended: the fake
  // would also stop one created but not yet started, which no real process can do.
  json::object t = WaitTask(arn, [&](const json::object& x) {
    if (pid() != 0) rt_.Exit(init, 0);
    return Str(x, "lastStatus") == "RUNNING";
  });
  EXPECT_EQ(Str(t, "taskArn"), arn);
  EXPECT_EQ(Str(t, "desiredStatus"), "RUNNING");
  EXPECT_FALSE(t.contains("stopCode")) << json::serialize(t);
  EXPECT_FALSE(t.contains("stoppedReason")) << json::serialize(t);
  EXPECT_FALSE(t.contains("stoppingAt")) << json::serialize(t);
  EXPECT_EQ(address(t), address(before));
  EXPECT_TRUE(Running(Id(arn, 1)));
}

// Stopped while no agent ran: the task caught mid-launch is torn down with StopTask's code, not
// launched again.
TEST_F(AgentTest, AgentRestartStopsATaskCaughtMidLaunchThatWasStoppedMeanwhile) {
  StartAgent();
  const std::string arn = Run(R"([{"name":"init","image":"busybox:agenttest","essential":false},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"init","condition":"SUCCESS"}]}])");
  WaitTask(arn, [](const json::object& x) { return Str(Container(x, "init"), "lastStatus") == "RUNNING"; });
  RestartAgent();
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::string("bye"), kCaller, clock_.Now()).ok());
  StartAgent();
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
  EXPECT_EQ(Str(t, "stoppedReason"), "bye");
  EXPECT_FALSE(Exists(Id(arn, 0)));
  EXPECT_FALSE(Exists(Id(arn, 1)));
}

// The relaunch's own failure stops the task, with that failure's reason.
TEST_F(AgentTest, AgentRestartRelaunchThatFailsStopsTheTaskWithItsReason) {
  StartAgent();
  const std::string arn = Run(R"([{"name":"init","image":"busybox:agenttest","essential":false},
      {"name":"app","image":"busybox:agenttest","dependsOn":[{"containerName":"init","condition":"SUCCESS"}]}])");
  WaitTask(arn, [](const json::object& x) { return Str(Container(x, "init"), "lastStatus") == "RUNNING"; });
  RestartAgent();
  rt_.FailNext("Create", Internal("no room"));  // the relaunched init's
  StartAgent();
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"), "CannotStartContainerError: no room");
  EXPECT_FALSE(Exists(Id(arn, 0)));
}

TEST_F(AgentTest, AgentRestartFinishesATaskCaughtMidTeardown) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest","stopTimeout":10}])");
  WaitStatus(arn, "RUNNING");
  const ContainerId id = Id(arn, 0);
  rt_.SetIgnoresSigterm(id, true);
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::string("bye"), kCaller, clock_.Now()).ok());
  WaitStatus(arn, "STOPPING");
  ASSERT_TRUE(WaitUntil([&] { return rt_.signals().size() == 1; }));  // SIGTERM sent
  RestartAgent();  // the SIGKILL at stopTimeout was never sent
  EXPECT_TRUE(Running(id));
  StartAgent();
  // The new agent stops it afresh: SIGTERM again, SIGKILL stopTimeout after that.
  ASSERT_TRUE(WaitUntil([&] { return rt_.signals().size() == 2; }));
  EXPECT_EQ(rt_.signals(), (std::vector<std::pair<ContainerId, int>>{{id, SIGTERM}, {id, SIGTERM}}));
  clock_.Advance(std::chrono::seconds(10));
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
  EXPECT_EQ(Str(t, "stoppedReason"), "bye");
  EXPECT_EQ(Container(t, "app").at("exitCode"), 137);
  EXPECT_FALSE(Exists(id));
}

}  // namespace
}  // namespace paddock::agent

namespace paddock::agent {
namespace {

// awsvpc: every portMapping is reported with the RUNNING change, at the task's address with
// hostPort = containerPort (docs/contracts/task.md, Networking).
TEST_F(AgentTest, AwsvpcContainersReportNetworkBindingsAtTheTaskAddress) {
  StartAgent();
  const std::string arn = Run(R"([{"name":"web","image":"busybox:agenttest","portMappings":[
      {"containerPort":8080},{"containerPort":53,"protocol":"udp"}]},
      {"name":"side","image":"busybox:agenttest"}])");
  json::object task = WaitStatus(arn, "RUNNING");
  json::object web = Container(task, "web");
  const std::string ip(web.at("networkInterfaces").as_array()[0].as_object().at("privateIpv4Address").as_string());
  ASSERT_FALSE(ip.empty());
  EXPECT_EQ(json::serialize(web.at("networkBindings")),
            json::serialize(json::array{
                json::object{{"bindIP", ip}, {"containerPort", 8080}, {"hostPort", 8080}, {"protocol", "tcp"}},
                json::object{{"bindIP", ip}, {"containerPort", 53}, {"hostPort", 53}, {"protocol", "udp"}}}));
  EXPECT_TRUE(Container(task, "side").at("networkBindings").as_array().empty());
}

// The metadata endpoint serves every container of the task: each gets its URI in its
// environment, and ${URI}/task renders the task as DescribeTasks shows it now; once the task is
// torn down the URI answers 404.
TEST_F(AgentTest, MetadataEndpointServesEveryContainerTheTaskAsDescribeTasksShowsIt) {
  metadata::MetadataService& service = StartAgentWithMetadata();
  const std::string arn = Run(R"([{"name":"web","image":"busybox:agenttest"},
                                  {"name":"side","image":"busybox:agenttest","essential":false}])");
  WaitStatus(arn, "RUNNING");
  http::Client client("127.0.0.1", service.port(), std::chrono::seconds(10));
  auto get = [&](const std::string& uri) -> http::Response {
    http::Request req;
    req.method = "GET";
    req.target = uri.substr(uri.find('/', std::string_view("http://").size()));
    auto r = client.Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : http::Response{};
  };
  std::string uri;
  for (int i : {0, 1}) {
    auto spec = rt_.SpecOf(Id(arn, i));
    ASSERT_TRUE(spec.has_value());
    std::string mine;
    for (const auto& e : spec->env)
      if (e.starts_with("ECS_CONTAINER_METADATA_URI_V4=")) mine = e.substr(e.find('=') + 1);
    ASSERT_FALSE(mine.empty()) << "container " << i << " has no ECS_CONTAINER_METADATA_URI_V4";
    if (i == 0) uri = mine;
    EXPECT_EQ(get(mine).status, 200);
  }
  http::Response r = get(uri + "/task");
  ASSERT_EQ(r.status, 200) << r.body;
  json::object doc = json::parse(r.body).as_object();
  EXPECT_EQ(doc.at("TaskARN").as_string(), arn);
  EXPECT_EQ(doc.at("Cluster").as_string(), Str(Describe(arn), "clusterArn"));
  EXPECT_EQ(doc.at("KnownStatus").as_string(), "RUNNING");
  std::set<std::string> names;
  for (const auto& c : doc.at("Containers").as_array()) {
    names.insert(std::string(c.as_object().at("Name").as_string()));
    EXPECT_TRUE(std::string(c.as_object().at("DockerId").as_string()).starts_with("pdk-t1-"));
  }
  EXPECT_EQ(names, (std::set<std::string>{"web", "side"}));

  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  WaitStatus(arn, "STOPPED");
  EXPECT_EQ(get(uri + "/task").status, 404);
}

// ${URI}/taskWithTags adds the task's tags as DescribeTasks shows them (its own and propagated
// ones); /task has none. Each container lists the task volumes it mounts, and the task document
// carries the node's clock (adjtimex).
TEST_F(AgentTest, MetadataTaskWithTagsShowsTheTasksTagsAndContainersTheirVolumes) {
  tasks_dir_ = (fs::path(store_.dir()) / "tasks").string();
  metadata::MetadataService& service = StartAgentWithMetadata();
  auto def = Parse(R"({"family":"tagged","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",
      "memory":"512","volumes":[{"name":"data"}],"tags":[{"key":"tier","value":"web"}],
      "containerDefinitions":[{"name":"web","image":"busybox:agenttest",
                               "mountPoints":[{"sourceVolume":"data","containerPath":"/data"}]},
                              {"name":"side","image":"busybox:agenttest","essential":false}]})");
  ASSERT_TRUE(tds_.Register(kScope, kCaller, std::move(def), clock_.Now()).ok());
  ecs::task::RunRequest r;
  r.task_definition = "tagged";
  r.launch_type = "FARGATE";
  r.network_configuration = json::object{
      {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
  r.tags = {{"team", "blue"}};
  r.propagate_tags = "TASK_DEFINITION";
  auto res = tasks_.Run(kScope, kCaller, r, clock_.Now());
  ASSERT_TRUE(res.ok() && !res->tasks.empty()) << res.status().ToString();
  const std::string arn = Str(Parse(res->tasks[0]), "taskArn");
  WaitStatus(arn, "RUNNING");
  auto spec = rt_.SpecOf(Id(arn, 0));
  ASSERT_TRUE(spec.has_value());
  std::string uri;
  for (const auto& e : spec->env)
    if (e.starts_with("ECS_CONTAINER_METADATA_URI_V4=")) uri = e.substr(e.find('=') + 1);
  ASSERT_FALSE(uri.empty());
  http::Client client("127.0.0.1", service.port(), std::chrono::seconds(10));
  auto get = [&](const std::string& path) -> json::object {
    http::Request req;
    req.method = "GET";
    req.target = uri.substr(uri.find('/', std::string_view("http://").size())) + path;
    auto got = client.Send(req);
    EXPECT_TRUE(got.ok() && got->status == 200) << (got.ok() ? got->body : got.status().ToString());
    return got.ok() ? json::parse(got->body).as_object() : json::object();
  };
  json::object with_tags = get("/taskWithTags");
  EXPECT_EQ(with_tags["TaskTags"], json::parse(R"({"team":"blue","tier":"web"})"));
  json::object task = get("/task");
  EXPECT_FALSE(task.contains("TaskTags"));
  EXPECT_FALSE(task.contains("VPCID"));  // a Fargate task (and no task network here)
  EXPECT_TRUE(task["ClockDrift"].as_object().contains("ClockSynchronizationStatus"));
  const std::string task_id = arn.substr(arn.rfind('/') + 1);
  EXPECT_EQ(get("")["Volumes"],
            (json::array{json::object{{"Source", (fs::path(tasks_dir_) / task_id / "volumes" / "data").string()},
                                      {"Destination", "/data"}}}));
  for (const auto& c : task["Containers"].as_array()) {
    if (c.as_object().at("Name") == "side") {
      EXPECT_FALSE(c.as_object().contains("Volumes"));
    }
  }
}

// A task with a task role: every container gets the task's one credentials URI (here the full
// form with a token: the test's listener is not on port 80), which answers through the agent's
// Control (TasksControl mints none: 503) and is gone once the task stops; a task without a role
// gets no variable.
TEST_F(AgentTest, ATaskRoleGivesEveryContainerTheTasksCredentialsUri) {
  metadata::MetadataService& service = StartAgentWithMetadata();
  const std::string arn = Run(R"([{"name":"web","image":"busybox:agenttest"},
                                  {"name":"side","image":"busybox:agenttest","essential":false}])",
                              R"(,"taskRoleArn":"arn:aws:iam::123456789012:role/app")");
  const std::string plain = Run(R"([{"name":"web","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  WaitStatus(plain, "RUNNING");
  auto env_of = [&](const ContainerId& id) {
    std::map<std::string, std::string> env;
    auto spec = rt_.SpecOf(id);
    EXPECT_TRUE(spec.has_value());
    if (spec)
      for (const auto& e : spec->env)
        if (e.starts_with("AWS_CONTAINER_")) env[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
    return env;
  };
  auto web = env_of(Id(arn, 0));
  EXPECT_EQ(env_of(Id(arn, 1)), web);  // one id per task
  ASSERT_EQ(web.size(), 2u);
  const std::string uri = web["AWS_CONTAINER_CREDENTIALS_FULL_URI"];
  EXPECT_EQ(uri.rfind(fmt::format("http://127.0.0.1:{}/v2/credentials/", service.port()), 0), 0u) << uri;
  EXPECT_EQ(web["AWS_CONTAINER_AUTHORIZATION_TOKEN"].size(), 32u);
  EXPECT_TRUE(env_of(Id(plain, 0)).empty());

  http::Client client("127.0.0.1", service.port(), std::chrono::seconds(10));
  auto get = [&]() {
    http::Request req;
    req.method = "GET";
    req.target = uri.substr(uri.find('/', std::string_view("http://").size()));
    req.headers.push_back({"Authorization", web["AWS_CONTAINER_AUTHORIZATION_TOKEN"]});
    auto r = client.Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(get(), 503);
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  WaitStatus(arn, "STOPPED");
  EXPECT_EQ(get(), 404);
}

// Secrets (Control::PrepareExecutionResources): fetched by the control plane from its own record
// of the task, put into the named containers' environment (replacing a variable of the same
// name), never asked for a task without secrets; a failure the control plane answers stops the
// task with its reason; a control plane that fetches nothing refuses them.
TEST_F(AgentTest, SecretsTheControlPlaneFetchesReachOnlyTheirContainersEnvironment) {
  std::vector<std::string> asked;
  control_.SetExecutionResourcesProvider([&](const ecs::task::LaunchSpec& record) -> StatusOr<protocol::ExecutionResources> {
    asked.push_back(record.task_arn);
    EXPECT_NE(record.definition.find("valueFrom"), std::string::npos);  // the pinned revision
    protocol::ExecutionResources r;
    r.containers.push_back({"web", {{"DB_PASSWORD", "hunter2"}, {"MODE", "secret"}}, std::nullopt});
    return r;
  });
  StartAgent();
  const std::string arn = Run(R"([{"name":"web","image":"busybox:agenttest","environment":[{"name":"MODE","value":"plain"}],
                                   "secrets":[{"name":"DB_PASSWORD","valueFrom":"/app/db"},{"name":"MODE","valueFrom":"/app/mode"}]},
                                  {"name":"side","image":"busybox:agenttest","essential":false}])",
                              R"(,"executionRoleArn":"arn:aws:iam::123456789012:role/exec")");
  const std::string plain = Run(R"([{"name":"web","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  WaitStatus(plain, "RUNNING");
  EXPECT_EQ(asked, std::vector<std::string>{arn});  // once, and not for the task without secrets
  auto env_of = [&](const ContainerId& id) {
    std::vector<std::string> env;
    auto spec = rt_.SpecOf(id);
    EXPECT_TRUE(spec.has_value());
    if (spec)
      for (const auto& e : spec->env)
        if (e.starts_with("DB_PASSWORD=") || e.starts_with("MODE=")) env.push_back(e);
    return env;
  };
  EXPECT_EQ(env_of(Id(arn, 0)), (std::vector<std::string>{"DB_PASSWORD=hunter2", "MODE=secret"}));
  EXPECT_TRUE(env_of(Id(arn, 1)).empty());
  // Nowhere in what DescribeTasks shows.
  EXPECT_EQ(json::serialize(Describe(arn)).find("hunter2"), std::string::npos);
}

TEST_F(AgentTest, ASecretTheControlPlaneCannotFetchStopsTheTaskWithItsReason) {
  const std::string reason =
      "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: "
      "unable to retrieve secrets from ssm: service call has been retried 1 time(s): invalid ssm parameters: /nope";
  control_.SetExecutionResourcesProvider([&](const ecs::task::LaunchSpec&) -> StatusOr<protocol::ExecutionResources> {
    protocol::ExecutionResources r;
    r.failure_reason = reason;
    return r;
  });
  StartAgent();
  const std::string arn = Run(R"([{"name":"web","image":"busybox:agenttest","secrets":[{"name":"X","valueFrom":"/nope"}]}])",
                              R"(,"executionRoleArn":"arn:aws:iam::123456789012:role/exec")");
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"), reason);
  EXPECT_FALSE(Exists(Id(arn, 0)));
}

// Registry credentials (repositoryCredentials) come in the same answer, before any pull, and go
// to that container's pull only.
TEST_F(AgentTest, RegistryCredentialsTheControlPlaneFetchesGoToTheirContainersPullOnly) {
  // Records what each pull was given and refuses it. Static: it outlives the fixture's agent.
  static struct RecordingPuller final : images::Puller {
    Status Pull(const images::Reference& ref, const std::string&, images::PullContext& context) override {
      std::lock_guard lock(mu);
      seen[ref.String()] = context.credentials != nullptr
                               ? context.credentials->username + ":" + context.credentials->password
                               : "(none)";
      return PermissionDenied("pull access denied, repository does not exist or may require authorization: "
                              "authentication required");
    }
    std::mutex mu;
    std::map<std::string, std::string> seen;
  } puller;
  images_.SetPuller(&puller);
  control_.SetExecutionResourcesProvider([&](const ecs::task::LaunchSpec&) -> StatusOr<protocol::ExecutionResources> {
    protocol::ExecutionResources r;
    r.containers.push_back({"web", {}, protocol::RegistryAuth{"alice", "pw"}});
    return r;
  });
  StartAgent();
  const std::string arn = Run(R"([{"name":"web","image":"localhost:5000/private:1",
                                   "repositoryCredentials":{"credentialsParameter":"registry/alice"}}])",
                              R"(,"executionRoleArn":"arn:aws:iam::123456789012:role/exec")");
  const std::string other = Run(R"([{"name":"web","image":"localhost:5000/private:2"}])");
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason").rfind("CannotPullContainerError: pull access denied", 0), 0u) << Str(t, "stoppedReason");
  WaitStatus(other, "STOPPED");
  std::lock_guard lock(puller.mu);
  EXPECT_EQ(puller.seen["localhost:5000/private:1"], "alice:pw");
  EXPECT_EQ(puller.seen["localhost:5000/private:2"], "(none)");
  EXPECT_EQ(json::serialize(Describe(arn)).find("alice"), std::string::npos);
}

TEST_F(AgentTest, SecretsAreRefusedWhereTheControlPlaneFetchesNone) {
  StartAgent();  // no provider: FailedPrecondition
  const std::string arn = Run(R"([{"name":"web","image":"busybox:agenttest","secrets":[{"name":"X","valueFrom":"/app/x"}]}])",
                              R"(,"executionRoleArn":"arn:aws:iam::123456789012:role/exec")");
  json::object t = WaitStatus(arn, "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"),
            "ResourceInitializationError: container 'web': unable to pull secrets: secrets from SSM Parameter Store or "
            "Secrets Manager (valueFrom '/app/x') are not supported by this node's control plane");
}

}  // namespace
}  // namespace paddock::agent

// agent.h, "Reconciling": what the control plane no longer lists, or lists as STOPPED, does not
// keep running, and leftovers labelled as the agent's are swept.
namespace paddock::agent {
namespace {

TEST_F(AgentTest, ATaskNoLongerAssignedIsTornDownWithoutAReport) {
  StartAgent();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  // Its account's records are gone (a forced delete-account): the agent finds it unassigned.
  ASSERT_TRUE(tasks_.ReapAccount(kScope.account, ecs::task::Tasks::ReapMode::kForce).ok());
  EXPECT_TRUE(WaitUntil([&] { return !Exists(Id(arn, 0)); }));
}

TEST_F(AgentTest, ATaskRecordedStoppedBehindItsBackIsTornDownBeforeItsAddressIsReleased) {
  StartAgent();
  const vpc::Subnet subnet = vpc::DefaultVpcFor(kScope).subnets[0];
  auto available = [&] { return vpc::testing::FreeAddresses(*store_, kScope, subnet); };
  const uint32_t before = available();
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  ASSERT_EQ(available(), before - 1);
  const std::string key = ecs::ScopeKey(kScope).Str("default").Str(arn.substr(arn.rfind('/') + 1)).Done();
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rec, txn.Get("tasks", key));
    json::object t = Parse(*rec);
    t["lastStatus"] = "STOPPED";
    return txn.Put("tasks", key, json::serialize(t));
  }).ok());
  // Never the address back while the container exists (read in that order: the agent deletes,
  // then reports).
  EXPECT_TRUE(WaitUntil([&] {
    const bool released = available() == before;
    const bool exists = Exists(Id(arn, 0));
    EXPECT_FALSE(released && exists) << "the address went back while the container ran";
    return released && !exists;
  }));
  EXPECT_TRUE(tasks_.Assignments(std::string(kAgentId))->empty());
}

TEST_F(AgentTest, LeftoverContainersLabelledAsTheAgentsAreSweptOthersAreNot) {
  auto leftover = [&](std::string id, std::string owner, std::string task) {
    runtime::ContainerSpec spec;
    spec.id = ContainerId(std::move(id));
    spec.rootfs_dir = "/";
    spec.args = {"/bin/sh"};
    spec.annotations = {{std::string(kOwnerAnnotation), std::move(owner)},
                        {std::string(kTaskAnnotation), std::move(task)}};
    EXPECT_TRUE(rt_.Create(spec).ok());
    EXPECT_TRUE(rt_.Start(spec.id).ok());
    return spec.id;
  };
  const std::string gone_task(32, 'a'), later_task(32, 'b'), other_task(32, 'c');
  const ContainerId gone = leftover("pdk-t1-" + gone_task + "-0", std::string(kAgentId), gone_task);
  const ContainerId others = leftover("pdk-t1-" + other_task + "-0", "arn:another-agent", other_task);
  owner_ = std::string(kAgentId);
  StartAgent();
  EXPECT_TRUE(WaitUntil([&] { return !Exists(gone); }));  // at start
  std::string arn = Run(R"([{"name":"app","image":"busybox:agenttest"}])");
  WaitStatus(arn, "RUNNING");
  const ContainerId later = leftover("pdk-t1-" + later_task + "-0", std::string(kAgentId), later_task);
  clock_.Advance(std::chrono::seconds(6));  // the next sweep is due
  EXPECT_TRUE(WaitUntil([&] { return !Exists(later); }));
  EXPECT_TRUE(Running(Id(arn, 0)));  // its own task's container stays
  EXPECT_TRUE(Running(others));      // another agent's is not its to remove
  EXPECT_EQ(rt_.SpecOf(Id(arn, 0))->annotations.at(std::string(kOwnerAnnotation)), kAgentId);
}

}  // namespace
}  // namespace paddock::agent
