// Query-protocol parameters decoded into a JSON document by the service model's input shape,
// with AWS's Query validation (sts/, and iam/ may reuse it): "Tags.member.1.Key=k" becomes
// {"Tags": [{"Key": "k"}]}, integers become numbers, and every member is checked against the
// model's required list, length and value ranges and regular-expression patterns, failing with
// ValidationError and AWS's text:
//   1 validation error detected: Value 'x' at 'roleSessionName' failed to satisfy constraint:
//   Member must have length greater than or equal to 2
//
//   ASSIGN_OR_RETURN(auto model, QueryModel::Parse(StsModelJson()));
//   ASSIGN_OR_RETURN(boost::json::object in, model->Decode("AssumeRole", params));
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/service.h"
#include "common/status.h"

namespace paddock::sts {

class QueryModel {
 public:
  // Fails (InvalidArgument) when `model_json` is not a botocore service model.
  static StatusOr<std::unique_ptr<QueryModel>> Parse(std::string_view model_json);
  ~QueryModel();

  std::vector<std::string> OperationNames() const;
  bool HasOperation(std::string_view op) const;

  // The input of `op` from `params`; parameters the shape does not define are ignored.
  // REQUIRES: HasOperation(op).
  StatusOr<boost::json::object> Decode(std::string_view op, const aws::QueryParams& params) const;

 private:
  class Impl;
  explicit QueryModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::sts
