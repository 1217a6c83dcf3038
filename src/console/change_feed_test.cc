#include "console/change_feed.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace paddock::console {
namespace {

using std::chrono::steady_clock;
constexpr auto kLong = std::chrono::seconds(30);
const AccountId kMine("111111111111");
const AccountId kTheirs("222222222222");

uint32_t Bit(ChangeKind k) { return 1u << static_cast<unsigned>(k); }

TEST(ChangeFeedTest, APublishWakesOnlyThatAccountsWatchesWithItsKind) {
  ChangeFeed feed;
  auto mine = feed.Open(kMine);
  auto theirs = feed.Open(kTheirs);
  ASSERT_TRUE(mine.ok() && theirs.ok());
  std::thread publisher([&] { feed.Publish(kMine, ChangeKind::kEcs); });
  ChangeFeed::Change c = (*mine)->Next(steady_clock::now() + kLong);
  publisher.join();
  EXPECT_EQ(c.kinds, Bit(ChangeKind::kEcs));
  EXPECT_EQ(c.sequence, 1u);
  EXPECT_FALSE(c.closed);
  // The other account heard nothing: its Next runs to its deadline with no kinds.
  ChangeFeed::Change other = (*theirs)->Next(steady_clock::now());
  EXPECT_EQ(other.kinds, 0u);
  EXPECT_EQ(other.sequence, 0u);
}

TEST(ChangeFeedTest, KindsGatherUntilTheNextNext) {
  ChangeFeed feed;
  auto w = feed.Open(kMine);
  ASSERT_TRUE(w.ok());
  feed.Publish(kMine, ChangeKind::kEcs);
  feed.Publish(kMine, ChangeKind::kLogs);
  feed.Publish(kMine, ChangeKind::kEcs);
  ChangeFeed::Change c = (*w)->Next(steady_clock::now() + kLong);
  EXPECT_EQ(c.kinds, Bit(ChangeKind::kEcs) | Bit(ChangeKind::kLogs));
  EXPECT_EQ(c.sequence, 3u);
  EXPECT_EQ((*w)->Next(steady_clock::now()).kinds, 0u) << "taken once";
}

TEST(ChangeFeedTest, AnAccountNobodyWatchesCostsNothingAndIsNotRemembered) {
  ChangeFeed feed;
  feed.Publish(kMine, ChangeKind::kSsm);  // before any watch: not delivered later
  auto w = feed.Open(kMine);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Next(steady_clock::now()).kinds, 0u);
  EXPECT_EQ(feed.OpenWatches(kTheirs), 0u);
}

TEST(ChangeFeedTest, AnAccountHoldsAtMostFifteenWatches) {
  ChangeFeed feed;
  std::vector<std::unique_ptr<ChangeFeed::Watch>> held;
  for (size_t i = 0; i < ChangeFeed::kMaxWatchesPerAccount; ++i) {
    auto w = feed.Open(kMine);
    ASSERT_TRUE(w.ok()) << i;
    held.push_back(std::move(*w));
  }
  auto refused = feed.Open(kMine);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(feed.Open(kTheirs).ok()) << "another account's are its own";
  held.pop_back();  // a watch that ends frees its place
  EXPECT_TRUE(feed.Open(kMine).ok());
  EXPECT_EQ(feed.OpenWatches(kMine), ChangeFeed::kMaxWatchesPerAccount - 1);
}

TEST(ChangeFeedTest, ShutdownEndsEveryWaitAtOnce) {
  ChangeFeed feed;
  auto w = feed.Open(kMine);
  ASSERT_TRUE(w.ok());
  std::thread stopper([&] { feed.Shutdown(); });
  ChangeFeed::Change c = (*w)->Next(steady_clock::now() + std::chrono::hours(1));
  stopper.join();
  EXPECT_TRUE(c.closed);
}

TEST(ChangeFeedTest, ReadsPublishNothingAndServicesNameTheirKinds) {
  for (std::string_view read : {"DescribeServices", "ListTasks", "GetParameter", "FilterLogEvents", "StartLiveTail",
                                "DiscoverInstances", "BatchGetSecretValue", "WatchChanges"})
    EXPECT_TRUE(ActionOnlyReads(read)) << read;
  for (std::string_view write : {"UpdateService", "RunTask", "StopTask", "PutParameter", "PutLogEvents",
                                 "RegisterInstance", "DeleteNamespace", "StartTask", "TagResource"})
    EXPECT_FALSE(ActionOnlyReads(write)) << write;
  EXPECT_EQ(ChangeKindOfService("ecs"), ChangeKind::kEcs);
  EXPECT_EQ(ChangeKindOfService("servicediscovery"), ChangeKind::kServiceDiscovery);
  EXPECT_EQ(ChangeKindOfService("iam"), std::nullopt);
  EXPECT_EQ(ChangeKindName(ChangeKind::kSecretsManager), "secretsmanager");
}

}  // namespace
}  // namespace paddock::console
