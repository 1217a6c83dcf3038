#include "edge/rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

// Counts heap allocations, so a test can show that matching a plain request allocates nothing.
namespace {
std::atomic<long> g_allocations{0};
}  // namespace
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace paddock::edge {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A request, as the proxy would describe it; every field has a harmless default.
struct Req {
  std::string method = "GET";
  std::string host = "example.com";
  std::string path = "/";
  std::string query = "";
  std::string client_ip = "192.0.2.1";
  std::vector<std::pair<std::string, std::string>> headers = {};
};

class FactsOf {
 public:
  explicit FactsOf(const Req& r) {
    for (const auto& [k, v] : r.headers) lines_.emplace_back(k, v);
    facts_ = RequestFacts{r.method, r.host, r.path, r.query, r.client_ip, &lines_};
  }
  const RequestFacts& facts() const { return facts_; }

 private:
  std::vector<std::pair<std::string_view, std::string_view>> lines_;
  RequestFacts facts_;
};

struct Case {
  std::string rule;
  Req req;
  bool want;
};

void ExpectCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule + "  host=" + c.req.host + " path=" + c.req.path + " query=" + c.req.query +
                 " ip=" + c.req.client_ip + " method=" + c.req.method);
    StatusOr<Rule> rule = Rule::Parse(c.rule);
    ASSERT_TRUE(rule.ok()) << rule.status().message();
    EXPECT_EQ(rule->Matches(FactsOf(c.req).facts()), c.want);
  }
}

std::string ParseError(std::string_view rule) {
  StatusOr<Rule> r = Rule::Parse(rule);
  if (r.ok()) return "(parsed)";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Rule, HostComparesCaseInsensitivelyWithoutPortAndTrailingDot) {
  ExpectCases({
      {"Host(`example.com`)", {.host = "example.com"}, true},
      {"Host(`example.com`)", {.host = "example.com:8080"}, true},
      {"Host(`example.com`)", {.host = "EXAMPLE.COM"}, true},
      {"Host(`example.com`)", {.host = "Example.Com:443"}, true},
      {"Host(`example.com`)", {.host = "example.com."}, true},
      {"Host(`example.com`)", {.host = "example.org"}, false},
      {"Host(`example.com`)", {.host = "www.example.com"}, false},
      {"Host(`example.com`)", {.host = ""}, false},
      {"Host(`EXAMPLE.COM`)", {.host = "example.com"}, true},
      {"Host(`example.com.`)", {.host = "example.com"}, true},
      {"Host(`example.com.`)", {.host = "example.com."}, true},
      {"Host(`example.com.`)", {.host = "example.org."}, false},
      {"Host(`xn--9t9h.com`)", {.host = "xn--9t9h.com"}, true},
      {"Host(`::1`)", {.host = "[::1]:8080"}, true},
      {"Host(`::1`)", {.host = "[::1]"}, true},
      {"Host(`10.0.0.1`)", {.host = "10.0.0.1:80"}, true},
  });
}

TEST(Rule, HostWildcards) {
  ExpectCases({
      {"Host(`*.example.com`)", {.host = "test.example.com"}, true},
      {"Host(`*.example.com`)", {.host = "TEST.Example.COM:443"}, true},
      {"Host(`*.example.com`)", {.host = "a.b.example.com"}, false},
      {"Host(`*.example.com`)", {.host = "example.com"}, false},
      {"Host(`*.example.com`)", {.host = "test.otherexample.com"}, false},
      {"Host(`*`)", {.host = "localhost"}, true},
      {"Host(`*`)", {.host = ""}, true},
      {"!Host(`*`)", {.host = "localhost"}, false},
  });
}

TEST(Rule, DomainsAreTraefiksParseDomains) {
  auto rule = Rule::Parse("(Host(`A.Test`) && PathPrefix(`/a`)) || !Host(`b.test.`) || HostRegexp(`^c`) || Host(`*`)");
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  EXPECT_EQ(rule->Domains(), (std::vector<std::string>{"a.test", "b.test", "*"}));
  EXPECT_TRUE(Rule::Parse("PathPrefix(`/`)")->Domains().empty());
}

TEST(Rule, HostRegexpMatchesTheLowercasedHostUnanchored) {
  ExpectCases({
      {"HostRegexp(`^[a-zA-Z-]+\\.com$`)", {.host = "example.com:8080"}, true},
      {"HostRegexp(`^[a-zA-Z-]+\\.com$`)", {.host = "example.org"}, false},
      {"HostRegexp(`^[A-Z]+\\.com$`)", {.host = "EXAMPLE.com"}, false},
      {"HostRegexp(`example`)", {.host = "www.example.com"}, true},
      {"HostRegexp(`{domain:[a-zA-Z-]+\\.com}`)", {.host = "example.com"}, false},
      // Traefik also matches the CNAME-flattened host, "" when flattening is off.
      {"HostRegexp(`^$`)", {.host = "example.com"}, true},
      {"HostRegexp(`.*`)", {.host = ""}, true},
  });
}

