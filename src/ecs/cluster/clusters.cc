#include "ecs/cluster/clusters.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <set>

#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "store/key.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::cluster {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kClusters = "clusters";
constexpr std::string_view kActive = "clusters_active";
constexpr std::string_view kTags = "tags";


std::string ClusterKey(const Scope& s, std::string_view name) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(name).Done();
}

bool IsClusterName(std::string_view s) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}


Status ValidateSettings(const json::array& settings) {
  for (const auto& s : settings) {
    const auto& o = s.as_object();
    auto name = o.find("name");
    if (name == o.end() || !name->value().is_string())
      return ParamError("A cluster setting must have a name. The supported name is containerInsights.");
    auto value = o.find("value");
    if (value == o.end() || !value->value().is_string()) continue;
    std::string_view v = value->value().get_string();
    if (v != "enabled" && v != "disabled" && v != "enhanced")
      return ParamError(fmt::format(
          "The value '{}' is not valid for the containerInsights setting. Valid values are enhanced, enabled and disabled.", v));
  }
  return OkStatus();
}

// Merges `updates` into `settings` by name.
void MergeSettings(json::array& settings, const json::array& updates) {
  for (const auto& u : updates) {
    const auto& uo = u.as_object();
    bool replaced = false;
    for (auto& s : settings) {
      const json::value* have = s.as_object().if_contains("name");
      const json::value* want = uo.if_contains("name");
      if (have != nullptr && want != nullptr && *have == *want) {
        s = uo;
        replaced = true;
      }
    }
    if (!replaced) settings.push_back(uo);
  }
}

// AWS reports every strategy item with its base and weight, defaulting both to 0.
json::array NormalizeStrategy(const json::array& strategy) {
  json::array out;
  for (const auto& item : strategy) {
    const auto& o = item.as_object();
    json::object n;
    n["capacityProvider"] = o.at("capacityProvider");
    n["weight"] = o.contains("weight") ? o.at("weight") : json::value(0);
    n["base"] = o.contains("base") ? o.at("base") : json::value(0);
    out.push_back(std::move(n));
  }
  return out;
}

// AWS's quota "Capacity providers per cluster".
constexpr size_t kMaxProvidersPerCluster = 20;

// The form of a cluster's providers and strategy. Whether a provider exists is checked in the
// changing transaction (Clusters::ChangeProviders); without an owner of capacity providers only
// the built-in FARGATE and FARGATE_SPOT exist.
Status ValidateCapacityProviders(const json::array& providers, const json::array& strategy, bool others_exist) {
  std::set<std::string> names;
  if (providers.size() > kMaxProvidersPerCluster)
    return ParamError("The maximum number of capacity providers per cluster has been exceeded.");
  for (const auto& p : providers) {
    std::string name(p.as_string());
    if (!others_exist && !capacity::IsFargateProvider(name))
      return ParamError(fmt::format(
          "The specified capacity provider '{}' does not exist. Specify a valid capacity provider and try again.", name));
    names.insert(name);
  }
  int with_base = 0;
  for (const auto& item : strategy) {
    const auto& o = item.as_object();
    std::string name(o.at("capacityProvider").as_string());
    if (!names.count(name))
      return ParamError(
          "The specified capacity provider strategy cannot contain a capacity provider that is not associated with the "
          "cluster. Associate the capacity provider with the cluster or specify a valid capacity provider and try "
          "again.");
    if (auto b = o.find("base"); b != o.end() && b->value().to_number<int64_t>() > 0) ++with_base;
  }
  if (with_base > 1)
    return ParamError("A base value can be set for only one capacity provider in a capacity provider strategy.");
  return OkStatus();
}

// The names in a cluster record's (or a request's) capacityProviders.
std::vector<std::string> Names(const json::value* providers) {
  std::vector<std::string> out;
  if (providers != nullptr && providers->is_array())
    for (const auto& p : providers->get_array())
      if (p.is_string()) out.emplace_back(p.get_string());
  return out;
}

}  // namespace

StatusOr<std::string> ClusterName(std::optional<std::string_view> ref, const Scope& caller, std::string_view action,
                                  std::string_view caller_arn) {
  if (!ref) return std::string("default");
  std::string_view text = *ref;
  if (text.substr(0, 4) == "arn:") {
    ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(text));
    if (r.kind != ResourceKind::kCluster) return ParamError("The ARN provided is invalid.");
    RETURN_IF_ERROR(CheckArnScope(r, caller, text, action, caller_arn));
    text = text.substr(text.find("cluster/") + 8);
  }
  if (!IsClusterName(text))
    return ParamError(fmt::format("Cluster must match ^[a-zA-Z0-9\\-_]{{1,255}}$, but was {}", text));
  return std::string(text);
}

