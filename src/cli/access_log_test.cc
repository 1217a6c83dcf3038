// The access log's line: its fields, and that bytes a client chose cannot forge a line.
#include "cli/access_log.h"

#include <gtest/gtest.h>

namespace paddock::cli {
namespace {

const TimePoint kWhen = std::chrono::system_clock::from_time_t(1796126400) + std::chrono::milliseconds(123);

TEST(AccessLogTest, OneLineWithEveryField) {
  aws::RequestRecord r;
  r.service = "ecs";
  r.action = "RunTask";
  r.account = "123456789012";
  r.http_status = 200;
  r.latency = std::chrono::microseconds(12345);
  EXPECT_EQ(FormatAccessLogLine(r, kWhen), "2026-12-01T12:00:00.123Z 123456789012 ecs.RunTask 200 - 12.3ms");
  r.http_status = 400;
  r.error = "ClusterNotFoundException";
  r.latency = std::chrono::microseconds(800);
  EXPECT_EQ(FormatAccessLogLine(r, kWhen),
            "2026-12-01T12:00:00.123Z 123456789012 ecs.RunTask 400 ClusterNotFoundException 0.8ms");
}

TEST(AccessLogTest, UnauthenticatedAndUnnamed) {
  aws::RequestRecord r;
  r.http_status = 400;
  r.error = "UnknownOperationException";
  EXPECT_EQ(FormatAccessLogLine(r, kWhen), "2026-12-01T12:00:00.123Z - - 400 UnknownOperationException 0.0ms");
}

TEST(AccessLogTest, AHostileActionCannotForgeALine) {
  aws::RequestRecord r;
  r.service = "ec2";
  r.action = "X 200 -\n2026-12-01T12:00:00.000Z 999999999999 ecs.DeleteCluster";
  r.http_status = 400;
  r.error = "InvalidAction";
  const std::string line = FormatAccessLogLine(r, kWhen);
  EXPECT_EQ(line, "2026-12-01T12:00:00.123Z - ec2.? 400 InvalidAction 0.0ms");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace paddock::cli