TEST(Rule, PathAndPathPrefixUseTheRoutingPath) {
  ExpectCases({
      {"Path(`/css`)", {.path = "/css"}, true},
      {"Path(`/css`)", {.path = "/css/"}, false},
      {"Path(`/css`)", {.path = "/CSS"}, false},
      {"Path(`/css`)", {.path = "/"}, false},
      {"PathPrefix(`/css`)", {.path = "/css"}, true},
      {"PathPrefix(`/css`)", {.path = "/css/main.css"}, true},
      {"PathPrefix(`/css`)", {.path = "/cssx"}, true},  // a string prefix, not a segment
      {"PathPrefix(`/css`)", {.path = "/cs"}, false},
      {"PathPrefix(`/css`)", {.path = "/html"}, false},
      // Unreserved escapes are decoded...
      {"Path(`/foo bar`)", {.path = "/foo%20bar"}, true},
      {"Path(`/Go`)", {.path = "/%47%6f"}, true},
      {"PathPrefix(`/é`)", {.path = "/%C3%A9t%C3%A9"}, true},
      // ...reserved ones stay encoded, in upper case.
      {"Path(`/a%2Fb`)", {.path = "/a%2Fb"}, true},
      {"Path(`/a%2Fb`)", {.path = "/a%2fb"}, true},
      {"Path(`/a/b`)", {.path = "/a%2Fb"}, false},
      {"Path(`/a%25b`)", {.path = "/a%25b"}, true},
      {"Path(`/a?b`)", {.path = "/a%3Fb"}, false},
      // A raw path Go would not keep as it is, is re-escaped first: then ( ) stay encoded.
      {"Path(`/a(b)`)", {.path = "/a(b)"}, true},
      {"Path(`/{a}%28b%29`)", {.path = "/{a}(b)"}, true},
      {"Path(`/{a}/b`)", {.path = "/{a}%2Fb"}, true},
      // A bad escape matches no path matcher (Go's server answers 400 first).
      {"PathPrefix(`/`)", {.path = "/a%zz"}, false},
      {"PathPrefix(`/`)", {.path = "/a%4"}, false},
  });
}

TEST(Rule, PathRegexp) {
  ExpectCases({
      {"PathRegexp(`^/(css|js)`)", {.path = "/css/main.css"}, true},
      {"PathRegexp(`^/(css|js)`)", {.path = "/js"}, true},
      {"PathRegexp(`^/(css|js)`)", {.path = "/CSS"}, false},
      {"PathRegexp(`^/(css|js)`)", {.path = "/html"}, false},
      {"PathRegexp(`main`)", {.path = "/css/main.css"}, true},
      {"PathRegexp(\"/{path:(css|js)}\")", {.path = "/{path:css}"}, true},
      {"PathRegexp(\"/{path:(css|js)}\")", {.path = "/%7Bpath:css%7D/"}, true},
      {"PathRegexp(\"/{path:(css|js)}\")", {.path = "/css"}, false},
  });
}

TEST(Rule, MethodUppercasesTheArgumentOnly) {
  ExpectCases({
      {"Method(`GET`)", {.method = "GET"}, true},
      {"Method(`GET`)", {.method = "POST"}, false},
      {"Method(`GET`)", {.method = "get"}, false},
      {"Method(`get`)", {.method = "GET"}, true},
      {"Method(\"\u017Fet\")", {.method = "SET"}, true},  // Go's ToUpper('ſ') is 'S'
  });
}

TEST(Rule, HeaderMatchesAnyLineOfTheHeader) {
  using H = std::vector<std::pair<std::string, std::string>>;
  ExpectCases({
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"X-Forwarded-Proto", "https"}}}, true},
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"x-forwarded-proto", "https"}}}, true},
      {"Header(`x-forwarded-proto`, `https`)", {.headers = H{{"X-Forwarded-Proto", "https"}}}, true},
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"X-Forwarded-Proto", "http"}, {"X-Forwarded-Proto", "https"}}}, true},
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"X-Forwarded-Proto", "https"}, {"X-Forwarded-Proto", "http"}}}, true},
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"X-Forwarded-Proto", "http, https"}}}, false},
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"X-Forwarded-Proto", "HTTPS"}}}, false},
      {"Header(`X-Forwarded-Proto`, `https`)", {.headers = H{{"X-Forwarded-Host", "https"}}}, false},
      {"Header(`X-Forwarded-Proto`, `https`)", {}, false},
      // Go's server holds these outside req.Header.
      {"Header(`Host`, `example.com`)", {.headers = H{{"Host", "example.com"}}}, false},
      {"Header(`Transfer-Encoding`, `chunked`)", {.headers = H{{"Transfer-Encoding", "chunked"}}}, false},
      {"HeaderRegexp(`X-Forwarded-Proto`, `^https?$`)", {.headers = H{{"X-Forwarded-Proto", "http"}}}, true},
      {"HeaderRegexp(`X-Forwarded-Proto`, `^https?$`)", {.headers = H{{"X-Forwarded-Proto", "HTTPS"}}}, false},
      {"HeaderRegexp(`X-Forwarded-Proto`, `^https?$`)", {.headers = H{{"X-Forwarded-Proto", "ws"}, {"X-Forwarded-Proto", "https"}}}, true},
      {"HeaderRegexp(`X-Forwarded-Proto`, `http{secure:s?}`)", {.headers = H{{"X-Forwarded-Proto", "http{secure:s}"}}}, true},
      {"HeaderRegexp(`X-Forwarded-Proto`, `http{secure:s?}`)", {.headers = H{{"X-Forwarded-Proto", "https"}}}, false},
  });
}

