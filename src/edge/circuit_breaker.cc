// Traefik's circuitBreaker: vulcand/oxy's cbreaker, as Traefik v3.7 builds it (its fallback answers
// `responseCode` with the status text), with oxy's memmetrics measures of the requests it let through.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "edge/internal/middleware_util.h"
#include "edge/oxy_predicate.h"

namespace paddock::edge::mw {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

// oxy's RollingCounter as RTMetrics makes it: ten buckets of a second; a count is the window's.
class RollingCounter {
 public:
  void Add(Clock::time_point now) {
    Roll(now);
    ++counts_[Slot(now)];
  }
  int64_t Count(Clock::time_point now) {
    Roll(now);
    int64_t n = 0;
    for (int64_t c : counts_) n += c;
    return n;
  }

 private:
  static constexpr int kBuckets = 10;
  static int64_t Second(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  }
  static size_t Slot(Clock::time_point t) { return static_cast<size_t>(Second(t) % kBuckets); }
  // Clears the buckets of the seconds that passed since the last use (they are a window ago).
  void Roll(Clock::time_point now) {
    const int64_t second = Second(now);
    if (last_ >= 0) {
      for (int64_t s = last_ + 1; s <= second && s <= last_ + kBuckets; ++s)
        counts_[static_cast<size_t>(s % kBuckets)] = 0;
    }
    last_ = std::max(last_, second);
  }
  std::array<int64_t, kBuckets> counts_{};
  int64_t last_ = -1;
};

// oxy's RollingHDRHistogram of latencies as RTMetrics makes it: microseconds from 1 to an hour at
// two significant figures (HDR's log-linear buckets: 256 sub-buckets, each power of two above 256
// split in 128), six sub-histograms of ten seconds each. Sparse: only the buckets hit are kept.
class RollingLatency {
 public:
  void Record(Clock::time_point now, nanoseconds latency) {
    Roll(now);
    const int64_t us = std::clamp<int64_t>(latency.count() / 1000, 1, kMaxMicros);
    ++parts_[Slot(now)][Index(us)];
  }
  // HDR's ValueAtQuantile (`quantile` in percent) over the window, in microseconds; 0 when empty.
  int64_t AtQuantile(Clock::time_point now, double quantile) {
    Roll(now);
    std::map<uint32_t, int64_t> merged;
    int64_t total = 0;
    for (const auto& part : parts_)
      for (const auto& [index, n] : part) {
        merged[index] += n;
        total += n;
      }
    if (total == 0) return 0;
    const double q = std::clamp(quantile, 0.0, 100.0);
    const int64_t wanted = std::max<int64_t>(1, static_cast<int64_t>(q / 100 * static_cast<double>(total) + 0.5));
    int64_t seen = 0;
    for (const auto& [index, n] : merged) {
      seen += n;
      if (seen >= wanted) return HighestEquivalent(index);
    }
    return HighestEquivalent(merged.rbegin()->first);
  }
  void Reset() {
    for (auto& part : parts_) part.clear();
  }

 private:
  static constexpr int kParts = 6;
  static constexpr int64_t kPeriodSeconds = 10;
  static constexpr int64_t kMaxMicros = 3'600'000'000;
  static int64_t Period(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count() / kPeriodSeconds;
  }
  static size_t Slot(Clock::time_point t) { return static_cast<size_t>(Period(t) % kParts); }
  static uint32_t Index(int64_t us) {
    if (us < 256) return static_cast<uint32_t>(us);
    const int shift = std::bit_width(static_cast<uint64_t>(us)) - 8;  // us >> shift is in [128, 256)
    return static_cast<uint32_t>(256 + (shift - 1) * 128 + ((us >> shift) - 128));
  }
  static int64_t HighestEquivalent(uint32_t index) {
    if (index < 256) return index;
    const int shift = static_cast<int>((index - 256) / 128) + 1;
    const int64_t sub = 128 + (index - 256) % 128;
    return ((sub + 1) << shift) - 1;
  }
  void Roll(Clock::time_point now) {
    const int64_t period = Period(now);
    if (last_ >= 0) {
      for (int64_t p = last_ + 1; p <= period && p <= last_ + kParts; ++p) parts_[static_cast<size_t>(p % kParts)].clear();
    }
    last_ = std::max(last_, period);
  }
  std::array<std::map<uint32_t, int64_t>, kParts> parts_;
  int64_t last_ = -1;
};

// oxy's cbreaker functions.
enum Function : size_t { kNetworkErrorRatio, kResponseCodeRatio, kLatencyAtQuantileMs };
constexpr OxyFunction kFunctions[] = {
    {"NetworkErrorRatio", OxyType::kFloat, ""},
    {"ResponseCodeRatio", OxyType::kFloat, "iiii"},
    {"LatencyAtQuantileMS", OxyType::kInt, "f"},
};

// oxy's CircuitBreaker: standby (every request passes, measured) until the expression holds at a
// check (at most one a checkPeriod, after a measured response); then tripped (every request gets
// the fallback) for fallbackDuration; then recovering for recoveryDuration, letting a share of the
// requests through that grows linearly (oxy's ratioController, to half of them), tripping again if
// the expression holds; then standby.
class CircuitBreaker final : public Middleware {
 public:
  CircuitBreaker(OxyPredicate condition, nanoseconds check_period, nanoseconds fallback_duration,
                 nanoseconds recovery_duration, int response_code)
      : condition_(std::move(condition)),
        check_period_(check_period),
        fallback_duration_(fallback_duration),
        recovery_duration_(recovery_duration),
        response_code_(response_code) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    if (!Fallback(x.now)) return std::nullopt;
    // Traefik's fallback: WriteHeader(responseCode), then the status text (none for a code Go
    // does not know: then no body, and so no Content-Type).
    std::string_view text = StatusText(response_code_);
    if (text.empty()) return Answer{.status = response_code_, .headers = {}, .body = {}};
    return TextAnswer(response_code_, std::string(text));
  }

