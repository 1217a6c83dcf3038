#include "ecs/drain/drain_holds.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "ecs/common/errors.h"
#include "ecs/common/resource_arn.h"
#include "ecs/drain/edge_id.h"
#include "ecs/drain/errors.h"
#include "store/key.h"

namespace paddock::ecs::drain {
namespace {

constexpr std::string_view kHolds = "drain_holds";
constexpr std::string_view kEdgeHolds = "drain_edge_holds";
constexpr std::string_view kEdges = "drain_edges";
constexpr std::string_view kExpiry = "drain_edge_expiry";
constexpr size_t kPage = 1000;
// Beyond this many remembered first asks, each Check also forgets the ones no bound needs.
constexpr size_t kRememberSoftCap = 4096;
// A first ask older than this can set no bound any more: the longest drainTimeout has passed, and
// so has every lease that was live then.
constexpr std::chrono::seconds kRememberFor = kMaxDrainTimeout + kMaxLease;

using TaskRef = TaskLookup::TaskRef;

store::Key ScopeKey(const Scope& s) {
  store::Key k;
  k.Str(s.account.str()).Str(s.region.str());
  return k;
}
std::string HoldKey(const Scope& s, const TaskRef& t, const EdgeId& e) {
  return ScopeKey(s).Str(t.cluster).Str(t.id).Str(e.str()).Done();
}
std::string TaskPrefix(const Scope& s, const TaskRef& t) { return ScopeKey(s).Str(t.cluster).Str(t.id).Done(); }
std::string EdgeHoldKey(const Scope& s, const EdgeId& e, const TaskRef& t) {
  return ScopeKey(s).Str(e.str()).Str(t.cluster).Str(t.id).Done();
}
std::string EdgePrefix(const Scope& s, const EdgeId& e) { return ScopeKey(s).Str(e.str()).Done(); }
std::string EdgeKey(const Scope& s, const EdgeId& e) { return ScopeKey(s).Str(e.str()).Done(); }
std::string ExpiryKey(uint64_t ms, const Scope& s, const EdgeId& e) {
  return store::Key().U64(ms).Str(s.account.str()).Str(s.region.str()).Str(e.str()).Done();
}

StatusOr<uint64_t> ParseU64(std::string_view text, std::string_view what) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return DataLoss(fmt::format("a corrupt {}", what));
  return v;
}

uint64_t Millis(TimePoint t) { return static_cast<uint64_t>(std::max<int64_t>(EpochMillis(t), 0)); }

Status CheckEdge(const EdgeId& edge) { return CheckEdgeId(edge.str()); }

// The task a hold names: a task ARN in its long form (with the cluster) of `scope`.
StatusOr<TaskRef> HeldTask(const Scope& scope, std::string_view arn) {
  auto bad = [&] {
    return InvalidArgument(fmt::format("'{}' is not a task ARN (arn:aws:ecs:<region>:<account>:task/<cluster>/<id>).", arn),
                           ecs::Error::kInvalidParameter);
  };
  StatusOr<EcsResource> r = ParseEcsResourceArn(arn);
  if (!r.ok() || r->kind != ResourceKind::kTask) return bad();
  if (r->scope.account != scope.account)
    return PermissionDenied(fmt::format("The task {} is not of account {}: an edge holds its own account's tasks only.",
                                        arn, scope.account.str()));
  if (r->scope.region != scope.region)
    return InvalidArgument(fmt::format("The task {} is in region {}, but the edge speaks for region {}.", arn,
                                       r->scope.region.str(), scope.region.str()),
                           ecs::Error::kInvalidParameter);
  const size_t slash = r->id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == r->id.size() ||
      r->id.find('/', slash + 1) != std::string::npos)
    return bad();
  return TaskRef{r->id.substr(0, slash), r->id.substr(slash + 1)};
}

// Every row of `prefix` in `table`, a page at a time.
StatusOr<std::vector<store::Row>> ScanAll(store::ReadTxn& txn, std::string_view table, const std::string& prefix) {
  std::vector<store::Row> out;
  store::Range range = store::PrefixRange(prefix);
  while (true) {
    ASSIGN_OR_RETURN(std::vector<store::Row> rows, txn.Scan(table, range, kPage));
    const bool more = rows.size() == kPage;
    if (more) range.begin = store::KeySuccessor(rows.back().key);
    for (auto& r : rows) out.push_back(std::move(r));
    if (!more) return out;
  }
}

