// Time enters Paddock only through Clock, so tests drive it with FakeClock and never sleep.
//
//   void Refill(Clock& clock) { auto now = clock.Now(); ... }
#pragma once

#include <chrono>
#include <cstdint>

namespace paddock {

using TimePoint = std::chrono::system_clock::time_point;
using Duration = std::chrono::system_clock::duration;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (what AWS timestamps and SigV4 dates are compared against).
  virtual TimePoint Now() const = 0;
};

// The real clock.
class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
  static SystemClock& Get();
};

// Seconds since the epoch with sub-second precision, as AWS JSON timestamps carry them.
double EpochSeconds(TimePoint t);
int64_t EpochMillis(TimePoint t);
TimePoint FromEpochMillis(int64_t ms);

}  // namespace paddock
