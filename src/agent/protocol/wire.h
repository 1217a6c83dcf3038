// agent/protocol/wire: the JSON forms of what travels between a remote agent and the control plane
// (docs/agent-protocol.md). Both ends use these, so they cannot drift apart.
//
//   LaunchSpec    -> {"account", "region", "cluster", "taskArn", "taskDefinitionArn",
//                     "definition" (the pinned containers and volumes, serialized JSON, as a
//                     string), "overrides" (string), "desiredStatus", "lastStatus", "cpu",
//                     "memory", "network": {"subnetId", "ip", "prefixLength", "gateway"}}
//   TaskStateChange -> ReportTaskState's members: "status", "reason", "stopCode",
//                     "healthStatus", "pullStartedAt", "pullStoppedAt", "executionStoppedAt"
//                     (epoch seconds), "containers": [{"containerName", "status", "exitCode",
//                     "reason", "runtimeId", "healthStatus", "imageDigest"}]
//   VpcPolicy     -> {"vpcId", "version", "groups": [{"groupId", "ingress": [Rule], "egress": [Rule]}],
//                     "members": [{"ip", "groups": [group id]}]}, Rule = {"protocol", "fromPort",
//                     "toPort", "cidrs": [CIDR], "groups": [group id]}
//   RoleCredentials -> {"roleArn", "accessKeyId", "secretAccessKey", "sessionToken",
//                     "expiration" (epoch milliseconds)}
//   DrainAnswer   -> {"verdict": "WAIT" | "NO_HOLDS" | "RELEASED" | "TIMED_OUT" | "LEASES_EXPIRED",
//                     "holds", "deadline" (epoch milliseconds, while waiting)}
#pragma once

#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

#include "agent/protocol/messages.h"
#include "common/status.h"
// The VPC policy is pure data shared by the vpc owner and the agent (header only, no link).
#include "vpc/policy.h"

namespace paddock::agent::protocol {

boost::json::object EncodeLaunchSpec(const LaunchSpec& spec);
StatusOr<LaunchSpec> DecodeLaunchSpec(const boost::json::object& o);

// Adds the change's members to `out` (which already holds cluster, containerInstance, task).
void EncodeStateChange(const TaskStateChange& change, boost::json::object& out);
// Reads ReportTaskState's validated input.
TaskStateChange DecodeStateChange(const boost::json::object& in);
boost::json::object EncodeVpcPolicy(const vpc::VpcPolicy& policy);
// DataLoss when a member has the wrong type (the answer is the control plane's, not a user's).
StatusOr<vpc::VpcPolicy> DecodeVpcPolicy(const boost::json::object& o);

boost::json::object EncodeRoleCredentials(const RoleCredentials& c);
// DataLoss when a member is missing or has the wrong type.
StatusOr<RoleCredentials> DecodeRoleCredentials(const boost::json::object& o);

// GetExecutionResources' answer. Secret values travel in it: the answer goes only to the agent
// of the task's instance, signed with its own credential (docs/agent-protocol.md).
boost::json::object EncodeExecutionResources(const ExecutionResources& r);
// DataLoss when a member is missing or has the wrong type.
StatusOr<ExecutionResources> DecodeExecutionResources(const boost::json::object& o);

// ShipLogs' input: adds the call's members to `out` (which already holds cluster,
// containerInstance, task).
void EncodeLogsCall(const LogsCall& call, boost::json::object& out);
// Reads ShipLogs' validated input (the model checked the types; InvalidArgument for an event
// without a timestamp or message).
StatusOr<LogsCall> DecodeLogsCall(const boost::json::object& in);
boost::json::object EncodeLogsAnswer(const LogsAnswer& a);
LogsAnswer DecodeLogsAnswer(const boost::json::object& o);

// DrainVerdict's one name pair ("WAIT", "NO_HOLDS", ...); nullopt for any other text.
std::string_view DrainVerdictName(DrainVerdict v);
std::optional<DrainVerdict> ParseDrainVerdict(std::string_view name);
boost::json::object EncodeDrainAnswer(const DrainAnswer& a);
// DataLoss when the verdict is missing or unknown (the answer is the control plane's).
StatusOr<DrainAnswer> DecodeDrainAnswer(const boost::json::object& o);

}  // namespace paddock::agent::protocol
