#include "ecs/taskdef/taskdefs.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>

#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "ecs/taskdef/validate.h"
#include "store/key.h"

namespace paddock::ecs::taskdef {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kTaskDefs = "taskdefs";
constexpr std::string_view kFamilies = "taskdef_families";
constexpr std::string_view kByStatus = "taskdef_by_status";
constexpr std::string_view kFamilyByStatus = "taskdef_family_by_status";
constexpr std::string_view kDeleting = "taskdef_deleting";

constexpr std::string_view kActive = "ACTIVE";
constexpr std::string_view kInactive = "INACTIVE";
constexpr std::string_view kDeleteInProgress = "DELETE_IN_PROGRESS";



std::string RevisionKey(const Scope& s, std::string_view family, uint64_t rev) {
  return ScopeKey(s).Str(family).U64(rev).Done();
}
std::string FamilyKey(const Scope& s, std::string_view family) { return ScopeKey(s).Str(family).Done(); }
std::string StatusKey(const Scope& s, std::string_view status, std::string_view family, uint64_t rev) {
  return ScopeKey(s).Str(status).Str(family).U64(rev).Done();
}
std::string FamilyStatusKey(const Scope& s, std::string_view status, std::string_view family) {
  return ScopeKey(s).Str(status).Str(family).Done();
}

// Per-family counters: the highest revision ever allocated and how many revisions are ACTIVE.
struct FamilyCounters {
  uint64_t latest = 0;
  uint64_t active = 0;
  uint64_t total = 0;  // revisions stored (any status)
};

std::string EncodeCounters(const FamilyCounters& c) {
  return fmt::format("{} {} {}", c.latest, c.active, c.total);
}

StatusOr<FamilyCounters> DecodeCounters(std::string_view text) {
  FamilyCounters c;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (uint64_t* field : {&c.latest, &c.active, &c.total}) {
    while (p < end && *p == ' ') ++p;
    auto [next, ec] = std::from_chars(p, end, *field);
    if (ec != std::errc()) return DataLoss("corrupt task definition family counters");
    p = next;
  }
  return c;
}

StatusOr<std::optional<FamilyCounters>> ReadCounters(store::ReadTxn& txn, const Scope& scope, std::string_view family) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kFamilies, FamilyKey(scope, family)));
  if (!v) return std::optional<FamilyCounters>();
  ASSIGN_OR_RETURN(FamilyCounters c, DecodeCounters(*v));
  return std::optional(c);
}

// Keeps taskdef_family_by_status in step with a family's counters: a family is ACTIVE while it
// has an ACTIVE revision, INACTIVE while it has revisions but none ACTIVE, and unlisted when empty.
Status WriteCounters(store::WriteTxn& txn, const Scope& scope, std::string_view family, const FamilyCounters& before,
                     const FamilyCounters& after) {
  auto state = [](const FamilyCounters& c) -> std::string_view {
    if (c.active > 0) return kActive;
    if (c.total > 0) return kInactive;
    return {};
  };
  std::string_view was = state(before), now = state(after);
  if (was != now) {
    if (!was.empty()) RETURN_IF_ERROR(txn.Delete(kFamilyByStatus, FamilyStatusKey(scope, was, family)));
    if (!now.empty()) RETURN_IF_ERROR(txn.Put(kFamilyByStatus, FamilyStatusKey(scope, now, family), ""));
  }
  return txn.Put(kFamilies, FamilyKey(scope, family), EncodeCounters(after));
}


std::string_view RecordStatus(const json::object& td) {
  auto it = td.find("status");
  return (it != td.end() && it->value().is_string()) ? std::string_view(it->value().get_string()) : std::string_view();
}

// The revision `ref` names: its own, or the family's latest ACTIVE one.
StatusOr<std::optional<uint64_t>> ResolveRevision(store::ReadTxn& txn, const Scope& scope, const Ref& ref) {
  if (ref.revision) return std::optional(*ref.revision);
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, store::PrefixRange(ScopeKey(scope).Str(kActive).Str(ref.family).Done()),
                                       1, store::Direction::kBackward));
  if (rows.empty()) return std::optional<uint64_t>();
  store::KeyReader r(rows[0].key);
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(std::string skip, r.Str());
  }
  ASSIGN_OR_RETURN(uint64_t rev, r.U64());
  return std::optional(rev);
}

