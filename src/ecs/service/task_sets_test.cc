// Task sets of EXTERNAL-controller services (task_sets.cc; docs/contracts/service.md "Task sets").
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/testing/fake_clock.h"
#include "ecs/service/internal/record.h"
#include "ecs/service/services.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::service {
namespace {
namespace json = boost::json;
using namespace std::chrono_literals;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

class TaskSetsTest : public ::testing::Test {
 protected:
  TaskSetsTest() : TaskSetsTest(Quotas{}) {}
  explicit TaskSetsTest(Quotas quotas) : services_(*store_, tds_, clusters_, quotas) {
    tds_.AddReferenceCheck(services_.reference_check());
    clusters_.AddUsage(services_.cluster_usage());
    services_.SetChangeListener([this](const ServiceKey& k) {
      if (k.name == "ext") ++notified_;
    });
    EXPECT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"default"})")).ok());
    for (std::string_view td :
         {R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"512",)"
          R"("containerDefinitions":[{"name":"app","image":"nginx"}]})",
          R"({"family":"plain","containerDefinitions":[{"name":"app","image":"nginx","memory":64}]})"}) {
      auto r = tds_.Register(kScope, kCaller, Obj(td), clock_.Now());
      EXPECT_TRUE(r.ok()) << r.status().ToString();
    }
    subnet_ = vpc::DefaultVpcFor(kScope).subnets[0].id;
  }

  void CreateService(std::string_view name, std::string_view controller, int desired) {
    auto r = services_.Create(kScope, kCaller,
                              Obj(fmt::format(R"({{"serviceName":"{}","desiredCount":{},)"
                                              R"("deploymentController":{{"type":"{}"}}{}}})",
                                              name, desired, controller,
                                              controller == "ECS" ? R"(,"taskDefinition":"plain")" : "")),
                              clock_.Now());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  std::string Network() const {
    return fmt::format(R"("networkConfiguration":{{"awsvpcConfiguration":{{"subnets":["{}"]}}}})", subnet_);
  }

  // CreateTaskSet on "ext" with `extra` members; the TaskSet JSON.
  StatusOr<json::object> Create(std::string_view extra) {
    std::string in = fmt::format(R"({{"cluster":"default","service":"ext","taskDefinition":"web","launchType":"FARGATE",{}{}{}}})",
                                 Network(), extra.empty() ? "" : ",", extra);
    ASSIGN_OR_RETURN(std::string out, services_.CreateTaskSet(kScope, kCaller, Obj(in), clock_.Now()));
    return json::parse(out).as_object();
  }

  ServiceState State(std::string_view name = "ext") {
    std::optional<ServiceState> s;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(s, services_.LoadState(txn, ServiceKey{kScope, "default", std::string(name)}));
      return OkStatus();
    }).ok());
    return s.value_or(ServiceState{});
  }

  // The task-set actions, and CreateTaskSet without a launch check.
  std::string Call(StatusOr<std::string> (Services::*fn)(const Scope&, std::string_view, const json::object&, TimePoint),
                   std::string_view in, Status* error = nullptr) {
    return Result((services_.*fn)(kScope, kCaller, Obj(in), clock_.Now()), error);
  }
  std::string Call(StatusOr<std::string> (Services::*fn)(const Scope&, std::string_view, const json::object&, TimePoint,
                                                         const taskdef::LaunchCheck&),
                   std::string_view in, Status* error = nullptr) {
    return Result((services_.*fn)(kScope, kCaller, Obj(in), clock_.Now(), {}), error);
  }
  std::string Result(StatusOr<std::string> r, Status* error) {
    if (error != nullptr) *error = r.ok() ? OkStatus() : r.status();
    return r.ok() ? *r : std::string();
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  taskdef::TaskDefinitions tds_{*store_};
  cluster::Clusters clusters_{*store_};
  Services services_;
  std::string subnet_;
  int notified_ = 0;
};

