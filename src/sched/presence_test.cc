#include "sched/presence.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::sched {
namespace {

using std::chrono::seconds;

int Servers(StatusOr<int> n) {
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n : -1;
}

TEST(PresenceTest, AServerAloneCountsItselfEvenBeforeItsRowIsWritten) {
  testing::TempStore store;
  testing::FakeClock clock;
  Presence a(*store, "host-a:1", seconds(6));
  EXPECT_EQ(Servers(a.Count(clock.Now())), 1);
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 1);
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 1) << "its own row is never counted twice";
}

TEST(PresenceTest, LiveRowsCountUntilTheyExpireOrLeave) {
  testing::TempStore store;
  testing::FakeClock clock;
  Presence a(*store, "host-a:1", seconds(6));
  Presence b(*store, "host-b:1", seconds(6));
  Presence c(*store, "host-c:1", seconds(6));
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 1);
  EXPECT_EQ(Servers(b.Renew(clock.Now())), 2);
  EXPECT_EQ(Servers(c.Renew(clock.Now())), 3);
  EXPECT_EQ(Servers(a.Count(clock.Now())), 3);

  clock.Advance(seconds(4));
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 3);
  EXPECT_EQ(Servers(b.Renew(clock.Now())), 3);  // c stops renewing (killed)
  clock.Advance(seconds(2) - std::chrono::milliseconds(1));
  EXPECT_EQ(Servers(a.Count(clock.Now())), 3) << "c's row is live for 6 s after its last renewal";
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(Servers(a.Count(clock.Now())), 2) << "and not a moment longer";
  EXPECT_EQ(Servers(b.Count(clock.Now())), 2);

  ASSERT_TRUE(b.Leave().ok());
  EXPECT_EQ(Servers(a.Count(clock.Now())), 1) << "a server that stops cleanly leaves at once";
}

TEST(PresenceTest, ARenewalRemovesExpiredRowsAndARestartReplacesItsEarlierLife) {
  testing::TempStore store;
  testing::FakeClock clock;
  Presence a(*store, "host-a:1", seconds(6));
  Presence b(*store, "host-b:1", seconds(6));
  ASSERT_EQ(Servers(a.Renew(clock.Now())), 1);
  ASSERT_EQ(Servers(b.Renew(clock.Now())), 2);
  Presence b_again(*store, "host-b:1", seconds(6));  // b restarted after a kill -9
  EXPECT_EQ(Servers(b_again.Renew(clock.Now())), 2) << "one server, not two";

  clock.Advance(seconds(7));
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 1);
  size_t rows = 0;
  ASSERT_TRUE(store->Read([&](store::ReadTxn& txn) -> Status {
                     ASSIGN_OR_RETURN(auto all, txn.Scan("server_presence", store::Range{}, 100));
                     rows = all.size();
                     return OkStatus();
                   })
                  .ok());
  EXPECT_EQ(rows, 1u) << "b's expired row is gone";
}

}  // namespace
}  // namespace paddock::sched
