#include "ecs/capacity/capacity_providers.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <set>

#include "common/arn.h"
#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "store/key.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::capacity {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kProviders = "capacity_providers";
constexpr std::string_view kAsgs = "capacity_provider_asgs";
constexpr std::string_view kClusters = "capacity_provider_clusters";

constexpr std::string_view kReservedNote =
    "The FARGATE and FARGATE_SPOT capacity providers are reserved and can't be {}.";

std::string ProviderKey(const Scope& s, std::string_view name) { return ScopeKey(s).Str(name).Done(); }
std::string AsgKey(const Scope& s, std::string_view asg) { return ScopeKey(s).Str(asg).Done(); }

Status NoSuchProvider() {
  return ClientError("The specified capacity provider does not exist. Specify a valid name or ARN and try again.");
}

// Names: 1-255 letters, digits, '_' and '-', not prefixed with "aws", "ecs" or "fargate" in any
// case (the model's CreateCapacityProvider.name documentation).
Status CheckName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 255;
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view reserved : {"aws", "ecs", "fargate"}) ok = ok && !lower.starts_with(reserved);
  if (ok) return OkStatus();
  return ParamError(fmt::format(
      "The capacity provider name '{}' is invalid. Up to 255 letters (uppercase and lowercase), numbers, underscores, "
      "and hyphens are allowed, and the name can't be prefixed with \"aws\", \"ecs\", or \"fargate\".",
      name));
}

// An Auto Scaling group ARN must be one of the caller's account and region; a plain name (the
// model allows "the Auto Scaling group name") is taken as it is.
Status CheckAsg(const Scope& scope, std::string_view asg) {
  if (asg.empty() || asg.size() > 1600) return ParamError("autoScalingGroupArn must be 1 to 1600 characters.");
  if (!asg.starts_with("arn:")) return OkStatus();
  auto arn = ParseArn(asg);
  if (!arn.ok() || arn->service != "autoscaling" || !arn->resource.starts_with("autoScalingGroup:") ||
      arn->resource.find(":autoScalingGroupName/") == std::string::npos)
    return ParamError(fmt::format("The Auto Scaling group ARN '{}' is not valid.", asg));
  if (arn->account != scope.account.str() || arn->region != scope.region.str())
    return ParamError(fmt::format(
        "The Auto Scaling group '{}' must be in the account and Region of the capacity provider.", asg));
  return OkStatus();
}

Status CheckScaling(const ManagedScaling& m) {
  if (m.minimum_scaling_step_size > m.maximum_scaling_step_size)
    return ParamError("minimumScalingStepSize must be less than or equal to maximumScalingStepSize.");
  return OkStatus();
}

std::string_view Toggle(bool on) { return on ? "ENABLED" : "DISABLED"; }
bool IsOn(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() && v->get_string() == "ENABLED";
}
int64_t Int(const json::object& o, std::string_view key, int64_t fallback) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_int64() ? v->get_int64() : fallback;
}
std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// The stored record: the provider's members, without tags.
std::string Encode(const CapacityProvider& p) {
  json::object o{{"name", p.name}, {"status", p.status}};
  if (!p.update_status.empty()) o["updateStatus"] = p.update_status;
  if (!p.update_status_reason.empty()) o["updateStatusReason"] = p.update_status_reason;
  if (p.asg) {
    const ManagedScaling& m = p.asg->managed_scaling;
    o["asg"] = json::object{
        {"autoScalingGroupArn", p.asg->auto_scaling_group_arn},
        {"managedScaling", json::object{{"status", Toggle(m.enabled)},
                                        {"targetCapacity", m.target_capacity},
                                        {"minimumScalingStepSize", m.minimum_scaling_step_size},
                                        {"maximumScalingStepSize", m.maximum_scaling_step_size},
                                        {"instanceWarmupPeriod", m.instance_warmup_period}}},
        {"managedTerminationProtection", Toggle(p.asg->managed_termination_protection)},
        {"managedDraining", Toggle(p.asg->managed_draining)}};
  }
  return json::serialize(o);
}

