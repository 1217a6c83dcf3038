#include "ecs/common/resource_arn.h"

#include <fmt/format.h>

#include "common/arn.h"
#include "ecs/common/errors.h"

namespace paddock::ecs {

namespace {
struct KindName {
  ResourceKind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {
    {ResourceKind::kCluster, "cluster"},
    {ResourceKind::kTaskDefinition, "task-definition"},
    {ResourceKind::kService, "service"},
    {ResourceKind::kTask, "task"},
    {ResourceKind::kContainerInstance, "container-instance"},
    {ResourceKind::kCapacityProvider, "capacity-provider"},
    {ResourceKind::kTaskSet, "task-set"},
};
}  // namespace

std::string_view ResourceKindName(ResourceKind kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return k.name;
  return "unknown";
}

StatusOr<EcsResource> ParseEcsResourceArn(std::string_view text) {
  auto invalid = [&] { return InvalidArgument("The ARN provided is invalid.", ecs::Error::kInvalidParameter); };
  auto arn = ParseArn(text);
  if (!arn.ok() || arn->service != "ecs" || !IsAccountId(arn->account) || !IsRegionName(arn->region)) return invalid();
  size_t slash = arn->resource.find('/');
  if (slash == std::string::npos || slash + 1 >= arn->resource.size()) return invalid();
  std::string_view type = std::string_view(arn->resource).substr(0, slash);
  for (const auto& k : kKinds) {
    if (k.name == type) {
      return EcsResource{k.kind, Scope{AccountId(arn->account), Region(arn->region)}, arn->resource.substr(slash + 1)};
    }
  }
  return invalid();
}

Status CheckArnScope(const EcsResource& resource, const Scope& caller, std::string_view arn,
                     std::string_view action, std::string_view caller_arn) {
  if (resource.scope.account != caller.account) {
    return PermissionDenied(
        fmt::format("User: {} is not authorized to perform: ecs:{} on resource: {} because no resource-based "
                    "policy allows the ecs:{} action",
                    caller_arn, action, arn, action));
  }
  if (resource.scope.region != caller.region) {
    return InvalidArgument(fmt::format("The ARN {} is in region {}, but the request was sent to region {}.", arn,
                                       resource.scope.region.str(), caller.region.str()),
                           ecs::Error::kInvalidParameter);
  }
  return OkStatus();
}

Status NotAuthorized(std::string_view caller_arn, std::string_view action, std::string_view resource) {
  return PermissionDenied(fmt::format("User: {} is not authorized to perform: ecs:{} on resource: {} because no "
                                      "identity-based policy allows the ecs:{} action",
                                      caller_arn, action, resource, action));
}

StatusOr<ClusterScopedRef> ParseClusterScopedRef(std::string_view text, ResourceKind kind,
                                                 bool (*is_id)(std::string_view), const Scope& caller,
                                                 std::string_view action, std::string_view caller_arn) {
  ClusterScopedRef ref;
  std::string id(text);
  if (text.substr(0, 4) == "arn:") {
    auto invalid = [] { return InvalidArgument("The ARN provided is invalid.", ecs::Error::kInvalidParameter); };
    StatusOr<EcsResource> r = ParseEcsResourceArn(text);
    if (!r.ok()) return r.status();
    if (r->kind != kind) return invalid();
    RETURN_IF_ERROR(CheckArnScope(*r, caller, text, action, caller_arn));
    const size_t slash = r->id.rfind('/');
    if (slash != std::string::npos) ref.cluster = r->id.substr(0, slash);
    id = slash == std::string::npos ? r->id : r->id.substr(slash + 1);
  }
  if (!is_id(id)) return InvalidArgument(fmt::format("Invalid identifier: {}", text), ecs::Error::kInvalidParameter);
  ref.id = std::move(id);
  return ref;
}

std::string ClusterArn(const Scope& scope, std::string_view name) {
  return fmt::format("arn:aws:ecs:{}:{}:cluster/{}", scope.region.str(), scope.account.str(), name);
}

std::string TaskDefinitionArn(const Scope& scope, std::string_view family, uint64_t revision) {
  return fmt::format("arn:aws:ecs:{}:{}:task-definition/{}:{}", scope.region.str(), scope.account.str(), family,
                     revision);
}

}  // namespace paddock::ecs
