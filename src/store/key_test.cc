#include "store/key.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace paddock::store {
namespace {

// Strings from a tiny alphabet of the bytes the encoding treats specially, so random strings are
// often equal or prefixes of each other.
std::string RandomString(std::mt19937& rng) {
  static constexpr char kAlphabet[] = {'\0', '\x01', 'a', '\x7F', '\x80', '\xFE', '\xFF'};
  std::string s(std::uniform_int_distribution<size_t>(0, 4)(rng), '\0');
  for (char& c : s) c = kAlphabet[std::uniform_int_distribution<size_t>(0, std::size(kAlphabet) - 1)(rng)];
  return s;
}

uint64_t RandomU64(std::mt19937& rng) {
  static constexpr uint64_t kEdges[] = {0, 1, 255, 256, 0x00FF00FF00FF00FFull, UINT64_MAX - 1, UINT64_MAX};
  if (rng() % 2) return kEdges[rng() % std::size(kEdges)];
  return (static_cast<uint64_t>(rng()) << 32) | rng();
}

using Tuple = std::tuple<std::string, uint64_t, std::string>;

std::string Encode(const Tuple& t) {
  return Key().Str(std::get<0>(t)).U64(std::get<1>(t)).Str(std::get<2>(t)).Done();
}

// std::string compares with char_traits<char>, which orders bytes as unsigned char, like memcmp.
TEST(KeyTest, OrderMatchesTupleOrder) {
  std::mt19937 rng(20240601);
  std::vector<Tuple> tuples;
  for (int i = 0; i < 3000; ++i) tuples.emplace_back(RandomString(rng), RandomU64(rng) % 4, RandomString(rng));
  for (int i = 0; i < 300; ++i) tuples.emplace_back(RandomString(rng), RandomU64(rng), RandomString(rng));
  for (size_t i = 0; i < tuples.size(); ++i) {
    const Tuple& a = tuples[i];
    const Tuple& b = tuples[(i * 7919 + 13) % tuples.size()];
    const Tuple& c = tuples[(i + 1) % tuples.size()];
    for (const Tuple* other : {&b, &c}) {
      std::string ka = Encode(a), kb = Encode(*other);
      EXPECT_EQ(a < *other, ka < kb) << ::testing::PrintToString(ka) << " vs " << ::testing::PrintToString(kb);
      EXPECT_EQ(a == *other, ka == kb);
    }
  }
  // And a full sort agrees.
  std::vector<std::pair<std::string, Tuple>> keyed;
  for (const auto& t : tuples) keyed.emplace_back(Encode(t), t);
  std::sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t i = 1; i < keyed.size(); ++i) EXPECT_FALSE(keyed[i].second < keyed[i - 1].second);
}

TEST(KeyTest, StringEdgeCases) {
  auto k = [](std::string_view s) { return Key().Str(s).Done(); };
  using namespace std::string_literals;
  // Shorter sorts first on a common prefix, whatever byte follows it.
  EXPECT_LT(k("a"), k("a\0"s));
  EXPECT_LT(k("a\0"s), k("a\0\0"s));
  EXPECT_LT(k("a\0"s), k("a\x01"));
  EXPECT_LT(k("a"), k("a\x01"));
  EXPECT_LT(k(""), k("\0"s));
  EXPECT_LT(k("\xFF"), k("\xFF\xFF"));
  EXPECT_LT(k("a\xFF"), k("b"));
  // The string ends before what follows it in the tuple.
  EXPECT_LT(Key().Str("a").Str("z").Done(), Key().Str("a\0"s).Str("").Done());
  EXPECT_EQ(Key().U64(0x0102030405060708ull).Done(), "\x01\x02\x03\x04\x05\x06\x07\x08");
  EXPECT_EQ(k("a\0b"s), "a\0\xFF" "b\0\x01"s);
}

TEST(KeyTest, ReaderRoundTrips) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    Tuple t(RandomString(rng), RandomU64(rng), RandomString(rng));
    const std::string key = Encode(t);  // KeyReader holds a view: the key must outlive it
    KeyReader r(key);
    auto a = r.Str();
    ASSERT_TRUE(a.ok()) << ::testing::PrintToString(key) << " " << a.status().ToString();
    auto n = r.U64();
    ASSERT_TRUE(n.ok());
    auto b = r.Str();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(Tuple(*a, *n, *b), t);
    EXPECT_TRUE(r.AtEnd());
  }
}

TEST(KeyTest, ReaderRejectsMalformedKeys) {
  using namespace std::string_literals;
  for (const std::string& bad : {"abc"s, "a\0"s, "a\0\x02"s, "a\0\xFF"s, "\0"s}) {
    KeyReader r(bad);
    EXPECT_EQ(r.Str().status().code(), StatusCode::kDataLoss) << ::testing::PrintToString(bad);
  }
  KeyReader r("1234567");
  EXPECT_EQ(r.U64().status().code(), StatusCode::kDataLoss);
  // A StrPrefix has no terminator, so it does not read back as a string.
  const std::string prefix = Key().StrPrefix("ab").Done();
  KeyReader p(prefix);
  EXPECT_FALSE(p.Str().ok());
}

bool InRange(const Range& r, const std::string& k) { return k >= r.begin && (r.end.empty() || k < r.end); }

// PrefixRange(p) holds exactly the keys that start with p.
TEST(KeyTest, PrefixRangeHoldsExactlyTheKeysWithThePrefix) {
  using namespace std::string_literals;
  EXPECT_EQ(PrefixRange("ab").begin, "ab");
  EXPECT_EQ(PrefixRange("ab").end, "ac");
  EXPECT_EQ(PrefixRange("a\xFF\xFF").end, "b");
  EXPECT_EQ(PrefixRange("\xFF\xFF").end, "");  // unbounded
  EXPECT_EQ(PrefixRange("").end, "");
  EXPECT_EQ(KeySuccessor("a"), "a\0"s);

  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    std::string prefix = RandomString(rng);
    std::string key = rng() % 2 ? prefix + RandomString(rng) : RandomString(rng);
    EXPECT_EQ(InRange(PrefixRange(prefix), key), key.starts_with(prefix))
        << ::testing::PrintToString(prefix) << " " << ::testing::PrintToString(key);
  }
}

// A tuple-prefix key, or a StrPrefix, selects the tuples that start with it.
TEST(KeyTest, TupleAndStrPrefixRanges) {
  std::mt19937 rng(12);
  for (int i = 0; i < 20000; ++i) {
    Tuple t(RandomString(rng), RandomU64(rng) % 3, RandomString(rng));
    std::string first = rng() % 2 ? std::get<0>(t) : RandomString(rng);
    uint64_t second = rng() % 2 ? std::get<1>(t) : RandomU64(rng) % 3;
    std::string start = RandomString(rng);
    std::string k = Encode(t);

    EXPECT_EQ(InRange(PrefixRange(Key().Str(first).Done()), k), std::get<0>(t) == first);
    EXPECT_EQ(InRange(PrefixRange(Key().Str(first).U64(second).Done()), k),
              std::get<0>(t) == first && std::get<1>(t) == second);
    EXPECT_EQ(InRange(PrefixRange(Key().StrPrefix(start).Done()), k), std::get<0>(t).starts_with(start))
        << ::testing::PrintToString(start) << " " << ::testing::PrintToString(std::get<0>(t));
    EXPECT_EQ(InRange(PrefixRange(Key().Str(first).U64(second).StrPrefix(start).Done()), k),
              std::get<0>(t) == first && std::get<1>(t) == second && std::get<2>(t).starts_with(start));
  }
}

}  // namespace
}  // namespace paddock::store
