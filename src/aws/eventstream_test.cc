#include "aws/eventstream.h"

#include <gtest/gtest.h>

namespace paddock::aws {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
  }
  return out;
}

TEST(EventStreamTest, Crc32IsZlibs) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_EQ(Crc32(""), 0u);
  // Incremental: the CRC of a prefix continues into the rest.
  EXPECT_EQ(Crc32("6789", Crc32("12345")), 0xCBF43926u);
}

// The event-stream specification's "empty message" vector (aws-c-event-stream's test suite).
TEST(EventStreamTest, EmptyMessageMatchesTheSpecVector) {
  EXPECT_EQ(Hex(EncodeEventStreamMessage({}, "")), "000000100000000005c248eb7d98c8ff");
}

// Encoded independently (Python: struct + zlib.crc32) and decoded by botocore.eventstream.
TEST(EventStreamTest, EventMatchesAnIndependentEncoding) {
  EXPECT_EQ(Hex(EncodeEvent("sessionStart", R"({"a":1})")),
            "00000069000000527465fa8d0d3a6d6573736167652d747970650700056576656e740b3a6576656e742d7479706507000c73"
            "657373696f6e53746172740d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b2261223a31"
            "7d9d55c9f3");
}

TEST(EventStreamTest, ExceptionCarriesItsType) {
  std::string frame = EncodeException("SessionTimeoutException", R"({"message":"m"})");
  EXPECT_NE(frame.find(":exception-type"), std::string::npos);
  EXPECT_NE(frame.find("SessionTimeoutException"), std::string::npos);
  EXPECT_NE(frame.find(std::string(":message-type\x07\x00\x09" "exception", 25)), std::string::npos);
  // The lengths in the prelude agree with the frame.
  const auto u32 = [&](size_t at) {
    return (uint32_t(uint8_t(frame[at])) << 24) | (uint32_t(uint8_t(frame[at + 1])) << 16) |
           (uint32_t(uint8_t(frame[at + 2])) << 8) | uint32_t(uint8_t(frame[at + 3]));
  };
  EXPECT_EQ(u32(0), frame.size());
  EXPECT_EQ(u32(8), Crc32(std::string_view(frame).substr(0, 8)));
  EXPECT_EQ(u32(frame.size() - 4), Crc32(std::string_view(frame).substr(0, frame.size() - 4)));
  EXPECT_EQ(frame.substr(12 + u32(4), frame.size() - 16 - u32(4)), R"({"message":"m"})");
}

}  // namespace
}  // namespace paddock::aws
