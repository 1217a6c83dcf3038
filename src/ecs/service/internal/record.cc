#include "ecs/service/internal/record.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <mutex>
#include <unordered_map>

#include "common/json_fields.h"
#include "ecs/common/records.h"
#include "ecs/common/tags.h"
#include "store/key.h"

namespace paddock::ecs::service::internal {
namespace json = boost::json;
using json_fields::OptArray;
using json_fields::OptObject;
using json_fields::Str;

namespace {

int64_t IntOr(const json::object& o, std::string_view key, int64_t def = 0) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_number()) ? it->value().to_number<int64_t>() : def;
}
bool BoolOr(const json::object& o, std::string_view key, bool def = false) {
  auto it = o.find(key);
  return (it != o.end() && it->value().is_bool()) ? it->value().get_bool() : def;
}

// "arn:aws:ecs:R:A:service/C/N" -> "arn:aws:ecs:R:A:<kind>/C/N/<id>".
std::string ChildArnOf(std::string_view service_arn, std::string_view kind, std::string_view id) {
  size_t p = service_arn.find(":service/");
  if (p == std::string_view::npos) return std::string();
  return fmt::format("{}:{}/{}/{}", service_arn.substr(0, p), kind, service_arn.substr(p + 9), id);
}

// "arn:...:task-definition/family:rev" -> (family, rev).
std::optional<std::pair<std::string, uint64_t>> FamilyRevision(std::string_view arn) {
  size_t slash = arn.rfind('/');
  size_t colon = arn.rfind(':');
  if (slash == std::string_view::npos || colon == std::string_view::npos || colon < slash) return std::nullopt;
  uint64_t rev = 0;
  std::string_view digits = arn.substr(colon + 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rev);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return std::make_pair(std::string(arn.substr(slash + 1, colon - slash - 1)), rev);
}

std::string StatusKey(const Scope& s, std::string_view cluster, std::string_view status, std::string_view name) {
  return ScopeKey(s).Str(cluster).Str(status).Str(name).Done();
}
std::string InactiveKey(const Scope& s, int64_t ms, std::string_view cluster, std::string_view name) {
  return ScopeKey(s).U64(static_cast<uint64_t>(ms)).Str(cluster).Str(name).Done();
}
std::string RefKey(const Scope& s, const std::pair<std::string, uint64_t>& rev, std::string_view cluster,
                   std::string_view name) {
  return ScopeKey(s).Str(rev.first).U64(rev.second).Str(cluster).Str(name).Done();
}

}  // namespace

std::string ServiceArn(const Scope& scope, std::string_view cluster, std::string_view name) {
  return fmt::format("arn:aws:ecs:{}:{}:service/{}/{}", scope.region.str(), scope.account.str(), cluster, name);
}
std::string ServiceDeploymentArn(const Scope& scope, std::string_view cluster, std::string_view service,
                                 std::string_view id) {
  return fmt::format("arn:aws:ecs:{}:{}:service-deployment/{}/{}/{}", scope.region.str(), scope.account.str(), cluster,
                     service, id);
}
std::string ServiceRevisionArn(const Scope& scope, std::string_view cluster, std::string_view service,
                               std::string_view id) {
  return fmt::format("arn:aws:ecs:{}:{}:service-revision/{}/{}/{}", scope.region.str(), scope.account.str(), cluster,
                     service, id);
}

std::string RecordKey(const Scope& s, std::string_view cluster, std::string_view name) {
  return ScopeKey(s).Str(cluster).Str(name).Done();
}
std::string ChildKey(const Scope& s, std::string_view cluster, std::string_view service, std::string_view id) {
  return ScopeKey(s).Str(cluster).Str(service).Str(id).Done();
}

int64_t Ms(TimePoint t) { return EpochMillis(t); }
double Seconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

json::object EncodeLaunch(const LaunchConfig& l) {
  json::object o;
  if (l.launch_type) o["launchType"] = *l.launch_type;
  if (l.capacity_provider_strategy) o["capacityProviderStrategy"] = *l.capacity_provider_strategy;
  if (l.platform_version) o["platformVersion"] = *l.platform_version;
  if (l.network_configuration) o["networkConfiguration"] = *l.network_configuration;
  return o;
}

