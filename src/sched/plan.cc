#include "sched/plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace paddock::sched {
namespace {

using service::Deployment;
using service::ServiceState;
using std::chrono::milliseconds;

constexpr std::string_view kHealthCheckReason = "Task failed container health checks";
constexpr std::string_view kScalingReasonPrefix = "Scaling activity initiated by";
constexpr auto kRepeatedEventWindow = std::chrono::hours(6);

bool IsLive(const TaskView& t) { return t.last_status != "STOPPED"; }
bool IsStopping(const TaskView& t) { return IsLive(t) && t.desired_status == "STOPPED"; }
bool IsRunning(const TaskView& t) { return t.last_status == "RUNNING"; }
bool IsPending(const TaskView& t) {
  return t.last_status == "PROVISIONING" || t.last_status == "PENDING" || t.last_status == "ACTIVATING";
}

// A stop the task's owner or the scheduler chose (scale-in, replacement, StopTask): not a failure.
bool StoppedOnPurpose(const TaskView& t) {
  return t.stop_code == "ServiceSchedulerInitiated" || t.stop_code == "UserInitiated" ||
         std::string_view(t.stopped_reason).starts_with(kScalingReasonPrefix);
}

// Stopped without ever reaching RUNNING, on its own: a failed start (breaker stage 1 and backoff).
bool FailedToStart(const TaskView& t) { return !IsLive(t) && !t.started_at && !StoppedOnPurpose(t); }

int64_t FloorPercent(int64_t count, int64_t percent) { return count * percent / 100; }
int64_t CeilPercent(int64_t count, int64_t percent) { return (count * percent + 99) / 100; }

milliseconds BackoffDelay(const Observed& o, int64_t failures) {
  if (failures <= 0) return milliseconds(0);
  milliseconds d = o.backoff_base;
  for (int64_t i = 1; i < failures && d < o.backoff_cap; ++i) d *= 2;
  return std::min(d, o.backoff_cap);
}

std::string ScalingReason(const std::string& deployment_id) {
  return fmt::format("Scaling activity initiated by (deployment {})", deployment_id);
}

std::string TaskList(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += fmt::format("{}(task {})", out.empty() ? "" : " ", id);
  return out;
}

void Emit(ServiceState& s, TimePoint now, std::string message) {
  s.new_events.push_back(service::Event{.id = "", .created_at = now, .message = std::move(message)});
}

// Repeated conditions (placement failures, deadlocked bounds, backoff) are written once, then not
// again while the newest event is the same message and younger than 6 hours.
void EmitDeduplicated(ServiceState& s, TimePoint now, std::string message) {
  const service::Event* newest = !s.new_events.empty() ? &s.new_events.back()
                                 : s.newest_event      ? &*s.newest_event
                                                       : nullptr;
  if (newest && newest->message == message && now - newest->created_at < kRepeatedEventWindow) return;
  Emit(s, now, std::move(message));
}

// The state's scheduler-visible content, to tell whether a pass changed anything.
std::string DeploymentFingerprint(const Deployment& d) {
  std::string out = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", d.id, d.status, d.desired_count,
                                d.pending_count, d.running_count, d.failed_tasks, d.rollout_state,
                                d.rollout_state_reason, d.stability_status, EpochMillis(d.stability_status_at),
                                d.rollback_requested, EpochMillis(d.breaker_reset_at), d.breaker_unobserved,
                                d.launch_failures, EpochMillis(d.next_launch_at), EpochMillis(d.updated_at));
  for (const auto& b : d.instance_backoffs)
    out += fmt::format("|{}:{}:{}", b.instance_arn, b.failures, EpochMillis(b.next_launch_at));
  return out;
}

std::string Fingerprint(const ServiceState& s) {
  std::string out = fmt::format("{}|{}|{}|", s.status, s.desired_count, s.new_events.size());
  for (const auto& d : s.deployments) out += DeploymentFingerprint(d) + ";";
  if (s.last_completed) out += "last:" + DeploymentFingerprint(*s.last_completed);
  return out;
}

// One Decide call.
class Pass {
 public:
  Pass(ServiceState& s, const Observed& o) : s_(s), o_(o), prefix_(ServiceEventPrefix(s.key.name)) {}

