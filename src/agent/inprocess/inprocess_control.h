// agent/inprocess/inprocess_control: the agent's Control inside the server, straight onto the ECS
// owners (ecs/task's Tasks, ecs/instance's ContainerInstances). The control-plane side of the
// agent protocol: the remote protocol's server (agent/remote/server/agent_service.h) answers
// `paddock agent`s through it too. Lives apart from the agent (agent/control.h), so that the node
// agent links no owner and no store (docs/architecture.md, "The agent's dependency rule").
//
//   InProcessControl control(tasks, &instances);   // becomes Tasks' one change listener
//   auto watch = control.Watch("fargate-local", [&] { agent.Notify(); });
//   ...
//   control.Unwatch(watch);
//   control.Shutdown();   // releases every long-poll waiter (before the HTTP server stops)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "agent/control.h"
#include "agent/inprocess/poll_slots.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/drain/drain_holds.h"
#include "ecs/instance/instances.h"
#include "ecs/task/tasks.h"
#include "vpc/policy.h"

namespace paddock::agent {

// Tasks::Describe of the one task `spec` names (TasksControl's and InProcessControl's DescribeTask).
StatusOr<std::string> DescribeOne(ecs::task::Tasks& tasks, const ecs::task::LaunchSpec& spec, bool with_tags);

// Fetches what a task's start fetches as its execution role (its containers' secrets) for the
// task `record` — the control plane's own record of the assignment, never the agent's copy — or
// answers why it cannot (protocol::ExecutionResources::failure_reason). The node's is
// ecs::execution::Resolver over the ssm and secretsmanager owners, asked as the execution role.
using ExecutionResourcesProvider =
    std::function<StatusOr<protocol::ExecutionResources>(const ecs::task::LaunchSpec& record)>;

// Control::PrepareExecutionResources on `tasks`' record of `task_arn`: PermissionDenied
// (agent::Error::kTaskNotAssigned) unless it is assigned to `agent_id` and not STOPPED;
// FailedPrecondition when `provider` is empty (the node fetches nothing); else its answer.
StatusOr<protocol::ExecutionResources> ExecutionResourcesFor(ecs::task::Tasks& tasks, std::string_view agent_id,
                                                             std::string_view task_arn,
                                                             const ExecutionResourcesProvider* provider);

// Creates a log stream or puts a batch (protocol::LogsCall) for the task `record` — the control
// plane's own record of the assignment — as the awslogs driver asks. The node's is
// cli/log_shipping.h over logs::LogGroups, authorized as the task's execution role.
using LogsProvider =
    std::function<StatusOr<protocol::LogsAnswer>(const ecs::task::LaunchSpec& record, const protocol::LogsCall& call)>;

// Control::ShipLogs on `tasks`' record of `task_arn`: PermissionDenied (kTaskNotAssigned) unless
// it is assigned to `agent_id` and not STOPPED; FailedPrecondition when `provider` is empty.
StatusOr<protocol::LogsAnswer> ShipLogsFor(ecs::task::Tasks& tasks, std::string_view agent_id, std::string_view task_arn,
                                           const protocol::LogsCall& call, const LogsProvider* provider);

// Control::AwaitDrain over `holds` (the control plane's drain holds): its Await of `task_arn` for
// `agent_id`; null: no holds, go at once.
StatusOr<protocol::DrainAnswer> AwaitDrainOn(ecs::drain::DrainHolds* holds, std::string_view agent_id,
                                             std::string_view task_arn, std::chrono::milliseconds max_wait,
                                             std::stop_token stop);

// Tasks straight through, with no change fan-out: Watch does nothing, so whoever owns the Tasks
// wakes its agent (Tasks::SetChangeListener → Agent::Notify). For the agent's unit tests.
class TasksControl final : public Control {
 public:
  explicit TasksControl(ecs::task::Tasks& tasks) : tasks_(tasks) {}
  StatusOr<std::vector<ecs::task::LaunchSpec>> Assignments(std::string_view agent_id) override {
    return tasks_.Assignments(agent_id);
  }
  Status Report(std::string_view agent_id, std::string_view task_arn, const ecs::task::TaskStateChange& change,
                TimePoint now) override {
    {
      std::lock_guard lock(fault_mu_);
      if (report_fault_)
        if (Status s = report_fault_(change); !s.ok()) return s;
    }
    return tasks_.ReportState(agent_id, task_arn, change, now);
  }
  // A failing control plane: while set, `fault` sees each report first, and a non-OK answer is the
  // report's (refused, or unreachable) — the owner never sees that report. Null: none.
  void SetReportFault(std::function<Status(const ecs::task::TaskStateChange&)> fault) {
    std::lock_guard lock(fault_mu_);
    report_fault_ = std::move(fault);
  }
  uint64_t Watch(std::string_view, std::function<void()>) override { return 0; }
  void Unwatch(uint64_t) override {}
  StatusOr<std::string> DescribeTask(const ecs::task::LaunchSpec& spec, bool with_tags) override {
    return DescribeOne(tasks_, spec, with_tags);
  }
  StatusOr<protocol::ExecutionResources> PrepareExecutionResources(std::string_view agent_id,
                                                                  const ecs::task::LaunchSpec& spec) override {
    return ExecutionResourcesFor(tasks_, agent_id, spec.task_arn, &execution_resources_);
  }
  // Before the agent starts.
  void SetExecutionResourcesProvider(ExecutionResourcesProvider p) { execution_resources_ = std::move(p); }
  StatusOr<protocol::LogsAnswer> ShipLogs(std::string_view agent_id, const ecs::task::LaunchSpec& spec,
                                          const protocol::LogsCall& call) override {
    return ShipLogsFor(tasks_, agent_id, spec.task_arn, call, &logs_);
  }
  // Before the agent starts.
  void SetLogsProvider(LogsProvider p) { logs_ = std::move(p); }
  StatusOr<protocol::DrainAnswer> AwaitDrain(std::string_view agent_id, const ecs::task::LaunchSpec& spec,
                                             std::chrono::milliseconds max_wait, std::stop_token stop) override {
    return AwaitDrainOn(drain_, agent_id, spec.task_arn, max_wait, stop);
  }
  // Before the agent starts; must outlive it.
  void SetDrainHolds(ecs::drain::DrainHolds* holds) { drain_ = holds; }

