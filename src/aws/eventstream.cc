#include "aws/eventstream.h"

#include <array>

#include <fmt/format.h>

namespace paddock::aws {
namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

void AppendU32(std::string& out, uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

constexpr uint8_t kStringType = 7;

uint32_t ReadU32(std::string_view b, size_t at) {
  return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) | (uint32_t(uint8_t(b[at + 2])) << 8) |
         uint32_t(uint8_t(b[at + 3]));
}

uint64_t ReadBigEndian(std::string_view b) {
  uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return v;
}

// A signed integer of b.size() bytes, big-endian two's complement, in decimal.
std::string SignedDecimal(std::string_view b) {
  const uint64_t raw = ReadBigEndian(b);
  const int bits = static_cast<int>(b.size()) * 8;
  int64_t v = bits == 64 ? static_cast<int64_t>(raw)
                         : static_cast<int64_t>(raw) - ((raw >> (bits - 1)) ? (int64_t{1} << bits) : 0);
  return std::to_string(v);
}

// The length of the prelude: total length, headers length, their CRC.
constexpr size_t kPrelude = 12;
constexpr size_t kMinMessage = kPrelude + 4;

// `total` and `headers_len` from a prelude whose CRC matched: are they a message's?
Status CheckLengths(uint32_t total, uint32_t headers_len) {
  if (total < kMinMessage || total > EventStreamDecoder::kMaxMessageBytes) {
    return DataLoss(fmt::format("event stream: a message of {} bytes (must be {} to {})", total, kMinMessage,
                                EventStreamDecoder::kMaxMessageBytes));
  }
  if (headers_len > total - kMinMessage) {
    return DataLoss(fmt::format("event stream: {} bytes of headers in a message of {}", headers_len, total));
  }
  return OkStatus();
}

Status CheckPrelude(std::string_view prelude) {
  const uint32_t crc = Crc32(prelude.substr(0, 8));
  if (crc != ReadU32(prelude, 8)) {
    return DataLoss(fmt::format("event stream: the prelude's CRC is {:08x}, its bytes' {:08x}", ReadU32(prelude, 8), crc));
  }
  return CheckLengths(ReadU32(prelude, 0), ReadU32(prelude, 4));
}

StatusOr<std::vector<std::pair<std::string, std::string>>> DecodeHeaders(std::string_view h) {
  std::vector<std::pair<std::string, std::string>> out;
  auto truncated = [] { return DataLoss("event stream: a header runs past the headers"); };
  while (!h.empty()) {
    const size_t name_len = uint8_t(h[0]);
    if (h.size() < 1 + name_len + 1) return truncated();
    std::string name(h.substr(1, name_len));
    const uint8_t type = uint8_t(h[1 + name_len]);
    h.remove_prefix(2 + name_len);
    std::string value;
    size_t used = 0;
    switch (type) {
      case 0: value = "true"; break;
      case 1: value = "false"; break;
      case 2: case 3: case 4: case 5: case 8: {
        static constexpr size_t kWidth[] = {0, 0, 1, 2, 4, 8, 0, 0, 8};
        used = kWidth[type];
        if (h.size() < used) return truncated();
        value = SignedDecimal(h.substr(0, used));
        break;
      }
      case 6: case 7: {
        if (h.size() < 2) return truncated();
        const size_t len = (size_t(uint8_t(h[0])) << 8) | uint8_t(h[1]);
        if (h.size() < 2 + len) return truncated();
        value = std::string(h.substr(2, len));
        used = 2 + len;
        break;
      }
      case 9: {
        used = 16;
        if (h.size() < used) return truncated();
        static constexpr char kDigits[] = "0123456789abcdef";
        for (unsigned char c : h.substr(0, used)) {
          value += kDigits[c >> 4];
          value += kDigits[c & 0xf];
        }
        break;
      }
      default: return DataLoss(fmt::format("event stream: header {} has an unknown type {}", name, type));
    }
    h.remove_prefix(used);
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

}  // namespace

uint32_t Crc32(std::string_view data, uint32_t crc) {
  crc = ~crc;
  for (unsigned char b : data) crc = kCrcTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::string EncodeEventStreamMessage(const std::vector<std::pair<std::string_view, std::string_view>>& headers,
                                     std::string_view payload) {
  std::string encoded_headers;
  for (auto [name, value] : headers) {
    name = name.substr(0, 255);
    value = value.substr(0, 65535);
    encoded_headers += static_cast<char>(name.size());
    encoded_headers += name;
    encoded_headers += static_cast<char>(kStringType);
    encoded_headers += static_cast<char>(value.size() >> 8);
    encoded_headers += static_cast<char>(value.size() & 0xff);
    encoded_headers += value;
  }
  const size_t total = 12 + encoded_headers.size() + payload.size() + 4;
  std::string out;
  out.reserve(total);
  AppendU32(out, static_cast<uint32_t>(total));
  AppendU32(out, static_cast<uint32_t>(encoded_headers.size()));
  AppendU32(out, Crc32(out));
  out += encoded_headers;
  out += payload;
  AppendU32(out, Crc32(out));
  return out;
}

std::string EncodeEvent(std::string_view event_type, std::string_view json_payload) {
  return EncodeEventStreamMessage(
      {{":message-type", "event"}, {":event-type", event_type}, {":content-type", "application/json"}}, json_payload);
}

std::string EncodeException(std::string_view type, std::string_view json_payload) {
  return EncodeEventStreamMessage(
      {{":message-type", "exception"}, {":exception-type", type}, {":content-type", "application/json"}},
      json_payload);
}

std::string_view EventStreamMessage::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return {};
}

StatusOr<EventStreamMessage> DecodeEventStreamMessage(std::string_view frame) {
  if (frame.size() < kMinMessage) return DataLoss(fmt::format("event stream: a message of {} bytes", frame.size()));
  RETURN_IF_ERROR(CheckPrelude(frame.substr(0, kPrelude)));
  const uint32_t total = ReadU32(frame, 0), headers_len = ReadU32(frame, 4);
  if (total != frame.size()) {
    return DataLoss(fmt::format("event stream: the prelude says {} bytes, the message has {}", total, frame.size()));
  }
  const uint32_t crc = Crc32(frame.substr(0, total - 4));
  if (crc != ReadU32(frame, total - 4)) {
    return DataLoss(fmt::format("event stream: the message's CRC is {:08x}, its bytes' {:08x}", ReadU32(frame, total - 4), crc));
  }
  EventStreamMessage m;
  ASSIGN_OR_RETURN(m.headers, DecodeHeaders(frame.substr(kPrelude, headers_len)));
  m.payload = std::string(frame.substr(kPrelude + headers_len, total - kMinMessage - headers_len));
  return m;
}

Status EventStreamDecoder::Feed(std::string_view bytes, std::vector<EventStreamMessage>& out) {
  if (!broken_.ok()) return broken_;
  buffer_.append(bytes);
  size_t at = 0;
  while (buffer_.size() - at >= kPrelude) {
    const std::string_view rest = std::string_view(buffer_).substr(at);
    // The prelude is checked as soon as it is whole, so a corrupt length never makes us wait for
    // (or buffer) bytes that will not come.
    if (Status s = CheckPrelude(rest.substr(0, kPrelude)); !s.ok()) {
      broken_ = s;
      break;
    }
    const uint32_t total = ReadU32(rest, 0);
    if (rest.size() < total) break;
    StatusOr<EventStreamMessage> m = DecodeEventStreamMessage(rest.substr(0, total));
    if (!m.ok()) {
      broken_ = m.status();
      break;
    }
    out.push_back(std::move(*m));
    at += total;
  }
  buffer_.erase(0, at);
  return broken_;
}

}  // namespace paddock::aws
