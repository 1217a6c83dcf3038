#include "edge/proxy/table.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace paddock::edge {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

HealthCheckConfig Intervals(milliseconds interval, milliseconds unhealthy_interval) {
  HealthCheckConfig c;
  c.interval = interval;
  c.unhealthy_interval = unhealthy_interval;
  return c;
}

// The waits after `n` failed probes in a row.
std::vector<milliseconds> AfterFailures(ProbeSchedule& schedule, const HealthCheckConfig& config, int n) {
  std::vector<milliseconds> waits;
  for (int i = 0; i < n; ++i) waits.push_back(schedule.After(ProbeResult::kFailed, config));
  return waits;
}

TEST(ProbeScheduleTest, ANewServerThatFailsIsProbedAgainAfterABackoffThatDoublesUpToTheInterval) {
  const HealthCheckConfig config = Intervals(seconds(30), seconds(30));
  ProbeSchedule schedule(Health::kPending);
  EXPECT_EQ(AfterFailures(schedule, config, 12),
            (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(400), milliseconds(800),
                                       milliseconds(1'600), milliseconds(3'200), milliseconds(6'400),
                                       milliseconds(12'800), milliseconds(25'600), seconds(30), seconds(30),
                                       seconds(30)}));
}

TEST(ProbeScheduleTest, OnceAServerHasPassedTraefiksIntervalsApply) {
  const HealthCheckConfig config = Intervals(seconds(30), seconds(10));
  ProbeSchedule schedule(Health::kPending);
  EXPECT_EQ(schedule.After(ProbeResult::kFailed, config), milliseconds(100));
  EXPECT_EQ(schedule.After(ProbeResult::kPassed, config), seconds(30));   // interval
  EXPECT_EQ(schedule.After(ProbeResult::kFailed, config), seconds(10));   // unhealthyInterval, no backoff
  EXPECT_EQ(schedule.After(ProbeResult::kFailed, config), seconds(10));
  EXPECT_EQ(schedule.After(ProbeResult::kPassed, config), seconds(30));
}

TEST(ProbeScheduleTest, AServerUpBeforeAReloadHasPassedAndOneDownIsTakenAsNew) {
  const HealthCheckConfig config = Intervals(seconds(30), seconds(30));
  ProbeSchedule up(Health::kUp);
  EXPECT_EQ(up.After(ProbeResult::kFailed, config), seconds(30));
  ProbeSchedule down(Health::kDown);
  EXPECT_EQ(down.After(ProbeResult::kFailed, config), milliseconds(100));
}

TEST(ProbeScheduleTest, TheBackoffIsNeverLongerThanTheShorterInterval) {
  // Never later than Traefik would probe a failing server (unhealthyInterval)...
  ProbeSchedule short_unhealthy(Health::kPending);
  EXPECT_EQ(AfterFailures(short_unhealthy, Intervals(seconds(30), milliseconds(250)), 4),
            (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(250), milliseconds(250)}));
  // ...nor later than its interval.
  ProbeSchedule short_interval(Health::kPending);
  EXPECT_EQ(AfterFailures(short_interval, Intervals(milliseconds(300), seconds(60)), 4),
            (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(300), milliseconds(300)}));
  ProbeSchedule shorter_than_the_first(Health::kPending);
  EXPECT_EQ(AfterFailures(shorter_than_the_first, Intervals(milliseconds(50), milliseconds(50)), 2),
            (std::vector<milliseconds>{milliseconds(50), milliseconds(50)}));
}

TEST(ProbeScheduleTest, AReloadThatChangesTheIntervalsIsTakenAtTheNextProbe) {
  ProbeSchedule schedule(Health::kPending);
  EXPECT_EQ(AfterFailures(schedule, Intervals(seconds(30), seconds(30)), 3),
            (std::vector<milliseconds>{milliseconds(100), milliseconds(200), milliseconds(400)}));
  EXPECT_EQ(schedule.After(ProbeResult::kFailed, Intervals(milliseconds(500), milliseconds(500))), milliseconds(500));
  EXPECT_EQ(schedule.After(ProbeResult::kFailed, Intervals(seconds(30), seconds(30))), milliseconds(800));
}

}  // namespace
}  // namespace paddock::edge
