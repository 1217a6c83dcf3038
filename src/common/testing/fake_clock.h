// A Clock that moves only when a test says so.
#pragma once

#include <atomic>

#include "common/clock.h"

namespace paddock::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(std::chrono::seconds(1'780'000'000))) : now_(start.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(Duration(now_.load())); }
  void Advance(Duration d) { now_ += d.count(); }
  void Set(TimePoint t) { now_ = t.time_since_epoch().count(); }

 private:
  std::atomic<Duration::rep> now_;
};

}  // namespace paddock::testing
