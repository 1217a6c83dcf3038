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

// A frame with these raw header bytes (any types) and payload, its lengths and CRCs right.
std::string RawFrame(std::string_view headers, std::string_view payload) {
  std::string out;
  auto u32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>(v >> shift);
  };
  u32(static_cast<uint32_t>(16 + headers.size() + payload.size()));
  u32(static_cast<uint32_t>(headers.size()));
  u32(Crc32(out));
  out += headers;
  out += payload;
  u32(Crc32(out));
  return out;
}

TEST(EventStreamDecoderTest, DecodesWhatEncodeWrites) {
  const std::string frame = EncodeEvent("sessionUpdate", R"({"sessionResults":[]})");
  StatusOr<EventStreamMessage> m = DecodeEventStreamMessage(frame);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Header(":message-type"), "event");
  EXPECT_EQ(m->Header(":event-type"), "sessionUpdate");
  EXPECT_EQ(m->Header(":content-type"), "application/json");
  EXPECT_EQ(m->Header("absent"), "");
  EXPECT_EQ(m->payload, R"({"sessionResults":[]})");
  // The spec's empty message: no header, no payload.
  StatusOr<EventStreamMessage> empty = DecodeEventStreamMessage(EncodeEventStreamMessage({}, ""));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->headers.empty());
  EXPECT_EQ(empty->payload, "");
}

// Messages arrive in reads of any size: every split of three messages (one of them split twice)
// yields the same three, in order, and nothing is left buffered at the end.
TEST(EventStreamDecoderTest, AMessageSplitAcrossReadsIsKeptUntilItsLastByte) {
  const std::string stream = EncodeEvent("sessionStart", R"({"sessionId":"s"})") +
                             EncodeEvent("sessionUpdate", R"({"n":1})") +
                             EncodeException("SessionTimeoutException", R"({"message":"over"})");
  for (size_t a = 0; a <= stream.size(); ++a) {
    for (size_t b = a; b <= stream.size(); b += 7) {
      EventStreamDecoder decoder;
      std::vector<EventStreamMessage> got;
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(0, a), got).ok());
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(a, b - a), got).ok());
      ASSERT_TRUE(decoder.Feed(std::string_view(stream).substr(b), got).ok());
      ASSERT_EQ(got.size(), 3u) << a << " " << b;
      EXPECT_EQ(got[0].Header(":event-type"), "sessionStart");
      EXPECT_EQ(got[1].payload, R"({"n":1})");
      EXPECT_EQ(got[2].Header(":exception-type"), "SessionTimeoutException");
      EXPECT_EQ(decoder.buffered(), 0u);
    }
  }
  // One byte at a time: a message comes out exactly when its last byte does.
  EventStreamDecoder decoder;
  std::vector<EventStreamMessage> got;
  const size_t first = EncodeEvent("sessionStart", R"({"sessionId":"s"})").size();
  for (size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(decoder.Feed(stream.substr(i, 1), got).ok());
    if (i + 1 == first - 1) {
      EXPECT_TRUE(got.empty());
    }
    if (i + 1 == first) {
      EXPECT_EQ(got.size(), 1u);
    }
  }
  EXPECT_EQ(got.size(), 3u);
}

TEST(EventStreamDecoderTest, ABadMessageCrcIsDataLossAndTheStreamStaysBroken) {
  const std::string good = EncodeEvent("sessionUpdate", R"({"n":1})");
  std::string bad = EncodeEvent("sessionUpdate", R"({"n":2})");
  bad[bad.size() - 8] ^= 0x01;  // a payload byte: the message CRC no longer matches
  EventStreamDecoder decoder;
  std::vector<EventStreamMessage> got;
  Status s = decoder.Feed(good + bad + good, got);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("message's CRC"), std::string::npos) << s.message();
  ASSERT_EQ(got.size(), 1u);  // the message before the bad one
  EXPECT_EQ(got[0].payload, R"({"n":1})");
  EXPECT_EQ(decoder.Feed(good, got).code(), StatusCode::kDataLoss);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(DecodeEventStreamMessage(bad).status().code(), StatusCode::kDataLoss);
}

