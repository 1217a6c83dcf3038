// agent/inprocess/poll_slots: who may wait in an assignments long-poll (PollAssignments), shared fairly
// between container instances and between accounts.
//
// Every waiting poll holds an HTTP worker, so only `total` may wait at once; the rest are
// answered at once with busy=true and their agents pause before polling again. First come, first
// served would let one account's instances hold every slot while another account's instance
// spins on busy answers (docs/security.md). Instead:
//
// - One waiting poll per container instance. A newer poll of the instance takes the older one's
//   slot, and the older is answered at once: its agent has moved on (its request timed out, or
//   it restarted) — an agent polls one at a time.
// - A fair share per account. When the slots are full, a poll of an account holding fewer than
//   its share (total / the accounts waiting, itself included; at least 1) takes the slot of the
//   oldest poll of the account holding the most, if that account holds more than its share; the
//   poll that lost its slot is answered at once (busy). So an account alone may use every slot,
//   yet never keeps another account's instance from waiting.
// - Otherwise the poll is refused (busy).
//
// Pure bookkeeping: the caller serializes calls (InProcessControl holds its mutex) and wakes the
// polls that lost their slots.
//
//   PollSlots slots(16);
//   std::optional<uint64_t> ticket = slots.Admit("111111111111", instance_arn);
//   if (!ticket) return busy;
//   ... wait until a change, the deadline, or slots.Lost(*ticket) ...
//   slots.Release(*ticket);
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace paddock::agent {

class PollSlots {
 public:
  // Why a waiting poll lost its slot.
  enum class Loss {
    kSuperseded,  // a newer poll of the same container instance took it
    kFairShare,   // a poll of an account under its share took it
  };

  explicit PollSlots(size_t total) : total_(total) {}

  // A slot for a poll of `instance` (its container instance's ARN, or any id unique to it) owned
  // by `account`, or nullopt when the poll may not wait. Taking a slot may take another poll's
  // (see the header): that poll's Lost() then answers why, and the caller must wake it.
  std::optional<uint64_t> Admit(std::string_view account, std::string_view instance);

  // Why the poll holding `ticket` lost its slot, if it did.
  std::optional<Loss> Lost(uint64_t ticket) const;

  // The poll holding `ticket` is answered: its slot (if it still had one) is free. Every ticket
  // Admit returned must be released once, lost or not.
  void Release(uint64_t ticket);

  // Slots held now: in all, and by `account`.
  size_t held() const { return holders_.size(); }
  size_t held(std::string_view account) const;

 private:
  struct Holder {
    std::string account;
    std::string instance;
  };
  // Takes `ticket`'s slot away (it must hold one) and records why.
  void Take(uint64_t ticket, Loss why);

  const size_t total_;
  uint64_t next_ticket_ = 1;
  // Tickets are handed out in increasing order, so the map's order is the order of arrival.
  std::map<uint64_t, Holder> holders_;
  std::map<uint64_t, Loss> lost_;  // tickets that lost their slot and are not released yet
};

}  // namespace paddock::agent
