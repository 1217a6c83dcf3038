// CloudWatch Logs' API end to end, as a client sees it: the real API front with LogsService
// registered by one line, the logs store in a temp state dir, a real HTTP server on an ephemeral
// port and SigV4-signed requests.
#include "logs/api/logs_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "testing/toy_front_fixture.h"

namespace paddock::logs {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;

class LogsServiceTest : public testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("logs"));
    auto module = api::LogsModule::Open(dir_, "token-key-for-tests");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    logs_ = std::move(*module);
    aws::FrontOptions options;
    options.authorizer = &authorizer_;
    authorizer_.Deny([](std::string_view resource) { return resource.ends_with(":denied"); });
    CreateFront(options);
    front_->AddJsonService(&logs_->service());  // the registration: one line
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }

  http::Response Call(std::string_view action, const json::object& body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "Logs_20140328." + std::string(action)}};
    req.body = json::serialize(body);
    return SignAndSend(std::move(req), "logs");
  }
  static std::string Type(const http::Response& r) { return std::string(Body(r).at("__type").as_string()); }
  static std::string Message(const http::Response& r) {
    const json::object b = Body(r);
    return b.contains("message") ? std::string(b.at("message").as_string()) : std::string();
  }
  std::string GroupArn(std::string_view g) const {
    return fmt::format("arn:aws:logs:eu-west-1:{}:log-group:{}", key_.account.str(), g);
  }

  testing::RecordingAuthorizer authorizer_;
  std::unique_ptr<api::LogsModule> logs_;
};

TEST_F(LogsServiceTest, GroupsStreamsAndEventsOverTheWire) {
  ASSERT_EQ(Call("CreateLogGroup", {{"logGroupName", "/ecs/web"}, {"tags", {{"team", "web"}}}}).status, 200);
  http::Response dup = Call("CreateLogGroup", {{"logGroupName", "/ecs/web"}});
  EXPECT_EQ(dup.status, 400);
  EXPECT_EQ(Type(dup), "ResourceAlreadyExistsException");
  ASSERT_EQ(Call("CreateLogStream", {{"logGroupName", "/ecs/web"}, {"logStreamName", "web/app/1"}}).status, 200);
  const int64_t now = EpochMillis(SystemClock::Get().Now());
  http::Response put = Call("PutLogEvents", {{"logGroupName", "/ecs/web"},
                                             {"logStreamName", "web/app/1"},
                                             {"logEvents", json::array{json::object{{"timestamp", now}, {"message", "hello"}},
                                                                       json::object{{"timestamp", now + 1}, {"message", "world"}}}},
                                             {"sequenceToken", "ignored"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(Body(put).contains("nextSequenceToken"));
  EXPECT_FALSE(Body(put).contains("rejectedLogEventsInfo"));

  http::Response groups = Call("DescribeLogGroups", {{"logGroupNamePrefix", "/ecs/"}});
  ASSERT_EQ(groups.status, 200) << groups.body;
  const json::object g = Body(groups).at("logGroups").as_array().at(0).as_object();
  EXPECT_EQ(g.at("arn").as_string(), GroupArn("/ecs/web") + ":*");
  EXPECT_EQ(g.at("logGroupArn").as_string(), GroupArn("/ecs/web"));
  EXPECT_FALSE(g.contains("retentionInDays"));

  http::Response head = Call("GetLogEvents", {{"logGroupName", "/ecs/web"}, {"logStreamName", "web/app/1"},
                                              {"startFromHead", true}});
  ASSERT_EQ(head.status, 200) << head.body;
  EXPECT_EQ(Body(head).at("events").as_array().size(), 2u);
  const std::string fwd(Body(head).at("nextForwardToken").as_string());
  EXPECT_TRUE(fwd.starts_with("f/"));
  http::Response end = Call("GetLogEvents", {{"logGroupName", "/ecs/web"}, {"logStreamName", "web/app/1"},
                                             {"startFromHead", true}, {"nextToken", fwd}});
  ASSERT_EQ(end.status, 200) << end.body;
  EXPECT_TRUE(Body(end).at("events").as_array().empty());
  EXPECT_EQ(Body(end).at("nextForwardToken").as_string(), fwd);  // the end: the same token comes back

  http::Response filtered = Call("FilterLogEvents", {{"logGroupIdentifier", GroupArn("/ecs/web")}, {"filterPattern", "world"}});
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  const json::object e = Body(filtered).at("events").as_array().at(0).as_object();
  EXPECT_EQ(e.at("message").as_string(), "world");
  EXPECT_EQ(e.at("logStreamName").as_string(), "web/app/1");
  EXPECT_EQ(e.at("eventId").as_string().size(), 35u);

  http::Response tags = Call("ListTagsForResource", {{"resourceArn", GroupArn("/ecs/web")}});
  ASSERT_EQ(tags.status, 200) << tags.body;
  EXPECT_EQ(Body(tags).at("tags"), (json::object{{"team", "web"}}));
}

TEST_F(LogsServiceTest, ErrorsCarryCloudWatchLogsCodesAndTexts) {
  http::Response missing = Call("DescribeLogStreams", {{"logGroupName", "nope"}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(Type(missing), "ResourceNotFoundException");
  EXPECT_EQ(Message(missing), "The specified log group does not exist.");
  // The model's pattern: a ':' is not allowed in a group name.
  http::Response bad = Call("CreateLogGroup", {{"logGroupName", "a:b"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(Type(bad), "InvalidParameterException");
  http::Response retention = Call("PutRetentionPolicy", {{"logGroupName", "nope"}, {"retentionInDays", 2}});
  EXPECT_EQ(Type(retention), "InvalidParameterException");
  http::Response token = Call("DescribeLogGroups", {{"nextToken", "forged"}});
  EXPECT_EQ(Type(token), "InvalidParameterException");
  ASSERT_EQ(Call("CreateLogGroup", {{"logGroupName", "g"}}).status, 200);
  http::Response pattern = Call("FilterLogEvents", {{"logGroupName", "g"}, {"filterPattern", "a@b"}});
  EXPECT_EQ(Type(pattern), "InvalidParameterException");
  // Another account's ARN names no group of the caller's.
  http::Response foreign = Call("FilterLogEvents", {{"logGroupIdentifier", "arn:aws:logs:eu-west-1:999999999999:log-group:g"}});
  EXPECT_EQ(Type(foreign), "ResourceNotFoundException");
}

TEST_F(LogsServiceTest, TheFrontAuthorizesGroupAndStreamArns) {
  authorizer_.Take();
  Call("CreateLogGroup", {{"logGroupName", "g"}});
  Call("CreateLogStream", {{"logGroupName", "g"}, {"logStreamName", "s"}});
  Call("DescribeLogGroups", json::object{});
  Call("ListTagsForResource", {{"resourceArn", GroupArn("g")}});
  EXPECT_THAT(authorizer_.Take(),
              ElementsAre("logs:CreateLogGroup " + GroupArn("g") + ":log-stream:",
                          "logs:CreateLogStream " + GroupArn("g") + ":log-stream:s",
                          "logs:DescribeLogGroups " + GroupArn("") + ":log-stream:",
                          "logs:ListTagsForResource " + GroupArn("g")));
  http::Response denied = Call("CreateLogStream", {{"logGroupName", "g"}, {"logStreamName", "denied"}});
  EXPECT_EQ(denied.status, 400);
  EXPECT_EQ(Type(denied), "AccessDeniedException");
}

}  // namespace
}  // namespace paddock::logs
