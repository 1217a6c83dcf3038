// The node's store modules (cli/schemas.h) against a state directory from before modules were
// versioned one by one.
#include "cli/schemas.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "store/sqlite/sqlite_store.h"

namespace paddock::cli {
namespace {
namespace fs = std::filesystem;

// The rows of a one-column query.
std::vector<std::string> Column(sqlite3* db, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
  while (sqlite3_step(s) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  return out;
}

void Exec(sqlite3* db, const std::string& sql) { ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql; }

// What the last store-wide build (version 9) left: every table up to version 9 of the modules it
// had, and the single version row. IAM then held only the accounts and their keys; STS did not exist.
TEST(NodeSchemasTest, AStoreOfTheLastStoreWideVersionGainsOnlyEachModulesNewerTables) {
  std::string tmpl = (fs::temp_directory_path() / "paddock-schemas-XXXXXX").string();
  const std::string dir = mkdtemp(tmpl.data());
  const std::string path = dir + "/state.db";
  const std::set<std::string_view> existed = {"store", "iam", "ecs", "vpc", "sched", "images"};
  std::vector<store::ModuleSchema> modules = NodeSchemas();
  modules.push_back(store::kStoreSchema);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Exec(db, "CREATE TABLE schema_version(id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)");
    Exec(db, "INSERT INTO schema_version VALUES (0, 9)");
    for (const store::ModuleSchema& m : modules) {
      if (!existed.contains(m.module)) continue;
      for (const store::TableDef& t : m.tables)
        if (t.since_version <= 9)
          Exec(db, "CREATE TABLE \"t_" + std::string(t.name) + "\"(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID");
    }
    Exec(db, "INSERT INTO t_accounts VALUES (x'01', x'02')");
    sqlite3_close(db);
  }

  auto opened = store::SqliteStore::Open({.path = path, .durable = false, .schemas = NodeSchemas()});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  (*opened)->Close();

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::set<std::string> versions, want_versions, tables, want_tables;
  for (const std::string& row : Column(db, "SELECT module || ' ' || version FROM schema_modules")) versions.insert(row);
  for (const std::string& row : Column(db, "SELECT name FROM sqlite_schema WHERE name LIKE 't\\_%' ESCAPE '\\'"))
    tables.insert(row);
  for (const store::ModuleSchema& m : modules) {
    want_versions.insert(std::string(m.module) + " " + std::to_string(m.version));
    for (const store::TableDef& t : m.tables) want_tables.insert("t_" + std::string(t.name));
  }
  EXPECT_EQ(versions, want_versions);
  EXPECT_EQ(tables, want_tables);  // IAM's since-10 tables and STS's among them
  EXPECT_TRUE(tables.contains("t_iam_roles"));
  EXPECT_TRUE(tables.contains("t_sts_sessions"));
  EXPECT_EQ(Column(db, "SELECT count(*) FROM t_accounts"), std::vector<std::string>{"1"});
  sqlite3_close(db);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace paddock::cli
