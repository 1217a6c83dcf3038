// edge/proxy/buffering: Traefik v3's buffering middleware (pkg/middlewares/buffering, over
// vulcand/oxy's buffer) as the proxy carries it out — the pure decisions; the proxy (proxy.cc)
// reads the response whole when a route's chain holds a buffering step.
//
//   - Request: a body over maxRequestBodyBytes (> 0) is answered 413 "Request Entity Too Large"
//     (text/plain) at the step, and never forwarded. The edge reads every request whole anyway
//     (ProxyOptions::max_request_body_bytes, 16 MiB), so memRequestBodyBytes has no effect: bodies
//     are held in memory, never spilled to disk.
//   - Response: read whole before anything is sent (no streaming) and sent with a Content-Length;
//     one over maxResponseBodyBytes (> 0) is answered 500 "Internal Server Error" (text/plain)
//     instead — oxy's answer, not the 413 one might expect — without the backend's headers.
//     memResponseBodyBytes likewise has no effect: a response is held in memory, never spilled
//     to disk, so the edge bounds it itself (ProxyOptions::max_buffered_response_bytes, 16 MiB,
//     and the body budget): past that, the same 500, whatever maxResponseBodyBytes says.
//   - retryExpression (edge/retry_expression.h, parsed when the middleware is built): after an
//     attempt whose answer the step holds — the response read whole, or the 502/504 of a server
//     that cannot be reached or does not answer — the proxy sends the request again to a fresh
//     pick while the predicate holds, up to oxy's 10th attempt (proxy.cc, Forward).
//
//   if (auto a = edge::BufferingRequestAnswer(config, body.size())) answer *a;
//   if (auto r = edge::ResponseBufferingOf(route.chain)) read the body whole, up to r->max_bytes;
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "edge/middleware.h"
#include "edge/proxy/table.h"

namespace paddock::edge {

// 413 when config.max_request_body_bytes > 0 and body_size exceeds it; nullopt otherwise.
std::optional<Answer> BufferingRequestAnswer(const BufferingConfig& config, size_t body_size);

struct ResponseBuffering {
  int64_t max_bytes = 0;  // the smallest positive maxResponseBodyBytes of the chain; 0: no limit
  const RetryExpression* retry = nullptr;  // the first step's retryExpression that has one; null: none
};
// Whether the chain buffers its responses (and how); nullopt when it holds no buffering step.
std::optional<ResponseBuffering> ResponseBufferingOf(const std::vector<Step>& chain);

// The 500 a response over the limit gets, and the chain index of the step that answers it: the
// innermost buffering step whose limit `seen_bytes` exceeds (its answer passes through the
// OnResponse of the middlewares before it, as Traefik's writers wrap it), or, over the edge's own
// bound only, the innermost buffering step.
// REQUIRES: the chain holds a buffering step.
Answer ResponseTooLarge();
size_t ResponseTooLargeStep(const std::vector<Step>& chain, uint64_t seen_bytes);

}  // namespace paddock::edge
