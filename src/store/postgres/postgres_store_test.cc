#include "store/postgres/postgres_store.h"

#include <libpq-fe.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/dump.h"
#include "store/key.h"
#include "store/postgres/internal/read_cache.h"
#include "store/sqlite/sqlite_store.h"
#include "store/testing/crash_run.h"
#include "store/testing/postgres_server.h"
#include "store/testing/store_conformance.h"
#include "store/testing/test_schema.h"

namespace paddock::store {
namespace {

using ::testing::HasSubstr;
using testing::PostgresServer;
using testing::StoreConformanceTest;
using testing::StoreFactory;

// One PostgreSQL for the whole binary, started on first use.
PostgresServer& Server() {
  static std::unique_ptr<PostgresServer> server = [] {
    auto s = PostgresServer::Start();
    if (!s.ok()) {
      ADD_FAILURE() << s.status().ToString();
      std::abort();
    }
    return std::move(s).value();
  }();
  return *server;
}

// A database of its own for each test's directory (the suite reopens the same dir: same data).
std::string DatabaseFor(const std::string& dir) {
  return fmt::format("c_{:016x}", std::hash<std::string>{}(dir));
}

std::unique_ptr<Store> OpenOrNull(PostgresOptions options) {
  auto s = PostgresStore::Open(options);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    return nullptr;
  }
  return std::move(s).value();
}

StoreFactory Factory(std::string name, PostgresOptions base) {
  return StoreFactory{std::move(name), [base](const std::string& dir) -> std::unique_ptr<Store> {
                        const std::string db = DatabaseFor(dir);
                        if (Status s = Server().CreateDatabase(db); !s.ok()) {
                          ADD_FAILURE() << s.ToString();
                          return nullptr;
                        }
                        PostgresOptions o = base;
                        o.url = Server().Url(db);
                        o.schemas = {testing::kTestSchema};
                        return OpenOrNull(o);
                      }};
}

INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformanceTest,
                         ::testing::Values(Factory("Batched", {}),
                                           // One closure per transaction, one reader for everyone.
                                           Factory("NoBatchingOneReader", {.readers = 1, .max_batch = 1}),
                                           // With the read cache (ReadRepeatable's tests; the
                                           // size bound: ReadCacheTest).
                                           Factory("Cached", {.readers = 2, .cache_bytes = 8 << 20})),
                         testing::StoreFactoryName);

