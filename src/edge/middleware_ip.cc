// Traefik's ipAllowList, rateLimit and inFlightReq: each picks the client's address with an ip
// strategy (rateLimit and inFlightReq may count by a header or the host instead).
#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "edge/internal/middleware_util.h"

namespace paddock::edge::mw {
namespace {

class IpAllowList final : public Middleware {
 public:
  IpAllowList(IpChecker checker, IpStrategy strategy, int reject_status)
      : checker_(std::move(checker)), strategy_(std::move(strategy)), reject_status_(reject_status) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    const std::string ip = strategy_.ClientIp(x);
    if (checker_.Contains(HostWithoutPort(ip))) return std::nullopt;
    return TextAnswer(reject_status_, std::string(StatusText(reject_status_)));
  }

 private:
  IpChecker checker_;
  IpStrategy strategy_;
  int reject_status_;
};

// What a rate limit or an in-flight limit counts requests by (Traefik's GetSourceExtractor).
class SourceCriterion {
 public:
  enum class Kind { kIp, kHeader, kHost };

  // `config` is a sourceCriterion object; without one, or with none of its three set, requests
  // are counted by `otherwise` (rateLimit's client address, inFlightReq's host). An error is
  // Traefik's, without the caller's prefix.
  static StatusOr<SourceCriterion> Read(Options& parent, Kind otherwise) {
    std::optional<Options> config = parent.Object("sourceCriterion", {"ipStrategy", "requestHeaderName", "requestHost"});
    SourceCriterion s;
    s.kind_ = otherwise;
    if (!config) return s;
    std::optional<Options> ip = config->Object("ipStrategy", {"depth", "excludedIPs", "ipv6Subnet"});
    const std::string header = config->String("requestHeaderName");
    const bool host = config->Bool("requestHost");
    RETURN_IF_ERROR(config->status());
    if (ip && !header.empty()) return InvalidArgument("iPStrategy and RequestHeaderName are mutually exclusive");
    if (ip && host) return InvalidArgument("iPStrategy and RequestHost are mutually exclusive");
    if (!header.empty() && host) return InvalidArgument("requestHost and RequestHeaderName are mutually exclusive");
    if (!header.empty()) {
      s.kind_ = Kind::kHeader;
      s.header_ = header;
    } else if (host) {
      s.kind_ = Kind::kHost;
    } else if (ip) {
      StatusOr<IpStrategy> strategy = IpStrategy::Read(std::move(ip));
      if (!strategy.ok()) return strategy.status();
      s.kind_ = Kind::kIp;
      s.ip_ = *std::move(strategy);
    }
    return s;
  }

  std::string Source(const Exchange& x) const {
    switch (kind_) {
      case Kind::kHeader: return std::string(GetHeader(x.headers, header_));
      case Kind::kHost: return x.host;
      case Kind::kIp: break;
    }
    return ip_.ClientIp(x);
  }

 private:
  Kind kind_ = Kind::kIp;
  std::string header_;
  IpStrategy ip_;
};

// Traefik's in-memory limiter: a token bucket per source (golang.org/x/time/rate), forgotten
// after `ttl` without a request, at most kMaxSources of them (the least recently used goes first).
// A request whose token is due within max_delay waits for it (Exchange::delay); a later one is
// answered 429.
class RateLimit final : public Middleware {
 public:
  static constexpr size_t kMaxSources = 65536;  // Traefik's maxSources

  RateLimit(double rate, int64_t burst, std::chrono::nanoseconds max_delay, std::chrono::seconds ttl,
            SourceCriterion source)
      : rate_(rate), burst_(static_cast<double>(burst)), max_delay_(max_delay), ttl_(ttl), source_(std::move(source)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    if (std::isinf(rate_)) return std::nullopt;  // average 0: no limit
    const auto [allowed, wait] = Reserve(source_.Source(x), x.now);
    if (allowed) {
      x.delay += wait;
      return std::nullopt;
    }
    const double seconds = std::chrono::duration<double>(wait).count();
    Answer a = TextAnswer(429, std::string(StatusText(429)));
    a.headers.insert(a.headers.begin(), {{"Retry-After", fmt::format("{:.0f}", std::ceil(seconds))},
                                         {"X-Retry-In", GoDurationString(wait)}});
    return a;
  }

