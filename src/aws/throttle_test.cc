#include "aws/throttle.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"

namespace paddock::aws {
namespace {

using namespace std::chrono_literals;

const Scope kA{AccountId("111111111111"), Region("us-east-1")};
const Scope kB{AccountId("222222222222"), Region("us-east-1")};
const Scope kAWest{AccountId("111111111111"), Region("us-west-2")};
constexpr BucketSpec kSpec{20, 1};

int Drain(Throttler& t, const Scope& s, std::string_view group, BucketSpec spec, int limit = 1000) {
  int n = 0;
  while (n < limit && t.TryAcquire(s, group, spec)) ++n;
  return n;
}

TEST(ThrottlerTest, StartsFullWithBurst) {
  testing::FakeClock clock;
  Throttler t(clock);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(t.TryAcquire(kA, "ecs:cluster-modify", kSpec)) << i;
  EXPECT_FALSE(t.TryAcquire(kA, "ecs:cluster-modify", kSpec));
}

TEST(ThrottlerTest, RefillsContinuously) {
  testing::FakeClock clock;
  Throttler t(clock);
  BucketSpec spec{50, 20};
  EXPECT_EQ(Drain(t, kA, "g", spec), 50);
  clock.Advance(1s);
  EXPECT_EQ(Drain(t, kA, "g", spec), 20);
  clock.Advance(500ms);
  EXPECT_EQ(Drain(t, kA, "g", spec), 10);
  clock.Advance(10ms);  // 0.2 tokens: not enough
  EXPECT_FALSE(t.TryAcquire(kA, "g", spec));
  clock.Advance(40ms);  // 1.0 token in total
  EXPECT_TRUE(t.TryAcquire(kA, "g", spec));
}

TEST(ThrottlerTest, NeverRefillsBeyondBurst) {
  testing::FakeClock clock;
  Throttler t(clock);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 20);
  clock.Advance(1h);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 20);
}

TEST(ThrottlerTest, BucketsAreIndependent) {
  testing::FakeClock clock;
  Throttler t(clock);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 20);
  EXPECT_EQ(Drain(t, kB, "g", kSpec), 20);
  EXPECT_EQ(Drain(t, kAWest, "g", kSpec), 20);
  EXPECT_EQ(Drain(t, kA, "other", kSpec), 20);
  EXPECT_FALSE(t.TryAcquire(kA, "g", kSpec));
}

TEST(ThrottlerTest, ClockGoingBackwardsDoesNotMint) {
  testing::FakeClock clock;
  Throttler t(clock);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 20);
  clock.Advance(-10s);
  EXPECT_FALSE(t.TryAcquire(kA, "g", kSpec));
  clock.Advance(10s);
  EXPECT_FALSE(t.TryAcquire(kA, "g", kSpec));
}

// Servers sharing a store (docs/scaling.md, "Several servers"): each takes 1/n of the budget.
TEST(ThrottlerTest, ShareOfDividesBurstAndRateButKeepsOneToken) {
  EXPECT_EQ(Throttler::ShareOf({20, 1}, 1).burst, 20);
  EXPECT_EQ(Throttler::ShareOf({20, 1}, 2).burst, 10);
  EXPECT_EQ(Throttler::ShareOf({20, 1}, 2).refill_per_second, 0.5);
  EXPECT_EQ(Throttler::ShareOf({100, 20}, 3).refill_per_second, 20.0 / 3);
  EXPECT_EQ(Throttler::ShareOf({5, 1}, 8).burst, 1) << "a full bucket always admits a call";
  EXPECT_EQ(Throttler::ShareOf({5, 1}, 8).refill_per_second, 1.0 / 8);
  EXPECT_EQ(Throttler::ShareOf({20, 1}, 0).burst, 20) << "no count is one server";
}

TEST(ThrottlerTest, EachOfNServersAdmitsItsShareSoTogetherTheyAdmitOneBudget) {
  testing::FakeClock clock;
  Throttler a(clock);
  Throttler b(clock);
  a.SetServers(2);
  b.SetServers(2);
  BucketSpec spec{100, 20};
  EXPECT_EQ(Drain(a, kA, "g", spec) + Drain(b, kA, "g", spec), 100);
  clock.Advance(1s);
  EXPECT_EQ(Drain(a, kA, "g", spec), 10);
  EXPECT_EQ(Drain(b, kA, "g", spec), 10);
  clock.Advance(3s);
  EXPECT_EQ(Drain(a, kA, "g", spec) + Drain(b, kA, "g", spec), 60) << "20 a second in all";
  EXPECT_EQ(Drain(a, kB, "g", spec), 50) << "every account has its own budget";
}

TEST(ThrottlerTest, AServerJoiningClampsAFullBucketToTheNewShare) {
  testing::FakeClock clock;
  Throttler t(clock);
  EXPECT_EQ(Drain(t, kA, "g", kSpec, 5), 5);  // 15 of 20 left
  t.SetServers(2);
  EXPECT_EQ(t.servers(), 2);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 10);
  clock.Advance(4s);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 2) << "half a token a second";
}

TEST(ThrottlerTest, AServerLeavingGrowsTheShareFromNowWithoutMinting) {
  testing::FakeClock clock;
  Throttler t(clock);
  t.SetServers(2);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 10);
  clock.Advance(4s);  // 2 tokens at half a token a second, before the other server left
  t.SetServers(1);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 2) << "the time before the change refills at the old rate";
  clock.Advance(4s);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 4) << "the time after it at the whole rate";
  clock.Advance(1h);
  EXPECT_EQ(Drain(t, kA, "g", kSpec), 20) << "up to the whole burst";
}

TEST(ThrottlerTest, ABurstSmallerThanTheServersStillAdmitsOneCallPerServer) {
  testing::FakeClock clock;
  Throttler t(clock);
  t.SetServers(8);
  BucketSpec spec{5, 1};
  EXPECT_EQ(Drain(t, kA, "g", spec), 1);
  clock.Advance(4s);
  EXPECT_EQ(Drain(t, kA, "g", spec), 0) << "an eighth of a token a second";
  clock.Advance(4s);
  EXPECT_EQ(Drain(t, kA, "g", spec), 1);
}

}  // namespace
}  // namespace paddock::aws
