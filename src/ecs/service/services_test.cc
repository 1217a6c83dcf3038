#include "ecs/service/services.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <thread>
#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::service {
namespace {
namespace json = boost::json;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:user/alice";

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

json::object FargateDef(std::string_view family, std::string_view image = "nginx") {
  return Obj(fmt::format(R"({{"family":"{}","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",)"
                         R"("memory":"512","containerDefinitions":[{{"name":"app","image":"{}"}}]}})",
                         family, image));
}
json::object BridgeDef(std::string_view family) {
  return Obj(fmt::format(R"({{"family":"{}","networkMode":"bridge","containerDefinitions":[{{"name":"app","image":"nginx","memory":64}}]}})",
                         family));
}

json::object Network() {
  return json::object{{"awsvpcConfiguration",
                       json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
}

class ServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clusters_.AddUsage(services_.cluster_usage());
    tds_.AddReferenceCheck(services_.reference_check());
    services_.SetChangeListener([this](const ServiceKey& k) { changes_.push_back(k.name); });
    ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"prod","capacityProviders":["FARGATE"]})")).ok());
    ASSERT_TRUE(tds_.Register(kScope, kCaller, FargateDef("web"), clock_.Now()).ok());
    ASSERT_TRUE(tds_.Register(kScope, kCaller, FargateDef("web", "nginx:2"), clock_.Now()).ok());
    ASSERT_TRUE(tds_.Register(kScope, kCaller, BridgeDef("ec2"), clock_.Now()).ok());
  }

  // A FARGATE service "name" of web:1 in prod, with `extra` members over the defaults.
  json::object Request(std::string_view name, json::object extra = {}) {
    json::object in{{"cluster", "prod"},         {"serviceName", name}, {"taskDefinition", "web:1"},
                    {"desiredCount", 0},         {"launchType", "FARGATE"},
                    {"networkConfiguration", Network()}};
    for (auto& [k, v] : extra) in[k] = v;
    return in;
  }

  StatusOr<json::object> Create(json::object in) {
    ASSIGN_OR_RETURN(std::string s, services_.Create(kScope, kCaller, in, clock_.Now()));
    return json::parse(s).as_object();
  }
  StatusOr<json::object> Update(json::object in) {
    if (!in.contains("cluster")) in["cluster"] = "prod";
    ASSIGN_OR_RETURN(std::string s, services_.Update(kScope, kCaller, in, clock_.Now()));
    return json::parse(s).as_object();
  }
  StatusOr<json::object> Delete(std::string_view name, bool force = false) {
    json::object in{{"cluster", "prod"}, {"service", name}};
    if (force) in["force"] = true;
    ASSIGN_OR_RETURN(std::string s, services_.Delete(kScope, kCaller, in, clock_.Now()));
    return json::parse(s).as_object();
  }
  // The service as DescribeServices shows it, or nullopt when MISSING.
  std::optional<json::object> Describe(std::string_view name) {
    auto d = services_.Describe(kScope, kCaller,
                                json::object{{"cluster", "prod"}, {"services", json::array{json::string(name)}},
                                             {"include", json::array{"TAGS"}}});
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok() || d->services.empty()) return std::nullopt;
    return json::parse(d->services[0]).as_object();
  }
  std::vector<std::string> ListNames(ListQuery q = {}) {
    if (!q.cluster) q.cluster = "prod";
    auto p = services_.List(kScope, kCaller, q);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    std::vector<std::string> out;
    if (p.ok())
      for (const auto& a : p->arns) out.push_back(a.substr(a.rfind('/') + 1));
    return out;
  }
  ServiceState Load(std::string_view name) {
    std::optional<ServiceState> s;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                         ASSIGN_OR_RETURN(s, services_.LoadState(txn, ServiceKey{kScope, "prod", std::string(name)}));
                         return OkStatus();
                       })
                    .ok());
    EXPECT_TRUE(s.has_value());
    return s.value_or(ServiceState{});
  }
  Status Store(const ServiceState& s) {
    return store_->Write([&](store::WriteTxn& txn) { return services_.StoreState(txn, s, clock_.Now()); });
  }
  bool Referenced(std::string_view family, uint64_t revision) {
    bool out = false;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                         ASSIGN_OR_RETURN(out, services_.reference_check()->IsReferenced(txn, kScope, family, revision));
                         return OkStatus();
                       })
                    .ok());
    return out;
  }
  json::object ServiceDeployment(const json::object& service) {
    auto d = services_.DescribeServiceDeployments(kScope, kCaller,
                                                  {std::string(service.at("currentServiceDeployment").as_string())});
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d->items.size(), 1u);
    return json::parse(d->items.at(0)).as_object();
  }
  json::object ServiceDeploymentOf(std::string_view arn) {
    auto d = services_.DescribeServiceDeployments(kScope, kCaller, {std::string(arn)});
    EXPECT_TRUE(d.ok());
    EXPECT_EQ(d->items.size(), 1u);
    return json::parse(d->items.at(0)).as_object();
  }

  paddock::testing::FakeClock clock_{TimePoint(seconds(1'780'000'000))};
  paddock::testing::TempStore store_;
  cluster::Clusters clusters_{*store_};
  taskdef::TaskDefinitions tds_{*store_};
  Services services_{*store_, tds_, clusters_, Quotas{.services_per_cluster = 4, .tasks_per_service = 50}};
  std::vector<std::string> changes_;
};

void ExpectError(const Status& s, std::string_view type, std::string_view message_part) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(api::AnswerFor(s).type, type) << s.ToString();
  EXPECT_NE(s.message().find(message_part), std::string::npos) << s.message();
}

TEST_F(ServicesTest, CreateRefusesBadInputAndWritesNothing) {
  auto err = [&](json::object extra) { return Create(Request("web", std::move(extra))).status(); };
  ExpectError(Create(Request("bad name!")).status(), "InvalidParameterException", "Service name 'bad name!' is invalid");
  ExpectError(Create(Request(std::string(256, 'a'))).status(), "InvalidParameterException", "is invalid");
  json::object no_count = Request("web");
  no_count.erase("desiredCount");
  ExpectError(Create(no_count).status(), "InvalidParameterException", "desiredCount is required");
  ExpectError(err({{"desiredCount", -1}}), "InvalidParameterException", "desiredCount must be between 0 and 50");
  ExpectError(err({{"desiredCount", 51}}), "InvalidParameterException", "desiredCount must be between 0 and 50");
  ExpectError(err({{"schedulingStrategy", "DAEMON"}, {"desiredCount", 1}}), "InvalidParameterException",
              "The daemon scheduling strategy does not support a desired count");
  ExpectError(err({{"capacityProviderStrategy", json::array{json::object{{"capacityProvider", "FARGATE"}}}}}),
              "InvalidParameterException", "Specifying both a launch type and capacity provider strategy");
  ExpectError(err({{"deploymentController", json::object{{"type", "CODE_DEPLOY"}}}}), "InvalidParameterException",
              "CODE_DEPLOY");
  json::object no_net = Request("web");
  no_net.erase("networkConfiguration");
  ExpectError(Create(no_net).status(), "InvalidParameterException",
              "Network Configuration must be provided when networkMode 'awsvpc' is specified.");
  ExpectError(Create(Request("web", {{"taskDefinition", "ec2:1"}, {"launchType", "EC2"}})).status(),
              "InvalidParameterException", "Network Configuration is not valid for the given networkMode");
  ExpectError(err({{"taskDefinition", "ec2:1"}}), "InvalidParameterException",
              "Task definition does not support launch_type FARGATE.");
  ExpectError(err({{"deploymentConfiguration", json::object{{"minimumHealthyPercent", 101}}}}),
              "InvalidParameterException", "minimumHealthyPercent must be between 0 and 100");
  ExpectError(err({{"deploymentConfiguration", json::object{{"maximumPercent", 50}}}}), "InvalidParameterException",
              "maximumPercent must be at least 100");
  ExpectError(err({{"deploymentConfiguration", json::object{{"strategy", "BLUE_GREEN"}}}}),
              "InvalidParameterException", "BLUE_GREEN");
  ExpectError(err({{"enableExecuteCommand", true}}), "InvalidParameterException", "enableExecuteCommand");
  ExpectError(err({{"placementStrategy", json::array{json::object{{"type", "random"}}}}}), "InvalidParameterException",
              "Placement strategies are not supported with FARGATE launch type.");
  ExpectError(err({{"platformVersion", "9.9.9"}}), "PlatformUnknownException", "The specified platform does not exist.");
  ExpectError(err({{"clientToken", std::string(37, 'x')}}), "InvalidParameterException", "clientToken");
  ExpectError(err({{"tags", json::array{json::object{{"key", "aws:x"}, {"value", "1"}}}}}), "InvalidParameterException",
              "aws:");
  ExpectError(err({{"cluster", "nope"}}), "ClusterNotFoundException", "Cluster not found.");
  ExpectError(err({{"taskDefinition", "web:9"}}), "ClientException", "");
  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 2}, clock_.Now()).ok());
  ExpectError(err({{"taskDefinition", "web:2"}}), "ClientException", "TaskDefinition is inactive");
  EXPECT_TRUE(ListNames().empty());
  EXPECT_FALSE(Describe("web").has_value());
  EXPECT_FALSE(Referenced("web", 1));
  EXPECT_TRUE(changes_.empty());
}

