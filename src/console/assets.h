// console/assets: the console's files, built from src/console/web by esbuild and embedded in the
// binary (no CDN, nothing fetched at run time), served on the API port:
//
//   /console, /console/, /console/index.html   the page
//   /console/app.js, /console/app.css          its script and style (gzip when the browser takes it)
//   GET / from a browser (Accept: text/html, no signature, no query)   302 to /console/
//
// Every answer carries a strict Content-Security-Policy (only the console's own script and style,
// connections only to this origin, no frames), nosniff, no referrer, and an ETag for revalidation.
// The console's API calls are signed in the browser (SigV4): no cookie, so nothing a cross-site
// page can ride on.
#pragma once

#include <optional>
#include <string_view>

#include "http/message.h"

namespace paddock::console {

// The console's answer to `req`, or nullopt when it is not the console's (an API call).
std::optional<http::Response> ServeConsole(const http::Request& req);

}  // namespace paddock::console
