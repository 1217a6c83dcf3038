#include "sched/scheduler.h"

#include <time.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ecs/common/errors.h"
#include "ecs/task/placement.h"

namespace paddock::sched {
namespace {

using ecs::service::Deployment;
using ecs::service::ServiceKey;
using ecs::service::ServiceState;

constexpr int64_t kMaxRunCount = 10;  // RunTask's count limit: larger launches go in batches
constexpr size_t kResyncPage = 200;

double ThreadCpuMillis() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string IdOfArn(std::string_view arn) {
  size_t slash = arn.rfind('/');
  return std::string(slash == std::string_view::npos ? arn : arn.substr(slash + 1));
}

const Deployment* FindDeployment(const ServiceState& state, const std::string& id) {
  for (const auto& d : state.deployments)
    if (d.id == id) return &d;
  return nullptr;
}

// The RunTask a deployment's launch amounts to: its pinned revision and launch configuration,
// the service's placement and tag settings, group "service:<name>" and startedBy the deployment.
ecs::task::RunRequest LaunchRequest(const ServiceState& state, const Deployment& d, int64_t count) {
  ecs::task::RunRequest r;
  r.cluster = state.key.cluster;
  r.task_definition = d.task_definition;
  r.count = count;
  r.launch_type = d.launch.launch_type;
  if (d.launch.capacity_provider_strategy)
    for (const auto& item : *d.launch.capacity_provider_strategy)
      if (item.is_object())
        if (auto it = item.as_object().find("capacityProvider"); it != item.as_object().end() && it->value().is_string())
          r.capacity_providers.emplace_back(it->value().get_string());
  r.network_configuration = d.launch.network_configuration;
  r.platform_version = d.launch.platform_version;
  r.group = "service:" + state.key.name;
  r.started_by = d.id;
  if (state.propagate_tags == "SERVICE") {
    r.tags = state.tags;
  } else if (state.propagate_tags == "TASK_DEFINITION") {
    r.propagate_tags = "TASK_DEFINITION";
  }
  r.enable_ecs_managed_tags = state.enable_ecs_managed_tags;
  r.enable_execute_command = state.enable_execute_command;
  r.placement_constraints = state.placement_constraints;
  r.placement_strategy = state.placement_strategy;
  r.service_registry = state.service_registry;
  r.inactive_revision = ecs::taskdef::InactiveRevision::kAllow;
  return r;
}

// The service's tasks are the ones its deployments started: a one-off RunTask that merely uses
// the group "service:<name>" is not the scheduler's to count or stop.
bool OfTheService(const ecs::task::GroupTask& t) { return t.started_by.starts_with("ecs-svc/"); }

// The lease refused the write (sched/lease.h): this scheduler is no longer the leader.
bool Fenced(const Status& s) { return IsError(s, Error::kLeaseLost); }

}  // namespace

Scheduler::Scheduler(store::Store& store, ecs::service::Services& services, ecs::task::Tasks& tasks,
                     ecs::instance::ContainerInstances* instances, const Clock& clock, SchedulerOptions options)
    : store_(store),
      services_(services),
      tasks_(tasks),
      instances_(instances),
      clock_(clock),
      options_(std::move(options)),
      lease_(store, options_.holder, options_.lease_ttl, options_.successor_of) {}

Scheduler::~Scheduler() { Stop(); }

std::string Scheduler::KeyString(const ServiceKey& key) {
  return fmt::format("{}\x1f{}\x1f{}\x1f{}", key.scope.account.str(), key.scope.region.str(), key.cluster, key.name);
}

void Scheduler::Wake(const ServiceKey& key) {
  {
    std::lock_guard lock(mu_);
    dirty_.emplace(KeyString(key), key);
  }
  cv_.notify_one();
}

void Scheduler::WakeAll() {
  {
    std::lock_guard lock(mu_);
    resync_requested_ = true;
  }
  cv_.notify_one();
}

void Scheduler::AddTimer(TimePoint at, const ServiceKey& key) {
  std::lock_guard lock(mu_);
  auto [begin, end] = timers_.equal_range(at);
  for (auto it = begin; it != end; ++it)
    if (it->second == key) return;
  timers_.emplace(at, key);
}

StatusOr<std::optional<uint64_t>> Scheduler::Lead() {
  auto led = lease_.TryAcquire(clock_.Now());
  if (led.ok() && led->has_value()) renewed_at_ = std::chrono::steady_clock::now();
  return led;
}

Status Scheduler::KeepLease(uint64_t epoch) {
  if (std::chrono::steady_clock::now() - renewed_at_ < options_.lease_ttl / 3) return OkStatus();
  ASSIGN_OR_RETURN(std::optional<uint64_t> led, Lead());
  if (!led || *led != epoch) return FailedPrecondition("scheduler lease: lost during a resync", Error::kLeaseLost);
  return OkStatus();
}

Observed Scheduler::Observe(TimePoint now, const std::vector<ecs::task::GroupTask>& tasks,
                            const std::vector<InstanceView>& instances) const {
  Observed obs;
  obs.now = now;
  obs.settle = options_.settle;
  obs.backoff_base = options_.backoff_base;
  obs.backoff_cap = options_.backoff_cap;
  obs.instances = instances;
  obs.tasks.reserve(tasks.size());
  for (const auto& t : tasks) {
    if (!OfTheService(t)) continue;
    TaskView v;
    v.id = t.id;
    v.started_by = t.started_by;
    // A task orphaned by its instance's forced deregistration is, as on ECS, "no longer monitored
    // or accounted for": STOPPED to the scheduler (replaced, never counted against maximumPercent
    // nor waited for), whatever its agent, which may never confirm, still reports.
    v.last_status = t.stopped_reason == ecs::task::kForcedDeregistrationReason ? "STOPPED" : t.last_status;
    v.desired_status = t.desired_status;
    v.health_status = t.health_status;
    v.has_health_checks = t.health_checks;
    v.started_at = t.started_at;
    v.stopped_at = t.stopped_at;
    v.stop_code = t.stop_code;
    v.stopped_reason = t.stopped_reason;
    v.container_instance_arn = t.container_instance_arn;
    v.on_draining_instance =
        !t.container_instance_arn.empty() &&
        std::none_of(instances.begin(), instances.end(), [&](const InstanceView& i) { return i.arn == t.container_instance_arn; });
    v.created_at = t.created_at;
    v.protected_until = t.protected_until;
    obs.tasks.push_back(std::move(v));
  }
  return obs;
}

StatusOr<std::optional<Scheduler::Snapshot>> Scheduler::Read(store::ReadTxn& txn, const ServiceKey& key,
                                                               TimePoint now) {
  ASSIGN_OR_RETURN(std::optional<ServiceState> state, services_.LoadState(txn, key));
  if (!state) {
    projections_.erase(KeyString(key));
    return std::optional<Snapshot>();
  }
  return Observe(txn, std::move(*state), now, TaskRead::kRefresh);
}

StatusOr<std::optional<Scheduler::Snapshot>> Scheduler::Observe(store::ReadTxn& txn, ServiceState loaded,
                                                                  TimePoint now, TaskRead read) {
  const ServiceKey key = loaded.key;
  std::optional<ServiceState> state(std::move(loaded));
  if (state->status == "INACTIVE") {
    projections_.erase(KeyString(key));
    return std::optional<Snapshot>();
  }
  ecs::task::GroupProjection& projection = projections_[KeyString(key)];
  if (read == TaskRead::kReadAll) projection = ecs::task::GroupProjection{};
  RETURN_IF_ERROR(tasks_.RefreshGroup(txn, key.scope, key.cluster, "service:" + key.name, projection));
  const std::vector<ecs::task::GroupTask>& tasks = projection.tasks;
  std::vector<InstanceView> instances;
  const bool on_instances = std::any_of(tasks.begin(), tasks.end(), [](const ecs::task::GroupTask& t) {
    return OfTheService(t) && !t.container_instance_arn.empty() && t.last_status != "STOPPED";
  });
  if ((state->scheduling_strategy == "DAEMON" || on_instances) && instances_ != nullptr) {
    ASSIGN_OR_RETURN(auto candidates, instances_->Candidates(txn, key.scope, key.cluster, now));
    // A DAEMON service runs on the ACTIVE instances its memberOf constraints admit, and those of
    // the revision its PRIMARY deployment runs; an instance that stops matching loses its task.
    std::vector<ecs::task::placement::Constraint> constraints;
    if (state->scheduling_strategy == "DAEMON") {
      boost::json::array all = state->placement_constraints.value_or(boost::json::array());
      if (!state->deployments.empty())
        for (const auto& c : state->deployments.front().definition_constraints) all.push_back(c);
      ASSIGN_OR_RETURN(constraints, ecs::task::placement::ParseConstraints(all));
    }
    for (const auto& c : candidates) {
      const bool admitted = std::all_of(constraints.begin(), constraints.end(), [&](const auto& k) {
        return k.type != ecs::task::placement::Constraint::Type::kMemberOf || !k.member_of ||
               k.member_of->Matches(c.facts);
      });
      if (admitted) instances.push_back(InstanceView{c.arn, "ACTIVE"});
    }
  }
  return std::optional<Snapshot>(Snapshot{std::move(*state), Observe(now, tasks, instances)});
}

Status Scheduler::Act(Snapshot& snapshot, uint64_t epoch) {
  Decision decision = Decide(snapshot.state, snapshot.observed);
  if (decision.wake_at) AddTimer(*decision.wake_at, snapshot.state.key);
  if (!decision.state_changed && decision.launches.empty() && decision.stops.empty()) return OkStatus();
  return Execute(snapshot.state, decision, snapshot.observed, epoch);
}

Status Scheduler::Pass(const ServiceKey& key, uint64_t epoch) {
  const TimePoint now = clock_.Now();
  std::optional<Snapshot> snapshot;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(snapshot, Read(txn, key, now));
    return OkStatus();
  }));
  return snapshot ? Act(*snapshot, epoch) : OkStatus();
}