StatusOr<CapacityProvider> Decode(const Scope& scope, std::string_view text) {
  ASSIGN_OR_RETURN(json::object o, ParseRecordObject(text, "capacity provider"));
  CapacityProvider p;
  p.name = Str(o, "name");
  p.arn = CapacityProviderArn(scope, p.name);
  p.status = Str(o, "status");
  p.update_status = Str(o, "updateStatus");
  p.update_status_reason = Str(o, "updateStatusReason");
  if (const json::value* a = o.if_contains("asg"); a != nullptr && a->is_object()) {
    const json::object& ao = a->get_object();
    AsgProvider asg;
    asg.auto_scaling_group_arn = Str(ao, "autoScalingGroupArn");
    if (const json::value* m = ao.if_contains("managedScaling"); m != nullptr && m->is_object()) {
      const json::object& mo = m->get_object();
      asg.managed_scaling.enabled = IsOn(mo, "status");
      asg.managed_scaling.target_capacity = Int(mo, "targetCapacity", 100);
      asg.managed_scaling.minimum_scaling_step_size = Int(mo, "minimumScalingStepSize", 1);
      asg.managed_scaling.maximum_scaling_step_size = Int(mo, "maximumScalingStepSize", 10000);
      asg.managed_scaling.instance_warmup_period = Int(mo, "instanceWarmupPeriod", 300);
    }
    asg.managed_termination_protection = IsOn(ao, "managedTerminationProtection");
    asg.managed_draining = IsOn(ao, "managedDraining");
    p.asg = std::move(asg);
  }
  return p;
}

CapacityProvider BuiltIn(const Scope& scope, std::string_view name) {
  CapacityProvider p;
  p.arn = CapacityProviderArn(scope, name);
  p.name = std::string(name);
  p.status = "ACTIVE";
  p.type = name == "FARGATE" ? ProviderType::kFargate : ProviderType::kFargateSpot;
  return p;
}

// The clusters a provider is associated with.
StatusOr<std::vector<std::string>> ClustersOf(store::ReadTxn& txn, const Scope& scope, std::string_view name) {
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kClusters, store::PrefixRange(ScopeKey(scope).Str(name).Done()), 100));
  std::vector<std::string> out;
  for (const auto& row : rows) {
    store::KeyReader r(row.key);
    std::string part;
    for (int i = 0; i < 4; ++i) {  // account, region, provider, cluster
      ASSIGN_OR_RETURN(part, r.Str());
    }
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace

std::string CapacityProviderArn(const Scope& scope, std::string_view name) {
  return fmt::format("arn:aws:ecs:{}:{}:capacity-provider/{}", scope.region.str(), scope.account.str(), name);
}

StatusOr<std::string> StrategyLaunchType(const std::vector<std::string>& providers) {
  if (providers.empty()) return ParamError("The capacity provider strategy must contain at least one capacity provider.");
  const size_t fargate = static_cast<size_t>(std::count_if(providers.begin(), providers.end(),
                                                           [](const std::string& p) { return IsFargateProvider(p); }));
  if (fargate != 0 && fargate != providers.size())
    return ParamError(
        "The specified capacity provider strategy cannot contain a mix of capacity providers using Auto Scaling groups "
        "and Fargate providers. Specify one or the other and try again.");
  return std::string(fargate != 0 ? "FARGATE" : "EC2");
}

std::string_view ProviderTypeText(ProviderType type) {
  switch (type) {
    case ProviderType::kFargate:
      return "FARGATE";
    case ProviderType::kFargateSpot:
      return "FARGATE_SPOT";
    case ProviderType::kEc2AutoScaling:
      break;
  }
  return "EC2_AUTOSCALING";
}

StatusOr<std::string> ProviderName(std::string_view ref, const Scope& caller, std::string_view action,
                                   std::string_view caller_arn) {
  if (!ref.starts_with("arn:")) return std::string(ref);
  ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(ref));
  if (r.kind != ResourceKind::kCapacityProvider || r.id.find('/') != std::string::npos)
    return ParamError("The ARN provided is invalid.");
  RETURN_IF_ERROR(CheckArnScope(r, caller, ref, action, caller_arn));
  return r.id;
}

