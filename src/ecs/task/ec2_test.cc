// The EC2 launch type through the task owner: placement on container instances, reservations
// taken in the run's transaction and given back at STOPPED, StartTask, ListTasks by instance.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

#include "common/testing/fake_clock.h"
#include "ecs/instance/instances.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"
#include "vpc/testing/free_addresses.h"

namespace paddock::ecs::task {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

json::array Resources(int64_t cpu, int64_t memory) {
  return json::array{json::object{{"name", "CPU"}, {"type", "INTEGER"}, {"integerValue", cpu}},
                     json::object{{"name", "MEMORY"}, {"type", "INTEGER"}, {"integerValue", memory}}};
}

int64_t Remaining(const json::object& ci, std::string_view name) {
  for (const auto& r : ci.at("remainingResources").as_array())
    if (r.at("name").as_string() == name && r.as_object().contains("integerValue")) return r.at("integerValue").as_int64();
  return -1;
}

class Ec2Test : public ::testing::Test {
 protected:
  Ec2Test() {
    tds_.AddReferenceCheck(tasks_.reference_check());
    clusters_.AddUsage(tasks_.cluster_usage());
    clusters_.AddUsage(instances_.cluster_usage());
    EXPECT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"default"})")).ok());
    // bridge mode, a fixed host port: one task per instance at most.
    EXPECT_TRUE(tds_.Register(kScope, kCaller, Obj(R"({"family":"web","networkMode":"bridge",
        "requiresCompatibilities":["EC2"],"containerDefinitions":[{"name":"app","image":"busybox","cpu":256,
        "memory":512,"portMappings":[{"containerPort":80,"hostPort":8080}]}]})"), clock_.Now()).ok());
    // no ports, sized by its containers: 256 cpu, 256 MiB (memoryReservation when no hard limit)
    EXPECT_TRUE(tds_.Register(kScope, kCaller, Obj(R"({"family":"worker","networkMode":"bridge",
        "containerDefinitions":[{"name":"w","image":"busybox","cpu":128,"memoryReservation":128},
        {"name":"x","image":"busybox","cpu":128,"memory":128,"essential":false}]})"), clock_.Now()).ok());
    EXPECT_TRUE(tds_.Register(kScope, kCaller, Obj(R"({"family":"fargate","networkMode":"awsvpc",
        "requiresCompatibilities":["FARGATE"],"cpu":"256","memory":"512",
        "containerDefinitions":[{"name":"app","image":"busybox"}]})"), clock_.Now()).ok());
  }

  // Registers an instance of `cpu` units and `memory` MiB in zone `zone`; returns its ARN.
  std::string AddInstance(int64_t cpu, int64_t memory, std::string zone = "us-east-1a",
                          std::vector<instance::Attribute> attributes = {}) {
    instance::RegisterRequest r;
    r.cluster = "default";
    r.total_resources = Resources(cpu, memory);
    r.identity_document = fmt::format(R"({{"availabilityZone":"{}","instanceType":"m5.large"}})", zone);
    r.attributes = std::move(attributes);
    // What an agent that runs memoryReservation containers announces (the worker family needs it).
    r.attributes.push_back({"com.amazonaws.ecs.capability.docker-remote-api.1.21", std::nullopt});
    auto s = instances_.Register(kScope, r, clock_.Now());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::string(json::parse(*s).at("containerInstanceArn").as_string()) : std::string();
  }

  static std::string IdOf(const std::string& arn) { return arn.substr(arn.rfind('/') + 1); }

  json::object Instance(const std::string& arn) {
    auto d = instances_.Describe(kScope, "default", {instance::InstanceRef{arn, std::nullopt, IdOf(arn)}}, {}, clock_.Now());
    EXPECT_TRUE(d.ok() && d->instances.size() == 1);
    return d.ok() && !d->instances.empty() ? Obj(d->instances[0]) : json::object();
  }

  RunRequest Req(std::string td, int64_t count = 1) {
    RunRequest r;
    r.task_definition = std::move(td);
    r.count = count;
    r.launch_type = "EC2";
    return r;
  }

  StatusOr<RunResult> Run(const RunRequest& r) { return tasks_.Run(kScope, kCaller, r, clock_.Now()); }

  Status Report(const std::string& task_arn, const std::string& agent, std::string status) {
    TaskStateChange c;
    c.last_status = std::move(status);
    return tasks_.ReportState(agent, task_arn, c, clock_.Now());
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  taskdef::TaskDefinitions tds_{*store_};
  cluster::Clusters clusters_{*store_};
  instance::ContainerInstances instances_{*store_, clusters_};
  Tasks tasks_{*store_, tds_, clusters_, "fargate-local", &instances_};
};

TEST_F(Ec2Test, TasksArePlacedReservedAndGiveTheirResourcesBackWhenStopped) {
  const std::string a = AddInstance(1024, 1024), b = AddInstance(1024, 4096);
  auto r = Run(Req("web", 3));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // One per instance (host port 8080), the third fails on both with RESOURCE:PORTS.
  ASSERT_EQ(r->tasks.size(), 2u);
  std::set<std::string> used;
  for (const auto& text : r->tasks) {
    json::object t = Obj(text);
    EXPECT_EQ(t.at("launchType"), "EC2");
    EXPECT_FALSE(t.contains("platformVersion"));
    EXPECT_FALSE(t.contains("ephemeralStorage"));
    EXPECT_EQ(t.at("availabilityZone"), "us-east-1a");
    used.insert(std::string(t.at("containerInstanceArn").as_string()));
  }
  EXPECT_EQ(used, (std::set<std::string>{a, b}));
  ASSERT_EQ(r->failures.size(), 2u);
  for (const auto& f : r->failures) EXPECT_EQ(f.reason, "RESOURCE:PORTS") << f.arn;

  // DescribeClusters' statistics tell EC2 tasks from Fargate ones.
  auto statistic = [&](std::string_view name) -> std::string {
    cluster::Include include;
    include.statistics = true;
    auto d = clusters_.Describe(kScope, {"default"}, include);
    EXPECT_TRUE(d.ok() && d->clusters.size() == 1);
    const json::object c = Obj(d->clusters.at(0));
    for (const auto& st : c.at("statistics").as_array())
      if (st.at("name").as_string() == name) return std::string(st.at("value").as_string());
    return "?";
  };
  EXPECT_EQ(statistic("pendingEC2TasksCount"), "2");
  EXPECT_EQ(statistic("pendingFargateTasksCount"), "0");

  for (const std::string& arn : {a, b}) {
    json::object ci = Instance(arn);
    EXPECT_EQ(Remaining(ci, "CPU"), 1024 - 256) << arn;
    EXPECT_EQ(ci.at("pendingTasksCount"), 1);
  }
  EXPECT_EQ(Remaining(Instance(a), "MEMORY"), 1024 - 512);

  // Each task is assigned to its instance's agent; only that agent may report it.
  json::object ta = Obj(r->tasks[0]);
  const std::string task_arn(ta.at("taskArn").as_string());
  const std::string agent = InstanceAgentId(std::string(ta.at("containerInstanceArn").as_string()));
  auto assigned = tasks_.Assignments(agent);
  ASSERT_TRUE(assigned.ok());
  ASSERT_EQ(assigned->size(), 1u);
  EXPECT_EQ(assigned->at(0).task_arn, task_arn);
  EXPECT_EQ(api::AnswerFor(Report(task_arn, "fargate-local", "RUNNING")).type, "AccessDeniedException");

  ASSERT_TRUE(Report(task_arn, agent, "RUNNING").ok());
  const std::string ci_arn(ta.at("containerInstanceArn").as_string());
  EXPECT_EQ(Instance(ci_arn).at("runningTasksCount"), 1);
  EXPECT_EQ(statistic("runningEC2TasksCount"), "1");
  EXPECT_EQ(statistic("pendingEC2TasksCount"), "1");
  EXPECT_EQ(statistic("runningFargateTasksCount"), "0");
  ASSERT_TRUE(Report(task_arn, agent, "STOPPED").ok());
  json::object freed = Instance(ci_arn);
  EXPECT_EQ(Remaining(freed, "CPU"), 1024);
  EXPECT_EQ(freed.at("runningTasksCount"), 0);
  // The freed port takes a new task on that instance.
  auto again = Run(Req("web"));
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->tasks.size(), 1u);
  EXPECT_EQ(Obj(again->tasks[0]).at("containerInstanceArn"), json::value(ci_arn));
}

TEST_F(Ec2Test, ContainersSizeATaskWithoutTaskLevelCpuAndMemory) {
  const std::string a = AddInstance(1024, 1024);
  const std::string bare = [&] {  // an instance whose agent does not announce docker-remote-api 1.21
    instance::RegisterRequest r;
    r.cluster = "default";
    r.total_resources = Resources(4096, 4096);
    auto s = instances_.Register(kScope, r, clock_.Now());
    EXPECT_TRUE(s.ok());
    return s.ok() ? std::string(json::parse(*s).at("containerInstanceArn").as_string()) : std::string();
  }();
  auto r = Run(Req("worker", 4));  // 256 cpu / 256 MiB each: exactly four fit
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tasks.size(), 4u);
  EXPECT_TRUE(r->failures.empty());
  EXPECT_EQ(Remaining(Instance(a), "CPU"), 0);
  EXPECT_EQ(Remaining(Instance(a), "MEMORY"), 0);
  r = Run(Req("worker"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->tasks.empty());
  ASSERT_EQ(r->failures.size(), 2u);
  EXPECT_EQ(r->failures[0].reason, bare < a ? "ATTRIBUTE" : "RESOURCE:CPU");
  EXPECT_EQ(r->failures[1].reason, bare < a ? "RESOURCE:CPU" : "ATTRIBUTE");
}

TEST_F(Ec2Test, RefusalsWriteNothing) {
  auto r = Run(Req("web"));
  EXPECT_EQ(api::AnswerFor(r.status()).type, "InvalidParameterException");
  EXPECT_EQ(r.status().message(), "No Container Instances were found in your cluster.");
  AddInstance(1024, 1024);
  RunRequest on_fargate = Req("web");  // EC2-only (bridge mode)
  on_fargate.launch_type = "FARGATE";
  EXPECT_EQ(Run(on_fargate).status().message(), "Task definition does not support launch_type FARGATE.");
  r = Run(Req("fargate"));  // Fargate definitions list EC2 too (as on AWS), but awsvpc needs subnets
  EXPECT_EQ(r.status().message(), "Network Configuration must be provided when networkMode 'awsvpc' is specified.");
  RunRequest net = Req("web");
  net.network_configuration = Obj(R"({"awsvpcConfiguration":{"subnets":["subnet-1"]}})");
  EXPECT_EQ(Run(net).status().message(),
            "Network Configuration is not valid for the given networkMode of this task definition.");
  RunRequest bad = Req("web");
  bad.placement_strategy = json::parse(R"([{"type":"binpack","field":"disk"}])").as_array();
  EXPECT_EQ(api::AnswerFor(Run(bad).status()).type, "InvalidParameterException");
  RunRequest fargate;
  fargate.task_definition = "fargate";
  fargate.launch_type = "FARGATE";
  fargate.network_configuration = Obj(R"({"awsvpcConfiguration":{"subnets":["subnet-x"]}})");
  fargate.placement_constraints = json::parse(R"([{"type":"distinctInstance"}])").as_array();
  EXPECT_EQ(Run(fargate).status().message(), "Placement constraints are not supported with FARGATE launch type.");
  ListQuery all;
  auto listed = tasks_.List(kScope, all, kCaller);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->arns.empty());
}

TEST_F(Ec2Test, ConstraintsAndStrategies) {
  const std::string a = AddInstance(4096, 4096, "us-east-1a", {{"stack", "blue"}});
  const std::string b = AddInstance(4096, 4096, "us-east-1b", {{"stack", "green"}});
  const std::string c = AddInstance(4096, 4096, "us-east-1b", {{"stack", "green"}});
  RunRequest member = Req("worker", 4);
  member.placement_constraints = json::parse(R"([{"type":"memberOf","expression":"attribute:stack == green"}])").as_array();
  member.placement_strategy = json::parse(R"([{"type":"spread","field":"instanceId"}])").as_array();
  auto r = Run(member);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 4u);
  std::map<std::string, int> per;
  for (const auto& t : r->tasks) ++per[std::string(Obj(t).at("containerInstanceArn").as_string())];
  EXPECT_EQ(per, (std::map<std::string, int>{{b, 2}, {c, 2}}));

