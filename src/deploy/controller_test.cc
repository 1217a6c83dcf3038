// The reconcile driver against an in-memory ECS (testing/fake_ecs.h), a real SQLite store and a
// fake clock: deploys and cutovers, drift, crashes between writes, the lease, throttling, the
// orphan sweep and registration spacing.
#include "deploy/controller.h"
#include "deploy/identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "common/testing/fake_clock.h"
#include "deploy/testing/fake_ecs.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::deploy {

// Failures name states, not their bytes.
void PrintTo(State s, std::ostream* os) { *os << StateName(s); }

namespace {

namespace json = boost::json;
using deploy::testing::AwsError;
using deploy::testing::FakeCall;
using deploy::testing::FakeEcs;
using deploy::testing::FakeEcsOptions;
using deploy::testing::FakeService;
using deploy::testing::FakeTask;
using Match = deploy::testing::FakeEcs::Match;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr seconds kStep{5};

AppSpec Web(std::string project, int replicas = 2) {
  AppSpec app;
  app.project = std::move(project);
  ContainerSpec web;
  web.name = "web";
  web.image = "registry.local/web:1";
  web.port = 8080;
  app.containers.push_back(std::move(web));
  app.routes.push_back({.path_prefix = "/", .container = "web", .access = Access::kPublic});
  app.deploy.replicas = replicas;
  return app;
}

// A SQLite store in a temp directory, removed afterwards.
class TempDb {
 public:
  TempDb() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-deploy-ctl-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    auto s = store::SqliteStore::Open({.path = dir_ + "/deploy.db", .durable = false, .schemas = {kSchema}});
    if (!s.ok()) std::abort();
    store_ = std::move(*s);
  }
  ~TempDb() {
    store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  store::Store& operator*() { return *store_; }

 private:
  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

// The store as one controller process sees it: once the fake says the process crashed, its store
// calls fail too, so nothing it would have recorded after its last AWS call is recorded.
class ProcessStore final : public store::Store {
 public:
  ProcessStore(store::Store& base, const FakeEcs& ecs) : base_(base), ecs_(ecs) {}
  Status Read(const std::function<Status(store::ReadTxn&)>& fn) override {
    if (ecs_.crashed()) return Unavailable("the controller's process crashed");
    return base_.Read(fn);
  }
  Status Write(const std::function<Status(store::WriteTxn&)>& fn) override {
    if (ecs_.crashed()) return Unavailable("the controller's process crashed");
    return base_.Write(fn);
  }
  void Close() override {}

 private:
  store::Store& base_;
  const FakeEcs& ecs_;
};

// The edge, seeing every running task of the fake as UP.
class UpEdge final : public EdgeView {
 public:
  explicit UpEdge(const FakeEcs& ecs) : ecs_(ecs) {}
  StatusOr<std::map<std::string, std::string>> Servers() override {
    std::map<std::string, std::string> out;
    for (const FakeTask& t : ecs_.RunningTasks()) {
      if (t.port) out[fmt::format("http://{}:{}", t.address, *t.port)] = "UP";
    }
    return out;
  }

 private:
  const FakeEcs& ecs_;
};

std::vector<FakeCall> PerformedWrites(const std::vector<FakeCall>& calls) {
  std::vector<FakeCall> out;
  for (const FakeCall& c : calls) {
    if (c.write && c.outcome.ok()) out.push_back(c);
  }
  return out;
}

std::vector<std::string> Actions(const std::vector<FakeCall>& calls) {
  std::vector<std::string> out;
  for (const FakeCall& c : calls) out.push_back(c.action);
  return out;
}

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : "<absent>";
}

int64_t Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : -1;
}

std::string TagValue(const FakeService& s, std::string_view key) {
  for (const auto& [k, v] : s.tags) {
    if (k == key) return v;
  }
  return "";
}

// IAM's roles, for the task-role step: GetRole (its trust policy percent-encoded, as IAM answers)
// and CreateRole, each logged; a call can be refused on demand.
class FakeIam final : public QueryAws {
 public:
  StatusOr<std::string> Query(std::string_view service,
                              const std::vector<std::pair<std::string, std::string>>& params) override {
    std::map<std::string, std::string> p(params.begin(), params.end());
    const std::string action = p["Action"];
    log.push_back(action + " " + p["RoleName"]);
    EXPECT_EQ(service, "iam");
    if (denied.contains(action)) {
      return AwsError("AccessDenied", fmt::format("User: arn:aws:iam::000000000000:user/deployer is not authorized to "
                                                  "perform: iam:{} on resource: role {}",
                                                  action, p["RoleName"]));
    }
    if (action == "GetRole") {
      auto it = roles.find(p["RoleName"]);
      if (it == roles.end()) return AwsError("NoSuchEntity", fmt::format("The role with name {} cannot be found.", p["RoleName"]));
      return fmt::format("<GetRoleResponse><GetRoleResult><Role><RoleName>{}</RoleName><AssumeRolePolicyDocument>{}"
                         "</AssumeRolePolicyDocument></Role></GetRoleResult></GetRoleResponse>",
                         it->first, PercentEncode(it->second));
    }
    if (action == "CreateRole") {
      if (roles.contains(p["RoleName"])) return AwsError("EntityAlreadyExists", "Role with name exists.");
      roles[p["RoleName"]] = p["AssumeRolePolicyDocument"];
      paths[p["RoleName"]] = p["Path"];
      return std::string("<CreateRoleResponse/>");
    }
    return AwsError("InvalidAction", action);
  }
  int Count(std::string_view action) const {
    return static_cast<int>(std::count_if(log.begin(), log.end(), [&](const std::string& l) { return l.starts_with(action); }));
  }

  std::map<std::string, std::string> roles;  // name -> trust policy
  std::map<std::string, std::string> paths;  // name -> the path it was created with
  std::set<std::string> denied;              // actions refused with AccessDenied
  std::vector<std::string> log;              // "<Action> <RoleName>"
};

// One cluster, one store, one clock, and the controller process running on them, which a test can
// crash (FakeEcs::CrashAfter), restart or reconfigure.
class World {
 public:
  explicit World(FakeEcsOptions ecs_options = {})
      : ecs(clock, std::move(ecs_options)), deployments(*db, clock), process_store_(*db, ecs) {}

