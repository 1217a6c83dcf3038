#include "edge/dynamic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>
#include <fmt/format.h>

namespace paddock::edge {
namespace {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// The schema: Traefik's dynamic-configuration types (pkg/config/dynamic http_config.go,
// middlewares.go, config.go; pkg/tls tls.go, certificate.go; pkg/types domains.go), each field in
// its JSON spelling. Label paths match the same names case-insensitively (Traefik matches a label
// to the Go field name, which equals the JSON name but for case, servers' `server` aside).

enum class Kind {
  kString,
  kInt,             // Go int / int64
  kBool,
  kDuration,        // ptypes.Duration, non-negative
  kSignedDuration,  // ptypes.Duration where a negative value means something (flushInterval)
  kStringList,      // []string
  kStringMap,       // map[string]string (header maps): keys keep their case
  kObject,          // a struct
  kObjectList,      // []struct
  kObjectMap,       // map[string]*struct (routers, services, ...): names keep their case
  kRefused,         // a Traefik field this edge does not take: `why` says so
};

// How the labels treat a field.
enum class InLabels {
  kYes,
  kIgnored,  // label:"-" in Traefik: the label parser skips the subtree silently
};

struct Struct;

struct Field {
  std::string_view name;  // Traefik's JSON spelling
  Kind kind = Kind::kString;
  const Struct* type = nullptr;  // kObject, kObjectList, kObjectMap
  std::string_view why = {};     // kRefused: the reason, completing "... is not supported: <why>"
  // label:"allowEmpty": the object may stand alone in labels (`tls=true`) and as null in JSON.
  bool allow_empty = false;
  // label-slice-as-struct: the labels spell the list's one element this way (`server`).
  std::string_view label_name = {};
  InLabels labels = InLabels::kYes;
  bool in_json = true;  // false: label-only (json:"-" in Traefik)
};

struct Struct {
  std::string_view what;  // for messages: "a router"
  std::span<const Field> fields;
};

constexpr Field Str(std::string_view n) { return {.name = n, .kind = Kind::kString}; }
constexpr Field Int(std::string_view n) { return {.name = n, .kind = Kind::kInt}; }
constexpr Field Bool(std::string_view n) { return {.name = n, .kind = Kind::kBool}; }
constexpr Field Dur(std::string_view n) { return {.name = n, .kind = Kind::kDuration}; }
constexpr Field SignedDur(std::string_view n) { return {.name = n, .kind = Kind::kSignedDuration}; }
constexpr Field Strs(std::string_view n) { return {.name = n, .kind = Kind::kStringList}; }
constexpr Field StrMap(std::string_view n) { return {.name = n, .kind = Kind::kStringMap}; }
constexpr Field Obj(std::string_view n, const Struct& s) { return {.name = n, .kind = Kind::kObject, .type = &s}; }
constexpr Field ObjList(std::string_view n, const Struct& s) {
  return {.name = n, .kind = Kind::kObjectList, .type = &s};
}
constexpr Field ObjMap(std::string_view n, const Struct& s) {
  return {.name = n, .kind = Kind::kObjectMap, .type = &s};
}
constexpr Field Refused(std::string_view n, std::string_view why) {
  return {.name = n, .kind = Kind::kRefused, .why = why};
}
constexpr Field AllowEmpty(Field f) {
  f.allow_empty = true;
  return f;
}
constexpr Field IgnoredInLabels(Field f) {
  f.labels = InLabels::kIgnored;
  return f;
}
constexpr Field LabelOnly(Field f) {
  f.in_json = false;
  return f;
}
constexpr Field LabelName(Field f, std::string_view label_name) {
  f.label_name = label_name;
  return f;
}

constexpr std::string_view kPhase2 = "a phase-2 feature of the edge";
constexpr std::string_view kNotSupported = "not supported by the edge";

// types.Domain
constexpr Field kDomainFields[] = {Str("main"), Strs("sans")};
constexpr Struct kDomain{"a domain", kDomainFields};

// RouterTLSConfig
constexpr Field kRouterTlsFields[] = {Str("options"), Str("certResolver"), ObjList("domains", kDomain)};
constexpr Struct kRouterTls{"a router's tls", kRouterTlsFields};

// RouterObservabilityConfig
constexpr Field kObservabilityFields[] = {Bool("accessLogs"), Bool("metrics"), Bool("tracing"),
                                          Str("traceVerbosity")};
constexpr Struct kObservability{"a router's observability", kObservabilityFields};

// Router
constexpr Field kRouterFields[] = {
    Strs("entryPoints"),
    Strs("middlewares"),
    Str("service"),
    Str("rule"),
    Str("ruleSyntax"),
    Int("priority"),
    AllowEmpty(Obj("tls", kRouterTls)),
    Obj("observability", kObservability),
    IgnoredInLabels(Refused("parentRefs", kNotSupported)),
};
constexpr Struct kRouter{"a router", kRouterFields};

// Cookie, Sticky
constexpr Field kCookieFields[] = {Str("name"),  Bool("secure"), Bool("httpOnly"), Str("sameSite"),
                                   Int("maxAge"), Str("path"),    Str("domain")};
constexpr Struct kCookie{"a sticky cookie", kCookieFields};
constexpr Field kStickyFields[] = {AllowEmpty(Obj("cookie", kCookie))};
constexpr Struct kSticky{"a sticky", kStickyFields};

// Server: port and scheme are the labels' (json:"-"), for the provider to build the url from.
constexpr Field kServerFields[] = {Str("url"), Int("weight"), Bool("preservePath"), LabelOnly(Str("scheme")),
                                   LabelOnly(Str("port"))};
constexpr Struct kServer{"a server", kServerFields};

// ServerHealthCheck
constexpr Field kHealthCheckFields[] = {
    Str("scheme"),   Str("mode"),           Str("path"),     Str("method"),   Int("status"),
    Int("port"),     Dur("interval"),       Dur("unhealthyInterval"),         Dur("timeout"),
    Str("hostname"), Bool("followRedirects"), StrMap("headers"),
};
constexpr Struct kHealthCheck{"a health check", kHealthCheckFields};

// ResponseForwarding
constexpr Field kResponseForwardingFields[] = {SignedDur("flushInterval")};
constexpr Struct kResponseForwarding{"a responseForwarding", kResponseForwardingFields};

// ServersLoadBalancer
constexpr Field kLoadBalancerFields[] = {
    AllowEmpty(Obj("sticky", kSticky)),
    LabelName(ObjList("servers", kServer), "server"),
    Str("strategy"),
    Obj("healthCheck", kHealthCheck),
    Refused("passiveHealthCheck", kNotSupported),
    Bool("passHostHeader"),
    Obj("responseForwarding", kResponseForwarding),
    Str("serversTransport"),
};
constexpr Struct kLoadBalancer{"a loadBalancer", kLoadBalancerFields};

// WRRService, HealthCheck (the empty struct), WeightedRoundRobin
constexpr Field kWrrServiceFields[] = {Str("name"), Int("weight")};
constexpr Struct kWrrService{"a weighted service", kWrrServiceFields};
constexpr Struct kServiceHealthCheck{"a service health check", {}};
constexpr Field kWeightedFields[] = {ObjList("services", kWrrService), Obj("sticky", kSticky),
                                     AllowEmpty(Obj("healthCheck", kServiceHealthCheck))};
constexpr Struct kWeighted{"a weighted", kWeightedFields};

// Failover, FailoverError
constexpr Field kFailoverErrorFields[] = {Strs("status"), Int("maxRequestBodyBytes")};
constexpr Struct kFailoverError{"a failover's errors", kFailoverErrorFields};
constexpr Field kFailoverFields[] = {Str("service"), Str("fallback"), AllowEmpty(Obj("healthCheck", kServiceHealthCheck)),
                                     AllowEmpty(Obj("errors", kFailoverError))};
constexpr Struct kFailover{"a failover", kFailoverFields};

// Mirroring, MirrorService
constexpr Field kMirrorServiceFields[] = {Str("name"), Int("percent")};
constexpr Struct kMirrorService{"a mirror", kMirrorServiceFields};
constexpr Field kMirroringFields[] = {Str("service"), Bool("mirrorBody"), Int("maxBodySize"),
                                      ObjList("mirrors", kMirrorService),
                                      AllowEmpty(Obj("healthCheck", kServiceHealthCheck))};
constexpr Struct kMirroring{"a mirroring", kMirroringFields};

// HighestRandomWeight (its HRWService is WRRService's shape: name, weight)
constexpr Field kHrwFields[] = {ObjList("services", kWrrService), AllowEmpty(Obj("healthCheck", kServiceHealthCheck))};
constexpr Struct kHrw{"a highestRandomWeight", kHrwFields};

// Service
constexpr Field kServiceFields[] = {
    Obj("loadBalancer", kLoadBalancer),
    IgnoredInLabels(Obj("weighted", kWeighted)),
    IgnoredInLabels(Obj("mirroring", kMirroring)),
    IgnoredInLabels(Obj("failover", kFailover)),
    IgnoredInLabels(Obj("highestRandomWeight", kHrw)),
    Refused("middlewares", kNotSupported),
};
constexpr Struct kService{"a service", kServiceFields};

// Middlewares.
constexpr Field kAddPrefixFields[] = {Str("prefix")};
constexpr Struct kAddPrefix{"an addPrefix", kAddPrefixFields};
constexpr Field kStripPrefixFields[] = {Strs("prefixes"), Bool("forceSlash")};
constexpr Struct kStripPrefix{"a stripPrefix", kStripPrefixFields};
constexpr Field kStripPrefixRegexFields[] = {Strs("regex")};
constexpr Struct kStripPrefixRegex{"a stripPrefixRegex", kStripPrefixRegexFields};
constexpr Field kReplacePathFields[] = {Str("path")};
constexpr Struct kReplacePath{"a replacePath", kReplacePathFields};
constexpr Field kReplacePathRegexFields[] = {Str("regex"), Str("replacement")};
constexpr Struct kReplacePathRegex{"a replacePathRegex", kReplacePathRegexFields};
constexpr Field kChainFields[] = {Strs("middlewares")};
constexpr Struct kChain{"a chain", kChainFields};

// IPStrategy, IPAllowList
constexpr Field kIpStrategyFields[] = {Int("depth"), Strs("excludedIPs"), Int("ipv6Subnet")};
constexpr Struct kIpStrategy{"an ipStrategy", kIpStrategyFields};
constexpr Field kIpAllowListFields[] = {Strs("sourceRange"), AllowEmpty(Obj("ipStrategy", kIpStrategy)),
                                        Int("rejectStatusCode")};
constexpr Struct kIpAllowList{"an ipAllowList", kIpAllowListFields};

// Headers: every field of Traefik's.
constexpr Field kHeadersFields[] = {
    StrMap("customRequestHeaders"),
    StrMap("customResponseHeaders"),
    Bool("accessControlAllowCredentials"),
    Strs("accessControlAllowHeaders"),
    Strs("accessControlAllowMethods"),
    Strs("accessControlAllowOriginList"),
    Strs("accessControlAllowOriginListRegex"),
    Strs("accessControlExposeHeaders"),
    Int("accessControlMaxAge"),
    Bool("addVaryHeader"),
    Strs("allowedHosts"),
    Strs("hostsProxyHeaders"),
    StrMap("sslProxyHeaders"),
    Int("stsSeconds"),
    Bool("stsIncludeSubdomains"),
    Bool("stsPreload"),
    Bool("forceSTSHeader"),
    Bool("frameDeny"),
    Str("customFrameOptionsValue"),
    Bool("contentTypeNosniff"),
    Bool("browserXssFilter"),
    Str("customBrowserXSSValue"),
    Str("contentSecurityPolicy"),
    Str("contentSecurityPolicyReportOnly"),
    Str("publicKey"),
    Str("referrerPolicy"),
    Str("permissionsPolicy"),
    Bool("isDevelopment"),
    Str("featurePolicy"),
    Bool("sslRedirect"),
    Bool("sslTemporaryRedirect"),
    Str("sslHost"),
    Bool("sslForceHost"),
};
constexpr Struct kHeaders{"a headers", kHeadersFields};

// SourceCriterion, RateLimit
constexpr Field kSourceCriterionFields[] = {Obj("ipStrategy", kIpStrategy), Str("requestHeaderName"),
                                            Bool("requestHost")};
constexpr Struct kSourceCriterion{"a sourceCriterion", kSourceCriterionFields};
constexpr Field kRateLimitFields[] = {Int("average"), Dur("period"), Int("burst"),
                                      Obj("sourceCriterion", kSourceCriterion), Refused("redis", kPhase2)};
constexpr Struct kRateLimit{"a rateLimit", kRateLimitFields};
constexpr Field kInFlightReqFields[] = {Int("amount"), Obj("sourceCriterion", kSourceCriterion)};
constexpr Struct kInFlightReq{"an inFlightReq", kInFlightReqFields};
constexpr Field kCircuitBreakerFields[] = {Str("expression"), Dur("checkPeriod"), Dur("fallbackDuration"),
                                           Dur("recoveryDuration"), Int("responseCode")};
constexpr Struct kCircuitBreaker{"a circuitBreaker", kCircuitBreakerFields};
constexpr Field kCompressFields[] = {Strs("excludedContentTypes"), Strs("includedContentTypes"),
                                     Int("minResponseBodyBytes"), Strs("encodings"), Str("defaultEncoding")};
constexpr Struct kCompress{"a compress", kCompressFields};
// ErrorPage (nginxHeaders is the ingress-nginx provider's: label:"-", file:"-")
constexpr Field kErrorPageFields[] = {Strs("status"), StrMap("statusRewrites"), Str("service"), Str("query"),
                                      AllowEmpty(Strs("errorRequestHeaders"))};  // [] forwards none
constexpr Struct kErrorPage{"an errors", kErrorPageFields};

// RedirectRegex, RedirectScheme
constexpr Field kRedirectRegexFields[] = {Str("regex"), Str("replacement"), Bool("permanent")};
constexpr Struct kRedirectRegex{"a redirectRegex", kRedirectRegexFields};
constexpr Field kRedirectSchemeFields[] = {Str("scheme"), Str("port"), Bool("permanent")};
constexpr Struct kRedirectScheme{"a redirectScheme", kRedirectSchemeFields};

// BasicAuth
constexpr Field kBasicAuthFields[] = {Strs("users"), Str("usersFile"), Str("realm"), Bool("removeHeader"),
                                      Str("headerField")};
constexpr Struct kBasicAuth{"a basicAuth", kBasicAuthFields};
constexpr Field kDigestAuthFields[] = {Strs("users"), Str("usersFile"), Bool("removeHeader"), Str("realm"),
                                       Str("headerField")};
constexpr Struct kDigestAuth{"a digestAuth", kDigestAuthFields};

// ClientTLS, ForwardAuth
constexpr Field kClientTlsFields[] = {Str("ca"), Str("cert"), Str("key"), Bool("insecureSkipVerify"),
                                      Bool("caOptional")};
constexpr Struct kClientTls{"a forwardAuth's tls", kClientTlsFields};
constexpr Field kForwardAuthFields[] = {
    Str("address"),
    Obj("tls", kClientTls),
    Bool("trustForwardHeader"),
    Strs("authResponseHeaders"),
    Str("authResponseHeadersRegex"),
    Strs("authRequestHeaders"),
    Int("maxResponseBodySize"),
    Strs("addAuthCookiesToResponse"),
    Str("headerField"),
    Bool("forwardBody"),
    Int("maxBodySize"),
    Bool("preserveLocationHeader"),
    Bool("preserveRequestMethod"),
    Str("authSigninURL"),
};
constexpr Struct kForwardAuth{"a forwardAuth", kForwardAuthFields};

// Buffering, Retry
constexpr Field kBufferingFields[] = {Int("maxRequestBodyBytes"), Int("memRequestBodyBytes"),
                                      Int("maxResponseBodyBytes"), Int("memResponseBodyBytes"),
                                      Str("retryExpression")};
constexpr Struct kBuffering{"a buffering", kBufferingFields};
constexpr Field kRetryFields[] = {Int("attempts"),
                                  Dur("timeout"),
                                  Dur("initialInterval"),
                                  Int("maxRequestBodyBytes"),
                                  Strs("status"),
                                  Bool("disableRetryOnNetworkError"),
                                  Bool("retryNonIdempotentMethod")};
constexpr Struct kRetry{"a retry", kRetryFields};
constexpr Field kTlsClientCertSubjectFields[] = {Bool("country"),    Bool("province"),           Bool("locality"),
                                                 Bool("organization"), Bool("organizationalUnit"), Bool("commonName"),
                                                 Bool("serialNumber"), Bool("domainComponent")};
constexpr Struct kTlsClientCertSubject{"a subject", kTlsClientCertSubjectFields};
constexpr Field kTlsClientCertIssuerFields[] = {Bool("country"),      Bool("province"),   Bool("locality"),
                                                Bool("organization"), Bool("commonName"), Bool("serialNumber"),
                                                Bool("domainComponent")};
constexpr Struct kTlsClientCertIssuer{"an issuer", kTlsClientCertIssuerFields};
constexpr Field kTlsClientCertInfoFields[] = {Bool("notAfter"),     Bool("notBefore"),
                                              Bool("sans"),         Bool("serialNumber"),
                                              Obj("subject", kTlsClientCertSubject), Obj("issuer", kTlsClientCertIssuer)};
constexpr Struct kTlsClientCertInfo{"an info", kTlsClientCertInfoFields};
constexpr Field kPassTlsClientCertFields[] = {Bool("pem"), Obj("info", kTlsClientCertInfo)};
constexpr Struct kPassTlsClientCert{"a passTLSClientCert", kPassTlsClientCertFields};

// Middleware: one kind per middleware (Traefik takes the first it finds; the runtime checks).
constexpr Field kMiddlewareFields[] = {
    Obj("addPrefix", kAddPrefix),
    Obj("stripPrefix", kStripPrefix),
    Obj("stripPrefixRegex", kStripPrefixRegex),
    Obj("replacePath", kReplacePath),
    Obj("replacePathRegex", kReplacePathRegex),
    Obj("chain", kChain),
    Obj("ipAllowList", kIpAllowList),
    Obj("headers", kHeaders),
    Obj("rateLimit", kRateLimit),
    Obj("redirectRegex", kRedirectRegex),
    Obj("redirectScheme", kRedirectScheme),
    Obj("basicAuth", kBasicAuth),
    Obj("forwardAuth", kForwardAuth),
    Obj("buffering", kBuffering),
    Obj("retry", kRetry),
    Refused("ipWhiteList", "deprecated by Traefik and not supported by the edge: use ipAllowList"),
    AllowEmpty(Obj("compress", kCompress)),
    Obj("inFlightReq", kInFlightReq),
    Obj("circuitBreaker", kCircuitBreaker),
    Obj("errors", kErrorPage),
    Obj("digestAuth", kDigestAuth),
    Obj("passTLSClientCert", kPassTlsClientCert),
    Refused("grpcWeb", kPhase2),
    Refused("plugin", kPhase2),
    Refused("encodedCharacters", kNotSupported),
    Refused("contentType", kNotSupported),
};
constexpr Struct kMiddleware{"a middleware", kMiddlewareFields};

// ForwardingTimeouts (readIdleTimeout and pingTimeout are HTTP/2's: taken, and moot, as the edge
// speaks HTTP/1.1 to servers), SAN, ServersTransport (spiffe, which needs a SPIFFE workload API,
// is refused)
constexpr Field kForwardingTimeoutsFields[] = {Dur("dialTimeout"), Dur("responseHeaderTimeout"),
                                               Dur("idleConnTimeout"), Dur("readIdleTimeout"), Dur("pingTimeout")};
constexpr Struct kForwardingTimeouts{"forwardingTimeouts", kForwardingTimeoutsFields};
constexpr Field kServersTransportCertificateFields[] = {Str("certFile"), Str("keyFile")};
constexpr Struct kServersTransportCertificate{"a certificate", kServersTransportCertificateFields};
constexpr Field kSanFields[] = {Str("type"), Str("value")};
constexpr Struct kSan{"a SAN", kSanFields};
constexpr Field kServersTransportFields[] = {
    Str("serverName"),
    Bool("insecureSkipVerify"),
    Strs("rootCAs"),
    ObjList("certificates", kServersTransportCertificate),
    Int("maxIdleConnsPerHost"),
    Obj("forwardingTimeouts", kForwardingTimeouts),
    Bool("disableHTTP2"),
    Str("peerCertURI"),
    ObjList("peerCertSANs", kSan),
    Refused("spiffe", kNotSupported),
    Strs("cipherSuites"),
    Str("minVersion"),
    Str("maxVersion"),
};
constexpr Struct kServersTransport{"a servers transport", kServersTransportFields};

// HTTPConfiguration (serversTransports: Traefik's labels do not reach them, only files and http)
constexpr Field kHttpFields[] = {
    ObjMap("routers", kRouter),
    ObjMap("services", kService),
    ObjMap("middlewares", kMiddleware),
    Refused("models", kNotSupported),
    IgnoredInLabels(ObjMap("serversTransports", kServersTransport)),
};
constexpr Struct kHttp{"http", kHttpFields};

// pkg/tls: Certificate, CertAndStores, ClientAuth, Options, GeneratedCert, Store
constexpr Field kCertificateFields[] = {Str("certFile"), Str("keyFile")};
constexpr Struct kCertificate{"a certificate", kCertificateFields};
constexpr Field kCertAndStoresFields[] = {Str("certFile"), Str("keyFile"), Strs("stores")};
constexpr Struct kCertAndStores{"a certificate", kCertAndStoresFields};
constexpr Field kClientAuthFields[] = {Strs("caFiles"), Str("clientAuthType")};
constexpr Struct kClientAuth{"a clientAuth", kClientAuthFields};
constexpr Field kTlsOptionsFields[] = {
    Str("minVersion"),    Str("maxVersion"),   Strs("cipherSuites"),        Strs("curvePreferences"),
    Obj("clientAuth", kClientAuth),            Bool("sniStrict"),           Strs("alpnProtocols"),
    Bool("disableSessionTickets"),             Bool("preferServerCipherSuites"),
};
constexpr Struct kTlsOptions{"tls options", kTlsOptionsFields};
constexpr Field kGeneratedCertFields[] = {Str("resolver"), Obj("domain", kDomain)};
constexpr Struct kGeneratedCert{"a defaultGeneratedCert", kGeneratedCertFields};
constexpr Field kStoreFields[] = {IgnoredInLabels(Obj("defaultCertificate", kCertificate)),
                                  Obj("defaultGeneratedCert", kGeneratedCert)};
constexpr Struct kStore{"a tls store", kStoreFields};

// TLSConfiguration
constexpr Field kTlsFields[] = {
    IgnoredInLabels(ObjList("certificates", kCertAndStores)),
    IgnoredInLabels(ObjMap("options", kTlsOptions)),
    ObjMap("stores", kStore),
};
constexpr Struct kTls{"tls", kTlsFields};

// Configuration
constexpr Field kConfigurationFields[] = {
    Obj("http", kHttp),
    Obj("tls", kTls),
    Refused("tcp", kPhase2),
    Refused("udp", kPhase2),
};
constexpr Struct kConfiguration{"the configuration", kConfigurationFields};

// ---------------------------------------------------------------------------------------------
// Scalars, as Go's strconv and time read them.

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

bool StartsWithFold(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualFold(s.substr(0, prefix.size()), prefix);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits; nothing else.
std::optional<int64_t> ParseGoInt(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  constexpr uint64_t kLimit = uint64_t{1} << 63;  // |INT64_MIN|
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    if (v > kLimit / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > kLimit) return std::nullopt;
  }
  if (!neg && v == kLimit) return std::nullopt;
  return neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

// strconv.ParseBool.
std::optional<bool> ParseGoBool(std::string_view s) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (s == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (s == f) return false;
  }
  return std::nullopt;
}

// strings.TrimSpace, ASCII white space.
std::string_view TrimSpace(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// A value in a message: quoted, cut short.
std::string Quote(std::string_view v) {
  constexpr size_t kMax = 80;
  if (v.size() <= kMax) return fmt::format("\"{}\"", v);
  return fmt::format("\"{}...\"", v.substr(0, kMax));
}

// Go's time.ParseDuration, on the magnitude; `text` is only for messages.
StatusOr<std::chrono::nanoseconds> ParseGoDurationExact(std::string_view text) {
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  std::string_view s = text;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  auto invalid = [&] { return InvalidArgument(fmt::format("invalid duration {}", Quote(text))); };
  if (s.empty()) return invalid();
  uint64_t d = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || IsDigit(s[0]))) return invalid();
    // The integer part.
    uint64_t v = 0;
    size_t i = 0;
    for (; i < s.size() && IsDigit(s[i]); ++i) {
      if (v > kLimit / 10) return invalid();
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      if (v > kLimit) return invalid();
    }
    bool pre = i > 0;
    s.remove_prefix(i);
    // The fraction: digits beyond what fits are read and dropped, as Go does.
    uint64_t f = 0;
    double scale = 1;
    bool post = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      size_t j = 0;
      bool overflow = false;
      for (; j < s.size() && IsDigit(s[j]); ++j) {
        if (overflow) continue;
        if (f > (kLimit - 1) / 10) {
          overflow = true;
          continue;
        }
        uint64_t y = f * 10 + static_cast<uint64_t>(s[j] - '0');
        if (y > kLimit) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      post = j > 0;
      s.remove_prefix(j);
    }
    if (!pre && !post) return invalid();
    // The unit: everything up to the next digit or '.'.
    size_t u = 0;
    while (u < s.size() && s[u] != '.' && !IsDigit(s[u])) ++u;
    if (u == 0) return InvalidArgument(fmt::format("invalid duration {}: missing unit", Quote(text)));
    std::string_view unit_name = s.substr(0, u);
    s.remove_prefix(u);
    uint64_t unit = 0;
    if (unit_name == "ns") {
      unit = 1;
    } else if (unit_name == "us" || unit_name == "\xC2\xB5s" || unit_name == "\xCE\xBCs") {  // µs, μs
      unit = 1000;
    } else if (unit_name == "ms") {
      unit = 1000 * 1000;
    } else if (unit_name == "s") {
      unit = 1000 * 1000 * 1000;
    } else if (unit_name == "m") {
      unit = 60ull * 1000 * 1000 * 1000;
    } else if (unit_name == "h") {
      unit = 3600ull * 1000 * 1000 * 1000;
    } else {
      return InvalidArgument(fmt::format("invalid duration {}: unknown unit {}", Quote(text), Quote(unit_name)));
    }
    if (v > kLimit / unit) return invalid();
    v *= unit;
    if (f > 0) {
      v += static_cast<uint64_t>(static_cast<double>(f) * (static_cast<double>(unit) / scale));
      if (v > kLimit) return invalid();
    }
    d += v;
    if (d > kLimit) return invalid();
  }
  if (neg) return std::chrono::nanoseconds(static_cast<int64_t>(0 - d));
  if (d > kLimit - 1) return invalid();
  return std::chrono::nanoseconds(static_cast<int64_t>(d));
}

