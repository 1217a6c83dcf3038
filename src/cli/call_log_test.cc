// The controller's call log: each line's identifying key, what is never in it, and the file.
#include "cli/call_log.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace paddock::cli {
namespace {
namespace json = boost::json;
using deploy::AwsService;

TEST(CallLogTest, CreateServiceKeepsItsNamesCountAndFamilyOnly) {
  json::object body{{"cluster", "default"},
                    {"serviceName", "paddock_shop_default_d1_web"},
                    {"taskDefinition", "arn:aws:ecs:us-east-1:123456789012:task-definition/paddock_shop_default_web:7"},
                    {"desiredCount", 2},
                    {"networkConfiguration", json::object{{"awsvpcConfiguration", json::object{{"subnets", json::array{"subnet-1"}}}}}},
                    {"tags", json::array{json::object{{"key", "paddock.dev/project"}, {"value", "shop"}}}}};
  EXPECT_EQ(FormatCallLogLine(AwsService::kEcs, "CreateService", body, true),
            R"({"service":"ecs","action":"CreateService","ok":true,"key":{"cluster":"default",)"
            R"("serviceName":"paddock_shop_default_d1_web","desiredCount":2,"taskDefinition":"paddock_shop_default_web"}})");
}

TEST(CallLogTest, TheKeysOrderIsFixedWhateverTheBodysOrder) {
  json::object a{{"desiredCount", 0}, {"service", "s"}, {"cluster", "c"}};
  json::object b{{"cluster", "c"}, {"service", "s"}, {"desiredCount", 0}};
  EXPECT_EQ(FormatCallLogLine(AwsService::kEcs, "UpdateService", a, false),
            FormatCallLogLine(AwsService::kEcs, "UpdateService", b, false));
  EXPECT_EQ(FormatCallLogLine(AwsService::kEcs, "UpdateService", a, false),
            R"({"service":"ecs","action":"UpdateService","ok":false,"key":{"cluster":"c","service":"s","desiredCount":0}})");
}

TEST(CallLogTest, ASecretsValueIsNeverLogged) {
  json::object body{{"Name", "/paddock/default/shop/default/d1/DB_PASSWORD"}, {"Value", "hunter2"},
                    {"Type", "SecureString"}, {"Overwrite", false}};
  const std::string line = FormatCallLogLine(AwsService::kSsm, "PutParameter", body, true);
  EXPECT_EQ(line, R"({"service":"ssm","action":"PutParameter","ok":true,)"
                  R"("key":{"Name":"/paddock/default/shop/default/d1/DB_PASSWORD"}})");
  EXPECT_EQ(line.find("hunter2"), std::string::npos);
}

TEST(CallLogTest, ArnsAreShortenedAndNestedValuesLeftOut) {
  EXPECT_EQ(CallLogKey({{"resourceArn", "arn:aws:ecs:us-east-1:000000000000:service/default/web"},
                        {"tags", json::array{json::object{{"key", "k"}, {"value", "v"}}}}}),
            (json::object{{"resource", "web"}}));
  EXPECT_EQ(CallLogKey({{"taskDefinition", "web"}}), (json::object{{"taskDefinition", "web"}}));
  EXPECT_EQ(CallLogKey({{"Names", json::array{"/a", "/b"}}}), (json::object{{"Names", json::array{"/a", "/b"}}}));
  // A name that is not a plain value (a list holding an object) is not copied.
  EXPECT_EQ(CallLogKey({{"Names", json::array{json::object{{"Value", "x"}}}}}), json::object{});
  EXPECT_EQ(CallLogKey({{"cluster", "c"}, {"services", json::array{"arn:1"}}, {"include", json::array{"TAGS"}}}),
            (json::object{{"cluster", "c"}}));
}

TEST(CallLogTest, TheFileGetsOneWholeLinePerCallAndIsAppendedTo) {
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("call-log-test-{}.jsonl", ::getpid())).string();
  std::filesystem::remove(path);
  {
    std::ofstream earlier(path);
    earlier << "earlier\n";
  }
  StatusOr<CallObserver> log = OpenCallLog(path);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) (*log)(AwsService::kEcs, "ListServices", {{"cluster", fmt::format("c{}", t)}}, true);
    });
  }
  for (std::thread& t : threads) t.join();
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "earlier");
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    json::value v = json::parse(line);
    EXPECT_EQ(v.at("action").as_string(), "ListServices");
  }
  EXPECT_EQ(lines, 200);
  std::filesystem::remove(path);
}

TEST(CallLogTest, AnUnwritablePathIsAnError) {
  EXPECT_FALSE(OpenCallLog("/nonexistent-dir/call-log.jsonl").ok());
}

}  // namespace
}  // namespace paddock::cli