  ControllerOptions Options(std::string holder = "controller-a") {
    ControllerOptions o;
    o.settings.subnets = {"subnet-0a1b"};
    o.settings.security_groups = {"sg-0a1b"};
    o.settings.execution_role_arn = "arn:aws:iam::000000000000:role/exec";  // its secrets need one
    o.interval = kStep;
    o.holder = std::move(holder);
    o.sleep = [this](milliseconds d) { clock.Advance(d); };
    return o;
  }

  void Start(ControllerOptions o, EdgeView* edge = nullptr) {
    options_ = std::move(o);
    edge_ = edge;
    process_deployments_ = std::make_unique<Deployments>(process_store_, clock);
    controller = std::make_unique<Controller>(process_store_, *process_deployments_, ecs, edge_, clock, options_, &iam);
  }
  void Start() { Start(Options()); }

  // The process died and comes back: a new Controller on the same store and cluster, same config.
  void Restart() {
    controller.reset();
    process_deployments_.reset();
    ecs.Recover();
    Start(options_, edge_);
  }
  // A restart with a changed configuration.
  void Reconfigure(const std::function<void(ControllerOptions&)>& change) {
    ControllerOptions o = options_;
    change(o);
    controller.reset();
    Start(std::move(o), edge_);
  }
  const ControllerOptions& options() const { return options_; }

  TickReport Tick() {
    StatusOr<TickReport> r = controller->Tick();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : TickReport{};
  }
  // A tick, then the cluster catches up and time passes.
  TickReport Step() {
    TickReport r = Tick();
    ecs.Settle();
    clock.Advance(kStep);
    return r;
  }
  // Steps until `done` holds (at most `max` steps).
  bool StepUntil(const std::function<bool()>& done, int max = 20) {
    for (int i = 0; i < max; ++i) {
      if (done()) return true;
      Step();
    }
    return done();
  }

  Deployment Create(const std::string& project, int replicas = 2) {
    NewDeployment n;
    n.project = project;
    n.spec = Web(project, replicas);
    StatusOr<Deployment> d = deployments.Create(n);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : Deployment{};
  }
  Deployment Get(const std::string& id) {
    StatusOr<Deployment> d = deployments.Get(id);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : Deployment{};
  }
  State StateOf(const std::string& id) { return Get(id).state; }
  std::function<bool()> Is(const std::string& id, State s) {
    return [this, id, s] { return StateOf(id) == s; };
  }

  std::string ServiceOf(const Deployment& d) const {
    return ServiceName(options_.settings, {d.project, d.group, d.id}, "web");
  }
  std::string FamilyOf(const Deployment& d) const { return FamilyName(options_.settings, {d.project, d.group, d.id}, "web"); }
  std::string HashTag() const { return fmt::format("{}/{}", options_.settings.label_namespace, tag::kTaskDefinitionHash); }
  int ActiveNamed(const std::string& name) const {
    std::vector<FakeService> active = ecs.ActiveServices();
    return static_cast<int>(std::count_if(active.begin(), active.end(), [&](const FakeService& s) { return s.name == name; }));
  }

  paddock::testing::FakeClock clock;
  TempDb db;
  FakeEcs ecs;
  FakeIam iam;
  Deployments deployments;  // the user's side: creates, reads, env

 private:
  ProcessStore process_store_;
  std::unique_ptr<Deployments> process_deployments_;
  ControllerOptions options_;
  EdgeView* edge_ = nullptr;

 public:
  std::unique_ptr<Controller> controller;  // last: it goes first
};

// ---- 1. Deploy, cut over, retire ---------------------------------------------------------------

TEST(ControllerTest, DeploysThenCutsOverWithOverlapAndRetiresTheOldServiceAfterTheDrain) {
  World w;
  UpEdge edge(w.ecs);
  w.Start(w.Options(), &edge);
  ASSERT_TRUE(w.deployments.SetEnv("shop", "API_KEY", "s3cret", /*secret=*/true).ok());
  Deployment d1 = w.Create("shop");

  ASSERT_TRUE(w.StepUntil(w.Is(d1.id, State::kHealthy)));
  std::vector<FakeService> active = w.ecs.ActiveServices();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].name, w.ServiceOf(d1));
  EXPECT_EQ(active[0].desired, 2);
  EXPECT_EQ(json::serialize(active[0].network_configuration.at("awsvpcConfiguration").at("subnets")), R"(["subnet-0a1b"])");
  EXPECT_TRUE(w.Get(d1.id).active);
  const std::string d1_secret = w.controller->SecretName(d1, "API_KEY");
  EXPECT_EQ(w.ecs.Parameters()[d1_secret], "s3cret");

  Deployment d2 = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d2.id, State::kHealthy)));
  // The new one became Healthy while the old one still served: both services, both scaled up.
  active = w.ecs.ActiveServices();
  ASSERT_EQ(active.size(), 2u);
  EXPECT_EQ(w.ecs.Service(w.ServiceOf(d1))->desired, 2);
  EXPECT_EQ(w.StateOf(d1.id), State::kSuperseded);
  EXPECT_TRUE(w.Get(d2.id).active);

  const int mark = w.ecs.calls();
  ASSERT_TRUE(w.StepUntil([&] { return w.Get(d1.id).retired; }));
  active = w.ecs.ActiveServices();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].name, w.ServiceOf(d2));
  EXPECT_EQ(w.ecs.Service(w.ServiceOf(d1))->status, "INACTIVE");
  EXPECT_EQ(w.StateOf(d1.id), State::kSuperseded);
  EXPECT_EQ(w.StateOf(d2.id), State::kHealthy);
  // Scaled to 0 first, deleted no sooner than the drain after.
  std::vector<FakeCall> writes = PerformedWrites(w.ecs.Since(mark));
  ASSERT_THAT(Actions(writes), ElementsAre("UpdateService", "DeleteService", "DeleteParameters"));
  EXPECT_EQ(Int(writes[0].body, "desiredCount"), 0);
  EXPECT_EQ(Str(writes[1].body, "service"), w.ServiceOf(d1));
  EXPECT_GE(writes[1].at - writes[0].at, w.options().drain);
  // The old deployment's secret went with it; the new one's stays.
  EXPECT_FALSE(w.ecs.Parameters().contains(d1_secret));
  EXPECT_EQ(w.ecs.Parameters()[w.controller->SecretName(d2, "API_KEY")], "s3cret");
}

