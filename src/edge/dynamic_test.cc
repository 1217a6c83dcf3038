// edge/dynamic: Traefik's dynamic configuration from labels (DecodeLabels) and from JSON
// (CheckDynamic), and Go durations both ways. Each case is a label set (or a document) and the
// exact tree Traefik's parser would make of it, or the refusal and the label (path) it names.
#include "edge/dynamic.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <ostream>
#include <string>

namespace paddock::edge {
namespace {

using Labels = std::map<std::string, std::string>;

template <typename Case>
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

// ---------------------------------------------------------------------------------------------
// DecodeLabels: label sets and the trees they make.

struct DecodeCase {
  std::string name;
  Labels labels;
  std::string expected;  // JSON
};

void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

class DecodeLabelsTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeLabelsTest, MakesTraefiksTree) {
  const DecodeCase& c = GetParam();
  StatusOr<boost::json::object> got = DecodeLabels(c.labels);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  boost::json::value expected = boost::json::parse(c.expected);
  EXPECT_EQ(boost::json::value(*got), expected)
      << "got:      " << boost::json::serialize(*got) << "\nexpected: " << boost::json::serialize(expected);
}

INSTANTIATE_TEST_SUITE_P(
    Labels, DecodeLabelsTest,
    ::testing::Values(
        // What Rise emits today (research note §1.5), plus labels of other kinds it carries.
        DecodeCase{"RiseLabelSet",
                   {{"traefik.enable", "true"},
                    {"rise.dev/controller-class", "default"},
                    {"traefik.http.routers.myapp.rule", "Host(`myapp.example.com`)"},
                    {"traefik.http.routers.myapp.entrypoints", "websecure"},
                    {"traefik.http.routers.myapp.service", "myapp"},
                    {"traefik.http.routers.myapp.priority", "100"},
                    {"traefik.http.routers.myapp.middlewares", "myapp-auth"},
                    {"traefik.http.routers.myapp.tls", "true"},
                    {"traefik.http.routers.myapp.tls.certresolver", "letsencrypt"},
                    {"traefik.http.services.myapp.loadbalancer.server.port", "8080"},
                    {"traefik.http.services.myapp.loadbalancer.healthcheck.path", "/health"},
                    {"traefik.http.services.myapp.loadbalancer.healthcheck.interval", "10s"},
                    {"traefik.http.services.myapp.loadbalancer.healthcheck.timeout", "5s"},
                    {"traefik.http.services.myapp.loadbalancer.healthcheck.scheme", "http"},
                    {"traefik.http.middlewares.myapp-auth.forwardauth.address", "http://auth:9000/verify"},
                    {"traefik.http.middlewares.myapp-auth.forwardauth.authResponseHeaders", "X-User,X-Email"}},
                   R"json({"http":{
                     "routers":{"myapp":{"rule":"Host(`myapp.example.com`)","entryPoints":["websecure"],
                       "service":"myapp","priority":100,"middlewares":["myapp-auth"],
                       "tls":{"certResolver":"letsencrypt"}}},
                     "services":{"myapp":{"loadBalancer":{"servers":[{"port":"8080"}],
                       "healthCheck":{"path":"/health","interval":"10s","timeout":"5s","scheme":"http"}}}},
                     "middlewares":{"myapp-auth":{"forwardAuth":{"address":"http://auth:9000/verify",
                       "authResponseHeaders":["X-User","X-Email"]}}}}})json"},
        DecodeCase{"NoTraefikLabels", {{"traefik.enable", "false"}, {"com.example.x", "y"}}, "{}"},
        // Traefik's filters read only traefik.http, .tcp, .udp and .tls.stores.default: the rest
        // (other providers' labels, tls options) is ignored, not refused.
        DecodeCase{"OtherTraefikLabelsIgnored",
                   {{"traefik.docker.network", "web"},
                    {"traefik.ecs.anywhere", "true"},
                    {"traefik.tls.options.x.minversion", "VersionTLS12"},
                    {"traefik.http.routers.r.rule", "Path(`/`)"}},
                   R"json({"http":{"routers":{"r":{"rule":"Path(`/`)"}}}})json"},
        // Keys match the schema whatever their case; names keep theirs.
        DecodeCase{"CaseInsensitiveFields",
                   {{"TRAEFIK.HTTP.ROUTERS.MyRouter.RULE", "Host(`a.test`)"},
                    {"traefik.Http.Routers.MyRouter.EntryPoints", "web"},
                    {"traefik.http.services.MySvc.LoadBalancer.PassHostHeader", "false"},
                    {"traefik.http.services.MySvc.loadbalancer.SERVER.Port", "80"}},
                   R"json({"http":{"routers":{"MyRouter":{"rule":"Host(`a.test`)","entryPoints":["web"]}},
                       "services":{"MySvc":{"loadBalancer":{"passHostHeader":false,"servers":[{"port":"80"}]}}}}})json"},
        // Two spellings of one name are one object, spelt as the first key in byte order.
        DecodeCase{"NamesMergeCaseInsensitively",
                   {{"traefik.http.routers.web.service", "s"}, {"traefik.http.routers.Web.rule", "Path(`/`)"}},
                   R"json({"http":{"routers":{"Web":{"rule":"Path(`/`)","service":"s"}}}})json"},
        DecodeCase{"ListsAreCommaSeparatedAndTrimmed",
                   {{"traefik.http.routers.r.entrypoints", "web, websecure ,admin"},
                    {"traefik.http.routers.r.middlewares", "a@file,b"}},
                   R"json({"http":{"routers":{"r":{"entryPoints":["web","websecure","admin"],
                       "middlewares":["a@file","b"]}}}})json"},
        DecodeCase{"EmptyStringsAndListsAreAbsent",
                   {{"traefik.http.routers.r.service", ""}, {"traefik.http.routers.r.middlewares", ""}},
                   R"json({"http":{"routers":{"r":{}}}})json"},
        DecodeCase{"HeaderMapsKeepTheKeysCase",
                   {{"traefik.http.middlewares.h.headers.customrequestheaders.X-Script-Name", "test"},
                    {"traefik.http.middlewares.h.headers.customRequestHeaders.X-Remove", ""},
                    {"traefik.http.middlewares.h.headers.customresponseheaders.X-Custom-Response-Header", "v"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.headers.My-Header", "foo"}},
                   R"json({"http":{"middlewares":{"h":{"headers":{
                         "customRequestHeaders":{"X-Remove":"","X-Script-Name":"test"},
                         "customResponseHeaders":{"X-Custom-Response-Header":"v"}}}},
                       "services":{"s":{"loadBalancer":{"healthCheck":{"headers":{"My-Header":"foo"}}}}}}})json"},
        DecodeCase{"IndexedListsInIndexOrder",
                   {{"traefik.http.routers.r.tls.domains[0].main", "a.test"},
                    {"traefik.http.routers.r.tls.domains[0].sans", "www.a.test,api.a.test"},
                    {"traefik.http.routers.r.tls.domains[10].main", "k.test"},
                    {"traefik.http.routers.r.tls.domains[2].main", "c.test"}},
                   R"json({"http":{"routers":{"r":{"tls":{"domains":[
                       {"main":"a.test","sans":["www.a.test","api.a.test"]},{"main":"c.test"},{"main":"k.test"}]}}}}})json"},
        // The router's full label set.
        DecodeCase{"RouterFields",
                   {{"traefik.http.routers.r.rulesyntax", "v3"},
                    {"traefik.http.routers.r.priority", "-5"},
                    {"traefik.http.routers.r.tls.options", "modern@file"},
                    {"traefik.http.routers.r.observability.accesslogs", "false"},
                    {"traefik.http.routers.r.observability.metrics", "true"},
                    {"traefik.http.routers.r.observability.tracing", "0"}},
                   R"json({"http":{"routers":{"r":{"ruleSyntax":"v3","priority":-5,"tls":{"options":"modern@file"},
                       "observability":{"accessLogs":false,"metrics":true,"tracing":false}}}}})json"},
        // tls=true alone is an empty tls; any other value disables it, sub-labels and all.
        DecodeCase{"TlsTrueStandsAlone", {{"traefik.http.routers.r.tls", "true"}},
                   R"json({"http":{"routers":{"r":{"tls":{}}}}})json"},
        DecodeCase{"TlsFalseDisablesIt",
                   {{"traefik.http.routers.r.tls", "false"}, {"traefik.http.routers.r.tls.certresolver", "le"}},
                   R"json({"http":{"routers":{"r":{}}}})json"},
        // The service's full label set.
        DecodeCase{"LoadBalancerFields",
                   {{"traefik.http.services.s.loadbalancer.server.url", "http://10.0.0.1:80"},
                    {"traefik.http.services.s.loadbalancer.server.weight", "3"},
                    {"traefik.http.services.s.loadbalancer.server.scheme", "h2c"},
                    {"traefik.http.services.s.loadbalancer.server.preservepath", "true"},
                    {"traefik.http.services.s.loadbalancer.strategy", "wrr"},
                    {"traefik.http.services.s.loadbalancer.passhostheader", "true"},
                    {"traefik.http.services.s.loadbalancer.responseforwarding.flushinterval", "-1"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.name", "c"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.secure", "true"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.httponly", "true"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.samesite", "lax"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.maxage", "3600"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.path", "/app"},
                    {"traefik.http.services.s.loadbalancer.sticky.cookie.domain", "a.test"}},
                   R"json({"http":{"services":{"s":{"loadBalancer":{
                       "servers":[{"url":"http://10.0.0.1:80","weight":3,"scheme":"h2c","preservePath":true}],
                       "strategy":"wrr","passHostHeader":true,"responseForwarding":{"flushInterval":"-1s"},
                       "sticky":{"cookie":{"name":"c","secure":true,"httpOnly":true,"sameSite":"lax",
                         "maxAge":3600,"path":"/app","domain":"a.test"}}}}}}})json"},
        DecodeCase{"StickyCookieStandsAlone", {{"traefik.http.services.s.loadbalancer.sticky.cookie", "true"}},
                   R"json({"http":{"services":{"s":{"loadBalancer":{"sticky":{"cookie":{}}}}}}})json"},
        DecodeCase{"HealthCheckFields",
                   {{"traefik.http.services.s.loadbalancer.healthcheck.mode", "http"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.hostname", "h.test"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.port", "8081"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.method", "HEAD"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.status", "204"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.unhealthyinterval", "1m30s"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.interval", "30"},
                    {"traefik.http.services.s.loadbalancer.healthcheck.followredirects", "false"}},
                   R"json({"http":{"services":{"s":{"loadBalancer":{"healthCheck":{"mode":"http","hostname":"h.test",
                       "port":8081,"method":"HEAD","status":204,"unhealthyInterval":"1m30s","interval":"30s",
                       "followRedirects":false}}}}}})json"},
        // Every middleware kind of phase 1, a few fields each.
        DecodeCase{"AddPrefix", {{"traefik.http.middlewares.m.addprefix.prefix", "/foo"}},
                   R"json({"http":{"middlewares":{"m":{"addPrefix":{"prefix":"/foo"}}}}})json"},
        DecodeCase{"StripPrefix",
                   {{"traefik.http.middlewares.m.stripprefix.prefixes", "/a,/b"},
                    {"traefik.http.middlewares.m.stripprefix.forceslash", "false"}},
                   R"json({"http":{"middlewares":{"m":{"stripPrefix":{"prefixes":["/a","/b"],"forceSlash":false}}}}})json"},
        DecodeCase{"StripPrefixRegex", {{"traefik.http.middlewares.m.stripprefixregex.regex", "/a/[0-9]+,/b"}},
                   R"json({"http":{"middlewares":{"m":{"stripPrefixRegex":{"regex":["/a/[0-9]+","/b"]}}}}})json"},
        DecodeCase{"ReplacePath", {{"traefik.http.middlewares.m.replacepath.path", "/x"}},
                   R"json({"http":{"middlewares":{"m":{"replacePath":{"path":"/x"}}}}})json"},
        DecodeCase{"ReplacePathRegex",
                   {{"traefik.http.middlewares.m.replacepathregex.regex", "^/foo/(.*)"},
                    {"traefik.http.middlewares.m.replacepathregex.replacement", "/bar/$1"}},
                   R"json({"http":{"middlewares":{"m":{"replacePathRegex":{"regex":"^/foo/(.*)",
                       "replacement":"/bar/$1"}}}}})json"},
        DecodeCase{"Chain", {{"traefik.http.middlewares.m.chain.middlewares", "a,b@file"}},
                   R"json({"http":{"middlewares":{"m":{"chain":{"middlewares":["a","b@file"]}}}}})json"},
        DecodeCase{"IpAllowList",
                   {{"traefik.http.middlewares.m.ipallowlist.sourcerange", "10.0.0.0/8,192.168.1.7"},
                    {"traefik.http.middlewares.m.ipallowlist.ipstrategy.depth", "2"},
                    {"traefik.http.middlewares.m.ipallowlist.ipstrategy.excludedips", "1.2.3.4"},
                    {"traefik.http.middlewares.m.ipallowlist.rejectstatuscode", "404"}},
                   R"json({"http":{"middlewares":{"m":{"ipAllowList":{"sourceRange":["10.0.0.0/8","192.168.1.7"],
                       "ipStrategy":{"depth":2,"excludedIPs":["1.2.3.4"]},"rejectStatusCode":404}}}}})json"},
        DecodeCase{"IpAllowListStrategyStandsAlone",
                   {{"traefik.http.middlewares.m.ipallowlist.ipstrategy", "true"},
                    {"traefik.http.middlewares.m.ipallowlist.sourcerange", "10.0.0.0/8"}},
                   R"json({"http":{"middlewares":{"m":{"ipAllowList":{"sourceRange":["10.0.0.0/8"],
                       "ipStrategy":{}}}}}})json"},
        DecodeCase{"Headers",
                   {{"traefik.http.middlewares.m.headers.stsseconds", "31536000"},
                    {"traefik.http.middlewares.m.headers.stsincludesubdomains", "true"},
                    {"traefik.http.middlewares.m.headers.stspreload", "true"},
                    {"traefik.http.middlewares.m.headers.forcestsheader", "true"},
                    {"traefik.http.middlewares.m.headers.framedeny", "true"},
                    {"traefik.http.middlewares.m.headers.customframeoptionsvalue", "SAMEORIGIN"},
                    {"traefik.http.middlewares.m.headers.contenttypenosniff", "true"},
                    {"traefik.http.middlewares.m.headers.browserxssfilter", "true"},
                    {"traefik.http.middlewares.m.headers.referrerpolicy", "no-referrer"},
                    {"traefik.http.middlewares.m.headers.contentsecuritypolicy", "default-src 'self'"},
                    {"traefik.http.middlewares.m.headers.permissionspolicy", "camera=()"},
                    {"traefik.http.middlewares.m.headers.accesscontrolallowcredentials", "true"},
                    {"traefik.http.middlewares.m.headers.accesscontrolallowheaders", "X-A,X-B"},
                    {"traefik.http.middlewares.m.headers.accesscontrolallowmethods", "GET,OPTIONS,PUT"},
                    {"traefik.http.middlewares.m.headers.accesscontrolalloworiginlist", "https://a.test"},
                    {"traefik.http.middlewares.m.headers.accesscontrolalloworiginlistregex", "https://.*\\.a\\.test"},
                    {"traefik.http.middlewares.m.headers.accesscontrolexposeheaders", "X-C"},
                    {"traefik.http.middlewares.m.headers.accesscontrolmaxage", "100"},
                    {"traefik.http.middlewares.m.headers.addvaryheader", "true"},
                    {"traefik.http.middlewares.m.headers.hostsproxyheaders", "X-Forwarded-Host"},
                    {"traefik.http.middlewares.m.headers.sslproxyheaders.X-Forwarded-Proto", "https"}},
                   R"json({"http":{"middlewares":{"m":{"headers":{"stsSeconds":31536000,"stsIncludeSubdomains":true,
                       "stsPreload":true,"forceSTSHeader":true,"frameDeny":true,
                       "customFrameOptionsValue":"SAMEORIGIN","contentTypeNosniff":true,"browserXssFilter":true,
                       "referrerPolicy":"no-referrer","contentSecurityPolicy":"default-src 'self'",
                       "permissionsPolicy":"camera=()","accessControlAllowCredentials":true,
                       "accessControlAllowHeaders":["X-A","X-B"],"accessControlAllowMethods":["GET","OPTIONS","PUT"],
                       "accessControlAllowOriginList":["https://a.test"],
                       "accessControlAllowOriginListRegex":["https://.*\\.a\\.test"],
                       "accessControlExposeHeaders":["X-C"],"accessControlMaxAge":100,"addVaryHeader":true,
                       "hostsProxyHeaders":["X-Forwarded-Host"],
                       "sslProxyHeaders":{"X-Forwarded-Proto":"https"}}}}}})json"},
        DecodeCase{"RateLimit",
                   {{"traefik.http.middlewares.m.ratelimit.average", "100"},
                    {"traefik.http.middlewares.m.ratelimit.period", "1m"},
                    {"traefik.http.middlewares.m.ratelimit.burst", "50"},
                    {"traefik.http.middlewares.m.ratelimit.sourcecriterion.ipstrategy.depth", "1"},
                    {"traefik.http.middlewares.m.ratelimit.sourcecriterion.ipstrategy.excludedips", "127.0.0.1/32"},
                    {"traefik.http.middlewares.m.ratelimit.sourcecriterion.requestheadername", "X-User"},
                    {"traefik.http.middlewares.m.ratelimit.sourcecriterion.requesthost", "true"}},
                   R"json({"http":{"middlewares":{"m":{"rateLimit":{"average":100,"period":"1m0s","burst":50,
                       "sourceCriterion":{"ipStrategy":{"depth":1,"excludedIPs":["127.0.0.1/32"]},
                       "requestHeaderName":"X-User","requestHost":true}}}}}})json"},
        DecodeCase{"RedirectRegex",
                   {{"traefik.http.middlewares.m.redirectregex.regex", "^http://localhost/(.*)"},
                    {"traefik.http.middlewares.m.redirectregex.replacement", "http://mydomain/${1}"},
                    {"traefik.http.middlewares.m.redirectregex.permanent", "true"}},
                   R"json({"http":{"middlewares":{"m":{"redirectRegex":{"regex":"^http://localhost/(.*)",
                       "replacement":"http://mydomain/${1}","permanent":true}}}}})json"},
        DecodeCase{"RedirectScheme",
                   {{"traefik.http.middlewares.m.redirectscheme.scheme", "https"},
                    {"traefik.http.middlewares.m.redirectscheme.port", "443"},
                    {"traefik.http.middlewares.m.redirectscheme.permanent", "true"}},
                   R"json({"http":{"middlewares":{"m":{"redirectScheme":{"scheme":"https","port":"443",
                       "permanent":true}}}}})json"},
        DecodeCase{"BasicAuth",
                   {{"traefik.http.middlewares.m.basicauth.users",
                     "test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/,test2:$apr1$d9hr9HBB$4HxwgUir3HP4EsggP/QNo0"},
                    {"traefik.http.middlewares.m.basicauth.realm", "MyRealm"},
                    {"traefik.http.middlewares.m.basicauth.removeheader", "true"},
                    {"traefik.http.middlewares.m.basicauth.headerfield", "X-WebAuth-User"}},
                   R"json({"http":{"middlewares":{"m":{"basicAuth":{"users":["test:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/",
                       "test2:$apr1$d9hr9HBB$4HxwgUir3HP4EsggP/QNo0"],"realm":"MyRealm","removeHeader":true,
                       "headerField":"X-WebAuth-User"}}}}})json"},
        DecodeCase{"ForwardAuth",
                   {{"traefik.http.middlewares.m.forwardauth.address", "https://auth.test/check"},
                    {"traefik.http.middlewares.m.forwardauth.trustforwardheader", "true"},
                    {"traefik.http.middlewares.m.forwardauth.authresponseheadersregex", "^X-"},
                    {"traefik.http.middlewares.m.forwardauth.authrequestheaders", "Accept,X-CustomHeader"},
                    {"traefik.http.middlewares.m.forwardauth.addauthcookiestoresponse", "Session"},
                    {"traefik.http.middlewares.m.forwardauth.forwardbody", "true"},
                    {"traefik.http.middlewares.m.forwardauth.maxbodysize", "1000"},
                    {"traefik.http.middlewares.m.forwardauth.maxresponsebodysize", "2000"},
                    {"traefik.http.middlewares.m.forwardauth.headerfield", "X-User"},
                    {"traefik.http.middlewares.m.forwardauth.preservelocationheader", "true"},
                    {"traefik.http.middlewares.m.forwardauth.preserverequestmethod", "true"},
                    {"traefik.http.middlewares.m.forwardauth.authsigninurl", "https://auth.test/login"},
                    {"traefik.http.middlewares.m.forwardauth.tls.ca", "/ca.pem"},
                    {"traefik.http.middlewares.m.forwardauth.tls.cert", "/c.pem"},
                    {"traefik.http.middlewares.m.forwardauth.tls.key", "/k.pem"},
                    {"traefik.http.middlewares.m.forwardauth.tls.insecureskipverify", "true"}},
                   R"json({"http":{"middlewares":{"m":{"forwardAuth":{"address":"https://auth.test/check",
                       "trustForwardHeader":true,"authResponseHeadersRegex":"^X-",
                       "authRequestHeaders":["Accept","X-CustomHeader"],"addAuthCookiesToResponse":["Session"],
                       "forwardBody":true,"maxBodySize":1000,"maxResponseBodySize":2000,"headerField":"X-User",
                       "preserveLocationHeader":true,"preserveRequestMethod":true,
                       "authSigninURL":"https://auth.test/login",
                       "tls":{"ca":"/ca.pem","cert":"/c.pem","key":"/k.pem","insecureSkipVerify":true}}}}}})json"},
        DecodeCase{"Buffering",
                   {{"traefik.http.middlewares.m.buffering.maxrequestbodybytes", "2000000"},
                    {"traefik.http.middlewares.m.buffering.memrequestbodybytes", "1000000"},
                    {"traefik.http.middlewares.m.buffering.maxresponsebodybytes", "3000000"},
                    {"traefik.http.middlewares.m.buffering.memresponsebodybytes", "1000000"},
                    {"traefik.http.middlewares.m.buffering.retryexpression", "IsNetworkError() && Attempts() < 2"}},
                   R"json({"http":{"middlewares":{"m":{"buffering":{"maxRequestBodyBytes":2000000,
                       "memRequestBodyBytes":1000000,"maxResponseBodyBytes":3000000,"memResponseBodyBytes":1000000,
                       "retryExpression":"IsNetworkError() && Attempts() < 2"}}}}})json"},
        DecodeCase{"Retry",
                   {{"traefik.http.middlewares.m.retry.attempts", "4"},
                    {"traefik.http.middlewares.m.retry.initialinterval", "100ms"}},
                   R"json({"http":{"middlewares":{"m":{"retry":{"attempts":4,"initialInterval":"100ms"}}}}})json"},
        // The default store's generated certificate is the one tls setting labels reach.
        DecodeCase{"DefaultStore",
                   {{"traefik.tls.stores.default.defaultgeneratedcert.resolver", "le"},
                    {"traefik.tls.stores.default.defaultgeneratedcert.domain.main", "a.test"},
                    {"traefik.tls.stores.default.defaultgeneratedcert.domain.sans", "b.test"}},
                   R"json({"tls":{"stores":{"default":{"defaultGeneratedCert":{"resolver":"le",
                       "domain":{"main":"a.test","sans":["b.test"]}}}}}})json"},
        // Fields Traefik's labels skip (label:"-") are skipped, not refused.
        DecodeCase{"LabelIgnoredFields",
                   {{"traefik.http.services.s.weighted.services[0].name", "x"},
                    {"traefik.http.services.s.loadbalancer.server.port", "80"},
                    {"traefik.http.routers.r.parentrefs", "p"}},
                   R"json({"http":{"services":{"s":{"loadBalancer":{"servers":[{"port":"80"}]}}},
                       "routers":{"r":{}}}})json"}),
    CaseName<DecodeCase>);

