#include "ecs/task/tasks.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "common/testing/fake_clock.h"
#include "ecs/common/records.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::task {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOther{AccountId("210987654321"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";
constexpr std::string_view kAgent = "fargate-local";

json::object FargateDef(std::string_view family) {
  return json::parse(fmt::format(
                         R"({{"family":"{}","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",)"
                         R"("memory":"512","containerDefinitions":[{{"name":"app","image":"nginx"}},)"
                         R"({{"name":"side","image":"busybox","essential":false}}]}})",
                         family))
      .as_object();
}

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

std::string Subnet(const Scope& s, int i) { return vpc::DefaultVpcFor(s).subnets[i].id; }

json::object Network(std::vector<std::string> subnets) {
  json::array a;
  for (auto& s : subnets) a.push_back(json::string(s));
  return json::object{{"awsvpcConfiguration", json::object{{"subnets", a}}}};
}

std::string Detail(const json::object& task, std::string_view name) {
  for (const auto& d : task.at("attachments").at(0).at("details").as_array())
    if (d.at("name").as_string() == name) return std::string(d.at("value").as_string());
  return {};
}

class TasksTest : public ::testing::Test {
 protected:
  TasksTest() {
    tds_.AddReferenceCheck(tasks_.reference_check());
    clusters_.AddUsage(tasks_.cluster_usage());
    EXPECT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"default"})")).ok());
    EXPECT_TRUE(tds_.Register(kScope, kCaller, FargateDef("web"), clock_.Now()).ok());
  }

  RunRequest Req(std::string td = "web", int64_t count = 1) {
    RunRequest r;
    r.task_definition = std::move(td);
    r.count = count;
    r.launch_type = "FARGATE";
    r.network_configuration = Network({Subnet(kScope, 0), Subnet(kScope, 1)});
    return r;
  }

  std::vector<json::object> RunOk(const RunRequest& r, const Scope& scope = kScope) {
    auto res = tasks_.Run(scope, kCaller, r, clock_.Now());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    std::vector<json::object> out;
    if (res.ok())
      for (const auto& t : res->tasks) out.push_back(Obj(t));
    return out;
  }

  json::object DescribeOne(const std::string& arn) {
    auto d = tasks_.Describe(kScope, std::nullopt, {arn}, false, kCaller);
    EXPECT_TRUE(d.ok() && d->tasks.size() == 1);
    return d.ok() && !d->tasks.empty() ? Obj(d->tasks[0]) : json::object();
  }

  Status Report(const std::string& arn, std::string status, std::string_view agent = kAgent) {
    TaskStateChange c;
    c.last_status = std::move(status);
    return tasks_.ReportState(agent, arn, c, clock_.Now());
  }

  // The stored record of task `arn` says STOPPED, nothing else changed (no stop of the owner's).
  Status ForgeStopped(const std::string& arn) {
    const std::string key = ScopeKey(kScope).Str("default").Str(arn.substr(arn.rfind('/') + 1)).Done();
    return store_->Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rec, txn.Get("tasks", key));
      json::object t = Obj(*rec);
      t["lastStatus"] = "STOPPED";
      return txn.Put("tasks", key, json::serialize(t));
    });
  }

  uint32_t Available(int subnet) {
    uint32_t n = 0;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(n, vpc::AvailableIps(txn, kScope, vpc::DefaultVpcFor(kScope).subnets[subnet]));
      return OkStatus();
    }).ok());
    return n;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  taskdef::TaskDefinitions tds_{*store_};
  cluster::Clusters clusters_{*store_};
  Tasks tasks_{*store_, tds_, clusters_, std::string(kAgent)};
};

TEST_F(TasksTest, RunPinsTheRevisionAndRefusesInactive) {
  auto t = RunOk(Req("web"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].at("taskDefinitionArn"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
  EXPECT_EQ(t[0].at("lastStatus"), "PROVISIONING");
  EXPECT_EQ(t[0].at("desiredStatus"), "RUNNING");
  EXPECT_EQ(t[0].at("group"), "family:web");
  EXPECT_EQ(t[0].at("launchType"), "FARGATE");
  std::string arn(t[0].at("taskArn").as_string());
  EXPECT_TRUE(arn.starts_with("arn:aws:ecs:us-east-1:123456789012:task/default/"));
  EXPECT_EQ(arn.size(), std::string("arn:aws:ecs:us-east-1:123456789012:task/default/").size() + 32);

  // A later revision does not change the running task; the agent sees the pinned document.
  ASSERT_TRUE(tds_.Register(kScope, kCaller, FargateDef("web"), clock_.Now()).ok());
  EXPECT_EQ(DescribeOne(arn).at("taskDefinitionArn"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
  auto specs = tasks_.Assignments(kAgent);
  ASSERT_TRUE(specs.ok());
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].task_definition_arn, "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
  EXPECT_NE((*specs)[0].definition.find("\"nginx\""), std::string::npos);
  ASSERT_TRUE((*specs)[0].network.has_value());
  EXPECT_EQ((*specs)[0].network->prefix_length, 20);
  EXPECT_EQ((*specs)[0].network->gateway, "172.31.0.1");

  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 2}, clock_.Now()).ok());
  auto inactive = tasks_.Run(kScope, kCaller, Req("web:2"), clock_.Now());
  ASSERT_FALSE(inactive.ok());
  EXPECT_EQ(api::AnswerFor(inactive.status()).type, "ClientException");
  EXPECT_NE(inactive.status().message().find("TaskDefinition is inactive"), std::string::npos);
  EXPECT_EQ(RunOk(Req("web"))[0].at("taskDefinitionArn"), "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
}

// A revision deregistered, or deleted and reaped, between RunTask's planning and its transaction:
// the run is refused as it would be after them, and no task is left pinned to a removed revision
// (issue 20).
TEST_F(TasksTest, ARevisionRemovedWhileARunIsPlannedRefusesTheRun) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, FargateDef("gone"), clock_.Now()).ok());  // gone:1
  tasks_.SetBeforeCommitForTest([&] {
    ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"gone", 1}, clock_.Now()).ok());
    auto deleted = tds_.Delete(kScope, {"gone:1"}, kCaller, clock_.Now());
    ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
    auto reaped = tds_.ReapDeleting(kScope);
    ASSERT_TRUE(reaped.ok());
    EXPECT_EQ(*reaped, 1u) << "nothing referenced it yet: it is removed";
  });
  auto run = tasks_.Run(kScope, kCaller, Req("gone:1"), clock_.Now());
  tasks_.SetBeforeCommitForTest(nullptr);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(api::AnswerFor(run.status()).type, "ClientException");
  EXPECT_EQ(run.status().message(), "Unable to describe task definition.");
  auto listed = tasks_.List(kScope, ListQuery{}, kCaller);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->arns.empty()) << "no task was committed";

  // Deregistered only: refused with RunTask's inactive text.
  ASSERT_TRUE(tds_.Register(kScope, kCaller, FargateDef("late"), clock_.Now()).ok());
  tasks_.SetBeforeCommitForTest([&] { ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"late", 1}, clock_.Now()).ok()); });
  auto inactive = tasks_.Run(kScope, kCaller, Req("late:1"), clock_.Now());
  tasks_.SetBeforeCommitForTest(nullptr);
  ASSERT_FALSE(inactive.ok());
  EXPECT_EQ(inactive.status().message(),
            "TaskDefinition is inactive: arn:aws:ecs:us-east-1:123456789012:task-definition/late:1");
  listed = tasks_.List(kScope, ListQuery{}, kCaller);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->arns.empty());
}