TEST_F(ServicesTest, CreateRendersTheServiceWithOnePrimaryDeployment) {
  auto s = Create(Request("web", {{"desiredCount", 2},
                                  {"tags", json::array{json::object{{"key", "team"}, {"value", "core"}}}},
                                  {"propagateTags", "SERVICE"},
                                  {"healthCheckGracePeriodSeconds", 30}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->at("serviceArn"), "arn:aws:ecs:us-east-1:123456789012:service/prod/web");
  EXPECT_EQ(s->at("clusterArn"), "arn:aws:ecs:us-east-1:123456789012:cluster/prod");
  EXPECT_EQ(s->at("status"), "ACTIVE");
  EXPECT_EQ(s->at("desiredCount"), 2);
  EXPECT_EQ(s->at("runningCount"), 0);
  EXPECT_EQ(s->at("launchType"), "FARGATE");
  EXPECT_EQ(s->at("platformVersion"), "LATEST");
  EXPECT_EQ(s->at("taskDefinition"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
  EXPECT_EQ(s->at("schedulingStrategy"), "REPLICA");
  EXPECT_EQ(s->at("propagateTags"), "SERVICE");
  EXPECT_EQ(s->at("healthCheckGracePeriodSeconds"), 30);
  EXPECT_EQ(s->at("createdBy"), json::value(std::string(kCaller)));
  EXPECT_EQ(s->at("deploymentController").at("type"), "ECS");
  EXPECT_EQ(s->at("deploymentConfiguration").at("maximumPercent"), 200);
  EXPECT_EQ(s->at("deploymentConfiguration").at("minimumHealthyPercent"), 100);
  EXPECT_EQ(s->at("deploymentConfiguration").at("deploymentCircuitBreaker").at("enable"), false);
  EXPECT_EQ(s->at("networkConfiguration").at("awsvpcConfiguration").at("assignPublicIp"), "DISABLED");
  EXPECT_EQ(s->at("tags").as_array().size(), 1u);
  EXPECT_TRUE(s->at("events").as_array().empty());
  ASSERT_EQ(s->at("deployments").as_array().size(), 1u);
  const json::object& d = s->at("deployments").as_array()[0].as_object();
  EXPECT_EQ(d.at("status"), "PRIMARY");
  const std::string id(d.at("id").as_string());
  ASSERT_EQ(id.size(), 8u + 19u);
  EXPECT_TRUE(id.starts_with("ecs-svc/"));
  EXPECT_EQ(d.at("desiredCount"), 2);
  EXPECT_EQ(d.at("rolloutState"), "IN_PROGRESS");
  EXPECT_EQ(d.at("rolloutStateReason"), json::value(fmt::format("ECS deployment {} in progress.", id)));
  EXPECT_EQ(d.at("platformVersion"), "1.4.0");
  EXPECT_EQ(d.at("launchType"), "FARGATE");
  // Its service deployment and revision.
  json::object sd = ServiceDeployment(*s);
  EXPECT_EQ(sd.at("status"), "IN_PROGRESS");
  EXPECT_EQ(sd.at("serviceArn"), s->at("serviceArn"));
  std::string revision(sd.at("targetServiceRevision").at("arn").as_string());
  EXPECT_TRUE(revision.starts_with("arn:aws:ecs:us-east-1:123456789012:service-revision/prod/web/")) << revision;
  EXPECT_EQ(s->at("currentServiceRevisions").as_array()[0].at("arn"), json::value(revision));
  auto r = services_.DescribeServiceRevisions(kScope, kCaller, {revision});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->items.size(), 1u);
  json::object rev = json::parse(r->items[0]).as_object();
  EXPECT_EQ(rev.at("taskDefinition"), s->at("taskDefinition"));
  EXPECT_EQ(rev.at("containerImages").as_array()[0].at("image"), "nginx");
  // The revision it pins is referenced; the listener heard of it.
  EXPECT_TRUE(Referenced("web", 1));
  EXPECT_FALSE(Referenced("web", 2));
  EXPECT_EQ(changes_, std::vector<std::string>{"web"});
  EXPECT_EQ(ListNames(), std::vector<std::string>{"web"});
}

TEST_F(ServicesTest, LaunchDefaultsToTheClusterStrategyElseEc2) {
  auto ec2 = Create(Request("a", {{"taskDefinition", "ec2"}}));
  // Without launchType the cluster's default strategy applies; prod has none: EC2.
  json::object in = Request("b", {{"taskDefinition", "ec2"}});
  in.erase("launchType");
  in.erase("networkConfiguration");
  auto b = Create(in);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->at("launchType"), "EC2");
  EXPECT_FALSE(b->contains("platformVersion"));
  ASSERT_TRUE(clusters_.PutCapacityProviders(kScope, "prod", json::array{"FARGATE"},
                                             json::array{json::object{{"capacityProvider", "FARGATE"}, {"weight", 1}}})
                  .ok());
  json::object c_in = Request("c");
  c_in.erase("launchType");
  auto c = Create(c_in);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->contains("launchType"));
  EXPECT_EQ(c->at("capacityProviderStrategy").as_array()[0].at("capacityProvider"), "FARGATE");
  EXPECT_EQ(c->at("capacityProviderStrategy").as_array()[0].at("base"), 0);
  ExpectError(Create(Request("d", {{"launchType", "EC2"}, {"platformVersion", "LATEST"}, {"taskDefinition", "ec2"}})).status(),
              "InvalidParameterException", "The platform version must be null when specifying an EC2 launch type.");
}

TEST_F(ServicesTest, DaemonAndExternalServices) {
  json::object in = Request("d", {{"schedulingStrategy", "DAEMON"}, {"taskDefinition", "ec2"}, {"launchType", "EC2"}});
  in.erase("desiredCount");
  in.erase("networkConfiguration");
  auto d = Create(in);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->at("desiredCount"), 0);
  EXPECT_EQ(d->at("deploymentConfiguration").at("maximumPercent"), 100);
  EXPECT_EQ(d->at("deploymentConfiguration").at("minimumHealthyPercent"), 0);
  json::object fargate_daemon = Request("f", {{"schedulingStrategy", "DAEMON"}});
  fargate_daemon.erase("desiredCount");
  ExpectError(Create(fargate_daemon).status(), "InvalidParameterException",
              "The daemon scheduling strategy does not support the FARGATE launch type");
  // DAEMON: the scheduler keeps desiredCount; a DAEMON service deletes without force.
  ServiceState st = Load("d");
  st.desired_count = 3;
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(Describe("d")->at("desiredCount"), 3);
  ExpectError(Update(json::object{{"service", "d"}, {"desiredCount", 2}}).status(), "InvalidParameterException",
              "daemon");
  EXPECT_TRUE(Delete("d").ok());

  json::object ext = Request("x", {{"deploymentController", json::object{{"type", "EXTERNAL"}}}});
  ext.erase("taskDefinition");
  auto x = Create(ext);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_TRUE(x->at("deployments").as_array().empty());
  EXPECT_TRUE(x->at("taskSets").as_array().empty());
  EXPECT_FALSE(x->contains("taskDefinition"));
  EXPECT_FALSE(x->contains("currentServiceDeployment"));
  ExpectError(Update(json::object{{"service", "x"}, {"taskDefinition", "web:2"}}).status(), "InvalidParameterException",
              "EXTERNAL");
  auto scaled = Update(json::object{{"service", "x"}, {"desiredCount", 3}});
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  EXPECT_EQ(scaled->at("desiredCount"), 3);
}

