// AWS API models embedded in the binary (botocore's service JSON, trimmed by
// tools/trim_botocore_model.py).
//
//   ASSIGN_OR_RETURN(auto model, ServiceModel::Parse(EcsModelJson()));
#pragma once

#include <string_view>

namespace paddock::aws {

// botocore's ecs/2014-11-13/service-2.json without documentation.
std::string_view EcsModelJson();

}  // namespace paddock::aws
