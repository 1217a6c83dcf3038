#include "cli/console_relay.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace paddock::cli {
namespace {

using console::ChangeFeed;
using console::ChangeKind;

constexpr uint32_t Bit(ChangeKind k) { return 1u << static_cast<unsigned>(k); }

// What crosses servers names accounts and kinds, each message within a notification's limit, and
// a received one wakes the named account's watches with its kinds only.
TEST(ConsoleRelayTest, MessagesStayUnderTheLimitAndWakeOnlyTheNamedAccountsWatches) {
  std::map<AccountId, uint32_t> changes;
  for (int i = 0; i < 1000; ++i) changes[AccountId(fmt::format("{:012}", i))] = Bit(ChangeKind::kEcs);
  changes[AccountId("111111111111")] = Bit(ChangeKind::kSsm) | Bit(ChangeKind::kLogs);
  const std::vector<std::string> messages = ConsoleRelay::Messages(changes);
  ASSERT_GT(messages.size(), 1u) << "1,001 accounts fit one message?";
  size_t entries = 0;
  for (const std::string& m : messages) {
    EXPECT_LE(m.size(), store::PostgresStore::kMaxMessage);
    EXPECT_TRUE(m.starts_with("console ")) << m;
    entries += static_cast<size_t>(std::count(m.begin(), m.end(), ',')) + 1;
  }
  EXPECT_EQ(entries, changes.size());

  ChangeFeed feed;
  auto mine = feed.Open(AccountId("111111111111"));
  auto theirs = feed.Open(AccountId("222222222222"));
  ASSERT_TRUE(mine.ok() && theirs.ok());
  for (const std::string& m : messages) ConsoleRelay::Receive(m, feed);
  // Malformed or foreign messages change nothing.
  for (const char* junk : {"console 222222222222:x", "console 22222222222:1", "console 222222222222", "other 222222222222:1",
                           "console ,,:", ""})
    ConsoleRelay::Receive(junk, feed);
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ((*mine)->Next(now).kinds, Bit(ChangeKind::kSsm) | Bit(ChangeKind::kLogs));
  EXPECT_EQ((*theirs)->Next(now).kinds, 0u);
}

// A publish is handed to the relay whether or not a watch is open here; a relayed one is not
// handed back (it would echo between servers).
TEST(ConsoleRelayTest, TheFeedRelaysItsOwnPublishesAndNotRelayedOnes) {
  ChangeFeed feed;
  std::vector<std::pair<std::string, ChangeKind>> relayed;
  feed.SetRelay([&](const AccountId& a, ChangeKind k) { relayed.emplace_back(a.str(), k); });
  feed.Publish(AccountId("111111111111"), ChangeKind::kEcs);
  feed.PublishRelayed(AccountId("111111111111"), ChangeKind::kSsm);
  ASSERT_EQ(relayed.size(), 1u);
  EXPECT_EQ(relayed[0], std::make_pair(std::string("111111111111"), ChangeKind::kEcs));
}

}  // namespace
}  // namespace paddock::cli