TEST_F(ServicesTest, CreateIsIdempotentOnlyWithTheSameTokenAndRequest) {
  json::object in = Request("web", {{"clientToken", "tok-1"}});
  auto first = Create(in);
  ASSERT_TRUE(first.ok());
  auto again = Create(in);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(changes_.size(), 1u);  // the repeat changed nothing
  ExpectError(Create(Request("web", {{"clientToken", "tok-1"}, {"desiredCount", 1}})).status(),
              "InvalidParameterException", "Creation of service was not idempotent.");
  ExpectError(Create(Request("web", {{"clientToken", "tok-2"}})).status(), "InvalidParameterException",
              "Creation of service was not idempotent.");
  ExpectError(Create(Request("web")).status(), "InvalidParameterException", "Creation of service was not idempotent.");
  // DRAINING: refused; INACTIVE: the name is reusable and the new service replaces the record.
  ASSERT_TRUE(Delete("web").ok());
  ExpectError(Create(Request("web")).status(), "InvalidParameterException",
              "Unable to Start a service that is still Draining.");
  ServiceState st = Load("web");
  st.status = "INACTIVE";
  ASSERT_TRUE(Store(st).ok());
  auto reborn = Create(Request("web", {{"desiredCount", 1}, {"taskDefinition", "web:2"}}));
  ASSERT_TRUE(reborn.ok()) << reborn.status().ToString();
  EXPECT_EQ(reborn->at("status"), "ACTIVE");
  EXPECT_EQ(reborn->at("serviceArn"), first->at("serviceArn"));
  EXPECT_NE(reborn->at("deployments").as_array()[0].at("id"), first->at("deployments").as_array()[0].at("id"));
  EXPECT_FALSE(Referenced("web", 1));
  EXPECT_TRUE(Referenced("web", 2));
  // The old service's deployments went with it.
  auto old_sd = services_.DescribeServiceDeployments(
      kScope, kCaller, {std::string(first->at("currentServiceDeployment").as_string())});
  ASSERT_TRUE(old_sd.ok());
  EXPECT_EQ(old_sd->failures.size(), 1u);
  clock_.Advance(hours(2));
  EXPECT_EQ(*services_.ReapInactive(clock_.Now()), 0u);  // nothing INACTIVE left to reap
  EXPECT_TRUE(Describe("web").has_value());
}

TEST_F(ServicesTest, ServicesPerClusterQuota) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Create(Request(fmt::format("s{}", i))).ok());
  ExpectError(Create(Request("s4")).status(), "InvalidParameterException", "services per cluster");
}

// Without include TAGS, DescribeServices answers from the renderings it remembers by record bytes:
// the same answer as the tagged path without its tags, and a changed record is rendered anew.
TEST_F(ServicesTest, DescribeWithoutTagsFollowsEveryChangeOfTheRecord) {
  auto plain = [&](std::string_view name) -> std::optional<json::object> {
    auto d = services_.Describe(kScope, kCaller,
                                json::object{{"cluster", "prod"}, {"services", json::array{json::string(name)}}});
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok() || d->services.empty()) return std::nullopt;
    return json::parse(d->services[0]).as_object();
  };
  ASSERT_TRUE(Create(Request("web", {{"desiredCount", 2}})).ok());
  std::optional<json::object> first = plain("web");
  ASSERT_TRUE(first.has_value());
  json::object tagged = *Describe("web");
  EXPECT_TRUE(tagged.erase("tags"));
  EXPECT_EQ(*first, tagged);
  EXPECT_EQ(plain("web"), first);  // remembered: the same answer again

  ASSERT_TRUE(Update(json::object{{"service", "web"}, {"desiredCount", 3}}).ok());
  std::optional<json::object> scaled = plain("web");
  ASSERT_TRUE(scaled.has_value());
  EXPECT_EQ(scaled->at("desiredCount"), 3);
  EXPECT_EQ(scaled->at("deployments").as_array()[0].at("desiredCount"), 3);
  tagged = *Describe("web");
  tagged.erase("tags");
  EXPECT_EQ(*scaled, tagged);

  EXPECT_FALSE(plain("nope").has_value());  // MISSING, as before
  ASSERT_TRUE(Delete("web", /*force=*/true).ok());
  EXPECT_EQ(plain("web")->at("status"), "DRAINING");
}

TEST_F(ServicesTest, UpdateStartsADeploymentOnlyForWhatNeedsOne) {
  auto s = Create(Request("web", {{"desiredCount", 2}}));
  ASSERT_TRUE(s.ok());
  const json::value first_id = s->at("deployments").as_array()[0].at("id");
  const std::string first_sd(s->at("currentServiceDeployment").as_string());

  // desiredCount alone: the PRIMARY's count, no new deployment.
  auto scaled = Update(json::object{{"service", "web"}, {"desiredCount", 3}});
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  ASSERT_EQ(scaled->at("deployments").as_array().size(), 1u);
  EXPECT_EQ(scaled->at("deployments").as_array()[0].at("id"), first_id);
  EXPECT_EQ(scaled->at("deployments").as_array()[0].at("desiredCount"), 3);
  EXPECT_EQ(scaled->at("desiredCount"), 3);
  // The same task definition, placement, deployment configuration, grace: none starts one.
  auto same = Update(json::object{{"service", "web"},
                                  {"taskDefinition", "web:1"},
                                  {"healthCheckGracePeriodSeconds", 10},
                                  {"deploymentConfiguration", json::object{{"minimumHealthyPercent", 50}}}});
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->at("deployments").as_array().size(), 1u);
  EXPECT_EQ(same->at("deploymentConfiguration").at("minimumHealthyPercent"), 50);
  EXPECT_EQ(same->at("deploymentConfiguration").at("maximumPercent"), 200);
  EXPECT_EQ(same->at("healthCheckGracePeriodSeconds"), 10);

  // A new task definition: a new PRIMARY first, the old one ACTIVE with its counts.
  auto moved = Update(json::object{{"service", "web"}, {"taskDefinition", "web:2"}});
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  const json::array& ds = moved->at("deployments").as_array();
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].at("status"), "PRIMARY");
  EXPECT_EQ(ds[0].at("taskDefinition"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:2");
  EXPECT_EQ(ds[0].at("desiredCount"), 3);
  EXPECT_EQ(ds[1].at("status"), "ACTIVE");
  EXPECT_EQ(ds[1].at("id"), first_id);
  EXPECT_EQ(moved->at("taskDefinition"), ds[0].at("taskDefinition"));
  EXPECT_TRUE(Referenced("web", 1));  // the ACTIVE deployment still runs it
  EXPECT_TRUE(Referenced("web", 2));
  EXPECT_EQ(moved->at("currentServiceRevisions").as_array().size(), 2u);
  // The superseded service deployment stopped; the new one names its source.
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("status"), "STOPPED");
  json::object sd = ServiceDeployment(*moved);
  EXPECT_EQ(sd.at("status"), "IN_PROGRESS");
  EXPECT_EQ(sd.at("sourceServiceRevisions").as_array().size(), 1u);

  // forceNewDeployment: another one; network changes too.
  auto forced = Update(json::object{{"service", "web"}, {"forceNewDeployment", true}});
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->at("deployments").as_array().size(), 3u);
  json::object net = Network();
  net["awsvpcConfiguration"].as_object()["assignPublicIp"] = "ENABLED";
  auto renet = Update(json::object{{"service", "web"}, {"networkConfiguration", net}});
  ASSERT_TRUE(renet.ok()) << renet.status().ToString();
  EXPECT_EQ(renet->at("deployments").as_array().size(), 4u);
  EXPECT_EQ(renet->at("deployments").as_array()[0].at("networkConfiguration"), net);
  // Placement never starts one (AWS: "This parameter doesn't trigger a new service deployment").
  ExpectError(Update(json::object{{"service", "web"}, {"placementStrategy", json::array{json::object{{"type", "random"}}}}})
                  .status(),
              "InvalidParameterException", "FARGATE");
}

