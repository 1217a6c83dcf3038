#include "console/assets.h"

#include <string>

#include <fmt/format.h>

#include "common/encoding.h"
#include "console/embedded_assets.h"

namespace paddock::console {
namespace {

constexpr std::string_view kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct Asset {
  std::string_view content_type;
  std::string_view body;
  std::string_view gzipped;  // empty: served as it is
  std::string etag;
};

const Asset* Find(std::string_view path) {
  static const Asset index{"text/html; charset=utf-8", ConsoleIndexHtml(), {},
                           fmt::format("\"{:016x}\"", Fnv1a64(ConsoleIndexHtml()))};
  static const Asset js{"text/javascript; charset=utf-8", ConsoleAppJs(), ConsoleAppJsGz(),
                        fmt::format("\"{:016x}\"", Fnv1a64(ConsoleAppJs()))};
  static const Asset css{"text/css; charset=utf-8", ConsoleAppCss(), ConsoleAppCssGz(),
                         fmt::format("\"{:016x}\"", Fnv1a64(ConsoleAppCss()))};
  if (path == "/console" || path == "/console/" || path == "/console/index.html") return &index;
  if (path == "/console/app.js") return &js;
  if (path == "/console/app.css") return &css;
  return nullptr;
}

bool TakesGzip(std::string_view accept_encoding) {
  // "gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.8": gzip named, and not with q=0.
  size_t at = accept_encoding.find("gzip");
  if (at == std::string_view::npos) return false;
  std::string_view rest = accept_encoding.substr(at + 4);
  rest = rest.substr(0, rest.find(','));
  return rest.find("q=0") == std::string_view::npos || rest.find("q=0.") != std::string_view::npos;
}

void Secure(http::Response& r) {
  r.SetHeader("Content-Security-Policy", std::string(kPolicy));
  r.SetHeader("X-Content-Type-Options", "nosniff");
  r.SetHeader("X-Frame-Options", "DENY");
  r.SetHeader("Referrer-Policy", "no-referrer");
  r.SetHeader("Cross-Origin-Opener-Policy", "same-origin");
  r.SetHeader("Cross-Origin-Resource-Policy", "same-origin");
}

http::Response Text(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  r.SetHeader("Content-Type", "text/plain; charset=utf-8");
  Secure(r);
  return r;
}

}  // namespace

std::optional<http::Response> ServeConsole(const http::Request& req) {
  const std::string_view path = req.Path();
  if (path == "/" && req.method == "GET" && req.Query().empty() && !req.HasHeader("Authorization") &&
      !req.HasHeader("X-Amz-Target") && req.GetHeader("Accept").find("text/html") != std::string_view::npos) {
    http::Response r = Text(302, "The console is at /console/\n");
    r.SetHeader("Location", "/console/");
    return r;
  }
  if (path != "/console" && !path.starts_with("/console/")) return std::nullopt;
  if (req.method != "GET" && req.method != "HEAD") {
    http::Response r = Text(405, "The console's files are read with GET.\n");
    r.SetHeader("Allow", "GET, HEAD");
    return r;
  }
  const Asset* asset = Find(path);
  if (asset == nullptr) return Text(404, "No such file in the console.\n");
  http::Response r;
  r.SetHeader("Content-Type", std::string(asset->content_type));
  r.SetHeader("Cache-Control", "no-cache");
  r.SetHeader("ETag", asset->etag);
  r.SetHeader("Vary", "Accept-Encoding");
  Secure(r);
  if (req.GetHeader("If-None-Match") == asset->etag) {
    r.status = 304;
    return r;
  }
  if (!asset->gzipped.empty() && TakesGzip(req.GetHeader("Accept-Encoding"))) {
    r.SetHeader("Content-Encoding", "gzip");
    r.body = std::string(asset->gzipped);
  } else {
    r.body = std::string(asset->body);
  }
  return r;  // for HEAD the server sends the headers only
}

}  // namespace paddock::console