  Decision Run() {
    const std::string before = Fingerprint(s_);
    std::map<std::string, std::string> before_each;
    for (const auto& d : s_.deployments) before_each[d.id] = DeploymentFingerprint(d);

    if (s_.status != "INACTIVE") {
      StopFailedHealthChecks();
      if (s_.status == "DRAINING") {
        Drain();
      } else if (s_.controller == "EXTERNAL") {
        TaskSets();
      } else if (!s_.deployments.empty()) {
        if (s_.scheduling_strategy == "DAEMON") {
          int64_t active = 0;
          for (const auto& i : o_.instances) active += i.status == "ACTIVE" ? 1 : 0;
          s_.desired_count = active;
        }
        for (auto& d : s_.deployments) CountFailures(d);
        CircuitBreaker();
        if (s_.scheduling_strategy == "DAEMON") {
          Daemon();
        } else {
          Replica();
        }
        UpdateCounts();
        if (!rolled_back_) {
          Complete();
        } else {
          // The pass that rolls back stores the rollback as such (the target IN_PROGRESS, the
          // failed deployment ACTIVE), which the owner turns into the service deployments'
          // ROLLBACK_IN_PROGRESS; the next pass, right after, may complete it.
          Wake(o_.now + milliseconds(1));
        }
        RemoveDrainedDeployments();
      }
      EmitStopped();
    }

    for (auto& d : s_.deployments) {
      auto it = before_each.find(d.id);
      if (it == before_each.end() || it->second != DeploymentFingerprint(d)) d.updated_at = o_.now;
    }
    decision_.state_changed = Fingerprint(s_) != before;
    return std::move(decision_);
  }

 private:
  // --- Observation helpers -------------------------------------------------------------------

  bool StoppedNow(const TaskView& t) const { return stopped_now_.count(t.id) > 0; }
  // Live and not being stopped (by its owner earlier or by this pass).
  bool Active(const TaskView& t) const { return IsLive(t) && !IsStopping(t) && !StoppedNow(t); }
  bool Healthy(const TaskView& t) const {
    if (!Active(t) || !IsRunning(t) || t.desired_status != "RUNNING" || !t.started_at) return false;
    if (t.has_health_checks) return t.health_status == "HEALTHY";
    return o_.now - *t.started_at >= o_.settle;
  }
  // When `t` became healthy, if the observation shows it is or was (the circuit breaker's reset).
  // Without health checks: once it had run for `settle`, also if it has stopped since. With them:
  // the moment a check first passed is not observed; its start stands in (see plan.h).
  std::optional<TimePoint> BecameHealthyAt(const TaskView& t) const {
    if (!t.started_at) return std::nullopt;
    if (t.has_health_checks) return Healthy(t) ? t.started_at : std::nullopt;
    const TimePoint end = t.stopped_at.value_or(o_.now);
    if (end - *t.started_at < o_.settle) return std::nullopt;
    return *t.started_at + o_.settle;
  }
  // A circuit-breaker failure: stopped on its own (before or after RUNNING), or for failed health
  // checks (then its stop is the scheduler's own, recognised by its reason).
  bool BreakerFailure(const TaskView& t) const {
    if (t.stopped_reason == kHealthCheckReason || health_stopped_.count(t.id) > 0) return true;
    return !IsLive(t) && !StoppedOnPurpose(t);
  }
  bool Of(const TaskView& t, const Deployment& d) const { return t.started_by == d.id; }
  // A PRIMARY task it keeps: one on a DRAINING instance is replaced like an old deployment's.
  bool Kept(const TaskView& t, const Deployment& p) const { return Of(t, p) && !t.on_draining_instance; }
  int64_t KeptOf(const Deployment& p) const {
    int64_t n = 0;
    for (const auto& t : o_.tasks) n += Active(t) && Kept(t, p) ? 1 : 0;
    return n;
  }
  // Of no deployment (or task set) the state lists: left over, to be stopped.
  bool Orphan(const TaskView& t) const {
    return std::none_of(s_.deployments.begin(), s_.deployments.end(),
                        [&](const Deployment& d) { return d.id == t.started_by; });
  }

  // Under scale-in protection now; a pass is due when it ends.
  bool Protected(const TaskView& t) {
    if (!t.protected_until || *t.protected_until <= o_.now) return false;
    Wake(*t.protected_until);
    return true;
  }

  void Wake(TimePoint at) {
    if (at <= o_.now) return;
    if (!decision_.wake_at || at < *decision_.wake_at) decision_.wake_at = at;
  }

