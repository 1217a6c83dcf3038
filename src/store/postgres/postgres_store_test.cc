#include "store/postgres/postgres_store.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
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
                                           Factory("NoBatchingOneReader", {.readers = 1, .max_batch = 1})),
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
  std::unique_ptr<PostgresStore> Open(const std::string& url, std::vector<ModuleSchema> schemas = {testing::kTestSchema}) {
    auto s = PostgresStore::Open({.url = url, .schemas = std::move(schemas)});
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
