#include "sched/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <set>

namespace paddock::sched {
namespace {

using service::Deployment;
using service::ServiceState;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::string kOld = "ecs-svc/1111111111111111111";
const std::string kNew = "ecs-svc/2222222222222222222";
const TimePoint kT0 = TimePoint(seconds(1'780'000'000));
const std::string kDeadlock =
    "(service web) was unable to stop or start tasks during a deployment because of the service deployment "
    "configuration. Update the minimumHealthyPercent or maximumPercent value and try again.";

Deployment Dep(const std::string& id, const std::string& status, TimePoint created = kT0) {
  Deployment d;
  d.id = id;
  d.status = status;
  d.rollout_state = "IN_PROGRESS";
  d.rollout_state_reason = fmt::format("ECS deployment {} in progress.", id);
  d.created_at = created;
  d.updated_at = created;
  return d;
}

// A REPLICA service named "web" whose PRIMARY is kNew.
ServiceState Service(int64_t desired, int64_t min_healthy = 100, int64_t max = 200) {
  ServiceState s;
  s.key.name = "web";
  s.status = "ACTIVE";
  s.scheduling_strategy = "REPLICA";
  s.controller = "ECS";
  s.desired_count = desired;
  s.minimum_healthy_percent = min_healthy;
  s.maximum_percent = max;
  s.deployments.push_back(Dep(kNew, "PRIMARY", kT0 + seconds(1)));
  return s;
}

// kNew rolls out over kOld, which completed before.
ServiceState Rollout(int64_t desired, int64_t min_healthy = 100, int64_t max = 200) {
  ServiceState s = Service(desired, min_healthy, max);
  Deployment old = Dep(kOld, "ACTIVE");
  old.rollout_state = "COMPLETED";
  old.rollout_state_reason = fmt::format("ECS deployment {} completed.", kOld);
  s.deployments.push_back(old);
  s.last_completed = old;
  s.last_completed->status = "PRIMARY";
  return s;
}

TaskView Task(const std::string& id, const std::string& dep, const std::string& last, TimePoint created = kT0) {
  TaskView t;
  t.id = id;
  t.started_by = dep;
  t.last_status = last;
  t.desired_status = "RUNNING";
  t.health_status = "UNKNOWN";
  t.created_at = created;
  if (last == "RUNNING") t.started_at = created + seconds(1);
  return t;
}
TaskView Running(const std::string& id, const std::string& dep, TimePoint created = kT0) {
  return Task(id, dep, "RUNNING", created);
}
TaskView Stopping(TaskView t) {
  t.desired_status = "STOPPED";
  return t;
}
// Stopped before RUNNING on its own (a failed start).
TaskView FailedStart(const std::string& id, const std::string& dep, TimePoint created) {
  TaskView t = Task(id, dep, "STOPPED", created);
  t.desired_status = "STOPPED";
  t.stop_code = "TaskFailedToStart";
  t.stopped_reason = "Task failed to start";
  t.stopped_at = created + seconds(1);
  return t;
}

// Reached RUNNING at `started`, then its essential container exited `after` later (a crash).
TaskView Exited(const std::string& id, const std::string& dep, TimePoint started, seconds after) {
  TaskView t = Task(id, dep, "STOPPED", started - seconds(1));
  t.desired_status = "STOPPED";
  t.started_at = started;
  t.stopped_at = started + after;
  t.stop_code = "EssentialContainerExited";
  t.stopped_reason = "Essential container in task exited";
  return t;
}

Observed Obs(TimePoint now, std::vector<TaskView> tasks) {
  Observed o;
  o.now = now;
  o.tasks = std::move(tasks);
  return o;
}

std::vector<std::string> Messages(const ServiceState& s) {
  std::vector<std::string> out;
  for (const auto& e : s.new_events) out.push_back(e.message);
  return out;
}

// What the owner does after a pass: stores the events (the newest is then events[0]).
void Store(ServiceState& s) {
  if (!s.new_events.empty()) s.newest_event = s.new_events.back();
  s.new_events.clear();
}

int64_t Launched(const Decision& d, const std::string& dep) {
  int64_t n = 0;
  for (const auto& l : d.launches) n += l.deployment_id == dep ? l.count : 0;
  return n;
}

std::set<std::string> Stopped(const Decision& d) {
  std::set<std::string> out;
  for (const auto& s : d.stops) out.insert(s.task_id);
  return out;
}

const Deployment* Find(const ServiceState& s, const std::string& id) {
  for (const auto& d : s.deployments)
    if (d.id == id) return &d;
  return nullptr;
}

TEST(PlanTest, BreakerThresholdIsHalfTheDesiredCountBetween3And200) {
  EXPECT_EQ(BreakerThreshold(0), 3);
  EXPECT_EQ(BreakerThreshold(1), 3);
  EXPECT_EQ(BreakerThreshold(6), 3);
  EXPECT_EQ(BreakerThreshold(7), 4);
  EXPECT_EQ(BreakerThreshold(25), 13);
  EXPECT_EQ(BreakerThreshold(400), 200);
  EXPECT_EQ(BreakerThreshold(5000), 200);
}

TEST(PlanTest, ComputedDesiredCountRoundsUp) {
  EXPECT_EQ(ComputedDesiredCount(10, 12), 2);  // 1.2 → 2, as the model's doc says
  EXPECT_EQ(ComputedDesiredCount(10, 10), 1);
  EXPECT_EQ(ComputedDesiredCount(10, 0), 0);
  EXPECT_EQ(ComputedDesiredCount(10, 100), 10);
  EXPECT_EQ(ComputedDesiredCount(3, 33.4), 2);
  EXPECT_EQ(ComputedDesiredCount(7, 50), 4);
}

TEST(PlanTest, AFreshServiceLaunchesItsDesiredCountAndRecordLaunchedWritesTheEvent) {
  ServiceState s = Service(3);
  Observed o = Obs(kT0, {});
  Decision d = Decide(s, o);
  ASSERT_EQ(d.launches.size(), 1u);
  EXPECT_EQ(d.launches[0].deployment_id, kNew);
  EXPECT_EQ(d.launches[0].count, 3);
  EXPECT_EQ(d.launches[0].container_instance_arn, "");
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.state_changed);
  EXPECT_EQ(s.deployments[0].desired_count, 3);
  EXPECT_THAT(Messages(s), IsEmpty());

  RecordLaunched(s, kNew, {"aaa", "bbb", "ccc"}, o);
  EXPECT_EQ(s.deployments[0].pending_count, 3);
  EXPECT_THAT(Messages(s), ElementsAre("(service web) has started 3 tasks: (task aaa) (task bbb) (task ccc)."));
  EXPECT_EQ(s.new_events[0].created_at, kT0);
  EXPECT_EQ(s.new_events[0].id, "");

  // The launched tasks, now observed pending: nothing more to launch.
  Store(s);
  Decision again = Decide(s, Obs(kT0 + seconds(1), {Task("aaa", kNew, "PROVISIONING"), Task("bbb", kNew, "PENDING"),
                                                    Task("ccc", kNew, "ACTIVATING")}));
  EXPECT_TRUE(again.launches.empty());
  EXPECT_EQ(s.deployments[0].pending_count, 3);
  EXPECT_EQ(s.deployments[0].running_count, 0);
}

// The developer guide's examples of the bounds (deployment-type-ecs).
TEST(PlanTest, MinimumHealthy50OfFourLetsTwoStopFirst) {
  ServiceState s = Rollout(4, 50, 100);
  std::vector<TaskView> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(Running(fmt::format("old{}", i), kOld, kT0 + seconds(i)));
  Decision d = Decide(s, Obs(kT0 + hours(1), tasks));
  EXPECT_EQ(Launched(d, kNew), 0) << "upper bound 4 is reached";
  ASSERT_EQ(d.stops.size(), 2u);
  for (const auto& stop : d.stops) {
    EXPECT_EQ(stop.reason, "Scaling activity initiated by (deployment " + kOld + ")");
  }
  // Newest first.
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"old3", "old2"}));
  EXPECT_THAT(Messages(s), ElementsAre("(service web) has stopped 2 running tasks: (task old3) (task old2)."));
  EXPECT_EQ(Find(s, kOld)->desired_count, 2) << "an ACTIVE deployment's desired count is what it keeps";
}

TEST(PlanTest, MaximumPercent200OfFourLetsFourStartFirst) {
  ServiceState s = Rollout(4, 100, 200);
  std::vector<TaskView> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(Running(fmt::format("old{}", i), kOld));
  Decision d = Decide(s, Obs(kT0 + hours(1), tasks));
  EXPECT_EQ(Launched(d, kNew), 4);
  EXPECT_TRUE(d.stops.empty()) << "lower bound 4: no healthy task may go";
  EXPECT_THAT(Messages(s), IsEmpty());
}