 private:
  using Clock = std::chrono::steady_clock;

  struct Bucket {
    std::string source;
    double tokens = 0;
    Clock::time_point last;  // when `tokens` was computed
    Clock::time_point seen;  // the last request, for the ttl
  };

  struct Reservation {
    bool allowed = false;
    std::chrono::nanoseconds wait{0};
  };

  // Takes a token from `source`'s bucket, or — when it would be due later than max_delay_ —
  // leaves the bucket as it is (x/time/rate's Reserve then Cancel) and reports the wait.
  Reservation Reserve(const std::string& source, Clock::time_point now) const {
    std::lock_guard lock(mutex_);
    auto it = buckets_.find(source);
    if (it != buckets_.end() && now - it->second->seen >= ttl_) {
      lru_.erase(it->second);
      buckets_.erase(it);
      it = buckets_.end();
    }
    if (it == buckets_.end()) {
      if (buckets_.size() >= kMaxSources) {
        buckets_.erase(lru_.back().source);
        lru_.pop_back();
      }
      lru_.push_front(Bucket{source, burst_, now, now});
      it = buckets_.emplace(source, lru_.begin()).first;
    } else {
      lru_.splice(lru_.begin(), lru_, it->second);
    }
    Bucket& b = *it->second;
    b.seen = now;

    const Clock::time_point last = std::min(b.last, now);
    const double elapsed = std::chrono::duration<double>(now - last).count();
    const double available = std::min(burst_, b.tokens + elapsed * rate_);
    const double left = available - 1;
    Reservation r;
    if (left < 0) {
      r.wait = std::chrono::nanoseconds(static_cast<int64_t>(-left / rate_ * 1e9));
    }
    b.last = now;
    r.allowed = r.wait <= max_delay_;
    b.tokens = r.allowed ? left : available;
    return r;
  }

  double rate_;  // tokens per second; infinity: no limit
  double burst_;
  std::chrono::nanoseconds max_delay_;
  std::chrono::seconds ttl_;
  SourceCriterion source_;

  mutable std::mutex mutex_;
  mutable std::list<Bucket> lru_;  // GUARDED_BY(mutex_); most recently used first
  mutable std::unordered_map<std::string, std::list<Bucket>::iterator> buckets_;  // GUARDED_BY(mutex_)
};

// oxy's connlimit as Traefik's inFlightReq builds it: at most `amount` requests of one source under
// way at once — from the middleware until the response's last byte was relayed (Exchange::holds)
// — the next one answered 429 "max connections reached: <amount>".
class InFlightReq final : public Middleware {
 public:
  InFlightReq(int64_t amount, SourceCriterion source)
      : amount_(amount), source_(std::move(source)), counts_(std::make_shared<Counts>()) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    std::string source = source_.Source(x);
    {
      std::lock_guard lock(counts_->mutex);
      int64_t& n = counts_->in_flight[source];
      if (n >= amount_) {
        if (n == 0) counts_->in_flight.erase(source);
        return TextAnswer(429, fmt::format("max connections reached: {}", amount_));
      }
      ++n;
    }
    // Released when the proxy is done with the request; the counts outlive a reload's new table.
    x.holds.emplace_back(counts_.get(), [counts = counts_, source = std::move(source)](const void*) {
      std::lock_guard lock(counts->mutex);
      auto it = counts->in_flight.find(source);
      if (it != counts->in_flight.end() && --it->second <= 0) counts->in_flight.erase(it);
    });
    return std::nullopt;
  }

 private:
  struct Counts {
    std::mutex mutex;
    std::unordered_map<std::string, int64_t> in_flight;  // GUARDED_BY(mutex); sources with requests only
  };
  int64_t amount_;
  SourceCriterion source_;
  std::shared_ptr<Counts> counts_;
};

}  // namespace

