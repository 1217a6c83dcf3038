// The REST-JSON toy's botocore-style model (toyfiles-2026-12-01.json), embedded by
// cmake/embed.cmake.
#pragma once

#include <string_view>

namespace paddock::toyrest::api {

std::string_view ToyFilesModelJson();

}  // namespace paddock::toyrest::api