TEST_F(TaskSetsTest, CreateMakesAnActiveStabilizingSetWithScaleZeroByDefault) {
  CreateService("ext", "EXTERNAL", 3);
  const int before = notified_;
  const uint64_t version = State().version;
  auto set = Create(R"("externalId":"deploy-1")");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  const std::string id = std::string(set->at("id").as_string());
  ASSERT_TRUE(id.starts_with("ecs-svc/"));
  EXPECT_EQ(id.size(), 8u + 19u);
  EXPECT_EQ(set->at("taskSetArn").as_string(),
            "arn:aws:ecs:us-east-1:123456789012:task-set/default/ext/" + id);
  EXPECT_EQ(set->at("serviceArn").as_string(), "arn:aws:ecs:us-east-1:123456789012:service/default/ext");
  EXPECT_EQ(set->at("clusterArn").as_string(), "arn:aws:ecs:us-east-1:123456789012:cluster/default");
  EXPECT_EQ(set->at("status").as_string(), "ACTIVE");
  EXPECT_EQ(set->at("stabilityStatus").as_string(), "STABILIZING");
  EXPECT_EQ(set->at("externalId").as_string(), "deploy-1");
  EXPECT_EQ(set->at("taskDefinition").as_string(), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
  EXPECT_EQ(set->at("computedDesiredCount").as_int64(), 0);
  EXPECT_EQ(set->at("scale").as_object().at("value").to_number<double>(), 0.0);
  EXPECT_EQ(set->at("scale").as_object().at("unit").as_string(), "PERCENT");
  EXPECT_EQ(set->at("launchType").as_string(), "FARGATE");
  EXPECT_EQ(set->at("platformVersion").as_string(), "1.4.0");
  EXPECT_FALSE(set->contains("startedBy"));
  EXPECT_EQ(notified_, before + 1);

  const ServiceState s = State();
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].id, id);
  EXPECT_EQ(s.deployments[0].status, "ACTIVE");
  EXPECT_EQ(s.deployments[0].external_id, "deploy-1");
  EXPECT_EQ(s.deployments[0].desired_count, 0);
  EXPECT_EQ(s.version, version + 1);
  // The pinned revision is referenced (DeleteTaskDefinitions waits for the set).
  EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(bool referenced, services_.reference_check()->IsReferenced(txn, kScope, "web", 1));
    return referenced ? OkStatus() : NotFound("not referenced");
  }).ok());
}

TEST_F(TaskSetsTest, ComputedDesiredCountAlwaysRoundsUp) {
  EXPECT_EQ(Services::TaskSetDesiredCount(3, 40), 2);  // 1.2 -> 2
  EXPECT_EQ(Services::TaskSetDesiredCount(10, 50), 5);
  EXPECT_EQ(Services::TaskSetDesiredCount(3, 100.0 / 3.0), 1);  // exactly 1, not 2
  EXPECT_EQ(Services::TaskSetDesiredCount(5, 0), 0);
  EXPECT_EQ(Services::TaskSetDesiredCount(1, 0.1), 1);
  CreateService("ext", "EXTERNAL", 3);
  auto set = Create(R"("scale":{"value":40,"unit":"PERCENT"})");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->at("computedDesiredCount").as_int64(), 2);
  EXPECT_EQ(State().deployments[0].scale_percent, 40.0);
}

TEST_F(TaskSetsTest, OnlyExternalActiveServicesOfAnExistingCluster) {
  CreateService("ecs", "ECS", 0);
  CreateService("ext", "EXTERNAL", 0);
  const std::string body = R"("taskDefinition":"web","launchType":"FARGATE",)" + Network();
  Status e;
  Call(&Services::CreateTaskSet, R"({"cluster":"default","service":"ecs",)" + body + "}", &e);
  EXPECT_EQ(api::AnswerFor(e).type, "InvalidParameterException");
  EXPECT_EQ(e.message(),
            "Amazon ECS only supports task set management on services configured to use external deployment "
            "controllers.");
  EXPECT_EQ(State("ecs").deployments.size(), 1u);  // its own deployment only
  Call(&Services::CreateTaskSet, R"({"cluster":"default","service":"nope",)" + body + "}", &e);
  EXPECT_EQ(api::AnswerFor(e).type, "ServiceNotFoundException");
  EXPECT_EQ(e.message(), "Service not found.");
  Call(&Services::CreateTaskSet, R"({"cluster":"other","service":"ext",)" + body + "}", &e);
  EXPECT_EQ(api::AnswerFor(e).type, "ClusterNotFoundException");
  ASSERT_TRUE(services_.Delete(kScope, kCaller, Obj(R"({"service":"ext"})"), clock_.Now()).ok());
  Call(&Services::CreateTaskSet, R"({"cluster":"default","service":"ext",)" + body + "}", &e);
  EXPECT_EQ(api::AnswerFor(e).type, "ServiceNotActiveException");
  EXPECT_EQ(e.message(), "Service was not ACTIVE.");
  EXPECT_TRUE(State().deployments.empty());
}

