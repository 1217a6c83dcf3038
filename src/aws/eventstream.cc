#include "aws/eventstream.h"

#include <array>

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

}  // namespace paddock::aws
