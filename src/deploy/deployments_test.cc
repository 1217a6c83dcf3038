#include "deploy/deployments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "sched/lease.h"
#include "store/key.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::deploy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr State kAllStates[] = {State::kPending,    State::kDeploying, State::kHealthy, State::kUnhealthy,
                                State::kSuperseded, State::kStopped,   State::kExpired, State::kFailed};

AppSpec App(std::string project, std::string image = "registry.local/web:1") {
  AppSpec app;
  app.project = std::move(project);
  ContainerSpec web;
  web.name = "web";
  web.image = std::move(image);
  web.port = 8080;
  web.env = {{"GREETING", "hello"}};
  app.containers.push_back(std::move(web));
  app.routes.push_back({.path_prefix = "/", .container = "web", .access = Access::kPublic});
  return app;
}

// A SQLite store in a temp directory that a test can close and open again.
class TempDb {
 public:
  TempDb() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-deploy-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    Open();
  }
  ~TempDb() {
    store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Reopen() {
    store_->Close();
    store_.reset();
    Open();
  }
  store::Store& operator*() { return *store_; }

 private:
  void Open() {
    auto s = store::SqliteStore::Open({.path = dir_ + "/deploy.db", .durable = false, .schemas = {kSchema}});
    if (!s.ok()) std::abort();
    store_ = std::move(*s);
  }

  std::string dir_;
  std::unique_ptr<store::SqliteStore> store_;
};

NewDeployment New(std::string project, std::string group = "default") {
  NewDeployment d;
  d.spec = App(project);
  d.project = std::move(project);
  d.group = std::move(group);
  return d;
}

NewDeployment With(NewDeployment d, const std::function<void(NewDeployment&)>& change) {
  change(d);
  return d;
}

TaskObservation Task(std::string arn) {
  TaskObservation t;
  t.task_arn = std::move(arn);
  t.container = "web";
  return t;
}

class DeploymentsTest : public ::testing::Test {
 protected:
  DeploymentsTest() : deployments_(std::make_unique<Deployments>(*db_, clock_)) {}

  Deployment MustCreate(const std::string& project, const std::string& group = "default") {
    auto d = deployments_->Create(New(project, group));
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    clock_.Advance(milliseconds(1500));  // creation times differ, so newest-first is unambiguous
    return d.ok() ? *d : Deployment{};
  }

  Deployment MustGet(const std::string& id) {
    auto d = deployments_->Get(id);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : Deployment{};
  }

  void MustTransition(const std::string& id, State to, std::string_view reason = "") {
    Status s = deployments_->Transition(id, to, reason, {});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::vector<Event> AllEvents(const std::string& id) {
    auto e = deployments_->Events(id, 0, 1000);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : std::vector<Event>{};
  }

  // The deploy_active row of (project, group), read from the store itself.
  std::optional<std::string> ActiveRow(std::string_view project, std::string_view group) {
    std::optional<std::string> out;
    Status s = (*db_).Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(out, txn.Get("deploy_active", store::Key().Str(project).Str(group).Done()));
      return OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  static std::vector<std::string> Ids(const std::vector<Deployment>& ds) {
    std::vector<std::string> ids;
    for (const Deployment& d : ds) ids.push_back(d.id);
    return ids;
  }

  testing::FakeClock clock_;
  TempDb db_;
  std::unique_ptr<Deployments> deployments_;
};

void ExpectSame(const Deployment& a, const Deployment& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.project, b.project);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.environment, b.environment);
  EXPECT_EQ(a.from, b.from);
  EXPECT_EQ(boost::json::serialize(ToJson(a.spec)), boost::json::serialize(ToJson(b.spec)));
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.secrets, b.secrets);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.active, b.active);
  EXPECT_EQ(a.created_at, b.created_at);
  EXPECT_EQ(a.deploying_since, b.deploying_since);
  EXPECT_EQ(a.healthy_since, b.healthy_since);
  EXPECT_EQ(a.expires_at, b.expires_at);
  EXPECT_EQ(a.finished_at, b.finished_at);
  EXPECT_EQ(a.retiring_since, b.retiring_since);
  EXPECT_EQ(a.retired, b.retired);
  EXPECT_EQ(a.applied_hashes, b.applied_hashes);
  EXPECT_EQ(a.identity_credential_hash, b.identity_credential_hash);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    EXPECT_EQ(a.tasks[i].task_arn, b.tasks[i].task_arn);
    EXPECT_EQ(a.tasks[i].container, b.tasks[i].container);
    EXPECT_EQ(a.tasks[i].last_status, b.tasks[i].last_status);
    EXPECT_EQ(a.tasks[i].health, b.tasks[i].health);
    EXPECT_EQ(a.tasks[i].address, b.tasks[i].address);
    EXPECT_EQ(a.tasks[i].stopped_reason, b.tasks[i].stopped_reason);
    EXPECT_EQ(a.tasks[i].exit_code, b.tasks[i].exit_code);
  }
}

