// ecs/service task sets: the EXTERNAL deployment controller's actions (docs/contracts/service.md,
// "Task sets"). Each task set is an entry of the record's `deployments` (state.h's Deployment:
// desired_count is computedDesiredCount, scale_percent, external_id, stability_status), so the
// scheduler scales every set on its own. What the Deployment does not carry — a set's
// loadBalancers, serviceRegistries, tags and clientToken — lives in the record's
// `taskSetExtras` {<id>: {...}}, which StoreState leaves alone and every write here prunes to the
// sets that still exist.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>

#include "common/json_fields.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/service/internal/common.h"
#include "ecs/service/internal/record.h"
#include "ecs/service/internal/resolved.h"
#include "ecs/service/services.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::service {
namespace json = boost::json;
using json_fields::OptArray;
using json_fields::OptObject;
using json_fields::Str;
using namespace internal;  // NOLINT: the record codec is this module's own

namespace {

constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kExtras = "taskSetExtras";

Status NotExternal() {
  // AWS's text (InvalidParameterException), as users report it for CreateTaskSet.
  return ParamError(
      "Amazon ECS only supports task set management on services configured to use external deployment controllers.");
}
Status TaskSetNotFound() { return NotFound("The specified task set does not exist.", ecs::Error::kTaskSetNotFound); }

// "ecs-svc/" followed by 1-19 digits.
bool IsTaskSetId(std::string_view s) {
  if (!s.starts_with("ecs-svc/") || s.size() == 8 || s.size() > 8 + 19) return false;
  return std::all_of(s.begin() + 8, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}


// The service the request names, in its cluster.
struct Target {
  std::string cluster;
  std::string service;
  bool other_cluster = false;  // a service ARN of another cluster: never found here
};

StatusOr<Target> TargetOf(const Scope& scope, std::string_view caller_arn, const json::object& in,
                          std::string_view action) {
  Target t;
  ASSIGN_OR_RETURN(t.cluster, cluster::ClusterName(json_fields::OptStr(in, "cluster"), scope, action, caller_arn));
  ASSIGN_OR_RETURN(ClusterScopedRef r, ParseClusterScopedRef(Str(in, "service"), ResourceKind::kService, IsServiceName,
                                                             scope, action, caller_arn));
  t.service = r.id;
  t.other_cluster = r.cluster && *r.cluster != t.cluster;
  return t;
}

// A task set reference: its id, or its ARN ".../task-set/<cluster>/<service>/ecs-svc/<digits>".
// nullopt: a well-formed ARN of another cluster or service (not found there). Anything else is
// InvalidParameterException "Task Set Identifier is invalid" (AWS's text for e.g. a task ARN).
StatusOr<std::optional<std::string>> TaskSetIdOf(std::string_view text, const Scope& scope, const Target& t) {
  if (IsTaskSetId(text)) return std::optional<std::string>(std::string(text));
  if (text.starts_with("arn:")) {
    auto r = ParseEcsResourceArn(text);
    if (r.ok() && r->kind == ResourceKind::kTaskSet) {
      // id: "<cluster>/<service>/ecs-svc/<digits>"
      const size_t a = r->id.find('/');
      const size_t b = a == std::string::npos ? a : r->id.find('/', a + 1);
      if (b != std::string::npos && IsTaskSetId(std::string_view(r->id).substr(b + 1))) {
        if (r->scope != scope || r->id.substr(0, a) != t.cluster || r->id.substr(a + 1, b - a - 1) != t.service ||
            t.other_cluster)
          return std::optional<std::string>();
        return std::optional<std::string>(r->id.substr(b + 1));
      }
    }
  }
  return ParamError("Task Set Identifier is invalid");
}

// scale {value, unit}: PERCENT, 0-100. Absent: 0 (AWS's CLI example of a set created without one).
StatusOr<double> ScaleOf(const json::object& in) {
  auto it = in.find("scale");
  if (it == in.end() || !it->value().is_object()) return 0.0;
  const json::object& s = it->value().get_object();
  if (auto unit = json_fields::OptStr(s, "unit"); unit && *unit != "PERCENT")
    return ParamError(fmt::format("The scale unit {} is not supported. Use PERCENT.", *unit));
  double value = 0;
  if (auto v = s.find("value"); v != s.end() && v->value().is_number()) value = v->value().to_number<double>();
  if (!(value >= 0 && value <= 100))
    return ParamError(fmt::format("The scale value must be between 0 and 100, but was {}.", value));
  return value;
}

std::vector<Deployment> SetsOf(const json::object& record) {
  std::vector<Deployment> out;
  for (const json::object* d : json_fields::Objects(record, "deployments")) out.push_back(DecodeDeployment(*d));
  return out;
}

// Writes `sets` back into `record` and keeps taskSetExtras to the sets that exist.
void PutSets(json::object& record, const std::vector<Deployment>& sets) {
  json::array deployments;
  for (const auto& d : sets) deployments.push_back(EncodeDeployment(d));
  record["deployments"] = std::move(deployments);
  json::object extras;
  if (auto it = record.find(kExtras); it != record.end() && it->value().is_object())
    for (const auto& d : sets)
      if (auto e = it->value().get_object().find(d.id); e != it->value().get_object().end())
        extras[d.id] = e->value();
  record[kExtras] = std::move(extras);
}

const json::object& ExtrasOf(const json::object& record, std::string_view id) {
  static const json::object kEmpty;
  auto it = record.find(kExtras);
  if (it == record.end() || !it->value().is_object()) return kEmpty;
  auto e = it->value().get_object().find(id);
  return e != it->value().get_object().end() && e->value().is_object() ? e->value().get_object() : kEmpty;
}

// The TaskSet shape: RenderTaskSet (loadBalancers, serviceRegistries from taskSetExtras), tags when asked.
json::object Render(const json::object& record, const Deployment& d, bool with_tags) {
  json::object o = RenderTaskSet(record, d);
  if (with_tags) o["tags"] = OptArray(ExtrasOf(record, d.id), "tags").value_or(json::array());
  return o;
}

// The checks every task-set action makes of its service, in AWS's order.
Status CheckService(const std::optional<json::object>& record, bool need_active) {
  if (!record) return ServiceNotFound();
  const std::string status = Str(*record, "status");
  if (status == "INACTIVE" || (need_active && status != "ACTIVE")) return ServiceNotActive();
  if (Str(json_fields::Obj(*record, "deploymentController"), "type") != "EXTERNAL") return NotExternal();
  return OkStatus();
}

Deployment* FindSet(std::vector<Deployment>& sets, std::string_view id) {
  for (auto& d : sets)
    if (d.id == id) return &d;
  return nullptr;
}

}  // namespace

int64_t Services::TaskSetDesiredCount(int64_t desired, double scale_percent) {
  const double exact = static_cast<double>(desired) * scale_percent / 100.0;
  return static_cast<int64_t>(std::ceil(exact - 1e-9));  // always up (1.2 -> 2); sched/plan rounds the same
}

StatusOr<std::string> Services::CreateTaskSet(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                              TimePoint now, const taskdef::LaunchCheck& check) {
  ASSIGN_OR_RETURN(Target t, TargetOf(scope, caller_arn, in, "CreateTaskSet"));
  ASSIGN_OR_RETURN(double scale, ScaleOf(in));
  std::optional<std::string> token = json_fields::OptStr(in, "clientToken");
  if (token) {
    bool ok = !token->empty() && token->size() <= 36;
    for (char c : *token) ok = ok && c >= 33 && c <= 126;
    if (!ok) return ParamError("clientToken must be 1 to 36 characters in the range 33-126.");
  }
  Tags tags = TagsFrom(in);
  RETURN_IF_ERROR(ValidateTags(tags));
  if (tags.size() > kMaxTagsPerResource) return ParamError("A resource can have at most 50 tags.");
  if (auto lbs = OptArray(in, "loadBalancers"); lbs && lbs->size() > 5)
    return ParamError("A task set can have at most 5 load balancers (target groups).");
  if (auto regs = OptArray(in, "serviceRegistries"); regs && regs->size() > 1)
    return ParamError("A task set can be associated with at most one service registry.");
  ASSIGN_OR_RETURN(Cluster cluster, ClusterFor(scope, t.cluster));
  if (t.other_cluster) return ServiceNotFound();

  // The service first (so a missing or non-EXTERNAL service is named before the definition).
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, t.cluster, t.service));
    return CheckService(record, true);
  }));

  // The task definition, resolved ONCE: the set pins this revision (an INACTIVE one is refused).
  ASSIGN_OR_RETURN(taskdef::Ref ref, taskdef::ParseRef(Str(in, "taskDefinition"), scope, "CreateTaskSet", caller_arn));
  ASSIGN_OR_RETURN(taskdef::LaunchView view, task_definitions_.ResolveForLaunch(scope, ref));
  if (check) RETURN_IF_ERROR(check(view));
  ASSIGN_OR_RETURN(Launch launch, ResolveLaunch(scope, cluster, in, view, view.network_mode, view.compatibilities,
                                                "REPLICA", /*external_controller=*/false));

  const std::string canonical = json::serialize(Canonical(in));
  std::string out;
  bool created = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckActive(txn, scope, t.cluster));
    ASSIGN_OR_RETURN(auto current, LoadRecord(txn, scope, t.cluster, t.service));
    RETURN_IF_ERROR(CheckService(current, true));
    json::object record = *current;
    std::vector<Deployment> sets = SetsOf(record);
    if (token) {  // the same request again answers the set it created
      for (const auto& d : sets) {
        const json::object& extras = ExtrasOf(record, d.id);
        if (Str(extras, "clientToken") != *token) continue;
        if (Str(extras, "request") != canonical) return ParamError("Creation of task set was not idempotent.");
        out = json::serialize(Render(record, d, !tags.empty()));
        return OkStatus();
      }
    }
    if (static_cast<int64_t>(sets.size()) >= quotas_.task_sets_per_service)
      return ParamError(fmt::format(
          "{} deployments exist on the service. Unable to create new TaskSet since this exceeds the maximum limit.",
          sets.size()));
    Deployment d;
    d.id = "ecs-svc/" + NewId(19, kDigits);
    d.status = "ACTIVE";  // PRIMARY only through UpdateServicePrimaryTaskSet
    d.task_definition = view.arn;
    d.desired_count = TaskSetDesiredCount(json_fields::Int(record, "desiredCount").value_or(0), scale);
    d.created_at = now;
    d.updated_at = now;
    d.launch = launch.deployment;
    d.scale_percent = scale;
    d.external_id = json_fields::OptStr(in, "externalId").value_or("");
    d.stability_status = "STABILIZING";
    d.stability_status_at = now;
    sets.push_back(d);
    PutSets(record, sets);
    json::object extras;
    extras["loadBalancers"] = OptArray(in, "loadBalancers").value_or(json::array());
    extras["serviceRegistries"] = OptArray(in, "serviceRegistries").value_or(json::array());
    extras["tags"] = TagsJson(tags);
    if (token) {
      extras["clientToken"] = *token;
      extras["request"] = canonical;
    }
    record[kExtras].get_object()[d.id] = std::move(extras);
    record["version"] = json_fields::Int(record, "version").value_or(0) + 1;
    RETURN_IF_ERROR(WriteRecord(txn, scope, t.cluster, t.service, current, record));
    out = json::serialize(Render(record, d, !tags.empty()));
    created = true;
    return OkStatus();
  }));
  if (created) NotifyChange(ServiceKey{scope, t.cluster, t.service});
  return out;
}