// Revision GC: a retirement leaves the family its newest `keep_revisions` revisions (and any a
// live service runs); older ones are deregistered, then deleted.
TEST(ControllerTest, RetirementKeepsTheNewestRevisionsAndDeletesTheRest) {
  World w;
  UpEdge edge(w.ecs);
  ControllerOptions o = w.Options();
  o.keep_revisions = 2;
  w.Start(o, &edge);
  std::vector<Deployment> ds;
  for (int i = 0; i < 4; ++i) {
    ds.push_back(w.Create("shop"));
    ASSERT_TRUE(w.StepUntil(w.Is(ds.back().id, State::kHealthy)));
    if (i > 0) {
      ASSERT_TRUE(w.StepUntil([&] { return w.Get(ds[ds.size() - 2].id).retired; }));
    }
  }
  std::map<std::string, std::string> statuses = w.ecs.RevisionStatuses(w.FamilyOf(ds[0]));
  ASSERT_EQ(statuses.size(), 4u);
  int active = 0, deleted = 0;
  for (const auto& [arn, status] : statuses) {
    active += status == "ACTIVE";
    deleted += status == "DELETE_IN_PROGRESS";
  }
  EXPECT_EQ(active, 2) << "the newest two stay";
  EXPECT_EQ(deleted, 2);
  // The one the live service runs is among those kept.
  EXPECT_EQ(statuses.at(w.ecs.Service(w.ServiceOf(ds.back()))->task_definition), "ACTIVE");
}

// ---- 2. Scale drift ----------------------------------------------------------------------------

TEST(ControllerTest, AServiceScaledByHandIsScaledBackWithOneUpdateAndNoRegistration) {
  World w;
  w.Start();
  Deployment d = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
  ASSERT_EQ(w.ecs.Registrations(w.FamilyOf(d)), 1);

  ASSERT_TRUE(w.ecs.EditService(w.ServiceOf(d), [](FakeService& s) { s.desired = 5; }));
  w.ecs.Settle();
  const int mark = w.ecs.calls();
  TickReport r = w.Tick();
  EXPECT_EQ(r.writes, 1);
  std::vector<FakeCall> writes = PerformedWrites(w.ecs.Since(mark));
  ASSERT_THAT(Actions(writes), ElementsAre("UpdateService"));
  EXPECT_EQ(Int(writes[0].body, "desiredCount"), 2);
  EXPECT_FALSE(writes[0].body.contains("taskDefinition"));
  EXPECT_FALSE(writes[0].body.contains("networkConfiguration"));
  EXPECT_EQ(w.ecs.Registrations(w.FamilyOf(d)), 1);

  w.ecs.Settle();
  EXPECT_EQ(w.ecs.Service(w.ServiceOf(d))->running, 2);
  EXPECT_EQ(w.Tick().writes, 0);
  EXPECT_EQ(w.StateOf(d.id), State::kHealthy);
}

// ---- 3. Crash safety ---------------------------------------------------------------------------

// After convergence: one ACTIVE service for the workload, at most one registration more than a
// run without the crash made, Healthy, and no further writes.
void ExpectConvergedOnce(World& w, const Deployment& d, int normal_registrations) {
  EXPECT_EQ(w.ActiveNamed(w.ServiceOf(d)), 1);
  EXPECT_EQ(w.ecs.ActiveServices().size(), 1u);
  EXPECT_LE(w.ecs.Registrations(w.FamilyOf(d)), normal_registrations + 1);
  EXPECT_EQ(w.StateOf(d.id), State::kHealthy);
  for (const FakeCall& c : w.ecs.Log()) EXPECT_THAT(c.outcome.message(), ::testing::Not(HasSubstr("not idempotent")));
  const int mark = w.ecs.calls();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w.Step().writes, 0) << "tick " << i << " after convergence";
  EXPECT_EQ(w.ecs.WritesSince(mark), 0);
}

Deployment CreateWithSecret(World& w) {
  EXPECT_TRUE(w.deployments.SetEnv("shop", "API_KEY", "s3cret", /*secret=*/true).ok());
  return w.Create("shop");
}

TEST(ControllerCrashTest, AFirstDeployCrashedAfterAnyWriteConvergesWithoutADuplicate) {
  std::vector<FakeCall> writes;
  {
    World ref;
    ref.Start();
    Deployment d = CreateWithSecret(ref);
    ASSERT_TRUE(ref.StepUntil(ref.Is(d.id, State::kHealthy)));
    writes = PerformedWrites(ref.ecs.Log());
  }
  ASSERT_THAT(Actions(writes), ElementsAre("PutParameter", "RegisterTaskDefinition", "CreateService"));

  for (const FakeCall& k : writes) {
    SCOPED_TRACE(fmt::format("crashed after call {} ({})", k.seq, k.action));
    World w;
    w.Start();
    Deployment d = CreateWithSecret(w);
    w.ecs.CrashAfter(k.seq);
    (void)w.controller->Tick();  // the process dies within this tick
    ASSERT_TRUE(w.ecs.crashed());
    ASSERT_EQ(w.ecs.Log()[k.seq - 1].action, k.action);
    w.Restart();
    ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
    ExpectConvergedOnce(w, d, /*normal_registrations=*/1);
  }
}

// The roll: the operator gives the controller another execution role, so every rendering changes
// and neither the service's hash tag nor the durable marker matches it any more.
void ChangeExecutionRole(ControllerOptions& o) { o.settings.execution_role_arn = "arn:aws:iam::000000000000:role/exec-2"; }

