// sts/errors: STS's error details. The STS adapter's table (StsService::ErrorFor) maps them, and
// the verifier's aws::Error details, to STS's Query codes and statuses.
//
//   return InvalidArgument("Syntax errors in policy.", sts::Error::kMalformedPolicyDocument);
#pragma once

#include "common/status.h"

namespace paddock::sts {

enum class Error {
  kValidation = 1,           // ValidationError: a parameter breaks the model's or STS's constraints
  kInvalidParameterValue,    // InvalidParameterValue: e.g. duplicate session tag keys
  kMalformedPolicyDocument,  // MalformedPolicyDocument: a session policy that is not a JSON object
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::sts
