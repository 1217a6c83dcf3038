#include "store/sqlite/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/schema.h"
#include "store/sqlite/internal/connection.h"
#include "store/testing/store_conformance.h"
#include "store/testing/test_schema.h"

namespace paddock::store {
namespace {

using ::testing::HasSubstr;
using testing::StoreConformanceTest;
using testing::StoreFactory;
using testing::TempDir;

std::unique_ptr<Store> OpenOrNull(SqliteOptions options) {
  auto s = SqliteStore::Open(options);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    return nullptr;
  }
  return std::move(s).value();
}

StoreFactory Factory(std::string name, SqliteOptions base) {
  return StoreFactory{std::move(name), [base](const std::string& dir) {
                        SqliteOptions o = base;
                        o.path = dir + "/state.db";
                        o.schemas = {testing::kTestSchema};
                        return OpenOrNull(o);
                      }};
}

INSTANTIATE_TEST_SUITE_P(
    Sqlite, StoreConformanceTest,
    ::testing::Values(Factory("Fast", {.path = "", .durable = false}),
                      Factory("Durable", {.path = "", .durable = true}),
                      // One closure per transaction, one reader for everyone.
                      Factory("NoBatchingOneReader",
                              {.path = "", .durable = false, .readers = 1, .max_batch = 1})),
    testing::StoreFactoryName);

// A plain connection to the file, to look at what the store left there.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  sqlite3* get() const { return db_; }

  // The first column of every row of `sql`.
  std::vector<std::string> Column(const std::string& sql, int column = 0) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << sqlite3_errmsg(db_);
    if (rc != SQLITE_OK) return out;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(s, column);
      out.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return out;
  }
  void Exec(const std::string& sql) {
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
  }

 private:
  sqlite3* db_ = nullptr;
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::string path() const { return tmp_.path() + "/state.db"; }
  StatusOr<std::unique_ptr<SqliteStore>> Open(std::vector<ModuleSchema> schemas = {testing::kTestSchema}) {
    return SqliteStore::Open({.path = path(), .durable = false, .schemas = std::move(schemas)});
  }

  TempDir tmp_;
};

// A closure that ignores a failed write and returns OK does not get its other writes committed.
TEST_F(SqliteStoreTest, IgnoredWriteErrorFailsTheClosure) {
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Status st = (*s)->Write([&](WriteTxn& txn) -> Status {
    txn.Put("meta", "kept?", "no").IgnoreError();
    txn.Put("no_such_table", "k", "v").IgnoreError();
    return OkStatus();
  });
  EXPECT_FALSE(st.ok());
  std::optional<std::string> v;
  ASSERT_TRUE((*s)->Read([&](ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(v, txn.Get("meta", "kept?"));
                return OkStatus();
              }).ok());
  EXPECT_FALSE(v.has_value());
}

TEST_F(SqliteStoreTest, CreatesEveryModulesTablesAndRecordsEachModulesVersion) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  RawDb db(path());
  EXPECT_THAT(db.Column("SELECT module || ' ' || version FROM schema_modules ORDER BY module"),
              ::testing::ElementsAre(fmt::format("store {}", kStoreSchema.version), "test 1"));
  // A build from before per-module versions reads this as a newer store-wide version.
  EXPECT_THAT(db.Column("SELECT version FROM schema_version"),
              ::testing::ElementsAre(std::to_string(sqlite_internal::kPerModuleFormat)));
  EXPECT_THAT(db.Column("PRAGMA journal_mode"), ::testing::ElementsAre("wal"));
  std::vector<TableDef> tables(std::begin(kStoreTables), std::end(kStoreTables));
  tables.insert(tables.end(), std::begin(testing::kTestTables), std::end(testing::kTestTables));
  for (const TableDef& t : tables) {
    auto sql = db.Column(fmt::format("SELECT sql FROM sqlite_schema WHERE name = 't_{}'", t.name));
    ASSERT_EQ(sql.size(), 1u) << t.name;
    EXPECT_THAT(sql[0], HasSubstr("k BLOB PRIMARY KEY, v BLOB NOT NULL"));
    EXPECT_THAT(sql[0], HasSubstr("WITHOUT ROWID"));
  }
}

TEST_F(SqliteStoreTest, RefusesAModuleNewerThanThisBuildsAndNamesIt) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  {
    RawDb db(path());
    db.Exec("UPDATE schema_modules SET version = 2 WHERE module = 'test'");
  }
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("newer"));
  EXPECT_THAT(s.status().message(), HasSubstr("version 2 of the 'test' tables"));
  // A process that does not run that module opens the same store.
  auto other = Open({});
  EXPECT_TRUE(other.ok()) << other.status().ToString();
}

