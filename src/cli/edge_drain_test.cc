// The drain holds' service (ecs/drain/api/drain_service.h) through the API front of a real
// in-process server (Node on port 0), and `paddock edge`'s client of it (edge/remote_holds.h):
// put, describe and release by two edges; bad input answered with AWS's codes and nothing written;
// tenancy between two accounts; the bound on live edges; an agent credential refused. No
// containers run: the tasks are EC2 tasks on an instance the test registers and plays.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "aws/json_client.h"
#include "aws/sigv4.h"
#include "cli/edge_command.h"
#include "cli/node.h"
#include "cli/testing/served_node.h"
#include "common/clock.h"
#include "ecs/drain/api/drain_service.h"
#include "ecs/drain/drain_holds.h"
#include "edge/remote_holds.h"
#include "http/client.h"
#include "http/server.h"
#include "iam/accounts.h"

namespace paddock::cli {
namespace {
namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::string_view kEcs = "AmazonEC2ContainerServiceV20141113.";

// An answer as the wire has it: the HTTP status, and the body (with "__type" on an error).
struct Answer {
  int status = 0;
  json::object body;
  std::string type() const {
    const json::value* t = body.if_contains("__type");
    return t != nullptr && t->is_string() ? std::string(t->get_string()) : std::string();
  }
};

class EdgeDrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto served = testing::ServedNode::Start("paddock-edge-drain");
    ASSERT_TRUE(served.ok()) << served.status().ToString();
    served_ = std::move(*served);
    port_ = served_->port();
    a_ = served_->key();
    account_a_ = served_->account();
    auto other = served_->node().accounts().CreateAccount(std::nullopt, "other");
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    auto other_key = served_->node().accounts().CreateAccessKey(other->id);
    ASSERT_TRUE(other_key.ok()) << other_key.status().ToString();
    b_ = {other_key->id.str(), other_key->secret};

    // An EC2 instance of account A, and two tasks on it (PENDING: the test plays no agent).
    Ecs("CreateCluster", {{"clusterName", "ec2"}});
    aws::JsonClient client(ClientFor(a_));
    auto instance = testing::RegisterInstance(client, "ec2");
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    instance_arn_ = instance->arn;
    agent_ = instance->credentials;
    Ecs("RegisterTaskDefinition", testing::WebTaskDefinition());
    task_ = StartTask();
    other_task_ = StartTask();
  }

  // One signed JSON 1.1 call, answered as the wire has it.
  Answer Call(const aws::SigningCredentials& as, const std::string& target, const json::object& body) {
    http::Client client("127.0.0.1", port_);
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", fmt::format("127.0.0.1:{}", port_)},
                   {"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", target}};
    req.body = json::serialize(body);
    aws::SignRequest(req, as, "us-east-1", "ecs", SystemClock::Get().Now());
    auto resp = client.Send(req);
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    if (!resp.ok()) return {};
    Answer a{resp->status, {}};
    boost::system::error_code ec;
    json::value v = json::parse(resp->body, ec);
    EXPECT_FALSE(ec) << resp->body;
    if (!ec && v.is_object()) a.body = v.get_object();
    return a;
  }
  Answer Drain(const aws::SigningCredentials& as, std::string_view action, const json::object& body) {
    return Call(as, fmt::format("{}.{}", ecs::drain::api::kDrainTargetPrefix, action), body);
  }

  json::object Ecs(std::string_view action, const json::object& body) {
    Answer r = Call(a_, std::string(kEcs) + std::string(action), body);
    EXPECT_EQ(r.status, 200) << action << ": " << json::serialize(r.body);
    return r.body;
  }

  std::string StartTask() {
    json::object r = Ecs("StartTask", {{"cluster", "ec2"}, {"taskDefinition", "web"},
                                       {"containerInstances", json::array{json::string(instance_arn_)}}});
    return std::string(r["tasks"].as_array().at(0).as_object()["taskArn"].as_string());
  }

  // DescribeDrainHolds as account A: edge id -> drainTimeoutSeconds.
  std::map<std::string, int64_t> Holders(const std::string& task) {
    Answer r = Drain(a_, "DescribeDrainHolds", {{"taskArn", task}});
    EXPECT_EQ(r.status, 200) << json::serialize(r.body);
    std::map<std::string, int64_t> out;
    if (r.status != 200) return out;
    for (const json::value& h : r.body["holds"].as_array())
      out[std::string(h.at("edgeId").as_string())] = h.at("drainTimeoutSeconds").to_number<int64_t>();
    return out;
  }

  static json::object PutBody(std::string_view edge, int64_t lease, const json::array& holds) {
    return {{"edgeId", edge}, {"leaseSeconds", lease}, {"holds", holds}};
  }
  static json::object HoldOf(const std::string& task, int64_t timeout) {
    return {{"taskArn", task}, {"drainTimeoutSeconds", timeout}};
  }

  aws::JsonClientOptions ClientFor(const aws::SigningCredentials& as) const { return served_->ClientOptions(as); }

  std::unique_ptr<testing::ServedNode> served_;
  uint16_t port_ = 0;
  aws::SigningCredentials a_, b_, agent_;
  std::string account_a_, instance_arn_, task_, other_task_;
};