// The task listener (the edge's wake-up) hears a launch, a stop and each report, after its commit.
TEST_F(TasksTest, TheTaskListenerHearsLaunchesStopsAndReports) {
  std::vector<std::string> heard;
  tasks_.SetTaskListener([&](const Scope& s) { heard.push_back(s.account.str()); });
  const std::string arn(RunOk(Req("web"))[0].at("taskArn").as_string());
  EXPECT_EQ(heard.size(), 1u);
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  EXPECT_EQ(heard.size(), 2u);
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, "done", kCaller, clock_.Now()).ok());
  EXPECT_EQ(heard.size(), 3u);
  EXPECT_EQ(heard.back(), kScope.account.str());
}

TEST_F(TasksTest, AddressesAreUniqueAndReleasedWhenStopped) {
  std::set<std::string> ips;
  std::vector<std::string> arns;
  for (int i = 0; i < 2; ++i) {
    for (const auto& t : RunOk(Req("web", 10))) {
      std::string ip = Detail(t, "privateIPv4Address");
      EXPECT_EQ(t.at("containers").at(0).at("networkInterfaces").at(0).at("privateIpv4Address").as_string(), ip);
      std::string dashed = ip;
      std::replace(dashed.begin(), dashed.end(), '.', '-');
      EXPECT_EQ(Detail(t, "privateDnsName"), "ip-" + dashed + ".ec2.internal");
      EXPECT_TRUE(Detail(t, "networkInterfaceId").starts_with("eni-"));
      EXPECT_TRUE(Detail(t, "macAddress").starts_with("02:70:ac:1f:"));
      ips.insert(ip);
      arns.emplace_back(t.at("taskArn").as_string());
    }
  }
  EXPECT_EQ(ips.size(), 20u);
  const uint32_t before = Available(0) + Available(1);
  for (const auto& arn : arns) ASSERT_TRUE(Report(arn, "STOPPED").ok());
  EXPECT_EQ(Available(0) + Available(1), before + 20);
  auto specs = tasks_.Assignments(kAgent);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(specs->empty());
  auto t = DescribeOne(arns[0]);
  EXPECT_EQ(t.at("lastStatus"), "STOPPED");
  EXPECT_EQ(t.at("desiredStatus"), "STOPPED");
  EXPECT_EQ(t.at("attachments").at(0).at("status"), "DELETED");
}

TEST_F(TasksTest, AnAssignmentIsReadByItsKeyOnlyForItsOwnAgent) {
  const std::string arn(RunOk(Req("web"))[0].at("taskArn").as_string());
  auto mine = tasks_.Assignment(kAgent, arn);
  ASSERT_TRUE(mine.ok()) << mine.status().message();
  ASSERT_TRUE(mine->has_value());
  EXPECT_EQ((*mine)->task_arn, arn);
  EXPECT_EQ((*mine)->task_definition_arn, "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1");
  ASSERT_TRUE((*mine)->network.has_value());
  EXPECT_FALSE(tasks_.Assignment("another-agent", arn)->has_value());
  EXPECT_FALSE(tasks_.Assignment(kAgent, "arn:aws:ecs:us-east-1:123456789012:task/default/" + std::string(32, '0'))->has_value());
  EXPECT_FALSE(tasks_.Assignment(kAgent, "not an arn")->has_value());
  EXPECT_TRUE(*tasks_.HasAssignmentIn(kAgent, kScope));
  EXPECT_FALSE(*tasks_.HasAssignmentIn(kAgent, kOther));
  EXPECT_FALSE(*tasks_.HasAssignmentIn("another-agent", kScope));

  ASSERT_TRUE(Report(arn, "STOPPED").ok());
  EXPECT_FALSE(tasks_.Assignment(kAgent, arn)->has_value());
  EXPECT_FALSE(*tasks_.HasAssignmentIn(kAgent, kScope));
}

TEST_F(TasksTest, ValidationErrors) {
  auto expect_error = [&](RunRequest r, std::string_view type, std::string_view message) {
    auto res = tasks_.Run(kScope, kCaller, r, clock_.Now());
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(api::AnswerFor(res.status()).type, type);
    EXPECT_NE(res.status().message().find(message), std::string::npos) << res.status().message();
  };
  expect_error(Req("web", 0), "InvalidParameterException", "count");
  expect_error(Req("web", 11), "InvalidParameterException", "count");
  RunRequest bad_subnet = Req();
  bad_subnet.network_configuration = Network({"subnet-0123456789abcdef0"});
  expect_error(bad_subnet, "InvalidParameterException",
               "Error retrieving subnet information for [subnet-0123456789abcdef0]: The subnet ID "
               "'subnet-0123456789abcdef0' does not exist (ECS)");
  RunRequest other_account = Req();  // another account's default subnet is not the caller's
  other_account.network_configuration = Network({Subnet(kOther, 0)});
  expect_error(other_account, "InvalidParameterException", "does not exist");
  RunRequest no_network = Req();
  no_network.network_configuration.reset();
  expect_error(no_network, "InvalidParameterException", "Network Configuration must be provided");
  RunRequest ec2 = Req();
  ec2.launch_type = "EC2";
  expect_error(ec2, "InvalidParameterException", "No Container Instances were found in your cluster.");
  RunRequest omitted = Req();  // no launch type and no default strategy: EC2, as on AWS
  omitted.launch_type.reset();
  expect_error(omitted, "InvalidParameterException", "No Container Instances");
  RunRequest both = Req();
  both.capacity_providers = {"FARGATE"};
  expect_error(both, "InvalidParameterException", "Specifying both a launch type and capacity provider strategy");
  RunRequest no_cluster = Req();
  no_cluster.cluster = "nope";
  expect_error(no_cluster, "ClusterNotFoundException", "Cluster not found.");
  RunRequest bad_size = Req();
  bad_size.overrides = Obj(R"({"cpu":"256","memory":"4096"})");
  expect_error(bad_size, "ClientException", "No Fargate configuration exists for given values: 256 CPU, 4096 memory");
  RunRequest bad_override = Req();
  bad_override.overrides = Obj(R"({"containerOverrides":[{"name":"ghost"}]})");
  expect_error(bad_override, "InvalidParameterException", "ghost is not a container");
  expect_error(Req("missing"), "ClientException", "Unable to describe task definition.");

  // Nothing was written by any refused run.
  auto list = tasks_.List(kScope, ListQuery{}, kCaller);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->arns.empty());
  EXPECT_EQ(Available(0), vpc::DefaultVpcFor(kScope).subnets[0].UsableCount());

  RunRequest sized = Req();
  sized.overrides = Obj(R"({"cpu":"1024","memory":"2048"})");
  auto t = RunOk(sized);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].at("cpu"), "1024");
  EXPECT_EQ(t[0].at("memory"), "2048");
}

