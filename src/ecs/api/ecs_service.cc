#include "ecs/api/ecs_service.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "agent/protocol/state_json.h"
#include "common/json_fields.h"
#include "ecs/api/authorization.h"
#include "ecs/api/errors.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/common/errors.h"

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

// ECS's Failure shape ({arn?, reason, detail?}) for any owner's failure records. A failure that
// names no resource (Fargate's capacity and vCPU-quota refusals) has no arn, as on AWS.
template <typename Failure>
json::array EncodeFailures(const std::vector<Failure>& failures) {
  json::array out;
  out.reserve(failures.size());
  for (const auto& f : failures) {
    json::object o;
    if (!f.arn.empty()) o["arn"] = f.arn;
    o["reason"] = f.reason;
    if (!f.detail.empty()) o["detail"] = f.detail;
    out.push_back(std::move(o));
  }
  return out;
}

// A list-action token is bound to the action, the caller's scope and the filters.
std::string TokenContext(const aws::CallContext& ctx, std::string_view filters) {
  return fmt::format("{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(), filters);
}

json::array StringArray(const std::vector<std::string>& items) {
  json::array out;
  out.reserve(items.size());
  for (const auto& i : items) out.push_back(json::string(i));
  return out;
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
      {"StartTask", &EcsService::StartTask},
      {"DescribeTasks", &EcsService::DescribeTasks},
      {"ListTasks", &EcsService::ListTasks},
      {"StopTask", &EcsService::StopTask},
      {"RegisterContainerInstance", &EcsService::RegisterContainerInstance},
      {"DescribeContainerInstances", &EcsService::DescribeContainerInstances},
      {"ListContainerInstances", &EcsService::ListContainerInstances},
      {"DeregisterContainerInstance", &EcsService::DeregisterContainerInstance},
      {"UpdateContainerInstancesState", &EcsService::UpdateContainerInstancesState},
      {"UpdateContainerAgent", &EcsService::UpdateContainerAgent},
      {"PutAttributes", &EcsService::PutAttributes},
      {"DeleteAttributes", &EcsService::DeleteAttributes},
      {"ListAttributes", &EcsService::ListAttributes},
      {"CreateService", &EcsService::CreateService},
      {"UpdateService", &EcsService::UpdateService},
      {"DeleteService", &EcsService::DeleteService},
      {"DescribeServices", &EcsService::DescribeServices},
      {"ListServices", &EcsService::ListServices},
      {"ListServicesByNamespace", &EcsService::ListServicesByNamespace},
      {"ListServiceDeployments", &EcsService::ListServiceDeployments},
      {"DescribeServiceDeployments", &EcsService::DescribeServiceDeployments},
      {"DescribeServiceRevisions", &EcsService::DescribeServiceRevisions},
      {"StopServiceDeployment", &EcsService::StopServiceDeployment},
      {"CreateTaskSet", &EcsService::CreateTaskSet},
      {"UpdateTaskSet", &EcsService::UpdateTaskSet},
      {"DeleteTaskSet", &EcsService::DeleteTaskSet},
      {"UpdateServicePrimaryTaskSet", &EcsService::UpdateServicePrimaryTaskSet},
      {"DescribeTaskSets", &EcsService::DescribeTaskSets},
      {"TagResource", &EcsService::TagResource},
      {"UntagResource", &EcsService::UntagResource},
      {"ListTagsForResource", &EcsService::ListTagsForResource},
      {"SubmitTaskStateChange", &EcsService::SubmitTaskStateChange},
      {"SubmitContainerStateChange", &EcsService::SubmitContainerStateChange},
      {"SubmitAttachmentStateChanges", &EcsService::SubmitAttachmentStateChanges},
      {"DiscoverPollEndpoint", &EcsService::DiscoverPollEndpoint},
      {"PutAccountSetting", &EcsService::PutAccountSetting},
      {"PutAccountSettingDefault", &EcsService::PutAccountSettingDefault},
      {"DeleteAccountSetting", &EcsService::DeleteAccountSetting},
      {"ListAccountSettings", &EcsService::ListAccountSettings},
      {"CreateCapacityProvider", &EcsService::CreateCapacityProvider},
      {"UpdateCapacityProvider", &EcsService::UpdateCapacityProvider},
      {"DeleteCapacityProvider", &EcsService::DeleteCapacityProvider},
      {"DescribeCapacityProviders", &EcsService::DescribeCapacityProviders},
      {"UpdateTaskProtection", &EcsService::UpdateTaskProtection},
      {"GetTaskProtection", &EcsService::GetTaskProtection},
      {"ContinueServiceDeployment", &EcsService::ContinueServiceDeployment},
  };
}

