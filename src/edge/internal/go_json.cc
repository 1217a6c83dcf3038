#include "edge/internal/go_json.h"

#include "edge/dynamic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <vector>

#include <fmt/format.h>

namespace paddock::edge::internal {
namespace {

// How Go marshals one struct field (its Go type and `omitempty`).
enum class Kind {
  kValue,            // a value type with omitempty: dropped when zero
  kPointer,          // a pointer with omitempty: dropped only when absent
  kNullable,         // a pointer without omitempty: null when absent
  kStruct,           // a struct held by value: never dropped, {} when absent
  kDuration,         // ptypes.Duration with omitempty
  kDurationPointer,  // *ptypes.Duration with omitempty
};

struct Field {
  std::string_view name;
  Kind kind = Kind::kValue;
  std::string_view type = {};  // the struct type of an object, or of a list's elements
  bool map = false;            // a Go map: keys sorted, values of `type` (if any)
};

using Schema = std::map<std::string_view, std::vector<Field>>;

constexpr Kind V = Kind::kValue;
constexpr Kind P = Kind::kPointer;
constexpr Kind D = Kind::kDuration;
constexpr Kind DP = Kind::kDurationPointer;

// Traefik's types (pkg/config/dynamic, pkg/config/static, pkg/types) as of v3.7, fields in
// declaration order. Only what the API renders: HTTP routers, services, middlewares, entry points.
const Schema& TraefikSchema() {
  static const Schema* schema = new Schema{
      // dynamic.Router
      {"Router",
       {{"entryPoints"}, {"middlewares"}, {"service"}, {"rule"}, {"parentRefs"}, {"ruleSyntax"},
        {"priority"}, {"tls", P, "RouterTLSConfig"}, {"observability", P, "RouterObservabilityConfig"}}},
      {"RouterTLSConfig", {{"options"}, {"certResolver"}, {"domains", V, "Domain"}}},
      {"Domain", {{"main"}, {"sans"}}},
      {"RouterObservabilityConfig",
       {{"accessLogs", P}, {"metrics", P}, {"tracing", P}, {"traceVerbosity"}, {"metadata", P}}},
      // dynamic.Service and what it holds
      {"Service",
       {{"middlewares"}, {"loadBalancer", P, "ServersLoadBalancer"}, {"highestRandomWeight", P, "HighestRandomWeight"},
        {"weighted", P, "WeightedRoundRobin"}, {"mirroring", P, "Mirroring"}, {"failover", P, "Failover"}}},
      {"ServersLoadBalancer",
       {{"sticky", P, "Sticky"}, {"servers", V, "Server"}, {"strategy"}, {"healthCheck", P, "ServerHealthCheck"},
        {"passiveHealthCheck", P, "PassiveServerHealthCheck"}, {"passHostHeader", Kind::kNullable},
        {"responseForwarding", P, "ResponseForwarding"}, {"serversTransport"}, {"nginxUpstreamHashBy"}}},
      {"Sticky", {{"cookie", P, "Cookie"}}},
      {"Cookie", {{"name"}, {"secure"}, {"httpOnly"}, {"sameSite"}, {"maxAge"}, {"path", P}, {"domain"}}},
      {"Server", {{"url"}, {"weight", P}, {"preservePath"}, {"fenced"}}},
      {"ServerHealthCheck",
       {{"scheme"}, {"mode"}, {"path"}, {"method"}, {"status"}, {"port"}, {"interval", D},
        {"unhealthyInterval", DP}, {"timeout", D}, {"hostname"}, {"followRedirects", P}, {"headers", V, {}, true}}},
      {"PassiveServerHealthCheck", {{"failureWindow", D}, {"maxFailedAttempts"}}},
      {"ResponseForwarding", {{"flushInterval", D}}},
      {"WeightedRoundRobin", {{"services", V, "WRRService"}, {"sticky", P, "Sticky"}, {"healthCheck", P}}},
      {"WRRService", {{"name"}, {"weight", P}}},
      {"HighestRandomWeight", {{"services", V, "WRRService"}, {"healthCheck", P}}},
      {"Mirroring",
       {{"service"}, {"mirrorBody", P}, {"maxBodySize", P}, {"mirrors", V, "MirrorService"}, {"healthCheck", P}}},
      {"MirrorService", {{"name"}, {"percent"}}},
      {"Failover", {{"service"}, {"fallback"}, {"healthCheck", P}, {"errors", P, "FailoverError"}}},
      {"FailoverError", {{"maxRequestBodyBytes", P}, {"status"}}},
      // dynamic.Middleware and the middlewares' own types
      {"Middleware",
       {{"addPrefix", P, "AddPrefix"},
        {"stripPrefix", P, "StripPrefix"},
        {"stripPrefixRegex", P, "StripPrefixRegex"},
        {"replacePath", P, "ReplacePath"},
        {"replacePathRegex", P, "ReplacePathRegex"},
        {"chain", P, "Chain"},
        {"ipWhiteList", P, "IPWhiteList"},
        {"ipAllowList", P, "IPAllowList"},
        {"headers", P, "Headers"},
        {"encodedCharacters", P, "EncodedCharacters"},
        {"errors", P, "ErrorPage"},
        {"rateLimit", P, "RateLimit"},
        {"redirectRegex", P, "RedirectRegex"},
        {"redirectScheme", P, "RedirectScheme"},
        {"basicAuth", P, "BasicAuth"},
        {"digestAuth", P, "DigestAuth"},
        {"forwardAuth", P, "ForwardAuth"},
        {"inFlightReq", P, "InFlightReq"},
        {"buffering", P, "Buffering"},
        {"circuitBreaker", P, "CircuitBreaker"},
        {"compress", P, "Compress"},
        {"passTLSClientCert", P, "PassTLSClientCert"},
        {"retry", P, "Retry"},
        {"contentType", P, "ContentType"},
        {"grpcWeb", P, "GrpcWeb"},
        {"plugin", V, {}, true},
        {"requestHeaderModifier", P},
        {"responseHeaderModifier", P},
        {"requestRedirect", P},
        {"URLRewrite", P},
        {"authTLSPassCertificateToUpstream", P},
        {"snippet", P},
        {"rewriteTarget", P},
        {"upstreamVHost", P},
        {"appRoot", P}}},
      {"AddPrefix", {{"prefix"}}},
      {"StripPrefix", {{"prefixes"}, {"forceSlash", P}}},
      {"StripPrefixRegex", {{"regex"}}},
      {"ReplacePath", {{"path"}}},
      {"ReplacePathRegex", {{"regex"}, {"replacement"}}},
      {"Chain", {{"middlewares"}}},
      {"IPWhiteList", {{"sourceRange"}, {"ipStrategy", P, "IPStrategy"}}},
      {"IPAllowList", {{"sourceRange"}, {"ipStrategy", P, "IPStrategy"}, {"rejectStatusCode"}}},
      {"IPStrategy", {{"depth"}, {"excludedIPs"}, {"ipv6Subnet", P}}},
      {"Headers",
       {{"customRequestHeaders", V, {}, true},
        {"customResponseHeaders", V, {}, true},
        {"accessControlAllowCredentials"},
        {"accessControlAllowHeaders"},
        {"accessControlAllowMethods"},
        {"accessControlAllowOriginList"},
        {"accessControlAllowOriginListRegex"},
        {"accessControlExposeHeaders"},
        {"accessControlMaxAge", P},
        {"addVaryHeader"},
        {"allowedHosts"},
        {"hostsProxyHeaders"},
        {"sslProxyHeaders", V, {}, true},
        {"stsSeconds", P},
        {"stsIncludeSubdomains"},
        {"stsPreload"},
        {"forceSTSHeader"},
        {"frameDeny"},
        {"customFrameOptionsValue"},
        {"contentTypeNosniff"},
        {"browserXssFilter"},
        {"customBrowserXSSValue"},
        {"contentSecurityPolicy"},
        {"contentSecurityPolicyReportOnly"},
        {"publicKey"},
        {"referrerPolicy"},
        {"permissionsPolicy"},
        {"isDevelopment"},
        {"featurePolicy", P},
        {"sslRedirect", P},
        {"sslTemporaryRedirect", P},
        {"sslHost", P},
        {"sslForceHost", P}}},
      {"EncodedCharacters",
       {{"allowEncodedSlash"}, {"allowEncodedBackSlash"}, {"allowEncodedNullCharacter"}, {"allowEncodedSemicolon"},
        {"allowEncodedPercent"}, {"allowEncodedQuestionMark"}, {"allowEncodedHash"}}},
      {"ErrorPage",
       {{"status"}, {"statusRewrites", V, {}, true}, {"service"}, {"query"}, {"errorRequestHeaders"},
        {"nginxHeaders", P}}},
      {"RateLimit",
       {{"average"}, {"period", D}, {"burst"}, {"sourceCriterion", P, "SourceCriterion"}, {"redis", P, "Redis"}}},
      {"SourceCriterion", {{"ipStrategy", P, "IPStrategy"}, {"requestHeaderName"}, {"requestHost"}}},
      {"Redis",
       {{"endpoints"}, {"tls", P, "ClientTLS"}, {"username"}, {"password"}, {"db"}, {"poolSize"},
        {"minIdleConns"}, {"maxActiveConns"}, {"readTimeout", DP}, {"writeTimeout", DP}, {"dialTimeout", DP}}},
      {"RedirectRegex", {{"regex"}, {"replacement"}, {"permanent"}}},
      {"RedirectScheme", {{"scheme"}, {"port"}, {"permanent"}}},
      {"BasicAuth", {{"users"}, {"usersFile"}, {"realm"}, {"removeHeader"}, {"headerField"}}},
      {"DigestAuth", {{"users"}, {"usersFile"}, {"removeHeader"}, {"realm"}, {"headerField"}}},
      {"ForwardAuth",
       {{"address"}, {"tls", P, "ClientTLS"}, {"trustForwardHeader", P}, {"authResponseHeaders"},
        {"authResponseHeadersRegex"}, {"authRequestHeaders"}, {"maxResponseBodySize", P},
        {"addAuthCookiesToResponse"}, {"headerField"}, {"forwardBody"}, {"maxBodySize", P},
        {"preserveLocationHeader"}, {"preserveRequestMethod"}, {"authSigninURL"}}},
      {"ClientTLS", {{"ca"}, {"cert"}, {"key"}, {"insecureSkipVerify"}, {"caOptional", P}}},
      {"InFlightReq", {{"amount"}, {"sourceCriterion", P, "SourceCriterion"}}},
      {"Buffering",
       {{"maxRequestBodyBytes"}, {"memRequestBodyBytes"}, {"maxResponseBodyBytes"}, {"memResponseBodyBytes"},
        {"retryExpression"}, {"disableRequestBuffer"}, {"disableResponseBuffer"}}},
      {"CircuitBreaker",
       {{"expression"}, {"checkPeriod", D}, {"fallbackDuration", D}, {"recoveryDuration", D}, {"responseCode"}}},
      {"Compress",
       {{"excludedContentTypes"}, {"includedContentTypes"}, {"minResponseBodyBytes"}, {"encodings"},
        {"defaultEncoding"}}},
      {"PassTLSClientCert", {{"pem"}, {"info", P, "TLSClientCertificateInfo"}}},
      {"TLSClientCertificateInfo",
       {{"notAfter"}, {"notBefore"}, {"sans"}, {"serialNumber"}, {"subject", P, "TLSClientCertificateSubjectDNInfo"},
        {"issuer", P, "TLSClientCertificateIssuerDNInfo"}}},
      {"TLSClientCertificateSubjectDNInfo",
       {{"country"}, {"province"}, {"locality"}, {"organization"}, {"organizationalUnit"}, {"commonName"},
        {"serialNumber"}, {"domainComponent"}}},
      {"TLSClientCertificateIssuerDNInfo",
       {{"country"}, {"province"}, {"locality"}, {"organization"}, {"commonName"}, {"serialNumber"},
        {"domainComponent"}}},
      {"Retry",
       {{"attempts"}, {"timeout", D}, {"initialInterval", D}, {"maxRequestBodyBytes", P}, {"status"},
        {"disableRetryOnNetworkError"}, {"retryNonIdempotentMethod"}}},
      {"ContentType", {{"autoDetect", P}}},
      {"GrpcWeb", {{"allowOrigins"}}},
      // static.EntryPoint and what it holds
      {"EntryPoint",
       {{"address"}, {"allowACMEByPass"}, {"reusePort"}, {"asDefault"}, {"transport", P, "EntryPointsTransport"},
        {"proxyProtocol", P, "ProxyProtocol"}, {"forwardedHeaders", P, "ForwardedHeaders"},
        {"http", Kind::kStruct, "HTTPConfig"}, {"http2", P, "HTTP2Config"}, {"http3", P, "HTTP3Config"},
        {"udp", P, "UDPConfig"}, {"observability", P, "ObservabilityConfig"}}},
      {"EntryPointsTransport",
       {{"lifeCycle", P, "LifeCycle"}, {"respondingTimeouts", P, "RespondingTimeouts"}, {"keepAliveMaxTime", D},
        {"keepAliveMaxRequests"}}},
      {"LifeCycle", {{"requestAcceptGraceTimeout", D}, {"graceTimeOut", D}}},
      {"RespondingTimeouts", {{"readTimeout", D}, {"writeTimeout", D}, {"idleTimeout", D}}},
      {"ProxyProtocol", {{"insecure"}, {"trustedIPs"}}},
      {"ForwardedHeaders",
       {{"insecure"}, {"trustedIPs"}, {"connection"}, {"notAppendXForwardedFor"}, {"addXForwardedSchemeHeaders"}}},
      {"HTTPConfig",
       {{"redirections", P, "Redirections"}, {"middlewares"}, {"tls", P, "TLSConfig"},
        {"encodedCharacters", P, "EncodedCharacters"}, {"encodeQuerySemicolons"}, {"sanitizePath", P},
        {"maxHeaderBytes"}, {"underscoreHeadersStrategy"}}},
      {"Redirections", {{"entryPoint", P, "RedirectEntryPoint"}}},
      {"RedirectEntryPoint", {{"to"}, {"scheme"}, {"permanent"}, {"priority"}}},
      {"TLSConfig", {{"options"}, {"certResolver"}, {"domains", V, "Domain"}}},
      {"HTTP2Config", {{"maxConcurrentStreams"}, {"maxDecoderHeaderTableSize"}, {"maxEncoderHeaderTableSize"}}},
      {"HTTP3Config", {{"advertisedPort"}}},
      {"UDPConfig", {{"timeout", D}}},
      {"ObservabilityConfig", {{"accessLogs", P}, {"metrics", P}, {"tracing", P}, {"traceVerbosity"}}},
  };
  return *schema;
}

bool IsZero(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: return true;
    case boost::json::kind::bool_: return !v.get_bool();
    case boost::json::kind::int64: return v.get_int64() == 0;
    case boost::json::kind::uint64: return v.get_uint64() == 0;
    case boost::json::kind::double_: return v.get_double() == 0;
    case boost::json::kind::string: return v.get_string().empty();
    case boost::json::kind::array: return v.get_array().empty();
    case boost::json::kind::object: return v.get_object().empty();
  }
  return false;
}

boost::json::value ShapeValue(const boost::json::value& v, std::string_view type, bool map);

// A duration member as Go writes a ptypes.Duration; anything unreadable is left as it is.
boost::json::value ShapeDuration(const boost::json::value& v) {
  std::optional<int64_t> nanos;
  if (v.is_string()) {
    nanos = ParseGoDurationNanos(v.get_string());
  } else if (v.is_int64() && v.get_int64() >= 0 && v.get_int64() <= std::numeric_limits<int64_t>::max() / 1'000'000'000) {
    nanos = v.get_int64() * 1'000'000'000;
  }
  if (!nanos) return v;
  return boost::json::value(FormatGoDurationNanos(*nanos));
}

boost::json::object ShapeStruct(const boost::json::object& o, const std::vector<Field>& fields) {
  boost::json::object out;
  for (const Field& f : fields) {
    const boost::json::value* v = o.if_contains(f.name);
    if (v == nullptr) {
      if (f.kind == Kind::kNullable) out[f.name] = nullptr;
      if (f.kind == Kind::kStruct) out[f.name] = ShapeValue(boost::json::object{}, f.type, false);
      continue;
    }
    if ((f.kind == Kind::kValue || f.kind == Kind::kDuration) && IsZero(*v)) continue;
    if (f.kind == Kind::kDuration || f.kind == Kind::kDurationPointer) {
      boost::json::value d = ShapeDuration(*v);
      if (f.kind == Kind::kDuration && d.is_string() && d.get_string() == "0s") continue;
      out[f.name] = std::move(d);
      continue;
    }
    out[f.name] = ShapeValue(*v, f.type, f.map);
  }
  for (const auto& member : o) {
    const bool declared = std::any_of(fields.begin(), fields.end(),
                                      [&](const Field& f) { return f.name == member.key(); });
    if (!declared) out[member.key()] = member.value();
  }
  return out;
}

boost::json::value ShapeValue(const boost::json::value& v, std::string_view type, bool map) {
  if (v.is_array()) {
    if (type.empty()) return v;
    boost::json::array out;
    for (const auto& element : v.get_array()) out.push_back(ShapeValue(element, type, false));
    return out;
  }
  if (!v.is_object()) return v;
  const boost::json::object& o = v.get_object();
  if (map) {
    std::vector<std::string_view> keys;
    for (const auto& member : o) keys.push_back(member.key());
    std::sort(keys.begin(), keys.end());
    boost::json::object out;
    for (std::string_view k : keys) out[k] = ShapeValue(o.at(k), type, false);
    return out;
  }
  if (type.empty()) return v;
  auto it = TraefikSchema().find(type);
  if (it == TraefikSchema().end()) return v;
  return ShapeStruct(o, it->second);
}

void AppendNumber(std::string& out, double d) {
  // Go's float64 encoding: the shortest representation that reads back, in 'f' notation for
  // 1e-6 <= |d| < 1e21 and 'e' notation otherwise, with "e-07" cleaned to "e-7".
  char buf[400];
  const double a = std::fabs(d);
  const bool exponent = a != 0 && (a < 1e-6 || a >= 1e21);
  const auto r = std::to_chars(buf, buf + sizeof(buf), d,
                               exponent ? std::chars_format::scientific : std::chars_format::fixed);
  std::string s(buf, r.ptr);
  const size_t n = s.size();
  if (exponent && n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') s.erase(n - 2, 1);
  out += s;
}

void AppendGoJson(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; return;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case boost::json::kind::int64: out += fmt::format("{}", v.get_int64()); return;
    case boost::json::kind::uint64: out += fmt::format("{}", v.get_uint64()); return;
    case boost::json::kind::double_: AppendNumber(out, v.get_double()); return;
    case boost::json::kind::string: AppendGoJsonString(out, v.get_string()); return;
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& element : v.get_array()) {
        if (!first) out += ',';
        first = false;
        AppendGoJson(out, element);
      }
      out += ']';
      return;
    }
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& member : v.get_object()) {
        if (!first) out += ',';
        first = false;
        AppendGoJsonString(out, member.key());
        out += ':';
        AppendGoJson(out, member.value());
      }
      out += '}';
      return;
    }
  }
}

