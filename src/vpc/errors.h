// vpc/errors: the failures the VPC owners (security groups, IPAM) name, in their own words.
//
// Owners return them on a Status; only EC2's adapter table (ec2/api/errors.cc, Ec2ErrorFor) knows
// the EC2 code each is answered with (docs/contracts/security-group.md).
//
//   return NotFound("The security group 'sg-1' does not exist", vpc::Error::kGroupNotFound);
//   if (IsError(s, vpc::Error::kDependencyViolation)) ...
#pragma once

#include "common/status.h"

namespace paddock::vpc {

enum class Error {
  kInvalidParameterValue = 1,  // a value's form or range
  kMissingParameter,           // a required value is absent
  kInvalidNextToken,           // a pagination token this owner did not issue
  kVpcNotFound,
  kGroupNotFound,              // by id or by name, or not in the caller's account
  kGroupIdMalformed,           // not "sg-" and 8 or 17 hex digits
  kGroupNameReserved,          // "default"
  kGroupDuplicate,             // a group of that name exists in the VPC
  kGroupLimitExceeded,         // groups per VPC
  kCannotDelete,               // a VPC's default group
  kDependencyViolation,        // a group a rule or a task still uses
  kRuleNotFound,
  kRuleIdMalformed,            // not "sgr-" and 8 or 17 hex digits
  kRuleDuplicate,              // the rule exists already
  kRuleMalformed,              // a rule with no peer or more than one
  kRuleLimitExceeded,          // rules per group
  kPrefixListNotFound,         // Paddock's VPCs have no prefix lists
  kTagLimitExceeded,           // tags per resource
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::vpc