TEST(ControllerCrashTest, ARollCrashedAfterAnyWriteConvergesWithoutADuplicateOrAReRollLoop) {
  auto deploy = [](World& w) {
    w.Start();
    Deployment d = CreateWithSecret(w);
    EXPECT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
    w.Reconfigure(ChangeExecutionRole);
    return d;
  };
  auto rolled = [](World& w, const Deployment& d) {
    return [&w, d] {
      std::optional<FakeService> s = w.ecs.Service(w.ServiceOf(d));
      Deployment now = w.Get(d.id);
      return s && !s->task_definition.ends_with(":1") && !now.applied_hashes.empty() &&
             TagValue(*s, w.HashTag()) == now.applied_hashes["web"] && now.state == State::kHealthy &&
             s->running == 2 && s->deployments.size() == 1;
    };
  };
  std::vector<FakeCall> writes;
  std::string old_hash;
  {
    World ref;
    Deployment d = deploy(ref);
    old_hash = ref.Get(d.id).applied_hashes["web"];
    const int mark = ref.ecs.calls();
    ASSERT_TRUE(ref.StepUntil(rolled(ref, d)));
    EXPECT_NE(ref.Get(d.id).applied_hashes["web"], old_hash);
    EXPECT_EQ(ref.ecs.Registrations(ref.FamilyOf(d)), 2);
    writes = PerformedWrites(ref.ecs.Since(mark));
  }
  // The secret is in SSM already (a deployment's values never change): PutParameter without
  // Overwrite is refused as ParameterAlreadyExists, which is no write.
  ASSERT_THAT(Actions(writes), ElementsAre("RegisterTaskDefinition", "UpdateService", "TagResource"));

  for (const FakeCall& k : writes) {
    SCOPED_TRACE(fmt::format("crashed after call {} ({})", k.seq, k.action));
    World w;
    Deployment d = deploy(w);
    w.ecs.CrashAfter(k.seq);
    (void)w.controller->Tick();
    ASSERT_TRUE(w.ecs.crashed());
    ASSERT_EQ(w.ecs.Log()[k.seq - 1].action, k.action);
    w.Restart();
    ASSERT_TRUE(w.StepUntil(rolled(w, d)));
    EXPECT_NE(w.Get(d.id).applied_hashes["web"], old_hash);
    ExpectConvergedOnce(w, d, /*normal_registrations=*/2);
  }
}

TEST(ControllerTest, ARollKeepsAHealthyDeploymentHealthyWhileTheOldRevisionServes) {
  World w;
  UpEdge edge(w.ecs);
  w.Start(w.Options(), &edge);
  Deployment d = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
  w.Reconfigure(ChangeExecutionRole);
  TickReport roll = w.Tick();
  ASSERT_EQ(roll.plan.actions.size(), 1u);
  EXPECT_EQ(roll.plan.actions[0].kind, ServiceAction::Kind::kRoll);
  EXPECT_EQ(w.StateOf(d.id), State::kHealthy);
  w.Tick();  // ECS is rolling; nothing has settled yet
  EXPECT_EQ(w.StateOf(d.id), State::kHealthy);
  for (int i = 0; i < 3; ++i) w.Step();
  EXPECT_EQ(w.StateOf(d.id), State::kHealthy);
  StatusOr<std::vector<Event>> events = w.deployments.Events(d.id, 0, 100);
  ASSERT_TRUE(events.ok());
  for (const Event& e : *events) EXPECT_THAT(e.message, ::testing::Not(HasSubstr("Unhealthy")));
}

// ---- 4. The durable marker ---------------------------------------------------------------------

TEST(ControllerTest, ARefusedTagResourceDoesNotRollOnEveryTick) {
  World w;
  w.Start();
  Deployment d = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
  const std::string old_hash = w.Get(d.id).applied_hashes["web"];
  w.ecs.FailEvery(Match::Action("TagResource"), AwsError("AccessDeniedException", "not authorized to perform: ecs:TagResource"));
  w.Reconfigure(ChangeExecutionRole);

  ASSERT_TRUE(w.StepUntil([&] { return w.ecs.Registrations(w.FamilyOf(d)) == 2 && w.ecs.Service(w.ServiceOf(d))->running == 2; }));
  w.Step();
  std::optional<FakeService> s = w.ecs.Service(w.ServiceOf(d));
  EXPECT_EQ(TagValue(*s, w.HashTag()), old_hash);  // the tag was never updated
  EXPECT_NE(w.Get(d.id).applied_hashes["web"], old_hash);
  std::vector<FakeCall> log = w.ecs.Log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const FakeCall& c) { return c.action == "TagResource" && !c.outcome.ok(); }));

  const int mark = w.ecs.calls();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w.Step().writes, 0);
  for (const FakeCall& c : w.ecs.Since(mark)) EXPECT_NE(c.action, "RegisterTaskDefinition");
  EXPECT_EQ(w.ecs.Registrations(w.FamilyOf(d)), 2);
  EXPECT_EQ(w.StateOf(d.id), State::kHealthy);
}

TEST(ControllerTest, AStaleTagDoesNotHideARollBackToTheFirstRevision) {
  World w;
  w.Start();
  Deployment d = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
  const ControllerOptions first = w.options();
  w.ecs.FailEvery(Match::Action("TagResource"), AwsError("AccessDeniedException", "not authorized to perform: ecs:TagResource"));
  w.Reconfigure(ChangeExecutionRole);
  ASSERT_TRUE(w.StepUntil([&] { return w.ecs.Service(w.ServiceOf(d))->task_definition.ends_with(":2"); }));

  // Back to the first configuration: the service runs revision 2, so it must roll again, even
  // though its (stale) tag still names the first rendering.
  w.Reconfigure([&](ControllerOptions& o) { o = first; });
  w.Step();
  w.Step();
  EXPECT_EQ(w.ecs.Registrations(w.FamilyOf(d)), 3);
  EXPECT_TRUE(w.ecs.Service(w.ServiceOf(d))->task_definition.ends_with(":3"));
}

// ---- 5. The lease ------------------------------------------------------------------------------

