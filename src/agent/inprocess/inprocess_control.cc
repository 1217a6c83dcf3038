#include "agent/inprocess/inprocess_control.h"

#include <fmt/format.h>

#include "agent/inprocess/errors.h"

namespace paddock::agent {

StatusOr<std::string> DescribeOne(ecs::task::Tasks& tasks, const ecs::task::LaunchSpec& spec, bool with_tags) {
  ASSIGN_OR_RETURN(ecs::task::DescribeResult r, tasks.Describe(spec.scope, spec.cluster, {spec.task_arn}, with_tags, ""));
  if (r.tasks.empty()) return NotFound(fmt::format("task {} not found", spec.task_arn));
  return std::move(r.tasks.front());
}

InProcessControl::InProcessControl(ecs::task::Tasks& tasks, ecs::instance::ContainerInstances* instances,
                                   InProcessOptions options)
    : tasks_(tasks), instances_(instances), options_(options), slots_(options.max_waiters) {
  tasks_.SetChangeListener([this] { OnChange(); });
}

InProcessControl::~InProcessControl() {
  tasks_.SetChangeListener(nullptr);
  Shutdown();
}

StatusOr<std::vector<ecs::task::LaunchSpec>> InProcessControl::Assignments(std::string_view agent_id) {
  {
    std::lock_guard lock(mu_);
    if (fenced_.contains(agent_id)) return std::vector<ecs::task::LaunchSpec>{};
  }
  return tasks_.Assignments(agent_id);
}

void InProcessControl::SetFenced(std::string_view agent_id, bool fenced) {
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard lock(mu_);
    const bool was = fenced_.contains(agent_id);
    if (was == fenced) return;
    if (fenced) {
      fenced_.emplace(agent_id);
    } else {
      fenced_.erase(fenced_.find(agent_id));
    }
    for (const auto& [id, w] : watchers_)
      if (w.agent_id == agent_id) wakes.push_back(w.wake);
  }
  for (const auto& wake : wakes) wake();
}

Status InProcessControl::Report(std::string_view agent_id, std::string_view task_arn,
                                const ecs::task::TaskStateChange& change, TimePoint now) {
  return tasks_.ReportState(agent_id, task_arn, change, now);
}

uint64_t InProcessControl::Watch(std::string_view agent_id, std::function<void()> wake) {
  std::lock_guard lock(mu_);
  uint64_t id = next_watch_++;
  watchers_[id] = Watcher{std::string(agent_id), std::move(wake)};
  return id;
}

void InProcessControl::Unwatch(uint64_t handle) {
  std::lock_guard lock(mu_);
  watchers_.erase(handle);
}

void InProcessControl::SetNetworkPolicyProvider(NetworkPolicyProvider provider) {
  auto p = std::make_shared<const NetworkPolicyProvider>(std::move(provider));
  std::lock_guard lock(mu_);
  policy_provider_ = std::move(p);
}

StatusOr<vpc::VpcPolicy> InProcessControl::NetworkPolicy(std::string_view, const Scope& scope) {
  std::shared_ptr<const NetworkPolicyProvider> provider;
  {
    std::lock_guard lock(mu_);
    provider = policy_provider_;
  }
  if (!provider || !*provider) return Unavailable("this node has no network policies (no provider set)");
  return (*provider)(scope);
}

StatusOr<vpc::VpcPolicy> InProcessControl::NetworkPolicyForAgent(std::string_view agent_id, const Scope& scope) {
  ASSIGN_OR_RETURN(bool serves, tasks_.HasAssignmentIn(agent_id, scope));
  if (!serves)
    return PermissionDenied("The container instance has no task in this VPC.");
  return NetworkPolicy(agent_id, scope);
}

StatusOr<protocol::ExecutionResources> ExecutionResourcesFor(ecs::task::Tasks& tasks, std::string_view agent_id,
                                                             std::string_view task_arn,
                                                             const ExecutionResourcesProvider* provider) {
  ASSIGN_OR_RETURN(std::optional<ecs::task::LaunchSpec> record, tasks.Assignment(agent_id, task_arn));
  if (!record || record->last_status == "STOPPED")
    return PermissionDenied("The container instance has no such task.", Error::kTaskNotAssigned);
  if (provider == nullptr || !*provider) return FailedPrecondition("this node fetches no execution resources");
  return (*provider)(*record);
}