LaunchConfig DecodeLaunch(const json::object& o) {
  LaunchConfig l;
  l.launch_type = json_fields::OptStr(o, "launchType");
  l.capacity_provider_strategy = OptArray(o, "capacityProviderStrategy");
  l.platform_version = json_fields::OptStr(o, "platformVersion");
  l.network_configuration = OptObject(o, "networkConfiguration");
  return l;
}

json::object EncodeDeployment(const Deployment& d) {
  json::object o = EncodeLaunch(d.launch);
  o["id"] = d.id;
  o["status"] = d.status;
  o["taskDefinition"] = d.task_definition;
  o["desiredCount"] = d.desired_count;
  o["pendingCount"] = d.pending_count;
  o["runningCount"] = d.running_count;
  o["failedTasks"] = d.failed_tasks;
  o["rolloutState"] = d.rollout_state;
  o["rolloutStateReason"] = d.rollout_state_reason;
  o["createdAtMs"] = Ms(d.created_at);
  o["updatedAtMs"] = Ms(d.updated_at);
  o["serviceDeploymentId"] = d.service_deployment_id;
  o["serviceRevisionId"] = d.service_revision_id;
  o["scalePercent"] = d.scale_percent;
  o["externalId"] = d.external_id;
  o["stabilityStatus"] = d.stability_status;
  o["stabilityStatusAtMs"] = Ms(d.stability_status_at);
  o["rollbackRequested"] = d.rollback_requested;
  o["breakerResetAtMs"] = Ms(d.breaker_reset_at);
  o["breakerUnobserved"] = d.breaker_unobserved;
  o["launchFailures"] = d.launch_failures;
  o["nextLaunchAtMs"] = Ms(d.next_launch_at);
  if (!d.definition_constraints.empty()) o["definitionPlacementConstraints"] = d.definition_constraints;
  if (!d.instance_backoffs.empty()) {
    json::array backoffs;
    for (const auto& b : d.instance_backoffs)
      backoffs.push_back(json::object{{"instanceArn", b.instance_arn},
                                      {"failures", b.failures},
                                      {"failedAtMs", Ms(b.failed_at)},
                                      {"nextLaunchAtMs", Ms(b.next_launch_at)}});
    o["instanceBackoffs"] = std::move(backoffs);
  }
  return o;
}

Deployment DecodeDeployment(const json::object& o) {
  Deployment d;
  d.launch = DecodeLaunch(o);
  d.id = Str(o, "id");
  d.status = Str(o, "status");
  d.task_definition = Str(o, "taskDefinition");
  d.desired_count = IntOr(o, "desiredCount");
  d.pending_count = IntOr(o, "pendingCount");
  d.running_count = IntOr(o, "runningCount");
  d.failed_tasks = IntOr(o, "failedTasks");
  d.rollout_state = Str(o, "rolloutState");
  d.rollout_state_reason = Str(o, "rolloutStateReason");
  d.created_at = FromEpochMillis(IntOr(o, "createdAtMs"));
  d.updated_at = FromEpochMillis(IntOr(o, "updatedAtMs"));
  d.service_deployment_id = Str(o, "serviceDeploymentId");
  d.service_revision_id = Str(o, "serviceRevisionId");
  if (auto it = o.find("scalePercent"); it != o.end() && it->value().is_number())
    d.scale_percent = it->value().to_number<double>();
  d.external_id = Str(o, "externalId");
  d.stability_status = Str(o, "stabilityStatus");
  d.stability_status_at = FromEpochMillis(IntOr(o, "stabilityStatusAtMs"));
  d.rollback_requested = BoolOr(o, "rollbackRequested");
  d.breaker_reset_at = FromEpochMillis(IntOr(o, "breakerResetAtMs"));
  d.breaker_unobserved = IntOr(o, "breakerUnobserved");
  d.launch_failures = IntOr(o, "launchFailures");
  d.next_launch_at = FromEpochMillis(IntOr(o, "nextLaunchAtMs"));
  if (auto it = o.find("definitionPlacementConstraints"); it != o.end() && it->value().is_array())
    d.definition_constraints = it->value().get_array();
  for (const json::object* b : json_fields::Objects(o, "instanceBackoffs"))
    d.instance_backoffs.push_back(InstanceBackoff{.instance_arn = Str(*b, "instanceArn"),
                                                  .failures = IntOr(*b, "failures"),
                                                  .failed_at = FromEpochMillis(IntOr(*b, "failedAtMs")),
                                                  .next_launch_at = FromEpochMillis(IntOr(*b, "nextLaunchAtMs"))});
  return d;
}