  // Stops `t` (at most once per pass) with `reason`.
  void StopTask(const TaskView& t, std::string reason) {
    if (!stopped_now_.insert(t.id).second) return;
    if (IsRunning(t)) stopped_running_.push_back(t.id);
    decision_.stops.push_back(Stop{.task_id = t.id, .reason = std::move(reason)});
  }
  void ScaleIn(const TaskView& t) {
    StopTask(t, ScalingReason(!t.started_by.empty() || s_.deployments.empty() ? t.started_by : s_.deployments[0].id));
  }

  // Tasks satisfying `pred`, those not healthy first, each group newest first: the order the
  // scheduler gives up tasks in.
  template <typename Pred>
  std::vector<const TaskView*> StopOrder(Pred pred) const {
    std::vector<const TaskView*> out;
    for (const auto& t : o_.tasks)
      if (Active(t) && pred(t)) out.push_back(&t);
    std::stable_sort(out.begin(), out.end(), [&](const TaskView* a, const TaskView* b) {
      bool ha = Healthy(*a), hb = Healthy(*b);
      if (ha != hb) return !ha;
      if (a->created_at != b->created_at) return a->created_at > b->created_at;
      return a->id > b->id;
    });
    return out;
  }

  int64_t HealthyTotal() const {
    int64_t n = 0;
    for (const auto& t : o_.tasks) n += Healthy(t) ? 1 : 0;
    return n;
  }
  int64_t LiveTotal() const {
    int64_t n = 0;
    for (const auto& t : o_.tasks) n += IsLive(t) ? 1 : 0;
    return n;
  }
  int64_t ActiveOf(const Deployment& d) const {
    int64_t n = 0;
    for (const auto& t : o_.tasks) n += Active(t) && Of(t, d) ? 1 : 0;
    return n;
  }

  // A launch of `d` for `count` tasks, unless its backoff holds it back.
  bool MayLaunch(const Deployment& d) {
    if (o_.now < d.next_launch_at) {
      Wake(d.next_launch_at);
      return false;
    }
    return true;
  }
  void LaunchReplicas(const Deployment& d, int64_t count) {
    if (count > 0 && MayLaunch(d)) decision_.launches.push_back(Launch{.deployment_id = d.id, .count = count, .container_instance_arn = ""});
  }

  // --- Rules ---------------------------------------------------------------------------------

  // RUNNING tasks whose container health checks report UNHEALTHY past the grace period are
  // stopped (and count as breaker failures); within it they are left alone.
  void StopFailedHealthChecks() {
    for (const auto& t : o_.tasks) {
      // A RUNNING task without health checks becomes healthy once settled: worth a pass then.
      if (Active(t) && IsRunning(t) && t.started_at && !t.has_health_checks) Wake(*t.started_at + o_.settle);
      if (!Active(t) || !IsRunning(t) || !t.has_health_checks || t.health_status != "UNHEALTHY" || !t.started_at) {
        continue;
      }
      TimePoint grace_end = *t.started_at + std::chrono::seconds(s_.health_check_grace_seconds);
      if (o_.now < grace_end) {
        Wake(grace_end);
        continue;
      }
      health_stopped_.insert(t.id);
      StopTask(t, std::string(kHealthCheckReason));
      Emit(s_, o_.now, fmt::format("{} (task {}) failed container health checks.", prefix_, t.id));
    }
    // ECS writes these stops right after the health-check events, before any breaker event.
    EmitStopped();
  }

  void EmitStopped() {
    if (stopped_running_.empty()) return;
    Emit(s_, o_.now,
         fmt::format("{} has stopped {} running tasks: {}.", prefix_, stopped_running_.size(), TaskList(stopped_running_)));
    stopped_running_.clear();
  }

  // DeleteService: every task goes; INACTIVE once none is left.
  void Drain() {
    bool any_live = false;
    for (const auto& t : o_.tasks) {
      if (!IsLive(t)) continue;
      any_live = true;
      if (Active(t)) ScaleIn(t);
    }
    for (auto& d : s_.deployments) {
      CountTasks(d);
      d.desired_count = 0;
    }
    if (s_.controller != "EXTERNAL") RemoveDrainedDeployments();
    if (!any_live) s_.status = "INACTIVE";
  }