Status Scheduler::Execute(ServiceState& state, const Decision& decision, const Observed& observed, uint64_t epoch) {
  const ServiceKey& key = state.key;
  auto fence = [&](store::WriteTxn& txn) { return lease_.CheckFence(txn, epoch, clock_.Now()); };
  bool dirty = decision.state_changed;

  for (const sched::Stop& stop : decision.stops) {
    ecs::task::StopOptions options;
    options.stop_code = "ServiceSchedulerInitiated";
    options.in_txn = fence;
    auto stopped = tasks_.Stop(key.scope, key.cluster, stop.task_id, stop.reason, state.arn, observed.now, options);
    if (!stopped.ok()) {
      if (Fenced(stopped.status())) return stopped.status();
      // The task is gone (reaped) or the cluster is: the next pass sees what is left.
      fmt::print(stderr, "paddock: scheduler: {} stop {}: {}\n", state.arn, stop.task_id, stopped.status().ToString());
    }
  }

  for (const Launch& launch : decision.launches) {
    for (int64_t left = launch.count; left > 0;) {
      const Deployment* d = FindDeployment(state, launch.deployment_id);
      if (d == nullptr) break;
      const int64_t n = launch.container_instance_arn.empty() ? std::min(left, kMaxRunCount) : 1;
      ecs::task::RunRequest request = LaunchRequest(state, *d, n);
      ServiceState next;
      request.in_txn = [&](store::WriteTxn& txn, const std::vector<std::string>& arns) -> Status {
        RETURN_IF_ERROR(fence(txn));
        next = state;
        std::vector<std::string> ids;
        for (const auto& arn : arns) ids.push_back(IdOfArn(arn));
        if (!ids.empty()) RecordLaunched(next, launch.deployment_id, ids, observed);
        return services_.StoreState(txn, next, observed.now);
      };
      auto launch_now = [&]() -> StatusOr<ecs::task::RunResult> {
        if (launch.container_instance_arn.empty()) return tasks_.Run(key.scope, state.arn, request, observed.now);
        ecs::task::StartRequest start;  // DAEMON: onto the instance the plan chose
        start.run = std::move(request);
        start.container_instances = {launch.container_instance_arn};
        return tasks_.Start(key.scope, state.arn, start, observed.now);
      };
      StatusOr<ecs::task::RunResult> ran = launch_now();
      if (!ran.ok()) {
        const Status& s = ran.status();
        if (Fenced(s) || s.code() == StatusCode::kAborted) return s;
        // The launch itself was refused (the cluster went away, the revision is being deleted, ECS
        // could not assume a role, …): ECS reports it as an event and tries again later.
        if (IsError(s, ecs::Error::kRoleNotAssumable)) {
          RecordLaunchFailed(state, launch.deployment_id, std::string(s.message()), observed);
        } else {  // a DAEMON launch backs off its instance only
          RecordPlacementFailure(state, launch.deployment_id, std::string(s.message()), observed,
                                 launch.container_instance_arn);
        }
        dirty = true;
        break;
      }
      state = std::move(next);
      state.new_events.clear();
      ++state.version;
      dirty = false;
      if (!ran->failures.empty()) {  // some or all of the batch found no place
        const ecs::task::RunResult::Failure& f = ran->failures.front();
        if (ecs::task::IsFargateAdmissionReason(f.reason)) {  // the node's capacity or the account's quota
          RecordLaunchRefused(state, launch.deployment_id, f.reason, observed);
        } else {
          RecordPlacementFailure(state, launch.deployment_id, f.reason, observed,
                                 launch.container_instance_arn.empty() ? f.arn : launch.container_instance_arn);
        }
        dirty = true;
        break;
      }
      left -= n;
    }
  }

  // A launch that failed backs its deployment off: look again when the backoff ends.
  for (const auto& d : state.deployments) {
    if (d.next_launch_at > observed.now) AddTimer(d.next_launch_at, key);
    for (const auto& b : d.instance_backoffs)
      if (b.next_launch_at > observed.now) AddTimer(b.next_launch_at, key);
  }
  if (!dirty) return OkStatus();
  Status written = store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(fence(txn));
    return services_.StoreState(txn, state, observed.now);
  });
  if (written.ok() && options_.service_written) options_.service_written(key);
  return written;
}

