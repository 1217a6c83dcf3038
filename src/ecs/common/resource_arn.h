// ECS resource ARNs: building them, and telling which resource an ARN names.
//
//   ClusterArn(scope, "default")          -> arn:aws:ecs:us-east-1:123456789012:cluster/default
//   TaskDefinitionArn(scope, "web", 3)    -> arn:aws:ecs:us-east-1:123456789012:task-definition/web:3
//   ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(arn));  // r.kind == kCluster, r.id == "default"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::ecs {

enum class ResourceKind {
  kCluster,
  kTaskDefinition,
  kService,
  kTask,
  kContainerInstance,
  kCapacityProvider,
  kTaskSet,
};

std::string_view ResourceKindName(ResourceKind kind);  // "cluster", "task-definition", ...

struct EcsResource {
  ResourceKind kind;
  Scope scope;      // the account and region the ARN names
  std::string id;   // the part after "<kind>/" ("default", "web:3", "cluster/service")
};

// Parses an ECS ARN. Fails with InvalidParameterException for anything that is not an ECS
// resource ARN (AWS: "The ARN provided is invalid.").
StatusOr<EcsResource> ParseEcsResourceArn(std::string_view arn);

// Checks that an ARN the caller passed names the caller's own account and region. Another
// account's ARN is AccessDeniedException; another region's is InvalidParameterException; in
// neither case is anything read or written.
Status CheckArnScope(const EcsResource& resource, const Scope& caller, std::string_view arn,
                     std::string_view action, std::string_view caller_arn);

// AccessDeniedException in IAM's words for a call no identity-based policy allows: a container
// instance's agent acting on what is not its own, or an account's key making an agent's call
// (docs/agent-protocol.md, "Identity").
Status NotAuthorized(std::string_view caller_arn, std::string_view action, std::string_view resource);

// A reference to a resource that lives in a cluster (a task, a container instance), as a caller
// writes it: the bare id, or an ARN of the caller's scope — in the long form
// ".../<kind>/<cluster>/<id>", whose cluster is returned, or the old ".../<kind>/<id>". An ARN of
// another kind is "The ARN provided is invalid."; an id `is_id` refuses is "Invalid identifier: X"
// (both InvalidParameterException); the scope is checked as CheckArnScope does.
struct ClusterScopedRef {
  std::optional<std::string> cluster;
  std::string id;
};
StatusOr<ClusterScopedRef> ParseClusterScopedRef(std::string_view text, ResourceKind kind,
                                                 bool (*is_id)(std::string_view), const Scope& caller,
                                                 std::string_view action, std::string_view caller_arn);

std::string ClusterArn(const Scope& scope, std::string_view name);
std::string TaskDefinitionArn(const Scope& scope, std::string_view family, uint64_t revision);

}  // namespace paddock::ecs
