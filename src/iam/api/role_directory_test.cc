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
  IamRoleDirectory roles_{dir_};
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

}  // namespace
}  // namespace paddock::iam::api