  // Circuit-breaker failures (while the deployment is IN_PROGRESS) and backoff, level-triggered
  // from the observed tasks (so a pass run twice counts nothing twice) and kept as a high-water
  // mark (stopped tasks are reaped after an hour).
  void CountFailures(Deployment& d) {
    if (d.rollout_state == "IN_PROGRESS") CountBreakerFailures(d);

    const TaskView* newest_started = nullptr;  // the newest task (by creation) that reached RUNNING
    for (const auto& t : o_.tasks) {
      if (Of(t, d) && t.started_at && (!newest_started || t.created_at > newest_started->created_at)) newest_started = &t;
    }

    // Backoff: failed starts after the newest task that reached RUNNING.
    int64_t trailing = 0;
    for (const auto& t : o_.tasks) {
      if (Of(t, d) && FailedToStart(t) && (!newest_started || t.created_at > newest_started->created_at)) ++trailing;
    }
    TimePoint last_counted = d.next_launch_at - BackoffDelay(o_, d.launch_failures);
    if (d.launch_failures > 0 && newest_started && newest_started->created_at > last_counted) {
      // A task launched after the failures counted so far reached RUNNING: the throttle resets.
      // (Not one launched before them: the tasks of a launch that only partly found room reach
      // RUNNING one by one, and each would otherwise bring an immediate, equally refused retry —
      // each a circuit-breaker failure.)
      d.launch_failures = trailing;
      d.next_launch_at = trailing > 0 ? o_.now + BackoffDelay(o_, trailing) : TimePoint{};
    } else if (trailing > d.launch_failures) {
      d.launch_failures = trailing;
      d.next_launch_at = o_.now + BackoffDelay(o_, trailing);
      EmitDeduplicated(s_, o_.now, fmt::format("{} is unable to consistently start tasks successfully.", prefix_));
    }
  }

  // The failures of `d` after its last reset; with resetOnHealthyTask, a task that became healthy
  // since then resets the count first ("a task that reaches a healthy state resets the failure count
  // to 0", DeploymentCircuitBreaker.resetOnHealthyTask).
  void CountBreakerFailures(Deployment& d) {
    bool reset = false;
    if (s_.reset_on_healthy_task) {
      for (const auto& t : o_.tasks) {
        if (!Of(t, d)) continue;
        if (auto at = BecameHealthyAt(t); at && *at > d.breaker_reset_at) {
          d.breaker_reset_at = *at;
          reset = true;
        }
      }
    }
    if (reset) d.breaker_unobserved = 0;
    int64_t failures = d.breaker_unobserved;
    for (const auto& t : o_.tasks) {
      // One still being stopped has no stoppedAt yet: its stop comes after any reset seen so far.
      if (Of(t, d) && BreakerFailure(t) && (!t.stopped_at || *t.stopped_at > d.breaker_reset_at)) ++failures;
    }
    d.failed_tasks = reset ? failures : std::max(d.failed_tasks, failures);
  }

  void CircuitBreaker() {
    Deployment& p = s_.deployments[0];
    if (p.rollback_requested) {
      p.rollback_requested = false;
      RollBack(/*by_breaker=*/false);
      return;
    }
    if (!s_.circuit_breaker || p.rollout_state != "IN_PROGRESS" ||
        p.failed_tasks < service::FailureThreshold(s_.desired_count, s_.failure_threshold)) {
      return;
    }
    p.rollout_state = "FAILED";
    p.rollout_state_reason = "ECS deployment circuit breaker: tasks failed to start.";
    Emit(s_, o_.now, fmt::format("{} (deployment {}) deployment failed: tasks failed to start.", prefix_, p.id));
    if (s_.rollback) RollBack(/*by_breaker=*/true);
  }

