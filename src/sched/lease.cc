#include "sched/lease.h"

#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "store/key.h"

namespace paddock::sched {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"sched", [](int code) -> std::string_view {
                                         switch (static_cast<Error>(code)) {
                                           case Error::kLeaseLost: return "LeaseLost";
                                         }
                                         return "?";
                                       }};
  return kDomain;
}

namespace {

std::string LeaseKey(const LeaseSlot& slot) { return store::Key().Str(slot.name).Done(); }

struct Record {
  std::string holder;
  uint64_t epoch = 0;
  int64_t expires_ms = 0;
};

std::string Encode(const Record& r) { return fmt::format("{} {} {}", r.holder, r.epoch, r.expires_ms); }

// "<holder> <epoch> <expires ms>"; the holder may itself contain spaces, so the numbers are read
// from the right.
StatusOr<Record> Decode(std::string_view v) {
  auto bad = [&] { return DataLoss(fmt::format("corrupt scheduler lease record: \"{}\"", v)); };
  size_t last = v.rfind(' ');
  if (last == std::string_view::npos || last == 0) return bad();
  size_t mid = v.rfind(' ', last - 1);
  if (mid == std::string_view::npos) return bad();
  Record r;
  r.holder = std::string(v.substr(0, mid));
  std::string_view epoch = v.substr(mid + 1, last - mid - 1);
  std::string_view expires = v.substr(last + 1);
  auto e1 = std::from_chars(epoch.data(), epoch.data() + epoch.size(), r.epoch);
  auto e2 = std::from_chars(expires.data(), expires.data() + expires.size(), r.expires_ms);
  if (e1.ec != std::errc() || e1.ptr != epoch.data() + epoch.size() || e2.ec != std::errc() ||
      e2.ptr != expires.data() + expires.size()) {
    return bad();
  }
  return r;
}

StatusOr<std::optional<Record>> Load(store::ReadTxn& txn, const LeaseSlot& slot) {
  ASSIGN_OR_RETURN(std::optional<std::string> v, txn.Get(slot.table, LeaseKey(slot)));
  if (!v) return std::optional<Record>();
  ASSIGN_OR_RETURN(Record r, Decode(*v));
  return std::optional<Record>(std::move(r));
}

}  // namespace

StatusOr<std::optional<std::string>> Lease::LiveHolder(store::Store& store, TimePoint now, const LeaseSlot& slot) {
  std::optional<std::string> out;
  RETURN_IF_ERROR(store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::optional<Record> cur, Load(txn, slot));
    if (cur && EpochMillis(now) < cur->expires_ms) out = cur->holder;
    return OkStatus();
  }));
  return out;
}

StatusOr<std::optional<uint64_t>> Lease::TryAcquire(TimePoint now) {
  const int64_t now_ms = EpochMillis(now);
  std::optional<uint64_t> acquired;
  Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
    acquired.reset();
    ASSIGN_OR_RETURN(std::optional<Record> cur, Load(txn, slot_));
    Record next;
    next.holder = holder_;
    next.expires_ms = now_ms + ttl_.count();
    if (!cur) {
      next.epoch = 1;
    } else if (now_ms < cur->expires_ms && cur->holder == holder_) {
      next.epoch = cur->epoch;  // a renewal in time keeps the epoch
    } else if (now_ms < cur->expires_ms && (successor_of_.empty() || !cur->holder.starts_with(successor_of_)) &&
               !(gone_ && gone_(cur->holder))) {
      return OkStatus();  // another holder's live lease
    } else {
      // Expired (or released), an earlier life's or a dead holder's: whoever takes it, ours before or not, starts
      // a new epoch, so any write still in flight under the old one is fenced off.
      next.epoch = cur->epoch + 1;
    }
    RETURN_IF_ERROR(txn.Put(slot_.table, LeaseKey(slot_), Encode(next)));
    acquired = next.epoch;
    return OkStatus();
  });
  if (!s.ok()) return s;
  return acquired;
}

Status Lease::Release() {
  return store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::optional<Record> cur, Load(txn, slot_));
    if (!cur || cur->holder != holder_) return OkStatus();
    // Keep the record (and its epoch, so the next holder's is higher), expired.
    cur->expires_ms = 0;
    return txn.Put(slot_.table, LeaseKey(slot_), Encode(*cur));
  });
}

Status Lease::CheckFence(store::ReadTxn& txn, uint64_t epoch, TimePoint now) const {
  ASSIGN_OR_RETURN(std::optional<Record> cur, Load(txn, slot_));
  if (!cur) return FailedPrecondition(fmt::format("{} lease: no lease is held", slot_.name), Error::kLeaseLost);
  if (cur->holder != holder_ || cur->epoch != epoch) {
    return FailedPrecondition(fmt::format("{} lease: epoch {} of {} was superseded by epoch {} of {}", slot_.name, epoch,
                                          holder_, cur->epoch, cur->holder),
                              Error::kLeaseLost);
  }
  if (EpochMillis(now) >= cur->expires_ms) {
    return FailedPrecondition(fmt::format("{} lease: epoch {} of {} has expired", slot_.name, epoch, holder_),
                              Error::kLeaseLost);
  }
  return OkStatus();
}

}  // namespace paddock::sched
