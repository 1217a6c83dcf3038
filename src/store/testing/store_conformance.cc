#include "store/testing/store_conformance.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>

#include "store/key.h"

namespace paddock::store::testing {

// A detail a closure's failure carries, to show it comes back out of Write unchanged.
enum class ConformanceError { kInUse = 1 };
const ErrorDomain& ErrorDomainOf(ConformanceError) {
  static constexpr ErrorDomain kDomain{"conformance", [](int) -> std::string_view { return "InUse"; }};
  return kDomain;
}

namespace {

// Tables from store/schema.h and store/testing/test_schema.h (the factories open the store with
// kTestSchema); the suite only needs a few distinct ones.
constexpr std::string_view kMeta = "meta";
constexpr std::string_view kTags = "tags";

std::string K(uint64_t i) { return Key().U64(i).Done(); }

Status PutOne(Store& s, std::string_view table, std::string_view key, std::string_view value) {
  return s.Write([&](WriteTxn& txn) { return txn.Put(table, key, value); });
}

StatusOr<std::optional<std::string>> GetOne(Store& s, std::string_view table, std::string_view key) {
  std::optional<std::string> out;
  Status st = s.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(out, txn.Get(table, key));
    return OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

std::vector<std::string> ScanKeys(Store& s, std::string_view table, const Range& range,
                                  size_t limit, Direction dir = Direction::kForward) {
  std::vector<std::string> keys;
  Status st = s.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, range, limit, dir));
    for (auto& r : rows) keys.push_back(std::move(r.key));
    return OkStatus();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return keys;
}

std::vector<std::string> Ks(std::initializer_list<uint64_t> ids) {
  std::vector<std::string> out;
  for (uint64_t i : ids) out.push_back(K(i));
  return out;
}

std::vector<std::string> KRange(uint64_t from, uint64_t to) {  // [from, to), descending if from > to
  std::vector<std::string> out;
  if (from <= to)
    for (uint64_t i = from; i < to; ++i) out.push_back(K(i));
  else
    for (uint64_t i = from; i > to; --i) out.push_back(K(i - 1));
  return out;
}

// 256 byte values, including NUL and 0xFF, in a scrambled order.
std::string AllBytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>((i * 37 + 11) & 0xFF));
  return s;
}

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    ::paddock::Status _s = (expr);                       \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                  \
  do {                                                   \
    ::paddock::Status _s = (expr);                       \
    EXPECT_TRUE(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)

}  // namespace

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/paddock-store-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << tmpl << " failed";
    return;
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

void StoreConformanceTest::SetUp() {
  ASSERT_FALSE(tmp_.path().empty());
  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
}

std::unique_ptr<Store> StoreConformanceTest::OpenStore() {
  std::unique_ptr<Store> s = GetParam().open(tmp_.path());
  EXPECT_NE(s, nullptr) << "the " << GetParam().name << " factory failed to open " << tmp_.path();
  return s;
}

TEST_P(StoreConformanceTest, PutGetDelete) {
  Store& s = *store_;
  auto got = GetOne(s, kMeta, "k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, std::nullopt);

  ASSERT_OK(PutOne(s, kMeta, "k", "v1"));
  EXPECT_EQ(*GetOne(s, kMeta, "k"), "v1");
  ASSERT_OK(PutOne(s, kMeta, "k", "v2"));
  EXPECT_EQ(*GetOne(s, kMeta, "k"), "v2");

  ASSERT_OK(s.Write([](WriteTxn& txn) { return txn.Delete(kMeta, "k"); }));
  EXPECT_EQ(*GetOne(s, kMeta, "k"), std::nullopt);
  // Deleting what is absent is not an error.
  ASSERT_OK(s.Write([](WriteTxn& txn) { return txn.Delete(kMeta, "k"); }));
}

TEST_P(StoreConformanceTest, WriteTxnSeesItsOwnWrites) {
  ASSERT_OK(store_->Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put(kMeta, "a", "1"));
    ASSIGN_OR_RETURN(auto v, txn.Get(kMeta, "a"));
    EXPECT_EQ(v, "1");
    RETURN_IF_ERROR(txn.Put(kMeta, "b", "2"));
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kMeta, Range{}, 10));
    EXPECT_EQ(rows.size(), 2u);
    RETURN_IF_ERROR(txn.Delete(kMeta, "a"));
    ASSIGN_OR_RETURN(v, txn.Get(kMeta, "a"));
    EXPECT_EQ(v, std::nullopt);
    return OkStatus();
  }));
  EXPECT_EQ(*GetOne(*store_, kMeta, "a"), std::nullopt);
  EXPECT_EQ(*GetOne(*store_, kMeta, "b"), "2");
}