  RunRequest distinct = Req("worker", 4);
  distinct.group = "one-each";
  distinct.placement_constraints = json::parse(R"([{"type":"distinctInstance"}])").as_array();
  r = Run(distinct);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tasks.size(), 3u);
  ASSERT_FALSE(r->failures.empty());
  EXPECT_EQ(r->failures[0].reason, "DistinctInstance placement constraint unsatisfied.");

  // DRAINING instances take no new tasks.
  auto drained = instances_.UpdateState(kScope, "default",
                                        {instance::InstanceRef{a, std::nullopt, IdOf(a)}, instance::InstanceRef{b, std::nullopt, IdOf(b)}},
                                        "DRAINING", clock_.Now());
  ASSERT_TRUE(drained.ok());
  r = Run(Req("worker", 2));
  ASSERT_TRUE(r.ok());
  for (const auto& t : r->tasks) EXPECT_EQ(Obj(t).at("containerInstanceArn"), json::value(c));
}

TEST_F(Ec2Test, StartTaskOnNamedInstancesAndListByInstance) {
  const std::string a = AddInstance(1024, 1024), b = AddInstance(1024, 1024);
  StartRequest s;
  s.run.task_definition = "web";
  s.run.started_by = "me";
  s.container_instances = {IdOf(a), a, "0123456789abcdef0123456789abcdef"};
  auto r = tasks_.Start(kScope, kCaller, s, clock_.Now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The first lands on a; the second wants a's port 8080 again; the third instance does not exist.
  ASSERT_EQ(r->tasks.size(), 1u);
  ASSERT_EQ(r->failures.size(), 2u);
  EXPECT_EQ(r->failures[0].arn, a);
  EXPECT_EQ(r->failures[0].reason, "RESOURCE:PORTS");
  EXPECT_EQ(r->failures[1].reason, "MISSING");
  const std::string started(Obj(r->tasks[0]).at("taskArn").as_string());

  auto other = Run(Req("worker"));
  ASSERT_TRUE(other.ok());
  ListQuery on_a;
  on_a.container_instance = a;
  auto listed = tasks_.List(kScope, on_a, kCaller);
  ASSERT_TRUE(listed.ok());
  std::set<std::string> want{started};
  if (Obj(other->tasks.at(0)).at("containerInstanceArn").as_string() == a)
    want.insert(std::string(Obj(other->tasks[0]).at("taskArn").as_string()));
  EXPECT_EQ(std::set<std::string>(listed->arns.begin(), listed->arns.end()), want);
  ListQuery on_b;
  on_b.container_instance = IdOf(b);
  listed = tasks_.List(kScope, on_b, kCaller);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->arns.size(), 2 - want.size());
  s.container_instances = {};
  EXPECT_EQ(api::AnswerFor(tasks_.Start(kScope, kCaller, s, clock_.Now()).status()).type, "InvalidParameterException");
}

