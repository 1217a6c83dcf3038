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

// The model's "metadata" members the front reads to choose a protocol.
struct ModelMetadata {
  std::string protocol;      // "json", "rest-json", "query", "ec2"
  std::string json_version;  // protocol "json": "1.0" or "1.1"
  std::string target_prefix; // protocol "json": the X-Amz-Target prefix ("DynamoDB_20120810")
  std::string signing_name;  // SigV4's service name, else the endpoint prefix
};

// How a REST protocol binds one operation to HTTP: the operation's "http" trait and, for each
// top-level member of its input shape, its "location" (botocore's spelling of Smithy's
// httpLabel, httpQuery, httpQueryParams, httpHeader and httpPrefixHeaders).
struct HttpBinding {
  enum class Location { kBody, kUri, kQueryString, kHeader, kHeaders };
  // A member shape's kind: how text from a URI, query string or header becomes a JSON value.
  enum class Kind { kString, kInteger, kBoolean, kDouble, kTimestamp, kList, kMap, kStructure, kOther };
  struct Member {
    std::string name;           // "FunctionName": the name the service reads in its input
    Location location = Location::kBody;
    // The label, query key or header name ("X-Toy-Tag"); a kHeaders map: the header prefix;
    // a kQueryString map (every other query parameter): empty. Defaults to `name`.
    std::string location_name;
    Kind kind = Kind::kString;
    Kind element = Kind::kOther;  // a list's members, a map's values
  };
  std::string operation;
  std::string method;       // "GET"
  std::string request_uri;  // "/notes/{Name}/files/{Path+}?versions"
  int response_code = 200;  // "http": {"responseCode": 201}
  std::string payload;      // the input member that is the whole body; empty: members share it
  std::vector<Member> members;
};

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

  const ModelMetadata& Metadata() const;
  // Every operation's HTTP binding, in operation-name order (REST protocols route by them).
  std::vector<HttpBinding> HttpBindings() const;
  // The member an error structure carries its message in: "Message" when the model's shape
  // `error_shape` defines that member (Lambda's errors), else "message" (Smithy's usual).
  std::string_view ErrorMessageMember(std::string_view error_shape) const;

 private:
  class Impl;
  explicit ServiceModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::aws