// A corrupt prelude is refused as soon as its 12 bytes are in, not after waiting for the length
// it claims.
TEST(EventStreamDecoderTest, ABadPreludeCrcIsRefusedAtOnce) {
  std::string frame = EncodeEvent("sessionUpdate", "{}");
  frame[2] ^= 0x40;  // the total length: now ~4 MiB, and the prelude's CRC no longer matches
  EventStreamDecoder decoder;
  std::vector<EventStreamMessage> got;
  Status s = decoder.Feed(frame.substr(0, 12), got);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("prelude's CRC"), std::string::npos) << s.message();
}

TEST(EventStreamDecoderTest, LengthsThatCannotBeAMessageAreRefused) {
  auto with = [](uint32_t total, uint32_t headers) {
    std::string p;
    for (uint32_t v : {total, headers}) {
      for (int shift = 24; shift >= 0; shift -= 8) p += static_cast<char>(v >> shift);
    }
    const uint32_t crc = Crc32(p);
    for (int shift = 24; shift >= 0; shift -= 8) p += static_cast<char>(crc >> shift);
    return p;
  };
  for (auto [total, headers] : {std::pair<uint32_t, uint32_t>{15, 0}, {(16u << 20) + 1, 0}, {20, 5}}) {
    EventStreamDecoder decoder;
    std::vector<EventStreamMessage> got;
    EXPECT_EQ(decoder.Feed(with(total, headers), got).code(), StatusCode::kDataLoss) << total << " " << headers;
  }
}

// Every header type is read (as text); one that runs past the block, or of an unknown type, is not.
TEST(EventStreamDecoderTest, EveryHeaderTypeIsReadAndAMalformedOneIsRefused) {
  std::string h;
  auto name = [&](std::string_view n, char type) {
    h += static_cast<char>(n.size());
    h += n;
    h += type;
  };
  name("t", 0);
  name("f", 1);
  name("b", 2);
  h += '\xff';  // -1
  name("s", 3);
  h += std::string("\x01\x00", 2);  // 256
  name("i", 4);
  h += std::string("\xff\xff\xff\xfe", 4);  // -2
  name("l", 5);
  h += std::string("\x00\x00\x00\x01\x00\x00\x00\x00", 8);  // 2^32
  name("bytes", 6);
  h += std::string("\x00\x02\x00\x01", 4);
  name("ts", 8);
  h += std::string("\x00\x00\x01\x8c\x00\x00\x00\x00", 8);
  name("uuid", 9);
  h += std::string(16, '\x11');
  StatusOr<EventStreamMessage> m = DecodeEventStreamMessage(RawFrame(h, "p"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Header("t"), "true");
  EXPECT_EQ(m->Header("f"), "false");
  EXPECT_EQ(m->Header("b"), "-1");
  EXPECT_EQ(m->Header("s"), "256");
  EXPECT_EQ(m->Header("i"), "-2");
  EXPECT_EQ(m->Header("l"), "4294967296");
  EXPECT_EQ(m->Header("bytes"), std::string("\x00\x01", 2));
  EXPECT_EQ(m->Header("ts"), "1700807049216");
  EXPECT_EQ(m->Header("uuid"), std::string(32, '1'));
  EXPECT_EQ(m->payload, "p");

  std::string past;
  past += '\x01';
  past += 'x';
  past += '\x07';
  past += std::string("\x00\x09" "abc", 5);  // a string of 9 bytes, 3 there
  EXPECT_EQ(DecodeEventStreamMessage(RawFrame(past, "")).status().code(), StatusCode::kDataLoss);
  std::string unknown = std::string("\x01x\x0a", 3);
  EXPECT_EQ(DecodeEventStreamMessage(RawFrame(unknown, "")).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace paddock::aws
