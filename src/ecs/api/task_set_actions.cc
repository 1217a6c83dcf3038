// The ECS adapter's task-set actions (docs/contracts/service.md, "Task sets"): CreateTaskSet,
// UpdateTaskSet, DeleteTaskSet, UpdateServicePrimaryTaskSet and DescribeTaskSets. Each passes its
// validated input to ecs/service's owner and wraps the TaskSet JSON it answers.
#include <boost/json.hpp>

#include "ecs/api/authorization.h"
#include "ecs/api/ecs_service.h"

namespace paddock::ecs::api {
namespace json = boost::json;

StatusOr<std::string> EcsService::CreateTaskSet(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s, owners_.services->CreateTaskSet(ctx.scope, ctx.principal.arn, in, ctx.now, PassRoleCheck(ctx)));
  return "{\"taskSet\":" + s + "}";
}

StatusOr<std::string> EcsService::UpdateTaskSet(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s, owners_.services->UpdateTaskSet(ctx.scope, ctx.principal.arn, in, ctx.now));
  return "{\"taskSet\":" + s + "}";
}

StatusOr<std::string> EcsService::DeleteTaskSet(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s, owners_.services->DeleteTaskSet(ctx.scope, ctx.principal.arn, in, ctx.now));
  return "{\"taskSet\":" + s + "}";
}

StatusOr<std::string> EcsService::UpdateServicePrimaryTaskSet(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s,
                   owners_.services->UpdateServicePrimaryTaskSet(ctx.scope, ctx.principal.arn, in, ctx.now));
  return "{\"taskSet\":" + s + "}";
}

StatusOr<std::string> EcsService::DescribeTaskSets(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(service::DescribedItems r, owners_.services->DescribeTaskSets(ctx.scope, ctx.principal.arn, in));
  std::string out = "{\"taskSets\":[";
  for (size_t i = 0; i < r.items.size(); ++i) {
    if (i) out += ',';
    out += r.items[i];
  }
  json::array failures;
  for (const auto& f : r.failures) {
    json::object o{{"arn", f.arn}, {"reason", f.reason}};
    if (!f.detail.empty()) o["detail"] = f.detail;
    failures.push_back(std::move(o));
  }
  return out + "],\"failures\":" + json::serialize(failures) + "}";
}

}  // namespace paddock::ecs::api