TEST_P(StoreConformanceTest, TablesAreSeparate) {
  ASSERT_OK(PutOne(*store_, kMeta, "k", "in meta"));
  ASSERT_OK(PutOne(*store_, kTags, "k", "in tags"));
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), "in meta");
  EXPECT_EQ(*GetOne(*store_, kTags, "k"), "in tags");
  ASSERT_OK(store_->Write([](WriteTxn& txn) { return txn.Delete(kTags, "k"); }));
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), "in meta");
  EXPECT_THAT(ScanKeys(*store_, kTags, Range{}, 10), ::testing::IsEmpty());
}

TEST_P(StoreConformanceTest, EmptyValueIsNotAbsent) {
  ASSERT_OK(PutOne(*store_, kMeta, "k", ""));
  auto got = GetOne(*store_, kMeta, "k");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "");
}

TEST_P(StoreConformanceTest, BinaryKeysAndValuesRoundTrip) {
  const std::string bytes = AllBytes();
  const std::vector<std::string> keys = {
      std::string(),           std::string("\0", 1),      std::string("\0\0", 2),
      std::string("\x01", 1),  std::string("a", 1),       std::string("a\0", 2),
      std::string("a\0b", 3),  std::string("a\x01", 2),   std::string("\x7F", 1),
      std::string("\x80", 1),  std::string("\xFE\xFF", 2), std::string("\xFF", 1),
      std::string("\xFF\0", 2), std::string("\xFF\xFF", 2), bytes,
  };
  ASSERT_OK(store_->Write([&](WriteTxn& txn) -> Status {
    for (size_t i = 0; i < keys.size(); ++i)
      RETURN_IF_ERROR(txn.Put(kMeta, keys[i], bytes + std::string(i, '\0') + keys[i]));
    return OkStatus();
  }));
  for (size_t i = 0; i < keys.size(); ++i) {
    auto got = GetOne(*store_, kMeta, keys[i]);
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(got->has_value()) << "key #" << i;
    EXPECT_EQ(**got, bytes + std::string(i, '\0') + keys[i]) << "key #" << i;
  }
  // Keys order as unsigned bytes (memcmp), shorter first on a common prefix.
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(ScanKeys(*store_, kMeta, Range{}, 100), sorted);
  std::reverse(sorted.begin(), sorted.end());
  EXPECT_EQ(ScanKeys(*store_, kMeta, Range{}, 100, Direction::kBackward), sorted);
}

TEST_P(StoreConformanceTest, LargeValue) {
  std::string big(1 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : big) c = static_cast<char>(rng());
  ASSERT_OK(PutOne(*store_, kMeta, "big", big));
  auto got = GetOne(*store_, kMeta, "big");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE(**got == big);
}