Status Clusters::ChangeProviders(store::WriteTxn& txn, const Scope& scope, std::string_view cluster,
                                 const std::vector<std::string>& before, const std::vector<std::string>& after) {
  if (providers_ == nullptr) return OkStatus();
  for (const auto& name : after) RETURN_IF_ERROR(providers_->CheckAssociable(txn, scope, cluster, name));
  // "You can only disassociate an existing capacity provider from a cluster if it's not being
  // used by any existing tasks." (PutClusterCapacityProviders)
  for (const auto& name : before) {
    if (std::find(after.begin(), after.end(), name) != after.end()) continue;
    for (ClusterUsage* usage : usages_) {
      ASSIGN_OR_RETURN(bool used, usage->UsesCapacityProvider(txn, scope, cluster, name));
      if (used)
        return FailedPrecondition("The specified capacity provider is in use and cannot be removed.",
                                  ecs::Error::kResourceInUse);
    }
  }
  return providers_->Associate(txn, scope, cluster, before, after);
}

StatusOr<std::string> Clusters::Create(const Scope& scope, const json::object& input, std::string_view caller_arn) {
  std::string name = "default";
  if (auto it = input.find("clusterName"); it != input.end()) name = std::string(it->value().as_string());
  if (!IsClusterName(name))
    return ParamError(fmt::format(
        "Cluster name '{}' is invalid. Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed.",
        name));
  Tags tags;
  if (auto it = input.find("tags"); it != input.end()) {
    for (const auto& t : it->value().as_array()) {
      // The model makes both members optional: a missing key is "" and fails ValidateTags.
      const auto& o = t.as_object();
      auto text = [&](std::string_view member) {
        const json::value* v = o.if_contains(member);
        return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
      };
      tags.push_back(Tag{text("key"), text("value")});
    }
    RETURN_IF_ERROR(ValidateTags(tags));
  }
  json::array settings{json::object{{"name", "containerInsights"}, {"value", "disabled"}}};
  if (auto it = input.find("settings"); it != input.end()) {
    RETURN_IF_ERROR(ValidateSettings(it->value().as_array()));
    MergeSettings(settings, it->value().as_array());
  }
  // Without its own containerInsights setting a cluster takes the account setting's.
  bool insights_given = false;
  if (auto it = input.find("settings"); it != input.end())
    for (const auto& st : it->value().as_array())
      if (const json::value* n = st.as_object().if_contains("name"); n != nullptr && *n == "containerInsights")
        insights_given = st.as_object().contains("value");
  json::array providers, strategy;
  if (auto it = input.find("capacityProviders"); it != input.end()) providers = it->value().as_array();
  if (auto it = input.find("defaultCapacityProviderStrategy"); it != input.end())
    strategy = NormalizeStrategy(it->value().as_array());
  RETURN_IF_ERROR(ValidateCapacityProviders(providers, strategy, providers_ != nullptr));

  const std::string arn = ClusterArn(scope, name);
  json::object record;
  record["clusterArn"] = arn;
  record["clusterName"] = name;
  if (auto it = input.find("configuration"); it != input.end()) record["configuration"] = it->value();
  record["status"] = "ACTIVE";
  record["settings"] = std::move(settings);
  record["capacityProviders"] = std::move(providers);
  record["defaultCapacityProviderStrategy"] = std::move(strategy);
  if (auto it = input.find("serviceConnectDefaults"); it != input.end()) record["serviceConnectDefaults"] = it->value();

  std::string out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto existing, txn.Get(kClusters, ClusterKey(scope, name)));
    Tags current_tags = tags;
    if (existing) {
      ASSIGN_OR_RETURN(json::object old, ParseRecordObject(*existing, "cluster"));
      if (old.at("status") == "ACTIVE") {  // AWS returns the existing cluster unchanged
        ASSIGN_OR_RETURN(current_tags, ReadTags(txn, scope, arn));
        record = std::move(old);
      } else {
        RETURN_IF_ERROR(RemoveAllTags(txn, scope, arn));  // a re-created cluster starts afresh
        existing.reset();
      }
    }
    if (!existing) {
      if (settings_ != nullptr && !insights_given) {
        ASSIGN_OR_RETURN(setting::Setting insights,
                         settings_->Effective(txn, scope, caller_arn, setting::SettingName::kContainerInsights));
        record["settings"] = json::array{json::object{{"name", "containerInsights"}, {"value", insights.value}}};
      }
      RETURN_IF_ERROR(ChangeProviders(txn, scope, name, {}, Names(record.if_contains("capacityProviders"))));
      RETURN_IF_ERROR(txn.Put(kClusters, ClusterKey(scope, name), json::serialize(record)));
      RETURN_IF_ERROR(txn.Put(kActive, ClusterKey(scope, name), ""));
      RETURN_IF_ERROR(PutTags(txn, scope, arn, tags));
    }
    json::object shown = record;
    shown["registeredContainerInstancesCount"] = 0;
    shown["runningTasksCount"] = 0;
    shown["pendingTasksCount"] = 0;
    shown["activeServicesCount"] = 0;
    shown["statistics"] = json::array();
    json::array tag_array;
    for (const auto& t : current_tags) tag_array.push_back(json::object{{"key", t.key}, {"value", t.value}});
    shown["tags"] = std::move(tag_array);
    out = json::serialize(shown);
    return OkStatus();
  }));
  return out;
}

