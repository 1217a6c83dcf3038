// AWS's ECS buckets, exactly, through the real front with a fake clock.
#include <gtest/gtest.h>

#include "ecs/api/ecs_service.h"
#include "ecs/api/testing/front_fixture.h"

namespace paddock::ecs::api {
namespace {

TEST(EcsThrottleTableTest, ActionsMapToAwsBuckets) {
  auto check = [](std::string_view action, std::string_view group, double burst, double refill) {
    auto g = EcsThrottleGroup(action);
    ASSERT_TRUE(g.has_value()) << action;
    EXPECT_EQ(g->name, group) << action;
    EXPECT_EQ(g->spec.burst, burst) << action;
    EXPECT_EQ(g->spec.refill_per_second, refill) << action;
  };
  check("CreateCluster", "ecs:cluster-modify", 20, 1);
  check("PutClusterCapacityProviders", "ecs:cluster-modify", 20, 1);
  check("DescribeClusters", "ecs:cluster-read", 50, 20);
  check("ListClusters", "ecs:cluster-read", 50, 20);
  check("RegisterTaskDefinition", "ecs:task-definition-modify", 20, 1);
  check("DeregisterTaskDefinition", "ecs:task-definition-modify", 20, 1);
  check("DescribeTaskDefinition", "ecs:task-definition-read", 50, 20);
  check("ListTaskDefinitionFamilies", "ecs:task-definition-read", 50, 20);
  check("DeleteTaskDefinitions", "ecs:task-definition-delete", 5, 1);
  check("TagResource", "ecs:tag-modify", 20, 10);
  check("UntagResource", "ecs:tag-modify", 20, 10);
  check("ListTagsForResource", "ecs:tag-read", 50, 20);
  check("RunTask", "ecs:cluster-resource-modify", 100, 40);
  check("DescribeTasks", "ecs:cluster-resource-read", 100, 20);
  check("SubmitTaskStateChange", "ecs:agent-modify", 200, 120);
  check("CreateService", "ecs:service-modify", 50, 5);
  check("DescribeServices", "ecs:service-read", 100, 20);
  check("ListServiceDeployments", "ecs:service-deployment", 50, 20);
  check("ListServicesByNamespace", "ecs:cluster-service-resource-read", 10, 1);
}

class FrontThrottleTest : public ::testing::Test {
 protected:
  int Call(std::string_view action, std::string body, std::string key = "123456789012") {
    http::Response resp = front_.Send(action, std::move(body), std::move(key));
    if (resp.status != 200) last_error_ = resp.body;
    return resp.status;
  }

  testing::EcsFront front_{/*rate_limits=*/true};
  paddock::testing::FakeClock& clock_ = front_.clock();
  std::string last_error_;
};

TEST_F(FrontThrottleTest, ClusterModifyBucketIsTwentyThenOnePerSecond) {
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Call("CreateCluster", "{}"), 200) << i;
  EXPECT_EQ(Call("CreateCluster", "{}"), 400);
  EXPECT_EQ(last_error_, R"({"__type":"ThrottlingException","message":"Rate exceeded"})");
  // Another bucket of the same account is untouched; the same bucket of another account too.
  EXPECT_EQ(Call("ListClusters", "{}"), 200);
  EXPECT_EQ(Call("CreateCluster", "{}", "210987654321"), 200);
  clock_.Advance(std::chrono::milliseconds(999));
  EXPECT_EQ(Call("CreateCluster", "{}"), 400);
  clock_.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(Call("CreateCluster", "{}"), 200);
  EXPECT_EQ(Call("CreateCluster", "{}"), 400);
  clock_.Advance(std::chrono::seconds(100));  // refills to the burst, no further
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Call("CreateCluster", "{}"), 200) << i;
  EXPECT_EQ(Call("CreateCluster", "{}"), 400);
}

TEST_F(FrontThrottleTest, TaskDefinitionDeleteBucketIsFiveThenOnePerSecond) {
  const std::string body = R"({"taskDefinitions":["nope:1"]})";
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Call("DeleteTaskDefinitions", body), 200) << i;
  EXPECT_EQ(Call("DeleteTaskDefinitions", body), 400);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Call("DeleteTaskDefinitions", body), 200);
  EXPECT_EQ(Call("DeleteTaskDefinitions", body), 400);
}

}  // namespace
}  // namespace paddock::ecs::api
