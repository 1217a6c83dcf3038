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
  ~QueryModel();

  std::vector<std::string> OperationNames() const;  // sorted
  bool HasOperation(std::string_view op) const;

  // The input of `op` from `params`; parameters the shape does not define are ignored. A
  // validation failure is kInvalidArgument with AWS's message and Parse's `validation` detail;
  // Internal when the model has no `op`.
  StatusOr<boost::json::object> Decode(std::string_view op, const QueryParams& params) const;

  // The HTTP status the model gives error code `code` ("NoSuchEntity" -> 404), if it names one.
  std::optional<int> ErrorStatus(std::string_view code) const;

 private:
  class Impl;
  explicit QueryModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::aws
