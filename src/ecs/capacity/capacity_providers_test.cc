#include "ecs/capacity/capacity_providers.h"

#include <gtest/gtest.h>

#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::capacity {
namespace {

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};

std::string Code(const Status& s) { return s.ok() ? "OK" : api::AnswerFor(s).type; }
template <typename T>
std::string Code(const StatusOr<T>& s) {
  return s.ok() ? "OK" : api::AnswerFor(s.status()).type;
}

CreateRequest Asg(std::string name, std::string asg) {
  CreateRequest r;
  r.name = std::move(name);
  r.asg = AsgProvider{};
  r.asg->auto_scaling_group_arn = std::move(asg);
  return r;
}

class CapacityProvidersTest : public ::testing::Test {
 protected:
  // What a cluster does when its providers change, in one transaction.
  Status Associate(std::string_view cluster, std::vector<std::string> before, std::vector<std::string> after) {
    return store_->Write([&](store::WriteTxn& txn) -> Status {
      for (const auto& name : after) RETURN_IF_ERROR(providers_.CheckAssociable(txn, kScope, cluster, name));
      return providers_.Associate(txn, kScope, cluster, before, after);
    });
  }
  paddock::testing::TempStore store_;
  CapacityProviders providers_{*store_};
};

TEST_F(CapacityProvidersTest, CreateValidatesNamesGroupsAndDuplicates) {
  auto p = providers_.Create(kScope, Asg("spot-fleet", "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:"
                                                       "57ffcb94-11f0-4d6d-bf60-3bac5EXAMPLE:autoScalingGroupName/MyASG"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->arn, "arn:aws:ecs:us-east-1:123456789012:capacity-provider/spot-fleet");
  EXPECT_EQ(p->status, "ACTIVE");
  ASSERT_TRUE(p->asg);
  EXPECT_FALSE(p->asg->managed_scaling.enabled);
  EXPECT_EQ(p->asg->managed_scaling.target_capacity, 100);
  EXPECT_TRUE(p->asg->managed_draining);

  EXPECT_EQ(Code(providers_.Create(kScope, Asg("spot-fleet", "other"))), "ClientException");
  EXPECT_EQ(Code(providers_.Create(kScope, Asg("second", "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:"
                                                         "57ffcb94-11f0-4d6d-bf60-3bac5EXAMPLE:autoScalingGroupName/MyASG"))),
            "ClientException");  // the group is taken
  for (std::string bad : {"FARGATE_X", "fargate-x", "Aws1", "ecs_x", "has space", ""})
    EXPECT_EQ(Code(providers_.Create(kScope, Asg(bad, "g-" + bad))), "InvalidParameterException") << bad;
  EXPECT_EQ(Code(providers_.Create(kScope, Asg("other-account",
                                               "arn:aws:autoscaling:us-east-1:210987654321:autoScalingGroup:u:"
                                               "autoScalingGroupName/x"))),
            "InvalidParameterException");
  EXPECT_EQ(Code(providers_.Create(kScope, Asg("not-asg", "arn:aws:ec2:us-east-1:123456789012:instance/i-1"))),
            "InvalidParameterException");
  CreateRequest none;
  none.name = "none";
  EXPECT_EQ(Code(providers_.Create(kScope, none)), "InvalidParameterException");
  CreateRequest managed = Asg("mi", "g-mi");
  managed.managed_instances = true;
  EXPECT_EQ(Code(providers_.Create(kScope, managed)), "UnsupportedFeatureException");
  CreateRequest steps = Asg("steps", "g-steps");
  steps.asg->managed_scaling.minimum_scaling_step_size = 5;
  steps.asg->managed_scaling.maximum_scaling_step_size = 2;
  EXPECT_EQ(Code(providers_.Create(kScope, steps)), "InvalidParameterException");
}

TEST_F(CapacityProvidersTest, DescribeListsBuiltInsFirstThenPagesAndReportsMissing) {
  for (std::string n : {"c", "a", "b"}) ASSERT_TRUE(providers_.Create(kScope, Asg(n, "g-" + n)).ok());
  DescribeQuery q;
  q.limit = 2;
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) {
    auto page = providers_.Describe(kScope, q);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_LE(page->providers.size(), 2u);
    for (const auto& p : page->providers) names.push_back(p.name);
    if (page->next.empty()) break;
    q.after = page->next;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"FARGATE", "FARGATE_SPOT", "a", "b", "c"}));

  DescribeQuery byname;
  byname.refs = {"b", "arn:aws:ecs:us-east-1:123456789012:capacity-provider/FARGATE", "ghost"};
  byname.include_tags = true;
  auto r = providers_.Describe(kScope, byname);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->providers.size(), 2u);
  EXPECT_EQ(r->providers[1].type, ProviderType::kFargate);
  EXPECT_TRUE(r->providers[0].tags.has_value());
  ASSERT_EQ(r->failures.size(), 1u);
  EXPECT_EQ(r->failures[0].arn, "arn:aws:ecs:us-east-1:123456789012:capacity-provider/ghost");
  EXPECT_EQ(r->failures[0].reason, "MISSING");
  DescribeQuery foreign;
  foreign.refs = {"arn:aws:ecs:us-east-1:210987654321:capacity-provider/b"};
  EXPECT_EQ(Code(providers_.Describe(kScope, foreign)), "AccessDeniedException");
}

