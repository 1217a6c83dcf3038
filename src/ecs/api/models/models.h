// ECS's API model embedded in the binary: botocore's ecs/2014-11-13/service-2.json without
// documentation (tools/trim_botocore_model.py), embedded by ecs/api/CMakeLists.txt.
//
//   ASSIGN_OR_RETURN(auto model, aws::ServiceModel::Parse(ecs::api::EcsModelJson()));
#pragma once

#include <string_view>

namespace paddock::ecs::api {

std::string_view EcsModelJson();

}  // namespace paddock::ecs::api
