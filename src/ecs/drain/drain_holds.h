// ecs/drain: drain holds — an edge's "do not stop this task yet" (issue 14, the edge's zero-gap
// cutover; docs/contracts/task.md "Drain before stop"; research note edge-traefik.md §6.3).
//
// An edge (`paddock edge`) that routes to a task holds it: the hold names the task, the edge, and
// how long the edge may take to drain it (drainTimeout); it lives while the edge's lease does,
// which the edge renews with every heartbeat (Put, which replaces all of the edge's holds). When
// any stop path decides to stop the task (StopTask, scale-in, a deployment's replacement,
// DeleteService, an instance DRAINING), its agent reports DEACTIVATING and asks here before it
// sends SIGTERM (Control::AwaitDrain -> Await). The answer is "go" once
//   (a) every live hold is released (Release: the edge's in-flight count reached 0), or
//   (b) the longest drainTimeout of the live holds has passed since the agent first asked, or
//   (c) every hold's lease has lapsed (a dead edge blocks no stop), or
//   (d) the task had no live hold when the agent first asked;
// until then the agent keeps the task in DEACTIVATING (agent/agent.cc, Teardown).
//
//   DrainHolds holds(store, tasks_lookup);                              // the node's, one per store
//   ASSIGN_OR_RETURN(PutResult r, holds.Put(scope, EdgeId("edge-a"),    // the edge, every 5 s
//                                           {{task_arn, std::chrono::seconds(30)}}, std::chrono::seconds(15), now));
//   RETURN_IF_ERROR(holds.Release(scope, EdgeId("edge-a"), task_arn));  // the edge, once drained
//   ASSIGN_OR_RETURN(DrainAnswer a, holds.Await(agent_id, task_arn, std::chrono::seconds(20), stop));  // the agent
//
// Tenancy. Every record is keyed by the held task's (account, region): an edge speaks for one
// scope, and a task ARN of another account is PermissionDenied (another region's, or no task ARN
// at all, InvalidArgument) and nothing is written — so an edge of account B can neither hold,
// release nor see a task of account A. The agent's question is authorized by the assignment: the
// task must be assigned to the asking agent and not STOPPED.
//
// Records (schema.h): drain_holds (task -> edges), drain_edge_holds (edge -> tasks), drain_edges
// (edge -> lease end), drain_edge_expiry (lease end -> edge). Bounded: at most kMaxHoldsPerPut
// holds per edge and kMaxEdgesPerScope live edges per scope; an edge's holds go when its lease
// lapses (ReapExpired, the node's reaper every 30 s) or its account is deleted (ReapAccount).
// Holds of a STOPPED task go lazily: the edge's next Put leaves them out (Put ignores STOPPED and
// unknown tasks), else its lease lapses — no agent asks about a STOPPED task.
//
// The "first asked" time of each task is kept in memory (the bound (b) counts from it, so an
// agent that asks again — a remote agent re-polling, an agent restarted mid-drain — never extends
// it). A restarted server forgets it: the bound then counts from the first ask after the restart,
// so one drain can last up to twice its drainTimeout across a server restart, and never longer
// than the holds' leases allow (an edge that is gone too releases nothing, but its lease lapses).
//
// Waiting is event-driven: Put and Release wake every waiter (a condition variable), which reads
// the holds again; the bound and the earliest lease end are its timers. No polling.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "agent/protocol/messages.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "ecs/drain/edge_id.h"
#include "store/store.h"

namespace paddock::ecs::drain {

using agent::protocol::DrainAnswer;
using agent::protocol::DrainVerdict;

// An edge replica's name: 1 to 64 characters of [A-Za-z0-9._-] (edge_id.h), unique among the edges
// of a scope.
using EdgeId = TypedString<struct EdgeIdTag>;

inline constexpr size_t kMaxHoldsPerPut = 10'000;
inline constexpr std::chrono::seconds kMaxDrainTimeout = agent::protocol::kMaxDrainTimeout;  // 3600 s
inline constexpr std::chrono::seconds kMinLease{1};
inline constexpr std::chrono::seconds kMaxLease = agent::protocol::kMaxDrainLease;  // 300 s
// Edges of one scope whose lease has not lapsed; a new edge past it is ResourceExhausted.
inline constexpr size_t kMaxEdgesPerScope = 100;

// One task an edge holds, and how long it may take to drain it (0 to kMaxDrainTimeout).
struct Hold {
  std::string task_arn;
  std::chrono::seconds drain_timeout{30};
};

struct PutResult {
  size_t held = 0;                   // holds stored
  std::vector<std::string> ignored;  // task ARNs left out: STOPPED, or no such task
};

// A live hold on a task, as Holds answers it.
struct HoldView {
  EdgeId edge;
  std::chrono::seconds drain_timeout{0};
  TimePoint lease_until;
};

// What the holds need to know of tasks (ecs/task implements it: task_lookup.h TasksLookup; the
// owner's tests fake it).
class TaskLookup {
 public:
  virtual ~TaskLookup() = default;
  struct TaskRef {
    std::string cluster;
    std::string id;
  };
  // For each task of `scope`: whether it exists and its agent has not reported it STOPPED. Read in
  // `txn` (Put's own transaction).
  virtual StatusOr<std::vector<bool>> NotStopped(store::ReadTxn& txn, const Scope& scope,
                                                 const std::vector<TaskRef>& tasks) = 0;
  // Whether the task `task_arn` is assigned to `agent_id` and not STOPPED.
  virtual StatusOr<bool> AssignedAndNotStopped(std::string_view agent_id, std::string_view task_arn) = 0;
};

class DrainHolds {
 public:
  // `clock` is what Await and ReapExpired's callers read "now" from (Put and Check take it).
  DrainHolds(store::Store& store, TaskLookup& tasks, const Clock& clock = SystemClock::Get());
  ~DrainHolds();
  DrainHolds(const DrainHolds&) = delete;
  DrainHolds& operator=(const DrainHolds&) = delete;