TEST_F(TasksTest, ClientTokenIsIdempotentForEightHours) {
  RunRequest r = Req("web", 2);
  r.client_token = "token-1";
  auto first = RunOk(r);
  auto again = RunOk(r);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(first[0].at("taskArn"), again[0].at("taskArn"));
  EXPECT_EQ(first[1].at("taskArn"), again[1].at("taskArn"));

  RunRequest different = r;
  different.started_by = "someone";
  auto conflict = tasks_.Run(kScope, kCaller, different, clock_.Now());
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(api::AnswerFor(conflict.status()).type, "ConflictException");
  EXPECT_NE(conflict.status().message().find(std::string(first[0].at("taskArn").as_string())), std::string::npos);

  clock_.Advance(std::chrono::hours(8) + std::chrono::seconds(1));
  auto later = RunOk(r);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_NE(later[0].at("taskArn"), first[0].at("taskArn"));
  auto list = tasks_.List(kScope, ListQuery{}, kCaller);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->arns.size(), 4u);
}

TEST_F(TasksTest, CapacityProviderStrategiesUseTheClustersProviders) {
  RunRequest strategy = Req();
  strategy.launch_type.reset();
  strategy.capacity_providers = {"FARGATE"};
  auto not_associated = tasks_.Run(kScope, kCaller, strategy, clock_.Now());
  EXPECT_EQ(api::AnswerFor(not_associated.status()).type, "InvalidParameterException");
  EXPECT_NE(not_associated.status().message().find("not associated with the cluster"), std::string::npos);

  ASSERT_TRUE(clusters_
                  .PutCapacityProviders(kScope, "default", json::array{"FARGATE", "FARGATE_SPOT"},
                                        json::parse(R"([{"capacityProvider":"FARGATE_SPOT","weight":1}])").as_array())
                  .ok());
  EXPECT_EQ(RunOk(strategy)[0].at("capacityProviderName"), "FARGATE");
  RunRequest by_default = Req();  // no launch type, no strategy: the cluster's default strategy
  by_default.launch_type.reset();
  json::object t = RunOk(by_default)[0];
  EXPECT_EQ(t.at("capacityProviderName"), "FARGATE_SPOT");
  EXPECT_EQ(t.at("launchType"), "FARGATE");
  RunRequest explicit_type = Req();  // a launch type names no provider
  EXPECT_FALSE(RunOk(explicit_type)[0].contains("capacityProviderName"));
}

TEST_F(TasksTest, ReportsAreMonotonicAndOnlyFromTheOwner) {
  std::string arn(RunOk(Req())[0].at("taskArn").as_string());
  auto denied = Report(arn, "RUNNING", "some-other-agent");
  EXPECT_EQ(api::AnswerFor(denied).type, "AccessDeniedException");
  EXPECT_EQ(DescribeOne(arn).at("lastStatus"), "PROVISIONING");

  TaskStateChange pending;
  pending.last_status = "PENDING";
  pending.pull_started_at = clock_.Now();
  pending.pull_stopped_at = clock_.Now() + std::chrono::milliseconds(300);
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, pending, clock_.Now()).ok());
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  auto t = DescribeOne(arn);
  EXPECT_EQ(t.at("lastStatus"), "RUNNING");
  EXPECT_EQ(t.at("connectivity"), "CONNECTED");
  EXPECT_TRUE(t.contains("startedAt") && t.contains("connectivityAt") && t.contains("pullStartedAt") &&
              t.contains("pullStoppedAt"));
  EXPECT_EQ(t.at("containers").at(0).at("lastStatus"), "RUNNING");
  EXPECT_EQ(t.at("attachments").at(0).at("status"), "ATTACHED");
  ASSERT_TRUE(Report(arn, "PENDING").ok());  // backwards: ignored
  EXPECT_EQ(DescribeOne(arn).at("lastStatus"), "RUNNING");

  // Health moves while RUNNING, both ways: a same-status report carries it.
  TaskStateChange healthy;
  healthy.last_status = "RUNNING";
  healthy.health_status = "HEALTHY";
  ContainerStateChange app;
  app.name = "app";
  app.last_status = "RUNNING";
  app.health_status = "HEALTHY";
  app.image_digest = "sha256:" + std::string(64, 'a');
  app.network_bindings = std::vector<NetworkBinding>{{"0.0.0.0", 80, 49153, "tcp"}};
  healthy.containers.push_back(app);
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, healthy, clock_.Now()).ok());
  t = DescribeOne(arn);
  EXPECT_EQ(t.at("healthStatus"), "HEALTHY");
  EXPECT_EQ(t.at("containers").at(0).at("healthStatus"), "HEALTHY");
  EXPECT_EQ(t.at("containers").at(0).at("imageDigest"), json::value(*app.image_digest));
  EXPECT_EQ(t.at("containers").at(0).at("networkBindings"),
            json::parse(R"([{"bindIP":"0.0.0.0","containerPort":80,"hostPort":49153,"protocol":"tcp"}])"));
  healthy.health_status = "UNHEALTHY";
  healthy.containers[0].health_status = "UNHEALTHY";
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, healthy, clock_.Now()).ok());
  t = DescribeOne(arn);
  EXPECT_EQ(t.at("healthStatus"), "UNHEALTHY");
  EXPECT_EQ(t.at("containers").at(0).at("healthStatus"), "UNHEALTHY");

  TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  stopped.stop_code = "EssentialContainerExited";
  stopped.stopped_reason = "Essential container in task exited";
  ContainerStateChange exited;
  exited.name = "app";
  exited.last_status = "STOPPED";
  exited.exit_code = 3;
  exited.reason = "exited";
  stopped.containers.push_back(exited);
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, stopped, clock_.Now()).ok());
  const int64_t version = DescribeOne(arn).at("version").as_int64();
  ASSERT_TRUE(Report(arn, "RUNNING").ok());  // a late RUNNING after STOPPED changes nothing
  t = DescribeOne(arn);
  EXPECT_EQ(t.at("lastStatus"), "STOPPED");
  EXPECT_EQ(t.at("version").as_int64(), version);
  EXPECT_EQ(t.at("stopCode"), "EssentialContainerExited");
  EXPECT_EQ(t.at("containers").at(0).at("exitCode"), 3);
  EXPECT_EQ(t.at("containers").at(1).at("lastStatus"), "STOPPED");
  for (const char* field : {"stoppingAt", "executionStoppedAt", "stoppedAt"}) EXPECT_TRUE(t.contains(field)) << field;
  EXPECT_EQ(api::AnswerFor(Report(arn, "NOT_A_STATUS")).type, "InvalidParameterException");
}

