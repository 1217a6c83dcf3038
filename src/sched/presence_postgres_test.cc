// The servers' presence with two servers on one PostgreSQL database (issue 16): each server has
// its own PostgresStore on the shared database, as two `paddock server` processes do.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "sched/presence.h"
#include "sched/schema.h"
#include "store/postgres/postgres_store.h"
#include "store/testing/postgres_server.h"

namespace paddock::sched {
namespace {

using std::chrono::seconds;

std::unique_ptr<store::PostgresStore> Open(const std::string& url) {
  auto s = store::PostgresStore::Open({.url = url, .schemas = {kSchema}});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

int Servers(StatusOr<int> n) {
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n : -1;
}

// How many of the other servers' commits a store's listener heard that wrote server_presence.
class PresenceChanges {
 public:
  store::PostgresStore::ChangeListener Listener() {
    return [this](const std::vector<std::string>& tables) {
      std::lock_guard lock(mu_);
      for (const std::string& t : tables) heard_ += t == "server_presence";
      cv_.notify_all();
    };
  }
  // Waits (up to 10 s) until `n` have come; returns how many came by then.
  int WaitFor(int n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, seconds(10), [&] { return heard_ >= n; });
    return heard_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int heard_ = 0;  // GUARDED_BY(mu_)
};

// Each server sees the other's row, hears of it the moment it is written (so a joining server
// shrinks the others' rate-limit share at once, not at their next renewal) and stops counting it
// when it expires or leaves.
TEST(PresenceOnPostgresTest, TwoServersSeeEachOtherHearEachOtherJoinAndExpire) {
  auto pg = store::testing::PostgresServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  ASSERT_TRUE((*pg)->CreateDatabase("presence").ok());
  const std::string url = (*pg)->Url("presence");
  auto store_a = Open(url);
  auto store_b = Open(url);
  ASSERT_TRUE(store_a && store_b);
  PresenceChanges heard_by_a;
  store_a->SetChangeListener(heard_by_a.Listener());
  testing::FakeClock clock;
  Presence a(*store_a, "host-a:0001", seconds(6));
  Presence b(*store_b, "host-b:0002", seconds(6));

  EXPECT_EQ(Servers(a.Renew(clock.Now())), 1);
  EXPECT_EQ(Servers(b.Renew(clock.Now())), 2) << "b sees a";
  EXPECT_EQ(heard_by_a.WaitFor(1), 1) << "a hears b's row written";
  EXPECT_EQ(Servers(a.Count(clock.Now())), 2) << "a sees b";

  clock.Advance(seconds(4));
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 2);  // b stops renewing: killed
  clock.Advance(seconds(2));
  EXPECT_EQ(Servers(a.Count(clock.Now())), 1) << "b's row expired 6 s after its last renewal";
  EXPECT_EQ(Servers(a.Renew(clock.Now())), 1);
  EXPECT_EQ(Servers(b.Renew(clock.Now())), 2) << "b back, after a removed its expired row";
  EXPECT_EQ(heard_by_a.WaitFor(2), 2);
  ASSERT_TRUE(b.Leave().ok());
  EXPECT_EQ(heard_by_a.WaitFor(3), 3) << "a hears b leave";
  EXPECT_EQ(Servers(a.Count(clock.Now())), 1);
  store_a->Close();
  store_b->Close();
}

}  // namespace
}  // namespace paddock::sched
