#include "aws/errors.h"

#include <array>

namespace paddock::aws {
namespace {

struct Row {
  Error error;
  std::string_view name;  // for logs
  std::string_view type;
  int http_status;
  std::string_view query_type = {};  // the Query dialect's code when it differs
};

// Every aws::Error, once: its name in logs, its AWS code and its HTTP status.
constexpr std::array kTable{
    Row{Error::kUnknownOperation, "UnknownOperation", "UnknownOperationException", 400},
    Row{Error::kSerialization, "Serialization", "SerializationException", 400},
    Row{Error::kThrottling, "Throttling", "ThrottlingException", 400, "Throttling"},
    Row{Error::kIncompleteSignature, "IncompleteSignature", "IncompleteSignatureException", 400},
    Row{Error::kInvalidSignature, "InvalidSignature", "InvalidSignatureException", 400},
    Row{Error::kMissingAuthenticationToken, "MissingAuthenticationToken", "MissingAuthenticationTokenException", 400},
    Row{Error::kUnrecognizedClient, "UnrecognizedClient", "UnrecognizedClientException", 400},
    Row{Error::kExpiredToken, "ExpiredToken", "ExpiredTokenException", 400},
    Row{Error::kMalformedQueryString, "MalformedQueryString", "MalformedQueryString", 400},
    Row{Error::kMissingAction, "MissingAction", "MissingAction", 400},
    Row{Error::kInvalidAction, "InvalidAction", "InvalidAction", 400},
    Row{Error::kInternalFailure, "InternalFailure", "InternalFailure", 500},
};

const Row* Find(Error e) {
  for (const Row& r : kTable)
    if (r.error == e) return &r;
  return nullptr;
}

struct Answer {
  std::string_view type;
  int http_status;
};

// The answer for a status code alone.
Answer DefaultFor(StatusCode code, Dialect dialect) {
  int http_status = 400;
  std::string_view type;
  switch (code) {
    case StatusCode::kOk:  // not an error; answer as a bug would be answered
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
    case StatusCode::kAborted:
      type = "ServerException";
      http_status = 500;
      break;
    case StatusCode::kUnavailable:
      type = "ServerException";
      http_status = 503;
      break;
    case StatusCode::kInvalidArgument: type = "InvalidParameterException"; break;
    // ECS answers most "not found" and state conflicts with ClientException.
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: type = "ClientException"; break;
    case StatusCode::kPermissionDenied:
      if (dialect == Dialect::kQuery) return {"AccessDenied", 403};
      type = "AccessDeniedException";
      break;
    case StatusCode::kUnauthenticated: type = "UnrecognizedClientException"; break;
    case StatusCode::kResourceExhausted: type = "ThrottlingException"; break;
  }
  return {type, http_status};
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"aws", [](int code) -> std::string_view {
                                         const Row* r = Find(static_cast<Error>(code));
                                         return r ? r->name : "?";
                                       }};
  return kDomain;
}

AwsError AwsErrorFor(const Status& status, Dialect dialect) {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    if (const Row* r = Find(*e)) {
      const bool query = dialect == Dialect::kQuery && !r->query_type.empty();
      return {std::string(query ? r->query_type : r->type), r->http_status};
    }
  }
  const Answer answer = DefaultFor(status.code(), dialect);
  return {std::string(answer.type), answer.http_status};
}

std::optional<Error> ErrorFromAwsCode(std::string_view type) {
  for (const Row& r : kTable)
    if (r.type == type) return r.error;
  return std::nullopt;
}

}  // namespace paddock::aws