TEST_F(TasksTest, ListFiltersAndPages) {
  ASSERT_TRUE(tds_.Register(kScope, kCaller, FargateDef("api"), clock_.Now()).ok());
  RunRequest a = Req("web", 3);
  a.started_by = "alice";
  RunOk(a);
  RunRequest b = Req("api", 2);
  b.group = "service:checkout";
  RunOk(b);
  RunRequest c = Req("web", 1);
  c.started_by = "bob";
  std::string stopped_arn(RunOk(c)[0].at("taskArn").as_string());
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, stopped_arn, std::nullopt, kCaller, clock_.Now()).ok());

  auto count = [&](ListQuery q) {
    auto r = tasks_.List(kScope, q, kCaller);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->arns.size() : size_t{999};
  };
  EXPECT_EQ(count(ListQuery{}), 5u);
  ListQuery q;
  q.family = "web";
  EXPECT_EQ(count(q), 3u);
  q = {};
  q.started_by = "alice";
  EXPECT_EQ(count(q), 3u);
  q.family = "api";
  EXPECT_EQ(count(q), 0u);
  q = {};
  q.service_name = "checkout";
  EXPECT_EQ(count(q), 2u);
  q = {};
  q.desired_status = "STOPPED";
  EXPECT_EQ(count(q), 1u);
  q.started_by = "bob";
  EXPECT_EQ(count(q), 1u);
  q = {};
  q.launch_type = "FARGATE";
  EXPECT_EQ(count(q), 5u);
  q.launch_type = "EC2";
  EXPECT_EQ(count(q), 0u);
  q = {};
  q.cluster = "nope";
  EXPECT_EQ(api::AnswerFor(tasks_.List(kScope, q, kCaller).status()).type, "ClusterNotFoundException");

  // Pages of two cover all five exactly once.
  std::set<std::string> seen;
  ListQuery page;
  page.limit = 2;
  int pages = 0;
  do {
    auto r = tasks_.List(kScope, page, kCaller);
    ASSERT_TRUE(r.ok());
    EXPECT_LE(r->arns.size(), 2u);
    for (auto& arn : r->arns) EXPECT_TRUE(seen.insert(arn).second);
    page.after = r->next;
    ++pages;
  } while (!page.after.empty());
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(pages, 3);
  // A family filter with pages, where another filter is checked per candidate.
  ListQuery fp;
  fp.family = "web";
  fp.started_by = "alice";
  fp.limit = 2;
  auto p1 = tasks_.List(kScope, fp, kCaller);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->arns.size(), 2u);
  fp.after = p1->next;
  auto p2 = tasks_.List(kScope, fp, kCaller);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->arns.size(), 1u);
  EXPECT_TRUE(p2->next.empty());
}

TEST_F(TasksTest, DescribeReportsMissingAndTags) {
  RunRequest r = Req();
  r.tags = {Tag{"team", "a"}};
  r.enable_ecs_managed_tags = true;
  ASSERT_TRUE(tds_.TagResource(kScope, taskdef::Ref{"web", 1}, {Tag{"owner", "td"}}).ok());
  r.propagate_tags = "TASK_DEFINITION";
  std::string arn(RunOk(r)[0].at("taskArn").as_string());
  const std::string id = arn.substr(arn.rfind('/') + 1);
  const std::string ghost(32, 'a');
  auto d = tasks_.Describe(kScope, std::nullopt, {id, ghost, "not-an-id", arn}, true, kCaller);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->tasks.size(), 2u);
  ASSERT_EQ(d->failures.size(), 2u);
  EXPECT_EQ(d->failures[0].arn, "arn:aws:ecs:us-east-1:123456789012:task/default/" + ghost);
  EXPECT_EQ(d->failures[0].reason, "MISSING");
  EXPECT_EQ(d->failures[1].reason, "MISSING");
  std::set<std::string> tags;
  const json::object described = Obj(d->tasks[0]);
  for (const auto& t : described.at("tags").as_array())
    tags.insert(fmt::format("{}={}", std::string(t.at("key").as_string()), std::string(t.at("value").as_string())));
  EXPECT_EQ(tags, (std::set<std::string>{"aws:ecs:clusterName=default", "owner=td", "team=a"}));
  auto no_tags = tasks_.Describe(kScope, std::nullopt, {arn}, false, kCaller);
  ASSERT_TRUE(no_tags.ok());
  EXPECT_FALSE(Obj(no_tags->tasks[0]).contains("tags"));
  std::vector<std::string> too_many(101, id);
  EXPECT_EQ(api::AnswerFor(tasks_.Describe(kScope, std::nullopt, too_many, false, kCaller).status()).type, "InvalidParameterException");
  // Another account sees nothing of it; naming its ARN is AccessDenied.
  ASSERT_TRUE(clusters_.Create(kOther, Obj(R"({"clusterName":"default"})")).ok());
  auto other = tasks_.Describe(kOther, std::nullopt, {id}, false, "arn:aws:iam::210987654321:root");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->tasks.empty());
  EXPECT_EQ(api::AnswerFor(tasks_.Describe(kOther, std::nullopt, {arn}, false, "arn:aws:iam::210987654321:root").status()).type,
            "AccessDeniedException");
}