  void OnDone(const Exchange& x, int status, Clock::time_point done) const override {
    std::lock_guard lock(mu_);
    codes_[status].Add(done);
    latency_.Record(done, done - x.now);
    // checkAndSet: at most once a checkPeriod, never while tripped.
    if (done < next_check_) return;
    next_check_ = done + check_period_;
    if (state_ == State::kTripped || !Holds(done)) return;
    SetState(State::kTripped);
    until_ = done + fallback_duration_;
    codes_.clear();
    latency_.Reset();
  }

 private:
  enum class State { kStandby, kTripped, kRecovering };

  void SetState(State s) const {  // REQUIRES(mu_)
    state_ = s;
    standby_.store(s == State::kStandby, std::memory_order_release);
  }

  // oxy's activateFallback (its read-locked standby check: here an atomic, no lock in standby).
  bool Fallback(Clock::time_point now) const {
    if (standby_.load(std::memory_order_acquire)) return false;
    std::lock_guard lock(mu_);
    switch (state_) {
      case State::kStandby:
        return false;
      case State::kTripped:
        if (now < until_) return true;
        SetState(State::kRecovering);  // setRecovering
        until_ = now + recovery_duration_;
        recovery_start_ = now;
        allowed_ = denied_ = 0;
        [[fallthrough]];
      case State::kRecovering: {
        if (now > until_) {
          SetState(State::kStandby);
          return false;
        }
        const double target = 0.5 * std::chrono::duration<double>(now - recovery_start_).count() /
                              std::chrono::duration<double>(recovery_duration_).count();
        const double would_be = static_cast<double>(allowed_ + 1) / static_cast<double>(allowed_ + 1 + denied_);
        if (would_be < target) {
          ++allowed_;
          return false;
        }
        ++denied_;
        return true;
      }
    }
    return false;
  }

  bool Holds(Clock::time_point now) const {  // GUARDED_BY(mu_)
    return condition_.Holds([&](size_t function, std::span<const OxyValue> args) -> OxyValue {
      switch (function) {
        case kNetworkErrorRatio: {  // oxy's: 502 and 504 over all (sums of the per-status counters)
          int64_t total = 0, errors = 0;
          for (auto& [code, counter] : codes_) {
            const int64_t n = counter.Count(now);
            total += n;
            if (code == 502 || code == 504) errors += n;
          }
          return total == 0 ? 0.0 : static_cast<double>(errors) / static_cast<double>(total);
        }
        case kResponseCodeRatio: {
          const long long start_a = std::get<long long>(args[0]), end_a = std::get<long long>(args[1]);
          const long long start_b = std::get<long long>(args[2]), end_b = std::get<long long>(args[3]);
          int64_t a = 0, b = 0;
          for (auto& [code, counter] : codes_) {
            const int64_t n = counter.Count(now);
            if (code >= start_a && code < end_a) a += n;
            if (code >= start_b && code < end_b) b += n;
          }
          return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
        }
        default:  // LatencyAtQuantileMS: whole milliseconds, truncated
          return static_cast<long long>(latency_.AtQuantile(now, std::get<double>(args[0])) / 1000);
      }
    });
  }

  OxyPredicate condition_;
  nanoseconds check_period_, fallback_duration_, recovery_duration_;
  int response_code_;

  mutable std::mutex mu_;
  mutable std::atomic<bool> standby_{true};               // state_ == kStandby, read without the lock
  mutable State state_ = State::kStandby;                 // GUARDED_BY(mu_)
  mutable Clock::time_point until_, recovery_start_;      // GUARDED_BY(mu_)
  mutable Clock::time_point next_check_;                  // GUARDED_BY(mu_)
  mutable int64_t allowed_ = 0, denied_ = 0;              // GUARDED_BY(mu_)
  mutable std::map<int, RollingCounter> codes_;           // GUARDED_BY(mu_): the window's counts by status
  mutable RollingLatency latency_;                        // GUARDED_BY(mu_)
};

}  // namespace

StatusOr<std::shared_ptr<const Middleware>> BuildCircuitBreaker(const boost::json::value& config) {
  Options o("circuitBreaker", config,
            {"expression", "checkPeriod", "fallbackDuration", "recoveryDuration", "responseCode"});
  const std::string expression = o.String("expression");
  // Traefik's defaults (SetDefaults), which only a positive value replaces.
  auto positive_or = [](std::optional<nanoseconds> d, nanoseconds otherwise) {
    return d && d->count() > 0 ? *d : otherwise;
  };
  const nanoseconds check = positive_or(o.Duration("checkPeriod"), std::chrono::milliseconds(100));
  const nanoseconds fallback = positive_or(o.Duration("fallbackDuration"), std::chrono::seconds(10));
  const nanoseconds recovery = positive_or(o.Duration("recoveryDuration"), std::chrono::seconds(10));
  const int64_t code = o.Int("responseCode").value_or(503);
  RETURN_IF_ERROR(o.status());
  // Go's WriteHeader panics on a code outside 100..999: refused here instead.
  if (code < 100 || code > 999) return InvalidArgument(fmt::format("circuitBreaker: invalid responseCode {}", code));
  ASSIGN_OR_RETURN(OxyPredicate condition, OxyPredicate::Parse(expression, kFunctions, "circuitBreaker expression"));
  return std::shared_ptr<const Middleware>(
      std::make_shared<CircuitBreaker>(std::move(condition), check, fallback, recovery, static_cast<int>(code)));
}

}  // namespace paddock::edge::mw