struct Loaded {
  uint64_t revision;
  std::string text;
};

// Loads the record `ref` names, or fails with `missing` as a ClientException.
StatusOr<Loaded> Load(store::ReadTxn& txn, const Scope& scope, const Ref& ref, std::string_view missing) {
  ASSIGN_OR_RETURN(auto rev, ResolveRevision(txn, scope, ref));
  if (!rev) return ClientError(std::string(missing));
  ASSIGN_OR_RETURN(auto text, txn.Get(kTaskDefs, RevisionKey(scope, ref.family, *rev)));
  if (!text) return ClientError(std::string(missing));
  return Loaded{*rev, std::move(*text)};
}

constexpr std::string_view kUnableToDescribe = "Unable to describe task definition.";
constexpr std::string_view kDoesNotExist = "The specified task definition does not exist.";

bool ParseRevisionNumber(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

StatusOr<Ref> ParseRef(std::string_view text, const Scope& caller, std::string_view action, std::string_view caller_arn) {
  std::string_view body = text;
  if (body.substr(0, 4) == "arn:") {
    ASSIGN_OR_RETURN(EcsResource r, ParseEcsResourceArn(text));
    if (r.kind != ResourceKind::kTaskDefinition) return ParamError(fmt::format("Invalid task definition ARN: {}", text));
    RETURN_IF_ERROR(CheckArnScope(r, caller, text, action, caller_arn));
    body = text.substr(text.find("task-definition/") + 16);
  }
  Ref ref;
  size_t colon = body.rfind(':');
  std::string_view family = colon == std::string_view::npos ? body : body.substr(0, colon);
  if (colon != std::string_view::npos) {
    uint64_t rev = 0;
    if (!ParseRevisionNumber(body.substr(colon + 1), &rev) || rev == 0)
      return ClientError(fmt::format("Invalid revision number. Number: {}", body.substr(colon + 1)));
    ref.revision = rev;
  }
  if (family.empty() || family.size() > 255 || family.find_first_of(":/ ") != std::string_view::npos)
    return ClientError(fmt::format("Invalid family name: {}", family));
  ref.family = std::string(family);
  return ref;
}

StatusOr<Registered> TaskDefinitions::Register(const Scope& scope, std::string_view caller_arn, json::object input,
                                               TimePoint now) {
  ASSIGN_OR_RETURN(Validated v, ValidateRegister(std::move(input), rules_));
  const std::string family(v.definition.at("family").as_string());

  // The output document, in the member order AWS uses. Fields the caller set keep their values.
  auto take = [&](json::object& out, std::string_view key) {
    auto it = v.definition.find(key);
    if (it != v.definition.end()) out[key] = std::move(it->value());
  };

  Registered result;
  result.tags = v.tags;
  Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto existing, ReadCounters(txn, scope, family));
    FamilyCounters before = existing.value_or(FamilyCounters{});
    FamilyCounters after = before;
    after.latest += 1;
    after.active += 1;
    after.total += 1;
    const uint64_t rev = after.latest;
    const std::string arn = TaskDefinitionArn(scope, family, rev);

    json::object td;
    td["taskDefinitionArn"] = arn;
    json::object def = v.definition;  // copied: the closure must leave `v` reusable
    auto take_from = [&](std::string_view key) {
      auto it = def.find(key);
      if (it != def.end()) td[key] = it->value();
    };
    take_from("containerDefinitions");
    take_from("family");
    take_from("taskRoleArn");
    take_from("executionRoleArn");
    take_from("networkMode");
    td["revision"] = rev;
    take_from("volumes");
    td["status"] = kActive;
    td["requiresAttributes"] = v.requires_attributes;
    take_from("placementConstraints");
    json::array compat;
    for (const auto& c : v.compatibilities) compat.push_back(json::string(c));
    td["compatibilities"] = std::move(compat);
    for (std::string_view key : {"runtimePlatform", "requiresCompatibilities", "cpu", "memory", "inferenceAccelerators",
                                 "pidMode", "ipcMode", "proxyConfiguration"})
      take_from(key);
    td["registeredAt"] = EpochSeconds(now);
    td["registeredBy"] = caller_arn;
    take_from("ephemeralStorage");
    take_from("enableFaultInjection");

    result.task_definition = json::serialize(td);
    RETURN_IF_ERROR(txn.Put(kTaskDefs, RevisionKey(scope, family, rev), result.task_definition));
    RETURN_IF_ERROR(txn.Put(kByStatus, StatusKey(scope, kActive, family, rev), ""));
    RETURN_IF_ERROR(WriteCounters(txn, scope, family, before, after));
    return PutTags(txn, scope, arn, v.tags);
  });
  (void)take;
  if (!s.ok()) return s;
  return result;
}