TEST_F(TasksTest, TagsByArnFollowTheTaskUntilItIsReaped) {
  RunRequest r = Req();
  r.tags = {Tag{"team", "a"}};
  r.enable_ecs_managed_tags = true;
  std::string arn(RunOk(r)[0].at("taskArn").as_string());
  const std::string id = arn.substr(arn.rfind('/') + 1);
  auto tags_of = [&](std::string_view of) {
    std::set<std::string> out;
    const StatusOr<Tags> tags = tasks_.ListTags(kScope, of);
    for (const Tag& t : *tags) out.insert(t.key + "=" + t.value);
    return out;
  };
  ASSERT_TRUE(tasks_.ListTags(kScope, arn).ok());
  EXPECT_EQ(tags_of(arn), (std::set<std::string>{"aws:ecs:clusterName=default", "team=a"}));

  ASSERT_TRUE(tasks_.TagResource(kScope, arn, {Tag{"env", "prod"}, Tag{"team", "b"}}).ok());
  EXPECT_EQ(tags_of(arn), (std::set<std::string>{"aws:ecs:clusterName=default", "env=prod", "team=b"}));
  // DescribeTasks include TAGS reads the same tags.
  std::set<std::string> described;
  auto d = tasks_.Describe(kScope, std::nullopt, {arn}, true, kCaller);
  ASSERT_TRUE(d.ok());
  const json::object task = Obj(d->tasks[0]);
  for (const auto& t : task.at("tags").as_array())
    described.insert(fmt::format("{}={}", std::string(t.at("key").as_string()), std::string(t.at("value").as_string())));
  EXPECT_EQ(described, tags_of(arn));
  ASSERT_TRUE(tasks_.UntagResource(kScope, arn, {"team", "absent"}).ok());
  EXPECT_EQ(tags_of(arn), (std::set<std::string>{"aws:ecs:clusterName=default", "env=prod"}));

  // 50 tags of the caller's at most (ECS's own do not count): one more is refused whole.
  Tags many;
  for (int i = 0; i < 50; ++i) many.push_back(Tag{fmt::format("k{}", i), "v"});
  auto over = tasks_.TagResource(kScope, arn, many);
  EXPECT_EQ(api::AnswerFor(over).type, "InvalidParameterException");
  EXPECT_EQ(tags_of(arn).size(), 2u);
  many.pop_back();
  ASSERT_TRUE(tasks_.TagResource(kScope, arn, many).ok());
  EXPECT_EQ(tags_of(arn).size(), 51u);

  // The short ARN is refused; a task that is not there is not found; another account's is denied.
  const Status short_arn = tasks_.TagResource(kScope, "arn:aws:ecs:us-east-1:123456789012:task/" + id, many);
  EXPECT_EQ(api::AnswerFor(short_arn).type, "InvalidParameterException");
  EXPECT_EQ(short_arn.message(), "Long arn format must be used for tagging operations");
  const std::string ghost = "arn:aws:ecs:us-east-1:123456789012:task/default/" + std::string(32, 'a');
  EXPECT_EQ(api::AnswerFor(tasks_.ListTags(kScope, ghost).status()).type, "ResourceNotFoundException");
  EXPECT_EQ(api::AnswerFor(tasks_.TagResource(kScope, ghost, {Tag{"k", "v"}})).type, "ResourceNotFoundException");
  EXPECT_EQ(api::AnswerFor(tasks_.TagResource(kOther, arn, {Tag{"k", "v"}})).type, "AccessDeniedException");

  // A STOPPED task keeps taking tags until it is reaped; then its tags are gone with it.
  ASSERT_TRUE(Report(arn, "STOPPED").ok());
  ASSERT_TRUE(tasks_.TagResource(kScope, arn, {Tag{"k0", "after-stop"}}).ok());
  clock_.Advance(std::chrono::minutes(61));
  ASSERT_TRUE(tasks_.ReapStopped(clock_.Now()).ok());
  EXPECT_EQ(api::AnswerFor(tasks_.ListTags(kScope, arn).status()).type, "ResourceNotFoundException");
  EXPECT_EQ(api::AnswerFor(tasks_.TagResource(kScope, arn, {Tag{"k", "v"}})).type, "ResourceNotFoundException");
}

TEST_F(TasksTest, StopIsIdempotent) {
  std::string arn(RunOk(Req())[0].at("taskArn").as_string());
  auto first = tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now());
  ASSERT_TRUE(first.ok());
  auto t = Obj(*first);
  EXPECT_EQ(t.at("desiredStatus"), "STOPPED");
  EXPECT_EQ(t.at("stopCode"), "UserInitiated");
  EXPECT_EQ(t.at("stoppedReason"), "Task stopped by user");
  EXPECT_TRUE(t.contains("stoppingAt"));
  clock_.Advance(std::chrono::seconds(5));
  auto second = tasks_.Stop(kScope, std::nullopt, arn, std::string("again"), kCaller, clock_.Now());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Obj(*second).at("stoppedReason"), "Task stopped by user");
  EXPECT_EQ(Obj(*second).at("stoppingAt"), t.at("stoppingAt"));
  EXPECT_EQ(Obj(*second).at("version"), t.at("version"));
  auto missing = tasks_.Stop(kScope, std::nullopt, std::string(32, 'b'), std::nullopt, kCaller, clock_.Now());
  EXPECT_EQ(api::AnswerFor(missing.status()).type, "InvalidParameterException");
  EXPECT_EQ(missing.status().message(), "The referenced task was not found.");
  // The agent still owns the stopping task until it reports STOPPED.
  auto specs = tasks_.Assignments(kAgent);
  ASSERT_TRUE(specs.ok());
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].desired_status, "STOPPED");
}

TEST_F(TasksTest, ReferencedRevisionStaysDeleteInProgressUntilItsTaskStops) {
  std::string arn(RunOk(Req("web:1"))[0].at("taskArn").as_string());
  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 1}, clock_.Now()).ok());
  auto del = tds_.Delete(kScope, {"web:1"}, kCaller, clock_.Now());
  ASSERT_TRUE(del.ok());
  ASSERT_TRUE(tds_.ReapDeleting(kScope).ok());
  auto d = tds_.Describe(kScope, taskdef::Ref{"web", 1}, false);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Obj(d->task_definition).at("status"), "DELETE_IN_PROGRESS");
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  ASSERT_TRUE(tds_.ReapDeleting(kScope).ok());
  EXPECT_TRUE(tds_.Describe(kScope, taskdef::Ref{"web", 1}, false).ok());
  ASSERT_TRUE(Report(arn, "STOPPED").ok());
  auto reaped = tds_.ReapDeleting(kScope);
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(*reaped, 1u);
  EXPECT_FALSE(tds_.Describe(kScope, taskdef::Ref{"web", 1}, false).ok());
}

TEST_F(TasksTest, ClusterWithTasksCannotBeDeleted) {
  std::string arn(RunOk(Req())[0].at("taskArn").as_string());
  auto describe = [&] {
    auto d = clusters_.Describe(kScope, {"default"}, cluster::Include{});
    EXPECT_TRUE(d.ok());
    return Obj(d->clusters.at(0));
  };
  EXPECT_EQ(describe().at("pendingTasksCount"), 1);
  auto refused = clusters_.Delete(kScope, "default");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(api::AnswerFor(refused.status()).type, "ClusterContainsTasksException");
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  EXPECT_EQ(describe().at("runningTasksCount"), 1);
  EXPECT_EQ(describe().at("pendingTasksCount"), 0);
  EXPECT_EQ(api::AnswerFor(clusters_.Delete(kScope, "default").status()).type, "ClusterContainsTasksException");
  ASSERT_TRUE(Report(arn, "STOPPED").ok());
  EXPECT_EQ(describe().at("runningTasksCount"), 0);
  EXPECT_TRUE(clusters_.Delete(kScope, "default").ok());
  RunRequest r = Req();
  EXPECT_EQ(api::AnswerFor(tasks_.Run(kScope, kCaller, r, clock_.Now()).status()).type, "ClusterNotFoundException");
}