StatusOr<std::optional<CapacityProvider>> CapacityProviders::Load(store::ReadTxn& txn, const Scope& scope,
                                                                   std::string_view name) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kProviders, ProviderKey(scope, name)));
  if (!text) return std::optional<CapacityProvider>();
  ASSIGN_OR_RETURN(CapacityProvider p, Decode(scope, *text));
  return std::optional<CapacityProvider>(std::move(p));
}

StatusOr<CapacityProvider> CapacityProviders::Create(const Scope& scope, const CreateRequest& request) {
  RETURN_IF_ERROR(CheckName(request.name));
  if (request.managed_instances)
    return InvalidArgument("Amazon ECS Managed Instances capacity providers are not supported by Paddock.",
                           ecs::Error::kUnsupportedFeature);
  if (!request.asg) return ParamError("An autoScalingGroupProvider is required to create a capacity provider.");
  if (request.cluster)
    return ParamError("The cluster parameter applies only to Amazon ECS Managed Instances capacity providers.");
  RETURN_IF_ERROR(CheckAsg(scope, request.asg->auto_scaling_group_arn));
  RETURN_IF_ERROR(CheckScaling(request.asg->managed_scaling));
  RETURN_IF_ERROR(ValidateTags(request.tags));

  CapacityProvider p;
  p.name = request.name;
  p.arn = CapacityProviderArn(scope, p.name);
  p.status = "ACTIVE";
  p.asg = request.asg;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto existing, txn.Get(kProviders, ProviderKey(scope, p.name)));
    if (existing)
      return ClientError(
          "The specified capacity provider already exists. To change the configuration of an existing capacity "
          "provider, update the capacity provider.");
    const std::string asg_key = AsgKey(scope, p.asg->auto_scaling_group_arn);
    ASSIGN_OR_RETURN(auto asg_user, txn.Get(kAsgs, asg_key));
    if (asg_user)
      return ClientError(
          "The specified Auto Scaling group ARN is already being used by another capacity provider. Specify a unique "
          "Auto Scaling group ARN and try again.");
    RETURN_IF_ERROR(txn.Put(kProviders, ProviderKey(scope, p.name), Encode(p)));
    RETURN_IF_ERROR(txn.Put(kAsgs, asg_key, p.name));
    RETURN_IF_ERROR(RemoveAllTags(txn, scope, p.arn));  // a re-created provider starts afresh
    RETURN_IF_ERROR(PutTags(txn, scope, p.arn, request.tags));
    ASSIGN_OR_RETURN(p.tags, ReadTags(txn, scope, p.arn));
    return OkStatus();
  }));
  return p;
}

