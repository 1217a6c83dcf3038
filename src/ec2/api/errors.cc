#include "ec2/api/errors.h"

#include <array>
#include <string>

#include "vpc/errors.h"

namespace paddock::ec2 {
namespace {

struct Row {
  Error error;
  std::string_view name;  // for logs
  std::string_view type;  // EC2's code
};

// Every ec2::Error, once. EC2 answers each with HTTP 400 (DryRunOperation too, as Paddock always
// has; EC2 itself answers it with 412).
constexpr std::array kTable{
    Row{Error::kInvalidParameterValue, "InvalidParameterValue", "InvalidParameterValue"},
    Row{Error::kMissingParameter, "MissingParameter", "MissingParameter"},
    Row{Error::kInvalidParameterCombination, "InvalidParameterCombination", "InvalidParameterCombination"},
    Row{Error::kInvalidNextToken, "InvalidNextToken", "InvalidNextToken"},
    Row{Error::kVpcNotFound, "VpcNotFound", "InvalidVpcID.NotFound"},
    Row{Error::kSubnetNotFound, "SubnetNotFound", "InvalidSubnetID.NotFound"},
    Row{Error::kInstanceIdMalformed, "InstanceIdMalformed", "InvalidInstanceID.Malformed"},
    Row{Error::kInstanceNotFound, "InstanceNotFound", "InvalidInstanceID.NotFound"},
    Row{Error::kDryRunOperation, "DryRunOperation", "DryRunOperation"},
};

// Every vpc::Error (the security-group and IPAM owners' failures), once, with EC2's code; HTTP
// 400 as well.
struct VpcRow {
  vpc::Error error;
  std::string_view type;
};
constexpr std::array kVpcTable{
    VpcRow{vpc::Error::kInvalidParameterValue, "InvalidParameterValue"},
    VpcRow{vpc::Error::kMissingParameter, "MissingParameter"},
    VpcRow{vpc::Error::kInvalidNextToken, "InvalidNextToken"},
    VpcRow{vpc::Error::kVpcNotFound, "InvalidVpcID.NotFound"},
    VpcRow{vpc::Error::kGroupNotFound, "InvalidGroup.NotFound"},
    VpcRow{vpc::Error::kGroupIdMalformed, "InvalidGroupId.Malformed"},
    VpcRow{vpc::Error::kGroupNameReserved, "InvalidGroup.Reserved"},
    VpcRow{vpc::Error::kGroupDuplicate, "InvalidGroup.Duplicate"},
    VpcRow{vpc::Error::kGroupLimitExceeded, "SecurityGroupLimitExceeded"},
    VpcRow{vpc::Error::kCannotDelete, "CannotDelete"},
    VpcRow{vpc::Error::kDependencyViolation, "DependencyViolation"},
    VpcRow{vpc::Error::kRuleNotFound, "InvalidSecurityGroupRuleId.NotFound"},
    VpcRow{vpc::Error::kRuleIdMalformed, "InvalidSecurityGroupRuleId.Malformed"},
    VpcRow{vpc::Error::kRuleDuplicate, "InvalidPermission.Duplicate"},
    VpcRow{vpc::Error::kRuleMalformed, "InvalidPermission.Malformed"},
    VpcRow{vpc::Error::kRuleLimitExceeded, "RulesPerSecurityGroupLimitExceeded"},
    VpcRow{vpc::Error::kPrefixListNotFound, "InvalidPrefixListID.NotFound"},
    VpcRow{vpc::Error::kTagLimitExceeded, "TagLimitExceeded"},
};

const Row* Find(Error e) {
  for (const Row& r : kTable)
    if (r.error == e) return &r;
  return nullptr;
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"ec2", [](int code) -> std::string_view {
                                         const Row* r = Find(static_cast<Error>(code));
                                         return r ? r->name : "?";
                                       }};
  return kDomain;
}

std::optional<aws::AwsError> Ec2ErrorFor(const Status& status) {
  if (status.code() == StatusCode::kPermissionDenied) return aws::AwsError{"UnauthorizedOperation", 403};
  if (std::optional<vpc::Error> v = status.detail().As<vpc::Error>()) {
    for (const VpcRow& r : kVpcTable)
      if (r.error == *v) return aws::AwsError{std::string(r.type), 400};
    return std::nullopt;
  }
  std::optional<Error> e = status.detail().As<Error>();
  const Row* r = e ? Find(*e) : nullptr;
  if (r == nullptr) return std::nullopt;
  return aws::AwsError{std::string(r->type), 400};
}

}  // namespace paddock::ec2
