// The console's own service model (paddockconsole-2026-12-04.json, botocore's format, written for
// Paddock: console/console_service.h), embedded by cmake/embed.cmake as every service's model is.
#pragma once

#include <string_view>

namespace paddock::console {

std::string_view PaddockConsoleModelJson();

}  // namespace paddock::console
