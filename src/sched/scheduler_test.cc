#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <utility>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "vpc/security_groups.h"
#include "ecs/api/errors.h"

namespace paddock::sched {
namespace {
namespace json = boost::json;
using namespace std::chrono_literals;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";
constexpr std::string_view kAgent = "fargate-local";

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

// Two schedulers (two servers) over one store and one fake clock, with the real owners.
class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest() {
    tds_.AddReferenceCheck(tasks_.reference_check());
    tds_.AddReferenceCheck(services_.reference_check());
    clusters_.AddUsage(tasks_.cluster_usage());
    clusters_.AddUsage(services_.cluster_usage());
    EXPECT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"default"})")).ok());
    EXPECT_TRUE(tds_.Register(kScope, kCaller,
                              Obj(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                                  R"("cpu":"256","memory":"512","containerDefinitions":[{"name":"app","image":"nginx"}]})"),
                              clock_.Now())
                    .ok());
  }

  SchedulerOptions Options(std::string holder) {
    SchedulerOptions o;
    o.holder = std::move(holder);
    o.lease_ttl = 10s;
    return o;
  }

  void CreateService(int desired) {
    const std::string subnet = vpc::DefaultVpcFor(kScope).subnets[0].id;
    auto created = services_.Create(
        kScope, kCaller,
        Obj(R"({"serviceName":"api","taskDefinition":"web","launchType":"FARGATE","desiredCount":)" +
            std::to_string(desired) + R"(,"networkConfiguration":{"awsvpcConfiguration":{"subnets":[")" + subnet +
            R"("]}}})"),
        clock_.Now());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  // The tasks of `group` (default: the service "api"'s).
  std::vector<ecs::task::GroupTask> Tasks(std::string_view group = "service:api") {
    std::vector<ecs::task::GroupTask> out;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(out, tasks_.GroupTasks(txn, kScope, "default", group));
      return OkStatus();
    }).ok());
    return out;
  }

  ecs::service::ServiceState State() {
    std::optional<ecs::service::ServiceState> s;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(s, services_.LoadState(txn, key_));
      return OkStatus();
    }).ok());
    return s.value_or(ecs::service::ServiceState{});
  }

  // An EC2 container instance with `attributes` (and `memory` MiB); its ARN.
  std::string AddInstance(std::vector<ecs::instance::Attribute> attributes, int64_t memory = 2048) {
    ecs::instance::RegisterRequest r;
    r.cluster = "default";
    r.total_resources = json::array{json::object{{"name", "CPU"}, {"type", "INTEGER"}, {"integerValue", 2048}},
                                    json::object{{"name", "MEMORY"}, {"type", "INTEGER"}, {"integerValue", memory}}};
    r.attributes = std::move(attributes);
    auto s = instances_.Register(kScope, r, clock_.Now());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::string(json::parse(*s).at("containerInstanceArn").as_string()) : std::string();
  }

  // The family "agent" (bridge, EC2) with `extra` members (e.g. its own placementConstraints), and
  // "api", a DAEMON service of it whose own constraint admits the instances with role == edge.
  void CreateEdgeDaemon(std::string_view extra = "") {
    ASSERT_TRUE(tds_.Register(kScope, kCaller,
                              Obj(std::string(R"({"family":"agent","networkMode":"bridge","requiresCompatibilities":)"
                                              R"(["EC2"],"containerDefinitions":[{"name":"a","image":"busybox",)"
                                              R"("cpu":128,"memory":128}])") +
                                  std::string(extra) + "}"),
                              clock_.Now())
                    .ok());
    auto created = services_.Create(kScope, kCaller,
                                    Obj(R"({"serviceName":"api","taskDefinition":"agent","launchType":"EC2",)"
                                        R"("schedulingStrategy":"DAEMON","placementConstraints":)"
                                        R"([{"type":"memberOf","expression":"attribute:role == edge"}]})"),
                                    clock_.Now());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  // The container instances the cluster's tasks were placed on.
  std::set<std::string> InstancesWithTasks() {
    std::set<std::string> on;
    for (const auto& t : Tasks()) on.insert(t.container_instance_arn);
    return on;
  }

  // The agent reports `id` RUNNING (and, with `exit`, its essential container exiting right after).
  void Report(const std::string& id, bool exit) {
    const std::string arn = "arn:aws:ecs:us-east-1:123456789012:task/default/" + id;
    ecs::task::TaskStateChange running;
    running.last_status = "RUNNING";
    ASSERT_TRUE(tasks_.ReportState(kAgent, arn, running, clock_.Now()).ok());
    if (!exit) return;
    clock_.Advance(1s);
    ecs::task::TaskStateChange stopped;
    stopped.last_status = "STOPPED";
    stopped.stop_code = "EssentialContainerExited";
    stopped.stopped_reason = "Essential container in task exited";
    ASSERT_TRUE(tasks_.ReportState(kAgent, arn, stopped, clock_.Now()).ok());
  }

  // The live tasks' ids, each reported as `exit` says; returns them.
  std::vector<std::string> ReportLive(bool exit) {
    std::vector<std::string> ids;
    for (const auto& t : Tasks())
      if (t.last_status != "STOPPED" && t.last_status != "RUNNING") ids.push_back(t.id);
    for (const auto& id : ids) Report(id, exit);
    return ids;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  ecs::taskdef::TaskDefinitions tds_{*store_};
  ecs::cluster::Clusters clusters_{*store_};
  ecs::instance::ContainerInstances instances_{*store_, clusters_};
  ecs::task::Tasks tasks_{*store_, tds_, clusters_, std::string(kAgent), &instances_};
  ecs::service::Services services_{*store_, tds_, clusters_};
  const ecs::service::ServiceKey key_{kScope, "default", "api"};
};

TEST_F(SchedulerTest, LaunchesOnceAndRecordsTheLaunchWithIt) {
  CreateService(2);
  Scheduler a(*store_, services_, tasks_, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  auto tasks = Tasks();
  ASSERT_EQ(tasks.size(), 2u);
  const auto state = State();
  ASSERT_EQ(state.deployments.size(), 1u);
  EXPECT_EQ(tasks[0].started_by, state.deployments[0].id);
  EXPECT_EQ(state.deployments[0].pending_count, 2);
  // A second pass over the same tasks launches nothing more: it plans from what exists.
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(Tasks().size(), 2u);
}

TEST_F(SchedulerTest, AServiceThatDoesNotFitTheNodesFargateCapacityGetsEcssEventAndBacksOff) {
  // Room for two tasks of 256/512: a service of three starts two, says why the third waits, and
  // starts it once one of the two has stopped and the backoff is over.
  ecs::task::FargateCapacity capacity({.cpu = 512, .memory = 1024, .vcpus_per_account = 4000});
  ecs::task::Tasks limited(*store_, tds_, clusters_, std::string(kAgent), &instances_, &capacity);
  CreateService(3);
  Scheduler a(*store_, services_, limited, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  auto tasks = Tasks();
  ASSERT_EQ(tasks.size(), 2u);
  auto state = State();
  ASSERT_TRUE(state.newest_event.has_value());
  EXPECT_EQ(state.newest_event->message,
            "(service api) was unable to place a task. Reason: Capacity is unavailable at this time. Please try again "
            "later or in a different availability zone. For more information, see the Troubleshooting section of the "
            "Amazon ECS Developer Guide.");
  ASSERT_EQ(state.deployments.size(), 1u);
  EXPECT_EQ(state.deployments[0].launch_failures, 1);

  ecs::task::TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  const std::string arn = "arn:aws:ecs:us-east-1:123456789012:task/default/" + tasks[0].id;
  ASSERT_TRUE(limited.ReportState(kAgent, arn, stopped, clock_.Now()).ok());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(Tasks().size(), 2u) << "backing off";
  clock_.Advance(11s);  // past the 10 s backoff (and the lease: lead again)
  epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  size_t live = 0;
  for (const auto& t : Tasks()) live += t.desired_status != "STOPPED";
  EXPECT_EQ(live, 2u) << "one replaces the stopped task; the third still does not fit";
}

// Tasks of a launch that only partly found room reach RUNNING one by one; that is no sign the
// room is back, so the backoff holds and no refused launch is retried meanwhile (each would be a
// circuit-breaker failure: a service one task too big for the node would fail its deployment).
TEST_F(SchedulerTest, TasksOfAPartlyPlacedLaunchReachingRunningDoNotResetTheBackoff) {
  ecs::task::FargateCapacity capacity({.cpu = 512, .memory = 1024, .vcpus_per_account = 4000});
  ecs::task::Tasks limited(*store_, tds_, clusters_, std::string(kAgent), &instances_, &capacity);
  CreateService(3);
  Scheduler a(*store_, services_, limited, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  ASSERT_EQ(State().deployments[0].failed_tasks, 1);
  for (const auto& t : Tasks()) {
    clock_.Advance(100ms);
    ecs::task::TaskStateChange running;
    running.last_status = "RUNNING";
    ASSERT_TRUE(limited.ReportState(kAgent, "arn:aws:ecs:us-east-1:123456789012:task/default/" + t.id, running,
                                    clock_.Now())
                    .ok());
    ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  }
  EXPECT_EQ(State().deployments[0].failed_tasks, 1) << "no retry before the backoff ends";
  EXPECT_EQ(State().deployments[0].launch_failures, 1);
}

TEST_F(SchedulerTest, ADeposedLeadersLateWritesChangeNothing) {
  CreateService(1);
  Scheduler a(*store_, services_, tasks_, nullptr, clock_, Options("a"));
  Scheduler b(*store_, services_, tasks_, nullptr, clock_, Options("b"));
  auto ea = a.Lead();
  ASSERT_TRUE(ea.ok() && ea->has_value());
  auto eb = b.Lead();
  ASSERT_TRUE(eb.ok());
  EXPECT_FALSE(eb->has_value());  // a's lease is live
  ASSERT_TRUE(a.Pass(key_, **ea).ok());
  ASSERT_EQ(Tasks().size(), 1u);

  clock_.Advance(11s);  // a stalls past its lease; b takes over with a higher epoch
  eb = b.Lead();
  ASSERT_TRUE(eb.ok() && eb->has_value());
  EXPECT_GT(**eb, **ea);

  auto updated = services_.Update(kScope, kCaller, Obj(R"({"service":"api","desiredCount":3})"), clock_.Now());
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  const uint64_t version = State().version;
  Status late = a.Pass(key_, **ea);
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late.ToString();
  EXPECT_TRUE(IsError(late, Error::kLeaseLost)) << "recognised by its detail, not its text: " << late.ToString();
  EXPECT_EQ(Tasks().size(), 1u);          // a's launch did not commit
  EXPECT_EQ(State().version, version);    // nor did its state

  ASSERT_TRUE(b.Pass(key_, **eb).ok());
  EXPECT_EQ(Tasks().size(), 3u);
}

// With the default options (settle 40 s) and real task records: the first revision completes once
// its tasks have run for 40 s; a revision whose tasks reach RUNNING and exit at once fails its
// deployment at the threshold and rolls back, and the old tasks were never stopped.
TEST_F(SchedulerTest, WithDefaultOptionsACrashLoopFailsItsDeploymentAndRollsBack) {
  const std::string subnet = vpc::DefaultVpcFor(kScope).subnets[0].id;
  auto created = services_.Create(
      kScope, kCaller,
      Obj(R"({"serviceName":"api","taskDefinition":"web","launchType":"FARGATE","desiredCount":2,)"
          R"("deploymentConfiguration":{"deploymentCircuitBreaker":{"enable":true,"rollback":true}},)"
          R"("networkConfiguration":{"awsvpcConfiguration":{"subnets":[")" + subnet + R"("]}}})"),
      clock_.Now());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  SchedulerOptions options;
  options.holder = "a";
  EXPECT_EQ(options.settle, 40s);
  Scheduler a(*store_, services_, tasks_, nullptr, clock_, options);
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  const std::vector<std::string> old_tasks = ReportLive(/*exit=*/false);
  ASSERT_EQ(old_tasks.size(), 2u);
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(State().deployments[0].rollout_state, "IN_PROGRESS") << "RUNNING, but not for 40 s yet";
  clock_.Advance(40s);
  epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  const std::string first = State().deployments[0].id;
  ASSERT_EQ(State().deployments[0].rollout_state, "COMPLETED");

  // Revision 2 crash-loops: every task reaches RUNNING and exits a second later.
  ASSERT_TRUE(tds_.Register(kScope, kCaller,
                            Obj(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                                R"("cpu":"256","memory":"512","containerDefinitions":[{"name":"app","image":"nginx",)"
                                R"("command":["sh","-c","exit 1"]}]})"),
                            clock_.Now())
                  .ok());
  auto updated = services_.Update(kScope, kCaller, Obj(R"({"service":"api","taskDefinition":"web:2"})"), clock_.Now());
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  for (int round = 0; round < 3 && State().deployments[0].id != first; ++round) {
    ASSERT_TRUE(a.Pass(key_, **epoch).ok());
    ReportLive(/*exit=*/true);
    ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  }
  // The pass that rolled back stored the rollback under way; the next one (the plan asked for it
  // at once) completes it.
  ASSERT_EQ(State().deployments[0].id, first);
  EXPECT_EQ(State().deployments[0].rollout_state, "IN_PROGRESS");
  clock_.Advance(1ms);
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  const auto state = State();
  ASSERT_EQ(state.deployments.size(), 1u);
  EXPECT_EQ(state.deployments[0].id, first) << "rolled back to the COMPLETED deployment";
  EXPECT_EQ(state.deployments[0].rollout_state, "COMPLETED");
  size_t exited = 0;
  for (const auto& t : Tasks()) {
    if (std::find(old_tasks.begin(), old_tasks.end(), t.id) != old_tasks.end()) {
      EXPECT_EQ(std::make_pair(t.last_status, t.desired_status), std::make_pair(std::string("RUNNING"), std::string("RUNNING")))
          << "an old task was stopped";
    } else {
      exited += t.stop_code == "EssentialContainerExited" ? 1 : 0;
    }
  }
  EXPECT_GE(exited, 3u) << "the threshold for 2 tasks";
  ecs::service::DeploymentQuery q;
  q.cluster = "default";
  q.service = "api";
  auto sds = services_.ListServiceDeployments(kScope, kCaller, q);
  ASSERT_TRUE(sds.ok()) << sds.status().ToString();
  std::multiset<std::string> statuses;
  for (const auto& item : sds->items) statuses.insert(std::string(json::parse(item).at("status").as_string()));
  EXPECT_EQ(statuses, (std::multiset<std::string>{"ROLLBACK_SUCCESSFUL", "SUCCESSFUL"}));
}

// A one-off task that merely uses the group "service:api" is not the scheduler's: it is neither
// counted nor stopped.
TEST_F(SchedulerTest, AOneOffTaskInTheServicesGroupIsLeftAlone) {
  CreateService(1);
  ecs::task::RunRequest r;
  r.task_definition = "web";
  r.launch_type = "FARGATE";
  r.group = "service:api";
  r.network_configuration = json::object{
      {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
  auto one_off = tasks_.Run(kScope, kCaller, r, clock_.Now());
  ASSERT_TRUE(one_off.ok()) << one_off.status().ToString();
  Scheduler a(*store_, services_, tasks_, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  auto tasks = Tasks();
  ASSERT_EQ(tasks.size(), 2u);  // the one-off and the service's own
  for (const auto& t : tasks) EXPECT_EQ(t.desired_status, "RUNNING") << t.id;
  EXPECT_EQ(State().deployments[0].pending_count, 1);
}

// DAEMON: one task on each ACTIVE instance its memberOf constraint admits; an instance that
// starts draining loses its task.
TEST_F(SchedulerTest, DaemonRunsOnTheInstancesItsConstraintAdmits) {
  const std::string edge1 = AddInstance({{"role", std::string("edge")}});
  const std::string edge2 = AddInstance({{"role", std::string("edge")}});
  AddInstance({{"role", std::string("db")}});
  CreateEdgeDaemon();
  Scheduler a(*store_, services_, tasks_, &instances_, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(InstancesWithTasks(), (std::set<std::string>{edge1, edge2}));
  EXPECT_EQ(State().desired_count, 2);

  const std::string id2 = edge2.substr(edge2.rfind('/') + 1);
  ASSERT_TRUE(instances_.UpdateState(kScope, "default", {ecs::instance::InstanceRef{edge2, std::nullopt, id2}},
                                     "DRAINING", clock_.Now())
                  .ok());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  for (const auto& t : Tasks())
    EXPECT_EQ(t.desired_status, t.container_instance_arn == edge2 ? "STOPPED" : "RUNNING") << t.container_instance_arn;
  EXPECT_EQ(State().desired_count, 1);
}

// The task of an instance deregistered with force is orphaned: ECS no longer accounts for it and
// the service starts another copy on another instance — even with maximumPercent 100 and its agent
// never confirming the orphan stopped (a revoked `paddock agent` cannot) — and the deployment
// completes without waiting for it.
TEST_F(SchedulerTest, AnOrphanedTaskOfAForceDeregisteredInstanceIsReplacedAtOnce) {
  const std::string a = AddInstance({});
  CreateEdgeDaemon();  // registers the family "agent" (EC2, bridge)
  auto created = services_.Create(kScope, kCaller,
                                  Obj(R"({"serviceName":"web","taskDefinition":"agent","launchType":"EC2","desiredCount":1,)"
                                      R"("deploymentConfiguration":{"maximumPercent":100,"minimumHealthyPercent":0}})"),
                                  clock_.Now());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const ecs::service::ServiceKey web{kScope, "default", "web"};
  Scheduler s(*store_, services_, tasks_, &instances_, clock_, Options("a"));
  auto epoch = s.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(s.Pass(web, **epoch).ok());
  auto on = [&] { return Tasks("service:web"); };
  ASSERT_EQ(on().size(), 1u);
  const ecs::task::GroupTask first = on()[0];
  ASSERT_EQ(first.container_instance_arn, a);
  ecs::task::TaskStateChange running;
  running.last_status = "RUNNING";
  const std::string first_arn = "arn:aws:ecs:us-east-1:123456789012:task/default/" + first.id;
  ASSERT_TRUE(tasks_.ReportState(ecs::task::InstanceAgentId(a), first_arn, running, clock_.Now()).ok());

  const std::string b = AddInstance({});
  const std::string id_a = a.substr(a.rfind('/') + 1);
  ASSERT_TRUE(instances_.Deregister(kScope, "default", ecs::instance::InstanceRef{a, std::nullopt, id_a}, true,
                                    clock_.Now())
                  .ok());
  ASSERT_TRUE(s.Pass(web, **epoch).ok());
  std::vector<ecs::task::GroupTask> now = on();
  ASSERT_EQ(now.size(), 2u);
  for (const auto& t : now) {
    if (t.id == first.id) {
      EXPECT_EQ(t.last_status, "RUNNING") << "its agent has not confirmed";
      EXPECT_EQ(t.stopped_reason, "Container instance deregistration forced by user");
    } else {
      EXPECT_EQ(t.container_instance_arn, b) << "the copy runs elsewhere";
      EXPECT_EQ(t.desired_status, "RUNNING");
    }
  }
}

// DAEMON: the revision's own memberOf constraints admit instances too, beside the service's (the
// task definition's placementConstraints; issue 20).
TEST_F(SchedulerTest, DaemonAlsoHonoursItsRevisionsConstraints) {
  const std::string edge_a = AddInstance({{"role", std::string("edge")}, {"zone", std::string("a")}});
  AddInstance({{"role", std::string("edge")}, {"zone", std::string("b")}});
  AddInstance({{"role", std::string("db")}, {"zone", std::string("a")}});
  CreateEdgeDaemon(R"(,"placementConstraints":[{"type":"memberOf","expression":"attribute:zone == a"}])");
  Scheduler a(*store_, services_, tasks_, &instances_, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  // role edge (the service's) and zone a (the revision's)
  EXPECT_EQ(InstancesWithTasks(), (std::set<std::string>{edge_a}));
  EXPECT_EQ(State().desired_count, 1);
  EXPECT_EQ(State().deployments[0].definition_constraints.size(), 1u);
  EXPECT_EQ(State().deployments[0].failed_tasks, 0);  // no launch was tried where it could not go
}

// DAEMON: an instance without room for the task backs off alone; an instance that joins meanwhile
// gets its task at the next pass, before that backoff ends (issue 20).
TEST_F(SchedulerTest, DaemonBacksOffOnlyTheInstanceWithoutRoom) {
  const std::string roomy = AddInstance({{"role", std::string("edge")}});
  const std::string full = AddInstance({{"role", std::string("edge")}}, 64);  // the task needs 128 MiB
  CreateEdgeDaemon();
  Scheduler a(*store_, services_, tasks_, &instances_, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(InstancesWithTasks(), (std::set<std::string>{roomy}));
  auto state = State();
  ASSERT_EQ(state.deployments[0].instance_backoffs.size(), 1u);
  EXPECT_EQ(state.deployments[0].instance_backoffs[0].instance_arn, full);
  EXPECT_GT(state.deployments[0].instance_backoffs[0].next_launch_at, clock_.Now());
  EXPECT_EQ(state.deployments[0].next_launch_at, TimePoint{}) << "the deployment itself does not back off";

  const std::string joined = AddInstance({{"role", std::string("edge")}});
  clock_.Advance(1s);
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(InstancesWithTasks(), (std::set<std::string>{roomy, joined}));
}

// A service's awsvpcConfiguration.securityGroups must be groups of the caller's VPC, and its tasks
// are launched into them (vpc/security_groups.h).
TEST_F(SchedulerTest, AServicesTasksGetItsSecurityGroups) {
  vpc::SecurityGroups groups(*store_);
  auto web = groups.Create(kScope, vpc::CreateRequest{"web", "web tier", std::nullopt, {}});
  ASSERT_TRUE(web.ok());
  const std::string subnet = vpc::DefaultVpcFor(kScope).subnets[0].id;
  auto service = [&](const std::string& name, const std::string& group) {
    return services_.Create(kScope, kCaller,
                            Obj(R"({"serviceName":")" + name + R"(","taskDefinition":"web","launchType":"FARGATE",)"
                                R"("desiredCount":2,"networkConfiguration":{"awsvpcConfiguration":{"subnets":[")" +
                                subnet + R"("],"securityGroups":[")" + group + R"("]}}})"),
                            clock_.Now());
  };
  auto missing = service("nope", "sg-0123456789abcdef0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(ecs::api::AnswerFor(missing.status()).type, "InvalidParameterException");
  EXPECT_EQ(missing.status().message(),
            "Error retrieving security group information for [sg-0123456789abcdef0]: The security group "
            "'sg-0123456789abcdef0' does not exist (ECS)");
  ASSERT_TRUE(service("api", web->id).ok());
  Scheduler a(*store_, services_, tasks_, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  ASSERT_EQ(Tasks().size(), 2u);
  auto policy = groups.PolicyFor(kScope);
  ASSERT_TRUE(policy.ok());
  ASSERT_EQ(policy->members.size(), 2u);
  for (const auto& m : policy->members) EXPECT_EQ(m.groups, std::vector<std::string>{web->id});
}

// ECS could not assume the task's role: the service is created, each launch fails with ECS's event
// "service x failed to launch a task with (error …)." and is counted and backed off as a failed
// placement (ecs/task/role_check.h; docs/contracts/service.md).
TEST_F(SchedulerTest, ALaunchWhoseRoleCannotBeAssumedGetsEcssEventAndBacksOff) {
  const std::string role = "arn:aws:iam::123456789012:role/missing";
  ASSERT_TRUE(tds_.Register(kScope, kCaller,
                            Obj(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                                R"("cpu":"256","memory":"512","executionRoleArn":")" + role +
                                R"(","containerDefinitions":[{"name":"app","image":"nginx"}]})"),
                            clock_.Now())
                  .ok());
  ecs::task::Tasks checked(*store_, tds_, clusters_, std::string(kAgent), &instances_);
  bool assumable = false;
  checked.SetRoleCheck([&](const AccountId&, std::string_view) { return assumable ? OkStatus() : NotFound("gone"); });
  CreateService(2);
  Scheduler a(*store_, services_, checked, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_TRUE(Tasks().empty());
  auto state = State();
  ASSERT_TRUE(state.newest_event.has_value());
  EXPECT_EQ(state.newest_event->message,
            "service api failed to launch a task with (error ECS was unable to assume the role '" + role +
                "' that was provided for this task. Please verify that the role being passed has the proper trust "
                "relationship and permissions and that your IAM user has permissions to pass this role.).");
  ASSERT_EQ(state.deployments.size(), 1u);
  EXPECT_EQ(state.deployments[0].launch_failures, 1);
  EXPECT_EQ(state.deployments[0].failed_tasks, 1);

  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(State().deployments[0].launch_failures, 1) << "backing off";
  assumable = true;  // the role is fixed: the next launch after the backoff starts the tasks
  clock_.Advance(11s);
  epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(Tasks().size(), 2u);
}

// The scheduler holds a service's tasks between passes and re-reads only what changed, by the
// stamps in the store: a report taken by another server (whose task owner notifies no one here)
// is seen by the next pass, as a read of every task would see it.
TEST_F(SchedulerTest, APassSeesTaskChangesItWasNeverToldOf) {
  CreateService(2);
  Scheduler a(*store_, services_, tasks_, nullptr, clock_, Options("a"));
  auto epoch = a.Lead();
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());  // launches two, holds them PROVISIONING
  ecs::task::Tasks other(*store_, tds_, clusters_, std::string(kAgent), &instances_);
  ecs::task::TaskStateChange running;
  running.last_status = "RUNNING";
  for (const auto& t : Tasks())
    ASSERT_TRUE(other.ReportState(kAgent, "arn:aws:ecs:us-east-1:123456789012:task/default/" + t.id, running,
                                  clock_.Now())
                    .ok());
  clock_.Advance(40s);
  epoch = a.Lead();  // the lease (10 s) is renewed as the thread would
  ASSERT_TRUE(epoch.ok() && epoch->has_value());
  ASSERT_TRUE(a.Pass(key_, **epoch).ok());
  EXPECT_EQ(State().deployments[0].running_count, 2);
  EXPECT_EQ(State().deployments[0].rollout_state, "COMPLETED");
}

// Losing a host (docs/contracts/task.md): the awsvpc EC2 service "web" of one task on instance `a`,
// RUNNING, with `b` registered beside it; the task's id and address.
class HostLossTest : public SchedulerTest {
 protected:
  void SetUp() override {
    a_ = AddInstance(EniCapable());
    ASSERT_TRUE(tds_.Register(kScope, kCaller,
                              Obj(R"({"family":"webvpc","networkMode":"awsvpc","requiresCompatibilities":["EC2"],)"
                                  R"("containerDefinitions":[{"name":"app","image":"nginx","cpu":256,"memory":256}]})"),
                              clock_.Now())
                    .ok());
    const std::string subnet = vpc::DefaultVpcFor(kScope).subnets[0].id;
    auto created = services_.Create(
        kScope, kCaller,
        Obj(R"({"serviceName":"web","taskDefinition":"webvpc","launchType":"EC2","desiredCount":1,)"
            R"("deploymentConfiguration":{"maximumPercent":100,"minimumHealthyPercent":0},)"
            R"("networkConfiguration":{"awsvpcConfiguration":{"subnets":[")" + subnet + R"("]}}})"),
        clock_.Now());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    auto epoch = leader_.Lead();
    ASSERT_TRUE(epoch.ok() && epoch->has_value());
    epoch_ = **epoch;
    ASSERT_TRUE(leader_.Pass(web_, epoch_).ok());
    std::optional<ecs::service::ServiceState> st;
    ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(st, services_.LoadState(txn, web_));
      return OkStatus();
    }).ok());
    ASSERT_EQ(Tasks("service:web").size(), 1u) << (st && st->newest_event ? st->newest_event->message : "?");
    task_ = Tasks("service:web")[0];
    ASSERT_EQ(task_.container_instance_arn, a_);
    ecs::task::TaskStateChange running;
    running.last_status = "RUNNING";
    ASSERT_TRUE(tasks_.ReportState(ecs::task::InstanceAgentId(a_), TaskArn(task_.id), running, clock_.Now()).ok());
    b_ = AddInstance(EniCapable());
  }

  // What an agent that runs awsvpc tasks announces.
  static std::vector<ecs::instance::Attribute> EniCapable() {
    return {{"com.amazonaws.ecs.capability.docker-remote-api.1.18", std::nullopt},
            {"ecs.capability.task-eni", std::nullopt}};
  }

  SchedulerOptions LossOptions(std::string holder) {
    SchedulerOptions o = Options(std::move(holder));
    o.host_lost = 300s;
    return o;
  }
  static std::string TaskArn(const std::string& id) {
    return "arn:aws:ecs:us-east-1:123456789012:task/default/" + id;
  }
  static std::string IdOf(const std::string& arn) { return arn.substr(arn.rfind('/') + 1); }
  // `arn`'s agent calls (a poll: its heartbeat).
  void Beat(const std::string& arn) { ASSERT_TRUE(instances_.Heartbeat(kScope, "default", IdOf(arn), clock_.Now()).ok()); }
  json::object DescribeInstance(const std::string& arn) {
    auto d = instances_.Describe(kScope, "default", {ecs::instance::InstanceRef{arn, std::nullopt, IdOf(arn)}}, {},
                                 clock_.Now());
    EXPECT_TRUE(d.ok() && d->instances.size() == 1);
    return d.ok() && d->instances.size() == 1 ? json::parse(d->instances[0]).as_object() : json::object();
  }
  static int64_t Remaining(const json::object& instance, std::string_view name) {
    for (const auto& r : instance.at("remainingResources").as_array())
      if (r.as_object().at("name").as_string() == name) return r.as_object().at("integerValue").to_number<int64_t>();
    return -1;
  }
  json::object DescribeTask(const std::string& id) {
    auto d = tasks_.Describe(kScope, "default", {id}, false, kCaller);
    EXPECT_TRUE(d.ok() && d->tasks.size() == 1);
    return d.ok() && d->tasks.size() == 1 ? json::parse(d->tasks[0]).as_object() : json::object();
  }
  std::set<uint32_t> HeldIps() {
    std::set<uint32_t> held;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto all, vpc::HeldAddresses(txn, kScope));
      for (const auto& h : all) held.insert(h.ip);
      return OkStatus();
    }).ok());
    return held;
  }
  uint32_t TaskIp(const std::string& id) {
    const json::object task = DescribeTask(id);
    for (const auto& d : task.at("attachments").as_array()[0].as_object().at("details").as_array())
      if (d.as_object().at("name").as_string() == "privateIPv4Address")
        if (uint32_t ip = 0; vpc::ParseIpv4(d.as_object().at("value").as_string(), &ip)) return ip;
    return 0;
  }

  // Leads again at the fake clock's time (the lease lives 10 s): the epoch it now writes with.
  void Relead() {
    auto e = leader_.Lead();
    ASSERT_TRUE(e.ok() && e->has_value());
    epoch_ = **e;
  }

  const ecs::service::ServiceKey web_{kScope, "default", "web"};
  Scheduler leader_{*store_, services_, tasks_, &instances_, clock_, LossOptions("a")};
  uint64_t epoch_ = 0;
  std::string a_, b_;
  ecs::task::GroupTask task_;
};

