#include "store/dump.h"

#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/key.h"
#include "store/sqlite/sqlite_store.h"
#include "store/testing/store_conformance.h"
#include "store/testing/test_schema.h"

namespace paddock::store {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<SqliteStore> OpenAt(const std::string& dir) {
  auto s = SqliteStore::Open({.path = dir + "/state.db", .durable = false, .schemas = {testing::kTestSchema}});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::vector<Row> All(Store& s, std::string_view table) {
  std::vector<Row> rows;
  EXPECT_TRUE(s.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(rows, txn.Scan(table, Range{}, 100000));
    return OkStatus();
  }).ok());
  return rows;
}

bool Same(const std::vector<Row>& a, const std::vector<Row>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].key != b[i].key || a[i].value != b[i].value) return false;
  return true;
}

TEST(DumpTest, ExportThenImportCopiesEveryRowOfEveryTable) {
  testing::TempDir from_dir, to_dir;
  auto from = OpenAt(from_dir.path());
  // Binary keys and values, an empty value, and more rows than one page of the export.
  ASSERT_TRUE(from->Write([](WriteTxn& txn) -> Status {
    for (uint64_t i = 0; i < 2500; ++i)
      RETURN_IF_ERROR(txn.Put("tags", Key().U64(i).Done(), std::string("\0\xff\n\"", 4) + std::to_string(i)));
    RETURN_IF_ERROR(txn.Put("clusters", std::string("\0a", 2), ""));
    return txn.Put("meta", "node", "bootstrap");
  }).ok());
  std::stringstream dump;
  ASSERT_TRUE(ExportStore(*from, std::vector<ModuleSchema>{testing::kTestSchema}, dump).ok());
  auto to = OpenAt(to_dir.path());
  auto n = ImportStore(*to, std::vector<ModuleSchema>{testing::kTestSchema}, dump);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2502u);
  for (std::string_view t : {"tags", "clusters", "clusters_active", "meta"}) EXPECT_TRUE(Same(All(*from, t), All(*to, t))) << t;

  // Not into a store that has rows: nothing changes.
  std::stringstream again;
  ASSERT_TRUE(ExportStore(*from, std::vector<ModuleSchema>{testing::kTestSchema}, again).ok());
  auto refused = ImportStore(*to, std::vector<ModuleSchema>{testing::kTestSchema}, again);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(All(*to, "tags").size(), 2500u);
}

TEST(DumpTest, BadDumpsAreRefusedNamingTheLine) {
  testing::TempDir dir;
  auto store = OpenAt(dir.path());
  const std::vector<ModuleSchema> schemas = {testing::kTestSchema};
  auto import = [&](const std::string& text) {
    std::stringstream in(text);
    return ImportStore(*store, schemas, in).status();
  };
  EXPECT_EQ(import("").code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(import("{\"hello\":1}\n").message(), HasSubstr("dump line 1: not a Paddock store dump"));
  EXPECT_THAT(import("{\"paddock-store-dump\":1,\"modules\":{\"test\":2}}\n").message(),
              HasSubstr("version 2 of the 'test' tables, newer than the 1"));
  const std::string header = "{\"paddock-store-dump\":1,\"modules\":{\"test\":1}}\n";
  EXPECT_THAT(import(header + "{\"t\":\"nope\",\"k\":\"\",\"v\":\"\"}\n").message(),
              HasSubstr("dump line 2: table 'nope' is not one this build declares"));
  EXPECT_THAT(import(header + "{\"t\":\"tags\",\"k\":\"!!\",\"v\":\"\"}\n").message(), HasSubstr("not base64url"));
  EXPECT_THAT(import(header + "[1]\n").message(), HasSubstr("dump line 2: not a row"));
  EXPECT_TRUE(All(*store, "tags").empty());
}

}  // namespace
}  // namespace paddock::store