// StartTask onto an instance that exists but cannot take tasks: ECS's StartTask reason INACTIVE
// (documented for a deregistered instance; a DRAINING one takes no new task either, and the detail
// says which), not MISSING, which stays for one that does not exist. Nothing is written; the
// instance made ACTIVE again takes the task.
TEST_F(Ec2Test, StartTaskOntoADrainingOrDeregisteredInstanceIsInactiveNotMissing) {
  const std::string a = AddInstance(1024, 1024), b = AddInstance(1024, 1024);
  const instance::InstanceRef ref_a{a, std::nullopt, IdOf(a)}, ref_b{b, std::nullopt, IdOf(b)};
  ASSERT_TRUE(instances_.UpdateState(kScope, "default", {ref_a}, "DRAINING", clock_.Now()).ok());
  ASSERT_TRUE(instances_.Deregister(kScope, "default", ref_b, false, clock_.Now()).ok());
  StartRequest s;
  s.run.task_definition = "worker";
  s.container_instances = {IdOf(a), b, "0123456789abcdef0123456789abcdef"};
  auto r = tasks_.Start(kScope, kCaller, s, clock_.Now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->tasks.empty());
  ASSERT_EQ(r->failures.size(), 3u);
  EXPECT_EQ(r->failures[0].arn, a);
  EXPECT_EQ(r->failures[0].reason, "INACTIVE");
  EXPECT_EQ(r->failures[0].detail, "The container instance is DRAINING.");
  EXPECT_EQ(r->failures[1].arn, b);
  EXPECT_EQ(r->failures[1].reason, "INACTIVE");
  EXPECT_EQ(r->failures[1].detail, "The container instance is INACTIVE.");
  EXPECT_EQ(r->failures[2].reason, "MISSING");
  EXPECT_EQ(r->failures[2].detail, "");
  auto listed = tasks_.List(kScope, ListQuery{}, kCaller);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->arns.empty()) << "nothing was written";
  EXPECT_EQ(Instance(a).at("pendingTasksCount").as_int64(), 0);

  ASSERT_TRUE(instances_.UpdateState(kScope, "default", {ref_a}, "ACTIVE", clock_.Now()).ok());
  s.container_instances = {IdOf(a)};
  r = tasks_.Start(kScope, kCaller, s, clock_.Now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tasks.size(), 1u);
  EXPECT_TRUE(r->failures.empty());
}

