// CloudWatch Logs' API end to end, as a client sees it: the real API front with LogsService
// registered by one line, the logs store in a temp state dir, a real HTTP server on an ephemeral
// port and SigV4-signed requests.
#include "logs/api/logs_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/eventstream.h"
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

  static http::Request LogsRequest(std::string_view action, const json::object& body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "Logs_20140328." + std::string(action)}};
    req.body = json::serialize(body);
    return req;
  }
  http::Response Call(std::string_view action, const json::object& body) {
    return SignAndSend(LogsRequest(action, body), "logs");
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

// One event-stream message: its headers and payload (aws/eventstream.h), CRCs checked.
struct Frame {
  std::map<std::string, std::string> headers;
  std::string payload;
};

std::vector<Frame> Frames(std::string_view body) {
  auto u32 = [](std::string_view b, size_t at) {
    return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) |
           (uint32_t(uint8_t(b[at + 2])) << 8) | uint32_t(uint8_t(b[at + 3]));
  };
  std::vector<Frame> out;
  while (body.size() >= 16) {
    const uint32_t total = u32(body, 0), headers_len = u32(body, 4);
    EXPECT_LE(total, body.size());
    if (total > body.size()) break;
    EXPECT_EQ(u32(body, 8), aws::Crc32(body.substr(0, 8)));
    EXPECT_EQ(u32(body, total - 4), aws::Crc32(body.substr(0, total - 4)));
    Frame f;
    std::string_view h = body.substr(12, headers_len);
    while (!h.empty()) {
      const size_t name_len = uint8_t(h[0]);
      std::string name(h.substr(1, name_len));
      EXPECT_EQ(h[1 + name_len], 7);  // string
      const size_t value_len = (size_t(uint8_t(h[2 + name_len])) << 8) | uint8_t(h[3 + name_len]);
      f.headers[name] = std::string(h.substr(4 + name_len, value_len));
      h.remove_prefix(4 + name_len + value_len);
    }
    f.payload = std::string(body.substr(12 + headers_len, total - 16 - headers_len));
    out.push_back(std::move(f));
    body.remove_prefix(total);
  }
  EXPECT_TRUE(body.empty());
  return out;
}

// The whole stream of a session bounded to 1.5 s: the JSON protocol's initial-response,
// sessionStart, a sessionUpdate a second with the matching events PutLogEvents wrote meanwhile
// (other groups' not), and SessionTimeoutException at the end.
TEST_F(LogsServiceTest, StartLiveTailStreamsTheEventsPutMeanwhile) {
  ASSERT_EQ(Call("CreateLogGroup", {{"logGroupName", "/lt"}}).status, 200);
  ASSERT_EQ(Call("CreateLogGroup", {{"logGroupName", "/other"}}).status, 200);
  ASSERT_EQ(Call("CreateLogStream", {{"logGroupName", "/lt"}, {"logStreamName", "s"}}).status, 200);
  ASSERT_EQ(Call("CreateLogStream", {{"logGroupName", "/other"}, {"logStreamName", "s"}}).status, 200);
  logs_->service().SetLiveTailMaxDuration(std::chrono::milliseconds(1500));
  authorizer_.Take();
  http::Response tail;
  std::thread tailing([&] {
    // Its own connection: the fixture's client is the PutLogEvents' below.
    http::Request req = LogsRequest("StartLiveTail", {{"logGroupIdentifiers", json::array{json::string(GroupArn("/lt"))}},
                                                      {"logEventFilterPattern", "ERROR"}});
    aws::SignRequest(req, {key_.id.str(), key_.secret}, "eu-west-1", "logs", SystemClock::Get().Now());
    http::Client own("127.0.0.1", static_cast<uint16_t>(port_));
    auto r = own.Send(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) tail = *r;
  });
  while (logs_->service().live_tail().OpenSessions(key_.account) == 0) std::this_thread::yield();
  const int64_t now = EpochMillis(SystemClock::Get().Now());
  auto put = [&](std::string group, std::vector<std::string> messages) {
    json::array events;
    for (auto& m : messages) events.push_back(json::object{{"timestamp", now}, {"message", m}});
    ASSERT_EQ(Call("PutLogEvents", {{"logGroupName", group}, {"logStreamName", "s"}, {"logEvents", events}}).status,
              200);
  };
  put("/lt", {"ERROR one", "fine"});
  put("/other", {"ERROR elsewhere"});
  tailing.join();
  ASSERT_EQ(tail.status, 200) << tail.body;
  EXPECT_EQ(tail.GetHeader("Content-Type"), "application/vnd.amazon.eventstream");
  EXPECT_EQ(authorizer_.Take().at(0), "logs:StartLiveTail " + GroupArn("/lt") + ":*");

  std::vector<Frame> frames = Frames(tail.body);
  ASSERT_GE(frames.size(), 4u);
  EXPECT_EQ(frames[0].headers[":event-type"], "initial-response");
  EXPECT_EQ(frames[1].headers[":message-type"], "event");
  EXPECT_EQ(frames[1].headers[":event-type"], "sessionStart");
  EXPECT_EQ(frames[1].headers[":content-type"], "application/json");
  const json::object start = json::parse(frames[1].payload).as_object();
  EXPECT_EQ(start.at("logGroupIdentifiers"), (json::array{json::string(GroupArn("/lt"))}));
  EXPECT_EQ(start.at("logEventFilterPattern"), "ERROR");
  EXPECT_FALSE(start.at("sessionId").as_string().empty());
  std::vector<std::string> seen;
  for (size_t i = 2; i + 1 < frames.size(); ++i) {
    EXPECT_EQ(frames[i].headers[":event-type"], "sessionUpdate");
    const json::object update = json::parse(frames[i].payload).as_object();
    EXPECT_EQ(update.at("sessionMetadata").at("sampled"), false);
    for (const auto& e : update.at("sessionResults").as_array()) {
      seen.emplace_back(e.at("message").as_string());
      EXPECT_EQ(e.at("logGroupIdentifier").as_string(), GroupArn("/lt"));
      EXPECT_EQ(e.at("logStreamName"), "s");
      EXPECT_EQ(e.at("timestamp"), now);
    }
  }
  EXPECT_THAT(seen, ElementsAre("ERROR one"));
  EXPECT_EQ(frames.back().headers[":message-type"], "exception");
  EXPECT_EQ(frames.back().headers[":exception-type"], "SessionTimeoutException");
  EXPECT_EQ(logs_->service().live_tail().OpenSessions(key_.account), 0u);  // ended with its stream
}