TEST(Rule, QueryDecodesAsGoParseQuery) {
  ExpectCases({
      {"Query(`q`, `traefik`)", {.query = "q=traefik"}, true},
      {"Query(`q`, `traefik`)", {.query = "rel=ddg&q=traefik"}, true},
      {"Query(`q`, `traefik`)", {.query = "q=traefik&q=proxy"}, true},
      {"Query(`q`, `traefik`)", {.query = "q=awesome&q=traefik"}, true},
      {"Query(`q`, `traefik`)", {.query = "q=nginx"}, false},
      {"Query(`q`, `traefik`)", {.query = "q=TRAEFIK"}, false},
      {"Query(`q`, `traefik`)", {.query = "Q=traefik"}, false},
      {"Query(`q`, `traefik`)", {.query = ""}, false},
      {"Query(`a`, `1`)", {.query = "a=1&a=2"}, true},
      {"Query(`a`, `2`)", {.query = "a=1&a=2"}, true},
      {"Query(`a`, `3`)", {.query = "a=1&a=2"}, false},
      // One argument: the parameter with an empty value.
      {"Query(`mobile`)", {.query = "mobile"}, true},
      {"Query(`mobile`)", {.query = "mobile="}, true},
      {"Query(`mobile`)", {.query = "x=1&&mobile&y"}, true},
      {"Query(`mobile`)", {.query = "mobile=true"}, false},
      {"Query(`mobile`)", {.query = ""}, false},
      // Percent-encoding and '+', in keys and values.
      {"Query(`q`, `a b`)", {.query = "q=a%20b"}, true},
      {"Query(`q`, `a b`)", {.query = "q=a+b"}, true},
      {"Query(`q`, `a+b`)", {.query = "q=a%2Bb"}, true},
      {"Query(`q`, `a+b`)", {.query = "q=a+b"}, false},
      {"Query(`k y`, `v`)", {.query = "k+y=v"}, true},
      {"Query(`k y`, `v`)", {.query = "k%20y=v"}, true},
      {"Query(`q`, `a=b`)", {.query = "q=a=b"}, true},
      {"Query(`q`, `é`)", {.query = "q=%C3%A9"}, true},
      // A pair with a bad escape is dropped, the others stay.
      {"Query(`q`, `x`)", {.query = "q=%zz&q=x"}, true},
      {"Query(`q`, `%zz`)", {.query = "q=%zz"}, false},
      {"Query(`q`, `x`)", {.query = "q%=x"}, false},
      {"Query(`q`, `x`)", {.query = "q=x%"}, false},
      // A pair with a ';' is dropped (Go 1.17+); the entry point has turned ';' into '&' before.
      {"Query(`a`, `1`)", {.query = "a=1;b=2"}, false},
      {"Query(`a`, `1`)", {.query = "b=2;c&a=1"}, true},
      // Past 10000 parameters, Go's ParseQuery returns none.
      {"Query(`a`, `1`)", {.query = std::string(9999, '&') + "a=1"}, true},
      {"Query(`a`, `1`)", {.query = std::string(10000, '&') + "a=1"}, false},
      {"QueryRegexp(`q`, `^tra`)", {.query = "q=traefik"}, true},
      {"QueryRegexp(`q`, `^tra`)", {.query = "q=%74raefik"}, true},
      {"QueryRegexp(`q`, `^tra`)", {.query = "q=xtra"}, false},
      {"QueryRegexp(`q`, `^a b$`)", {.query = "q=a+b"}, true},
      {"QueryRegexp(`q`, `.`)", {.query = "q=%zz"}, false},
      {"QueryRegexp(`mobile`)", {.query = "mobile"}, true},
      {"QueryRegexp(`mobile`)", {.query = "mobile=1"}, false},
  });
}

