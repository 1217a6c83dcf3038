// AWS API models embedded in the binary (botocore's service JSON, trimmed by
// tools/trim_botocore_model.py).
//
//   const ServiceModel& ecs = EcsServiceModel();
#pragma once

#include <string_view>

namespace paddock::aws {

class ServiceModel;

// botocore's ecs/2014-11-13/service-2.json without documentation.
std::string_view EcsModelJson();

// EcsModelJson(), parsed once on first use. Thread-safe.
const ServiceModel& EcsServiceModel();

}  // namespace paddock::aws
