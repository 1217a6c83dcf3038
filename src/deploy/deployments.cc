// deploy/deployments: the records, kept as JSON values under tuple keys (store/key.h):
//
//   deployments          (id)                -> the Deployment as JSON (times as epoch ms)
//   deployments_by_time  (created ms, id)    -> ""
//   deploy_active        (project, group)    -> id
//   deploy_events        (id, seq)           -> {"at_ms", "kind", "message"}
//   deploy_event_keys    (id, dedupe key)    -> seq, in decimal
//   deploy_env           (project, name)     -> {"value", "secret"}
#include "deploy/deployments.h"

#include <algorithm>
#include <cstdint>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "common/json_fields.h"
#include "store/key.h"

namespace paddock::deploy {

std::string_view StateName(State s) {
  switch (s) {
    case State::kPending: return "Pending";
    case State::kDeploying: return "Deploying";
    case State::kHealthy: return "Healthy";
    case State::kUnhealthy: return "Unhealthy";
    case State::kSuperseded: return "Superseded";
    case State::kStopped: return "Stopped";
    case State::kExpired: return "Expired";
    case State::kFailed: return "Failed";
  }
  return "Pending";
}

std::optional<State> ParseState(std::string_view s) {
  for (State st : {State::kPending, State::kDeploying, State::kHealthy, State::kUnhealthy, State::kSuperseded,
                   State::kStopped, State::kExpired, State::kFailed}) {
    if (StateName(st) == s) return st;
  }
  return std::nullopt;
}

bool IsTerminal(State s) {
  return s == State::kSuperseded || s == State::kStopped || s == State::kExpired || s == State::kFailed;
}

bool CanTransition(State from, State to) {
  switch (from) {
    case State::kPending:
      return to == State::kDeploying || to == State::kFailed || to == State::kStopped || to == State::kExpired;
    case State::kDeploying:
      return to == State::kHealthy || to == State::kFailed || to == State::kStopped || to == State::kExpired;
    case State::kHealthy:
      return to == State::kUnhealthy || to == State::kSuperseded || to == State::kStopped || to == State::kExpired;
    case State::kUnhealthy:
      return to == State::kHealthy || to == State::kSuperseded || to == State::kStopped || to == State::kExpired ||
             to == State::kFailed;
    case State::kSuperseded:
    case State::kStopped:
    case State::kExpired:
    case State::kFailed:
      return false;
  }
  return false;
}

namespace {

namespace json = boost::json;
using store::Key;
using store::KeyReader;
using store::PrefixRange;
using store::Range;
using store::ReadTxn;
using store::Row;
using store::WriteTxn;

constexpr std::string_view kDeployments = "deployments";
constexpr std::string_view kByTime = "deployments_by_time";
constexpr std::string_view kActive = "deploy_active";
constexpr std::string_view kEvents = "deploy_events";
constexpr std::string_view kEventKeys = "deploy_event_keys";
constexpr std::string_view kEnv = "deploy_env";
constexpr std::string_view kUnfinished = "deploy_unfinished";

constexpr size_t kMaxEnvValue = 4096;
// The most index rows one List call reads when it filters, so a filter that matches little
// answers with a token to continue instead of reading the whole history.
constexpr size_t kListScanBudget = 1000;
constexpr size_t kScanChunk = 200;
constexpr int kMaxEventsPerCall = 1000;

// ---- validation ----

bool IsLabel(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || !(s[0] >= 'a' && s[0] <= 'z') || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// As ContainerSpec::env's names (spec.h): letters, digits and '_', not starting with a digit;
// PORT and PADDOCK_* are Paddock's own.
Status CheckEnvName(std::string_view name) {
  bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
            std::all_of(name.begin(), name.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
            });
  if (!ok) {
    return InvalidArgument(fmt::format(
        "env name \"{}\" is not a valid variable name (letters, digits and '_', not starting with a digit)", name));
  }
  if (name == "PORT" || name.starts_with("PADDOCK_")) {
    return InvalidArgument(fmt::format("env name \"{}\" is set by Paddock (PORT and PADDOCK_* are reserved)", name));
  }
  return OkStatus();
}

Status CheckProject(std::string_view project) {
  if (IsLabel(project, 63)) return OkStatus();
  return InvalidArgument(fmt::format(
      "project \"{}\" must be 1 to 63 lowercase letters, digits and '-', starting with a letter", project));
}

// ---- keys ----

std::string DeploymentKey(std::string_view id) { return Key().Str(id).Done(); }
std::string ByTimeKey(TimePoint created, std::string_view id) {
  return Key().U64(static_cast<uint64_t>(EpochMillis(created))).Str(id).Done();
}
std::string ActiveKey(std::string_view project, std::string_view group) { return Key().Str(project).Str(group).Done(); }
std::string EventKey(std::string_view id, uint64_t seq) { return Key().Str(id).U64(seq).Done(); }
std::string EventDedupeKey(std::string_view id, std::string_view dedupe) { return Key().Str(id).Str(dedupe).Done(); }
std::string EnvKey(std::string_view project, std::string_view name) { return Key().Str(project).Str(name).Done(); }

// ---- the record's JSON ----

json::value OptTime(const std::optional<TimePoint>& t) {
  return t ? json::value(EpochMillis(*t)) : json::value(nullptr);
}

std::optional<TimePoint> ReadOptTime(const json::object& o, std::string_view key) {
  std::optional<int64_t> ms = json_fields::Int(o, key);
  if (!ms) return std::nullopt;
  return FromEpochMillis(*ms);
}

json::object StringMap(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

std::map<std::string, std::string> ReadStringMap(const json::object& o) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : o) {
    if (v.is_string()) m.emplace(std::string(k), std::string(v.get_string()));
  }
  return m;
}

std::string Encode(const Deployment& d) {
  json::array tasks;
  for (const TaskObservation& t : d.tasks) {
    json::object o{{"task_arn", t.task_arn},
                   {"container", t.container},
                   {"last_status", t.last_status},
                   {"health", t.health},
                   {"address", t.address},
                   {"stopped_reason", t.stopped_reason}};
    if (t.exit_code) o["exit_code"] = *t.exit_code;
    tasks.emplace_back(std::move(o));
  }
  json::object o{
      {"id", d.id},
      {"project", d.project},
      {"group", d.group},
      {"environment", d.environment},
      {"from", d.from},
      {"spec", ToJson(d.spec)},
      {"env", StringMap(d.env)},
      {"secrets", StringMap(d.secrets)},
      {"state", StateName(d.state)},
      {"reason", d.reason},
      {"active", d.active},
      {"created_at_ms", EpochMillis(d.created_at)},
      {"deploying_since_ms", OptTime(d.deploying_since)},
      {"healthy_since_ms", OptTime(d.healthy_since)},
      {"expires_at_ms", OptTime(d.expires_at)},
      {"finished_at_ms", OptTime(d.finished_at)},
      {"retiring_since_ms", OptTime(d.retiring_since)},
      {"retired", d.retired},
      {"applied_hashes", StringMap(d.applied_hashes)},
      {"tasks", std::move(tasks)},
  };
  if (!d.identity_credential_hash.empty()) o["identity_credential_hash"] = d.identity_credential_hash;
  return json::serialize(o);
}

StatusOr<Deployment> Decode(std::string_view id, std::string_view text) {
  auto corrupt = [&](std::string_view what) {
    return DataLoss(fmt::format("corrupt deployment record {}: {}", id, what));
  };
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return corrupt("not a JSON object");
  const json::object& o = v.get_object();
  Deployment d;
  d.id = json_fields::Str(o, "id");
  d.project = json_fields::Str(o, "project");
  d.group = json_fields::Str(o, "group");
  d.environment = json_fields::Str(o, "environment");
  d.from = json_fields::Str(o, "from");
  const json::value* spec = o.if_contains("spec");
  if (spec == nullptr) return corrupt("no spec");
  StatusOr<AppSpec> app = AppSpecFromJson(*spec);
  if (!app.ok()) return corrupt(app.status().message());
  d.spec = std::move(*app);
  d.env = ReadStringMap(json_fields::Obj(o, "env"));
  d.secrets = ReadStringMap(json_fields::Obj(o, "secrets"));
  std::optional<State> state = ParseState(json_fields::StrView(o, "state"));
  if (!state) return corrupt(fmt::format("unknown state \"{}\"", json_fields::StrView(o, "state")));
  d.state = *state;
  d.reason = json_fields::Str(o, "reason");
  d.active = json_fields::Bool(o, "active").value_or(false);
  std::optional<TimePoint> created = ReadOptTime(o, "created_at_ms");
  if (!created) return corrupt("no created_at_ms");
  d.created_at = *created;
  d.deploying_since = ReadOptTime(o, "deploying_since_ms");
  d.healthy_since = ReadOptTime(o, "healthy_since_ms");
  d.expires_at = ReadOptTime(o, "expires_at_ms");
  d.finished_at = ReadOptTime(o, "finished_at_ms");
  d.retiring_since = ReadOptTime(o, "retiring_since_ms");
  d.retired = json_fields::Bool(o, "retired").value_or(false);
  d.applied_hashes = ReadStringMap(json_fields::Obj(o, "applied_hashes"));
  d.identity_credential_hash = json_fields::Str(o, "identity_credential_hash");
  if (const json::value* tasks = o.if_contains("tasks"); tasks != nullptr && tasks->is_array()) {
    for (const json::value& tv : tasks->get_array()) {
      if (!tv.is_object()) continue;
      const json::object& t = tv.get_object();
      TaskObservation obs{.task_arn = json_fields::Str(t, "task_arn"),
                          .container = json_fields::Str(t, "container"),
                          .last_status = json_fields::Str(t, "last_status"),
                          .health = json_fields::Str(t, "health"),
                          .address = json_fields::Str(t, "address"),
                          .stopped_reason = json_fields::Str(t, "stopped_reason"),
                          .exit_code = std::nullopt};
      if (std::optional<int64_t> code = json_fields::Int(t, "exit_code")) obs.exit_code = static_cast<int>(*code);
      d.tasks.push_back(std::move(obs));
    }
  }
  return d;
}

Status NotFoundError(std::string_view id) { return NotFound(fmt::format("Deployment {} not found.", id)); }

StatusOr<Deployment> Load(ReadTxn& txn, std::string_view id) {
  ASSIGN_OR_RETURN(std::optional<std::string> v, txn.Get(kDeployments, DeploymentKey(id)));
  if (!v) return NotFoundError(id);
  return Decode(id, *v);
}

Status Save(WriteTxn& txn, const Deployment& d) { return txn.Put(kDeployments, DeploymentKey(d.id), Encode(d)); }

// ---- events ----

StatusOr<uint64_t> LastSeq(ReadTxn& txn, std::string_view id) {
  ASSIGN_OR_RETURN(std::vector<Row> rows,
                   txn.Scan(kEvents, PrefixRange(Key().Str(id).Done()), 1, store::Direction::kBackward));
  if (rows.empty()) return uint64_t{0};
  KeyReader r(rows[0].key);
  RETURN_IF_ERROR(r.Str().status());
  return r.U64();
}

// A deployment keeps its newest kEventsKept events: each one appended past that evicts the oldest,
// with the dedupe key that admitted it. By then ECS no longer lists that event (it keeps a
// service's last 100, and a deployment has at most 9 services), so it is not forwarded again.
constexpr uint64_t kEventsKept = 2000;

Status PutEvent(WriteTxn& txn, std::string_view id, uint64_t seq, TimePoint at, std::string_view kind,
                std::string_view message, std::string_view dedupe_key = {}) {
  json::object o{{"at_ms", EpochMillis(at)}, {"kind", kind}, {"message", message}};
  if (!dedupe_key.empty()) o["dedupe"] = dedupe_key;
  RETURN_IF_ERROR(txn.Put(kEvents, EventKey(id, seq), json::serialize(o)));
  if (seq <= kEventsKept) return OkStatus();
  const std::string oldest = EventKey(id, seq - kEventsKept);
  ASSIGN_OR_RETURN(std::optional<std::string> evicted, txn.Get(kEvents, oldest));
  if (!evicted) return OkStatus();
  boost::system::error_code ec;
  json::value v = json::parse(*evicted, ec);
  if (!ec && v.is_object()) {
    if (std::string key = json_fields::Str(v.get_object(), "dedupe"); !key.empty()) {
      RETURN_IF_ERROR(txn.Delete(kEventKeys, EventDedupeKey(id, key)));
    }
  }
  return txn.Delete(kEvents, oldest);
}

// Appends one event after the deployment's last one.
Status AppendEvent(WriteTxn& txn, std::string_view id, TimePoint at, std::string_view kind, std::string_view message) {
  ASSIGN_OR_RETURN(uint64_t last, LastSeq(txn, id));
  return PutEvent(txn, id, last + 1, at, kind, message);
}

std::string StateMessage(State from, State to, std::string_view reason) {
  std::string m = fmt::format("{} -> {}", StateName(from), StateName(to));
  if (!reason.empty()) m += fmt::format(": {}", reason);
  return m;
}

// ---- state changes, inside a caller's transaction ----

Status CheckFence(ReadTxn& txn, const Fence& fence, TimePoint now) {
  if (fence.lease == nullptr) return OkStatus();
  return fence.lease->CheckFence(txn, fence.epoch, now);
}

// Moves `d` (already loaded) to `to` and saves it, with everything the move implies: the event,
// the timestamps, becoming active (superseding the group's previous active deployment) and, at a
// terminal state, leaving the active slot.
Status ApplyTransition(WriteTxn& txn, Deployment& d, State to, std::string_view reason, TimePoint now) {
  if (d.state == to) return OkStatus();
  if (!CanTransition(d.state, to)) {
    return FailedPrecondition(fmt::format("Deployment {} cannot go from {} to {}.", d.id, StateName(d.state),
                                          StateName(to)));
  }
  const State from = d.state;
  d.state = to;
  d.reason = std::string(reason);
  if (to == State::kDeploying && !d.deploying_since) d.deploying_since = now;
  if (to == State::kHealthy && !d.healthy_since) {
    d.healthy_since = now;
    const std::string active_key = ActiveKey(d.project, d.group);
    ASSIGN_OR_RETURN(std::optional<std::string> previous, txn.Get(kActive, active_key));
    if (previous && *previous != d.id) {
      StatusOr<Deployment> prev = Load(txn, *previous);
      if (!prev.ok()) {
        return DataLoss(fmt::format("deploy_active for {}/{} names {}: {}", d.project, d.group, *previous,
                                    prev.status().message()));
      }
      RETURN_IF_ERROR(ApplyTransition(txn, *prev, State::kSuperseded, fmt::format("superseded by {}", d.id), now));
    }
    RETURN_IF_ERROR(txn.Put(kActive, active_key, d.id));
    d.active = true;
  }
  if (IsTerminal(to)) {
    d.finished_at = now;
    if (d.active) {
      const std::string active_key = ActiveKey(d.project, d.group);
      ASSIGN_OR_RETURN(std::optional<std::string> current, txn.Get(kActive, active_key));
      // Checked, not assumed: the slot is this deployment's unless the record and the index disagree.
      if (current && *current == d.id) RETURN_IF_ERROR(txn.Delete(kActive, active_key));
      d.active = false;
    }
  }
  RETURN_IF_ERROR(AppendEvent(txn, d.id, now, "state", StateMessage(from, to, reason)));
  return Save(txn, d);
}

// ---- page tokens ----
//
// A token is "<base64url of the last index key read>.<hex FNV-1a of (filters, that key)>". The
// check catches a token altered or made for other filters; forging one gains nothing (it only
// chooses where a listing of the caller's own deployments resumes), so it needs no secret.

std::string TokenContext(std::string_view project, std::string_view group) {
  return fmt::format("deployments|{}|{}|", project, group);
}

std::string EncodeToken(std::string_view project, std::string_view group, std::string_view position) {
  return fmt::format("{}.{:016x}", Base64UrlEncode(position), Fnv1a64(TokenContext(project, group) + std::string(position)));
}

StatusOr<std::string> DecodeToken(std::string_view project, std::string_view group, std::string_view token) {
  Status bad = InvalidArgument("The nextToken is not valid for this listing.");
  size_t dot = token.rfind('.');
  if (dot == std::string_view::npos) return bad;
  StatusOr<std::string> position = Base64UrlDecode(token.substr(0, dot));
  if (!position.ok() || position->empty()) return bad;
  if (token.substr(dot + 1) != fmt::format("{:016x}", Fnv1a64(TokenContext(project, group) + *position))) return bad;
  KeyReader r(*position);
  if (!r.U64().ok() || !r.Str().ok() || !r.AtEnd()) return bad;
  return std::move(*position);
}

// "20261203-183012-": the UTC time of `t` to the second.
std::string IdTimePrefix(TimePoint t) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(t);
  const auto day = floor<days>(secs);
  const year_month_day ymd(day);
  const hh_mm_ss<seconds> hms(secs - day);
  return fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}-", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count());
}

}  // namespace

