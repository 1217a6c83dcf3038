// The stand-in agent of a host that cannot run containers, over a real Tasks on a temp-dir store:
// an unstarted task stops at once (TaskFailedToStart, with the reason), a task StopTask stopped
// keeps its code, and a task an earlier agent started is left for a capable agent.
#include "agent/no_runtime_agent.h"
#include "agent/inprocess/inprocess_control.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <thread>

#include "common/testing/fake_clock.h"
#include "ecs/cluster/clusters.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"

namespace paddock::agent {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";
constexpr std::string_view kAgentId = "fargate-local";
constexpr std::string_view kReason = "ResourceInitializationError: this node cannot run containers: crun: missing";

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }
std::string Str(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

class NoRuntimeAgentTest : public ::testing::Test {
 protected:
  NoRuntimeAgentTest() {
    EXPECT_TRUE(clusters_.Create(kScope, Parse(R"({"clusterName":"default"})")).ok());
    auto def = Parse(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",)"
                     R"("memory":"512","containerDefinitions":[{"name":"a","image":"busybox"},{"name":"b","image":"busybox"}]})");
    EXPECT_TRUE(tds_.Register(kScope, kCaller, std::move(def), clock_.Now()).ok());
  }
  ~NoRuntimeAgentTest() override { tasks_.SetChangeListener(nullptr); }

  std::string Run() {
    ecs::task::RunRequest r;
    r.task_definition = "web";
    r.launch_type = "FARGATE";
    r.network_configuration = json::object{
        {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
    auto res = tasks_.Run(kScope, kCaller, r, clock_.Now());
    EXPECT_TRUE(res.ok() && res->tasks.size() == 1) << res.status().ToString();
    return res.ok() && !res->tasks.empty() ? Str(Parse(res->tasks[0]), "taskArn") : std::string();
  }
  json::object Describe(const std::string& arn) {
    auto d = tasks_.Describe(kScope, std::nullopt, {arn}, false, kCaller);
    EXPECT_TRUE(d.ok() && d->tasks.size() == 1);
    return d.ok() && d->tasks.size() == 1 ? Parse(d->tasks[0]) : json::object();
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  ecs::taskdef::TaskDefinitions tds_{*store_};
  ecs::cluster::Clusters clusters_{*store_};
  ecs::task::Tasks tasks_{*store_, tds_, clusters_, std::string(kAgentId)};
  TasksControl control_{tasks_};
};

TEST_F(NoRuntimeAgentTest, AnUnstartedTaskStopsAsTaskFailedToStartWithTheReason) {
  NoRuntimeAgent stand_in(control_, std::string(kAgentId), std::string(kReason), clock_);
  const std::string arn = Run();
  EXPECT_EQ(stand_in.RefuseAssigned(), 1u);
  json::object t = Describe(arn);
  EXPECT_EQ(Str(t, "lastStatus"), "STOPPED");
  EXPECT_EQ(Str(t, "desiredStatus"), "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "TaskFailedToStart");
  EXPECT_EQ(Str(t, "stoppedReason"), kReason);
  EXPECT_FALSE(t.contains("startedAt"));  // it never ran: a service counts a failed launch
  for (const auto& c : t.at("containers").as_array()) EXPECT_EQ(Str(c.as_object(), "lastStatus"), "STOPPED");
  // Released: nothing is assigned any more, and a second pass has nothing to do.
  EXPECT_TRUE(tasks_.Assignments(kAgentId)->empty());
  EXPECT_EQ(stand_in.RefuseAssigned(), 0u);
}

TEST_F(NoRuntimeAgentTest, StopTaskBeforeTheStartKeepsItsCodeAndReason) {
  NoRuntimeAgent stand_in(control_, std::string(kAgentId), std::string(kReason), clock_);
  const std::string arn = Run();
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::string("not needed"), kCaller, clock_.Now()).ok());
  EXPECT_EQ(stand_in.RefuseAssigned(), 1u);
  json::object t = Describe(arn);
  EXPECT_EQ(Str(t, "lastStatus"), "STOPPED");
  EXPECT_EQ(Str(t, "stopCode"), "UserInitiated");
  EXPECT_EQ(Str(t, "stoppedReason"), "not needed");
}

TEST_F(NoRuntimeAgentTest, ATaskAnEarlierAgentStartedIsLeftAlone) {
  NoRuntimeAgent stand_in(control_, std::string(kAgentId), std::string(kReason), clock_);
  const std::string arn = Run();
  ecs::task::TaskStateChange running;
  running.last_status = "RUNNING";
  ASSERT_TRUE(tasks_.ReportState(kAgentId, arn, running, clock_.Now()).ok());
  EXPECT_EQ(stand_in.RefuseAssigned(), 0u);
  EXPECT_EQ(Str(Describe(arn), "lastStatus"), "RUNNING");
}

TEST_F(NoRuntimeAgentTest, TheLoopStopsATaskAsSoonAsItIsAssigned) {
  NoRuntimeAgent stand_in(control_, std::string(kAgentId), std::string(kReason), clock_,
                          std::chrono::hours(1));  // only the notification can wake it in time
  tasks_.SetChangeListener([&] { stand_in.Notify(); });
  ASSERT_TRUE(stand_in.Start().ok());
  const std::string arn = Run();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Str(Describe(arn), "lastStatus") != "STOPPED" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(Str(Describe(arn), "stopCode"), "TaskFailedToStart");
  tasks_.SetChangeListener(nullptr);
  stand_in.Stop();
}

}  // namespace
}  // namespace paddock::agent
