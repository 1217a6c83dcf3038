// The numeric ranges of RegisterTaskDefinition (value_ranges.h), each at its boundaries: the
// value just inside registers, the one just outside gets ECS's form of ClientException.
#include "ecs/taskdef/value_ranges.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "ecs/api/errors.h"
#include "ecs/taskdef/validate.h"

namespace paddock::ecs::taskdef {
namespace {
namespace json = boost::json;

// Registers one container with `fields` (JSON members, without braces) added, `task` added to the
// task, and returns "OK" or "<type>: <message>".
std::string Register(std::string_view fields, std::string_view task = "", RegisterRules rules = {}) {
  std::string text = fmt::format(R"({{"family":"f",{}"containerDefinitions":[{{"name":"c","image":"x","memory":64{}}}]}})",
                                 task.empty() ? "" : std::string(task) + ",",
                                 fields.empty() ? "" : "," + std::string(fields));
  auto r = ValidateRegister(json::parse(text).as_object(), rules);
  return r.ok() ? "OK" : api::AnswerFor(r.status()).type + ": " + r.status().message();
}

std::string Fargate(std::string_view fields, RegisterRules rules = {}) {
  return Register(fields, R"("networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"512")",
                  rules);
}

TEST(ValueRangesTest, RestartPolicy) {
  auto period = [](int v) {
    return Register(fmt::format(R"("restartPolicy":{{"enabled":true,"restartAttemptPeriod":{}}})", v));
  };
  EXPECT_EQ(period(60), "OK");
  EXPECT_EQ(period(1800), "OK");
  EXPECT_EQ(period(59), "ClientException: Invalid 'restartPolicy.restartAttemptPeriod' setting for container 'c'. "
                        "The value must be between 60 and 1800 seconds.");
  EXPECT_NE(period(1801), "OK");
  std::string codes50 = "0", codes51;
  for (int i = 1; i < 50; ++i) codes50 += fmt::format(",{}", i);
  codes51 = codes50 + ",50";
  EXPECT_EQ(Register(R"("restartPolicy":{"enabled":true,"ignoredExitCodes":[)" + codes50 + "]}"), "OK");
  EXPECT_EQ(Register(R"("restartPolicy":{"enabled":true,"ignoredExitCodes":[)" + codes51 + "]}"),
            "ClientException: Invalid 'restartPolicy.ignoredExitCodes' setting for container 'c'. At most 50 exit "
            "codes can be ignored; 51 were given.");
}

TEST(ValueRangesTest, HealthCheck) {
  auto check = [](std::string_view key, int v) {
    return Register(fmt::format(R"("healthCheck":{{"command":["CMD","true"],"{}":{}}})", key, v));
  };
  struct Bound {
    std::string_view key;
    int low, high;
  };
  for (Bound b : {Bound{"interval", 5, 300}, Bound{"timeout", 2, 60}, Bound{"retries", 1, 10},
                  Bound{"startPeriod", 0, 300}}) {
    EXPECT_EQ(check(b.key, b.low), "OK") << b.key;
    EXPECT_EQ(check(b.key, b.high), "OK") << b.key;
    EXPECT_NE(check(b.key, b.low - 1), "OK") << b.key;
    EXPECT_NE(check(b.key, b.high + 1), "OK") << b.key;
  }
  EXPECT_EQ(check("interval", 4), "ClientException: Invalid 'healthCheck.interval' setting for container 'c'. The "
                                  "value must be between 5 and 300 seconds.");
  EXPECT_EQ(check("retries", 11),
            "ClientException: Invalid 'healthCheck.retries' setting for container 'c'. The value must be between 1 and 10.");
}

TEST(ValueRangesTest, StartAndStopTimeouts) {
  for (std::string_view key : {"startTimeout", "stopTimeout"}) {
    // EC2 (no requiresCompatibilities): any count of seconds.
    EXPECT_EQ(Register(fmt::format(R"("{}":0)", key)), "OK") << key;
    EXPECT_EQ(Register(fmt::format(R"("{}":600)", key)), "OK") << key;
    EXPECT_NE(Register(fmt::format(R"("{}":-1)", key)), "OK") << key;
    // Fargate: 2-120.
    EXPECT_EQ(Fargate(fmt::format(R"("{}":2)", key)), "OK") << key;
    EXPECT_EQ(Fargate(fmt::format(R"("{}":120)", key)), "OK") << key;
    EXPECT_EQ(Fargate(fmt::format(R"("{}":1)", key)),
              fmt::format("ClientException: Invalid '{}' setting for container 'c'. The value must be between 2 and "
                          "120 seconds.",
                          key));
    EXPECT_NE(Fargate(fmt::format(R"("{}":121)", key)), "OK") << key;
  }
}

TEST(ValueRangesTest, ShortTimingsLowerOnlyTheTimingMinimums) {
  const RegisterRules short_timings{.short_timings = true};
  EXPECT_EQ(Register(R"("restartPolicy":{"enabled":true,"restartAttemptPeriod":1})", "", short_timings), "OK");
  EXPECT_NE(Register(R"("restartPolicy":{"enabled":true,"restartAttemptPeriod":0})", "", short_timings), "OK");
  EXPECT_NE(Register(R"("restartPolicy":{"enabled":true,"restartAttemptPeriod":1801})", "", short_timings), "OK");
  EXPECT_EQ(Register(R"("healthCheck":{"command":["CMD","true"],"interval":1,"timeout":1})", "", short_timings), "OK");
  EXPECT_NE(Register(R"("healthCheck":{"command":["CMD","true"],"interval":0})", "", short_timings), "OK");
  EXPECT_NE(Register(R"("healthCheck":{"command":["CMD","true"],"retries":0})", "", short_timings), "OK");
  EXPECT_EQ(Fargate(R"("stopTimeout":1)", short_timings), "OK");
  EXPECT_NE(Fargate(R"("stopTimeout":121)", short_timings), "OK");
}

TEST(ValueRangesTest, LinuxParameters) {
  auto lp = [](std::string_view members) { return Register(fmt::format(R"("linuxParameters":{{{}}})", members)); };
  EXPECT_EQ(lp(R"("maxSwap":0,"swappiness":0)"), "OK");
  EXPECT_EQ(lp(R"("maxSwap":1024,"swappiness":100)"), "OK");
  EXPECT_EQ(lp(R"("swappiness":101)"), "ClientException: Invalid 'linuxParameters.swappiness' setting for container "
                                       "'c'. The value must be between 0 and 100.");
  EXPECT_NE(lp(R"("swappiness":-1)"), "OK");
  EXPECT_NE(lp(R"("maxSwap":-1)"), "OK");
  EXPECT_EQ(lp(R"("sharedMemorySize":0)"), "OK");
  EXPECT_NE(lp(R"("sharedMemorySize":-1)"), "OK");
  EXPECT_EQ(lp(R"("tmpfs":[{"containerPath":"/t","size":1}])"), "OK");
  EXPECT_EQ(lp(R"("tmpfs":[{"containerPath":"/t","size":0}])"),
            "ClientException: Invalid 'linuxParameters.tmpfs.size' setting for container 'c'. The value must be 1 or "
            "greater.");
}

TEST(ValueRangesTest, Ulimits) {
  auto u = [](int soft, int hard) {
    return Register(fmt::format(R"("ulimits":[{{"name":"nofile","softLimit":{},"hardLimit":{}}}])", soft, hard));
  };
  EXPECT_EQ(u(1024, 1024), "OK");
  EXPECT_EQ(u(0, 0), "OK");
  EXPECT_EQ(u(-1, -1), "OK");
  EXPECT_EQ(u(1024, -1), "OK");
  EXPECT_EQ(u(1025, 1024), "ClientException: Invalid 'ulimits.nofile' setting for container 'c'. The soft limit must "
                           "be less than or equal to the hard limit.");
  EXPECT_NE(u(-1, 1024), "OK");
  EXPECT_NE(u(-2, 1024), "OK");
}

TEST(ValueRangesTest, EphemeralStorage) {
  auto storage = [](int gib) { return Register("", fmt::format(R"("ephemeralStorage":{{"sizeInGiB":{}}})", gib)); };
  EXPECT_EQ(storage(21), "OK");
  EXPECT_EQ(storage(200), "OK");
  EXPECT_EQ(storage(20), "ClientException: Invalid 'ephemeralStorage.sizeInGiB' setting for task. The value must be "
                         "between 21 and 200 GiB; 20 was given.");
  EXPECT_NE(storage(201), "OK");
}

TEST(ValueRangesTest, ContainerMemoryAndCpu) {
  EXPECT_EQ(Register(R"("cpu":0)"), "OK");
  EXPECT_NE(Register(R"("cpu":-1)"), "OK");
  EXPECT_EQ(Register(R"("memoryReservation":6)"), "OK");
  EXPECT_NE(Register(R"("memoryReservation":5)"), "OK");
}

}  // namespace
}  // namespace paddock::ecs::taskdef
