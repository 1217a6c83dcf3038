// libFuzzer: edge::RenderGoTemplate on hostile text must render or fail cleanly, within its bounds
// (small ones here, so that a loop the fuzzer writes ends quickly).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "edge/go_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const paddock::edge::TemplateLimits limits{.max_output_bytes = 1 << 16, .max_steps = 20000};
  (void)paddock::edge::RenderGoTemplate(text, "fuzz.yml", limits);
  return 0;
}
