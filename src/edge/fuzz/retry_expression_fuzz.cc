// libFuzzer: edge::RetryExpression::Parse on hostile text must fail cleanly or give a predicate
// that answers any attempt without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edge/retry_expression.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = paddock::edge::RetryExpression::Parse(text);
  if (e.ok()) {
    for (int code : {0, 200, 502, 504})
      for (int attempt : {1, 2, 11}) e->Matches({.method = "GET", .attempt = attempt, .response_code = code});
  }
  return 0;
}