StatusOr<Deployment> Deployments::Create(const NewDeployment& nd) {
  RETURN_IF_ERROR(CheckProject(nd.project));
  if (nd.spec.project != nd.project) {
    return InvalidArgument(
        fmt::format("the app spec is for project \"{}\", not \"{}\"", nd.spec.project, nd.project));
  }
  if (!IsLabel(nd.group, 63)) {
    return InvalidArgument(fmt::format(
        "group \"{}\" must be 1 to 63 lowercase letters, digits and '-', starting with a letter", nd.group));
  }
  if (std::optional<SpecProblem> problem = CheckAppSpec(nd.spec)) return InvalidArgument(problem->message);
  if (nd.expire_after && nd.expire_after->count() <= 0) {
    return InvalidArgument(fmt::format("expire_after must be positive (got {}s)", nd.expire_after->count()));
  }
  const TimePoint now = clock_.Now();
  Deployment d;
  d.project = nd.project;
  d.group = nd.group;
  d.environment = nd.environment;
  d.from = nd.from;
  d.spec = nd.spec;
  d.state = State::kPending;
  d.created_at = FromEpochMillis(EpochMillis(now));  // as stored, so Create's answer equals Get's
  if (nd.expire_after) d.expires_at = d.created_at + *nd.expire_after;

  Status s = store_.Write([&](WriteTxn& txn) -> Status {
    if (nd.host_of) {
      // Project "shop-staging" (default group) and project "shop" (group "staging") would answer at
      // one host: the second to come is refused rather than sharing (or taking) the other's URL.
      const std::string host = nd.host_of(d.project, d.group);
      Range range;
      while (true) {
        ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kUnfinished, range, kScanChunk));
        for (const Row& row : rows) {
          ASSIGN_OR_RETURN(std::string id, KeyReader(row.key).Str());
          ASSIGN_OR_RETURN(Deployment other, Load(txn, id));
          if ((other.project != d.project || other.group != d.group) && nd.host_of(other.project, other.group) == host) {
            return AlreadyExists(fmt::format("{} is already the host of project {} (group {}): choose another project "
                                             "or group name",
                                             host, other.project, other.group));
          }
        }
        if (rows.size() < kScanChunk) break;
        range.begin = store::KeySuccessor(rows.back().key);
      }
    }
    d.env.clear();
    d.secrets.clear();
    std::vector<Row> env;
    if (!d.from.empty()) {
      // A redeploy takes the earlier deployment's env and secrets as they were: its exact workload.
      ASSIGN_OR_RETURN(Deployment from, Load(txn, d.from));
      if (from.project != d.project) {
        return InvalidArgument(fmt::format("deployment {} is of project {}, not {}", d.from, from.project, d.project));
      }
      d.env = from.env;
      d.secrets = from.secrets;
      // A retired deployment's secret values are forgotten (MarkRetired): take the project's own.
      for (auto& [name, value] : d.secrets) {
        if (!value.empty()) continue;
        ASSIGN_OR_RETURN(std::optional<std::string> current, txn.Get(kEnv, EnvKey(d.project, name)));
        if (current) {
          boost::system::error_code ec;
          json::value v = json::parse(*current, ec);
          if (!ec && v.is_object() && json_fields::Bool(v.as_object(), "secret").value_or(false)) {
            value = json_fields::Str(v.as_object(), "value");
          }
        }
        if (value.empty()) {
          return FailedPrecondition(fmt::format("deployment {}'s secret {} is gone (it is retired) and project {} has "
                                                "none: set it (paddock env set --secret {} {} VALUE) and redeploy",
                                                d.from, name, d.project, d.project, name));
        }
      }
    } else {
      ASSIGN_OR_RETURN(env, txn.Scan(kEnv, PrefixRange(Key().Str(d.project).Done()), SIZE_MAX));
    }
    for (const Row& row : env) {
      KeyReader r(row.key);
      RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(std::string name, r.Str());
      boost::system::error_code ec;
      json::value v = json::parse(row.value, ec);
      if (ec || !v.is_object()) return DataLoss(fmt::format("corrupt env var {} of {}", name, d.project));
      const json::object& o = v.get_object();
      (json_fields::Bool(o, "secret").value_or(false) ? d.secrets : d.env)[name] = json_fields::Str(o, "value");
    }
    // Four random characters make a collision within one second unlikely, not impossible.
    for (int attempt = 0;; ++attempt) {
      d.id = IdTimePrefix(now) + RandomString(4, "abcdefghijklmnopqrstuvwxyz0123456789");
      ASSIGN_OR_RETURN(std::optional<std::string> taken, txn.Get(kDeployments, DeploymentKey(d.id)));
      if (!taken) break;
      if (attempt == 16) return Internal("could not choose an unused deployment id");
    }
    RETURN_IF_ERROR(Save(txn, d));
    RETURN_IF_ERROR(txn.Put(kByTime, ByTimeKey(d.created_at, d.id), ""));
    RETURN_IF_ERROR(txn.Put(kUnfinished, DeploymentKey(d.id), ""));
    std::string message = std::string(StateName(State::kPending));
    if (!d.from.empty()) message += fmt::format(": redeploys {}", d.from);
    return PutEvent(txn, d.id, 1, now, "state", message);
  });
  if (!s.ok()) return s;
  return d;
}

