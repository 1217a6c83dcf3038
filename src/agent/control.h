// agent/control: the seam between a node agent and the control plane.
//
// An Agent learns its work and reports its progress only through a Control, so the same agent
// runs inside the server (agent/inprocess/inprocess_control.h: straight onto ecs/task's Tasks and
// ecs/instance's ContainerInstances) or as `paddock agent` in another process or on another host
// (agent/remote/remote_control.h: the same calls over HTTP with SigV4,
// docs/agent-protocol.md). Control speaks only the protocol's plain types
// (agent/protocol/messages.h): the agent links no ECS owner, no store and no API front.
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
// instance's ARN (protocol::InstanceAgentId).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "agent/metadata/credentials.h"
#include "agent/protocol/messages.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
// The VPC policy is pure data shared by the vpc owner and the agent (header only, no link).
#include "vpc/policy.h"

namespace paddock::agent {

// A digest of what an agent must act on in its assignments: each task's ARN and desiredStatus.
// Two answers with the same version ask the same of the agent (the agent's own lastStatus
// reports do not change it).
std::string AssignmentsVersion(const std::vector<protocol::LaunchSpec>& specs);

class Control {
 public:
  virtual ~Control() = default;
  // The tasks assigned to `agent_id`, now.
  virtual StatusOr<std::vector<protocol::LaunchSpec>> Assignments(std::string_view agent_id) = 0;
  // Applies the agent's report of one task (ecs::task::Tasks::ReportState's rules: only the
  // task's agent may report, never backwards). `now` is the agent's clock; a remote control
  // plane stamps the report with its own.
  virtual Status Report(std::string_view agent_id, std::string_view task_arn,
                        const protocol::TaskStateChange& change, TimePoint now) = 0;
  // `wake` is called (cheaply, from any thread) whenever `agent_id`'s assignments may have
  // changed. Returns a handle for Unwatch.
  virtual uint64_t Watch(std::string_view agent_id, std::function<void()> wake) = 0;
  virtual void Unwatch(uint64_t handle) = 0;
  // The task `spec` names as DescribeTasks returns it now (one serialized Task; with include TAGS
  // when `with_tags`, for ${URI}/taskWithTags only, so that the other documents read no tags): for
  // the task metadata endpoint (agent/metadata), which renders it on every request. NotFound when
  // the task is gone.
  virtual StatusOr<std::string> DescribeTask(const protocol::LaunchSpec& spec, bool with_tags) = 0;
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
                                                                  const protocol::LaunchSpec& spec);
  // What the start of `spec`'s task fetches as its execution role (its containers' secrets and
  // private registry credentials),
  // fetched by the control plane from its own record of the task — which must be assigned to
  // `agent_id` and not STOPPED — never by the node (a node holds no IAM rights). A value that
  // cannot be had is an answer (failure_reason). FailedPrecondition by default: this control
  // plane fetches nothing (the agent then refuses the secrets as not supported). Other errors: the
  // fetch itself failed, and the agent tries again.
  virtual StatusOr<protocol::ExecutionResources> PrepareExecutionResources(std::string_view agent_id,
                                                                          const protocol::LaunchSpec& spec);
  // The awslogs driver's calls (agent/awslogs.h): creates a container's log stream or puts a batch
  // into it (protocol::LogsCall), in CloudWatch Logs of the task's account, as its execution role.
  // The control plane takes the group from its own record of the task — which must be assigned to
  // `agent_id` and not STOPPED — and checks the stream is that container's. CloudWatch's refusal is
  // an answer (LogsAnswer::failure). FailedPrecondition by default: this control plane ships no
  // logs (the agent then refuses awslogs). Other errors: the call failed, and the agent tries again.
  virtual StatusOr<protocol::LogsAnswer> ShipLogs(std::string_view agent_id, const protocol::LaunchSpec& spec,
                                                  const protocol::LogsCall& call);
  // Drain before stop (docs/agent-protocol.md "AwaitDrain"): whether the task of `spec` — assigned
  // to `agent_id`, reported DEACTIVATING — may be stopped now, or must stay in DEACTIVATING while the
  // edges that route to it drain it (ecs/drain: held until every hold is released, the longest
  // drainTimeout passed since the first ask, or every hold's lease lapsed). Waits up to `max_wait`
  // (a remote control plane: up to protocol::kMaxDrainAsk) for "go" and answers kWait when none
  // came: the agent asks again. Aborted once `stop` is requested (the agent abandons the task);
  // PermissionDenied when the task is not the agent's; Unavailable when the control plane cannot
  // answer now. By default "go" at once (kNoHolds): a control plane that keeps no holds.
  virtual StatusOr<protocol::DrainAnswer> AwaitDrain(std::string_view agent_id, const protocol::LaunchSpec& spec,
                                                     std::chrono::milliseconds max_wait, std::stop_token stop);
};

// Whether `spec`'s pinned definition gives any container secrets or repositoryCredentials (what
// PrepareExecutionResources fetches; a task without any asks nothing).
bool NeedsExecutionResources(const protocol::LaunchSpec& spec);

// The task role `spec`'s task runs with: its overrides' taskRoleArn, else its pinned definition's;
// empty when none (then its containers get no credentials).
std::string TaskRoleArnOf(const protocol::LaunchSpec& spec);

using protocol::AssignmentSet;

}  // namespace paddock::agent