TEST_F(TasksTest, ReapAccountRemovesTasksAndReleasesAddresses) {
  ASSERT_TRUE(clusters_.Create(kOther, Obj(R"({"clusterName":"default"})")).ok());
  ASSERT_TRUE(tds_.Register(kOther, "arn:aws:iam::210987654321:root", FargateDef("web"), clock_.Now()).ok());
  RunRequest other = Req("web", 2);
  other.network_configuration = Network({Subnet(kOther, 0)});
  other.client_token = "t";
  RunOk(other, kOther);
  RunOk(Req("web", 3));
  const uint32_t before = Available(0) + Available(1);
  ASSERT_TRUE(tasks_.ReapAccount(kScope.account).ok());
  EXPECT_EQ(Available(0) + Available(1), before + 3);
  auto list = tasks_.List(kScope, ListQuery{}, kCaller);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->arns.empty());
  auto specs = tasks_.Assignments(kAgent);
  ASSERT_TRUE(specs.ok());
  ASSERT_EQ(specs->size(), 2u);  // the other account's tasks are untouched
  EXPECT_EQ((*specs)[0].scope.account, kOther.account);
  EXPECT_TRUE(clusters_.Delete(kScope, "default").ok());  // no counts left behind
  store::Store& s = *store_;
  EXPECT_TRUE(s.Read([&](store::ReadTxn& txn) -> Status {
    for (std::string_view table : {"tasks", "task_launch", "task_by_status", "task_refs", "task_counts", "task_tokens"}) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, store::Range{"", ""}, 100));
      for (const auto& row : rows)
        EXPECT_NE(row.key.rfind(kScope.account.str(), 0), 0u) << table;
    }
    return OkStatus();
  }).ok());
}

// docs/contracts/task.md, "Agent reports": what a task holds goes back only on its agent's STOPPED,
// which the agent sends once the containers are gone — also when the record was marked STOPPED
// behind the agent's back.
TEST_F(TasksTest, ARecordMarkedStoppedBehindTheAgentsBackKeepsItsAddressUntilTheAgentConfirms) {
  const uint32_t before = Available(0) + Available(1);
  std::string arn(RunOk(Req())[0].at("taskArn").as_string());
  ASSERT_TRUE(Report(arn, "PENDING").ok());
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  // The forgery: the stored record says STOPPED, nothing else changed.
  ASSERT_TRUE(ForgeStopped(arn).ok());
  EXPECT_EQ(Available(0) + Available(1), before - 1);
  ASSERT_EQ(tasks_.Assignments(kAgent)->size(), 1u);  // still the agent's: it tears the task down
  ASSERT_TRUE(Report(arn, "DEACTIVATING").ok());         // acknowledged, changes nothing
  EXPECT_EQ(Available(0) + Available(1), before - 1);
  ASSERT_TRUE(Report(arn, "STOPPED").ok());              // the agent's confirmation
  EXPECT_EQ(Available(0) + Available(1), before);
  EXPECT_TRUE(tasks_.Assignments(kAgent)->empty());
}

TEST_F(TasksTest, AccountDeletionWaitsForTheAgentsConfirmationAndReleasesUnstartedTasksAtOnce) {
  const uint32_t before = Available(0) + Available(1);
  auto run = RunOk(Req("web", 2));
  const std::string started(run[0].at("taskArn").as_string()), unstarted(run[1].at("taskArn").as_string());
  ASSERT_TRUE(Report(started, "PENDING").ok());
  ASSERT_TRUE(Report(started, "RUNNING").ok());

  auto left = tasks_.StopAccount(kScope.account, "account deleted", clock_.Now());
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  ASSERT_EQ(left->size(), 2u);
  for (const auto& arn : {started, unstarted}) EXPECT_EQ(DescribeOne(arn).at("desiredStatus"), "STOPPED");
  // The started task's agent has not confirmed: nothing is reaped, no address goes back.
  Status refused = tasks_.ReapAccount(kScope.account);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_EQ(Available(0) + Available(1), before - 2);
  ASSERT_TRUE(Report(started, "STOPPED").ok());
  left = tasks_.StopAccount(kScope.account, "account deleted", clock_.Now());
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].last_status, "PROVISIONING");
  // The unstarted one has no container: released at once, and its agent may no longer start it.
  ASSERT_TRUE(tasks_.ReapAccount(kScope.account).ok());
  EXPECT_EQ(Available(0) + Available(1), before);
  EXPECT_FALSE(Report(unstarted, "PENDING").ok());
  EXPECT_TRUE(tasks_.Assignments(kAgent)->empty());
}

TEST_F(TasksTest, StoppedTasksAreReapedAfterAnHour) {
  auto ts = RunOk(Req("web", 2));
  std::string stopped(ts[0].at("taskArn").as_string()), running(ts[1].at("taskArn").as_string());
  ASSERT_TRUE(Report(stopped, "STOPPED").ok());
  clock_.Advance(std::chrono::minutes(59));
  auto none = tasks_.ReapStopped(clock_.Now());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(DescribeOne(stopped).at("lastStatus"), "STOPPED");
  clock_.Advance(std::chrono::minutes(2));
  auto one = tasks_.ReapStopped(clock_.Now());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 1u);
  auto d = tasks_.Describe(kScope, std::nullopt, {stopped, running}, false, kCaller);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tasks.size(), 1u);
  ASSERT_EQ(d->failures.size(), 1u);
  EXPECT_EQ(d->failures[0].arn, stopped);
  ListQuery q;
  q.desired_status = "STOPPED";
  auto list = tasks_.List(kScope, q, kCaller);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->arns.empty());
}

