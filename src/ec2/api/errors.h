// ec2/api/errors: EC2's error vocabulary and its table — the code each ec2::Error detail is
// answered with. The only place the Query adapter's own AWS error names are written; EC2 answers
// each of them with HTTP 400, and a denial with UnauthorizedOperation, HTTP 403.
//
//   return internal::Ec2Error(Error::kInvalidNextToken, "The provided NextToken is not valid.");
//   Ec2ErrorFor(s)  // {"InvalidNextToken", 400}
//
// The table maps the VPC owners' details (vpc::Error: security groups, IPAM) as well, also with
// HTTP 400.
#pragma once

#include <optional>
#include <string_view>

#include "aws/errors.h"
#include "common/status.h"

namespace paddock::ec2 {

enum class Error {
  kInvalidParameterValue = 1,    // InvalidParameterValue
  kMissingParameter,             // MissingParameter
  kInvalidParameterCombination,  // InvalidParameterCombination
  kInvalidNextToken,             // InvalidNextToken
  kVpcNotFound,                  // InvalidVpcID.NotFound
  kSubnetNotFound,               // InvalidSubnetID.NotFound
  kInstanceIdMalformed,          // InvalidInstanceID.Malformed
  kInstanceNotFound,             // InvalidInstanceID.NotFound
  kDryRunOperation,              // DryRunOperation: the change would have succeeded
};
const ErrorDomain& ErrorDomainOf(Error);

// The EC2 code and HTTP status of `status`'s ec2::Error or vpc::Error detail, and
// UnauthorizedOperation (403) for any denial (kPermissionDenied: the authorizer's, worded in
// aws::DenialForm::kUnauthorizedOperation); nullopt for any other failure, which the front answers
// with aws::AwsErrorFor in the Query dialect.
std::optional<aws::AwsError> Ec2ErrorFor(const Status& status);

}  // namespace paddock::ec2