  // The last COMPLETED deployment becomes PRIMARY again, with its own id; the current PRIMARY
  // becomes ACTIVE and drains. Without a deployment to return to, nothing changes (stalled).
  void RollBack(bool by_breaker) {
    if (!s_.last_completed || s_.last_completed->id == s_.deployments[0].id) return;
    const std::string target_id = s_.last_completed->id;
    Deployment target = *s_.last_completed;
    auto it = std::find_if(s_.deployments.begin() + 1, s_.deployments.end(),
                           [&](const Deployment& d) { return d.id == target_id; });
    if (it != s_.deployments.end()) {
      target = *it;
      s_.deployments.erase(it);
    }
    s_.deployments[0].status = "ACTIVE";
    target.status = "PRIMARY";
    target.rollout_state = "IN_PROGRESS";
    target.rollout_state_reason =
        by_breaker ? fmt::format("ECS deployment circuit breaker: rolling back to deploymentId {}.", target_id)
                   : fmt::format("ECS deployment {} in progress.", target_id);
    target.desired_count = s_.desired_count;
    target.failed_tasks = 0;
    target.breaker_reset_at = o_.now;  // its tasks' earlier failures are not this rollout's
    target.breaker_unobserved = 0;
    target.launch_failures = 0;
    target.next_launch_at = TimePoint{};
    target.instance_backoffs.clear();
    target.rollback_requested = false;
    target.stability_status.clear();
    s_.deployments.insert(s_.deployments.begin(), std::move(target));
    // PRIMARY first, then ACTIVE ones newest first.
    std::stable_sort(s_.deployments.begin() + 1, s_.deployments.end(),
                     [](const Deployment& a, const Deployment& b) { return a.created_at > b.created_at; });
    Emit(s_, o_.now, fmt::format("{} rolling back to deployment {}.", prefix_, target_id));
    rolled_back_ = true;
  }

  // The rolling update: start PRIMARY tasks up to maximumPercent, stop old ones down to
  // minimumHealthyPercent, scale the PRIMARY in to its desired count.
  void Replica() {
    const Deployment& p = s_.deployments[0];
    const int64_t desired = s_.desired_count;
    const int64_t upper = FloorPercent(desired, s_.maximum_percent);
    const int64_t lower = CeilPercent(desired, s_.minimum_healthy_percent);
    const bool failed = p.rollout_state == "FAILED";
    const int64_t total = LiveTotal();
    int64_t healthy = HealthyTotal();

    if (!failed) LaunchReplicas(p, std::min(desired - KeptOf(p), upper - total));

    // Old tasks (ACTIVE deployments', left-over ones, those on DRAINING instances): unhealthy or
    // pending ones freely, healthy ones while the healthy total stays at or above the lower bound.
    // A FAILED PRIMARY without a rollback keeps the old deployments' tasks.
    int64_t old_left = 0;
    for (const TaskView* t : StopOrder([&](const TaskView& x) { return !Kept(x, p); })) {
      if (failed && !Of(*t, p) && !t->on_draining_instance) continue;
      if (Protected(*t)) continue;
      if (Healthy(*t)) {
        if (healthy - 1 < lower) {
          ++old_left;
          continue;
        }
        --healthy;
      }
      ScaleIn(*t);
    }

    // Scale-in of the PRIMARY beyond its desired count.
    int64_t excess = KeptOf(p) - desired;
    for (const TaskView* t : StopOrder([&](const TaskView& x) { return Kept(x, p); })) {
      if (excess <= 0) break;
      if (Protected(*t)) continue;
      if (Healthy(*t)) {
        if (healthy - 1 < lower) break;
        --healthy;
      }
      ScaleIn(*t);
      --excess;
    }

    // Neither bound leaves room and nothing is under way that could make some.
    if (old_left > 0 && decision_.launches.empty() && decision_.stops.empty() && upper - total <= 0) {
      bool settled = std::all_of(o_.tasks.begin(), o_.tasks.end(),
                                 [&](const TaskView& t) { return !IsLive(t) || Healthy(t); });
      if (settled) {
        EmitDeduplicated(s_, o_.now,
                         fmt::format("{} was unable to stop or start tasks during a deployment because of the service "
                                     "deployment configuration. Update the minimumHealthyPercent or maximumPercent "
                                     "value and try again.",
                                     prefix_));
      }
    }
  }