StatusOr<size_t> Scheduler::Resync(uint64_t epoch) {
  size_t seen = 0;
  std::string after;
  std::set<std::string> listed;  // the services that exist: the tasks held of any other are dropped
  do {
    // A page of services and their tasks in one read transaction, to find the few that need
    // anything; each of those then runs a pass of its own on a fresh read, so no stop or launch
    // acts on what the page read a while ago.
    const TimePoint now = clock_.Now();
    std::string next;
    std::vector<ServiceKey> busy;
    RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
      busy.clear();
      ASSIGN_OR_RETURN(ecs::service::Services::KeyPage page, services_.ListAllKeys(txn, kResyncPage, after));
      seen += page.keys.size();
      next = page.next;
      for (size_t i = 0; i < page.keys.size(); ++i) {
        const ServiceKey& key = page.keys[i];
        listed.insert(KeyString(key));
        auto state = services_.StateOf(txn, key, page.records[i]);  // the page read it already
        auto snapshot = state.ok() ? Observe(txn, std::move(*state), now, TaskRead::kReadAll)
                                   : StatusOr<std::optional<Snapshot>>(state.status());
        if (!snapshot.ok()) {  // one unreadable service does not stop the others' resync
          fmt::print(stderr, "paddock: scheduler: {}/{}: {}\n", key.cluster, key.name, snapshot.status().ToString());
          continue;
        }
        if (!*snapshot) continue;
        Decision decision = Decide((*snapshot)->state, (*snapshot)->observed);
        if (decision.wake_at) AddTimer(*decision.wake_at, key);
        if (decision.state_changed || !decision.launches.empty() || !decision.stops.empty()) busy.push_back(key);
      }
      return OkStatus();
    }));
    for (const auto& key : busy) {
      if (stopping()) return seen;
      RETURN_IF_ERROR(KeepLease(epoch));  // a long resync renews the lease as it goes
      Status s = Pass(key, epoch);
      if (Fenced(s)) return s;
      if (s.code() == StatusCode::kAborted) {
        Wake(key);
      } else if (!s.ok()) {
        fmt::print(stderr, "paddock: scheduler: {}/{}: {}\n", key.cluster, key.name, s.ToString());
      }
    }
    if (stopping()) return seen;
    after = next;
  } while (!after.empty());
  std::erase_if(projections_, [&](const auto& held) { return !listed.contains(held.first); });
  return seen;
}

