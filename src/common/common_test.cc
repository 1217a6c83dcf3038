#include <gtest/gtest.h>

#include "common/arn.h"
#include "common/encoding.h"
#include "common/ids.h"
#include "common/status.h"

namespace paddock {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  ASSIGN_OR_RETURN(*out, Half(x));
  return OkStatus();
}

TEST(StatusTest, AssignOrReturnPropagatesErrors) {
  int v = 0;
  EXPECT_TRUE(UseHalf(4, &v).ok());
  EXPECT_EQ(v, 2);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

TEST(ArnTest, ParsesAllParts) {
  auto arn = ParseArn("arn:aws:ecs:us-east-1:123456789012:task-definition/web:3");
  ASSERT_TRUE(arn.ok());
  EXPECT_EQ(arn->service, "ecs");
  EXPECT_EQ(arn->region, "us-east-1");
  EXPECT_EQ(arn->account, "123456789012");
  EXPECT_EQ(arn->resource, "task-definition/web:3");
  EXPECT_EQ(arn->ToString(), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:3");
}

TEST(ArnTest, RejectsMalformed) {
  EXPECT_FALSE(ParseArn("arn:aws:ecs").ok());
  EXPECT_FALSE(ParseArn("nope:aws:ecs:r:a:x").ok());
  EXPECT_FALSE(ParseArn("arn:aws:ecs:r:a:").ok());
}

TEST(IdsTest, AccountAndRegionShapes) {
  EXPECT_TRUE(IsAccountId("123456789012"));
  EXPECT_FALSE(IsAccountId("12345678901"));
  EXPECT_FALSE(IsAccountId("12345678901a"));
  EXPECT_TRUE(IsRegionName("us-east-1"));
  EXPECT_FALSE(IsRegionName("US-EAST-1"));
  EXPECT_FALSE(IsRegionName("useast1"));
}

TEST(EncodingTest, HexAndBase64RoundTrip) {
  std::string bytes = RandomBytes(37);
  EXPECT_EQ(*HexDecode(HexEncode(bytes)), bytes);
  EXPECT_EQ(*Base64UrlDecode(Base64UrlEncode(bytes)), bytes);
  EXPECT_FALSE(Base64UrlDecode("a+b").ok());
}

TEST(EncodingTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(EncodingTest, UuidShape) {
  std::string u = RandomUuid();
  ASSERT_EQ(u.size(), 36u);
  EXPECT_EQ(u[14], '4');
}

}  // namespace
}  // namespace paddock