class PostgresStoreTest : public ::testing::Test {
 protected:
  // A fresh database for this test.
  std::string NewDatabase() {
    const std::string name = fmt::format("x_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                         databases_++);
    std::string lowered;
    for (char c : name) lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(Server().CreateDatabase(lowered).ok());
    return Server().Url(lowered);
  }
  std::unique_ptr<PostgresStore> Open(const std::string& url, std::vector<ModuleSchema> schemas = {testing::kTestSchema},
                                      size_t cache_bytes = 0) {
    auto s = PostgresStore::Open({.url = url, .schemas = std::move(schemas), .cache_bytes = cache_bytes});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  int databases_ = 0;
};

// Servers on one database: their writes are one serial history (no lost update), whichever
// server each comes through.
TEST_F(PostgresStoreTest, TwoStoresOnOneDatabaseSerializeTheirWrites) {
  const std::string url = NewDatabase();
  auto a = Open(url);
  auto b = Open(url);
  ASSERT_TRUE(a && b);
  constexpr int kPerThread = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? *a : *b;
      for (int i = 0; i < kPerThread; ++i) {
        Status s = store.Write([](WriteTxn& txn) -> Status {
          ASSIGN_OR_RETURN(auto v, txn.Get("meta", "counter"));
          const int n = v ? std::stoi(*v) : 0;
          return txn.Put("meta", "counter", std::to_string(n + 1));
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (Store* store : {static_cast<Store*>(a.get()), static_cast<Store*>(b.get())}) {
    std::optional<std::string> v;
    ASSERT_TRUE(store->Read([&](ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(v, txn.Get("meta", "counter"));
      return OkStatus();
    }).ok());
    EXPECT_EQ(v, std::to_string(8 * kPerThread));
  }
}

// The writer's statements share round trips: a write that reads once and writes costs two (BEGIN,
// the lock, the savepoint and the read; then the writes, the RELEASE and the COMMIT), however
// many rows it writes.
TEST_F(PostgresStoreTest, AWriteThatReadsOnceCostsTwoRoundTrips) {
  auto store = Open(NewDatabase());
  ASSERT_TRUE(store);
  for (int i = 0; i < 3; ++i) {
    const PostgresStore::WriterStats before = store->writer_stats();
    ASSERT_TRUE(store->Write([&](WriteTxn& txn) -> Status {
      RETURN_IF_ERROR(txn.Get("meta", "counter").status());
      for (int k = 0; k < 5; ++k) RETURN_IF_ERROR(txn.Put("meta", fmt::format("k{}", k), std::to_string(i)));
      return OkStatus();
    }).ok());
    const PostgresStore::WriterStats after = store->writer_stats();
    EXPECT_EQ(after.transactions - before.transactions, 1u);
    EXPECT_EQ(after.round_trips - before.round_trips, 2u) << "write " << i;
  }
}

// Collects what a store's change listener hears, for a test to wait on.
class HeardChanges {
 public:
  PostgresStore::ChangeListener Listener() {
    return [this](const std::vector<std::string>& tables) {
      std::lock_guard lock(mu_);
      heard_.push_back(tables);
      cv_.notify_all();
    };
  }
  // Waits (up to 10 s) until `n` notifications have come; returns what came by then.
  std::vector<std::vector<std::string>> WaitFor(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return heard_.size() >= n; });
    return heard_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<std::string>> heard_;  // GUARDED_BY(mu_)
};

// Several servers on one database: a commit through one store reaches the other stores'
// listeners, naming the tables it wrote; a store never hears its own writes, a rolled-back
// transaction is never heard, and a read-only one sends nothing.
TEST_F(PostgresStoreTest, ACommitOnOneStoreWakesTheOtherStoresListener) {
  const std::string url = NewDatabase();
  auto a = Open(url);
  auto b = Open(url);
  ASSERT_TRUE(a && b);
  HeardChanges heard_by_a, heard_by_b;
  a->SetChangeListener(heard_by_a.Listener());
  b->SetChangeListener(heard_by_b.Listener());
  // SetChangeListener returns once its store listens: every later commit is heard.
  ASSERT_TRUE(a->Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put("clusters", "c1", "v"));
    return txn.Put("tags", "t1", "v");
  }).ok());
  EXPECT_THAT(heard_by_b.WaitFor(1), ::testing::ElementsAre(::testing::UnorderedElementsAre("clusters", "tags")));

  // Refused (rolled back) and read-only work is never announced; the next commit is.
  Status refused = a->Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put("clusters_active", "x", "v"));
    return InvalidArgument("no");
  });
  ASSERT_EQ(refused.code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(a->Write([](WriteTxn& txn) -> Status { return txn.Get("clusters", "c1").status(); }).ok());
  ASSERT_TRUE(a->Write([](WriteTxn& txn) -> Status { return txn.Delete("tags", "t1"); }).ok());
  EXPECT_THAT(heard_by_b.WaitFor(2), ::testing::ElementsAre(::testing::UnorderedElementsAre("clusters", "tags"),
                                                            ::testing::ElementsAre("tags")));

  // And the other way round; a heard nothing of its own writes.
  ASSERT_TRUE(b->Write([](WriteTxn& txn) -> Status { return txn.Put("clusters_active", "c1", ""); }).ok());
  EXPECT_THAT(heard_by_a.WaitFor(1), ::testing::ElementsAre(::testing::ElementsAre("clusters_active")));
  EXPECT_EQ(heard_by_b.WaitFor(2).size(), 2u) << "b heard its own write";
  a->Close();
  b->Close();
}

