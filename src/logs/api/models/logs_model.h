// CloudWatch Logs' botocore model, the slice Paddock serves (logs-2014-03-28.json, cut by
// tools/gen_model_slice.py), embedded by cmake/embed.cmake as ECS's and STS's are.
#pragma once

#include <string_view>

namespace paddock::logs::api {

std::string_view LogsModelJson();

}  // namespace paddock::logs::api
