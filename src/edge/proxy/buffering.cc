#include "edge/proxy/buffering.h"

namespace paddock::edge {

std::optional<Answer> BufferingRequestAnswer(const BufferingConfig& config, size_t body_size) {
  if (config.max_request_body_bytes <= 0 || static_cast<int64_t>(body_size) <= config.max_request_body_bytes)
    return std::nullopt;
  // oxy's SizeErrHandler: WriteHeader(413) then Write(StatusText); Go sniffs the type.
  return Answer{.status = 413,
                .headers = {{"Content-Type", "text/plain; charset=utf-8"}},
                .body = "Request Entity Too Large"};
}

std::optional<ResponseBuffering> ResponseBufferingOf(const std::vector<Step>& chain) {
  std::optional<ResponseBuffering> out;
  for (const Step& step : chain) {
    if (!step.buffering) continue;
    if (!out) out.emplace();
    const int64_t max = step.buffering->max_response_body_bytes;
    if (max > 0 && (out->max_bytes == 0 || max < out->max_bytes)) out->max_bytes = max;
    if (out->retry == nullptr) out->retry = step.buffering->retry.get();
  }
  return out;
}

Answer ResponseTooLarge() {
  // oxy's multibuf write error goes to utils.DefaultHandler: 500 and its status text.
  return Answer{.status = 500,
                .headers = {{"Content-Type", "text/plain; charset=utf-8"}},
                .body = "Internal Server Error"};
}

size_t ResponseTooLargeStep(const std::vector<Step>& chain, uint64_t seen_bytes) {
  size_t innermost = 0;
  bool any = false;
  for (size_t i = chain.size(); i-- > 0;) {
    if (!chain[i].buffering) continue;
    if (!any) innermost = i;
    any = true;
    const int64_t max = chain[i].buffering->max_response_body_bytes;
    if (max > 0 && seen_bytes > static_cast<uint64_t>(max)) return i;
  }
  return innermost;  // over the edge's own bound (ProxyOptions::max_buffered_response_bytes)
}

}  // namespace paddock::edge
