// The reconcile rules (deploy/plan.h), one case each: what a tick decides from what it read.
#include "deploy/plan.h"

#include <gtest/gtest.h>

namespace paddock::deploy {
namespace {

using Kind = ServiceAction::Kind;
using std::chrono::seconds;

const TimePoint kNow = FromEpochMillis(1'800'000'000'000);

AppSpec App(int replicas = 2, std::string image = "reg/web:1") {
  AppSpec app;
  app.project = "shop";
  ContainerSpec web;
  web.name = "web";
  web.image = std::move(image);
  web.port = 8080;
  app.containers.push_back(web);
  app.deploy.replicas = replicas;
  app.routes.push_back({"/", "web", Access::kPublic});
  return app;
}

ControllerSettings Settings() {
  ControllerSettings s;
  s.subnets = {"subnet-1"};
  return s;
}

DeploymentInput Input(State state, AppSpec app = App(), std::string id = "20261203-120000-aaaa") {
  DeploymentInput d;
  d.record.id = std::move(id);
  d.record.project = app.project;
  d.record.state = state;
  d.record.spec = app;
  d.record.deploying_since = kNow - seconds(10);
  TaskSize size{256, 512, false, ""};
  d.workloads = Render(Settings(), {d.record.project, d.record.group, d.record.id}, app, size, {});
  EXPECT_TRUE(d.workloads.ok()) << d.workloads.status().ToString();
  return d;
}

// The service a workload became, converged on it (its tag carries the hash), with `running` tasks.
ServiceView ServiceFor(const DeploymentInput& d, int desired) {
  const Workload& w = d.workloads->front();
  ServiceView s;
  s.arn = "arn:aws:ecs:us-east-1:000000000000:service/default/" + w.service_name;
  s.name = w.service_name;
  s.status = "ACTIVE";
  s.task_definition = "arn:td/" + w.family + ":1";
  s.desired = desired;
  s.running = desired;
  s.subnets = {"subnet-1"};
  s.owner = ReadTags(Settings(), w.tags);
  s.named_by_us = true;
  return s;
}

void AddTasks(DeploymentInput& d, const ServiceView& s, int n, std::string status = "RUNNING") {
  for (int i = 0; i < n; ++i) {
    d.tasks[s.name].push_back(TaskView{.arn = "arn:task/" + std::to_string(i), .task_definition = s.task_definition,
                                       .last_status = status, .desired_status = "RUNNING",
                                       .address = "172.31.0." + std::to_string(10 + i), .stopped_reason = "",
                                       .exit_code = std::nullopt});
  }
}

PlanInput In(std::vector<DeploymentInput> ds, std::vector<ServiceView> services = {}) {
  PlanInput in;
  in.now = kNow;
  in.deployments = std::move(ds);
  for (ServiceView& s : services) in.services[s.name] = std::move(s);
  return in;
}

std::vector<Kind> Kinds(const Plan& p) {
  std::vector<Kind> out;
  for (const ServiceAction& a : p.actions) out.push_back(a.kind);
  return out;
}

TEST(PlanTest, APendingDeploymentStartsDeployingAndCreatesItsServices) {
  Plan p = PlanTick(In({Input(State::kPending)}));
  ASSERT_EQ(Kinds(p), std::vector<Kind>{Kind::kCreate});
  ASSERT_FALSE(p.transitions.empty());
  EXPECT_EQ(p.transitions[0].to, State::kDeploying);
}

TEST(PlanTest, ItBecomesHealthyOnlyWhenTheEdgeReportsEveryIncomingTaskUp) {
  DeploymentInput d = Input(State::kDeploying);
  ServiceView s = ServiceFor(d, 2);
  AddTasks(d, s, 2);
  PlanInput in = In({d}, {s});
  in.edge_servers = {{"http://172.31.0.10:8080", "UP"}};
  Plan p = PlanTick(in);
  EXPECT_TRUE(p.transitions.empty()) << "one of two servers is not seen yet";
  EXPECT_EQ(Unready(in, in.deployments[0], *in.deployments[0].workloads), "web: waiting for the edge to see 172.31.0.11:8080");

  in.edge_servers["http://172.31.0.11:8080"] = "DOWN";
  EXPECT_TRUE(PlanTick(in).transitions.empty()) << "DOWN is not ready";

  in.edge_servers["http://172.31.0.11:8080"] = "UP";
  p = PlanTick(in);
  ASSERT_EQ(p.transitions.size(), 1u);
  EXPECT_EQ(p.transitions[0].to, State::kHealthy);
  EXPECT_TRUE(p.actions.empty()) << "converged: nothing to do";
}

TEST(PlanTest, TasksOfTheOutgoingRevisionDoNotMakeItReady) {
  DeploymentInput d = Input(State::kDeploying);
  ServiceView s = ServiceFor(d, 2);
  AddTasks(d, s, 2);
  for (TaskView& t : d.tasks[s.name]) t.task_definition = "arn:td/old:0";
  PlanInput in = In({d}, {s});
  in.edge_servers = {{"http://172.31.0.10:8080", "UP"}, {"http://172.31.0.11:8080", "UP"}};
  EXPECT_TRUE(PlanTick(in).transitions.empty());
}

TEST(PlanTest, AReplicaChangeScalesWithoutANewRevision) {
  DeploymentInput d = Input(State::kHealthy, App(3));
  ServiceView s = ServiceFor(d, 2);
  AddTasks(d, s, 2);
  EXPECT_EQ(Kinds(PlanTick(In({d}, {s}))), std::vector<Kind>{Kind::kScale});
}

TEST(PlanTest, ADriftedRevisionRollsTheService) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);
  s.owner.task_definition_hash = "something-else";
  EXPECT_EQ(Kinds(PlanTick(In({d}, {s}))), std::vector<Kind>{Kind::kRoll});
}