// The length of the valid UTF-8 sequence at s[i], or 0 when it is not one (Go's utf8.DecodeRune
// returning RuneError with width 1).
size_t Utf8Length(std::string_view s, size_t i, uint32_t* rune) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t r = 0;
  uint32_t min = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, r = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, r = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, r = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    r = (r << 6) | (b(i + k) & 0x3f);
  }
  if (r < min || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return 0;
  *rune = r;
  return n;
}

}  // namespace

void AppendGoJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '<':
        case '>':
        case '&':
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
          break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    const size_t n = Utf8Length(s, i, &rune);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (rune == 0x2028 || rune == 0x2029) {
      out += rune == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += '"';
}

std::string GoJson(const boost::json::value& v) {
  std::string out;
  AppendGoJson(out, v);
  return out;
}

boost::json::object GoShape(const boost::json::object& config, std::string_view type) {
  auto it = TraefikSchema().find(type);
  if (it == TraefikSchema().end()) return config;
  return ShapeStruct(config, it->second);
}

const std::vector<std::string_view>& ServiceKinds() {
  static const auto* kinds = [] {
    auto* out = new std::vector<std::string_view>();
    for (const Field& f : TraefikSchema().at("Service")) {
      if (f.name != "middlewares") out->push_back(f.name);
    }
    return out;
  }();
  return *kinds;
}

