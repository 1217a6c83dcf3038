// iam/errors: IAM's error details — the failures IAM's owners (Directory, Accounts) and its policy
// parser (iam/policy) name, in their own words.
//
// Owners return them on a Status; only the api/ adapter's table (iam/api/errors.cc, IamErrorFor)
// knows the AWS code and HTTP status each is answered with. Its own library (paddock_iam_errors,
// common only) so that iam/policy, which depends on nothing else, can name them too.
//
//   return NotFound("The role with name app cannot be found.", iam::Error::kNoSuchEntity);
//   if (IsError(s, iam::Error::kEntityAlreadyExists)) ...
#pragma once

#include "common/status.h"

namespace paddock::iam {

enum class Error {
  kNoSuchEntity = 1,         // a user, role, policy, version or access key that does not exist
  kEntityAlreadyExists,      // a user, role or policy of that name exists
  kLimitExceeded,            // an account's or entity's quota (roles, keys per user, tags, ...)
  kDeleteConflict,           // the entity still has policies, keys or attachments
  kInvalidInput,             // a value IAM refuses beyond the model's constraints
  kMalformedPolicyDocument,  // a policy document iam/policy cannot read (ParsePolicy)
  kValidation,               // a parameter breaks the model's constraints (ValidationError)
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::iam
