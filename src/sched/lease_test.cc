#include "sched/lease.h"

#include <set>

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::sched {
namespace {

using std::chrono::seconds;

constexpr std::string_view kTable = "services";  // any table the fenced write touches

// One fenced write, as the scheduler makes them: the lease check and the change in one transaction.
Status FencedPut(store::Store& store, const Lease& lease, uint64_t epoch, TimePoint now, const std::string& value) {
  return store.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put(kTable, "k", value));  // before the check: a refusal must undo it
    return lease.CheckFence(txn, epoch, now);
  });
}

std::optional<std::string> Read(store::Store& store) {
  std::optional<std::string> out;
  Status s = store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(out, txn.Get(kTable, "k"));
    return OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::optional<uint64_t> Acquire(Lease& lease, TimePoint now) {
  auto r = lease.TryAcquire(now);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::nullopt;
}

TEST(LeaseTest, OneHolderAtATimeAndTheDeposedOneIsFenced) {
  testing::TempStore store;
  testing::FakeClock clock;
  Lease a(*store, "server-a", seconds(10));
  Lease b(*store, "server-b", seconds(10));

  EXPECT_EQ(Acquire(a, clock.Now()), 1u);
  clock.Advance(seconds(5));
  EXPECT_EQ(Acquire(a, clock.Now()), 1u) << "a renewal in time keeps the epoch";
  EXPECT_EQ(Acquire(b, clock.Now()), std::nullopt) << "a's lease is live";
  ASSERT_TRUE(FencedPut(*store, a, 1, clock.Now(), "a1").ok());
  EXPECT_EQ(Read(*store), "a1");

  // a's renewal at +5 s holds until +15 s; b may not take it a millisecond before.
  clock.Advance(seconds(10) - std::chrono::milliseconds(1));
  EXPECT_EQ(Acquire(b, clock.Now()), std::nullopt);
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(Acquire(b, clock.Now()), 2u) << "expired: b takes over with a new epoch";

  Status late = FencedPut(*store, a, 1, clock.Now(), "a-late");
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late.ToString();
  EXPECT_TRUE(IsError(late, Error::kLeaseLost)) << late.ToString();
  EXPECT_EQ(Read(*store), "a1") << "the refused write changed nothing";
  EXPECT_EQ(Acquire(a, clock.Now()), std::nullopt) << "b holds it now";
  EXPECT_TRUE(FencedPut(*store, b, 2, clock.Now(), "b2").ok());
  EXPECT_EQ(Read(*store), "b2");
  EXPECT_EQ(FencedPut(*store, b, 1, clock.Now(), "b-wrong-epoch").detail(), ErrorDetail(Error::kLeaseLost));

  // Release hands it over at once, with a higher epoch.
  ASSERT_TRUE(b.Release().ok());
  EXPECT_EQ(FencedPut(*store, b, 2, clock.Now(), "b-after-release").detail(), ErrorDetail(Error::kLeaseLost));
  EXPECT_EQ(Acquire(a, clock.Now()), 3u);
  EXPECT_EQ(Acquire(b, clock.Now()), std::nullopt);
  ASSERT_TRUE(b.Release().ok()) << "releasing someone else's lease is a no-op";
  EXPECT_TRUE(FencedPut(*store, a, 3, clock.Now(), "a3").ok());
  EXPECT_EQ(Read(*store), "a3");
}

// A restarted server (the same host and state directory: `successor_of`) takes its earlier life's
// live lease at once, with a new epoch that fences the old life's writes; anyone else still waits.
TEST(LeaseTest, ARestartedServerTakesItsEarlierLifesLeaseAtOnce) {
  testing::TempStore store;
  testing::FakeClock clock;
  Lease before(*store, "host:state1:100:aaaa", seconds(10), "host:state1:");
  Lease other(*store, "host:state2:300:cccc", seconds(10), "host:state2:");
  EXPECT_EQ(Acquire(before, clock.Now()), 1u);
  ASSERT_TRUE(FencedPut(*store, before, 1, clock.Now(), "before").ok());
  clock.Advance(seconds(1));
  EXPECT_EQ(Acquire(other, clock.Now()), std::nullopt) << "another server waits out the live lease";

  Lease after(*store, "host:state1:200:bbbb", seconds(10), "host:state1:");
  EXPECT_EQ(Acquire(after, clock.Now()), 2u) << "the restarted server does not wait 9 s";
  Status late = FencedPut(*store, before, 1, clock.Now(), "before-late");
  EXPECT_TRUE(IsError(late, Error::kLeaseLost)) << late.ToString();
  EXPECT_EQ(Read(*store), "before");
  EXPECT_TRUE(FencedPut(*store, after, 2, clock.Now(), "after").ok());
  EXPECT_EQ(Acquire(after, clock.Now()), 2u) << "its own renewals keep the epoch";
  EXPECT_EQ(Acquire(other, clock.Now()), std::nullopt);
}

// A holder `gone` says is dead (the deploy controller's replicas: its pid no longer runs) loses its
// live lease to the first replica that asks, with a new epoch; a live one's lease is waited out.
TEST(LeaseTest, ADeadHoldersLiveLeaseIsTakenOverAtOnce) {
  testing::TempStore store;
  testing::FakeClock clock;
  std::set<std::string, std::less<>> dead;
  auto gone = [&](std::string_view holder) { return dead.contains(holder); };
  Lease a(*store, "replica-a", seconds(10));
  Lease b(*store, "replica-b", seconds(10));
  a.TakeOverWhen(gone);
  b.TakeOverWhen(gone);
  EXPECT_EQ(Acquire(a, clock.Now()), 1u);
  ASSERT_TRUE(FencedPut(*store, a, 1, clock.Now(), "a1").ok());
  EXPECT_EQ(Acquire(b, clock.Now()), std::nullopt) << "a runs: its lease is waited out";

  dead.insert("replica-a");
  EXPECT_EQ(Acquire(b, clock.Now()), 2u) << "a is dead: b does not wait 10 s";
  EXPECT_TRUE(IsError(FencedPut(*store, a, 1, clock.Now(), "a-late"), Error::kLeaseLost));
  EXPECT_EQ(Read(*store), "a1");
  EXPECT_TRUE(FencedPut(*store, b, 2, clock.Now(), "b2").ok());
  EXPECT_EQ(Acquire(b, clock.Now()), 2u) << "b's own renewals keep the epoch";
}

TEST(LeaseTest, AnExpiredFenceIsRefusedEvenWithoutANewHolder) {
  testing::TempStore store;
  testing::FakeClock clock;
  Lease a(*store, "server-a", seconds(10));
  ASSERT_EQ(Acquire(a, clock.Now()), 1u);
  clock.Advance(seconds(10));
  EXPECT_EQ(FencedPut(*store, a, 1, clock.Now(), "late").detail(), ErrorDetail(Error::kLeaseLost));
  EXPECT_EQ(Read(*store), std::nullopt);
  // Retaking its own expired lease starts a new epoch: writes planned under the old one stay fenced.
  EXPECT_EQ(Acquire(a, clock.Now()), 2u);
  EXPECT_EQ(FencedPut(*store, a, 1, clock.Now(), "old").detail(), ErrorDetail(Error::kLeaseLost));
  EXPECT_TRUE(FencedPut(*store, a, 2, clock.Now(), "new").ok());
}

TEST(LeaseTest, NoLeaseRecordRefusesTheFence) {
  testing::TempStore store;
  Lease a(*store, "server-a", seconds(10));
  EXPECT_EQ(FencedPut(*store, a, 1, TimePoint(seconds(1'780'000'000)), "x").detail(), ErrorDetail(Error::kLeaseLost));
  EXPECT_EQ(Read(*store), std::nullopt);
  EXPECT_TRUE(a.Release().ok());
}

TEST(LeaseTest, AHolderNameWithSpacesRoundTrips) {
  testing::TempStore store;
  testing::FakeClock clock;
  Lease a(*store, "node 1 (eu)", seconds(10));
  Lease b(*store, "node 1", seconds(10));
  EXPECT_EQ(Acquire(a, clock.Now()), 1u);
  EXPECT_EQ(Acquire(a, clock.Now()), 1u);
  EXPECT_EQ(Acquire(b, clock.Now()), std::nullopt);
  EXPECT_TRUE(FencedPut(*store, a, 1, clock.Now(), "ok").ok());
}

}  // namespace
}  // namespace paddock::sched
