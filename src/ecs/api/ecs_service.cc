#include "ecs/api/ecs_service.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"

namespace paddock::ecs::api {
namespace json = boost::json;

namespace {


std::optional<std::string_view> OptString(const json::object& in, std::string_view key) {
  auto it = in.find(key);
  if (it == in.end() || !it->value().is_string()) return std::nullopt;
  return std::string_view(it->value().get_string());
}

std::string String(const json::object& in, std::string_view key) {
  auto v = OptString(in, key);
  return v ? std::string(*v) : std::string();
}

std::vector<std::string> Strings(const json::object& in, std::string_view key) {
  std::vector<std::string> out;
  auto it = in.find(key);
  if (it == in.end() || !it->value().is_array()) return out;
  for (const auto& v : it->value().get_array())
    if (v.is_string()) out.emplace_back(v.get_string());
  return out;
}

// maxResults: 1..100, default 100, as ECS's list actions define it.
StatusOr<size_t> PageSize(const json::object& in) {
  auto it = in.find("maxResults");
  if (it == in.end() || it->value().is_null()) return size_t{100};
  int64_t n = it->value().to_number<int64_t>();
  if (n < 1 || n > 100) return ParamError("maxResults must be between 1 and 100.");
  return static_cast<size_t>(n);
}

Tags DecodeTags(const json::object& in, std::string_view key) {
  Tags tags;
  auto it = in.find(key);
  if (it == in.end() || !it->value().is_array()) return tags;
  for (const auto& t : it->value().get_array()) {
    const auto& o = t.as_object();
    tags.push_back(Tag{String(o, "key"), String(o, "value")});
  }
  return tags;
}

json::array EncodeTags(const Tags& tags) {
  json::array out;
  out.reserve(tags.size());
  for (const auto& t : tags) out.push_back(json::object{{"key", t.key}, {"value", t.value}});
  return out;
}

// A list-action token is bound to the action, the caller's scope and the filters.
std::string TokenContext(const aws::CallContext& ctx, std::string_view filters) {
  return fmt::format("{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(), filters);
}

// Joins serialized JSON values into an array without re-parsing them.
std::string JoinArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  out += ']';
  return out;
}

}  // namespace

EcsService::EcsService(const aws::ServiceModel& model, Owners owners, aws::TokenCodec tokens)
    : model_(model), owners_(owners), tokens_(std::move(tokens)) {
  handlers_ = {
      {"CreateCluster", &EcsService::CreateCluster},
      {"DescribeClusters", &EcsService::DescribeClusters},
      {"ListClusters", &EcsService::ListClusters},
      {"DeleteCluster", &EcsService::DeleteCluster},
      {"UpdateCluster", &EcsService::UpdateCluster},
      {"UpdateClusterSettings", &EcsService::UpdateClusterSettings},
      {"PutClusterCapacityProviders", &EcsService::PutClusterCapacityProviders},
      {"RegisterTaskDefinition", &EcsService::RegisterTaskDefinition},
      {"DescribeTaskDefinition", &EcsService::DescribeTaskDefinition},
      {"ListTaskDefinitions", &EcsService::ListTaskDefinitions},
      {"ListTaskDefinitionFamilies", &EcsService::ListTaskDefinitionFamilies},
      {"DeregisterTaskDefinition", &EcsService::DeregisterTaskDefinition},
      {"DeleteTaskDefinitions", &EcsService::DeleteTaskDefinitions},
      {"RunTask", &EcsService::RunTask},
      {"DescribeTasks", &EcsService::DescribeTasks},
      {"ListTasks", &EcsService::ListTasks},
      {"StopTask", &EcsService::StopTask},
      {"TagResource", &EcsService::TagResource},
      {"UntagResource", &EcsService::UntagResource},
      {"ListTagsForResource", &EcsService::ListTagsForResource},
  };
}

bool EcsService::Implements(std::string_view action) const { return handlers_.find(action) != handlers_.end(); }

std::vector<std::string> EcsService::ImplementedActions() const {
  std::vector<std::string> out;
  for (const auto& [name, handler] : handlers_) out.push_back(name);
  return out;
}

std::optional<aws::ThrottleGroup> EcsService::ThrottleGroupFor(std::string_view action) const {
  return EcsThrottleGroup(action);
}

StatusOr<std::string> EcsService::Call(const aws::CallContext& ctx, json::object& input) {
  auto it = handlers_.find(ctx.action);
  if (it == handlers_.end()) return InvalidArgument("", "UnknownOperationException");
  return (this->*(it->second))(ctx, input);
}

// ---- Clusters ----

StatusOr<std::string> EcsService::CreateCluster(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster, owners_.clusters->Create(ctx.scope, in));
  return "{\"cluster\":" + cluster + "}";
}