TEST_F(HostLossTest, ALostInstancesTasksAreStoppedWithEcssReasonTheirHoldingsReleasedAndReplacedElsewhere) {
  const uint32_t ip = TaskIp(task_.id);
  ASSERT_NE(ip, 0u);
  EXPECT_TRUE(HeldIps().contains(ip));
  EXPECT_EQ(Remaining(DescribeInstance(a_), "CPU"), 2048 - 256);
  const std::string ec2_id(DescribeInstance(a_).at("ec2InstanceId").as_string());

  // a's agent falls silent; b's keeps polling. Within the grace nothing happens (a is merely
  // disconnected: 60 s of agent timeout passed long ago).
  clock_.Advance(299s);
  Beat(b_);
  auto swept = leader_.SweepLostHosts(epoch_);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(*swept, 0u);
  EXPECT_EQ(Tasks("service:web")[0].last_status, "RUNNING");
  EXPECT_FALSE(DescribeInstance(a_).at("agentConnected").as_bool());

  clock_.Advance(2s);  // 301 s since a's last call
  Beat(b_);
  Relead();
  swept = leader_.SweepLostHosts(epoch_);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(*swept, 1u);

  json::object t = DescribeTask(task_.id);
  EXPECT_EQ(t.at("lastStatus").as_string(), "STOPPED");
  EXPECT_EQ(t.at("desiredStatus").as_string(), "STOPPED");
  EXPECT_EQ(t.at("stopCode").as_string(), "TerminationNotice");
  EXPECT_EQ(t.at("stoppedReason").as_string(), "Host EC2 (instance " + ec2_id + ") terminated.");
  EXPECT_TRUE(t.contains("stoppedAt") && t.contains("executionStoppedAt") && t.contains("stoppingAt"));
  for (const auto& c : t.at("containers").as_array()) {
    EXPECT_EQ(c.as_object().at("lastStatus").as_string(), "STOPPED");
    EXPECT_FALSE(c.as_object().contains("exitCode")) << "nobody saw the container exit";
  }
  // What it held is back: the address (reusable), the instance's resources, the assignment.
  EXPECT_FALSE(HeldIps().contains(ip));
  json::object lost = DescribeInstance(a_);
  EXPECT_EQ(Remaining(lost, "CPU"), 2048);
  EXPECT_EQ(lost.at("runningTasksCount").to_number<int64_t>(), 0);
  EXPECT_EQ(lost.at("status").as_string(), "ACTIVE") << "lost is not deregistered: its agent may come back";
  auto assigned = tasks_.Assignments(ecs::task::InstanceAgentId(a_));
  ASSERT_TRUE(assigned.ok());
  EXPECT_TRUE(assigned->empty());

  // The service replaces it on b: a, disconnected, is no candidate.
  ASSERT_TRUE(leader_.Pass(web_, epoch_).ok());
  std::vector<ecs::task::GroupTask> now = Tasks("service:web");
  ASSERT_EQ(now.size(), 2u);
  for (const auto& g : now)
    if (g.id != task_.id) {
      EXPECT_EQ(g.container_instance_arn, b_);
      EXPECT_EQ(g.desired_status, "RUNNING");
    }

  // b, connected, keeps its task at the next sweeps; a has nothing left to stop.
  clock_.Advance(200s);
  Beat(b_);
  Relead();
  swept = leader_.SweepLostHosts(epoch_);
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 0u);
  for (const auto& g : Tasks("service:web"))
    if (g.id != task_.id) {
      EXPECT_EQ(g.desired_status, "RUNNING");
    }
}