// The first `n` string parts of a key.
StatusOr<std::vector<std::string>> KeyParts(std::string_view key, size_t n) {
  store::KeyReader r(key);
  std::vector<std::string> parts;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::string p, r.Str());
    parts.push_back(std::move(p));
  }
  return parts;
}

// Removes every hold of `edge` and the edge itself (its expiry row is the caller's).
Status RemoveEdge(store::WriteTxn& txn, const Scope& scope, const EdgeId& edge) {
  ASSIGN_OR_RETURN(std::vector<store::Row> held, ScanAll(txn, kEdgeHolds, EdgePrefix(scope, edge)));
  for (const store::Row& row : held) {
    ASSIGN_OR_RETURN(std::vector<std::string> p, KeyParts(row.key, 5));  // account, region, edge, cluster, id
    RETURN_IF_ERROR(txn.Delete(kHolds, HoldKey(scope, TaskRef{p[3], p[4]}, edge)));
  }
  RETURN_IF_ERROR(txn.DeleteRange(kEdgeHolds, store::PrefixRange(EdgePrefix(scope, edge))));
  return txn.Delete(kEdges, EdgeKey(scope, edge));
}

}  // namespace

DrainHolds::DrainHolds(store::Store& store, TaskLookup& tasks, const Clock& clock)
    : store_(store), tasks_(tasks), clock_(clock) {}

DrainHolds::~DrainHolds() { Shutdown(); }