StatusOr<size_t> Scheduler::SweepLostHosts(uint64_t epoch) {
  if (options_.host_lost <= std::chrono::milliseconds::zero()) return 0;
  ASSIGN_OR_RETURN(size_t stopped, SweepLostFargateHosts(epoch));
  if (instances_ == nullptr) return stopped;
  std::vector<ecs::instance::ContainerInstances::Lost> lost;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(lost, instances_->LostInstances(txn, clock_.Now(), options_.host_lost));
    return OkStatus();
  }));
  for (const auto& instance : lost) {
    // A lost instance stays lost (ACTIVE, silent) until its agent comes back: once its tasks are
    // stopped, later sweeps find nothing assigned to it and write nothing.
    const std::string agent = ecs::instance::ContainerInstanceArn(instance.scope, instance.cluster, instance.id);
    ASSIGN_OR_RETURN(bool assigned, tasks_.HasAssignmentIn(agent, instance.scope));
    if (!assigned) continue;
    ecs::task::Tasks::LostTasks result;
    Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
      result = {};
      const TimePoint now = clock_.Now();
      RETURN_IF_ERROR(lease_.CheckFence(txn, epoch, now));
      ASSIGN_OR_RETURN(bool still, instances_->StillLost(txn, instance, now, options_.host_lost));
      if (!still) return OkStatus();
      ASSIGN_OR_RETURN(result, tasks_.StopLostInstance(txn, instance.scope, instance.cluster, instance.id,
                                                       instance.ec2_instance_id, now));
      return OkStatus();
    });
    if (Fenced(s)) return s;
    if (!s.ok()) {  // one instance's failure does not keep the others' tasks
      fmt::print(stderr, "paddock: host-loss sweep: {}/{}: {}\n", instance.cluster, instance.id, s.ToString());
      continue;
    }
    if (result.stopped == 0) continue;
    fmt::print(stderr, "paddock: container instance {}/{} lost (no agent for {} s): {} tasks stopped\n",
               instance.cluster, instance.id,
               std::chrono::duration_cast<std::chrono::seconds>(options_.host_lost).count(), result.stopped);
    if (result.notify) result.notify();
    stopped += result.stopped;
  }
  return stopped;
}

