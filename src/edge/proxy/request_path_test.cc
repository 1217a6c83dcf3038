#include "edge/proxy/request_path.h"

#include <gtest/gtest.h>

#include <string>

namespace paddock::edge {
namespace {

struct Case {
  std::string path;
  std::string query;
  std::string want_path;
  std::string want_query;
};

TEST(SanitizeRequestTargetTest, CleansAndNormalisesAsTraefikBeforeRouting) {
  const Case cases[] = {
      // Left alone.
      {"/", "", "/", ""},
      {"/a/b", "x=1", "/a/b", "x=1"},
      {"/a%20b", "", "/a%20b", ""},
      {"/a!b", "", "/a!b", ""},
      {"/a:b@c", "", "/a:b@c", ""},
      // sanitizePath: dot segments and double slashes, one trailing slash kept.
      {"/a/b/../c", "", "/a/c", ""},
      {"/a/./b", "", "/a/b", ""},
      {"/a//b", "", "/a/b", ""},
      {"//a", "", "/a", ""},
      {"/a/b/", "", "/a/b/", ""},
      {"/a/b/../c/", "", "/a/c/", ""},
      {"/a/b/..", "", "/a", ""},
      {"/a/.", "", "/a", ""},
      {"/..", "", "/", ""},
      {"/../../a", "", "/a", ""},
      {"//", "", "/", ""},
      {"/a//", "", "/a/", ""},
      // normalizePath: unreserved %XX decoded, the others upper-cased; before the cleaning.
      {"/%7euser", "", "/~user", ""},
      {"/%41%2d%5F", "", "/A-_", ""},
      {"/a%2fb", "", "/a%2Fb", ""},
      {"/a/%2e%2e/b", "", "/b", ""},
      {"/a/%2E/b", "", "/a/b", ""},
      {"/a%2F../b", "", "/a%2F../b", ""},  // an encoded '/' is no separator: one segment "a%2F.."
      // Characters a path may not hold as they are: re-escaped from the decoded path.
      {"/a\"b", "", "/a%22b", ""},
      {"/a%2Fb\"", "", "/a/b%22", ""},
      {"/caf\xc3\xa9", "", "/caf%C3%A9", ""},
      {"/a%23b", "", "/a%23b", ""},
      // The query: ';' becomes '&', nothing else changes; a '#' there is not refused.
      {"/q", "a=1;b=2", "/q", "a=1&b=2"},
      {"/q", "a=%zz#x", "/q", "a=%zz#x"},
      // Not origin-form: path kept.
      {"*", "", "*", ""},
  };
  for (const Case& c : cases) {
    RequestTarget t = SanitizeRequestTarget(c.path, c.query);
    EXPECT_EQ(t.refusal, TargetRefusal::kNone) << c.path;
    EXPECT_EQ(t.path, c.want_path) << c.path;
    EXPECT_EQ(t.query, c.want_query) << c.path << "?" << c.query;
  }
}

TEST(SanitizeRequestTargetTest, SanitizePathFalseOnlyNormalises) {
  RequestTarget t = SanitizeRequestTarget("/a/%2e%2e//b/", "k;v", /*sanitize_path=*/false);
  EXPECT_EQ(t.refusal, TargetRefusal::kNone);
  EXPECT_EQ(t.path, "/a/..//b/");
  EXPECT_EQ(t.query, "k&v");
}

TEST(SanitizeRequestTargetTest, RefusesBadEscapesControlBytesAndFragments) {
  const struct {
    std::string path, query;
    TargetRefusal want;
  } cases[] = {
      {"/%zz", "", TargetRefusal::kMalformed},
      {"/a%", "", TargetRefusal::kMalformed},
      {"/a%2", "", TargetRefusal::kMalformed},
      {"/a%g0", "", TargetRefusal::kMalformed},
      {"/a\x01", "", TargetRefusal::kMalformed},
      {"/a", "x=\x7f", TargetRefusal::kMalformed},
      {"/a%zz#b", "", TargetRefusal::kMalformed},  // Go's parse comes first
      {"/a#b", "", TargetRefusal::kFragment},
      {"/#", "", TargetRefusal::kFragment},
  };
  for (const auto& c : cases) {
    RequestTarget t = SanitizeRequestTarget(c.path, c.query);
    EXPECT_EQ(t.refusal, c.want) << c.path << "?" << c.query;
    EXPECT_TRUE(t.path.empty()) << c.path;
  }
}

}  // namespace
}  // namespace paddock::edge
