#include "cli/console_relay.h"

#include <charconv>
#include <utility>

#include <fmt/format.h>

namespace paddock::cli {
namespace {

constexpr std::string_view kPrefix = "console ";

}  // namespace

ConsoleRelay::ConsoleRelay(store::PostgresStore& store, console::ChangeFeed& feed) : store_(store) {
  feed.SetRelay([this](const AccountId& account, console::ChangeKind kind) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      pending_[account] |= 1u << static_cast<unsigned>(kind);
    }
    cv_.notify_one();
  });
  store.SetMessageListener([&feed](std::string_view message) { Receive(message, feed); });
  thread_ = std::thread([this] { Loop(); });
}

ConsoleRelay::~ConsoleRelay() { Stop(); }

void ConsoleRelay::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ConsoleRelay::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    // A burst of commits is one message: gather a little longer (not past a stop).
    cv_.wait_for(lock, kGather, [&] { return stop_; });
    std::map<AccountId, uint32_t> changes = std::exchange(pending_, {});
    const bool stopping = stop_;
    lock.unlock();
    for (const std::string& message : Messages(changes)) {
      if (Status s = store_.Broadcast(message); !s.ok())
        fmt::print(stderr, "paddock: console changes not relayed to the other servers: {}\n", s.ToString());
    }
    lock.lock();
    if (stopping) return;
  }
}

std::vector<std::string> ConsoleRelay::Messages(const std::map<AccountId, uint32_t>& changes) {
  std::vector<std::string> out;
  std::string message;
  for (const auto& [account, kinds] : changes) {
    std::string entry = fmt::format("{}:{}", account.str(), kinds);
    if (!message.empty() && message.size() + 1 + entry.size() > store::PostgresStore::kMaxMessage) {
      out.push_back(std::move(message));
      message.clear();
    }
    message += message.empty() ? std::string(kPrefix) : std::string(",");
    message += entry;
  }
  if (!message.empty()) out.push_back(std::move(message));
  return out;
}

void ConsoleRelay::Receive(std::string_view message, console::ChangeFeed& feed) {
  if (!message.starts_with(kPrefix)) return;
  std::string_view rest = message.substr(kPrefix.size());
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view account = entry.substr(0, colon), bits = entry.substr(colon + 1);
    uint32_t kinds = 0;
    auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), kinds);
    if (ec != std::errc() || end != bits.data() + bits.size() || !IsAccountId(account)) continue;
    for (size_t k = 0; k < console::kChangeKinds; ++k)
      if (kinds & (1u << k)) feed.PublishRelayed(AccountId(std::string(account)), static_cast<console::ChangeKind>(k));
  }
}

}  // namespace paddock::cli
