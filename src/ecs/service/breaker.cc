#include "ecs/service/breaker.h"

#include <fmt/format.h>

#include "common/json_fields.h"
#include "ecs/common/records.h"

namespace paddock::ecs::service {

StatusOr<CircuitBreakerSettings> ParseCircuitBreaker(const boost::json::object& o) {
  CircuitBreakerSettings s;
  s.enable = json_fields::Bool(o, "enable").value_or(false);
  s.rollback = json_fields::Bool(o, "rollback").value_or(false);
  s.reset_on_healthy_task = json_fields::Bool(o, "resetOnHealthyTask").value_or(true);
  const boost::json::object& t = json_fields::Obj(o, "thresholdConfiguration");
  if (t.empty()) return s;
  const std::string type = json_fields::OptStr(t, "type").value_or("BOUNDED_PERCENT");
  if (type == "COUNT") {
    s.threshold.type = ThresholdType::kCount;
  } else if (type == "UNBOUNDED_PERCENT") {
    s.threshold.type = ThresholdType::kUnboundedPercent;
  } else {
    s.threshold.type = ThresholdType::kBoundedPercent;
  }
  s.threshold.value = json_fields::Int(t, "value").value_or(50);
  if (s.threshold.value < 1)
    return ParamError(fmt::format(
        "deploymentCircuitBreaker.thresholdConfiguration.value must be at least 1, but was {}.", s.threshold.value));
  if (s.threshold.type == ThresholdType::kBoundedPercent && s.threshold.value > 100)
    return ParamError(fmt::format(
        "deploymentCircuitBreaker.thresholdConfiguration.value must be between 1 and 100 for BOUNDED_PERCENT, but "
        "was {}.",
        s.threshold.value));
  return s;
}

}  // namespace paddock::ecs::service
