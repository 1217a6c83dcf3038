// edge/dynamic: Traefik's dynamic configuration from labels (DecodeLabels) and from JSON
// (CheckDynamic), and Go durations both ways. Each case is a label set (or a document) and the
// exact tree Traefik's parser would make of it, or the refusal and the label (path) it names.
#include "edge/dynamic.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
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
        // An https server and the servers transport (of another provider) it is reached through;
        // serversTransports themselves are not for labels (Traefik's label:"-"): ignored.
        DecodeCase{"HttpsServerThroughAServersTransport",
                   {{"traefik.http.services.s.loadbalancer.server.scheme", "https"},
                    {"traefik.http.services.s.loadbalancer.server.port", "8443"},
                    {"traefik.http.services.s.loadbalancer.serverstransport", "mtls@file"},
                    {"traefik.http.serverstransports.t.insecureskipverify", "true"}},
                   R"json({"http":{"services":{"s":{"loadBalancer":{
                       "servers":[{"scheme":"https","port":"8443"}],"serversTransport":"mtls@file"}}}}})json"},
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
        DecodeCase{"DigestAuth",
                   {{"traefik.http.middlewares.m.digestauth.users", "u:traefik:0123abcd"},
                    {"traefik.http.middlewares.m.digestauth.removeheader", "true"}},
                   R"json({"http":{"middlewares":{"m":{"digestAuth":{"users":["u:traefik:0123abcd"],
                       "removeHeader":true}}}}})json"},
        DecodeCase{"Errors",
                   {{"traefik.http.middlewares.m.errors.status", "500-599,404"},
                    {"traefik.http.middlewares.m.errors.service", "pages"},
                    {"traefik.http.middlewares.m.errors.query", "/{status}.html"},
                    {"traefik.http.middlewares.m.errors.statusrewrites.418", "404"}},
                   R"json({"http":{"middlewares":{"m":{"errors":{"status":["500-599","404"],"service":"pages",
                       "query":"/{status}.html","statusRewrites":{"418":"404"}}}}}})json"},
        DecodeCase{"CompressStandsAlone", {{"traefik.http.middlewares.m.compress", "true"}},
                   R"json({"http":{"middlewares":{"m":{"compress":{}}}}})json"},
        DecodeCase{"Compress",
                   {{"traefik.http.middlewares.m.compress.encodings", "br,gzip"},
                    {"traefik.http.middlewares.m.compress.minresponsebodybytes", "256"},
                    {"traefik.http.middlewares.m.compress.excludedcontenttypes", "text/event-stream"}},
                   R"json({"http":{"middlewares":{"m":{"compress":{"encodings":["br","gzip"],
                       "minResponseBodyBytes":256,"excludedContentTypes":["text/event-stream"]}}}}})json"},
        DecodeCase{"CircuitBreaker",
                   {{"traefik.http.middlewares.m.circuitbreaker.expression", "NetworkErrorRatio() > 0.30"},
                    {"traefik.http.middlewares.m.circuitbreaker.checkperiod", "2s"},
                    {"traefik.http.middlewares.m.circuitbreaker.responsecode", "502"}},
                   R"json({"http":{"middlewares":{"m":{"circuitBreaker":{"expression":"NetworkErrorRatio() > 0.30",
                       "checkPeriod":"2s","responseCode":502}}}}})json"},
        DecodeCase{"InFlightReq",
                   {{"traefik.http.middlewares.m.inflightreq.amount", "10"},
                    {"traefik.http.middlewares.m.inflightreq.sourcecriterion.requestheadername", "X-Tenant"}},
                   R"json({"http":{"middlewares":{"m":{"inFlightReq":{"amount":10,
                       "sourceCriterion":{"requestHeaderName":"X-Tenant"}}}}}})json"},
        DecodeCase{"PassTlsClientCert",
                   {{"traefik.http.middlewares.m.passtlsclientcert.pem", "true"},
                    {"traefik.http.middlewares.m.passtlsclientcert.info.notafter", "true"},
                    {"traefik.http.middlewares.m.passtlsclientcert.info.sans", "true"},
                    {"traefik.http.middlewares.m.passtlsclientcert.info.subject.commonname", "true"},
                    {"traefik.http.middlewares.m.passtlsclientcert.info.subject.organizationalunit", "true"},
                    {"traefik.http.middlewares.m.passtlsclientcert.info.issuer.domaincomponent", "true"}},
                   R"json({"http":{"middlewares":{"m":{"passTLSClientCert":{"pem":true,"info":{"notAfter":true,
                       "sans":true,"subject":{"commonName":true,"organizationalUnit":true},
                       "issuer":{"domainComponent":true}}}}}}})json"},
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
        // A container cannot point the edge at files: the default certificate is not a label.
        DecodeCase{"DefaultCertificateFilesAreNotLabels",
                   {{"traefik.tls.stores.default.defaultcertificate.certfile", "/etc/shadow"},
                    {"traefik.tls.stores.default.defaultcertificate.keyfile", "/etc/shadow"}},
                   R"json({"tls":{"stores":{"default":{}}}})json"},
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
        RefusalCase{"PassTlsClientCertIssuerHasNoUnit",
                    {{"traefik.http.middlewares.m.passtlsclientcert.info.issuer.organizationalunit", "true"}},
                    "organizationalunit"},
        RefusalCase{"GrpcWeb", {{"traefik.http.middlewares.m.grpcweb.alloworigins", "*"}},
                    "grpcWeb is a phase-2 feature"},
        RefusalCase{"Plugin", {{"traefik.http.middlewares.m.plugin.foo.bar", "x"}}, "plugin is a phase-2 feature"},
        RefusalCase{"PassiveHealthCheckBesideAServersTransport",
                    {{"traefik.http.services.s.loadbalancer.serverstransport", "t@file"},
                     {"traefik.http.services.s.loadbalancer.server.port", "80"},
                     {"traefik.http.services.s.loadbalancer.server.scheme", "https"},
                     {"traefik.http.services.s.loadbalancer.passivehealthcheck.maxfailedattempts", "3"}},
                    "passiveHealthCheck is not supported"},
        RefusalCase{"TooManyLabels",
                    [] {
                      Labels l;
                      for (int i = 0; i <= 1000; ++i) l[fmt::format("traefik.http.routers.r{}.rule", i)] = "x";
                      return l;
                    }(),
                    "more than 1000 traefik labels"},
        RefusalCase{"KeyTooLong", {{"traefik.http.routers." + std::string(1100, 'r') + ".rule", "x"}},
                    "the key is longer than 1024 bytes"},
        RefusalCase{"KeyTooDeep", {{"traefik.http.routers.r.a.b.c.d.e.f.g.h.i.j.k.l.m", "x"}},
                    "the key has more than 16 segments"},
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