  // One task per ACTIVE instance; none on DRAINING or vanished ones; a new deployment replaces
  // instance by instance within minimumHealthyPercent (an old task first, the new one once it is
  // gone: maximumPercent is 100 for daemons).
  void Daemon() {
    SettleInstanceBackoffs();
    const Deployment& p = s_.deployments[0];
    const bool failed = p.rollout_state == "FAILED";
    std::set<std::string> active;
    for (const auto& i : o_.instances)
      if (i.status == "ACTIVE") active.insert(i.arn);
    for (const auto& t : o_.tasks)
      if (Active(t) && (t.on_draining_instance || !active.count(t.container_instance_arn))) ScaleIn(t);

    const int64_t lower = CeilPercent(s_.desired_count, s_.minimum_healthy_percent);
    int64_t healthy = HealthyTotal();
    for (const auto& inst : o_.instances) {
      if (inst.status != "ACTIVE") continue;
      auto on_it = [&](const TaskView& t) { return t.container_instance_arn == inst.arn; };
      std::vector<const TaskView*> mine = StopOrder([&](const TaskView& t) { return on_it(t) && Of(t, p); });
      // Keep the best one (the last in stop order), stop any extra.
      for (size_t i = 0; i + 1 < mine.size(); ++i) ScaleIn(*mine[i]);
      const bool has_mine = !mine.empty();
      // Old tasks here: an extra next to a PRIMARY one goes freely; the only one goes within the
      // lower bound. A FAILED PRIMARY without rollback leaves them alone.
      if (!failed || has_mine) {
        for (const TaskView* t : StopOrder([&](const TaskView& x) { return on_it(x) && !Of(x, p); })) {
          if (Healthy(*t) && !has_mine) {
            if (healthy - 1 < lower) continue;
            --healthy;
          }
          ScaleIn(*t);
        }
      }
      // The new task goes on only once nothing else is left on the instance.
      bool busy = has_mine || failed;
      for (const auto& t : o_.tasks) busy = busy || (IsLive(t) && on_it(t));
      if (busy) continue;
      if (MayLaunch(p) && MayLaunchOn(p, inst.arn)) {
        decision_.launches.push_back(Launch{.deployment_id = p.id, .count = 1, .container_instance_arn = inst.arn});
      }
    }
  }

  // DAEMON placement backoff is per instance (RecordPlacementFailure): an instance whose backoff
  // has not ended gets no launch, the others do.
  bool MayLaunchOn(const Deployment& d, const std::string& instance_arn) {
    for (const auto& b : d.instance_backoffs) {
      if (b.instance_arn != instance_arn || o_.now >= b.next_launch_at) continue;
      Wake(b.next_launch_at);
      return false;
    }
    return true;
  }

  // An instance's backoff ends for good once a task of the PRIMARY launched there after its last
  // failure reaches RUNNING, or when the instance is no longer one to run on; old deployments
  // launch nothing and keep none.
  void SettleInstanceBackoffs() {
    for (size_t i = 1; i < s_.deployments.size(); ++i) s_.deployments[i].instance_backoffs.clear();
    Deployment& p = s_.deployments[0];
    std::erase_if(p.instance_backoffs, [&](const service::InstanceBackoff& b) {
      const bool eligible = std::any_of(o_.instances.begin(), o_.instances.end(), [&](const InstanceView& i) {
        return i.arn == b.instance_arn && i.status == "ACTIVE";
      });
      const bool ran = std::any_of(o_.tasks.begin(), o_.tasks.end(), [&](const TaskView& t) {
        return Of(t, p) && t.container_instance_arn == b.instance_arn && t.started_at && t.created_at >= b.failed_at;
      });
      return !eligible || ran;
    });
  }

  // Task sets: each one launches and stops to reach its computedDesiredCount on its own.
  void TaskSets() {
    for (auto& d : s_.deployments) CountFailures(d);
    for (const auto& t : o_.tasks)
      if (Active(t) && Orphan(t)) ScaleIn(t);
    for (auto& d : s_.deployments) {
      d.desired_count = d.status == "DRAINING" ? 0 : ComputedDesiredCount(s_.desired_count, d.scale_percent);
      const size_t launches_before = decision_.launches.size(), stops_before = decision_.stops.size();
      int64_t have = ActiveOf(d);
      LaunchReplicas(d, d.desired_count - have);
      int64_t excess = have - d.desired_count;
      for (const TaskView* t : StopOrder([&](const TaskView& x) { return Of(x, d); })) {
        if (excess-- <= 0) break;
        ScaleIn(*t);
      }
      CountTasks(d);
      bool steady = decision_.launches.size() == launches_before && decision_.stops.size() == stops_before &&
                    d.running_count == d.desired_count && d.pending_count == 0;
      for (const auto& t : o_.tasks)
        if (Of(t, d) && IsLive(t) && !Healthy(t)) steady = false;
      std::string status = steady ? "STEADY_STATE" : "STABILIZING";
      if (d.stability_status != status) {
        d.stability_status = status;
        d.stability_status_at = o_.now;
      }
    }
    // A DRAINING task set whose tasks are all gone is gone too.
    std::erase_if(s_.deployments, [&](const Deployment& d) {
      return d.status == "DRAINING" && std::none_of(o_.tasks.begin(), o_.tasks.end(),
                                                    [&](const TaskView& t) { return IsLive(t) && Of(t, d); });
    });
  }

