// agent/remote/server/agent_service: the control plane's side of the Paddock agent protocol
// (docs/agent-protocol.md) — the calls a remote agent needs that ECS's public API cannot carry.
// A JSON 1.1 service under its own X-Amz-Target prefix, "PaddockAgentV20261130", signed with
// SigV4 for the "ecs" signing name, so the front authenticates it like any ECS call:
//
//   PollAssignments  {cluster, containerInstance, knownVersion?, waitSeconds?}
//                    -> {tasks: [LaunchSpec], version, busy}
//       The long-poll: answers at once when the instance's assignments' version differs from
//       knownVersion, else when they change or after min(waitSeconds, max_wait). Counts as the
//       instance's heartbeat (agentConnected). At most InProcessOptions::max_waiters wait at once,
//       shared fairly (agent/inprocess/poll_slots.h: one per instance, a fair share per account); others —
//       and a waiting poll whose slot a later one took — are answered at once with busy=true.
//   ReportTaskState  {cluster, containerInstance, task, status, reason?, stopCode?,
//                     healthStatus?, pullStartedAt?, pullStoppedAt?, executionStoppedAt?,
//                     containers?: [{containerName, status, exitCode?, reason?, runtimeId?,
//                     healthStatus?, imageDigest?, networkBindings?}]} -> {acknowledgment}
//       SubmitTaskStateChange's members plus what ECS's public shapes lack (stopCode, task and
//       container healthStatus). The reporting agent is the named container instance: the task
//       must be assigned to it (AccessDeniedException otherwise); reports never move a task
//       backwards (ecs::task::Tasks::ReportState). Also a heartbeat.
//   GetNetworkPolicy {cluster, containerInstance, vpcId?} -> {policy: VpcPolicy (wire.h)}
//       The network policy of the caller's VPC (its account's default VPC in the signing region),
//       which the agent enforces for its awsvpc tasks (agent/net). Only for an instance that has a
//       task of that account and region assigned (AccessDeniedException otherwise). Also a
//       heartbeat.
//   GetImageAccess   {cluster, containerInstance, image} -> {found, registry?, repository?,
//                    imageDigest?, token?, expiresAt?, nearImages?}
//       Where the cluster's image store serves `image` (the server's store, through its registry:
//       registry/cluster_registry.h) with a pull token for it alone; found=false when the store has
//       no such name (then nearImages). Only for an image a task assigned to the instance names
//       (AccessDeniedException otherwise). Also a heartbeat.
//   GetTaskCredentials {cluster, containerInstance, task} -> {credentials: RoleCredentials (wire.h)}
//       The task role's credentials of a task assigned to the instance and not STOPPED
//       (AccessDeniedException otherwise), minted by the control plane
//       (InProcessControl::TaskRoleCredentialsForAgent): the remote node holds no IAM rights. A
//       role that cannot be assumed, or a task without one, is ClientException with the message
//       the task's container sees. Also a heartbeat.
//   GetExecutionResources {cluster, containerInstance, task}
//                    -> {resources: ExecutionResources (wire.h): containers' secrets and registry
//                       credentials, or failureReason}
//       What the task's start fetches as its execution role (InProcessControl::
//       ExecutionResourcesForAgent, the control plane's own record of the task), for a task
//       assigned to the instance and not STOPPED (AccessDeniedException otherwise). Secret values
//       travel in the answer, to that instance's agent only. Also a heartbeat.
//   ShipLogs         {cluster, containerInstance, task, container, stream, createStream?,
//                     events?: [{timestamp, message}]} -> {failure, defaultMode}
//       The awslogs driver's calls (InProcessControl::ShipLogsForAgent): the stream created, or
//       one PutLogEvents batch put, as the task's execution role, into the group the control
//       plane's record names for the container; same assignment check. Not a heartbeat (a
//       shipper's thread is not the agent's health).
//   AwaitDrain       {cluster, containerInstance, task, waitSeconds?} -> {drain: DrainAnswer (wire.h)}
//       Drain before stop: whether the instance's task (assigned to it and not STOPPED,
//       AccessDeniedException otherwise), which its agent reported DEACTIVATING, may be stopped now
//       (InProcessControl::AwaitDrainForAgent over ecs/drain's holds). A long-poll: answers as soon as
//       the verdict is "go", else after min(waitSeconds, max_wait) with verdict WAIT. At most
//       max_drain_waiters wait at once; past that the answer comes at once. Also a heartbeat.
//   PollAssignments' answer carries "networkIdentity" too (Control::NetworkIdentity), and
//   "fenceAfterMillis" (AgentServiceOptions::fence_after) when the server sweeps lost hosts: the
//   agent stops its tasks' containers once that long has passed since it sent its last answered
//   poll (docs/agent-protocol.md, "Fencing").
//
//   RegisterAgent    {cluster, containerInstanceArn?, totalResources?, versionInfo?, attributes?}
//                    -> {containerInstance, credentials?: {accessKeyId, secretAccessKey}}
//       RegisterContainerInstance's members, for `paddock agent`: a new instance (signed with an
//       account's key) is registered together with its agent credential, returned once; the
//       instance's own agent credential re-registers it (no new credential). An account's key
//       naming an instance registered through ECS's public API binds it the same way.
//
// Identity (docs/agent-protocol.md): PollAssignments, ReportTaskState, GetNetworkPolicy,
// GetImageAccess, GetTaskCredentials, GetExecutionResources, ShipLogs and AwaitDrain are
// accepted only when signed with the named instance's own agent credential (Principal::agent_of);
// an account's key, or another instance's credential, is AccessDeniedException. All take the container instance as
// an id or an ARN of the caller's own account and region (another account's: AccessDeniedException);
// an unknown or deregistered instance is InvalidParameterException.
//
//   AgentService agents(control, &instances, {.max_wait = std::chrono::seconds(20)});
//   front.AddJsonService(&agents);
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/inprocess/inprocess_control.h"
#include "agent/protocol/messages.h"
#include "aws/service.h"
#include "ecs/instance/instances.h"

