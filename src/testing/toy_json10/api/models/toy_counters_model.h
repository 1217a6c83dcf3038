// The JSON 1.0 toy's botocore-style model (toycounters-2026-12-01.json), embedded by
// cmake/embed.cmake.
#pragma once

#include <string_view>

namespace paddock::toyjson10::api {

std::string_view ToyCountersModelJson();

}  // namespace paddock::toyjson10::api
