#include "common/clock.h"

namespace paddock {

SystemClock& SystemClock::Get() {
  static SystemClock clock;
  return clock;
}

double EpochSeconds(TimePoint t) {
  return static_cast<double>(EpochMillis(t)) / 1000.0;
}

int64_t EpochMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint FromEpochMillis(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::milliseconds(ms)));
}

}  // namespace paddock
