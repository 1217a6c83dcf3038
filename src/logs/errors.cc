#include "logs/errors.h"

#include <string_view>

namespace paddock::logs {
namespace {

std::string_view ErrorName(int code) {
  switch (static_cast<Error>(code)) {
    case Error::kInvalidParameter: return "InvalidParameter";
    case Error::kResourceNotFound: return "ResourceNotFound";
    case Error::kResourceAlreadyExists: return "ResourceAlreadyExists";
    case Error::kTooManyTags: return "TooManyTags";
    case Error::kLimitExceeded: return "LimitExceeded";
  }
  return "?";
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"logs", ErrorName};
  return kDomain;
}

}  // namespace paddock::logs