TEST_F(TaskSetsTest, BadInputChangesNothing) {
  CreateService("ext", "EXTERNAL", 2);
  Status e;
  // awsvpc without a network configuration, as CreateService.
  Call(&Services::CreateTaskSet, R"({"cluster":"default","service":"ext","taskDefinition":"web","launchType":"FARGATE"})",
       &e);
  EXPECT_EQ(e.message(), "Network Configuration must be provided when networkMode 'awsvpc' is specified.");
  // Both a launch type and a strategy.
  auto r = Create(R"("capacityProviderStrategy":[{"capacityProvider":"FARGATE"}])");
  EXPECT_EQ(api::AnswerFor(r.status()).type, "InvalidParameterException");
  // Six load balancers.
  std::string lbs;
  for (int i = 0; i < 6; ++i)
    lbs += fmt::format(R"({}{{"targetGroupArn":"arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t{}/1",)"
                       R"("containerName":"app","containerPort":80}})",
                       i ? "," : "", i);
  r = Create(R"("loadBalancers":[)" + lbs + "]");
  EXPECT_EQ(api::AnswerFor(r.status()).type, "InvalidParameterException");
  // Scale out of range.
  r = Create(R"("scale":{"value":100.5,"unit":"PERCENT"})");
  EXPECT_EQ(api::AnswerFor(r.status()).type, "InvalidParameterException");
  // An unknown definition.
  Call(&Services::CreateTaskSet,
       R"({"cluster":"default","service":"ext","taskDefinition":"missing","launchType":"FARGATE",)" + Network() + "}", &e);
  EXPECT_FALSE(e.ok());
  EXPECT_TRUE(State().deployments.empty());
}

TEST_F(TaskSetsTest, AnInactiveDefinitionIsRefused) {
  CreateService("ext", "EXTERNAL", 1);
  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 1}, clock_.Now()).ok());
  auto r = Create("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(api::AnswerFor(r.status()).type, "ClientException");
  EXPECT_TRUE(State().deployments.empty());
}

class TaskSetQuotaTest : public TaskSetsTest {
 protected:
  TaskSetQuotaTest() : TaskSetsTest(Quotas{.task_sets_per_service = 2}) {}
};

TEST_F(TaskSetQuotaTest, TheQuotaCountsEverySetDrainingOnesToo) {
  CreateService("ext", "EXTERNAL", 0);
  auto a = Create("");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(Create("").ok());
  std::string del = fmt::format(R"({{"cluster":"default","service":"ext","taskSet":"{}"}})", a->at("id").as_string());
  Status e;
  Call(&Services::DeleteTaskSet, del, &e);
  ASSERT_TRUE(e.ok()) << e.ToString();
  auto r = Create("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(api::AnswerFor(r.status()).type, "InvalidParameterException");
  EXPECT_EQ(r.status().message(),
            "2 deployments exist on the service. Unable to create new TaskSet since this exceeds the maximum limit.");
  EXPECT_EQ(State().deployments.size(), 2u);
}

TEST_F(TaskSetsTest, AClientTokenAnswersTheSameRequestWithTheSameSet) {
  CreateService("ext", "EXTERNAL", 1);
  auto a = Create(R"("clientToken":"tok-1")");
  ASSERT_TRUE(a.ok());
  auto b = Create(R"("clientToken":"tok-1")");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->at("id"), b->at("id"));
  auto c = Create(R"("clientToken":"tok-1","externalId":"other")");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(api::AnswerFor(c.status()).type, "InvalidParameterException");
  EXPECT_EQ(State().deployments.size(), 1u);
}