TEST(ControllerTest, OnlyTheLeaseHolderActsAndAPeerTakesOverWhenItsLeaseExpires) {
  World w;
  w.Start(w.Options("controller-a"));
  Controller& a = *w.controller;
  Deployments b_deployments(*w.db, w.clock);
  Controller b(*w.db, b_deployments, w.ecs, nullptr, w.clock, w.Options("controller-b"));
  Deployment d1 = w.Create("shop");

  for (int i = 0; i < 3; ++i) {
    StatusOr<TickReport> ra = a.Tick();
    ASSERT_TRUE(ra.ok()) << ra.status().ToString();
    EXPECT_TRUE(ra->led);
    const int before_b = w.ecs.calls();
    StatusOr<TickReport> rb = b.Tick();
    ASSERT_TRUE(rb.ok()) << rb.status().ToString();
    EXPECT_FALSE(rb->led);
    EXPECT_EQ(rb->writes, 0);
    EXPECT_EQ(w.ecs.calls(), before_b) << "a follower calls nothing";
    w.ecs.Settle();
    w.clock.Advance(kStep);
  }
  ASSERT_EQ(w.StateOf(d1.id), State::kHealthy);

  // a stops ticking (hung, or partitioned from the store); new work arrives.
  Deployment d2 = w.Create("shop");
  w.clock.Advance(w.options().lease_ttl + seconds(1));
  bool b_led = false;
  for (int i = 0; i < 20 && !w.Get(d1.id).retired; ++i) {
    StatusOr<TickReport> rb = b.Tick();
    ASSERT_TRUE(rb.ok()) << rb.status().ToString();
    b_led = b_led || rb->led;
    const int before_a = w.ecs.calls();
    StatusOr<TickReport> ra = a.Tick();
    ASSERT_TRUE(ra.ok()) << ra.status().ToString();
    EXPECT_FALSE(ra->led) << "the old holder woke up while the new one leads";
    EXPECT_EQ(w.ecs.calls(), before_a);
    w.ecs.Settle();
    w.clock.Advance(kStep);
  }
  EXPECT_TRUE(b_led);
  EXPECT_EQ(w.StateOf(d2.id), State::kHealthy);
  EXPECT_TRUE(w.Get(d1.id).retired);
  ASSERT_EQ(w.ecs.ActiveServices().size(), 1u);
  EXPECT_EQ(w.ecs.ActiveServices()[0].name, w.ServiceOf(d2));
}

// ---- 6, 7. Failed reads ------------------------------------------------------------------------

TEST(ControllerTest, AThrottleStormChangesNothingAndTheDeploymentConvergesAfterIt) {
  World w;
  w.Start();
  Deployment d1 = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d1.id, State::kHealthy)));
  Deployment d2 = w.Create("shop");

  w.ecs.FailEvery(Match::AnyOf(AwsService::kEcs), AwsError("ThrottlingException", "Rate exceeded"));
  const int mark = w.ecs.calls();
  for (int i = 0; i < 3; ++i) {
    TickReport r = w.Step();
    EXPECT_TRUE(r.led);
    EXPECT_TRUE(r.throttled);
    EXPECT_EQ(r.writes, 0);
    EXPECT_EQ(w.StateOf(d1.id), State::kHealthy);
    EXPECT_EQ(w.StateOf(d2.id), State::kPending);
  }
  EXPECT_EQ(w.ecs.WritesSince(mark), 0);
  ASSERT_EQ(w.ecs.ActiveServices().size(), 1u);

  w.ecs.ClearFaults();
  ASSERT_TRUE(w.StepUntil([&] { return w.Get(d1.id).retired; }));
  EXPECT_EQ(w.StateOf(d2.id), State::kHealthy);
  ASSERT_EQ(w.ecs.ActiveServices().size(), 1u);
  EXPECT_EQ(w.ecs.ActiveServices()[0].name, w.ServiceOf(d2));
}

TEST(ControllerTest, AFailedClusterReadEndsTheTickWithTheErrorAndNoWrites) {
  World w;
  w.Start();
  Deployment d1 = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d1.id, State::kHealthy)));
  Deployment d2 = w.Create("shop");

  w.ecs.FailNth(Match::Action("ListServices"), 1, Unavailable("connect: connection refused"));
  int mark = w.ecs.calls();
  StatusOr<TickReport> r = w.controller->Tick();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  for (const FakeCall& c : w.ecs.Since(mark)) EXPECT_FALSE(c.write) << c.action;
  EXPECT_EQ(w.StateOf(d2.id), State::kPending);

  // Half a snapshot is no snapshot either: the old service must not look orphaned.
  w.ecs.FailNth(Match::Action("DescribeServices"), 1, AwsError("ServerException", "Service Unavailable."));
  mark = w.ecs.calls();
  r = w.controller->Tick();
  ASSERT_FALSE(r.ok());
  for (const FakeCall& c : w.ecs.Since(mark)) EXPECT_FALSE(c.write) << c.action;
  EXPECT_EQ(w.StateOf(d2.id), State::kPending);

  ASSERT_TRUE(w.StepUntil(w.Is(d2.id, State::kHealthy)));
}

// ---- 8. The orphan sweep -----------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> OwnedTags(std::string_view controller_class, std::string_view id) {
  return {{"paddock.dev/managed-by", "paddock"},       {"paddock.dev/controller-class", std::string(controller_class)},
          {"paddock.dev/project", "shop"},             {"paddock.dev/deployment-group", "default"},
          {"paddock.dev/deployment-id", std::string(id)}, {"paddock.dev/container", "web"}};
}

TEST(ControllerTest, TheSweepDrainsAndDeletesOurOrphansAndNeverTouchesOthers) {
  World w(FakeEcsOptions{.page_limit = 2});  // the orphan is on ListServices' second page
  w.Start();
  Deployment live = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(live.id, State::kHealthy)));

  auto add = [&](std::string name, std::vector<std::pair<std::string, std::string>> tags) {
    FakeService s;
    s.name = std::move(name);
    s.desired = 1;
    s.tags = std::move(tags);
    return w.ecs.AddService(std::move(s));
  };
  // Named as the controller names services (render.h ServiceName), so only the tags tell them apart.
  const std::string other = "paddock_shop_default_20261201-000000-zzzz_web";
  const std::string untagged = "paddock_shop_default_20261201-000000-yyyy_web";
  const std::string orphan = "paddock_shop_default_20261201-000000-xxxx_web";
  const std::string other_arn = add(other, OwnedTags("another-class", "20261201-000000-zzzz"));
  const std::string untagged_arn = add(untagged, {});
  add(orphan, OwnedTags("default", "20261201-000000-xxxx"));
  w.ecs.Settle();
  // The orphan's secret (at its deployment's path in this class), and another class's.
  const std::string orphan_secret = "/paddock/default/shop/default/20261201-000000-xxxx/DB_PASSWORD";
  const std::string other_secret = "/paddock/another-class/shop/default/20261201-000000-zzzz/DB_PASSWORD";
  for (const std::string& name : {orphan_secret, other_secret}) {
    ASSERT_TRUE(w.ecs.Call(AwsService::kSsm, "PutParameter", {{"Name", name}, {"Value", "v"}, {"Type", "SecureString"}}).ok());
  }

  const int mark = w.ecs.calls();
  w.Step();
  EXPECT_EQ(w.ecs.Service(orphan)->desired, 0);
  EXPECT_EQ(w.ecs.Service(orphan)->status, "ACTIVE");
  ASSERT_TRUE(w.StepUntil([&] { return w.ecs.Service(orphan)->status != "ACTIVE"; }));

  std::vector<FakeCall> writes = PerformedWrites(w.ecs.Since(mark));
  ASSERT_THAT(Actions(writes), ElementsAre("UpdateService", "DeleteService", "DeleteParameters"));
  EXPECT_THAT(w.ecs.Parameters(), ::testing::ElementsAre(::testing::Key(other_secret)))
      << "the orphan's secret went with its last service; another class's stayed";
  EXPECT_EQ(Str(writes[0].body, "service"), orphan);
  EXPECT_EQ(Int(writes[0].body, "desiredCount"), 0);
  EXPECT_EQ(Str(writes[1].body, "service"), orphan);
  EXPECT_GE(writes[1].at - writes[0].at, w.options().drain);
  for (const FakeCall& c : w.ecs.Since(mark)) {
    if (!c.write) continue;
    const std::string body = json::serialize(c.body);
    for (const std::string& untouchable : {other, other_arn, untagged, untagged_arn}) {
      EXPECT_THAT(body, ::testing::Not(HasSubstr(untouchable))) << c.action;
    }
  }
  for (const std::string& name : {other, untagged}) {
    EXPECT_EQ(w.ecs.Service(name)->status, "ACTIVE") << name;
    EXPECT_EQ(w.ecs.Service(name)->desired, 1) << name;
  }
  EXPECT_EQ(w.ecs.Service(w.ServiceOf(live))->desired, 2);
  EXPECT_EQ(w.StateOf(live.id), State::kHealthy);
}