StatusOr<DescribeResult> CapacityProviders::Describe(const Scope& scope, const DescribeQuery& q) {
  if (q.refs.size() > 100) return ParamError("The capacityProviders list can contain at most 100 entries.");
  if (q.limit < 1 || q.limit > 10) return ParamError("maxResults must be between 1 and 10.");
  DescribeResult out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    // Whether `name` passes the cluster filter.
    auto in_cluster = [&](std::string_view name) -> StatusOr<bool> {
      return !q.only || std::find(q.only->begin(), q.only->end(), name) != q.only->end();
    };
    auto add = [&](CapacityProvider p) -> Status {
      if (q.include_tags) {
        if (IsFargateProvider(p.name)) {
          p.tags = Tags{};
        } else {
          ASSIGN_OR_RETURN(p.tags, ReadTags(txn, scope, p.arn));
        }
      }
      out.providers.push_back(std::move(p));
      return OkStatus();
    };
    if (!q.refs.empty()) {
      for (const auto& ref : q.refs) {
        ASSIGN_OR_RETURN(std::string name, ProviderName(ref, scope, "DescribeCapacityProviders", ""));
        std::optional<CapacityProvider> p;
        if (IsFargateProvider(name)) {
          p = BuiltIn(scope, name);
        } else {
          ASSIGN_OR_RETURN(p, Load(txn, scope, name));
        }
        ASSIGN_OR_RETURN(bool keep, p ? in_cluster(name) : StatusOr<bool>(false));
        if (!p || !keep) {
          out.failures.push_back({ref.starts_with("arn:") ? ref : CapacityProviderArn(scope, name), "MISSING"});
          continue;
        }
        RETURN_IF_ERROR(add(std::move(*p)));
      }
      return OkStatus();
    }
    // The listing: FARGATE, FARGATE_SPOT, then the account's providers by name. A position is the
    // last name answered; the built-ins sort first by the "0"/"1" prefix of their position.
    auto more = [&] { return out.providers.size() < q.limit; };
    std::string after = q.after;
    for (std::string_view builtin : {"FARGATE", "FARGATE_SPOT"}) {
      const std::string position = std::string(builtin == "FARGATE" ? "0" : "1") + std::string(builtin);
      if (!after.empty() && position <= after) continue;
      ASSIGN_OR_RETURN(bool keep, in_cluster(builtin));
      if (!keep) continue;
      if (!more()) {
        out.next = after;
        return OkStatus();
      }
      RETURN_IF_ERROR(add(BuiltIn(scope, builtin)));
      after = position;
    }
    store::Range range = store::PrefixRange(ScopeKey(scope).Done());
    if (after.size() > 1 && after[0] == '2') range.begin = store::KeySuccessor(ProviderKey(scope, after.substr(1)));
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kProviders, range, 100));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(CapacityProvider p, Decode(scope, row.value));
        ASSIGN_OR_RETURN(bool keep, in_cluster(p.name));
        if (!keep) continue;
        if (!more()) {
          out.next = after;
          return OkStatus();
        }
        after = "2" + p.name;
        RETURN_IF_ERROR(add(std::move(p)));
      }
      if (rows.size() < 100) break;
      range.begin = store::KeySuccessor(rows.back().key);
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<CapacityProvider> CapacityProviders::Update(const Scope& scope, const UpdateRequest& request) {
  if (IsFargateProvider(request.name)) return ParamError(fmt::format(kReservedNote, "updated"));
  if (request.managed_instances)
    return InvalidArgument("Amazon ECS Managed Instances capacity providers are not supported by Paddock.",
                           ecs::Error::kUnsupportedFeature);
  if (!request.asg) return ParamError("An autoScalingGroupProvider is required to update a capacity provider.");
  CapacityProvider out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::optional<CapacityProvider> p, Load(txn, scope, request.name));
    if (!p || !p->asg) return NoSuchProvider();
    AsgProvider& asg = *p->asg;
    const AsgProviderUpdate& u = *request.asg;
    if (u.managed_scaling) {
      const ManagedScalingUpdate& m = *u.managed_scaling;
      ManagedScaling& s = asg.managed_scaling;
      if (m.enabled) s.enabled = *m.enabled;
      if (m.target_capacity) s.target_capacity = *m.target_capacity;
      if (m.minimum_scaling_step_size) s.minimum_scaling_step_size = *m.minimum_scaling_step_size;
      if (m.maximum_scaling_step_size) s.maximum_scaling_step_size = *m.maximum_scaling_step_size;
      if (m.instance_warmup_period) s.instance_warmup_period = *m.instance_warmup_period;
      RETURN_IF_ERROR(CheckScaling(s));
    }
    if (u.managed_termination_protection) asg.managed_termination_protection = *u.managed_termination_protection;
    if (u.managed_draining) asg.managed_draining = *u.managed_draining;
    p->update_status = "UPDATE_COMPLETE";
    p->update_status_reason.clear();
    RETURN_IF_ERROR(txn.Put(kProviders, ProviderKey(scope, p->name), Encode(*p)));
    out = std::move(*p);
    return OkStatus();
  }));
  return out;
}