TEST(PlanTest, NeitherBoundLeavingRoomIsReportedOnce) {
  // maximumPercent 125 of 3 lets none start; minimumHealthyPercent 75 of 3 lets none stop.
  ServiceState s = Rollout(3, 75, 125);
  std::vector<TaskView> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(Running(fmt::format("old{}", i), kOld));
  Decision d = Decide(s, Obs(kT0 + hours(1), tasks));
  EXPECT_TRUE(d.launches.empty());
  EXPECT_TRUE(d.stops.empty());
  EXPECT_THAT(Messages(s), ElementsAre(kDeadlock));
  EXPECT_TRUE(d.state_changed);

  Store(s);
  Decision again = Decide(s, Obs(kT0 + hours(2), tasks));
  EXPECT_THAT(Messages(s), IsEmpty()) << "identical to the newest event and younger than 6 h";
  EXPECT_FALSE(again.state_changed);
  Decide(s, Obs(kT0 + hours(7) + seconds(1), tasks));
  EXPECT_THAT(Messages(s), ElementsAre(kDeadlock)) << "6 h later it is repeated";

  // 75 % of 2 also lets none stop (the guide's example), with max 100.
  ServiceState two = Rollout(2, 75, 100);
  Decide(two, Obs(kT0 + hours(1), {Running("a", kOld), Running("b", kOld)}));
  EXPECT_THAT(Messages(two), ElementsAre(kDeadlock));
}

TEST(PlanTest, NoDeadlockEventWhileSomethingIsUnderWay) {
  ServiceState s = Rollout(2, 100, 100);
  // A stopping task and a pending one: progress is possible without a change of configuration.
  Decision d = Decide(s, Obs(kT0 + hours(1), {Running("a", kOld), Stopping(Running("b", kOld))}));
  EXPECT_TRUE(d.launches.empty());
  EXPECT_THAT(Messages(s), IsEmpty());
}

TEST(PlanTest, StoppingTasksCountTowardTheTotalButNeverAsHealthy) {
  // max 100 % of 2: the stopping task still takes a place, so nothing starts.
  ServiceState s = Rollout(2, 0, 100);
  Decision d = Decide(s, Obs(kT0 + hours(1), {Running("a", kOld), Stopping(Running("b", kOld))}));
  EXPECT_EQ(Launched(d, kNew), 0);
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"a"})) << "min 0: the healthy old one goes too";

  // min 100 % of 2 with 2 healthy new tasks, one of them being stopped: only one old task may go.
  ServiceState t = Rollout(2, 100, 200);
  Decision e = Decide(t, Obs(kT0 + hours(1), {Running("o1", kOld), Running("o2", kOld), Running("n1", kNew),
                                              Stopping(Running("n2", kNew))}));
  EXPECT_EQ(Stopped(e).size(), 1u);
  EXPECT_EQ(Launched(e, kNew), 0) << "total 4 = upper bound";
}

TEST(PlanTest, OldPendingOrUnhealthyTasksGoFreelyEvenAtTheLowerBound) {
  ServiceState s = Rollout(2, 100, 200);
  TaskView sick = Running("sick", kOld);
  sick.has_health_checks = true;
  sick.health_status = "UNKNOWN";
  Decision d = Decide(s, Obs(kT0 + hours(1), {Running("o1", kOld), Running("o2", kOld),
                                              Task("pend", kOld, "PENDING"), sick}));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"pend", "sick"}));
  EXPECT_THAT(Messages(s), ElementsAre("(service web) has stopped 1 running tasks: (task sick)."))
      << "only RUNNING tasks are listed as stopped running tasks";
}

TEST(PlanTest, SettleTimeHoldsTasksBackFromHealthyAndWakesThePassWhenItEnds) {
  ServiceState s = Rollout(2, 100, 200);
  TimePoint now = kT0 + hours(1);
  TaskView n1 = Running("n1", kNew, now - seconds(11));  // started_at now - 10 s
  TaskView n2 = Running("n2", kNew, now - seconds(21));  // started_at now - 20 s
  Observed o = Obs(now, {Running("o1", kOld), Running("o2", kOld), n1, n2});
  o.settle = seconds(40);
  Decision d = Decide(s, o);
  EXPECT_TRUE(d.stops.empty()) << "the new tasks are not healthy yet";
  ASSERT_TRUE(d.wake_at.has_value());
  EXPECT_EQ(*d.wake_at, now + seconds(20)) << "n2 settles first";

  o.now = now + seconds(30);
  Decision later = Decide(s, o);
  EXPECT_EQ(Stopped(later), (std::set<std::string>{"o1", "o2"}));
}

TEST(PlanTest, UnhealthyTasksAreLeftAloneWithinTheGracePeriodThenStoppedAndCounted) {
  ServiceState s = Service(1);
  s.health_check_grace_seconds = 60;
  TaskView t = Running("sick", kNew, kT0);  // started kT0 + 1 s
  t.has_health_checks = true;
  t.health_status = "UNHEALTHY";
  Decision d = Decide(s, Obs(kT0 + seconds(30), {t}));
  EXPECT_TRUE(d.stops.empty());
  ASSERT_TRUE(d.wake_at);
  EXPECT_EQ(*d.wake_at, kT0 + seconds(61));
  EXPECT_EQ(s.deployments[0].failed_tasks, 0);

  Decision after = Decide(s, Obs(kT0 + seconds(61), {t}));
  ASSERT_EQ(after.stops.size(), 1u);
  EXPECT_EQ(after.stops[0].reason, "Task failed container health checks");
  EXPECT_THAT(Messages(s), ElementsAre("(service web) (task sick) failed container health checks.",
                                       "(service web) has stopped 1 running tasks: (task sick)."));
  EXPECT_EQ(s.deployments[0].failed_tasks, 1);
  EXPECT_EQ(Launched(after, kNew), 1) << "max 200 % of 1 leaves room: the replacement starts at once";

  // The next passes see it stopping, then STOPPED: still one failure.
  Store(s);
  TaskView stopping = Stopping(t);
  stopping.stopped_reason = "Task failed container health checks";
  TaskView replacement = Task("r", kNew, "PENDING", kT0 + seconds(61));
  Decision next = Decide(s, Obs(kT0 + seconds(62), {stopping, replacement}));
  EXPECT_EQ(s.deployments[0].failed_tasks, 1);
  EXPECT_TRUE(next.launches.empty());
  EXPECT_TRUE(next.stops.empty());
  TaskView gone = stopping;
  gone.last_status = "STOPPED";
  Decide(s, Obs(kT0 + seconds(63), {gone, replacement}));
  EXPECT_EQ(s.deployments[0].failed_tasks, 1);
}

TEST(PlanTest, TheRolloutCompletesThenAnIdleConvergedServiceChangesNothing) {
  ServiceState s = Service(2);
  std::vector<TaskView> tasks = {Running("a", kNew), Running("b", kNew)};
  Decision d = Decide(s, Obs(kT0 + hours(1), tasks));
  EXPECT_TRUE(d.launches.empty());
  EXPECT_TRUE(d.stops.empty());
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
  EXPECT_EQ(s.deployments[0].rollout_state_reason, "ECS deployment " + kNew + " completed.");
  EXPECT_THAT(Messages(s), ElementsAre("(service web) (deployment " + kNew + ") deployment completed.",
                                       "(service web) has reached a steady state."));
  ASSERT_TRUE(s.last_completed);
  EXPECT_EQ(s.last_completed->id, kNew);
  EXPECT_EQ(s.last_completed->rollout_state, "COMPLETED");
  EXPECT_EQ(s.deployments[0].running_count, 2);
  EXPECT_EQ(s.deployments[0].desired_count, 2);

  Store(s);
  for (int i = 2; i < 5; ++i) {
    Decision idle = Decide(s, Obs(kT0 + hours(i), tasks));
    EXPECT_FALSE(idle.state_changed) << i;
    EXPECT_THAT(Messages(s), IsEmpty());
    EXPECT_TRUE(idle.launches.empty());
    EXPECT_FALSE(idle.wake_at);
  }
}

TEST(PlanTest, AConvergedServiceThatScalesReachesASteadyStateAgain) {
  ServiceState s = Service(2);
  std::vector<TaskView> tasks = {Running("a", kNew), Running("b", kNew)};
  Decide(s, Obs(kT0 + hours(1), tasks));
  Store(s);

  s.desired_count = 3;  // UpdateService
  Observed o = Obs(kT0 + hours(2), tasks);
  Decision d = Decide(s, o);
  EXPECT_EQ(Launched(d, kNew), 1);
  EXPECT_TRUE(d.state_changed);
  RecordLaunched(s, kNew, {"c"}, o);
  Store(s);
  tasks.push_back(Task("c", kNew, "PENDING", kT0 + hours(2)));
  Decide(s, Obs(kT0 + hours(2) + seconds(1), tasks));
  EXPECT_THAT(Messages(s), IsEmpty());
  tasks.back() = Running("c", kNew, kT0 + hours(2));  // RUNNING from kT0 + 2 h + 1 s
  Decide(s, Obs(kT0 + hours(2) + seconds(2), tasks));
  EXPECT_THAT(Messages(s), IsEmpty()) << "c has not run for the settle time (40 s) yet";
  Decide(s, Obs(kT0 + hours(2) + seconds(41), tasks));
  EXPECT_THAT(Messages(s), ElementsAre("(service web) has reached a steady state."))
      << "no second 'deployment completed'";
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");

  // Scale-in prefers pending, then unhealthy tasks, newest first.
  Store(s);
  s.desired_count = 1;
  TaskView pend = Task("p", kNew, "PENDING", kT0 + hours(3));
  Decision in = Decide(s, Obs(kT0 + hours(3), {Running("a", kNew), Running("b", kNew), Running("c", kNew, kT0 + hours(2)), pend}));
  EXPECT_EQ(Stopped(in), (std::set<std::string>{"p", "c", "b"}));
  ASSERT_EQ(in.stops.size(), 3u);
  EXPECT_EQ(in.stops[0].task_id, "p");
  EXPECT_EQ(in.stops[1].task_id, "c");
}

