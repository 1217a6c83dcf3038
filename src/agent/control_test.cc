// InProcessControl over a real (empty) Tasks: the assignments' version, the long-poll's answers
// (at once on a different version, at the deadline on the same one), its bound and Shutdown.
// Wake-ups on a real change are proven against a real server in cli/remote_agent_test.cc.
#include "agent/control.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "ecs/cluster/clusters.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/testing/temp_store.h"

namespace paddock::agent {
namespace {
using std::chrono::milliseconds;

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
  auto first = control.Poll("agent-1", "", far);  // no version known: at once
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->tasks.empty());
  EXPECT_FALSE(first->busy);
  auto other = control.Poll("agent-1", "stale-version", far);  // a different version: at once
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->version, first->version);

  const auto started = std::chrono::steady_clock::now();
  auto waited = control.Poll("agent-1", first->version, SystemClock::Get().Now() + milliseconds(200));
  ASSERT_TRUE(waited.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(200));
  EXPECT_FALSE(waited->busy);
  EXPECT_EQ(waited->version, first->version);
}

TEST_F(InProcessControlTest, WaitersAreBoundedAndShutdownReleasesThem) {
  InProcessControl control(tasks_, nullptr, InProcessOptions{.max_waiters = 1, .network_identity = {}});
  const std::string version = AssignmentsVersion({});
  std::thread waiter([&] {
    auto r = control.Poll("agent-1", version, SystemClock::Get().Now() + std::chrono::seconds(30));
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r->busy);  // released by Shutdown, not by a change
  });
  while (control.waiters() == 0) std::this_thread::yield();
  // The one slot is taken: the next caller is answered at once, marked busy.
  const auto started = std::chrono::steady_clock::now();
  auto busy = control.Poll("agent-2", version, SystemClock::Get().Now() + std::chrono::seconds(30));
  ASSERT_TRUE(busy.ok());
  EXPECT_TRUE(busy->busy);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));

  control.Shutdown();
  waiter.join();
  EXPECT_EQ(control.waiters(), 0u);
  // After Shutdown nobody waits.
  auto after = control.Poll("agent-1", version, SystemClock::Get().Now() + std::chrono::seconds(30));
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->busy);
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
  EXPECT_EQ(s.aws_type(), "InvalidParameterException");
  auto specs = control.Assignments("agent-1");
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(specs->empty());
}

}  // namespace
}  // namespace paddock::agent
