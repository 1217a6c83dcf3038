// Cloud Map's botocore model, the slice Paddock serves (servicediscovery-2017-03-14.json, cut by
// tools/gen_model_slice.py), embedded by cmake/embed.cmake as SSM's is.
#pragma once

#include <string_view>

namespace paddock::cloudmap::api {

std::string_view ServiceDiscoveryModelJson();

}  // namespace paddock::cloudmap::api
