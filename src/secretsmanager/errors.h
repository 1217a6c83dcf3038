// secretsmanager/errors: Secrets Manager's failures, in the owner's vocabulary. The adapter's
// table (secretsmanager/api/secrets_manager_service.cc, ErrorFor) names each with AWS's code.
//
//   return NotFound("Secrets Manager can't find the specified secret.", Error::kResourceNotFound);
#pragma once

#include "common/status.h"

namespace paddock::secretsmanager {

enum class Error {
  kResourceNotFound = 1,  // ResourceNotFoundException
  kResourceExists,        // ResourceExistsException
  kInvalidParameter,      // InvalidParameterException
  kInvalidRequest,        // InvalidRequestException (a secret marked for deletion, ...)
  kLimitExceeded,         // LimitExceededException
  kValidation,            // ValidationException (a malformed secret name)
  kDecryptionFailure,     // DecryptionFailure (a sealed value that does not open)
  kEncryptionFailure,     // EncryptionFailure (a key id KMS would not use)
  kInvalidNextToken,      // InvalidNextTokenException (the adapter's: a NextToken not ours)
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::secretsmanager
