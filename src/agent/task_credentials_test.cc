// The agent's side of task role credentials: which role a launch names, and the held set asked
// again of the control plane only near its expiry (a fake Control and a fake clock; no sleeps).
#include "agent/task_credentials.h"
#include "agent/inprocess/errors.h"
#include "agent/inprocess/inprocess_control.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/cluster/clusters.h"
#include "ecs/taskdef/taskdefs.h"
#include "ecs/testing/temp_store.h"

namespace paddock::agent {
namespace {

using namespace std::chrono_literals;

// Answers a fresh set per call (valid for `lifetime`), or `refusal` when set.
class FakeCredentialsControl final : public Control {
 public:
  explicit FakeCredentialsControl(Clock& clock) : clock_(clock) {}
  StatusOr<std::vector<ecs::task::LaunchSpec>> Assignments(std::string_view) override {
    return std::vector<ecs::task::LaunchSpec>{};
  }
  Status Report(std::string_view, std::string_view, const ecs::task::TaskStateChange&, TimePoint) override {
    return OkStatus();
  }
  uint64_t Watch(std::string_view, std::function<void()>) override { return 0; }
  void Unwatch(uint64_t) override {}
  StatusOr<std::string> DescribeTask(const ecs::task::LaunchSpec&, bool) override { return NotFound("no"); }
  StatusOr<metadata::RoleCredentials> TaskRoleCredentials(std::string_view agent_id,
                                                          const ecs::task::LaunchSpec& spec) override {
    ++calls;
    last_agent = std::string(agent_id);
    last_task = spec.task_arn;
    if (!refusal.ok()) return refusal;
    return metadata::RoleCredentials{"arn:aws:iam::111111111111:role/app", "ASIA" + std::to_string(calls), "s", "t",
                                     clock_.Now() + lifetime};
  }

  Clock& clock_;
  Duration lifetime = 6h;
  int calls = 0;
  std::string last_agent, last_task;
  Status refusal;
};

ecs::task::LaunchSpec Spec(std::string definition, std::string overrides = "{}") {
  ecs::task::LaunchSpec s;
  s.task_arn = "arn:aws:ecs:us-east-1:111111111111:task/default/0123456789abcdef0123456789abcdef";
  s.definition = std::move(definition);
  s.overrides = std::move(overrides);
  return s;
}

TEST(TaskRoleArnOfTest, TheOverrideWinsOverThePinnedDefinition) {
  EXPECT_EQ(TaskRoleArnOf(Spec(R"({"taskRoleArn":"arn:aws:iam::1:role/a"})")), "arn:aws:iam::1:role/a");
  EXPECT_EQ(TaskRoleArnOf(Spec(R"({"taskRoleArn":"arn:aws:iam::1:role/a"})", R"({"taskRoleArn":"arn:aws:iam::1:role/b"})")),
            "arn:aws:iam::1:role/b");
  EXPECT_EQ(TaskRoleArnOf(Spec(R"({"containerDefinitions":[]})")), "");
  EXPECT_EQ(TaskRoleArnOf(Spec("", "null")), "");
}

TEST(TaskCredentialsCacheTest, AsksAgainOnlyWhenLessThanThirtyMinutesRemain) {
  paddock::testing::FakeClock clock;
  FakeCredentialsControl control(clock);
  TaskCredentialsCache cache(control, "agent-1", Spec("{}"), clock);
  auto first = cache.Get();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(control.last_agent, "agent-1");
  EXPECT_EQ(control.last_task, Spec("{}").task_arn);
  clock.Advance(5h + 30min);  // exactly 30 min left: still held
  auto same = cache.Get();
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->access_key_id, first->access_key_id);
  EXPECT_EQ(control.calls, 1);
  clock.Advance(1s);
  auto fresh = cache.Get();
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->access_key_id, first->access_key_id);
  EXPECT_EQ(control.calls, 2);
}