TEST(Rule, ClientIPWithAddressesAndRanges) {
  ExpectCases({
      {"ClientIP(`127.0.0.1`)", {.client_ip = "127.0.0.1"}, true},
      {"ClientIP(`127.0.0.1`)", {.client_ip = "127.0.0.1:5000"}, true},
      {"ClientIP(`127.0.0.1`)", {.client_ip = "::ffff:127.0.0.1"}, true},
      {"ClientIP(`127.0.0.1`)", {.client_ip = "192.168.1.1"}, false},
      {"ClientIP(`127.0.0.1`)", {.client_ip = "1"}, false},
      {"ClientIP(`127.0.0.1`)", {.client_ip = ""}, false},
      {"ClientIP(`192.168.1.0/24`)", {.client_ip = "192.168.1.100"}, true},
      {"ClientIP(`192.168.1.0/24`)", {.client_ip = "192.168.2.1"}, false},
      {"ClientIP(`192.168.1.0/24`)", {.client_ip = "[::ffff:192.168.1.7]:80"}, true},
      {"ClientIP(`10.0.0.1/8`)", {.client_ip = "10.200.0.1"}, true},  // host bits are masked
      {"ClientIP(`0.0.0.0/0`)", {.client_ip = "10.0.0.1"}, true},
      {"ClientIP(`0.0.0.0/0`)", {.client_ip = "::1"}, false},
      {"ClientIP(`0.0.0.0/0`)", {.client_ip = "010.0.0.1"}, false},  // Go refuses leading zeros
      {"ClientIP(`2001:db8::/32`)", {.client_ip = "2001:db8::1"}, true},
      {"ClientIP(`2001:db8::/32`)", {.client_ip = "[2001:db8:ffff::1]:443"}, true},
      {"ClientIP(`2001:db8::/32`)", {.client_ip = "2001:db9::1"}, false},
      {"ClientIP(`2001:db8::/32`)", {.client_ip = "10.0.0.1"}, false},
      {"ClientIP(`::1`)", {.client_ip = "::1"}, true},
      {"ClientIP(`::1`)", {.client_ip = "[::1]:80"}, true},
      {"ClientIP(`::1`)", {.client_ip = "127.0.0.1"}, false},
      {"ClientIP(`fe80::/10`)", {.client_ip = "fe80::1%eth0"}, true},  // the zone is dropped
      {"ClientIP(`::/0`)", {.client_ip = "::2"}, true},
      {"ClientIP(`::/0`)", {.client_ip = "10.0.0.1"}, false},  // an IPv4 client is not in an IPv6 range
      {"ClientIP(`::ffff:0:0/96`)", {.client_ip = "10.0.0.1"}, true},  // ...unless Go's IPNet maps it
      {"ClientIP(`::ffff:10.0.0.0/104`)", {.client_ip = "10.9.9.9"}, true},
      {"!ClientIP(`10.0.0.0/8`)", {.client_ip = "garbage"}, true},
  });
}

TEST(Rule, OperatorsPrecedenceNegationAndParentheses) {
  const std::string a_or_b_and_x = "Host(`a.test`) || Host(`b.test`) && Path(`/x`)";
  const std::string grouped = "(Host(`a.test`) || Host(`b.test`)) && Path(`/x`)";
  ExpectCases({
      {a_or_b_and_x, {.host = "a.test", .path = "/y"}, true},  // && binds tighter
      {a_or_b_and_x, {.host = "b.test", .path = "/y"}, false},
      {a_or_b_and_x, {.host = "b.test", .path = "/x"}, true},
      {grouped, {.host = "a.test", .path = "/y"}, false},
      {grouped, {.host = "a.test", .path = "/x"}, true},
      {"!Host(`a.test`)", {.host = "a.test"}, false},
      {"!Host(`a.test`)", {.host = "b.test"}, true},
      {"!!Host(`a.test`)", {.host = "a.test"}, true},
      {"!Host(`a.test`) && Path(`/x`)", {.host = "b.test", .path = "/x"}, true},  // ! binds tightest
      {"!Host(`a.test`) && Path(`/x`)", {.host = "a.test", .path = "/x"}, false},
      {"!(Host(`a.test`) && Path(`/x`))", {.host = "a.test", .path = "/x"}, false},
      {"!(Host(`a.test`) && Path(`/x`))", {.host = "a.test", .path = "/y"}, true},
      {"!(Host(`a.test`) || Path(`/x`))", {.host = "b.test", .path = "/y"}, true},
      {"Host(`a.test`)&&Path(`/x`)||Method(`POST`)", {.method = "POST", .host = "z"}, true},
      {"((((Host(`a.test`)))))", {.host = "a.test"}, true},
  });
}

TEST(Rule, GoSyntaxDetails) {
  ExpectCases({
      // Names as written, lower, upper or capitalised.
      {"host(`a.test`)", {.host = "a.test"}, true},
      {"HOST(`a.test`)", {.host = "a.test"}, true},
      {"PATHPREFIX(`/`)", {}, true},
      {"Pathprefix(`/`)", {}, true},
      {"pathprefix(`/`)", {}, true},
      {"Clientip(`192.0.2.1`)", {}, true},
      // Double-quoted arguments with Go's escapes; raw ones drop '\r'.
      {"Host(\"a.test\")", {.host = "a.test"}, true},
      {"Path(\"/a\\x20b\\u00e9\")", {.path = "/a%20b%C3%A9"}, true},
      {"Path(`/a\r`)", {.path = "/a"}, true},
      {"Path(`/a\\x20`)", {.path = "/a\\x20"}, true},
      // Whitespace, newlines after an operator, comments, a trailing comma.
      {"Host(`a.test`) &&\n\tPath(`/x`)\n", {.host = "a.test", .path = "/x"}, true},
      {"Host(`a.test`) /* c */ && Path(`/x`) // end", {.host = "a.test", .path = "/x"}, true},
      {"Host(`a.test`,)", {.host = "a.test"}, true},
      {"\xEF\xBB\xBFHost(`a.test`)", {.host = "a.test"}, true},
  });
}