// Integer seconds to a duration, refusing what does not fit in int64 nanoseconds.
StatusOr<std::chrono::nanoseconds> SecondsToDuration(int64_t seconds, std::string_view text) {
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1000000000;
  if (seconds > kMaxSeconds || seconds < -kMaxSeconds) {
    return InvalidArgument(fmt::format("invalid duration {}: out of range", Quote(text)));
  }
  return std::chrono::nanoseconds(seconds * 1000000000);
}

// ---------------------------------------------------------------------------------------------
// Labels: first Traefik's node tree (paerser DecodeToNode), then the schema over it.

struct Node {
  std::string name;
  std::string value;
  bool has_value = false;
  const std::string* label = nullptr;        // the first label under this node, to name in errors
  const std::string* value_label = nullptr;  // the label that set `value`
  std::vector<Node> children;

  Node* Find(std::string_view n) {
    for (Node& c : children) {
      if (EqualFold(c.name, n)) return &c;
    }
    return nullptr;
  }
};

Status LabelError(const std::string& label, std::string_view what) {
  std::string_view shown = label;
  if (shown.size() > 200) shown = shown.substr(0, 200);
  return InvalidArgument(fmt::format("label {}{}: {}", shown, shown.size() < label.size() ? "..." : "", what));
}

Status NodeError(const Node& n, std::string_view what) {
  return LabelError(n.value_label != nullptr ? *n.value_label : *n.label, what);
}

