#include "sts/service_sessions.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::sts {
namespace {

using namespace std::chrono_literals;

constexpr char kAccount[] = "123456789012";
constexpr char kRoleArn[] = "arn:aws:iam::123456789012:role/app/web";
constexpr char kService[] = "ecs-tasks.amazonaws.com";

// One role; its trust admits the services in `trusted`. Counts the questions.
class FakeRoles : public RoleDirectory {
 public:
  StatusOr<std::optional<AssumableRole>> FindRole(const AccountId& account, std::string_view arn) override {
    ++finds;
    if (!exists || account.str() != kAccount || arn != kRoleArn) return std::optional<AssumableRole>();
    return std::optional<AssumableRole>(AssumableRole{kRoleArn, "AROAEXAMPLEROLEID0001", "web", "{}", 3600});
  }
  Status TrustAdmits(const AssumableRole&, const Principal&, const CallOrigin&, const TrustContext&) override {
    return PermissionDenied("no users here");
  }
  Status ServiceMayAssume(const AssumableRole&, std::string_view service) override {
    return service == trusted ? OkStatus() : PermissionDenied("not trusted");
  }

  bool exists = true;
  std::string trusted = kService;
  int finds = 0;
};

class ServiceRoleSessionsTest : public ::testing::Test {
 protected:
  StatusOr<IssuedCredentials> Get(std::string_view session = "0123456789abcdef0123456789abcdef") {
    return tasks_.Get(AccountId(kAccount), kRoleArn, session);
  }

  testing::FakeClock clock_;
  testing::TempStore store_;
  Sessions sessions_{*store_};
  FakeRoles roles_;
  ServiceRoleSessions tasks_{sessions_, &roles_, clock_, kService};
};

TEST_F(ServiceRoleSessionsTest, MintsASixHourRoleSessionNamedAfterTheTask) {
  auto c = Get();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->principal.arn, "arn:aws:sts::123456789012:assumed-role/web/0123456789abcdef0123456789abcdef");
  EXPECT_EQ(c->principal.role_arn, kRoleArn);
  EXPECT_EQ(c->expiration, clock_.Now() + 6h);
  EXPECT_TRUE(c->access_key_id.str().starts_with("ASIA"));
  // A real session: the front's resolver finds it.
  auto found = sessions_.Find(c->access_key_id);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
}

TEST_F(ServiceRoleSessionsTest, HandsOutTheSameSetUntilLessThanThirtyMinutesRemain) {
  auto first = Get();
  ASSERT_TRUE(first.ok());
  clock_.Advance(5h + 29min);  // 31 min left
  auto same = Get();
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->access_key_id, first->access_key_id);
  EXPECT_EQ(same->session_token, first->session_token);
  EXPECT_EQ(roles_.finds, 1);  // no mint, no role lookup

  clock_.Advance(1min + 1s);  // under 30 min left
  auto fresh = Get();
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->access_key_id, first->access_key_id);
  EXPECT_EQ(fresh->expiration, clock_.Now() + 6h);
  // The superseded set stays valid until its own expiry.
  auto old = sessions_.Find(first->access_key_id);
  ASSERT_TRUE(old.ok() && old->has_value());
  EXPECT_EQ((*old)->expires, first->expiration);
}

TEST_F(ServiceRoleSessionsTest, EachSessionNameHasItsOwnSet) {
  auto a = Get("task-a");
  auto b = Get("task-b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->access_key_id, b->access_key_id);
  EXPECT_EQ(b->principal.arn, "arn:aws:sts::123456789012:assumed-role/web/task-b");
}

TEST_F(ServiceRoleSessionsTest, AMissingRoleOrAnUntrustingOneIsAnErrorEveryTime) {
  roles_.exists = false;
  EXPECT_EQ(Get().status().code(), StatusCode::kNotFound);
  roles_.exists = true;
  roles_.trusted = "ec2.amazonaws.com";
  auto denied = Get();
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("ecs-tasks.amazonaws.com"), std::string::npos);
  EXPECT_EQ(tasks_.held(), 0u);
  roles_.trusted = kService;
  EXPECT_TRUE(Get().ok());  // errors are not remembered
}

// ECS's launch-time check: Get's refusals, without minting or holding anything.
TEST_F(ServiceRoleSessionsTest, MayAssumeChecksAsGetDoesAndMintsNothing) {
  EXPECT_TRUE(tasks_.MayAssume(AccountId(kAccount), kRoleArn).ok());
  EXPECT_EQ(tasks_.held(), 0u);
  roles_.exists = false;
  EXPECT_EQ(tasks_.MayAssume(AccountId(kAccount), kRoleArn).code(), StatusCode::kNotFound);
  roles_.exists = true;
  roles_.trusted = "ec2.amazonaws.com";
  EXPECT_EQ(tasks_.MayAssume(AccountId(kAccount), kRoleArn).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(tasks_.MayAssume(AccountId("210987654321"), kRoleArn).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tasks_.held(), 0u);
}

TEST_F(ServiceRoleSessionsTest, AnotherAccountsRoleIsRefused) {
  auto c = tasks_.Get(AccountId("210987654321"), kRoleArn, "task-a");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(roles_.finds, 0);
}

TEST_F(ServiceRoleSessionsTest, WithoutADirectoryNoRoleExists) {
  ServiceRoleSessions none(sessions_, nullptr, clock_, kService);
  EXPECT_EQ(none.Get(AccountId(kAccount), kRoleArn, "task-a").status().code(), StatusCode::kNotFound);
}

// The held sets are bounded by time, not by a stop notice: a set nobody asks for again (its task
// stopped) is pruned once it is due for refresh.
TEST_F(ServiceRoleSessionsTest, IdleSetsArePruned) {
  ASSERT_TRUE(Get("task-a").ok());
  EXPECT_EQ(tasks_.held(), 1u);
  clock_.Advance(5h + 45min);
  ASSERT_TRUE(Get("task-b").ok());
  EXPECT_EQ(tasks_.held(), 1u);
}

}  // namespace
}  // namespace paddock::sts
