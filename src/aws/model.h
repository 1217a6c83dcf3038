// A service's API model, read from botocore's service JSON (trimmed of documentation and
// embedded in the binary), and the input validation it drives: types, required members,
// ranges, lengths and enums are checked exactly as the model states them, and members the model
// does not define are dropped, so handlers only ever see well-formed input.
//
//   ASSIGN_OR_RETURN(auto model, ServiceModel::Parse(ecs::api::EcsModelJson()));  // each service embeds its own
//   boost::json::value input = ...;
//   RETURN_IF_ERROR(model->ValidateInput("RegisterTaskDefinition", input));
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "common/status.h"

namespace paddock::aws {

class ServiceModel {
 public:
  static StatusOr<std::unique_ptr<ServiceModel>> Parse(std::string_view model_json);
  ~ServiceModel();

  // Every operation name in the model ("CreateCluster", ...), sorted.
  std::vector<std::string> OperationNames() const;
  bool HasOperation(std::string_view op) const;

  // Validates `input` (the parsed request body) against the operation's input shape and drops
  // members the shape does not define. Fails with kInvalidArgument and the AWS error type and
  // message the service returns for that kind of error.
  Status ValidateInput(std::string_view op, boost::json::value& input) const;

 private:
  class Impl;
  explicit ServiceModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::aws
