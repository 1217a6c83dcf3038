// IamRoleDirectory's answer for service principals (task roles, issue 11).
#include "iam/api/role_directory.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::iam::api {
namespace {

constexpr char kTasks[] = "ecs-tasks.amazonaws.com";

class RoleDirectoryTest : public ::testing::Test {
 protected:
  sts::AssumableRole Make(const std::string& name, const std::string& trust) {
    RoleSpec spec;
    spec.name = name;
    spec.trust_policy = trust;
    auto made = dir_.CreateRole(account_, spec);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    auto found = roles_.FindRole(account_, made.ok() ? made->arn : "");
    EXPECT_TRUE(found.ok() && found->has_value());
    return found.ok() && found->has_value() ? **found : sts::AssumableRole{};
  }
  static std::string Trust(const std::string& principal, const std::string& condition = "") {
    return R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":)" + principal +
           R"(,"Action":"sts:AssumeRole")" + condition + "}]}";
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  Directory dir_{*store_, clock_};
  PolicyAuthorizer authorizer_{dir_, clock_};
  IamRoleDirectory roles_{dir_, authorizer_};
  AccountId account_{"123456789012"};
};

TEST_F(RoleDirectoryTest, OnlyATrustPolicyNamingTheServiceAdmitsIt) {
  EXPECT_TRUE(roles_.ServiceMayAssume(Make("tasks", Trust(R"({"Service":"ecs-tasks.amazonaws.com"})")), kTasks).ok());
  EXPECT_TRUE(roles_.ServiceMayAssume(Make("both", Trust(R"({"Service":["ec2.amazonaws.com","ecs-tasks.amazonaws.com"]})")),
                                      kTasks).ok());
  EXPECT_EQ(roles_.ServiceMayAssume(Make("ec2", Trust(R"({"Service":"ec2.amazonaws.com"})")), kTasks).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(roles_.ServiceMayAssume(Make("users", Trust(R"({"AWS":"arn:aws:iam::123456789012:root"})")), kTasks).code(),
            StatusCode::kPermissionDenied);
}

// AWS's recommended confused-deputy condition: the task's account is the role's.
TEST_F(RoleDirectoryTest, SourceAccountIsTheRolesOwn) {
  auto own = Make("own", Trust(R"({"Service":"ecs-tasks.amazonaws.com"})",
                               R"(,"Condition":{"StringEquals":{"aws:SourceAccount":"123456789012"}})"));
  EXPECT_TRUE(roles_.ServiceMayAssume(own, kTasks).ok());
  auto other = Make("other", Trust(R"({"Service":"ecs-tasks.amazonaws.com"})",
                                   R"(,"Condition":{"StringEquals":{"aws:SourceAccount":"210987654321"}})"));
  EXPECT_EQ(roles_.ServiceMayAssume(other, kTasks).code(), StatusCode::kPermissionDenied);
}

// A trust policy sees the keys every request carries, built by the authorizer as for any call:
// the caller's IAM tags (aws:PrincipalTag), its address (aws:SourceIp), the region and the time
// (before this, the trust question carried only the principal's and STS's own keys).
TEST_F(RoleDirectoryTest, TrustPoliciesSeeTheCallersTagsAddressAndRegion) {
  UserSpec alice;
  alice.name = "alice";
  alice.tags = {{"team", "blue"}};
  ASSERT_TRUE(dir_.CreateUser(account_, alice).ok());
  UserSpec bob;
  bob.name = "bob";
  ASSERT_TRUE(dir_.CreateUser(account_, bob).ok());
  const sts::AssumableRole role = Make("blue-only", Trust(R"({"AWS":"123456789012"})", R"(,"Condition":{
      "StringEquals":{"aws:PrincipalTag/team":"blue","aws:RequestedRegion":"us-east-1"},
      "IpAddress":{"aws:SourceIp":"127.0.0.0/8"},
      "DateGreaterThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"}})"));
  auto user = [](const std::string& name) {
    aws::Principal p;
    p.account = AccountId("123456789012");
    p.kind = PrincipalKind::kUser;
    p.arn = "arn:aws:iam::123456789012:user/" + name;
    p.user_name = name;
    return p;
  };
  const sts::CallOrigin local{clock_.Now(), "127.0.0.1", Region("us-east-1")};
  EXPECT_TRUE(roles_.TrustAdmits(role, user("alice"), local, {{"sts:RoleSessionName", "s"}}).ok());
  EXPECT_EQ(roles_.TrustAdmits(role, user("bob"), local, {}).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(roles_.TrustAdmits(role, user("alice"), {clock_.Now(), "10.0.0.1", Region("us-east-1")}, {}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(roles_.TrustAdmits(role, user("alice"), {clock_.Now(), "127.0.0.1", Region("eu-west-1")}, {}).code(),
            StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace paddock::iam::api