TEST_F(TaskSetsTest, UpdateTaskSetRescales) {
  CreateService("ext", "EXTERNAL", 4);
  auto set = Create("");
  ASSERT_TRUE(set.ok());
  const std::string id(set->at("id").as_string());
  ServiceState steady = State();  // the scheduler found it steady
  steady.deployments[0].stability_status = "STEADY_STATE";
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return services_.StoreState(txn, steady, clock_.Now()); }).ok());
  clock_.Advance(5s);
  const int before = notified_;
  Status e;
  std::string out = Call(&Services::UpdateTaskSet,
                         fmt::format(R"({{"cluster":"default","service":"ext","taskSet":"{}","scale":{{"value":60,"unit":"PERCENT"}}}})",
                                     set->at("taskSetArn").as_string()),
                         &e);
  ASSERT_TRUE(e.ok()) << e.ToString();
  json::object updated = json::parse(out).as_object();
  EXPECT_EQ(updated.at("computedDesiredCount").as_int64(), 3);  // 2.4 -> 3
  EXPECT_GT(updated.at("updatedAt").to_number<double>(), updated.at("createdAt").to_number<double>());
  EXPECT_EQ(State().deployments[0].desired_count, 3);
  EXPECT_EQ(updated.at("stabilityStatus").as_string(), "STABILIZING");  // a new count to reach
  EXPECT_EQ(notified_, before + 1);
  // Out of range: refused, unchanged.
  Call(&Services::UpdateTaskSet,
       fmt::format(R"({{"cluster":"default","service":"ext","taskSet":"{}","scale":{{"value":-1,"unit":"PERCENT"}}}})", id),
       &e);
  EXPECT_EQ(api::AnswerFor(e).type, "InvalidParameterException");
  EXPECT_EQ(State().deployments[0].scale_percent, 60.0);
  // An unknown set.
  Call(&Services::UpdateTaskSet,
       R"({"cluster":"default","service":"ext","taskSet":"ecs-svc/1234","scale":{"value":1,"unit":"PERCENT"}})", &e);
  EXPECT_EQ(api::AnswerFor(e).type, "TaskSetNotFoundException");
}

TEST_F(TaskSetsTest, UpdateServiceDesiredCountRecomputesEverySet) {
  CreateService("ext", "EXTERNAL", 2);
  ASSERT_TRUE(Create(R"("scale":{"value":50,"unit":"PERCENT"})").ok());
  ASSERT_TRUE(Create(R"("scale":{"value":100,"unit":"PERCENT"})").ok());
  ASSERT_TRUE(services_.Update(kScope, kCaller, Obj(R"({"service":"ext","desiredCount":5})"), clock_.Now()).ok());
  const ServiceState s = State();
  ASSERT_EQ(s.deployments.size(), 2u);
  EXPECT_EQ(s.deployments[0].desired_count, 3);  // 2.5 -> 3
  EXPECT_EQ(s.deployments[1].desired_count, 5);
}

TEST_F(TaskSetsTest, DeleteRefusesAScaledSetWithoutForceAndDrainsIt) {
  CreateService("ext", "EXTERNAL", 2);
  auto set = Create(R"("scale":{"value":50,"unit":"PERCENT"})");
  ASSERT_TRUE(set.ok());
  const std::string del =
      fmt::format(R"({{"cluster":"default","service":"ext","taskSet":"{}")", set->at("id").as_string());
  Status e;
  Call(&Services::DeleteTaskSet, del + "}", &e);
  EXPECT_EQ(api::AnswerFor(e).type, "InvalidParameterException");
  EXPECT_EQ(State().deployments[0].status, "ACTIVE");
  std::string out = Call(&Services::DeleteTaskSet, del + R"(,"force":true})", &e);
  ASSERT_TRUE(e.ok()) << e.ToString();
  json::object drained = json::parse(out).as_object();
  EXPECT_EQ(drained.at("status").as_string(), "DRAINING");
  EXPECT_EQ(drained.at("computedDesiredCount").as_int64(), 0);

  // The scheduler's round trip keeps a DRAINING set until it removes it.
  ServiceState s = State();
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].status, "DRAINING");
  s.deployments[0].running_count = 1;
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return services_.StoreState(txn, s, clock_.Now()); }).ok());
  s = State();
  ASSERT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.deployments[0].status, "DRAINING");
  EXPECT_EQ(s.deployments[0].running_count, 1);
  // A repeat answers the draining set; updates and promotion of it are refused.
  Call(&Services::DeleteTaskSet, del + "}", &e);
  EXPECT_TRUE(e.ok()) << e.ToString();
  Call(&Services::UpdateServicePrimaryTaskSet,
       fmt::format(R"({{"cluster":"default","service":"ext","primaryTaskSet":"{}"}})", set->at("id").as_string()), &e);
  EXPECT_EQ(api::AnswerFor(e).type, "InvalidParameterException");
}

TEST_F(TaskSetsTest, DeleteOfAnUnscaledSetNeedsNoForce) {
  CreateService("ext", "EXTERNAL", 2);
  auto set = Create("");
  ASSERT_TRUE(set.ok());
  Status e;
  Call(&Services::DeleteTaskSet,
       fmt::format(R"({{"cluster":"default","service":"ext","taskSet":"{}"}})", set->at("id").as_string()), &e);
  ASSERT_TRUE(e.ok()) << e.ToString();
  EXPECT_EQ(State().deployments[0].status, "DRAINING");
}

