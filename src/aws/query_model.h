// The Query protocol's input decoder (IAM, STS): parameters decoded into a JSON document by the
// botocore service model's input shape, with AWS's Query validation. "Tags.member.1.Key=k"
// becomes {"Tags": [{"Key": "k"}]}, integers and longs become numbers, booleans booleans, and
// every member is checked against the model's required list, lengths, value ranges, enums and
// regular-expression patterns, all errors at once, in AWS's text:
//   1 validation error detected: Value 'x' at 'roleSessionName' failed to satisfy constraint:
//   Member must have length greater than or equal to 2
//
//   ASSIGN_OR_RETURN(auto model, aws::QueryModel::Parse(StsModelJson(), sts::Error::kValidation));
//   ASSIGN_OR_RETURN(boost::json::object in, model->Decode("AssumeRole", params));
//
// EC2 speaks a flavour of its own (botocore protocol "ec2", Smithy's awsEc2Query), read by a
// model made with ParseEc2: a member's parameter is its queryName, else its locationName
// capitalized, else its member name ("GroupDescription" for CreateSecurityGroup's Description);
// a list's elements are "Name.1", "Name.2" (no ".member."); and EC2 answers one error, in its own
// words: a required member absent is "The request must contain the parameter GroupDescription"
// (the `missing` detail, EC2's MissingParameter); a value that is not an integer (32 bits for
// "integer") or a boolean, or a number out of the model's range, is "Invalid value 'x' for
// FromPort" or "Value ( 1 ) for parameter maxResults is invalid. ..." (the `invalid` detail,
// InvalidParameterValue). String lengths, enums and patterns are left to the service, which
// answers them in EC2's words.
//
// Patterns: Java's \p{L}, \p{Z} and \p{N} (the models use them inside [...]) are read as their
// ASCII members, and only ASCII values of at most 2,048 bytes are matched (std::regex recurses per
// character); a pattern std::regex cannot read is left to the service's own checks. A value shown
// in a message is cut at 256 bytes ("...").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/service.h"
#include "common/status.h"

namespace paddock::aws {

class QueryModel {
 public:
  // Fails (InvalidArgument) when `model_json` is not a botocore service model. `validation` is the
  // error detail Decode's validation failures carry (the service's ValidationError).
  static StatusOr<std::unique_ptr<QueryModel>> Parse(std::string_view model_json, ErrorDetail validation = {});
  // The ec2 flavour (above). `missing` and `invalid` are the details its two kinds of failure carry.
  struct Ec2Errors {
    ErrorDetail missing;
    ErrorDetail invalid;
  };
  static StatusOr<std::unique_ptr<QueryModel>> ParseEc2(std::string_view model_json, Ec2Errors errors);
  ~QueryModel();

  std::vector<std::string> OperationNames() const;  // sorted
  bool HasOperation(std::string_view op) const;

  // The input of `op` from `params`, keyed by the model's member names; parameters the shape does
  // not define are ignored. A validation failure is kInvalidArgument with AWS's message and
  // Parse's `validation` detail (ParseEc2's: one failure, `missing` or `invalid`); Internal when
  // the model has no `op`.
  StatusOr<boost::json::object> Decode(std::string_view op, const QueryParams& params) const;

  // The HTTP status the model gives error code `code` ("NoSuchEntity" -> 404), if it names one.
  std::optional<int> ErrorStatus(std::string_view code) const;

 private:
  class Impl;
  explicit QueryModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::aws
