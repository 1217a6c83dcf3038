// ssm/errors: Parameter Store's failures, in the owner's vocabulary. The adapter's table
// (ssm/api/ssm_service.cc, ErrorFor) names each with SSM's AWS error code.
//
//   return NotFound("", ssm::Error::kParameterNotFound);
#pragma once

#include "common/status.h"

namespace paddock::ssm {

enum class Error {
  kValidation = 1,                     // ValidationException
  kReservedName,                       // AccessDeniedException: a name under "aws" (reserved)
  kParameterNotFound,                  // ParameterNotFound
  kParameterAlreadyExists,             // ParameterAlreadyExists
  kParameterVersionNotFound,           // ParameterVersionNotFound
  kHierarchyLevelLimitExceeded,        // HierarchyLevelLimitExceededException
  kInvalidAllowedPattern,              // InvalidAllowedPatternException
  kParameterPatternMismatch,           // ParameterPatternMismatchException
  kInvalidKeyId,                       // InvalidKeyId
  kParameterLimitExceeded,             // ParameterLimitExceeded
  kParameterMaxVersionLimitExceeded,   // ParameterMaxVersionLimitExceeded
  kParameterVersionLabelLimitExceeded, // ParameterVersionLabelLimitExceeded
  kInvalidFilterKey,                   // InvalidFilterKey
  kInvalidFilterOption,                // InvalidFilterOption
  kInvalidFilterValue,                 // InvalidFilterValue
  kInvalidResourceId,                  // InvalidResourceId
  kInvalidResourceType,                // InvalidResourceType
  kTooManyTags,                        // TooManyTagsError
  kInvalidNextToken,                   // InvalidNextToken
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::ssm
