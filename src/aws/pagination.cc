#include "aws/pagination.h"

#include "aws/internal/crypto.h"
#include "common/encoding.h"

namespace paddock::aws {
namespace {

// Version byte, so the format can change without old tokens being misread.
constexpr char kVersion = 1;
constexpr size_t kTagSize = 16;

std::string Tag(std::string_view key, std::string_view context, std::string_view position) {
  std::string msg;
  msg.reserve(context.size() + 2 + position.size());
  msg.push_back(kVersion);
  msg.append(context);
  msg.push_back('\0');
  msg.append(position);
  internal::Sha256Digest mac = internal::HmacSha256(key, msg);
  return std::string(reinterpret_cast<const char*>(mac.data()), kTagSize);
}

Status BadToken() {
  return InvalidArgument(
      "The specified nextToken is not valid: use the nextToken from the previous response of the same "
      "request, unchanged.");
}

}  // namespace

std::string TokenCodec::Encode(std::string_view context, std::string_view position) const {
  std::string raw;
  raw.reserve(1 + position.size() + kTagSize);
  raw.push_back(kVersion);
  raw.append(position);
  raw += Tag(key_, context, position);
  return Base64UrlEncode(raw);
}

StatusOr<std::string> TokenCodec::Decode(std::string_view context, std::string_view token) const {
  if (token.empty() || token.size() > 4096) return BadToken();
  StatusOr<std::string> raw = Base64UrlDecode(token);
  if (!raw.ok() || raw->size() < 1 + kTagSize || (*raw)[0] != kVersion) return BadToken();
  // Base64 has several spellings of the same bytes (unused low bits); accept only ours.
  if (Base64UrlEncode(*raw) != token) return BadToken();
  std::string_view body(*raw);
  std::string_view position = body.substr(1, body.size() - 1 - kTagSize);
  std::string_view tag = body.substr(body.size() - kTagSize);
  if (!internal::ConstantTimeEquals(tag, Tag(key_, context, position))) return BadToken();
  return std::string(position);
}

}  // namespace paddock::aws