// Messages between servers (PostgresStore::Broadcast): another store's listener hears one at once,
// the sender's own does not, and one past the limit is refused.
TEST_F(PostgresStoreTest, ABroadcastReachesTheOtherStoresMessageListenerNotItsOwn) {
  const std::string url = NewDatabase();
  auto a = Open(url);
  auto b = Open(url);
  ASSERT_TRUE(a && b);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> heard_by_a, heard_by_b;
  a->SetMessageListener([&](std::string_view m) {
    std::lock_guard lock(mu);
    heard_by_a.emplace_back(m);
    cv.notify_all();
  });
  b->SetMessageListener([&](std::string_view m) {
    std::lock_guard lock(mu);
    heard_by_b.emplace_back(m);
    cv.notify_all();
  });
  ASSERT_TRUE(a->Broadcast("console 111111111111:1").ok());
  ASSERT_TRUE(b->Broadcast("from b").ok());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !heard_by_b.empty() && !heard_by_a.empty(); }));
    EXPECT_EQ(heard_by_b, std::vector<std::string>{"console 111111111111:1"});
    EXPECT_EQ(heard_by_a, std::vector<std::string>{"from b"}) << "a store heard its own broadcast";
  }
  EXPECT_EQ(a->Broadcast(std::string(PostgresStore::kMaxMessage + 1, 'x')).code(), StatusCode::kInvalidArgument);
  a->Close();
  b->Close();
}

// The writer sends a closure's writes queued, with its next read or at its end. One that
// PostgreSQL refuses there (a key past its B-tree's ~2.7 KB entry limit) fails its closure only:
// the closure's other writes are undone, a statement the aborted round trip did not get to prepare
// is prepared the next time, and the closures after it commit.
TEST_F(PostgresStoreTest, AQueuedWriteThatFailsUndoesOnlyItsClosure) {
  auto store = Open(NewDatabase());
  ASSERT_TRUE(store);
  std::string huge(8192, '\0');
  std::mt19937 rng(7);
  for (char& c : huge) c = static_cast<char>(rng());
  Status failed = store->Write([&](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put("meta", "before", "1"));
    RETURN_IF_ERROR(txn.Put("meta", huge, "x"));    // queued: accepted here, refused by PostgreSQL
    return txn.Get("tags", "first-use").status();  // the round trip that carries both
  });
  EXPECT_EQ(failed.code(), StatusCode::kInternal) << failed.ToString();
  EXPECT_THAT(failed.message(), HasSubstr("index row"));
  Status ok = store->Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto v, txn.Get("tags", "first-use"));
    EXPECT_EQ(v, std::nullopt);
    return txn.Put("meta", "after", "2");
  });
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  std::optional<std::string> before, after;
  ASSERT_TRUE(store->Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(before, txn.Get("meta", "before"));
    ASSIGN_OR_RETURN(after, txn.Get("meta", "after"));
    return OkStatus();
  }).ok());
  EXPECT_EQ(before, std::nullopt);
  EXPECT_EQ(after, "2");
}

TEST_F(PostgresStoreTest, MigrationCreatesOnlyNewTablesAndRefusesANewerModule) {
  const std::string url = NewDatabase();
  constexpr TableDef kV1[] = {{"m_one", 1}};
  constexpr TableDef kV2[] = {{"m_one", 1}, {"m_two", 2}};
  {
    auto s = Open(url, {ModuleSchema{"m", 1, kV1}});
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->Write([](WriteTxn& txn) { return txn.Put("m_one", "k", "kept"); }).ok());
    EXPECT_EQ(s->Write([](WriteTxn& txn) { return txn.Put("m_two", "k", "v"); }).code(), StatusCode::kInternal);
  }
  {
    auto s = Open(url, {ModuleSchema{"m", 2, kV2}});  // a newer build: m_two appears, m_one keeps its rows
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->Write([](WriteTxn& txn) { return txn.Put("m_two", "k", "v"); }).ok());
    std::optional<std::string> v;
    ASSERT_TRUE(s->Read([&](ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(v, txn.Get("m_one", "k"));
      return OkStatus();
    }).ok());
    EXPECT_EQ(v, "kept");
  }
  // The older build refuses the database, naming the module, and changes nothing.
  auto old = PostgresStore::Open({.url = url, .schemas = {ModuleSchema{"m", 1, kV1}}});
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(old.status().message(), HasSubstr("version 2 of the 'm' tables"));
  EXPECT_TRUE(Open(url, {ModuleSchema{"m", 2, kV2}}) != nullptr);
}

