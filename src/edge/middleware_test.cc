// The middlewares' behaviour as Traefik v3 shows it: for each, a table of requests and what goes
// on (the rewritten path and headers) or the exact answer, then the configurations refused.
#include "edge/middleware.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <variant>

#include <boost/json/parse.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>

namespace paddock::edge {

bool operator==(const Answer& a, const Answer& b) {
  return a.status == b.status && a.headers == b.headers && a.body == b.body;
}

void PrintTo(const Answer& a, std::ostream* os) {
  *os << a.status << " {";
  for (const auto& [n, v] : a.headers) *os << n << ": " << v << "; ";
  *os << "} \"" << a.body << "\"";
}

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

BuiltMiddleware MustBuild(std::string_view json) {
  StatusOr<BuiltMiddleware> b = BuildMiddleware(boost::json::parse(json).as_object());
  EXPECT_TRUE(b.ok()) << json << ": " << b.status().message();
  return b.ok() ? *std::move(b) : BuiltMiddleware{};
}

Status BuildError(std::string_view json) {
  StatusOr<BuiltMiddleware> b = BuildMiddleware(boost::json::parse(json).as_object());
  return b.ok() ? Status() : b.status();
}

std::string Basic(std::string_view user_password) {
  std::string out(4 * ((user_password.size() + 2) / 3), '\0');
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                  reinterpret_cast<const unsigned char*>(user_password.data()), static_cast<int>(user_password.size()));
  return "Basic " + out;
}

const std::chrono::steady_clock::time_point kT0{seconds(1000)};

struct Req {
  std::string method = "GET";
  std::string scheme = "http";
  std::string host = "a.test";
  std::string path = "/";
  std::string query{};
  HeaderList headers{};
  std::string client_ip = "10.0.0.1";
};

Exchange ToExchange(const Req& r) {
  Exchange x;
  x.method = r.method;
  x.scheme = r.scheme;
  x.host = r.host;
  x.path = r.path;
  x.raw_query = r.query;
  x.headers = r.headers;
  x.client_ip = r.client_ip;
  x.now = kT0;
  return x;
}

// The request as it goes on.
struct Forward {
  explicit Forward(std::string p, HeaderList h = {}, std::string hst = "a.test")
      : path(std::move(p)), headers(std::move(h)), host(std::move(hst)) {}
  std::string path;
  HeaderList headers;
  std::string host;
  bool omit_x_forwarded_for = false;
};

Forward WithoutXForwardedFor(Forward f) {
  f.omit_x_forwarded_for = true;
  return f;
}

struct Case {
  std::string name;
  std::string config;
  Req req;
  std::variant<Forward, Answer> want;
};

void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BuiltMiddleware m = MustBuild(c.config);
    ASSERT_NE(m.middleware, nullptr);
    Exchange x = ToExchange(c.req);
    std::optional<Answer> got = m.middleware->OnRequest(x);
    if (const Answer* want = std::get_if<Answer>(&c.want)) {
      ASSERT_TRUE(got.has_value()) << "forwarded to " << x.path;
      EXPECT_EQ(*got, *want);
      continue;
    }
    const Forward& want = std::get<Forward>(c.want);
    ASSERT_FALSE(got.has_value()) << ::testing::PrintToString(*got);
    EXPECT_EQ(x.path, want.path);
    EXPECT_EQ(x.headers, want.headers);
    EXPECT_EQ(x.host, want.host);
    EXPECT_EQ(x.raw_query, c.req.query);
    EXPECT_EQ(x.omit_x_forwarded_for, want.omit_x_forwarded_for);
  }
}

Answer Text(int status, std::string body) {
  return Answer{status, {{"Content-Type", "text/plain; charset=utf-8"}}, std::move(body)};
}

Answer GoError(int status, std::string body) {
  return Answer{status, {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}},
                std::move(body)};
}

Answer Redirect(int status, std::string text, std::string location) {
  return Answer{status, {{"Location", std::move(location)}, {"Content-Type", "text/plain; charset=utf-8"}},
                std::move(text)};
}

// ---- Paths ----

TEST(MiddlewareTest, AddPrefix) {
  const std::string c = R"j({"addPrefix":{"prefix":"/api"}})j";
  RunCases({
      {"prepends", c, {.path = "/users", .query = "a=1"}, Forward{"/api/users"}},
      {"root", c, {.path = "/"}, Forward{"/api/"}},
      {"a prefix without a slash gets one", R"j({"addPrefix":{"prefix":"api"}})j", {.path = "/x"}, Forward{"/api/x"}},
      {"an encoded slash stays encoded", c, {.path = "/a%2Fb"}, Forward{"/api/a%2Fb"}},
      {"the prefix is text, escaped as Go does", R"j({"addPrefix":{"prefix":"/my app"}})j", {.path = "/x"},
       Forward{"/my%20app/x"}},
  });
}

TEST(MiddlewareTest, StripPrefix) {
  const std::string c = R"j({"stripPrefix":{"prefixes":["/api"]}})j";
  const HeaderList api = {{"X-Forwarded-Prefix", "/api"}};
  RunCases({
      {"strips", c, {.path = "/api/users", .query = "q=1"}, Forward{"/users", api}},
      {"the whole path leaves it empty", c, {.path = "/api"}, Forward{"", api}},
      {"a trailing slash stays", c, {.path = "/api/"}, Forward{"/", api}},
      {"matched as a string, not by segment", c, {.path = "/apiv2/x"}, Forward{"/v2/x", api}},
      {"no match", c, {.path = "/other/api"}, Forward{"/other/api"}},
      {"the first matching prefix wins", R"j({"stripPrefix":{"prefixes":["/a","/a/b"]}})j", {.path = "/a/b/c"},
       Forward{"/b/c", {{"X-Forwarded-Prefix", "/a"}}}},
      {"prefixes are trimmed", R"j({"stripPrefix":{"prefixes":[" /api "]}})j", {.path = "/api/x"}, Forward{"/x", api}},
      {"matched on the decoded path", c, {.path = "/%61pi/x%20y"}, Forward{"/x%20y", api}},
      {"an encoded slash after the prefix stays", c, {.path = "/api/a%2Fb"}, Forward{"/a%2Fb", api}},
      {"X-Forwarded-Prefix is added to one already there", c,
       {.path = "/api/x", .headers = {{"X-Forwarded-Prefix", "/outer"}}},
       Forward{"/x", {{"X-Forwarded-Prefix", "/outer"}, {"X-Forwarded-Prefix", "/api"}}}},
      {"forceSlash: the whole path leaves /", R"j({"stripPrefix":{"prefixes":["/api"],"forceSlash":true}})j",
       {.path = "/api"}, Forward{"/", api}},
      {"forceSlash, a prefix ending in /", R"j({"stripPrefix":{"prefixes":["/api/"],"forceSlash":true}})j",
       {.path = "/api/x"}, Forward{"/x", {{"X-Forwarded-Prefix", "/api/"}}}},
      {"a path that normalises differently is refused", c, {.path = "/api//x"}, GoError(400, "Bad Request\n")},
      {"a dot-dot after stripping is refused", c, {.path = "/api/../x"}, GoError(400, "Bad Request\n")},
      {"a dot left by the prefix is refused", c, {.path = "/api./foo"}, GoError(400, "Bad Request\n")},
      {"an escape within the prefix", R"j({"stripPrefix":{"prefixes":["/api/"]}})j", {.path = "/ap%69/a%2Fb"},
       Forward{"/a%2Fb", {{"X-Forwarded-Prefix", "/api/"}}}},
  });
}

