// SSM's botocore model, Parameter Store's slice (ssm-2014-11-06.json, cut by
// tools/gen_model_slice.py), embedded by cmake/embed.cmake as ECS's and STS's are.
#pragma once

#include <string_view>

namespace paddock::ssm::api {

std::string_view SsmModelJson();

}  // namespace paddock::ssm::api
