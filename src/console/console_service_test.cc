// The console's own service end to end: a real front with the service added, a real HTTP server,
// SigV4-signed calls from an account's key (testing/toy_front_fixture.h), and a recording
// authorizer. The node's parts are functions here; tests/test_console.py drives the real ones.
#include "console/console_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <boost/json.hpp>

#include "aws/eventstream.h"
#include "aws/sigv4.h"
#include "testing/toy_front_fixture.h"

namespace paddock::console {
namespace {

namespace json = boost::json;

class ConsoleServiceTest : public paddock::testing::ToyFrontTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenStore("console"));
    auto other = accounts_->CreateAccount(std::nullopt, "other");
    ASSERT_TRUE(other.ok());
    auto key = accounts_->CreateAccessKey(other->id);
    ASSERT_TRUE(key.ok());
    other_key_ = *key;
    service_ = std::make_unique<ConsoleService>(feed_);
    aws::FrontOptions options;
    options.authorizer = &authorizer_;
    CreateFront(std::move(options));
    front_->AddJsonService(service_.get());
    ASSERT_NO_FATAL_FAILURE(StartServer());
  }
  void TearDown() override {
    feed_.Shutdown();  // a watch still streaming ends, so the server can stop
    ToyFrontTest::TearDown();
  }

  http::Request Request(std::string_view action, std::string body) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost"},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", fmt::format("PaddockConsole_20261204.{}", action)}};
    req.body = std::move(body);
    return req;
  }
  http::Response Call(std::string_view action, std::string body = "{}") {
    return SignAndSend(Request(action, std::move(body)), "paddock");
  }
  http::Response CallAsOther(std::string_view action, std::string body = "{}") {
    http::Request req = Request(action, std::move(body));
    aws::SignRequest(req, {other_key_.id.str(), other_key_.secret}, "eu-west-1", "paddock", SystemClock::Get().Now());
    auto r = client_->Send(req);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : http::Response{};
  }
  static std::string Type(const http::Response& r) { return std::string(Body(r).at("__type").as_string()); }

  ChangeFeed feed_;
  paddock::testing::RecordingAuthorizer authorizer_;
  std::unique_ptr<ConsoleService> service_;
  iam::AccessKey other_key_;
};

TEST_F(ConsoleServiceTest, ConsoleInfoNamesTheCallerAndShowsTheNodesPartsToItsOwnerOnly) {
  service_->SetNodeParts({.owner = key_.account,
                          .edge = [](std::string_view) -> StatusOr<std::string> { return std::string("{}"); },
                          .deploy = nullptr,
                          .images = [] { return StatusOr<std::vector<ConsoleImage>>(std::vector<ConsoleImage>{}); }});
  http::Response mine = Call("GetConsoleInfo");
  ASSERT_EQ(mine.status, 200) << mine.body;
  json::object info = Body(mine);
  EXPECT_EQ(info.at("account").as_string(), key_.account.str());
  EXPECT_EQ(info.at("arn").as_string(), fmt::format("arn:aws:iam::{}:root", key_.account.str()));
  EXPECT_EQ(info.at("region").as_string(), "eu-west-1");
  EXPECT_EQ(info.at("features"), (json::object{{"edge", true}, {"deploy", false}, {"images", true}}));
  json::object theirs = Body(CallAsOther("GetConsoleInfo"));
  EXPECT_EQ(theirs.at("features"), (json::object{{"edge", false}, {"deploy", false}, {"images", false}}));
  EXPECT_TRUE(authorizer_.Take().empty()) << "who-am-I asks no question";
}

TEST_F(ConsoleServiceTest, TheNodesPartsAreAskedAsPaddockActionsAndHiddenFromOtherAccounts) {
  std::vector<std::string> paths;
  std::mutex mu;
  service_->SetNodeParts({.owner = key_.account,
                          .edge = [&](std::string_view path) -> StatusOr<std::string> {
                            std::lock_guard lock(mu);
                            paths.emplace_back(path);
                            return std::string(R"([{"name":"web@ecs"}])");
                          },
                          .deploy = nullptr,
                          .images = [] {
                            return StatusOr<std::vector<ConsoleImage>>(std::vector<ConsoleImage>{
                                {.reference = "docker.io/library/busybox:latest", .manifest_digest = "sha256:ab",
                                 .size = 42, .created_at_ms = 1764786612000}});
                          }});
  http::Response routers = Call("DescribeEdge", R"({"what":"routers"})");
  ASSERT_EQ(routers.status, 200) << routers.body;
  EXPECT_EQ(Body(routers).at("document").as_string(), R"([{"name":"web@ecs"}])");
  EXPECT_EQ(paths, (std::vector<std::string>{"/api/http/routers?per_page=1000"}));
  http::Response images = Call("ListImages");
  ASSERT_EQ(images.status, 200) << images.body;
  EXPECT_EQ(Body(images).at("images").as_array().at(0).as_object().at("size").as_int64(), 42);
  EXPECT_EQ(authorizer_.Take(), (std::vector<std::string>{"paddock:DescribeEdge *", "paddock:ListImages *"}));

  EXPECT_EQ(Type(Call("DescribeEdge", R"({"what":"secrets"})")), "ValidationException") << "the model's enum";
  http::Response other = CallAsOther("DescribeEdge", R"({"what":"routers"})");
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(Type(other), "ResourceNotFoundException");
  EXPECT_EQ(Type(CallAsOther("ListImages")), "ResourceNotFoundException");
  EXPECT_EQ(paths.size(), 1u) << "another account's call never reached the edge";
  authorizer_.Take();
  authorizer_.Deny([](std::string_view) { return true; });
  EXPECT_EQ(Type(Call("ListImages")), "AccessDeniedException");
}