StatusOr<std::string> EcsService::DescribeClusters(const aws::CallContext& ctx, json::object& in) {
  std::vector<std::string> refs = Strings(in, "clusters");
  if (refs.size() > 100) return ParamError("The clusters list can contain at most 100 entries.");
  std::vector<std::string> names;
  if (refs.empty()) names.push_back("default");
  for (const auto& ref : refs) {
    ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(ref, ctx.scope, ctx.action, ctx.principal.arn));
    names.push_back(std::move(name));
  }
  cluster::Include include;
  for (const auto& f : Strings(in, "include")) {
    if (f == "ATTACHMENTS") include.attachments = true;
    if (f == "CONFIGURATIONS") include.configurations = true;
    if (f == "SETTINGS") include.settings = true;
    if (f == "STATISTICS") include.statistics = true;
    if (f == "TAGS") include.tags = true;
  }
  ASSIGN_OR_RETURN(cluster::DescribeResult r, owners_.clusters->Describe(ctx.scope, names, include));
  json::array failures;
  for (const auto& arn : r.missing) failures.push_back(json::object{{"arn", arn}, {"reason", "MISSING"}});
  return "{\"clusters\":" + JoinArray(r.clusters) + ",\"failures\":" + json::serialize(failures) + "}";
}

StatusOr<std::string> EcsService::ListClusters(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(size_t limit, PageSize(in));
  std::string after;
  const std::string context = TokenContext(ctx, "");
  if (auto token = OptString(in, "nextToken")) {
    ASSIGN_OR_RETURN(after, tokens_.Decode(context, *token));
  }
  ASSIGN_OR_RETURN(cluster::Page page, owners_.clusters->List(ctx.scope, limit, after));
  json::object out;
  json::array arns;
  for (auto& a : page.arns) arns.push_back(json::string(a));
  out["clusterArns"] = std::move(arns);
  if (!page.next.empty()) out["nextToken"] = tokens_.Encode(context, page.next);
  return json::serialize(out);
}

StatusOr<std::string> EcsService::DeleteCluster(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string c, owners_.clusters->Delete(ctx.scope, name));
  return "{\"cluster\":" + c + "}";
}

StatusOr<std::string> EcsService::UpdateCluster(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string c, owners_.clusters->Update(ctx.scope, name, in));
  return "{\"cluster\":" + c + "}";
}

StatusOr<std::string> EcsService::UpdateClusterSettings(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string c, owners_.clusters->UpdateSettings(ctx.scope, name, in.at("settings").as_array()));
  return "{\"cluster\":" + c + "}";
}

StatusOr<std::string> EcsService::PutClusterCapacityProviders(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string c, owners_.clusters->PutCapacityProviders(ctx.scope, name, in.at("capacityProviders").as_array(),
                                                                         in.at("defaultCapacityProviderStrategy").as_array()));
  return "{\"cluster\":" + c + "}";
}

// ---- Task definitions ----

StatusOr<std::string> EcsService::RegisterTaskDefinition(const aws::CallContext& ctx, json::object& in) {
  const bool had_tags = in.contains("tags");
  ASSIGN_OR_RETURN(taskdef::Registered r,
                   owners_.task_definitions->Register(ctx.scope, ctx.principal.arn, std::move(in), ctx.now));
  std::string out = "{\"taskDefinition\":" + r.task_definition;
  if (had_tags) out += ",\"tags\":" + json::serialize(EncodeTags(r.tags));
  out += "}";
  return out;
}

StatusOr<std::string> EcsService::DescribeTaskDefinition(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(taskdef::Ref ref,
                   taskdef::ParseRef(String(in, "taskDefinition"), ctx.scope, ctx.action, ctx.principal.arn));
  bool include_tags = false;
  for (const auto& f : Strings(in, "include"))
    if (f == "TAGS") include_tags = true;
  ASSIGN_OR_RETURN(taskdef::Described d, owners_.task_definitions->Describe(ctx.scope, ref, include_tags));
  std::string out;
  out.reserve(d.task_definition.size() + 64);
  out += "{\"taskDefinition\":";
  out += d.task_definition;
  if (d.tags) out += ",\"tags\":" + json::serialize(EncodeTags(*d.tags));
  out += "}";
  return out;
}