// UpdateTaskSet, DeleteTaskSet and UpdateServicePrimaryTaskSet: find the set named by `member`,
// let `change` decide (returning whether anything changed), write in one transaction and tell the
// scheduler after the commit.
StatusOr<std::string> Services::ChangeTaskSet(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                              std::string_view action, std::string_view member,
                                              const std::function<StatusOr<bool>(json::object&, std::vector<Deployment>&,
                                                                                 Deployment&)>& change) {
  ASSIGN_OR_RETURN(Target t, TargetOf(scope, caller_arn, in, action));
  ASSIGN_OR_RETURN(std::optional<std::string> id, TaskSetIdOf(Str(in, member), scope, t));
  std::string out;
  bool changed = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, t.cluster));
    if (t.other_cluster) return ServiceNotFound();
    ASSIGN_OR_RETURN(auto current, LoadRecord(txn, scope, t.cluster, t.service));
    RETURN_IF_ERROR(CheckService(current, true));
    json::object record = *current;
    std::vector<Deployment> sets = SetsOf(record);
    Deployment* set = id ? FindSet(sets, *id) : nullptr;
    if (set == nullptr) return TaskSetNotFound();
    ASSIGN_OR_RETURN(changed, change(record, sets, *set));
    const std::string set_id = set->id;
    if (changed) {
      PutSets(record, sets);
      record["version"] = json_fields::Int(record, "version").value_or(0) + 1;
      RETURN_IF_ERROR(WriteRecord(txn, scope, t.cluster, t.service, current, record));
    }
    for (const auto& d : sets)
      if (d.id == set_id) out = json::serialize(Render(record, d, false));
    return OkStatus();
  }));
  if (changed) NotifyChange(ServiceKey{scope, t.cluster, t.service});
  return out;
}