 private:
  ecs::task::Tasks& tasks_;
  ExecutionResourcesProvider execution_resources_;
  LogsProvider logs_;
  ecs::drain::DrainHolds* drain_ = nullptr;
  std::mutex fault_mu_;
  std::function<Status(const ecs::task::TaskStateChange&)> report_fault_;  // GUARDED_BY(fault_mu_)
};

struct InProcessOptions {
  // Long-polls waiting at once; more callers are answered at once (AssignmentSet::busy) so that
  // waiting agents can never take every HTTP worker thread. Shared between instances and
  // accounts as agent/inprocess/poll_slots.h says.
  size_t max_waiters = 16;
  // A waiting poll also reads the assignments again this often: changes another process makes on
  // the same store (`paddock admin delete-account` stopping an account's tasks) reach no listener.
  std::chrono::milliseconds recheck = std::chrono::seconds(2);
  // NetworkIdentity(): the node's (kept in its store, so that its agents and `paddock agent`s
  // on one host share VPC namespaces, and a restarted server finds its own).
  std::string network_identity;
};

// Computes a VPC's policy (vpc/: SecurityGroups::PolicyFor) for InProcessControl.
using NetworkPolicyProvider = std::function<StatusOr<vpc::VpcPolicy>(const Scope& scope)>;

// Mints (or answers the held) credentials of role `role_arn` for task `task_id` of `account`, for
// InProcessControl (the node: sts::ServiceRoleSessions for ecs-tasks.amazonaws.com).
using TaskCredentialsProvider = std::function<StatusOr<metadata::RoleCredentials>(
    const AccountId& account, std::string_view role_arn, std::string_view task_id)>;

class InProcessControl final : public Control {
 public:
  // Installs itself as `tasks`' change listener (the one slot) and fans changes out to watchers
  // and long-poll waiters. `instances` may be null (no heartbeats).
  InProcessControl(ecs::task::Tasks& tasks, ecs::instance::ContainerInstances* instances,
                   InProcessOptions options = {});
  ~InProcessControl() override;  // removes the listener
  InProcessControl(const InProcessControl&) = delete;
  InProcessControl& operator=(const InProcessControl&) = delete;

