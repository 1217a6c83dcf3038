// ecs/service/breaker: the deployment circuit breaker's settings, typed, and the failure
// threshold they give (docs/contracts/service.md, "Circuit breaker").
//
// DeploymentConfiguration.deploymentCircuitBreaker is {enable, rollback} plus, since AWS's
// configurable circuit breaker (July 2026; botocore 1.43.67's model, embedded through
// tools/model_overlays/ecs.json), `resetOnHealthyTask` (default true: a task of the deployment
// reaching a healthy state resets the failure count — the "consecutive" model; false: failures add
// up over the whole deployment — "cumulative") and `thresholdConfiguration` {type, value} (default
// BOUNDED_PERCENT 50: half the desired count, rounded up, within 3..200).
//
//   ASSIGN_OR_RETURN(CircuitBreakerSettings cb, ParseCircuitBreaker(dc_json["deploymentCircuitBreaker"]));
//   int64_t threshold = FailureThreshold(desired_count, cb.threshold);
#pragma once

#include <algorithm>
#include <cstdint>

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::ecs::service {

// ThresholdConfiguration.type.
enum class ThresholdType { kBoundedPercent, kUnboundedPercent, kCount };

struct FailureThresholdConfig {
  ThresholdType type = ThresholdType::kBoundedPercent;
  int64_t value = 50;  // a percentage of the desired count, or (kCount) the threshold itself
};

struct CircuitBreakerSettings {
  bool enable = false;
  bool rollback = false;
  bool reset_on_healthy_task = true;
  FailureThresholdConfig threshold;
};

// How many counted failures fail a deployment of `desired` tasks: BOUNDED_PERCENT
// ceil(desired × value / 100) within [3, 200] (AWS's documented formula for the default 50);
// UNBOUNDED_PERCENT the same without the bounds but at least 1 (Paddock's floor: a threshold of 0
// would fail a deployment before anything failed); COUNT the value.
inline int64_t FailureThreshold(int64_t desired, const FailureThresholdConfig& c) {
  const int64_t percent = (std::max<int64_t>(desired, 0) * c.value + 99) / 100;
  switch (c.type) {
    case ThresholdType::kBoundedPercent:
      return std::clamp<int64_t>(percent, 3, 200);
    case ThresholdType::kUnboundedPercent:
      return std::max<int64_t>(percent, 1);
    case ThresholdType::kCount:
      return c.value;
  }
  return std::clamp<int64_t>(percent, 3, 200);
}

// Reads a deploymentCircuitBreaker object (as the model admitted it, or as a record stores it):
// missing members take AWS's defaults. kInvalidArgument (InvalidParameterException, Paddock's
// texts — AWS publishes none) for a thresholdConfiguration value below 1, or above 100 for
// BOUNDED_PERCENT.
StatusOr<CircuitBreakerSettings> ParseCircuitBreaker(const boost::json::object& o);

}  // namespace paddock::ecs::service
