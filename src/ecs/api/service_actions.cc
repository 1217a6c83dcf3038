// The ECS adapter's service actions (docs/contracts/service.md): CreateService, UpdateService,
// DeleteService, DescribeServices, ListServices, ListServicesByNamespace and the service-deployment
// actions. Each decodes its validated input, calls ecs/service's owner and encodes the answer.
#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/json_fields.h"
#include "ecs/api/authorization.h"
#include "ecs/api/ecs_service.h"
#include "ecs/common/records.h"

namespace paddock::ecs::api {
namespace json = boost::json;

namespace {

std::string TokenContext(const aws::CallContext& ctx, std::string_view filters) {
  return fmt::format("{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(), filters);
}

// maxResults: 1..100, default `def`.
StatusOr<size_t> PageSize(const json::object& in, size_t def) {
  auto n = json_fields::Int(in, "maxResults");
  if (!n) return def;
  if (*n < 1 || *n > 100) return ParamError("maxResults must be between 1 and 100.");
  return static_cast<size_t>(*n);
}

std::string JoinArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  return out + ']';
}

std::string Failures(const std::vector<service::DescribeResult::Failure>& failures) {
  json::array out;
  for (const auto& f : failures) {
    json::object o{{"arn", f.arn}, {"reason", f.reason}};
    if (!f.detail.empty()) o["detail"] = f.detail;
    out.push_back(std::move(o));
  }
  return json::serialize(out);
}

json::array StringArray(const std::vector<std::string>& items) {
  json::array out;
  for (const auto& i : items) out.push_back(json::string(i));
  return out;
}

}  // namespace

StatusOr<std::string> EcsService::CreateService(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s, owners_.services->Create(ctx.scope, ctx.principal.arn, in, ctx.now, PassRoleCheck(ctx)));
  return "{\"service\":" + s + "}";
}

StatusOr<std::string> EcsService::UpdateService(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s, owners_.services->Update(ctx.scope, ctx.principal.arn, in, ctx.now, PassRoleCheck(ctx)));
  return "{\"service\":" + s + "}";
}

StatusOr<std::string> EcsService::DeleteService(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string s, owners_.services->Delete(ctx.scope, ctx.principal.arn, in, ctx.now));
  return "{\"service\":" + s + "}";
}

StatusOr<std::string> EcsService::DescribeServices(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(service::DescribeResult r, owners_.services->Describe(ctx.scope, ctx.principal.arn, in));
  return "{\"services\":" + JoinArray(r.services) + ",\"failures\":" + Failures(r.failures) + "}";
}

StatusOr<std::string> EcsService::ListServices(const aws::CallContext& ctx, json::object& in) {
  service::ListQuery q;
  ASSIGN_OR_RETURN(q.limit, PageSize(in, 10));
  q.cluster = json_fields::OptStr(in, "cluster");
  q.launch_type = json_fields::OptStr(in, "launchType");
  q.scheduling_strategy = json_fields::OptStr(in, "schedulingStrategy");
  const std::string context = TokenContext(ctx, fmt::format("{}|{}|{}", q.cluster.value_or(""),
                                                            q.launch_type.value_or(""), q.scheduling_strategy.value_or("")));
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(service::Page page, owners_.services->List(ctx.scope, ctx.principal.arn, q));
  return EncodePage(context, "serviceArns", StringArray(page.arns), page.next);
}

StatusOr<std::string> EcsService::ListServicesByNamespace(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(size_t limit, PageSize(in, 10));
  const std::string ns = json_fields::Str(in, "namespace");
  std::optional<std::vector<std::string>> registries;
  if (namespace_lookup_) {
    ASSIGN_OR_RETURN(registries, namespace_lookup_(ctx.scope, ns));
  }
  if (!registries) {
    ASSIGN_OR_RETURN(service::Page none, owners_.services->ListByNamespace(ctx.scope, ctx.principal.arn, in));
    (void)none;  // the owner answers NamespaceNotFoundException
  }
  const std::string context = TokenContext(ctx, ns);
  ASSIGN_OR_RETURN(std::string after, PageStart(context, in));
  ASSIGN_OR_RETURN(service::Page page,
                   owners_.services->ListByRegistries(ctx.scope, registries.value_or(std::vector<std::string>{}),
                                                      limit, after));
  return EncodePage(context, "serviceArns", StringArray(page.arns), page.next);
}

StatusOr<std::string> EcsService::ListServiceDeployments(const aws::CallContext& ctx, json::object& in) {
  service::DeploymentQuery q;
  ASSIGN_OR_RETURN(q.limit, PageSize(in, 20));
  q.cluster = json_fields::OptStr(in, "cluster");
  q.service = json_fields::Str(in, "service");
  q.statuses = json_fields::Strings(in, "status");
  const json::object& created = json_fields::Obj(in, "createdAt");
  q.created_after = json_fields::EpochSeconds(created, "after");
  q.created_before = json_fields::EpochSeconds(created, "before");
  std::string statuses;
  for (const auto& s : q.statuses) statuses += s + ",";
  const std::string context = TokenContext(
      ctx, fmt::format("{}|{}|{}|{}|{}", q.cluster.value_or(""), q.service, statuses,
                       q.created_after ? EpochMillis(*q.created_after) : -1,
                       q.created_before ? EpochMillis(*q.created_before) : -1));
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(service::ItemPage page, owners_.services->ListServiceDeployments(ctx.scope, ctx.principal.arn, q));
  json::array items;
  for (const auto& i : page.items) items.push_back(json::parse(i));
  return EncodePage(context, "serviceDeployments", std::move(items), page.next);
}

StatusOr<std::string> EcsService::DescribeServiceDeployments(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(service::DescribedItems r,
                   owners_.services->DescribeServiceDeployments(ctx.scope, ctx.principal.arn,
                                                                json_fields::Strings(in, "serviceDeploymentArns")));
  return "{\"serviceDeployments\":" + JoinArray(r.items) + ",\"failures\":" + Failures(r.failures) + "}";
}

StatusOr<std::string> EcsService::DescribeServiceRevisions(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(service::DescribedItems r,
                   owners_.services->DescribeServiceRevisions(ctx.scope, ctx.principal.arn,
                                                              json_fields::Strings(in, "serviceRevisionArns")));
  return "{\"serviceRevisions\":" + JoinArray(r.items) + ",\"failures\":" + Failures(r.failures) + "}";
}

StatusOr<std::string> EcsService::StopServiceDeployment(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string arn, owners_.services->StopServiceDeployment(ctx.scope, ctx.principal.arn, in, ctx.now));
  return json::serialize(json::object{{"serviceDeploymentArn", arn}});
}

StatusOr<std::string> EcsService::ContinueServiceDeployment(const aws::CallContext& ctx, json::object& in) {
  auto str = [&](std::string_view key) {
    const json::value* v = in.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  const std::string action = in.contains("action") ? str("action") : "CONTINUE";
  ASSIGN_OR_RETURN(std::string arn, owners_.services->ContinueServiceDeployment(
                                        ctx.scope, ctx.principal.arn, str("serviceDeploymentArn"), str("hookId"), action));
  return json::serialize(json::object{{"serviceDeploymentArn", arn}});
}

}  // namespace paddock::ecs::api