StatusOr<Deployment> Deployments::Get(std::string_view id) {
  std::optional<Deployment> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(out, Load(txn, id));
    return OkStatus();
  }));
  return std::move(*out);
}

StatusOr<DeploymentPage> Deployments::List(std::string_view project, std::string_view group,
                                           std::string_view next_token, int limit) {
  if (limit < 1 || limit > 100) return InvalidArgument(fmt::format("limit must be between 1 and 100 (got {})", limit));
  Range range;  // newest first: scanned backward from range.end (exclusive; empty: the newest)
  if (!next_token.empty()) {
    ASSIGN_OR_RETURN(range.end, DecodeToken(project, group, next_token));
  }
  const bool filtered = !project.empty() || !group.empty();
  const size_t want = static_cast<size_t>(limit);
  DeploymentPage page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    size_t scanned = 0;
    std::string position = range.end;
    while (true) {
      // Unfiltered: one row past the page tells whether there is a next one.
      size_t chunk = filtered ? std::min(kScanChunk, kListScanBudget - scanned) : want + 1;
      ASSIGN_OR_RETURN(std::vector<Row> rows,
                       txn.Scan(kByTime, {.begin = "", .end = position}, chunk, store::Direction::kBackward));
      for (size_t i = 0; i < rows.size(); ++i) {
        if (page.deployments.size() == want) {
          // A row remains past a full page.
          page.next_token = EncodeToken(project, group, position);
          return OkStatus();
        }
        KeyReader r(rows[i].key);
        RETURN_IF_ERROR(r.U64().status());
        ASSIGN_OR_RETURN(std::string id, r.Str());
        position = rows[i].key;
        ++scanned;
        ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
        if ((!project.empty() && d.project != project) || (!group.empty() && d.group != group)) continue;
        page.deployments.push_back(std::move(d));
      }
      if (rows.size() < chunk) return OkStatus();  // the index is exhausted
      if (page.deployments.size() == want || scanned >= kListScanBudget) {
        page.next_token = EncodeToken(project, group, position);
        return OkStatus();
      }
    }
  }));
  return page;
}