TEST_P(StoreConformanceTest, ScanForwardAndBackward) {
  Store& s = *store_;
  EXPECT_THAT(ScanKeys(s, kMeta, Range{}, 10), ::testing::IsEmpty());
  ASSERT_OK(s.Write([](WriteTxn& txn) -> Status {
    for (uint64_t i = 0; i < 100; ++i) RETURN_IF_ERROR(txn.Put(kMeta, K(i), fmt::format("v{}", i)));
    return OkStatus();
  }));
  // A neighbouring table's rows never leak into a scan.
  ASSERT_OK(PutOne(s, kTags, K(15), "other table"));

  const Range r{K(10), K(20)};
  EXPECT_EQ(ScanKeys(s, kMeta, r, 100), KRange(10, 20));
  EXPECT_EQ(ScanKeys(s, kMeta, r, 100, Direction::kBackward), KRange(20, 10));
  EXPECT_EQ(ScanKeys(s, kMeta, r, 3), Ks({10, 11, 12}));
  EXPECT_EQ(ScanKeys(s, kMeta, r, 3, Direction::kBackward), Ks({19, 18, 17}));

  // Empty end: unbounded above.
  EXPECT_EQ(ScanKeys(s, kMeta, Range{K(95), ""}, 100), KRange(95, 100));
  EXPECT_EQ(ScanKeys(s, kMeta, Range{K(10), ""}, 3, Direction::kBackward), Ks({99, 98, 97}));
  EXPECT_EQ(ScanKeys(s, kMeta, Range{}, 1000), KRange(0, 100));
  EXPECT_EQ(ScanKeys(s, kMeta, Range{}, 1000, Direction::kBackward), KRange(100, 0));

  // Bounds between keys; begin is inclusive and end exclusive.
  EXPECT_EQ(ScanKeys(s, kMeta, Range{KeySuccessor(K(10)), K(13)}, 100), Ks({11, 12}));
  EXPECT_EQ(ScanKeys(s, kMeta, Range{K(10), KeySuccessor(K(12))}, 100, Direction::kBackward),
            Ks({12, 11, 10}));

  // Empty and inverted ranges, zero and huge limits.
  EXPECT_THAT(ScanKeys(s, kMeta, Range{K(20), K(20)}, 100), ::testing::IsEmpty());
  EXPECT_THAT(ScanKeys(s, kMeta, Range{K(30), K(20)}, 100), ::testing::IsEmpty());
  EXPECT_THAT(ScanKeys(s, kMeta, Range{K(30), K(20)}, 100, Direction::kBackward), ::testing::IsEmpty());
  EXPECT_THAT(ScanKeys(s, kMeta, r, 0), ::testing::IsEmpty());
  EXPECT_EQ(ScanKeys(s, kMeta, r, std::numeric_limits<size_t>::max()), KRange(10, 20));

  // Rows come back with their values.
  ASSERT_OK(s.Read([](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kMeta, Range{K(41), K(43)}, 10, Direction::kBackward));
    EXPECT_EQ(rows.size(), 2u);
    if (rows.size() == 2) {
      EXPECT_EQ(rows[0].key, K(42));
      EXPECT_EQ(rows[0].value, "v42");
      EXPECT_EQ(rows[1].value, "v41");
    }
    return OkStatus();
  }));
}

TEST_P(StoreConformanceTest, ScanPagesThroughEverything) {
  ASSERT_OK(store_->Write([](WriteTxn& txn) -> Status {
    for (uint64_t i = 0; i < 100; ++i) RETURN_IF_ERROR(txn.Put(kMeta, K(i), ""));
    return OkStatus();
  }));
  // Forward pages continue after the last key; backward pages end before it.
  std::vector<std::string> fwd;
  Range r{K(5), ""};
  for (;;) {
    auto page = ScanKeys(*store_, kMeta, r, 7);
    fwd.insert(fwd.end(), page.begin(), page.end());
    if (page.size() < 7) break;
    r.begin = KeySuccessor(page.back());
  }
  EXPECT_EQ(fwd, KRange(5, 100));

  std::vector<std::string> back;
  r = Range{"", K(95)};
  for (;;) {
    auto page = ScanKeys(*store_, kMeta, r, 7, Direction::kBackward);
    back.insert(back.end(), page.begin(), page.end());
    if (page.size() < 7) break;
    r.end = page.back();
  }
  EXPECT_EQ(back, KRange(95, 0));
}