// ---------------------------------------------------------------------------------------------
// CheckDynamic: documents and the trees they make.

struct CheckCase {
  std::string name;
  std::string document;  // JSON
  std::string expected;  // JSON
};

void PrintTo(const CheckCase& c, std::ostream* os) { *os << c.name; }

class CheckDynamicTest : public ::testing::TestWithParam<CheckCase> {};

TEST_P(CheckDynamicTest, MakesTheCheckedTree) {
  const CheckCase& c = GetParam();
  StatusOr<boost::json::object> got = CheckDynamic(boost::json::parse(c.document));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  boost::json::value expected = boost::json::parse(c.expected);
  EXPECT_EQ(boost::json::value(*got), expected)
      << "got:      " << boost::json::serialize(*got) << "\nexpected: " << boost::json::serialize(expected);
}

// A document in Traefik's own spelling comes back as it went in.
constexpr char kFullDocument[] = R"json({
  "http": {
    "routers": {
      "rise-catchall": {"rule": "PathPrefix(`/.rise`)", "priority": 1000, "entryPoints": ["web", "websecure"],
                        "service": "rise-web@ecs", "middlewares": ["app-auth"],
                        "tls": {"certResolver": "le", "options": "modern",
                                "domains": [{"main": "a.test", "sans": ["*.a.test"]}]},
                        "observability": {"accessLogs": true, "metrics": false, "tracing": false}},
      "app": {"rule": "Host(`app.test`)", "service": "split", "ruleSyntax": "v3"}
    },
    "services": {
      "web": {"loadBalancer": {
        "servers": [{"url": "http://10.0.0.1:8080", "weight": 2}, {"url": "http://10.0.0.2:8080", "preservePath": true}],
        "strategy": "wrr", "passHostHeader": true, "responseForwarding": {"flushInterval": "100ms"},
        "healthCheck": {"scheme": "http", "mode": "http", "path": "/health", "method": "GET", "status": 200,
                        "port": 8081, "interval": "10s", "unhealthyInterval": "2s", "timeout": "5s",
                        "hostname": "app.test", "followRedirects": false, "headers": {"X-Check": "1"}},
        "sticky": {"cookie": {"name": "s", "secure": true, "httpOnly": true, "sameSite": "strict",
                              "maxAge": 60, "path": "/", "domain": "app.test"}}}},
      "split": {"weighted": {"services": [{"name": "web", "weight": 3}, {"name": "old@file", "weight": 1}],
                             "sticky": {"cookie": {"name": "w"}}, "healthCheck": {}}},
      "safe": {"failover": {"service": "web", "fallback": "old@file", "healthCheck": {},
                            "errors": {"status": ["500-599", "429"], "maxRequestBodyBytes": 65536}}},
      "affine": {"highestRandomWeight": {"services": [{"name": "web", "weight": 2}, {"name": "old@file"}],
                                         "healthCheck": {}}},
      "shadowed": {"mirroring": {"service": "web", "mirrorBody": false, "maxBodySize": 1024,
                                 "mirrors": [{"name": "old@file", "percent": 10}], "healthCheck": {}}}
    },
    "middlewares": {
      "app-auth": {"forwardAuth": {"address": "http://auth:9000/verify", "authResponseHeaders": ["X-User"],
                                   "trustForwardHeader": true, "maxResponseBodySize": 4096,
                                   "tls": {"ca": "/ca.pem", "insecureSkipVerify": false}}},
      "strip": {"stripPrefix": {"prefixes": ["/api"]}},
      "limit": {"rateLimit": {"average": 100, "burst": 200, "period": "1s"}}
    }
  },
  "tls": {
    "certificates": [{"certFile": "/c.pem", "keyFile": "/k.pem", "stores": ["default"]}],
    "options": {"modern": {"minVersion": "VersionTLS13", "sniStrict": true, "alpnProtocols": ["h2", "http/1.1"],
                           "clientAuth": {"caFiles": ["/ca.pem"], "clientAuthType": "VerifyClientCertIfGiven"}}},
    "stores": {"default": {"defaultCertificate": {"certFile": "/d.pem", "keyFile": "/dk.pem"}}}
  }
})json";

