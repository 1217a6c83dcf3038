#include "iam/errors.h"

#include <string_view>

namespace paddock::iam {
namespace {

std::string_view ErrorName(int code) {
  switch (static_cast<Error>(code)) {
    case Error::kNoSuchEntity: return "NoSuchEntity";
    case Error::kEntityAlreadyExists: return "EntityAlreadyExists";
    case Error::kLimitExceeded: return "LimitExceeded";
    case Error::kDeleteConflict: return "DeleteConflict";
    case Error::kInvalidInput: return "InvalidInput";
    case Error::kMalformedPolicyDocument: return "MalformedPolicyDocument";
    case Error::kValidation: return "Validation";
  }
  return "?";
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"iam", ErrorName};
  return kDomain;
}

}  // namespace paddock::iam
