// sched/plan: one scheduler decision for one service, as a pure function.
//
// Given a service's state (ecs/service/state.h) and what its tasks are doing now, Decide returns
// what to do next — tasks to launch, tasks to stop — and changes the state in place: deployment
// counts, rollout states, circuit breaker and rollback, backoff, events. It reads no clock, store
// or network, so every rule is unit-tested by feeding it observations (plan_test.cc), including a
// simulated rollout that checks minimumHealthyPercent and maximumPercent after every step.
//
//   Observed obs{.now = clock.Now(), .tasks = tasks_of_the_service};  // settle: kDefaultSettle
//   Decision d = Decide(state, obs);
//   // launch d.launches, stop d.stops, then Services::StoreState(state) if d.state_changed
//
// The rules (docs/contracts/service.md; AWS sources in /work/notes/issue4-research.md):
// - Tasks belong to the deployment (task set) whose id is their startedBy; a live task of none is
//   left over and stopped like an old one. Live = not STOPPED. A task being stopped (desired
//   STOPPED) counts toward the total but never as healthy. Healthy = RUNNING, desired RUNNING, and
//   HEALTHY when its definition has essential health checks (no further wait), else RUNNING for
//   `settle` (AWS: "the service scheduler will wait for 40 seconds after a task reaches a RUNNING
//   state", DeploymentConfiguration.minimumHealthyPercent).
// - Health checks: an UNHEALTHY task is left alone within healthCheckGracePeriodSeconds of its
//   start, then stopped ("Task failed container health checks"; event "(task …) failed container
//   health checks.") and counted as a breaker failure.
// - REPLICA rolling update: upper = floor(D × maximumPercent / 100), lower = ceil(D ×
//   minimumHealthyPercent / 100). The PRIMARY launches min(D − its tasks not being stopped,
//   upper − total); old tasks (ACTIVE deployments', left-over ones) that are pending or unhealthy
//   are stopped freely, healthy ones while the healthy total stays ≥ lower; the PRIMARY beyond D
//   is scaled in (not healthy first, newest first), healthy ones within the lower bound. When
//   neither bound leaves room, old tasks remain and nothing is under way, the "unable to stop or
//   start tasks" event is written. Scheduler stops give "Scaling activity initiated by
//   (deployment <the task's own deployment>)", also for DeleteService (our choice: AWS scales the
//   service in to 0). Stops of RUNNING tasks are listed in one "has stopped N running tasks" event.
// - Scale-in protection (TaskView::protected_until, issue 10): a protected task is skipped when
//   REPLICA old tasks are stopped and when the PRIMARY is scaled in (another, unprotected task is
//   stopped instead, if any); at its expiry the pass runs again. Failed health checks, DRAINING
//   services, DAEMON and task sets stop it as before.
// - A task on a DRAINING container instance (TaskView::on_draining_instance) is an old task: the
//   PRIMARY launches its replacement within maximumPercent, then it is stopped within the lower
//   bound; the rollout is not complete while one is left.
// - An ACTIVE deployment without a live task leaves deployments[], but while the PRIMARY is
//   IN_PROGRESS the newest such one stays listed until the PRIMARY completes or fails, so
//   services-stable (one deployment, running == desired) waits for the new tasks to be healthy
//   (only one: deployments replaced during a rollout do not pile up). An ACTIVE deployment's
//   desired count is the number of tasks the scheduler still keeps of it.
// - Every live task the PRIMARY's, running == desired, nothing pending, every live task healthy:
//   rollout COMPLETED ("deployment completed." then "has reached a steady state."), the drained
//   ACTIVE deployments leave, last_completed = a copy.
//   The steady-state event is written again only after the service left that state (for the ECS
//   controller, Deployment::stability_status is the scheduler's private marker of it).
// - Circuit breaker, while a deployment is IN_PROGRESS: failures = its tasks that stopped on
//   their own before it completed (before RUNNING, or after — an essential container that exits is
//   a failure however long it ran), its tasks stopped for failed health checks, and
//   RecordPlacementFailure calls. They are counted from the observed tasks (a high-water mark, so a
//   pass repeated on the same tasks counts nothing twice) after Deployment::breaker_reset_at. With
//   resetOnHealthyTask (the default), a task of the deployment becoming healthy resets the count
//   to 0 and moves breaker_reset_at to when it did: started_at + settle without health checks;
//   with them the moment is not observed and started_at stands in (earlier than the truth: a reset
//   erases no failure that came after it, and may leave one that came while the checks ran).
//   Without it every failure of the deployment counts. At the threshold (thresholdConfiguration;
//   by default min(200, max(3, ceil(0.5 × D)))) with the breaker on: FAILED, no more launches;
//   with rollback, last_completed becomes PRIMARY again with its own id, IN_PROGRESS, desired D,
//   counting afresh from now, and the failed one drains as ACTIVE; without it the FAILED PRIMARY
//   stays and old tasks are kept. Deployment::rollback_requested rolls back the same way,
//   whatever the rollback option.
// - Backoff: the n-th consecutive failed start (or placement failure) of a deployment holds its
//   launches until now + min(cap, base × 2^(n−1)) (Decision::wake_at); a task of it launched
//   after those failures reaching RUNNING resets the count (tasks that stop after RUNNING are not
//   throttled, as on AWS); "is unable to consistently start tasks successfully." is written when
//   the count grows. DAEMON placement failures back off only the instance the launch was for (the
//   same curve, per instance); a task of the PRIMARY launched there afterwards reaching RUNNING,
//   or the instance leaving the eligible ones, ends it.
// - The pass that rolls back does not also complete the rollback target: it asks to run again at
//   once (wake_at = now + 1 ms), so the rollback is stored as under way first.
// - Repeated events (deadlock, backoff, placement failure) are not written again while the newest
//   stored event (ServiceState::newest_event) is the same message and younger than 6 hours.
// - DRAINING service: every live task is stopped; with none left the service is INACTIVE.
// - DAEMON: D = the ACTIVE instances; tasks on DRAINING or vanished instances are stopped; each
//   ACTIVE instance gets one task of the PRIMARY (Launch with container_instance_arn, count 1), once
//   nothing else is left on it; a new deployment stops the old task of an instance first (within
//   the lower bound; maximumPercent is 100) and launches there when it is gone.
// - EXTERNAL: every task set reaches ComputedDesiredCount(D, scale) on its own (no rolling
//   bounds; a DRAINING one goes to 0 and leaves the list when empty); stabilityStatus is
//   STEADY_STATE when running == desired, nothing pending or under way and all tasks healthy, else
//   STABILIZING (stabilityStatusAt when it changes). No rolloutState, no breaker.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ecs/service/state.h"