// ---------------------------------------------------------------------------------------------
// DecodeLabels: what it refuses, and the label each refusal names.

struct RefusalCase {
  std::string name;
  Labels labels;
  std::string names;  // a part of the message: the label, and what is wrong with it
};

void PrintTo(const RefusalCase& c, std::ostream* os) { *os << c.name; }

class DecodeLabelsRefusalTest : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(DecodeLabelsRefusalTest, RefusesNamingTheLabel) {
  const RefusalCase& c = GetParam();
  StatusOr<boost::json::object> got = DecodeLabels(c.labels);
  ASSERT_FALSE(got.ok()) << boost::json::serialize(*got);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find(c.names), std::string::npos) << got.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, DecodeLabelsRefusalTest,
    ::testing::Values(
        RefusalCase{"UnknownRouterField", {{"traefik.http.routers.r.rul", "x"}},
                    "label traefik.http.routers.r.rul: a router has no field \"rul\""},
        RefusalCase{"UnknownMiddlewareField", {{"traefik.http.middlewares.m.stripprefix.prefix", "/a"}},
                    "label traefik.http.middlewares.m.stripprefix.prefix: a stripPrefix has no field \"prefix\""},
        RefusalCase{"UnknownSection", {{"traefik.httpx.routers.r.rule", "x"}}, "label traefik.httpx.routers.r.rule"},
        RefusalCase{"ServersIsSpeltServerInLabels", {{"traefik.http.services.s.loadbalancer.servers[0].url", "u"}},
                    "label traefik.http.services.s.loadbalancer.servers[0].url: a loadBalancer has no field"},
        RefusalCase{"IntegerNotANumber", {{"traefik.http.routers.r.priority", "high"}},
                    "label traefik.http.routers.r.priority: \"high\" is not an integer"},
        RefusalCase{"IntegerOverflow", {{"traefik.http.routers.r.priority", "9223372036854775808"}},
                    "is not an integer"},
        RefusalCase{"BooleanNotABoolean", {{"traefik.http.services.s.loadbalancer.passhostheader", "yes"}},
                    "label traefik.http.services.s.loadbalancer.passhostheader: \"yes\" is not a boolean"},
        RefusalCase{"DurationNotADuration", {{"traefik.http.services.s.loadbalancer.healthcheck.interval", "10"
                                                                                                      " seconds"}},
                    "label traefik.http.services.s.loadbalancer.healthcheck.interval: invalid duration"},
        RefusalCase{"DurationNegative", {{"traefik.http.services.s.loadbalancer.healthcheck.interval", "-1s"}},
                    "negative"},
        RefusalCase{"ValueWithChildren",
                    {{"traefik.http.routers.r.rule", "x"}, {"traefik.http.routers.r.rule.sub", "y"}},
                    "label traefik.http.routers.r.rule.sub: rule is a value, not an object"},
        RefusalCase{"ObjectStandingAlone", {{"traefik.http.routers.r.observability", "true"}},
                    "label traefik.http.routers.r.observability: observability cannot stand alone"},
        RefusalCase{"MapStandingAlone", {{"traefik.http.routers", "x"}}, "routers needs names"},
        RefusalCase{"HeaderMapStandingAlone", {{"traefik.http.middlewares.m.headers.customrequestheaders", "x"}},
                    "customRequestHeaders needs keys"},
        RefusalCase{"ServerStandingAlone", {{"traefik.http.services.s.loadbalancer.server", "x"}},
                    "server needs fields"},
        RefusalCase{"UnindexedList", {{"traefik.http.routers.r.tls.domains.main", "a"}},
                    "label traefik.http.routers.r.tls.domains.main: domains needs indexed items"},
        RefusalCase{"IndexTooLarge", {{"traefik.http.routers.r.tls.domains[1001].main", "a"}},
                    "index at most 1000"},
        RefusalCase{"IndexNotANumber", {{"traefik.http.routers.r.tls.domains[x].main", "a"}},
                    "domains needs indexed items"},
        RefusalCase{"LeadingBracket", {{"traefik.http.routers.[0].rule", "a"}}, "starts with '['"},
        RefusalCase{"EmptySegment", {{"traefik.http.routers..rule", "a"}}, "empty path segment"},
        RefusalCase{"Tcp", {{"traefik.tcp.routers.r.rule", "HostSNI(`*`)"}},
                    "label traefik.tcp.routers.r.rule: TCP and UDP routing are a phase-2 feature"},
        RefusalCase{"Udp", {{"traefik.UDP.services.s.loadbalancer.server.port", "53"}},
                    "label traefik.UDP.services.s.loadbalancer.server.port: TCP and UDP"},
        RefusalCase{"Compress", {{"traefik.http.middlewares.m.compress", "true"}},
                    "label traefik.http.middlewares.m.compress: compress is a phase-2 feature"},
        RefusalCase{"InFlightReq", {{"traefik.http.middlewares.m.inflightreq.amount", "10"}},
                    "inFlightReq is a phase-2 feature"},
        RefusalCase{"CircuitBreaker", {{"traefik.http.middlewares.m.circuitbreaker.expression", "x"}},
                    "circuitBreaker is a phase-2 feature"},
        RefusalCase{"Errors", {{"traefik.http.middlewares.m.errors.status", "500"}}, "errors is a phase-2 feature"},
        RefusalCase{"DigestAuth", {{"traefik.http.middlewares.m.digestauth.users", "u"}},
                    "digestAuth is a phase-2 feature"},
        RefusalCase{"PassTlsClientCert", {{"traefik.http.middlewares.m.passtlsclientcert.pem", "true"}},
                    "passTLSClientCert is a phase-2 feature"},
        RefusalCase{"GrpcWeb", {{"traefik.http.middlewares.m.grpcweb.alloworigins", "*"}},
                    "grpcWeb is a phase-2 feature"},
        RefusalCase{"Plugin", {{"traefik.http.middlewares.m.plugin.foo.bar", "x"}}, "plugin is a phase-2 feature"},
        RefusalCase{"ServersTransport", {{"traefik.http.services.s.loadbalancer.serverstransport", "t@file"}},
                    "label traefik.http.services.s.loadbalancer.serverstransport: serversTransport is a phase-2"},
        RefusalCase{"TooManyLabels",
                    [] {
                      Labels l;
                      for (int i = 0; i <= 1000; ++i) l[fmt::format("traefik.http.routers.r{}.rule", i)] = "x";
                      return l;
                    }(),
                    "more than 1000 traefik labels"},
        RefusalCase{"KeyTooLong", {{"traefik.http.routers." + std::string(1100, 'r') + ".rule", "x"}},
                    "the key is longer than 1024 bytes"},
        RefusalCase{"ValueTooLong", {{"traefik.http.routers.r.rule", std::string(64 * 1024 + 1, 'x')}},
                    "the value is longer than 65536 bytes"}),
    CaseName<RefusalCase>);