TEST_P(StoreConformanceTest, ScanPrefixes) {
  const std::vector<std::string> accounts = {"", "a", std::string("a\0", 2), std::string("a\0b", 3),
                                             "ab", "a\xFF", "b", "\xFF"};
  const std::vector<std::string> regions = {"eu-west-1", "us-east-1", "us-west-2", "u"};
  const std::vector<std::string> names = {"x", std::string("x\0", 2), "y"};
  std::vector<std::string> all;
  for (const auto& a : accounts)
    for (const auto& r : regions)
      for (const auto& n : names) all.push_back(Key().Str(a).Str(r).Str(n).Done());
  ASSERT_OK(store_->Write([&](WriteTxn& txn) -> Status {
    for (const auto& k : all) RETURN_IF_ERROR(txn.Put(kMeta, k, k));
    return OkStatus();
  }));
  std::sort(all.begin(), all.end());

  auto expect_prefix = [&](const std::string& prefix, size_t expected_count) {
    SCOPED_TRACE(::testing::PrintToString(prefix));
    std::vector<std::string> want;
    for (const auto& k : all)
      if (k.starts_with(prefix)) want.push_back(k);
    EXPECT_EQ(want.size(), expected_count);
    EXPECT_EQ(ScanKeys(*store_, kMeta, PrefixRange(prefix), 1000), want);
    std::reverse(want.begin(), want.end());
    EXPECT_EQ(ScanKeys(*store_, kMeta, PrefixRange(prefix), 1000, Direction::kBackward), want);
    if (want.size() > 2) want.resize(2);
    EXPECT_EQ(ScanKeys(*store_, kMeta, PrefixRange(prefix), 2, Direction::kBackward), want);
  };
  const size_t per_account = regions.size() * names.size();
  for (const auto& a : accounts) expect_prefix(Key().Str(a).Done(), per_account);
  expect_prefix(Key().Str("a").Str("us-east-1").Done(), names.size());
  expect_prefix(Key().Str("a").Str("us-east-1").Str("x").Done(), 1);
  // StrPrefix: every region starting with "us" (not "u") / "u" (all three), in one account.
  expect_prefix(Key().Str("a").StrPrefix("us").Done(), 2 * names.size());
  expect_prefix(Key().Str("a").StrPrefix("u").Done(), 3 * names.size());
  expect_prefix(Key().Str("a\xFF").StrPrefix("").Done(), per_account);
  // Accounts starting with "a": "a", "a\0", "a\0b", "ab", "a\xFF".
  expect_prefix(Key().StrPrefix("a").Done(), 5 * per_account);
  expect_prefix(Key().StrPrefix(std::string("a\0", 2)).Done(), 2 * per_account);
  // A prefix of only 0xFF bytes has no upper bound.
  expect_prefix(Key().StrPrefix("\xFF").Done(), per_account);
  expect_prefix("", all.size());
}

TEST_P(StoreConformanceTest, FailingWriteWritesNothing) {
  ASSERT_OK(PutOne(*store_, kMeta, "keep", "old"));
  Status s = store_->Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put(kMeta, "new", "x"));
    RETURN_IF_ERROR(txn.Put(kMeta, "keep", "overwritten"));
    RETURN_IF_ERROR(txn.Delete(kMeta, "keep"));
    RETURN_IF_ERROR(txn.Put(kTags, "t", "x"));
    return AlreadyExists("it exists", ConformanceError::kInUse);
  });
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "it exists");
  EXPECT_TRUE(IsError(s, ConformanceError::kInUse)) << s.ToString();
  EXPECT_EQ(*GetOne(*store_, kMeta, "new"), std::nullopt);
  EXPECT_EQ(*GetOne(*store_, kMeta, "keep"), "old");
  EXPECT_EQ(*GetOne(*store_, kTags, "t"), std::nullopt);
  // The store keeps working.
  ASSERT_OK(PutOne(*store_, kMeta, "after", "y"));
  EXPECT_EQ(*GetOne(*store_, kMeta, "after"), "y");
}

