// Every launch checks that ECS can assume its task and execution roles (ecs/task/role_check.h),
// through the seam the node wires to STS; here a fake seam with a fixed set of assumable roles.
#include "ecs/task/role_check.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <set>
#include <string>
#include <vector>

#include "common/testing/fake_clock.h"
#include "ecs/api/errors.h"
#include "ecs/common/errors.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"

namespace paddock::ecs::task {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";
const std::string kTaskRole = "arn:aws:iam::123456789012:role/app";
const std::string kExecRole = "arn:aws:iam::123456789012:role/exec";
const std::string kOtherRole = "arn:aws:iam::123456789012:role/other";

class RoleCheckTest : public ::testing::Test {
 protected:
  RoleCheckTest() {
    tds_.AddReferenceCheck(tasks_.reference_check());
    clusters_.AddUsage(tasks_.cluster_usage());
    EXPECT_TRUE(clusters_.Create(kScope, json::parse(R"({"clusterName":"default"})").as_object()).ok());
    auto def = json::parse(fmt::format(
                               R"({{"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],)"
                               R"("cpu":"256","memory":"512","taskRoleArn":"{}","executionRoleArn":"{}",)"
                               R"("containerDefinitions":[{{"name":"app","image":"nginx"}}]}})",
                               kTaskRole, kExecRole))
                   .as_object();
    EXPECT_TRUE(tds_.Register(kScope, kCaller, def, clock_.Now()).ok());
    tasks_.SetRoleCheck([this](const AccountId& account, std::string_view arn) -> Status {
      asked_.push_back(fmt::format("{} {}", account.str(), arn));
      if (!failure_.ok()) return failure_;
      return assumable_.count(std::string(arn)) ? OkStatus() : NotFound("no such role");
    });
  }

  RunRequest Req() {
    RunRequest r;
    r.task_definition = "web";
    r.launch_type = "FARGATE";
    r.network_configuration = json::object{
        {"awsvpcConfiguration", json::object{{"subnets", json::array{json::string(vpc::DefaultVpcFor(kScope).subnets[0].id)}}}}};
    return r;
  }

  size_t Launched() {
    ListQuery q;
    auto page = tasks_.List(kScope, q, kCaller);
    EXPECT_TRUE(page.ok());
    return page.ok() ? page->arns.size() : 0;
  }

  // The run is refused with ECS's ClientException naming `role`, and nothing is written.
  void ExpectRefused(const RunRequest& r, const std::string& role) {
    const size_t before = Launched();
    auto run = tasks_.Run(kScope, kCaller, r, clock_.Now());
    ASSERT_FALSE(run.ok());
    EXPECT_TRUE(IsError(run.status(), ecs::Error::kRoleNotAssumable));
    EXPECT_EQ(api::AnswerFor(run.status()).type, "ClientException");
    EXPECT_EQ(run.status().message(),
              "ECS was unable to assume the role '" + role +
                  "' that was provided for this task. Please verify that the role being passed has the proper trust "
                  "relationship and permissions and that your IAM user has permissions to pass this role.");
    EXPECT_EQ(Launched(), before);
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  taskdef::TaskDefinitions tds_{*store_};
  cluster::Clusters clusters_{*store_};
  Tasks tasks_{*store_, tds_, clusters_, "fargate-local"};
  std::set<std::string> assumable_{kTaskRole, kExecRole};
  Status failure_;
  std::vector<std::string> asked_;
};

TEST_F(RoleCheckTest, ALaunchChecksTheTaskRoleThenTheExecutionRoleInTheTasksAccount) {
  ASSERT_TRUE(tasks_.Run(kScope, kCaller, Req(), clock_.Now()).ok());
  EXPECT_EQ(asked_, (std::vector<std::string>{"123456789012 " + kTaskRole, "123456789012 " + kExecRole}));
  EXPECT_EQ(Launched(), 1u);
}

TEST_F(RoleCheckTest, AMissingTaskRoleRefusesTheLaunchAndWritesNothing) {
  assumable_.erase(kTaskRole);
  ExpectRefused(Req(), kTaskRole);
}

TEST_F(RoleCheckTest, AMissingExecutionRoleRefusesTheLaunch) {
  assumable_.erase(kExecRole);
  ExpectRefused(Req(), kExecRole);
}

TEST_F(RoleCheckTest, TheOverridesRolesAreTheOnesChecked) {
  RunRequest r = Req();
  r.overrides = json::object{{"taskRoleArn", kOtherRole}};
  ExpectRefused(r, kOtherRole);
  r.overrides = json::object{{"executionRoleArn", kOtherRole}};
  ExpectRefused(r, kOtherRole);
  // An assumable override stands in for a revision's role that is not.
  assumable_ = {kOtherRole, kExecRole};
  r.overrides = json::object{{"taskRoleArn", kOtherRole}};
  EXPECT_TRUE(tasks_.Run(kScope, kCaller, r, clock_.Now()).ok());
}

TEST_F(RoleCheckTest, EveryWayTheSeamSaysNoIsEcssClientException) {
  for (Status no : {PermissionDenied("trust"), InvalidArgument("other account"), NotFound("gone")}) {
    failure_ = no;
    ExpectRefused(Req(), kTaskRole);
  }
}

TEST_F(RoleCheckTest, AFailureOfTheCheckItselfIsReturnedAsIs) {
  failure_ = Internal("store is gone");
  auto run = tasks_.Run(kScope, kCaller, Req(), clock_.Now());
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInternal);
  EXPECT_EQ(Launched(), 0u);
}

TEST_F(RoleCheckTest, PassRolesDenialComesFirst) {
  assumable_.clear();
  RunRequest r = Req();
  r.launch_check = [](const taskdef::LaunchView&) { return PermissionDenied("not authorized to perform: iam:PassRole"); };
  auto run = tasks_.Run(kScope, kCaller, r, clock_.Now());
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(asked_.empty());
}

TEST_F(RoleCheckTest, WithoutASeamAnyRoleLaunches) {  // --accept-any-credentials
  Tasks unchecked(*store_, tds_, clusters_, "fargate-local");
  assumable_.clear();
  EXPECT_TRUE(unchecked.Run(kScope, kCaller, Req(), clock_.Now()).ok());
  EXPECT_TRUE(asked_.empty());
}

}  // namespace
}  // namespace paddock::ecs::task
