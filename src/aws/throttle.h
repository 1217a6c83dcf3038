// Token-bucket rate limits per (account, region, action group), as AWS applies them.
//
//   Throttler throttler(clock);
//   if (!throttler.TryAcquire(scope, "ecs:cluster-modify", {20, 1})) return ThrottlingException;
//
// A bucket starts full (`burst` tokens) and refills continuously at `refill_per_second` up to
// `burst`; each call takes one token.
//
// Servers that share one store share each account's budget (docs/scaling.md, "Several servers"):
// with SetServers(n) every bucket of this server holds burst / n tokens and refills at
// refill_per_second / n, so n servers together admit AWS's rate and burst. A bucket never holds
// less than one token (a burst smaller than n would otherwise admit nothing anywhere), so a
// bucket whose burst is below n admits up to n calls at once across the servers, not `burst`.
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
  // `spec` is the account's whole budget (AWS's numbers); this server's share of it is taken.
  bool TryAcquire(const Scope& scope, std::string_view group, BucketSpec spec);

  // How many servers share every account's budget (at least 1; 1 at construction). Every bucket
  // is first refilled up to now at the old share; from then on it refills at the new one, and a
  // smaller share clamps what it holds to its new burst at its next call. A change never mints
  // tokens: a larger share (a server left) fills the larger burst at the larger rate, from now.
  void SetServers(int servers);
  int servers() const;

  // This server's share of `spec` with `servers` servers: what one bucket holds and refills.
  static BucketSpec ShareOf(BucketSpec spec, int servers);

 private:
  struct Bucket {
    double tokens;
    TimePoint last;
    double burst;  // the share's, at the last call
    double refill_per_second;  // the same
  };
  // Brings `b` up to `now` at the rate it had. REQUIRES: mu_ held.
  static void Refill(Bucket& b, TimePoint now);
  // Above this many buckets, idle or full ones are forgotten (they would start full anyway).
  static constexpr size_t kMaxBuckets = 100'000;
  const Clock& clock_;
  mutable std::mutex mu_;
  int servers_ = 1;  // GUARDED_BY(mu_)
  std::map<std::tuple<std::string, std::string, std::string>, Bucket, std::less<>> buckets_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::aws
