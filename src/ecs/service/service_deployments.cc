// The service-deployment actions: ListServiceDeployments, DescribeServiceDeployments,
// DescribeServiceRevisions, StopServiceDeployment (docs/contracts/service.md).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <set>

#include "common/arn.h"
#include "common/json_fields.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/service/breaker.h"
#include "ecs/service/internal/common.h"
#include "ecs/service/internal/record.h"
#include "ecs/service/services.h"
#include "store/key.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::service {
namespace json = boost::json;
using json_fields::OptArray;
using json_fields::OptObject;
using json_fields::Str;
using namespace internal;  // NOLINT: the record codec is this module's own

namespace {

bool IsName(std::string_view s) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

// arn:aws:ecs:R:A:<kind>/<cluster>/<service>/<id>
struct ChildRef {
  std::string cluster;
  std::string service;
  std::string id;
};

StatusOr<ChildRef> ParseChildArn(std::string_view text, std::string_view kind, const Scope& scope,
                                 std::string_view action, std::string_view caller_arn) {
  auto invalid = [&] { return ParamError(fmt::format("The ARN provided is invalid: {}", text)); };
  StatusOr<Arn> arn = ParseArn(text);
  if (!arn.ok() || arn->service != "ecs" || !IsAccountId(arn->account) || !IsRegionName(arn->region)) return invalid();
  std::string_view res = arn->resource;
  if (!res.starts_with(kind) || res.size() <= kind.size() || res[kind.size()] != '/') return invalid();
  res.remove_prefix(kind.size() + 1);
  ChildRef out;
  size_t a = res.find('/');
  size_t b = a == std::string_view::npos ? a : res.find('/', a + 1);
  if (b == std::string_view::npos || res.find('/', b + 1) != std::string_view::npos) return invalid();
  out.cluster = std::string(res.substr(0, a));
  out.service = std::string(res.substr(a + 1, b - a - 1));
  out.id = std::string(res.substr(b + 1));
  if (!IsName(out.cluster) || !IsName(out.service) || out.id.empty()) return invalid();
  const EcsResource r{ResourceKind::kService, Scope{AccountId(arn->account), Region(arn->region)}, ""};
  RETURN_IF_ERROR(CheckArnScope(r, scope, text, action, caller_arn));
  return out;
}

int64_t MsOf(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_number()) return 0;
  return static_cast<int64_t>(std::llround(it->value().to_number<double>() * 1000.0));
}

// A ServiceRevisionSummary with the live counts of the deployment that runs the revision.
void Refresh(json::object& summary, const std::vector<Deployment>& deployments) {
  const std::string arn = Str(summary, "arn");
  for (const auto& d : deployments) {
    if (d.service_revision_id.empty() || !arn.ends_with("/" + d.service_revision_id)) continue;
    summary["requestedTaskCount"] = d.desired_count;
    summary["runningTaskCount"] = d.running_count;
    summary["pendingTaskCount"] = d.pending_count;
  }
}

// The stored ServiceDeployment with its revisions' counts as they are now.
json::object Live(json::object sd, const std::optional<json::object>& record) {
  if (!record) return sd;
  std::vector<Deployment> deployments;
  for (const json::object* o : json_fields::Objects(*record, "deployments")) deployments.push_back(DecodeDeployment(*o));
  if (auto it = sd.find("targetServiceRevision"); it != sd.end() && it->value().is_object())
    Refresh(it->value().get_object(), deployments);
  if (auto it = sd.find("sourceServiceRevisions"); it != sd.end() && it->value().is_array())
    for (auto& s : it->value().get_array())
      if (s.is_object()) Refresh(s.get_object(), deployments);
  if (auto cb = sd.find("deploymentCircuitBreaker"); cb != sd.end() && cb->value().is_object()) {
    // The threshold follows the service's desired count (and breaker settings) while the
    // deployment runs, as sched/plan evaluates it.
    if (Str(sd, "status") == "IN_PROGRESS") {
      const int64_t desired = json_fields::Int(*record, "desiredCount").value_or(0);
      const StatusOr<CircuitBreakerSettings> settings = ParseCircuitBreaker(
          json_fields::Obj(json_fields::Obj(*record, "deploymentConfiguration"), "deploymentCircuitBreaker"));
      cb->value().get_object()["threshold"] =
          FailureThreshold(desired, settings.ok() ? settings->threshold : FailureThresholdConfig{});
    }
    for (const auto& d : deployments)
      if (sd.contains("serviceDeploymentArn") && Str(sd, "serviceDeploymentArn").ends_with("/" + d.service_deployment_id) &&
          Str(sd, "status") == "IN_PROGRESS")
        cb->value().get_object()["failureCount"] = d.failed_tasks;
  }
  return sd;
}