StatusOr<PutResult> DrainHolds::Put(const Scope& scope, const EdgeId& edge, const std::vector<Hold>& holds,
                                    std::chrono::seconds lease, TimePoint now) {
  RETURN_IF_ERROR(CheckEdge(edge));
  if (holds.size() > kMaxHoldsPerPut)
    return InvalidArgument(fmt::format("{} holds: an edge holds at most {} tasks per scope.", holds.size(), kMaxHoldsPerPut),
                           ecs::Error::kInvalidParameter);
  if (lease < kMinLease || lease > kMaxLease)
    return InvalidArgument(fmt::format("A lease of {} s: it must be {} to {} s.", lease.count(), kMinLease.count(),
                                       kMaxLease.count()),
                           ecs::Error::kInvalidParameter);
  // By task: the longest drainTimeout asked for it, and the ARN as the edge wrote it.
  std::map<std::pair<std::string, std::string>, std::pair<std::chrono::seconds, std::string>> wanted;
  for (const Hold& h : holds) {
    if (h.drain_timeout < std::chrono::seconds(0) || h.drain_timeout > kMaxDrainTimeout)
      return InvalidArgument(fmt::format("The drainTimeout of {} is {} s: it must be 0 to {} s.", h.task_arn,
                                         h.drain_timeout.count(), kMaxDrainTimeout.count()),
                             ecs::Error::kInvalidParameter);
    ASSIGN_OR_RETURN(TaskRef t, HeldTask(scope, h.task_arn));
    auto [it, inserted] = wanted.try_emplace({t.cluster, t.id}, h.drain_timeout, h.task_arn);
    if (!inserted) it->second.first = std::max(it->second.first, h.drain_timeout);
  }
  const uint64_t now_ms = Millis(now);
  const uint64_t until_ms = Millis(now + lease);
  PutResult result;
  Status written = store_.Write([&](store::WriteTxn& txn) -> Status {
    result = PutResult{};
    ASSIGN_OR_RETURN(std::optional<std::string> old_lease, txn.Get(kEdges, EdgeKey(scope, edge)));
    std::optional<uint64_t> old_until;
    if (old_lease) {
      ASSIGN_OR_RETURN(old_until, ParseU64(*old_lease, "drain lease"));
    }
    if (!old_until || *old_until <= now_ms) {
      // A new (or lapsed) edge: within the scope's bound of live edges.
      ASSIGN_OR_RETURN(std::vector<store::Row> edges, ScanAll(txn, kEdges, ScopeKey(scope).Done()));
      size_t live = 0;
      for (const store::Row& row : edges) {
        ASSIGN_OR_RETURN(uint64_t until, ParseU64(row.value, "drain lease"));
        if (until > now_ms) ++live;
      }
      if (live >= kMaxEdgesPerScope)
        return ResourceExhausted(fmt::format("{} edges already hold tasks in {}/{}: at most {}.", live,
                                             scope.account.str(), scope.region.str(), kMaxEdgesPerScope),
                                 Error::kTooManyEdges);
    }
    std::vector<TaskRef> refs;
    refs.reserve(wanted.size());
    for (const auto& [key, value] : wanted) refs.push_back(TaskRef{key.first, key.second});
    ASSIGN_OR_RETURN(std::vector<bool> not_stopped, tasks_.NotStopped(txn, scope, refs));
    if (not_stopped.size() != refs.size()) return Internal("the task lookup answered for other tasks");
    // What the edge held before: kept where unchanged, the rest rewritten or removed.
    std::map<std::pair<std::string, std::string>, std::string> before;
    ASSIGN_OR_RETURN(std::vector<store::Row> held, ScanAll(txn, kEdgeHolds, EdgePrefix(scope, edge)));
    for (store::Row& row : held) {
      ASSIGN_OR_RETURN(std::vector<std::string> p, KeyParts(row.key, 5));  // account, region, edge, cluster, id
      before.emplace(std::make_pair(std::move(p[3]), std::move(p[4])), std::move(row.value));
    }
    size_t i = 0;
    for (const auto& [key, value] : wanted) {
      const TaskRef& t = refs[i];
      if (!not_stopped[i++]) {
        result.ignored.push_back(value.second);
        continue;
      }
      ++result.held;
      const std::string timeout = std::to_string(value.first.count());
      auto old = before.find(key);
      const bool same = old != before.end() && old->second == timeout;
      if (old != before.end()) before.erase(old);
      if (same) continue;
      RETURN_IF_ERROR(txn.Put(kHolds, HoldKey(scope, t, edge), timeout));
      RETURN_IF_ERROR(txn.Put(kEdgeHolds, EdgeHoldKey(scope, edge, t), timeout));
    }
    for (const auto& [key, value] : before) {  // no longer held: released
      const TaskRef t{key.first, key.second};
      RETURN_IF_ERROR(txn.Delete(kHolds, HoldKey(scope, t, edge)));
      RETURN_IF_ERROR(txn.Delete(kEdgeHolds, EdgeHoldKey(scope, edge, t)));
    }
    if (old_until) RETURN_IF_ERROR(txn.Delete(kExpiry, ExpiryKey(*old_until, scope, edge)));
    RETURN_IF_ERROR(txn.Put(kEdges, EdgeKey(scope, edge), std::to_string(until_ms)));
    return txn.Put(kExpiry, ExpiryKey(until_ms, scope, edge), "");
  });
  RETURN_IF_ERROR(written);
  Notify();
  return result;
}

Status DrainHolds::Release(const Scope& scope, const EdgeId& edge, std::string_view task_arn) {
  RETURN_IF_ERROR(CheckEdge(edge));
  ASSIGN_OR_RETURN(TaskRef t, HeldTask(scope, task_arn));
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Delete(kHolds, HoldKey(scope, t, edge)));
    return txn.Delete(kEdgeHolds, EdgeHoldKey(scope, edge, t));
  }));
  Notify();
  return OkStatus();
}

