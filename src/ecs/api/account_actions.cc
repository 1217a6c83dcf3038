// The ECS adapter's account-setting and capacity-provider actions: their JSON in and out
// (docs/contracts/account-setting.md, docs/contracts/capacity-provider.md). The owners see typed
// values only.
#include <fmt/format.h>

#include <boost/json.hpp>

#include "ecs/api/ecs_service.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"

namespace paddock::ecs::api {
namespace json = boost::json;

namespace {

std::optional<std::string> OptStr(const json::object& in, std::string_view key) {
  const json::value* v = in.if_contains(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::optional<int64_t> OptInt(const json::object& in, std::string_view key) {
  const json::value* v = in.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<int64_t>();
}

std::optional<bool> OptToggle(const json::object& in, std::string_view key) {
  auto s = OptStr(in, key);
  if (!s) return std::nullopt;
  return *s == "ENABLED";
}

const json::object* OptObj(const json::object& in, std::string_view key) {
  const json::value* v = in.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

// ---- Account settings ----

StatusOr<setting::SettingName> SettingNameOf(const json::object& in) {
  // The front validated `name` against the model's SettingName enum.
  auto name = setting::ParseSettingName(OptStr(in, "name").value_or(""));
  if (!name) return ParamError("Invalid setting 'name'");
  return *name;
}

json::object EncodeSetting(const setting::Setting& s) {
  return json::object{{"name", setting::SettingNameText(s.name)},
                      {"value", s.value},
                      {"principalArn", s.principal_arn},
                      {"type", s.aws_managed ? "aws_managed" : "user"}};
}

std::string SettingAnswer(const setting::Setting& s) {
  return json::serialize(json::object{{"setting", EncodeSetting(s)}});
}

// ---- Capacity providers ----

capacity::ManagedScalingUpdate DecodeScaling(const json::object& m) {
  capacity::ManagedScalingUpdate u;
  u.enabled = OptToggle(m, "status");
  u.target_capacity = OptInt(m, "targetCapacity");
  u.minimum_scaling_step_size = OptInt(m, "minimumScalingStepSize");
  u.maximum_scaling_step_size = OptInt(m, "maximumScalingStepSize");
  u.instance_warmup_period = OptInt(m, "instanceWarmupPeriod");
  return u;
}

capacity::AsgProviderUpdate DecodeAsgUpdate(const json::object& a) {
  capacity::AsgProviderUpdate u;
  if (const json::object* m = OptObj(a, "managedScaling")) u.managed_scaling = DecodeScaling(*m);
  u.managed_termination_protection = OptToggle(a, "managedTerminationProtection");
  u.managed_draining = OptToggle(a, "managedDraining");
  return u;
}

// AutoScalingGroupProvider: what is omitted takes AWS's default (capacity_providers.h).
capacity::AsgProvider DecodeAsg(const json::object& a) {
  capacity::AsgProvider p;
  p.auto_scaling_group_arn = OptStr(a, "autoScalingGroupArn").value_or("");
  const capacity::AsgProviderUpdate u = DecodeAsgUpdate(a);
  if (u.managed_scaling) {
    const capacity::ManagedScalingUpdate& m = *u.managed_scaling;
    p.managed_scaling.enabled = m.enabled.value_or(false);
    p.managed_scaling.target_capacity = m.target_capacity.value_or(100);
    p.managed_scaling.minimum_scaling_step_size = m.minimum_scaling_step_size.value_or(1);
    p.managed_scaling.maximum_scaling_step_size = m.maximum_scaling_step_size.value_or(10000);
    p.managed_scaling.instance_warmup_period = m.instance_warmup_period.value_or(300);
  }
  p.managed_termination_protection = u.managed_termination_protection.value_or(false);
  p.managed_draining = u.managed_draining.value_or(true);
  return p;
}

json::array EncodeTagList(const Tags& tags) {
  json::array out;
  for (const auto& t : tags) out.push_back(json::object{{"key", t.key}, {"value", t.value}});
  return out;
}

Tags DecodeTagList(const json::object& in) {
  Tags tags;
  if (const json::value* v = in.if_contains("tags"); v != nullptr && v->is_array())
    for (const auto& t : v->get_array())
      if (t.is_object()) tags.push_back(Tag{OptStr(t.get_object(), "key").value_or(""),
                                            OptStr(t.get_object(), "value").value_or("")});
  return tags;
}

json::object EncodeProvider(const capacity::CapacityProvider& p) {
  json::object o{{"capacityProviderArn", p.arn}, {"name", p.name}, {"status", p.status}};
  if (p.asg) {
    const capacity::ManagedScaling& m = p.asg->managed_scaling;
    auto toggle = [](bool on) { return on ? "ENABLED" : "DISABLED"; };
    o["autoScalingGroupProvider"] = json::object{
        {"autoScalingGroupArn", p.asg->auto_scaling_group_arn},
        {"managedScaling", json::object{{"status", toggle(m.enabled)},
                                        {"targetCapacity", m.target_capacity},
                                        {"minimumScalingStepSize", m.minimum_scaling_step_size},
                                        {"maximumScalingStepSize", m.maximum_scaling_step_size},
                                        {"instanceWarmupPeriod", m.instance_warmup_period}}},
        {"managedTerminationProtection", toggle(p.asg->managed_termination_protection)},
        {"managedDraining", toggle(p.asg->managed_draining)}};
  }
  if (!p.update_status.empty()) o["updateStatus"] = p.update_status;
  if (!p.update_status_reason.empty()) o["updateStatusReason"] = p.update_status_reason;
  if (p.tags) o["tags"] = EncodeTagList(*p.tags);
  o["type"] = capacity::ProviderTypeText(p.type);
  return o;
}

std::string ProviderAnswer(const capacity::CapacityProvider& p) {
  return json::serialize(json::object{{"capacityProvider", EncodeProvider(p)}});
}

}  // namespace

Status EcsService::RequireAccountOwners() const {
  if (owners_.account_settings == nullptr || owners_.capacity_providers == nullptr)
    return Unavailable("This server does not serve account settings and capacity providers.");
  return OkStatus();
}

StatusOr<std::string> EcsService::PutAccountSetting(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  ASSIGN_OR_RETURN(setting::SettingName name, SettingNameOf(in));
  ASSIGN_OR_RETURN(setting::Setting s, owners_.account_settings->Put(ctx.scope, ctx.principal.arn, name,
                                                                     OptStr(in, "value").value_or(""),
                                                                     OptStr(in, "principalArn")));
  return SettingAnswer(s);
}

StatusOr<std::string> EcsService::PutAccountSettingDefault(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  ASSIGN_OR_RETURN(setting::SettingName name, SettingNameOf(in));
  ASSIGN_OR_RETURN(setting::Setting s, owners_.account_settings->PutDefault(ctx.scope, ctx.principal.arn, name,
                                                                            OptStr(in, "value").value_or("")));
  return SettingAnswer(s);
}

StatusOr<std::string> EcsService::DeleteAccountSetting(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  ASSIGN_OR_RETURN(setting::SettingName name, SettingNameOf(in));
  ASSIGN_OR_RETURN(setting::Setting s,
                   owners_.account_settings->Delete(ctx.scope, ctx.principal.arn, name, OptStr(in, "principalArn")));
  return SettingAnswer(s);
}

StatusOr<std::string> EcsService::ListAccountSettings(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  setting::ListQuery q;
  if (OptStr(in, "name")) {
    ASSIGN_OR_RETURN(q.name, SettingNameOf(in));
  }
  q.value = OptStr(in, "value");
  q.principal_arn = OptStr(in, "principalArn");
  if (const json::value* e = in.if_contains("effectiveSettings"); e != nullptr && e->is_bool()) q.effective = e->get_bool();
  if (auto m = OptInt(in, "maxResults")) {
    if (*m < 1 || *m > 10) return ParamError("maxResults must be between 1 and 10.");
    q.limit = static_cast<size_t>(*m);
  }
  const std::string context = fmt::format("{}|{}|{}|{}|{}|{}|{}", ctx.action, ctx.scope.account.str(),
                                          ctx.scope.region.str(), q.principal_arn.value_or(ctx.principal.arn),
                                          q.name ? setting::SettingNameText(*q.name) : "", q.value ? "=" + *q.value : "",
                                          q.effective ? "effective" : "own");
  ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  ASSIGN_OR_RETURN(setting::Page page, owners_.account_settings->List(ctx.scope, ctx.principal.arn, q));
  json::array settings;
  for (const auto& s : page.settings) settings.push_back(EncodeSetting(s));
  return EncodePage(context, "settings", std::move(settings), page.next);
}

StatusOr<std::string> EcsService::CreateCapacityProvider(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  capacity::CreateRequest r;
  r.name = OptStr(in, "name").value_or("");
  if (const json::object* a = OptObj(in, "autoScalingGroupProvider")) r.asg = DecodeAsg(*a);
  r.managed_instances = in.contains("managedInstancesProvider");
  r.cluster = OptStr(in, "cluster");
  r.tags = DecodeTagList(in);
  ASSIGN_OR_RETURN(capacity::CapacityProvider p, owners_.capacity_providers->Create(ctx.scope, r));
  return ProviderAnswer(p);
}

StatusOr<std::string> EcsService::UpdateCapacityProvider(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  capacity::UpdateRequest r;
  ASSIGN_OR_RETURN(r.name, capacity::ProviderName(OptStr(in, "name").value_or(""), ctx.scope, ctx.action,
                                                  ctx.principal.arn));
  if (const json::object* a = OptObj(in, "autoScalingGroupProvider")) r.asg = DecodeAsgUpdate(*a);
  r.managed_instances = in.contains("managedInstancesProvider");
  if (in.contains("cluster"))
    return ParamError("The cluster parameter applies only to Amazon ECS Managed Instances capacity providers.");
  ASSIGN_OR_RETURN(capacity::CapacityProvider p, owners_.capacity_providers->Update(ctx.scope, r));
  return ProviderAnswer(p);
}

StatusOr<std::string> EcsService::DeleteCapacityProvider(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  ASSIGN_OR_RETURN(std::string name, capacity::ProviderName(OptStr(in, "capacityProvider").value_or(""), ctx.scope,
                                                            ctx.action, ctx.principal.arn));
  if (in.contains("cluster"))
    return ParamError("The cluster parameter applies only to Amazon ECS Managed Instances capacity providers.");
  ASSIGN_OR_RETURN(capacity::CapacityProvider p, owners_.capacity_providers->Delete(ctx.scope, name));
  return ProviderAnswer(p);
}

StatusOr<std::string> EcsService::DescribeCapacityProviders(const aws::CallContext& ctx, json::object& in) {
  RETURN_IF_ERROR(RequireAccountOwners());
  capacity::DescribeQuery q;
  if (const json::value* v = in.if_contains("capacityProviders"); v != nullptr && v->is_array())
    for (const auto& r : v->get_array())
      if (r.is_string()) q.refs.emplace_back(r.get_string());
  if (const json::value* v = in.if_contains("include"); v != nullptr && v->is_array())
    for (const auto& f : v->get_array()) q.include_tags = q.include_tags || f == "TAGS";
  if (auto m = OptInt(in, "maxResults")) {
    if (*m < 1 || *m > 10) return ParamError("maxResults must be between 1 and 10.");
    q.limit = static_cast<size_t>(*m);
  }
  std::string cluster_name;
  if (auto c = OptStr(in, "cluster")) {
    ASSIGN_OR_RETURN(cluster_name, cluster::ClusterName(*c, ctx.scope, ctx.action, ctx.principal.arn));
    ASSIGN_OR_RETURN(cluster::Clusters::LaunchSettings launch, owners_.clusters->ForLaunch(ctx.scope, cluster_name));
    q.only = std::move(launch.capacity_providers);
  }
  for (const auto& ref : q.refs) {  // another account's ARN reads nothing
    ASSIGN_OR_RETURN(std::string name, capacity::ProviderName(ref, ctx.scope, ctx.action, ctx.principal.arn));
    (void)name;
  }
  const std::string context = fmt::format("{}|{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(),
                                          cluster_name, q.include_tags ? "tags" : "");
  if (q.refs.empty()) {
    ASSIGN_OR_RETURN(q.after, PageStart(context, in));
  }
  ASSIGN_OR_RETURN(capacity::DescribeResult r, owners_.capacity_providers->Describe(ctx.scope, q));
  json::object out;
  json::array providers;
  for (const auto& p : r.providers) providers.push_back(EncodeProvider(p));
  out["capacityProviders"] = std::move(providers);
  json::array failures;
  for (const auto& f : r.failures) failures.push_back(json::object{{"arn", f.arn}, {"reason", f.reason}});
  out["failures"] = std::move(failures);
  if (!r.next.empty()) out["nextToken"] = tokens_.Encode(context, r.next);
  return json::serialize(out);
}

// ---- Task scale-in protection ----

namespace {
std::string ProtectionAnswer(const task::Tasks::ProtectionResult& r) {
  json::array tasks;
  for (const auto& t : r.tasks) {
    json::object o{{"taskArn", t.arn}, {"protectionEnabled", t.enabled}};
    if (t.expires_at) o["expirationDate"] = EpochSeconds(*t.expires_at);
    tasks.push_back(std::move(o));
  }
  json::array failures;
  for (const auto& f : r.failures) {
    json::object o{{"arn", f.arn}, {"reason", f.reason}};
    if (!f.detail.empty()) o["detail"] = f.detail;
    failures.push_back(std::move(o));
  }
  return json::serialize(json::object{{"protectedTasks", std::move(tasks)}, {"failures", std::move(failures)}});
}

std::vector<std::string> TaskRefs(const json::object& in) {
  std::vector<std::string> out;
  if (const json::value* v = in.if_contains("tasks"); v != nullptr && v->is_array())
    for (const auto& t : v->get_array())
      if (t.is_string()) out.emplace_back(t.get_string());
  return out;
}
}  // namespace

StatusOr<std::string> EcsService::UpdateTaskProtection(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster,
                   cluster::ClusterName(OptStr(in, "cluster").value_or(""), ctx.scope, ctx.action, ctx.principal.arn));
  const json::value* enabled = in.if_contains("protectionEnabled");
  ASSIGN_OR_RETURN(task::Tasks::ProtectionResult r,
                   owners_.tasks->UpdateProtection(ctx.scope, cluster, TaskRefs(in),
                                                   enabled != nullptr && enabled->is_bool() && enabled->get_bool(),
                                                   OptInt(in, "expiresInMinutes"), ctx.principal.arn, ctx.now));
  return ProtectionAnswer(r);
}

StatusOr<std::string> EcsService::GetTaskProtection(const aws::CallContext& ctx, json::object& in) {
  ASSIGN_OR_RETURN(std::string cluster,
                   cluster::ClusterName(OptStr(in, "cluster").value_or(""), ctx.scope, ctx.action, ctx.principal.arn));
  ASSIGN_OR_RETURN(task::Tasks::ProtectionResult r,
                   owners_.tasks->GetProtection(ctx.scope, cluster, TaskRefs(in), ctx.principal.arn, ctx.now));
  return ProtectionAnswer(r);
}

}  // namespace paddock::ecs::api