TEST(PlanTest, AStoppedTaskIsReplacedAndADrainedOldDeploymentStaysListedUntilTheRolloutCompletes) {
  ServiceState s = Rollout(2);
  const TimePoint now = kT0 + hours(1);
  TaskView exited = Exited("x", kNew, now - seconds(10), seconds(1));
  TaskView old_gone = Running("o", kOld);
  old_gone.last_status = "STOPPED";
  old_gone.desired_status = "STOPPED";
  old_gone.stopped_reason = "Scaling activity initiated by (deployment " + kOld + ")";
  TaskView y = Running("y", kNew, now - seconds(11));  // RUNNING for 10 s: not healthy yet
  Decision d = Decide(s, Obs(now, {exited, old_gone, y}));
  EXPECT_EQ(Launched(d, kNew), 1);
  ASSERT_EQ(s.deployments.size(), 2u) << "no live task left, but listed while the PRIMARY is IN_PROGRESS";
  EXPECT_EQ(s.deployments[1].id, kOld);
  EXPECT_EQ(s.deployments[1].desired_count, 0);
  EXPECT_EQ(s.deployments[0].failed_tasks, 1) << "it exited before the deployment completed";
  EXPECT_EQ(s.deployments[0].launch_failures, 0) << "but it ran: no backoff (AWS's throttle counts failed starts)";

  // The replacement runs: the rollout completes and the drained deployment leaves with it.
  Store(s);
  Decide(s, Obs(now + hours(1), {exited, old_gone, y, Running("z", kNew, now)}));
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].id, kNew);
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
}

// Deployments replaced one after another while a rollout runs do not pile up in deployments[]:
// of those whose tasks are all gone only the newest stays listed until the PRIMARY completes
// (services-stable waits for it); one that still has a task stays too (issue 20).
TEST(PlanTest, DrainedDeploymentsDoNotPileUpWhileARolloutRuns) {
  ServiceState s = Service(1);
  std::vector<std::string> old;
  for (int i = 5; i >= 1; --i) {  // newest first, as the owner lists them
    old.push_back(fmt::format("ecs-svc/{:019d}", i));
    s.deployments.push_back(Dep(old.back(), "ACTIVE", kT0 - seconds(10 - i)));
  }
  // old[2] still has a running task; the PRIMARY's task is still starting.
  Observed o = Obs(kT0 + hours(1), {Running("t3", old[2]), Task("n1", kNew, "PENDING", kT0 + hours(1))});
  Decide(s, o);
  std::vector<std::string> ids;
  for (const auto& d : s.deployments) ids.push_back(d.id);
  EXPECT_THAT(ids, ElementsAre(kNew, old[0], old[2]));

  // The rollout completes: only the PRIMARY is left.
  o.now += hours(1);
  o.tasks = {Running("n1", kNew, kT0 + hours(1))};
  Decide(s, o);
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
}

TEST(PlanTest, ATaskOnADrainingInstanceIsReplacedFirstThenStoppedWithinTheLowerBound) {
  ServiceState s = Service(2, 100, 200);
  TaskView drained = Running("d", kNew);
  drained.on_draining_instance = true;
  std::vector<TaskView> tasks = {Running("a", kNew), drained};
  Decision d = Decide(s, Obs(kT0 + hours(1), tasks));
  EXPECT_EQ(Launched(d, kNew), 1) << "the replacement first, within maximumPercent";
  EXPECT_TRUE(d.stops.empty()) << "healthy 2 = lower bound: the drained one stays until then";
  EXPECT_NE(s.deployments[0].rollout_state, "COMPLETED");

  tasks.push_back(Running("r", kNew, kT0 + hours(1)));
  Decision e = Decide(s, Obs(kT0 + hours(2), tasks));
  EXPECT_EQ(Stopped(e), (std::set<std::string>{"d"}));
  EXPECT_TRUE(e.launches.empty());
  EXPECT_EQ(e.stops[0].reason, "Scaling activity initiated by (deployment " + kNew + ")");
}

TEST(PlanTest, LeftOverTasksOfNoDeploymentAreStopped) {
  ServiceState s = Service(1, 0, 200);
  Decision d = Decide(s, Obs(kT0 + hours(1), {Running("a", kNew), Running("stray", "ecs-svc/9")}));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"stray"}));
  EXPECT_EQ(d.stops[0].reason, "Scaling activity initiated by (deployment ecs-svc/9)");
  EXPECT_NE(s.deployments[0].rollout_state, "COMPLETED") << "not while a stray task is live";
}

TEST(PlanTest, WithoutACompletedDeploymentTheBreakerStallsTheRollout) {
  ServiceState s = Service(1);
  s.circuit_breaker = true;
  s.rollback = true;
  TimePoint now = kT0 + hours(1);
  std::vector<TaskView> tasks = {FailedStart("f1", kNew, now), FailedStart("f2", kNew, now),
                                 FailedStart("f3", kNew, now)};
  Decision d = Decide(s, Obs(now, tasks));
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].rollout_state, "FAILED");
  EXPECT_EQ(s.deployments[0].status, "PRIMARY");
  EXPECT_TRUE(d.launches.empty());
  EXPECT_FALSE(d.wake_at) << "a FAILED deployment launches nothing, so no backoff wake-up";
  EXPECT_THAT(Messages(s), ::testing::Contains("(service web) (deployment " + kNew +
                                               ") deployment failed: tasks failed to start."));
  Store(s);
  Decision again = Decide(s, Obs(now + hours(1), tasks));
  EXPECT_TRUE(again.launches.empty());
  EXPECT_FALSE(again.state_changed);
}

// Simulates a crash-looping image: every launched task stops before RUNNING.
struct CrashLoop {
  ServiceState s;
  std::vector<TaskView> tasks;
  TimePoint now = kT0 + hours(1);
  int next = 0;
  Observed Obs() const {
    Observed o = sched::Obs(now, tasks);
    o.backoff_base = seconds(1);
    o.backoff_cap = seconds(4);
    return o;
  }
  Decision Step() {
    now += seconds(10);  // past any backoff
    for (auto& t : tasks) {
      if (t.last_status != "STOPPED" && t.desired_status == "STOPPED") {
        t.last_status = "STOPPED";
        continue;
      }
      if (t.last_status == "PENDING" && t.started_by == kNew) t = FailedStart(t.id, t.started_by, t.created_at);
      if (t.last_status == "PENDING" && t.started_by != kNew) {
        std::string id = t.id;
        t = Running(id, t.started_by, now - seconds(1));
      }
    }
    Observed o = Obs();
    Decision d = Decide(s, o);
    for (const auto& l : d.launches) {
      std::vector<std::string> ids;
      for (int i = 0; i < l.count; ++i) {
        ids.push_back(fmt::format("t{}", next++));
        tasks.push_back(Task(ids.back(), l.deployment_id, "PENDING", now));
      }
      RecordLaunched(s, l.deployment_id, ids, o);
    }
    for (const auto& st : d.stops)
      for (auto& t : tasks)
        if (t.id == st.task_id) t.desired_status = "STOPPED", t.stopped_reason = st.reason;
    return d;
  }
};