// ---- 9. Registration spacing -------------------------------------------------------------------

// A deploying deployment's STOPPED tasks (why it is not healthy yet) are read only for a service
// whose tasks ECS counts as failed: not one ListTasks per deploying service per tick.
TEST(ControllerTest, StoppedTasksAreReadOnlyForAServiceWithFailedTasks) {
  World w;
  w.Start();
  Deployment d = w.Create("shop");
  w.Tick();  // creates the service; its tasks are not placed yet (no Settle)
  w.clock.Advance(kStep);
  auto stopped_reads = [&](int after) {
    int n = 0;
    for (const FakeCall& c : w.ecs.Since(after)) {
      const json::value* status = c.body.if_contains("desiredStatus");
      n += c.action == "ListTasks" && status && *status == "STOPPED";
    }
    return n;
  };
  int mark = w.ecs.calls();
  w.Tick();
  ASSERT_EQ(w.StateOf(d.id), State::kDeploying);
  EXPECT_EQ(stopped_reads(mark), 0) << "no task failed: nothing to explain";

  ASSERT_TRUE(w.ecs.EditService(w.ServiceOf(d), [](FakeService& s) { s.deployments.back().failed_tasks = 1; }));
  w.clock.Advance(kStep);
  mark = w.ecs.calls();
  w.Tick();
  EXPECT_EQ(stopped_reads(mark), 1) << "a failed task: its service's stopped tasks are read";
}

TEST(ControllerTest, RegistrationsAreSpacedEvenWhenSeveralDeploymentsArriveTogether) {
  World w;
  w.Start();
  for (const char* project : {"alpha", "bravo", "charlie"}) w.Create(project);
  w.Tick();
  std::vector<FakeCall> registrations;
  for (const FakeCall& c : w.ecs.Log()) {
    if (c.action == "RegisterTaskDefinition" && c.outcome.ok()) registrations.push_back(c);
  }
  ASSERT_EQ(registrations.size(), 3u);
  for (size_t i = 1; i < registrations.size(); ++i) {
    EXPECT_GE(registrations[i].at - registrations[i - 1].at, w.options().register_spacing) << i;
  }
  EXPECT_EQ(w.ecs.ActiveServices().size(), 3u);
}


// ---- 10. Task roles and refusals ---------------------------------------------------------------

constexpr std::string_view kRolePattern = "arn:aws:iam::000000000000:role/paddock-task-{project}";

std::vector<std::string> FailureEvents(World& w, const std::string& id) {
  std::vector<std::string> out;
  StatusOr<std::vector<Event>> es = w.deployments.Events(id, 0, 500);
  EXPECT_TRUE(es.ok()) << es.status().ToString();
  if (!es.ok()) return out;
  for (const Event& e : *es) {
    if (e.kind == "failure") out.push_back(e.message);
  }
  return out;
}

// `paddock up`: each project's tasks run as a role of their own, made (once) before its first
// revision, trusting ecs-tasks.amazonaws.com and nothing else.
TEST(ControllerTest, EachProjectsTaskRoleIsMadeOnceBeforeItsFirstRevision) {
  World w;
  ControllerOptions o = w.Options();
  o.settings.task_role_pattern = std::string(kRolePattern);
  o.create_task_roles = true;
  w.Start(o);
  Deployment shop = w.Create("shop");
  Deployment blog = w.Create("blog");
  ASSERT_TRUE(w.StepUntil([&] { return w.StateOf(shop.id) == State::kHealthy && w.StateOf(blog.id) == State::kHealthy; }));
  ASSERT_EQ(w.iam.roles.size(), 2u);
  for (const std::string project : {"shop", "blog"}) {
    const std::string name = "paddock-task-" + project;
    ASSERT_TRUE(w.iam.roles.contains(name)) << name;
    json::value trust = json::parse(w.iam.roles[name]);
    EXPECT_EQ(trust.at("Statement").as_array().size(), 1u);
    EXPECT_EQ(trust.at("Statement").at(0).at("Principal"), json::parse(R"({"Service": "ecs-tasks.amazonaws.com"})"));
    EXPECT_EQ(w.iam.paths[name], "/");
  }
  // Each revision names its own project's role.
  for (const FakeCall& c : w.ecs.Log()) {
    if (c.action != "RegisterTaskDefinition") continue;
    const std::string family = Str(c.body, "family");
    const std::string project = family.find("_shop_") != std::string::npos ? "shop" : "blog";
    EXPECT_EQ(Str(c.body, "taskRoleArn"), "arn:aws:iam::000000000000:role/paddock-task-" + project) << family;
  }
  EXPECT_EQ(w.iam.Count("CreateRole"), 2);
  // A redeploy finds the role: no second CreateRole, and nothing more once a deployment has checked.
  Deployment shop2 = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(shop2.id, State::kHealthy)));
  EXPECT_EQ(w.iam.Count("CreateRole"), 2);
  EXPECT_EQ(w.iam.Count("GetRole"), 3);
}