TEST_F(HostLossTest, AnAgentThatComesBackAfterItsTasksWereLostChangesNothingAndHasNothingAssigned) {
  clock_.Advance(301s);
  Relead();
  auto swept = leader_.SweepLostHosts(epoch_);
  ASSERT_TRUE(swept.ok() && *swept == 1u);
  const json::object before = DescribeTask(task_.id);

  // It comes back: polls (connected again), and reports the task as it last knew it, then gone.
  Beat(a_);
  EXPECT_TRUE(DescribeInstance(a_).at("agentConnected").as_bool());
  auto assigned = tasks_.Assignments(ecs::task::InstanceAgentId(a_));
  ASSERT_TRUE(assigned.ok());
  EXPECT_TRUE(assigned->empty()) << "its driver removes the containers of a task no longer assigned";
  ecs::task::TaskStateChange running;
  running.last_status = "RUNNING";
  running.health_status = "HEALTHY";
  Status late = tasks_.ReportState(ecs::task::InstanceAgentId(a_), TaskArn(task_.id), running, clock_.Now());
  EXPECT_TRUE(late.ok()) << late.ToString();
  ecs::task::TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  stopped.stop_code = "EssentialContainerExited";
  late = tasks_.ReportState(ecs::task::InstanceAgentId(a_), TaskArn(task_.id), stopped, clock_.Now());
  EXPECT_TRUE(late.ok()) << late.ToString();
  EXPECT_EQ(json::serialize(DescribeTask(task_.id)), json::serialize(before)) << "STOPPED is final";
}

