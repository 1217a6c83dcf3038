// ECS's embedded botocore model (ecs/api/models/), which the node's front validates every ECS
// request against.
#include <gtest/gtest.h>

#include <algorithm>

#include "aws/model.h"
#include "ecs/api/models/models.h"

namespace paddock::ecs::api {
namespace {

TEST(EcsModelTest, EmbeddedEcsModelParses) {
  auto model = aws::ServiceModel::Parse(EcsModelJson());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto names = (*model)->OperationNames();
  EXPECT_EQ(names.size(), 77u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE((*model)->HasOperation("RegisterTaskDefinition"));
  EXPECT_TRUE((*model)->HasOperation("ListClusters"));
  EXPECT_FALSE((*model)->HasOperation("ListBuckets"));
}

}  // namespace
}  // namespace paddock::ecs::api