TEST(Rule, ErrorsInTraefiksWords) {
  struct E {
    std::string rule, message;
  };
  std::vector<E> cases = {
      {"Foo(`a`)", "error while parsing rule Foo(`a`): parsing rule Foo(`a`): unsupported function: Foo"},
      {"pathPrefix(`/`)", "error while parsing rule pathPrefix(`/`): parsing rule pathPrefix(`/`): unsupported function: pathPrefix"},
      {"Host(`a`, `b`)",
       "error while parsing rule Host(`a`, `b`): adding rule Host(`a`, `b`): error while adding rule Host: "
       "unexpected number of parameters; got 2, expected one of [1]"},
      {"ClientIP(`127.0.0.1`, `10.0.0.0/8`)",
       "error while parsing rule ClientIP(`127.0.0.1`, `10.0.0.0/8`): adding rule ClientIP(`127.0.0.1`, `10.0.0.0/8`): "
       "error while adding rule ClientIP: unexpected number of parameters; got 2, expected one of [1]"},
      {"Query(`q`, `a`, `b`)",
       "error while parsing rule Query(`q`, `a`, `b`): adding rule Query(`q`, `a`, `b`): error while adding rule Query: "
       "unexpected number of parameters; got 3, expected one of [1 2]"},
      {"Header(`X`)",
       "error while parsing rule Header(`X`): adding rule Header(`X`): error while adding rule Header: "
       "unexpected number of parameters; got 1, expected one of [2]"},
      {"Host()", "error while parsing rule Host(): adding rule Host(): error while checking rule Host: no args for matcher Host"},
      {"Host(``)", "error while parsing rule Host(``): adding rule Host(``): error while checking rule Host: empty args for matcher Host, []"},
      {"Header(`a`, ``)",
       "error while parsing rule Header(`a`, ``): adding rule Header(`a`, ``): error while checking rule Header: "
       "empty args for matcher Header, [a ]"},
      {"Path(`css`)",
       "error while parsing rule Path(`css`): adding rule Path(`css`): error while adding rule Path: path \"css\" does not start with a '/'"},
      {"PathPrefix(`css`)",
       "error while parsing rule PathPrefix(`css`): adding rule PathPrefix(`css`): error while adding rule PathPrefix: "
       "path \"css\" does not start with a '/'"},
      {"Host(`\xF0\x9F\xA6\xAD.com`)",
       "error while parsing rule Host(`\xF0\x9F\xA6\xAD.com`): adding rule Host(`\xF0\x9F\xA6\xAD.com`): error while adding rule Host: "
       "invalid value \"\xF0\x9F\xA6\xAD.com\" for Host matcher, non-ASCII characters are not allowed"},
      {"HostRegexp(`(example.com`)",
       "error while parsing rule HostRegexp(`(example.com`): adding rule HostRegexp(`(example.com`): error while adding rule HostRegexp: "
       "compiling HostRegexp matcher: error parsing regexp: missing closing ): `(example.com`"},
      {"PathRegexp(`/(css`)",  // Traefik's own wording names PathPrefix here
       "error while parsing rule PathRegexp(`/(css`): adding rule PathRegexp(`/(css`): error while adding rule PathRegexp: "
       "compiling PathPrefix matcher: error parsing regexp: missing closing ): `/(css`"},
      {"HeaderRegexp(`X`, `a**`)",
       "error while parsing rule HeaderRegexp(`X`, `a**`): adding rule HeaderRegexp(`X`, `a**`): error while adding rule HeaderRegexp: "
       "compiling HeaderRegexp matcher: error parsing regexp: invalid nested repetition operator: `**`"},
      {"ClientIP(`1`)",
       "error while parsing rule ClientIP(`1`): adding rule ClientIP(`1`): error while adding rule ClientIP: "
       "initializing IP checker for ClientIP matcher: parsing CIDR trusted IPs <nil>: invalid CIDR address: 1"},
      {"ClientIP(`10.0.0.0/33`)",
       "error while parsing rule ClientIP(`10.0.0.0/33`): adding rule ClientIP(`10.0.0.0/33`): error while adding rule ClientIP: "
       "initializing IP checker for ClientIP matcher: parsing CIDR trusted IPs <nil>: invalid CIDR address: 10.0.0.0/33"},
      // A left operand's error is wrapped once per join above it; `!` turns and into or.
      {"Host() && Host(`a`)",
       "error while parsing rule Host() && Host(`a`): adding rule Host() && Host(`a`): error while adding rule and: "
       "error while checking rule Host: no args for matcher Host"},
      {"Host(`a`) && Host()",
       "error while parsing rule Host(`a`) && Host(): adding rule Host(`a`) && Host(): "
       "error while checking rule Host: no args for matcher Host"},
      {"!(Host() || Host(`a`)) && Path(`/`)",
       "error while parsing rule !(Host() || Host(`a`)) && Path(`/`): adding rule !(Host() || Host(`a`)) && Path(`/`): "
       "error while adding rule and: error while adding rule and: error while checking rule Host: no args for matcher Host"},
      // predicate's errors come before any matcher's, wherever they are.
      {"Host() && Foo(`a`)", "error while parsing rule Host() && Foo(`a`): parsing rule Host() && Foo(`a`): unsupported function: Foo"},
      {"`a`", "error while parsing rule `a`: obtaining build tree"},
      {"foo", "error while parsing rule foo: parsing rule foo: foo is not defined"},
      {"Host(`a`) == Host(`b`)", "error while parsing rule Host(`a`) == Host(`b`): parsing rule Host(`a`) == Host(`b`): == is not supported"},
      {"-Host(`a`)", "error while parsing rule -Host(`a`): parsing rule -Host(`a`): - is not supported"},
      {"Host(1)", "error while parsing rule Host(1): parsing rule Host(1): reflect: cannot use int as type string in Call"},
      {"Host(Path(`/`))",
       "error while parsing rule Host(Path(`/`)): parsing rule Host(Path(`/`)): reflect: cannot use rules.TreeBuilder as type string in Call"},
      {"!`a`", "error while parsing rule !`a`: parsing rule !`a`: reflect: Call using string as type rules.TreeBuilder"},
      {"Host(`a`) && `b`",
       "error while parsing rule Host(`a`) && `b`: parsing rule Host(`a`) && `b`: reflect: Call using string as type rules.TreeBuilder"},
      // Syntax errors: Go's position, our words.
      {"", "error while parsing rule : parsing rule : 1:1: expected operand, found 'EOF'"},
      {"Host(`a`", "error while parsing rule Host(`a`: parsing rule Host(`a`: 1:9: missing ',' before newline in argument list"},
      {"Host(`a`) Path(`/`)", "error while parsing rule Host(`a`) Path(`/`): parsing rule Host(`a`) Path(`/`): 1:11: expected 'EOF', found Path"},
      {"Host(`a`)\n&& Path(`/`)",
       "error while parsing rule Host(`a`)\n&& Path(`/`): parsing rule Host(`a`)\n&& Path(`/`): 2:1: expected 'EOF', found '&&'"},
      {"(Host(`a`)", "error while parsing rule (Host(`a`): parsing rule (Host(`a`): 1:11: expected ')', found newline"},
      {"Host(`a)", "error while parsing rule Host(`a): parsing rule Host(`a): 1:6: raw string literal not terminated"},
      {"Host(\"a\\q\")", "error while parsing rule Host(\"a\\q\"): parsing rule Host(\"a\\q\"): 1:9: unknown escape sequence"},
      {"Host(`a`) @", "error while parsing rule Host(`a`) @: parsing rule Host(`a`) @: 1:11: invalid character U+0040 '@'"},
      {std::string("Host(`a\xff`)"), "error while parsing rule Host(`a\xff`): parsing rule Host(`a\xff`): 1:8: illegal UTF-8 encoding"},
  };
  for (const E& c : cases) {
    SCOPED_TRACE(c.rule);
    EXPECT_EQ(ParseError(c.rule), c.message);
  }
}