TEST(PlanTest, ACrashLoopTripsTheBreakerAtTheThresholdAndRollsBackToTheSameDeployment) {
  CrashLoop c;
  c.s = Rollout(2, 0, 200);  // the old tasks are gone already
  c.s.deployments.pop_back();
  c.s.circuit_breaker = true;
  c.s.rollback = true;
  c.tasks = {Task("stuck", kNew, "PROVISIONING", c.now)};  // live, never healthy
  // Threshold(2) = 3.
  int steps = 0;
  Decision trip;
  while (c.s.deployments[0].id == kNew && steps++ < 20) {
    trip = c.Step();
    if (c.s.deployments[0].id == kNew) {
      EXPECT_LT(c.s.deployments[0].failed_tasks, 3);
      // A pass repeated on the same observation counts nothing twice.
      int64_t before = c.s.deployments[0].failed_tasks;
      ServiceState copy = c.s;
      Decide(copy, c.Obs());
      EXPECT_EQ(copy.deployments[0].failed_tasks, before);
    }
  }
  ASSERT_EQ(c.s.deployments.size(), 2u);
  const Deployment& back = c.s.deployments[0];
  EXPECT_EQ(back.id, kOld) << "the same id, PRIMARY again";
  EXPECT_EQ(back.status, "PRIMARY");
  EXPECT_EQ(back.rollout_state, "IN_PROGRESS");
  EXPECT_EQ(back.rollout_state_reason, "ECS deployment circuit breaker: rolling back to deploymentId " + kOld + ".");
  EXPECT_EQ(back.desired_count, 2);
  EXPECT_EQ(back.failed_tasks, 0);
  const Deployment& failed = c.s.deployments[1];
  EXPECT_EQ(failed.id, kNew);
  EXPECT_EQ(failed.status, "ACTIVE");
  EXPECT_EQ(failed.rollout_state, "FAILED");
  EXPECT_EQ(failed.rollout_state_reason, "ECS deployment circuit breaker: tasks failed to start.");
  EXPECT_EQ(failed.failed_tasks, 3);
  std::vector<std::string> msgs = Messages(c.s);
  auto at = std::find(msgs.begin(), msgs.end(), "(service web) (deployment " + kNew + ") deployment failed: tasks failed to start.");
  ASSERT_NE(at, msgs.end());
  ASSERT_NE(at + 1, msgs.end());
  EXPECT_EQ(*(at + 1), "(service web) rolling back to deployment " + kOld + ".");

  // The same pass launched the rollback target's tasks; they run and the rollback completes.
  EXPECT_EQ(Launched(trip, kOld), 2);
  EXPECT_EQ(Launched(trip, kNew), 0);
  EXPECT_EQ(Stopped(trip), (std::set<std::string>{"stuck"})) << "the failed deployment drains";
  EXPECT_EQ(Launched(c.Step(), kOld), 0);
  for (int i = 0; i < 5 && !(c.s.deployments.size() == 1 && c.s.deployments[0].rollout_state == "COMPLETED"); ++i) {
    c.Step();
  }
  EXPECT_EQ(c.s.deployments.size(), 1u);
  EXPECT_EQ(c.s.deployments[0].id, kOld);
  EXPECT_EQ(c.s.deployments[0].rollout_state, "COMPLETED");
  EXPECT_EQ(c.s.deployments[0].rollout_state_reason, "ECS deployment " + kOld + " completed.");
}

TEST(PlanTest, WithoutRollbackAFailedDeploymentStaysPrimaryAndLaunchesNothing) {
  CrashLoop c;
  c.s = Rollout(2, 100, 200);
  c.s.circuit_breaker = true;
  c.tasks = {Running("o1", kOld), Running("o2", kOld)};
  for (int i = 0; i < 20 && c.s.deployments[0].rollout_state != "FAILED"; ++i) c.Step();
  ASSERT_EQ(c.s.deployments[0].rollout_state, "FAILED");
  EXPECT_EQ(c.s.deployments[0].id, kNew);
  EXPECT_EQ(c.s.deployments[0].status, "PRIMARY");
  for (int i = 0; i < 3; ++i) {
    Decision d = c.Step();
    EXPECT_TRUE(d.launches.empty());
    EXPECT_TRUE(d.stops.empty()) << "the old deployment keeps its tasks";
  }
  EXPECT_EQ(Find(c.s, kOld)->desired_count, 2);
}