StatusOr<std::string> Services::UpdateTaskSet(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                              TimePoint now) {
  ASSIGN_OR_RETURN(double scale, ScaleOf(in));
  return ChangeTaskSet(scope, caller_arn, in, "UpdateTaskSet", "taskSet",
                       [&](json::object& record, std::vector<Deployment>&, Deployment& set) -> StatusOr<bool> {
                         if (set.status == "DRAINING")
                           return ParamError(fmt::format("The task set {} is being deleted (DRAINING) and cannot be updated.",
                                                         set.id));
                         const int64_t desired =
                             TaskSetDesiredCount(json_fields::Int(record, "desiredCount").value_or(0), scale);
                         set.scale_percent = scale;
                         set.updated_at = now;
                         if (desired != set.desired_count) {
                           set.desired_count = desired;
                           set.stability_status = "STABILIZING";
                           set.stability_status_at = now;
                         }
                         return true;
                       });
}

StatusOr<std::string> Services::DeleteTaskSet(const Scope& scope, std::string_view caller_arn, const json::object& in,
                                              TimePoint now) {
  const bool force = json_fields::Bool(in, "force").value_or(false);
  return ChangeTaskSet(scope, caller_arn, in, "DeleteTaskSet", "taskSet",
                       [&](json::object&, std::vector<Deployment>&, Deployment& set) -> StatusOr<bool> {
                         if (set.status == "DRAINING") return false;  // a repeat answers the draining set
                         if (!force && (set.desired_count > 0 || set.running_count > 0 || set.pending_count > 0))
                           return ParamError(fmt::format(
                               "The task set {} cannot be deleted while it has tasks or a computedDesiredCount above 0. "
                               "Scale it to 0 first, or delete it with force.",
                               set.id));
                         set.status = "DRAINING";
                         set.desired_count = 0;
                         set.updated_at = now;
                         set.stability_status = "STABILIZING";
                         set.stability_status_at = now;
                         return true;
                       });
}