INSTANTIATE_TEST_SUITE_P(
    Documents, CheckDynamicTest,
    ::testing::Values(
        CheckCase{"TraefiksSpellingComesBackUnchanged", kFullDocument, kFullDocument},
        CheckCase{"Empty", "{}", "{}"},
        // errors' errorRequestHeaders: an empty list forwards no header (nil, absent, forwards all).
        CheckCase{"ErrorsWithNoRequestHeaders",
                  R"json({"http":{"middlewares":{"m":{"errors":{"status":["500"],"service":"p",
                      "statusRewrites":{"500":503},"errorRequestHeaders":[]}}}}})json",
                  R"json({"http":{"middlewares":{"m":{"errors":{"status":["500"],"service":"p",
                      "statusRewrites":{"500":"503"},"errorRequestHeaders":[]}}}}})json"},
        // Traefik's serversTransports, and a loadBalancer naming one.
        CheckCase{"ServersTransports",
                  R"json({"http":{"services":{"s":{"loadBalancer":{"servers":[{"url":"https://a.test"}],
                                                                   "serversTransport":"t"}}},
                    "serversTransports":{"t":{"serverName":"a.test","insecureSkipVerify":false,
                      "rootCAs":["/ca.pem"],"certificates":[{"certFile":"/c.pem","keyFile":"/k.pem"}],
                      "maxIdleConnsPerHost":7,"disableHTTP2":true,
                      "cipherSuites":["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],"minVersion":"VersionTLS12",
                      "maxVersion":"VersionTLS13","peerCertURI":"spiffe://a/b",
                      "peerCertSANs":[{"type":"DNSName","value":"a.test"}],
                      "forwardingTimeouts":{"dialTimeout":"5s","responseHeaderTimeout":90,"idleConnTimeout":"1m",
                                            "readIdleTimeout":"1s","pingTimeout":"2s"}}}}})json",
                  R"json({"http":{"services":{"s":{"loadBalancer":{"servers":[{"url":"https://a.test"}],
                                                                   "serversTransport":"t"}}},
                    "serversTransports":{"t":{"serverName":"a.test","insecureSkipVerify":false,
                      "rootCAs":["/ca.pem"],"certificates":[{"certFile":"/c.pem","keyFile":"/k.pem"}],
                      "maxIdleConnsPerHost":7,"disableHTTP2":true,
                      "cipherSuites":["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],"minVersion":"VersionTLS12",
                      "maxVersion":"VersionTLS13","peerCertURI":"spiffe://a/b",
                      "peerCertSANs":[{"type":"DNSName","value":"a.test"}],
                      "forwardingTimeouts":{"dialTimeout":"5s","responseHeaderTimeout":"1m30s","idleConnTimeout":"1m0s",
                                            "readIdleTimeout":"1s","pingTimeout":"2s"}}}}})json"},
        // Rise's http-provider endpoint: routers and middlewares, services from another provider.
        CheckCase{"RiseHttpProvider",
                  R"json({"http":{"routers":{"r":{"rule":"Host(`a.test`)","service":"svc@ecs"}},
                    "middlewares":{"m":{"headers":{"customRequestHeaders":{"X-A":"1"}}}}}})json",
                  R"json({"http":{"routers":{"r":{"rule":"Host(`a.test`)","service":"svc@ecs"}},
                    "middlewares":{"m":{"headers":{"customRequestHeaders":{"X-A":"1"}}}}}})json"},
        // Field names are matched case-insensitively and written in Traefik's spelling; names and
        // header keys keep their case.
        CheckCase{"CaseInsensitiveFields",
                  R"json({"HTTP":{"Routers":{"MyRouter":{"EntryPoints":["web"],"RULE":"Path(`/`)"}},
                    "middlewares":{"M":{"Headers":{"CUSTOMREQUESTHEADERS":{"X-Mixed-Case":"v"}}}}}})json",
                  R"json({"http":{"routers":{"MyRouter":{"entryPoints":["web"],"rule":"Path(`/`)"}},
                    "middlewares":{"M":{"headers":{"customRequestHeaders":{"X-Mixed-Case":"v"}}}}}})json"},
        // What YAML and TOML make of scalars, read as Traefik's file provider reads them.
        CheckCase{"ScalarsAsTheFileProviderReadsThem",
                  R"json({"http":{"routers":{"r":{"priority":"10","entryPoints":["web",8080]}},
                    "middlewares":{"m":{"redirectScheme":{"scheme":"https","port":443,"permanent":"true"}}},
                    "services":{"s":{"loadBalancer":{"healthCheck":{"interval":10,"timeout":"5","status":200.0},
                                                     "responseForwarding":{"flushInterval":-1}}}}}})json",
                  R"json({"http":{"routers":{"r":{"priority":10,"entryPoints":["web","8080"]}},
                    "middlewares":{"m":{"redirectScheme":{"scheme":"https","port":"443","permanent":true}}},
                    "services":{"s":{"loadBalancer":{"healthCheck":{"interval":"10s","timeout":"5s","status":200},
                                                     "responseForwarding":{"flushInterval":"-1s"}}}}}})json"},
        // Durations come back as Go renders them.
        CheckCase{"DurationsInGoForm",
                  R"json({"http":{"middlewares":{"r":{"retry":{"attempts":3,"initialInterval":"1500ms",
                    "timeout":"90s"}}}}})json",
                  R"json({"http":{"middlewares":{"r":{"retry":{"attempts":3,"initialInterval":"1.5s",
                    "timeout":"1m30s"}}}}})json"},
        // null: absent, or an empty object where one may stand alone (`tls:` in YAML).
        CheckCase{"Nulls",
                  R"json({"http":{"routers":{"r":{"tls":null,"rule":null,"middlewares":null,
                    "observability":null}}}})json",
                  R"json({"http":{"routers":{"r":{"tls":{}}}}})json"},
        CheckCase{"EmptyStringsAndListsAreAbsent",
                  R"json({"http":{"routers":{"r":{"service":"","middlewares":[],"rule":"Path(`/`)"}}}})json",
                  R"json({"http":{"routers":{"r":{"rule":"Path(`/`)"}}}})json"}),
    CaseName<CheckCase>);