TEST_P(StoreConformanceTest, DeleteRangeRemovesExactlyTheRange) {
  Store& s = *store_;
  ASSERT_OK(s.Write([](WriteTxn& txn) -> Status {
    for (uint64_t i = 0; i < 50; ++i) RETURN_IF_ERROR(txn.Put(kMeta, K(i), "v"));
    return OkStatus();
  }));
  ASSERT_OK(PutOne(s, kTags, K(15), "other table"));

  // begin inclusive, end exclusive; the neighbouring table keeps its row.
  ASSERT_OK(s.Write([](WriteTxn& txn) { return txn.DeleteRange(kMeta, Range{K(10), K(20)}); }));
  std::vector<std::string> want = KRange(0, 10);
  for (const auto& k : KRange(20, 50)) want.push_back(k);
  EXPECT_EQ(ScanKeys(s, kMeta, Range{}, 100), want);
  EXPECT_EQ(*GetOne(s, kTags, K(15)), "other table");

  // Bounds between keys, empty and inverted ranges.
  ASSERT_OK(s.Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.DeleteRange(kMeta, Range{KeySuccessor(K(20)), K(22)}));  // removes 21
    RETURN_IF_ERROR(txn.DeleteRange(kMeta, Range{K(30), K(30)}));
    return txn.DeleteRange(kMeta, Range{K(40), K(30)});
  }));
  want = KRange(0, 10);
  want.push_back(K(20));
  for (const auto& k : KRange(22, 50)) want.push_back(k);
  EXPECT_EQ(ScanKeys(s, kMeta, Range{}, 100), want);

  // A prefix range, and an empty end: unbounded above.
  ASSERT_OK(s.Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put(kMeta, Key().Str("acct").Str("a").Done(), ""));
    RETURN_IF_ERROR(txn.Put(kMeta, Key().Str("acct").Str("b").Done(), ""));
    RETURN_IF_ERROR(txn.Put(kMeta, Key().Str("acct2").Str("a").Done(), ""));
    return txn.DeleteRange(kMeta, PrefixRange(Key().Str("acct").Done()));
  }));
  EXPECT_EQ(ScanKeys(s, kMeta, PrefixRange(Key().Str("acct").Done()), 10).size(), 0u);
  EXPECT_EQ(ScanKeys(s, kMeta, PrefixRange(Key().Str("acct2").Done()), 10).size(), 1u);
  ASSERT_OK(s.Write([](WriteTxn& txn) { return txn.DeleteRange(kMeta, Range{K(40), ""}); }));
  EXPECT_EQ(ScanKeys(s, kMeta, Range{K(30), ""}, 100), KRange(30, 40));
  ASSERT_OK(s.Write([](WriteTxn& txn) { return txn.DeleteRange(kMeta, Range{}); }));
  EXPECT_THAT(ScanKeys(s, kMeta, Range{}, 100), ::testing::IsEmpty());
  EXPECT_EQ(*GetOne(s, kTags, K(15)), "other table");
}