TEST(Rule, TextLengthAndDefaultPriority) {
  StatusOr<Rule> r = Rule::Parse("Host(`a.test`)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text(), "Host(`a.test`)");
  EXPECT_EQ(r->DefaultPriority(), 14);
  // Go's len(string): bytes, not characters.
  StatusOr<Rule> utf8 = Rule::Parse("Path(`/\xC3\xA9`)");
  ASSERT_TRUE(utf8.ok());
  EXPECT_EQ(utf8->DefaultPriority(), 11);
  // Copies share the tree and match alike.
  Rule copy = *r;
  Req req{.host = "a.test"};
  EXPECT_TRUE(copy.Matches(FactsOf(req).facts()));
}

TEST(Rule, BoundsOnHostileText) {
  // Length: up to 64 KiB.
  std::string exact = "Path(`/" + std::string(kMaxRuleBytes - 9, 'a') + "`)";
  ASSERT_EQ(exact.size(), kMaxRuleBytes);
  EXPECT_TRUE(Rule::Parse(exact).ok());
  EXPECT_THAT(ParseError(exact + " "), HasSubstr("over the limit of 65536"));
  EXPECT_THAT(ParseError(std::string(kMaxRuleBytes + 1, '(')), HasSubstr("over the limit"));

  // Nesting: parentheses, `!` and calls count, up to 100.
  EXPECT_TRUE(Rule::Parse(Repeat("(", 99) + "Host(`a`)" + Repeat(")", 99)).ok());
  EXPECT_THAT(ParseError(Repeat("(", 100) + "Host(`a`)" + Repeat(")", 100)), HasSubstr("nests deeper than 100 levels"));
  EXPECT_TRUE(Rule::Parse(Repeat("!", 99) + "Host(`a`)").ok());
  EXPECT_THAT(ParseError(Repeat("!", 100) + "Host(`a`)"), HasSubstr("nests deeper than 100 levels"));
  EXPECT_THAT(ParseError(std::string(60000, '(')), HasSubstr("nests deeper"));
  EXPECT_THAT(ParseError(std::string(60000, '!')), HasSubstr("nests deeper"));
  EXPECT_THAT(ParseError(Repeat("Host(", 10000)), HasSubstr("nests deeper"));

  // A long chain is wide, not deep: thousands of terms parse and match.
  std::string chain;
  for (int i = 0; i < 3000; ++i) chain += "Host(`h" + std::to_string(i) + "`) || ";
  chain += "Host(`last`)";
  StatusOr<Rule> wide = Rule::Parse(chain);
  ASSERT_TRUE(wide.ok()) << wide.status().message();
  EXPECT_TRUE(wide->Matches(FactsOf(Req{.host = "last"}).facts()));
  EXPECT_TRUE(wide->Matches(FactsOf(Req{.host = "h1234"}).facts()));
  EXPECT_FALSE(wide->Matches(FactsOf(Req{.host = "h3000"}).facts()));
  std::string and_chain = Repeat("PathPrefix(`/`) && ", 3000) + "Path(`/x`)";
  StatusOr<Rule> deep_and = Rule::Parse(and_chain);
  ASSERT_TRUE(deep_and.ok());
  EXPECT_TRUE(deep_and->Matches(FactsOf(Req{.path = "/x"}).facts()));
  // The error of the first of 3000 joined terms is wrapped 3000 times, as Traefik's is.
  EXPECT_THAT(ParseError("Host() && " + and_chain), HasSubstr(Repeat("error while adding rule and: ", 3001) + "error while checking"));

  // Regular expressions: bounded length, count and memory.
  EXPECT_TRUE(Rule::Parse("PathRegexp(`" + std::string(kMaxPatternBytes, 'a') + "`)").ok());
  EXPECT_THAT(ParseError("PathRegexp(`" + std::string(kMaxPatternBytes + 1, 'a') + "`)"),
              HasSubstr("compiling PathPrefix matcher: the pattern is longer than 4096 bytes"));
  EXPECT_TRUE(Rule::Parse(Repeat("PathRegexp(`a`) || ", kMaxRegexps - 1) + "PathRegexp(`b`)").ok());
  EXPECT_THAT(ParseError(Repeat("PathRegexp(`a`) || ", kMaxRegexps) + "PathRegexp(`b`)"), HasSubstr("more than 32 regular expressions"));
  EXPECT_THAT(ParseError("PathRegexp(`\\pL{1000}\\pL{1000}`)"), HasSubstr("error parsing regexp: expression too large"));
  EXPECT_THAT(ParseError("PathRegexp(`((a{100}){100}){100}`)"), HasSubstr("error parsing regexp: invalid repeat count"));
}

TEST(Rule, MatchingAPlainRequestDoesNotAllocate) {
  StatusOr<Rule> r = Rule::Parse(
      "Host(`example.com`) && PathPrefix(`/api`) && Method(`GET`) && Header(`X-A`, `1`) && Query(`q`, `a b`) && "
      "ClientIP(`192.0.2.0/24`) && HostRegexp(`^ex`) && PathRegexp(`/v[0-9]`) && QueryRegexp(`q`, `^a`)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  Req matching{.host = "example.com:8443", .path = "/api/v1/users", .query = "x=1&q=a+b", .headers = {{"x-a", "1"}}};
  Req other = matching;
  other.query = "x=1&q=ab";
  FactsOf a(matching), b(other);
  // RE2 builds its DFA states on first use; a warmed-up rule allocates nothing per request.
  ASSERT_TRUE(r->Matches(a.facts()));
  ASSERT_FALSE(r->Matches(b.facts()));
  long before = g_allocations.load();
  bool first = r->Matches(a.facts());
  bool second = r->Matches(b.facts());
  long allocations = g_allocations.load() - before;
  EXPECT_TRUE(first);
  EXPECT_FALSE(second);
  EXPECT_EQ(allocations, 0);
}

// Random and garbled rules: parsing either succeeds or fails with InvalidArgument, never crashes
// or hangs, and whatever parses can be matched.
TEST(Rule, SurvivesGarbledText) {
  const std::vector<std::string> pieces = {
      "Host", "HostRegexp", "Path", "PathPrefix", "PathRegexp", "Method", "Header", "HeaderRegexp", "Query",
      "QueryRegexp", "ClientIP", "Label", "LabelRegex", "host", "(", ")", "(", ")", "`", "\"", ",", " && ",
      " || ", "!", " ", "\n", "\r", "\t", "a", "/", "\\", "*", "%", "%2F", "{", "}", "[", "]", ".", "==", "-", "+",
      "1", "0x1F", "1.5e3", "'x'", "10.0.0.0/8", "::1", "fe80::1%eth0", "\xff", "\xC3\xA9", std::string(1, '\0'),
      "/*", "*/", "//", "`a`", "\"b\"", "`(`", "`.*`", "`^$`", "\\x41", "\\u00e9", "\\777", "...", "<-", ":=",
  };
  const std::vector<std::string> seeds = {
      "Host(`a.test`) && PathPrefix(`/api`) || !Method(`POST`)",
      "(HostRegexp(`^[a-z]+\\.test$`) || ClientIP(`10.0.0.0/8`)) && Query(`q`, \"x\\ty\")",
      "Header(`X-A`, `1`) && !(QueryRegexp(`k`) || PathRegexp(`^/v[0-9]+`))",
      "Label(`a`, `b`) && !LabelRegex(`c`, `d.*`)",
  };
  std::mt19937 rng(20261201);
  Req reqs[] = {
      {},
      {.method = "POST", .host = "A.TEST:1", .path = "/api/%2F%zz", .query = "q=x%09y&k", .client_ip = "10.1.2.3",
       .headers = {{"X-A", "1"}}},
      {.host = "[::1]", .path = "/{a}(b)", .query = "%&=;;&&", .client_ip = "[fe80::1%lo]:9"},
  };
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text;
    switch (iter % 3) {
      case 0: {
        int n = std::uniform_int_distribution<int>(0, 24)(rng);
        for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
        break;
      }
      case 1: {
        text = seeds[rng() % seeds.size()];
        int edits = std::uniform_int_distribution<int>(1, 4)(rng);
        for (int e = 0; e < edits && !text.empty(); ++e) {
          std::size_t at = rng() % text.size();
          switch (rng() % 3) {
            case 0: text.erase(at, 1); break;
            case 1: text.insert(at, pieces[rng() % pieces.size()]); break;
            default: text[at] = static_cast<char>(rng() % 256); break;
          }
        }
        break;
      }
      default: {
        int n = std::uniform_int_distribution<int>(0, 64)(rng);
        for (int i = 0; i < n; ++i) text.push_back(static_cast<char>(rng() % 256));
        break;
      }
    }
    StatusOr<Rule> rule = Rule::Parse(text);
    if (rule.ok()) {
      ++parsed;
      EXPECT_EQ(rule->DefaultPriority(), static_cast<int>(text.size()));
      for (const Req& req : reqs) rule->Matches(FactsOf(req).facts());
    } else {
      EXPECT_EQ(rule.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_FALSE(rule.status().message().empty());
    }
    StatusOr<Constraint> constraint = Constraint::Parse(text);
    if (constraint.ok()) {
      constraint->Matches({{"a", "b"}, {"c", "ddd"}});
    } else {
      EXPECT_EQ(constraint.status().code(), StatusCode::kInvalidArgument) << text;
    }
  }
  EXPECT_GT(parsed, 100);  // the generator does reach the matchers
}

// ------------------------------------------------------------------------------------------------

TEST(Constraint, MatchesLabelsAsTraefik) {
  const std::map<std::string, std::string> labels = {{"hello", "world"}, {"foo", "bar"}};
  struct C {
    std::string expr;
    bool want;
  };
  std::vector<C> cases = {
      {"", true},
      {"Label(\"hello\", \"world\")", true},
      {"Label(\"hello\", \"worlds\")", false},
      {"Label(\"hi\", \"world\")", false},
      {"!Label(\"hello\", \"world\")", false},
      {"Label(\"hello\", \"world\") && Label(\"foo\", \"bar\")", true},
      {"Label(\"hello\", \"worlds\") && Label(\"foo\", \"bar\")", false},
      {"Label(\"hello\", \"world\") && !Label(\"foo\", \"bar\")", false},
      {"Label(\"hello\", \"world\") || Label(\"foo\", \"bar\")", true},
      {"Label(\"hello\", \"worlds\") || Label(\"foo\", \"bar\")", true},
      {"Label(\"hello\", \"world\") || !Label(\"foo\", \"bar\")", true},
      {"Label(`hi`, ``)", true},  // an absent label is ""
      {"LabelRegex(\"hello\", \"w\\\\w+\")", true},
      {"LabelRegex(\"hello\", \"w\\\\w+s\")", false},
      {"LabelRegex(\"hi\", \"w\\\\w+\")", false},
      {"!LabelRegex(\"hello\", \"w\\\\w+\")", false},
      {"LabelRegex(`hello`, `orl`)", true},  // unanchored, as regexp.MatchString
      {"LabelRegex(`hello`, `^orl`)", false},
      {"LabelRegex(`hi`, `^$`)", true},
      {"LabelRegex(`hello`, `(`)", false},  // a bad pattern matches nothing...
      {"!LabelRegex(`hello`, `(`)", true},  // ...so its negation matches everything
      {"(Label(`foo`, `bar`) || Label(`foo`, `baz`)) && !Label(`hello`, `x`)", true},
      {"Label(`rise.dev/controller-class`, `rise`)", false},
  };
  for (const C& c : cases) {
    SCOPED_TRACE(c.expr);
    StatusOr<Constraint> constraint = Constraint::Parse(c.expr);
    ASSERT_TRUE(constraint.ok()) << constraint.status().message();
    EXPECT_EQ(constraint->Matches(labels), c.want);
  }
  StatusOr<Constraint> rise = Constraint::Parse("Label(`rise.dev/controller-class`, `rise`)");
  ASSERT_TRUE(rise.ok());
  EXPECT_TRUE(rise->Matches({{"rise.dev/controller-class", "rise"}}));
}

TEST(Constraint, ErrorsInPredicatesWords) {
  struct E {
    std::string expr, message;
  };
  std::vector<E> cases = {
      {"Label(\"hello\")", "reflect: Call with too few input arguments"},
      {"Label(`a`, `b`, `c`)", "reflect: Call with too many input arguments"},
      {"Foo(\"hello\")", "unsupported function: Foo"},
      {"label(`a`, `b`)", "unsupported function: label"},
      {"Host(`a`)", "unsupported function: Host"},
      {"Label(`a`, 1)", "reflect: Call using int as type string"},
      {"!`a`", "reflect: Call using string as type constraints.constraintLabelFunc"},
      {"`a`", "not a constraintLabelFunc"},
      {" ", "1:2: expected operand, found 'EOF'"},
  };
  for (const E& c : cases) {
    SCOPED_TRACE(c.expr);
    StatusOr<Constraint> constraint = Constraint::Parse(c.expr);
    ASSERT_FALSE(constraint.ok());
    EXPECT_EQ(constraint.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(constraint.status().message(), c.message);
  }
  EXPECT_THAT(Constraint::Parse("LabelRegex(`a`, `" + std::string(kMaxPatternBytes + 1, 'a') + "`)").status().message(),
              StartsWith("LabelRegex: the pattern is longer than 4096 bytes"));
  EXPECT_FALSE(Constraint::Parse(Repeat("(", 101) + "Label(`a`, `b`)" + Repeat(")", 101)).ok());
}

}  // namespace
}  // namespace paddock::edge