TEST_F(TaskSetsTest, ExtrasOfSetsTheSchedulerRemovedArePruned) {
  CreateService("ext", "EXTERNAL", 1);
  auto a = Create(R"("tags":[{"key":"k","value":"v"}])");
  ASSERT_TRUE(a.ok());
  const std::string a_id(a->at("id").as_string());
  ASSERT_TRUE(services_.DeleteTaskSet(kScope, kCaller,
                                      Obj(fmt::format(R"({{"cluster":"default","service":"ext","taskSet":"{}"}})", a_id)),
                                      clock_.Now())
                  .ok());
  ServiceState s = State();  // the scheduler found no task of the DRAINING set and removed it
  s.deployments.clear();
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return services_.StoreState(txn, s, clock_.Now()); }).ok());
  auto extras = [&] {
    json::object out;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto record, internal::LoadRecord(txn, kScope, "default", "ext"));
      if (record && record->contains("taskSetExtras")) out = record->at("taskSetExtras").as_object();
      return OkStatus();
    }).ok());
    return out;
  };
  EXPECT_TRUE(extras().contains(a_id));  // StoreState leaves them alone
  auto b = Create("");
  ASSERT_TRUE(b.ok());
  json::object now = extras();
  EXPECT_FALSE(now.contains(a_id));
  EXPECT_TRUE(now.contains(b->at("id").as_string()));
}

TEST_F(TaskSetsTest, UpdateServicePrimaryTaskSetSwapsThePrimary) {
  CreateService("ext", "EXTERNAL", 1);
  auto a = Create("");
  auto b = Create("");
  ASSERT_TRUE(a.ok() && b.ok());
  auto primary = [&](const json::object& set) {
    Status e;
    std::string out = Call(&Services::UpdateServicePrimaryTaskSet,
                           fmt::format(R"({{"cluster":"default","service":"ext","primaryTaskSet":"{}"}})",
                                       set.at("taskSetArn").as_string()),
                           &e);
    EXPECT_TRUE(e.ok()) << e.ToString();
    return out.empty() ? json::object() : json::parse(out).as_object();
  };
  EXPECT_EQ(primary(*a).at("status").as_string(), "PRIMARY");
  EXPECT_EQ(primary(*b).at("status").as_string(), "PRIMARY");
  const ServiceState s = State();
  ASSERT_EQ(s.deployments.size(), 2u);
  EXPECT_EQ(s.deployments[0].status, "ACTIVE");
  EXPECT_EQ(s.deployments[1].status, "PRIMARY");
  // Naming the primary again changes nothing.
  EXPECT_EQ(primary(*b).at("status").as_string(), "PRIMARY");
  EXPECT_EQ(State().version, s.version);
  // The primary set's launch members became the service's.
  auto svc = services_.Describe(kScope, kCaller, Obj(R"({"services":["ext"]})"));
  ASSERT_TRUE(svc.ok());
  json::object service = json::parse(svc->services[0]).as_object();
  EXPECT_EQ(service.at("launchType").as_string(), "FARGATE");
  EXPECT_EQ(service.at("networkConfiguration").as_object().at("awsvpcConfiguration").as_object().at("subnets"),
            json::array{json::string(subnet_)});
  // And its task definition (moto's test_update_service_primary_task_set; AWS: DescribeServices
  // "returns all fields specified for a primary task set").
  ASSERT_TRUE(service.contains("taskDefinition"));
  EXPECT_EQ(service.at("taskDefinition"), b->at("taskDefinition"));
}

