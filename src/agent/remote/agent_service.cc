#include "agent/remote/agent_service.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "agent/remote/wire.h"
#include "aws/model.h"
#include "ecs/cluster/clusters.h"
#include "ecs/instance/instances.h"

namespace paddock::agent::remote {
namespace json = boost::json;

std::string_view AgentModelJson() {
  static constexpr std::string_view kModel = R"json({
  "version": "2.0",
  "metadata": {"apiVersion": "2026-11-30", "jsonVersion": "1.1", "protocol": "json",
               "serviceId": "Paddock Agent", "signingName": "ecs",
               "targetPrefix": "PaddockAgentV20261130"},
  "operations": {
    "PollAssignments": {"name": "PollAssignments", "input": {"shape": "PollAssignmentsRequest"},
                        "output": {"shape": "PollAssignmentsResponse"}},
    "ReportTaskState": {"name": "ReportTaskState", "input": {"shape": "ReportTaskStateRequest"},
                        "output": {"shape": "ReportTaskStateResponse"}},
    "GetNetworkPolicy": {"name": "GetNetworkPolicy", "input": {"shape": "GetNetworkPolicyRequest"},
                         "output": {"shape": "GetNetworkPolicyResponse"}}
  },
  "shapes": {
    "String": {"type": "string"},
    "Timestamp": {"type": "timestamp"},
    "BoxedInteger": {"type": "integer"},
    "WaitSeconds": {"type": "integer", "min": 0, "max": 20},
    "PollAssignmentsRequest": {"type": "structure", "required": ["cluster", "containerInstance"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "knownVersion": {"shape": "String"}, "waitSeconds": {"shape": "WaitSeconds"}}},
    "PollAssignmentsResponse": {"type": "structure", "members": {}},
    "ReportedContainer": {"type": "structure", "required": ["containerName", "status"],
      "members": {"containerName": {"shape": "String"}, "status": {"shape": "String"},
                  "exitCode": {"shape": "BoxedInteger"}, "reason": {"shape": "String"},
                  "runtimeId": {"shape": "String"}, "healthStatus": {"shape": "String"},
                  "imageDigest": {"shape": "String"}, "networkBindings": {"shape": "NetworkBindings"}}},
    "NetworkBinding": {"type": "structure",
      "members": {"bindIP": {"shape": "String"}, "containerPort": {"shape": "BoxedInteger"},
                  "hostPort": {"shape": "BoxedInteger"}, "protocol": {"shape": "String"}}},
    "NetworkBindings": {"type": "list", "member": {"shape": "NetworkBinding"}},
    "ReportedContainers": {"type": "list", "member": {"shape": "ReportedContainer"}},
    "ReportTaskStateRequest": {"type": "structure",
      "required": ["cluster", "containerInstance", "task", "status"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "task": {"shape": "String"}, "status": {"shape": "String"},
                  "reason": {"shape": "String"}, "stopCode": {"shape": "String"},
                  "healthStatus": {"shape": "String"}, "pullStartedAt": {"shape": "Timestamp"},
                  "pullStoppedAt": {"shape": "Timestamp"}, "executionStoppedAt": {"shape": "Timestamp"},
                  "containers": {"shape": "ReportedContainers"}}},
    "ReportTaskStateResponse": {"type": "structure", "members": {"acknowledgment": {"shape": "String"}}},
    "GetNetworkPolicyRequest": {"type": "structure", "required": ["cluster", "containerInstance"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "vpcId": {"shape": "String"}}},
    "GetNetworkPolicyResponse": {"type": "structure", "members": {}}
  }
})json";
  return kModel;
}