// Labels of other kinds do not count toward the bound, and 1000 routers are read.
TEST(DecodeLabelsBoundsTest, ReadsAThousandLabelsAmongOthers) {
  Labels l;
  for (int i = 0; i < 1000; ++i) l[fmt::format("traefik.http.routers.r{}.rule", i)] = "Path(`/`)";
  for (int i = 0; i < 500; ++i) l[fmt::format("com.example.label{}", i)] = "x";
  StatusOr<boost::json::object> got = DecodeLabels(l);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->at("http").at("routers").as_object().size(), 1000u);
}

// A hostile key: deep, long, full of brackets and dots. Refused (or decoded), never a crash.
TEST(DecodeLabelsBoundsTest, HostileKeysAreRefusedNotFatal) {
  std::string deep = "traefik.http.routers.r";
  while (deep.size() < 1000) deep += ".a";
  std::string brackets = "traefik.http.routers.r.tls.domains[0]";
  while (brackets.size() < 1000) brackets += "[0]";
  for (const std::string& key :
       {deep, brackets, std::string("traefik.http"), std::string("traefik.http."), std::string("traefik.http.routers.r."),
        std::string("traefik.http.routers.r.tls.domains[]"), std::string("traefik.http.routers.r.tls.domains[0]"),
        std::string("traefik.http.routers.r.tls.domains[00].main"), std::string("traefik.http.services.s.loadbalancer")}) {
    StatusOr<boost::json::object> got = DecodeLabels({{key, "x"}});
    EXPECT_FALSE(got.ok()) << key << " -> " << boost::json::serialize(*got);
  }
}

}  // namespace
}  // namespace paddock::edge