StatusOr<std::string> Services::UpdateServicePrimaryTaskSet(const Scope& scope, std::string_view caller_arn,
                                                            const json::object& in, TimePoint now) {
  return ChangeTaskSet(
      scope, caller_arn, in, "UpdateServicePrimaryTaskSet", "primaryTaskSet",
      [&](json::object& record, std::vector<Deployment>& sets, Deployment& set) -> StatusOr<bool> {
        if (set.status == "DRAINING")
          return ParamError(fmt::format("The task set {} is being deleted (DRAINING) and cannot become the primary task set.",
                                        set.id));
        if (set.status == "PRIMARY") return false;
        for (auto& d : sets) {
          if (d.status != "PRIMARY") continue;
          d.status = "ACTIVE";
          d.updated_at = now;
        }
        set.status = "PRIMARY";
        set.updated_at = now;
        // The primary set's parameters become the service's.
        record["taskDefinition"] = set.task_definition;
        for (std::string_view k : {"launchType", "capacityProviderStrategy", "platformVersion", "networkConfiguration"})
          record.erase(k);
        for (const auto& [k, v] : EncodeLaunch(set.launch)) record[k] = v;
        return true;
      });
}

StatusOr<DescribedItems> Services::DescribeTaskSets(const Scope& scope, std::string_view caller_arn,
                                                    const json::object& in) {
  ASSIGN_OR_RETURN(Target t, TargetOf(scope, caller_arn, in, "DescribeTaskSets"));
  bool include_tags = false;
  for (const auto& f : json_fields::Strings(in, "include"))
    if (f == "TAGS") include_tags = true;
  bool listed = false;
  const std::vector<std::string> refs = json_fields::Strings(in, "taskSets", &listed);
  std::vector<std::pair<std::string, std::optional<std::string>>> wanted;  // (as given, id)
  for (const auto& r : refs) {
    ASSIGN_OR_RETURN(std::optional<std::string> id, TaskSetIdOf(r, scope, t));
    wanted.emplace_back(r, std::move(id));
  }
  DescribedItems result;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, t.cluster));
    if (t.other_cluster) return ServiceNotFound();
    ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, t.cluster, t.service));
    RETURN_IF_ERROR(CheckService(record, false));
    std::vector<Deployment> sets = SetsOf(*record);
    if (!listed) {  // no taskSets: every set of the service
      for (const auto& d : sets) result.items.push_back(json::serialize(Render(*record, d, include_tags)));
      return OkStatus();
    }
    for (const auto& [given, id] : wanted) {
      Deployment* d = id ? FindSet(sets, *id) : nullptr;
      if (d == nullptr) {
        std::string arn = given.starts_with("arn:")
                              ? given
                              : fmt::format("arn:aws:ecs:{}:{}:task-set/{}/{}/{}", scope.region.str(),
                                            scope.account.str(), t.cluster, t.service, given);
        result.failures.push_back({std::move(arn), "MISSING", ""});
        continue;
      }
      result.items.push_back(json::serialize(Render(*record, *d, include_tags)));
    }
    return OkStatus();
  }));
  return result;
}

