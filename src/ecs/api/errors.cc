#include "ecs/api/errors.h"

#include <array>
#include <string_view>

#include "ecs/common/errors.h"

namespace paddock::ecs::api {
namespace {

// Every ecs::Error and ECS's AWS code for it. All are client faults (HTTP 400).
struct Row {
  Error error;
  std::string_view type;
};
constexpr std::array kTable{
    Row{Error::kInvalidParameter, "InvalidParameterException"},
    Row{Error::kClient, "ClientException"},
    Row{Error::kClusterNotFound, "ClusterNotFoundException"},
    Row{Error::kClusterContainsServices, "ClusterContainsServicesException"},
    Row{Error::kClusterContainsTasks, "ClusterContainsTasksException"},
    Row{Error::kClusterContainsContainerInstances, "ClusterContainsContainerInstancesException"},
    Row{Error::kResourceInUse, "ResourceInUseException"},
    Row{Error::kResourceNotFound, "ResourceNotFoundException"},
    Row{Error::kServiceNotFound, "ServiceNotFoundException"},
    Row{Error::kServiceNotActive, "ServiceNotActiveException"},
    Row{Error::kTaskSetNotFound, "TaskSetNotFoundException"},
    Row{Error::kServiceDeploymentNotFound, "ServiceDeploymentNotFoundException"},
    Row{Error::kNamespaceNotFound, "NamespaceNotFoundException"},
    Row{Error::kPlatformUnknown, "PlatformUnknownException"},
    Row{Error::kConflict, "ConflictException"},
    Row{Error::kAttributeLimitExceeded, "AttributeLimitExceededException"},
    Row{Error::kMissingVersion, "MissingVersionException"},
    Row{Error::kNoUpdateAvailable, "NoUpdateAvailableException"},
    Row{Error::kTargetNotFound, "TargetNotFoundException"},
    Row{Error::kUnsupportedFeature, "UnsupportedFeatureException"},
    Row{Error::kRoleNotAssumable, "ClientException"},
};

}  // namespace

std::optional<aws::AwsError> EcsErrorFor(const Status& status) {
  std::optional<Error> e = status.detail().As<Error>();
  if (!e) return std::nullopt;
  for (const Row& r : kTable)
    if (r.error == *e) return aws::AwsError{std::string(r.type), 400};
  return std::nullopt;
}

std::optional<Error> EcsErrorFromAwsCode(std::string_view type) {
  for (const Row& r : kTable)
    if (r.type == type) return r.error;
  return std::nullopt;
}

aws::AwsError AnswerFor(const Status& status) {
  if (std::optional<aws::AwsError> e = EcsErrorFor(status)) return *e;
  return aws::AwsErrorFor(status);
}

}  // namespace paddock::ecs::api