namespace paddock::sched {

namespace service = ecs::service;

// One task of the service (group "service:<name>"), as the task owner reports it.
struct TaskView {
  std::string id;          // 32 hex
  std::string started_by;  // the deployment or task-set id that launched it
  std::string last_status;
  std::string desired_status;
  std::string health_status;  // HEALTHY | UNHEALTHY | UNKNOWN
  bool has_health_checks = false;  // an essential container of its definition defines one
  std::optional<TimePoint> started_at;  // when it reached RUNNING
  std::optional<TimePoint> stopped_at;
  std::string stop_code;      // e.g. EssentialContainerExited, TaskFailedToStart
  std::string stopped_reason;
  std::string container_instance_arn;  // EC2 tasks
  // Its container instance is DRAINING (or gone): the task is replaced as an old deployment's
  // would be — a replacement first within maximumPercent, then the stop within the lower bound.
  bool on_draining_instance = false;
  TimePoint created_at{};
  // Scale-in protection (UpdateTaskProtection): until then the REPLICA rollout neither scales the
  // task in nor replaces it; it stays counted, and a pass is due when the protection ends.
  std::optional<TimePoint> protected_until;
};

// A container instance a DAEMON service may run on (ACTIVE, in the service's cluster, meeting its
// placement constraints — the caller filters).
struct InstanceView {
  std::string arn;
  std::string status;  // ACTIVE | DRAINING
};

// How long a task without health checks must have been RUNNING to count as healthy: AWS's 40 s.
// (Tasks with health checks are healthy once HEALTHY.)
inline constexpr std::chrono::milliseconds kDefaultSettle{40000};

struct Observed {
  TimePoint now{};
  std::vector<TaskView> tasks;          // every task of the service not yet reaped, STOPPED included
  std::vector<InstanceView> instances;  // DAEMON only
  std::chrono::milliseconds settle = kDefaultSettle;  // RUNNING time before a task without health checks is healthy
  std::chrono::milliseconds backoff_base{10000};  // first delay after a task fails to start
  std::chrono::milliseconds backoff_cap{15 * 60 * 1000};
};

struct Launch {
  std::string deployment_id;  // launch with this deployment's task definition and launch config
  int64_t count = 0;
  std::string container_instance_arn;  // DAEMON: onto this instance (StartTask); else empty
};

struct Stop {
  std::string task_id;
  std::string reason;  // stoppedReason, e.g. "Scaling activity initiated by (deployment ecs-svc/…)"
};

struct Decision {
  std::vector<Launch> launches;
  std::vector<Stop> stops;
  bool state_changed = false;  // the state must be written back (counts, rollout, events, status)
  // The earliest time a pass is worth running again without any new event (a settle period
  // ending, a backoff expiring, a grace period ending); nullopt: only on events.
  std::optional<TimePoint> wake_at;
};

// Decides the next step for `state` and applies its consequences to `state` (see above). Launches
// and stops are what the caller must carry out; it reports their outcomes through the tasks the
// next pass observes (a launch that placed nothing comes back through RecordPlacementFailure).
Decision Decide(service::ServiceState& state, const Observed& observed);

// A launch of `deployment_id` started these tasks (32-hex ids): adds ECS's "has started N tasks"
// event and counts them as pending. The caller stores the state in the launch's own transaction.
void RecordLaunched(service::ServiceState& state, const std::string& deployment_id,
                    const std::vector<std::string>& task_ids, const Observed& observed);

// A launch of `deployment_id` could not be placed (`reason` as RunTask's failures give it, e.g.
// "RESOURCE:MEMORY"): counts a breaker failure, adds ECS's "was unable to place a task" event
// (deduplicated) and backs off.
// `instance_arn` names the closest-matching instance the reason is about (RunTask's failure arn);
// with it the event carries ECS's "The closest matching (container-instance …)" sentence. For a
// DAEMON service it is the instance the launch was for, and only that instance backs off
// (Deployment::instance_backoffs): the others still get their task at once.
void RecordPlacementFailure(service::ServiceState& state, const std::string& deployment_id, const std::string& reason,
                            const Observed& observed, const std::string& instance_arn = "");
// A launch of `deployment_id` was refused for a reason RunTask states as a sentence naming no
// instance (Fargate's: no capacity, the account's vCPU quota): counted and backed off as a
// placement failure, with ECS's event "(service x) was unable to place a task. Reason: <reason>.
// For more information, see the Troubleshooting section of the Amazon ECS Developer Guide."
void RecordLaunchRefused(service::ServiceState& state, const std::string& deployment_id, const std::string& reason,
                         const Observed& observed);

// A launch of `deployment_id` failed before any placement (ECS could not assume the task's task or
// execution role, ecs/task/role_check.h): counted and backed off as a placement failure, with
// ECS's event "service x failed to launch a task with (error <error>)." (deduplicated).
void RecordLaunchFailed(service::ServiceState& state, const std::string& deployment_id, const std::string& error,
                        const Observed& observed);

// Event texts, exactly as ECS writes them.
std::string ServiceEventPrefix(const std::string& service_name);  // "(service NAME)"

// The circuit breaker's failure threshold for a deployment of `desired` tasks with the default
// thresholdConfiguration (ecs::service::FailureThreshold gives it for any configuration).
int64_t BreakerThreshold(int64_t desired);

// A task set's computedDesiredCount: desired × scale% / 100, always rounded up (1.2 → 2).
int64_t ComputedDesiredCount(int64_t desired, double scale_percent);

}  // namespace paddock::sched
