// InProcessControl over a real (empty) Tasks: the assignments' version, the long-poll's answers
// (at once on a different version, at the deadline on the same one), its bound, its fair sharing
// (PollSlots' policy, and one account's flood of polls never keeping another's instance from
// waiting) and Shutdown.
// Wake-ups on a real change are proven against a real server in cli/remote_agent_test.cc.
#include "agent/inprocess/inprocess_control.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "ecs/cluster/clusters.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"
#include "ecs/task/tasks.h"
#include "vpc/default_vpc.h"

namespace paddock::agent {
namespace {

// How far the wall clock (Poll's deadlines) may drift from the steady clock (the tests' stopwatch)
// over a wait of a few hundred milliseconds on a VM.
constexpr std::chrono::milliseconds kClockSkew{5};

InProcessOptions WithWaiters(size_t max_waiters) {
  InProcessOptions o;
  o.max_waiters = max_waiters;
  return o;
}
using std::chrono::milliseconds;

const AccountId kAccount("111111111111");

ecs::task::LaunchSpec Spec(std::string arn, std::string desired, std::string last = "PENDING") {
  ecs::task::LaunchSpec s;
  s.task_arn = std::move(arn);
  s.desired_status = std::move(desired);
  s.last_status = std::move(last);
  return s;
}

TEST(AssignmentsVersionTest, CoversArnsAndDesiredStatusOnly) {
  const auto a = Spec("arn:a", "RUNNING"), b = Spec("arn:b", "RUNNING");
  EXPECT_EQ(AssignmentsVersion({a, b}), AssignmentsVersion({b, a}));  // order does not matter
  EXPECT_EQ(AssignmentsVersion({a}), AssignmentsVersion({Spec("arn:a", "RUNNING", "RUNNING")}));  // lastStatus
  EXPECT_NE(AssignmentsVersion({a}), AssignmentsVersion({Spec("arn:a", "STOPPED")}));
  EXPECT_NE(AssignmentsVersion({a}), AssignmentsVersion({a, b}));
  EXPECT_NE(AssignmentsVersion({}), AssignmentsVersion({a}));
}

class InProcessControlTest : public ::testing::Test {
 protected:
  paddock::testing::TempStore store_;
  ecs::taskdef::TaskDefinitions tds_{*store_};
  ecs::cluster::Clusters clusters_{*store_};
  ecs::task::Tasks tasks_{*store_, tds_, clusters_, "fargate-local"};
};

TEST_F(InProcessControlTest, PollAnswersAtOnceOnANewVersionAndAtTheDeadlineOtherwise) {
  InProcessControl control(tasks_, nullptr);
  const auto far = SystemClock::Get().Now() + std::chrono::seconds(30);
  auto first = control.Poll("agent-1", kAccount, "", far);  // no version known: at once
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->tasks.empty());
  EXPECT_FALSE(first->busy);
  auto other = control.Poll("agent-1", kAccount, "stale-version", far);  // a different version: at once
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->version, first->version);

  const auto started = std::chrono::steady_clock::now();
  auto waited = control.Poll("agent-1", kAccount, first->version, SystemClock::Get().Now() + milliseconds(200));
  ASSERT_TRUE(waited.ok());
  // The deadline is on the wall clock, measured here on the steady one: allow their drift (the
  // VM's wall clock is slewed and stepped under us; a short wait is still far from "at once").
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(200) - kClockSkew);
  EXPECT_FALSE(waited->busy);
  EXPECT_EQ(waited->version, first->version);
}

TEST_F(InProcessControlTest, WaitersAreBoundedAndShutdownReleasesThem) {
  InProcessControl control(tasks_, nullptr, WithWaiters(1));
  const std::string version = AssignmentsVersion({});
  std::thread waiter([&] {
    auto r = control.Poll("agent-1", kAccount, version, SystemClock::Get().Now() + std::chrono::seconds(30));
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r->busy);  // released by Shutdown, not by a change
  });
  while (control.waiters() == 0) std::this_thread::yield();
  // The one slot is taken: the next caller is answered at once, marked busy.
  const auto started = std::chrono::steady_clock::now();
  auto busy = control.Poll("agent-2", kAccount, version, SystemClock::Get().Now() + std::chrono::seconds(30));
  ASSERT_TRUE(busy.ok());
  EXPECT_TRUE(busy->busy);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));

  control.Shutdown();
  waiter.join();
  EXPECT_EQ(control.waiters(), 0u);
  // After Shutdown nobody waits.
  auto after = control.Poll("agent-1", kAccount, version, SystemClock::Get().Now() + std::chrono::seconds(30));
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->busy);
}