TEST_F(TaskSetsTest, DescribeTaskSetsByIdOrArnWithMissingAndTags) {
  CreateService("ext", "EXTERNAL", 1);
  auto a = Create(R"("tags":[{"key":"team","value":"blue"}],"loadBalancers":[{"targetGroupArn":"arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/tg/1","containerName":"app","containerPort":80}])");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const std::string id(a->at("id").as_string());
  auto d = services_.DescribeTaskSets(
      kScope, kCaller,
      Obj(fmt::format(R"({{"cluster":"default","service":"ext","taskSets":["{}","{}","ecs-svc/42"],"include":["TAGS"]}})",
                      id, a->at("taskSetArn").as_string())));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->items.size(), 2u);
  json::object first = json::parse(d->items[0]).as_object();
  EXPECT_EQ(first.at("tags").as_array().size(), 1u);
  EXPECT_EQ(first.at("loadBalancers").as_array().size(), 1u);
  ASSERT_EQ(d->failures.size(), 1u);
  EXPECT_EQ(d->failures[0].reason, "MISSING");
  EXPECT_EQ(d->failures[0].arn, "arn:aws:ecs:us-east-1:123456789012:task-set/default/ext/ecs-svc/42");
  // Without include TAGS: no tags. Without taskSets: every set.
  d = services_.DescribeTaskSets(kScope, kCaller, Obj(R"({"cluster":"default","service":"ext"})"));
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->items.size(), 1u);
  EXPECT_FALSE(json::parse(d->items[0]).as_object().contains("tags"));
  // Not a task set identifier (a task ARN): AWS's InvalidParameterException.
  d = services_.DescribeTaskSets(
      kScope, kCaller,
      Obj(R"({"cluster":"default","service":"ext","taskSets":["arn:aws:ecs:us-east-1:123456789012:task/default/0123456789abcdef0123456789abcdef"]})"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "Task Set Identifier is invalid");

  // DescribeServices shows the sets in taskSets, with their load balancers.
  auto svc = services_.Describe(kScope, kCaller, Obj(R"({"services":["ext"]})"));
  ASSERT_TRUE(svc.ok());
  json::object service = json::parse(svc->services[0]).as_object();
  ASSERT_EQ(service.at("taskSets").as_array().size(), 1u);
  EXPECT_EQ(service.at("taskSets").as_array()[0].as_object().at("id").as_string(), id);
  EXPECT_EQ(service.at("taskSets").as_array()[0].as_object().at("loadBalancers").as_array().size(), 1u);
  EXPECT_TRUE(service.at("deployments").as_array().empty());
}

TEST_F(TaskSetsTest, TagsByTheSetsArnChangeOnlyThatSet) {
  CreateService("ext", "EXTERNAL", 1);
  auto a = Create(R"("tags":[{"key":"team","value":"blue"}])");
  auto b = Create("");
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string arn(a->at("taskSetArn").as_string()), other(b->at("taskSetArn").as_string());
  auto keys = [&](std::string_view of) {
    std::vector<std::string> out;
    const StatusOr<Tags> tags = services_.ListTags(kScope, of);
    for (const Tag& t : *tags) out.push_back(t.key + "=" + t.value);
    return out;
  };
  ASSERT_TRUE(services_.ListTags(kScope, arn).ok());
  EXPECT_EQ(keys(arn), std::vector<std::string>{"team=blue"});
  ASSERT_TRUE(services_.TagResource(kScope, arn, {Tag{"env", "prod"}, Tag{"team", "green"}}).ok());
  EXPECT_EQ(keys(arn), (std::vector<std::string>{"env=prod", "team=green"}));
  EXPECT_TRUE(keys(other).empty());
  ASSERT_TRUE(services_.UntagResource(kScope, arn, {"team"}).ok());
  EXPECT_EQ(keys(arn), std::vector<std::string>{"env=prod"});
  // DescribeTaskSets include TAGS shows what TagResource wrote.
  auto d = services_.DescribeTaskSets(
      kScope, kCaller, Obj(fmt::format(R"({{"cluster":"default","service":"ext","taskSets":["{}"],"include":["TAGS"]}})", arn)));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(json::serialize(json::parse(d->items[0]).at("tags")), R"([{"key":"env","value":"prod"}])");

  // More than 50 is refused whole; an unknown set, or one of another service, is not found.
  Tags many;
  for (int i = 0; i < 50; ++i) many.push_back(Tag{fmt::format("k{}", i), "v"});
  EXPECT_EQ(api::AnswerFor(services_.TagResource(kScope, arn, many)).type, "InvalidParameterException");
  EXPECT_EQ(keys(arn), std::vector<std::string>{"env=prod"});
  const std::string ghost = "arn:aws:ecs:us-east-1:123456789012:task-set/default/ext/ecs-svc/42";
  EXPECT_EQ(api::AnswerFor(services_.TagResource(kScope, ghost, {Tag{"k", "v"}})).type, "ResourceNotFoundException");
  EXPECT_EQ(api::AnswerFor(services_.ListTags(kScope, ghost).status()).type, "ResourceNotFoundException");
  std::string elsewhere = arn;
  elsewhere.replace(elsewhere.find("/ext/"), 5, "/nope/");
  EXPECT_EQ(api::AnswerFor(services_.ListTags(kScope, elsewhere).status()).type, "ResourceNotFoundException");
}

}  // namespace
}  // namespace paddock::ecs::service
