// AWS's documented ECS request-throttling buckets ("Request throttling for the Amazon ECS API"):
// per account and Region, one bucket per category, burst = bucket size, refill per second.
#include <array>

#include "ecs/api/ecs_service.h"

namespace paddock::ecs::api {
namespace {

struct Category {
  std::string_view name;
  double burst;
  double refill;
  std::initializer_list<std::string_view> actions;
};

const std::array<Category, 20> kCategories = {{
    {"cluster-modify", 20, 1, {"CreateCluster", "DeleteCluster", "PutClusterCapacityProviders", "UpdateCluster", "UpdateClusterSettings"}},
    {"cluster-read", 50, 20, {"DescribeClusters", "ListClusters"}},
    {"task-definition-modify", 20, 1, {"DeregisterTaskDefinition", "RegisterTaskDefinition"}},
    {"task-definition-read", 50, 20, {"DescribeTaskDefinition", "ListTaskDefinitions", "ListTaskDefinitionFamilies"}},
    {"task-definition-delete", 5, 1, {"DeleteTaskDefinitions"}},
    {"capacity-provider-modify", 10, 1, {"CreateCapacityProvider", "DeleteCapacityProvider", "UpdateCapacityProvider"}},
    {"capacity-provider-read", 50, 20, {"DescribeCapacityProviders"}},
    {"tag-modify", 20, 10, {"TagResource", "UntagResource"}},
    {"tag-read", 50, 20, {"ListTagsForResource"}},
    {"setting-modify", 10, 1, {"DeleteAccountSetting", "PutAccountSetting", "PutAccountSettingDefault"}},
    {"setting-read", 50, 20, {"ListAccountSettings"}},
    {"cluster-resource-modify", 100, 40,
     {"DeleteAttributes", "DeregisterContainerInstance", "ExecuteCommand", "PutAttributes", "RunTask", "StartTask",
      "StopTask", "UpdateContainerAgent", "UpdateContainerInstancesState"}},
    {"cluster-resource-read", 100, 20,
     {"DescribeContainerInstances", "DescribeTasks", "ListAttributes", "ListContainerInstances", "ListTasks"}},
    {"agent-modify", 200, 120,
     {"RegisterContainerInstance", "SubmitAttachmentStateChanges", "SubmitContainerStateChange", "SubmitTaskStateChange",
      "DiscoverPollEndpoint"}},
    // Task-set and deployment-control actions are not in AWS's table; they share the service buckets.
    {"service-modify", 50, 5,
     {"CreateService", "DeleteService", "UpdateService", "CreateTaskSet", "DeleteTaskSet", "UpdateTaskSet",
      "UpdateServicePrimaryTaskSet", "StopServiceDeployment", "ContinueServiceDeployment"}},
    {"service-read", 100, 20, {"DescribeServices", "ListServices", "DescribeTaskSets"}},
    {"service-deployment", 50, 20, {"DescribeServiceDeployments", "ListServiceDeployments"}},
    {"service-revision", 50, 20, {"DescribeServiceRevisions"}},
    {"task-protection", 200, 80, {"UpdateTaskProtection", "GetTaskProtection"}},
    {"cluster-service-resource-read", 10, 1, {"ListServicesByNamespace"}},
}};

}  // namespace

std::optional<aws::ThrottleGroup> EcsThrottleGroup(std::string_view action) {
  for (const auto& c : kCategories)
    for (std::string_view a : c.actions)
      if (a == action) return aws::ThrottleGroup{"ecs:" + std::string(c.name), aws::BucketSpec{c.burst, c.refill}};
  return std::nullopt;
}

}  // namespace paddock::ecs::api
