#include "agent/images/reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace paddock::agent::images {
namespace {

using ::testing::HasSubstr;

const std::string kHex(64, 'a');

TEST(ReferenceTest, NormalizesLikeDocker) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"busybox", "docker.io/library/busybox:latest"},
      {"busybox:1.36", "docker.io/library/busybox:1.36"},
      {"library/busybox", "docker.io/library/busybox:latest"},
      {"docker.io/busybox", "docker.io/library/busybox:latest"},
      {"index.docker.io/library/busybox:x", "docker.io/library/busybox:x"},
      {"me/app:v1.2-rc_3", "docker.io/me/app:v1.2-rc_3"},
      {"localhost/x", "localhost/x:latest"},
      {"localhost:5000/x:tag", "localhost:5000/x:tag"},
      {"127.0.0.1:5000/a/b/c", "127.0.0.1:5000/a/b/c:latest"},
      {"quay.io/org/my.app__x--y:T", "quay.io/org/my.app__x--y:T"},
      {"busybox@sha256:" + kHex, "docker.io/library/busybox@sha256:" + kHex},
      {"busybox:1@sha256:" + kHex, "docker.io/library/busybox:1@sha256:" + kHex},
      {"localhost:5000/x@sha256:" + kHex, "localhost:5000/x@sha256:" + kHex},
  };
  for (const auto& c : cases) {
    auto r = ParseReference(c.in);
    ASSERT_TRUE(r.ok()) << c.in << ": " << r.status().message();
    EXPECT_EQ(r->String(), c.out) << c.in;
  }
  auto r = ParseReference("localhost:5000/team/app:1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->domain, "localhost:5000");
  EXPECT_EQ(r->path, "team/app");
  EXPECT_EQ(r->tag, "1");
  EXPECT_EQ(r->Repository(), "localhost:5000/team/app");
  auto d = ParseReference("busybox@sha256:" + kHex);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tag, "");  // a digest implies no :latest
}

TEST(ReferenceTest, RefusesMalformed) {
  for (const std::string& bad : std::vector<std::string>{"", ":", ":tag", "Busybox", "me/App", "a//b", "a/", "/a", "a:", "a:-x", "a:" + std::string(129, 't'),
                          "a@sha256:abc", "a@md5:" + kHex, "a@sha256:" + std::string(64, 'A'), "a b", "a..b", "-a",
                          "a_", "bad_host:5000x/a", "a/" + std::string(300, 'b')}) {
    auto r = ParseReference(bad);
    EXPECT_FALSE(r.ok()) << "accepted '" << bad << "' as " << (r.ok() ? r->String() : "");
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(r.status().message(), HasSubstr("invalid image reference"));
    }
  }
}

TEST(ReferenceTest, Tags) {
  EXPECT_TRUE(IsValidTag("latest"));
  EXPECT_TRUE(IsValidTag("_x.Y-1"));
  EXPECT_FALSE(IsValidTag(".x"));
  EXPECT_FALSE(IsValidTag("a/b"));
  EXPECT_FALSE(IsValidTag(""));
}

}  // namespace
}  // namespace paddock::agent::images