StatusOr<std::vector<HoldView>> DrainHolds::Holds(const Scope& scope, std::string_view task_arn, TimePoint now) {
  ASSIGN_OR_RETURN(TaskRef t, HeldTask(scope, task_arn));
  std::vector<HoldView> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    out.clear();
    ASSIGN_OR_RETURN(std::vector<store::Row> rows, ScanAll(txn, kHolds, TaskPrefix(scope, t)));
    for (const store::Row& row : rows) {
      ASSIGN_OR_RETURN(std::vector<std::string> p, KeyParts(row.key, 5));  // account, region, cluster, id, edge
      EdgeId edge(std::move(p[4]));
      ASSIGN_OR_RETURN(std::optional<std::string> lease, txn.Get(kEdges, EdgeKey(scope, edge)));
      if (!lease) continue;
      ASSIGN_OR_RETURN(uint64_t until, ParseU64(*lease, "drain lease"));
      ASSIGN_OR_RETURN(uint64_t timeout, ParseU64(row.value, "drain timeout"));
      if (until <= Millis(now)) continue;
      out.push_back(HoldView{std::move(edge), std::chrono::seconds(timeout), FromEpochMillis(static_cast<int64_t>(until))});
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<DrainHolds::Verdict> DrainHolds::Decide(std::string_view agent_id, std::string_view task_arn, TimePoint now) {
  ASSIGN_OR_RETURN(bool assigned, tasks_.AssignedAndNotStopped(agent_id, task_arn));
  StatusOr<EcsResource> r = ParseEcsResourceArn(task_arn);
  if (!assigned || !r.ok()) return PermissionDenied("The container instance has no such task.");
  const Scope scope = r->scope;
  ASSIGN_OR_RETURN(TaskRef t, HeldTask(scope, task_arn));
  struct Stored {
    std::chrono::seconds timeout;
    TimePoint until;
  };
  std::vector<Stored> stored;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    stored.clear();
    ASSIGN_OR_RETURN(std::vector<store::Row> rows, ScanAll(txn, kHolds, TaskPrefix(scope, t)));
    for (const store::Row& row : rows) {
      ASSIGN_OR_RETURN(std::vector<std::string> p, KeyParts(row.key, 5));  // account, region, cluster, id, edge
      ASSIGN_OR_RETURN(std::optional<std::string> lease, txn.Get(kEdges, EdgeKey(scope, EdgeId(std::move(p[4])))));
      ASSIGN_OR_RETURN(uint64_t timeout, ParseU64(row.value, "drain timeout"));
      uint64_t until = 0;  // an edge already reaped: lapsed
      if (lease) {
        ASSIGN_OR_RETURN(until, ParseU64(*lease, "drain lease"));
      }
      stored.push_back(Stored{std::chrono::seconds(timeout), FromEpochMillis(static_cast<int64_t>(until))});
    }
    return OkStatus();
  }));
  std::vector<Stored> live;
  for (const Stored& s : stored)
    if (s.until > now) live.push_back(s);

  std::optional<TimePoint> first;
  {
    std::lock_guard lock(mu_);
    auto it = first_asked_.find(std::string(task_arn));
    // Only a task that is held is remembered: its bound counts from the first ask that found a hold.
    if (it == first_asked_.end() && !live.empty()) {
      if (first_asked_.size() >= kRememberSoftCap) Forget(now);
      it = first_asked_.emplace(std::string(task_arn), now).first;
    }
    if (it != first_asked_.end()) first = it->second;
  }
  Verdict v;
  v.answer.holds = static_cast<int64_t>(live.size());
  if (live.empty()) {
    v.answer.verdict = !stored.empty() ? DrainVerdict::kLeasesExpired
                       : first         ? DrainVerdict::kReleased
                                       : DrainVerdict::kNoHolds;
    return v;
  }
  std::chrono::seconds longest{0};
  TimePoint earliest_lease = live.front().until;
  for (const Stored& s : live) {
    longest = std::max(longest, s.timeout);
    earliest_lease = std::min(earliest_lease, s.until);
  }
  const TimePoint deadline = *first + longest;
  if (now >= deadline) {
    v.answer.verdict = DrainVerdict::kTimedOut;
    return v;
  }
  v.answer.verdict = DrainVerdict::kWait;
  v.answer.deadline = deadline;
  v.next = std::min(deadline, earliest_lease);
  return v;
}

StatusOr<DrainAnswer> DrainHolds::Check(std::string_view agent_id, std::string_view task_arn, TimePoint now) {
  ASSIGN_OR_RETURN(Verdict v, Decide(agent_id, task_arn, now));
  return v.answer;
}

