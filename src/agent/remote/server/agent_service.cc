#include "agent/remote/server/agent_service.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "agent/images/reference.h"
#include "agent/inprocess/errors.h"
#include "agent/protocol/wire.h"
#include "aws/model.h"
#include "common/json_fields.h"
#include "ecs/api/errors.h"
#include "ecs/cluster/clusters.h"
#include "ecs/common/errors.h"
#include "ecs/common/resource_arn.h"
#include "ecs/instance/instances.h"
#include "vpc/default_vpc.h"

namespace paddock::agent::remote {
namespace json = boost::json;
using json_fields::Str;
using protocol::DecodeLogsCall;
using protocol::DecodeStateChange;
using protocol::EncodeDrainAnswer;
using protocol::EncodeExecutionResources;
using protocol::EncodeLaunchSpec;
using protocol::EncodeLogsAnswer;
using protocol::EncodeRoleCredentials;
using protocol::EncodeVpcPolicy;

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
    "RegisterAgent": {"name": "RegisterAgent", "input": {"shape": "RegisterAgentRequest"},
                      "output": {"shape": "RegisterAgentResponse"}},
    "GetNetworkPolicy": {"name": "GetNetworkPolicy", "input": {"shape": "GetNetworkPolicyRequest"},
                         "output": {"shape": "GetNetworkPolicyResponse"}},
    "GetImageAccess": {"name": "GetImageAccess", "input": {"shape": "GetImageAccessRequest"},
                       "output": {"shape": "GetImageAccessResponse"}},
    "GetTaskCredentials": {"name": "GetTaskCredentials", "input": {"shape": "GetTaskCredentialsRequest"},
                           "output": {"shape": "GetTaskCredentialsResponse"}},
    "GetExecutionResources": {"name": "GetExecutionResources", "input": {"shape": "GetExecutionResourcesRequest"},
                              "output": {"shape": "GetExecutionResourcesResponse"}},
    "ShipLogs": {"name": "ShipLogs", "input": {"shape": "ShipLogsRequest"}, "output": {"shape": "ShipLogsResponse"}},
    "AwaitDrain": {"name": "AwaitDrain", "input": {"shape": "AwaitDrainRequest"},
                   "output": {"shape": "AwaitDrainResponse"}}
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
                  "hostPort": {"shape": "BoxedInteger"}, "protocol": {"shape": "String"},
                  "containerPortRange": {"shape": "String"}, "hostPortRange": {"shape": "String"}}},
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
    "Double": {"type": "double"},
    "Long": {"type": "long"},
    "StringList": {"type": "list", "member": {"shape": "String"}},
    "Resource": {"type": "structure",
      "members": {"name": {"shape": "String"}, "type": {"shape": "String"}, "doubleValue": {"shape": "Double"},
                  "longValue": {"shape": "Long"}, "integerValue": {"shape": "BoxedInteger"},
                  "stringSetValue": {"shape": "StringList"}}},
    "Resources": {"type": "list", "member": {"shape": "Resource"}},
    "VersionInfo": {"type": "structure",
      "members": {"agentVersion": {"shape": "String"}, "agentHash": {"shape": "String"},
                  "dockerVersion": {"shape": "String"}}},
    "Attribute": {"type": "structure", "required": ["name"],
      "members": {"name": {"shape": "String"}, "value": {"shape": "String"}}},
    "Attributes": {"type": "list", "member": {"shape": "Attribute"}},
    "RegisterAgentRequest": {"type": "structure", "required": ["cluster"],
      "members": {"cluster": {"shape": "String"}, "containerInstanceArn": {"shape": "String"},
                  "totalResources": {"shape": "Resources"}, "versionInfo": {"shape": "VersionInfo"},
                  "attributes": {"shape": "Attributes"}, "instanceIdentityDocument": {"shape": "String"},
                  "overlayAddress": {"shape": "String"}}},
    "RegisterAgentResponse": {"type": "structure", "members": {}},
    "GetNetworkPolicyRequest": {"type": "structure", "required": ["cluster", "containerInstance"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "vpcId": {"shape": "String"}}},
    "GetNetworkPolicyResponse": {"type": "structure", "members": {}},
    "GetImageAccessRequest": {"type": "structure", "required": ["cluster", "containerInstance", "image"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "image": {"shape": "String"}}},
    "GetImageAccessResponse": {"type": "structure", "members": {}},
    "GetTaskCredentialsRequest": {"type": "structure", "required": ["cluster", "containerInstance", "task"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "task": {"shape": "String"}}},
    "GetTaskCredentialsResponse": {"type": "structure", "members": {}},
    "GetExecutionResourcesRequest": {"type": "structure", "required": ["cluster", "containerInstance", "task"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "task": {"shape": "String"}}},
    "GetExecutionResourcesResponse": {"type": "structure", "members": {}},
    "Boolean": {"type": "boolean"},
    "LogEvent": {"type": "structure", "required": ["timestamp", "message"],
      "members": {"timestamp": {"shape": "Long"}, "message": {"shape": "String"}}},
    "LogEvents": {"type": "list", "member": {"shape": "LogEvent"}, "max": 10000},
    "ShipLogsRequest": {"type": "structure", "required": ["cluster", "containerInstance", "task", "container", "stream"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "task": {"shape": "String"}, "container": {"shape": "String"}, "stream": {"shape": "String"},
                  "createStream": {"shape": "Boolean"}, "events": {"shape": "LogEvents"}}},
    "ShipLogsResponse": {"type": "structure", "members": {}},
    "AwaitDrainRequest": {"type": "structure", "required": ["cluster", "containerInstance", "task"],
      "members": {"cluster": {"shape": "String"}, "containerInstance": {"shape": "String"},
                  "task": {"shape": "String"}, "waitSeconds": {"shape": "WaitSeconds"}}},
    "AwaitDrainResponse": {"type": "structure", "members": {}}
  }
})json";
  return kModel;
}