TEST_F(ServicesTest, ConcurrentUpdatesAreEachAppliedOnce) {
  ASSERT_TRUE(Create(Request("web")).ok());
  constexpr int kPerThread = 10;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        json::object in{{"cluster", "prod"}, {"service", "web"}};
        if (t % 2 == 0) in["forceNewDeployment"] = true;
        else in["desiredCount"] = i;
        auto r = services_.Update(kScope, kCaller, in, clock_.Now());
        if (!r.ok()) {
          ++failures;
          ADD_FAILURE() << r.status().ToString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ServiceState st = Load("web");
  EXPECT_EQ(st.version, 1u + 4u * kPerThread);  // every update read the latest record and bumped it once
  EXPECT_EQ(st.deployments.size(), 1u + 2u * kPerThread);  // one new deployment per forced update
  DeploymentQuery q;
  q.cluster = "prod";
  q.service = "web";
  q.limit = 100;
  EXPECT_EQ(services_.ListServiceDeployments(kScope, kCaller, q)->items.size(), 1u + 2u * kPerThread);
}

TEST_F(ServicesTest, UpdateRefusesInactiveRevisionsButAPinnedOneStays) {
  ASSERT_TRUE(Create(Request("web", {{"desiredCount", 1}, {"taskDefinition", "web:2"}})).ok());
  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 2}, clock_.Now()).ok());
  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 1}, clock_.Now()).ok());
  ExpectError(Update(json::object{{"service", "web"}, {"taskDefinition", "web:1"}}).status(), "ClientException",
              "TaskDefinition is inactive");
  auto scaled = Update(json::object{{"service", "web"}, {"desiredCount", 4}});
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  EXPECT_EQ(scaled->at("taskDefinition"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:2");
  EXPECT_EQ(scaled->at("desiredCount"), 4);
  // A forced deployment keeps the pinned revision too.
  auto forced = Update(json::object{{"service", "web"}, {"forceNewDeployment", true}});
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ(forced->at("deployments").as_array()[0].at("taskDefinition"), scaled->at("taskDefinition"));
  // DeleteTaskDefinitions of the pinned revision: it stays until the service no longer uses it.
  ASSERT_TRUE(tds_.Delete(kScope, {"web:2"}, kCaller, clock_.Now()).ok());
  EXPECT_EQ(*tds_.ReapDeleting(kScope), 0u);
}

TEST_F(ServicesTest, UpdateAndDeleteOfUnknownOrInactiveServices) {
  ExpectError(Update(json::object{{"service", "nope"}, {"desiredCount", 1}}).status(), "ServiceNotFoundException",
              "Service not found.");
  ExpectError(Delete("nope").status(), "ServiceNotFoundException", "Service not found.");
  ExpectError(Update(json::object{{"service", "web"}, {"cluster", "nope"}}).status(), "ClusterNotFoundException", "");
  ASSERT_TRUE(Create(Request("web", {{"desiredCount", 2}})).ok());
  ExpectError(Update(json::object{{"service", "arn:aws:ecs:us-east-1:123456789012:service/other/web"}, {"desiredCount", 1}})
                  .status(),
              "ServiceNotFoundException", "Service not found.");
  ExpectError(Update(json::object{{"service", "arn:aws:ecs:us-east-1:999999999999:service/prod/web"}}).status(),
              "AccessDeniedException", "");
  // Delete: refused while scaled above 0, unless forced.
  ExpectError(Delete("web").status(), "InvalidParameterException",
              "The service cannot be stopped while it is scaled above 0.");
  EXPECT_EQ(Describe("web")->at("status"), "ACTIVE");
  auto d = Delete("web", true);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->at("status"), "DRAINING");
  EXPECT_EQ(d->at("desiredCount"), 0);
  EXPECT_EQ(d->at("deployments").as_array()[0].at("desiredCount"), 0);
  ExpectError(Update(json::object{{"service", "web"}, {"desiredCount", 1}}).status(), "ServiceNotActiveException",
              "Service was not ACTIVE.");
  // A repeat answers the service again; DRAINING is not listed but is described.
  auto again = Delete("web");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->at("status"), "DRAINING");
  EXPECT_TRUE(ListNames().empty());  // DRAINING is no longer listed
}

TEST_F(ServicesTest, DrainingToInactiveThenReapedAfterAnHour) {
  ASSERT_TRUE(Create(Request("web")).ok());
  ASSERT_TRUE(Delete("web").ok());
  ServiceState st = Load("web");
  EXPECT_EQ(st.status, "DRAINING");
  // Only DRAINING -> INACTIVE is the scheduler's to make.
  ServiceState back = st;
  back.status = "ACTIVE";
  EXPECT_EQ(Store(back).code(), StatusCode::kInvalidArgument);
  st.status = "INACTIVE";
  st.deployments.clear();
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(Describe("web")->at("status"), "INACTIVE");
  // Its service deployment, still under way, ended with it.
  DeploymentQuery q;
  q.cluster = "prod";
  q.service = "web";
  auto listed = services_.ListServiceDeployments(kScope, kCaller, q);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(json::parse(listed->items[0]).at("status"), "STOPPED");
  EXPECT_TRUE(ListNames().empty());
  EXPECT_FALSE(Referenced("web", 1));
  ExpectError(Update(json::object{{"service", "web"}, {"desiredCount", 1}}).status(), "ServiceNotActiveException", "");
  EXPECT_EQ(Delete("web")->at("status"), "INACTIVE");  // a repeat answers it
  clock_.Advance(minutes(59));
  EXPECT_EQ(*services_.ReapInactive(clock_.Now()), 0u);
  EXPECT_TRUE(Describe("web").has_value());
  clock_.Advance(minutes(2));
  EXPECT_EQ(*services_.ReapInactive(clock_.Now()), 1u);
  auto d = services_.Describe(kScope, kCaller, json::object{{"cluster", "prod"}, {"services", json::array{"web"}}});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->services.empty());
  ASSERT_EQ(d->failures.size(), 1u);
  EXPECT_EQ(d->failures[0].arn, "arn:aws:ecs:us-east-1:123456789012:service/web") << "a name comes back without the cluster";
  EXPECT_EQ(d->failures[0].reason, "MISSING");
}

TEST_F(ServicesTest, ClusterUsageCountsActiveAndDrainingAndBlocksDeleteCluster) {
  ASSERT_TRUE(Create(Request("a")).ok());
  ASSERT_TRUE(Create(Request("b")).ok());
  ASSERT_TRUE(Delete("b").ok());
  auto c = clusters_.Describe(kScope, {"prod"}, {});
  EXPECT_EQ(json::parse(c->clusters[0]).at("activeServicesCount"), 1);
  ExpectError(clusters_.Delete(kScope, "prod").status(), "ClusterContainsServicesException",
              "The Cluster cannot be deleted while Services are active.");
  ASSERT_TRUE(Delete("a").ok());
  ExpectError(clusters_.Delete(kScope, "prod").status(), "ClusterContainsServicesException", "");  // DRAINING counts
  for (std::string name : {"a", "b"}) {
    ServiceState st = Load(name);
    st.status = "INACTIVE";
    ASSERT_TRUE(Store(st).ok());
  }
  EXPECT_TRUE(clusters_.Delete(kScope, "prod").ok());
}

TEST_F(ServicesTest, StoreStateRefusesAStaleVersionAndBumpsIt) {
  ASSERT_TRUE(Create(Request("web", {{"desiredCount", 2}})).ok());
  ServiceState st = Load("web");
  EXPECT_EQ(st.version, 1u);
  ASSERT_EQ(st.deployments.size(), 1u);
  // An API change in between: the scheduler's copy is stale.
  ASSERT_TRUE(Update(json::object{{"service", "web"}, {"desiredCount", 3}}).ok());
  st.deployments[0].running_count = 2;
  EXPECT_EQ(Store(st).code(), StatusCode::kAborted);
  EXPECT_EQ(Describe("web")->at("runningCount"), 0);
  st = Load("web");
  EXPECT_EQ(st.version, 2u);
  EXPECT_EQ(st.deployments[0].desired_count, 3);
  st.deployments[0].running_count = 2;
  st.deployments[0].pending_count = 1;
  st.deployments[0].breaker_reset_at = clock_.Now() + seconds(5);
  st.deployments[0].breaker_unobserved = 1;
  st.deployments[0].launch_failures = 2;
  st.deployments[0].next_launch_at = clock_.Now() + seconds(30);
  st.last_completed = st.deployments[0];
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(Store(st).code(), StatusCode::kAborted);  // the same copy again is stale
  st.version += 1;                                     // ... unless bumped
  ASSERT_TRUE(Store(st).ok());
  ServiceState loaded = Load("web");
  EXPECT_EQ(loaded.version, 4u);
  EXPECT_EQ(loaded.deployments[0].breaker_reset_at, clock_.Now() + seconds(5));
  EXPECT_EQ(loaded.deployments[0].breaker_unobserved, 1);
  EXPECT_EQ(loaded.deployments[0].launch_failures, 2);
  EXPECT_EQ(loaded.deployments[0].next_launch_at, clock_.Now() + seconds(30));
  ASSERT_TRUE(loaded.last_completed.has_value());
  EXPECT_EQ(loaded.last_completed->id, st.deployments[0].id);
  auto shown = Describe("web");
  EXPECT_EQ(shown->at("runningCount"), 2);
  EXPECT_EQ(shown->at("pendingCount"), 1);
  EXPECT_FALSE(shown->at("deployments").as_array()[0].as_object().contains("breakerResetAtMs"));
  EXPECT_FALSE(shown->at("deployments").as_array()[0].as_object().contains("breakerUnobserved"));
}