bool EcsService::Implements(std::string_view action) const { return handlers_.find(action) != handlers_.end(); }

std::optional<aws::AwsError> EcsService::ErrorFor(const Status& status) const { return EcsErrorFor(status); }

bool EcsService::AgentMay(std::string_view action) const {
  return action == "RegisterContainerInstance" || action == "SubmitTaskStateChange" ||
         action == "SubmitContainerStateChange" || action == "SubmitAttachmentStateChanges" ||
         action == "DiscoverPollEndpoint" || action == "DescribeTasks";
}

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
  if (it == handlers_.end()) return InvalidArgument("", aws::Error::kUnknownOperation);
  return (this->*(it->second))(ctx, input);
}

// ---- Clusters ----

StatusOr<std::string> EcsService::CreateCluster(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster, owners_.clusters->Create(ctx.scope, in, ctx.principal.arn));
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

StatusOr<std::string> EcsService::PageStart(const std::string& context, const json::object& in) {
  if (auto token = OptString(in, "nextToken")) return tokens_.Decode(context, *token);
  return std::string();
}

std::string EcsService::EncodePage(const std::string& context, std::string_view member, json::value items,
                                   const std::string& next) {
  json::object out;
  out[member] = std::move(items);
  if (!next.empty()) out["nextToken"] = tokens_.Encode(context, next);
  return json::serialize(out);
}

StatusOr<std::string> EcsService::ListClusters(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(size_t limit, PageSize(in));
  const std::string context = TokenContext(ctx, "");
  ASSIGN_OR_RETURN(std::string after, PageStart(context, in));
  ASSIGN_OR_RETURN(cluster::Page page, owners_.clusters->List(ctx.scope, limit, after));
  return EncodePage(context, "clusterArns", StringArray(page.arns), page.next);
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
  if (had_tags) out += ",\"tags\":" + json::serialize(TagsJson(r.tags));
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
  if (d.tags) out += ",\"tags\":" + json::serialize(TagsJson(*d.tags));
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
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(taskdef::Page page, owners_.task_definitions->List(ctx.scope, q));
  return EncodePage(context, "taskDefinitionArns", StringArray(page.items), page.next);
}

StatusOr<std::string> EcsService::ListTaskDefinitionFamilies(const aws::CallContext& ctx, json::object& in) {
  taskdef::FamilyQuery q;
  ASSIGN_OR_RETURN(q.limit, PageSize(in));
  q.prefix = String(in, "familyPrefix");
  // AWS: without a status, both ACTIVE and INACTIVE families are listed.
  q.status = OptString(in, "status") ? String(in, "status") : "ALL";
  const std::string context = TokenContext(ctx, fmt::format("{}|{}", q.prefix, q.status));
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(taskdef::Page page, owners_.task_definitions->ListFamilies(ctx.scope, q));
  return EncodePage(context, "families", StringArray(page.items), page.next);
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
  return "{\"taskDefinitions\":" + JoinArray(r.task_definitions) + ",\"failures\":" +
         json::serialize(EncodeFailures(r.failures)) + "}";
}

// ---- Tasks ----