ServiceState StateFromRecord(const ServiceKey& key, const json::object& record, Tags tags) {
  ServiceState s;
  s.key = key;
  s.arn = Str(record, "serviceArn");
  s.status = Str(record, "status");
  s.scheduling_strategy = Str(record, "schedulingStrategy");
  s.controller = Str(json_fields::Obj(record, "deploymentController"), "type");
  if (s.controller.empty()) s.controller = "ECS";
  s.desired_count = IntOr(record, "desiredCount");
  const json::object& dc = json_fields::Obj(record, "deploymentConfiguration");
  s.minimum_healthy_percent = IntOr(dc, "minimumHealthyPercent", 100);
  s.maximum_percent = IntOr(dc, "maximumPercent", 200);
  // Stored as validated (Services), so it parses; a record that somehow does not keeps the defaults.
  const StatusOr<CircuitBreakerSettings> parsed = ParseCircuitBreaker(json_fields::Obj(dc, "deploymentCircuitBreaker"));
  const CircuitBreakerSettings cb = parsed.ok() ? *parsed : CircuitBreakerSettings{};
  s.circuit_breaker = cb.enable;
  s.rollback = cb.rollback;
  s.reset_on_healthy_task = cb.reset_on_healthy_task;
  s.failure_threshold = cb.threshold;
  s.health_check_grace_seconds = IntOr(record, "healthCheckGracePeriodSeconds");
  s.placement_constraints = OptArray(record, "placementConstraints");
  s.placement_strategy = OptArray(record, "placementStrategy");
  for (const json::object* reg : json_fields::Objects(record, "serviceRegistries")) {
    // Onto the heap: `record` may live in the caller's stack arena (Services::StateOf).
    s.service_registry.emplace(*reg, json::storage_ptr());
    break;
  }
  s.propagate_tags = Str(record, "propagateTags");
  if (s.propagate_tags.empty()) s.propagate_tags = "NONE";
  s.enable_ecs_managed_tags = BoolOr(record, "enableECSManagedTags");
  s.enable_execute_command = BoolOr(record, "enableExecuteCommand");
  s.tags = std::move(tags);
  for (const json::object* d : json_fields::Objects(record, "deployments")) s.deployments.push_back(DecodeDeployment(*d));
  if (auto it = record.find("lastCompleted"); it != record.end() && it->value().is_object())
    s.last_completed = DecodeDeployment(it->value().get_object());
  if (auto events = json_fields::Objects(record, "events"); !events.empty())
    s.newest_event = Event{Str(*events[0], "id"), FromEpochMillis(IntOr(*events[0], "createdAtMs")),
                           Str(*events[0], "message")};
  s.version = static_cast<uint64_t>(IntOr(record, "version"));
  return s;
}

namespace {

// The launch members a Deployment and a TaskSet render alike: a strategy or a launch type, the
// platform (Linux whenever a version is set) and the network configuration.
void RenderLaunch(const LaunchConfig& l, json::object& o) {
  if (l.capacity_provider_strategy && !l.capacity_provider_strategy->empty()) {
    o["capacityProviderStrategy"] = *l.capacity_provider_strategy;
  } else if (l.launch_type) {
    o["launchType"] = *l.launch_type;
  }
  if (l.platform_version) {
    o["platformVersion"] = *l.platform_version;
    o["platformFamily"] = "Linux";
  }
  if (l.network_configuration) o["networkConfiguration"] = *l.network_configuration;
}

}  // namespace

json::object RenderDeployment(const Deployment& d, bool ecs_controller) {
  json::object o;
  o["id"] = d.id;
  o["status"] = d.status;
  o["taskDefinition"] = d.task_definition;
  o["desiredCount"] = d.desired_count;
  o["pendingCount"] = d.pending_count;
  o["runningCount"] = d.running_count;
  o["failedTasks"] = d.failed_tasks;
  o["createdAt"] = Seconds(Ms(d.created_at));
  o["updatedAt"] = Seconds(Ms(d.updated_at));
  RenderLaunch(d.launch, o);
  if (ecs_controller && !d.rollout_state.empty()) {
    o["rolloutState"] = d.rollout_state;
    o["rolloutStateReason"] = d.rollout_state_reason;
  }
  return o;
}

