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

}  // namespace
}  // namespace paddock::aws