TEST_F(LogsServiceTest, StartLiveTailRefusesWhatAwsRefuses) {
  ASSERT_EQ(Call("CreateLogGroup", {{"logGroupName", "a"}}).status, 200);
  ASSERT_EQ(Call("CreateLogGroup", {{"logGroupName", "b"}}).status, 200);
  auto start = [&](json::object body) { return Call("StartLiveTail", body); };
  auto ids = [](std::initializer_list<std::string> l) {
    json::array a;
    for (const auto& s : l) a.push_back(json::string(s));
    return a;
  };
  http::Response foreign =
      start({{"logGroupIdentifiers", ids({"arn:aws:logs:eu-west-1:999999999999:log-group:a"})}});
  EXPECT_EQ(Type(foreign), "ResourceNotFoundException");
  http::Response missing = start({{"logGroupIdentifiers", ids({GroupArn("nope")})}});
  EXPECT_EQ(Type(missing), "ResourceNotFoundException");
  http::Response star = start({{"logGroupIdentifiers", ids({GroupArn("a") + ":*"})}});
  EXPECT_EQ(Type(star), "InvalidParameterException");
  http::Response both = start({{"logGroupIdentifiers", ids({GroupArn("a")})},
                               {"logStreamNames", ids({"s"})},
                               {"logStreamNamePrefixes", ids({"p"})}});
  EXPECT_EQ(Type(both), "InvalidParameterException");
  authorizer_.Take();
  http::Response two = start({{"logGroupIdentifiers", ids({GroupArn("a"), GroupArn("b")})}, {"logStreamNames", ids({"s"})}});
  EXPECT_EQ(Type(two), "InvalidParameterException");
  // One question per group, asked before the request is checked further.
  EXPECT_THAT(authorizer_.Take(), ElementsAre("logs:StartLiveTail " + GroupArn("a") + ":*",
                                              "logs:StartLiveTail " + GroupArn("b") + ":*"));
  http::Response pattern = start({{"logGroupIdentifiers", ids({GroupArn("a")})}, {"logEventFilterPattern", "a@b"}});
  EXPECT_EQ(Type(pattern), "InvalidParameterException");
  http::Response none = start({{"logGroupIdentifiers", json::array()}});  // the model's min 1
  EXPECT_EQ(Type(none), "InvalidParameterException");
  EXPECT_EQ(logs_->service().live_tail().OpenSessions(key_.account), 0u);
}

}  // namespace
}  // namespace paddock::logs