// A list index "[n]": n decimal, no leading zero, at most kMaxListIndex.
std::optional<int> ParseIndex(std::string_view name) {
  if (name.size() < 3 || name.front() != '[' || name.back() != ']') return std::nullopt;
  std::string_view digits = name.substr(1, name.size() - 2);
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  int n = 0;
  for (char c : digits) {
    if (!IsDigit(c)) return std::nullopt;
    n = n * 10 + (c - '0');
    if (n > kMaxListIndex) return std::nullopt;
  }
  return n;
}

// Splits a key into path segments as paerser does: on '.', and `name[i]` into `name`, `[i]`.
StatusOr<std::vector<std::string_view>> SplitKey(const std::string& key) {
  std::vector<std::string_view> parts;
  std::string_view rest = key;
  while (true) {
    size_t dot = rest.find('.');
    std::string_view seg = rest.substr(0, dot);
    if (seg.empty()) return LabelError(key, "empty path segment");
    if (seg[0] == '[') return LabelError(key, fmt::format("segment {} starts with '['", Quote(seg)));
    size_t bracket = seg.find('[');
    if (seg.back() == ']' && bracket != std::string_view::npos) {
      parts.push_back(seg.substr(0, bracket));
      parts.push_back(seg.substr(bracket));
    } else {
      parts.push_back(seg);
    }
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  return parts;
}

StatusOr<json::object> DecodeStructLabels(const Struct& s, const Node& node);

StatusOr<json::value> DecodeScalarLabel(const Field& f, const Node& n) {
  const std::string& v = n.value;
  switch (f.kind) {
    case Kind::kInt:
      if (std::optional<int64_t> i = ParseGoInt(v)) return json::value(*i);
      return NodeError(n, fmt::format("{} is not an integer", Quote(v)));
    case Kind::kBool:
      if (std::optional<bool> b = ParseGoBool(v)) return json::value(*b);
      return NodeError(n, fmt::format("{} is not a boolean", Quote(v)));
    case Kind::kDuration:
    case Kind::kSignedDuration: {
      StatusOr<std::chrono::nanoseconds> d =
          f.kind == Kind::kDuration ? ParseGoDuration(v) : ParseSignedGoDuration(v);
      if (!d.ok()) return NodeError(n, d.status().message());
      return json::value(FormatGoDuration(*d));
    }
    default:
      return json::value(json::string(v));
  }
}

// The field's value, or nullopt when it is absent (an empty string or list, a disabled object).
StatusOr<std::optional<json::value>> DecodeFieldLabels(const Field& f, const Node& n) {
  switch (f.kind) {
    case Kind::kString:
    case Kind::kInt:
    case Kind::kBool:
    case Kind::kDuration:
    case Kind::kSignedDuration: {
      if (!n.children.empty()) {
        return NodeError(n.children.front(), fmt::format("{} is a value, not an object", f.name));
      }
      if (f.kind == Kind::kString && n.value.empty()) return std::optional<json::value>();
      ASSIGN_OR_RETURN(json::value v, DecodeScalarLabel(f, n));
      return std::optional<json::value>(std::move(v));
    }
    case Kind::kStringList: {
      if (!n.children.empty()) {
        return NodeError(n.children.front(), fmt::format("{} is a comma-separated list, not an object", f.name));
      }
      if (n.value.empty()) return std::optional<json::value>();
      json::array items;
      std::string_view rest = n.value;
      while (true) {
        size_t comma = rest.find(',');
        items.emplace_back(json::string(TrimSpace(rest.substr(0, comma))));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
      return std::optional<json::value>(std::move(items));
    }
    case Kind::kStringMap: {
      if (n.children.empty()) return NodeError(n, fmt::format("{} needs keys ({}.<key>=<value>)", f.name, f.name));
      json::object m;
      for (const Node& c : n.children) {
        if (!c.children.empty()) {
          return NodeError(c.children.front(), fmt::format("{}.{} is a value, not an object", f.name, c.name));
        }
        m[c.name] = json::string(c.value);
      }
      return std::optional<json::value>(std::move(m));
    }
    case Kind::kObject: {
      // label:"allowEmpty": `true` (or no value) enables it, any other value disables it.
      if (f.allow_empty && n.has_value && !EqualFold(n.value, "true")) return std::optional<json::value>();
      if (n.children.empty() && !f.allow_empty) {
        return NodeError(n, fmt::format("{} cannot stand alone: set its fields ({}.<field>)", f.name, f.name));
      }
      ASSIGN_OR_RETURN(json::object o, DecodeStructLabels(*f.type, n));
      return std::optional<json::value>(std::move(o));
    }
    case Kind::kObjectList: {
      if (!f.label_name.empty()) {  // the singular `server.<field>`: the list's only element
        if (n.children.empty()) return NodeError(n, fmt::format("{} needs fields ({}.<field>)", f.label_name, f.label_name));
        ASSIGN_OR_RETURN(json::object o, DecodeStructLabels(*f.type, n));
        json::array a;
        a.emplace_back(std::move(o));
        return std::optional<json::value>(std::move(a));
      }
      if (n.children.empty()) return NodeError(n, fmt::format("{} needs indexed items ({}[0].<field>)", f.name, f.name));
      std::vector<std::pair<int, const Node*>> items;
      for (const Node& c : n.children) {
        std::optional<int> index = ParseIndex(c.name);
        if (!index) {
          return NodeError(c, fmt::format("{} needs indexed items ({}[0].<field>; index at most {}), not {}", f.name,
                                          f.name, kMaxListIndex, Quote(c.name)));
        }
        items.emplace_back(*index, &c);
      }
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      json::array a;
      for (const auto& [index, c] : items) {
        if (c->children.empty()) return NodeError(*c, fmt::format("{}{} needs fields", f.name, c->name));
        ASSIGN_OR_RETURN(json::object o, DecodeStructLabels(*f.type, *c));
        a.emplace_back(std::move(o));
      }
      return std::optional<json::value>(std::move(a));
    }
    case Kind::kObjectMap: {
      if (n.children.empty()) return NodeError(n, fmt::format("{} needs names ({}.<name>.<field>)", f.name, f.name));
      json::object m;
      for (const Node& c : n.children) {
        ASSIGN_OR_RETURN(json::object o, DecodeStructLabels(*f.type, c));
        m[c.name] = std::move(o);
      }
      return std::optional<json::value>(std::move(m));
    }
    case Kind::kRefused:
      return NodeError(n, fmt::format("{} is {}", f.name, f.why));
  }
  return NodeError(n, "unreachable");
}

const Field* FindLabelField(const Struct& s, std::string_view name) {
  for (const Field& f : s.fields) {
    std::string_view spelled = f.label_name.empty() ? f.name : f.label_name;
    if (EqualFold(spelled, name)) return &f;
  }
  return nullptr;
}

StatusOr<json::object> DecodeStructLabels(const Struct& s, const Node& node) {
  json::object out;
  for (const Node& c : node.children) {
    const Field* f = FindLabelField(s, c.name);
    if (f == nullptr) return NodeError(c, fmt::format("{} has no field {}", s.what, Quote(c.name)));
    if (f->labels == InLabels::kIgnored) continue;
    ASSIGN_OR_RETURN(std::optional<json::value> v, DecodeFieldLabels(*f, c));
    if (v) out[f->name] = std::move(*v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON.

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

Status PathError(const std::string& path, std::string_view what) {
  return InvalidArgument(fmt::format("{}: {}", path.empty() ? "(root)" : path, what));
}

std::string_view JsonKind(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "a list";
    case json::kind::object: return "an object";
  }
  return "a value";
}

// A scalar as text, the way a YAML or TOML scalar reaches Traefik's label-style parser.
std::optional<std::string> ScalarText(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string: return std::string(v.get_string());
    case json::kind::int64: return fmt::format("{}", v.get_int64());
    case json::kind::uint64: return fmt::format("{}", v.get_uint64());
    case json::kind::double_: return fmt::format("{}", v.get_double());
    case json::kind::bool_: return std::string(v.get_bool() ? "true" : "false");
    default: return std::nullopt;
  }
}

// An integral JSON number as int64, if it is one.
std::optional<int64_t> JsonInteger(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v.get_uint64());
  }
  if (v.is_double()) {
    double d = v.get_double();
    // 2^63 is exactly representable; every integral double below it in magnitude fits.
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9223372036854775808.0) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

StatusOr<json::object> CheckStruct(const Struct& s, const json::value& v, const std::string& path);

StatusOr<std::optional<json::value>> CheckField(const Field& f, const json::value& v, const std::string& path) {
  using Out = std::optional<json::value>;
  if (v.is_null()) {
    if (f.kind == Kind::kObject && f.allow_empty) return Out(json::object());
    return Out();
  }
  switch (f.kind) {
    case Kind::kString: {
      std::optional<std::string> t = ScalarText(v);
      if (!t) return PathError(path, fmt::format("must be a string, not {}", JsonKind(v)));
      if (t->empty()) return Out();
      return Out(json::string(*t));
    }
    case Kind::kInt: {
      if (std::optional<int64_t> i = JsonInteger(v)) return Out(*i);
      if (v.is_string()) {
        if (std::optional<int64_t> i = ParseGoInt(v.get_string())) return Out(*i);
        return PathError(path, fmt::format("{} is not an integer", Quote(v.get_string())));
      }
      return PathError(path, fmt::format("must be an integer, not {}", JsonKind(v)));
    }
    case Kind::kBool: {
      if (v.is_bool()) return Out(v.get_bool());
      if (v.is_string()) {
        if (std::optional<bool> b = ParseGoBool(v.get_string())) return Out(*b);
        return PathError(path, fmt::format("{} is not a boolean", Quote(v.get_string())));
      }
      return PathError(path, fmt::format("must be a boolean, not {}", JsonKind(v)));
    }
    case Kind::kDuration:
    case Kind::kSignedDuration: {
      bool signed_ok = f.kind == Kind::kSignedDuration;
      auto parse = [&]() -> StatusOr<std::chrono::nanoseconds> {
        if (std::optional<int64_t> seconds = JsonInteger(v)) {
          std::string text = fmt::format("{}", *seconds);
          return signed_ok ? ParseSignedGoDuration(text) : ParseGoDuration(text);
        }
        if (v.is_string()) return signed_ok ? ParseSignedGoDuration(v.get_string()) : ParseGoDuration(v.get_string());
        return InvalidArgument(fmt::format("must be a duration (\"10s\", or a number of seconds), not {}", JsonKind(v)));
      };
      StatusOr<std::chrono::nanoseconds> d = parse();
      if (!d.ok()) return PathError(path, d.status().message());
      return Out(json::string(FormatGoDuration(*d)));
    }
    case Kind::kStringList: {
      if (!v.is_array()) return PathError(path, fmt::format("must be a list of strings, not {}", JsonKind(v)));
      json::array items;
      const json::array& a = v.get_array();
      for (size_t i = 0; i < a.size(); ++i) {
        std::optional<std::string> t = ScalarText(a[i]);
        if (!t) return PathError(fmt::format("{}[{}]", path, i), fmt::format("must be a string, not {}", JsonKind(a[i])));
        items.emplace_back(json::string(*t));
      }
      if (items.empty() && !f.allow_empty) return Out();  // a Go nil slice, unless empty means something
      return Out(std::move(items));
    }
    case Kind::kStringMap: {
      if (!v.is_object()) return PathError(path, fmt::format("must be an object of strings, not {}", JsonKind(v)));
      json::object m;
      for (const auto& [k, item] : v.get_object()) {
        std::optional<std::string> t = item.is_null() ? std::string() : ScalarText(item);
        if (!t) return PathError(Join(path, k), fmt::format("must be a string, not {}", JsonKind(item)));
        m[k] = json::string(*t);
      }
      return Out(std::move(m));
    }
    case Kind::kObject: {
      ASSIGN_OR_RETURN(json::object o, CheckStruct(*f.type, v, path));
      return Out(std::move(o));
    }
    case Kind::kObjectList: {
      if (!v.is_array()) return PathError(path, fmt::format("must be a list of objects, not {}", JsonKind(v)));
      json::array items;
      const json::array& a = v.get_array();
      for (size_t i = 0; i < a.size(); ++i) {
        ASSIGN_OR_RETURN(json::object o, CheckStruct(*f.type, a[i], fmt::format("{}[{}]", path, i)));
        items.emplace_back(std::move(o));
      }
      if (items.empty()) return Out();
      return Out(std::move(items));
    }
    case Kind::kObjectMap: {
      if (!v.is_object()) return PathError(path, fmt::format("must be an object of names, not {}", JsonKind(v)));
      json::object m;
      for (const auto& [k, item] : v.get_object()) {
        ASSIGN_OR_RETURN(json::object o, CheckStruct(*f.type, item, Join(path, k)));
        m[k] = std::move(o);
      }
      return Out(std::move(m));
    }
    case Kind::kRefused:
      return PathError(path, fmt::format("{} is {}", f.name, f.why));
  }
  return PathError(path, "unreachable");
}

StatusOr<json::object> CheckStruct(const Struct& s, const json::value& v, const std::string& path) {
  if (!v.is_object()) return PathError(path, fmt::format("{} must be an object, not {}", s.what, JsonKind(v)));
  json::object out;
  std::vector<const Field*> seen;
  for (const auto& [k, item] : v.get_object()) {
    std::string p = Join(path, k);
    const Field* f = nullptr;
    for (const Field& candidate : s.fields) {
      if (candidate.in_json && EqualFold(candidate.name, k)) f = &candidate;
    }
    if (f == nullptr) return PathError(p, fmt::format("{} has no field {}", s.what, Quote(k)));
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) {
      return PathError(p, fmt::format("{} is given twice (field names are case-insensitive)", f->name));
    }
    seen.push_back(f);
    ASSIGN_OR_RETURN(std::optional<json::value> checked, CheckField(*f, item, p));
    if (checked) out[f->name] = std::move(*checked);
  }
  return out;
}

}  // namespace