namespace {

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
    return InvalidArgument("The container instance does not belong to the cluster.", ecs::Error::kInvalidParameter);
  c.id = ref.id;
  const std::string arn = ecs::instance::ContainerInstanceArn(ctx.scope, c.cluster, c.id);
  // Only the instance's own agent credential speaks for it (docs/agent-protocol.md, "Identity").
  if (ctx.principal.agent_of != arn) return ecs::NotAuthorized(ctx.principal.arn, ctx.action, arn);
  c.agent_id = ecs::task::InstanceAgentId(arn);
  return c;
}

}  // namespace

AgentService::AgentService(InProcessControl& control, ecs::instance::ContainerInstances& instances,
                           AgentServiceOptions options)
    : control_(control), instances_(instances), options_(options) {
  auto model = aws::ServiceModel::Parse(AgentModelJson());
  if (!model.ok()) std::abort();  // the embedded model is a constant: a parse failure is a build bug
  model_ = std::move(*model);
}

AgentService::~AgentService() = default;

std::optional<aws::AwsError> AgentService::ErrorFor(const Status& status) const {
  if (std::optional<agent::Error> e = status.detail().As<agent::Error>()) {
    switch (*e) {
      case agent::Error::kTaskNotAssigned: return aws::AwsError{"AccessDeniedException", 400};
      case agent::Error::kNoTaskRole: return aws::AwsError{"ClientException", 400};
    }
  }
  return ecs::api::EcsErrorFor(status);
}

bool AgentService::Implements(std::string_view action) const {
  return action == "PollAssignments" || action == "ReportTaskState" || action == "RegisterAgent" ||
         action == "GetNetworkPolicy" || action == "GetImageAccess" || action == "GetTaskCredentials" ||
         action == "GetExecutionResources" || action == "ShipLogs" || action == "AwaitDrain";
}

StatusOr<std::string> AgentService::Call(const aws::CallContext& ctx, json::object& input) {
  if (ctx.action == "PollAssignments") return PollAssignments(ctx, input);
  if (ctx.action == "ReportTaskState") return ReportTaskState(ctx, input);
  if (ctx.action == "RegisterAgent") return RegisterAgent(ctx, input);
  if (ctx.action == "GetNetworkPolicy") return GetNetworkPolicy(ctx, input);
  if (ctx.action == "GetImageAccess") return GetImageAccess(ctx, input);
  if (ctx.action == "GetTaskCredentials") return GetTaskCredentials(ctx, input);
  if (ctx.action == "GetExecutionResources") return GetExecutionResources(ctx, input);
  if (ctx.action == "ShipLogs") return ShipLogs(ctx, input);
  if (ctx.action == "AwaitDrain") return AwaitDrain(ctx, input);
  return InvalidArgument("", aws::Error::kUnknownOperation);
}