TEST_F(TasksTest, ConcurrentRunsNeverShareAnAddress) {
  constexpr int kThreads = 8, kEach = 10;
  std::mutex mu;
  std::set<std::string> ips;
  int total = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        auto r = tasks_.Run(kScope, kCaller, Req(), clock_.Now());
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        std::lock_guard lock(mu);
        for (const auto& task : r->tasks) {
          ips.insert(Detail(Obj(task), "privateIPv4Address"));
          ++total;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(total, kThreads * kEach);
  EXPECT_EQ(ips.size(), size_t{kThreads * kEach});
}

// The Task JSON this owner produces, through DescribeTasks' output shape in botocore.
// The service scheduler's seams: launches whose in-transaction callback refuses leave nothing;
// GroupTasks sees a group's tasks in every state; its stops carry their own code; reports of a
// group's task reach the group listener; a pinned INACTIVE revision still launches when allowed.
TEST_F(TasksTest, SchedulerSeams) {
  RunRequest r = Req();
  r.group = "service:web";
  r.started_by = "ecs-svc/1";
  r.in_txn = [](store::WriteTxn&, const std::vector<std::string>&) -> Status {
    return FailedPrecondition("deposed");
  };
  const uint32_t free_at_start = Available(0) + Available(1);
  auto refused = tasks_.Run(kScope, kCaller, r, clock_.Now());
  ASSERT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  auto group_of = [&] {
    std::vector<GroupTask> out;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(out, tasks_.GroupTasks(txn, kScope, "default", "service:web"));
      return OkStatus();
    }).ok());
    return out;
  };
  EXPECT_TRUE(group_of().empty());
  EXPECT_EQ(Available(0) + Available(1), free_at_start);  // the refused launch held no address

  std::vector<std::string> seen;
  r.in_txn = [&](store::WriteTxn&, const std::vector<std::string>& arns) -> Status {
    seen = arns;
    return OkStatus();
  };
  auto ran = RunOk(r);
  ASSERT_EQ(ran.size(), 1u);
  const std::string arn(ran[0].at("taskArn").as_string());
  EXPECT_EQ(seen, std::vector<std::string>{arn});

  std::vector<std::string> woke;
  tasks_.SetGroupListener([&](const Scope&, const std::string& cluster, const std::string& group) {
    woke.push_back(cluster + "/" + group);
  });
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  EXPECT_EQ(woke, std::vector<std::string>{"default/service:web"});
  auto g = group_of();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].started_by, "ecs-svc/1");
  EXPECT_EQ(g[0].last_status, "RUNNING");
  EXPECT_TRUE(g[0].started_at.has_value());
  EXPECT_FALSE(g[0].health_checks);

  bool stopped_in_txn = false;
  StopOptions opts;
  opts.stop_code = "ServiceSchedulerInitiated";
  opts.in_txn = [&](store::WriteTxn&) -> Status {
    stopped_in_txn = true;
    return OkStatus();
  };
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, "Scaling activity", kCaller, clock_.Now(), opts).ok());
  EXPECT_TRUE(stopped_in_txn);
  EXPECT_EQ(DescribeOne(arn).at("stopCode"), "ServiceSchedulerInitiated");
  ASSERT_TRUE(Report(arn, "STOPPED").ok());
  g = group_of();
  ASSERT_EQ(g.size(), 1u);  // STOPPED tasks stay visible until reaped
  EXPECT_EQ(g[0].last_status, "STOPPED");
  EXPECT_TRUE(g[0].stopped_at.has_value());

  // A task torn down before it ran never started: no startedAt, so the scheduler counts it as a
  // failed start.
  const std::string failed(RunOk(r)[0].at("taskArn").as_string());
  for (const char* status : {"PENDING", "DEACTIVATING", "STOPPED"}) ASSERT_TRUE(Report(failed, status).ok());
  EXPECT_FALSE(DescribeOne(failed).contains("startedAt"));
  for (const auto& t : group_of())
    if (t.id == failed.substr(failed.rfind('/') + 1)) {
      EXPECT_FALSE(t.started_at.has_value());
    }

  ASSERT_TRUE(tds_.Deregister(kScope, taskdef::Ref{"web", 1}, clock_.Now()).ok());
  RunRequest pinned = Req("web:1");
  EXPECT_FALSE(tasks_.Run(kScope, kCaller, pinned, clock_.Now()).ok());
  pinned.inactive_revision = taskdef::InactiveRevision::kAllow;
  EXPECT_EQ(RunOk(pinned).size(), 1u);
}

// ECS's managed "aws:" tags do not count toward the 50: a service with 50 tags propagated still
// launches, and its tasks carry all 52.
TEST_F(TasksTest, ManagedTagsDoNotCountTowardTheLimit) {
  RunRequest r = Req();
  r.group = "service:api";
  r.enable_ecs_managed_tags = true;
  for (int i = 0; i < 50; ++i) r.tags.push_back(Tag{fmt::format("k{}", i), "v"});
  auto ran = RunOk(r);
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].at("tags").as_array().size(), 52u);
  auto d = tasks_.Describe(kScope, std::nullopt, {std::string(ran[0].at("taskArn").as_string())}, true, kCaller);
  ASSERT_TRUE(d.ok() && d->tasks.size() == 1);
  EXPECT_EQ(Obj(d->tasks[0]).at("tags").as_array().size(), 52u);
  r.tags.push_back(Tag{"k50", "v"});
  EXPECT_EQ(api::AnswerFor(tasks_.Run(kScope, kCaller, r, clock_.Now()).status()).type, "InvalidParameterException");
}

TEST_F(TasksTest, TaskJsonMatchesBotocoresShape) {
  RunRequest r = Req("web", 2);
  r.tags = {Tag{"k", "v"}};
  r.started_by = "me";
  r.overrides = Obj(R"({"containerOverrides":[{"name":"app","environment":[{"name":"A","value":"1"}]}]})");
  auto ts = RunOk(r);
  ASSERT_EQ(ts.size(), 2u);
  std::string a(ts[0].at("taskArn").as_string()), b(ts[1].at("taskArn").as_string());
  ASSERT_TRUE(Report(a, "RUNNING").ok());
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, b, std::string("bye"), kCaller, clock_.Now()).ok());
  ASSERT_TRUE(Report(b, "STOPPED").ok());
  auto d = tasks_.Describe(kScope, std::nullopt, {a, b, std::string(32, 'c')}, true, kCaller);
  ASSERT_TRUE(d.ok());
  json::array tasks, failures;
  for (const auto& t : d->tasks) tasks.push_back(json::parse(t));
  for (const auto& f : d->failures) failures.push_back(json::object{{"arn", f.arn}, {"reason", f.reason}});
  const std::string body = json::serialize(json::object{{"tasks", tasks}, {"failures", failures}});
  const std::string run_body = json::serialize(json::object{{"tasks", json::array{json::parse(json::serialize(ts[0]))}},
                                                            {"failures", json::array()}});
  const std::string path = store_.dir() + "/describe.json";
  const std::string run_path = store_.dir() + "/run.json";
  std::ofstream(path) << body;
  std::ofstream(run_path) << run_body;
  const std::string cmd = fmt::format(
      "cd '{}/tests' && python3 -c \"import json,sys; import paddock_harness as h; "
      "errs = h.validate_output('DescribeTasks', open('{}').read()) + h.validate_output('RunTask', open('{}').read()); "
      "print('\\n'.join(errs)); sys.exit(1 if errs else 0)\"",
      PADDOCK_SOURCE_DIR, path, run_path);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << body;
}


// A registry that records what the task owner asks of it, and when it is told of a commit.
class RecordingDiscovery final : public Discovery {
 public:
  StatusOr<RegistryFacts> Describe(const Scope&, std::string_view) override { return RegistryFacts{}; }
  StatusOr<std::optional<std::string>> Register(store::WriteTxn&, const Scope& scope, std::string_view arn,
                                                std::string_view id,
                                                const std::map<std::string, std::string>& attributes) override {
    if (refuse) return std::optional<std::string>("the registry is full");
    events.push_back(fmt::format("register {} {} {}", scope.account.str(), arn, id));
    last_attributes = attributes;
    return std::optional<std::string>();
  }
  Status Deregister(store::WriteTxn&, const Scope&, std::string_view arn, std::string_view id) override {
    events.push_back(fmt::format("deregister {} {}", arn, id));
    return OkStatus();
  }
  void Published() override { events.push_back("published"); }

