#include "console/change_feed.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

namespace paddock::console {
namespace {

constexpr std::array<std::string_view, kChangeKinds> kNames = {"ecs", "logs", "ssm", "servicediscovery",
                                                              "secretsmanager", "deploy"};

constexpr std::string_view kReadPrefixes[] = {"Describe", "List", "Get", "Filter", "Discover", "Search", "Simulate"};

}  // namespace

std::string_view ChangeKindName(ChangeKind kind) { return kNames[static_cast<size_t>(kind)]; }

std::optional<ChangeKind> ChangeKindOfService(std::string_view signing_name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == signing_name) return static_cast<ChangeKind>(i);
  return std::nullopt;
}

bool ActionOnlyReads(std::string_view action) {
  if (action == "StartLiveTail" || action == "WatchChanges") return true;
  // Batch actions write (BatchPutAttributes) unless they get (BatchGetSecretValue).
  if (action.starts_with("Batch")) return action.starts_with("BatchGet") || action.starts_with("BatchDescribe");
  for (std::string_view prefix : kReadPrefixes)
    if (action.starts_with(prefix)) return true;
  return false;
}

ChangeFeed::Watch::~Watch() {
  std::lock_guard lock(feed_.mu_);
  auto it = feed_.accounts_.find(state_->account);
  if (it != feed_.accounts_.end() && --it->second.watches == 0) feed_.accounts_.erase(it);
  feed_.watches_.erase(state_);
}

ChangeFeed::Change ChangeFeed::Watch::Next(std::chrono::steady_clock::time_point deadline,
                                           std::chrono::milliseconds coalesce) {
  std::unique_lock lock(feed_.mu_);
  feed_.cv_.wait_until(lock, deadline, [&] { return feed_.shutdown_ || state_->pending != 0; });
  if (state_->pending != 0 && coalesce.count() > 0) {
    const auto until = std::min(deadline, std::chrono::steady_clock::now() + coalesce);
    feed_.cv_.wait_until(lock, until, [&] { return feed_.shutdown_; });
  }
  Change change;
  change.closed = feed_.shutdown_;
  change.kinds = std::exchange(state_->pending, 0);
  auto it = feed_.accounts_.find(state_->account);
  if (it != feed_.accounts_.end()) change.sequence = it->second.sequence;
  return change;
}

void ChangeFeed::SetRelay(std::function<void(const AccountId&, ChangeKind)> relay) { relay_ = std::move(relay); }

void ChangeFeed::Publish(const AccountId& account, ChangeKind kind) {
  if (relay_) relay_(account, kind);
  PublishRelayed(account, kind);
}

void ChangeFeed::PublishRelayed(const AccountId& account, ChangeKind kind) {
  {
    std::lock_guard lock(mu_);
    auto it = accounts_.find(account);
    if (it == accounts_.end()) return;  // nobody watches it: nothing to remember
    ++it->second.sequence;
    for (Watch::State& w : watches_)
      if (w.account == account) w.pending |= 1u << static_cast<unsigned>(kind);
  }
  cv_.notify_all();
}

StatusOr<std::unique_ptr<ChangeFeed::Watch>> ChangeFeed::Open(const AccountId& account) {
  std::lock_guard lock(mu_);
  Account& a = accounts_[account];
  if (a.watches >= kMaxWatchesPerAccount) {
    if (a.watches == 0) accounts_.erase(account);
    return ResourceExhausted(fmt::format("Your account already has {} console watches open, the most allowed at once; "
                                         "close a console tab or wait for one to end.",
                                         kMaxWatchesPerAccount));
  }
  ++a.watches;
  watches_.push_back(Watch::State{account});
  return std::unique_ptr<Watch>(new Watch(*this, std::prev(watches_.end())));
}

void ChangeFeed::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

size_t ChangeFeed::OpenWatches(const AccountId& account) const {
  std::lock_guard lock(mu_);
  auto it = accounts_.find(account);
  return it == accounts_.end() ? 0 : it->second.watches;
}

}  // namespace paddock::console