TEST_F(ServicesTest, EventsArePrependedWithIdsAndCappedAt100) {
  ASSERT_TRUE(Create(Request("web")).ok());
  ServiceState st = Load("web");
  for (int i = 0; i < 70; ++i) st.new_events.push_back(Event{"", {}, fmt::format("event {}", i)});
  ASSERT_TRUE(Store(st).ok());
  st = Load("web");
  EXPECT_TRUE(st.new_events.empty());
  ASSERT_TRUE(st.newest_event.has_value());
  EXPECT_EQ(st.newest_event->message, "event 69");
  for (int i = 70; i < 150; ++i) st.new_events.push_back(Event{"", {}, fmt::format("event {}", i)});
  ASSERT_TRUE(Store(st).ok());
  const json::object shown = *Describe("web");
  const json::array& events = shown.at("events").as_array();
  ASSERT_EQ(events.size(), 100u);
  EXPECT_EQ(events[0].at("message"), "event 149");  // newest first
  EXPECT_EQ(events[99].at("message"), "event 50");
  EXPECT_EQ(events[0].at("id").as_string().size(), 36u);
  EXPECT_NE(events[0].at("id"), events[1].at("id"));
}

// AWS's configurable circuit breaker: resetOnHealthyTask and thresholdConfiguration are stored as
// given, reach the scheduler's state, set the service deployment's threshold, survive an
// UpdateService that gives deploymentCircuitBreaker without them (AWS retains them), and values the
// model admits but AWS's semantics cannot (below 1, a bounded percentage above 100) are refused.
TEST_F(ServicesTest, TheConfigurableCircuitBreakerIsStoredValidatedAndKept) {
  auto breaker = [](json::object cb) { return json::object{{"deploymentCircuitBreaker", std::move(cb)}}; };
  auto s = Create(Request("web", {{"desiredCount", 10},
                                  {"deploymentConfiguration",
                                   breaker({{"enable", true},
                                            {"rollback", true},
                                            {"resetOnHealthyTask", false},
                                            {"thresholdConfiguration", {{"type", "COUNT"}, {"value", 2}}}})}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const json::object& cb = s->at("deploymentConfiguration").at("deploymentCircuitBreaker").as_object();
  EXPECT_EQ(cb.at("resetOnHealthyTask"), false);
  EXPECT_EQ(cb.at("thresholdConfiguration").at("type"), "COUNT");
  ServiceState st = Load("web");
  EXPECT_FALSE(st.reset_on_healthy_task);
  EXPECT_EQ(st.failure_threshold.type, ThresholdType::kCount);
  EXPECT_EQ(st.failure_threshold.value, 2);
  EXPECT_EQ(ServiceDeployment(*s).at("deploymentCircuitBreaker").at("threshold"), 2);

  // Given again without the optional members: they stay.
  auto u = Update(json::object{{"service", "web"},
                               {"deploymentConfiguration", breaker({{"enable", true}, {"rollback", false}})}});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->at("deploymentConfiguration").at("deploymentCircuitBreaker"),
            (json::object{{"enable", true},
                          {"rollback", false},
                          {"resetOnHealthyTask", false},
                          {"thresholdConfiguration", {{"type", "COUNT"}, {"value", 2}}}}));
  EXPECT_FALSE(Load("web").rollback);

  // A percentage of the desired count, unbounded.
  u = Update(json::object{{"service", "web"},
                          {"deploymentConfiguration",
                           breaker({{"enable", true},
                                    {"rollback", true},
                                    {"thresholdConfiguration", {{"type", "UNBOUNDED_PERCENT"}, {"value", 10}}}})}});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(ServiceDeployment(*u).at("deploymentCircuitBreaker").at("threshold"), 1) << "10 % of 10";

  // Defaults: the consecutive model and half the desired count within 3..200.
  auto plain = Create(Request("plain", {{"desiredCount", 10}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(Load("plain").reset_on_healthy_task);
  EXPECT_EQ(Load("plain").failure_threshold.type, ThresholdType::kBoundedPercent);
  EXPECT_EQ(Load("plain").failure_threshold.value, 50);
  EXPECT_EQ(ServiceDeployment(*plain).at("deploymentCircuitBreaker").at("threshold"), 5);

  for (auto [type, value] : {std::pair{"COUNT", 0}, std::pair{"BOUNDED_PERCENT", 101}, std::pair{"UNBOUNDED_PERCENT", -5}}) {
    auto bad = Create(Request("bad", {{"deploymentConfiguration",
                                       breaker({{"enable", true},
                                                {"rollback", true},
                                                {"thresholdConfiguration", {{"type", type}, {"value", value}}}})}}));
    ExpectError(bad.status(), "InvalidParameterException", "thresholdConfiguration.value must be");
    EXPECT_FALSE(Describe("bad").has_value()) << "nothing written";
  }
  ExpectError(Update(json::object{{"service", "web"},
                                  {"deploymentConfiguration",
                                   breaker({{"enable", true},
                                            {"rollback", true},
                                            {"thresholdConfiguration", {{"type", "COUNT"}, {"value", 0}}}})}})
                  .status(),
              "InvalidParameterException", "must be at least 1, but was 0");
  EXPECT_EQ(Load("web").failure_threshold.type, ThresholdType::kUnboundedPercent) << "the refused update changed nothing";
}

TEST_F(ServicesTest, RolloutStatesKeepTheServiceDeploymentsTrue) {
  auto s = Create(Request("web", {{"desiredCount", 1},
                                  {"deploymentConfiguration",
                                   json::object{{"deploymentCircuitBreaker",
                                                 json::object{{"enable", true}, {"rollback", true}}}}}}));
  ASSERT_TRUE(s.ok());
  const std::string first_sd(s->at("currentServiceDeployment").as_string());
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("deploymentCircuitBreaker").at("status"), "MONITORING");
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("deploymentCircuitBreaker").at("threshold"), 3);
  ASSERT_TRUE(Update(json::object{{"service", "web"}, {"desiredCount", 25}}).ok());
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("deploymentCircuitBreaker").at("threshold"), 13);  // ceil(25 / 2)
  ASSERT_TRUE(Update(json::object{{"service", "web"}, {"desiredCount", 1}}).ok());
  ServiceState st = Load("web");
  st.deployments[0].rollout_state = "COMPLETED";
  st.deployments[0].rollout_state_reason = fmt::format("ECS deployment {} completed.", st.deployments[0].id);
  st.deployments[0].running_count = 1;
  st.last_completed = st.deployments[0];
  ASSERT_TRUE(Store(st).ok());
  json::object sd = ServiceDeploymentOf(first_sd);
  EXPECT_EQ(sd.at("status"), "SUCCESSFUL");
  EXPECT_TRUE(sd.contains("finishedAt"));
  EXPECT_EQ(sd.at("targetServiceRevision").at("runningTaskCount"), 1);
  EXPECT_EQ(Describe("web")->at("deployments").as_array()[0].at("rolloutState"), "COMPLETED");

  // A second deployment fails with rollback on. As sched/plan does it in one pass: the failed one
  // becomes ACTIVE and the last completed one PRIMARY again, IN_PROGRESS with its own id.
  auto moved = Update(json::object{{"service", "web"}, {"taskDefinition", "web:2"}});
  ASSERT_TRUE(moved.ok());
  const std::string second_sd(moved->at("currentServiceDeployment").as_string());
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("status"), "SUCCESSFUL");  // finished ones stay finished
  st = Load("web");
  ASSERT_EQ(st.deployments.size(), 2u);
  st.deployments[0].rollout_state = "FAILED";
  st.deployments[0].rollout_state_reason = "ECS deployment circuit breaker: tasks failed to start.";
  st.deployments[0].failed_tasks = 3;
  std::swap(st.deployments[0], st.deployments[1]);
  st.deployments[0].status = "PRIMARY";
  st.deployments[0].rollout_state = "IN_PROGRESS";
  st.deployments[1].status = "ACTIVE";
  ASSERT_TRUE(Store(st).ok());
  sd = ServiceDeploymentOf(second_sd);
  EXPECT_EQ(sd.at("status"), "ROLLBACK_IN_PROGRESS");
  EXPECT_EQ(sd.at("deploymentCircuitBreaker").at("status"), "TRIGGERED");
  EXPECT_EQ(sd.at("deploymentCircuitBreaker").at("failureCount"), 3);
  EXPECT_EQ(sd.at("rollback").at("reason"), "ECS deployment circuit breaker: tasks failed to start.");
  EXPECT_EQ(sd.at("rollback").at("serviceRevisionArn"),
            ServiceDeploymentOf(first_sd).at("targetServiceRevision").at("arn"));
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("status"), "SUCCESSFUL");
  st = Load("web");
  st.deployments[0].rollout_state = "COMPLETED";
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(ServiceDeploymentOf(second_sd).at("status"), "ROLLBACK_SUCCESSFUL");
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("status"), "SUCCESSFUL");
}

