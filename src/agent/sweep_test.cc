#include "agent/sweep.h"

#include <gtest/gtest.h>

namespace paddock::agent {
namespace {

runtime::ContainerState Container(std::string id, std::map<std::string, std::string> annotations) {
  runtime::ContainerState c;
  c.id = runtime::ContainerId(std::move(id));
  c.annotations = std::move(annotations);
  return c;
}

std::map<std::string, std::string> Of(std::string owner, std::string task) {
  return {{std::string(kOwnerAnnotation), std::move(owner)}, {std::string(kTaskAnnotation), std::move(task)}};
}

TEST(SweepTest, RemovesOnlyItsOwnContainersOfTasksItNeitherHasNorDrives) {
  const std::vector<runtime::ContainerState> all = {
      Container("pdk-n-t1-0", Of("fargate-local", "t1")),   // kept: assigned or driven
      Container("pdk-n-t2-0", Of("fargate-local", "t2")),   // gone
      Container("pdk-n-t2-1", Of("fargate-local", "t2")),   // gone, with its sibling
      Container("pdk-n-t3-0", Of("arn:ec2-instance", "t3")),  // another agent's on the same runtime
      Container("pdk-n-t4-0", {}),                          // made before the labels: never touched
      Container("pdk-n-t5-0", Of("fargate-local", "")),     // no task id: never touched
  };
  auto plan = PlanSweep(all, "fargate-local", {"t1"});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan["t2"], (std::vector<runtime::ContainerId>{runtime::ContainerId("pdk-n-t2-0"),
                                                           runtime::ContainerId("pdk-n-t2-1")}));
  // The other agent sees its own leftover, and nothing of the Fargate agent's.
  auto other = PlanSweep(all, "arn:ec2-instance", {});
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other.count("t3"), 1u);
}

TEST(SweepTest, AnAgentWithoutAnOwnerLabelRemovesNothing) {
  EXPECT_TRUE(PlanSweep({Container("c", Of("", "t1"))}, "", {}).empty());
}

}  // namespace
}  // namespace paddock::agent