  StatusOr<std::vector<ecs::task::LaunchSpec>> Assignments(std::string_view agent_id) override;
  Status Report(std::string_view agent_id, std::string_view task_arn, const ecs::task::TaskStateChange& change,
                TimePoint now) override;
  uint64_t Watch(std::string_view agent_id, std::function<void()> wake) override;
  void Unwatch(uint64_t handle) override;
  StatusOr<std::string> DescribeTask(const ecs::task::LaunchSpec& spec, bool with_tags) override {
    return DescribeOne(tasks_, spec, with_tags);
  }
  // The provider's answer (Unavailable until one is set).
  StatusOr<vpc::VpcPolicy> NetworkPolicy(std::string_view agent_id, const Scope& scope) override;
  std::string NetworkIdentity() override { return options_.network_identity; }
  // TaskRoleCredentialsForAgent of spec.task_arn: the role is read from the control plane's own
  // record of the assignment, never from `spec`.
  StatusOr<metadata::RoleCredentials> TaskRoleCredentials(std::string_view agent_id,
                                                          const ecs::task::LaunchSpec& spec) override;
  // For the agent protocol's GetTaskCredentials too: the task `task_arn` must be assigned to
  // `agent_id` and not STOPPED (PermissionDenied, agent::Error::kTaskNotAssigned, otherwise); a
  // task without a task role is InvalidArgument, kNoTaskRole (agent/inprocess/errors.h).
  // Unavailable until a provider is set.
  StatusOr<metadata::RoleCredentials> TaskRoleCredentialsForAgent(std::string_view agent_id, std::string_view task_arn);
  // Sets what TaskRoleCredentials mints with (the node sets it once, before agents start).
  void SetTaskCredentialsProvider(TaskCredentialsProvider provider);
  // ExecutionResourcesForAgent of spec.task_arn: read from the control plane's own record.
  StatusOr<protocol::ExecutionResources> PrepareExecutionResources(std::string_view agent_id,
                                                                  const ecs::task::LaunchSpec& spec) override;
  // ExecutionResourcesFor `task_arn` with the provider set (none: FailedPrecondition); for the
  // agent protocol's GetExecutionResources too.
  StatusOr<protocol::ExecutionResources> ExecutionResourcesForAgent(std::string_view agent_id,
                                                                    std::string_view task_arn);
  // Sets what PrepareExecutionResources fetches with (the node sets it once, before agents start).
  void SetExecutionResourcesProvider(ExecutionResourcesProvider provider);
  // ShipLogsForAgent of spec.task_arn.
  StatusOr<protocol::LogsAnswer> ShipLogs(std::string_view agent_id, const ecs::task::LaunchSpec& spec,
                                          const protocol::LogsCall& call) override;
  // ShipLogsFor `task_arn` with the provider set (none: FailedPrecondition); for the agent
  // protocol's ShipLogs too.
  StatusOr<protocol::LogsAnswer> ShipLogsForAgent(std::string_view agent_id, std::string_view task_arn,
                                                  const protocol::LogsCall& call);
  // Sets what ShipLogs writes with (the node sets it once, before agents start).
  void SetLogsProvider(LogsProvider provider);
  // AwaitDrainForAgent of spec.task_arn.
  StatusOr<protocol::DrainAnswer> AwaitDrain(std::string_view agent_id, const ecs::task::LaunchSpec& spec,
                                             std::chrono::milliseconds max_wait, std::stop_token stop) override;
  // The drain holds' wait for `task_arn`, which must be assigned to `agent_id` and not STOPPED
  // (PermissionDenied otherwise); for the agent protocol's AwaitDrain too. Without holds set: go
  // at once (kNoHolds).
  StatusOr<protocol::DrainAnswer> AwaitDrainForAgent(std::string_view agent_id, std::string_view task_arn,
                                                     std::chrono::milliseconds max_wait, std::stop_token stop = {});
  // Sets the control plane's drain holds (the node sets them once, before agents start; they must
  // outlive this control). Shutdown releases their waiters too.
  void SetDrainHolds(ecs::drain::DrainHolds* holds);