StatusOr<Described> TaskDefinitions::Describe(const Scope& scope, const Ref& ref, bool include_tags) {
  Described out;
  // Repeatable: each run assigns what it reads.
  RETURN_IF_ERROR(store_.ReadRepeatable([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Loaded l, Load(txn, scope, ref, kUnableToDescribe));
    out.task_definition = std::move(l.text);
    if (include_tags) {
      ASSIGN_OR_RETURN(out.tags, ReadTags(txn, scope, TaskDefinitionArn(scope, ref.family, l.revision)));
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<Page> TaskDefinitions::List(const Scope& scope, const ListQuery& q) {
  Key prefix_key = ScopeKey(scope).Str(q.status);
  if (q.family) prefix_key.Str(*q.family);
  store::Range range = store::PrefixRange(prefix_key.Done());
  if (!q.after.empty()) {
    // `after` is the last key of the previous page.
    if (q.descending) range.end = q.after; else range.begin = store::KeySuccessor(q.after);
  }
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kByStatus, range, q.limit + 1,
                                         q.descending ? store::Direction::kBackward : store::Direction::kForward));
    bool more = rows.size() > q.limit;
    if (more) rows.pop_back();
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      for (int i = 0; i < 3; ++i) {
        ASSIGN_OR_RETURN(std::string skip, r.Str());
      }
      ASSIGN_OR_RETURN(std::string family, r.Str());
      ASSIGN_OR_RETURN(uint64_t rev, r.U64());
      page.items.push_back(TaskDefinitionArn(scope, family, rev));
    }
    if (more) page.next = rows.back().key;
    return OkStatus();
  }));
  return page;
}

StatusOr<Page> TaskDefinitions::ListFamilies(const Scope& scope, const FamilyQuery& q) {
  const bool all = q.status == "ALL";
  std::string_view table = all ? kFamilies : kFamilyByStatus;
  Key prefix_key = ScopeKey(scope);
  if (!all) prefix_key.Str(q.status);
  prefix_key.StrPrefix(q.prefix);
  store::Range range = store::PrefixRange(prefix_key.Done());
  if (!q.after.empty()) range.begin = store::KeySuccessor(q.after);
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, range, q.limit + 1));
    bool more = rows.size() > q.limit;
    if (more) rows.pop_back();
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      for (int i = 0; i < (all ? 2 : 3); ++i) {
        ASSIGN_OR_RETURN(std::string skip, r.Str());
      }
      ASSIGN_OR_RETURN(std::string family, r.Str());
      if (all) {
        ASSIGN_OR_RETURN(FamilyCounters c, DecodeCounters(row.value));
        if (c.total == 0) continue;  // every revision was deleted
      }
      page.items.push_back(std::move(family));
    }
    if (more) page.next = rows.back().key;
    return OkStatus();
  }));
  return page;
}

