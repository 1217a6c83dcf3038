// sched/plan: one scheduler decision for one service, as a pure function.
//
// Given a service's state (ecs/service/state.h) and what its tasks are doing now, Decide returns
// what to do next — tasks to launch, tasks to stop — and changes the state in place: deployment
// counts, rollout states, circuit breaker and rollback, backoff, events. It reads no clock, store
// or network, so every rule is unit-tested by feeding it observations (plan_test.cc), including a
// simulated rollout that checks minimumHealthyPercent and maximumPercent after every step.
//
//   Observed obs{.now = clock.Now(), .tasks = tasks_of_the_service, .settle = 0s};
//   Decision d = Decide(state, obs);
//   // launch d.launches, stop d.stops, then Services::StoreState(state) if d.state_changed
//
// The rules (docs/contracts/service.md):
// - A task counts as healthy when it is RUNNING, not being stopped, has been RUNNING for `settle`,
//   and — when its definition has essential health checks — reports HEALTHY.
// - Total (tasks not STOPPED, being stopped or not) never exceeds floor(desired × maximumPercent /
//   100); healthy tasks never drop below ceil(desired × minimumHealthyPercent / 100) by a stop the
//   scheduler makes. Launches first, then stops of old tasks as far as the lower bound allows.
// - Circuit breaker: threshold min(200, max(3, ceil(0.5 × desired))); failures are launch
//   failures, tasks stopped before RUNNING and tasks stopped for failed health checks, counted
//   until one task of the deployment is healthy.
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
  TimePoint created_at{};
};

// A container instance a DAEMON service may run on (ACTIVE, in the service's cluster, meeting its
// placement constraints — the caller filters).
struct InstanceView {
  std::string arn;
  std::string status;  // ACTIVE | DRAINING
};

struct Observed {
  TimePoint now{};
  std::vector<TaskView> tasks;          // every task of the service not yet reaped, STOPPED included
  std::vector<InstanceView> instances;  // DAEMON only
  std::chrono::milliseconds settle{0};  // RUNNING time before a task without health checks is healthy
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
void RecordPlacementFailure(service::ServiceState& state, const std::string& deployment_id, const std::string& reason,
                            const Observed& observed);

// Event texts, exactly as ECS writes them.
std::string ServiceEventPrefix(const std::string& service_name);  // "(service NAME)"

// The circuit breaker's failure threshold for a deployment of `desired` tasks.
int64_t BreakerThreshold(int64_t desired);

}  // namespace paddock::sched