// A transaction sees its own range delete, and one that fails afterwards deletes nothing.
TEST_P(StoreConformanceTest, DeleteRangeIsAtomicWithItsTransaction) {
  Store& s = *store_;
  ASSERT_OK(s.Write([](WriteTxn& txn) -> Status {
    for (uint64_t i = 0; i < 1000; ++i) RETURN_IF_ERROR(txn.Put(kMeta, K(i), "v"));
    return OkStatus();
  }));
  Status st = s.Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.DeleteRange(kMeta, Range{K(100), K(900)}));
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kMeta, Range{}, 2000));
    EXPECT_EQ(rows.size(), 200u);
    RETURN_IF_ERROR(txn.Put(kMeta, K(500), "put back"));
    return Aborted("changed my mind");
  });
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_EQ(ScanKeys(s, kMeta, Range{}, 2000), KRange(0, 1000));
  EXPECT_EQ(*GetOne(s, kMeta, K(500)), "v");

  // Unknown tables fail like every other operation, and the closure's other writes vanish.
  Status w = s.Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.DeleteRange(kMeta, Range{}));
    EXPECT_EQ(txn.DeleteRange("no_such_table", Range{}).code(), StatusCode::kInternal);
    return OkStatus();
  });
  EXPECT_EQ(w.code(), StatusCode::kInternal);
  EXPECT_EQ(ScanKeys(s, kMeta, Range{}, 2000).size(), 1000u);

  // Durable across a reopen once committed.
  ASSERT_OK(s.Write([](WriteTxn& txn) { return txn.DeleteRange(kMeta, Range{K(0), K(999)}); }));
  store_->Close();
  store_.reset();
  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(ScanKeys(*store_, kMeta, Range{}, 2000), Ks({999}));
}

TEST_P(StoreConformanceTest, ThrowingWriteIsInternalAndWritesNothing) {
  Status s = store_->Write([](WriteTxn& txn) -> Status {
    EXPECT_TRUE(txn.Put(kMeta, "k", "v").ok());
    throw std::runtime_error("boom");
  });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), std::nullopt);
  Status r = store_->Read([](ReadTxn&) -> Status { throw std::runtime_error("boom"); });
  EXPECT_EQ(r.code(), StatusCode::kInternal);
  ASSERT_OK(PutOne(*store_, kMeta, "k", "v"));
}

TEST_P(StoreConformanceTest, UnknownTableIsInternal) {
  EXPECT_EQ(PutOne(*store_, "no_such_table", "k", "v").code(), StatusCode::kInternal);
  Status w = store_->Write([](WriteTxn& txn) -> Status {
    EXPECT_EQ(txn.Get("no_such_table", "k").status().code(), StatusCode::kInternal);
    EXPECT_EQ(txn.Scan("no_such_table", Range{}, 1).status().code(), StatusCode::kInternal);
    EXPECT_EQ(txn.Delete("no_such_table", "k").code(), StatusCode::kInternal);
    EXPECT_EQ(txn.Put("", "k", "v").code(), StatusCode::kInternal);
    return txn.Put(kMeta, "k", "v");
  });
  // A closure that returns OK after a failed operation fails with it, and writes nothing.
  EXPECT_EQ(w.code(), StatusCode::kInternal);
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), std::nullopt);
  ASSERT_OK(PutOne(*store_, kMeta, "k", "v"));
  Status r = store_->Read([](ReadTxn& txn) -> Status {
    EXPECT_EQ(txn.Get("t_meta", "k").status().code(), StatusCode::kInternal);
    EXPECT_EQ(txn.Scan("meta; DROP TABLE t_meta", Range{}, 1).status().code(), StatusCode::kInternal);
    return OkStatus();
  });
  EXPECT_OK(r);
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), "v");
}