StatusOr<DescribeResult> Clusters::Describe(const Scope& scope, const std::vector<std::string>& names,
                                            const Include& include) {
  DescribeResult result;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) { return DescribeIn(txn, scope, names, include, result); }));
  return result;
}

StatusOr<std::optional<ClusterFacts>> Clusters::Facts(const Scope& scope, std::string_view name) {
  std::optional<ClusterFacts> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return OkStatus();
    ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "cluster"));
    ClusterFacts& f = out.emplace();
    f.arn = ClusterArn(scope, name);
    if (auto* s = record.if_contains("status"); s != nullptr && s->is_string()) f.status = std::string(s->get_string());
    f.capacity_providers = Names(record.if_contains("capacityProviders"));
    if (auto* d = record.if_contains("defaultCapacityProviderStrategy"); d != nullptr && d->is_array())
      f.default_strategy = d->get_array();
    return OkStatus();
  }));
  return out;
}

Status Clusters::DescribeIn(store::ReadTxn& txn, const Scope& scope, const std::vector<std::string>& names,
                            const Include& include, DescribeResult& result) {
  {
    for (const auto& name : names) {
      ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
      if (!text) {
        result.missing.push_back(ClusterArn(scope, name));
        continue;
      }
      ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "cluster"));
      ClusterUsage::Counts counts;
      for (ClusterUsage* usage : usages_) {
        ASSIGN_OR_RETURN(ClusterUsage::Counts c, usage->Count(txn, scope, name));
        counts.registered_container_instances += c.registered_container_instances;
        counts.running_tasks += c.running_tasks;
        counts.pending_tasks += c.pending_tasks;
        counts.running_ec2_tasks += c.running_ec2_tasks;
        counts.pending_ec2_tasks += c.pending_ec2_tasks;
        counts.active_services += c.active_services;
        counts.draining_services += c.draining_services;
      }
      json::object shown;
      shown["clusterArn"] = record["clusterArn"];
      shown["clusterName"] = record["clusterName"];
      if (include.configurations && record.contains("configuration")) shown["configuration"] = record["configuration"];
      shown["status"] = record["status"];
      shown["registeredContainerInstancesCount"] = counts.registered_container_instances;
      shown["runningTasksCount"] = counts.running_tasks;
      shown["pendingTasksCount"] = counts.pending_tasks;
      shown["activeServicesCount"] = counts.active_services;
      json::array stats;
      if (include.statistics) {
        auto stat = [&](const char* n, int64_t v) { stats.push_back(json::object{{"name", n}, {"value", std::to_string(v)}}); };
        stat("runningEC2TasksCount", counts.running_ec2_tasks);
        stat("runningFargateTasksCount", counts.running_tasks - counts.running_ec2_tasks);
        stat("pendingEC2TasksCount", counts.pending_ec2_tasks);
        stat("pendingFargateTasksCount", counts.pending_tasks - counts.pending_ec2_tasks);
        stat("runningExternalTasksCount", 0);
        stat("pendingExternalTasksCount", 0);
        stat("activeEC2ServiceCount", 0);
        stat("activeFargateServiceCount", counts.active_services);
        stat("drainingEC2ServiceCount", 0);
        stat("drainingFargateServiceCount", counts.draining_services);
        stat("activeExternalServiceCount", 0);
        stat("drainingExternalServiceCount", 0);
      }
      shown["statistics"] = std::move(stats);
      json::array tag_array;
      if (include.tags) {
        ASSIGN_OR_RETURN(Tags tags, ReadTags(txn, scope, std::string(record["clusterArn"].as_string())));
        for (const auto& t : tags) tag_array.push_back(json::object{{"key", t.key}, {"value", t.value}});
      }
      shown["tags"] = std::move(tag_array);
      shown["settings"] = include.settings ? record["settings"] : json::array();
      shown["capacityProviders"] = record["capacityProviders"];
      shown["defaultCapacityProviderStrategy"] = record["defaultCapacityProviderStrategy"];
      if (include.attachments) shown["attachments"] = json::array();
      if (record.contains("serviceConnectDefaults")) shown["serviceConnectDefaults"] = record["serviceConnectDefaults"];
      result.clusters.push_back(json::serialize(shown));
    }
    return OkStatus();
  }
}