StatusOr<std::string> EcsService::ListTaskDefinitions(const aws::CallContext& ctx, json::object& in) {
  taskdef::ListQuery q;
  ASSIGN_OR_RETURN(q.limit, PageSize(in));
  if (auto f = OptString(in, "familyPrefix")) q.family = std::string(*f);
  if (auto s = OptString(in, "status")) q.status = std::string(*s);
  if (auto s = OptString(in, "sort")) q.descending = *s == "DESC";
  const std::string context =
      TokenContext(ctx, fmt::format("{}|{}|{}", q.family.value_or(""), q.status, q.descending ? "DESC" : "ASC"));
  if (auto token = OptString(in, "nextToken")) {
    ASSIGN_OR_RETURN(q.after, tokens_.Decode(context, *token));
  }
  ASSIGN_OR_RETURN(taskdef::Page page, owners_.task_definitions->List(ctx.scope, q));
  json::object out;
  json::array arns;
  for (auto& a : page.items) arns.push_back(json::string(a));
  out["taskDefinitionArns"] = std::move(arns);
  if (!page.next.empty()) out["nextToken"] = tokens_.Encode(context, page.next);
  return json::serialize(out);
}

StatusOr<std::string> EcsService::ListTaskDefinitionFamilies(const aws::CallContext& ctx, json::object& in) {
  taskdef::FamilyQuery q;
  ASSIGN_OR_RETURN(q.limit, PageSize(in));
  q.prefix = String(in, "familyPrefix");
  // AWS: without a status, both ACTIVE and INACTIVE families are listed.
  q.status = OptString(in, "status") ? String(in, "status") : "ALL";
  const std::string context = TokenContext(ctx, fmt::format("{}|{}", q.prefix, q.status));
  if (auto token = OptString(in, "nextToken")) {
    ASSIGN_OR_RETURN(q.after, tokens_.Decode(context, *token));
  }
  ASSIGN_OR_RETURN(taskdef::Page page, owners_.task_definitions->ListFamilies(ctx.scope, q));
  json::object out;
  json::array families;
  for (auto& f : page.items) families.push_back(json::string(f));
  out["families"] = std::move(families);
  if (!page.next.empty()) out["nextToken"] = tokens_.Encode(context, page.next);
  return json::serialize(out);
}