const std::set<std::string_view> kFinished = {"SUCCESSFUL", "STOPPED", "ROLLBACK_SUCCESSFUL", "ROLLBACK_FAILED"};

}  // namespace

StatusOr<ItemPage> Services::ListServiceDeployments(const Scope& scope, std::string_view caller_arn,
                                                    const DeploymentQuery& q) {
  ASSIGN_OR_RETURN(std::string cluster_name, cluster::ClusterName(q.cluster, scope, "ListServiceDeployments", caller_arn));
  ASSIGN_OR_RETURN(ClusterScopedRef ref, ParseClusterScopedRef(q.service, ResourceKind::kService, IsName, scope,
                                                               "ListServiceDeployments", caller_arn));
  ItemPage page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster_name));
    if (ref.cluster && *ref.cluster != cluster_name) return ServiceNotFound();
    ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, cluster_name, ref.id));
    if (!record) return ServiceNotFound();
    const store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster_name).Str(ref.id).Done());
    std::vector<std::pair<std::string, json::object>> items;  // (position, brief)
    store::Range r = range;
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kDeployments, r, 500));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(row.value, "service deployment"));
        const std::string status = Str(sd, "status");
        if (!q.statuses.empty() && std::find(q.statuses.begin(), q.statuses.end(), status) == q.statuses.end()) continue;
        const int64_t created = MsOf(sd, "createdAt");
        if (q.created_after && created < EpochMillis(*q.created_after)) continue;
        if (q.created_before && created > EpochMillis(*q.created_before)) continue;
        json::object brief;
        for (std::string_view k : {"serviceDeploymentArn", "serviceArn", "clusterArn", "startedAt", "createdAt",
                                   "finishedAt", "status", "statusReason"})
          if (auto it = sd.find(k); it != sd.end()) brief[k] = it->value();
        if (auto t = sd.find("targetServiceRevision"); t != sd.end() && t->value().is_object())
          brief["targetServiceRevisionArn"] = Str(t->value().get_object(), "arn");
        // Newest first: the position sorts descending by createdAt, then by ARN.
        items.emplace_back(fmt::format("{:020d}|{}", created, Str(sd, "serviceDeploymentArn")), std::move(brief));
      }
      if (rows.size() < 500) break;
      r.begin = store::KeySuccessor(rows.back().key);
    }
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    size_t start = 0;
    if (!q.after.empty())
      while (start < items.size() && items[start].first >= q.after) ++start;
    for (size_t i = start; i < items.size() && page.items.size() < q.limit; ++i) {
      page.items.push_back(json::serialize(items[i].second));
      if (page.items.size() == q.limit && i + 1 < items.size()) page.next = items[i].first;
    }
    return OkStatus();
  }));
  return page;
}