TEST(MiddlewareTest, StripPrefixRegex) {
  const std::string c = R"j({"stripPrefixRegex":{"regex":["/api/v[0-9]+"]}})j";
  RunCases({
      {"strips the match", c, {.path = "/api/v2/users"}, Forward{"/users", {{"X-Forwarded-Prefix", "/api/v2"}}}},
      {"the whole path", R"j({"stripPrefixRegex":{"regex":["/api.*"]}})j", {.path = "/api/x"},
       Forward{"", {{"X-Forwarded-Prefix", "/api/x"}}}},
      {"a match that is not a prefix is ignored", R"j({"stripPrefixRegex":{"regex":["/b"]}})j", {.path = "/a/b"},
       Forward{"/a/b"}},
      {"the next expression is tried", R"j({"stripPrefixRegex":{"regex":["/zzz","^/[a-z]+"]}})j", {.path = "/foo/bar"},
       Forward{"/bar", {{"X-Forwarded-Prefix", "/foo"}}}},
      {"no match", c, {.path = "/web"}, Forward{"/web"}},
      {"a path that normalises differently is refused", c, {.path = "/api/v1//x"}, GoError(400, "Bad Request\n")},
  });
}

TEST(MiddlewareTest, ReplacePath) {
  const std::string c = R"j({"replacePath":{"path":"/new"}})j";
  RunCases({
      {"replaces, keeping the query", c, {.path = "/old/x", .query = "q=1"},
       Forward{"/new", {{"X-Replaced-Path", "/old/x"}}}},
      {"X-Replaced-Path is the path as received", c, {.path = "/a%20b"}, Forward{"/new", {{"X-Replaced-Path", "/a%20b"}}}},
      {"a space is escaped", R"j({"replacePath":{"path":"/a b"}})j", {.path = "/x"},
       Forward{"/a%20b", {{"X-Replaced-Path", "/x"}}}},
      {"an escape is kept", R"j({"replacePath":{"path":"/a%2Fb"}})j", {.path = "/x"},
       Forward{"/a%2Fb", {{"X-Replaced-Path", "/x"}}}},
      {"a bad escape is a 500", R"j({"replacePath":{"path":"/bad%zz"}})j", {.path = "/x"},
       GoError(500, "invalid URL escape \"%zz\"\n")},
  });
}

TEST(MiddlewareTest, ReplacePathRegex) {
  const std::string c = R"j({"replacePathRegex":{"regex":"^/foo/(.*)","replacement":"/bar/$1"}})j";
  RunCases({
      {"replaces with groups", c, {.path = "/foo/x/y", .query = "q"},
       Forward{"/bar/x/y", {{"X-Replaced-Path", "/foo/x/y"}}}},
      {"no match: nothing changes", c, {.path = "/baz"}, Forward{"/baz"}},
      {"named groups and braces", R"j({"replacePathRegex":{"regex":"^/(?P<v>v[0-9])/(.*)","replacement":"/${2}/$v"}})j",
       {.path = "/v1/users"}, Forward{"/users/v1", {{"X-Replaced-Path", "/v1/users"}}}},
      {"$1x names a group that does not exist", R"j({"replacePathRegex":{"regex":"^/(a)","replacement":"/p-$1x-q"}})j",
       {.path = "/a"}, Forward{"/p--q", {{"X-Replaced-Path", "/a"}}}},
      {"$$ is a dollar", R"j({"replacePathRegex":{"regex":"^/(a)","replacement":"/$$1"}})j", {.path = "/a"},
       Forward{"/$1", {{"X-Replaced-Path", "/a"}}}},
      {"every match is replaced", R"j({"replacePathRegex":{"regex":"a","replacement":"b"}})j", {.path = "/aaa"},
       Forward{"/bbb", {{"X-Replaced-Path", "/aaa"}}}},
      {"the replacement may escape", R"j({"replacePathRegex":{"regex":"^/x$","replacement":"/x%20y"}})j",
       {.path = "/x"}, Forward{"/x%20y", {{"X-Replaced-Path", "/x"}}}},
      {"matched on the escaped path", R"j({"replacePathRegex":{"regex":"%2F","replacement":"-"}})j",
       {.path = "/a%2Fb"}, Forward{"/a-b", {{"X-Replaced-Path", "/a%2Fb"}}}},
      {"a result that normalises differently is refused", R"j({"replacePathRegex":{"regex":"^/a","replacement":"//b"}})j",
       {.path = "/a"}, GoError(400, "Bad Request\n")},
  });
}

// ---- Redirects ----

TEST(MiddlewareTest, RedirectScheme) {
  const std::string c = R"j({"redirectScheme":{"scheme":"https"}})j";
  const std::string p = R"j({"redirectScheme":{"scheme":"https","permanent":true}})j";
  RunCases({
      {"GET: 302", c, {.path = "/x", .query = "q=1"}, Redirect(302, "Found", "https://a.test/x?q=1")},
      {"POST: 307", c, {.method = "POST", .path = "/x"}, Redirect(307, "Temporary Redirect", "https://a.test/x")},
      {"permanent GET: 301", p, {.path = "/x"}, Redirect(301, "Moved Permanently", "https://a.test/x")},
      {"permanent HEAD: 308", p, {.method = "HEAD", .path = "/x"},
       Redirect(308, "Permanent Redirect", "https://a.test/x")},
      {"already https", c, {.scheme = "https", .path = "/x"}, Forward{"/x"}},
      {"X-Forwarded-Proto says https", c, {.path = "/x", .headers = {{"X-Forwarded-Proto", "https"}}},
       Forward{"/x", {{"X-Forwarded-Proto", "https"}}}},
      {"X-Forwarded-Proto wss counts as https", c, {.path = "/x", .headers = {{"X-Forwarded-Proto", "wss"}}},
       Forward{"/x", {{"X-Forwarded-Proto", "wss"}}}},
      {"the client's port goes", c, {.host = "a.test:8080", .path = "/x"}, Redirect(302, "Found", "https://a.test/x")},
      {"the default port of the old scheme is ignored", c, {.host = "a.test:80", .path = "/"},
       Redirect(302, "Found", "https://a.test/")},
      {"https on 443 with the default port is already there", c, {.scheme = "https", .host = "a.test:443", .path = "/"},
       Forward{"/", {}, "a.test:443"}},
      {"a port", R"j({"redirectScheme":{"scheme":"https","port":"8443"}})j", {.host = "a.test:8080", .path = "/x"},
       Redirect(302, "Found", "https://a.test:8443/x")},
      {"the scheme's own port is left out", R"j({"redirectScheme":{"scheme":"https","port":"443"}})j", {.path = "/x"},
       Redirect(302, "Found", "https://a.test/x")},
      {"to http", R"j({"redirectScheme":{"scheme":"http"}})j", {.scheme = "https", .path = "/x"},
       Redirect(302, "Found", "http://a.test/x")},
      {"an empty path redirects to /", c, {.path = ""}, Redirect(302, "Found", "https://a.test/")},
  });
}