StatusOr<std::string> TaskDefinitions::Deregister(const Scope& scope, const Ref& ref, TimePoint now) {
  if (!ref.revision)
    return ClientError("A revision must be specified to deregister a task definition. Use family:revision or the full ARN.");
  std::string out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Loaded l, Load(txn, scope, ref, kDoesNotExist));
    ASSIGN_OR_RETURN(json::object td, ParseRecordObject(l.text, "task definition"));
    std::string_view status = RecordStatus(td);
    if (status != kActive) {  // repeating a deregister returns the revision unchanged, as AWS does
      out = std::move(l.text);
      return OkStatus();
    }
    td["status"] = kInactive;
    td["deregisteredAt"] = EpochSeconds(now);
    out = json::serialize(td);
    RETURN_IF_ERROR(txn.Put(kTaskDefs, RevisionKey(scope, ref.family, l.revision), out));
    RETURN_IF_ERROR(txn.Delete(kByStatus, StatusKey(scope, kActive, ref.family, l.revision)));
    RETURN_IF_ERROR(txn.Put(kByStatus, StatusKey(scope, kInactive, ref.family, l.revision), ""));
    ASSIGN_OR_RETURN(auto counters, ReadCounters(txn, scope, ref.family));
    if (!counters) return DataLoss("task definition family counters are missing");
    FamilyCounters after = *counters;
    after.active -= 1;
    return WriteCounters(txn, scope, ref.family, *counters, after);
  }));
  return out;
}

StatusOr<DeleteResult> TaskDefinitions::Delete(const Scope& scope, const std::vector<std::string>& refs,
                                               std::string_view caller_arn, TimePoint now) {
  DeleteResult result;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    result = DeleteResult{};
    for (const std::string& text : refs) {
      auto fail = [&](std::string reason) {
        result.failures.push_back({text, std::move(reason), {}});
      };
      auto ref = ParseRef(text, scope, "DeleteTaskDefinitions", caller_arn);
      if (!ref.ok()) {
        if (ref.status().code() == StatusCode::kPermissionDenied) return ref.status();
        fail("The specified task definition identifier is invalid. Specify a valid name or ARN and try again.");
        continue;
      }
      if (!ref->revision) {
        fail("The specified task definition identifier is invalid. Specify a valid name or ARN and try again.");
        continue;
      }
      ASSIGN_OR_RETURN(auto text_or, txn.Get(kTaskDefs, RevisionKey(scope, ref->family, *ref->revision)));
      if (!text_or) {
        fail("The specified task definition does not exist. Specify a valid account, family, revision and try again.");
        continue;
      }
      ASSIGN_OR_RETURN(json::object td, ParseRecordObject(*text_or, "task definition"));
      std::string_view status = RecordStatus(td);
      if (status == kActive) {
        fail("The specified task definition is still in ACTIVE status. Please deregister the target and try again.");
        continue;
      }
      if (status == kInactive) {
        td["status"] = kDeleteInProgress;
        td["deleteRequestedAt"] = EpochSeconds(now);
        RETURN_IF_ERROR(txn.Put(kTaskDefs, RevisionKey(scope, ref->family, *ref->revision), json::serialize(td)));
        RETURN_IF_ERROR(txn.Delete(kByStatus, StatusKey(scope, kInactive, ref->family, *ref->revision)));
        RETURN_IF_ERROR(txn.Put(kByStatus, StatusKey(scope, kDeleteInProgress, ref->family, *ref->revision), ""));
        RETURN_IF_ERROR(txn.Put(kDeleting, RevisionKey(scope, ref->family, *ref->revision), ""));
      }
      result.task_definitions.push_back(json::serialize(td));
    }
    return OkStatus();
  }));
  return result;
}

StatusOr<size_t> TaskDefinitions::ReapDeleting(const Scope& scope) {
  size_t removed = 0;
  store::Range range = store::PrefixRange(ScopeKey(scope).Done());
  while (true) {
    size_t batch = 0;
    bool more = false;
    std::string last_key;
    RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
      batch = 0;
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kDeleting, range, 200));
      more = rows.size() == 200;
      if (!rows.empty()) last_key = rows.back().key;
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        ASSIGN_OR_RETURN(std::string account, r.Str());
        ASSIGN_OR_RETURN(std::string region, r.Str());
        ASSIGN_OR_RETURN(std::string family, r.Str());
        ASSIGN_OR_RETURN(uint64_t rev, r.U64());
        bool referenced = false;
        for (ReferenceCheck* check : checks_) {
          ASSIGN_OR_RETURN(bool used, check->IsReferenced(txn, scope, family, rev));
          referenced = referenced || used;
        }
        if (referenced) continue;
        RETURN_IF_ERROR(txn.Delete(kDeleting, row.key));
        RETURN_IF_ERROR(txn.Delete(kTaskDefs, RevisionKey(scope, family, rev)));
        RETURN_IF_ERROR(txn.Delete(kByStatus, StatusKey(scope, kDeleteInProgress, family, rev)));
        RETURN_IF_ERROR(RemoveAllTags(txn, scope, TaskDefinitionArn(scope, family, rev)));
        ASSIGN_OR_RETURN(auto counters, ReadCounters(txn, scope, family));
        if (counters) {
          FamilyCounters after = *counters;
          after.total -= 1;
          RETURN_IF_ERROR(WriteCounters(txn, scope, family, *counters, after));
        }
        ++batch;
      }
      return OkStatus();
    }));
    removed += batch;
    if (!more) return removed;
    range.begin = store::KeySuccessor(last_key);  // still-referenced rows stay behind us
  }
}