// resetOnHealthyTask (default true, AWS's "consecutive" model): a task of the deployment that
// becomes healthy resets the count to 0; failures after it count again until the deployment
// completes.
TEST(PlanTest, AHealthyTaskResetsTheFailureCountAndLaterFailuresCountAgain) {
  ServiceState s = Service(4);  // threshold 3
  s.circuit_breaker = true;
  ASSERT_TRUE(s.reset_on_healthy_task) << "AWS's default";
  TimePoint now = kT0 + hours(1);
  std::vector<TaskView> tasks = {FailedStart("f1", kNew, now - seconds(100)), FailedStart("f2", kNew, now - seconds(90))};
  Decide(s, Obs(now - seconds(80), tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 2);

  // RUNNING since now - 60 s, without health checks: healthy since now - 20 s (the 40 s settle).
  tasks.push_back(Running("ok", kNew, now - seconds(61)));
  Decide(s, Obs(now, tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 0) << "the healthy task reset the count";
  EXPECT_EQ(s.deployments[0].breaker_reset_at, now - seconds(20));

  // Failures after it count again: two crashes (they ran, then exited) ...
  tasks.push_back(Exited("c1", kNew, now + seconds(1), seconds(1)));
  tasks.push_back(Exited("c2", kNew, now + seconds(2), seconds(1)));
  Decide(s, Obs(now + seconds(5), tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 2);
  ServiceState again = s;
  Decide(again, Obs(now + seconds(6), tasks));
  EXPECT_EQ(again.deployments[0].failed_tasks, 2) << "a pass over the same tasks counts nothing twice";

  // ... until another task becomes healthy (RUNNING from now + 3 s: healthy at now + 43 s).
  tasks.push_back(Running("ok2", kNew, now + seconds(2)));
  Decide(s, Obs(now + seconds(45), tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 0);
  EXPECT_EQ(s.deployments[0].breaker_reset_at, now + seconds(43));

  // Three failures in a row now fail the deployment.
  for (int i = 0; i < 3; ++i) tasks.push_back(FailedStart(fmt::format("g{}", i), kNew, now + seconds(50 + i)));
  Decide(s, Obs(now + seconds(60), tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 3);
  EXPECT_EQ(s.deployments[0].rollout_state, "FAILED");
}

TEST(PlanTest, WithoutResetOnHealthyTaskEveryFailureOfTheDeploymentCounts) {
  ServiceState s = Service(4);
  s.circuit_breaker = true;
  s.reset_on_healthy_task = false;  // AWS's "cumulative" model
  TimePoint now = kT0 + hours(1);
  std::vector<TaskView> tasks = {FailedStart("f1", kNew, now - seconds(100)), FailedStart("f2", kNew, now - seconds(90)),
                                 Running("ok", kNew, now - seconds(61))};
  Decide(s, Obs(now, tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 2) << "the healthy task resets nothing";
  EXPECT_EQ(s.deployments[0].rollout_state, "IN_PROGRESS");
  tasks.push_back(Exited("c1", kNew, now + seconds(1), seconds(1)));
  Decide(s, Obs(now + seconds(5), tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 3);
  EXPECT_EQ(s.deployments[0].rollout_state, "FAILED");
}

// With health checks, the moment a check first passed is not observed: the task's start stands in
// for it, so a reset erases the failures before that start and keeps the later ones.
TEST(PlanTest, AHealthCheckedTaskResetsTheCountFromItsStart) {
  ServiceState s = Service(4);
  s.circuit_breaker = true;
  TimePoint now = kT0 + hours(1);
  TaskView ok = Running("ok", kNew, now - seconds(11));  // RUNNING since now - 10 s
  ok.has_health_checks = true;
  ok.health_status = "HEALTHY";
  std::vector<TaskView> tasks = {FailedStart("before", kNew, now - seconds(30)), ok,
                                 FailedStart("while-checking", kNew, now - seconds(8))};
  Decide(s, Obs(now, tasks));
  EXPECT_EQ(s.deployments[0].breaker_reset_at, now - seconds(10));
  EXPECT_EQ(s.deployments[0].failed_tasks, 1) << "only the failure after its start is left";
}

TEST(PlanTest, TheThresholdConfigurationSetsHowManyFailuresFailADeployment) {
  using service::FailureThreshold;
  using service::FailureThresholdConfig;
  using service::ThresholdType;
  EXPECT_EQ(FailureThreshold(2, {ThresholdType::kBoundedPercent, 50}), 3) << "the default, bounded below by 3";
  EXPECT_EQ(FailureThreshold(400, {ThresholdType::kBoundedPercent, 25}), 100);
  EXPECT_EQ(FailureThreshold(1000, {ThresholdType::kBoundedPercent, 100}), 200) << "and above by 200";
  EXPECT_EQ(FailureThreshold(1000, {ThresholdType::kUnboundedPercent, 50}), 500);
  EXPECT_EQ(FailureThreshold(5, {ThresholdType::kUnboundedPercent, 10}), 1) << "rounded up";
  EXPECT_EQ(FailureThreshold(0, {ThresholdType::kUnboundedPercent, 10}), 1) << "Paddock's floor of 1";
  EXPECT_EQ(FailureThreshold(50, {ThresholdType::kCount, 7}), 7);

  ServiceState s = Service(10);
  s.circuit_breaker = true;
  s.failure_threshold = {ThresholdType::kCount, 1};
  Decide(s, Obs(kT0 + hours(1), {FailedStart("f", kNew, kT0 + hours(1) - seconds(5))}));
  EXPECT_EQ(s.deployments[0].rollout_state, "FAILED") << "COUNT 1: the first failure";
}

TEST(PlanTest, ARollbackRequestRollsBackWithoutTheRollbackOption) {
  ServiceState s = Rollout(1, 100, 200);
  s.deployments[0].rollback_requested = true;
  Decision d = Decide(s, Obs(kT0 + hours(1), {Running("o", kOld), Running("n", kNew)}));
  ASSERT_EQ(s.deployments.size(), 2u);
  EXPECT_EQ(s.deployments[0].id, kOld);
  EXPECT_EQ(s.deployments[0].status, "PRIMARY");
  EXPECT_EQ(s.deployments[0].rollout_state, "IN_PROGRESS");
  EXPECT_EQ(s.deployments[1].id, kNew);
  EXPECT_EQ(s.deployments[1].status, "ACTIVE");
  EXPECT_FALSE(s.deployments[1].rollback_requested);
  EXPECT_THAT(Messages(s), ElementsAre("(service web) rolling back to deployment " + kOld + ".",
                                       "(service web) has stopped 1 running tasks: (task n)."));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"n"})) << "the old task is the PRIMARY's one again";
}

TEST(PlanTest, FailedStartsBackOffExponentiallyUpToTheCapAndARunningTaskResets) {
  ServiceState s = Service(1);
  TimePoint now = kT0 + hours(1);
  std::vector<TaskView> tasks;
  std::vector<milliseconds> delays;
  for (int i = 0; i < 6; ++i) {
    tasks.push_back(FailedStart(fmt::format("f{}", i), kNew, now - seconds(1)));
    Observed o = Obs(now, tasks);
    o.backoff_base = seconds(10);
    o.backoff_cap = seconds(60);
    Decision d = Decide(s, o);
    EXPECT_EQ(s.deployments[0].launch_failures, i + 1);
    delays.push_back(std::chrono::duration_cast<milliseconds>(s.deployments[0].next_launch_at - now));
    EXPECT_TRUE(d.launches.empty()) << "held back";
    ASSERT_TRUE(d.wake_at);
    EXPECT_EQ(*d.wake_at, s.deployments[0].next_launch_at);
    // At next_launch_at it launches.
    o.now = s.deployments[0].next_launch_at;
    Decision later = Decide(s, o);
    EXPECT_EQ(Launched(later, kNew), 1);
    EXPECT_EQ(s.deployments[0].launch_failures, i + 1) << "the same failures are not counted again";
    now = o.now + seconds(1);
  }
  EXPECT_EQ(delays, (std::vector<milliseconds>{seconds(10), seconds(20), seconds(40), seconds(60), seconds(60),
                                               seconds(60)}));
  // The event was written once (it stays the newest in this pass sequence).
  int n = 0;
  for (const auto& m : Messages(s)) n += m == "(service web) is unable to consistently start tasks successfully." ? 1 : 0;
  EXPECT_EQ(n, 1);

  // A task reaching RUNNING resets the throttle.
  tasks.push_back(Running("ok", kNew, now));
  tasks.back().started_at = now + seconds(1);
  Decision d = Decide(s, Obs(now + seconds(2), tasks));
  EXPECT_EQ(s.deployments[0].launch_failures, 0);
  EXPECT_EQ(s.deployments[0].next_launch_at, TimePoint{});
  EXPECT_TRUE(d.launches.empty());
}

// A task whose launch a server restart interrupted is launched again by the agent (agent.h,
// "Agent restart"): the scheduler sees it live all along (ACTIVATING, however long the restart
// took, then RUNNING), so nothing counts toward the circuit breaker, nothing backs off and no
// replacement is launched (issue 20). Torn down as a failed start instead, it would have counted.
TEST(PlanTest, ALaunchInterruptedByARestartAndLaunchedAgainIsNoFailure) {
  const std::string kUnable = "(service web) is unable to consistently start tasks successfully.";
  ServiceState s = Service(1);
  const TimePoint launched = kT0 + seconds(2);
  TaskView t = Task("t1", kNew, "ACTIVATING", launched);
  for (TimePoint now : {launched + seconds(1), launched + std::chrono::minutes(10)}) {
    Decision d = Decide(s, Obs(now, {t}));
    EXPECT_EQ(Launched(d, kNew), 0) << "the task is still under way: no replacement";
    EXPECT_EQ(s.deployments[0].failed_tasks, 0);
    EXPECT_EQ(s.deployments[0].launch_failures, 0);
    EXPECT_EQ(s.deployments[0].next_launch_at, TimePoint{});
  }
  t.last_status = "RUNNING";
  t.started_at = launched + std::chrono::minutes(10) + seconds(5);
  Decision d = Decide(s, Obs(*t.started_at + seconds(1), {t}));
  EXPECT_EQ(Launched(d, kNew), 0);
  EXPECT_EQ(s.deployments[0].failed_tasks, 0);
  EXPECT_EQ(s.deployments[0].launch_failures, 0);
  EXPECT_THAT(Messages(s), ::testing::Not(::testing::Contains(kUnable)));
  EXPECT_NE(s.deployments[0].rollout_state, "FAILED");

  // What the earlier agent did (torn down as TaskFailedToStart) was a failure and a backoff.
  ServiceState before = Service(1);
  TaskView failed = FailedStart("t1", kNew, launched);
  failed.stopped_reason = "Task stopped: the agent restarted while the task was starting";
  Decide(before, Obs(launched + std::chrono::minutes(10), {failed}));
  EXPECT_EQ(before.deployments[0].failed_tasks, 1);
  EXPECT_EQ(before.deployments[0].launch_failures, 1);
}

TEST(PlanTest, PlacementFailuresWriteOneEventCountForTheBreakerAndBackOff) {
  ServiceState s = Service(1);
  Observed o = Obs(kT0, {});
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", o,
                         "arn:aws:ecs:us-east-1:000000000000:container-instance/default/3f4de1c5");
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", o,
                         "arn:aws:ecs:us-east-1:000000000000:container-instance/default/3f4de1c5");
  EXPECT_THAT(Messages(s),
              ElementsAre("(service web) was unable to place a task because no container instance met all of its "
                          "requirements. The closest matching (container-instance 3f4de1c5) has insufficient memory "
                          "available. For more information, see the Troubleshooting section of the Amazon ECS "
                          "Developer Guide."));
  EXPECT_EQ(s.deployments[0].failed_tasks, 2);
  EXPECT_EQ(s.deployments[0].launch_failures, 2);
  EXPECT_EQ(s.deployments[0].next_launch_at, kT0 + seconds(20));
  Decision d = Decide(s, Obs(kT0 + seconds(1), {}));
  EXPECT_TRUE(d.launches.empty()) << "backing off";
  EXPECT_EQ(s.deployments[0].failed_tasks, 2) << "kept: no observed task carries them";

  ServiceState bare = Service(1);
  RecordPlacementFailure(bare, kNew, "", o);
  EXPECT_THAT(Messages(bare), ElementsAre("(service web) was unable to place a task because no container instance met "
                                          "all of its requirements."));
}

// Placement failures (no task shows them) and tasks that failed to start count toward the circuit
// breaker as their sum, in either order (issue 20).
TEST(PlanTest, PlacementFailuresAndFailedStartsCountTogether) {
  ServiceState s = Service(1);
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", Obs(kT0, {}));
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", Obs(kT0, {}));
  ASSERT_EQ(s.deployments[0].failed_tasks, 2);
  // Then one start fails: 2 + 1.
  Decide(s, Obs(kT0 + hours(1), {FailedStart("f1", kNew, kT0 + std::chrono::minutes(30))}));
  EXPECT_EQ(s.deployments[0].failed_tasks, 3);
  // Another placement failure after it: 3 + 1, the failed task still counted.
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", Obs(kT0 + hours(1), {}));
  Decide(s, Obs(kT0 + hours(2), {FailedStart("f1", kNew, kT0 + std::chrono::minutes(30))}));
  EXPECT_EQ(s.deployments[0].failed_tasks, 4);
}

// With the default threshold of 3 (D = 1), one placement failure and two failed starts trip the
// breaker, whichever comes first (issue 20).
TEST(PlanTest, OnePlacementFailureAndTwoFailedStartsTripTheBreakerAtThree) {
  ASSERT_EQ(BreakerThreshold(1), 3);
  const auto starts = std::vector<TaskView>{FailedStart("f1", kNew, kT0 + seconds(20)),
                                            FailedStart("f2", kNew, kT0 + seconds(40))};
  // The placement failure first.
  ServiceState a = Rollout(1);
  a.circuit_breaker = true;
  RecordPlacementFailure(a, kNew, "RESOURCE:MEMORY", Obs(kT0 + seconds(10), {}));
  Decide(a, Obs(kT0 + seconds(30), {starts[0]}));
  EXPECT_EQ(a.deployments[0].rollout_state, "IN_PROGRESS") << "1 + 1";
  Decide(a, Obs(kT0 + hours(1), starts));
  EXPECT_EQ(Find(a, kNew)->rollout_state, "FAILED");
  EXPECT_EQ(Find(a, kNew)->failed_tasks, 3);

  // The failed starts first.
  ServiceState b = Rollout(1);
  b.circuit_breaker = true;
  Decide(b, Obs(kT0 + hours(1), starts));
  EXPECT_EQ(b.deployments[0].rollout_state, "IN_PROGRESS") << "2";
  RecordPlacementFailure(b, kNew, "RESOURCE:MEMORY", Obs(kT0 + hours(1), {}));
  Decide(b, Obs(kT0 + hours(2), starts));
  EXPECT_EQ(Find(b, kNew)->rollout_state, "FAILED");
  EXPECT_EQ(Find(b, kNew)->failed_tasks, 3);
}

TEST(PlanTest, FargateRefusalsWriteEcssReasonEventCountAndBackOff) {
  ServiceState s = Service(1);
  Observed o = Obs(kT0, {});
  RecordLaunchRefused(s, kNew,
                      "Capacity is unavailable at this time. Please try again later or in a different availability zone",
                      o);
  RecordLaunchRefused(s, kNew,
                      "Capacity is unavailable at this time. Please try again later or in a different availability zone",
                      o);
  RecordLaunchRefused(s, kNew, "You\u2019ve reached the limit on the number of vCPUs you can run concurrently", o);
  EXPECT_THAT(Messages(s),
              ElementsAre("(service web) was unable to place a task. Reason: Capacity is unavailable at this time. "
                          "Please try again later or in a different availability zone. For more information, see the "
                          "Troubleshooting section of the Amazon ECS Developer Guide.",
                          "(service web) was unable to place a task. Reason: You\u2019ve reached the limit on the "
                          "number of vCPUs you can run concurrently. For more information, see the Troubleshooting "
                          "section of the Amazon ECS Developer Guide."));
  EXPECT_EQ(s.deployments[0].failed_tasks, 3);
  EXPECT_EQ(s.deployments[0].launch_failures, 3);
  EXPECT_EQ(s.deployments[0].next_launch_at, kT0 + seconds(40));
  EXPECT_TRUE(Decide(s, Obs(kT0 + seconds(1), {})).launches.empty()) << "backing off";
}

TEST(PlanTest, ADrainingServiceStopsEveryTaskThenBecomesInactive) {
  ServiceState s = Rollout(0);
  s.status = "DRAINING";
  Decision d = Decide(s, Obs(kT0 + hours(1), {Running("a", kNew), Running("b", kOld), Task("c", kNew, "PENDING"),
                                              Stopping(Running("d", kNew))}));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(s.status, "DRAINING");
  EXPECT_EQ(s.deployments[0].desired_count, 0);
  for (const auto& stop : d.stops) EXPECT_THAT(stop.reason, ::testing::StartsWith("Scaling activity initiated by (deployment"));

  TaskView gone = Running("a", kNew);
  gone.last_status = "STOPPED";
  Decision last = Decide(s, Obs(kT0 + hours(1) + seconds(5), {gone}));
  EXPECT_EQ(s.status, "INACTIVE");
  EXPECT_TRUE(last.state_changed);
  EXPECT_TRUE(last.stops.empty());
  EXPECT_FALSE(Decide(s, Obs(kT0 + hours(2), {gone})).state_changed);
}

// --- Safe rollouts by default (issue 10) -----------------------------------------------------------

// The default settings: tasks without health checks are healthy after 40 s RUNNING; a revision whose
// essential container exits right after it starts (sh -c "exit 1") fails its deployment at the
// threshold and, with rollback, the service returns to the last COMPLETED deployment. The old tasks
// are never stopped (minimumHealthyPercent 100: the new ones never became healthy).
TEST(PlanTest, ACrashLoopWithDefaultSettingsFailsItsDeploymentAndRollsBack) {
  ServiceState s = Rollout(3);
  s.circuit_breaker = true;
  s.rollback = true;
  TimePoint now = kT0 + hours(1);
  std::vector<TaskView> tasks = {Running("o1", kOld), Running("o2", kOld), Running("o3", kOld)};
  Observed first = Obs(now, tasks);
  EXPECT_EQ(first.settle, seconds(40)) << "AWS's wait for tasks without health checks is the default";
  Decision d = Decide(s, first);
  EXPECT_EQ(Launched(d, kNew), 3) << "maximumPercent 200: all three new tasks at once";
  EXPECT_TRUE(d.stops.empty());
  Store(s);

  // Each reaches RUNNING and exits a second later.
  for (int i = 0; i < 3; ++i) tasks.push_back(Exited(fmt::format("n{}", i), kNew, now + seconds(1 + i), seconds(1)));
  Decision trip = Decide(s, Obs(now + seconds(5), tasks));
  EXPECT_TRUE(trip.stops.empty()) << "the old tasks keep running throughout";
  EXPECT_TRUE(trip.launches.empty()) << "the rollback target still has its three tasks";
  EXPECT_THAT(Messages(s), ElementsAre("(service web) (deployment " + kNew + ") deployment failed: tasks failed to start.",
                                       "(service web) rolling back to deployment " + kOld + "."));
  ASSERT_EQ(s.deployments.size(), 2u);
  EXPECT_EQ(s.deployments[0].id, kOld);
  EXPECT_EQ(s.deployments[0].rollout_state, "IN_PROGRESS") << "the rollback is stored as under way first";
  EXPECT_EQ(s.deployments[0].rollout_state_reason,
            "ECS deployment circuit breaker: rolling back to deploymentId " + kOld + ".");
  EXPECT_EQ(s.deployments[1].id, kNew);
  EXPECT_EQ(s.deployments[1].status, "ACTIVE");
  EXPECT_EQ(s.deployments[1].rollout_state, "FAILED");
  EXPECT_EQ(s.deployments[1].failed_tasks, 3);
  ASSERT_TRUE(trip.wake_at);
  EXPECT_EQ(*trip.wake_at, now + seconds(5) + milliseconds(1)) << "and completed by the pass right after";
  Store(s);

  Decide(s, Obs(*trip.wake_at, tasks));
  EXPECT_THAT(Messages(s), ElementsAre("(service web) (deployment " + kOld + ") deployment completed.",
                                       "(service web) has reached a steady state."));
  ASSERT_EQ(s.deployments.size(), 1u) << "the failed deployment has no task left: it leaves with the completion";
  EXPECT_EQ(s.deployments[0].id, kOld);
  EXPECT_EQ(s.deployments[0].status, "PRIMARY");
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
  EXPECT_EQ(s.last_completed->id, kOld);
}

// Why the settle time is the default: with settle 0 a task is healthy the moment it is seen RUNNING,
// so a pass that sees the crash-looping tasks up replaces the old ones with them and completes.
TEST(PlanTest, WithoutASettleTimeACrashLoopSeenRunningCompletes) {
  ServiceState s = Rollout(3);
  s.circuit_breaker = true;
  s.rollback = true;
  TimePoint now = kT0 + hours(1);
  std::vector<TaskView> tasks = {Running("o1", kOld), Running("o2", kOld), Running("o3", kOld),
                                 Running("n1", kNew, now), Running("n2", kNew, now), Running("n3", kNew, now)};
  Observed o = Obs(now + seconds(1), tasks);  // RUNNING for a moment, about to exit
  o.settle = seconds(0);
  Decision d = Decide(s, o);
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"o1", "o2", "o3"})) << "the old tasks go at once";
  Observed with_default = Obs(now + seconds(1), tasks);
  ServiceState safe = Rollout(3);
  EXPECT_TRUE(Decide(safe, with_default).stops.empty()) << "with the default they stay";
}