TEST(MiddlewareTest, RedirectRegex) {
  const std::string c = R"j({"redirectRegex":{"regex":"^http://a\\.test/(.*)","replacement":"https://b.test/${1}"}})j";
  RunCases({
      {"GET: 302", c, {.path = "/x", .query = "q=1"}, Redirect(302, "Found", "https://b.test/x?q=1")},
      {"permanent POST: 308",
       R"j({"redirectRegex":{"regex":"^http://a\\.test/(.*)","replacement":"https://b.test/$1","permanent":true}})j",
       {.method = "POST", .path = "/x"}, Redirect(308, "Permanent Redirect", "https://b.test/x")},
      {"no match", c, {.host = "c.test", .path = "/x"}, Forward{"/x", {}, "c.test"}},
      {"the scheme is the entry point's", c, {.scheme = "https", .path = "/x"}, Forward{"/x"}},
      {"the host keeps its port", R"j({"redirectRegex":{"regex":"^http://a\\.test:8080/","replacement":"http://b/"}})j",
       {.host = "a.test:8080", .path = "/"}, Redirect(302, "Found", "http://b/")},
      {"the same URL goes on", R"j({"redirectRegex":{"regex":"^(.*)$","replacement":"$1"}})j", {.path = "/x"},
       Forward{"/x"}},
      {"a URL Go cannot parse: 502", R"j({"redirectRegex":{"regex":".*","replacement":"http://a b/"}})j", {.path = "/x"},
       Text(502, "Bad Gateway")},
  });
}

// ---- headers ----

TEST(MiddlewareTest, HeadersOnRequest) {
  RunCases({
      {"custom request headers set and remove",
       R"j({"headers":{"customRequestHeaders":{"x-script-name":"test","X-Remove":""}}})j",
       {.headers = {{"X-Script-Name", "old"}, {"x-remove", "1"}, {"Accept", "*/*"}}},
       Forward{"/", {{"Accept", "*/*"}, {"X-Script-Name", "test"}}}},
      {"an empty X-Forwarded-For: none is sent", R"j({"headers":{"customRequestHeaders":{"X-Forwarded-For":""}}})j",
       {.headers = {{"X-Forwarded-For", "1.2.3.4"}}}, WithoutXForwardedFor(Forward{"/"})},
      {"Host sets the host", R"j({"headers":{"customRequestHeaders":{"Host":"b.test"}}})j", {},
       Forward{"/", {}, "b.test"}},
      {"CORS preflight is answered",
       R"j({"headers":{"accessControlAllowMethods":["GET","POST"],"accessControlAllowHeaders":["X-A","X-B"],
           "accessControlAllowOriginList":["https://o.test"],"accessControlMaxAge":100,
           "accessControlExposeHeaders":["X-E"],"customRequestHeaders":{"X-Not":"set"}}})j",
       {.method = "OPTIONS",
        .headers = {{"Origin", "https://o.test"}, {"Access-Control-Request-Method", "POST"}}},
       Answer{200,
              {{"Access-Control-Allow-Headers", "X-A,X-B"},
               {"Access-Control-Allow-Methods", "GET,POST"},
               {"Access-Control-Allow-Origin", "https://o.test"},
               {"Access-Control-Max-Age", "100"},
               {"Access-Control-Expose-Headers", "X-E"}},
              ""}},
      {"CORS preflight with credentials and wildcards echoes the request",
       R"j({"headers":{"accessControlAllowCredentials":true,"accessControlAllowMethods":["*"],
           "accessControlAllowHeaders":["*"],"accessControlAllowOriginList":["*"]}})j",
       {.method = "OPTIONS",
        .headers = {{"Origin", "https://o.test"},
                    {"Access-Control-Request-Method", "PUT"},
                    {"Access-Control-Request-Headers", "X-Y"}}},
       Answer{200,
              {{"Access-Control-Allow-Credentials", "true"},
               {"Access-Control-Allow-Headers", "X-Y"},
               {"Access-Control-Allow-Methods", "PUT"},
               {"Access-Control-Allow-Origin", "https://o.test"}},
              ""}},
      {"an OPTIONS without Origin is not a preflight", R"j({"headers":{"accessControlAllowMethods":["GET"]}})j",
       {.method = "OPTIONS", .headers = {{"Access-Control-Request-Method", "GET"}}},
       Forward{"/", {{"Access-Control-Request-Method", "GET"}}}},
      {"allowedHosts through hostsProxyHeaders",
       R"j({"headers":{"allowedHosts":["a.test"],"hostsProxyHeaders":["X-Forwarded-Host"]}})j",
       {.host = "internal", .headers = {{"X-Forwarded-Host", "A.test"}}},
       Forward{"/", {{"X-Forwarded-Host", "A.test"}}, "internal"}},
      {"a host not allowed: 500 Bad Host, with the custom response headers",
       R"j({"headers":{"allowedHosts":["a.test"],"customResponseHeaders":{"X-C":"1"},"frameDeny":true}})j",
       {.host = "evil.test"},
       Answer{500,
              {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}, {"X-C", "1"}},
              "Bad Host\n"}},
      {"isDevelopment allows every host", R"j({"headers":{"allowedHosts":["a.test"],"isDevelopment":true}})j",
       {.host = "evil.test"}, Forward{"/", {}, "evil.test"}},
  });
}

struct ResponseCase {
  std::string name;
  std::string config;
  Req req;
  HeaderList response;
  HeaderList want;
};

TEST(MiddlewareTest, HeadersOnResponse) {
  const std::string security =
      R"j({"headers":{"stsSeconds":31536000,"stsIncludeSubdomains":true,"stsPreload":true,"frameDeny":true,
          "contentTypeNosniff":true,"browserXssFilter":true,"referrerPolicy":"same-origin",
          "contentSecurityPolicy":"default-src 'self'","permissionsPolicy":"camera=()"}})j";
  const std::vector<ResponseCase> cases = {
      {"custom response headers set and remove",
       R"j({"headers":{"customResponseHeaders":{"x-custom":"v","Server":""}}})j", {},
       {{"Server", "nginx"}, {"Content-Type", "text/html"}, {"X-Custom", "old"}},
       {{"Content-Type", "text/html"}, {"X-Custom", "v"}}},
      {"security headers on https", security, {.scheme = "https"}, {{"X-Frame-Options", "SAMEORIGIN"}},
       {{"Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload"},
        {"X-Frame-Options", "DENY"},
        {"X-Content-Type-Options", "nosniff"},
        {"X-Xss-Protection", "1; mode=block"},
        {"Content-Security-Policy", "default-src 'self'"},
        {"Referrer-Policy", "same-origin"},
        {"Permissions-Policy", "camera=()"}}},
      {"no STS on http", R"j({"headers":{"stsSeconds":60}})j", {}, {}, {}},
      {"forceSTSHeader: STS on http too", R"j({"headers":{"stsSeconds":60,"forceSTSHeader":true}})j", {}, {},
       {{"Strict-Transport-Security", "max-age=60"}}},
      {"sslProxyHeaders make it https", R"j({"headers":{"stsSeconds":60,"sslProxyHeaders":{"X-Forwarded-Proto":"https"}}})j",
       {.headers = {{"X-Forwarded-Proto", "https"}}}, {}, {{"Strict-Transport-Security", "max-age=60"}}},
      {"customFrameOptionsValue wins over frameDeny",
       R"j({"headers":{"frameDeny":true,"customFrameOptionsValue":"SAMEORIGIN"}})j", {}, {},
       {{"X-Frame-Options", "SAMEORIGIN"}}},
      {"custom response headers override security ones",
       R"j({"headers":{"frameDeny":true,"customResponseHeaders":{"X-Frame-Options":""}}})j", {}, {}, {}},
      {"CORS: the allowed origin, credentials, exposed headers, Vary added",
       R"j({"headers":{"accessControlAllowOriginList":["https://o.test"],"accessControlAllowCredentials":true,
           "accessControlExposeHeaders":["X-E","X-F"],"addVaryHeader":true}})j",
       {.headers = {{"Origin", "https://o.test"}}}, {{"Vary", "Accept-Encoding"}},
       {{"Access-Control-Allow-Origin", "https://o.test"},
        {"Access-Control-Allow-Credentials", "true"},
        {"Access-Control-Expose-Headers", "X-E,X-F"},
        {"Vary", "Accept-Encoding,Origin"}}},
      {"CORS: Vary already Origin", R"j({"headers":{"addVaryHeader":true}})j", {}, {{"Vary", "Origin"}},
       {{"Vary", "Origin"}}},
      {"CORS: an origin not allowed gets none", R"j({"headers":{"accessControlAllowOriginList":["https://o.test"]}})j",
       {.headers = {{"Origin", "https://evil.test"}}}, {}, {}},
      {"CORS: a wildcard without credentials is *", R"j({"headers":{"accessControlAllowOriginList":["*"]}})j",
       {.headers = {{"Origin", "https://x.test"}}}, {}, {{"Access-Control-Allow-Origin", "*"}}},
      {"CORS: origin by regex", R"j({"headers":{"accessControlAllowOriginListRegex":["^https://[a-z]+\\.o\\.test$"]}})j",
       {.headers = {{"Origin", "https://app.o.test"}}}, {}, {{"Access-Control-Allow-Origin", "https://app.o.test"}}},
      {"CORS: exposed * with credentials is not sent",
       R"j({"headers":{"accessControlExposeHeaders":["*"],"accessControlAllowCredentials":true}})j", {}, {},
       {{"Access-Control-Allow-Credentials", "true"}}},
  };
  for (const ResponseCase& c : cases) {
    SCOPED_TRACE(c.name);
    BuiltMiddleware m = MustBuild(c.config);
    ASSERT_NE(m.middleware, nullptr);
    Exchange x = ToExchange(c.req);
    ASSERT_FALSE(m.middleware->OnRequest(x).has_value());
    HeaderList response = c.response;
    m.middleware->OnResponse(x, 200, response);
    EXPECT_EQ(response, c.want);
  }
}