StatusOr<DrainAnswer> DrainHolds::Await(std::string_view agent_id, std::string_view task_arn,
                                        std::chrono::milliseconds max_wait, std::stop_token stop) {
  using steady = std::chrono::steady_clock;
  const steady::time_point end = steady::now() + max_wait;
  for (;;) {
    uint64_t seen = 0;
    {
      std::lock_guard lock(mu_);
      if (shutdown_) return Unavailable("the control plane is shutting down");
      seen = generation_;
    }
    if (stop.stop_requested()) return Aborted("the agent stopped waiting");
    ASSIGN_OR_RETURN(Verdict v, Decide(agent_id, task_arn, clock_.Now()));
    if (v.answer.go() || steady::now() >= end) return v.answer;
    steady::time_point wake = end;
    if (v.next) {
      const auto in = std::chrono::duration_cast<steady::duration>(*v.next - clock_.Now());
      wake = std::min(wake, steady::now() + std::max(in, steady::duration::zero()));
    }
    std::unique_lock lock(mu_);
    ++waiters_;
    cv_.wait_until(lock, stop, wake, [&] { return shutdown_ || generation_ != seen; });
    --waiters_;
  }
}

void DrainHolds::Notify() {
  {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  cv_.notify_all();
}

void DrainHolds::Wake() { Notify(); }

void DrainHolds::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

void DrainHolds::Forget(TimePoint now) {
  std::erase_if(first_asked_, [&](const auto& entry) { return entry.second + kRememberFor < now; });
}

size_t DrainHolds::remembered() {
  std::lock_guard lock(mu_);
  return first_asked_.size();
}

size_t DrainHolds::waiters() {
  std::lock_guard lock(mu_);
  return waiters_;
}

StatusOr<size_t> DrainHolds::ReapExpired(TimePoint now, size_t max_edges) {
  size_t reaped = 0;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    reaped = 0;
    // Lease ends up to and including now: lapsed (a lease is live while its end is after now).
    const store::Range lapsed{"", store::Key().U64(Millis(now) + 1).Done()};
    ASSIGN_OR_RETURN(std::vector<store::Row> rows, txn.Scan(kExpiry, lapsed, max_edges));
    for (const store::Row& row : rows) {
      store::KeyReader r(row.key);
      ASSIGN_OR_RETURN(uint64_t ms, r.U64());
      ASSIGN_OR_RETURN(std::string account, r.Str());
      ASSIGN_OR_RETURN(std::string region, r.Str());
      ASSIGN_OR_RETURN(std::string edge_name, r.Str());
      const Scope scope{AccountId(std::move(account)), Region(std::move(region))};
      const EdgeId edge(std::move(edge_name));
      RETURN_IF_ERROR(txn.Delete(kExpiry, row.key));
      // The edge may have renewed since (a newer expiry row is its own) or gone with its account.
      ASSIGN_OR_RETURN(std::optional<std::string> lease, txn.Get(kEdges, EdgeKey(scope, edge)));
      if (!lease || *lease != std::to_string(ms)) continue;
      RETURN_IF_ERROR(RemoveEdge(txn, scope, edge));
      ++reaped;
    }
    return OkStatus();
  }));
  {
    std::lock_guard lock(mu_);
    Forget(now);
  }
  return reaped;
}

Status DrainHolds::ReapAccount(const AccountId& account) {
  const store::Range range = store::PrefixRange(store::Key().Str(account.str()).Done());
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    for (std::string_view table : {kHolds, kEdgeHolds, kEdges}) RETURN_IF_ERROR(txn.DeleteRange(table, range));
    return OkStatus();  // its drain_edge_expiry rows find no edge: ReapExpired drops them
  }));
  {
    std::lock_guard lock(mu_);
    std::erase_if(first_asked_, [&](const auto& entry) {
      StatusOr<EcsResource> r = ParseEcsResourceArn(entry.first);
      return r.ok() && r->scope.account == account;
    });
  }
  Notify();
  return OkStatus();
}

Status CheckEdgeId(std::string_view id) {
  bool ok = !id.empty() && id.size() <= kMaxEdgeIdLength;
  for (char c : id)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                c == '-');
  if (!ok)
    return InvalidArgument(
        fmt::format("Invalid edge id '{}': 1 to {} characters of [A-Za-z0-9._-].", id, kMaxEdgeIdLength),
        ecs::Error::kInvalidParameter);
  return OkStatus();
}

}  // namespace paddock::ecs::drain