StatusOr<std::vector<Deployment>> Deployments::Unfinished() {
  std::vector<Deployment> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    Range range;
    while (true) {
      ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kUnfinished, range, kScanChunk));
      for (const Row& row : rows) {
        ASSIGN_OR_RETURN(std::string id, KeyReader(row.key).Str());
        ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
        if (!IsTerminal(d.state) || !d.retired) out.push_back(std::move(d));
      }
      if (rows.size() < kScanChunk) return OkStatus();
      range.begin = store::KeySuccessor(rows.back().key);
    }
  }));
  std::sort(out.begin(), out.end(), [](const Deployment& a, const Deployment& b) {
    return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
  });
  return out;
}

Status Deployments::Transition(std::string_view id, State to, std::string_view reason, const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    return ApplyTransition(txn, d, to, reason, now);
  });
}

Status Deployments::Stop(std::string_view id, std::string_view reason) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    if (IsTerminal(d.state)) {
      return FailedPrecondition(fmt::format("Deployment {} is already {}.", id, StateName(d.state)));
    }
    return ApplyTransition(txn, d, State::kStopped, reason, now);
  });
}

Status Deployments::RecordApplied(std::string_view id, std::string_view container, std::string_view hash,
                                  const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    d.applied_hashes[std::string(container)] = std::string(hash);
    return Save(txn, d);
  });
}