StatusOr<DescribedItems> Services::DescribeServiceDeployments(const Scope& scope, std::string_view caller_arn,
                                                              const std::vector<std::string>& arns) {
  if (arns.empty()) return ParamError("serviceDeploymentArns cannot be empty.");
  if (arns.size() > 20) return ParamError("The serviceDeploymentArns list can contain at most 20 entries.");
  std::vector<ChildRef> refs;
  for (const auto& a : arns) {
    ASSIGN_OR_RETURN(ChildRef r, ParseChildArn(a, "service-deployment", scope, "DescribeServiceDeployments", caller_arn));
    refs.push_back(std::move(r));
  }
  DescribedItems out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    for (size_t i = 0; i < refs.size(); ++i) {
      ASSIGN_OR_RETURN(auto text, txn.Get(kDeployments, ChildKey(scope, refs[i].cluster, refs[i].service, refs[i].id)));
      if (!text) {
        out.failures.push_back({arns[i], "MISSING", ""});
        continue;
      }
      ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(*text, "service deployment"));
      ASSIGN_OR_RETURN(auto record, LoadRecord(txn, scope, refs[i].cluster, refs[i].service));
      out.items.push_back(json::serialize(Live(std::move(sd), record)));
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<DescribedItems> Services::DescribeServiceRevisions(const Scope& scope, std::string_view caller_arn,
                                                            const std::vector<std::string>& arns) {
  if (arns.empty()) return ParamError("serviceRevisionArns cannot be empty.");
  if (arns.size() > 20) return ParamError("The serviceRevisionArns list can contain at most 20 entries.");
  std::vector<ChildRef> refs;
  for (const auto& a : arns) {
    ASSIGN_OR_RETURN(ChildRef r, ParseChildArn(a, "service-revision", scope, "DescribeServiceRevisions", caller_arn));
    refs.push_back(std::move(r));
  }
  DescribedItems out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    for (size_t i = 0; i < refs.size(); ++i) {
      ASSIGN_OR_RETURN(auto text, txn.Get(kRevisions, ChildKey(scope, refs[i].cluster, refs[i].service, refs[i].id)));
      if (!text) {
        out.failures.push_back({arns[i], "MISSING", ""});
        continue;
      }
      out.items.push_back(*text);
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<std::string> Services::StopServiceDeployment(const Scope& scope, std::string_view caller_arn,
                                                      const json::object& input, TimePoint now) {
  const std::string arn = Str(input, "serviceDeploymentArn");
  const std::string stop_type = json_fields::OptStr(input, "stopType").value_or("ROLLBACK");
  if (stop_type != "ROLLBACK")
    return ParamError(fmt::format("The stop type {} is not supported. The only valid stop type is ROLLBACK.", stop_type));
  ASSIGN_OR_RETURN(ChildRef ref, ParseChildArn(arn, "service-deployment", scope, "StopServiceDeployment", caller_arn));
  bool changed = false;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    const std::string key = ChildKey(scope, ref.cluster, ref.service, ref.id);
    ASSIGN_OR_RETURN(auto text, txn.Get(kDeployments, key));
    if (!text)
      return NotFound(fmt::format("The service deployment {} does not exist.", arn), ecs::Error::kServiceDeploymentNotFound);
    ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(*text, "service deployment"));
    const std::string status = Str(sd, "status");
    if (kFinished.count(status))
      return FailedPrecondition(
          fmt::format("The service deployment {} has finished ({}): there is nothing to stop.", arn, status),
          ecs::Error::kConflict);
    if (status != "PENDING" && status != "IN_PROGRESS") return OkStatus();  // already stopping or rolling back
    ASSIGN_OR_RETURN(auto current, LoadRecord(txn, scope, ref.cluster, ref.service));
    if (!current) return NotFound(fmt::format("The service deployment {} does not exist.", arn),
                                  ecs::Error::kServiceDeploymentNotFound);
    json::object record = *current;
    json::array deployments;
    if (auto it = record.find("deployments"); it != record.end() && it->value().is_array())
      deployments = it->value().get_array();
    for (auto& d : deployments)
      if (d.is_object() && Str(d.get_object(), "serviceDeploymentId") == ref.id) d.get_object()["rollbackRequested"] = true;
    record["deployments"] = std::move(deployments);
    record["version"] = json_fields::Int(record, "version").value_or(0) + 1;
    sd["status"] = "ROLLBACK_REQUESTED";
    sd["statusReason"] = "Service deployment rollback requested by StopServiceDeployment.";
    sd["updatedAt"] = static_cast<double>(EpochMillis(now)) / 1000.0;
    RETURN_IF_ERROR(txn.Put(kDeployments, key, json::serialize(sd)));
    RETURN_IF_ERROR(WriteRecord(txn, scope, ref.cluster, ref.service, current, record));
    changed = true;
    return OkStatus();
  }));
  if (changed) NotifyChange(ServiceKey{scope, ref.cluster, ref.service});
  return arn;
}