  bool refuse = false;
  std::vector<std::string> events;
  std::map<std::string, std::string> last_attributes;
};

constexpr std::string_view kRegistry = "arn:aws:servicediscovery:us-east-1:123456789012:service/srv-web";

TEST_F(TasksTest, AServiceTaskIsRegisteredWhileRunningAndDeregisteredByItsStopBeforeItsAgentIsTold) {
  RecordingDiscovery discovery;
  tasks_.SetDiscovery(&discovery);
  std::vector<std::string> seen_by_agent;  // the registry's events when the agent is woken
  tasks_.SetChangeListener([&] { seen_by_agent.push_back(discovery.events.empty() ? "" : discovery.events.back()); });
  RunRequest r = Req();
  r.group = "service:web";
  r.service_registry = json::object{{"registryArn", kRegistry}, {"containerName", "app"}, {"containerPort", 8080}};
  const std::string arn(RunOk(r).at(0).at("taskArn").as_string());
  const std::string id = arn.substr(arn.rfind('/') + 1);
  ASSERT_TRUE(Report(arn, "PENDING").ok());
  EXPECT_TRUE(discovery.events.empty()) << "a task is registered only once it runs";
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  ASSERT_EQ(discovery.events, (std::vector<std::string>{fmt::format("register 123456789012 {} {}", kRegistry, id),
                                                        "published"}));
  const json::object task = DescribeOne(arn);
  EXPECT_EQ(discovery.last_attributes["AWS_INSTANCE_IPV4"], Detail(task, "privateIPv4Address"));
  EXPECT_EQ(discovery.last_attributes["AWS_INSTANCE_PORT"], "8080");
  EXPECT_EQ(discovery.last_attributes["AVAILABILITY_ZONE"], std::string(task.at("availabilityZone").as_string()));
  EXPECT_EQ(discovery.last_attributes["REGION"], "us-east-1");
  EXPECT_EQ(discovery.last_attributes["ECS_CLUSTER_NAME"], "default");
  EXPECT_EQ(discovery.last_attributes["ECS_SERVICE_NAME"], "web");
  EXPECT_EQ(discovery.last_attributes["ECS_TASK_DEFINITION_FAMILY"], "web");
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  EXPECT_EQ(discovery.events.size(), 2u) << "a repeated report registers nothing again";

  // The stop deregisters in its own transaction, and the registry hears of it before the agent.
  seen_by_agent.clear();
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  ASSERT_EQ(discovery.events.size(), 4u);
  EXPECT_EQ(discovery.events[2], fmt::format("deregister {} {}", kRegistry, id));
  EXPECT_EQ(seen_by_agent, std::vector<std::string>{"published"});
  ASSERT_TRUE(Report(arn, "DEACTIVATING").ok());
  ASSERT_TRUE(Report(arn, "STOPPED").ok());
  EXPECT_EQ(discovery.events.size(), 4u) << "a deregistered task is not deregistered again";
}

TEST_F(TasksTest, ATaskWithHealthChecksIsRegisteredOnlyWhileHealthyAndARefusalLeavesItRunning) {
  json::object def = FargateDef("checked");
  def["containerDefinitions"].as_array()[0].as_object()["healthCheck"] =
      json::object{{"command", json::array{"CMD-SHELL", "true"}}};
  ASSERT_TRUE(tds_.Register(kScope, kCaller, def, clock_.Now()).ok());
  RecordingDiscovery discovery;
  tasks_.SetDiscovery(&discovery);
  RunRequest r = Req("checked");
  r.group = "service:checked";
  r.service_registry = json::object{{"registryArn", kRegistry}};
  const std::string arn(RunOk(r).at(0).at("taskArn").as_string());
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  EXPECT_TRUE(discovery.events.empty()) << "not before its health checks pass";
  TaskStateChange healthy;
  healthy.last_status = "RUNNING";
  healthy.health_status = "HEALTHY";
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, healthy, clock_.Now()).ok());
  ASSERT_EQ(discovery.events.size(), 2u);
  EXPECT_TRUE(discovery.events[0].starts_with("register "));
  EXPECT_EQ(discovery.last_attributes.count("AWS_INSTANCE_PORT"), 0u) << "no port was given";
  TaskStateChange unhealthy = healthy;
  unhealthy.health_status = "UNHEALTHY";
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, unhealthy, clock_.Now()).ok());
  ASSERT_EQ(discovery.events.size(), 4u);
  EXPECT_TRUE(discovery.events[2].starts_with("deregister ")) << "an unhealthy task leaves the answers";

  // A registry that refuses (gone, full): the task runs on, unregistered, and its report is taken.
  discovery.refuse = true;
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, healthy, clock_.Now()).ok());
  EXPECT_EQ(discovery.events.size(), 4u);
  EXPECT_EQ(DescribeOne(arn).at("healthStatus"), "HEALTHY");
  discovery.refuse = false;
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, healthy, clock_.Now()).ok());
  EXPECT_EQ(discovery.events.size(), 6u) << "the next report registers it";
}

TEST_F(TasksTest, ARegisteredTaskMarkedStoppedBehindTheOwnersBackIsDeregisteredWithItsAddress) {
  RecordingDiscovery discovery;
  tasks_.SetDiscovery(&discovery);
  RunRequest r = Req();
  r.group = "service:web";
  r.service_registry = json::object{{"registryArn", kRegistry}};
  const std::string arn(RunOk(r).at(0).at("taskArn").as_string());
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  ASSERT_EQ(discovery.events.size(), 2u);
  ASSERT_TRUE(ForgeStopped(arn).ok());
  ASSERT_TRUE(Report(arn, "STOPPED").ok());  // the agent's confirmation gives back the address...
  ASSERT_EQ(discovery.events.size(), 4u);    // ...and the registration, in the same transaction
  EXPECT_TRUE(discovery.events[2].starts_with("deregister ")) << discovery.events[2];
  EXPECT_EQ(discovery.events[3], "published");
}

TEST_F(TasksTest, ATaskWithoutARegistryIsNeverRegistered) {
  RecordingDiscovery discovery;
  tasks_.SetDiscovery(&discovery);
  const std::string arn(RunOk(Req()).at(0).at("taskArn").as_string());
  ASSERT_TRUE(Report(arn, "RUNNING").ok());
  ASSERT_TRUE(tasks_.Stop(kScope, std::nullopt, arn, std::nullopt, kCaller, clock_.Now()).ok());
  EXPECT_TRUE(discovery.events.empty());
}

}  // namespace
}  // namespace paddock::ecs::task