// A task of the deployment that stops on its own before the deployment completes is a failure,
// however long it ran; a stop by a user or by the scheduler is not. Once the deployment is
// COMPLETED, stopped tasks are replaced and no longer counted.
TEST(PlanTest, ATaskThatStopsBeforeTheDeploymentCompletesCountsAsAFailure) {
  ServiceState s = Service(2);
  s.circuit_breaker = true;
  TimePoint now = kT0 + hours(1);
  TaskView by_user = Exited("user", kNew, now - seconds(30), seconds(10));
  by_user.stop_code = "UserInitiated";
  by_user.stopped_reason = "Task stopped by user";
  TaskView by_scheduler = Exited("scaled", kNew, now - seconds(30), seconds(10));
  by_scheduler.stop_code = "ServiceSchedulerInitiated";
  by_scheduler.stopped_reason = "Scaling activity initiated by (deployment " + kNew + ")";
  TaskView crashed = Exited("crashed", kNew, now - seconds(30), seconds(20));  // RUNNING for 20 s
  std::vector<TaskView> tasks = {by_user, by_scheduler, crashed, Running("a", kNew, now - seconds(6)),
                                 Running("b", kNew, now - seconds(6))};
  Decide(s, Obs(now, tasks));
  EXPECT_EQ(s.deployments[0].failed_tasks, 1) << "only the crash";
  EXPECT_EQ(s.deployments[0].launch_failures, 0) << "it had reached RUNNING: no start failure, no backoff";
  EXPECT_EQ(s.deployments[0].rollout_state, "IN_PROGRESS");

  Decide(s, Obs(now + seconds(40), tasks));  // a and b have run for 40 s
  ASSERT_EQ(s.deployments[0].rollout_state, "COMPLETED");
  tasks[3] = Exited("a", kNew, now - seconds(5), seconds(50));  // a exits after the completion
  Decision d = Decide(s, Obs(now + seconds(50), tasks));
  EXPECT_EQ(Launched(d, kNew), 1) << "replaced";
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
  EXPECT_EQ(s.deployments[0].failed_tasks, 0) << "no longer counted";
}

