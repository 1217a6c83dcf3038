// logs/errors: CloudWatch Logs' error details — the failures the logs owners and the filter-pattern
// compiler (filter.h) name, in their own words.
//
// Only the api/ adapter's table (logs/api/logs_service.cc, ErrorFor) knows the AWS code and HTTP status each
// is answered with: kInvalidParameter is `InvalidParameterException` (400).
//
//   return InvalidArgument("Invalid filter pattern: ...", logs::Error::kInvalidParameter);
//   if (IsError(s, logs::Error::kInvalidParameter)) ...
#pragma once

#include "common/status.h"

namespace paddock::logs {

enum class Error {
  kInvalidParameter = 1,  // a parameter CloudWatch Logs refuses: a filter pattern that does not compile, ...
  kResourceNotFound,      // ResourceNotFoundException: no such log group or log stream (in the caller's scope)
  kResourceAlreadyExists, // ResourceAlreadyExistsException
  kTooManyTags,           // TooManyTagsException: more than 50 tags on a log group
  kLimitExceeded,         // LimitExceededException: more concurrent Live Tail sessions than an account may hold
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::logs
