// The toy service's adapter (JSON 1.1, X-Amz-Target "ToyNotes_20261201.<Action>", signing name
// "toy"): PutNote and GetNote over toy::Notes. Like every adapter it decodes the front's
// validated input, calls its owner with typed values, encodes the answer, and names the owner's
// failures with its own service's AWS error types (ErrorFor, over toy::Error). Registered with
// the front by one line:
//
//   toy::api::ToyService toy(notes);
//   front.AddJsonService(&toy);
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "aws/service.h"
#include "testing/toy_service/notes.h"

namespace paddock::toy::api {

class ToyService final : public aws::JsonService {
 public:
  // `notes` must outlive the service.
  explicit ToyService(Notes& notes) : notes_(notes) {}

  std::string_view TargetPrefix() const override { return "ToyNotes_20261201"; }
  std::string_view SigningName() const override { return "toy"; }
  // The embedded model, parsed once. CHECKs that it parses: it is part of the binary.
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  // The toy's error table (toy::Error -> its AWS code).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  Notes& notes_;
};

}  // namespace paddock::toy::api