// The trust check reads the policy, not its text: ecs-tasks named in a Deny, under another
// action or in a Condition is no trust; wildcards, lists and a single statement object are.
TEST(TrustsEcsTasksTest, ReadsThePolicyNotItsText) {
  auto trusts = [](std::string statement) { return TrustsEcsTasks(R"({"Version":"2012-10-17","Statement":)" + statement + "}"); };
  EXPECT_TRUE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}])"));
  EXPECT_TRUE(trusts(R"({"Effect":"Allow","Principal":{"Service":["ec2.amazonaws.com","ecs-tasks.amazonaws.com"]},)"
                     R"("Action":["sts:TagSession","STS:assume*"]})"));
  EXPECT_TRUE(trusts(R"([{"Effect":"Allow","Principal":"*","Action":"sts:*"}])"));
  EXPECT_TRUE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole",)"
                     R"("Condition":{"StringEquals":{"aws:SourceAccount":"123456789012"}}}])"))
      << "the Allow's own condition is ECS's to meet";
  EXPECT_TRUE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"*"},)"
                     R"({"Effect":"Deny","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole",)"
                     R"("Condition":{"Bool":{"aws:SecureTransport":"false"}}}])"))
      << "a conditional Deny may not apply";

  EXPECT_FALSE(trusts(R"([{"Effect":"Deny","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}])"));
  EXPECT_FALSE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"},)"
                      R"({"Effect":"Deny","Principal":"*","Action":"sts:Assume?ole"}])"))
      << "an unconditional Deny wins";
  EXPECT_FALSE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:TagSession"}])"));
  EXPECT_FALSE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs.amazonaws.com"},"Action":"sts:AssumeRole",)"
                      R"("Condition":{"StringLike":{"aws:SourceArn":"ecs-tasks.amazonaws.com"}}}])"));
  EXPECT_FALSE(trusts(R"([{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::1:role/ecs-tasks.amazonaws.com"},)"
                      R"("Action":"sts:AssumeRole"}])"));
  EXPECT_FALSE(trusts(R"([{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRoleWithSAML"}])"));
  EXPECT_FALSE(TrustsEcsTasks("ecs-tasks.amazonaws.com sts:AssumeRole"));
  EXPECT_FALSE(TrustsEcsTasks(R"({"Statement":[]})"));
}

// A standalone controller never makes roles: a project whose role is missing, or does not trust
// ECS's tasks, fails at once, naming the role and how to fix it — before any secret, revision or
// service exists.
TEST(ControllerTest, AMissingOrUntrustingTaskRoleFailsTheDeploymentNamingIt) {
  World w;
  ControllerOptions o = w.Options();
  o.settings.task_role_pattern = std::string(kRolePattern);
  w.Start(o);
  ASSERT_TRUE(w.deployments.SetEnv("shop", "API_KEY", "s3cret", /*secret=*/true).ok());
  Deployment d = w.Create("shop");
  const int mark = w.ecs.calls();
  w.Step();
  EXPECT_EQ(w.StateOf(d.id), State::kFailed);
  EXPECT_THAT(w.Get(d.id).reason,
              HasSubstr("the task role arn:aws:iam::000000000000:role/paddock-task-shop of project shop does not exist: "
                        "create it trusting ecs-tasks.amazonaws.com (aws iam create-role --role-name paddock-task-shop"));
  EXPECT_THAT(w.Get(d.id).reason, HasSubstr("--create-task-roles"));
  EXPECT_EQ(w.iam.Count("CreateRole"), 0);
  for (const FakeCall& c : w.ecs.Since(mark)) EXPECT_FALSE(c.write) << c.action;

  w.iam.roles["paddock-task-shop"] =
      R"({"Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]})";
  Deployment d2 = w.Create("shop");
  w.Step();
  EXPECT_EQ(w.StateOf(d2.id), State::kFailed);
  EXPECT_THAT(w.Get(d2.id).reason, HasSubstr("paddock-task-shop of project shop does not trust ecs-tasks.amazonaws.com"));

  w.iam.roles["paddock-task-shop"] =
      R"({"Statement":[{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}]})";
  Deployment d3 = w.Create("shop");
  ASSERT_TRUE(w.StepUntil(w.Is(d3.id, State::kHealthy)));
  EXPECT_EQ(w.ecs.Service(w.ServiceOf(d3))->status, "ACTIVE");
}