  // ---- The edge's side ----
  // The heartbeat of edge `edge` in `scope`: its holds become exactly `holds`, each live until
  // now + lease (idempotent: the same call twice leaves the same holds). A hold on a task that is
  // STOPPED or unknown is not stored (it is in PutResult::ignored); a task named twice keeps its
  // longest drainTimeout. Wakes every waiting agent (a hold left out is released).
  // InvalidArgument: a bad edge id, more than kMaxHoldsPerPut holds, a drainTimeout outside
  // 0..kMaxDrainTimeout, a lease outside kMinLease..kMaxLease, something that is not a task ARN
  // (the long form, with its cluster) or a task of another region; PermissionDenied: a task of
  // another account; ResourceExhausted: a new edge when kMaxEdgesPerScope are live. On any error
  // nothing is written.
  StatusOr<PutResult> Put(const Scope& scope, const EdgeId& edge, const std::vector<Hold>& holds,
                          std::chrono::seconds lease, TimePoint now);
  // The edge has drained `task_arn`: its hold goes (OK when it held nothing). Wakes the task's
  // agent. InvalidArgument / PermissionDenied as Put's for the edge id and the ARN.
  Status Release(const Scope& scope, const EdgeId& edge, std::string_view task_arn);
  // The live holds on `task_arn` at `now`, by edge (an edge's view of its scope; PermissionDenied
  // for another account's task).
  StatusOr<std::vector<HoldView>> Holds(const Scope& scope, std::string_view task_arn, TimePoint now);

  // ---- The agent's side ----
  // Whether agent `agent_id` may stop `task_arn` at `now` (rules (a) to (d) above), without
  // waiting. The first call that finds the task held records `now` as its first ask (a task asked
  // about while unheld costs no memory). PermissionDenied unless the task is assigned to
  // `agent_id` and not STOPPED.
  StatusOr<DrainAnswer> Check(std::string_view agent_id, std::string_view task_arn, TimePoint now);
  // Check, then, while the answer is kWait, waits — woken by Put, Release, Wake, the bound and the
  // earliest lease end (both read on the clock) — until the answer is go or `max_wait` (real time)
  // has passed (then it answers kWait: the agent asks again). Aborted once `stop` is requested;
  // Unavailable after Shutdown.
  StatusOr<DrainAnswer> Await(std::string_view agent_id, std::string_view task_arn, std::chrono::milliseconds max_wait,
                              std::stop_token stop = {});
  // Every waiter reads the holds again now (a clock that jumped: the tests' FakeClock).
  void Wake();
  // Wakes every waiter, and every later Await answers Unavailable at once. Idempotent.
  void Shutdown();

  // ---- Bounds ----
  // Removes the edges whose lease ended before `now`, with their holds (at most `max_edges`), and
  // forgets first asks older than any bound they could still set. Returns how many edges went.
  StatusOr<size_t> ReapExpired(TimePoint now, size_t max_edges = 256);
  // Account deletion (iam::AccountReaper, through the node): every hold and edge of `account`.
  Status ReapAccount(const AccountId& account);

  // Tasks whose first ask is remembered, and Await calls waiting now (for tests).
  size_t remembered();
  size_t waiters();

 private:
  // The verdict for a task's holds at `now`; `next` is when it may change by time alone (the bound
  // or the earliest lease end), when waiting.
  struct Verdict {
    DrainAnswer answer;
    std::optional<TimePoint> next;
  };
  StatusOr<Verdict> Decide(std::string_view agent_id, std::string_view task_arn, TimePoint now);
  void Notify();
  void Forget(TimePoint now);  // REQUIRES: mu_ held

  store::Store& store_;
  TaskLookup& tasks_;
  const Clock& clock_;

  std::mutex mu_;
  std::condition_variable_any cv_;
  uint64_t generation_ = 0;               // GUARDED_BY(mu_): bumped by every change of the holds
  bool shutdown_ = false;                 // GUARDED_BY(mu_)
  size_t waiters_ = 0;                    // GUARDED_BY(mu_): Await calls in their wait
  // GUARDED_BY(mu_): by task ARN, the first ask that found the task held (a task asked about
  // while unheld is not remembered; one remembered and no longer held was RELEASED).
  std::map<std::string, TimePoint> first_asked_;
};

}  // namespace paddock::ecs::drain
