#include "store/key.h"

namespace paddock::store {

Key& Key::StrPrefix(std::string_view s) {
  for (char c : s) {
    buf_.push_back(c);
    if (c == '\0') buf_.push_back('\xFF');
  }
  return *this;
}

Key& Key::Str(std::string_view s) {
  StrPrefix(s);
  buf_.push_back('\0');
  buf_.push_back('\x01');
  return *this;
}

Key& Key::U64(uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) buf_.push_back(static_cast<char>((v >> shift) & 0xFF));
  return *this;
}

StatusOr<std::string> KeyReader::Str() {
  std::string out;
  for (size_t i = 0; i < rest_.size(); ++i) {
    char c = rest_[i];
    if (c != '\0') {
      out.push_back(c);
      continue;
    }
    if (i + 1 >= rest_.size()) break;
    if (rest_[i + 1] == '\xFF') {
      out.push_back('\0');
      ++i;
    } else if (rest_[i + 1] == '\x01') {
      rest_.remove_prefix(i + 2);
      return out;
    } else {
      break;
    }
  }
  return DataLoss("malformed string in store key");
}

StatusOr<uint64_t> KeyReader::U64() {
  if (rest_.size() < 8) return DataLoss("malformed integer in store key");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(rest_[i]);
  rest_.remove_prefix(8);
  return v;
}

Range PrefixRange(std::string_view prefix) {
  Range r{std::string(prefix), std::string(prefix)};
  // The end is the prefix with its last non-0xFF byte incremented; all-0xFF means unbounded.
  while (!r.end.empty() && static_cast<unsigned char>(r.end.back()) == 0xFF) r.end.pop_back();
  if (!r.end.empty()) r.end.back() = static_cast<char>(static_cast<unsigned char>(r.end.back()) + 1);
  return r;
}

std::string KeySuccessor(std::string_view key) {
  std::string s(key);
  s.push_back('\0');
  return s;
}

}  // namespace paddock::store