StatusOr<boost::json::object> DecodeLabels(const std::map<std::string, std::string>& labels) {
  // Traefik's filters (pkg/config/label DecodeConfiguration), matched as prefixes of the key.
  constexpr std::string_view kDecoded[] = {"traefik.http", "traefik.tls.stores.default"};
  constexpr std::string_view kRefusedKinds[] = {"traefik.tcp", "traefik.udp"};

  Node root;
  size_t read = 0;
  // std::map iterates in byte order: Traefik sorts the keys the same way before building its
  // tree, which decides whose spelling a case-insensitive name keeps and which value wins.
  for (const auto& [key, value] : labels) {
    if (std::any_of(std::begin(kRefusedKinds), std::end(kRefusedKinds),
                    [&](std::string_view p) { return StartsWithFold(key, p); })) {
      return LabelError(key, "TCP and UDP routing are a phase-2 feature of the edge");
    }
    if (std::none_of(std::begin(kDecoded), std::end(kDecoded),
                     [&](std::string_view p) { return StartsWithFold(key, p); })) {
      continue;
    }
    if (++read > kMaxLabels) {
      return InvalidArgument(fmt::format("more than {} traefik labels on one container", kMaxLabels));
    }
    if (key.size() > kMaxLabelKeyBytes) {
      return LabelError(key, fmt::format("the key is longer than {} bytes", kMaxLabelKeyBytes));
    }
    if (value.size() > kMaxLabelValueBytes) {
      return LabelError(key, fmt::format("the value is longer than {} bytes", kMaxLabelValueBytes));
    }
    ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitKey(key));
    if (parts.size() > kMaxLabelSegments) {
      return LabelError(key, fmt::format("the key has more than {} segments", kMaxLabelSegments));
    }
    // parts[0] is "traefik" (any case): the root.
    Node* node = &root;
    if (node->label == nullptr) node->label = &key;
    for (size_t i = 1; i < parts.size(); ++i) {
      Node* child = node->Find(parts[i]);
      if (child == nullptr) {
        child = &node->children.emplace_back();
        child->name = parts[i];
        child->label = &key;
      }
      node = child;
    }
    node->value = value;
    node->has_value = true;
    node->value_label = &key;
  }
  if (root.children.empty()) return boost::json::object();
  return DecodeStructLabels(kConfiguration, root);
}

