// Feeds arbitrary bytes to EventStreamDecoder, whole and split at a point the first byte picks:
// it must never crash or read out of bounds, and both ways must agree (the same messages, the same
// verdict).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "aws/eventstream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paddock::aws;
  if (size == 0) return 0;
  const size_t split = data[0] % size;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  EventStreamDecoder whole;
  std::vector<EventStreamMessage> a;
  const bool whole_ok = whole.Feed(bytes, a).ok();

  EventStreamDecoder pieces;
  std::vector<EventStreamMessage> b;
  bool pieces_ok = pieces.Feed(bytes.substr(0, std::min(split, bytes.size())), b).ok();
  if (pieces_ok) pieces_ok = pieces.Feed(bytes.substr(std::min(split, bytes.size())), b).ok();

  if (whole_ok != pieces_ok || a.size() != b.size()) std::abort();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].headers != b[i].headers || a[i].payload != b[i].payload) std::abort();
  }
  return 0;
}
