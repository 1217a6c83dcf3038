// The scheduler's lease with two servers on one PostgreSQL database (issue 16): each server has its
// own PostgresStore on the shared database, as two `paddock server` processes do.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "sched/lease.h"
#include "sched/schema.h"
#include "store/postgres/postgres_store.h"
#include "store/testing/postgres_server.h"

namespace paddock::sched {
namespace {

using std::chrono::seconds;

constexpr std::string_view kTable = "scheduler_lease";  // the fenced writes' log lives beside the lease
constexpr std::string_view kLogLength = "length";

std::unique_ptr<store::PostgresStore> Open(const std::string& url) {
  auto s = store::PostgresStore::Open({.url = url, .schemas = {kSchema}});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// One fenced write, as the scheduler makes them: the lease check and the change in one
// transaction. It appends `who` to a log, so the test can read the order writes committed in.
Status FencedAppend(store::Store& store, const Lease& lease, uint64_t epoch, TimePoint now, const std::string& who) {
  return store.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(std::optional<std::string> n, txn.Get(kTable, kLogLength));
    const int next = n ? std::stoi(*n) : 0;
    RETURN_IF_ERROR(txn.Put(kTable, "log-" + std::to_string(1000000 + next), who));
    RETURN_IF_ERROR(txn.Put(kTable, kLogLength, std::to_string(next + 1)));
    return lease.CheckFence(txn, epoch, now);  // after the change: a refusal must undo it
  });
}

std::vector<std::string> ReadLog(store::Store& store) {
  std::vector<std::string> out;
  Status s = store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kTable, {"log-", "log."}, 100000));
    for (auto& r : rows) out.push_back(std::move(r.value));
    return OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Server a leads; its lease runs out (a stall: a GC pause, a lost network) while it keeps
// writing as fast as it can, believing itself the leader, and server b takes the lease over. Every
// write a makes after b's takeover is refused — by the database: the fence is read inside each
// write transaction, and PostgreSQL runs every server's write transactions one after another
// (store/postgres's advisory write lock), so in the one history the database keeps, no write of
// a's epoch follows b's takeover. a's own view (its clock, its epoch) never changes.
TEST(LeaseOnPostgresTest, ADeposedLeadersLateWritesAreRefusedByTheDatabase) {
  auto pg = store::testing::PostgresServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  ASSERT_TRUE((*pg)->CreateDatabase("lease").ok());
  const std::string url = (*pg)->Url("lease");
  auto store_a = Open(url);
  auto store_b = Open(url);
  ASSERT_TRUE(store_a && store_b);
  testing::FakeClock clock;
  Lease a(*store_a, "server-a", seconds(10));
  Lease b(*store_b, "server-b", seconds(10));

  const TimePoint a_believes = clock.Now();  // a's clock stalls here: to a, its lease is live
  auto a_epoch = a.TryAcquire(a_believes);
  ASSERT_TRUE(a_epoch.ok() && *a_epoch == std::optional<uint64_t>(1));
  auto refused = b.TryAcquire(clock.Now());
  ASSERT_TRUE(refused.ok() && !*refused) << "a's lease is live: b waits";
  ASSERT_TRUE(FencedAppend(*store_a, a, 1, a_believes, "a").ok());

  std::atomic<bool> stop{false};
  std::atomic<int> a_committed{0}, a_refused{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&] {
      while (!stop) {
        Status s = FencedAppend(*store_a, a, 1, a_believes, "a");
        if (s.ok()) {
          ++a_committed;
        } else {
          EXPECT_TRUE(IsError(s, Error::kLeaseLost)) << s.ToString();
          ++a_refused;
        }
      }
    });
  }
  while (a_committed < 20) std::this_thread::yield();
  clock.Advance(seconds(11));
  auto b_epoch = b.TryAcquire(clock.Now());
  ASSERT_TRUE(b_epoch.ok() && *b_epoch == std::optional<uint64_t>(2)) << "a's lease expired: b takes over";
  ASSERT_TRUE(FencedAppend(*store_b, b, 2, clock.Now(), "b").ok());
  while (a_refused < 20) std::this_thread::yield();
  stop = true;
  for (auto& w : writers) w.join();

  const std::vector<std::string> log = ReadLog(*store_b);
  ASSERT_EQ(log.size(), static_cast<size_t>(1 + a_committed.load() + 1));
  EXPECT_EQ(log.back(), "b") << "no write of a's epoch committed after b's takeover";
  EXPECT_EQ(std::count(log.begin(), log.end(), "a"), 1 + a_committed.load());
  store_a->Close();
  store_b->Close();
}

}  // namespace
}  // namespace paddock::sched