namespace {
std::optional<json::object> OptObject(const json::object& in, std::string_view key) {
  auto it = in.find(key);
  if (it == in.end() || !it->value().is_object()) return std::nullopt;
  return it->value().get_object();
}

std::optional<json::array> OptArray(const json::object& in, std::string_view key) {
  auto it = in.find(key);
  if (it == in.end() || !it->value().is_array()) return std::nullopt;
  return it->value().get_array();
}

std::optional<std::string> OptOwned(const json::object& in, std::string_view key) {
  auto v = OptString(in, key);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

bool Bool(const json::object& in, std::string_view key) {
  auto it = in.find(key);
  return it != in.end() && it->value().is_bool() && it->value().get_bool();
}

// The members RunTask and StartTask share.
task::RunRequest DecodeLaunch(const json::object& in) {
  task::RunRequest r;
  r.cluster = OptOwned(in, "cluster");
  r.task_definition = String(in, "taskDefinition");
  r.network_configuration = OptObject(in, "networkConfiguration");
  r.overrides = OptObject(in, "overrides");
  r.group = OptOwned(in, "group");
  r.started_by = OptOwned(in, "startedBy");
  r.tags = TagsFrom(in);
  r.propagate_tags = OptOwned(in, "propagateTags");
  r.enable_ecs_managed_tags = Bool(in, "enableECSManagedTags");
  r.enable_execute_command = Bool(in, "enableExecuteCommand");
  return r;
}

std::string EncodeRunResult(const task::RunResult& res) {
  return "{\"tasks\":" + JoinArray(res.tasks) + ",\"failures\":" + json::serialize(EncodeFailures(res.failures)) + "}";
}
}  // namespace

StatusOr<std::string> EcsService::RunTask(const aws::CallContext& ctx, json::object& in) {
  task::RunRequest r = DecodeLaunch(in);
  if (auto it = in.find("count"); it != in.end() && it->value().is_number()) r.count = it->value().to_number<int64_t>();
  r.launch_type = OptOwned(in, "launchType");
  if (auto it = in.find("capacityProviderStrategy"); it != in.end() && it->value().is_array())
    for (const auto& item : it->value().get_array())
      if (item.is_object()) r.capacity_providers.push_back(String(item.get_object(), "capacityProvider"));
  r.platform_version = OptOwned(in, "platformVersion");
  r.client_token = OptOwned(in, "clientToken");
  r.placement_constraints = OptArray(in, "placementConstraints");
  r.placement_strategy = OptArray(in, "placementStrategy");
  r.launch_check = PassRoleCheck(ctx);
  ASSIGN_OR_RETURN(task::RunResult res, owners_.tasks->Run(ctx.scope, ctx.principal.arn, r, ctx.now));
  return EncodeRunResult(res);
}

StatusOr<std::string> EcsService::StartTask(const aws::CallContext& ctx, json::object& in) {
  task::StartRequest r;
  r.run = DecodeLaunch(in);
  r.container_instances = Strings(in, "containerInstances");
  r.run.launch_check = PassRoleCheck(ctx);
  ASSIGN_OR_RETURN(task::RunResult res, owners_.tasks->Start(ctx.scope, ctx.principal.arn, r, ctx.now));
  return EncodeRunResult(res);
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
  if (!ctx.principal.agent_of.empty()) {
    // A container instance's agent sees only the tasks assigned to it; the others are MISSING to it.
    std::vector<std::string> own;
    for (auto& t : r.tasks) {
      json::value v = json::parse(t);
      if (String(v.as_object(), "containerInstanceArn") == ctx.principal.agent_of) {
        own.push_back(std::move(t));
      } else {
        r.failures.push_back({String(v.as_object(), "taskArn"), "MISSING", {}});
      }
    }
    r.tasks = std::move(own);
  }
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
  q.container_instance = OptOwned(in, "containerInstance");
  const std::string context =
      TokenContext(ctx, fmt::format("{}|{}|{}|{}|{}|{}|{}", q.cluster.value_or(""), q.family.value_or(""),
                                    q.started_by.value_or(""), q.service_name.value_or(""), q.desired_status,
                                    q.launch_type.value_or(""), q.container_instance.value_or("")));
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(task::Page page, owners_.tasks->List(ctx.scope, q, ctx.principal.arn));
  return EncodePage(context, "taskArns", StringArray(page.arns), page.next);
}

StatusOr<std::string> EcsService::StopTask(const aws::CallContext& ctx, json::object& in) {
  auto cluster = OptString(in, "cluster");
  ASSIGN_OR_RETURN(std::string t, owners_.tasks->Stop(ctx.scope, cluster, String(in, "task"), OptOwned(in, "reason"),
                                                      ctx.principal.arn, ctx.now));
  return "{\"task\":" + t + "}";
}

// ---- Container instances ----

namespace {
StatusOr<std::vector<instance::InstanceRef>> InstanceRefs(const aws::CallContext& ctx, const json::object& in,
                                                          size_t max) {
  std::vector<std::string> texts = Strings(in, "containerInstances");
  if (texts.empty()) return ParamError("Container instances cannot be empty.");
  if (texts.size() > max) return ParamError(fmt::format("The containerInstances list can contain at most {} entries.", max));
  std::vector<instance::InstanceRef> refs;
  for (const auto& t : texts) {
    ASSIGN_OR_RETURN(instance::InstanceRef r, instance::ParseInstanceRef(t, ctx.scope, ctx.action, ctx.principal.arn));
    refs.push_back(std::move(r));
  }
  return refs;
}

json::array EncodeAttributes(const std::vector<instance::ListedAttribute>& attributes) {
  json::array out;
  for (const auto& a : attributes) {
    json::object o{{"name", a.attribute.name}};
    if (a.attribute.value) o["value"] = *a.attribute.value;
    o["targetType"] = "container-instance";
    o["targetId"] = a.target_arn;
    out.push_back(std::move(o));
  }
  return out;
}

// PutAttributes / DeleteAttributes input: 1-10 attributes, each naming its container instance.
StatusOr<std::vector<instance::TargetedAttribute>> DecodeTargetedAttributes(const aws::CallContext& ctx,
                                                                            const json::object& in) {
  std::vector<instance::TargetedAttribute> out;
  auto it = in.find("attributes");
  if (it == in.end() || !it->value().is_array() || it->value().get_array().empty())
    return ParamError("Attributes cannot be empty.");
  if (it->value().get_array().size() > 10) return ParamError("You can specify up to 10 attributes in a single call.");
  for (const auto& v : it->value().get_array()) {
    const auto& o = v.as_object();
    instance::TargetedAttribute a;
    a.attribute.name = String(o, "name");
    if (auto value = OptString(o, "value")) a.attribute.value = std::string(*value);
    std::string target = String(o, "targetId");
    if (target.empty())
      return ParamError(fmt::format("Attribute '{}' needs a targetId: the ID or full ARN of a container instance.",
                                    a.attribute.name));
    if (target.substr(0, 4) != "arn:" && !OptString(o, "targetType"))
      return ParamError("targetType is required when targetId is not a full ARN.");
    ASSIGN_OR_RETURN(a.target, instance::ParseInstanceRef(target, ctx.scope, ctx.action, ctx.principal.arn));
    out.push_back(std::move(a));
  }
  return out;
}
}  // namespace

StatusOr<std::string> EcsService::RegisterContainerInstance(const aws::CallContext& ctx, json::object& in) {
  instance::RegisterRequest r;
  ASSIGN_OR_RETURN(r.cluster, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  r.identity_document = OptOwned(in, "instanceIdentityDocument");
  if (auto it = in.find("totalResources"); it != in.end() && it->value().is_array()) r.total_resources = it->value().get_array();
  r.version_info = OptObject(in, "versionInfo");
  if (auto arn = OptString(in, "containerInstanceArn")) {
    ASSIGN_OR_RETURN(instance::InstanceRef ref, instance::ParseInstanceRef(*arn, ctx.scope, ctx.action, ctx.principal.arn));
    r.container_instance = std::move(ref);
  }
  if (auto it = in.find("attributes"); it != in.end() && it->value().is_array())
    for (const auto& a : it->value().get_array()) {
      const auto& o = a.as_object();
      instance::Attribute attr{String(o, "name"), std::nullopt};
      if (auto value = OptString(o, "value")) attr.value = std::string(*value);
      r.attributes.push_back(std::move(attr));
    }
  r.tags = TagsFrom(in);
  r.caller_agent = ctx.principal.agent_of;
  ASSIGN_OR_RETURN(std::string ci, owners_.container_instances->Register(ctx.scope, r, ctx.now));
  return "{\"containerInstance\":" + ci + "}";
}

StatusOr<std::string> EcsService::DescribeContainerInstances(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(auto refs, InstanceRefs(ctx, in, 100));
  instance::Include include;
  for (const auto& f : Strings(in, "include")) {
    if (f == "TAGS") include.tags = true;
    if (f == "CONTAINER_INSTANCE_HEALTH") include.health = true;
  }
  ASSIGN_OR_RETURN(instance::DescribeResult r,
                   owners_.container_instances->Describe(ctx.scope, name, refs, include, ctx.now));
  return "{\"containerInstances\":" + JoinArray(r.instances) +
         ",\"failures\":" + json::serialize(EncodeFailures(r.failures)) + "}";
}

StatusOr<std::string> EcsService::ListContainerInstances(const aws::CallContext& ctx, json::object& in) {
  instance::ListQuery q;
  ASSIGN_OR_RETURN(q.cluster, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(q.limit, PageSize(in));
  q.status = OptOwned(in, "status");
  q.filter = OptOwned(in, "filter");
  const std::string context =
      TokenContext(ctx, fmt::format("{}|{}|{}", q.cluster, q.status.value_or(""), q.filter.value_or("")));
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(instance::Page page, owners_.container_instances->List(ctx.scope, q, ctx.now));
  return EncodePage(context, "containerInstanceArns", StringArray(page.items), page.next);
}

StatusOr<std::string> EcsService::DeregisterContainerInstance(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(instance::InstanceRef ref,
                   instance::ParseInstanceRef(String(in, "containerInstance"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string ci,
                   owners_.container_instances->Deregister(ctx.scope, name, ref, Bool(in, "force"), ctx.now));
  return "{\"containerInstance\":" + ci + "}";
}

StatusOr<std::string> EcsService::UpdateContainerInstancesState(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(auto refs, InstanceRefs(ctx, in, 10));
  ASSIGN_OR_RETURN(instance::DescribeResult r,
                   owners_.container_instances->UpdateState(ctx.scope, name, refs, String(in, "status"), ctx.now));
  return "{\"containerInstances\":" + JoinArray(r.instances) +
         ",\"failures\":" + json::serialize(EncodeFailures(r.failures)) + "}";
}

StatusOr<std::string> EcsService::UpdateContainerAgent(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(instance::InstanceRef ref,
                   instance::ParseInstanceRef(String(in, "containerInstance"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(std::string ci, owners_.container_instances->UpdateAgent(ctx.scope, name, ref, ctx.now));
  return "{\"containerInstance\":" + ci + "}";
}

StatusOr<std::string> EcsService::PutAttributes(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(auto attributes, DecodeTargetedAttributes(ctx, in));
  ASSIGN_OR_RETURN(auto put, owners_.container_instances->PutAttributes(ctx.scope, name, attributes));
  return "{\"attributes\":" + json::serialize(EncodeAttributes(put)) + "}";
}

StatusOr<std::string> EcsService::DeleteAttributes(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(auto attributes, DecodeTargetedAttributes(ctx, in));
  ASSIGN_OR_RETURN(auto deleted, owners_.container_instances->DeleteAttributes(ctx.scope, name, attributes));
  return "{\"attributes\":" + json::serialize(EncodeAttributes(deleted)) + "}";
}

StatusOr<std::string> EcsService::ListAttributes(const aws::CallContext& ctx, json::object& in) {
  instance::AttributeQuery q;
  ASSIGN_OR_RETURN(q.cluster, cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(q.limit, PageSize(in));
  if (String(in, "targetType") != "container-instance")
    return ParamError("targetType must be container-instance.");
  q.name = OptOwned(in, "attributeName");
  q.value = OptOwned(in, "attributeValue");
  if (q.value && !q.name) return ParamError("attributeValue can be given only with attributeName.");
  const std::string context =
      TokenContext(ctx, fmt::format("{}|{}|{}|{}", q.cluster, q.name.value_or(""), q.value ? "1" : "0", q.value.value_or("")));
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(instance::AttributePage page, owners_.container_instances->ListAttributes(ctx.scope, q));
  return EncodePage(context, "attributes", EncodeAttributes(page.attributes), page.next);
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
  return NotFound(fmt::format("The specified resource is not found: {}", t.arn), ecs::Error::kResourceNotFound);
}

// A container instance's ARN must name its cluster (container-instance/<cluster>/<id>).
StatusOr<instance::InstanceRef> InstanceTagRef(const aws::CallContext& ctx, const TagTarget& t) {
  ASSIGN_OR_RETURN(instance::InstanceRef ref, instance::ParseInstanceRef(t.arn, ctx.scope, ctx.action, ctx.principal.arn));
  if (!ref.cluster) return UnsupportedTagTarget(t);
  return ref;
}

// The one reader of a resource's tags by ARN: ListTagsForResource, and aws:ResourceTag/<key> for
// the authorizer (AuthorizationFor).
StatusOr<Tags> TagsOf(const Owners& owners, const aws::CallContext& ctx, const TagTarget& t) {
  switch (t.resource.kind) {
    case ResourceKind::kCluster: {
      ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(t.arn, ctx.scope, ctx.action, ctx.principal.arn));
      return owners.clusters->ListTags(ctx.scope, name);
    }
    case ResourceKind::kTaskDefinition: {
      ASSIGN_OR_RETURN(taskdef::Ref ref, TaskDefinitionTagRef(ctx, t));
      return owners.task_definitions->ListTags(ctx.scope, ref);
    }
    case ResourceKind::kContainerInstance: {
      ASSIGN_OR_RETURN(instance::InstanceRef ref, InstanceTagRef(ctx, t));
      return owners.container_instances->ListTags(ctx.scope, *ref.cluster, ref.id);
    }
    case ResourceKind::kService:
    case ResourceKind::kTaskSet:
      return owners.services->ListTags(ctx.scope, t.arn);
    case ResourceKind::kTask:
      return owners.tasks->ListTags(ctx.scope, t.arn);
    case ResourceKind::kCapacityProvider:
      if (owners.capacity_providers == nullptr) return UnsupportedTagTarget(t);
      return owners.capacity_providers->ListTags(ctx.scope, t.resource.id);
    default:
      return UnsupportedTagTarget(t);
  }
}

}  // namespace

StatusOr<std::string> EcsService::TagResource(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(TagTarget t, ResolveTagTarget(ctx, in));
  Tags tags = TagsFrom(in);
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
    case ResourceKind::kContainerInstance: {
      ASSIGN_OR_RETURN(instance::InstanceRef ref, InstanceTagRef(ctx, t));
      RETURN_IF_ERROR(owners_.container_instances->TagResource(ctx.scope, *ref.cluster, ref.id, tags));
      return std::string("{}");
    }
    case ResourceKind::kService:
    case ResourceKind::kTaskSet:
      RETURN_IF_ERROR(owners_.services->TagResource(ctx.scope, t.arn, tags));
      return std::string("{}");
    case ResourceKind::kTask:
      RETURN_IF_ERROR(owners_.tasks->TagResource(ctx.scope, t.arn, tags));
      return std::string("{}");
    case ResourceKind::kCapacityProvider:
      if (owners_.capacity_providers == nullptr) return UnsupportedTagTarget(t);
      RETURN_IF_ERROR(owners_.capacity_providers->TagResource(ctx.scope, t.resource.id, tags));
      return std::string("{}");
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
    case ResourceKind::kContainerInstance: {
      ASSIGN_OR_RETURN(instance::InstanceRef ref, InstanceTagRef(ctx, t));
      RETURN_IF_ERROR(owners_.container_instances->UntagResource(ctx.scope, *ref.cluster, ref.id, keys));
      return std::string("{}");
    }
    case ResourceKind::kService:
    case ResourceKind::kTaskSet:
      RETURN_IF_ERROR(owners_.services->UntagResource(ctx.scope, t.arn, keys));
      return std::string("{}");
    case ResourceKind::kTask:
      RETURN_IF_ERROR(owners_.tasks->UntagResource(ctx.scope, t.arn, keys));
      return std::string("{}");
    case ResourceKind::kCapacityProvider:
      if (owners_.capacity_providers == nullptr) return UnsupportedTagTarget(t);
      RETURN_IF_ERROR(owners_.capacity_providers->UntagResource(ctx.scope, t.resource.id, keys));
      return std::string("{}");
    default:
      return UnsupportedTagTarget(t);
  }
}

StatusOr<std::string> EcsService::ListTagsForResource(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(TagTarget t, ResolveTagTarget(ctx, in));
  ASSIGN_OR_RETURN(Tags tags, TagsOf(owners_, ctx, t));
  return "{\"tags\":" + json::serialize(TagsJson(tags)) + "}";
}

// ---- The agent's actions ----
//
// ECS documents these as used only by its container agent. The reporting agent is the task's
// container instance, and only its agent credential may report (docs/agent-protocol.md,
// "Identity"): an account's own key is AccessDeniedException, as is another account's ARN and a
// task without a container instance (Fargate, run by the node's own agent). The report is applied
// as that instance's agent's (ReportState: never backwards). Paddock's own agents report through
// ReportTaskState (agent/remote/server/agent_service.h), which also carries stopCode and health.

namespace {
struct ReportedTask {
  std::string arn;
  std::string agent_id;
  std::string last_status;
};

StatusOr<ReportedTask> FindReportedTask(task::Tasks& tasks, const aws::CallContext& ctx, const json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster,
                   cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  std::string ref = String(in, "task");
  if (ref.empty()) return ParamError("task is required.");
  ASSIGN_OR_RETURN(std::string id, task::TaskId(ref, ctx.scope, ctx.action, ctx.principal.arn));
  ReportedTask out;
  out.arn = task::TaskArn(ctx.scope, cluster, id);
  ASSIGN_OR_RETURN(task::DescribeResult d, tasks.Describe(ctx.scope, cluster, {out.arn}, false, ctx.principal.arn));
  if (d.tasks.empty()) return ParamError("The referenced task was not found.");
  json::value t = json::parse(d.tasks.front());
  const json::object& o = t.as_object();
  auto instance = OptString(o, "containerInstanceArn");
  if (!instance)
    return PermissionDenied(fmt::format("Task {} has no container instance: only the node's own agent reports it.", out.arn));
  if (ctx.principal.agent_of != *instance) return NotAuthorized(ctx.principal.arn, ctx.action, out.arn);
  out.agent_id = task::InstanceAgentId(*instance);
  out.last_status = String(o, "lastStatus");
  return out;
}

Status CheckContainerStatus(std::string_view status) {
  if (status == "PENDING" || status == "RUNNING" || status == "STOPPED") return OkStatus();
  return ParamError(fmt::format("Unknown container status: {}", status));
}


constexpr std::string_view kAcknowledged = R"({"acknowledgment":"ACK"})";
}  // namespace

StatusOr<std::string> EcsService::SubmitTaskStateChange(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(ReportedTask t, FindReportedTask(*owners_.tasks, ctx, in));
  task::TaskStateChange change;
  // Without a status the report changes only containers: the task stays where it is.
  change.last_status = OptString(in, "status") ? String(in, "status") : t.last_status;
  change.stopped_reason = OptOwned(in, "reason");
  change.pull_started_at = json_fields::EpochSeconds(in, "pullStartedAt");
  change.pull_stopped_at = json_fields::EpochSeconds(in, "pullStoppedAt");
  change.execution_stopped_at = json_fields::EpochSeconds(in, "executionStoppedAt");
  if (auto it = in.find("containers"); it != in.end() && it->value().is_array()) {
    for (const auto& v : it->value().get_array()) {
      task::ContainerStateChange c = agent::protocol::ContainerChangeFromJson(v.as_object());
      if (c.name.empty()) return ParamError("containerName is required for each container.");
      RETURN_IF_ERROR(CheckContainerStatus(c.last_status));
      change.containers.push_back(std::move(c));
    }
  }
  // attachments and managedAgents are accepted and not recorded: Paddock's agent attaches the
  // task's interface itself, and the task's attachment status follows its lastStatus.
  RETURN_IF_ERROR(owners_.tasks->ReportState(t.agent_id, t.arn, change, ctx.now));
  return std::string(kAcknowledged);
}

StatusOr<std::string> EcsService::SubmitContainerStateChange(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(ReportedTask t, FindReportedTask(*owners_.tasks, ctx, in));
  task::ContainerStateChange c = agent::protocol::ContainerChangeFromJson(in);
  if (c.name.empty()) return ParamError("containerName is required.");
  RETURN_IF_ERROR(CheckContainerStatus(c.last_status));
  task::TaskStateChange change;
  change.last_status = t.last_status;  // the task stays where it is
  change.containers.push_back(std::move(c));
  RETURN_IF_ERROR(owners_.tasks->ReportState(t.agent_id, t.arn, change, ctx.now));
  return std::string(kAcknowledged);
}

StatusOr<std::string> EcsService::SubmitAttachmentStateChanges(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster,
                   cluster::ClusterName(OptString(in, "cluster"), ctx.scope, ctx.action, ctx.principal.arn));
  RETURN_IF_ERROR(owners_.clusters->CheckExists(ctx.scope, cluster));
  auto it = in.find("attachments");
  if (it == in.end() || !it->value().is_array() || it->value().get_array().empty())
    return ParamError("Attachments cannot be empty.");
  for (const auto& v : it->value().get_array()) {
    // arn:aws:ecs:REGION:ACCOUNT:attachment/ID, of the caller's account and region.
    std::string arn = String(v.as_object(), "attachmentArn");
    std::vector<std::string_view> parts;  // arn, aws, ecs, region, account, resource
    size_t pos = 0;
    for (size_t colon; parts.size() < 5 && (colon = arn.find(':', pos)) != std::string::npos; pos = colon + 1)
      parts.push_back(std::string_view(arn).substr(pos, colon - pos));
    if (parts.size() != 5 || parts[0] != "arn" || parts[2] != "ecs" ||
        std::string_view(arn).substr(pos).rfind("attachment/", 0) != 0)
      return ParamError(fmt::format("Invalid attachment ARN: {}", arn));
    const EcsResource r{ResourceKind::kCluster, Scope{AccountId(std::string(parts[4])), Region(std::string(parts[3]))}, ""};
    RETURN_IF_ERROR(CheckArnScope(r, ctx.scope, arn, ctx.action, ctx.principal.arn));
  }
  // Accepted and not recorded: a task's attachment status follows the task (ReportState).
  return std::string(kAcknowledged);
}

void EcsService::SetEndpoint(std::string url) {
  std::lock_guard lock(endpoint_mu_);
  endpoint_ = std::move(url);
}

StatusOr<std::string> EcsService::DiscoverPollEndpoint(const aws::CallContext& ctx, json::object& in) {
  if (auto c = OptString(in, "cluster")) {
    ASSIGN_OR_RETURN(std::string name, cluster::ClusterName(*c, ctx.scope, ctx.action, ctx.principal.arn));
    (void)name;
  }
  if (auto ci = OptString(in, "containerInstance")) {
    ASSIGN_OR_RETURN(instance::InstanceRef ref, instance::ParseInstanceRef(*ci, ctx.scope, ctx.action, ctx.principal.arn));
    (void)ref;
  }
  std::string url;
  {
    std::lock_guard lock(endpoint_mu_);
    url = endpoint_;
  }
  if (url.empty()) return Unavailable("The endpoint is not known yet.");
  return json::serialize(json::object{{"endpoint", url}, {"telemetryEndpoint", url}, {"serviceConnectEndpoint", url}});
}

std::vector<aws::AuthRequest> EcsService::AuthorizationFor(const aws::CallContext& ctx,
                                                           const json::object& input) const {
  std::vector<aws::AuthRequest> questions = EcsAuthorization(ctx, input);
  // aws:ResourceTag/<key>: every ECS resource type carries it (Service Authorization Reference,
  // "Resource types defined by Amazon Elastic Container Service"), so every ECS question about an
  // ECS resource ARN offers the resource's tags, read only if a policy asks (AuthRequest).
  for (aws::AuthRequest& q : questions) {
    if (!q.action.starts_with("ecs:") || !q.resource.starts_with("arn:aws:ecs:")) continue;
    q.resource_tags = [this, scope = ctx.scope, arn = q.resource]() -> StatusOr<std::vector<std::pair<std::string, std::string>>> {
      std::vector<std::pair<std::string, std::string>> out;
      StatusOr<EcsResource> resource = ParseEcsResourceArn(arn);
      if (!resource.ok() || !CheckArnScope(*resource, scope, arn, "ListTagsForResource", "").ok()) return out;
      aws::CallContext reader;
      reader.scope = scope;
      reader.action = "ListTagsForResource";
      StatusOr<Tags> tags = TagsOf(owners_, reader, TagTarget{std::move(resource).value(), arn});
      // A resource that does not exist (yet: CreateCluster) or that the tag API does not serve
      // has no tags; a store failure fails the authorization.
      if (!tags.ok()) {
        const StatusCode code = tags.status().code();
        if (code == StatusCode::kNotFound || code == StatusCode::kInvalidArgument) return out;
        return tags.status();
      }
      for (const auto& tag : *tags) out.emplace_back(tag.key, tag.value);
      return out;
    };
  }
  return questions;
}

}  // namespace paddock::ecs::api
