#include "agent/inprocess/poll_slots.h"

#include <algorithm>

namespace paddock::agent {

std::optional<uint64_t> PollSlots::Admit(std::string_view account, std::string_view instance) {
  if (total_ == 0) return std::nullopt;
  // One waiting poll per instance: the newer one takes over the older one's slot.
  for (const auto& [ticket, h] : holders_) {
    if (h.instance == instance) {
      Take(ticket, Loss::kSuperseded);
      break;
    }
  }
  if (holders_.size() >= total_) {
    std::map<std::string_view, size_t> per_account;
    for (const auto& [ticket, h] : holders_) ++per_account[h.account];
    const size_t accounts = per_account.size() + (per_account.count(account) ? 0 : 1);
    const size_t share = std::max<size_t>(1, total_ / accounts);
    const size_t mine = per_account.count(account) ? per_account[account] : 0;
    if (mine >= share) return std::nullopt;
    // The account holding the most gives up its oldest poll, if it is over its share.
    std::string_view richest;
    size_t most = 0;
    for (const auto& [a, n] : per_account) {
      if (n > most) {
        most = n;
        richest = a;
      }
    }
    if (most <= share) return std::nullopt;
    for (const auto& [ticket, h] : holders_) {
      if (h.account == richest) {
        Take(ticket, Loss::kFairShare);
        break;
      }
    }
  }
  const uint64_t ticket = next_ticket_++;
  holders_.emplace(ticket, Holder{std::string(account), std::string(instance)});
  return ticket;
}

void PollSlots::Take(uint64_t ticket, Loss why) {
  holders_.erase(ticket);
  lost_.emplace(ticket, why);
}

std::optional<PollSlots::Loss> PollSlots::Lost(uint64_t ticket) const {
  auto it = lost_.find(ticket);
  if (it == lost_.end()) return std::nullopt;
  return it->second;
}

void PollSlots::Release(uint64_t ticket) {
  holders_.erase(ticket);
  lost_.erase(ticket);
}

size_t PollSlots::held(std::string_view account) const {
  return static_cast<size_t>(
      std::count_if(holders_.begin(), holders_.end(), [&](const auto& e) { return e.second.account == account; }));
}

}  // namespace paddock::agent