namespace internal {

namespace {
std::string LastPart(std::string_view arn) { return std::string(arn.substr(arn.rfind('/') + 1)); }
}  // namespace

Status PruneServiceHistory(store::WriteTxn& txn, const Scope& scope, std::string_view cluster, std::string_view name,
                           const json::object& record, TimePoint now) {
  std::set<std::string> in_use;     // service deployment ids the record's deployments belong to
  std::set<std::string> revisions;  // service revision ids to keep
  auto use = [&](const json::object& o) {
    const Deployment d = DecodeDeployment(o);
    in_use.insert(d.service_deployment_id);
    revisions.insert(d.service_revision_id);
  };
  for (const json::object* o : json_fields::Objects(record, "deployments")) use(*o);
  if (auto lc = OptObject(record, "lastCompleted")) use(*lc);

  struct Row {
    int64_t created = 0;
    std::string key;
    json::object sd;
    bool pinned = false;  // unfinished, or a deployment of the record belongs to it
  };
  std::vector<Row> rows_seen;
  const store::Range range = store::PrefixRange(ScopeKey(scope).Str(cluster).Str(name).Done());
  for (store::Range r = range;;) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kDeployments, r, 500));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(json::object sd, ParseRecordObject(row.value, "service deployment"));
      const bool pinned =
          !kFinished.count(Str(sd, "status")) || in_use.count(LastPart(Str(sd, "serviceDeploymentArn"))) > 0;
      rows_seen.push_back(Row{.created = MsOf(sd, "createdAt"), .key = row.key, .sd = std::move(sd), .pinned = pinned});
    }
    if (rows.size() < 500) break;
    r.begin = store::KeySuccessor(rows.back().key);
  }
  // Newest first: the newest kServiceDeploymentHistory stay unless finished and past the
  // retention; pinned ones stay whatever their age or rank.
  std::sort(rows_seen.begin(), rows_seen.end(), [](const Row& a, const Row& b) {
    return a.created != b.created ? a.created > b.created : a.key > b.key;
  });
  const int64_t oldest = Ms(now - kServiceDeploymentRetention);
  std::vector<json::object> kept;
  for (size_t i = 0; i < rows_seen.size(); ++i) {
    Row& row = rows_seen[i];
    if (row.pinned || (static_cast<int64_t>(i) < kServiceDeploymentHistory && row.created >= oldest)) {
      kept.push_back(std::move(row.sd));
    } else {
      RETURN_IF_ERROR(txn.Delete(kDeployments, row.key));
    }
  }

  // A kept service deployment's revisions (target, sources, the one a rollback returns to) stay
  // describable.
  for (const auto& sd : kept) {
    if (auto t = OptObject(sd, "targetServiceRevision")) revisions.insert(LastPart(Str(*t, "arn")));
    for (const json::object* s : json_fields::Objects(sd, "sourceServiceRevisions")) revisions.insert(LastPart(Str(*s, "arn")));
    if (auto rb = OptObject(sd, "rollback")) revisions.insert(LastPart(Str(*rb, "serviceRevisionArn")));
  }
  for (store::Range r = range;;) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kRevisions, r, 500));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(json::object rev, ParseRecordObject(row.value, "service revision"));
      if (!revisions.count(LastPart(Str(rev, "serviceRevisionArn")))) RETURN_IF_ERROR(txn.Delete(kRevisions, row.key));
    }
    if (rows.size() < 500) break;
    r.begin = store::KeySuccessor(rows.back().key);
  }
  return OkStatus();
}

}  // namespace internal

StatusOr<std::string> Services::ContinueServiceDeployment(const Scope& scope, std::string_view caller_arn,
                                                          std::string_view arn, std::string_view hook_id,
                                                          std::string_view action) {
  if (action != "CONTINUE" && action != "ROLLBACK")
    return ParamError(fmt::format("The action {} is not valid. Valid actions are CONTINUE and ROLLBACK.", action));
  ASSIGN_OR_RETURN(ChildRef ref, ParseChildArn(arn, "service-deployment", scope, "ContinueServiceDeployment", caller_arn));
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto text, txn.Get(kDeployments, ChildKey(scope, ref.cluster, ref.service, ref.id)));
    if (!text)
      return NotFound(fmt::format("The service deployment {} does not exist.", arn), ecs::Error::kServiceDeploymentNotFound);
    return OkStatus();
  }));
  return ParamError(fmt::format(
      "The service deployment {} is not paused at lifecycle hook {}: Paddock's rolling deployments have no lifecycle "
      "hooks.",
      arn, hook_id));
}

}  // namespace paddock::ecs::service