// ---- basicAuth ----

TEST(MiddlewareTest, BasicAuth) {
  // Hashes of "test" ($apr1$, Traefik's documentation) and of "secret" (htpasswd -B, -s; openssl passwd -1).
  const std::string c = R"j({"basicAuth":{"users":[
      "test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/",
      "y:$2y$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW",
      "a:$2a$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW",
      "b:$2b$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW",
      "sha:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
      "md5:$1$saltsalt$9xy1btjgzLYfb7hivXtC//",
      "plain:secret"]}})j";
  const Answer denied{401, {{"Content-Type", "text/plain"}, {"Www-Authenticate", "Basic realm=\"traefik\""}},
                      "401 Unauthorized\n"};
  auto with = [](std::string credentials) { return Req{.headers = {{"Authorization", Basic(credentials)}}}; };
  auto kept = [](std::string credentials) { return Forward{"/", {{"Authorization", Basic(credentials)}}}; };
  RunCases({
      {"apr1", c, with("test:test"), kept("test:test")},
      {"apr1, wrong password", c, with("test:nope"), denied},
      {"bcrypt $2y$", c, with("y:secret"), kept("y:secret")},
      {"bcrypt $2y$, wrong password", c, with("y:secret2"), denied},
      {"bcrypt $2a$", c, with("a:secret"), kept("a:secret")},
      {"bcrypt $2b$", c, with("b:secret"), kept("b:secret")},
      {"{SHA}", c, with("sha:secret"), kept("sha:secret")},
      {"{SHA}, wrong password", c, with("sha:Secret"), denied},
      {"md5-crypt $1$", c, with("md5:secret"), kept("md5:secret")},
      {"a plain-text password never matches", c, with("plain:secret"), denied},
      {"an unknown user", c, with("nobody:secret"), denied},
      {"another user's password", c, with("test:secret"), denied},
      {"no Authorization", c, {}, denied},
      {"not Basic", c, {.headers = {{"Authorization", "Bearer abc"}}}, denied},
      {"not base64", c, {.headers = {{"Authorization", "Basic !!!!"}}}, denied},
      {"no colon", c, {.headers = {{"Authorization", Basic("test")}}}, denied},
      {"the scheme is case-insensitive", c, {.headers = {{"Authorization", "bAsIc dGVzdDp0ZXN0"}}},
       Forward{"/", {{"Authorization", "bAsIc dGVzdDp0ZXN0"}}}},
      {"a realm", R"j({"basicAuth":{"users":["test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"],"realm":"Zone 1"}})j", {},
       Answer{401, {{"Content-Type", "text/plain"}, {"Www-Authenticate", "Basic realm=\"Zone 1\""}},
              "401 Unauthorized\n"}},
      {"removeHeader",
       R"j({"basicAuth":{"users":["test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"],"removeHeader":true}})j",
       with("test:test"), Forward{"/"}},
      {"headerField replaces what the client sent",
       R"j({"basicAuth":{"users":["test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"],"headerField":"X-WebAuth-User"}})j",
       {.headers = {{"x-webauth-user", "admin"}, {"Authorization", Basic("test:test")}}},
       Forward{"/", {{"Authorization", Basic("test:test")}, {"X-WebAuth-User", "test"}}}},
  });
}

std::string GetHeaderForTest(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers)
    if (n == name) return v;
  return "";
}

std::string Md5Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_md5(), nullptr);
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

// The value of `key="…"` in a WWW-Authenticate challenge.
std::string ChallengeParam(std::string_view challenge, std::string_view key) {
  const size_t at = challenge.find(std::string(key) + "=\"");
  if (at == std::string_view::npos) return "";
  const size_t start = at + key.size() + 2;
  return std::string(challenge.substr(start, challenge.find('"', start) - start));
}

