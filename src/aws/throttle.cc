#include "aws/throttle.h"

#include <algorithm>
#include <chrono>

namespace paddock::aws {

BucketSpec Throttler::ShareOf(BucketSpec spec, int servers) {
  const double n = std::max(1, servers);
  return BucketSpec{std::max(1.0, spec.burst / n), spec.refill_per_second / n};
}

void Throttler::Refill(Bucket& b, TimePoint now) {
  if (now <= b.last) return;
  double elapsed = std::chrono::duration<double>(now - b.last).count();
  b.tokens = std::min(b.burst, b.tokens + elapsed * b.refill_per_second);
  b.last = now;
}

void Throttler::SetServers(int servers) {
  const TimePoint now = clock_.Now();
  std::lock_guard lock(mu_);
  if (std::max(1, servers) == servers_) return;
  for (auto& [key, bucket] : buckets_) Refill(bucket, now);
  servers_ = std::max(1, servers);
}

int Throttler::servers() const {
  std::lock_guard lock(mu_);
  return servers_;
}

bool Throttler::TryAcquire(const Scope& scope, std::string_view group, BucketSpec whole) {
  const TimePoint now = clock_.Now();
  std::lock_guard lock(mu_);
  const BucketSpec spec = ShareOf(whole, servers_);
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
                      Bucket{spec.burst, now, spec.burst, spec.refill_per_second})
             .first;
  } else {
    Bucket& b = it->second;
    Refill(b, now);
    // The share may have changed since the last call (SetServers): hold and refill at the new one.
    b.burst = spec.burst;
    b.refill_per_second = spec.refill_per_second;
    b.tokens = std::min(b.burst, b.tokens);
  }
  // A tiny epsilon absorbs floating-point drift so that exactly `refill` tokens per second pass.
  if (it->second.tokens < 1.0 - 1e-9) return false;
  it->second.tokens -= 1.0;
  return true;
}

}  // namespace paddock::aws