// Steady state needs the new tasks to have stayed up for the settle time: until then the rollout
// is IN_PROGRESS and the drained old deployment stays listed (so services-stable — one deployment,
// runningCount == desiredCount — does not return either), then both change in one pass.
TEST(PlanTest, SettleTimeGatesTheSteadyStateAndTheOldDeploymentStaysListedUntilThen) {
  ServiceState s = Rollout(2, 0, 100);  // minimumHealthyPercent 0: the old tasks went first
  TimePoint now = kT0 + hours(1);
  TaskView old_gone = Running("o", kOld);
  old_gone.last_status = old_gone.desired_status = "STOPPED";
  old_gone.stop_code = "ServiceSchedulerInitiated";
  old_gone.stopped_at = now - seconds(20);
  std::vector<TaskView> tasks = {old_gone, Running("n1", kNew, now - seconds(11)), Running("n2", kNew, now - seconds(11))};
  Decision d = Decide(s, Obs(now, tasks));
  EXPECT_EQ(s.deployments[0].rollout_state, "IN_PROGRESS");
  ASSERT_EQ(s.deployments.size(), 2u) << "services-stable must not see one deployment yet";
  EXPECT_EQ(s.deployments[0].running_count, 2);
  ASSERT_TRUE(d.wake_at);
  EXPECT_EQ(*d.wake_at, now + seconds(30)) << "when n1 and n2 have run for 40 s";
  EXPECT_THAT(Messages(s), IsEmpty());

  Decide(s, Obs(*d.wake_at, tasks));
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
  EXPECT_EQ(s.deployments.size(), 1u);
  EXPECT_THAT(Messages(s), ElementsAre("(service web) (deployment " + kNew + ") deployment completed.",
                                       "(service web) has reached a steady state."));
}

// Tasks with health checks are healthy once HEALTHY, with no settle wait: a rollout of them moves
// on as soon as the checks pass. (UNKNOWN stays unhealthy however long it runs.)
TEST(PlanTest, HealthCheckedTasksAreHealthyOnceHealthyWithoutTheSettleWait) {
  TimePoint now = kT0 + hours(1);
  auto checked = [&](const std::string& id, const std::string& health) {
    TaskView t = Running(id, kNew, now - seconds(2));  // RUNNING for a second
    t.has_health_checks = true;
    t.health_status = health;
    return t;
  };
  ServiceState s = Rollout(2);
  Decision d = Decide(s, Obs(now, {Running("o1", kOld), Running("o2", kOld), checked("n1", "HEALTHY"),
                                   checked("n2", "HEALTHY")}));
  EXPECT_EQ(Stopped(d), (std::set<std::string>{"o1", "o2"})) << "the new tasks count as healthy at once";
  EXPECT_FALSE(d.wake_at) << "nothing to wait for";
  TaskView o1 = Running("o1", kOld), o2 = Running("o2", kOld);
  o1.last_status = o1.desired_status = o2.last_status = o2.desired_status = "STOPPED";
  Decide(s, Obs(now + seconds(1), {o1, o2, checked("n1", "HEALTHY"), checked("n2", "HEALTHY")}));
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");

  ServiceState unknown = Rollout(2);
  TaskView n1 = checked("n1", "UNKNOWN"), n2 = checked("n2", "UNKNOWN");
  n1.started_at = n2.started_at = now - hours(1);
  EXPECT_TRUE(Decide(unknown, Obs(now, {Running("o1", kOld), Running("o2", kOld), n1, n2})).stops.empty())
      << "no settle fallback for a task whose checks never passed";
}

// --- DAEMON -----------------------------------------------------------------------------------

std::string Inst(int i) { return fmt::format("arn:aws:ecs:us-east-1:000000000000:container-instance/default/i{}", i); }
TaskView On(TaskView t, int instance) {
  t.container_instance_arn = Inst(instance);
  return t;
}

TEST(PlanTest, DaemonRunsOneTaskPerActiveInstance) {
  ServiceState s = Service(0, 0, 100);
  s.scheduling_strategy = "DAEMON";
  Observed o = Obs(kT0, {});
  o.instances = {{Inst(1), "ACTIVE"}, {Inst(2), "ACTIVE"}};
  Decision d = Decide(s, o);
  ASSERT_EQ(d.launches.size(), 2u);
  EXPECT_EQ(d.launches[0].container_instance_arn, Inst(1));
  EXPECT_EQ(d.launches[1].container_instance_arn, Inst(2));
  EXPECT_EQ(d.launches[0].count, 1);
  EXPECT_EQ(s.desired_count, 2);

  // A third instance appears; the second drains.
  o.now = kT0 + hours(1);
  o.tasks = {On(Running("a", kNew), 1), On(Running("b", kNew), 2)};
  o.instances = {{Inst(1), "ACTIVE"}, {Inst(2), "DRAINING"}, {Inst(3), "ACTIVE"}};
  Decision e = Decide(s, o);
  ASSERT_EQ(e.launches.size(), 1u);
  EXPECT_EQ(e.launches[0].container_instance_arn, Inst(3));
  EXPECT_EQ(Stopped(e), (std::set<std::string>{"b"}));
  EXPECT_EQ(s.desired_count, 2);

  // An instance that vanished: its task is stopped too.
  o.tasks = {On(Running("a", kNew), 1), On(Running("c", kNew), 3), On(Running("z", kNew), 9)};
  o.instances = {{Inst(1), "ACTIVE"}, {Inst(3), "ACTIVE"}};
  Decision f = Decide(s, o);
  EXPECT_EQ(Stopped(f), (std::set<std::string>{"z"}));
  EXPECT_TRUE(f.launches.empty());

  // Converged: completed once, then idle passes change nothing.
  o.tasks.pop_back();
  o.now += seconds(1);
  Store(s);
  Decision g = Decide(s, o);
  EXPECT_EQ(s.deployments[0].rollout_state, "COMPLETED");
  EXPECT_EQ(s.deployments[0].running_count, 2);
  EXPECT_EQ(s.deployments[0].desired_count, 2);
  EXPECT_THAT(Messages(s), ElementsAre("(service web) (deployment " + kNew + ") deployment completed.",
                                       "(service web) has reached a steady state."));
  Store(s);
  o.now += hours(1);
  EXPECT_FALSE(Decide(s, o).state_changed);
  EXPECT_THAT(Messages(s), IsEmpty());
}

// DAEMON: a launch that finds no room on one instance backs off that instance only — the others
// still get their task at once — and counts toward the circuit breaker (issue 20).
TEST(PlanTest, DaemonPlacementFailureBacksOffThatInstanceOnly) {
  ServiceState s = Service(0, 0, 100);
  s.scheduling_strategy = "DAEMON";
  Observed o = Obs(kT0, {});
  o.instances = {{Inst(1), "ACTIVE"}};
  ASSERT_EQ(Decide(s, o).launches.size(), 1u);
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", o, Inst(1));
  Store(s);
  EXPECT_EQ(s.deployments[0].failed_tasks, 1);
  EXPECT_EQ(s.deployments[0].next_launch_at, TimePoint{}) << "the deployment does not back off";

  // Two instances join a second later: each gets its task at once; instance 1 waits its 10 s.
  o.now = kT0 + seconds(1);
  o.instances = {{Inst(1), "ACTIVE"}, {Inst(2), "ACTIVE"}, {Inst(3), "ACTIVE"}};
  Decision d = Decide(s, o);
  std::vector<std::string> onto;
  for (const auto& l : d.launches) onto.push_back(l.container_instance_arn);
  EXPECT_THAT(onto, ElementsAre(Inst(2), Inst(3)));
  EXPECT_EQ(d.wake_at, kT0 + seconds(10));

  // Its backoff ends: it is tried again; it fails again and waits twice as long, alone.
  o.now = kT0 + seconds(10);
  o.tasks = {On(Task("b", kNew, "PENDING", kT0 + seconds(1)), 2), On(Task("c", kNew, "PENDING", kT0 + seconds(1)), 3)};
  Decision e = Decide(s, o);
  ASSERT_EQ(e.launches.size(), 1u);
  EXPECT_EQ(e.launches[0].container_instance_arn, Inst(1));
  RecordPlacementFailure(s, kNew, "RESOURCE:MEMORY", o, Inst(1));
  ASSERT_EQ(s.deployments[0].instance_backoffs.size(), 1u);
  EXPECT_EQ(s.deployments[0].instance_backoffs[0].next_launch_at, kT0 + seconds(30));
  EXPECT_EQ(s.deployments[0].failed_tasks, 2);

  // Room is made: its task reaches RUNNING and the backoff is gone.
  o.now = kT0 + seconds(30);
  EXPECT_EQ(Decide(s, o).launches.size(), 1u);
  o.now = kT0 + seconds(40);
  o.tasks.push_back(On(Running("a", kNew, kT0 + seconds(30)), 1));
  Decide(s, o);
  EXPECT_THAT(s.deployments[0].instance_backoffs, IsEmpty());
}