// Servers starting together migrate once, and each finds every table.
TEST_F(PostgresStoreTest, ConcurrentOpensMigrateOnce) {
  const std::string url = NewDatabase();
  std::vector<std::thread> threads;
  std::atomic<int> opened = 0;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      auto s = PostgresStore::Open({.url = url, .readers = 1, .schemas = {testing::kTestSchema}});
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (s.ok() && (*s)->Write([](WriteTxn& txn) { return txn.Put("tags", "k", "v"); }).ok()) ++opened;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(opened.load(), 6);
}

TEST_F(PostgresStoreTest, UnreachableIsUnavailable) {
  auto s = PostgresStore::Open({.url = "host=/nonexistent port=1 user=postgres dbname=x connect_timeout=2"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(PostgresStore::Open({.url = ""}).status().code(), StatusCode::kInvalidArgument);
}

// kill -9 of PostgreSQL under load: the writes in flight fail, no acknowledged write is lost, and
// the same store object writes again once PostgreSQL is back.
TEST_F(PostgresStoreTest, AcknowledgedWritesSurviveKillingPostgres) {
  const std::string url = NewDatabase();
  auto store = Open(url);
  ASSERT_TRUE(store);
  constexpr int kThreads = 4;
  std::vector<std::vector<std::string>> acked(kThreads);
  std::atomic<int> total = 0;
  std::atomic<bool> stop = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t n = 0; !stop; ++n) {
        const std::string key = Key().U64(static_cast<uint64_t>(t)).U64(n).Done();
        if (store->Write([&](WriteTxn& txn) { return txn.Put("tags", key, "v"); }).ok()) {
          acked[t].push_back(key);
          ++total;
        }
      }
    });
  }
  // However the test ends, the writers stop and are joined.
  struct JoinAtExit {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~JoinAtExit() {
      stop = true;
      for (auto& th : threads)
        if (th.joinable()) th.join();
    }
  } join_at_exit{stop, threads};
  // Kill once writes are flowing (each ack is the event waited on; bounded, so a store that
  // stops acknowledging fails the test instead of hanging it).
  auto await_acks = [&](int n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (total < n && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return total >= n;
  };
  ASSERT_TRUE(await_acks(200)) << "writes did not flow";
  ASSERT_EQ(::kill(Server().pid(), SIGKILL), 0);
  ASSERT_TRUE(Server().Restart().ok());
  const int before = total;
  ASSERT_TRUE(await_acks(before + 200)) << "the store did not write again after PostgreSQL came back";
  stop = true;
  for (auto& th : threads) th.join();
  size_t checked = 0;
  ASSERT_TRUE(store->Read([&](ReadTxn& txn) -> Status {
    for (const auto& keys : acked)
      for (const auto& k : keys) {
        ASSIGN_OR_RETURN(auto v, txn.Get("tags", k));
        EXPECT_EQ(v, "v") << "an acknowledged write was lost";
        ++checked;
      }
    return OkStatus();
  }).ok());
  EXPECT_EQ(checked, static_cast<size_t>(total.load()));
}

// `paddock admin export` from SQLite and `import` into PostgreSQL, and back: the same rows.
TEST_F(PostgresStoreTest, ADumpMovesSqliteToPostgresAndBack) {
  testing::TempDir dir;
  const std::vector<ModuleSchema> schemas = {testing::kTestSchema};
  auto lite = SqliteStore::Open({.path = dir.path() + "/a.db", .durable = false, .schemas = schemas});
  ASSERT_TRUE(lite.ok());
  ASSERT_TRUE((*lite)->Write([](WriteTxn& txn) -> Status {
    for (uint64_t i = 0; i < 1500; ++i) RETURN_IF_ERROR(txn.Put("tags", Key().U64(i).Done(), std::string("\0v", 2)));
    return txn.Put("meta", "m", "");
  }).ok());
  std::stringstream first;
  ASSERT_TRUE(ExportStore(**lite, schemas, first).ok());
  auto pg = Open(NewDatabase());
  ASSERT_TRUE(pg);
  auto n = ImportStore(*pg, schemas, first);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1501u);
  std::stringstream second;
  ASSERT_TRUE(ExportStore(*pg, schemas, second).ok());
  std::stringstream expected;
  ASSERT_TRUE(ExportStore(**lite, schemas, expected).ok());
  EXPECT_EQ(second.str(), expected.str());  // byte for byte: same rows, same order
  auto back = SqliteStore::Open({.path = dir.path() + "/b.db", .durable = false, .schemas = schemas});
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(ImportStore(**back, schemas, second).ok());
  std::stringstream third;
  ASSERT_TRUE(ExportStore(**back, schemas, third).ok());
  EXPECT_EQ(third.str(), expected.str());
}

