// Task scale-in protection through the task owner (protection.cc).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/testing/fake_clock.h"
#include "ecs/instance/instances.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::task {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

class ProtectionTest : public ::testing::Test {
 protected:
  ProtectionTest() {
    clusters_.AddUsage(tasks_.cluster_usage());
    clusters_.AddUsage(instances_.cluster_usage());
    EXPECT_TRUE(clusters_.Create(kScope, json::parse(R"({"clusterName":"prod"})").as_object()).ok());
    EXPECT_TRUE(tds_.Register(kScope, kCaller, json::parse(R"({"family":"worker","networkMode":"bridge",
        "containerDefinitions":[{"name":"w","image":"busybox","cpu":128,"memory":128}]})").as_object(),
                              clock_.Now()).ok());
    instance::RegisterRequest r;
    r.cluster = "prod";
    r.total_resources = json::parse(R"([{"name":"CPU","type":"INTEGER","integerValue":4096},
                                        {"name":"MEMORY","type":"INTEGER","integerValue":4096}])").as_array();
    EXPECT_TRUE(instances_.Register(kScope, r, clock_.Now()).ok());
  }

  // A task as a service's scheduler launches it (group and startedBy), or a one-off.
  std::string RunTask(bool of_a_service) {
    RunRequest r;
    r.cluster = "prod";
    r.task_definition = "worker";
    r.launch_type = "EC2";
    if (of_a_service) {
      r.group = "service:web";
      r.started_by = "ecs-svc/1234567890123456789";
    }
    auto run = tasks_.Run(kScope, kCaller, r, clock_.Now());
    EXPECT_TRUE(run.ok() && run->tasks.size() == 1);
    return run.ok() && !run->tasks.empty() ? std::string(json::parse(run->tasks[0]).at("taskArn").as_string()) : "";
  }

  std::optional<TimePoint> ProtectedUntil(const std::string& arn) {
    std::optional<TimePoint> out;
    EXPECT_TRUE(store_
                    ->Read([&](store::ReadTxn& txn) -> Status {
                      ASSIGN_OR_RETURN(auto group, tasks_.GroupTasks(txn, kScope, "prod", "service:web"));
                      for (const auto& t : group)
                        if (arn.ends_with(t.id)) out = t.protected_until;
                      return OkStatus();
                    })
                    .ok());
    return out;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  taskdef::TaskDefinitions tds_{*store_};
  cluster::Clusters clusters_{*store_};
  instance::ContainerInstances instances_{*store_, clusters_};
  Tasks tasks_{*store_, tds_, clusters_, "fargate-local", &instances_};
};

TEST_F(ProtectionTest, ProtectsServiceTasksForTwoHoursByDefaultAndExpires) {
  const std::string task = RunTask(true);
  auto r = tasks_.UpdateProtection(kScope, "prod", {task}, true, std::nullopt, kCaller, clock_.Now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 1u);
  EXPECT_TRUE(r->tasks[0].enabled);
  EXPECT_EQ(*r->tasks[0].expires_at, clock_.Now() + std::chrono::minutes(120));
  EXPECT_EQ(ProtectedUntil(task), clock_.Now() + std::chrono::minutes(120)) << "the scheduler sees it";

  // Renewing counts from now again; a custom period.
  clock_.Advance(std::chrono::minutes(30));
  r = tasks_.UpdateProtection(kScope, "prod", {task}, true, 5, kCaller, clock_.Now());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->tasks[0].expires_at, clock_.Now() + std::chrono::minutes(5));

  auto get = tasks_.GetProtection(kScope, "prod", {task}, kCaller, clock_.Now());
  ASSERT_TRUE(get.ok());
  EXPECT_TRUE(get->tasks[0].enabled);
  auto all = tasks_.GetProtection(kScope, "prod", {}, kCaller, clock_.Now());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->tasks.size(), 1u);

  clock_.Advance(std::chrono::minutes(6));
  get = tasks_.GetProtection(kScope, "prod", {task}, kCaller, clock_.Now());
  ASSERT_TRUE(get.ok());
  EXPECT_FALSE(get->tasks[0].enabled) << "expired";
  EXPECT_FALSE(get->tasks[0].expires_at);

  r = tasks_.UpdateProtection(kScope, "prod", {task}, false, std::nullopt, kCaller, clock_.Now());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->tasks[0].enabled);
  EXPECT_FALSE(ProtectedUntil(task));
}