// Two edges each hold the task; DescribeDrainHolds shows both; each releases its own.
TEST_F(EdgeDrainTest, TwoEdgesPutDescribeAndReleaseTheirOwnHolds) {
  Answer put = Drain(a_, "PutDrainHolds", PutBody("edge-a", 15, {HoldOf(task_, 30), HoldOf(other_task_, 5)}));
  ASSERT_EQ(put.status, 200) << json::serialize(put.body);
  EXPECT_EQ(put.body["held"].to_number<int64_t>(), 2);
  EXPECT_TRUE(put.body["ignored"].as_array().empty());
  // The edge's own client (`paddock edge`): whole seconds, rounded up.
  edge::RemoteHoldSink sink(ClientFor(a_));
  ASSERT_TRUE(sink.Put("edge-b", {{task_, milliseconds(7'500)}}, seconds(15)).ok());
  EXPECT_EQ(Holders(task_), (std::map<std::string, int64_t>{{"edge-a", 30}, {"edge-b", 8}}));
  EXPECT_EQ(Holders(other_task_), (std::map<std::string, int64_t>{{"edge-a", 5}}));
  Answer described = Drain(a_, "DescribeDrainHolds", {{"taskArn", task_}});
  for (const json::value& h : described.body["holds"].as_array()) {
    const double until = h.at("leaseExpiresAt").to_number<double>();
    const double now = std::chrono::duration<double>(SystemClock::Get().Now().time_since_epoch()).count();
    EXPECT_GT(until, now);
    EXPECT_LE(until, now + 16);
  }
  // The nodes' own view agrees: the same owner the agents wait on.
  auto owner = served_->node().drain_holds().Holds(Scope{AccountId(account_a_), Region("us-east-1")}, task_,
                                                   SystemClock::Get().Now());
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(owner->size(), 2u);

  ASSERT_TRUE(sink.Release("edge-b", task_).ok());
  EXPECT_EQ(Holders(task_), (std::map<std::string, int64_t>{{"edge-a", 30}}));
  Answer released = Drain(a_, "ReleaseDrainHold", {{"edgeId", "edge-a"}, {"taskArn", task_}});
  EXPECT_EQ(released.status, 200) << json::serialize(released.body);
  EXPECT_TRUE(Holders(task_).empty());
  // Releasing what the edge no longer holds is OK; a heartbeat with fewer holds drops the rest.
  EXPECT_EQ(Drain(a_, "ReleaseDrainHold", {{"edgeId", "edge-a"}, {"taskArn", task_}}).status, 200);
  ASSERT_EQ(Drain(a_, "PutDrainHolds", PutBody("edge-a", 15, {})).status, 200);
  EXPECT_TRUE(Holders(other_task_).empty());
}

// A STOPPED or unknown task is not held: it comes back in `ignored`.
TEST_F(EdgeDrainTest, AStoppedOrUnknownTaskIsIgnored) {
  const std::string unknown = task_.substr(0, task_.rfind('/') + 1) + "0123456789abcdef0123456789abcdef";
  Answer put = Drain(a_, "PutDrainHolds", PutBody("edge-a", 15, {HoldOf(task_, 30), HoldOf(unknown, 30)}));
  ASSERT_EQ(put.status, 200) << json::serialize(put.body);
  EXPECT_EQ(put.body["held"].to_number<int64_t>(), 1);
  EXPECT_EQ(put.body["ignored"].as_array(), (json::array{json::string(unknown)}));
}

// `arn` with its region replaced by `region`.
std::string InRegion(std::string arn, std::string_view region) {
  return arn.replace(arn.find("us-east-1"), 9, region);
}

// Bad input: InvalidParameterException with a message that names the rule, and nothing written.
TEST_F(EdgeDrainTest, BadInputIsInvalidParameterAndWritesNothing) {
  struct Case {
    std::string what;
    json::object body;
    std::string message_has;
  };
  const std::vector<Case> cases = {
      {"an edge id with a space", PutBody("edge a", 15, {HoldOf(task_, 30)}), "Invalid edge id"},
      {"an empty edge id", PutBody("", 15, {HoldOf(task_, 30)}), "Invalid edge id"},
      {"a 65-character edge id", PutBody(std::string(65, 'e'), 15, {HoldOf(task_, 30)}), "Invalid edge id"},
      {"a lease of 0 s", PutBody("edge-a", 0, {HoldOf(task_, 30)}), "it must be 1 to 300 s"},
      {"a lease of 301 s", PutBody("edge-a", 301, {HoldOf(task_, 30)}), "it must be 1 to 300 s"},
      {"a drainTimeout of 3601 s", PutBody("edge-a", 15, {HoldOf(task_, 3601)}), "it must be 0 to 3600 s"},
      {"a negative drainTimeout", PutBody("edge-a", 15, {HoldOf(task_, -1)}), "it must be 0 to 3600 s"},
      {"a task id, not an ARN", PutBody("edge-a", 15, {HoldOf(task_, 30), HoldOf("0123abcd", 30)}), "is not a task ARN"},
      {"another region's task",
       PutBody("edge-a", 15, {HoldOf(InRegion(task_, "eu-west-1"), 30)}),
       "in region eu-west-1"},
  };
  for (const Case& c : cases) {
    Answer r = Drain(a_, "PutDrainHolds", c.body);
    EXPECT_EQ(r.status, 400) << c.what;
    EXPECT_EQ(r.type(), "InvalidParameterException") << c.what << ": " << json::serialize(r.body);
    EXPECT_NE(json::serialize(r.body).find(c.message_has), std::string::npos) << c.what << ": " << json::serialize(r.body);
    EXPECT_TRUE(Holders(task_).empty()) << c.what;  // not even the valid hold beside the bad one
  }
  Answer release = Drain(a_, "ReleaseDrainHold", {{"edgeId", "bad id"}, {"taskArn", task_}});
  EXPECT_EQ(release.type(), "InvalidParameterException") << json::serialize(release.body);
  Answer describe = Drain(a_, "DescribeDrainHolds", {{"taskArn", "not-an-arn"}});
  EXPECT_EQ(describe.type(), "InvalidParameterException") << json::serialize(describe.body);
  // The model's own validation: a missing member, a string for an integer.
  Answer missing = Drain(a_, "PutDrainHolds", {{"edgeId", "edge-a"}, {"holds", json::array{}}});
  EXPECT_EQ(missing.status, 400);
  Answer mistyped = Drain(a_, "PutDrainHolds", {{"edgeId", "edge-a"}, {"leaseSeconds", "15"}, {"holds", json::array{}}});
  EXPECT_EQ(mistyped.status, 400);
  EXPECT_TRUE(Holders(task_).empty());
}

// Tenancy: an edge of account B can neither hold, release nor see account A's task; nothing of a
// refused Put is written, not even its holds on B's own tasks.
TEST_F(EdgeDrainTest, AnEdgeOfAnotherAccountCanNeitherHoldReleaseNorSeeATask) {
  ASSERT_EQ(Drain(a_, "PutDrainHolds", PutBody("edge-a", 15, {HoldOf(task_, 30)})).status, 200);
  Answer put = Drain(b_, "PutDrainHolds", PutBody("edge-b", 15, {HoldOf(task_, 30)}));
  EXPECT_EQ(put.status, 400);
  EXPECT_EQ(put.type(), "AccessDeniedException") << json::serialize(put.body);
  Answer release = Drain(b_, "ReleaseDrainHold", {{"edgeId", "edge-a"}, {"taskArn", task_}});
  EXPECT_EQ(release.type(), "AccessDeniedException") << json::serialize(release.body);
  Answer describe = Drain(b_, "DescribeDrainHolds", {{"taskArn", task_}});
  EXPECT_EQ(describe.type(), "AccessDeniedException") << json::serialize(describe.body);
  EXPECT_FALSE(describe.body.contains("holds"));
  // A's holds are as A put them: B's Put wrote nothing, its Release released nothing.
  EXPECT_EQ(Holders(task_), (std::map<std::string, int64_t>{{"edge-a", 30}}));
  // B's edge, through `paddock edge`'s client: refused as PermissionDenied.
  edge::RemoteHoldSink sink(ClientFor(b_));
  EXPECT_EQ(sink.Put("edge-b", {{task_, seconds(30)}}, seconds(15)).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(sink.Release("edge-a", task_).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Holders(task_), (std::map<std::string, int64_t>{{"edge-a", 30}}));
  // Same edge id in B's scope is another edge: B's empty heartbeat leaves A's edge-a alone.
  EXPECT_TRUE(sink.Put("edge-a", {}, seconds(15)).ok());
  EXPECT_EQ(Holders(task_), (std::map<std::string, int64_t>{{"edge-a", 30}}));
}

// At most 100 live edges per scope: the 101st is LimitExceededException; a live one still renews.
TEST_F(EdgeDrainTest, ANewEdgePastTheBoundIsLimitExceeded) {
  for (size_t i = 0; i < ecs::drain::kMaxEdgesPerScope; ++i)
    ASSERT_EQ(Drain(a_, "PutDrainHolds", PutBody(fmt::format("edge-{}", i), 15, {})).status, 200) << i;
  Answer more = Drain(a_, "PutDrainHolds", PutBody("one-more", 15, {HoldOf(task_, 30)}));
  EXPECT_EQ(more.status, 400);
  EXPECT_EQ(more.type(), "LimitExceededException") << json::serialize(more.body);
  EXPECT_TRUE(Holders(task_).empty());
  EXPECT_EQ(Drain(a_, "PutDrainHolds", PutBody("edge-0", 15, {HoldOf(task_, 30)})).status, 200);
  edge::RemoteHoldSink sink(ClientFor(a_));
  EXPECT_EQ(sink.Put("one-more", {}, seconds(15)).code(), StatusCode::kResourceExhausted);
}

// A container instance's agent credential speaks for its instance only: it holds no drains.
TEST_F(EdgeDrainTest, AnAgentCredentialIsRefused) {
  Answer put = Drain(agent_, "PutDrainHolds", PutBody("edge-a", 15, {HoldOf(task_, 30)}));
  EXPECT_EQ(put.type(), "AccessDeniedException") << json::serialize(put.body);
  EXPECT_TRUE(Holders(task_).empty());
}

// An endpoint without the service (real ECS, an older Paddock): the sink says so once, then holds
// nothing and calls no more.
TEST(RemoteHoldSinkTest, StopsAtAnEndpointWithoutTheService) {
  std::atomic<int> calls{0};
  http::Server server({}, [&](const http::Request&) {
    ++calls;
    http::Response resp;
    resp.status = 400;
    resp.body = R"({"__type":"UnknownOperationException","message":"Unknown operation."})";
    return resp;
  });
  auto port = server.Start();
  ASSERT_TRUE(port.ok());
  edge::RemoteHoldSink sink({.host = "127.0.0.1", .port = *port, .credentials = {"AKIDEDGE", "secret"}});
  Status first = sink.Put("edge-a", {{"arn:aws:ecs:us-east-1:123456789012:task/web/a", seconds(30)}}, seconds(15));
  EXPECT_EQ(first.code(), StatusCode::kFailedPrecondition) << first.ToString();
  EXPECT_TRUE(sink.unsupported());
  EXPECT_TRUE(sink.Put("edge-a", {}, seconds(15)).ok());
  EXPECT_TRUE(sink.Release("edge-a", "arn:aws:ecs:us-east-1:123456789012:task/web/a").ok());
  EXPECT_EQ(calls.load(), 1);
}

TEST(DefaultEdgeIdTest, IsAlwaysAValidEdgeId) {
  EXPECT_EQ(DefaultEdgeId("node-1.example", 4242), "edge-node-1.example-4242");
  EXPECT_TRUE(ecs::drain::CheckEdgeId(DefaultEdgeId("node-1.example", 4242)).ok());
  const std::string odd = DefaultEdgeId("a host+with:odd/chars", 7);
  EXPECT_EQ(odd, "edge-a-host-with-odd-chars-7");
  const std::string long_id = DefaultEdgeId(std::string(200, 'h'), 123456);
  EXPECT_EQ(long_id.size(), ecs::drain::kMaxEdgeIdLength);
  EXPECT_TRUE(long_id.ends_with("-123456")) << long_id;
  EXPECT_TRUE(ecs::drain::CheckEdgeId(long_id).ok());
  EXPECT_FALSE(ecs::drain::CheckEdgeId("").ok());
  EXPECT_FALSE(ecs::drain::CheckEdgeId("a/b").ok());
}

}  // namespace
}  // namespace paddock::cli
