// The dashboard as the API entry point serves it (through ServeApi, as the edge does): its paths,
// Traefik's redirect of /, the headers that keep a tenant's label from ever running as script, and
// a static guard that the script writes data as text only. What the page shows, rendered by a real
// browser, is tests/test_edge_dashboard.py.
#include "edge/dashboard.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "edge/api.h"

namespace paddock::edge {
namespace {

http::Response Get(std::string target, std::string method = "GET", std::string host = "127.0.0.1:8081") {
  http::Request r{std::move(method), std::move(target), {}, {}, {}};
  if (!host.empty()) r.headers.push_back({"Host", std::move(host)});
  return ServeApi(ApiView{}, r);
}

size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(DashboardTest, ServesThePageItsScriptAndItsStyleUnderAPolicyThatAllowsNoInlineScript) {
  const struct {
    std::string_view target, type, body;
  } cases[] = {{"/dashboard/", "text/html; charset=utf-8", DashboardHtml()},
               {"/dashboard/app.js", "text/javascript; charset=utf-8", DashboardScript()},
               {"/dashboard/app.css", "text/css; charset=utf-8", DashboardStyle()}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.target);
    const http::Response r = Get(std::string(c.target));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.GetHeader("Content-Type"), c.type);
    EXPECT_EQ(r.GetHeader("X-Content-Type-Options"), "nosniff");
    const std::string_view policy = r.GetHeader("Content-Security-Policy");
    EXPECT_NE(policy.find("default-src 'none'"), std::string_view::npos) << policy;
    EXPECT_NE(policy.find("script-src 'self';"), std::string_view::npos) << policy;
    EXPECT_EQ(policy.find("unsafe"), std::string_view::npos) << policy;
    EXPECT_NE(policy.find("frame-ancestors 'none'"), std::string_view::npos) << policy;
    EXPECT_EQ(r.body, c.body);
    EXPECT_FALSE(r.body.empty());
  }
  // HEAD: the headers, no body.
  const http::Response head = Get("/dashboard/", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.GetHeader("Content-Type"), "text/html; charset=utf-8");
  EXPECT_TRUE(head.body.empty());
}

TEST(DashboardTest, ThePageLoadsOnlyItsOwnScriptAndStyleAndHasNothingInline) {
  const std::string_view html = DashboardHtml();
  EXPECT_EQ(Count(html, "<script"), 1u);
  EXPECT_EQ(Count(html, "<script src=\"/dashboard/app.js\" defer></script>"), 1u);
  EXPECT_EQ(Count(html, "<style"), 0u);
  EXPECT_EQ(Count(html, "style="), 0u);
  EXPECT_EQ(Count(html, " on"), 0u) << "no inline event handler";
  EXPECT_EQ(Count(html, "//"), 0u) << "nothing from another origin";
  EXPECT_EQ(Count(DashboardStyle(), "url("), 0u);
  EXPECT_EQ(Count(DashboardStyle(), "@import"), 0u);
}

// The script never turns data into markup: no HTML sinks, no code from strings, no attribute
// written from data (class names come from fixed tables).
TEST(DashboardTest, TheScriptWritesDataAsTextOnly) {
  const std::string_view js = DashboardScript();
  for (std::string_view sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                                "Function(", "setAttribute('on", "srcdoc", "createContextualFragment",
                                "DOMParser", ".href", ".src"}) {
    EXPECT_EQ(Count(js, sink), 0u) << sink;
  }
  EXPECT_EQ(Count(js, "setAttribute("), 2u) << "only data-state, to fixed values";
  EXPECT_EQ(Count(js, "setAttribute('data-state', 'ready')"), 1u);
  EXPECT_EQ(Count(js, "setAttribute('data-state', 'error')"), 1u);
  EXPECT_GT(Count(js, ".textContent = "), 0u);
  // It reads every list the page shows, by page, and refreshes.
  for (std::string_view read : {"'/api/overview'", "'/api/http/routers'", "'/api/http/services'",
                                "'/api/http/middlewares'", "'/api/paddock/drains'", "X-Next-Page",
                                "setTimeout(refresh"}) {
    EXPECT_GE(Count(js, read), 1u) << read;
  }
}

TEST(DashboardTest, TheRootRedirectsAsTraefiksDashboardRouterDoes) {
  http::Response r = Get("/");
  EXPECT_EQ(r.status, 301);
  EXPECT_EQ(r.GetHeader("Location"), "http://127.0.0.1:8081/dashboard/");
  EXPECT_EQ(r.body, "Moved Permanently");

  r = Get("/", "POST", "[::1]:8081");
  EXPECT_EQ(r.status, 308);
  EXPECT_EQ(r.GetHeader("Location"), "http://[::1]:8081/dashboard/");
  EXPECT_EQ(r.body, "Permanent Redirect");

  r = Get("/", "HEAD", "edge.example");
  EXPECT_EQ(r.status, 308);  // Traefik: only GET gets 301
  EXPECT_EQ(r.GetHeader("Location"), "http://edge.example/dashboard/");
  EXPECT_TRUE(r.body.empty());

  // Traefik's regex matches neither a query nor a Host beyond host[:port]: the page is served there.
  for (const auto& [target, host] : {std::pair<std::string, std::string>{"/?x=1", "127.0.0.1:8081"},
                                     {"/", "evil.example/x"},
                                     {"/", "a b"},
                                     {"/", ""},
                                     {"/", "host:"}}) {
    SCOPED_TRACE(target + " Host: " + host);
    r = Get(target, "GET", host);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.GetHeader("Location"), "");
    EXPECT_EQ(r.body, DashboardHtml());
  }
}

TEST(DashboardTest, WithoutTheSlashIsThePageTooAsTraefiksStripPrefixLeavesIt) {
  const http::Response r = Get("/dashboard");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, DashboardHtml());
}

TEST(DashboardTest, OtherPathsAreNotFoundAndOtherMethodsRefused) {
  for (std::string target : {"/dashboard/index.html", "/dashboardx", "/dashboard/app.js/", "/favicon.ico",
                             "/dashboard/../api/overview"}) {
    SCOPED_TRACE(target);
    const http::Response r = Get(target);
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(r.body, "404 page not found\n");
  }
  for (std::string target : {"/dashboard/", "/dashboard/app.js"}) {
    const http::Response r = Get(target, "POST");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.GetHeader("Allow"), "GET, HEAD");
    EXPECT_TRUE(r.body.empty());
  }
  // The API beside it is unchanged.
  EXPECT_EQ(Get("/api/overview").status, 200);
  EXPECT_EQ(Get("/ping").body, "OK");
}

}  // namespace
}  // namespace paddock::edge
