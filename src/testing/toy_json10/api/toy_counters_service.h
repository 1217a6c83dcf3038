// The JSON 1.0 toy's adapter (X-Amz-Target "ToyCounters_20261201.<Action>", signing name
// "toycounters"; its model says "jsonVersion": "1.0", so the front answers with
// application/x-amz-json-1.0 and full shape IDs in "__type": aws/json_version.h). Registered
// by one line, as every JSON service is:
//
//   toyjson10::api::ToyCountersService counters(owner);
//   front.AddJsonService(&counters);
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "aws/service.h"
#include "testing/toy_json10/counters.h"

namespace paddock::toyjson10::api {

class ToyCountersService final : public aws::JsonService {
 public:
  // `counters` must outlive the service.
  explicit ToyCountersService(Counters& counters) : counters_(counters) {}

  std::string_view TargetPrefix() const override { return "ToyCounters_20261201"; }
  std::string_view SigningName() const override { return "toycounters"; }
  // The embedded model, parsed once; aborts if it does not parse (it is part of the binary).
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;
  std::string_view ErrorNamespace() const override { return "com.paddock.toycounters.v20261201"; }

 private:
  Counters& counters_;
};

}  // namespace paddock::toyjson10::api