StatusOr<size_t> TaskDefinitions::ReapAllDeleting() {
  size_t removed = 0;
  std::string begin;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<Scope> scope, NextScope(store_, kDeleting, begin));
    if (!scope) return removed;
    ASSIGN_OR_RETURN(size_t n, ReapDeleting(*scope));
    removed += n;
    begin = NextScopeBegin(*scope);
    if (begin.empty()) return removed;
  }
}

namespace {
// Tags belong to one revision: a reference without one names no taggable resource.
Status RequireRevision(const Ref& ref) {
  return ref.revision ? OkStatus() : ParamError("The ARN provided is invalid.");
}
}  // namespace

Status TaskDefinitions::TagResource(const Scope& scope, const Ref& ref, const Tags& tags) {
  RETURN_IF_ERROR(RequireRevision(ref));
  RETURN_IF_ERROR(ValidateTags(tags));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Loaded l, Load(txn, scope, ref, kDoesNotExist));
    return PutTags(txn, scope, TaskDefinitionArn(scope, ref.family, l.revision), tags);
  });
}

Status TaskDefinitions::UntagResource(const Scope& scope, const Ref& ref, const std::vector<std::string>& keys) {
  RETURN_IF_ERROR(RequireRevision(ref));
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Loaded l, Load(txn, scope, ref, kDoesNotExist));
    return RemoveTags(txn, scope, TaskDefinitionArn(scope, ref.family, l.revision), keys);
  });
}

StatusOr<Tags> TaskDefinitions::ListTags(const Scope& scope, const Ref& ref) {
  RETURN_IF_ERROR(RequireRevision(ref));
  Tags out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Loaded l, Load(txn, scope, ref, kDoesNotExist));
    ASSIGN_OR_RETURN(out, ReadTags(txn, scope, TaskDefinitionArn(scope, ref.family, l.revision)));
    return OkStatus();
  }));
  return out;
}

