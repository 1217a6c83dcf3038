// aws/eventstream: the `application/vnd.amazon.eventstream` framing of AWS's event-stream
// responses (CloudWatch Logs' StartLiveTail, Kinesis' SubscribeToShard, ...): the server encodes
// them; a client (the deploy controller following logs) decodes them as they arrive.
//
//   std::string frame = aws::EncodeEvent("sessionStart", R"({"sessionId":"..."})");
//   writer.Write(frame);  // one message per write (http::BodyWriter)
//
//   aws::EventStreamDecoder decoder;
//   std::vector<aws::EventStreamMessage> messages;
//   RETURN_IF_ERROR(decoder.Feed(bytes_as_they_came, messages));  // 0, 1 or more whole messages
//
// A message is: prelude (total length u32, headers length u32, CRC32 of those 8 bytes), headers,
// payload, CRC32 of everything before it; integers big-endian, CRC32 the IEEE polynomial (zlib's).
// A header is name length u8, name, value type u8, value; only type 7 (string: length u16, bytes) is
// written here, the only type the JSON protocols' events and exceptions carry; every type is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace paddock::aws {

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32): `crc` is the value of the bytes before `data`.
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// One message with these string headers, in order, and `payload`.
// REQUIRES: each name at most 255 bytes, each value at most 65535 bytes (callers pass constants and
// short type names; a longer one is cut, never a malformed frame).
std::string EncodeEventStreamMessage(const std::vector<std::pair<std::string_view, std::string_view>>& headers,
                                     std::string_view payload);

// A modeled event of a JSON-protocol stream: `:message-type` event, `:event-type` `event_type`
// (the stream member's name, or "initial-response"), `:content-type` application/json.
std::string EncodeEvent(std::string_view event_type, std::string_view json_payload);

// A modeled exception ending a stream: `:message-type` exception, `:exception-type` `type` (a
// member of the stream's union, e.g. "SessionTimeoutException"), `:content-type` application/json,
// the payload `{"message": ...}` as JSON.
std::string EncodeException(std::string_view type, std::string_view json_payload);

// A decoded message. Header values are kept as text: string (7) and bytes (6) as they are, bool
// (0, 1) "true"/"false", the integers (2-5) and timestamps (8, milliseconds) in decimal, a UUID (9)
// as 32 hex digits.
struct EventStreamMessage {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload;

  // The first header named `name` (exact), or empty.
  std::string_view Header(std::string_view name) const;
};

// Reads messages from bytes that arrive in pieces of any size: a message split across reads is
// kept until its last byte comes. Not thread-safe.
class EventStreamDecoder {
 public:
  // The largest message accepted (AWS's limit is 16 MiB for the whole message).
  static constexpr size_t kMaxMessageBytes = 16 << 20;

  // Appends `bytes` and moves every message they complete to the end of `out`. DataLoss when a
  // message is malformed: a prelude or message CRC that does not match, a total length below 16 or
  // above kMaxMessageBytes, headers longer than the message, a header that runs past its block or
  // has an unknown type. After an error the stream cannot be resynchronised: every later Feed
  // fails the same way (messages completed before the bad one are still in `out`).
  Status Feed(std::string_view bytes, std::vector<EventStreamMessage>& out);

  // Bytes of an incomplete message held (0 between messages: where a stream may end cleanly).
  size_t buffered() const { return buffer_.size(); }

 private:
  std::string buffer_;
  Status broken_;
};

// One whole message (`frame` is exactly its bytes); the checks are Feed's.
StatusOr<EventStreamMessage> DecodeEventStreamMessage(std::string_view frame);

}  // namespace paddock::aws