TEST(StateTest, NamesRoundTrip) {
  for (State s : kAllStates) EXPECT_EQ(ParseState(StateName(s)), s);
  EXPECT_EQ(ParseState("healthy"), std::nullopt);
  EXPECT_EQ(StateName(State::kUnhealthy), "Unhealthy");
}

TEST(StateTest, CanTransitionIsExactlyTheLifecycle) {
  const std::set<std::pair<State, State>> allowed = {
      {State::kPending, State::kDeploying},    {State::kPending, State::kFailed},
      {State::kPending, State::kStopped},      {State::kPending, State::kExpired},
      {State::kDeploying, State::kHealthy},    {State::kDeploying, State::kFailed},
      {State::kDeploying, State::kStopped},    {State::kDeploying, State::kExpired},
      {State::kHealthy, State::kUnhealthy},    {State::kHealthy, State::kSuperseded},
      {State::kHealthy, State::kStopped},      {State::kHealthy, State::kExpired},
      {State::kUnhealthy, State::kHealthy},    {State::kUnhealthy, State::kSuperseded},
      {State::kUnhealthy, State::kStopped},    {State::kUnhealthy, State::kExpired},
      {State::kUnhealthy, State::kFailed},
  };
  for (State from : kAllStates) {
    for (State to : kAllStates) {
      EXPECT_EQ(CanTransition(from, to), allowed.contains({from, to})) << StateName(from) << " -> " << StateName(to);
    }
    EXPECT_EQ(IsTerminal(from), from == State::kSuperseded || from == State::kStopped || from == State::kExpired ||
                                    from == State::kFailed);
  }
}

TEST_F(DeploymentsTest, CreateStoresAPendingDeploymentWithATimedIdAndAStateEvent) {
  clock_.Set(FromEpochMillis(1'796'322'612'345));  // 2026-12-03 18:30:12.345 UTC
  auto d = deployments_->Create(With(New("shop", "canary"), [](NewDeployment& n) {
    n.environment = "staging";
    n.expire_after = seconds(3600);
  }));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(std::regex_match(d->id, std::regex("20261203-183012-[a-z0-9]{4}"))) << d->id;
  EXPECT_EQ(d->state, State::kPending);
  EXPECT_FALSE(d->active);
  EXPECT_EQ(d->created_at, clock_.Now());
  EXPECT_EQ(d->expires_at, clock_.Now() + seconds(3600));
  ExpectSame(MustGet(d->id), *d);

  std::vector<Event> events = AllEvents(d->id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].seq, 1u);
  EXPECT_EQ(events[0].kind, "state");
  EXPECT_EQ(events[0].message, "Pending");

  auto redeploy = deployments_->Create(With(New("shop", "canary"), [&](NewDeployment& n) { n.from = d->id; }));
  ASSERT_TRUE(redeploy.ok()) << redeploy.status().ToString();
  EXPECT_NE(redeploy->id, d->id);
  EXPECT_EQ(MustGet(redeploy->id).from, d->id);
}