StatusOr<LaunchView> TaskDefinitions::ResolveForLaunch(const Scope& scope, const Ref& ref, InactiveRevision inactive) {
  LaunchView view;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Loaded l, Load(txn, scope, ref, kUnableToDescribe));
    ASSIGN_OR_RETURN(json::object td, ParseRecordObject(l.text, "task definition"));
    std::string_view status = RecordStatus(td);
    if (status != kActive && inactive == InactiveRevision::kRefuse)
      return ClientError(fmt::format("TaskDefinition is inactive: {}", TaskDefinitionArn(scope, ref.family, l.revision)));
    auto str = [&](std::string_view key) {
      auto it = td.find(key);
      return (it != td.end() && it->value().is_string()) ? std::string(it->value().get_string()) : std::string();
    };
    view.arn = TaskDefinitionArn(scope, ref.family, l.revision);
    view.family = ref.family;
    view.revision = l.revision;
    view.task_role_arn = str("taskRoleArn");
    view.execution_role_arn = str("executionRoleArn");
    view.network_mode = str("networkMode");
    view.cpu = str("cpu");
    view.memory = str("memory");
    if (auto it = td.find("compatibilities"); it != td.end())
      for (const auto& c : it->value().as_array()) view.compatibilities.emplace_back(c.as_string());
    json::object def;
    // pidMode and ipcMode: the agent honours (or, without host access, refuses) "host". The roles:
    // the agent gives a task with a taskRoleArn its credentials endpoint (agent/control.h
    // TaskRoleArnOf), and the control plane mints them from this same pinned copy.
    for (std::string_view key : {"networkMode", "pidMode", "ipcMode", "containerDefinitions", "volumes", "taskRoleArn",
                                 "executionRoleArn"})
      if (auto it = td.find(key); it != td.end()) def[key] = it->value();
    view.definition = json::serialize(def);
    if (auto it = td.find("containerDefinitions"); it != td.end() && it->value().is_array()) {
      auto str_of = [](const json::object& o, std::string_view key) {
        auto m = o.find(key);
        return m != o.end() && m->value().is_string() ? std::string(m->value().get_string()) : std::string();
      };
      auto int_of = [](const json::object& o, std::string_view key) -> int64_t {
        auto m = o.find(key);
        return m != o.end() && m->value().is_number() ? m->value().to_number<int64_t>() : 0;
      };
      for (const auto& c : it->value().as_array()) {
        if (!c.is_object()) continue;
        const json::object& o = c.as_object();
        auto essential = o.find("essential");
        const bool is_essential = essential == o.end() || !essential->value().is_bool() || essential->value().get_bool();
        if (is_essential && o.contains("healthCheck")) view.health_checks = true;
        ContainerView& cv = view.containers.emplace_back();
        cv.name = str_of(o, "name");
        cv.image = str_of(o, "image");
        cv.essential = is_essential;
        cv.cpu = int_of(o, "cpu");
        cv.memory = int_of(o, "memory");
        cv.memory_reservation = int_of(o, "memoryReservation");
        if (auto pm = o.find("portMappings"); pm != o.end() && pm->value().is_array())
          for (const auto& m : pm->value().as_array()) {
            if (!m.is_object()) continue;
            PortMappingView& p = cv.port_mappings.emplace_back();
            p.container_port = int_of(m.as_object(), "containerPort");
            p.host_port = int_of(m.as_object(), "hostPort");
            if (std::string protocol = str_of(m.as_object(), "protocol"); !protocol.empty()) p.protocol = protocol;
          }
      }
    }
    if (auto it = td.find("requiresAttributes"); it != td.end() && it->value().is_array()) {
      for (const auto& a : it->value().as_array()) {
        if (!a.is_object()) continue;
        const json::object& o = a.as_object();
        std::optional<std::string> value;
        if (auto v = o.find("value"); v != o.end() && v->value().is_string()) value = std::string(v->value().get_string());
        auto n = o.find("name");
        if (n != o.end() && n->value().is_string()) view.requires_attributes.emplace_back(n->value().get_string(), value);
      }
    }
    if (auto it = td.find("placementConstraints"); it != td.end() && it->value().is_array())
      view.placement_constraints = it->value().get_array();
    return OkStatus();
  }));
  return view;
}

Status TaskDefinitions::CheckLaunchable(store::ReadTxn& txn, const Scope& scope, const LaunchView& view,
                                        InactiveRevision inactive) {
  // The status index answers without reading or parsing the record: on a launch's path, one Get
  // for the usual ACTIVE revision.
  auto has = [&](std::string_view status) -> StatusOr<bool> {
    ASSIGN_OR_RETURN(auto row, txn.Get(kByStatus, StatusKey(scope, status, view.family, view.revision)));
    return row.has_value();
  };
  ASSIGN_OR_RETURN(bool active, has(kActive));
  if (active) return OkStatus();
  // As ResolveForLaunch: a service's pinned revision may be INACTIVE or DELETE_IN_PROGRESS (AWS:
  // services using a deleting revision still scale); only one reaped since is gone for it too.
  ASSIGN_OR_RETURN(bool deregistered, has(kInactive));
  ASSIGN_OR_RETURN(bool deleting, has(kDeleteInProgress));
  if (!deregistered && !deleting) return ClientError(std::string(kUnableToDescribe));
  if (inactive == InactiveRevision::kRefuse)
    return ClientError(fmt::format("TaskDefinition is inactive: {}", view.arn));
  return OkStatus();
}

Status TaskDefinitions::ReapAccount(const AccountId& account) {
  for (std::string_view table : {kTaskDefs, kFamilies, kByStatus, kFamilyByStatus, kDeleting})
    RETURN_IF_ERROR(ReapAccountRows(store_, table, account));
  return OkStatus();
}

}  // namespace paddock::ecs::taskdef
