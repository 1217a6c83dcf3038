#include "sts/errors.h"

#include <string_view>

namespace paddock::sts {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"sts", [](int code) -> std::string_view {
                                         switch (static_cast<Error>(code)) {
                                           case Error::kValidation: return "Validation";
                                           case Error::kInvalidParameterValue: return "InvalidParameterValue";
                                           case Error::kMalformedPolicyDocument: return "MalformedPolicyDocument";
                                         }
                                         return "?";
                                       }};
  return kDomain;
}

}  // namespace paddock::sts