Status Deployments::RecordTasks(std::string_view id, const std::vector<TaskObservation>& tasks, const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    d.tasks = tasks;
    return Save(txn, d);
  });
}

Status Deployments::MarkRetiring(std::string_view id, const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    if (d.retiring_since) return OkStatus();
    d.retiring_since = now;
    return Save(txn, d);
  });
}

Status Deployments::SetIdentityCredentialHash(std::string_view id, std::string_view hash, const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    if (d.identity_credential_hash == hash) return OkStatus();
    if (!d.identity_credential_hash.empty()) {
      return AlreadyExists(fmt::format("Deployment {} has its identity credential already.", id));
    }
    d.identity_credential_hash = std::string(hash);
    return Save(txn, d);
  });
}

Status Deployments::MarkRetired(std::string_view id, const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(Deployment d, Load(txn, id));
    if (!IsTerminal(d.state)) {
      return FailedPrecondition(
          fmt::format("Deployment {} is {}: only a finished deployment is retired.", id, StateName(d.state)));
    }
    if (d.retired) return OkStatus();
    d.retired = true;
    for (auto& [name, value] : d.secrets) value.clear();
    RETURN_IF_ERROR(txn.Delete(kUnfinished, DeploymentKey(d.id)));
    return Save(txn, d);
  });
}

