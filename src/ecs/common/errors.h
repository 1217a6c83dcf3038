// ecs/common/errors: ECS's error details — the failures ECS owners name, in their own words.
//
// Owners return them on a Status; only the api/ adapter's table (ecs/api/errors.cc) knows the AWS
// code and HTTP status each is answered with.
//
//   return NotFound("Cluster not found.", ecs::Error::kClusterNotFound);
//   if (IsError(s, ecs::Error::kServiceNotFound)) ...
#pragma once

#include "common/status.h"

namespace paddock::ecs {

enum class Error {
  kInvalidParameter = 1,   // a value's form, where the status code alone would say otherwise
  kClient,                 // ECS's generic client error (the request is wrong for the state)
  kClusterNotFound,
  kClusterContainsServices,
  kClusterContainsTasks,
  kClusterContainsContainerInstances,
  kResourceInUse,          // a capacity provider or cluster another resource uses
  kResourceNotFound,       // a tag target, capacity provider or ENI that does not exist
  kServiceNotFound,
  kServiceNotActive,
  kTaskSetNotFound,
  kServiceDeploymentNotFound,
  kNamespaceNotFound,      // a Service Connect namespace
  kPlatformUnknown,        // a platform version that does not exist
  kConflict,               // a concurrent change (task protection, deployment stop)
  kAttributeLimitExceeded,
  kMissingVersion,         // the agent's version is not known (UpdateContainerAgent)
  kNoUpdateAvailable,
  kTargetNotFound,         // an attribute's target
  kUnsupportedFeature,
  kRoleNotAssumable,        // a task or execution role ECS could not assume at launch (ClientException)
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::ecs
