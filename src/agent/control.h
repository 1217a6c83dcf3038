// agent/control: the seam between a node agent and the control plane.
//
// An Agent learns its work and reports its progress only through a Control, so the same agent
// runs inside the server (InProcessControl: straight onto ecs/task's Tasks and ecs/instance's
// ContainerInstances) or as `paddock agent` in another process or on another host
// (agent/remote/remote_control.h: the same calls over HTTP with SigV4,
// docs/agent-protocol.md).
//
//   InProcessControl control(tasks, &instances);   // becomes Tasks' one change listener
//   auto watch = control.Watch("fargate-local", [&] { agent.Notify(); });
//   ASSIGN_OR_RETURN(auto specs, control.Assignments("fargate-local"));
//   RETURN_IF_ERROR(control.Report("fargate-local", arn, change, now));
//   ...
//   control.Unwatch(watch);
//   control.Shutdown();   // releases every long-poll waiter (before the HTTP server stops)
//
// Agent ids: the in-process Fargate agent is "fargate-local"; an EC2 agent is its container
// instance's ARN (ecs::task::InstanceAgentId).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/metadata/credentials.h"
#include "agent/poll_slots.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/instance/instances.h"
#include "ecs/task/tasks.h"
#include "vpc/policy.h"

namespace paddock::agent {

// A digest of what an agent must act on in its assignments: each task's ARN and desiredStatus.
// Two answers with the same version ask the same of the agent (the agent's own lastStatus
// reports do not change it).
std::string AssignmentsVersion(const std::vector<ecs::task::LaunchSpec>& specs);

class Control {
 public:
  virtual ~Control() = default;
  // The tasks assigned to `agent_id`, now.
  virtual StatusOr<std::vector<ecs::task::LaunchSpec>> Assignments(std::string_view agent_id) = 0;
  // Applies the agent's report of one task (ecs::task::Tasks::ReportState's rules: only the
  // task's agent may report, never backwards). `now` is the agent's clock; a remote control
  // plane stamps the report with its own.
  virtual Status Report(std::string_view agent_id, std::string_view task_arn,
                        const ecs::task::TaskStateChange& change, TimePoint now) = 0;
  // `wake` is called (cheaply, from any thread) whenever `agent_id`'s assignments may have
  // changed. Returns a handle for Unwatch.
  virtual uint64_t Watch(std::string_view agent_id, std::function<void()> wake) = 0;
  virtual void Unwatch(uint64_t handle) = 0;
  // The task `spec` names as DescribeTasks returns it now (one serialized Task, without tags): for
  // the task metadata endpoint (agent/metadata), which renders it on every request. NotFound when
  // the task is gone.
  virtual StatusOr<std::string> DescribeTask(const ecs::task::LaunchSpec& spec) = 0;
  // The network policy of the VPC of `scope` (its default VPC) as agent `agent_id` enforces it
  // for its awsvpc tasks: which of the VPC's task addresses are in which security groups, and the
  // groups' rules (vpc/policy.h). Every task assigned to the agent whose address the VPC has
  // handed out is among the members. The agent asks before it attaches a task and on every pass.
  // By default (and in the agent's unit tests, which make no task networks) unavailable.
  virtual StatusOr<vpc::VpcPolicy> NetworkPolicy(std::string_view agent_id, const Scope& scope);
  // The control plane's node identity: the same for every agent of one server (or of servers
  // sharing one store), different for another server. Names the VPC router namespaces on a host
  // (agent/net VpcRef::node), so the agents of one server share them and two servers never do.
  // Empty while unknown (RemoteControl before its first poll answer).
  virtual std::string NetworkIdentity() { return {}; }
  // Credentials of the task role of `spec`'s task (TaskRoleArnOf), which must be assigned to
  // `agent_id` and not STOPPED: a real STS role session named after the task id, minted by the
  // control plane (a remote node never holds IAM rights). The same set is answered until it has
  // less than metadata::kCredentialsRefreshBefore left. InvalidArgument, NotFound or
  // PermissionDenied when the role cannot be assumed (no such role, its trust does not admit
  // ecs-tasks.amazonaws.com), with a message for the container; Unavailable by default.
  virtual StatusOr<metadata::RoleCredentials> TaskRoleCredentials(std::string_view agent_id,
                                                                  const ecs::task::LaunchSpec& spec);
};

// The task role `spec`'s task runs with: its overrides' taskRoleArn, else its pinned definition's;
// empty when none (then its containers get no credentials).
std::string TaskRoleArnOf(const ecs::task::LaunchSpec& spec);

// Tasks::Describe of the one task `spec` names (TasksControl's and InProcessControl's DescribeTask).
StatusOr<std::string> DescribeOne(ecs::task::Tasks& tasks, const ecs::task::LaunchSpec& spec);

// Tasks straight through, with no change fan-out: Watch does nothing, so whoever owns the Tasks
// wakes its agent (Tasks::SetChangeListener → Agent::Notify). For the agent's unit tests (and
// Agent's Tasks& constructor).
class TasksControl final : public Control {
 public:
  explicit TasksControl(ecs::task::Tasks& tasks) : tasks_(tasks) {}
  StatusOr<std::vector<ecs::task::LaunchSpec>> Assignments(std::string_view agent_id) override {
    return tasks_.Assignments(agent_id);
  }
  Status Report(std::string_view agent_id, std::string_view task_arn, const ecs::task::TaskStateChange& change,
                TimePoint now) override {
    return tasks_.ReportState(agent_id, task_arn, change, now);
  }
  uint64_t Watch(std::string_view, std::function<void()>) override { return 0; }
  void Unwatch(uint64_t) override {}
  StatusOr<std::string> DescribeTask(const ecs::task::LaunchSpec& spec) override { return DescribeOne(tasks_, spec); }