TEST_F(CapacityProvidersTest, AnAssociatedProviderIsNotDeletedAndBelongsToOneCluster) {
  ASSERT_TRUE(providers_.Create(kScope, Asg("ec2", "g")).ok());
  ASSERT_TRUE(Associate("prod", {}, {"FARGATE", "ec2"}).ok());
  EXPECT_EQ(Code(Associate("dev", {}, {"ec2"})), "InvalidParameterException");
  EXPECT_EQ(Code(Associate("dev", {}, {"ghost"})), "InvalidParameterException");
  EXPECT_TRUE(Associate("dev", {}, {"FARGATE"}).ok());  // the built-ins go anywhere

  auto refused = providers_.Delete(kScope, "ec2");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, "ACTIVE");
  EXPECT_EQ(refused->update_status, "DELETE_FAILED");
  EXPECT_NE(refused->update_status_reason.find("associated with cluster: prod"), std::string::npos);

  DescribeQuery in_prod;
  in_prod.only = std::vector<std::string>{"FARGATE", "ec2"};
  auto shown = providers_.Describe(kScope, in_prod);
  ASSERT_TRUE(shown.ok());
  ASSERT_EQ(shown->providers.size(), 2u);
  EXPECT_EQ(shown->providers[1].name, "ec2");

  ASSERT_TRUE(Associate("prod", {"FARGATE", "ec2"}, {"FARGATE"}).ok());
  auto deleted = providers_.Delete(kScope, "ec2");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->status, "INACTIVE");
  EXPECT_EQ(deleted->update_status, "DELETE_COMPLETE");
  EXPECT_EQ(Code(providers_.Delete(kScope, "ec2")), "ClientException");
  EXPECT_EQ(Code(providers_.Delete(kScope, "FARGATE")), "InvalidParameterException");
  // Name and group are free again.
  EXPECT_TRUE(providers_.Create(kScope, Asg("ec2", "g")).ok());
}

TEST_F(CapacityProvidersTest, UpdateMergesTheGivenSettings) {
  ASSERT_TRUE(providers_.Create(kScope, Asg("ec2", "g")).ok());
  UpdateRequest u;
  u.name = "ec2";
  u.asg = AsgProviderUpdate{};
  u.asg->managed_scaling = ManagedScalingUpdate{};
  u.asg->managed_scaling->enabled = true;
  u.asg->managed_scaling->target_capacity = 50;
  u.asg->managed_draining = false;
  auto p = providers_.Update(kScope, u);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->asg->managed_scaling.enabled);
  EXPECT_EQ(p->asg->managed_scaling.target_capacity, 50);
  EXPECT_EQ(p->asg->managed_scaling.maximum_scaling_step_size, 10000);
  EXPECT_FALSE(p->asg->managed_draining);
  EXPECT_EQ(p->update_status, "UPDATE_COMPLETE");
  u.name = "ghost";
  EXPECT_EQ(Code(providers_.Update(kScope, u)), "ClientException");
  u.name = "FARGATE_SPOT";
  EXPECT_EQ(Code(providers_.Update(kScope, u)), "InvalidParameterException");
}

TEST_F(CapacityProvidersTest, TagsAndReapAccount) {
  CreateRequest r = Asg("ec2", "g");
  r.tags = {{"team", "core"}};
  auto p = providers_.Create(kScope, r);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->tags);
  EXPECT_EQ(p->tags->size(), 1u);
  ASSERT_TRUE(providers_.TagResource(kScope, "ec2", {{"env", "prod"}}).ok());
  EXPECT_EQ(providers_.ListTags(kScope, "ec2")->size(), 2u);
  EXPECT_EQ(Code(providers_.TagResource(kScope, "ghost", {{"a", "b"}})), "ResourceNotFoundException");
  ASSERT_TRUE(providers_.ReapAccount(kScope.account).ok());
  DescribeQuery q;
  q.refs = {"ec2"};
  EXPECT_EQ(providers_.Describe(kScope, q)->failures.size(), 1u);
}

}  // namespace
}  // namespace paddock::ecs::capacity