TEST_F(ConsoleServiceTest, DeployCallsAreTheControllersOwnAnswers) {
  std::vector<std::string> asked;
  std::mutex mu;
  service_->SetNodeParts({.owner = key_.account,
                          .edge = nullptr,
                          .deploy = [&](const http::Request& r) {
                            std::lock_guard lock(mu);
                            asked.push_back(r.method + " " + r.target + (r.body.empty() ? "" : " " + r.body));
                            http::Response out;
                            if (r.target.find("nope") != std::string::npos) {
                              out.status = 404;
                              out.body = R"({"error":"no deployment nope"})";
                            } else if (r.target.ends_with("/stop")) {
                              out.status = 409;
                              out.body = R"({"error":"it is already Stopped"})";
                            } else {
                              out.body = R"({"deployments":[]})";
                            }
                            return out;
                          },
                          .images = nullptr});
  http::Response list = Call("ListDeployments", R"({"project":"shop & co","nextToken":"t1"})");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(Body(list).at("document").as_string(), R"({"deployments":[]})");
  EXPECT_EQ(Call("DescribeDeployment", R"({"id":"d-1"})").status, 200);
  EXPECT_EQ(Call("ListDeploymentEvents", R"({"id":"d-1","after":7})").status, 200);
  EXPECT_EQ(Call("GetDeploymentLogs", R"({"id":"d-1","startTime":1764786612000})").status, 200);
  EXPECT_EQ(Call("Redeploy", R"({"from":"d-1"})").status, 200);
  http::Response stopped = Call("StopDeployment", R"({"id":"d-1"})");
  EXPECT_EQ(stopped.status, 409);
  EXPECT_EQ(Type(stopped), "ConflictException");
  EXPECT_EQ(Body(stopped).at("message").as_string(), "it is already Stopped");
  http::Response missing = Call("DescribeDeployment", R"({"id":"nope/../../v1/verify"})");
  EXPECT_EQ(Type(missing), "ResourceNotFoundException");
  EXPECT_EQ(asked, (std::vector<std::string>{
                       "GET /v1/deployments?limit=100&project=shop%20%26%20co&next_token=t1",
                       "GET /v1/deployments/d-1",
                       "GET /v1/deployments/d-1/events?after=7",
                       "GET /v1/deployments/d-1/logs?start_ms=1764786612000",
                       R"(POST /v1/deployments {"from":"d-1"})",
                       "POST /v1/deployments/d-1/stop",
                       "GET /v1/deployments/nope%2F..%2F..%2Fv1%2Fverify",
                   }));
}

TEST_F(ConsoleServiceTest, AWatchStreamsItsOwnAccountsChangesAsTheyCommit) {
  http::Request req = Request("WatchChanges", "{}");
  aws::SignRequest(req, {key_.id.str(), key_.secret}, "eu-west-1", "paddock", SystemClock::Get().Now());
  auto stream_client = std::make_unique<http::Client>("127.0.0.1", port_);
  aws::EventStreamDecoder decoder;
  std::vector<aws::EventStreamMessage> messages;
  std::atomic<bool> published{false};
  auto r = stream_client->Stream(req, [&](std::string_view bytes) {
    EXPECT_TRUE(decoder.Feed(bytes, messages).ok());
    // Once the first change (the watch is open) arrived: another account's change, then ours.
    if (!published && messages.size() >= 2) {
      published = true;
      feed_.Publish(other_key_.account, ChangeKind::kSsm);
      feed_.Publish(key_.account, ChangeKind::kEcs);
      feed_.Publish(key_.account, ChangeKind::kLogs);
    }
    for (const auto& m : messages)
      if (m.Header(":event-type") == "change" && m.payload.find("\"ecs\"") != std::string::npos) return false;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetHeader("Content-Type"), "application/vnd.amazon.eventstream");
  ASSERT_GE(messages.size(), 3u);
  EXPECT_EQ(messages[0].Header(":event-type"), "initial-response");
  EXPECT_EQ(json::parse(messages[1].payload), (json::object{{"sequence", 0}, {"kinds", json::array{}}}));
  // Our two changes came as one event (coalesced); the other account's never came.
  json::object last = json::parse(messages.back().payload).as_object();
  EXPECT_EQ(last.at("kinds"), (json::array{"ecs", "logs"}));
  EXPECT_EQ(last.at("sequence").as_int64(), 2);
  for (const auto& m : messages) EXPECT_EQ(m.payload.find("ssm"), std::string::npos);
  EXPECT_TRUE(authorizer_.Take().empty()) << "a watch asks no question";
}

TEST_F(ConsoleServiceTest, AnAccountsWatchesAreBounded) {
  std::vector<std::unique_ptr<ChangeFeed::Watch>> held;
  for (size_t i = 0; i < ChangeFeed::kMaxWatchesPerAccount; ++i) held.push_back(std::move(*feed_.Open(key_.account)));
  http::Response refused = Call("WatchChanges");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(Type(refused), "LimitExceededException");
}

}  // namespace
}  // namespace paddock::console