TEST(PlanTest, ALostTagDoesNotReRollWhenTheDurableMarkerMatches) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);
  s.owner.task_definition_hash = "stale-tag";
  d.record.applied_hashes["web"] = d.workloads->front().hash;
  EXPECT_TRUE(PlanTick(In({d}, {s})).actions.empty());
}

TEST(PlanTest, TheDurableMarkerOutranksAStaleTag) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);  // its tag names this rendering...
  AddTasks(d, s, 2);
  // ...but the last roll applied another one and its TagResource was refused: the service runs that.
  d.record.applied_hashes["web"] = "the-revision-rolled-since";
  EXPECT_EQ(Kinds(PlanTick(In({d}, {s}))), std::vector<Kind>{Kind::kRoll});
}

TEST(PlanTest, TheTickThatStartsARollHoldsHealthyWhileTheServiceRuns) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);
  AddTasks(d, s, 2);
  s.owner.task_definition_hash = "the-rendering-before";
  Plan p = PlanTick(In({d}, {s}));
  EXPECT_EQ(Kinds(p), std::vector<Kind>{Kind::kRoll});
  EXPECT_TRUE(p.transitions.empty()) << "ECS shows the roll only after this tick makes it";

  s.running = 0;
  d.tasks.clear();
  d.tasks[s.name] = {};
  p = PlanTick(In({d}, {s}));
  ASSERT_EQ(p.transitions.size(), 1u) << "nothing serves: nothing to hold";
  EXPECT_EQ(p.transitions[0].to, State::kUnhealthy);
}

TEST(PlanTest, SubnetDriftIsOneNetworkUpdateAndNoRevision) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);
  s.subnets = {"subnet-old"};
  EXPECT_EQ(Kinds(PlanTick(In({d}, {s}))), std::vector<Kind>{Kind::kNetwork});
}

TEST(PlanTest, RetirementScalesToZeroWaitsTheDrainThenDeletes) {
  DeploymentInput d = Input(State::kSuperseded);
  ServiceView s = ServiceFor(d, 2);
  Plan p = PlanTick(In({d}, {s}));
  EXPECT_EQ(Kinds(p), std::vector<Kind>{Kind::kRetire});
  EXPECT_EQ(p.mark_retiring, std::vector<std::string>{d.record.id});

  s.desired = 0;
  s.running = 0;
  d.record.retiring_since = kNow - seconds(5);  // drain is 15 s
  EXPECT_TRUE(PlanTick(In({d}, {s})).actions.empty());
  d.record.retiring_since = kNow - seconds(15);
  EXPECT_EQ(Kinds(PlanTick(In({d}, {s}))), std::vector<Kind>{Kind::kDelete});

  s.running = 1;  // a task still stopping: not yet
  EXPECT_TRUE(PlanTick(In({d}, {s})).actions.empty());

  p = PlanTick(In({d}));
  EXPECT_EQ(p.mark_retired, std::vector<std::string>{d.record.id}) << "no service left: retired";
}

TEST(PlanTest, OrphansAreCollectedOnlyWhenTheirDeploymentIsKnownGone) {
  DeploymentInput gone = Input(State::kHealthy, App(), "20261201-000000-gone");
  ServiceView s = ServiceFor(gone, 1);
  PlanInput in = In({}, {s});
  EXPECT_TRUE(PlanTick(in).actions.empty()) << "no verdict: left alone";
  in.orphans[gone.record.id] = OrphanVerdict::kUnknown;
  EXPECT_TRUE(PlanTick(in).actions.empty()) << "a failed lookup deletes nothing";
  in.orphans[gone.record.id] = OrphanVerdict::kGone;
  Plan p = PlanTick(in);
  EXPECT_EQ(Kinds(p), std::vector<Kind>{Kind::kRetire});
  EXPECT_EQ(p.orphans_retiring, std::vector<std::string>{s.name});

  in.services[s.name].desired = 0;
  in.services[s.name].running = 0;
  in.orphan_retiring_since[s.name] = kNow - seconds(20);
  EXPECT_EQ(Kinds(PlanTick(in)), std::vector<Kind>{Kind::kDelete});
}