TEST_F(DeploymentsTest, CreateRefusesBadInput) {
  EXPECT_EQ(deployments_->Create(With(New("shop"), [](NewDeployment& n) { n.spec = App("other"); })).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->Create(New("Shop")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->Create(New("shop", "")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->Create(With(New("shop"), [](NewDeployment& n) { n.spec = App("shop", ""); })).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->Create(With(New("shop"), [](NewDeployment& n) { n.expire_after = seconds(0); })).status().code(),
            StatusCode::kInvalidArgument);
  auto missing_from = deployments_->Create(With(New("shop"), [](NewDeployment& n) { n.from = "20260101-000000-zzzz"; }));
  EXPECT_EQ(missing_from.status().code(), StatusCode::kNotFound);
  auto listed = deployments_->List("", "", "", 100);
  ASSERT_TRUE(listed.ok());
  EXPECT_THAT(listed->deployments, IsEmpty());  // nothing was half-created

  auto get = deployments_->Get("20260101-000000-zzzz");
  EXPECT_EQ(get.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(get.status().message(), "Deployment 20260101-000000-zzzz not found.");
}

TEST_F(DeploymentsTest, ListIsNewestFirstFilteredAndPaged) {
  Deployment a1 = MustCreate("alpha");
  Deployment b1 = MustCreate("beta");
  Deployment a2 = MustCreate("alpha", "canary");
  Deployment a3 = MustCreate("alpha");
  Deployment b2 = MustCreate("beta", "canary");

  auto all = deployments_->List("", "", "", 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_THAT(Ids(all->deployments), ElementsAre(b2.id, a3.id, a2.id, b1.id, a1.id));
  EXPECT_EQ(all->next_token, "");

  // Pages of two, all the way through.
  std::vector<std::string> paged;
  std::string token;
  int pages = 0;
  do {
    auto page = deployments_->List("", "", token, 2);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_LE(page->deployments.size(), 2u);
    for (const std::string& id : Ids(page->deployments)) paged.push_back(id);
    token = page->next_token;
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  EXPECT_THAT(paged, ElementsAre(b2.id, a3.id, a2.id, b1.id, a1.id));
  EXPECT_EQ(pages, 3);

  auto alpha = deployments_->List("alpha", "", "", 100);
  ASSERT_TRUE(alpha.ok());
  EXPECT_THAT(Ids(alpha->deployments), ElementsAre(a3.id, a2.id, a1.id));

  auto alpha_page = deployments_->List("alpha", "", "", 2);
  ASSERT_TRUE(alpha_page.ok());
  EXPECT_THAT(Ids(alpha_page->deployments), ElementsAre(a3.id, a2.id));
  ASSERT_NE(alpha_page->next_token, "");
  auto alpha_rest = deployments_->List("alpha", "", alpha_page->next_token, 2);
  ASSERT_TRUE(alpha_rest.ok());
  EXPECT_THAT(Ids(alpha_rest->deployments), ElementsAre(a1.id));
  EXPECT_EQ(alpha_rest->next_token, "");

  auto canary = deployments_->List("", "canary", "", 100);
  ASSERT_TRUE(canary.ok());
  EXPECT_THAT(Ids(canary->deployments), ElementsAre(b2.id, a2.id));
  auto beta_default = deployments_->List("beta", "default", "", 100);
  ASSERT_TRUE(beta_default.ok());
  EXPECT_THAT(Ids(beta_default->deployments), ElementsAre(b1.id));

  // A token is checked: altered, or used with other filters, it is refused.
  const std::string good = alpha_page->next_token;
  std::string tampered = good;
  tampered[0] = tampered[0] == 'A' ? 'B' : 'A';
  EXPECT_EQ(deployments_->List("alpha", "", tampered, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->List("alpha", "", good + "0", 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->List("beta", "", good, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->List("alpha", "", "not-a-token", 2).status().code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(deployments_->List("", "", "", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deployments_->List("", "", "", 101).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DeploymentsTest, AFilteredListBoundsItsWorkAndContinuesWithAToken) {
  Deployment rare = MustCreate("rare");
  for (int i = 0; i < 1000; ++i) MustCreate("common");

  auto first = deployments_->List("rare", "", "", 10);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_THAT(first->deployments, IsEmpty());  // 1000 rows read, none matched
  ASSERT_NE(first->next_token, "");
  auto second = deployments_->List("rare", "", first->next_token, 10);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_THAT(Ids(second->deployments), ElementsAre(rare.id));
  EXPECT_EQ(second->next_token, "");
}

// Every (from, to) pair: reach `from` along allowed moves, then ask for `to`.
TEST_F(DeploymentsTest, TransitionFollowsCanTransitionForEveryPair) {
  const std::map<State, std::vector<State>> path = {
      {State::kPending, {}},
      {State::kDeploying, {State::kDeploying}},
      {State::kHealthy, {State::kDeploying, State::kHealthy}},
      {State::kUnhealthy, {State::kDeploying, State::kHealthy, State::kUnhealthy}},
      {State::kSuperseded, {State::kDeploying, State::kHealthy, State::kSuperseded}},
      {State::kStopped, {State::kStopped}},
      {State::kExpired, {State::kDeploying, State::kExpired}},
      {State::kFailed, {State::kDeploying, State::kFailed}},
  };
  int n = 0;
  for (State from : kAllStates) {
    for (State to : kAllStates) {
      SCOPED_TRACE(fmt::format("{} -> {}", StateName(from), StateName(to)));
      Deployment d = MustCreate("shop", fmt::format("g{}", n++));
      for (State step : path.at(from)) MustTransition(d.id, step);
      Deployment before = MustGet(d.id);
      ASSERT_EQ(before.state, from);
      const size_t events_before = AllEvents(d.id).size();

      Status s = deployments_->Transition(d.id, to, "because", {});
      Deployment after = MustGet(d.id);
      if (from == to) {
        EXPECT_TRUE(s.ok()) << s.ToString();
        ExpectSame(after, before);
        EXPECT_EQ(AllEvents(d.id).size(), events_before);
      } else if (CanTransition(from, to)) {
        EXPECT_TRUE(s.ok()) << s.ToString();
        EXPECT_EQ(after.state, to);
        EXPECT_EQ(after.reason, "because");
        std::vector<Event> events = AllEvents(d.id);
        ASSERT_EQ(events.size(), events_before + 1);
        EXPECT_EQ(events.back().kind, "state");
        EXPECT_EQ(events.back().message, fmt::format("{} -> {}: because", StateName(from), StateName(to)));
        EXPECT_EQ(after.finished_at.has_value(), IsTerminal(to));
        if (IsTerminal(to)) {
          EXPECT_FALSE(after.active);
        }
      } else {
        EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
        EXPECT_THAT(s.message(), HasSubstr(std::string(StateName(from))));
        EXPECT_THAT(s.message(), HasSubstr(std::string(StateName(to))));
        ExpectSame(after, before);
        EXPECT_EQ(AllEvents(d.id).size(), events_before);
      }
    }
  }
  EXPECT_EQ(deployments_->Transition("20260101-000000-zzzz", State::kDeploying, "", {}).code(),
            StatusCode::kNotFound);
}

TEST_F(DeploymentsTest, FirstHealthySupersedesThePreviousActiveOneAtomically) {
  Deployment a = MustCreate("shop");
  Deployment other_group = MustCreate("shop", "canary");
  MustTransition(a.id, State::kDeploying);
  const TimePoint a_healthy_at = clock_.Now();
  MustTransition(a.id, State::kHealthy);
  MustTransition(other_group.id, State::kDeploying);
  MustTransition(other_group.id, State::kHealthy);
  EXPECT_TRUE(MustGet(a.id).active);
  EXPECT_EQ(MustGet(a.id).healthy_since, a_healthy_at);
  EXPECT_EQ(ActiveRow("shop", "default"), a.id);

  Deployment b = MustCreate("shop");
  MustTransition(b.id, State::kDeploying);
  const size_t a_events = AllEvents(a.id).size();
  clock_.Advance(seconds(5));
  const TimePoint b_healthy_at = clock_.Now();
  MustTransition(b.id, State::kHealthy);

  Deployment a_after = MustGet(a.id);
  Deployment b_after = MustGet(b.id);
  EXPECT_EQ(a_after.state, State::kSuperseded);
  EXPECT_FALSE(a_after.active);
  EXPECT_EQ(a_after.finished_at, b_healthy_at);
  EXPECT_EQ(a_after.reason, "superseded by " + b.id);
  std::vector<Event> events = AllEvents(a.id);
  ASSERT_EQ(events.size(), a_events + 1);
  EXPECT_EQ(events.back().kind, "state");
  EXPECT_THAT(events.back().message, HasSubstr("superseded by " + b.id));
  EXPECT_EQ(b_after.state, State::kHealthy);
  EXPECT_TRUE(b_after.active);
  EXPECT_EQ(b_after.healthy_since, b_healthy_at);
  EXPECT_EQ(ActiveRow("shop", "default"), b.id);
  // Another group of the project keeps its own active deployment.
  EXPECT_EQ(ActiveRow("shop", "canary"), other_group.id);
  EXPECT_EQ(MustGet(other_group.id).state, State::kHealthy);

  // Healthy again after Unhealthy is not a first time: nothing is superseded, healthy_since stays.
  clock_.Advance(seconds(5));
  MustTransition(b.id, State::kUnhealthy, "2 of 2 tasks DOWN");
  EXPECT_TRUE(MustGet(b.id).active);
  EXPECT_EQ(MustGet(b.id).reason, "2 of 2 tasks DOWN");
  MustTransition(b.id, State::kHealthy);
  EXPECT_EQ(MustGet(b.id).healthy_since, b_healthy_at);
  EXPECT_EQ(ActiveRow("shop", "default"), b.id);
}

TEST_F(DeploymentsTest, StoppingTheActiveOneLeavesTheGroupWithoutAnActiveDeployment) {
  Deployment a = MustCreate("shop");
  MustTransition(a.id, State::kDeploying);
  MustTransition(a.id, State::kHealthy);
  ASSERT_EQ(ActiveRow("shop", "default"), a.id);

  clock_.Advance(seconds(1));
  ASSERT_TRUE(deployments_->Stop(a.id, "user stop").ok());
  Deployment after = MustGet(a.id);
  EXPECT_EQ(after.state, State::kStopped);
  EXPECT_EQ(after.reason, "user stop");
  EXPECT_FALSE(after.active);
  EXPECT_EQ(after.finished_at, clock_.Now());
  EXPECT_EQ(ActiveRow("shop", "default"), std::nullopt);

  Status again = deployments_->Stop(a.id, "again");
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("Stopped"));

  // A stop of a Pending one is allowed too, and touches no group's active deployment.
  Deployment b = MustCreate("shop");
  ASSERT_TRUE(deployments_->Stop(b.id, "").ok());
  EXPECT_EQ(MustGet(b.id).state, State::kStopped);
}

TEST_F(DeploymentsTest, AFencedWriteWithAStaleEpochIsRefusedAndChangesNothing) {
  Deployment d = MustCreate("shop");
  sched::Lease old_leader(*db_, "server-1", seconds(10), {}, {.table = "deploy_lease", .name = "default"});
  sched::Lease new_leader(*db_, "server-2", seconds(10), {}, {.table = "deploy_lease", .name = "default"});
  auto old_epoch = old_leader.TryAcquire(clock_.Now());
  ASSERT_TRUE(old_epoch.ok() && old_epoch->has_value());
  const Fence old_fence{.lease = &old_leader, .epoch = **old_epoch};
  ASSERT_TRUE(deployments_->Transition(d.id, State::kDeploying, "", old_fence).ok());

  clock_.Advance(seconds(11));  // the old leader's lease lapses; another takes it
  auto new_epoch = new_leader.TryAcquire(clock_.Now());
  ASSERT_TRUE(new_epoch.ok() && new_epoch->has_value());
  const Fence new_fence{.lease = &new_leader, .epoch = **new_epoch};

  Deployment before = MustGet(d.id);
  const size_t events_before = AllEvents(d.id).size();
  const Status refused[] = {
      deployments_->Transition(d.id, State::kHealthy, "", old_fence),
      deployments_->RecordApplied(d.id, "web", "abc123", old_fence),
      deployments_->RecordTasks(d.id, {Task("arn:t/1")}, old_fence),
      deployments_->MarkRetiring(d.id, old_fence),
      deployments_->AppendEvents(d.id, {{.kind = "info", .message = "late", .dedupe_key = ""}}, old_fence),
  };
  for (const Status& s : refused) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_TRUE(IsError(s, sched::Error::kLeaseLost)) << s.ToString();
  }
  ExpectSame(MustGet(d.id), before);
  EXPECT_EQ(AllEvents(d.id).size(), events_before);
  EXPECT_EQ(ActiveRow("shop", "default"), std::nullopt);

  // The new leader's epoch writes.
  ASSERT_TRUE(deployments_->Transition(d.id, State::kHealthy, "", new_fence).ok());
  ASSERT_TRUE(deployments_->RecordApplied(d.id, "web", "abc123", new_fence).ok());
  Deployment after = MustGet(d.id);
  EXPECT_EQ(after.state, State::kHealthy);
  EXPECT_EQ(after.applied_hashes, (std::map<std::string, std::string>{{"web", "abc123"}}));
}

TEST_F(DeploymentsTest, EventsAreNumberedAndDedupedByKey) {
  Deployment d = MustCreate("shop");  // seq 1: its "Pending" state event
  ASSERT_TRUE(deployments_
                  ->AppendEvents(d.id,
                                 {{.kind = "ecs", .message = "service started", .dedupe_key = "e1"},
                                  {.kind = "ecs", .message = "task placed", .dedupe_key = "e2"},
                                  {.kind = "ecs", .message = "service started (again)", .dedupe_key = "e1"},
                                  {.kind = "info", .message = "no key", .dedupe_key = ""}},
                                 {})
                  .ok());
  ASSERT_TRUE(deployments_
                  ->AppendEvents(d.id,
                                 {{.kind = "ecs", .message = "task placed (again)", .dedupe_key = "e2"},
                                  {.kind = "ecs", .message = "steady", .dedupe_key = "e3"},
                                  {.kind = "info", .message = "no key", .dedupe_key = ""}},
                                 {})
                  .ok());
  std::vector<Event> events = AllEvents(d.id);
  std::vector<std::string> messages;
  std::vector<uint64_t> seqs;
  for (const Event& e : events) {
    messages.push_back(e.message);
    seqs.push_back(e.seq);
  }
  EXPECT_THAT(messages, ElementsAre("Pending", "service started", "task placed", "no key", "steady", "no key"));
  EXPECT_THAT(seqs, ElementsAre(1, 2, 3, 4, 5, 6));

  // Another deployment's keys are its own.
  Deployment other = MustCreate("shop");
  ASSERT_TRUE(deployments_->AppendEvents(other.id, {{.kind = "ecs", .message = "m", .dedupe_key = "e1"}}, {}).ok());
  EXPECT_EQ(AllEvents(other.id).size(), 2u);

  auto after3 = deployments_->Events(d.id, 3, 2);
  ASSERT_TRUE(after3.ok());
  ASSERT_EQ(after3->size(), 2u);
  EXPECT_EQ((*after3)[0].seq, 4u);
  EXPECT_EQ((*after3)[1].seq, 5u);
  auto past_end = deployments_->Events(d.id, 6, 10);
  ASSERT_TRUE(past_end.ok());
  EXPECT_THAT(*past_end, IsEmpty());
  EXPECT_EQ(deployments_->Events("20260101-000000-zzzz", 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(deployments_->AppendEvents("20260101-000000-zzzz", {{.kind = "info", .message = "m", .dedupe_key = ""}}, {})
                .code(),
            StatusCode::kNotFound);
}

// A deployment keeps its newest 2,000 events; an evicted ECS event's dedupe key goes with it,
// while a kept one still stops a repeat.
TEST_F(DeploymentsTest, OnlyTheNewestEventsAreKeptWithTheirDedupeKeys) {
  Deployment d = MustCreate("shop");  // seq 1: its "Pending" state event
  std::vector<NewEvent> batch;
  for (int i = 2; i <= 2010; ++i) {
    batch.push_back({.kind = "ecs", .message = fmt::format("event {}", i), .dedupe_key = fmt::format("e{}", i)});
  }
  ASSERT_TRUE(deployments_->AppendEvents(d.id, batch, {}).ok());
  std::vector<Event> kept;
  for (uint64_t after = 0;;) {
    auto page = deployments_->Events(d.id, after, 1000);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    if (page->empty()) break;
    after = page->back().seq;
    kept.insert(kept.end(), page->begin(), page->end());
  }
  ASSERT_EQ(kept.size(), 2000u);
  EXPECT_EQ(kept.front().seq, 11u);
  EXPECT_EQ(kept.front().message, "event 11");
  EXPECT_EQ(kept.back().seq, 2010u);

  ASSERT_TRUE(deployments_
                  ->AppendEvents(d.id,
                                 {{.kind = "ecs", .message = "kept key", .dedupe_key = "e11"},
                                  {.kind = "ecs", .message = "evicted key", .dedupe_key = "e5"}},
                                 {})
                  .ok());
  auto tail = deployments_->Events(d.id, 2010, 10);
  ASSERT_TRUE(tail.ok());
  ASSERT_EQ(tail->size(), 1u);
  EXPECT_EQ((*tail)[0].message, "evicted key");
  EXPECT_EQ((*tail)[0].seq, 2011u);
}

TEST_F(DeploymentsTest, EnvIsValidatedAndSnapshottedAtCreate) {
  ASSERT_TRUE(deployments_->SetEnv("shop", "GREETING", "hello", false).ok());
  ASSERT_TRUE(deployments_->SetEnv("shop", "DB_PASSWORD", "s3cret", true).ok());
  ASSERT_TRUE(deployments_->SetEnv("shop", "_MAX", std::string(4096, 'x'), false).ok());
  ASSERT_TRUE(deployments_->SetEnv("other", "GREETING", "elsewhere", false).ok());
  for (std::string_view bad : {"", "1ABC", "A-B", "A B", "PORT", "PADDOCK_TOKEN"}) {
    EXPECT_EQ(deployments_->SetEnv("shop", bad, "v", false).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(deployments_->SetEnv("shop", "BIG", std::string(4097, 'x'), false).code(), StatusCode::kInvalidArgument);

  auto listed = deployments_->ListEnv("shop");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].name, "DB_PASSWORD");
  EXPECT_TRUE((*listed)[0].secret);
  EXPECT_EQ((*listed)[0].value, "");  // a secret's value is not listed
  EXPECT_EQ((*listed)[1].name, "GREETING");
  EXPECT_EQ((*listed)[1].value, "hello");
  EXPECT_EQ((*listed)[2].name, "_MAX");

  Deployment d = MustCreate("shop");
  EXPECT_EQ(d.env, (std::map<std::string, std::string>{{"GREETING", "hello"}, {"_MAX", std::string(4096, 'x')}}));
  EXPECT_EQ(d.secrets, (std::map<std::string, std::string>{{"DB_PASSWORD", "s3cret"}}));

  // Later changes reach later deployments only.
  ASSERT_TRUE(deployments_->SetEnv("shop", "GREETING", "hi", false).ok());
  ASSERT_TRUE(deployments_->UnsetEnv("shop", "DB_PASSWORD").ok());
  EXPECT_EQ(MustGet(d.id).env.at("GREETING"), "hello");
  EXPECT_EQ(MustGet(d.id).secrets.at("DB_PASSWORD"), "s3cret");
  Deployment later = MustCreate("shop");
  EXPECT_EQ(later.env.at("GREETING"), "hi");
  EXPECT_THAT(later.secrets, IsEmpty());

  EXPECT_EQ(deployments_->UnsetEnv("shop", "DB_PASSWORD").code(), StatusCode::kNotFound);
}

// --from is a rollback to an exact workload: the earlier deployment's env and secrets as they were,
// not the project's current ones.
TEST_F(DeploymentsTest, ARedeployTakesTheEarlierDeploymentsEnvNotTheProjectsCurrentOne) {
  ASSERT_TRUE(deployments_->SetEnv("shop", "GREETING", "hello", false).ok());
  ASSERT_TRUE(deployments_->SetEnv("shop", "DB_PASSWORD", "old", true).ok());
  Deployment first = MustCreate("shop");
  ASSERT_TRUE(deployments_->SetEnv("shop", "GREETING", "hi", false).ok());
  ASSERT_TRUE(deployments_->SetEnv("shop", "DB_PASSWORD", "new", true).ok());
  auto again = deployments_->Create(With(New("shop"), [&](NewDeployment& n) { n.from = first.id; }));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->env, first.env);
  EXPECT_EQ(again->secrets.at("DB_PASSWORD"), "old");
  auto other = deployments_->Create(With(New("other"), [&](NewDeployment& n) { n.from = first.id; }));
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument) << "another project's deployment";
}

// A retired deployment keeps no secret value; a redeploy of it takes the project's current one, or
// is refused when the project has none.
TEST_F(DeploymentsTest, RetirementForgetsSecretValuesAndARedeployTakesTheProjectsOwn) {
  ASSERT_TRUE(deployments_->SetEnv("shop", "DB_PASSWORD", "old", true).ok());
  Deployment first = MustCreate("shop");
  MustTransition(first.id, State::kStopped);
  ASSERT_TRUE(deployments_->MarkRetired(first.id, {}).ok());
  EXPECT_EQ(MustGet(first.id).secrets, (std::map<std::string, std::string>{{"DB_PASSWORD", ""}}));
  ASSERT_TRUE(deployments_->SetEnv("shop", "DB_PASSWORD", "now", true).ok());
  auto again = deployments_->Create(With(New("shop"), [&](NewDeployment& n) { n.from = first.id; }));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->secrets.at("DB_PASSWORD"), "now");
  ASSERT_TRUE(deployments_->UnsetEnv("shop", "DB_PASSWORD").ok());
  auto refused = deployments_->Create(With(New("shop"), [&](NewDeployment& n) { n.from = first.id; }));
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
}

// The host check runs in Create's own transaction: of two (project, group) pairs with one host, the
// second is refused while the first has an unfinished deployment, and allowed once it is retired.
TEST_F(DeploymentsTest, CreateRefusesAHostAnotherGroupAnswersAt) {
  auto host = [](std::string_view project, std::string_view group) {
    return group == "default" ? std::string(project) : fmt::format("{}-{}", project, group);
  };
  auto staging = deployments_->Create(With(New("shop", "staging"), [&](NewDeployment& n) { n.host_of = host; }));
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  auto clash = deployments_->Create(With(New("shop-staging"), [&](NewDeployment& n) { n.host_of = host; }));
  EXPECT_EQ(clash.status().code(), StatusCode::kAlreadyExists);
  auto same_group = deployments_->Create(With(New("shop", "staging"), [&](NewDeployment& n) { n.host_of = host; }));
  EXPECT_TRUE(same_group.ok()) << "a group's own next deployment shares its host";
  for (const auto& d : {*staging, *same_group}) {
    MustTransition(d.id, State::kStopped);
    ASSERT_TRUE(deployments_->MarkRetired(d.id, {}).ok());
  }
  auto later = deployments_->Create(With(New("shop-staging"), [&](NewDeployment& n) { n.host_of = host; }));
  EXPECT_TRUE(later.ok()) << later.status().ToString();
}

TEST_F(DeploymentsTest, UnfinishedIsEveryNonTerminalAndEveryUnretiredTerminalOne) {
  Deployment pending = MustCreate("shop", "a");
  Deployment healthy = MustCreate("shop", "b");
  MustTransition(healthy.id, State::kDeploying);
  MustTransition(healthy.id, State::kHealthy);
  Deployment stopped = MustCreate("shop", "c");
  ASSERT_TRUE(deployments_->Stop(stopped.id, "").ok());
  Deployment retired = MustCreate("shop", "d");
  MustTransition(retired.id, State::kFailed, "image not found");

  EXPECT_EQ(deployments_->MarkRetired(pending.id, {}).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(deployments_->MarkRetiring(retired.id, {}).ok());
  const TimePoint retiring_at = clock_.Now();
  clock_.Advance(seconds(3));
  ASSERT_TRUE(deployments_->MarkRetiring(retired.id, {}).ok());  // once: the first time stays
  EXPECT_EQ(MustGet(retired.id).retiring_since, retiring_at);
  ASSERT_TRUE(deployments_->MarkRetired(retired.id, {}).ok());
  EXPECT_TRUE(MustGet(retired.id).retired);

  auto unfinished = deployments_->Unfinished();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status().ToString();
  EXPECT_THAT(Ids(*unfinished), ElementsAre(pending.id, healthy.id, stopped.id));
}

// D8: the credential's hash is set once and kept; a different one later is refused, unchanged.
TEST_F(DeploymentsTest, TheIdentityCredentialHashIsSetOnceAndNeverReplaced) {
  Deployment d = MustCreate("shop");
  EXPECT_EQ(MustGet(d.id).identity_credential_hash, "");
  ASSERT_TRUE(deployments_->SetIdentityCredentialHash(d.id, "aa11", {}).ok());
  EXPECT_TRUE(deployments_->SetIdentityCredentialHash(d.id, "aa11", {}).ok()) << "the same one again is a no-op";
  Status other = deployments_->SetIdentityCredentialHash(d.id, "bb22", {});
  EXPECT_EQ(other.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(MustGet(d.id).identity_credential_hash, "aa11");
}

TEST_F(DeploymentsTest, RecordsSurviveClosingAndReopeningTheStore) {
  ASSERT_TRUE(deployments_->SetEnv("shop", "GREETING", "hello", false).ok());
  Deployment d = MustCreate("shop");
  MustTransition(d.id, State::kDeploying);
  ASSERT_TRUE(deployments_->RecordApplied(d.id, "web", "hash-1", {}).ok());
  ASSERT_TRUE(deployments_->SetIdentityCredentialHash(d.id, "c0ffee", {}).ok());
  ASSERT_TRUE(deployments_
                  ->RecordTasks(d.id,
                                {{.task_arn = "arn:aws:ecs:us-east-1:000000000000:task/default/1",
                                  .container = "web",
                                  .last_status = "RUNNING",
                                  .health = "UP",
                                  .address = "10.0.1.5:8080",
                                  .stopped_reason = "",
                                  .exit_code = std::nullopt},
                                 {.task_arn = "arn:aws:ecs:us-east-1:000000000000:task/default/2",
                                  .container = "web",
                                  .last_status = "STOPPED",
                                  .health = "",
                                  .address = "",
                                  .stopped_reason = "Essential container exited",
                                  .exit_code = 137}},
                                {})
                  .ok());
  MustTransition(d.id, State::kHealthy);
  ASSERT_TRUE(deployments_->AppendEvents(d.id, {{.kind = "ecs", .message = "steady", .dedupe_key = "e1"}}, {}).ok());
  Deployment before = MustGet(d.id);
  std::vector<Event> events_before = AllEvents(d.id);

  db_.Reopen();
  deployments_ = std::make_unique<Deployments>(*db_, clock_);

  Deployment after = MustGet(d.id);
  ExpectSame(after, before);
  EXPECT_EQ(after.tasks.size(), 2u);
  EXPECT_EQ(after.tasks[1].exit_code, 137);
  std::vector<Event> events_after = AllEvents(d.id);
  ASSERT_EQ(events_after.size(), events_before.size());
  for (size_t i = 0; i < events_after.size(); ++i) {
    EXPECT_EQ(events_after[i].seq, events_before[i].seq);
    EXPECT_EQ(events_after[i].at, events_before[i].at);
    EXPECT_EQ(events_after[i].message, events_before[i].message);
  }
  EXPECT_EQ(ActiveRow("shop", "default"), d.id);
  auto env = deployments_->ListEnv("shop");
  ASSERT_TRUE(env.ok());
  ASSERT_EQ(env->size(), 1u);
  EXPECT_EQ((*env)[0].value, "hello");
  // The dedupe keys survive too.
  ASSERT_TRUE(deployments_->AppendEvents(d.id, {{.kind = "ecs", .message = "steady", .dedupe_key = "e1"}}, {}).ok());
  EXPECT_EQ(AllEvents(d.id).size(), events_before.size());
}

}  // namespace
}  // namespace paddock::deploy