// Many concurrent writers, every third failing after writing: the failures vanish, the rest land,
// whatever batches they were grouped into.
TEST_P(StoreConformanceTest, FailedWritesDoNotAffectConcurrentOnes) {
  constexpr int kThreads = 16;
  constexpr int kPerThread = 40;
  ASSERT_OK(PutOne(*store_, kTags, "sentinel", "here"));
  auto fails = [](int t, int i) { return (t + i) % 3 == 0; };
  std::latch start(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        Status s = store_->Write([&](WriteTxn& txn) -> Status {
          RETURN_IF_ERROR(txn.Put(kMeta, Key().U64(t).U64(i).Done(), "v"));
          if (!fails(t, i)) return OkStatus();
          RETURN_IF_ERROR(txn.Delete(kTags, "sentinel"));
          return Aborted(fmt::format("fail {} {}", t, i));
        });
        bool right = fails(t, i) ? s.code() == StatusCode::kAborted &&
                                       s.message() == fmt::format("fail {} {}", t, i)
                                 : s.ok();
        if (!right) {
          ADD_FAILURE() << "write " << t << "/" << i << ": " << s.ToString();
          ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);

  EXPECT_EQ(*GetOne(*store_, kTags, "sentinel"), "here");
  std::vector<std::string> want;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i)
      if (!fails(t, i)) want.push_back(Key().U64(t).U64(i).Done());
  EXPECT_EQ(ScanKeys(*store_, kMeta, Range{}, 100000), want);
}

TEST_P(StoreConformanceTest, ReadYourWrites) {
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < 50; ++i) {
        std::string k = Key().U64(t).Done();
        std::string v = fmt::format("{}", i);
        Status s = PutOne(*store_, kMeta, k, v);
        EXPECT_TRUE(s.ok()) << s.ToString();
        auto got = GetOne(*store_, kMeta, k);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, v) << "thread " << t << " did not see its write " << i;
        auto keys = ScanKeys(*store_, kMeta, PrefixRange(k), 10);
        EXPECT_EQ(keys.size(), 1u);
      }
    });
  }
  for (auto& th : threads) th.join();
}

// Read-modify-write from many threads at once: serializable, so no increment is lost.
TEST_P(StoreConformanceTest, ConcurrentIncrementsAreSerializable) {
  constexpr int kThreads = 32;
  constexpr int kPerThread = 100;
  std::latch start(kThreads);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        Status s = store_->Write([](WriteTxn& txn) -> Status {
          ASSIGN_OR_RETURN(auto v, txn.Get(kMeta, "counter"));
          int n = v ? std::stoi(*v) : 0;
          return txn.Put(kMeta, "counter", std::to_string(n + 1));
        });
        if (!s.ok()) ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(*GetOne(*store_, kMeta, "counter"), std::to_string(kThreads * kPerThread));
}

