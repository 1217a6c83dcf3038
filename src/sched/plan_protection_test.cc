// Task scale-in protection in the plan (issue 10): a protected task of a REPLICA service is not
// scaled in and not replaced by a deployment until its protection ends.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>

#include "sched/plan.h"

namespace paddock::sched {
namespace {

using service::Deployment;
using service::ServiceState;
using std::chrono::minutes;
using std::chrono::seconds;

const std::string kOld = "ecs-svc/1111111111111111111";
const std::string kNew = "ecs-svc/2222222222222222222";
const TimePoint kT0 = TimePoint(seconds(1'780'000'000));

Deployment Dep(const std::string& id, const std::string& status) {
  Deployment d;
  d.id = id;
  d.status = status;
  d.rollout_state = "IN_PROGRESS";
  d.created_at = kT0;
  d.updated_at = kT0;
  return d;
}

ServiceState Service(int64_t desired) {
  ServiceState s;
  s.key.name = "web";
  s.status = "ACTIVE";
  s.scheduling_strategy = "REPLICA";
  s.controller = "ECS";
  s.desired_count = desired;
  s.minimum_healthy_percent = 100;
  s.maximum_percent = 200;
  s.deployments.push_back(Dep(kNew, "PRIMARY"));
  return s;
}

TaskView Running(const std::string& id, const std::string& dep, int created_offset) {
  TaskView t;
  t.id = id;
  t.started_by = dep;
  t.last_status = "RUNNING";
  t.desired_status = "RUNNING";
  t.health_status = "UNKNOWN";
  t.created_at = kT0 + seconds(created_offset);
  t.started_at = t.created_at + seconds(1);
  return t;
}

std::set<std::string> Stopped(const Decision& d) {
  std::set<std::string> out;
  for (const auto& s : d.stops) out.insert(s.task_id);
  return out;
}

Observed Obs(TimePoint now, std::vector<TaskView> tasks) {
  Observed o;
  o.now = now;
  o.tasks = std::move(tasks);
  return o;
}

// Scale-in from 3 to 1 stops the newest tasks first; the protected newest one is passed over for
// the next one, and stays until its protection ends.
TEST(PlanProtectionTest, ScaleInPassesOverAProtectedTaskUntilItExpires) {
  std::vector<TaskView> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(Running(fmt::format("t{}", i), kNew, i));
  const TimePoint now = kT0 + minutes(10);
  tasks[2].protected_until = now + minutes(5);

  ServiceState s = Service(1);
  Decision d = Decide(s, Obs(now, tasks));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"t1", "t0"})) << "two must go; the protected t2 stays";
  ASSERT_TRUE(d.wake_at);
  EXPECT_EQ(*d.wake_at, now + minutes(5)) << "a pass is due when the protection ends";

  // Only the protected one is left beyond the desired count: nothing is stopped while it holds.
  ServiceState s2 = Service(0);
  Decision held = Decide(s2, Obs(now, {tasks[2]}));
  EXPECT_TRUE(held.stops.empty());
  // Expired protection: scaled in as any other task.
  Decision after = Decide(s2, Obs(now + minutes(6), {tasks[2]}));
  EXPECT_EQ(Stopped(after), (std::set<std::string>{"t2"}));
}

// A new deployment replaces the old tasks, but not a protected one before its protection ends.
TEST(PlanProtectionTest, ADeploymentReplacesAProtectedTaskOnlyAfterExpiry) {
  ServiceState s = Service(2);
  s.deployments.push_back(Dep(kOld, "ACTIVE"));
  std::vector<TaskView> tasks{Running("old0", kOld, 0), Running("old1", kOld, 1), Running("new0", kNew, 2),
                              Running("new1", kNew, 3)};
  const TimePoint now = kT0 + minutes(10);
  tasks[1].protected_until = now + minutes(1);
  Decision d = Decide(s, Obs(now, tasks));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"old0"}));
  ServiceState again = Service(2);
  again.deployments.push_back(Dep(kOld, "ACTIVE"));
  Decision later = Decide(again, Obs(now + minutes(2), {tasks[1], tasks[2], tasks[3]}));
  EXPECT_EQ(Stopped(later), (std::set<std::string>{"old1"}));
}

}  // namespace
}  // namespace paddock::sched