TEST_F(ServicesTest, FailedWithRollbackButNothingToReturnToIsRollbackFailed) {
  auto s = Create(Request("web", {{"desiredCount", 1},
                                  {"deploymentConfiguration",
                                   json::object{{"deploymentCircuitBreaker",
                                                 json::object{{"enable", true}, {"rollback", true}}}}}}));
  ASSERT_TRUE(s.ok());
  ServiceState st = Load("web");
  st.deployments[0].rollout_state = "FAILED";
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(ServiceDeployment(*s).at("status"), "ROLLBACK_FAILED");
}

TEST_F(ServicesTest, FailedWithoutRollbackStopsTheServiceDeployment) {
  auto s = Create(Request("web", {{"desiredCount", 1}}));
  ASSERT_TRUE(s.ok());
  ServiceState st = Load("web");
  st.deployments[0].rollout_state = "FAILED";
  ASSERT_TRUE(Store(st).ok());
  json::object sd = ServiceDeployment(*s);
  EXPECT_EQ(sd.at("status"), "STOPPED");
  EXPECT_TRUE(sd.contains("stoppedAt"));
  EXPECT_EQ(sd.at("deploymentCircuitBreaker").at("status"), "DISABLED");
}

TEST_F(ServicesTest, StopServiceDeploymentRequestsARollback) {
  auto s = Create(Request("web", {{"desiredCount", 1}}));
  ASSERT_TRUE(s.ok());
  const std::string arn(s->at("currentServiceDeployment").as_string());
  ExpectError(services_.StopServiceDeployment(kScope, kCaller, json::object{{"serviceDeploymentArn", arn}, {"stopType", "ABORT"}},
                                              clock_.Now())
                  .status(),
              "InvalidParameterException", "ROLLBACK");
  ExpectError(services_.StopServiceDeployment(
                      kScope, kCaller,
                      json::object{{"serviceDeploymentArn", "arn:aws:ecs:us-east-1:123456789012:service-deployment/prod/web/nope"}},
                      clock_.Now())
                  .status(),
              "ServiceDeploymentNotFoundException", "");
  changes_.clear();
  auto stopped = services_.StopServiceDeployment(kScope, kCaller, json::object{{"serviceDeploymentArn", arn}}, clock_.Now());
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(*stopped, arn);
  EXPECT_EQ(changes_.size(), 1u);
  EXPECT_EQ(ServiceDeploymentOf(arn).at("status"), "ROLLBACK_REQUESTED");
  EXPECT_TRUE(Load("web").deployments[0].rollback_requested);
  // No completed deployment to go back to: the scheduler drops the request, and the rollback fails.
  ServiceState st = Load("web");
  st.deployments[0].rollback_requested = false;
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(ServiceDeploymentOf(arn).at("status"), "ROLLBACK_FAILED");
  ExpectError(services_.StopServiceDeployment(kScope, kCaller, json::object{{"serviceDeploymentArn", arn}}, clock_.Now())
                  .status(),
              "ConflictException", "");
}

TEST_F(ServicesTest, StopServiceDeploymentRollsBackToTheCompletedOne) {
  ASSERT_TRUE(Create(Request("web", {{"desiredCount", 1}})).ok());
  ServiceState st = Load("web");
  st.deployments[0].rollout_state = "COMPLETED";
  st.last_completed = st.deployments[0];
  ASSERT_TRUE(Store(st).ok());
  auto moved = Update(json::object{{"service", "web"}, {"taskDefinition", "web:2"}});
  ASSERT_TRUE(moved.ok());
  const std::string arn(moved->at("currentServiceDeployment").as_string());
  ASSERT_TRUE(services_.StopServiceDeployment(kScope, kCaller,
                                              json::object{{"serviceDeploymentArn", arn}, {"stopType", "ROLLBACK"}},
                                              clock_.Now())
                  .ok());
  // The scheduler's rollback (sched/plan): the old PRIMARY ACTIVE, the completed one PRIMARY again.
  st = Load("web");
  ASSERT_TRUE(st.deployments[0].rollback_requested);
  st.deployments[0].rollback_requested = false;
  std::swap(st.deployments[0], st.deployments[1]);
  st.deployments[0].status = "PRIMARY";
  st.deployments[0].rollout_state = "IN_PROGRESS";
  st.deployments[1].status = "ACTIVE";
  ASSERT_TRUE(Store(st).ok());
  json::object sd = ServiceDeploymentOf(arn);
  EXPECT_EQ(sd.at("status"), "ROLLBACK_IN_PROGRESS");
  EXPECT_EQ(sd.at("rollback").at("reason"), "Service deployment rollback requested.");
  st = Load("web");
  st.deployments[0].rollout_state = "COMPLETED";
  ASSERT_TRUE(Store(st).ok());
  EXPECT_EQ(ServiceDeploymentOf(arn).at("status"), "ROLLBACK_SUCCESSFUL");
}

TEST_F(ServicesTest, ListServiceDeploymentsNewestFirstWithFiltersAndPages) {
  ASSERT_TRUE(Create(Request("web")).ok());
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(seconds(10));
    ASSERT_TRUE(Update(json::object{{"service", "web"}, {"forceNewDeployment", true}}).ok());
  }
  DeploymentQuery q;
  q.cluster = "prod";
  q.service = "web";
  q.limit = 2;
  auto p1 = services_.ListServiceDeployments(kScope, kCaller, q);
  ASSERT_TRUE(p1.ok()) << p1.status().ToString();
  ASSERT_EQ(p1->items.size(), 2u);
  EXPECT_EQ(json::parse(p1->items[0]).at("status"), "IN_PROGRESS");
  EXPECT_EQ(json::parse(p1->items[1]).at("status"), "STOPPED");
  ASSERT_FALSE(p1->next.empty());
  q.after = p1->next;
  auto p2 = services_.ListServiceDeployments(kScope, kCaller, q);
  ASSERT_EQ(p2->items.size(), 2u);
  q.after = p2->next;
  auto p3 = services_.ListServiceDeployments(kScope, kCaller, q);
  ASSERT_EQ(p3->items.size(), 1u);
  EXPECT_TRUE(p3->next.empty());
  EXPECT_LT(json::parse(p3->items[0]).at("createdAt").as_double(), json::parse(p2->items[1]).at("createdAt").as_double());
  DeploymentQuery f;
  f.service = "arn:aws:ecs:us-east-1:123456789012:service/prod/web";
  f.cluster = "prod";
  f.statuses = {"IN_PROGRESS"};
  EXPECT_EQ(services_.ListServiceDeployments(kScope, kCaller, f)->items.size(), 1u);
  f.statuses.clear();
  f.created_after = clock_.Now() - seconds(15);
  EXPECT_EQ(services_.ListServiceDeployments(kScope, kCaller, f)->items.size(), 2u);
  f.service = "nope";
  ExpectError(services_.ListServiceDeployments(kScope, kCaller, f).status(), "ServiceNotFoundException", "");
}

