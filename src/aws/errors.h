// aws/errors: how a failed Status is answered on the wire — the error codes every AWS protocol
// shares, and the default answer for each status code.
//
// A service names its own failures with its module's error enum (ecs::Error::kClusterNotFound)
// and maps them to AWS codes in its own table (JsonService::ErrorFor, ecs/api/errors.cc); the
// front asks that table first and falls back to AwsErrorFor below, which knows only the codes
// of this module's vocabulary (aws::Error: SigV4, decoding, routing, throttling) and the
// default per status code.
//
//   return InvalidArgument("Unknown operation 'X'.", aws::Error::kUnknownOperation);
//   AwsErrorFor(NotFound("x"))  // {"ClientException", 400}
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace paddock::aws {

// The failures aws/ itself names, whatever the service. Their AWS codes are AwsErrorFor's.
enum class Error {
  kUnknownOperation = 1,      // UnknownOperationException: no such target, action or protocol
  kSerialization,             // SerializationException: the body does not decode
  kThrottling,                // ThrottlingException (Query dialect: Throttling)
  kIncompleteSignature,       // IncompleteSignatureException: a malformed Authorization
  kInvalidSignature,          // InvalidSignatureException: the signature does not match
  kMissingAuthenticationToken,  // MissingAuthenticationTokenException: an unsigned request
  kUnrecognizedClient,        // UnrecognizedClientException: an unknown access key or token
  kExpiredToken,              // ExpiredTokenException: temporary credentials past expiry
  kMalformedQueryString,      // Query: MalformedQueryString
  kMissingAction,             // Query: MissingAction
  kInvalidAction,             // Query: InvalidAction
  kInternalFailure,           // Query: InternalFailure, 500
};
const ErrorDomain& ErrorDomainOf(Error);

// An AWS error code and the HTTP status it is answered with.
struct AwsError {
  std::string type;
  int http_status;
};

// The two families of AWS protocols, which name two of the shared failures differently.
enum class Dialect {
  kJson,   // ECS and the other JSON services
  kQuery,  // IAM, STS, EC2: PermissionDenied is AccessDenied with HTTP 403; kThrottling is Throttling
};

// The answer for a failed Status that no service's table claimed: its aws::Error detail's code,
// else the default for its code (kInvalidArgument -> InvalidParameterException 400, kNotFound ->
// ClientException 400, kInternal -> ServerException 500, kUnavailable -> ServerException 503,
// kPermissionDenied -> AccessDeniedException 400 or, in the Query dialect, AccessDenied 403, ...).
AwsError AwsErrorFor(const Status& status, Dialect dialect = Dialect::kJson);

// The aws::Error whose code is `type` ("UnrecognizedClientException"), for a client that reads an
// AWS error answer back into a Status; nullopt for any other code.
std::optional<Error> ErrorFromAwsCode(std::string_view type);

}  // namespace paddock::aws