TEST(PlanTest, AnOrphanIsCollectedOnlyWhenItsNameIsTheOneItsTagsGive) {
  DeploymentInput gone = Input(State::kHealthy, App(), "20261201-000000-gone");
  ServiceView s = ServiceFor(gone, 1);
  s.named_by_us = false;  // the tags copied onto someone else's service
  PlanInput in = In({}, {s});
  in.orphans[gone.record.id] = OrphanVerdict::kGone;
  EXPECT_TRUE(PlanTick(in).actions.empty());
  in.services[s.name].named_by_us = true;
  in.services[s.name].owner.complete = false;  // an identity tag missing: not certain either
  EXPECT_TRUE(PlanTick(in).actions.empty());
}

TEST(PlanTest, AnOlderDeploymentThatGetsHealthyAfterANewerOneIsActiveStops) {
  DeploymentInput older = Input(State::kDeploying, App(), "20261203-120000-aaaa");
  older.record.created_at = kNow - seconds(60);
  ServiceView s = ServiceFor(older, 2);
  AddTasks(older, s, 2);
  DeploymentInput newer = Input(State::kHealthy, App(), "20261203-120030-bbbb");
  newer.record.created_at = kNow - seconds(30);
  newer.record.active = true;
  ServiceView n = ServiceFor(newer, 2);
  AddTasks(newer, n, 2);
  PlanInput in = In({older, newer}, {s, n});
  in.edge_configured = false;
  Plan p = PlanTick(in);
  ASSERT_EQ(p.transitions.size(), 1u);
  EXPECT_EQ(p.transitions[0].deployment_id, older.record.id);
  EXPECT_EQ(p.transitions[0].to, State::kStopped);
  EXPECT_EQ(p.transitions[0].reason, "deployment 20261203-120030-bbbb, which is newer, is already active");
}

TEST(PlanTest, ServicesWithoutTheClassMarkersAreNeverTouched) {
  DeploymentInput gone = Input(State::kHealthy, App(), "20261201-000000-gone");
  ServiceView s = ServiceFor(gone, 1);
  s.owner.owned = false;
  PlanInput in = In({}, {s});
  in.orphans[gone.record.id] = OrphanVerdict::kGone;
  EXPECT_TRUE(PlanTick(in).actions.empty());
}

TEST(PlanTest, DeployingPastTheTimeoutFailsWithTheTasksStopReason) {
  DeploymentInput d = Input(State::kDeploying);
  d.record.deploying_since = kNow - seconds(301);
  ServiceView s = ServiceFor(d, 2);
  AddTasks(d, s, 1, "STOPPED");
  d.tasks[s.name][0].stopped_reason = "Essential container in task exited";
  d.tasks[s.name][0].exit_code = 3;
  Plan p = PlanTick(In({d}, {s}));
  ASSERT_EQ(p.transitions.size(), 1u);
  EXPECT_EQ(p.transitions[0].to, State::kFailed);
  EXPECT_EQ(p.transitions[0].reason,
            "not healthy within 300s: web: 0 of 2 tasks running; web: a task stopped: Essential container in task "
            "exited (exit code 3)");
}

TEST(PlanTest, UnreadableTasksChangeNoState) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);  // d.tasks has no entry: the read failed
  Plan p = PlanTick(In({d}, {s}));
  EXPECT_TRUE(p.transitions.empty());
}

TEST(PlanTest, AHealthyDeploymentIsHeldWhileItsServiceRollsAndGoesUnhealthyAfterTheTimeout) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);
  AddTasks(d, s, 1);  // one of two incoming tasks
  s.ecs_deployments = 2;
  s.primary_created_at = kNow - seconds(60);
  PlanInput in = In({d}, {s});
  in.edge_servers = {{"http://172.31.0.10:8080", "UP"}};
  EXPECT_TRUE(PlanTick(in).transitions.empty());
  in.services[s.name].primary_created_at = kNow - seconds(301);
  Plan p = PlanTick(in);
  ASSERT_EQ(p.transitions.size(), 1u);
  EXPECT_EQ(p.transitions[0].to, State::kUnhealthy);
}

TEST(PlanTest, ServiceEventsAreForwardedWithTheirIdsAsDedupeKeys) {
  DeploymentInput d = Input(State::kHealthy);
  ServiceView s = ServiceFor(d, 2);
  s.events = {{"e-2", kNow, "(service x) has reached a steady state."}};
  Plan p = PlanTick(In({d}, {s}));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].second.dedupe_key, "e-2");
  EXPECT_EQ(p.events[0].second.message, "web: (service x) has reached a steady state.");
}

TEST(PlanTest, AnExpiredDeploymentEnds) {
  DeploymentInput d = Input(State::kHealthy);
  d.record.expires_at = kNow;
  Plan p = PlanTick(In({d}));
  ASSERT_EQ(p.transitions.size(), 1u);
  EXPECT_EQ(p.transitions[0].to, State::kExpired);
}

}  // namespace
}  // namespace paddock::deploy
