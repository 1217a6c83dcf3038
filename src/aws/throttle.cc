#include "aws/throttle.h"

#include <algorithm>
#include <chrono>

namespace paddock::aws {

bool Throttler::TryAcquire(const Scope& scope, std::string_view group, BucketSpec spec) {
  const TimePoint now = clock_.Now();
  std::lock_guard lock(mu_);
  auto key = std::forward_as_tuple(scope.account.str(), scope.region.str(), group);
  auto it = buckets_.find(key);
  if (it == buckets_.end() && buckets_.size() >= kMaxBuckets) {
    // Callers can name any account (emulator mode) and region: forget buckets that are full,
    // which is exactly the state a new bucket starts in. Every AWS bucket refills from empty in
    // at most 20 s, so one idle for a minute is full.
    std::erase_if(buckets_, [&](const auto& entry) {
      const Bucket& b = entry.second;
      return now - b.last >= std::chrono::seconds(60) || b.tokens >= b.burst;
    });
  }
  if (it == buckets_.end()) {
    it = buckets_
             .emplace(std::tuple<std::string, std::string, std::string>(scope.account.str(), scope.region.str(),
                                                                       std::string(group)),
                      Bucket{spec.burst, now, spec.burst})
             .first;
  } else if (now > it->second.last) {
    double elapsed = std::chrono::duration<double>(now - it->second.last).count();
    it->second.tokens = std::min(spec.burst, it->second.tokens + elapsed * spec.refill_per_second);
    it->second.last = now;
  }
  // A tiny epsilon absorbs floating-point drift so that exactly `refill` tokens per second pass.
  if (it->second.tokens < 1.0 - 1e-9) return false;
  it->second.tokens -= 1.0;
  return true;
}

}  // namespace paddock::aws