StatusOr<Page> Clusters::List(const Scope& scope, size_t limit, const std::string& after) {
  store::Range range = store::PrefixRange(Key().Str(scope.account.str()).Str(scope.region.str()).Done());
  if (!after.empty()) range.begin = store::KeySuccessor(after);
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kActive, range, limit + 1));
    bool more = rows.size() > limit;
    if (more) rows.pop_back();
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      ASSIGN_OR_RETURN(std::string account, r.Str());
      ASSIGN_OR_RETURN(std::string region, r.Str());
      ASSIGN_OR_RETURN(std::string name, r.Str());
      page.arns.push_back(ClusterArn(scope, name));
    }
    if (more) page.next = rows.back().key;
    return OkStatus();
  }));
  return page;
}

StatusOr<std::string> Clusters::Mutate(const Scope& scope, std::string_view name,
                                       const std::function<Status(store::WriteTxn&, json::object&)>& change) {
  std::string out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return ClusterNotFoundError();
    ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "cluster"));
    RETURN_IF_ERROR(change(txn, record));
    std::string serialized = json::serialize(record);
    if (serialized != *text) RETURN_IF_ERROR(txn.Put(kClusters, ClusterKey(scope, name), serialized));
    return DescribeChanged(txn, scope, name, out);
  }));
  return out;
}

// The answer of a cluster-changing action: the cluster as DescribeClusters shows it with
// CONFIGURATIONS and SETTINGS, read in the changing transaction itself.
Status Clusters::DescribeChanged(store::ReadTxn& txn, const Scope& scope, std::string_view name, std::string& out) {
  DescribeResult d;
  RETURN_IF_ERROR(DescribeIn(txn, scope, {std::string(name)}, Include{false, true, true, false, false}, d));
  if (d.clusters.empty()) return ClusterNotFoundError();
  out = std::move(d.clusters.front());
  return OkStatus();
}

StatusOr<std::string> Clusters::Delete(const Scope& scope, std::string_view name) {
  std::string out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return ClusterNotFoundError();
    ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "cluster"));
    if (record.at("status") != "ACTIVE") return DescribeChanged(txn, scope, name, out);  // a repeat returns it again
    // The check and the status change share one transaction, so nothing lands in between.
    for (ClusterUsage* usage : usages_) {
      ASSIGN_OR_RETURN(ClusterUsage::Counts c, usage->Count(txn, scope, name));
      if (c.active_services + c.draining_services > 0)
        return FailedPrecondition("The Cluster cannot be deleted while Services are active.",
                                  ecs::Error::kClusterContainsServices);
      if (c.running_tasks + c.pending_tasks > 0)
        return FailedPrecondition("The Cluster cannot be deleted while Tasks are active.", ecs::Error::kClusterContainsTasks);
      if (c.registered_container_instances > 0)
        return FailedPrecondition("The Cluster cannot be deleted while Container Instances are active or draining.",
                                  ecs::Error::kClusterContainsContainerInstances);
    }
    record["status"] = "INACTIVE";
    // Deleting a cluster disassociates its capacity providers (DeleteCapacityProvider's note).
    if (providers_ != nullptr)
      RETURN_IF_ERROR(providers_->Associate(txn, scope, name, Names(record.if_contains("capacityProviders")), {}));
    RETURN_IF_ERROR(txn.Delete(kActive, ClusterKey(scope, name)));
    RETURN_IF_ERROR(txn.Put(kClusters, ClusterKey(scope, name), json::serialize(record)));
    return DescribeChanged(txn, scope, name, out);
  }));
  return out;
}