TEST_F(ProtectionTest, StandaloneAndStoppedTasksAreNotValid) {
  const std::string one_off = RunTask(false);
  const std::string service_task = RunTask(true);
  ASSERT_TRUE(tasks_.Stop(kScope, "prod", service_task, std::nullopt, kCaller, clock_.Now()).ok());
  auto r = tasks_.UpdateProtection(kScope, "prod", {one_off, service_task}, true, std::nullopt, kCaller, clock_.Now());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->tasks.empty());
  ASSERT_EQ(r->failures.size(), 2u);
  for (const auto& f : r->failures) EXPECT_EQ(f.reason, "TASK_NOT_VALID") << f.arn;
  EXPECT_EQ(r->failures[0].detail, "The task is not part of an Amazon ECS service.");
  EXPECT_EQ(api::AnswerFor(tasks_.UpdateProtection(kScope, "prod", {one_off}, true, 0, kCaller, clock_.Now()).status()).type,
            "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(tasks_.GetProtection(kScope, "ghost", {one_off}, kCaller, clock_.Now()).status()).type,
            "ClusterNotFoundException");
}

// The service scheduler's projection of a group (Tasks::RefreshGroup): after every kind of change
// it is exactly what a full read gives, and it reads only the tasks that changed.
class GroupProjectionTest : public ProtectionTest {
 protected:
  std::vector<GroupTask> FullRead() {
    std::vector<GroupTask> out;
    EXPECT_TRUE(store_
                    ->Read([&](store::ReadTxn& txn) -> Status {
                      ASSIGN_OR_RETURN(out, tasks_.GroupTasks(txn, kScope, "prod", "service:web"));
                      return OkStatus();
                    })
                    .ok());
    return out;
  }
  // Refreshes `projection_` and checks it against a full read; returns how many tasks it read.
  size_t Refresh() {
    EXPECT_TRUE(store_
                    ->Read([&](store::ReadTxn& txn) -> Status {
                      return tasks_.RefreshGroup(txn, kScope, "prod", "service:web", projection_);
                    })
                    .ok());
    EXPECT_EQ(projection_.tasks, FullRead());
    return projection_.reread;
  }
  Status Report(const std::string& arn, std::string status, std::optional<std::string> health = std::nullopt) {
    auto described = tasks_.Describe(kScope, "prod", {arn}, false, kCaller);
    std::string instance;  // the task's agent is its instance's
    if (described.ok() && !described->tasks.empty())
      instance = std::string(json::parse(described->tasks[0]).at("containerInstanceArn").as_string());
    TaskStateChange c;
    c.last_status = std::move(status);
    c.health_status = std::move(health);
    return tasks_.ReportState(InstanceAgentId(instance), arn, c, clock_.Now());
  }

  GroupProjection projection_;
};

TEST_F(GroupProjectionTest, ARefreshIsAFullReadButReadsOnlyTheTasksThatChanged) {
  const std::string a = RunTask(true), b = RunTask(true), c = RunTask(true);
  RunTask(false);  // of no group: never in the projection
  EXPECT_EQ(Refresh(), 3u);
  EXPECT_EQ(projection_.tasks.size(), 3u);
  EXPECT_EQ(Refresh(), 0u) << "nothing changed";

  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Report(a, "PENDING").ok());
  EXPECT_EQ(Refresh(), 1u) << "one report, one task read";
  ASSERT_TRUE(Report(a, "RUNNING").ok());
  ASSERT_TRUE(Report(b, "RUNNING", "HEALTHY").ok());
  EXPECT_EQ(Refresh(), 2u);
  ASSERT_TRUE(Report(a, "PENDING").ok());  // late: ignored, nothing written
  EXPECT_EQ(Refresh(), 0u);

  // A protection, its removal, a stop (desiredStatus moves: another index row), a launch.
  ASSERT_TRUE(tasks_.UpdateProtection(kScope, "prod", {c}, true, std::nullopt, kCaller, clock_.Now()).ok());
  EXPECT_EQ(Refresh(), 1u);
  ASSERT_TRUE(tasks_.UpdateProtection(kScope, "prod", {c}, false, std::nullopt, kCaller, clock_.Now()).ok());
  EXPECT_EQ(Refresh(), 1u);
  ASSERT_TRUE(tasks_.Stop(kScope, "prod", b, "scale in", kCaller, clock_.Now()).ok());
  EXPECT_EQ(Refresh(), 1u);
  const std::string d = RunTask(true);
  EXPECT_EQ(Refresh(), 1u);
  EXPECT_EQ(projection_.tasks.size(), 4u);

  // Stopped by its agent, then reaped an hour later: it leaves the projection.
  ASSERT_TRUE(Report(b, "STOPPED").ok());
  ASSERT_TRUE(Report(d, "STOPPED").ok());
  EXPECT_EQ(Refresh(), 2u);
  clock_.Advance(std::chrono::hours(2));
  ASSERT_TRUE(tasks_.ReapStopped(clock_.Now()).ok());
  EXPECT_EQ(Refresh(), 0u);
  EXPECT_EQ(projection_.tasks.size(), 2u);
}

}  // namespace
}  // namespace paddock::ecs::task
