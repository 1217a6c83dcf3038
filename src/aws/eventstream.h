// aws/eventstream: the `application/vnd.amazon.eventstream` framing of AWS's event-stream
// responses (CloudWatch Logs' StartLiveTail, Kinesis' SubscribeToShard, ...). Encoding only: the
// server never reads an event stream.
//
//   std::string frame = aws::EncodeEvent("sessionStart", R"({"sessionId":"..."})");
//   writer.Write(frame);  // one message per write (http::BodyWriter)
//
// A message is: prelude (total length u32, headers length u32, CRC32 of those 8 bytes), headers,
// payload, CRC32 of everything before it; integers big-endian, CRC32 the IEEE polynomial (zlib's).
// A header is name length u8, name, value type u8, value; only type 7 (string: length u16, bytes) is
// written here, the only type the JSON protocols' events and exceptions carry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

}  // namespace paddock::aws