StatusOr<std::string> Clusters::Update(const Scope& scope, std::string_view name, const json::object& input) {
  if (auto it = input.find("settings"); it != input.end()) RETURN_IF_ERROR(ValidateSettings(it->value().as_array()));
  return Mutate(scope, name, [&](store::WriteTxn&, json::object& record) -> Status {
    if (record.at("status") != "ACTIVE") return ClusterNotFoundError();
    if (auto it = input.find("settings"); it != input.end()) MergeSettings(record["settings"].as_array(), it->value().as_array());
    if (auto it = input.find("configuration"); it != input.end()) record["configuration"] = it->value();
    if (auto it = input.find("serviceConnectDefaults"); it != input.end()) record["serviceConnectDefaults"] = it->value();
    return OkStatus();
  });
}

StatusOr<std::string> Clusters::UpdateSettings(const Scope& scope, std::string_view name, const json::array& settings) {
  RETURN_IF_ERROR(ValidateSettings(settings));
  return Mutate(scope, name, [&](store::WriteTxn&, json::object& record) -> Status {
    if (record.at("status") != "ACTIVE") return ClusterNotFoundError();
    MergeSettings(record["settings"].as_array(), settings);
    return OkStatus();
  });
}

StatusOr<std::string> Clusters::PutCapacityProviders(const Scope& scope, std::string_view name,
                                                     const json::array& providers, const json::array& strategy) {
  RETURN_IF_ERROR(ValidateCapacityProviders(providers, strategy, providers_ != nullptr));
  return Mutate(scope, name, [&](store::WriteTxn& txn, json::object& record) -> Status {
    if (record.at("status") != "ACTIVE") return ClusterNotFoundError();
    const json::value providers_value(providers);
    RETURN_IF_ERROR(ChangeProviders(txn, scope, name, Names(record.if_contains("capacityProviders")),
                                    Names(&providers_value)));
    record["capacityProviders"] = providers;
    record["defaultCapacityProviderStrategy"] = NormalizeStrategy(strategy);
    return OkStatus();
  });
}

Status Clusters::CheckActive(store::ReadTxn& txn, const Scope& scope, std::string_view name) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
  if (!text) return ClusterNotFoundError();
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "cluster"));
  if (record.at("status") != "ACTIVE") return ClusterNotFoundError();
  return OkStatus();
}

StatusOr<Clusters::LaunchSettings> Clusters::ForLaunch(const Scope& scope, std::string_view name) {
  LaunchSettings out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return ClusterNotFoundError();
    ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "cluster"));
    if (record.at("status") != "ACTIVE") return ClusterNotFoundError();
    if (auto it = record.find("capacityProviders"); it != record.end() && it->value().is_array())
      for (const auto& p : it->value().get_array())
        if (p.is_string()) out.capacity_providers.emplace_back(p.get_string());
    if (auto it = record.find("defaultCapacityProviderStrategy"); it != record.end() && it->value().is_array())
      for (const auto& item : it->value().get_array())
        if (item.is_object())
          if (auto p = item.get_object().find("capacityProvider"); p != item.get_object().end() && p->value().is_string())
            out.default_strategy.emplace_back(p->value().get_string());
    return OkStatus();
  }));
  return out;
}

Status Clusters::CheckExists(const Scope& scope, std::string_view name) {
  return store_.Read([&](store::ReadTxn& txn) { return CheckExists(txn, scope, name); });
}

Status Clusters::CheckExists(store::ReadTxn& txn, const Scope& scope, std::string_view name) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
  return text ? OkStatus() : ClusterNotFoundError();
}

Status Clusters::TagResource(const Scope& scope, std::string_view name, const Tags& tags) {
  RETURN_IF_ERROR(ValidateTags(tags));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return ClusterNotFoundError();
    return PutTags(txn, scope, ClusterArn(scope, name), tags);
  });
}

Status Clusters::UntagResource(const Scope& scope, std::string_view name, const std::vector<std::string>& keys) {
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return ClusterNotFoundError();
    return RemoveTags(txn, scope, ClusterArn(scope, name), keys);
  });
}

StatusOr<Tags> Clusters::ListTags(const Scope& scope, std::string_view name) {
  Tags out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kClusters, ClusterKey(scope, name)));
    if (!text) return ClusterNotFoundError();
    ASSIGN_OR_RETURN(out, ReadTags(txn, scope, ClusterArn(scope, name)));
    return OkStatus();
  }));
  return out;
}

Status Clusters::ReapAccount(const AccountId& account) {
  RETURN_IF_ERROR(ReapAccountRows(store_, kClusters, account));
  RETURN_IF_ERROR(ReapAccountRows(store_, kActive, account));
  // Tags of every ECS resource of the account go with it; the tags table is keyed by account.
  return ReapAccountRows(store_, kTags, account);
}

}  // namespace paddock::ecs::cluster