TEST(MiddlewareTest, DigestAuthAsGoHttpAuth) {
  const std::string ha1 = Md5Hex("u:traefik:secret");
  BuiltMiddleware m = MustBuild(fmt::format(R"j({{"digestAuth":{{"users":["u:traefik:{}"],"removeHeader":true}}}})j", ha1));
  ASSERT_NE(m.middleware, nullptr);
  Exchange first = ToExchange({.path = "/path"});
  std::optional<Answer> challenge = m.middleware->OnRequest(first);
  ASSERT_TRUE(challenge.has_value());
  EXPECT_EQ(challenge->status, 401);
  EXPECT_EQ(challenge->body, "401 Unauthorized\n");
  ASSERT_EQ(challenge->headers.size(), 2u);
  const std::string www = challenge->headers[1].second;
  EXPECT_TRUE(www.starts_with("Digest realm=\"traefik\", nonce=\"")) << www;
  EXPECT_TRUE(www.ends_with("algorithm=\"MD5\", qop=\"auth\"")) << www;
  const std::string nonce = ChallengeParam(www, "nonce"), opaque = ChallengeParam(www, "opaque");
  auto authorization = [&](std::string nc, std::string uri = "/path", std::string key = "", std::string n = "") {
    const std::string use_nonce = n.empty() ? nonce : n;
    const std::string response = Md5Hex((key.empty() ? ha1 : key) + ":" + use_nonce + ":" + nc + ":cn:auth:" +
                                        Md5Hex("GET:" + uri));
    return fmt::format(R"(Digest username="u", realm="traefik", nonce="{}", uri="{}", qop=auth, nc={}, cnonce="cn", )"
                       R"(response="{}", opaque="{}")",
                       use_nonce, uri, nc, response, opaque);
  };
  auto request = [&](std::string auth, std::string path = "/path") {
    Exchange x = ToExchange({.path = path, .headers = {{"Authorization", auth}}});
    std::optional<Answer> a = m.middleware->OnRequest(x);
    return std::make_pair(a, x);
  };
  auto [ok, passed] = request(authorization("00000001"));
  EXPECT_FALSE(ok.has_value());
  EXPECT_EQ(passed.user, "u");
  EXPECT_EQ(GetHeaderForTest(passed.headers, "Authorization"), "");  // removeHeader
  // A nonce count used again: a replay, refused; one below the last: stale (pipelined out of order).
  auto [replayed, x2] = request(authorization("00000001"));
  ASSERT_TRUE(replayed.has_value());
  EXPECT_EQ(replayed->headers[1].second.find("stale"), std::string::npos);
  EXPECT_FALSE(request(authorization("00000003")).first.has_value());
  auto [behind, x2b] = request(authorization("00000002"));
  ASSERT_TRUE(behind.has_value());
  EXPECT_NE(behind->headers[1].second.find(R"(opaque=")" + opaque + R"(", stale="true", algorithm="MD5")"),
            std::string::npos)
      << behind->headers[1].second;
  // A nonce it never gave, or a wrong password: refused, not stale.
  auto [unknown, x3] = request(authorization("00000001", "/path", "", "bm90LWlzc3VlZA=="));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->headers[1].second.find("stale"), std::string::npos);
  auto [wrong, x4] = request(authorization("00000004", "/path", Md5Hex("u:traefik:guess")));
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->headers[1].second.find("stale"), std::string::npos);
  EXPECT_EQ(x4.user, "u");  // the name a failed attempt gave (Traefik's access log)
  // The uri may name a path prefix of the request's (go-http-auth's leniency), nothing else.
  EXPECT_FALSE(request(authorization("00000005", "/"), "/path/below").first.has_value());
  EXPECT_TRUE(request(authorization("00000006", "/other"), "/path").first.has_value());
  // A user that is not configured never passes, even with the response an empty HA1 gives
  // (go-http-auth's flaw: the client can compute that one).
  const std::string empty_key_response = Md5Hex(":" + nonce + ":00000007:cn:auth:" + Md5Hex("GET:/path"));
  auto [stranger, x5] = request(fmt::format(R"(Digest username="x", realm="traefik", nonce="{}", uri="/path", )"
                                            R"(qop=auth, nc=00000007, cnonce="cn", response="{}", opaque="{}")",
                                            nonce, empty_key_response, opaque));
  EXPECT_TRUE(stranger.has_value());
}

TEST(MiddlewareTest, BasicAuthRecordsTheUser) {
  BuiltMiddleware m = MustBuild(R"j({"basicAuth":{"users":["test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"]}})j");
  Exchange x = ToExchange({.headers = {{"Authorization", Basic("test:test")}}});
  ASSERT_FALSE(m.middleware->OnRequest(x).has_value());
  EXPECT_EQ(x.user, "test");
}

// ---- ipAllowList ----

TEST(MiddlewareTest, IpAllowList) {
  const std::string c = R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8","192.168.1.7","2001:db8::/32"]}})j";
  const Answer forbidden = Text(403, "Forbidden");
  auto from = [](std::string ip, HeaderList headers = {}) { return Req{.headers = std::move(headers), .client_ip = ip}; };
  RunCases({
      {"in a CIDR", c, from("10.1.2.3"), Forward{"/"}},
      {"outside", c, from("11.0.0.1"), forbidden},
      {"a single address", c, from("192.168.1.7"), Forward{"/"}},
      {"next to it", c, from("192.168.1.8"), forbidden},
      {"IPv6", c, from("2001:db8::1"), Forward{"/"}},
      {"IPv6 outside", c, from("2001:db9::1"), forbidden},
      {"IPv4-mapped IPv6 is IPv4", c, from("::ffff:10.0.0.1"), Forward{"/"}},
      {"IPv4 is not in ::/0", R"j({"ipAllowList":{"sourceRange":["::/0"]}})j", from("1.2.3.4"), forbidden},
      {"X-Forwarded-For is ignored by default", c, from("11.0.0.1", {{"X-Forwarded-For", "10.0.0.1"}}), forbidden},
      {"rejectStatusCode", R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"rejectStatusCode":404}})j",
       from("11.0.0.1"), Text(404, "Not Found")},
      {"depth 1: the rightmost X-Forwarded-For", R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"depth":1}}})j",
       from("172.16.0.1", {{"X-Forwarded-For", "1.1.1.1, 10.0.0.5"}}),
       Forward{"/", {{"X-Forwarded-For", "1.1.1.1, 10.0.0.5"}}}},
      {"depth 2", R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"depth":2}}})j",
       from("10.0.0.1", {{"X-Forwarded-For", "1.1.1.1, 10.0.0.5"}}), forbidden},
      {"depth beyond the list", R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"depth":3}}})j",
       from("10.0.0.1", {{"X-Forwarded-For", "10.0.0.2, 10.0.0.5"}}), forbidden},
      {"excludedIPs: the rightmost address not excluded",
       R"j({"ipAllowList":{"sourceRange":["203.0.113.0/24"],"ipStrategy":{"excludedIPs":["10.0.0.0/8"]}}})j",
       from("10.0.0.1", {{"X-Forwarded-For", "198.51.100.1, 203.0.113.9,10.0.0.5"}}),
       Forward{"/", {{"X-Forwarded-For", "198.51.100.1, 203.0.113.9,10.0.0.5"}}}},
      {"excludedIPs: all excluded",
       R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"excludedIPs":["10.0.0.0/8"]}}})j",
       from("10.0.0.1", {{"X-Forwarded-For", "10.0.0.5"}}), forbidden},
      {"ipv6Subnet: the first address of the client's subnet",
       R"j({"ipAllowList":{"sourceRange":["2001:db8::"],"ipStrategy":{"ipv6Subnet":64}}})j", from("2001:db8::1234"),
       Forward{"/"}},
  });
}

// ---- rateLimit ----

struct Step {
  milliseconds at{};  // after kT0
  std::string client_ip = "10.0.0.1";
  HeaderList headers{};
  std::optional<milliseconds> delay{};    // forwarded after this wait
  std::string retry_after{}, retry_in{};  // or answered 429 with these
};

void RunSteps(std::string_view config, const std::vector<Step>& steps) {
  BuiltMiddleware m = MustBuild(config);
  ASSERT_NE(m.middleware, nullptr);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    SCOPED_TRACE(::testing::Message() << config << " request " << i << " at " << s.at.count() << "ms");
    Exchange x = ToExchange({.headers = s.headers, .client_ip = s.client_ip});
    x.now = kT0 + s.at;
    std::optional<Answer> got = m.middleware->OnRequest(x);
    if (s.delay) {
      ASSERT_FALSE(got.has_value()) << ::testing::PrintToString(*got);
      EXPECT_EQ(x.delay, *s.delay);
    } else {
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(*got, (Answer{429,
                              {{"Retry-After", s.retry_after},
                               {"X-Retry-In", s.retry_in},
                               {"Content-Type", "text/plain; charset=utf-8"}},
                              "Too Many Requests"}));
    }
  }
}

