// The API front's test model: a frozen subset of botocore's ECS model (the input shapes of the
// operations aws/'s tests and fuzzers call), embedded by aws/CMakeLists.txt into those targets
// only. The real ECS model belongs to the ECS adapter (ecs/api/models/models.h).
#pragma once

#include <cstdlib>
#include <string_view>
#include <utility>

#include "aws/model.h"

namespace paddock::aws::testdata {

// testdata/ecs-subset.json's bytes.
std::string_view TestModelJson();

// TestModelJson(), parsed once on first use. Thread-safe.
inline const ServiceModel& TestServiceModel() {
  static const ServiceModel* model = [] {
    auto parsed = ServiceModel::Parse(TestModelJson());
    if (!parsed.ok()) std::abort();  // embedded in the test binary: a build defect
    return std::move(parsed).value().release();
  }();
  return *model;
}

}  // namespace paddock::aws::testdata