StatusOr<std::string> EcsService::DeregisterTaskDefinition(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(taskdef::Ref ref,
                   taskdef::ParseRef(String(in, "taskDefinition"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string td, owners_.task_definitions->Deregister(ctx.scope, ref, ctx.now));
  return "{\"taskDefinition\":" + td + "}";
}

StatusOr<std::string> EcsService::DeleteTaskDefinitions(const aws::CallContext& ctx, json::object& in) {
  std::vector<std::string> refs = Strings(in, "taskDefinitions");
  if (refs.empty()) return ParamError("size of TaskDefinition references list must be greater than 0");
  if (refs.size() > 10) return ParamError("Size of TaskDefinition references list cannot exceed 10");
  ASSIGN_OR_RETURN(taskdef::DeleteResult r,
                   owners_.task_definitions->Delete(ctx.scope, refs, ctx.principal.arn, ctx.now));
  // Revisions nothing references are removed now; the rest stay DELETE_IN_PROGRESS until free.
  auto reaped = owners_.task_definitions->ReapDeleting(ctx.scope);
  if (!reaped.ok()) reaped.status().IgnoreError();  // retried by the next delete or the reaper
  json::array failures;
  for (const auto& f : r.failures) {
    json::object o{{"arn", f.arn}, {"reason", f.reason}};
    if (!f.detail.empty()) o["detail"] = f.detail;
    failures.push_back(std::move(o));
  }
  return "{\"taskDefinitions\":" + JoinArray(r.task_definitions) + ",\"failures\":" + json::serialize(failures) + "}";
}

// ---- Tasks ----

namespace {
std::optional<json::object> OptObject(const json::object& in, std::string_view key) {
  auto it = in.find(key);
  if (it == in.end() || !it->value().is_object()) return std::nullopt;
  return it->value().get_object();
}

std::optional<std::string> OptOwned(const json::object& in, std::string_view key) {
  auto v = OptString(in, key);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

bool Bool(const json::object& in, std::string_view key) {
  auto it = in.find(key);
  return it != in.end() && it->value().is_bool() && it->value().get_bool();
}

json::array EncodeFailures(const std::vector<task::RunResult::Failure>& failures) {
  json::array out;
  for (const auto& f : failures) {
    json::object o{{"arn", f.arn}, {"reason", f.reason}};
    if (!f.detail.empty()) o["detail"] = f.detail;
    out.push_back(std::move(o));
  }
  return out;
}
}  // namespace

StatusOr<std::string> EcsService::RunTask(const aws::CallContext& ctx, json::object& in) {
  task::RunRequest r;
  r.cluster = OptOwned(in, "cluster");
  r.task_definition = String(in, "taskDefinition");
  if (auto it = in.find("count"); it != in.end() && it->value().is_number()) r.count = it->value().to_number<int64_t>();
  r.launch_type = OptOwned(in, "launchType");
  if (auto it = in.find("capacityProviderStrategy"); it != in.end() && it->value().is_array())
    for (const auto& item : it->value().get_array())
      if (item.is_object()) r.capacity_providers.push_back(String(item.get_object(), "capacityProvider"));
  r.network_configuration = OptObject(in, "networkConfiguration");
  r.overrides = OptObject(in, "overrides");
  r.group = OptOwned(in, "group");
  r.started_by = OptOwned(in, "startedBy");
  r.platform_version = OptOwned(in, "platformVersion");
  r.tags = DecodeTags(in, "tags");
  r.propagate_tags = OptOwned(in, "propagateTags");
  r.enable_ecs_managed_tags = Bool(in, "enableECSManagedTags");
  r.enable_execute_command = Bool(in, "enableExecuteCommand");
  r.client_token = OptOwned(in, "clientToken");
  ASSIGN_OR_RETURN(task::RunResult res, owners_.tasks->Run(ctx.scope, ctx.principal.arn, r, ctx.now));
  return "{\"tasks\":" + JoinArray(res.tasks) + ",\"failures\":" + json::serialize(EncodeFailures(res.failures)) + "}";
}

StatusOr<std::string> EcsService::DescribeTasks(const aws::CallContext& ctx, json::object& in) {
  std::vector<std::string> refs = Strings(in, "tasks");
  if (refs.empty()) return ParamError("Tasks cannot be empty.");
  if (refs.size() > 100) return ParamError("The tasks list can contain at most 100 entries.");
  bool include_tags = false;
  for (const auto& f : Strings(in, "include"))
    if (f == "TAGS") include_tags = true;
  auto cluster = OptString(in, "cluster");
  ASSIGN_OR_RETURN(task::DescribeResult r,
                   owners_.tasks->Describe(ctx.scope, cluster, refs, include_tags, ctx.principal.arn));
  return "{\"tasks\":" + JoinArray(r.tasks) + ",\"failures\":" + json::serialize(EncodeFailures(r.failures)) + "}";
}

StatusOr<std::string> EcsService::ListTasks(const aws::CallContext& ctx, json::object& in) {
  task::ListQuery q;
  ASSIGN_OR_RETURN(q.limit, PageSize(in));
  q.cluster = OptOwned(in, "cluster");
  q.family = OptOwned(in, "family");
  q.started_by = OptOwned(in, "startedBy");
  q.service_name = OptOwned(in, "serviceName");
  if (auto s = OptString(in, "desiredStatus")) q.desired_status = std::string(*s);
  q.launch_type = OptOwned(in, "launchType");
  const std::string context =
      TokenContext(ctx, fmt::format("{}|{}|{}|{}|{}|{}", q.cluster.value_or(""), q.family.value_or(""),
                                    q.started_by.value_or(""), q.service_name.value_or(""), q.desired_status,
                                    q.launch_type.value_or("")));
  if (auto token = OptString(in, "nextToken")) {
    ASSIGN_OR_RETURN(q.after, tokens_.Decode(context, *token));
  }
  ASSIGN_OR_RETURN(task::Page page, owners_.tasks->List(ctx.scope, q, ctx.principal.arn));
  json::object out;
  json::array arns;
  for (auto& a : page.arns) arns.push_back(json::string(a));
  out["taskArns"] = std::move(arns);
  if (!page.next.empty()) out["nextToken"] = tokens_.Encode(context, page.next);
  return json::serialize(out);
}

StatusOr<std::string> EcsService::StopTask(const aws::CallContext& ctx, json::object& in) {
  auto cluster = OptString(in, "cluster");
  ASSIGN_OR_RETURN(std::string t, owners_.tasks->Stop(ctx.scope, cluster, String(in, "task"), OptOwned(in, "reason"),
                                                      ctx.principal.arn, ctx.now));
  return "{\"task\":" + t + "}";
}

// ---- Tags: routed by the ARN's resource type to that resource's owner ----

namespace {
struct TagTarget {
  EcsResource resource;
  std::string arn;
};

StatusOr<TagTarget> ResolveTagTarget(const aws::CallContext& ctx, const json::object& in) {
  std::string arn = String(in, "resourceArn");
  ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(arn));
  RETURN_IF_ERROR(CheckArnScope(r, ctx.scope, arn, ctx.action, ctx.principal.arn));
  return TagTarget{std::move(r), std::move(arn)};
}

StatusOr<taskdef::Ref> TaskDefinitionTagRef(const aws::CallContext& ctx, const TagTarget& t) {
  return taskdef::ParseRef(t.arn, ctx.scope, ctx.action, ctx.principal.arn);
}

Status UnsupportedTagTarget(const TagTarget& t) {
  return NotFound(fmt::format("The specified resource is not found: {}", t.arn), "ResourceNotFoundException");
}
}  // namespace

StatusOr<std::string> EcsService::TagResource(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(TagTarget t, ResolveTagTarget(ctx, in));
  Tags tags = DecodeTags(in, "tags");
  switch (t.resource.kind) {
    case ResourceKind::kCluster: {
      ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(t.arn, ctx.scope, ctx.action, ctx.principal.arn));
      RETURN_IF_ERROR(owners_.clusters->TagResource(ctx.scope, name, tags));
      return std::string("{}");
    }
    case ResourceKind::kTaskDefinition: {
      ASSIGN_OR_RETURN(taskdef::Ref ref, TaskDefinitionTagRef(ctx, t));
      RETURN_IF_ERROR(owners_.task_definitions->TagResource(ctx.scope, ref, tags));
      return std::string("{}");
    }
    default:
      return UnsupportedTagTarget(t);
  }
}

StatusOr<std::string> EcsService::UntagResource(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(TagTarget t, ResolveTagTarget(ctx, in));
  std::vector<std::string> keys = Strings(in, "tagKeys");
  RETURN_IF_ERROR(ValidateTagKeys(keys));
  switch (t.resource.kind) {
    case ResourceKind::kCluster: {
      ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(t.arn, ctx.scope, ctx.action, ctx.principal.arn));
      RETURN_IF_ERROR(owners_.clusters->UntagResource(ctx.scope, name, keys));
      return std::string("{}");
    }
    case ResourceKind::kTaskDefinition: {
      ASSIGN_OR_RETURN(taskdef::Ref ref, TaskDefinitionTagRef(ctx, t));
      RETURN_IF_ERROR(owners_.task_definitions->UntagResource(ctx.scope, ref, keys));
      return std::string("{}");
    }
    default:
      return UnsupportedTagTarget(t);
  }
}

StatusOr<std::string> EcsService::ListTagsForResource(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(TagTarget t, ResolveTagTarget(ctx, in));
  Tags tags;
  switch (t.resource.kind) {
    case ResourceKind::kCluster: {
      ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(t.arn, ctx.scope, ctx.action, ctx.principal.arn));
      ASSIGN_OR_RETURN(tags, owners_.clusters->ListTags(ctx.scope, name));
      break;
    }
    case ResourceKind::kTaskDefinition: {
      ASSIGN_OR_RETURN(taskdef::Ref ref, TaskDefinitionTagRef(ctx, t));
      ASSIGN_OR_RETURN(tags, owners_.task_definitions->ListTags(ctx.scope, ref));
      break;
    }
    default:
      return UnsupportedTagTarget(t);
  }
  return "{\"tags\":" + json::serialize(EncodeTags(tags)) + "}";
}

}  // namespace paddock::ecs::api