StatusOr<std::string> AgentService::PollAssignments(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  std::chrono::milliseconds wait = options_.max_wait;
  if (auto it = in.find("waitSeconds"); it != in.end() && it->value().is_number())
    wait = std::min(wait, std::chrono::milliseconds(it->value().to_number<int64_t>() * 1000));
  const TimePoint deadline = SystemClock::Get().Now() + wait;
  // Wait slots are shared per instance and per account (agent/inprocess/poll_slots.h).
  ASSIGN_OR_RETURN(AssignmentSet set,
                   control_.Poll(caller.agent_id, ctx.scope.account, Str(in, "knownVersion"), deadline));
  // The instance was alive all along: its heartbeat is as of the answer, not only the question.
  control_.Heartbeat(ctx.scope, caller.cluster, caller.id, SystemClock::Get().Now()).IgnoreError();
  json::array tasks;
  for (const auto& spec : set.tasks) tasks.push_back(EncodeLaunchSpec(spec));
  json::object out{{"tasks", std::move(tasks)}, {"version", set.version}, {"busy", set.busy},
                   {"networkIdentity", control_.NetworkIdentity()}};
  if (options_.fence_after > std::chrono::milliseconds::zero()) out["fenceAfterMillis"] = options_.fence_after.count();
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

StatusOr<std::string> AgentService::RegisterAgent(const aws::CallContext& ctx, json::object& in) {
  ecs::instance::RegisterRequest r;
  ASSIGN_OR_RETURN(r.cluster, ecs::cluster::ClusterName(Str(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  if (auto it = in.find("containerInstanceArn"); it != in.end() && it->value().is_string()) {
    ASSIGN_OR_RETURN(ecs::instance::InstanceRef ref, ecs::instance::ParseInstanceRef(it->value().get_string(), ctx.scope,
                                                                                    ctx.action, ctx.principal.arn));
    r.container_instance = std::move(ref);
  }
  if (auto it = in.find("totalResources"); it != in.end() && it->value().is_array())
    r.total_resources = it->value().get_array();
  if (auto it = in.find("versionInfo"); it != in.end() && it->value().is_object())
    r.version_info = it->value().get_object();
  // The host's address (registration.h), answered by EC2's DescribeInstances.
  if (auto it = in.find("instanceIdentityDocument"); it != in.end() && it->value().is_string())
    r.identity_document = std::string(it->value().get_string());
  if (auto it = in.find("attributes"); it != in.end() && it->value().is_array())
    for (const auto& a : it->value().get_array()) {
      ecs::instance::Attribute attr{Str(a.as_object(), "name"), std::nullopt};
      if (auto* v = a.as_object().if_contains("value"); v != nullptr && v->is_string()) attr.value = std::string(v->get_string());
      r.attributes.push_back(std::move(attr));
    }
  // The overlay address of the agent's host (issue 16 §3).
  if (const std::string overlay = Str(in, "overlayAddress"); !overlay.empty()) {
    uint32_t ip = 0;
    if (!vpc::ParseIpv4(overlay, &ip) || !vpc::IsHostAddressOtherHostsReach(ip))
      return InvalidArgument(fmt::format("overlayAddress '{}' is not a unicast IPv4 address another host can reach.",
                                         overlay),
                             ecs::Error::kInvalidParameter);
    r.overlay_address = vpc::Ipv4ToString(ip);
  }
  r.agent = ecs::instance::AgentKind::kRemote;
  r.caller_agent = ctx.principal.agent_of;
  std::optional<ecs::instance::AgentCredential> issued;
  ASSIGN_OR_RETURN(std::string ci, instances_.Register(ctx.scope, r, ctx.now, &issued));
  json::object out{{"containerInstance", json::parse(ci)}};
  if (issued)
    out["credentials"] = json::object{{"accessKeyId", issued->access_key_id}, {"secretAccessKey", issued->secret_access_key}};
  return json::serialize(out);
}

StatusOr<std::string> AgentService::GetNetworkPolicy(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  // An unknown or deregistered instance is refused here, as by the other calls.
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  ASSIGN_OR_RETURN(vpc::VpcPolicy policy, control_.NetworkPolicyForAgent(caller.agent_id, ctx.scope));
  // The caller's own VPC only: its account's, as the scope says.
  if (const std::string asked = Str(in, "vpcId"); !asked.empty() && asked != policy.vpc_id)
    return PermissionDenied("The container instance has no task in this VPC.");
  return json::serialize(json::object{{"policy", EncodeVpcPolicy(policy)}});
}

namespace {

// Whether a container of a task in `specs` names the image `canonical` (ParseReference's String()).
bool AnyTaskNames(const std::vector<ecs::task::LaunchSpec>& specs, const std::string& canonical) {
  for (const auto& spec : specs) {
    boost::system::error_code ec;
    json::value def = json::parse(spec.definition, ec);
    if (ec || !def.is_object()) continue;
    const json::value* containers = def.get_object().if_contains("containerDefinitions");
    if (containers == nullptr || !containers->is_array()) continue;
    for (const auto& c : containers->get_array()) {
      if (!c.is_object()) continue;
      auto ref = images::ParseReference(Str(c.get_object(), "image"));
      if (ref.ok() && ref->String() == canonical) return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<std::string> AgentService::GetTaskCredentials(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  ASSIGN_OR_RETURN(std::string id, ecs::task::TaskId(Str(in, "task"), ctx.scope, ctx.action, ctx.principal.arn));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  StatusOr<metadata::RoleCredentials> creds =
      control_.TaskRoleCredentialsForAgent(caller.agent_id, ecs::task::TaskArn(ctx.scope, caller.cluster, id));
  if (!creds.ok()) {
    const Status& s = creds.status();
    // The role cannot be assumed: a ClientException whose message the agent's endpoint hands the
    // container (the agent tells it from an outage by the type).
    if (s.detail().empty() &&
        (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kPermissionDenied ||
         s.code() == StatusCode::kInvalidArgument))
      return InvalidArgument(std::string(s.message()), ecs::Error::kClient);
    return s;
  }
  return json::serialize(json::object{{"credentials", EncodeRoleCredentials(*creds)}});
}

void AgentService::SetImageAccessProvider(ImageAccessProvider provider) {
  std::lock_guard lock(image_access_mu_);
  image_access_ = std::move(provider);
}

StatusOr<std::string> AgentService::GetImageAccess(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  auto ref = images::ParseReference(Str(in, "image"));
  if (!ref.ok())
    return InvalidArgument(fmt::format("invalid reference format: {}", ref.status().message()), ecs::Error::kInvalidParameter);
  // Need to know: an instance gets only the images its own tasks run (what the server's own agents
  // could run for it anyway), never a listing or anything else of the store.
  ASSIGN_OR_RETURN(std::vector<ecs::task::LaunchSpec> assigned, control_.Assignments(caller.agent_id));
  if (!AnyTaskNames(assigned, ref->String()))
    return PermissionDenied("The container instance has no task that uses this image.");
  ImageAccessProvider provider;
  {
    std::lock_guard lock(image_access_mu_);
    provider = image_access_;
  }
  ImageAccess access;
  if (provider) {
    ASSIGN_OR_RETURN(access, provider(ref->String(), ecs::instance::ContainerInstanceArn(ctx.scope, caller.cluster, caller.id)));
  }
  json::object out{{"found", access.found}};
  if (access.found) {
    out["registry"] = access.registry;
    out["repository"] = access.repository;
    out["imageDigest"] = access.digest;
    out["token"] = access.token;
    out["expiresAt"] = std::chrono::duration<double>(access.expires_at.time_since_epoch()).count();
  } else {
    json::array near;
    for (const auto& n : access.near_images) near.emplace_back(n);
    out["nearImages"] = std::move(near);
  }
  return json::serialize(out);
}

StatusOr<std::string> AgentService::GetExecutionResources(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  ASSIGN_OR_RETURN(std::string id, ecs::task::TaskId(Str(in, "task"), ctx.scope, ctx.action, ctx.principal.arn));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  ASSIGN_OR_RETURN(protocol::ExecutionResources resources,
                   control_.ExecutionResourcesForAgent(caller.agent_id, ecs::task::TaskArn(ctx.scope, caller.cluster, id)));
  return json::serialize(json::object{{"resources", EncodeExecutionResources(resources)}});
}

StatusOr<std::string> AgentService::ShipLogs(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  ASSIGN_OR_RETURN(std::string id, ecs::task::TaskId(Str(in, "task"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(protocol::LogsCall call, DecodeLogsCall(in));
  ASSIGN_OR_RETURN(protocol::LogsAnswer answer,
                   control_.ShipLogsForAgent(caller.agent_id, ecs::task::TaskArn(ctx.scope, caller.cluster, id), call));
  return json::serialize(EncodeLogsAnswer(answer));
}

StatusOr<std::string> AgentService::AwaitDrain(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(Caller caller, ResolveCaller(ctx, in));
  ASSIGN_OR_RETURN(std::string id, ecs::task::TaskId(Str(in, "task"), ctx.scope, ctx.action, ctx.principal.arn));
  RETURN_IF_ERROR(control_.Heartbeat(ctx.scope, caller.cluster, caller.id, ctx.now));
  std::chrono::milliseconds wait = options_.max_wait;
  if (auto it = in.find("waitSeconds"); it != in.end() && it->value().is_number())
    wait = std::min(wait, std::chrono::milliseconds(it->value().to_number<int64_t>() * 1000));
  // A waiting drain holds a worker thread: past the bound, the answer comes at once (the agent
  // pauses before it asks again).
  struct Waiting {
    std::atomic<size_t>& n;
    ~Waiting() { --n; }
  } waiting{drain_waiting_};
  if (drain_waiting_++ >= options_.max_drain_waiters) wait = std::chrono::milliseconds(0);
  ASSIGN_OR_RETURN(protocol::DrainAnswer answer,
                   control_.AwaitDrainForAgent(caller.agent_id, ecs::task::TaskArn(ctx.scope, caller.cluster, id), wait));
  return json::serialize(json::object{{"drain", EncodeDrainAnswer(answer)}});
}

}  // namespace paddock::agent::remote
