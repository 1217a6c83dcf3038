// The ECS adapter: decodes each ECS action's validated input, calls the resource's owner, and
// encodes the owner's answer in the action's output shape. It holds no state of its own and is
// never used as an internal API: other modules call the owners directly.
//
//   EcsService ecs(model, owners, token_codec);
//   front.AddJsonService(&ecs);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/model.h"
#include "aws/pagination.h"
#include "aws/service.h"
#include "ecs/capacity/capacity_providers.h"
#include "ecs/cluster/clusters.h"
#include "ecs/instance/instances.h"
#include "ecs/service/services.h"
#include "ecs/setting/account_settings.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"

namespace paddock::ecs::api {

struct Owners {
  cluster::Clusters* clusters;
  taskdef::TaskDefinitions* task_definitions;
  task::Tasks* tasks;
  instance::ContainerInstances* container_instances;
  service::Services* services;
  setting::AccountSettings* account_settings;
  capacity::CapacityProviders* capacity_providers;
};

class EcsService final : public aws::JsonService {
 public:
  EcsService(const aws::ServiceModel& model, Owners owners, aws::TokenCodec tokens);

  std::string_view TargetPrefix() const override { return "AmazonEC2ContainerServiceV20141113"; }
  std::string_view SigningName() const override { return "ecs"; }
  const aws::ServiceModel& Model() const override { return model_; }
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // What an EC2 instance role lets ECS's agent do, for a container instance's agent credential:
  // RegisterContainerInstance (its own instance again), Submit*StateChange (its own tasks),
  // SubmitAttachmentStateChanges, DiscoverPollEndpoint, and DescribeTasks (its own tasks only:
  // the task metadata endpoint's documents).
  bool AgentMay(std::string_view action) const override;
  // ecs/api/authorization.h.
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  // ECS's error table (ecs/api/errors.h).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

  // The actions this adapter implements, sorted (for docs/api-coverage.md).
  std::vector<std::string> ImplementedActions() const;

  // The URL DiscoverPollEndpoint answers (endpoint, telemetryEndpoint, serviceConnectEndpoint):
  // the server's own, once it knows its port. Thread-safe.
  void SetEndpoint(std::string url);

  // ListServicesByNamespace's view of Cloud Map: the ARNs of the Cloud Map services of `ns` (a
  // namespace name or ARN) in the scope, or nullopt when the scope has no such namespace. Unset:
  // every namespace is NamespaceNotFoundException. Set once, before the front serves.
  using NamespaceLookup =
      std::function<StatusOr<std::optional<std::vector<std::string>>>(const Scope& scope, std::string_view ns)>;
  void SetNamespaceLookup(NamespaceLookup lookup) { namespace_lookup_ = std::move(lookup); }

 private:
  using Handler = StatusOr<std::string> (EcsService::*)(const aws::CallContext&, boost::json::object&);

  StatusOr<std::string> CreateCluster(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeClusters(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListClusters(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteCluster(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateCluster(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateClusterSettings(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> PutClusterCapacityProviders(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> RegisterTaskDefinition(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeTaskDefinition(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListTaskDefinitions(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListTaskDefinitionFamilies(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeregisterTaskDefinition(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteTaskDefinitions(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> RunTask(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> StartTask(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeTasks(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListTasks(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> StopTask(const aws::CallContext&, boost::json::object&);
  // Task scale-in protection (account_actions.cc).
  StatusOr<std::string> UpdateTaskProtection(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> GetTaskProtection(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> RegisterContainerInstance(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeContainerInstances(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListContainerInstances(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeregisterContainerInstance(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateContainerInstancesState(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateContainerAgent(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> PutAttributes(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteAttributes(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListAttributes(const aws::CallContext&, boost::json::object&);
  // Services (service_actions.cc; docs/contracts/service.md).
  StatusOr<std::string> CreateService(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateService(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteService(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeServices(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListServices(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListServicesByNamespace(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListServiceDeployments(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeServiceDeployments(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeServiceRevisions(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> StopServiceDeployment(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ContinueServiceDeployment(const aws::CallContext&, boost::json::object&);
  // Task sets (task_set_actions.cc).
  StatusOr<std::string> CreateTaskSet(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateTaskSet(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteTaskSet(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateServicePrimaryTaskSet(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeTaskSets(const aws::CallContext&, boost::json::object&);
  // Account settings and capacity providers (account_actions.cc).
  StatusOr<std::string> PutAccountSetting(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> PutAccountSettingDefault(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteAccountSetting(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListAccountSettings(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> CreateCapacityProvider(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UpdateCapacityProvider(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DeleteCapacityProvider(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DescribeCapacityProviders(const aws::CallContext&, boost::json::object&);
  Status RequireAccountOwners() const;
  StatusOr<std::string> TagResource(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> UntagResource(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> ListTagsForResource(const aws::CallContext&, boost::json::object&);
  // The agent's actions (docs/contracts/container-instance.md, docs/agent-protocol.md).
  StatusOr<std::string> SubmitTaskStateChange(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> SubmitContainerStateChange(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> SubmitAttachmentStateChanges(const aws::CallContext&, boost::json::object&);
  StatusOr<std::string> DiscoverPollEndpoint(const aws::CallContext&, boost::json::object&);

  const aws::ServiceModel& model_;
  Owners owners_;
  // A list action's page position: where the request's nextToken (sealed with `context`: the
  // action, the caller's scope and the filters) says to go on; empty without one.
  StatusOr<std::string> PageStart(const std::string& context, const boost::json::object& in);
  // {"<member>": items, "nextToken": ...} with the next position sealed for PageStart.
  std::string EncodePage(const std::string& context, std::string_view member, boost::json::value items,
                         const std::string& next);

  aws::TokenCodec tokens_;
  std::map<std::string, Handler, std::less<>> handlers_;
  NamespaceLookup namespace_lookup_;
  std::mutex endpoint_mu_;
  std::string endpoint_;  // GUARDED_BY(endpoint_mu_)
};

// AWS's ECS throttle bucket for `action` (the documented table), or nullopt for actions AWS
// does not throttle by bucket.
std::optional<aws::ThrottleGroup> EcsThrottleGroup(std::string_view action);

}  // namespace paddock::ecs::api
