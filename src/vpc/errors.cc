#include "vpc/errors.h"

#include <string_view>

namespace paddock::vpc {
namespace {

std::string_view ErrorName(int code) {
  switch (static_cast<Error>(code)) {
    case Error::kInvalidParameterValue: return "InvalidParameterValue";
    case Error::kMissingParameter: return "MissingParameter";
    case Error::kInvalidNextToken: return "InvalidNextToken";
    case Error::kVpcNotFound: return "VpcNotFound";
    case Error::kGroupNotFound: return "GroupNotFound";
    case Error::kGroupIdMalformed: return "GroupIdMalformed";
    case Error::kGroupNameReserved: return "GroupNameReserved";
    case Error::kGroupDuplicate: return "GroupDuplicate";
    case Error::kGroupLimitExceeded: return "GroupLimitExceeded";
    case Error::kCannotDelete: return "CannotDelete";
    case Error::kDependencyViolation: return "DependencyViolation";
    case Error::kRuleNotFound: return "RuleNotFound";
    case Error::kRuleIdMalformed: return "RuleIdMalformed";
    case Error::kRuleDuplicate: return "RuleDuplicate";
    case Error::kRuleMalformed: return "RuleMalformed";
    case Error::kRuleLimitExceeded: return "RuleLimitExceeded";
    case Error::kPrefixListNotFound: return "PrefixListNotFound";
    case Error::kTagLimitExceeded: return "TagLimitExceeded";
  }
  return "?";
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"vpc", ErrorName};
  return kDomain;
}

}  // namespace paddock::vpc