TEST(MiddlewareTest, RateLimitRefusesBeyondTheBurst) {
  RunSteps(R"j({"rateLimit":{"average":1}})j", {
                                                 {.at = milliseconds(0), .delay = milliseconds(0)},
                                                 {.at = milliseconds(0), .retry_after = "1", .retry_in = "1s"},
                                                 {.at = milliseconds(250), .retry_after = "1", .retry_in = "750ms"},
                                                 {.at = milliseconds(1000), .delay = milliseconds(0)},
                                             });
  RunSteps(R"j({"rateLimit":{"average":1,"burst":3}})j", {
                                                           {.at = milliseconds(0), .delay = milliseconds(0)},
                                                           {.at = milliseconds(0), .delay = milliseconds(0)},
                                                           {.at = milliseconds(0), .delay = milliseconds(0)},
                                                           {.at = milliseconds(0), .retry_after = "1", .retry_in = "1s"},
                                                       });
}

TEST(MiddlewareTest, RateLimitDelaysWhatIsDueWithinHalfAnInterval) {
  // 4/s: a token every 250 ms; a request waits for one due within 1/(2*4) s = 125 ms.
  RunSteps(R"j({"rateLimit":{"average":4}})j", {
                                                 {.at = milliseconds(0), .delay = milliseconds(0)},
                                                 {.at = milliseconds(125), .delay = milliseconds(125)},
                                                 {.at = milliseconds(125), .retry_after = "1", .retry_in = "375ms"},
                                                 {.at = milliseconds(500), .delay = milliseconds(0)},
                                             });
}

TEST(MiddlewareTest, RateLimitPeriod) {
  // 1 per 2 s; a rate below 1/s waits at most 500 ms.
  RunSteps(R"j({"rateLimit":{"average":1,"period":"2s"}})j",
           {
               {.at = milliseconds(0), .delay = milliseconds(0)},
               {.at = milliseconds(1000), .retry_after = "1", .retry_in = "1s"},
               {.at = milliseconds(1750), .delay = milliseconds(250)},
           });
  RunSteps(R"j({"rateLimit":{"average":1,"period":4}})j",  // a number of seconds
           {
               {.at = milliseconds(0), .delay = milliseconds(0)},
               {.at = milliseconds(1500), .retry_after = "3", .retry_in = "2.5s"},
           });
}

TEST(MiddlewareTest, InFlightReqHoldsASlotPerSourceUntilTheRequestIsOver) {
  // By the request's host when no source criterion is given (Traefik's inFlightReq default).
  BuiltMiddleware m = MustBuild(R"j({"inFlightReq":{"amount":2}})j");
  ASSERT_NE(m.middleware, nullptr);
  Exchange a1 = ToExchange({.host = "a.test", .client_ip = "10.0.0.1"});
  Exchange a2 = ToExchange({.host = "a.test", .client_ip = "10.0.0.2"});
  EXPECT_FALSE(m.middleware->OnRequest(a1));
  EXPECT_FALSE(m.middleware->OnRequest(a2));
  Exchange a3 = ToExchange({.host = "a.test"});
  EXPECT_EQ(m.middleware->OnRequest(a3), Text(429, "max connections reached: 2"));
  EXPECT_TRUE(a3.holds.empty());  // a refused request holds nothing
  Exchange b = ToExchange({.host = "b.test"});
  EXPECT_FALSE(m.middleware->OnRequest(b));  // another host has its own count
  // A request is over when the proxy drops its exchange's holds: its slot is free again.
  a1.holds.clear();
  Exchange a4 = ToExchange({.host = "a.test"});
  EXPECT_FALSE(m.middleware->OnRequest(a4));
  EXPECT_TRUE(m.middleware->OnRequest(a3).has_value());

  // By a header, or by the client's address with an ipStrategy.
  BuiltMiddleware by_header =
      MustBuild(R"j({"inFlightReq":{"amount":1,"sourceCriterion":{"requestHeaderName":"X-Tenant"}}})j");
  Exchange t1 = ToExchange({.headers = {{"X-Tenant", "one"}}});
  Exchange t2 = ToExchange({.headers = {{"X-Tenant", "two"}}});
  Exchange t1_again = ToExchange({.headers = {{"X-Tenant", "one"}}});
  EXPECT_FALSE(by_header.middleware->OnRequest(t1));
  EXPECT_FALSE(by_header.middleware->OnRequest(t2));
  EXPECT_EQ(by_header.middleware->OnRequest(t1_again), Text(429, "max connections reached: 1"));
  BuiltMiddleware by_ip = MustBuild(R"j({"inFlightReq":{"amount":1,"sourceCriterion":{"ipStrategy":{}}}})j");
  Exchange ip1 = ToExchange({.host = "a.test", .client_ip = "10.0.0.1"});
  Exchange ip2 = ToExchange({.host = "a.test", .client_ip = "10.0.0.2"});
  EXPECT_FALSE(by_ip.middleware->OnRequest(ip1));
  EXPECT_FALSE(by_ip.middleware->OnRequest(ip2));

  // oxy refuses every request when the amount is 0 (no request is ever below it).
  BuiltMiddleware none = MustBuild(R"j({"inFlightReq":{}})j");
  Exchange any = ToExchange({});
  EXPECT_EQ(none.middleware->OnRequest(any), Text(429, "max connections reached: 0"));
}

TEST(MiddlewareTest, RateLimitSources) {
  RunSteps(R"j({"rateLimit":{"average":1}})j", {
                                                 {.at = milliseconds(0), .client_ip = "10.0.0.1", .delay = milliseconds(0)},
                                                 {.at = milliseconds(0), .client_ip = "10.0.0.2", .delay = milliseconds(0)},
                                                 {.at = milliseconds(0), .client_ip = "10.0.0.1", .retry_after = "1", .retry_in = "1s"},
                                             });
  RunSteps(R"j({"rateLimit":{"average":1,"sourceCriterion":{"requestHeaderName":"X-Key"}}})j",
           {
               {.at = milliseconds(0), .client_ip = "10.0.0.1", .headers = {{"X-Key", "a"}}, .delay = milliseconds(0)},
               {.at = milliseconds(0), .client_ip = "10.0.0.1", .headers = {{"X-Key", "b"}}, .delay = milliseconds(0)},
               {.at = milliseconds(0), .client_ip = "10.0.0.2", .headers = {{"x-key", "a"}}, .retry_after = "1", .retry_in = "1s"},
           });
  RunSteps(R"j({"rateLimit":{"average":1,"sourceCriterion":{"ipStrategy":{"depth":1}}}})j",
           {
               {.at = milliseconds(0), .headers = {{"X-Forwarded-For", "1.1.1.1, 2.2.2.2"}}, .delay = milliseconds(0)},
               {.at = milliseconds(0), .headers = {{"X-Forwarded-For", "2.2.2.2, 1.1.1.1"}}, .delay = milliseconds(0)},
               {.at = milliseconds(0), .headers = {{"X-Forwarded-For", "3.3.3.3, 2.2.2.2"}}, .retry_after = "1", .retry_in = "1s"},
           });
}

TEST(MiddlewareTest, RateLimitRequestHost) {
  BuiltMiddleware m = MustBuild(R"j({"rateLimit":{"average":1,"sourceCriterion":{"requestHost":true}}})j");
  auto send = [&](std::string host, std::string ip) {
    Exchange x = ToExchange({.host = std::move(host), .client_ip = std::move(ip)});
    return m.middleware->OnRequest(x).has_value();
  };
  EXPECT_FALSE(send("a.test", "10.0.0.1"));
  EXPECT_FALSE(send("b.test", "10.0.0.1"));
  EXPECT_TRUE(send("a.test", "10.0.0.2"));
}