// kill -9 of the process that writes (a Paddock server): every write it acknowledged is there.
TEST(PostgresCrashTest, AcknowledgedWritesSurviveKill9OfTheWriter) {
  std::random_device rd;
  const unsigned seed = rd();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    const std::string db = fmt::format("crash_{}", round);
    ASSERT_TRUE(Server().CreateDatabase(db).ok());
    const int kill_after = std::uniform_int_distribution<int>(1, 2000)(rng);
    testing::CrashRun run;
    testing::RunWriterUntilKilled(PADDOCK_STORE_CRASH_WRITER, "postgres:" + Server().Url(db), kill_after, &run);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_GE(run.acks, kill_after);
    auto store = PostgresStore::Open({.url = Server().Url(db)});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    testing::ExpectAcknowledgedWrites(**store, run);
  }
}

}  // namespace
}  // namespace paddock::store

namespace paddock::store {
namespace {

using postgres_internal::ReadCache;

// The cache alone: what it serves as of which generation, and what it keeps.
TEST(ReadCacheTest, ServesATableOnlyAsOfAGenerationAfterItsLastChange) {
  ReadCache cache(1 << 20);
  EXPECT_FALSE(cache.AwaitGeneration(0, std::chrono::microseconds(0))) << "serves before Reset";
  cache.FillGet(0, "tasks", "k", "v");
  cache.Reset(5);
  EXPECT_FALSE(cache.Get(5, "tasks", "k")) << "kept a fill made before it served";
  cache.FillGet(4, "tasks", "k", "old");  // a snapshot older than the cache: not kept
  EXPECT_FALSE(cache.Get(5, "tasks", "k"));
  cache.FillGet(5, "tasks", "k", "v5");
  cache.FillGet(5, "tasks", "none", std::nullopt);
  EXPECT_EQ(cache.Get(5, "tasks", "k"), std::optional<std::optional<std::string>>("v5"));
  EXPECT_EQ(cache.Get(5, "tasks", "none"), std::make_optional(std::optional<std::string>())) << "an absent row is known too";
  cache.FillScan(5, "tasks", {"a", "z"}, 10, Direction::kForward, {{"k", "v5"}});
  ASSERT_TRUE(cache.Scan(5, "tasks", {"a", "z"}, 10, Direction::kForward));
  EXPECT_FALSE(cache.Scan(5, "tasks", {"a", "z"}, 11, Direction::kForward)) << "another limit is another scan";
  EXPECT_FALSE(cache.Scan(5, "tasks", {"a", "z"}, 10, Direction::kBackward));

  // Generation 6 changes another table: "tasks" still serves, as of 5 and of 6.
  cache.Apply(6, {"services"});
  EXPECT_TRUE(cache.Get(5, "tasks", "k"));
  EXPECT_TRUE(cache.Get(6, "tasks", "k"));
  EXPECT_FALSE(cache.ChangedAfter(5, "tasks"));
  EXPECT_TRUE(cache.ChangedAfter(5, "services"));
  // Generation 7 changes it: forgotten, and a fill at 7 serves as of 7 only, never as of 6.
  cache.Apply(7, {"tasks"});
  EXPECT_FALSE(cache.Get(7, "tasks", "k"));
  EXPECT_FALSE(cache.Scan(7, "tasks", {"a", "z"}, 10, Direction::kForward));
  cache.FillGet(7, "tasks", "k", "v7");
  EXPECT_FALSE(cache.Get(6, "tasks", "k")) << "a reader as of 6 was given what 7 holds";
  EXPECT_EQ(cache.Get(7, "tasks", "k"), std::optional<std::optional<std::string>>("v7"));
  EXPECT_EQ(cache.AwaitGeneration(6, std::chrono::microseconds(0)), std::optional<uint64_t>(7));

  // An announcement heard twice changes nothing; one skipped forgets everything.
  cache.Apply(7, {"tasks"});
  EXPECT_TRUE(cache.Get(7, "tasks", "k"));
  cache.Apply(9, {"services"});
  EXPECT_FALSE(cache.Get(9, "tasks", "k")) << "kept a row across a generation it did not hear";
  // "Anything may have changed" forgets everything too.
  cache.FillGet(9, "tasks", "k", "v9");
  cache.Apply(10, {});
  EXPECT_FALSE(cache.Get(10, "tasks", "k"));
  // Suspended, it neither serves nor keeps.
  cache.FillGet(10, "tasks", "k", "v10");
  cache.Suspend();
  EXPECT_FALSE(cache.Get(10, "tasks", "k"));
  EXPECT_FALSE(cache.AwaitGeneration(10, std::chrono::microseconds(0)));
  cache.FillGet(10, "tasks", "k", "v10");
  cache.Reset(10);
  EXPECT_FALSE(cache.Get(10, "tasks", "k"));
}

TEST(ReadCacheTest, AwaitingAGenerationWakesWhenItIsHeardAndPastTheSizeItForgetsEverything) {
  ReadCache cache(16 * 100);
  cache.Reset(1);
  std::thread announce([&] { cache.Apply(2, {"tasks"}); });
  EXPECT_EQ(cache.AwaitGeneration(2, std::chrono::seconds(10)), std::optional<uint64_t>(2));
  announce.join();
  EXPECT_FALSE(cache.AwaitGeneration(3, std::chrono::milliseconds(1)));
  // Each fill is about 34 bytes of its 1,600: the 47th passes the bound and the first 46 go.
  for (int i = 0; i < 47; ++i) cache.FillGet(2, "tasks", fmt::format("k{}", i % 10), "v");
  for (int i = 0; i < 10; ++i) cache.FillGet(2, "t2", fmt::format("k{:02}", i), "v");
  size_t held = 0;
  for (int i = 0; i < 10; ++i) held += cache.Get(2, "t2", fmt::format("k{:02}", i)).has_value();
  EXPECT_EQ(held, 10u);
  for (int i = 0; i < 100; ++i) cache.FillGet(2, "t3", fmt::format("k{:03}", i), "v");
  held = 0;
  for (int i = 0; i < 10; ++i) held += cache.Get(2, "t2", fmt::format("k{:02}", i)).has_value();
  EXPECT_EQ(held, 0u) << "held more than its bound";
  EXPECT_GT(cache.stats().forgets, 0u);
  // A fill larger than a sixteenth of the bound is not kept at all.
  cache.FillGet(2, "t4", "big", std::string(200, 'x'));
  EXPECT_FALSE(cache.Get(2, "t4", "big"));
}

// Two servers' stores with caches on one database: once warm, a store answers repeated reads
// from memory; a write acknowledged through the other is read at once, every time, whether the
// read is a Get or a Scan.
TEST_F(PostgresStoreTest, TheReadCacheAnswersFromMemoryAndReadsAnotherStoresWriteAtOnce) {
  const std::string url = NewDatabase();
  auto a = Open(url, {testing::kTestSchema}, 1 << 20);
  auto b = Open(url, {testing::kTestSchema}, 1 << 20);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Write([](WriteTxn& txn) { return txn.Put("clusters", "c", "v0"); }).ok());
  auto read = [&](PostgresStore& store) {
    std::optional<std::string> got, scanned;
    EXPECT_TRUE(store.ReadRepeatable([&](ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(got, txn.Get("clusters", "c"));
      ASSIGN_OR_RETURN(auto rows, txn.Scan("clusters", {"", ""}, 10));
      scanned = rows.empty() ? std::nullopt : std::optional<std::string>(rows[0].value);
      return OkStatus();
    }).ok());
    EXPECT_EQ(got, scanned) << "the Get and the Scan of one Read saw two states";
    return got;
  };
  EXPECT_EQ(read(*b), "v0");
  const PostgresStore::CacheStats warm = b->cache_stats();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(read(*b), "v0");
  EXPECT_EQ(b->cache_stats().hits - warm.hits, 40u) << "repeated reads went to the database";
  for (int i = 1; i <= 30; ++i) {
    const std::string v = fmt::format("v{}", i);
    ASSERT_TRUE(a->Write([&](WriteTxn& txn) { return txn.Put("clusters", "c", v); }).ok());
    EXPECT_EQ(read(*b), v) << "read through the other store right after the write";
    EXPECT_EQ(read(*b), v);
    EXPECT_EQ(read(*a), v) << "read through the writing store right after its write";
  }
  EXPECT_GE(b->cache_stats().hits - warm.hits, 40u + 30u) << "the second read after each write missed";
  a->Close();
  b->Close();
}

// A store's cached reads are one state while another store writes two tables in one transaction:
// a read of both never sees one's new value with the other's old one, and most are answered from
// memory.
TEST_F(PostgresStoreTest, CachedReadsNeverMixTwoStatesWhileAnotherStoreWrites) {
  const std::string url = NewDatabase();
  auto a = Open(url, {testing::kTestSchema}, 1 << 20);
  auto b = Open(url, {testing::kTestSchema}, 1 << 20);
  ASSERT_TRUE(a && b);
  auto write = [&](int i) {
    return a->Write([&](WriteTxn& txn) -> Status {
      RETURN_IF_ERROR(txn.Put("clusters", "c", std::to_string(i)));
      return txn.Put("tags", "c", std::to_string(i));
    });
  };
  ASSERT_TRUE(write(0).ok());
  std::atomic<bool> done = false;
  std::atomic<int> mixed = 0, reads = 0;
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      while (!done) {
        std::optional<std::string> x, y;
        Status s = b->ReadRepeatable([&](ReadTxn& txn) -> Status {
          // Half read the tables one way round, half the other.
          ASSIGN_OR_RETURN(x, txn.Get(r % 2 ? "clusters" : "tags", "c"));
          ASSIGN_OR_RETURN(y, txn.Get(r % 2 ? "tags" : "clusters", "c"));
          return OkStatus();
        });
        ++reads;
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (s.ok() && x != y) ++mixed;
      }
    });
  }
  for (int i = 1; i <= 300; ++i) {
    ASSERT_TRUE(write(i).ok());
    // Quiet spells between bursts: the readers' cache warms up and serves.
    if (i % 30 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(mixed, 0) << "of " << reads << " reads";
  const PostgresStore::CacheStats stats = b->cache_stats();
  EXPECT_GT(stats.hits, 0u);
  std::cout << reads << " reads, " << stats.hits << " cache hits, " << stats.reruns << " run again on the database, "
            << stats.generation_reads << " generation reads\n";
  a->Close();
  b->Close();
}

// Cutting the cache's feed (its LISTENing connection) loses nothing: until it listens again the
// store's reads go to the database, and afterwards they are served again, every one exact.
TEST_F(PostgresStoreTest, ACachedStoreWhoseFeedIsCutReadsTheDatabaseUntilItListensAgain) {
  const std::string url = NewDatabase();
  auto a = Open(url, {testing::kTestSchema}, 1 << 20);
  auto b = Open(url, {testing::kTestSchema}, 1 << 20);
  ASSERT_TRUE(a && b);
  auto read = [&] {
    std::optional<std::string> got;
    EXPECT_TRUE(b->ReadRepeatable([&](ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(got, txn.Get("clusters", "c"));
      return OkStatus();
    }).ok());
    return got;
  };
  for (int i = 0; i < 20; ++i) {
    const std::string v = fmt::format("v{}", i);
    ASSERT_TRUE(a->Write([&](WriteTxn& txn) { return txn.Put("clusters", "c", v); }).ok());
    if (i == 5 || i == 12) {
      // Every LISTENing backend of this database: both stores' feeds.
      PGconn* admin = PQconnectdb(url.c_str());
      PGresult* r = PQexec(admin, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                                  "application_name = 'paddock change feed' AND datname = current_database()");
      ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(admin);
      EXPECT_EQ(std::string(PQgetvalue(r, 0, 0)), "2") << "not both feeds were cut";
      PQclear(r);
      PQfinish(admin);
    }
    EXPECT_EQ(read(), v) << i;
    EXPECT_EQ(read(), v) << i;
  }
  a->Close();
  b->Close();
}

}  // namespace
}  // namespace paddock::store