StatusOr<protocol::ExecutionResources> InProcessControl::PrepareExecutionResources(std::string_view agent_id,
                                                                                 const ecs::task::LaunchSpec& spec) {
  return ExecutionResourcesForAgent(agent_id, spec.task_arn);
}

StatusOr<protocol::ExecutionResources> InProcessControl::ExecutionResourcesForAgent(std::string_view agent_id,
                                                                                  std::string_view task_arn) {
  std::shared_ptr<const ExecutionResourcesProvider> provider;
  {
    std::lock_guard lock(mu_);
    provider = execution_provider_;
  }
  return ExecutionResourcesFor(tasks_, agent_id, task_arn, provider.get());
}

void InProcessControl::SetExecutionResourcesProvider(ExecutionResourcesProvider provider) {
  auto p = std::make_shared<const ExecutionResourcesProvider>(std::move(provider));
  std::lock_guard lock(mu_);
  execution_provider_ = std::move(p);
}

StatusOr<protocol::LogsAnswer> ShipLogsFor(ecs::task::Tasks& tasks, std::string_view agent_id, std::string_view task_arn,
                                           const protocol::LogsCall& call, const LogsProvider* provider) {
  ASSIGN_OR_RETURN(std::optional<ecs::task::LaunchSpec> record, tasks.Assignment(agent_id, task_arn));
  if (!record || record->last_status == "STOPPED")
    return PermissionDenied("The container instance has no such task.", Error::kTaskNotAssigned);
  if (provider == nullptr || !*provider) return FailedPrecondition("this node ships no logs");
  return (*provider)(*record, call);
}

StatusOr<protocol::LogsAnswer> InProcessControl::ShipLogs(std::string_view agent_id, const ecs::task::LaunchSpec& spec,
                                                          const protocol::LogsCall& call) {
  return ShipLogsForAgent(agent_id, spec.task_arn, call);
}

StatusOr<protocol::LogsAnswer> InProcessControl::ShipLogsForAgent(std::string_view agent_id, std::string_view task_arn,
                                                                  const protocol::LogsCall& call) {
  std::shared_ptr<const LogsProvider> provider;
  {
    std::lock_guard lock(mu_);
    provider = logs_provider_;
  }
  return ShipLogsFor(tasks_, agent_id, task_arn, call, provider.get());
}

void InProcessControl::SetLogsProvider(LogsProvider provider) {
  auto p = std::make_shared<const LogsProvider>(std::move(provider));
  std::lock_guard lock(mu_);
  logs_provider_ = std::move(p);
}

StatusOr<protocol::DrainAnswer> AwaitDrainOn(ecs::drain::DrainHolds* holds, std::string_view agent_id,
                                             std::string_view task_arn, std::chrono::milliseconds max_wait,
                                             std::stop_token stop) {
  if (holds == nullptr) return protocol::DrainAnswer{};
  return holds->Await(agent_id, task_arn, max_wait, std::move(stop));
}

StatusOr<protocol::DrainAnswer> InProcessControl::AwaitDrain(std::string_view agent_id, const ecs::task::LaunchSpec& spec,
                                                             std::chrono::milliseconds max_wait, std::stop_token stop) {
  return AwaitDrainForAgent(agent_id, spec.task_arn, max_wait, std::move(stop));
}

StatusOr<protocol::DrainAnswer> InProcessControl::AwaitDrainForAgent(std::string_view agent_id,
                                                                     std::string_view task_arn,
                                                                     std::chrono::milliseconds max_wait,
                                                                     std::stop_token stop) {
  return AwaitDrainOn(drain_.load(), agent_id, task_arn, max_wait, std::move(stop));
}

void InProcessControl::SetDrainHolds(ecs::drain::DrainHolds* holds) { drain_.store(holds); }

void InProcessControl::SetTaskCredentialsProvider(TaskCredentialsProvider provider) {
  auto p = std::make_shared<const TaskCredentialsProvider>(std::move(provider));
  std::lock_guard lock(mu_);
  credentials_provider_ = std::move(p);
}