json::object RenderTaskSet(const json::object& record, const Deployment& d) {
  json::object o;
  o["id"] = d.id;
  o["taskSetArn"] = ChildArnOf(Str(record, "serviceArn"), "task-set", d.id);
  o["serviceArn"] = Str(record, "serviceArn");
  o["clusterArn"] = Str(record, "clusterArn");
  if (!d.external_id.empty()) o["externalId"] = d.external_id;
  o["status"] = d.status;
  o["taskDefinition"] = d.task_definition;
  o["computedDesiredCount"] = d.desired_count;
  o["pendingCount"] = d.pending_count;
  o["runningCount"] = d.running_count;
  o["createdAt"] = Seconds(Ms(d.created_at));
  o["updatedAt"] = Seconds(Ms(d.updated_at));
  RenderLaunch(d.launch, o);
  // A set's loadBalancers and serviceRegistries: the record's taskSetExtras (task_sets.cc).
  const json::object& extras = json_fields::Obj(json_fields::Obj(record, "taskSetExtras"), d.id);
  o["loadBalancers"] = OptArray(extras, "loadBalancers").value_or(json::array());
  o["serviceRegistries"] = OptArray(extras, "serviceRegistries").value_or(json::array());
  o["scale"] = json::object{{"value", d.scale_percent}, {"unit", "PERCENT"}};
  o["stabilityStatus"] = d.stability_status.empty() ? std::string("STABILIZING") : d.stability_status;
  o["stabilityStatusAt"] = Seconds(Ms(d.stability_status_at));
  return o;
}