// The service-deployment history is bounded (issue 20): the newest kServiceDeploymentHistory
// finished service deployments created within kServiceDeploymentRetention stay, with the
// revisions they name; older ones and their revisions are gone, so a service redeployed forever
// keeps a bounded history.
TEST_F(ServicesTest, ServiceDeploymentHistoryIsPrunedByCountAndAge) {
  auto created = Create(Request("web", {{"desiredCount", 1}}));
  ASSERT_TRUE(created.ok());
  const std::string first_sd(created->at("currentServiceDeployment").as_string());
  const std::string first_rev(ServiceDeploymentOf(first_sd).at("targetServiceRevision").at("arn").as_string());
  auto count = [&] {
    DeploymentQuery q;
    q.cluster = "prod";
    q.service = "web";
    q.limit = 100;
    size_t n = 0;
    while (true) {
      auto page = services_.ListServiceDeployments(kScope, kCaller, q);
      EXPECT_TRUE(page.ok());
      n += page->items.size();
      if (page->next.empty()) return n;
      q.after = page->next;
    }
  };
  auto missing = [&](const StatusOr<DescribedItems>& d) {
    return d.ok() && d->items.empty() && d->failures.size() == 1 && d->failures[0].reason == "MISSING";
  };
  // One rollout after another; as the scheduler does, each replaced deployment leaves
  // deployments[] once its tasks are gone.
  std::vector<std::string> sds = {first_sd};
  auto redeploy = [&] {
    auto moved = Update(json::object{{"service", "web"}, {"forceNewDeployment", true}});
    ASSERT_TRUE(moved.ok());
    sds.emplace_back(moved->at("currentServiceDeployment").as_string());
    ServiceState st = Load("web");
    st.deployments.resize(1);
    ASSERT_TRUE(Store(st).ok());
  };
  for (int64_t i = 1; i < kServiceDeploymentHistory; ++i) {
    clock_.Advance(seconds(10));
    redeploy();
  }
  EXPECT_EQ(count(), static_cast<size_t>(kServiceDeploymentHistory));
  EXPECT_EQ(ServiceDeploymentOf(first_sd).at("status"), "STOPPED");

  clock_.Advance(seconds(10));
  redeploy();
  EXPECT_EQ(count(), static_cast<size_t>(kServiceDeploymentHistory)) << "the oldest finished one left";
  EXPECT_TRUE(missing(services_.DescribeServiceDeployments(kScope, kCaller, {first_sd})));
  EXPECT_EQ(ServiceDeploymentOf(sds[1]).at("status"), "STOPPED");
  // Its revision is still the source of the next one, which is kept.
  auto rev = services_.DescribeServiceRevisions(kScope, kCaller, {first_rev});
  ASSERT_TRUE(rev.ok());
  EXPECT_EQ(rev->items.size(), 1u);
  clock_.Advance(seconds(10));
  redeploy();
  EXPECT_EQ(count(), static_cast<size_t>(kServiceDeploymentHistory));
  EXPECT_TRUE(missing(services_.DescribeServiceDeployments(kScope, kCaller, {sds[1]})));
  EXPECT_TRUE(missing(services_.DescribeServiceRevisions(kScope, kCaller, {first_rev})));

  // Age: 91 days on, the next deployment keeps only itself and the one it replaces (still in
  // deployments[] until its tasks are gone).
  clock_.Advance(std::chrono::hours(24 * 91));
  redeploy();
  EXPECT_EQ(count(), 2u);
  const std::string before_the_gap = sds[sds.size() - 2];
  clock_.Advance(seconds(10));
  redeploy();
  EXPECT_EQ(count(), 2u);
  EXPECT_TRUE(missing(services_.DescribeServiceDeployments(kScope, kCaller, {before_the_gap})));
  clock_.Advance(seconds(10));
  redeploy();
  EXPECT_EQ(count(), 3u) << "a finished one within 90 days stays";
  const std::string current(Describe("web")->at("currentServiceDeployment").as_string());
  EXPECT_EQ(current, sds.back());
  EXPECT_EQ(ServiceDeploymentOf(current).at("status"), "IN_PROGRESS");
}

TEST_F(ServicesTest, ListPagesAndFilters) {
  ASSERT_TRUE(Create(Request("a")).ok());
  ASSERT_TRUE(Create(Request("b", {{"taskDefinition", "ec2"}, {"launchType", "EC2"}})).status().code() ==
              StatusCode::kInvalidArgument);  // bridge definitions take no network configuration
  json::object b = Request("b", {{"taskDefinition", "ec2"}, {"launchType", "EC2"}});
  b.erase("networkConfiguration");
  ASSERT_TRUE(Create(b).ok());
  ASSERT_TRUE(Create(Request("c")).ok());
  ListQuery q;
  q.limit = 2;
  q.cluster = "prod";
  auto p1 = services_.List(kScope, kCaller, q);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->arns.size(), 2u);
  ASSERT_FALSE(p1->next.empty());
  q.after = p1->next;
  auto p2 = services_.List(kScope, kCaller, q);
  ASSERT_EQ(p2->arns.size(), 1u);
  EXPECT_TRUE(p2->next.empty());
  ListQuery ec2;
  ec2.launch_type = "EC2";
  EXPECT_EQ(ListNames(ec2), std::vector<std::string>{"b"});
  ListQuery fargate;
  fargate.launch_type = "FARGATE";
  fargate.limit = 1;
  fargate.cluster = "prod";
  auto f1 = services_.List(kScope, kCaller, fargate);
  ASSERT_EQ(f1->arns.size(), 1u);
  fargate.after = f1->next;
  auto f2 = services_.List(kScope, kCaller, fargate);
  ASSERT_EQ(f2->arns.size(), 1u);
  EXPECT_TRUE(f2->arns[0].ends_with("/c"));
  EXPECT_TRUE(f2->next.empty());
  ListQuery daemon;
  daemon.scheduling_strategy = "DAEMON";
  EXPECT_TRUE(ListNames(daemon).empty());
  ListQuery unknown;
  unknown.cluster = "nope";
  ExpectError(services_.List(kScope, kCaller, unknown).status(), "ClusterNotFoundException", "");
}

TEST_F(ServicesTest, TagsThroughTheOwner) {
  ASSERT_TRUE(Create(Request("web")).ok());
  const std::string arn = "arn:aws:ecs:us-east-1:123456789012:service/prod/web";
  ASSERT_TRUE(services_.TagResource(kScope, arn, {Tag{"a", "1"}, Tag{"b", "2"}}).ok());
  ASSERT_TRUE(services_.UntagResource(kScope, arn, {"a"}).ok());
  auto tags = services_.ListTags(kScope, arn);
  ASSERT_TRUE(tags.ok());
  EXPECT_EQ(*tags, (Tags{Tag{"b", "2"}}));
  // The scheduler's state carries them only when they propagate to tasks.
  EXPECT_EQ(Load("web").tags, Tags{});
  ASSERT_TRUE(Update(json::object{{"service", "web"}, {"propagateTags", "SERVICE"}}).ok());
  EXPECT_EQ(Load("web").tags, (Tags{Tag{"b", "2"}}));
  ExpectError(services_.TagResource(kScope, "arn:aws:ecs:us-east-1:123456789012:service/prod/nope", {Tag{"a", "1"}}),
              "ResourceNotFoundException",
              "The specified resource is not found: arn:aws:ecs:us-east-1:123456789012:service/prod/nope");
  // The old short ARN cannot be tagged (AWS: "Long arn format must be used for tagging operations").
  ExpectError(services_.TagResource(kScope, "arn:aws:ecs:us-east-1:123456789012:service/web", {Tag{"a", "1"}}),
              "InvalidParameterException", "Long arn format must be used for tagging operations");
  ExpectError(services_.ListTags(kScope, "arn:aws:ecs:us-east-1:123456789012:service/web").status(),
              "InvalidParameterException", "Long arn format must be used for tagging operations");
}

TEST_F(ServicesTest, ListAllKeysWalksEveryAccountInPages) {
  const Scope other{AccountId("210987654321"), Region("us-east-1")};
  ASSERT_TRUE(clusters_.Create(other, Obj(R"({"clusterName":"prod"})")).ok());
  ASSERT_TRUE(tds_.Register(other, kCaller, FargateDef("web"), clock_.Now()).ok());
  ASSERT_TRUE(Create(Request("a")).ok());
  ASSERT_TRUE(Create(Request("b")).ok());
  json::object in = Request("c");
  in["networkConfiguration"] = json::object{
      {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(other).subnets[0].id)}}}}};
  ASSERT_TRUE(services_.Create(other, "arn:aws:iam::210987654321:root", in, clock_.Now()).ok());
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  do {
    Services::KeyPage page;
    ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                         ASSIGN_OR_RETURN(page, services_.ListAllKeys(txn, 2, after));
                         return OkStatus();
                       })
                    .ok());
    for (const auto& k : page.keys) seen.push_back(k.scope.account.str() + "/" + k.name);
    after = page.next;
    ++pages;
  } while (!after.empty());
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(seen, (std::vector<std::string>{"123456789012/a", "123456789012/b", "210987654321/c"}));
}

