// sched/lease: the scheduler's leader lease, kept in the store, with a fencing epoch.
//
// One scheduler at a time holds the lease. Acquiring it when it is free or expired bumps the
// epoch; every scheduler write runs CheckFence in its own transaction, so a deposed leader's late
// write (its epoch is no longer the lease's, or its lease has expired) is refused with
// kFailedPrecondition, detail Error::kLeaseLost, and changes nothing.
//
//   Lease lease(store, "server-1", std::chrono::seconds(10));
//   ASSIGN_OR_RETURN(std::optional<uint64_t> epoch, lease.TryAcquire(clock.Now()));
//   if (epoch) store.Write([&](WriteTxn& txn) { RETURN_IF_ERROR(lease.CheckFence(txn, *epoch, now)); ... });
//
// Record (sched/schema.h): scheduler_lease ("scheduler") -> "<holder> <epoch> <expires ms>".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::sched {

// Where a lease lives: a table of the caller's module and the lease's name in it. The scheduler's
// is the default; the deploy controller keeps one per controller class in its own store.
struct LeaseSlot {
  std::string_view table = "scheduler_lease";
  std::string name = "scheduler";
};

// The scheduler's error details: how a caller tells a lost lease from any other refusal.
enum class Error {
  kLeaseLost = 1,  // this holder is no longer the leader at its epoch: stop writing, lead again
};
const ErrorDomain& ErrorDomainOf(Error);

class Lease {
 public:
  // `successor_of`: a prefix of holder names that are this holder's own earlier lives (the same
  // server before a restart). A live lease held by such a name is taken over at once, with a new
  // epoch that fences the old one, instead of being waited out. The caller guarantees that no other
  // running process holds a name with that prefix (Paddock: the host and the state directory,
  // which its lock keeps to one server). Empty: none.
  Lease(store::Store& store, std::string holder, std::chrono::milliseconds ttl, std::string successor_of = {},
        LeaseSlot slot = {})
      : store_(store), holder_(std::move(holder)), ttl_(ttl), successor_of_(std::move(successor_of)),
        slot_(std::move(slot)) {}

  // Takes the lease if it is free, expired, already ours or an earlier life's (successor_of), and
  // extends it to now + ttl. Returns the epoch this holder writes with (unchanged while it keeps
  // renewing in time; bumped when it takes the lease over), or nullopt when another holder's lease
  // is still live.
  StatusOr<std::optional<uint64_t>> TryAcquire(TimePoint now);
  // Gives the lease up (if ours), so another server can take over at once.
  Status Release();
  // Inside a caller's transaction: OK when `epoch` is the lease's current epoch, the holder is
  // us and the lease has not expired at `now`; else kFailedPrecondition with Error::kLeaseLost.
  Status CheckFence(store::ReadTxn& txn, uint64_t epoch, TimePoint now) const;

  const std::string& holder() const { return holder_; }

  // Holders known to be dead: a live lease held by a name for which `gone` answers true is taken
  // over at once, with a new epoch, instead of being waited out. For replicas that share a host
  // and a store (the deploy controller's SQLite file): a holder name carries its pid, and a pid
  // that no longer runs holds nothing. `gone` must never answer true for a running holder; if it
  // errs, the fence still refuses the deposed holder's writes, but the two would trade the lease.
  void TakeOverWhen(std::function<bool(std::string_view holder)> gone) { gone_ = std::move(gone); }

  // Whoever holds a live lease at `now` (nullopt: nobody): whether a server runs its scheduler on
  // this store — how `paddock admin` tells a running server (whose agents stop tasks) from none.
  static StatusOr<std::optional<std::string>> LiveHolder(store::Store& store, TimePoint now,
                                                        const LeaseSlot& slot = {});

 private:
  store::Store& store_;
  std::string holder_;
  std::chrono::milliseconds ttl_;
  std::string successor_of_;
  LeaseSlot slot_;
  std::function<bool(std::string_view)> gone_;
};

}  // namespace paddock::sched
