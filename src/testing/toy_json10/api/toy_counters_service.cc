#include "testing/toy_json10/api/toy_counters_service.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>

#include "aws/model.h"
#include "testing/toy_json10/api/models/toy_counters_model.h"

namespace paddock::toyjson10::api {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {"AddToCounter", "GetCounter"};


}  // namespace

const aws::ServiceModel& ToyCountersService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(ToyCountersModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool ToyCountersService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> ToyCountersService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

// The toy's error table, as its model's error shapes name them: its owner's failures, and the
// model's validation failures (InvalidArgument without a detail). The front's own failures
// (signature, routing, decoding: aws::Error) keep their names.
std::optional<aws::AwsError> ToyCountersService::ErrorFor(const Status& status) const {
  if (IsError(status, Error::kCounterNotFound)) return aws::AwsError{"CounterNotFoundException", 400};
  if (status.code() == StatusCode::kInvalidArgument && status.detail().domain() == nullptr)
    return aws::AwsError{"ValidationException", 400};
  return std::nullopt;
}

StatusOr<std::string> ToyCountersService::Call(const aws::CallContext& ctx, json::object& input) {
  // The model made Name a present string of the right length and Amount an integer in range.
  const std::string name(input.at("Name").as_string());
  if (ctx.action == "AddToCounter")
    return json::serialize(json::object{{"Value", counters_.Add(ctx.scope, name, input.at("Amount").as_int64())}});
  ASSIGN_OR_RETURN(int64_t value, counters_.Get(ctx.scope, name));
  return json::serialize(json::object{{"Name", name}, {"Value", value}});
}

}  // namespace paddock::toyjson10::api