StatusOr<metadata::RoleCredentials> InProcessControl::TaskRoleCredentials(std::string_view agent_id,
                                                                          const ecs::task::LaunchSpec& spec) {
  return TaskRoleCredentialsForAgent(agent_id, spec.task_arn);
}

StatusOr<metadata::RoleCredentials> InProcessControl::TaskRoleCredentialsForAgent(std::string_view agent_id,
                                                                                  std::string_view task_arn) {
  ASSIGN_OR_RETURN(std::optional<ecs::task::LaunchSpec> it, tasks_.Assignment(agent_id, task_arn));
  // A stopped task's credentials are gone with it (its STS session lives to its own expiry).
  if (!it || it->last_status == "STOPPED")
    return PermissionDenied("The container instance has no such task.", Error::kTaskNotAssigned);
  const std::string role = TaskRoleArnOf(*it);
  if (role.empty()) return InvalidArgument("The task has no task role.", Error::kNoTaskRole);
  std::shared_ptr<const TaskCredentialsProvider> provider;
  {
    std::lock_guard lock(mu_);
    provider = credentials_provider_;
  }
  if (!provider || !*provider) return Unavailable("this node mints no task role credentials (no provider set)");
  return (*provider)(it->scope.account, role, task_arn.substr(task_arn.rfind('/') + 1));
}

void InProcessControl::NotifyAll() { OnChange(); }

void InProcessControl::OnChange() {
  // Tasks does not say whose assignments changed: every watcher and waiter looks again (an
  // Agent's Reconcile and a waiter's version check are cheap).
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard lock(mu_);
    ++generation_;
    for (const auto& [id, w] : watchers_) wakes.push_back(w.wake);
  }
  cv_.notify_all();
  for (const auto& wake : wakes) wake();
}

StatusOr<AssignmentSet> InProcessControl::Poll(std::string_view agent_id, const AccountId& account,
                                               std::string_view known_version, TimePoint deadline) {
  AssignmentSet out;
  std::unique_lock lock(mu_);
  std::optional<uint64_t> ticket;
  if (!shutdown_ && !known_version.empty()) {
    ticket = slots_.Admit(account.str(), agent_id);
    // The poll whose slot this one took (if any) must look again: it answers at once.
    cv_.notify_all();
  }
  out.busy = !ticket && !known_version.empty();
  for (;;) {
    uint64_t seen = generation_;
    lock.unlock();
    auto specs = tasks_.Assignments(agent_id);
    lock.lock();
    if (!specs.ok()) {
      if (ticket) slots_.Release(*ticket);
      return specs.status();
    }
    out.tasks = std::move(*specs);
    out.version = AssignmentsVersion(out.tasks);
    if (!ticket || out.version != known_version || shutdown_ || slots_.Lost(*ticket)) break;
    // Sleep until something changes (a change between the read and here bumped generation_), a
    // later poll takes this one's slot, or it is time to read again for another process's changes.
    const TimePoint recheck = SystemClock::Get().Now() + options_.recheck;
    if (!cv_.wait_until(lock, std::min(deadline, recheck),
                        [&] { return shutdown_ || generation_ != seen || slots_.Lost(*ticket).has_value(); }) &&
        recheck >= deadline) {
      break;  // the deadline passed with nothing changed: what was read is still current
    }
  }
  if (ticket) {
    // Cut short for another poll: its agent should pause before polling again.
    if (slots_.Lost(*ticket) && out.version == known_version) out.busy = true;
    slots_.Release(*ticket);
  }
  if (shutdown_) out.busy = true;
  return out;
}

Status InProcessControl::Heartbeat(const Scope& scope, std::string_view cluster, std::string_view instance_id,
                                   TimePoint now) {
  if (instances_ == nullptr) return OkStatus();
  return instances_->Heartbeat(scope, cluster, instance_id, now);
}

void InProcessControl::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  if (ecs::drain::DrainHolds* holds = drain_.load()) holds->Shutdown();
}

size_t InProcessControl::waiters() {
  std::lock_guard lock(mu_);
  return slots_.held();
}

size_t InProcessControl::waiters(const AccountId& account) {
  std::lock_guard lock(mu_);
  return slots_.held(account.str());
}

}  // namespace paddock::agent