// The attack of finding 13 in small: one account's instances hold every slot; another account's
// instance still gets one (the flood's oldest poll answers at once, busy) and waits for its own
// deadline; the flood's next polls are refused while the other account holds its share.
TEST_F(InProcessControlTest, OneAccountsFloodNeverKeepsAnotherAccountsInstanceFromWaiting) {
  const AccountId kAttacker("222222222222");
  InProcessControl control(tasks_, nullptr, WithWaiters(4));
  const std::string version = AssignmentsVersion({});
  const auto far = SystemClock::Get().Now() + std::chrono::seconds(30);
  std::atomic<int> busy_answers{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 4; ++i) {
    flood.emplace_back([&, i] {
      auto r = control.Poll("attacker-" + std::to_string(i), kAttacker, version, far);
      EXPECT_TRUE(r.ok());
      if (r->busy) ++busy_answers;
    });
  }
  while (control.waiters(kAttacker) < 4) std::this_thread::yield();
  // Every slot is the attacker's: another poll of the attacker is refused at once.
  auto refused = control.Poll("attacker-9", kAttacker, version, far);
  ASSERT_TRUE(refused.ok());
  EXPECT_TRUE(refused->busy);

  const auto started = std::chrono::steady_clock::now();
  std::thread victim([&] {
    auto r = control.Poll("victim-1", kAccount, version, SystemClock::Get().Now() + milliseconds(300));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->busy);  // it waited, and nothing changed
    EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(300) - kClockSkew);
  });
  while (control.waiters(kAccount) == 0) std::this_thread::yield();
  EXPECT_EQ(control.waiters(kAttacker), 3u);
  // The attacker is over its share (2 of 4) while the victim waits: refused again.
  auto again = control.Poll("attacker-8", kAttacker, version, far);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->busy);
  victim.join();
  control.Shutdown();
  for (auto& t : flood) t.join();
  EXPECT_EQ(busy_answers.load(), 4);  // one cut short for the victim, three released by Shutdown
  EXPECT_EQ(control.waiters(), 0u);
}

// A newer poll of the same instance takes the older one's slot: the older answers at once.
TEST_F(InProcessControlTest, ANewerPollOfAnInstanceAnswersTheOlderOne) {
  InProcessControl control(tasks_, nullptr, WithWaiters(4));
  const std::string version = AssignmentsVersion({});
  std::thread older([&] {
    auto r = control.Poll("agent-1", kAccount, version, SystemClock::Get().Now() + std::chrono::seconds(30));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->busy);
  });
  while (control.waiters() == 0) std::this_thread::yield();
  auto newer = control.Poll("agent-1", kAccount, version, SystemClock::Get().Now() + milliseconds(100));
  older.join();  // answered before the newer one's deadline passed
  ASSERT_TRUE(newer.ok());
  EXPECT_FALSE(newer->busy);
  EXPECT_EQ(control.waiters(), 0u);
}

TEST(PollSlotsTest, OneSlotPerInstance) {
  PollSlots slots(4);
  auto t1 = slots.Admit("a", "i1");
  auto t2 = slots.Admit("a", "i1");
  ASSERT_TRUE(t1 && t2);
  EXPECT_EQ(slots.Lost(*t1), PollSlots::Loss::kSuperseded);
  EXPECT_FALSE(slots.Lost(*t2));
  EXPECT_EQ(slots.held(), 1u);
  slots.Release(*t1);
  EXPECT_EQ(slots.held(), 1u);  // releasing a lost ticket frees nothing more
  slots.Release(*t2);
  EXPECT_EQ(slots.held(), 0u);
}

TEST(PollSlotsTest, AnAccountAloneMayUseEverySlot) {
  PollSlots slots(3);
  for (std::string i : {"i1", "i2", "i3"}) EXPECT_TRUE(slots.Admit("a", i));
  EXPECT_FALSE(slots.Admit("a", "i4"));
  EXPECT_EQ(slots.held("a"), 3u);
}

TEST(PollSlotsTest, AnotherAccountTakesItsShareFromTheRichestOldestFirst) {
  PollSlots slots(4);
  std::vector<uint64_t> a;
  for (std::string i : {"i1", "i2", "i3", "i4"}) a.push_back(*slots.Admit("a", i));
  auto b1 = slots.Admit("b", "j1");
  ASSERT_TRUE(b1);
  EXPECT_EQ(slots.Lost(a[0]), PollSlots::Loss::kFairShare);  // the oldest
  EXPECT_FALSE(slots.Lost(a[1]));
  auto b2 = slots.Admit("b", "j2");  // b holds 1 of its 2
  ASSERT_TRUE(b2);
  EXPECT_EQ(slots.Lost(a[1]), PollSlots::Loss::kFairShare);
  EXPECT_FALSE(slots.Admit("b", "j3"));  // b holds its share
  EXPECT_FALSE(slots.Admit("a", "i5"));  // so does a
  EXPECT_EQ(slots.held("a"), 2u);
  EXPECT_EQ(slots.held("b"), 2u);
  // A third account: share max(1, 4/3) = 1, and a and b each hold 2, so one gives one up.
  EXPECT_TRUE(slots.Admit("c", "k1"));
  EXPECT_EQ(slots.held(), 4u);
  EXPECT_EQ(slots.held("c"), 1u);
}