// The tasks of a container instance deregistered with force, as ECS documents them: orphaned —
// told to stop with ECS's stoppedReason "Container instance deregistration forced by user" (a
// service replaces them), a task already stopping keeping its own — while their awsvpc addresses
// are not handed to new tasks as long as their containers may run: only their agent's STOPPED
// gives each back. The deregistration and the orphaning are one transaction.
TEST_F(Ec2Test, AForcedDeregistrationOrphansItsTasksAndHoldsTheirAddressesUntilTheAgentConfirms) {
  // What an agent that runs awsvpc tasks announces.
  const std::vector<instance::Attribute> eni_capable{{"com.amazonaws.ecs.capability.docker-remote-api.1.18", std::nullopt},
                                                     {"ecs.capability.task-eni", std::nullopt}};
  const std::string a = AddInstance(4096, 4096, "us-east-1a", eni_capable);
  const std::string agent = InstanceAgentId(a);
  const vpc::Subnet subnet = vpc::DefaultVpcFor(kScope).subnets[0];
  auto available = [&] { return vpc::testing::FreeAddresses(*store_, kScope, subnet); };
  auto ip_of = [](const json::object& task) {
    for (const auto& d : task.at("attachments").as_array()[0].as_object().at("details").as_array())
      if (d.as_object().at("name").as_string() == "privateIPv4Address") return std::string(d.as_object().at("value").as_string());
    return std::string();
  };
  auto describe = [&](const std::string& arn) {
    auto d = tasks_.Describe(kScope, "default", {arn}, false, kCaller);
    EXPECT_TRUE(d.ok() && d->tasks.size() == 1);
    return d.ok() && d->tasks.size() == 1 ? Obj(d->tasks[0]) : json::object();
  };
  const uint32_t before = available();
  RunRequest eni = Req("fargate", 2);  // EC2-compatible awsvpc: each task holds an address
  eni.network_configuration = json::object{{"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(subnet.id)}}}}};
  auto r = Run(eni);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 2u) << (r->failures.empty() ? "" : r->failures[0].reason);
  const std::string running(Obj(r->tasks[0]).at("taskArn").as_string()), stopping(Obj(r->tasks[1]).at("taskArn").as_string());
  const std::set<std::string> held{ip_of(Obj(r->tasks[0])), ip_of(Obj(r->tasks[1]))};
  ASSERT_TRUE(Report(running, agent, "RUNNING").ok());
  ASSERT_TRUE(tasks_.Stop(kScope, "default", stopping, std::string("mine"), kCaller, clock_.Now()).ok());
  EXPECT_EQ(available(), before - 2);

  const instance::InstanceRef ref{a, std::nullopt, IdOf(a)};
  EXPECT_EQ(instances_.Deregister(kScope, "default", ref, false, clock_.Now()).status().message(),
            "Found running tasks on the instance.");
  EXPECT_EQ(describe(running).at("desiredStatus"), "RUNNING") << "a refused deregistration orphans nothing";
  ASSERT_TRUE(instances_.Deregister(kScope, "default", ref, true, clock_.Now()).ok());

  json::object t = describe(running);
  EXPECT_EQ(t.at("desiredStatus"), "STOPPED");
  EXPECT_EQ(t.at("lastStatus"), "RUNNING") << "its containers may still run";
  EXPECT_EQ(t.at("stoppedReason"), "Container instance deregistration forced by user");
  EXPECT_EQ(t.at("stopCode"), "UserInitiated");
  EXPECT_EQ(describe(stopping).at("stoppedReason"), "mine");
  // Their addresses stay held, and a new task gets another one.
  EXPECT_EQ(available(), before - 2);
  AddInstance(4096, 4096, "us-east-1a", eni_capable);
  auto other = Run([&] { RunRequest one = eni; one.count = 1; return one; }());
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_EQ(other->tasks.size(), 1u);
  EXPECT_FALSE(held.count(ip_of(Obj(other->tasks[0]))));
  EXPECT_EQ(available(), before - 3);
  // The agent (while it still can) stops them and confirms: only then the addresses go back.
  ASSERT_EQ(tasks_.Assignments(agent)->size(), 2u);
  ASSERT_TRUE(Report(running, agent, "STOPPED").ok());
  EXPECT_EQ(available(), before - 2);
  ASSERT_TRUE(Report(stopping, agent, "STOPPED").ok());
  EXPECT_EQ(available(), before - 1);
  EXPECT_TRUE(tasks_.Assignments(agent)->empty());
}

// Issue 16 §3: each task's address records where the overlay reaches it — its instance's agent's
// host (RegisterAgent's overlayAddress, on the agent's binding) or, for a Fargate task, the placing
// server's own host; an instance of ECS's public API (no agent of Paddock's) has none.
TEST_F(Ec2Test, EachAddressRecordsTheOverlayAddressOfTheHostThatRunsItsTask) {
  const std::vector<instance::Attribute> eni_capable{{"com.amazonaws.ecs.capability.docker-remote-api.1.18", std::nullopt},
                                                     {"ecs.capability.task-eni", std::nullopt}};
  instance::RegisterRequest r;
  r.cluster = "default";
  r.total_resources = Resources(4096, 4096);
  r.attributes = eni_capable;
  r.agent = instance::AgentKind::kRemote;
  r.overlay_address = "10.9.0.21";
  std::optional<instance::AgentCredential> issued;
  auto registered = instances_.Register(kScope, r, clock_.Now(), &issued);
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  const vpc::Subnet subnet = vpc::DefaultVpcFor(kScope).subnets[0];
  const json::object network{{"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(subnet.id)}}}}};
  auto hosts = [&] {
    std::map<std::string, std::string> out;  // owner -> host
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(auto held, vpc::HeldAddresses(txn, kScope));
                  out.clear();
                  for (const auto& h : held) out[h.owner] = h.host;
                  return OkStatus();
                }).ok());
    return out;
  };
  RunRequest ec2 = Req("fargate");
  ec2.network_configuration = network;
  auto on_instance = Run(ec2);
  ASSERT_TRUE(on_instance.ok() && on_instance->tasks.size() == 1) << on_instance.status().ToString();
  const std::string ec2_task(Obj(on_instance->tasks[0]).at("taskArn").as_string());
  EXPECT_EQ(hosts()[ec2_task], "10.9.0.21");

  tasks_.SetOverlayAddress("10.9.0.5");
  RunRequest fargate = Req("fargate");
  fargate.launch_type = "FARGATE";
  fargate.network_configuration = network;
  auto on_fargate = Run(fargate);
  ASSERT_TRUE(on_fargate.ok() && on_fargate->tasks.size() == 1) << on_fargate.status().ToString();
  EXPECT_EQ(hosts()[std::string(Obj(on_fargate->tasks[0]).at("taskArn").as_string())], "10.9.0.5");

  // The agent re-registers from another address (its host moved): its next tasks are there.
  const std::string arn(json::parse(*registered).at("containerInstanceArn").as_string());
  r.container_instance = instance::InstanceRef{arn, std::nullopt, IdOf(arn)};
  r.caller_agent = InstanceAgentId(arn);
  r.overlay_address = "10.9.0.22";
  ASSERT_TRUE(instances_.Register(kScope, r, clock_.Now(), &issued).ok());
  auto again = Run(ec2);
  ASSERT_TRUE(again.ok() && again->tasks.size() == 1);
  EXPECT_EQ(hosts()[std::string(Obj(again->tasks[0]).at("taskArn").as_string())], "10.9.0.22");

  // An instance of ECS's public API: nothing runs it, so no host.
  ASSERT_TRUE(instances_.Deregister(kScope, "default", *r.container_instance, true, clock_.Now()).ok());
  AddInstance(4096, 4096, "us-east-1a", eni_capable);
  auto unbound = Run(ec2);
  ASSERT_TRUE(unbound.ok() && unbound->tasks.size() == 1);
  EXPECT_EQ(hosts()[std::string(Obj(unbound->tasks[0]).at("taskArn").as_string())], "");
}