namespace {

std::string Str(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

// The calling agent's container instance: (cluster name, instance id), in the caller's scope.
struct Caller {
  std::string cluster;
  std::string id;
  std::string agent_id;  // ecs::task::InstanceAgentId
};

StatusOr<Caller> ResolveCaller(const aws::CallContext& ctx, const json::object& in) {
  Caller c;
  ASSIGN_OR_RETURN(c.cluster, ecs::cluster::ClusterName(Str(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(ecs::instance::InstanceRef ref, ecs::instance::ParseInstanceRef(Str(in, "containerInstance"),
                                                                                  ctx.scope, ctx.action, ctx.principal.arn));
  if (ref.cluster && *ref.cluster != c.cluster)
    return InvalidArgument("The container instance does not belong to the cluster.", "InvalidParameterException");
  c.id = ref.id;
  c.agent_id = ecs::task::InstanceAgentId(ecs::instance::ContainerInstanceArn(ctx.scope, c.cluster, c.id));
  return c;
}

}  // namespace

AgentService::AgentService(InProcessControl& control, AgentServiceOptions options)
    : control_(control), options_(options) {
  auto model = aws::ServiceModel::Parse(AgentModelJson());
  if (!model.ok()) std::abort();  // the embedded model is a constant: a parse failure is a build bug
  model_ = std::move(*model);
}

AgentService::~AgentService() = default;

bool AgentService::Implements(std::string_view action) const {
  return action == "PollAssignments" || action == "ReportTaskState" || action == "GetNetworkPolicy";
}

StatusOr<std::string> AgentService::Call(const aws::CallContext& ctx, json::object& input) {
  if (ctx.action == "PollAssignments") return PollAssignments(ctx, input);
  if (ctx.action == "ReportTaskState") return ReportTaskState(ctx, input);
  if (ctx.action == "GetNetworkPolicy") return GetNetworkPolicy(ctx, input);
  return InvalidArgument("", "UnknownOperationException");
}

StatusOr<std::string> AgentService::PollAssignments(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  std::chrono::milliseconds wait = options_.max_wait;
  if (auto it = in.find("waitSeconds"); it != in.end() && it->value().is_number())
    wait = std::min(wait, std::chrono::milliseconds(it->value().to_number<int64_t>() * 1000));
  const TimePoint deadline = SystemClock::Get().Now() + wait;
  ASSIGN_OR_RETURN(AssignmentSet set, control_.Poll(caller.agent_id, Str(in, "knownVersion"), deadline));
  // The instance was alive all along: its heartbeat is as of the answer, not only the question.
  control_.Heartbeat(ctx.scope, caller.cluster, caller.id, SystemClock::Get().Now()).IgnoreError();
  json::array tasks;
  for (const auto& spec : set.tasks) tasks.push_back(EncodeLaunchSpec(spec));
  json::object out{{"tasks", std::move(tasks)}, {"version", set.version}, {"busy", set.busy},
                   {"networkIdentity", control_.NetworkIdentity()}};
  return json::serialize(out);
}

StatusOr<std::string> AgentService::ReportTaskState(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  ASSIGN_OR_RETURN(std::string id, ecs::task::TaskId(Str(in, "task"), ctx.scope, ctx.action, ctx.principal.arn));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  ecs::task::TaskStateChange change = DecodeStateChange(in);
  RETURN_IF_ERROR(control_.Report(caller.agent_id, ecs::task::TaskArn(ctx.scope, caller.cluster, id), change, ctx.now));
  return std::string(R"({"acknowledgment":"ACK"})");
}

StatusOr<std::string> AgentService::GetNetworkPolicy(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  // An unknown or deregistered instance is refused here, as by the other calls.
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  ASSIGN_OR_RETURN(vpc::VpcPolicy policy, control_.NetworkPolicyForAgent(caller.agent_id, ctx.scope));
  // The caller's own VPC only: its account's, as the scope says.
  if (const std::string asked = Str(in, "vpcId"); !asked.empty() && asked != policy.vpc_id)
    return PermissionDenied("The container instance has no task in this VPC.", "AccessDeniedException");
  return json::serialize(json::object{{"policy", EncodeVpcPolicy(policy)}});
}

}  // namespace paddock::agent::remote