TEST(MiddlewareTest, RateLimitAverageZeroIsNoLimit) {
  RunSteps(R"j({"rateLimit":{"average":0}})j", std::vector<Step>(5, Step{.at = milliseconds(0), .delay = milliseconds(0)}));
}

TEST(MiddlewareTest, RateLimitForgetsAnIdleSource) {
  // 1/s with a burst of 5: Traefik forgets a source after 2 s idle, so it has its full burst again.
  std::vector<Step> steps(5, Step{.at = milliseconds(0), .delay = milliseconds(0)});
  steps.push_back({.at = milliseconds(1000), .delay = milliseconds(0)});
  steps.push_back({.at = milliseconds(1000), .retry_after = "1", .retry_in = "1s"});
  for (int i = 0; i < 5; ++i) steps.push_back({.at = milliseconds(3000), .delay = milliseconds(0)});
  RunSteps(R"j({"rateLimit":{"average":1,"burst":5}})j", steps);
}

TEST(MiddlewareTest, RateLimitKeepsABoundedNumberOfSources) {
  BuiltMiddleware m = MustBuild(R"j({"rateLimit":{"average":1,"sourceCriterion":{"requestHeaderName":"X-Key"}}})j");
  auto send = [&](std::string key) {
    Exchange x = ToExchange({.headers = {{"X-Key", std::move(key)}}});
    return m.middleware->OnRequest(x).has_value();
  };
  EXPECT_FALSE(send("first"));
  EXPECT_TRUE(send("first"));
  for (int i = 0; i < 65536; ++i) send(std::to_string(i));
  EXPECT_FALSE(send("first")) << "the oldest source should have been dropped";
}

TEST(MiddlewareTest, RateLimitsAddTheirDelays) {
  BuiltMiddleware m = MustBuild(R"j({"rateLimit":{"average":4}})j");
  Exchange x = ToExchange({});
  x.delay = milliseconds(10);
  ASSERT_FALSE(m.middleware->OnRequest(x).has_value());
  EXPECT_EQ(x.delay, milliseconds(10));
  x.now += milliseconds(125);
  ASSERT_FALSE(m.middleware->OnRequest(x).has_value());
  EXPECT_EQ(x.delay, milliseconds(135));
}

// ---- Configurations the proxy carries out ----

TEST(MiddlewareTest, Chain) {
  BuiltMiddleware m = MustBuild(R"j({"chain":{"middlewares":["a","b@file"]}})j");
  EXPECT_EQ(m.middleware, nullptr);
  EXPECT_EQ(m.chain, (std::vector<std::string>{"a", "b@file"}));
}

TEST(MiddlewareTest, ForwardAuth) {
  BuiltMiddleware m = MustBuild(R"j({"forwardAuth":{
      "address":"http://auth:9000/verify","trustForwardHeader":true,
      "authResponseHeaders":["X-User","X-Org"],"authResponseHeadersRegex":"^X-Auth-",
      "authRequestHeaders":["Cookie"],"addAuthCookiesToResponse":["session"],"forwardBody":true,
      "maxBodySize":1024,"headerField":"X-User-Id","preserveLocationHeader":true,"preserveRequestMethod":true,
      "authSigninURL":"https://login.test/",
      "tls":{"ca":"/ca.pem","cert":"/c.pem","key":"/k.pem","insecureSkipVerify":true}}})j");
  ASSERT_TRUE(m.forward_auth.has_value());
  const ForwardAuthConfig& f = *m.forward_auth;
  EXPECT_EQ(f.address, "http://auth:9000/verify");
  EXPECT_TRUE(f.trust_forward_header);
  EXPECT_EQ(f.auth_response_headers, (std::vector<std::string>{"X-User", "X-Org"}));
  EXPECT_EQ(f.auth_response_headers_regex, "^X-Auth-");
  EXPECT_EQ(f.auth_request_headers, (std::vector<std::string>{"Cookie"}));
  EXPECT_EQ(f.add_auth_cookies_to_response, (std::vector<std::string>{"session"}));
  EXPECT_TRUE(f.forward_body);
  EXPECT_EQ(f.max_body_size, 1024);
  EXPECT_EQ(f.max_response_body_size, -1);
  EXPECT_EQ(f.header_field, "X-User-Id");
  EXPECT_TRUE(f.preserve_location_header);
  EXPECT_TRUE(f.preserve_request_method);
  EXPECT_EQ(f.auth_signin_url, "https://login.test/");
  EXPECT_EQ(f.tls_ca, "/ca.pem");
  EXPECT_EQ(f.tls_cert, "/c.pem");
  EXPECT_EQ(f.tls_key, "/k.pem");
  EXPECT_TRUE(f.tls_insecure_skip_verify);
  EXPECT_EQ(m.middleware, nullptr);

  BuiltMiddleware d = MustBuild(R"j({"forwardAuth":{"address":"http://auth"}})j");
  ASSERT_TRUE(d.forward_auth.has_value());
  EXPECT_FALSE(d.forward_auth->trust_forward_header);
  EXPECT_EQ(d.forward_auth->max_body_size, -1);
}

TEST(MiddlewareTest, Retry) {
  BuiltMiddleware m = MustBuild(R"j({"retry":{"attempts":3,"initialInterval":"100ms"}})j");
  ASSERT_TRUE(m.retry.has_value());
  EXPECT_EQ(m.retry->attempts, 3);
  EXPECT_EQ(m.retry->initial_interval, milliseconds(100));
  EXPECT_EQ(m.retry->max_request_body_bytes, 2 << 20);
  EXPECT_TRUE(m.retry->status.empty());

  BuiltMiddleware d = MustBuild(R"j({"retry":{"attempts":2,"status":["500-599","429"],"timeout":2}})j");
  ASSERT_TRUE(d.retry.has_value());
  EXPECT_EQ(d.retry->initial_interval, milliseconds(0)) << "Traefik's default: retry at once";
  EXPECT_EQ(d.retry->timeout, seconds(2));
  EXPECT_EQ(d.retry->status, (std::vector<std::pair<int, int>>{{500, 599}, {429, 429}}));
}

TEST(MiddlewareTest, Buffering) {
  BuiltMiddleware m = MustBuild(
      R"j({"buffering":{"maxRequestBodyBytes":2000000,"memResponseBodyBytes":10,"retryExpression":"IsNetworkError() && Attempts() < 2"}})j");
  ASSERT_TRUE(m.buffering.has_value());
  EXPECT_EQ(m.buffering->max_request_body_bytes, 2000000);
  EXPECT_EQ(m.buffering->mem_request_body_bytes, 1 << 20);
  EXPECT_EQ(m.buffering->max_response_body_bytes, 0);
  EXPECT_EQ(m.buffering->mem_response_body_bytes, 10);
  EXPECT_EQ(m.buffering->retry_expression, "IsNetworkError() && Attempts() < 2");
}

// ---- Configurations refused ----

