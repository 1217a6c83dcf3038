// HttpAws::StartLiveTail (deploy/aws.h) against a real HTTP server that answers as CloudWatch Logs
// does: an event stream read as it arrives, whose end — the caller's, the server's, a refusal, a
// broken frame — is told apart.
#include "deploy/aws.h"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <map>
#include <memory>

#include <boost/json.hpp>

#include "aws/eventstream.h"
#include "http/server.h"

namespace paddock::deploy {
namespace {
namespace json = boost::json;

std::string Update(std::vector<std::string> messages) {
  json::array results;
  for (const std::string& m : messages) {
    results.push_back(json::object{{"logStreamName", "p/shop/d/web/t"}, {"logGroupIdentifier", "arn:g"},
                                   {"message", m}, {"timestamp", 1000}, {"ingestionTime", 1001}});
  }
  return aws::EncodeEvent("sessionUpdate", json::serialize(json::object{
                                               {"sessionMetadata", json::object{{"sampled", false}}},
                                               {"sessionResults", std::move(results)}}));
}

class LiveTailTest : public ::testing::Test {
 protected:
  // Serves StartLiveTail with `produce` (the body's writer); any other action is a 400.
  void Serve(std::function<void(http::BodyWriter&)> produce, int status = 200, std::string error_body = "") {
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, [=, this](const http::Request& req) {
      requests_.push_back(req);
      http::Response r;
      r.status = status;
      if (status != 200) {
        r.body = error_body;
        return r;
      }
      r.SetHeader("Content-Type", "application/vnd.amazon.eventstream");
      r.stream = produce;
      return r;
    });
    StatusOr<uint16_t> port = server_->Start();
    ASSERT_TRUE(port.ok());
    aws_ = std::make_unique<HttpAws>(HttpAwsOptions{.host = "127.0.0.1", .port = *port,
                                                    .credentials = {.access_key_id = "AKIDEXAMPLE", .secret_access_key = "s"}});
  }

  std::unique_ptr<http::Server> server_;
  std::unique_ptr<HttpAws> aws_;
  std::vector<http::Request> requests_;
};

// initial-response is skipped; sessionStart, then each update in order, a message split across
// two writes arriving whole; SessionTimeoutException ends it as the server's end.
TEST_F(LiveTailTest, UpdatesArriveInOrderAndTheServersTimeoutEndsTheSessionCleanly) {
  Serve([](http::BodyWriter& w) {
    w.Write(aws::EncodeEvent("initial-response", "{}"));
    w.Write(aws::EncodeEvent("sessionStart", R"({"sessionId":"s1"})"));
    const std::string split = Update({"one", "two"});
    w.Write(split.substr(0, 20));
    w.Write(split.substr(20));
    w.Write(Update({}) + Update({"three"}));
    w.Write(aws::EncodeException("SessionTimeoutException", R"({"message":"over"})"));
  });
  std::vector<std::string> seen;
  int started = 0;
  StatusOr<LiveTailEnd> end = aws_->StartLiveTail(
      json::object{{"logGroupIdentifiers", json::array{"arn:g"}}},
      {.started = [&] { ++started; return true; },
       .update = [&](const LiveTailUpdate& u) {
         EXPECT_EQ(started, 1);
         seen.push_back("update");
         for (const LiveTailEvent& e : u.events) {
           seen.push_back(e.message);
           EXPECT_EQ(e.stream, "p/shop/d/web/t");
           EXPECT_EQ(e.timestamp_ms, 1000);
           EXPECT_EQ(e.ingestion_ms, 1001);
         }
         return true;
       }});
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(*end, LiveTailEnd::kEndedByServer);
  EXPECT_EQ(seen, (std::vector<std::string>{"update", "one", "two", "update", "update", "three"}));
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0].GetHeader("X-Amz-Target"), "Logs_20140328.StartLiveTail");
  EXPECT_NE(requests_[0].GetHeader("Authorization").find("/logs/aws4_request"), std::string::npos);
  EXPECT_EQ(json::parse(requests_[0].body).at("logGroupIdentifiers").at(0), "arn:g");
}

// The caller ends a session that would last forever: its handler returns false, the call returns,
// and the server's producer learns its reader left.
TEST_F(LiveTailTest, TheCallerEndsTheSession) {
  std::promise<void> producer_ended;
  Serve([&](http::BodyWriter& w) {
    w.Write(aws::EncodeEvent("sessionStart", "{}"));
    while (w.Write(Update({"tick"}))) {
    }
    producer_ended.set_value();
  });
  int updates = 0;
  StatusOr<LiveTailEnd> end = aws_->StartLiveTail(json::object{}, {.update = [&](const LiveTailUpdate&) {
    return ++updates < 3;
  }});
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(*end, LiveTailEnd::kStoppedByCaller);
  EXPECT_EQ(updates, 3);
  producer_ended.get_future().wait();
}

