// The REST-JSON toy's adapter (signing name "toyfiles", model api/models/toyfiles-2026-12-01.json):
// files under "/buckets/{Bucket}/files/{Key+}" — a path label, a greedy label, query members,
// a header, a prefixed-header map, body members and response codes 201/204. Like every
// adapter it reads the front's validated input (labels, query, headers and body already merged
// by member name), calls its owner with typed values, encodes the answer and names the owner's
// failures with its service's AWS error types (kErrors). Registered by one line:
//
//   toyrest::api::ToyFilesService files(owner);
//   front.AddRestJsonService(&files);
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "aws/rest_json.h"
#include "testing/toy_rest/files.h"

namespace paddock::toyrest::api {

class ToyFilesService final : public aws::RestJsonService {
 public:
  // `files` must outlive the service.
  explicit ToyFilesService(Files& files) : files_(files) {}

  std::string_view SigningName() const override { return "toyfiles"; }
  // The embedded model, parsed once; aborts if it does not parse (it is part of the binary).
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;
  // "toyfiles:<Action>" on "arn:aws:toyfiles:<region>:<account>:bucket/<Bucket>".
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;

 private:
  Files& files_;
};

}  // namespace paddock::toyrest::api
