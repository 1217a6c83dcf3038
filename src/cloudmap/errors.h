// cloudmap/errors: Cloud Map's failures, in the owner's vocabulary. The adapter's table
// (cloudmap/api/cloudmap_service.cc, ErrorFor) names each with servicediscovery's AWS error code.
//
//   return NotFound("Namespace not found", cloudmap::Error::kNamespaceNotFound);
#pragma once

#include "common/status.h"

namespace paddock::cloudmap {

enum class Error {
  kInvalidInput = 1,          // InvalidInput
  kNamespaceNotFound,         // NamespaceNotFound
  kServiceNotFound,           // ServiceNotFound
  kInstanceNotFound,          // InstanceNotFound
  kOperationNotFound,         // OperationNotFound
  kNamespaceAlreadyExists,    // NamespaceAlreadyExists
  kServiceAlreadyExists,      // ServiceAlreadyExists
  kResourceInUse,             // ResourceInUse
  kResourceLimitExceeded,     // ResourceLimitExceeded
  kCustomHealthNotFound,      // CustomHealthNotFound
  kResourceNotFound,          // ResourceNotFoundException (the tag actions)
  kTooManyTags,               // TooManyTagsException
  kDuplicateRequest,          // DuplicateRequest
  kRequestLimitExceeded,      // RequestLimitExceeded
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::cloudmap
