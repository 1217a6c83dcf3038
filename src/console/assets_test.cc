#include "console/assets.h"

#include <gtest/gtest.h>

#include "console/embedded_assets.h"

namespace paddock::console {
namespace {

http::Request Get(std::string target, std::vector<http::Header> headers = {}) {
  http::Request r;
  r.method = "GET";
  r.target = std::move(target);
  r.headers = std::move(headers);
  return r;
}

TEST(ConsoleAssetsTest, ServesThePageItsScriptAndStyleUnderAStrictPolicy) {
  for (const char* page : {"/console", "/console/", "/console/index.html"}) {
    std::optional<http::Response> r = ServeConsole(Get(page));
    ASSERT_TRUE(r.has_value()) << page;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, ConsoleIndexHtml());
    EXPECT_EQ(r->GetHeader("Content-Type"), "text/html; charset=utf-8");
    // Only the console's own script: no inline script, no other origin, no frames.
    EXPECT_NE(r->GetHeader("Content-Security-Policy").find("script-src 'self';"), std::string_view::npos);
    EXPECT_NE(r->GetHeader("Content-Security-Policy").find("frame-ancestors 'none'"), std::string_view::npos);
    EXPECT_EQ(r->GetHeader("X-Content-Type-Options"), "nosniff");
  }
  std::optional<http::Response> js = ServeConsole(Get("/console/app.js"));
  ASSERT_TRUE(js.has_value());
  EXPECT_EQ(js->body, ConsoleAppJs());
  EXPECT_EQ(js->GetHeader("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_FALSE(ConsoleAppJs().empty());
  std::optional<http::Response> css = ServeConsole(Get("/console/app.css"));
  ASSERT_TRUE(css.has_value());
  EXPECT_EQ(css->body, ConsoleAppCss());
}

TEST(ConsoleAssetsTest, GzipOnlyForABrowserThatTakesIt) {
  std::optional<http::Response> gz = ServeConsole(Get("/console/app.js", {{"Accept-Encoding", "gzip, deflate, br"}}));
  ASSERT_TRUE(gz.has_value());
  EXPECT_EQ(gz->GetHeader("Content-Encoding"), "gzip");
  EXPECT_EQ(gz->body, ConsoleAppJsGz());
  EXPECT_LT(gz->body.size(), ConsoleAppJs().size());
  std::optional<http::Response> refused = ServeConsole(Get("/console/app.js", {{"Accept-Encoding", "gzip;q=0"}}));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->GetHeader("Content-Encoding"), "");
  EXPECT_EQ(refused->body, ConsoleAppJs());
}

TEST(ConsoleAssetsTest, AnUnchangedFileIsRevalidatedByItsETag) {
  std::optional<http::Response> first = ServeConsole(Get("/console/app.js"));
  ASSERT_TRUE(first.has_value());
  const std::string etag(first->GetHeader("ETag"));
  ASSERT_FALSE(etag.empty());
  std::optional<http::Response> again = ServeConsole(Get("/console/app.js", {{"If-None-Match", etag}}));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
}

TEST(ConsoleAssetsTest, OtherPathsAndMethods) {
  EXPECT_FALSE(ServeConsole(Get("/")).has_value()) << "an API client's GET / is the API's";
  EXPECT_FALSE(ServeConsole(Get("/consoles")).has_value());
  EXPECT_FALSE(ServeConsole(Get("/?Action=DescribeVpcs", {{"Accept", "text/html"}})).has_value());
  std::optional<http::Response> browser = ServeConsole(Get("/", {{"Accept", "text/html,application/xhtml+xml"}}));
  ASSERT_TRUE(browser.has_value());
  EXPECT_EQ(browser->status, 302);
  EXPECT_EQ(browser->GetHeader("Location"), "/console/");
  std::optional<http::Response> missing = ServeConsole(Get("/console/../state.db"));
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status, 404);
  http::Request post = Get("/console/");
  post.method = "POST";
  std::optional<http::Response> refused = ServeConsole(post);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 405);
}

}  // namespace
}  // namespace paddock::console