// A remote node whose clock runs ahead of the control plane's: the set the control plane still
// deems fresh has less than 30 minutes left by this node's clock. A container hammering its
// endpoint then must not cost the control plane a call per request.
TEST(TaskCredentialsCacheTest, ASetThatLooksDueIsAskedForAtMostOnceASecond) {
  paddock::testing::FakeClock clock;
  FakeCredentialsControl control(clock);
  control.lifetime = 20min;
  TaskCredentialsCache cache(control, "agent-1", Spec("{}"), clock);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(cache.Get().ok());
  EXPECT_EQ(control.calls, 1);
  clock.Advance(999ms);
  EXPECT_EQ(cache.Get()->access_key_id, "ASIA1");
  EXPECT_EQ(control.calls, 1);
  clock.Advance(1ms);
  EXPECT_EQ(cache.Get()->access_key_id, "ASIA2");
  EXPECT_EQ(control.calls, 2);
}

// The control plane refuses or cannot answer a refresh: the held set is still valid (to its
// expiry, whatever happens to the role), so the container keeps getting it; once it has expired,
// the refusal.
TEST(TaskCredentialsCacheTest, AFailedRefreshServesTheHeldSetUntilItExpires) {
  paddock::testing::FakeClock clock;
  FakeCredentialsControl control(clock);
  TaskCredentialsCache cache(control, "agent-1", Spec("{}"), clock);
  ASSERT_TRUE(cache.Get().ok());
  control.refusal = Unavailable("the control plane is unreachable");
  clock.Advance(5h + 31min);  // due
  auto held = cache.Get();
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->access_key_id, "ASIA1");
  EXPECT_EQ(control.calls, 2);
  clock.Advance(28min);  // 1 min left
  EXPECT_EQ(cache.Get()->access_key_id, "ASIA1");
  EXPECT_EQ(control.calls, 3);
  clock.Advance(1min);  // expired
  EXPECT_EQ(cache.Get().status().code(), StatusCode::kUnavailable);
  control.refusal = OkStatus();
  clock.Advance(1s);
  EXPECT_EQ(cache.Get()->access_key_id, "ASIA5");
}

TEST(TaskCredentialsCacheTest, ARefusalIsHeldForASecondOnly) {
  paddock::testing::FakeClock clock;
  FakeCredentialsControl control(clock);
  TaskCredentialsCache cache(control, "agent-1", Spec("{}"), clock);
  control.refusal = PermissionDenied("Unable to assume role");
  EXPECT_EQ(cache.Get().status().code(), StatusCode::kPermissionDenied);
  // A container asking again at once (botocore retries, or a loop) costs the control plane nothing.
  EXPECT_EQ(cache.Get().status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(control.calls, 1);
  control.refusal = OkStatus();  // the role was fixed
  clock.Advance(999ms);
  EXPECT_FALSE(cache.Get().ok());
  clock.Advance(1ms);
  EXPECT_TRUE(cache.Get().ok());
  EXPECT_EQ(control.calls, 2);
}

// The control plane answers only for a task assigned to the asking agent.
TEST(InProcessTaskCredentialsTest, ATaskNotAssignedToTheAgentIsRefused) {
  paddock::testing::TempStore store;
  ecs::taskdef::TaskDefinitions tds(*store);
  ecs::cluster::Clusters clusters(*store);
  ecs::task::Tasks tasks(*store, tds, clusters, "fargate-local");
  InProcessControl control(tasks, nullptr);
  bool minted = false;
  control.SetTaskCredentialsProvider([&](const AccountId&, std::string_view, std::string_view)
                                         -> StatusOr<metadata::RoleCredentials> {
    minted = true;
    return metadata::RoleCredentials{};
  });
  auto r = control.TaskRoleCredentialsForAgent("agent-1", Spec("{}").task_arn);
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(IsError(r.status(), Error::kTaskNotAssigned)) << r.status().ToString();
  // Nor does the spec an agent passes name the role: it is read from the control plane's record.
  auto spoofed = control.TaskRoleCredentials("agent-1", Spec(R"({"taskRoleArn":"arn:aws:iam::1:role/a"})"));
  EXPECT_EQ(spoofed.status().code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(minted);
}

}  // namespace
}  // namespace paddock::agent
