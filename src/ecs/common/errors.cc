#include "ecs/common/errors.h"

#include <string_view>

namespace paddock::ecs {
namespace {

std::string_view ErrorName(int code) {
  switch (static_cast<Error>(code)) {
    case Error::kInvalidParameter: return "InvalidParameter";
    case Error::kClient: return "Client";
    case Error::kClusterNotFound: return "ClusterNotFound";
    case Error::kClusterContainsServices: return "ClusterContainsServices";
    case Error::kClusterContainsTasks: return "ClusterContainsTasks";
    case Error::kClusterContainsContainerInstances: return "ClusterContainsContainerInstances";
    case Error::kResourceInUse: return "ResourceInUse";
    case Error::kResourceNotFound: return "ResourceNotFound";
    case Error::kServiceNotFound: return "ServiceNotFound";
    case Error::kServiceNotActive: return "ServiceNotActive";
    case Error::kTaskSetNotFound: return "TaskSetNotFound";
    case Error::kServiceDeploymentNotFound: return "ServiceDeploymentNotFound";
    case Error::kNamespaceNotFound: return "NamespaceNotFound";
    case Error::kPlatformUnknown: return "PlatformUnknown";
    case Error::kConflict: return "Conflict";
    case Error::kAttributeLimitExceeded: return "AttributeLimitExceeded";
    case Error::kMissingVersion: return "MissingVersion";
    case Error::kNoUpdateAvailable: return "NoUpdateAvailable";
    case Error::kTargetNotFound: return "TargetNotFound";
    case Error::kUnsupportedFeature: return "UnsupportedFeature";
    case Error::kRoleNotAssumable: return "RoleNotAssumable";
  }
  return "?";
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"ecs", &ErrorName};
  return kDomain;
}

}  // namespace paddock::ecs
