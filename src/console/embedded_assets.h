// The console's built files (src/console/web → esbuild → the build's console/web/dist), embedded
// by cmake/embed.cmake (src/console/CMakeLists.txt). The .gz ones are `gzip -9 -n` of the others.
#pragma once

#include <string_view>

namespace paddock::console {

std::string_view ConsoleIndexHtml();
std::string_view ConsoleAppJs();
std::string_view ConsoleAppJsGz();
std::string_view ConsoleAppCss();
std::string_view ConsoleAppCssGz();

}  // namespace paddock::console