TEST(PlanTest, DaemonDeploymentReplacesInstanceByInstance) {
  ServiceState s = Rollout(0, 50, 100);
  s.scheduling_strategy = "DAEMON";
  Observed o = Obs(kT0 + hours(1), {On(Running("o1", kOld), 1), On(Running("o2", kOld), 2)});
  o.instances = {{Inst(1), "ACTIVE"}, {Inst(2), "ACTIVE"}};
  Decision d = Decide(s, o);
  EXPECT_EQ(Stopped(d).size(), 1u) << "min 50 % of 2: one at a time";
  EXPECT_TRUE(d.launches.empty()) << "the new task waits for the old one to be gone";
  std::string first = *Stopped(d).begin();
  int inst = first == "o1" ? 1 : 2;

  // The stopped one is gone: its instance gets the new task; the other old one stays for now.
  for (auto& t : o.tasks)
    if (t.id == first) t.last_status = "STOPPED", t.desired_status = "STOPPED";
  o.now += seconds(1);
  Decision e = Decide(s, o);
  ASSERT_EQ(e.launches.size(), 1u);
  EXPECT_EQ(e.launches[0].container_instance_arn, Inst(inst));
  EXPECT_EQ(e.launches[0].deployment_id, kNew);
  EXPECT_TRUE(e.stops.empty()) << "the other old task is the only healthy one left";

  // min 0 (the API default): both old ones go at once.
  ServiceState z = Rollout(0, 0, 100);
  z.scheduling_strategy = "DAEMON";
  o.tasks = {On(Running("o1", kOld), 1), On(Running("o2", kOld), 2)};
  Decision all = Decide(z, o);
  EXPECT_EQ(Stopped(all).size(), 2u);
}

// --- Task sets (EXTERNAL) -----------------------------------------------------------------------

TEST(PlanTest, TaskSetsReachTheirComputedDesiredCountIndependently) {
  ServiceState s;
  s.key.name = "web";
  s.status = "ACTIVE";
  s.scheduling_strategy = "REPLICA";
  s.controller = "EXTERNAL";
  s.desired_count = 10;
  Deployment a = Dep("ecs-svc/a", "PRIMARY");
  a.rollout_state.clear();
  a.rollout_state_reason.clear();
  a.scale_percent = 12;
  Deployment b = a;
  b.id = "ecs-svc/b";
  b.status = "ACTIVE";
  b.scale_percent = 10;
  s.deployments = {a, b};
  std::vector<TaskView> tasks = {Running("b1", "ecs-svc/b"), Running("b2", "ecs-svc/b"), Running("b3", "ecs-svc/b")};
  Decision d = Decide(s, Obs(kT0 + hours(1), tasks));
  EXPECT_EQ(s.deployments[0].desired_count, 2) << "1.2 rounds up";
  EXPECT_EQ(s.deployments[1].desired_count, 1);
  EXPECT_EQ(Launched(d, "ecs-svc/a"), 2);
  EXPECT_EQ(Stopped(d).size(), 2u);
  EXPECT_EQ(s.deployments[0].stability_status, "STABILIZING");
  EXPECT_EQ(s.deployments[0].stability_status_at, kT0 + hours(1));
  EXPECT_EQ(s.deployments[0].rollout_state, "") << "task sets have no rollout state";

  std::vector<TaskView> settled = {Running("a1", "ecs-svc/a"), Running("a2", "ecs-svc/a"), Running("b1", "ecs-svc/b")};
  Decision e = Decide(s, Obs(kT0 + hours(2), settled));
  EXPECT_TRUE(e.launches.empty());
  EXPECT_TRUE(e.stops.empty());
  EXPECT_EQ(s.deployments[0].stability_status, "STEADY_STATE");
  EXPECT_EQ(s.deployments[0].stability_status_at, kT0 + hours(2));
  EXPECT_EQ(s.deployments[1].stability_status, "STEADY_STATE");
  EXPECT_THAT(Messages(s), ::testing::Each(::testing::HasSubstr("has stopped")));
  Store(s);
  EXPECT_FALSE(Decide(s, Obs(kT0 + hours(3), settled)).state_changed);
}

// --- The simulated rollout ------------------------------------------------------------------------

struct Bounds {
  int64_t min_healthy;
  int64_t max;
  int settle_seconds = 0;  // RUNNING time before a task counts as healthy
};
void PrintTo(const Bounds& b, std::ostream* os) {
  *os << fmt::format("min {} max {} settle {}s", b.min_healthy, b.max, b.settle_seconds);
}

class RolloutSimulation : public ::testing::TestWithParam<Bounds> {};

TEST_P(RolloutSimulation, StaysWithinTheBoundsAndCompletes) {
  const auto [min_healthy, max, settle_seconds] = GetParam();
  const seconds settle(settle_seconds);
  const int64_t desired = 10;
  const int64_t lower = (desired * min_healthy + 99) / 100, upper = desired * max / 100;
  ServiceState s = Rollout(desired, min_healthy, max);
  std::vector<TaskView> tasks;
  for (int i = 0; i < desired; ++i) tasks.push_back(Running(fmt::format("old{}", i), kOld, kT0 + seconds(i)));
  TimePoint now = kT0 + hours(1);
  int next = 0;
  auto healthy = [&] {
    int64_t n = 0;
    for (const auto& t : tasks) {
      n += t.last_status == "RUNNING" && t.desired_status == "RUNNING" && now - *t.started_at >= settle ? 1 : 0;
    }
    return n;
  };
  auto total = [&] {
    int64_t n = 0;
    for (const auto& t : tasks) n += t.last_status != "STOPPED" ? 1 : 0;
    return n;
  };

  int step = 0;
  std::optional<TimePoint> wake;
  bool woke = false;  // a pass ran only because the plan asked for it
  for (; step < 100 && s.deployments[0].rollout_state != "COMPLETED"; ++step) {
    // The next pass: on the next event (a task changing state), else when the plan asked to wake.
    bool events = false;
    for (const auto& t : tasks) {
      events = events || (t.last_status != "STOPPED" && (t.desired_status == "STOPPED" || t.last_status == "PENDING"));
    }
    if (step > 0 && !events) {
      ASSERT_TRUE(wake.has_value()) << "stalled at step " << step;
      now = *wake;
      woke = true;
    } else {
      now += seconds(1);
    }
    // The world moves one step: stops land, launches run.
    for (auto& t : tasks) {
      if (t.last_status == "STOPPED") continue;
      if (t.desired_status == "STOPPED") {
        t.last_status = "STOPPED";
        t.stopped_at = now;
      } else if (t.last_status == "PENDING") {
        t.last_status = "RUNNING";
        t.started_at = now;
      }
    }
    Observed o = Obs(now, tasks);
    o.settle = settle;
    Decision d = Decide(s, o);
    wake = d.wake_at;
    for (const auto& st : d.stops) {
      bool found = false;
      for (auto& t : tasks) {
        if (t.id != st.task_id) continue;
        found = true;
        EXPECT_NE(t.desired_status, "STOPPED") << "stopped twice: " << t.id;
        t.desired_status = "STOPPED";
        t.stopped_reason = st.reason;
      }
      EXPECT_TRUE(found);
    }
    for (const auto& l : d.launches) {
      std::vector<std::string> ids;
      for (int i = 0; i < l.count; ++i) {
        ids.push_back(fmt::format("new{}", next++));
        tasks.push_back(Task(ids.back(), l.deployment_id, "PENDING", now));
      }
      RecordLaunched(s, l.deployment_id, ids, o);
    }
    EXPECT_LE(total(), upper) << "step " << step;
    EXPECT_GE(healthy(), lower) << "step " << step;
    EXPECT_THAT(Messages(s), ::testing::Not(::testing::Contains(kDeadlock)));
    Store(s);
  }
  ASSERT_EQ(s.deployments[0].rollout_state, "COMPLETED") << "after " << step << " steps";
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].id, kNew);
  EXPECT_EQ(s.deployments[0].running_count, desired);
  int64_t fresh = 0, old = 0;
  for (const auto& t : tasks) {
    if (t.last_status == "STOPPED") continue;
    (t.started_by == kNew ? fresh : old)++;
  }
  EXPECT_EQ(fresh, desired);
  EXPECT_EQ(old, 0);
  EXPECT_EQ(s.last_completed->id, kNew);
  EXPECT_EQ(woke, settle_seconds > 0) << "settling tasks are waited for through wake_at";
}

INSTANTIATE_TEST_SUITE_P(Bounds, RolloutSimulation,
                         ::testing::Values(Bounds{100, 200}, Bounds{50, 100}, Bounds{0, 100}, Bounds{100, 150},
                                           Bounds{75, 125}, Bounds{100, 200, 5}, Bounds{50, 100, 5},
                                           Bounds{75, 125, 5}),
                         [](const ::testing::TestParamInfo<Bounds>& p) {
                           return fmt::format("Min{}Max{}Settle{}", p.param.min_healthy, p.param.max,
                                              p.param.settle_seconds);
                         });

}  // namespace
}  // namespace paddock::sched