// ---------------------------------------------------------------------------------------------
// CheckDynamic: what it refuses, and the path each refusal names.

struct CheckRefusalCase {
  std::string name;
  std::string document;  // JSON
  std::string names;     // a part of the message: the path, and what is wrong there
};

void PrintTo(const CheckRefusalCase& c, std::ostream* os) { *os << c.name; }

class CheckDynamicRefusalTest : public ::testing::TestWithParam<CheckRefusalCase> {};

TEST_P(CheckDynamicRefusalTest, RefusesNamingThePath) {
  const CheckRefusalCase& c = GetParam();
  StatusOr<boost::json::object> got = CheckDynamic(boost::json::parse(c.document));
  ASSERT_FALSE(got.ok()) << boost::json::serialize(*got);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find(c.names), std::string::npos) << got.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, CheckDynamicRefusalTest,
    ::testing::Values(
        CheckRefusalCase{"NotAnObject", "[]", "(root): the configuration must be an object, not a list"},
        CheckRefusalCase{"UnknownField", R"json({"http":{"routers":{"r":{"rul":"x"}}}})json",
                         "http.routers.r.rul: a router has no field \"rul\""},
        CheckRefusalCase{"UnknownTopLevel", R"json({"https":{}})json",
                         "https: the configuration has no field \"https\""},
        CheckRefusalCase{"LabelOnlyServerPort",
                         R"json({"http":{"services":{"s":{"loadBalancer":{"servers":[{"url":"u"},{"port":"80"}]}}}}})json",
                         "http.services.s.loadBalancer.servers[1].port: a server has no field \"port\""},
        CheckRefusalCase{"ServerIsSpeltServersInJson",
                         R"json({"http":{"services":{"s":{"loadBalancer":{"server":{"port":"80"}}}}}})json",
                         "http.services.s.loadBalancer.server: a loadBalancer has no field \"server\""},
        CheckRefusalCase{"FieldGivenTwice", R"json({"http":{"routers":{"r":{"rule":"a","Rule":"b"}}}})json",
                         "http.routers.r.Rule: rule is given twice"},
        CheckRefusalCase{"IntegerFromText", R"json({"http":{"routers":{"r":{"priority":"high"}}}})json",
                         "http.routers.r.priority: \"high\" is not an integer"},
        CheckRefusalCase{"IntegerFraction", R"json({"http":{"routers":{"r":{"priority":1.5}}}})json",
                         "http.routers.r.priority: must be an integer, not a number"},
        CheckRefusalCase{"BooleanFromNumber",
                         R"json({"http":{"services":{"s":{"loadBalancer":{"passHostHeader":1}}}}})json",
                         "http.services.s.loadBalancer.passHostHeader: must be a boolean, not a number"},
        CheckRefusalCase{"ListFromString", R"json({"http":{"routers":{"r":{"entryPoints":"web"}}}})json",
                         "http.routers.r.entryPoints: must be a list of strings, not a string"},
        CheckRefusalCase{"ListItemObject", R"json({"http":{"routers":{"r":{"entryPoints":["web",{}]}}}})json",
                         "http.routers.r.entryPoints[1]: must be a string, not an object"},
        CheckRefusalCase{"StringFromObject", R"json({"http":{"routers":{"r":{"rule":{"a":1}}}}})json",
                         "http.routers.r.rule: must be a string, not an object"},
        CheckRefusalCase{"HeaderValueObject",
                         R"json({"http":{"middlewares":{"m":{"headers":{"customResponseHeaders":{"X-A":[]}}}}}})json",
                         "http.middlewares.m.headers.customResponseHeaders.X-A: must be a string, not a list"},
        CheckRefusalCase{"NullRouter", R"json({"http":{"routers":{"r":null}}})json",
                         "http.routers.r: a router must be an object, not null"},
        CheckRefusalCase{"CertificateField",
                         R"json({"tls":{"certificates":[{"certFile":"a"},{"certFile":{}}]}})json",
                         "tls.certificates[1].certFile: must be a string, not an object"},
        CheckRefusalCase{"DurationUnknownUnit",
                         R"json({"http":{"services":{"s":{"loadBalancer":{"healthCheck":{"interval":"10d"}}}}}})json",
                         "http.services.s.loadBalancer.healthCheck.interval: invalid duration \"10d\": unknown unit"},
        CheckRefusalCase{"DurationNegative",
                         R"json({"http":{"services":{"s":{"loadBalancer":{"healthCheck":{"timeout":-5}}}}}})json",
                         "http.services.s.loadBalancer.healthCheck.timeout: invalid duration \"-5\": negative"},
        CheckRefusalCase{"DurationFraction",
                         R"json({"http":{"middlewares":{"m":{"rateLimit":{"period":1.5}}}}})json",
                         "http.middlewares.m.rateLimit.period: must be a duration"},
        CheckRefusalCase{"Tcp", R"json({"tcp":{"routers":{}}})json", "tcp: tcp is a phase-2 feature"},
        CheckRefusalCase{"Udp", R"json({"udp":{}})json", "udp: udp is a phase-2 feature"},
        CheckRefusalCase{"GrpcWeb", R"json({"http":{"middlewares":{"m":{"grpcWeb":{}}}}})json",
                         "http.middlewares.m.grpcWeb: grpcWeb is a phase-2 feature"},
        CheckRefusalCase{"Plugin", R"json({"http":{"middlewares":{"m":{"plugin":{"x":{}}}}}})json",
                         "http.middlewares.m.plugin: plugin is a phase-2 feature"},
        CheckRefusalCase{"ServersTransportSpiffe",
                         R"json({"http":{"serversTransports":{"t":{"spiffe":{"ids":["spiffe://a/b"]}}}}})json",
                         "http.serversTransports.t.spiffe: spiffe is not supported by the edge"},
        CheckRefusalCase{"ServersTransportPeerCertSanNotAnObject",
                         R"json({"http":{"serversTransports":{"t":{"peerCertSANs":["spiffe://a/b"]}}}})json",
                         "http.serversTransports.t.peerCertSANs"},
        CheckRefusalCase{"MirrorPercentNotANumber",
                         R"json({"http":{"services":{"s":{"mirroring":{"service":"a",
                                 "mirrors":[{"name":"b","percent":"half"}]}}}}})json",
                         "http.services.s.mirroring.mirrors[0].percent"},
        CheckRefusalCase{"FailoverErrorsStatusNotAList",
                         R"json({"http":{"services":{"s":{"failover":{"service":"a","fallback":"b",
                                 "errors":{"status":{"x":1}}}}}}})json",
                         "http.services.s.failover.errors.status"}),
    CaseName<CheckRefusalCase>);