  void CountTasks(Deployment& d) const {
    d.running_count = d.pending_count = 0;
    for (const auto& t : o_.tasks) {
      if (!Of(t, d)) continue;
      d.running_count += IsRunning(t) ? 1 : 0;
      d.pending_count += IsPending(t) ? 1 : 0;
    }
  }

  void UpdateCounts() {
    for (size_t i = 0; i < s_.deployments.size(); ++i) {
      Deployment& d = s_.deployments[i];
      CountTasks(d);
      if (s_.status == "DRAINING") {
        d.desired_count = 0;
      } else if (i == 0) {
        d.desired_count = s_.desired_count;
      } else {
        d.desired_count = ActiveOf(d);  // what the scheduler still keeps of an old deployment
      }
    }
  }

  // An ACTIVE deployment with no task left is INACTIVE and leaves deployments[] — but while the
  // PRIMARY is IN_PROGRESS (and the service is not being deleted) the newest such one stays, so
  // services-stable's "one deployment" does not see the rollout as done; one is enough, so
  // deployments replaced one after another during a rollout do not pile up.
  void RemoveDrainedDeployments() {
    if (s_.deployments.size() < 2) return;
    bool keep_one = s_.status != "DRAINING" && s_.deployments[0].rollout_state == "IN_PROGRESS";
    // remove_if visits in order: ACTIVE deployments are listed newest first.
    std::erase_if(s_.deployments, [&](const Deployment& d) {
      if (d.status != "ACTIVE" ||
          std::any_of(o_.tasks.begin(), o_.tasks.end(), [&](const TaskView& t) { return IsLive(t) && Of(t, d); })) {
        return false;
      }
      if (keep_one) {
        keep_one = false;
        return false;
      }
      return true;
    });
  }

  // Only the PRIMARY's tasks left, at its desired count, every task healthy and nothing under way:
  // the rollout COMPLETED and the service at a steady state.
  void Complete() {
    Deployment& p = s_.deployments[0];
    bool converged = decision_.launches.empty() && decision_.stops.empty() && p.running_count == p.desired_count &&
                     p.pending_count == 0;
    for (const auto& t : o_.tasks)
      if (IsLive(t) && (!Healthy(t) || t.on_draining_instance || !Of(t, p))) converged = false;
    if (!converged) {
      // The marker of an ECS-controller deployment (never rendered): steady-state already reported.
      p.stability_status.clear();
      return;
    }
    if (p.rollout_state == "IN_PROGRESS") {
      p.rollout_state = "COMPLETED";
      p.rollout_state_reason = fmt::format("ECS deployment {} completed.", p.id);
      s_.last_completed = p;
      Emit(s_, o_.now, fmt::format("{} (deployment {}) deployment completed.", prefix_, p.id));
    }
    if (p.rollout_state == "COMPLETED" && p.stability_status != "STEADY_STATE") {
      p.stability_status = "STEADY_STATE";
      p.stability_status_at = o_.now;
      Emit(s_, o_.now, fmt::format("{} has reached a steady state.", prefix_));
    }
  }

  ServiceState& s_;
  const Observed& o_;
  const std::string prefix_;
  Decision decision_;
  std::set<std::string> stopped_now_;
  std::set<std::string> health_stopped_;
  std::vector<std::string> stopped_running_;
  bool rolled_back_ = false;  // this pass made the last COMPLETED deployment PRIMARY again
};

// The closest-match sentence ECS appends for a rejection reason, or "".
std::string ClosestMatch(const std::string& reason, const std::string& instance_arn) {
  std::string what;
  if (reason == "RESOURCE:CPU") {
    what = "has insufficient CPU units available.";
  } else if (reason == "RESOURCE:MEMORY") {
    what = "has insufficient memory available.";
  } else if (reason == "RESOURCE:PORTS" || reason == "RESOURCE:PORTS_UDP") {
    what = "is already using a port required by your task.";
  } else if (reason == "ATTRIBUTE") {
    what = "is missing an attribute required by your task.";
  } else if (reason == "AGENT") {
    what = "encountered error \"AGENT\".";
  } else {
    return "";
  }
  if (instance_arn.empty()) return "";
  std::string id = instance_arn.substr(instance_arn.rfind('/') + 1);
  return fmt::format(" The closest matching (container-instance {}) {} For more information, see the Troubleshooting "
                     "section of the Amazon ECS Developer Guide.",
                     id, what);
}