TEST_F(HostLossTest, ADeposedLeadersSweepIsRefusedByTheFence) {
  Scheduler other(*store_, services_, tasks_, &instances_, clock_, LossOptions("b"));
  clock_.Advance(301s);  // a stalled past its lease (10 s); b leads with a higher epoch
  auto eb = other.Lead();
  ASSERT_TRUE(eb.ok() && eb->has_value());
  ASSERT_GT(**eb, epoch_);

  auto late = leader_.SweepLostHosts(epoch_);
  ASSERT_FALSE(late.ok());
  EXPECT_TRUE(IsError(late.status(), Error::kLeaseLost)) << late.status().ToString();
  EXPECT_EQ(DescribeTask(task_.id).at("lastStatus").as_string(), "RUNNING") << "the deposed sweep wrote nothing";

  auto swept = other.SweepLostHosts(**eb);
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  EXPECT_EQ(*swept, 1u);
}

// A server's own [[ec2_instance]] (its agent in process): never lost on a store of its own; on a
// shared one lost like any host once its heartbeats stop — but not after the server's clean stop,
// which forgets them.
TEST_F(HostLossTest, AServersOwnInstanceIsLostOnlyOnASharedStoreAndNotAfterItsCleanStop) {
  ecs::instance::RegisterRequest r;
  r.cluster = "default";
  r.agent = ecs::instance::AgentKind::kInProcess;
  r.total_resources = json::array{json::object{{"name", "CPU"}, {"type", "INTEGER"}, {"integerValue", 1024}},
                                  json::object{{"name", "MEMORY"}, {"type", "INTEGER"}, {"integerValue", 1024}}};
  auto registered = instances_.Register(kScope, r, clock_.Now());
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  const std::string own = IdOf(std::string(json::parse(*registered).at("containerInstanceArn").as_string()));
  auto lost_ids = [&] {
    std::set<std::string> ids;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto lost, instances_.LostInstances(txn, clock_.Now(), 300s));
      for (const auto& l : lost) ids.insert(l.id);
      return OkStatus();
    }).ok());
    return ids;
  };
  clock_.Advance(301s);
  Beat(b_);
  EXPECT_EQ(lost_ids(), std::set<std::string>{IdOf(a_)}) << "a server's own instance swept on a store of its own";
  instances_.SetSweepInProcess(true);
  EXPECT_EQ(lost_ids(), (std::set<std::string>{IdOf(a_), own}));
  // Its server stopped cleanly (the heartbeat forgotten): nothing says it is gone.
  ASSERT_TRUE(instances_.ForgetHeartbeat(kScope, "default", own).ok());
  EXPECT_EQ(lost_ids(), std::set<std::string>{IdOf(a_)});
  // Back, and silent again for longer than the grace: lost.
  ASSERT_TRUE(instances_.Heartbeat(kScope, "default", own, clock_.Now()).ok());
  clock_.Advance(301s);
  Beat(b_);
  EXPECT_EQ(lost_ids(), (std::set<std::string>{IdOf(a_), own}));
}

TEST_F(HostLossTest, WithoutAGraceTimeThereIsNoSweep) {
  Scheduler plain(*store_, services_, tasks_, &instances_, clock_, Options("c"));
  clock_.Advance(24h);
  auto e = plain.Lead();
  ASSERT_TRUE(e.ok() && e->has_value());
  auto swept = plain.SweepLostHosts(**e);
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 0u);
  EXPECT_EQ(DescribeTask(task_.id).at("lastStatus").as_string(), "RUNNING");
}

}  // namespace
}  // namespace paddock::sched