StatusOr<size_t> Scheduler::SweepLostFargateHosts(uint64_t epoch) {
  std::vector<ecs::task::FargateHost> lapsed;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(lapsed, tasks_.LapsedFargateHosts(txn, clock_.Now(), options_.host_lost));
    return OkStatus();
  }));
  size_t stopped = 0;
  for (const auto& host : lapsed) {
    ecs::task::Tasks::LostTasks result;
    Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
      result = {};
      const TimePoint now = clock_.Now();
      RETURN_IF_ERROR(lease_.CheckFence(txn, epoch, now));
      ASSIGN_OR_RETURN(result, tasks_.StopLostFargateHost(txn, host, now, options_.host_lost));
      return OkStatus();
    });
    if (Fenced(s)) return s;
    if (!s.ok()) {  // one host's failure does not keep the others' tasks
      fmt::print(stderr, "paddock: host-loss sweep: Fargate host {}: {}\n", host.node, s.ToString());
      continue;
    }
    fmt::print(stderr, "paddock: Fargate host {} lost (no offer renewed for {} s): {} tasks stopped\n", host.node,
               std::chrono::duration_cast<std::chrono::seconds>(options_.host_lost).count(), result.stopped);
    if (result.notify) result.notify();
    stopped += result.stopped;
  }
  return stopped;
}

