// Traefik's circuitBreaker (oxy's cbreaker) on a clock the test drives: requests go through
// OnRequest at Exchange::now, and are over (OnDone) when the test says, with the status it says.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <boost/json/parse.hpp>

#include "edge/middleware.h"

namespace paddock::edge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

const Clock::time_point kT0{seconds(1000)};

class Breaker {
 public:
  explicit Breaker(std::string_view config) {
    auto built = BuildMiddleware(boost::json::parse(config).as_object());
    EXPECT_TRUE(built.ok()) << config << ": " << built.status().message();
    if (built.ok()) m_ = built->middleware;
  }
  // A request at `at`: nullopt when it passed (and then it is over `latency` later with `status`),
  // else the fallback's answer.
  std::optional<Answer> Request(Clock::time_point at, int status = 200, milliseconds latency = milliseconds(1)) {
    Exchange x;
    x.now = at;
    std::optional<Answer> answer = m_->OnRequest(x);
    if (!answer) m_->OnDone(x, status, at + latency);
    return answer;
  }
  bool Passes(Clock::time_point at, int status = 200, milliseconds latency = milliseconds(1)) {
    return !Request(at, status, latency).has_value();
  }

 private:
  std::shared_ptr<const Middleware> m_;
};

TEST(CircuitBreakerTest, NetworkErrorsTripItThenItRecoversGraduallyAsOxys) {
  Breaker b(R"({"circuitBreaker":{"expression":"NetworkErrorRatio() > 0.5"}})");
  EXPECT_TRUE(b.Passes(kT0, 200));
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(200), 502));  // 1 of 2: not over half
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(400), 504));  // 2 of 3, checked: tripped
  // Tripped: Traefik's fallback, 503 with its status text, for fallbackDuration (10 s).
  std::optional<Answer> fallback = b.Request(kT0 + seconds(5));
  ASSERT_TRUE(fallback.has_value());
  EXPECT_EQ(fallback->status, 503);
  EXPECT_EQ(fallback->body, "Service Unavailable");
  EXPECT_FALSE(b.Passes(kT0 + milliseconds(10'300)));
  // Recovering for recoveryDuration (10 s): a request passes while the share let through stays
  // below 0.5 x the time into it / 10 s. 2.5 s in, the target is 1/8: a request passes when
  // (passed + 1) / (passed + 1 + denied) < 1/8.
  const Clock::time_point recovering = kT0 + milliseconds(10'401);  // the first request after the 10 s
  EXPECT_FALSE(b.Passes(recovering));                                // target 0: denied
  int passed = 0;
  for (int i = 0; i < 15; ++i) passed += b.Passes(recovering + milliseconds(2'500)) ? 1 : 0;
  EXPECT_EQ(passed, 1);  // the one after 8 denials (1/9); a second would need 15 denials (2/16 is not below)
  // After recoveryDuration: standby, every request passes (the metrics were reset when it tripped).
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(b.Passes(recovering + milliseconds(10'100 + i), 200));
}

TEST(CircuitBreakerTest, TheExpressionIsCheckedAtMostOnceACheckPeriod) {
  Breaker b(R"({"circuitBreaker":{"expression":"ResponseCodeRatio(500, 600, 0, 600) > 0.25","checkPeriod":"1s",
               "fallbackDuration":"3s","responseCode":418}})");
  EXPECT_TRUE(b.Passes(kT0, 200));  // checked: 0 of 1; the next check is due at 1 s
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(100), 500));
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(200), 503));
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(300), 500));  // 3 of 4 are 5xx, not yet checked
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(1'100), 200));  // checked: 3 of 5 > 0.25: tripped
  std::optional<Answer> fallback = b.Request(kT0 + milliseconds(1'200));
  ASSERT_TRUE(fallback.has_value());
  EXPECT_EQ(fallback->status, 418);
  EXPECT_EQ(fallback->body, "I'm a teapot");
}

TEST(CircuitBreakerTest, LatencyAtAQuantileAndAWindowOfTenSeconds) {
  Breaker slow(R"({"circuitBreaker":{"expression":"LatencyAtQuantileMS(50.0) > 100"}})");
  EXPECT_TRUE(slow.Passes(kT0, 200, milliseconds(20)));
  EXPECT_TRUE(slow.Passes(kT0 + milliseconds(200), 200, milliseconds(90)));  // median 20 ms
  EXPECT_TRUE(slow.Passes(kT0 + milliseconds(400), 200, milliseconds(150)));
  EXPECT_TRUE(slow.Passes(kT0 + milliseconds(600), 200, milliseconds(150)));  // HDR's 50%: the 2nd of 4, 90 ms
  EXPECT_TRUE(slow.Passes(kT0 + milliseconds(800), 200, milliseconds(150)));  // the 3rd of 5: 150 ms, tripped
  EXPECT_FALSE(slow.Passes(kT0 + milliseconds(1'000)));

  // Network errors older than the counters' ten seconds no longer count.
  Breaker errors(R"({"circuitBreaker":{"expression":"NetworkErrorRatio() >= 0.5"}})");
  EXPECT_TRUE(errors.Passes(kT0, 200));
  EXPECT_TRUE(errors.Passes(kT0 + milliseconds(200), 200));
  EXPECT_TRUE(errors.Passes(kT0 + milliseconds(400), 200));  // 0 of 3
  EXPECT_TRUE(errors.Passes(kT0 + seconds(12), 502));         // the three are gone: 1 of 1
  EXPECT_FALSE(errors.Passes(kT0 + seconds(13)));
}

TEST(CircuitBreakerTest, OrAndAndCombineConditions) {
  Breaker b(R"({"circuitBreaker":{"expression":
      "NetworkErrorRatio() > 0.9 || ResponseCodeRatio(500, 600, 0, 600) > 0.9 && LatencyAtQuantileMS(99.0) > 50"}})");
  EXPECT_TRUE(b.Passes(kT0, 500, milliseconds(10)));  // all 5xx, but fast: holds neither side
  EXPECT_TRUE(b.Passes(kT0 + milliseconds(200), 500, milliseconds(80)));  // p99 80 ms: tripped
  EXPECT_FALSE(b.Passes(kT0 + milliseconds(300)));
}

}  // namespace
}  // namespace paddock::edge