TEST_F(LiveTailTest, ARefusalIsTheAnswersErrorBeforeAnySessionStart) {
  Serve(nullptr, 400, R"({"__type":"AccessDeniedException","message":"not allowed: logs:StartLiveTail"})");
  bool started = false;
  StatusOr<LiveTailEnd> end = aws_->StartLiveTail(json::object{}, {.started = [&] { return started = true; }});
  EXPECT_FALSE(end.ok());
  EXPECT_TRUE(IsError(end.status(), Error::kDenied)) << end.status().ToString();
  EXPECT_EQ(end.status().message(), "AccessDeniedException: not allowed: logs:StartLiveTail");
  EXPECT_FALSE(started);
}

TEST_F(LiveTailTest, AStreamingExceptionOrABrokenFrameIsAnError) {
  Serve([](http::BodyWriter& w) {
    w.Write(aws::EncodeEvent("sessionStart", "{}"));
    w.Write(aws::EncodeException("SessionStreamingException", R"({"message":"internal"})"));
  });
  StatusOr<LiveTailEnd> end = aws_->StartLiveTail(json::object{}, {});
  EXPECT_EQ(end.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(end.status().message(), "SessionStreamingException: internal");

  Serve([](http::BodyWriter& w) {
    std::string bad = Update({"x"});
    bad[bad.size() - 1] ^= 1;
    w.Write(aws::EncodeEvent("sessionStart", "{}") + Update({"fine"}) + bad);
  });
  std::vector<std::string> seen;
  end = aws_->StartLiveTail(json::object{}, {.update = [&](const LiveTailUpdate& u) {
    for (const LiveTailEvent& e : u.events) seen.push_back(e.message);
    return true;
  }});
  EXPECT_EQ(end.status().code(), StatusCode::kDataLoss) << end.status().ToString();
  EXPECT_EQ(seen, std::vector<std::string>{"fine"});  // the message before the broken one

  Serve([](http::BodyWriter& w) { w.Write(aws::EncodeEvent("sessionStart", "{}").substr(0, 30)); });
  end = aws_->StartLiveTail(json::object{}, {});
  EXPECT_EQ(end.status().code(), StatusCode::kDataLoss) << end.status().ToString();
}

// AWS's own endpoints: each service at its regional host over HTTPS, IAM's global one signed for us-east-1.
TEST(AwsPublicEndpointsTest, EachServiceAtItsRegionalHostAndIamAtItsGlobalOne) {
  std::map<std::string, AwsEndpoint, std::less<>> e = AwsPublicEndpoints("eu-west-3");
  ASSERT_EQ(e.size(), 7u);
  EXPECT_EQ(e.at("ecs").host, "ecs.eu-west-3.amazonaws.com");
  EXPECT_EQ(e.at("servicediscovery").host, "servicediscovery.eu-west-3.amazonaws.com");
  EXPECT_EQ(e.at("logs").host, "logs.eu-west-3.amazonaws.com");
  EXPECT_EQ(e.at("iam").host, "iam.amazonaws.com");
  EXPECT_EQ(e.at("iam").signing_region, "us-east-1");
  for (const auto& [service, endpoint] : e) {
    EXPECT_EQ(endpoint.port, 443) << service;
    EXPECT_TRUE(endpoint.tls.has_value()) << service;
    if (service != "iam") {
      EXPECT_EQ(endpoint.signing_region, "") << service;
    }
  }
}

// A service with an endpoint of its own is sent there, signed for its own name; the others go to
// the shared one.
TEST(HttpAwsTest, AServiceWithItsOwnEndpointIsCalledThere) {
  std::vector<std::string> shared_hits, ssm_hits;
  auto serve = [](std::vector<std::string>& hits) {
    return std::make_unique<http::Server>(http::ServerOptions{}, [&hits](const http::Request& req) {
      hits.push_back(std::string(req.GetHeader("X-Amz-Target")) + " " + std::string(req.GetHeader("Authorization")));
      http::Response r;
      r.body = "{}";
      return r;
    });
  };
  std::unique_ptr<http::Server> shared = serve(shared_hits), ssm = serve(ssm_hits);
  StatusOr<uint16_t> shared_port = shared->Start(), ssm_port = ssm->Start();
  ASSERT_TRUE(shared_port.ok() && ssm_port.ok());
  HttpAws aws(HttpAwsOptions{.host = "127.0.0.1", .port = *shared_port,
                             .credentials = {.access_key_id = "AKIDEXAMPLE", .secret_access_key = "s"},
                             .per_service = {{"ssm", AwsEndpoint{.host = "127.0.0.1", .port = *ssm_port}}}});
  ASSERT_TRUE(aws.Call(AwsService::kSsm, "GetParametersByPath", {{"Path", "/p"}}).ok());
  ASSERT_TRUE(aws.Call(AwsService::kEcs, "ListServices", {{"cluster", "default"}}).ok());
  ASSERT_EQ(ssm_hits.size(), 1u);
  EXPECT_NE(ssm_hits[0].find("AmazonSSM.GetParametersByPath"), std::string::npos) << ssm_hits[0];
  EXPECT_NE(ssm_hits[0].find("/us-east-1/ssm/aws4_request"), std::string::npos) << ssm_hits[0];
  ASSERT_EQ(shared_hits.size(), 1u);
  EXPECT_NE(shared_hits[0].find("ListServices"), std::string::npos) << shared_hits[0];
}

}  // namespace
}  // namespace paddock::deploy