const std::vector<std::string_view>& MiddlewareKinds() {
  static const auto* kinds = [] {
    auto* out = new std::vector<std::string_view>();
    for (const Field& f : TraefikSchema().at("Middleware")) out->push_back(f.name);
    return out;
  }();
  return *kinds;
}

std::string GoQuote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      uint32_t rune = 0;
      const size_t n = Utf8Length(s, i, &rune);
      if (n == 0) {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
        ++i;
      } else {
        out.append(s.substr(i, n));  // printable runes as they are (non-printable ones rarely matter here)
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

std::string FormatGoTime(std::chrono::system_clock::time_point t) {
  const auto nanos_total =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t seconds = nanos_total / 1'000'000'000;
  int64_t nanos = nanos_total % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    seconds -= 1;
  }
  const std::time_t tt = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (nanos != 0) {
    std::string frac = fmt::format("{:09}", nanos);
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    out += '.';
    out += frac;
  }
  out += 'Z';
  return out;
}

std::optional<int64_t> ParseGoDurationNanos(std::string_view text) {
  auto d = ParseSignedGoDuration(text);
  if (!d.ok()) return std::nullopt;
  return d->count();
}

std::string FormatGoDurationNanos(int64_t nanos) { return FormatGoDuration(std::chrono::nanoseconds(nanos)); }

}  // namespace paddock::edge::internal