TEST_F(SqliteStoreTest, RefusesAStoreFormatNewerThanPerModuleVersions) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  {
    RawDb db(path());
    db.Exec(fmt::format("UPDATE schema_version SET version = {}", sqlite_internal::kPerModuleFormat + 1));
  }
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("newer"));
}

TEST_F(SqliteStoreTest, AStoreFromBeforeModuleVersionsKeepsItsRowsAndGetsOnlyTheNewTables) {
  {
    // What a build of store-wide version 7 left: its tables and the single version row.
    RawDb db(path());
    db.Exec("CREATE TABLE schema_version(id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)");
    db.Exec("INSERT INTO schema_version VALUES (0, 7)");
    db.Exec("CREATE TABLE t_meta(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID");
    db.Exec("CREATE TABLE t_old(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID");
    db.Exec("INSERT INTO t_old VALUES (x'01', x'02')");
  }
  const TableDef old_module[] = {{"old", 7}, {"newer", 9}};
  const TableDef new_module[] = {{"fresh", 1}};
  auto s = Open({ModuleSchema{"old", 9, old_module}, ModuleSchema{"fresh", 1, new_module}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->Close();
  RawDb db(path());
  EXPECT_THAT(db.Column("SELECT module || ' ' || version FROM schema_modules ORDER BY module"),
              ::testing::ElementsAre("fresh 1", "old 9", fmt::format("store {}", kStoreSchema.version)));
  EXPECT_THAT(db.Column("SELECT name FROM sqlite_schema WHERE name LIKE 't_%' ORDER BY name"),
              ::testing::ElementsAre("t_fresh", "t_meta", "t_newer", "t_old"));
  EXPECT_THAT(db.Column("SELECT count(*) FROM t_old"), ::testing::ElementsAre("1"));
}

TEST_F(SqliteStoreTest, MigrationCreatesOnlyAModulesNewTablesAndNeverGoesBack) {
  RawDb db(path());
  const TableDef v1[] = {{"one", 1}};
  const TableDef v2[] = {{"one", 1}, {"two", 2}, {"three", 2}};
  auto catalog = [](std::span<const TableDef> tables, int version) {
    auto c = sqlite_internal::TableCatalog::Build(std::vector<ModuleSchema>{{"m", version, tables}});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return *c;
  };
  ASSERT_TRUE(sqlite_internal::Migrate(db.get(), *catalog(v1, 1)).ok());
  EXPECT_EQ(*sqlite_internal::ModuleVersion(db.get(), "m"), 1);
  db.Exec("INSERT INTO t_one VALUES (x'01', x'02')");
  // Re-running at the same version is a no-op.
  ASSERT_TRUE(sqlite_internal::Migrate(db.get(), *catalog(v1, 1)).ok());

  Status up = sqlite_internal::Migrate(db.get(), *catalog(v2, 2));
  ASSERT_TRUE(up.ok()) << up.ToString();
  EXPECT_EQ(*sqlite_internal::ModuleVersion(db.get(), "m"), 2);
  EXPECT_THAT(db.Column("SELECT name FROM sqlite_schema WHERE name LIKE 't_%' ORDER BY name"),
              ::testing::ElementsAre("t_meta", "t_one", "t_three", "t_two"));
  EXPECT_THAT(db.Column("SELECT count(*) FROM t_one"), ::testing::ElementsAre("1"));

  Status down = sqlite_internal::Migrate(db.get(), *catalog(v1, 1));
  EXPECT_EQ(down.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(*sqlite_internal::ModuleVersion(db.get(), "m"), 2);
}

TEST_F(SqliteStoreTest, AModuleOrTableDeclaredTwiceOrNewerThanItsModuleIsRefused) {
  const TableDef a[] = {{"a", 1}};
  const TableDef meta[] = {{"meta", 1}};
  const TableDef too_new[] = {{"b", 2}};
  using sqlite_internal::TableCatalog;
  EXPECT_EQ(TableCatalog::Build(std::vector<ModuleSchema>{{"m", 1, a}, {"m", 1, too_new}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TableCatalog::Build(std::vector<ModuleSchema>{{"m", 1, a}, {"n", 1, a}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TableCatalog::Build(std::vector<ModuleSchema>{{"m", 1, meta}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TableCatalog::Build(std::vector<ModuleSchema>{{"m", 1, too_new}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(Open({ModuleSchema{"m", 1, a}, ModuleSchema{"n", 1, a}}).ok());
}

TEST_F(SqliteStoreTest, ReopenAfterCloseKeepsData) {
  for (int round = 0; round < 3; ++round) {
    auto s = SqliteStore::Open({.path = path(), .durable = true});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    SqliteStore& store = **s;
    if (round > 0) {
      std::optional<std::string> v;
      ASSERT_TRUE(store.Read([&](ReadTxn& txn) -> Status {
                    ASSIGN_OR_RETURN(v, txn.Get("meta", "round"));
                    return OkStatus();
                  }).ok());
      EXPECT_EQ(v, std::to_string(round - 1));
    }
    ASSERT_TRUE(store.Write([&](WriteTxn& txn) {
                  return txn.Put("meta", "round", std::to_string(round));
                }).ok());
    store.Close();
  }
}

// The store holds every tenant's secrets: the database and its WAL and SHM are 0600 as created,
// whatever the umask, and tightened on open when an older Paddock left them readable (finding 4).
TEST_F(SqliteStoreTest, DatabaseFilesAreOwnerOnly) {
  auto mode = [](const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  };
  const mode_t old_umask = ::umask(0);
  {
    auto s = Open();
    ::umask(old_umask);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Write([](WriteTxn& txn) { return txn.Put("meta", "k", "secret"); }).ok());
    for (const char* suffix : {"", "-wal", "-shm"}) EXPECT_EQ(mode(path() + suffix), 0600u) << suffix;
    (*s)->Close();
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (std::filesystem::exists(path() + suffix)) ::chmod((path() + suffix).c_str(), 0644);
  }
  auto again = Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (std::filesystem::exists(path() + suffix)) {
      EXPECT_EQ(mode(path() + suffix), 0600u) << suffix;
    }
  }
  (*again)->Close();
}

// Every scan and range delete must be a range search on the primary key, with no sort step.
TEST_F(SqliteStoreTest, ScansSearchThePrimaryKey) {
  {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  RawDb db(path());
  using sqlite_internal::Op;
  for (Op op : {Op::kGet, Op::kDelete, Op::kScanForward, Op::kScanForwardToEnd, Op::kScanBackward,
                Op::kScanBackwardToEnd, Op::kDeleteRange, Op::kDeleteRangeToEnd}) {
    std::string sql = sqlite_internal::StatementSql("clusters", op);
    auto plan = db.Column("EXPLAIN QUERY PLAN " + sql, 3);
    ASSERT_FALSE(plan.empty()) << sql;
    for (const auto& step : plan) {
      EXPECT_THAT(step, HasSubstr("SEARCH t_clusters USING PRIMARY KEY")) << sql;
      EXPECT_THAT(step, ::testing::Not(HasSubstr("TEMP B-TREE"))) << sql;
    }
  }
}

// Checkpoints keep the WAL from growing without bound under a steady stream of writes.
TEST_F(SqliteStoreTest, WalStaysBounded) {
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  SqliteStore& store = **s;
  constexpr int kWrites = 600;  // ~25 pages each: ~60 MiB of WAL without checkpoints
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_TRUE(store.Write([&](WriteTxn& txn) -> Status {
                  for (int j = 0; j < 10; ++j)
                    RETURN_IF_ERROR(txn.Put("meta", fmt::format("{:06}/{}", i, j),
                                            fmt::format("{:>8192}", i * 10 + j)));
                  return OkStatus();
                }).ok());
  }
  std::error_code ec;
  auto wal_size = std::filesystem::file_size(path() + "-wal", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_LT(wal_size, 40u << 20);
  std::optional<std::string> last;
  ASSERT_TRUE(store.Read([&](ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(last, txn.Get("meta", fmt::format("{:06}/9", kWrites - 1)));
                return OkStatus();
              }).ok());
  EXPECT_EQ(last, fmt::format("{:>8192}", kWrites * 10 - 1));
}

TEST_F(SqliteStoreTest, WriteFromInsideAWriteFailsInsteadOfDeadlocking) {
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  SqliteStore& store = **s;
  Status inner;
  Status outer = store.Write([&](WriteTxn&) {
    inner = store.Write([](WriteTxn&) { return OkStatus(); });
    return OkStatus();
  });
  EXPECT_TRUE(outer.ok());
  EXPECT_EQ(inner.code(), StatusCode::kInternal);
}

TEST_F(SqliteStoreTest, ClosedMessage) {
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->Close();
  Status w = (*s)->Write([](WriteTxn&) { return OkStatus(); });
  EXPECT_EQ(w.code(), StatusCode::kUnavailable);
  EXPECT_EQ(w.message(), "store is closed");
}

TEST_F(SqliteStoreTest, RejectsBadOptionsAndFiles) {
  EXPECT_EQ(SqliteStore::Open({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SqliteStore::Open({.path = path(), .readers = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SqliteStore::Open({.path = path(), .max_batch = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(SqliteStore::Open({.path = tmp_.path() + "/no/such/dir/state.db"}).ok());
  {
    std::ofstream garbage(path());
    garbage << std::string(4096, 'x');
  }
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << s.status().ToString();
}

}  // namespace
}  // namespace paddock::store