TEST(MiddlewareTest, RefusesConfigurations) {
  const std::string long_regex = std::string(R"j({"stripPrefixRegex":{"regex":[")j") + std::string(5000, 'a') + R"j("]}})j";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{}", "invalid middleware type"},
      {R"j({"addPrefix":{"prefix":"/a"},"stripPrefix":{"prefixes":["/a"]}})j", "multi-types middleware not supported"},
      {R"j({"ipWhiteList":{"sourceRange":["10.0.0.0/8"]}})j", "unknown middleware type ipWhiteList"},
      {R"j({"compress":{"encodings":["deflate"]}})j", "compress: unsupported encoding: deflate"},
      {R"j({"errors":{"status":["5xx"],"service":"pages"}})j", "errors: creating HTTP code ranges"},
      {R"j({"errors":{"status":["500"],"service":"pages","statusRewrites":{"500":"x"}}})j",
       "errors: statusRewrites 500: x is not a status code"},
      {R"j({"errors":{"status":["500"]}})j", "errors: no service for the error pages"},
      {R"j({"compress":{"encodings":[]}})j", "compress: at least one encoding must be specified"},
      {R"j({"compress":{"defaultEncoding":"zstd","encodings":["gzip"]}})j", "compress: unsupported default encoding: zstd"},
      {R"j({"compress":{"excludedContentTypes":["text/plain"],"includedContentTypes":["text/html"]}})j",
       "compress: excludedContentTypes and includedContentTypes options are mutually exclusive"},
      {R"j({"compress":{"excludedContentTypes":["text/"]}})j",
       "compress: parsing excluded media type: mime: expected token after slash"},
      {R"j({"inFlightReq":{"amount":"1"}})j", "inFlightReq: amount: want an integer"},
      {R"j({"inFlightReq":{"amount":1,"sourceCriterion":{"requestHost":true,"requestHeaderName":"X"}}})j",
       "error creating requests limiter: requestHost and RequestHeaderName are mutually exclusive"},
      {R"j({"circuitBreaker":{"expression":"x"}})j", "circuitBreaker expression \"x\": x is not a function call"},
      {R"j({"circuitBreaker":{"expression":"NetworkErrorRatio() > 1"}})j", "expected float64, got int"},
      {R"j({"circuitBreaker":{"expression":"LatencyAtQuantileMS(50) > 100"}})j",
       "LatencyAtQuantileMS: argument 1: expected float64, got int"},
      {R"j({"circuitBreaker":{"expression":"ResponseCodeRatio(500, 600) > 0.5"}})j",
       "ResponseCodeRatio takes 4 arguments, got 2"},
      {R"j({"circuitBreaker":{"expression":"NetworkErrorRatio() > 0.5","responseCode":0}})j",
       "circuitBreaker: invalid responseCode 0"},
      {R"j({"digestAuth":{"users":["a:b"]}})j", "digestAuth: error parsing DigestUser: a:b"},
      {R"j({"passTLSClientCert":{"pem":"yes"}})j", "passTLSClientCert: pem: want a boolean"},
      {R"j({"passTLSClientCert":{"info":{"issuer":{"organizationalUnit":true}}}})j",
       "passTLSClientCert.info.issuer: unknown field organizationalUnit"},
      {R"j({"grpcWeb":{}})j", "middleware grpcWeb is not supported"},
      {R"j({"plugin":{"x":{}}})j", "middleware plugin is not supported"},
      {R"j({"stripPrefix":{"prefix":["/a"]}})j", "stripPrefix: unknown field prefix"},
      {R"j({"stripPrefix":{"prefixes":"/a"}})j", "stripPrefix: prefixes: want a list of strings"},
      {R"j({"stripPrefix":["/a"]})j", "stripPrefix: want an object"},
      {R"j({"addPrefix":{}})j", "prefix cannot be empty"},
      {R"j({"stripPrefixRegex":{"regex":["/a(b"]}})j", "missing )"},
      {long_regex, "longer than 4096 bytes"},
      {R"j({"stripPrefixRegex":{"regex":["(((a{100}){100}){100})"]}})j", "error parsing regexp"},
      {R"j({"replacePathRegex":{"regex":"[z-a]","replacement":"/"}})j", "error compiling regular expression [z-a]"},
      {R"j({"redirectRegex":{"regex":"(?<!x)","replacement":"/"}})j", "error parsing regexp"},
      {R"j({"redirectScheme":{"port":"443"}})j", "you must provide a target scheme"},
      {R"j({"headers":{}})j", "headers configuration not valid"},
      {R"j({"headers":{"accessControlAllowOriginListRegex":["("]}})j", "error occurred during origin parsing"},
      {R"j({"headers":{"frameDeny":"yes"}})j", "headers: frameDeny: want a boolean"},
      {R"j({"basicAuth":{"users":["no-colon"]}})j", "error parsing BasicUser: no-colon"},
      {R"j({"basicAuth":{"users":["a:b:c"]}})j", "error parsing BasicUser: a:b:c"},
      {R"j({"basicAuth":{"users":[]}})j", "no users found"},
      {R"j({"basicAuth":{"usersFile":"/etc/htpasswd"}})j", "usersFile is not supported"},
      {R"j({"ipAllowList":{"sourceRange":["10.0.0.0/33"]}})j", "invalid CIDR address: 10.0.0.0/33"},
      {R"j({"ipAllowList":{"sourceRange":["10.0.0.1/8","not-an-ip"]}})j", "invalid CIDR address: not-an-ip"},
      {R"j({"ipAllowList":{"sourceRange":["010.0.0.1"]}})j", "invalid CIDR address: 010.0.0.1"},
      {R"j({"ipAllowList":{"sourceRange":[]}})j", "sourceRange is empty"},
      {R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"rejectStatusCode":299}})j", "invalid HTTP status code 299"},
      {R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"excludedIPs":["x"]}}})j", "invalid CIDR address: x"},
      {R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"depth":1,"ipv6Subnet":129}}})j",
       "invalid IPv6 subnet 129"},
      {R"j({"ipAllowList":{"sourceRange":["10.0.0.0/8"],"ipStrategy":{"depht":1}}})j",
       "ipAllowList.ipStrategy: unknown field depht"},
      {R"j({"rateLimit":{"average":1,"period":"-1s"}})j", "negative value not valid for period: -1s"},
      {R"j({"rateLimit":{"average":1,"period":"1 sec"}})j", "rateLimit: period: time: invalid duration \"1 sec\""},
      {R"j({"rateLimit":{"sourceCriterion":{"ipStrategy":{},"requestHeaderName":"X"}}})j",
       "iPStrategy and RequestHeaderName are mutually exclusive"},
      {R"j({"rateLimit":{"sourceCriterion":{"requestHost":true,"requestHeaderName":"X"}}})j",
       "requestHost and RequestHeaderName are mutually exclusive"},
      {R"j({"rateLimit":{"average":1,"redis":{"endpoints":["r:6379"]}}})j", "redis is not supported"},
      {R"j({"retry":{}})j", "incorrect (or empty) value for attempt (0)"},
      {R"j({"retry":{"attempts":2,"status":["5xx"]}})j", "invalid status \"5xx\""},
      {R"j({"retry":{"attempts":2,"disableRetryOnNetworkError":true}})j", "requires at least HTTP status codes"},
      {R"j({"buffering":{"maxRequestBodyBytes":-1}})j", "max bytes should be >= 0 got -1"},
      {R"j({"forwardAuth":{"address":"http://a","authResponseHeadersRegex":"("}})j", "error compiling regular expression ("},
      {R"j({"chain":{"middlewares":[1]}})j", "chain: middlewares: want a list of strings"},
  };
  for (const auto& [config, words] : cases) {
    SCOPED_TRACE(config.substr(0, 200));
    Status s = BuildError(config);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(words));
  }
}

}  // namespace
}  // namespace paddock::edge