 private:
  ecs::task::Tasks& tasks_;
};

// The answer to a (long-)poll.
struct AssignmentSet {
  std::vector<ecs::task::LaunchSpec> tasks;
  std::string version;  // AssignmentsVersion(tasks)
  // No wait slot was free (or the control plane is shutting down), so the answer came at once
  // though nothing changed: the caller should pause before it polls again.
  bool busy = false;
};

struct InProcessOptions {
  // Long-polls waiting at once; more callers are answered at once (AssignmentSet::busy) so that
  // waiting agents can never take every HTTP worker thread. Shared between instances and
  // accounts as agent/poll_slots.h says.
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
  StatusOr<std::string> DescribeTask(const ecs::task::LaunchSpec& spec) override { return DescribeOne(tasks_, spec); }
  // The provider's answer (Unavailable until one is set).
  StatusOr<vpc::VpcPolicy> NetworkPolicy(std::string_view agent_id, const Scope& scope) override;
  std::string NetworkIdentity() override { return options_.network_identity; }
  // TaskRoleCredentialsForAgent of spec.task_arn: the role is read from the control plane's own
  // record of the assignment, never from `spec`.
  StatusOr<metadata::RoleCredentials> TaskRoleCredentials(std::string_view agent_id,
                                                          const ecs::task::LaunchSpec& spec) override;
  // For the agent protocol's GetTaskCredentials too: the task `task_arn` must be assigned to
  // `agent_id` and not STOPPED (PermissionDenied, AccessDeniedException, otherwise); a task
  // without a task role is InvalidArgument (ClientException). Unavailable until a provider is set.
  StatusOr<metadata::RoleCredentials> TaskRoleCredentialsForAgent(std::string_view agent_id, std::string_view task_arn);
  // Sets what TaskRoleCredentials mints with (the node sets it once, before agents start).
  void SetTaskCredentialsProvider(TaskCredentialsProvider provider);

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

  // The long-poll of the agent `agent_id` (a container instance's, of `account`): answers at once
  // when the assignments' version differs from `known_version` (empty: always differs),
  // otherwise waits until it does, `deadline` passes, or Shutdown — if it gets a wait slot
  // (PollSlots: one per instance, a fair share per account). Without one, or when a later poll
  // takes its slot, it is answered at once with busy set. `deadline` is on the system clock.
  StatusOr<AssignmentSet> Poll(std::string_view agent_id, const AccountId& account, std::string_view known_version,
                               TimePoint deadline);

  // The container instance's agent is alive at `now` (ContainerInstances::Heartbeat).
  Status Heartbeat(const Scope& scope, std::string_view cluster, std::string_view instance_id, TimePoint now);

  // Wakes every waiter and makes later Polls answer at once. Idempotent.
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
  std::shared_ptr<const NetworkPolicyProvider> policy_provider_;  // GUARDED_BY(mu_)
  std::shared_ptr<const TaskCredentialsProvider> credentials_provider_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::agent