StatusOr<boost::json::object> CheckDynamic(const boost::json::value& config) {
  return CheckStruct(kConfiguration, config, "");
}

StatusOr<std::chrono::nanoseconds> ParseSignedGoDuration(std::string_view text) {
  // Traefik's ptypes.Duration: a bare integer (strconv.ParseInt) is a number of seconds.
  if (std::optional<int64_t> seconds = ParseGoInt(text)) return SecondsToDuration(*seconds, text);
  return ParseGoDurationExact(text);
}

StatusOr<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  ASSIGN_OR_RETURN(std::chrono::nanoseconds d, ParseSignedGoDuration(text));
  if (d.count() < 0) return InvalidArgument(fmt::format("invalid duration {}: negative", Quote(text)));
  return d;
}

std::string FormatGoDuration(std::chrono::nanoseconds d) {
  // Written from the end, as Go's time.Duration.format does.
  char buf[32];
  size_t w = sizeof buf;
  int64_t count = d.count();
  bool neg = count < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);

  // The fraction of v / 10^prec, without trailing zeros (and without the '.' when it is zero).
  auto frac = [&](uint64_t v, int prec) {
    bool print = false;
    for (int i = 0; i < prec; ++i) {
      uint64_t digit = v % 10;
      print = print || digit != 0;
      if (print) buf[--w] = static_cast<char>('0' + digit);
      v /= 10;
    }
    if (print) buf[--w] = '.';
    return v;
  };
  auto integer = [&](uint64_t v) {
    if (v == 0) {
      buf[--w] = '0';
      return;
    }
    while (v > 0) {
      buf[--w] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
  };

  constexpr uint64_t kSecond = 1000000000;
  if (u < kSecond) {
    // Under a second: the largest unit of ns, µs, ms that keeps an integer part.
    int prec = 0;
    buf[--w] = 's';
    if (u == 0) return "0s";
    if (u < 1000) {
      prec = 0;
      buf[--w] = 'n';
    } else if (u < 1000000) {
      prec = 3;
      buf[--w] = '\xB5';  // U+00B5 MICRO SIGN, as Go writes it
      buf[--w] = '\xC2';
    } else {
      prec = 6;
      buf[--w] = 'm';
    }
    u = frac(u, prec);
    integer(u);
  } else {
    buf[--w] = 's';
    u = frac(u, 9);
    integer(u % 60);  // seconds
    u /= 60;
    if (u > 0) {
      buf[--w] = 'm';
      integer(u % 60);
      u /= 60;
      if (u > 0) {
        buf[--w] = 'h';
        integer(u);
      }
    }
  }
  if (neg) buf[--w] = '-';
  return std::string(buf + w, sizeof buf - w);
}

StatusOr<std::vector<std::pair<int, int>>> HttpCodeRanges(const std::vector<std::string>& blocks) {
  std::vector<std::pair<int, int>> ranges;
  for (const std::string& block : blocks) {
    const size_t dash = block.find('-');
    std::array<std::string, 2> ends = {block.substr(0, dash), dash == std::string::npos ? block : block.substr(dash + 1)};
    std::array<int, 2> codes{};
    for (int i = 0; i < 2; ++i) {
      const std::string& e = ends[i];
      const bool digits = !e.empty() && e.size() <= 9 && std::all_of(e.begin(), e.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (!digits || (dash != std::string::npos && block.find('-', dash + 1) != std::string::npos))
        return InvalidArgument(fmt::format("creating HTTP code ranges: invalid status \"{}\"", block));
      codes[i] = std::stoi(e);
    }
    ranges.emplace_back(codes[0], codes[1]);
  }
  return ranges;
}

}  // namespace paddock::edge