// ---------------------------------------------------------------------------------------------
// Go durations: time.ParseDuration's and time.Duration.String's own cases, plus Traefik's bare
// integer seconds.

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

struct ParseCase {
  std::string text;
  nanoseconds want;
};

class ParseGoDurationTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseGoDurationTest, ParsesAsGo) {
  StatusOr<nanoseconds> got = ParseSignedGoDuration(GetParam().text);
  ASSERT_TRUE(got.ok()) << GetParam().text << ": " << got.status().ToString();
  EXPECT_EQ(got->count(), GetParam().want.count()) << GetParam().text;
  // The non-negative ones parse the same with ParseGoDuration; the negative ones are refused.
  StatusOr<nanoseconds> unsigned_got = ParseGoDuration(GetParam().text);
  if (GetParam().want.count() >= 0) {
    ASSERT_TRUE(unsigned_got.ok()) << GetParam().text;
    EXPECT_EQ(unsigned_got->count(), GetParam().want.count());
  } else {
    EXPECT_FALSE(unsigned_got.ok()) << GetParam().text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Go, ParseGoDurationTest,
    ::testing::Values(
        ParseCase{"0", nanoseconds(0)}, ParseCase{"5s", seconds(5)}, ParseCase{"30s", seconds(30)},
        ParseCase{"1478s", seconds(1478)}, ParseCase{"-5s", seconds(-5)}, ParseCase{"+5s", seconds(5)},
        ParseCase{"-0", nanoseconds(0)}, ParseCase{"+0", nanoseconds(0)}, ParseCase{"5.0s", seconds(5)},
        ParseCase{"5.6s", milliseconds(5600)}, ParseCase{"5.s", seconds(5)}, ParseCase{".5s", milliseconds(500)},
        ParseCase{"1.0s", seconds(1)}, ParseCase{"1.00s", seconds(1)}, ParseCase{"1.004s", milliseconds(1004)},
        ParseCase{"1.0040s", milliseconds(1004)}, ParseCase{"100.00100s", milliseconds(100001)},
        ParseCase{"10ns", nanoseconds(10)}, ParseCase{"11us", microseconds(11)},
        ParseCase{"12\xC2\xB5s", microseconds(12)}, ParseCase{"12\xCE\xBCs", microseconds(12)},
        ParseCase{"13ms", milliseconds(13)}, ParseCase{"14s", seconds(14)}, ParseCase{"15m", minutes(15)},
        ParseCase{"16h", hours(16)}, ParseCase{"3h30m", hours(3) + minutes(30)},
        ParseCase{"10.5s4m", minutes(4) + milliseconds(10500)},
        ParseCase{"-2m3.4s", -(minutes(2) + milliseconds(3400))},
        ParseCase{"1h2m3s4ms5us6ns",
                  hours(1) + minutes(2) + seconds(3) + milliseconds(4) + microseconds(5) + nanoseconds(6)},
        ParseCase{"39h9m14.425s", hours(39) + minutes(9) + milliseconds(14425)},
        ParseCase{"52763797000ns", nanoseconds(52763797000)}, ParseCase{"0.3333333333333333333h", minutes(20)},
        ParseCase{"9007199254740993ns", nanoseconds((int64_t{1} << 53) + 1)},
        ParseCase{"9223372036854775807ns", nanoseconds(INT64_MAX)},
        ParseCase{"9223372036854775.807us", nanoseconds(INT64_MAX)},
        ParseCase{"9223372036s854ms775us807ns", nanoseconds(INT64_MAX)},
        ParseCase{"-9223372036854775808ns", nanoseconds(INT64_MIN)},
        ParseCase{"-9223372036s854ms775us808ns", nanoseconds(INT64_MIN)},
        ParseCase{"0.100000000000000000000h", minutes(6)},
        ParseCase{"0.830103483285477580700h", minutes(49) + seconds(48) + nanoseconds(372539827)},
        // Traefik's ptypes.Duration: a bare integer is a number of seconds.
        ParseCase{"10", seconds(10)}, ParseCase{"007", seconds(7)}, ParseCase{"-5", seconds(-5)},
        ParseCase{"9223372036", seconds(9223372036)}));

TEST(ParseGoDurationRefusalTest, RefusesWhatGoRefuses) {
  for (std::string_view bad :
       {"", "-", "+", "s", ".", "-.", ".s", "+.s", "1d", "1.5", "10 s", " 10s", "1s ", "1e3s", "\x85\x85",
        "\xff\xff", "hello \xff" "ff world", "9223372036854775808ns", "9223372036854775.808us",
        "9223372036854ms775us808ns", "-9223372036854775809ns", "9223372037", "3000000h", "1__0s"}) {
    EXPECT_FALSE(ParseSignedGoDuration(bad).ok()) << bad;
    EXPECT_FALSE(ParseGoDuration(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseGoDuration("-1s").status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ParseGoDuration("-1s").status().message().find("negative"), std::string::npos);
}

struct FormatCase {
  std::string want;
  nanoseconds d;
};

class FormatGoDurationTest : public ::testing::TestWithParam<FormatCase> {};

TEST_P(FormatGoDurationTest, RendersAsGo) {
  EXPECT_EQ(FormatGoDuration(GetParam().d), GetParam().want);
  // And what it renders parses back to the same duration.
  StatusOr<nanoseconds> back = ParseSignedGoDuration(GetParam().want);
  ASSERT_TRUE(back.ok()) << GetParam().want;
  EXPECT_EQ(back->count(), GetParam().d.count());
}

INSTANTIATE_TEST_SUITE_P(
    Go, FormatGoDurationTest,
    ::testing::Values(FormatCase{"0s", nanoseconds(0)}, FormatCase{"1ns", nanoseconds(1)},
                      FormatCase{"1.1\xC2\xB5s", nanoseconds(1100)}, FormatCase{"2.2ms", microseconds(2200)},
                      FormatCase{"3.3s", milliseconds(3300)}, FormatCase{"4m5s", minutes(4) + seconds(5)},
                      FormatCase{"4m5.001s", minutes(4) + milliseconds(5001)},
                      FormatCase{"5h6m7.001s", hours(5) + minutes(6) + milliseconds(7001)},
                      FormatCase{"8m0.000000001s", minutes(8) + nanoseconds(1)},
                      FormatCase{"2562047h47m16.854775807s", nanoseconds(INT64_MAX)},
                      FormatCase{"-2562047h47m16.854775808s", nanoseconds(INT64_MIN)},
                      FormatCase{"10s", seconds(10)}, FormatCase{"1m30s", seconds(90)},
                      FormatCase{"1h0m0s", hours(1)}, FormatCase{"1h2m3s", hours(1) + minutes(2) + seconds(3)},
                      FormatCase{"1.5s", milliseconds(1500)}, FormatCase{"100ms", milliseconds(100)},
                      FormatCase{"-1.5s", milliseconds(-1500)}, FormatCase{"999ns", nanoseconds(999)},
                      FormatCase{"1\xC2\xB5s", microseconds(1)}));

}  // namespace
}  // namespace paddock::edge