bool Scheduler::stopping() {
  std::lock_guard lock(mu_);
  return stopping_;
}

void Scheduler::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Scheduler::Loop() {
  using steady = std::chrono::steady_clock;
  // The epoch we write with while `leading` (a plain pair: g++ 12 misreads an optional here).
  uint64_t epoch = 0;
  bool leading = false;
  steady::time_point next_lease = steady::now();
  steady::time_point next_resync = steady::now();
  // Without a sweep (host_lost zero) its time never comes.
  const bool sweeping = options_.host_lost > std::chrono::milliseconds::zero();
  steady::time_point next_sweep = sweeping ? steady::now() : steady::time_point::max();
  const steady::duration sweep_interval = std::max<steady::duration>(
      std::chrono::milliseconds(100),
      sweeping ? std::min(options_.resync_interval, options_.host_lost / 4) : options_.resync_interval);
  while (true) {
    if (steady::now() >= next_lease) {
      auto led = Lead();
      const bool had = leading;
      leading = led.ok() && led->has_value();
      if (leading) epoch = **led;
      if (!led.ok()) fmt::print(stderr, "paddock: scheduler lease: {}\n", led.status().ToString());
      if (leading && !had) next_resync = steady::now();  // a new leader looks at everything first
      next_lease = steady::now() + options_.lease_ttl / 3;
    }
    if (leading && steady::now() >= next_resync) {
      const double cpu0 = ThreadCpuMillis();
      auto n = Resync(epoch);
      if (!n.ok()) {
        if (Fenced(n.status())) leading = false;
        fmt::print(stderr, "paddock: scheduler resync: {}\n", n.status().ToString());
      } else if (*n >= 1000) {
        fmt::print(stderr, "paddock: scheduler resync: {} services, {:.1f} ms CPU\n", *n, ThreadCpuMillis() - cpu0);
      }
      next_resync = steady::now() + options_.resync_interval;
    }

    if (leading && sweeping && steady::now() >= next_sweep) {
      auto n = SweepLostHosts(epoch);
      if (!n.ok()) {
        if (Fenced(n.status())) leading = false;
        fmt::print(stderr, "paddock: host-loss sweep: {}\n", n.status().ToString());
      }
      next_sweep = steady::now() + sweep_interval;
    }

    std::vector<ServiceKey> batch;
    {
      std::lock_guard lock(mu_);
      if (resync_requested_) next_resync = steady::now();
      resync_requested_ = false;
      for (auto& [k, key] : dirty_) batch.push_back(std::move(key));
      dirty_.clear();
      const TimePoint now = clock_.Now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        batch.push_back(timers_.begin()->second);
        timers_.erase(timers_.begin());
      }
    }
    if (leading) {
      for (const auto& key : batch) {
        if (stopping()) break;
        Status s = Pass(key, epoch);
        if (Fenced(s)) {
          leading = false;
          next_lease = steady::now();
          break;
        }
        if (s.code() == StatusCode::kAborted) {
          Wake(key);
        } else if (!s.ok()) {
          fmt::print(stderr, "paddock: scheduler: {}/{}: {}\n", key.cluster, key.name, s.ToString());
        }
      }
    }

    std::unique_lock lock(mu_);
    if (stopping_) break;
    steady::time_point until = std::min(next_lease, leading ? std::min(next_resync, next_sweep) : next_lease);
    if (!timers_.empty()) {
      auto in = std::chrono::duration_cast<steady::duration>(timers_.begin()->first - clock_.Now());
      until = std::min(until, steady::now() + std::max(in, steady::duration::zero()));
    }
    cv_.wait_until(lock, until, [&] { return stopping_ || resync_requested_ || !dirty_.empty(); });
    if (stopping_) break;
  }
  if (leading) {
    Status released = lease_.Release();
    if (!released.ok()) fmt::print(stderr, "paddock: scheduler lease: {}\n", released.ToString());
  }
}

}  // namespace paddock::sched
