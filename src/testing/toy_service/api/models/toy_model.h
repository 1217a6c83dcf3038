// The toy service's botocore-style model (toy-2026-12-01.json), embedded by
// cmake/embed.cmake as ECS's and STS's are.
#pragma once

#include <string_view>

namespace paddock::toy::api {

std::string_view ToyModelJson();

}  // namespace paddock::toy::api
