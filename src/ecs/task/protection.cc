// Task scale-in protection: UpdateTaskProtection and GetTaskProtection (docs/contracts/task.md,
// "Scale-in protection"). A protection is a row of the task owner's, read by GroupTasks so the
// service scheduler leaves a protected task alone when it scales in or replaces tasks.
//
// Records (ecs/schema.h):
//   task_protection (account, region, cluster, id) -> "<expires at, epoch ms>"
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cctype>

#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/task/internal/group_index.h"
#include "ecs/task/tasks.h"

namespace paddock::ecs::task {
namespace json = boost::json;

namespace {

constexpr std::string_view kProtection = "task_protection";
constexpr std::string_view kTasks = "tasks";

std::string Key(const Scope& s, std::string_view cluster, std::string_view id) {
  return ScopeKey(s).Str(cluster).Str(id).Done();
}

bool IsId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// What a reference names, and whether the task may be protected: one a service's scheduler
// launched (group "service:<name>", startedBy its deployment or task set) and not yet STOPPED.
struct Found {
  std::string arn;  // for the answer: the task's ARN
  std::optional<std::string> failure;
  std::string detail;
  std::string id;
  std::string group;
  std::string desired_status;
  int64_t version = 0;
};

StatusOr<Found> Find(store::ReadTxn& txn, const Scope& scope, std::string_view cluster, const std::string& ref,
                     std::string_view action, std::string_view caller_arn) {
  ASSIGN_OR_RETURN(ClusterScopedRef r, ParseClusterScopedRef(ref, ResourceKind::kTask, IsId, scope, action, caller_arn));
  Found f;
  f.id = r.id;
  f.arn = TaskArn(scope, cluster, r.id);
  std::optional<std::string> text;
  if (!r.cluster || *r.cluster == cluster) {
    ASSIGN_OR_RETURN(text, txn.Get(kTasks, Key(scope, cluster, r.id)));
  }
  if (!text) {
    f.arn = ref.starts_with("arn:") ? ref : f.arn;
    f.failure = "MISSING";
    return f;
  }
  ASSIGN_OR_RETURN(json::object task, ParseRecordObject(*text, "task"));
  f.group = Str(task, "group");
  f.desired_status = Str(task, "desiredStatus");
  if (const json::value* v = task.if_contains("version"); v != nullptr && v->is_number()) f.version = v->to_number<int64_t>();
  if (!Str(task, "group").starts_with("service:") || !Str(task, "startedBy").starts_with("ecs-svc/")) {
    f.failure = "TASK_NOT_VALID";
    f.detail = "The task is not part of an Amazon ECS service.";
  } else if (Str(task, "lastStatus") == "STOPPED" || Str(task, "desiredStatus") == "STOPPED") {
    f.failure = "TASK_NOT_VALID";
    f.detail = "The task is stopped or stopping.";
  }
  return f;
}

ProtectedTask Shown(std::string arn, std::optional<std::string> expires_ms, TimePoint now) {
  ProtectedTask p;
  p.arn = std::move(arn);
  if (expires_ms) {
    const TimePoint at = FromEpochMillis(std::stoll(*expires_ms));
    if (at > now) {
      p.enabled = true;
      p.expires_at = at;
    }
  }
  return p;
}

}  // namespace

StatusOr<Tasks::ProtectionResult> Tasks::UpdateProtection(const Scope& scope, std::string_view cluster,
                                                          const std::vector<std::string>& refs, bool enabled,
                                                          std::optional<int64_t> expires_in_minutes,
                                                          std::string_view caller_arn, TimePoint now) {
  if (refs.empty()) return ParamError("Tasks cannot be empty.");
  if (refs.size() > 10) return ParamError("Tasks cannot contain more than 10 elements.");
  const int64_t minutes = expires_in_minutes.value_or(kDefaultProtection.count());
  if (enabled && (minutes < 1 || minutes > kMaxProtectionMinutes))
    return ParamError(fmt::format("expiresInMinutes must be between 1 and {}.", kMaxProtectionMinutes));
  const TimePoint expires = now + std::chrono::minutes(minutes);
  ProtectionResult out;
  std::vector<std::string> groups;  // of the tasks changed: their services' schedulers look again
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    out = ProtectionResult{};
    groups.clear();
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    for (const auto& ref : refs) {
      ASSIGN_OR_RETURN(Found f, Find(txn, scope, cluster, ref, "UpdateTaskProtection", caller_arn));
      if (f.failure) {
        out.failures.push_back({f.arn, *f.failure, f.detail});
        continue;
      }
      const std::string key = Key(scope, cluster, f.id);
      groups.push_back(f.group);
      std::optional<std::string> protection;
      if (enabled) {
        protection = std::to_string(EpochMillis(expires));
        RETURN_IF_ERROR(txn.Put(kProtection, key, *protection));
        out.tasks.push_back(ProtectedTask{f.arn, true, expires});
      } else {
        RETURN_IF_ERROR(txn.Delete(kProtection, key));
        out.tasks.push_back(ProtectedTask{f.arn, false, std::nullopt});
      }
      // The scheduler's projection of the task moves with its protection (internal/group_index.h).
      RETURN_IF_ERROR(txn.Put(internal::kByGroup, internal::GroupRowKey(scope, cluster, f.group, f.desired_status, f.id),
                              internal::GroupStamp(f.version, protection)));
    }
    return OkStatus();
  }));
  GroupListener listener;
  {
    std::lock_guard lock(listener_mu_);
    listener = group_listener_;
  }
  if (listener)
    for (const auto& g : groups) listener(scope, std::string(cluster), g);
  return out;
}

StatusOr<Tasks::ProtectionResult> Tasks::GetProtection(const Scope& scope, std::string_view cluster,
                                                       const std::vector<std::string>& refs,
                                                       std::string_view caller_arn, TimePoint now) {
  if (refs.size() > 100) return ParamError("Tasks cannot contain more than 100 elements.");
  ProtectionResult out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(clusters_.CheckExists(txn, scope, cluster));
    if (refs.empty()) {
      // The cluster's protected tasks (at most 100, in id order).
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kProtection, store::PrefixRange(ScopeKey(scope).Str(cluster).Done()), 100));
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        std::string id;
        for (int i = 0; i < 4; ++i) {  // account, region, cluster, id
          ASSIGN_OR_RETURN(id, r.Str());
        }
        ProtectedTask p = Shown(TaskArn(scope, cluster, id), row.value, now);
        if (p.enabled) out.tasks.push_back(std::move(p));
      }
      return OkStatus();
    }
    for (const auto& ref : refs) {
      ASSIGN_OR_RETURN(Found f, Find(txn, scope, cluster, ref, "GetTaskProtection", caller_arn));
      if (f.failure) {
        out.failures.push_back({f.arn, *f.failure, f.detail});
        continue;
      }
      ASSIGN_OR_RETURN(auto expires, txn.Get(kProtection, Key(scope, cluster, f.id)));
      out.tasks.push_back(Shown(f.arn, expires, now));
    }
    return OkStatus();
  }));
  return out;
}

}  // namespace paddock::ecs::task