Deployment* Find(ServiceState& s, const std::string& id) {
  for (auto& d : s.deployments)
    if (d.id == id) return &d;
  return nullptr;
}

}  // namespace

std::string ServiceEventPrefix(const std::string& service_name) { return fmt::format("(service {})", service_name); }

int64_t BreakerThreshold(int64_t desired) { return service::FailureThreshold(desired, service::FailureThresholdConfig{}); }

int64_t ComputedDesiredCount(int64_t desired, double scale_percent) {
  double exact = static_cast<double>(desired) * scale_percent / 100.0;
  return static_cast<int64_t>(std::ceil(exact - 1e-9));
}

Decision Decide(service::ServiceState& state, const Observed& observed) { return Pass(state, observed).Run(); }

void RecordLaunched(service::ServiceState& state, const std::string& deployment_id,
                    const std::vector<std::string>& task_ids, const Observed& observed) {
  if (task_ids.empty()) return;
  if (Deployment* d = Find(state, deployment_id)) {
    d->pending_count += static_cast<int64_t>(task_ids.size());
    d->updated_at = observed.now;
  }
  Emit(state, observed.now,
       fmt::format("{} has started {} tasks: {}.", ServiceEventPrefix(state.key.name), task_ids.size(), TaskList(task_ids)));
}

namespace {

// A launch that found no place: a breaker failure, and the deployment backs off — a DAEMON
// deployment's launch onto `instance_arn` only on that instance.
void CountPlacementFailure(service::ServiceState& state, const std::string& deployment_id, const Observed& observed,
                           const std::string& instance_arn = "") {
  Deployment* d = Find(state, deployment_id);
  if (d == nullptr) return;
  if (d->rollout_state == "IN_PROGRESS") {
    ++d->failed_tasks;
    ++d->breaker_unobserved;
  }
  d->updated_at = observed.now;
  if (state.scheduling_strategy == "DAEMON" && !instance_arn.empty()) {
    auto it = std::find_if(d->instance_backoffs.begin(), d->instance_backoffs.end(),
                           [&](const service::InstanceBackoff& b) { return b.instance_arn == instance_arn; });
    if (it == d->instance_backoffs.end()) {
      it = d->instance_backoffs.insert(d->instance_backoffs.end(), service::InstanceBackoff{.instance_arn = instance_arn});
    }
    ++it->failures;
    it->failed_at = observed.now;
    it->next_launch_at = observed.now + BackoffDelay(observed, it->failures);
    return;
  }
  ++d->launch_failures;
  d->next_launch_at = observed.now + BackoffDelay(observed, d->launch_failures);
}

}  // namespace

void RecordPlacementFailure(service::ServiceState& state, const std::string& deployment_id, const std::string& reason,
                            const Observed& observed, const std::string& instance_arn) {
  CountPlacementFailure(state, deployment_id, observed, instance_arn);
  EmitDeduplicated(state, observed.now,
                   fmt::format("{} was unable to place a task because no container instance met all of its "
                               "requirements.{}",
                               ServiceEventPrefix(state.key.name), ClosestMatch(reason, instance_arn)));
}

void RecordLaunchRefused(service::ServiceState& state, const std::string& deployment_id, const std::string& reason,
                         const Observed& observed) {
  CountPlacementFailure(state, deployment_id, observed);
  EmitDeduplicated(state, observed.now,
                   fmt::format("{} was unable to place a task. Reason: {}. For more information, see the "
                               "Troubleshooting section of the Amazon ECS Developer Guide.",
                               ServiceEventPrefix(state.key.name), reason));
}

void RecordLaunchFailed(service::ServiceState& state, const std::string& deployment_id, const std::string& error,
                        const Observed& observed) {
  CountPlacementFailure(state, deployment_id, observed);
  // ECS words this one without the parentheses of its other service events.
  EmitDeduplicated(state, observed.now,
                   fmt::format("service {} failed to launch a task with (error {}).", state.key.name, error));
}

}  // namespace paddock::sched