StatusOr<Tags> Services::TaskSetTags(const Scope& scope, std::string_view arn, const std::function<Status(Tags&)>* change) {
  const Status not_found =
      NotFound(fmt::format("The specified resource is not found: {}", arn), ecs::Error::kResourceNotFound);
  // The ARN's id is "<cluster>/<service>/ecs-svc/<digits>"; TaskSetIdOf checks the set's part.
  ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(arn));
  const size_t a = r.id.find('/');
  const size_t b = a == std::string::npos ? a : r.id.find('/', a + 1);
  if (b == std::string::npos || r.scope != scope) return not_found;
  const Target t{r.id.substr(0, a), r.id.substr(a + 1, b - a - 1)};
  ASSIGN_OR_RETURN(std::optional<std::string> id, TaskSetIdOf(arn, scope, t));
  if (!id) return not_found;
  Tags out;
  auto visit = [&](const std::optional<json::object>& record) -> Status {
    if (!record || Str(*record, "status") == "INACTIVE") return not_found;
    std::vector<Deployment> sets = SetsOf(*record);
    if (FindSet(sets, *id) == nullptr) return not_found;
    out = TagsFrom(ExtrasOf(*record, *id));
    return OkStatus();
  };
  if (change == nullptr) {
    RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, t.cluster, t.service));
      return visit(record);
    }));
    return out;
  }
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto current, LoadRecord(txn, scope, t.cluster, t.service));
    RETURN_IF_ERROR(visit(current));
    RETURN_IF_ERROR((*change)(out));
    json::object record = *current;
    json::value& extras = record[kExtras];
    if (!extras.is_object()) extras = json::object();
    json::value& entry = extras.get_object()[*id];
    if (!entry.is_object()) entry = json::object();
    entry.get_object()["tags"] = TagsJson(out);
    record["version"] = json_fields::Int(record, "version").value_or(0) + 1;
    return WriteRecord(txn, scope, t.cluster, t.service, current, record);
  }));
  return out;
}

}  // namespace paddock::ecs::service