StatusOr<std::shared_ptr<const Middleware>> BuildInFlightReq(const boost::json::value& config) {
  Options o("inFlightReq", config, {"amount", "sourceCriterion"});
  const int64_t amount = o.Int("amount").value_or(0);
  StatusOr<SourceCriterion> source = SourceCriterion::Read(o, SourceCriterion::Kind::kHost);
  RETURN_IF_ERROR(o.status());
  if (!source.ok()) return InvalidArgument("error creating requests limiter: " + source.status().message());
  return std::shared_ptr<const Middleware>(std::make_shared<InFlightReq>(amount, *std::move(source)));
}

StatusOr<std::shared_ptr<const Middleware>> BuildIpAllowList(const boost::json::value& config) {
  Options o("ipAllowList", config, {"sourceRange", "ipStrategy", "rejectStatusCode"});
  const std::vector<std::string> ranges = o.Strings("sourceRange");
  std::optional<Options> ip = o.Object("ipStrategy", {"depth", "excludedIPs", "ipv6Subnet"});
  const int64_t reject = o.Int("rejectStatusCode").value_or(0);
  RETURN_IF_ERROR(o.status());
  if (ranges.empty()) return InvalidArgument("ipAllowList: sourceRange is empty, IPAllowLister not created");
  int status = 403;
  if (reject != 0) {
    if (reject < 0 || reject > 999 || StatusText(static_cast<int>(reject)).empty()) {
      return InvalidArgument(fmt::format("ipAllowList: invalid HTTP status code {}", reject));
    }
    status = static_cast<int>(reject);
  }
  StatusOr<IpChecker> checker = IpChecker::Make(ranges);
  if (!checker.ok()) {
    return InvalidArgument(fmt::format("ipAllowList: cannot parse CIDRs [{}]: {}", fmt::join(ranges, " "),
                                       checker.status().message()));
  }
  StatusOr<IpStrategy> strategy = IpStrategy::Read(std::move(ip));
  if (!strategy.ok()) return InvalidArgument("ipAllowList: " + strategy.status().message());
  return std::shared_ptr<const Middleware>(
      std::make_shared<IpAllowList>(*std::move(checker), *std::move(strategy), status));
}

StatusOr<std::shared_ptr<const Middleware>> BuildRateLimit(const boost::json::value& config) {
  Options o("rateLimit", config, {"average", "period", "burst", "sourceCriterion", "redis"});
  const int64_t average = o.Int("average").value_or(0);
  std::chrono::nanoseconds period = o.Duration("period").value_or(std::chrono::seconds(1));
  const int64_t burst = std::max<int64_t>(o.Int("burst").value_or(1), 1);
  StatusOr<SourceCriterion> source = SourceCriterion::Read(o, SourceCriterion::Kind::kIp);
  const bool redis = o.Has("redis");
  RETURN_IF_ERROR(o.status());
  if (redis) return InvalidArgument("rateLimit: redis is not supported");
  if (period < std::chrono::nanoseconds(0)) {
    return InvalidArgument(
        fmt::format("rateLimit: negative value not valid for period: {}", GoDurationString(period)));
  }
  if (period == std::chrono::nanoseconds(0)) period = std::chrono::seconds(1);
  if (!source.ok()) return InvalidArgument("rateLimit: getting source extractor: " + source.status().message());

  double rate = std::numeric_limits<double>::infinity();
  std::chrono::nanoseconds max_delay{0};
  if (average > 0) {
    rate = static_cast<double>(average) * 1e9 / static_cast<double>(period.count());
    if (rate < 1) {
      max_delay = std::chrono::milliseconds(500);
    } else {
      max_delay = std::chrono::nanoseconds(1000000000 / (static_cast<int64_t>(rate) * 2));
    }
  }
  // Traefik forgets a bucket after about the time it takes to refill one token, 1 s at least.
  int64_t ttl = 1;
  if (rate >= 1) {
    ++ttl;
  } else if (rate > 0) {
    ttl += static_cast<int64_t>(1 / rate);
  }
  return std::shared_ptr<const Middleware>(
      std::make_shared<RateLimit>(rate, burst, max_delay, std::chrono::seconds(ttl), *std::move(source)));
}

}  // namespace paddock::edge::mw