StatusOr<CapacityProvider> CapacityProviders::Delete(const Scope& scope, std::string_view name) {
  if (IsFargateProvider(name)) return ParamError(fmt::format(kReservedNote, "deleted"));
  CapacityProvider out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::optional<CapacityProvider> p, Load(txn, scope, name));
    if (!p) return NoSuchProvider();
    ASSIGN_OR_RETURN(std::vector<std::string> clusters, ClustersOf(txn, scope, name));
    if (!clusters.empty()) {
      // AWS answers the call and records the failure on the provider.
      p->update_status = "DELETE_FAILED";
      p->update_status_reason = fmt::format(
          "The capacity provider cannot be deleted because it is associated with cluster: {}. Remove the capacity "
          "provider from the cluster and try again.",
          clusters.front());
      RETURN_IF_ERROR(txn.Put(kProviders, ProviderKey(scope, p->name), Encode(*p)));
      out = std::move(*p);
      return OkStatus();
    }
    RETURN_IF_ERROR(txn.Delete(kProviders, ProviderKey(scope, p->name)));
    if (p->asg) RETURN_IF_ERROR(txn.Delete(kAsgs, AsgKey(scope, p->asg->auto_scaling_group_arn)));
    RETURN_IF_ERROR(RemoveAllTags(txn, scope, p->arn));
    p->status = "INACTIVE";
    p->update_status = "DELETE_COMPLETE";
    p->update_status_reason.clear();
    out = std::move(*p);
    return OkStatus();
  }));
  return out;
}

Status CapacityProviders::TagResource(const Scope& scope, std::string_view name, const Tags& tags) {
  if (IsFargateProvider(name)) return ParamError(fmt::format(kReservedNote, "tagged"));
  RETURN_IF_ERROR(ValidateTags(tags));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, Load(txn, scope, name));
    if (!p) return NotFound(fmt::format("The specified resource is not found: {}", CapacityProviderArn(scope, name)),
                            ecs::Error::kResourceNotFound);
    return PutTags(txn, scope, p->arn, tags);
  });
}

Status CapacityProviders::UntagResource(const Scope& scope, std::string_view name,
                                        const std::vector<std::string>& keys) {
  if (IsFargateProvider(name)) return ParamError(fmt::format(kReservedNote, "tagged"));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, Load(txn, scope, name));
    if (!p) return NotFound(fmt::format("The specified resource is not found: {}", CapacityProviderArn(scope, name)),
                            ecs::Error::kResourceNotFound);
    return RemoveTags(txn, scope, p->arn, keys);
  });
}

StatusOr<Tags> CapacityProviders::ListTags(const Scope& scope, std::string_view name) {
  if (IsFargateProvider(name)) return Tags{};
  Tags out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, Load(txn, scope, name));
    if (!p) return NotFound(fmt::format("The specified resource is not found: {}", CapacityProviderArn(scope, name)),
                            ecs::Error::kResourceNotFound);
    ASSIGN_OR_RETURN(out, ReadTags(txn, scope, p->arn));
    return OkStatus();
  }));
  return out;
}

Status CapacityProviders::CheckAssociable(store::ReadTxn& txn, const Scope& scope, std::string_view cluster,
                                          std::string_view name) {
  if (IsFargateProvider(name)) return OkStatus();
  ASSIGN_OR_RETURN(auto p, Load(txn, scope, name));
  if (!p)
    return ParamError(fmt::format(
        "The specified capacity provider '{}' does not exist. Specify a valid capacity provider and try again.", name));
  ASSIGN_OR_RETURN(std::vector<std::string> clusters, ClustersOf(txn, scope, name));
  for (const auto& c : clusters)
    if (c != cluster)
      return ParamError(fmt::format(
          "The capacity provider '{}' is already associated with cluster '{}'. An Auto Scaling group capacity "
          "provider can be associated with one cluster only.",
          name, c));
  return OkStatus();
}

Status CapacityProviders::Associate(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                    const std::vector<std::string>& before, const std::vector<std::string>& after) {
  const std::set<std::string> keep(after.begin(), after.end());
  for (const auto& name : before)
    if (!IsFargateProvider(name) && !keep.count(name))
      RETURN_IF_ERROR(txn.Delete(kClusters, ScopeKey(scope).Str(name).Str(cluster).Done()));
  for (const auto& name : after)
    if (!IsFargateProvider(name)) RETURN_IF_ERROR(txn.Put(kClusters, ScopeKey(scope).Str(name).Str(cluster).Done(), ""));
  return OkStatus();
}

Status CapacityProviders::ReapAccount(const AccountId& account) {
  RETURN_IF_ERROR(ReapAccountRows(store_, kProviders, account));
  RETURN_IF_ERROR(ReapAccountRows(store_, kAsgs, account));
  return ReapAccountRows(store_, kClusters, account);
}

}  // namespace paddock::ecs::capacity