  // Sets what NetworkPolicy answers with (the node sets it once, before agents start; may be
  // called again, e.g. to replace a stand-in).
  void SetNetworkPolicyProvider(NetworkPolicyProvider provider);
  // For the agent protocol's GetNetworkPolicy: the policy, when `agent_id` has a task in `scope`
  // assigned to it (PermissionDenied otherwise: an instance learns only the VPCs it serves).
  StatusOr<vpc::VpcPolicy> NetworkPolicyForAgent(std::string_view agent_id, const Scope& scope);
  // Wakes every watcher now (their agents re-read policies at once): for a change of security
  // groups or of their members. Remote agents learn it on their next pass (at most one
  // poll_interval later).
  void NotifyAll();

  // Fences the in-process agent `agent_id` off, or lets it back (issue 16 §3, a server's Fargate
  // agent whose server cannot renew its host's offer): while fenced, its Assignments are empty —
  // the agent stops every container it runs, as a `paddock agent` does when its polls go
  // unanswered (docs/agent-protocol.md, "Fencing") — and once let back the store's answer stands
  // again. A change wakes the agent's watchers.
  void SetFenced(std::string_view agent_id, bool fenced);

  // The long-poll of the agent `agent_id` (a container instance's, of `account`): answers at once
  // when the assignments' version differs from `known_version` (empty: always differs),
  // otherwise waits until it does, `deadline` passes, or Shutdown — if it gets a wait slot
  // (PollSlots: one per instance, a fair share per account). Without one, or when a later poll
  // takes its slot, it is answered at once with busy set. `deadline` is on the system clock.
  StatusOr<AssignmentSet> Poll(std::string_view agent_id, const AccountId& account, std::string_view known_version,
                               TimePoint deadline);

  // The container instance's agent is alive at `now` (ContainerInstances::Heartbeat).
  Status Heartbeat(const Scope& scope, std::string_view cluster, std::string_view instance_id, TimePoint now);

  // Wakes every waiter — long-polls and drain waits — and makes later Polls answer at once (and
  // later drain waits Unavailable). Idempotent.
  void Shutdown();

  // Waiters now (in all, and of `account`), for tests.
  size_t waiters();
  size_t waiters(const AccountId& account);

 private:
  void OnChange();

  ecs::task::Tasks& tasks_;
  ecs::instance::ContainerInstances* instances_;
  const InProcessOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;  // GUARDED_BY(mu_): bumped by every change
  PollSlots slots_;          // GUARDED_BY(mu_)
  bool shutdown_ = false;    // GUARDED_BY(mu_)
  uint64_t next_watch_ = 1;  // GUARDED_BY(mu_)
  struct Watcher {
    std::string agent_id;
    std::function<void()> wake;
  };
  std::map<uint64_t, Watcher> watchers_;  // GUARDED_BY(mu_)
  std::set<std::string, std::less<>> fenced_;  // GUARDED_BY(mu_): agents SetFenced fenced off
  std::shared_ptr<const NetworkPolicyProvider> policy_provider_;  // GUARDED_BY(mu_)
  std::shared_ptr<const TaskCredentialsProvider> credentials_provider_;  // GUARDED_BY(mu_)
  std::shared_ptr<const ExecutionResourcesProvider> execution_provider_;  // GUARDED_BY(mu_)
  std::shared_ptr<const LogsProvider> logs_provider_;                     // GUARDED_BY(mu_)
  std::atomic<ecs::drain::DrainHolds*> drain_{nullptr};
};

}  // namespace paddock::agent
