// Validation and normalization of a RegisterTaskDefinition request, with AWS's messages.
// Pure functions: no store, no clock.
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "common/status.h"
#include "ecs/common/tags.h"

namespace paddock::ecs::taskdef {

// The largest serialized task definition ECS accepts.
inline constexpr size_t kMaxDefinitionBytes = 64 * 1024;
inline constexpr size_t kMaxContainers = 10;

// Normalizes "1 vCPU" -> "1024", "0.25 vcpu" -> "256", "512" -> "512".
StatusOr<std::string> NormalizeCpu(std::string_view text);
// Normalizes "2 GB" -> "2048", "1.5GB" -> "1536", "512" -> "512", "512 MiB" -> "512".
StatusOr<std::string> NormalizeMemory(std::string_view text);

// Whether (cpu, memory) in CPU units / MiB is a Fargate task size.
bool IsFargateSize(int cpu, int memory_mib);

struct Validated {
  boost::json::object definition;  // the TaskDefinition fields from the request, normalized,
                                   // with AWS's defaults filled in (no computed fields yet)
  Tags tags;
  std::vector<std::string> compatibilities;
  boost::json::array requires_attributes;
};

// What a server may relax of ECS's registration rules.
struct RegisterRules {
  // `paddock server --short-timings` (a test mode): timing minimums lowered (value_ranges.h,
  // RangeRules::short_timings).
  bool short_timings = false;
};

// Checks a model-validated RegisterTaskDefinition input and returns the normalized definition.
// Errors are ClientException (semantic) or InvalidParameterException (a value's form).
StatusOr<Validated> ValidateRegister(boost::json::object input, const RegisterRules& rules = {});

}  // namespace paddock::ecs::taskdef