Status Deployments::AppendEvents(std::string_view id, const std::vector<NewEvent>& events, const Fence& fence) {
  const TimePoint now = clock_.Now();
  return store_.Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckFence(txn, fence, now));
    ASSIGN_OR_RETURN(std::optional<std::string> exists, txn.Get(kDeployments, DeploymentKey(id)));
    if (!exists) return NotFoundError(id);
    ASSIGN_OR_RETURN(uint64_t seq, LastSeq(txn, id));
    for (const NewEvent& e : events) {
      if (!e.dedupe_key.empty()) {
        const std::string key = EventDedupeKey(id, e.dedupe_key);
        ASSIGN_OR_RETURN(std::optional<std::string> seen, txn.Get(kEventKeys, key));
        if (seen) continue;
        RETURN_IF_ERROR(txn.Put(kEventKeys, key, fmt::format("{}", seq + 1)));
      }
      RETURN_IF_ERROR(PutEvent(txn, id, ++seq, now, e.kind, e.message, e.dedupe_key));
    }
    return OkStatus();
  });
}

StatusOr<std::vector<Event>> Deployments::Events(std::string_view id, uint64_t after_seq, int limit) {
  if (limit < 1) return InvalidArgument(fmt::format("limit must be positive (got {})", limit));
  std::vector<Event> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::optional<std::string> exists, txn.Get(kDeployments, DeploymentKey(id)));
    if (!exists) return NotFoundError(id);
    if (after_seq == UINT64_MAX) return OkStatus();
    Range range = PrefixRange(Key().Str(id).Done());
    range.begin = EventKey(id, after_seq + 1);
    ASSIGN_OR_RETURN(std::vector<Row> rows,
                     txn.Scan(kEvents, range, static_cast<size_t>(std::min(limit, kMaxEventsPerCall))));
    for (const Row& row : rows) {
      KeyReader r(row.key);
      RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(uint64_t seq, r.U64());
      boost::system::error_code ec;
      json::value v = json::parse(row.value, ec);
      if (ec || !v.is_object()) return DataLoss(fmt::format("corrupt event {} of deployment {}", seq, id));
      const json::object& o = v.get_object();
      out.push_back({.seq = seq,
                     .at = FromEpochMillis(json_fields::Int(o, "at_ms").value_or(0)),
                     .kind = json_fields::Str(o, "kind"),
                     .message = json_fields::Str(o, "message")});
    }
    return OkStatus();
  }));
  return out;
}

