// What store_crash_writer writes, shared with crash_test which checks it after a kill -9.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "store/key.h"

namespace paddock::store::crash {

inline constexpr std::string_view kTable = "meta";
inline constexpr int kThreads = 8;

inline std::string RecordKey(int thread, uint64_t n) {
  return Key().Str("crash").U64(static_cast<uint64_t>(thread)).U64(n).Done();
}

// ~300 bytes that differ for every (thread, n).
inline std::string RecordValue(int thread, uint64_t n) {
  std::string v;
  for (int i = 0; i < 12; ++i) v += fmt::format("[t{} n{} part{}]", thread, n, i);
  return v;
}

}  // namespace paddock::store::crash
