// Order-preserving tuple keys: a key built from (a, b, c) sorts like the tuple (a, b, c), and the
// key of a tuple prefix is a byte prefix of the keys of all tuples that extend it.
//
//   std::string k = Key().Str(account).Str(region).Str(family).U64(revision).Done();
//   Range r = PrefixRange(Key().Str(account).Str(region).Str(family).Done());
//
// Strings are written with 0x00 escaped as 0x00 0xFF and terminated by 0x00 0x01; integers as
// 8 big-endian bytes. StrPrefix() writes a string without its terminator, so a range over it
// matches every string that starts with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace paddock::store {

class Key {
 public:
  Key& Str(std::string_view s);
  Key& StrPrefix(std::string_view s);
  Key& U64(uint64_t v);
  std::string Done() const { return buf_; }

 private:
  std::string buf_;
};

// Reads a key built by Key back into its parts, in order.
class KeyReader {
 public:
  explicit KeyReader(std::string_view key) : rest_(key) {}
  StatusOr<std::string> Str();
  StatusOr<uint64_t> U64();
  bool AtEnd() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// Every key that starts with `prefix`.
Range PrefixRange(std::string_view prefix);
// The smallest key greater than `key` (key + '\0').
std::string KeySuccessor(std::string_view key);

}  // namespace paddock::store
