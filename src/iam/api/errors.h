// iam/api/errors: IAM's error table — the code and HTTP status each failure of an IAM request is
// answered with. The only place IAM's AWS error names are written; the statuses are those of the
// error shapes of IAM's model (NoSuchEntity 404, EntityAlreadyExists 409, ...), which
// IamErrorsTest checks against the embedded model.
//
//   IamErrorFor(NotFound("...", iam::Error::kNoSuchEntity))  // {"NoSuchEntity", 404}
//   IamErrorFor(PermissionDenied("..."))                     // {"AccessDenied", 403}
#pragma once

#include <optional>

#include "aws/errors.h"
#include "common/status.h"
#include "iam/errors.h"

namespace paddock::iam::api {

// The answer for a failed IAM request:
// - an iam::Error detail: its IAM code and the model's status for it;
// - any denial (kPermissionDenied): AccessDenied 403;
// - an unknown key (aws::Error::kUnrecognizedClient, or kUnauthenticated with no detail):
//   InvalidClientTokenId 403;
// - no detail, or another module's: IAM's generic codes by status code — InvalidInput 400 for a
//   caller's mistake (kInvalidArgument, kNotFound, kAlreadyExists, kFailedPrecondition),
//   ServiceFailure 500 for the service's (kInternal, kDataLoss, kAborted, kUnavailable);
// - nullopt for the rest (aws::Error's other codes, throttling), which the front answers with
//   aws::AwsErrorFor in the Query dialect.
std::optional<aws::AwsError> IamErrorFor(const Status& status);

}  // namespace paddock::iam::api
