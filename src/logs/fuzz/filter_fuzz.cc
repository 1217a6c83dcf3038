// Arbitrary bytes as a filter pattern (up to the first newline) and an event message (the rest):
// every rejection is an InvalidParameter with a message, and whatever compiles is matched against
// the message and a few JSON and plain ones, so the compiler, the KMP search, the selector walk and
// the JSON evaluation all run under ASan/UBSan. A pattern-and-message pair that takes long is a
// failure of the linear-time bound (libFuzzer's -timeout).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "logs/filter.h"

using paddock::logs::Filter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string_view pattern = input.substr(0, newline);
  const std::string_view message = newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  auto f = Filter::Compile(pattern);
  if (!f.ok()) {
    if (!IsError(f.status(), paddock::logs::Error::kInvalidParameter) || f.status().message().empty()) std::abort();
    return 0;
  }
  if (f->pattern() != pattern) std::abort();
  (void)f->Matches(message);
  (void)f->Matches("");
  (void)f->Matches(R"({"a": {"b": [1, "x", null, true, {"c": 2.5}]}, "eventType": "UpdateTrail"})");
  (void)f->Matches("[ERROR] A fatal exception has occurred");
  (void)f->Matches(R"(127.0.0.1 - frank [10/Oct/2000:13:25:15 -0700] "GET /index.html HTTP/1.0" 404 1534)");
  return 0;
}