Status Deployments::SetEnv(std::string_view project, std::string_view name, std::string_view value, bool secret) {
  RETURN_IF_ERROR(CheckProject(project));
  RETURN_IF_ERROR(CheckEnvName(name));
  if (value.size() > kMaxEnvValue) {
    return InvalidArgument(
        fmt::format("env {} is longer than {} bytes ({})", name, kMaxEnvValue, value.size()));
  }
  json::object o{{"value", value}, {"secret", secret}};
  const std::string encoded = json::serialize(o);
  return store_.Write([&](WriteTxn& txn) -> Status { return txn.Put(kEnv, EnvKey(project, name), encoded); });
}

Status Deployments::UnsetEnv(std::string_view project, std::string_view name) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    const std::string key = EnvKey(project, name);
    ASSIGN_OR_RETURN(std::optional<std::string> v, txn.Get(kEnv, key));
    if (!v) return NotFound(fmt::format("Project {} has no env var {}.", project, name));
    return txn.Delete(kEnv, key);
  });
}

StatusOr<std::vector<EnvVar>> Deployments::ListEnv(std::string_view project) {
  std::vector<EnvVar> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kEnv, PrefixRange(Key().Str(project).Done()), SIZE_MAX));
    for (const Row& row : rows) {
      KeyReader r(row.key);
      RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(std::string name, r.Str());
      boost::system::error_code ec;
      json::value v = json::parse(row.value, ec);
      if (ec || !v.is_object()) return DataLoss(fmt::format("corrupt env var {} of {}", name, project));
      const json::object& o = v.get_object();
      EnvVar e{.name = std::move(name), .value = "", .secret = json_fields::Bool(o, "secret").value_or(false)};
      if (!e.secret) e.value = json_fields::Str(o, "value");
      out.push_back(std::move(e));
    }
    return OkStatus();
  }));
  return out;
}

}  // namespace paddock::deploy