namespace paddock::agent::remote {

// The protocol's names (agent/protocol/messages.h), as the server's.
using protocol::ImageAccess;
using protocol::kAgentTargetPrefix;

// Answers GetImageAccess for the canonical `reference`, on behalf of `subject` (the instance's ARN).
using ImageAccessProvider = std::function<StatusOr<ImageAccess>(const std::string& reference,
                                                               const std::string& subject)>;

struct AgentServiceOptions {
  // Upper bound on one long-poll's wait (the agent asks for at most this too).
  std::chrono::milliseconds max_wait = std::chrono::seconds(20);
  // AwaitDrain calls waiting at once (each holds an HTTP worker); more are answered at once.
  size_t max_drain_waiters = 16;
  // How long an agent that cannot reach the control plane keeps its tasks' containers
  // (ecs::instance::AgentFenceTime), sent with every PollAssignments answer. Zero: no fence.
  std::chrono::milliseconds fence_after{0};
};

class AgentService final : public aws::JsonService {
 public:
  AgentService(InProcessControl& control, ecs::instance::ContainerInstances& instances,
               AgentServiceOptions options = {});
  ~AgentService() override;

  std::string_view TargetPrefix() const override { return kAgentTargetPrefix; }
  std::string_view SigningName() const override { return "ecs"; }
  const aws::ServiceModel& Model() const override { return *model_; }
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view) const override { return std::nullopt; }
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // Every call of this service is an agent's (RegisterAgent also an account key's).
  bool AgentMay(std::string_view) const override { return true; }
  // The agent protocol answers in ECS's vocabulary: InProcessControl's agent::Error details
  // (AccessDeniedException, ClientException), then ECS's error table (ecs/api/errors.h).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

  // What GetImageAccess answers with (the node sets it once it has its image store; until then, and
  // without one, every image is "not found" and agents pull from images' own registries).
  void SetImageAccessProvider(ImageAccessProvider provider);

 private:
  StatusOr<std::string> PollAssignments(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> ReportTaskState(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> RegisterAgent(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> GetNetworkPolicy(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> GetImageAccess(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> GetTaskCredentials(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> GetExecutionResources(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> ShipLogs(const aws::CallContext& ctx, boost::json::object& in);
  StatusOr<std::string> AwaitDrain(const aws::CallContext& ctx, boost::json::object& in);

  InProcessControl& control_;
  ecs::instance::ContainerInstances& instances_;
  const AgentServiceOptions options_;
  std::unique_ptr<aws::ServiceModel> model_;
  std::mutex image_access_mu_;
  ImageAccessProvider image_access_;  // GUARDED_BY(image_access_mu_)
  std::atomic<size_t> drain_waiting_{0};  // AwaitDrain calls in progress
};

// The protocol's model (botocore's service JSON form), for the service and its tests.
std::string_view AgentModelJson();

}  // namespace paddock::agent::remote