// A forced deregistration leaves the instance's tasks; once the reaper has removed the instance
// and its reservations, the task's agent can still report it RUNNING and STOPPED (its address and
// assignment go back), rather than every report failing on the missing reservation.
TEST_F(Ec2Test, ReportsOfATaskWhoseInstanceWasReapedStillApply) {
  const std::string a = AddInstance(1024, 1024);
  auto r = Run(Req("worker"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 1u);
  const std::string task_arn(Obj(r->tasks[0]).at("taskArn").as_string());
  const std::string agent = InstanceAgentId(a);
  ASSERT_TRUE(instances_.Deregister(kScope, "default", instance::InstanceRef{a, std::nullopt, IdOf(a)}, true,
                                    clock_.Now()).ok());
  clock_.Advance(instance::kInactiveRetention + std::chrono::minutes(1));
  auto reaped = instances_.ReapInactive(clock_.Now());
  ASSERT_TRUE(reaped.ok());
  ASSERT_EQ(*reaped, 1u);

  Status running = Report(task_arn, agent, "RUNNING");
  EXPECT_TRUE(running.ok()) << running.ToString();
  Status stopped = Report(task_arn, agent, "STOPPED");
  EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  auto d = tasks_.Describe(kScope, "default", {task_arn}, false, kCaller);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->tasks.size(), 1u);
  EXPECT_EQ(Obj(d->tasks[0]).at("lastStatus"), "STOPPED");
  auto assigned = tasks_.Assignments(agent);
  ASSERT_TRUE(assigned.ok());
  EXPECT_TRUE(assigned->empty());
}

