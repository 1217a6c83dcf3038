#include "aws/errors.h"
#include "aws/pagination.h"

#include <gtest/gtest.h>

namespace paddock::aws {
namespace {

void ExpectBadToken(const StatusOr<std::string>& r) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AwsErrorFor(r.status()).type, "InvalidParameterException");
  EXPECT_FALSE(r.status().message().empty());
}

TEST(TokenCodecTest, RoundTrip) {
  TokenCodec codec("key-1");
  for (std::string position : {std::string(), std::string("cluster/default"), std::string("a\0b\xff", 4),
                               std::string(300, 'x')}) {
    std::string token = codec.Encode("ListClusters|123456789012|us-east-1", position);
    EXPECT_EQ(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    auto back = codec.Decode("ListClusters|123456789012|us-east-1", token);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, position);
  }
}

TEST(TokenCodecTest, EveryTamperedCharacterFails) {
  TokenCodec codec("key-1");
  std::string token = codec.Encode("ctx", "cluster/default");
  for (size_t i = 0; i < token.size(); ++i) {
    for (char c : {'A', 'B', '_', 'z'}) {
      if (token[i] == c) continue;
      std::string bad = token;
      bad[i] = c;
      ExpectBadToken(codec.Decode("ctx", bad));
    }
  }
}

TEST(TokenCodecTest, OtherContextOrKeyFails) {
  TokenCodec codec("key-1");
  std::string token = codec.Encode("ListClusters|111111111111|us-east-1", "p");
  ExpectBadToken(codec.Decode("ListClusters|222222222222|us-east-1", token));
  ExpectBadToken(codec.Decode("ListServices|111111111111|us-east-1", token));
  ExpectBadToken(TokenCodec("key-2").Decode("ListClusters|111111111111|us-east-1", token));
}

TEST(TokenCodecTest, GarbageFails) {
  TokenCodec codec("key-1");
  for (std::string_view t : {"", "x", "not a token", "AAAA", "====", "%%%", "eyJhIjoxfQ"}) ExpectBadToken(codec.Decode("ctx", t));
  ExpectBadToken(codec.Decode("ctx", std::string(10000, 'A')));
}

}  // namespace
}  // namespace paddock::aws