json::object RenderService(const json::object& record, const Tags* tags) {
  const std::string controller = [&] {
    std::string c = Str(json_fields::Obj(record, "deploymentController"), "type");
    return c.empty() ? std::string("ECS") : c;
  }();
  const bool ecs_controller = controller == "ECS";
  std::vector<Deployment> deployments;
  for (const json::object* d : json_fields::Objects(record, "deployments")) deployments.push_back(DecodeDeployment(*d));
  const Deployment* primary = nullptr;
  for (const auto& d : deployments)
    if (d.status == "PRIMARY" && primary == nullptr) primary = &d;

  json::object o;
  const std::string service_arn = Str(record, "serviceArn");
  o["serviceArn"] = service_arn;
  o["serviceName"] = record.at("serviceName");
  o["clusterArn"] = record.at("clusterArn");
  o["loadBalancers"] = OptArray(record, "loadBalancers").value_or(json::array());
  o["serviceRegistries"] = OptArray(record, "serviceRegistries").value_or(json::array());
  o["status"] = record.at("status");
  o["desiredCount"] = IntOr(record, "desiredCount");
  int64_t running = 0, pending = 0;
  for (const auto& d : deployments) {
    running += d.running_count;
    pending += d.pending_count;
  }
  o["runningCount"] = running;
  o["pendingCount"] = pending;
  if (auto cps = OptArray(record, "capacityProviderStrategy"); cps && !cps->empty())
    o["capacityProviderStrategy"] = *cps;
  else if (auto lt = json_fields::OptStr(record, "launchType"))
    o["launchType"] = *lt;
  if (auto pv = json_fields::OptStr(record, "platformVersion")) {
    o["platformVersion"] = *pv;
    o["platformFamily"] = "Linux";
  }
  {
    // The ECS controller's PRIMARY deployment; an EXTERNAL service's primary task set (AWS:
    // DescribeServices "returns all fields specified for a primary task set").
    std::string td = primary != nullptr ? primary->task_definition : Str(record, "taskDefinition");
    if (!td.empty()) o["taskDefinition"] = td;
  }
  if (auto dc = OptObject(record, "deploymentConfiguration")) o["deploymentConfiguration"] = *dc;
  json::array rendered;
  json::array task_sets;
  if (ecs_controller) {
    if (primary != nullptr) rendered.push_back(RenderDeployment(*primary, true));
    for (const auto& d : deployments)
      if (&d != primary) rendered.push_back(RenderDeployment(d, true));
  } else {
    for (const auto& d : deployments) task_sets.push_back(RenderTaskSet(record, d));
  }
  if (!ecs_controller) o["taskSets"] = std::move(task_sets);
  o["deployments"] = std::move(rendered);
  if (auto role = json_fields::OptStr(record, "roleArn")) o["roleArn"] = *role;
  json::array events;
  for (const json::object* e : json_fields::Objects(record, "events"))
    events.push_back(json::object{{"id", Str(*e, "id")},
                                  {"createdAt", Seconds(IntOr(*e, "createdAtMs"))},
                                  {"message", Str(*e, "message")}});
  o["events"] = std::move(events);
  o["createdAt"] = Seconds(IntOr(record, "createdAtMs"));
  o["placementConstraints"] = OptArray(record, "placementConstraints").value_or(json::array());
  o["placementStrategy"] = OptArray(record, "placementStrategy").value_or(json::array());
  if (auto nc = OptObject(record, "networkConfiguration")) o["networkConfiguration"] = *nc;
  if (auto it = record.find("healthCheckGracePeriodSeconds"); it != record.end() && it->value().is_number())
    o["healthCheckGracePeriodSeconds"] = it->value();
  o["schedulingStrategy"] = record.at("schedulingStrategy");
  o["deploymentController"] = json::object{{"type", controller}};
  if (tags != nullptr) {
    json::array t;
    for (const auto& tag : *tags) t.push_back(json::object{{"key", tag.key}, {"value", tag.value}});
    o["tags"] = std::move(t);
  }
  o["createdBy"] = Str(record, "createdBy");
  o["enableECSManagedTags"] = BoolOr(record, "enableECSManagedTags");
  o["propagateTags"] = Str(record, "propagateTags").empty() ? std::string("NONE") : Str(record, "propagateTags");
  o["enableExecuteCommand"] = BoolOr(record, "enableExecuteCommand");
  if (auto az = json_fields::OptStr(record, "availabilityZoneRebalancing")) o["availabilityZoneRebalancing"] = *az;
  if (ecs_controller && primary != nullptr && !primary->service_deployment_id.empty())
    o["currentServiceDeployment"] = ChildArnOf(service_arn, "service-deployment", primary->service_deployment_id);
  if (ecs_controller) {
    json::array revisions;
    for (const auto& d : deployments) {
      if (d.service_revision_id.empty()) continue;
      revisions.push_back(json::object{{"arn", ChildArnOf(service_arn, "service-revision", d.service_revision_id)},
                                       {"requestedTaskCount", d.desired_count},
                                       {"runningTaskCount", d.running_count},
                                       {"pendingTaskCount", d.pending_count}});
    }
    if (!revisions.empty()) o["currentServiceRevisions"] = std::move(revisions);
  }
  o["resourceManagementType"] = "CUSTOMER";
  return o;
}

std::set<std::pair<std::string, uint64_t>> RevisionsOf(const json::object& record) {
  std::set<std::pair<std::string, uint64_t>> out;
  auto add = [&](const json::object& d) {
    if (auto fr = FamilyRevision(Str(d, "taskDefinition"))) out.insert(*fr);
  };
  for (const json::object* d : json_fields::Objects(record, "deployments")) add(*d);
  if (auto lc = OptObject(record, "lastCompleted")) add(*lc);
  return out;
}

StatusOr<std::optional<json::object>> LoadRecord(store::ReadTxn& txn, const Scope& s, std::string_view cluster,
                                                 std::string_view name) {
  ASSIGN_OR_RETURN(auto text, txn.Get(kServices, RecordKey(s, cluster, name)));
  if (!text) return std::optional<json::object>();
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "service"));
  return std::optional<json::object>(std::move(record));
}