// A container's status never goes back: a late PENDING report after RUNNING changes nothing.
TEST_F(Ec2Test, ContainerReportsAreMonotonic) {
  const std::string a = AddInstance(1024, 1024);
  auto r = Run(Req("worker"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks.size(), 1u);
  const std::string task_arn(Obj(r->tasks[0]).at("taskArn").as_string());
  const std::string agent = InstanceAgentId(a);
  TaskStateChange running;
  running.last_status = "RUNNING";
  ContainerStateChange running_w;
  running_w.name = "w";
  running_w.last_status = "RUNNING";
  running_w.runtime_id = "rt-1";
  running.containers.push_back(running_w);
  ASSERT_TRUE(tasks_.ReportState(agent, task_arn, running, clock_.Now()).ok());
  TaskStateChange late;
  late.last_status = "RUNNING";  // as SubmitContainerStateChange reports: the task where it is
  ContainerStateChange late_w;
  late_w.name = "w";
  late_w.last_status = "PENDING";
  late_w.runtime_id = "rt-0";
  late.containers.push_back(late_w);
  ASSERT_TRUE(tasks_.ReportState(agent, task_arn, late, clock_.Now()).ok());
  auto d = tasks_.Describe(kScope, "default", {task_arn}, false, kCaller);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->tasks.size(), 1u);
  const json::object task = Obj(d->tasks[0]);
  int seen = 0;
  for (const auto& c : task.at("containers").as_array()) {
    if (c.at("name") != "w") continue;
    ++seen;
    EXPECT_EQ(c.at("lastStatus"), "RUNNING");
    EXPECT_EQ(c.at("runtimeId"), "rt-1");
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace paddock::ecs::task

namespace paddock::ecs::task {
namespace {

// A strategy naming an Auto Scaling group capacity provider places on the cluster's container
// instances (there is no Auto Scaling group): launch type EC2 and the provider's name; a strategy
// mixing it with FARGATE is refused as AWS refuses it.
TEST_F(Ec2Test, AnAutoScalingGroupProviderPlacesOnTheClustersInstances) {
  capacity::CapacityProviders providers(*store_);
  clusters_.SetCapacityProviders(&providers);
  capacity::CreateRequest cp;
  cp.name = "ec2-fleet";
  cp.asg = capacity::AsgProvider{};
  cp.asg->auto_scaling_group_arn = "fleet-asg";
  ASSERT_TRUE(providers.Create(kScope, cp).ok());
  ASSERT_TRUE(clusters_
                  .PutCapacityProviders(kScope, "default", json::parse(R"(["ec2-fleet","FARGATE"])").as_array(),
                                        json::parse(R"([{"capacityProvider":"ec2-fleet","weight":1}])").as_array())
                  .ok());
  const std::string a = AddInstance(1024, 1024);

  RunRequest r = Req("worker");
  r.launch_type.reset();
  r.capacity_providers = {"ec2-fleet"};
  auto run = Run(r);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->tasks.size(), 1u);
  json::object t = Obj(run->tasks[0]);
  EXPECT_EQ(t.at("launchType"), "EC2");
  EXPECT_EQ(t.at("capacityProviderName"), "ec2-fleet");
  EXPECT_EQ(t.at("containerInstanceArn").as_string(), a);

  // The cluster's default strategy does the same without a strategy or launch type.
  RunRequest by_default = Req("worker");
  by_default.launch_type.reset();
  auto second = Run(by_default);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->tasks.size(), 1u);
  EXPECT_EQ(Obj(second->tasks[0]).at("capacityProviderName"), "ec2-fleet");

  RunRequest mixed = Req("worker");
  mixed.launch_type.reset();
  mixed.capacity_providers = {"ec2-fleet", "FARGATE"};
  EXPECT_EQ(api::AnswerFor(Run(mixed).status()).type, "InvalidParameterException");

  // The provider's tasks keep it associated.
  auto removal = clusters_.PutCapacityProviders(kScope, "default", json::parse(R"(["FARGATE"])").as_array(), json::array());
  EXPECT_EQ(api::AnswerFor(removal.status()).type, "ResourceInUseException");
}

}  // namespace
}  // namespace paddock::ecs::task