TEST(PollSlotsTest, NoChurnWhenEveryAccountIsAtItsShare) {
  PollSlots slots(2);
  ASSERT_TRUE(slots.Admit("a", "i1"));
  ASSERT_TRUE(slots.Admit("b", "j1"));
  EXPECT_FALSE(slots.Admit("c", "k1"));  // share 1 each: nobody is over it
  EXPECT_EQ(slots.held("a"), 1u);
  EXPECT_EQ(slots.held("b"), 1u);
}

TEST(PollSlotsTest, NoSlotsMeansNobodyWaits) {
  PollSlots slots(0);
  EXPECT_FALSE(slots.Admit("a", "i1"));
}

TEST_F(InProcessControlTest, WatchersAndReportsGoToTasks) {
  InProcessControl control(tasks_, nullptr);
  uint64_t w = control.Watch("agent-1", [] {});
  control.Unwatch(w);
  ecs::task::TaskStateChange change;
  change.last_status = "RUNNING";
  // An unknown task: Tasks' own answer comes back unchanged.
  Status s = control.Report("agent-1", "arn:aws:ecs:us-east-1:123456789012:task/c/0123456789abcdef0123456789abcdef",
                            change, SystemClock::Get().Now());
  EXPECT_EQ(ecs::api::AnswerFor(s).type, "InvalidParameterException");
  auto specs = control.Assignments("agent-1");
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(specs->empty());
}

// A fenced agent (a server's Fargate agent whose server cannot renew its host's offer) is woken
// and then assigned nothing, so it stops what it runs; another agent is not touched; a repeat
// changes nothing; let back, it is woken again and the store's answer stands.
TEST_F(InProcessControlTest, AFencedAgentIsWokenAndAssignedNothingUntilLetBack) {
  // A Fargate task, assigned to this Tasks' agent ("fargate-local").
  const Scope scope{kAccount, Region("us-east-1")};
  const std::string caller = "arn:aws:iam::111111111111:root";
  ASSERT_TRUE(clusters_.Create(scope, boost::json::parse(R"({"clusterName":"default"})").as_object()).ok());
  ASSERT_TRUE(tds_.Register(scope, caller,
                            boost::json::parse(R"({"family":"web","networkMode":"awsvpc","cpu":"256","memory":"512",)"
                                               R"("requiresCompatibilities":["FARGATE"],)"
                                               R"("containerDefinitions":[{"name":"app","image":"nginx"}]})")
                                .as_object(),
                            SystemClock::Get().Now())
                  .ok());
  ecs::task::RunRequest run;
  run.task_definition = "web";
  run.launch_type = "FARGATE";
  run.network_configuration = boost::json::object{
      {"awsvpcConfiguration",
       boost::json::object{{"subnets", boost::json::array{boost::json::string(vpc::DefaultVpcFor(scope).subnets[0].id)}}}}};
  auto ran = tasks_.Run(scope, caller, run, SystemClock::Get().Now());
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  ASSERT_EQ(ran->tasks.size(), 1u);

  InProcessControl control(tasks_, nullptr);
  auto assigned = [&](std::string_view agent) {
    auto specs = control.Assignments(agent);
    EXPECT_TRUE(specs.ok());
    return specs.ok() ? specs->size() : 0;
  };
  int fenced_wakes = 0, other_wakes = 0;
  uint64_t w1 = control.Watch("fargate-local", [&] { ++fenced_wakes; });
  uint64_t w2 = control.Watch("fargate-local@h2", [&] { ++other_wakes; });
  EXPECT_EQ(assigned("fargate-local"), 1u);
  control.SetFenced("fargate-local", true);
  EXPECT_EQ(fenced_wakes, 1);
  EXPECT_EQ(other_wakes, 0);
  EXPECT_EQ(assigned("fargate-local"), 0u) << "fenced: its agent stops what it runs";
  control.SetFenced("fargate-local", true);
  EXPECT_EQ(fenced_wakes, 1) << "already fenced";
  control.SetFenced("fargate-local", false);
  EXPECT_EQ(fenced_wakes, 2);
  EXPECT_EQ(assigned("fargate-local"), 1u) << "let back: the store's answer";
  control.Unwatch(w1);
  control.Unwatch(w2);
}

}  // namespace
}  // namespace paddock::agent
