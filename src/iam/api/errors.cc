#include "iam/api/errors.h"

#include <array>
#include <string>
#include <string_view>

namespace paddock::iam::api {
namespace {

struct Row {
  Error error;
  std::string_view type;
  int http_status;  // the model's httpStatusCode for `type`
};

// Every iam::Error, once.
constexpr std::array kTable{
    Row{Error::kNoSuchEntity, "NoSuchEntity", 404},
    Row{Error::kEntityAlreadyExists, "EntityAlreadyExists", 409},
    Row{Error::kLimitExceeded, "LimitExceeded", 409},
    Row{Error::kDeleteConflict, "DeleteConflict", 409},
    Row{Error::kInvalidInput, "InvalidInput", 400},
    Row{Error::kMalformedPolicyDocument, "MalformedPolicyDocument", 400},
    Row{Error::kValidation, "ValidationError", 400},  // no shape in the model: the Query protocol's
};

}  // namespace

std::optional<aws::AwsError> IamErrorFor(const Status& status) {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    for (const Row& r : kTable)
      if (r.error == *e) return aws::AwsError{std::string(r.type), r.http_status};
  }
  std::optional<aws::Error> shared = status.detail().As<aws::Error>();
  switch (status.code()) {
    case StatusCode::kPermissionDenied: return aws::AwsError{"AccessDenied", 403};
    case StatusCode::kUnauthenticated:
      if (!shared || *shared == aws::Error::kUnrecognizedClient) return aws::AwsError{"InvalidClientTokenId", 403};
      return std::nullopt;
    default: break;
  }
  if (shared) return std::nullopt;  // the front's own failures, in the shared words
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: return aws::AwsError{"InvalidInput", 400};
    case StatusCode::kOk:  // not an error; answered as a bug would be
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
    case StatusCode::kAborted:
    case StatusCode::kUnavailable: return aws::AwsError{"ServiceFailure", 500};
    default: return std::nullopt;
  }
}

}  // namespace paddock::iam::api
