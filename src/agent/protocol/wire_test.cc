// The agent protocol's wire forms (wire.h) that carry a task's execution resources and its logs:
// each survives a round trip through JSON text, and malformed input is refused, never guessed at.
#include "agent/protocol/wire.h"
#include "agent/protocol/state_json.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace paddock::agent::protocol {
namespace {
namespace json = boost::json;

// Through serialized text, as the HTTP body carries it.
json::object Reparsed(const json::object& o) { return json::parse(json::serialize(o)).as_object(); }

TEST(WireTest, ExecutionResourcesSurviveTheRoundTrip) {
  ExecutionResources r;
  r.containers.push_back({"web", {{"DB_URL", "postgres://db/app"}, {"EMPTY", ""}}, RegistryAuth{"u", "p\"w"}});
  r.containers.push_back({"side", {{"TOKEN", "t\n0"}}, std::nullopt});
  auto back = DecodeExecutionResources(Reparsed(EncodeExecutionResources(r)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->containers.size(), 2u);
  EXPECT_EQ(back->containers[0].name, "web");
  ASSERT_EQ(back->containers[0].secrets.size(), 2u);
  EXPECT_EQ(back->containers[0].secrets[0].name, "DB_URL");
  EXPECT_EQ(back->containers[0].secrets[0].value, "postgres://db/app");
  EXPECT_EQ(back->containers[0].secrets[1].value, "");
  ASSERT_TRUE(back->containers[0].registry_auth);
  EXPECT_EQ(back->containers[0].registry_auth->password, "p\"w");
  EXPECT_FALSE(back->containers[1].registry_auth);
  EXPECT_EQ(back->containers[1].secrets[0].value, "t\n0");
  EXPECT_EQ(back->failure_reason, "");

  ExecutionResources failed{.containers = {}, .failure_reason = "ResourceInitializationError: unable to pull secrets"};
  auto f = DecodeExecutionResources(Reparsed(EncodeExecutionResources(failed)));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->failure_reason, failed.failure_reason);
}

// A container's networkBindings: a single port as ECS's {containerPort, hostPort}, a port range
// as ECS's {containerPortRange, hostPortRange} without the single ports.
TEST(WireTest, NetworkBindingsOfPortsAndPortRangesSurviveTheRoundTrip) {
  ContainerStateChange c;
  c.name = "web";
  c.last_status = "RUNNING";
  NetworkBinding port, range;
  port.container_port = 80;
  port.host_port = 49153;
  range.protocol = "udp";
  range.container_port_range = "9000-9002";
  range.host_port_range = "49160-49162";
  c.network_bindings = {port, range};
  json::object o = Reparsed(ContainerChangeJson(c));
  EXPECT_EQ(o.at("networkBindings").as_array()[1].as_object(),
            (json::object{{"bindIP", "0.0.0.0"},
                          {"protocol", "udp"},
                          {"containerPortRange", "9000-9002"},
                          {"hostPortRange", "49160-49162"}}));
  ContainerStateChange back = ContainerChangeFromJson(o);
  ASSERT_TRUE(back.network_bindings);
  ASSERT_EQ(back.network_bindings->size(), 2u);
  EXPECT_EQ((*back.network_bindings)[0].host_port, 49153);
  EXPECT_EQ((*back.network_bindings)[0].container_port_range, "");
  EXPECT_EQ((*back.network_bindings)[1].container_port_range, "9000-9002");
  EXPECT_EQ((*back.network_bindings)[1].host_port_range, "49160-49162");
  EXPECT_EQ((*back.network_bindings)[1].protocol, "udp");
}

TEST(WireTest, MalformedExecutionResourcesAreRefused) {
  for (const char* bad : {R"({"containers": "web"})", R"({"containers": [{"secrets": []}]})",
                          R"({"containers": [{"name": "web", "secrets": [{"name": "A"}]}]})",
                          R"({"containers": [{"name": "web", "secrets": [{"name": "A", "value": 1}]}]})",
                          R"({"containers": [{"name": "web", "registryAuth": "u:p"}]})"}) {
    auto r = DecodeExecutionResources(json::parse(bad).as_object());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << bad;
  }
}

TEST(WireTest, LogsCallsAndAnswersSurviveTheRoundTrip) {
  LogsCall call{.container = "web", .stream = "p/web/abc", .create_stream = false,
                .events = {{1700000000123, "one \"quoted\" \\ line"}, {1700000000124, "\x01 control"}}};
  json::object body{{"task", "arn"}};
  EncodeLogsCall(call, body);
  auto back = DecodeLogsCall(Reparsed(body));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->container, "web");
  EXPECT_EQ(back->stream, "p/web/abc");
  EXPECT_FALSE(back->create_stream);
  ASSERT_EQ(back->events.size(), 2u);
  EXPECT_EQ(back->events[0].timestamp_ms, 1700000000123);
  EXPECT_EQ(back->events[0].message, call.events[0].message);
  EXPECT_EQ(back->events[1].message, call.events[1].message);

  LogsAnswer answer = DecodeLogsAnswer(Reparsed(EncodeLogsAnswer({"failed to create Cloudwatch log stream: x", "blocking"})));
  EXPECT_EQ(answer.failure, "failed to create Cloudwatch log stream: x");
  EXPECT_EQ(answer.default_mode, "blocking");
}

TEST(WireTest, ALogEventWithoutATimestampOrMessageIsRefused) {
  for (const char* bad : {R"({"events": [{"message": "x"}]})", R"({"events": [{"timestamp": 1}]})",
                          R"({"events": [{"timestamp": "1", "message": "x"}]})", R"({"events": ["x"]})"}) {
    EXPECT_EQ(DecodeLogsCall(json::parse(bad).as_object()).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(WireTest, DrainAnswersSurviveTheRoundTrip) {
  for (DrainVerdict v : {DrainVerdict::kWait, DrainVerdict::kNoHolds, DrainVerdict::kReleased, DrainVerdict::kTimedOut,
                         DrainVerdict::kLeasesExpired}) {
    EXPECT_EQ(ParseDrainVerdict(DrainVerdictName(v)), v);
    DrainAnswer a{.verdict = v, .deadline = std::nullopt, .holds = 3};
    if (v == DrainVerdict::kWait) a.deadline = FromEpochMillis(1'780'000'030'250);
    auto back = DecodeDrainAnswer(Reparsed(EncodeDrainAnswer(a)));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->verdict, v);
    EXPECT_EQ(back->go(), v != DrainVerdict::kWait);
    EXPECT_EQ(back->holds, 3);
    EXPECT_EQ(back->deadline, a.deadline);
  }
  EXPECT_EQ(DrainVerdictName(DrainVerdict::kTimedOut), "TIMED_OUT");
}

TEST(WireTest, ADrainAnswerWithoutAKnownVerdictIsRefused) {
  EXPECT_EQ(DecodeDrainAnswer(json::object{{"holds", 1}}).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeDrainAnswer(json::object{{"verdict", "GO"}}).status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(ParseDrainVerdict("wait"));
}

}  // namespace
}  // namespace paddock::agent::protocol
