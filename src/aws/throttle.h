// Token-bucket rate limits per (account, region, action group), as AWS applies them.
//
//   Throttler throttler(clock);
//   if (!throttler.TryAcquire(scope, "ecs:cluster-modify", {20, 1})) return ThrottlingException;
//
// A bucket starts full (`burst` tokens) and refills continuously at `refill_per_second` up to
// `burst`; each call takes one token.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "common/clock.h"
#include "common/ids.h"

namespace paddock::aws {

struct BucketSpec {
  double burst = 0;
  double refill_per_second = 0;
};

class Throttler {
 public:
  explicit Throttler(const Clock& clock) : clock_(clock) {}

  // Takes a token from the (scope, group) bucket. Returns false (and takes nothing) when empty.
  bool TryAcquire(const Scope& scope, std::string_view group, BucketSpec spec);

 private:
  struct Bucket {
    double tokens;
    TimePoint last;
    double burst;
  };
  // Above this many buckets, idle or full ones are forgotten (they would start full anyway).
  static constexpr size_t kMaxBuckets = 100'000;
  const Clock& clock_;
  std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, Bucket, std::less<>> buckets_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::aws