TEST_F(ServicesTest, ReapAccountRemovesEverything) {
  ASSERT_TRUE(Create(Request("web")).ok());
  ASSERT_TRUE(services_.ReapAccount(kScope.account).ok());
  EXPECT_FALSE(Describe("web").has_value());
  EXPECT_FALSE(Referenced("web", 1));
  EXPECT_TRUE(ListNames().empty());
}

TEST_F(ServicesTest, ListServicesByNamespaceHasNoNamespaces) {
  ExpectError(services_.ListByNamespace(kScope, kCaller, json::object{{"namespace", "ns"}}).status(),
              "NamespaceNotFoundException", "");
}

TEST_F(ServicesTest, ListByRegistriesFindsTheServicesOfANamespacesRegistries) {
  const std::string arn_a = "arn:aws:servicediscovery:us-east-1:123456789012:service/srv-aaaaaaaaaaaaaaaa";
  const std::string arn_b = "arn:aws:servicediscovery:us-east-1:123456789012:service/srv-bbbbbbbbbbbbbbbb";
  auto registry = [](const std::string& arn) {
    return json::object{{"serviceRegistries", json::array{json::object{{"registryArn", arn}}}}};
  };
  ASSERT_TRUE(Create(Request("one", registry(arn_a))).ok());
  ASSERT_TRUE(Create(Request("two", registry(arn_b))).ok());
  ASSERT_TRUE(Create(Request("three", registry(arn_a))).ok());
  ASSERT_TRUE(Create(Request("none")).ok());
  const std::string prefix = "arn:aws:ecs:us-east-1:123456789012:service/prod/";
  auto page = services_.ListByRegistries(kScope, {arn_a, arn_b}, 2, "");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->arns, (std::vector<std::string>{prefix + "one", prefix + "three"}));
  ASSERT_FALSE(page->next.empty());
  auto rest = services_.ListByRegistries(kScope, {arn_a, arn_b}, 2, page->next);
  EXPECT_EQ(rest->arns, (std::vector<std::string>{prefix + "two"}));
  EXPECT_TRUE(rest->next.empty());
  EXPECT_TRUE(services_.ListByRegistries(kScope, {}, 10, "")->arns.empty());
  // A DRAINING service is no longer listed.
  ASSERT_TRUE(Delete("two", /*force=*/true).ok());
  EXPECT_EQ(services_.ListByRegistries(kScope, {arn_b}, 10, "")->arns, std::vector<std::string>{});
}


// Registries by ARN: "srv-a" has an A record, "srv-srv" an SRV (and A) record; others are missing.
class FixedDiscovery final : public task::Discovery {
 public:
  StatusOr<task::RegistryFacts> Describe(const Scope&, std::string_view arn) override {
    if (arn.ends_with("/srv-a")) return task::RegistryFacts{.srv = false};
    if (arn.ends_with("/srv-srv")) return task::RegistryFacts{.srv = true};
    return NotFound("no such registry");
  }
  StatusOr<std::optional<std::string>> Register(store::WriteTxn&, const Scope&, std::string_view, std::string_view,
                                                const std::map<std::string, std::string>&) override {
    return std::optional<std::string>();
  }
  Status Deregister(store::WriteTxn&, const Scope&, std::string_view, std::string_view) override { return OkStatus(); }
  void Published() override {}
};

TEST_F(ServicesTest, ServiceRegistriesAreCheckedAsEcsChecksThem) {
  FixedDiscovery discovery;
  services_.SetDiscovery(&discovery);
  json::object def = FargateDef("ported");
  def["containerDefinitions"].as_array()[0].as_object()["portMappings"] =
      json::array{json::object{{"containerPort", 8080}}};
  ASSERT_TRUE(tds_.Register(kScope, kCaller, def, clock_.Now()).ok());
  const std::string prefix = "arn:aws:servicediscovery:us-east-1:123456789012:service/";
  auto with = [&](std::string_view name, json::object reg, std::string_view td = "ported:1") {
    json::object in = Request(name, json::object{{"serviceRegistries", json::array{reg}}});
    in["taskDefinition"] = td;
    return Create(in).status();
  };
  // An A registry with awsvpc needs no port; a port is refused with ECS's text.
  EXPECT_TRUE(with("a", json::object{{"registryArn", prefix + "srv-a"}}).ok());
  ExpectError(with("a-port", json::object{{"registryArn", prefix + "srv-a"}, {"containerName", "app"},
                                          {"containerPort", 8080}}),
              "InvalidParameterException", "do not require a value for 'containerPort'");
  // SRV: a port, or the container's mapped port, but not both.
  EXPECT_TRUE(with("srv-port", json::object{{"registryArn", prefix + "srv-srv"}, {"port", 9000}}).ok());
  EXPECT_TRUE(with("srv-container", json::object{{"registryArn", prefix + "srv-srv"}, {"containerName", "app"},
                                                 {"containerPort", 8080}})
                  .ok());
  ExpectError(with("srv-none", json::object{{"registryArn", prefix + "srv-srv"}}), "InvalidParameterException",
              "require a value for either 'port' or the 'containerName' and 'containerPort' combination");
  ExpectError(with("srv-both", json::object{{"registryArn", prefix + "srv-srv"}, {"port", 9000},
                                            {"containerName", "app"}, {"containerPort", 8080}}),
              "InvalidParameterException", "Specify a value for either 'port' or the 'containerName'");
  ExpectError(with("srv-half", json::object{{"registryArn", prefix + "srv-srv"}, {"containerName", "app"}}),
              "InvalidParameterException", "require both 'containerName' and 'containerPort'");
  ExpectError(with("srv-unmapped", json::object{{"registryArn", prefix + "srv-srv"}, {"containerName", "app"},
                                                {"containerPort", 81}}),
              "InvalidParameterException", "container port 81 specified in serviceRegistries is not a port mapping");
  ExpectError(with("srv-nocontainer", json::object{{"registryArn", prefix + "srv-srv"}, {"containerName", "db"},
                                                   {"containerPort", 8080}}),
              "InvalidParameterException", "The container 'db' specified in serviceRegistries is not in the task");
  ExpectError(with("missing", json::object{{"registryArn", prefix + "srv-gone"}}), "InvalidParameterException",
              "was not found");
  ExpectError(with("no-arn", json::object{{"port", 80}}), "InvalidParameterException", "must specify registryArn");
  ExpectError(with("bad-port", json::object{{"registryArn", prefix + "srv-srv"}, {"port", 70000}}),
              "InvalidParameterException", "must be from 1 to 65535");
  // bridge: a container and its port, and a registry with an SRV record.
  ExpectError(with("bridge", json::object{{"registryArn", prefix + "srv-srv"}}, "ec2:1"), "InvalidParameterException",
              "'bridge' network mode: serviceRegistries require a 'containerName' and 'containerPort'");
  // Nothing of a refused request was stored.
  EXPECT_EQ(ListNames(), (std::vector<std::string>{"a", "srv-container", "srv-port"}));

  // UpdateService checks the registries it is given, and those kept against a new definition.
  ExpectError(Update(json::object{{"service", "a"}, {"serviceRegistries", json::array{json::object{
                                                                             {"registryArn", prefix + "srv-srv"}}}}})
                  .status(),
              "InvalidParameterException", "require a value for either 'port'");
  ExpectError(Update(json::object{{"service", "srv-container"}, {"taskDefinition", "web:1"}}).status(),
              "InvalidParameterException", "not a port mapping of container 'app'");
  auto moved = Update(json::object{{"service", "a"}, {"serviceRegistries", json::array{json::object{
                                                                               {"registryArn", prefix + "srv-srv"},
                                                                               {"port", 80}}}}});
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(Load("a").service_registry->at("registryArn").as_string(), prefix + "srv-srv");
}

}  // namespace
}  // namespace paddock::ecs::service