// A refused call (its right not granted) names the action in the deployment's events, once, and is
// retried: granting it later converges with nothing left half-done — the task role's check, the
// cluster read, and the secrets' deletion at retirement.
TEST(ControllerTest, ADeniedCallIsAnEventNamingTheActionAndATickAfterTheGrantConverges) {
  World w;
  ControllerOptions o = w.Options();
  o.settings.task_role_pattern = std::string(kRolePattern);
  o.create_task_roles = true;
  w.Start(o);
  ASSERT_TRUE(w.deployments.SetEnv("shop", "API_KEY", "s3cret", /*secret=*/true).ok());
  Deployment d = w.Create("shop");
  w.iam.denied = {"GetRole"};
  for (int i = 0; i < 3; ++i) w.Step();
  EXPECT_EQ(w.StateOf(d.id), State::kDeploying);
  std::vector<std::string> failures = FailureEvents(w, d.id);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_THAT(failures[0], HasSubstr("AccessDenied: User: arn:aws:iam::000000000000:user/deployer is not authorized to "
                                     "perform: iam:GetRole"));
  EXPECT_TRUE(w.ecs.ActiveServices().empty());
  w.iam.denied.clear();
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));

  // The cluster cannot be read: the tick ends, and every deployment with work left says why.
  Deployment d2 = w.Create("shop");
  w.ecs.FailEvery(Match::Action("ListServices"),
                  AwsError("AccessDeniedException", "User: arn:aws:iam::000000000000:user/deployer is not authorized "
                                                    "to perform: ecs:ListServices on resource: *"));
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(w.controller->Tick().ok());
  failures = FailureEvents(w, d2.id);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_THAT(failures[0], HasSubstr("reading the cluster default: AccessDeniedException: "));
  EXPECT_THAT(failures[0], HasSubstr("perform: ecs:ListServices"));
  EXPECT_EQ(w.StateOf(d2.id), State::kPending);
  w.ecs.ClearFaults();
  ASSERT_TRUE(w.StepUntil(w.Is(d2.id, State::kHealthy)));

  // The superseded deployment's secrets cannot be listed: it is not marked retired until they go.
  w.ecs.FailEvery(Match::Action("GetParametersByPath"),
                  AwsError("AccessDeniedException", "User: arn:aws:iam::000000000000:user/deployer is not authorized "
                                                    "to perform: ssm:GetParametersByPath on resource: x"));
  for (int i = 0; i < 8; ++i) w.Step();
  EXPECT_FALSE(w.Get(d.id).retired);
  failures = FailureEvents(w, d.id);
  ASSERT_EQ(failures.size(), 3u);  // the role's check, the cluster read (it was Healthy then), and this
  EXPECT_THAT(failures[2], HasSubstr("deleting its secrets: AccessDeniedException: "));
  EXPECT_THAT(failures[2], HasSubstr("ssm:GetParametersByPath"));
  EXPECT_TRUE(w.ecs.Parameters().contains(w.controller->SecretName(d, "API_KEY")));
  w.ecs.ClearFaults();
  ASSERT_TRUE(w.StepUntil([&] { return w.Get(d.id).retired; }));
  EXPECT_FALSE(w.ecs.Parameters().contains(w.controller->SecretName(d, "API_KEY")));
}

}  // namespace
}  // namespace paddock::deploy

namespace paddock::deploy {
namespace {

// ---- D8: workload identity ------------------------------------------------------------------------

ControllerOptions WithIdentity(World& w) {
  ControllerOptions o = w.Options();
  o.settings.identity_agent_image = "paddock/identity-agent:1";
  o.settings.identity_exchange_url = "http://169.254.170.2/paddock/v1/identity/token";
  return o;
}

// web and worker: two services, one deployment, one credential.
Deployment CreateDuo(World& w) {
  NewDeployment n;
  n.project = "duo";
  n.spec = Web("duo", 1);
  ContainerSpec worker;
  worker.name = "worker";
  worker.image = "registry.local/worker:1";
  n.spec.containers.push_back(std::move(worker));
  n.spec.identity_audiences = {{"api", "https://api.example.com"}};
  StatusOr<Deployment> d = w.deployments.Create(n);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : Deployment{};
}

// The ADR's order: the credential into SSM, its hash on the record, then the revisions that name
// it — one credential however many containers; it goes with the deployment's other parameters.
TEST(ControllerIdentityTest, TheCredentialGoesToSsmThenItsHashToTheRecordThenIntoEachRevision) {
  World w;
  w.Start(WithIdentity(w));
  Deployment d = CreateDuo(w);
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));

  const std::string name = w.controller->SecretName(d, kIdentityCredentialKey);
  std::vector<FakeCall> writes = PerformedWrites(w.ecs.Log());
  ASSERT_THAT(Actions(writes), ElementsAre("PutParameter", "RegisterTaskDefinition", "CreateService",
                                           "RegisterTaskDefinition", "CreateService"));
  EXPECT_EQ(Str(writes[0].body, "Name"), name);
  EXPECT_EQ(writes[0].body.at("Type"), "SecureString");
  const std::string credential = w.ecs.Parameters()[name];
  EXPECT_EQ(IdentityCredentialDeployment(credential), d.id);
  EXPECT_EQ(w.Get(d.id).identity_credential_hash, IdentityCredentialHash(credential));
  for (const FakeCall& r : writes) {
    if (r.action != "RegisterTaskDefinition") continue;
    const json::array& defs = r.body.at("containerDefinitions").as_array();
    ASSERT_EQ(defs.size(), 2u);
    EXPECT_EQ(defs[1].at("secrets").at(0).at("valueFrom"), json::string(name));
    EXPECT_FALSE(json::serialize(r.body).find(credential) != std::string::npos) << "the revision names it, never holds it";
  }

  // A redeploy gets its own credential; the retired deployment's goes with its service.
  Deployment d2 = CreateDuo(w);
  ASSERT_TRUE(w.StepUntil([&] { return w.Get(d.id).retired; }, 40));
  EXPECT_FALSE(w.ecs.Parameters().contains(name));
  const std::string second = w.ecs.Parameters()[w.controller->SecretName(d2, kIdentityCredentialKey)];
  EXPECT_EQ(IdentityCredentialDeployment(second), d2.id);
  EXPECT_NE(second, credential);
}

// A crash after the parameter was written and before its hash was kept: the next life writes a
// new one over it (no revision named the first), and from then on the two agree.
TEST(ControllerIdentityTest, ACrashBeforeTheHashIsKeptMintsTheCredentialAgain) {
  int put_seq = 0;
  {
    World ref;
    ref.Start(WithIdentity(ref));
    Deployment d = ref.Create("shop");
    ASSERT_TRUE(ref.StepUntil(ref.Is(d.id, State::kHealthy)));
    std::vector<FakeCall> writes = PerformedWrites(ref.ecs.Log());
    ASSERT_FALSE(writes.empty());
    ASSERT_EQ(writes[0].action, "PutParameter");
    put_seq = writes[0].seq;
  }
  World w;
  w.Start(WithIdentity(w));
  Deployment d = w.Create("shop");
  w.ecs.CrashAfter(put_seq);
  (void)w.controller->Tick();  // the process dies right after the put
  ASSERT_TRUE(w.ecs.crashed());
  const std::string name = w.controller->SecretName(d, kIdentityCredentialKey);
  const std::string first = w.ecs.Parameters()[name];
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(w.Get(d.id).identity_credential_hash, "");
  w.Restart();
  ASSERT_TRUE(w.StepUntil(w.Is(d.id, State::kHealthy)));
  const std::string kept = w.ecs.Parameters()[name];
  EXPECT_NE(kept, first);
  EXPECT_EQ(w.Get(d.id).identity_credential_hash, IdentityCredentialHash(kept));
  EXPECT_EQ(w.ecs.Registrations(w.FamilyOf(d)), 1);
}

}  // namespace
}  // namespace paddock::deploy