StatusOr<std::optional<std::string>> LoadRenderedService(store::ReadTxn& txn, const Scope& s, std::string_view cluster,
                                                         std::string_view name) {
  // Record bytes -> their rendering. Emptied when full: simpler than an LRU, and a steady set of
  // services polled by deployers fills it again within one round of describes.
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> rendered;  // GUARDED_BY(mu)
  static size_t kept_bytes = 0;                                   // GUARDED_BY(mu): keys and values
  ASSIGN_OR_RETURN(auto text, txn.Get(kServices, RecordKey(s, cluster, name)));
  if (!text) return std::optional<std::string>();
  {
    std::lock_guard lock(mu);
    if (auto it = rendered.find(*text); it != rendered.end()) return std::optional<std::string>(it->second);
  }
  ASSIGN_OR_RETURN(json::object record, ParseRecordObject(*text, "service"));
  std::string out = json::serialize(RenderService(record, nullptr));
  std::lock_guard lock(mu);
  if (rendered.size() >= kRenderedServicesKept || kept_bytes + text->size() + out.size() > kRenderedServicesBytes) {
    rendered.clear();
    kept_bytes = 0;
  }
  if (auto [it, added] = rendered.emplace(std::move(*text), out); added) kept_bytes += it->first.size() + it->second.size();
  return std::optional<std::string>(std::move(out));
}

Status WriteRecord(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view name,
                   const std::optional<json::object>& old, const json::object& record) {
  auto indexed_status = [](const json::object& r) {
    std::string st = Str(r, "status");
    return (st == "ACTIVE" || st == "DRAINING") ? st : std::string();
  };
  auto inactive_at = [](const json::object& r) -> int64_t {  // -1: not INACTIVE
    if (Str(r, "status") != "INACTIVE") return -1;
    return IntOr(r, "inactiveAtMs");
  };
  const std::string old_status = old ? indexed_status(*old) : std::string();
  const std::string new_status = indexed_status(record);
  if (old_status != new_status) {
    if (!old_status.empty()) RETURN_IF_ERROR(txn.Delete(kByStatus, StatusKey(s, cluster, old_status, name)));
    if (!new_status.empty()) RETURN_IF_ERROR(txn.Put(kByStatus, StatusKey(s, cluster, new_status, name), ""));
  }
  const int64_t old_inactive = old ? inactive_at(*old) : -1;
  const int64_t new_inactive = inactive_at(record);
  if (old_inactive != new_inactive) {
    if (old_inactive >= 0) RETURN_IF_ERROR(txn.Delete(kInactive, InactiveKey(s, old_inactive, cluster, name)));
    if (new_inactive >= 0) RETURN_IF_ERROR(txn.Put(kInactive, InactiveKey(s, new_inactive, cluster, name), ""));
  }
  const auto old_refs = old ? RevisionsOf(*old) : std::set<std::pair<std::string, uint64_t>>();
  const auto new_refs = RevisionsOf(record);
  for (const auto& r : old_refs)
    if (!new_refs.count(r)) RETURN_IF_ERROR(txn.Delete(kRefs, RefKey(s, r, cluster, name)));
  for (const auto& r : new_refs)
    if (!old_refs.count(r)) RETURN_IF_ERROR(txn.Put(kRefs, RefKey(s, r, cluster, name), ""));
  return txn.Put(kServices, RecordKey(s, cluster, name), json::serialize(record));
}

Status RemoveService(store::WriteTxn& txn, const Scope& s, std::string_view cluster, std::string_view name) {
  ASSIGN_OR_RETURN(auto old, LoadRecord(txn, s, cluster, name));
  if (old) {
    json::object gone{{"status", "GONE"}};
    RETURN_IF_ERROR(WriteRecord(txn, s, cluster, name, old, gone));  // drops every index row
    RETURN_IF_ERROR(RemoveAllTags(txn, s, Str(*old, "serviceArn")));
  }
  RETURN_IF_ERROR(txn.Delete(kServices, RecordKey(s, cluster, name)));
  RETURN_IF_ERROR(txn.Delete(kTokens, RecordKey(s, cluster, name)));
  const store::Range children = store::PrefixRange(ScopeKey(s).Str(cluster).Str(name).Done());
  for (std::string_view table : {kDeployments, kRevisions}) {
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, children, 500));
      for (const auto& row : rows) RETURN_IF_ERROR(txn.Delete(table, row.key));
      if (rows.size() < 500) break;
    }
  }
  return OkStatus();
}

}  // namespace paddock::ecs::service::internal