// Transfers between two keys keep their sum; a Read must never see half of one.
TEST_P(StoreConformanceTest, ReadsSeeConsistentSnapshots) {
  ASSERT_OK(store_->Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put(kMeta, "a", "1000"));
    return txn.Put(kMeta, "b", "0");
  }));
  constexpr int kWriters = 4;
  constexpr int kReaders = 4;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> torn{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 200; ++i) {
        int amount = (w * 7 + i) % 13 - 6;
        Status s = store_->Write([&](WriteTxn& txn) -> Status {
          ASSIGN_OR_RETURN(auto a, txn.Get(kMeta, "a"));
          RETURN_IF_ERROR(txn.Put(kMeta, "a", std::to_string(std::stoi(a.value()) - amount)));
          ASSIGN_OR_RETURN(auto b, txn.Get(kMeta, "b"));
          return txn.Put(kMeta, "b", std::to_string(std::stoi(b.value()) + amount));
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
      --writers_left;
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      while (writers_left.load() > 0) {
        Status s = store_->Read([&](ReadTxn& txn) -> Status {
          ASSIGN_OR_RETURN(auto a, txn.Get(kMeta, "a"));
          ASSIGN_OR_RETURN(auto rows, txn.Scan(kMeta, Range{"b", "c"}, 1));
          if (std::stoi(a.value()) + std::stoi(rows.at(0).value) != 1000) ++torn;
          return OkStatus();
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(torn.load(), 0);
}

// ReadRepeatable is a Read: one consistent state, with every acknowledged write in it (the
// transfers above, read from memory where the store can), however often it runs its closure.
TEST_P(StoreConformanceTest, ReadRepeatableSeesConsistentSnapshotsAndEveryAcknowledgedWrite) {
  ASSERT_OK(store_->Write([](WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(txn.Put(kMeta, "a", "1000"));
    return txn.Put(kMeta, "b", "0");
  }));
  std::atomic<bool> writing{true};
  std::atomic<int> torn{0};
  std::atomic<int> acknowledged{0};  // the last amount moved, once its write returned
  std::thread writer([&] {
    for (int i = 1; i <= 300; ++i) {
      Status s = store_->Write([&](WriteTxn& txn) -> Status {
        RETURN_IF_ERROR(txn.Put(kMeta, "a", std::to_string(1000 - i)));
        RETURN_IF_ERROR(txn.Put(kMeta, "n", std::to_string(i)));
        return txn.Put(kMeta, "b", std::to_string(i));
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
      acknowledged = i;
      // Quiet moments let a caching store answer from memory in between.
      if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    writing = false;
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (writing) {
        const int floor = acknowledged;
        int a = 0, b = 0;
        Status s = store_->ReadRepeatable([&](ReadTxn& txn) -> Status {
          ASSIGN_OR_RETURN(auto av, txn.Get(kMeta, "a"));
          ASSIGN_OR_RETURN(auto rows, txn.Scan(kMeta, Range{"b", "c"}, 1));
          a = std::stoi(av.value());
          b = std::stoi(rows.at(0).value);
          return OkStatus();
        });
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (a + b != 1000) ++torn;
        EXPECT_GE(b, floor) << "a write acknowledged before the read began is missing";
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
}

TEST_P(StoreConformanceTest, CloseRejectsLaterCalls) {
  ASSERT_OK(PutOne(*store_, kMeta, "k", "v"));
  store_->Close();
  Status w = PutOne(*store_, kMeta, "k2", "v");
  EXPECT_EQ(w.code(), StatusCode::kUnavailable) << w.ToString();
  Status r = store_->Read([](ReadTxn&) { return OkStatus(); });
  EXPECT_EQ(r.code(), StatusCode::kUnavailable) << r.ToString();
  Status rr = store_->ReadRepeatable([](ReadTxn& txn) { return txn.Get(kMeta, "k").status(); });
  EXPECT_EQ(rr.code(), StatusCode::kUnavailable) << rr.ToString();
  store_->Close();  // a second Close is harmless
  store_.reset();

  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), "v");
  EXPECT_EQ(*GetOne(*store_, kMeta, "k2"), std::nullopt);
}

// Close while writers run: every write that returned OK is kept; the others are kUnavailable.
TEST_P(StoreConformanceTest, CloseKeepsEveryAcknowledgedWrite) {
  constexpr int kThreads = 8;
  std::mutex mu;
  std::condition_variable cv;
  int acked = 0;
  std::vector<std::vector<uint64_t>> ok(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0;; ++i) {
        Status s = PutOne(*store_, kMeta, Key().U64(t).U64(i).Done(), "v");
        if (!s.ok()) {
          EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
          return;
        }
        ok[t].push_back(i);
        std::lock_guard l(mu);
        ++acked;
        cv.notify_all();
      }
    });
  }
  {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return acked >= 100; });
  }
  store_->Close();
  for (auto& th : threads) th.join();
  store_.reset();

  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
  size_t total = 0;
  for (int t = 0; t < kThreads; ++t) {
    total += ok[t].size();
    auto keys = ScanKeys(*store_, kMeta, PrefixRange(Key().U64(t).Done()), 1000000);
    // Each thread wrote sequentially and stopped at its first failure.
    ASSERT_EQ(keys.size(), ok[t].size()) << "thread " << t;
  }
  EXPECT_GE(total, 100u);
}

TEST_P(StoreConformanceTest, DestroyingWithoutCloseKeepsData) {
  ASSERT_OK(PutOne(*store_, kMeta, "k", "v"));
  store_.reset();
  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(*GetOne(*store_, kMeta, "k"), "v");
}

}  // namespace paddock::store::testing
