// edge/internal/middleware_util: what the middleware files share — Go's behaviour where Traefik's
// middlewares lean on it (net/http headers and status texts, net/url paths, regexp replacement,
// durations, net addresses) and the reader of one middleware's options.
//
//   mw::Options o("stripPrefix", config.at("stripPrefix"), {"prefixes", "forceSlash"});
//   std::vector<std::string> prefixes = o.Strings("prefixes");
//   RETURN_IF_ERROR(o.status());     // an unknown field or a value of the wrong type
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "common/status.h"
#include "edge/middleware.h"

namespace re2 {
class RE2;
}
struct x509_st;  // OpenSSL's X509

namespace paddock::edge::mw {

// Go's url.shouldEscape(c, encodePath), url.validEncoded(s, encodePath) and url.escape(s,
// encodePath): what Go (and so Traefik) writes as a path's escaped form. Also the proxy's
// request-target sanitizing (proxy/request_path.cc) uses them.
bool ShouldEscapeInPath(unsigned char c);
bool ValidEncodedPath(std::string_view s);
std::string EscapePath(std::string_view s);

// Go's url.QueryEscape: every byte but A-Z a-z 0-9 - _ . ~ as %XX (upper-case), a space as '+'.
std::string QueryEscape(std::string_view s);
// Standard base64, padded, on one line (Go's base64.StdEncoding).
std::string Base64(std::string_view bytes);
// Go's net.IP.String() of 4 or 16 bytes: dotted IPv4 (an IPv4-mapped address too), else RFC 5952
// IPv6; another length is "?" and its hex.
std::string GoIpString(std::span<const uint8_t> bytes);

// ---- Headers: Go's http.Header over our ordered list (names compared case-insensitively). ----

// Go's textproto.CanonicalMIMEHeaderKey: "x-forwarded-prefix" -> "X-Forwarded-Prefix"; a name
// with a byte that is not a token character is returned unchanged.
std::string CanonicalHeaderKey(std::string_view name);
bool HeaderNameEquals(std::string_view a, std::string_view b);
// Whether the comma-separated `list` (a Connection, Upgrade or Accept value) has an item equal to
// `token` in any case once its spaces and tabs are trimmed.
bool TokenListHas(std::string_view list, std::string_view token);
// The first value of `name`, or "" (Go's Header.Get).
std::string_view GetHeader(const HeaderList& headers, std::string_view name);
void DelHeader(HeaderList& headers, std::string_view name);
// Appends under the canonical name (Go's Header.Add).
void AddHeader(HeaderList& headers, std::string_view name, std::string value);
// Replaces every value of `name` by one, under the canonical name (Go's Header.Set).
void SetHeader(HeaderList& headers, std::string_view name, std::string value);

// ---- Answers ----

// Go's http.StatusText: "Forbidden" for 403; "" for a code Go does not know.
std::string_view StatusText(int status);
// A body written with no Content-Type, which Go's server sniffs as plain text.
Answer TextAnswer(int status, std::string body);
// Go's http.Error(w, message, status): plain text, nosniff, the message and a newline.
Answer HttpError(int status, std::string_view message);

// ---- Paths: Go's url.URL pair of Path (decoded) and RawPath (the encoding, when not canonical) ----

struct GoPath {
  std::string path;
  std::string raw_path;
  // As Go's URL.setPath does for a path received escaped; an invalid escape (which Go's server
  // refuses before any middleware) is kept literally.
  static GoPath FromEscaped(std::string_view escaped);
  // Go's URL.EscapedPath(): raw_path when it is a valid encoding of path, else path escaped.
  std::string Escaped() const;
};
// Go's url.PathUnescape; nullopt with Go's error text in *error ("invalid URL escape \"%zz\"").
std::optional<std::string> PathUnescape(std::string_view escaped, std::string* error);
// Go's path.Clean.
std::string CleanPath(std::string_view path);
// Whether Go's URL.JoinPath() (the normalisation stripPrefix, stripPrefixRegex and
// replacePathRegex apply, answering 400 when it changes the path) leaves `p` as it is.
bool JoinPathKeeps(const GoPath& p);
// The request target Go's redirect middlewares read: path (or "/") and "?query".
std::string RequestUri(const Exchange& exchange);

// ---- Regular expressions: RE2 with Go's regexp semantics where Traefik relies on them ----

// Tenants write these: longer patterns are refused, and each compiled program is bounded.
inline constexpr size_t kMaxRegexLength = 4096;
inline constexpr int64_t kRegexMaxMemory = int64_t{2} << 20;
StatusOr<std::shared_ptr<const re2::RE2>> CompileRegex(std::string_view pattern);
bool RegexMatches(const re2::RE2& re, std::string_view text);
// The leftmost-first match of `re` in `text`, or nullopt (Go's FindString, with "found").
std::optional<std::string_view> RegexFind(const re2::RE2& re, std::string_view text);
// Go's Regexp.ReplaceAllString: every match replaced by `replacement` with $1, ${1}, $name,
// ${name} and $$ expanded as Go's Regexp.Expand does.
std::string RegexReplaceAll(const re2::RE2& re, std::string_view text, std::string_view replacement);

// ---- Durations ----

// Traefik's ptypes.Duration: a Go duration string ("1m30s", "100ms") or a number of seconds
// (integer JSON or digits). InvalidArgument otherwise.
StatusOr<std::chrono::nanoseconds> ParseDuration(const boost::json::value& value);
// Go's time.Duration.String(): "1.5s", "250ms", "1m0s".
std::string GoDurationString(std::chrono::nanoseconds d);

// ---- Options of one middleware ----

// Reads a middleware's options object with Traefik's field names. The first problem (a field
// that is not in `known`, a value of the wrong type) is kept and reported by status(); readers
// return the zero value after it. Nested objects share their parent's status.
class Options {
 public:
  Options(std::string path, const boost::json::value& value, std::initializer_list<std::string_view> known);

  bool Has(std::string_view key) const;
  std::string String(std::string_view key);  // "" when absent; integers are written in decimal
  bool Bool(std::string_view key);
  std::optional<int64_t> Int(std::string_view key);
  std::vector<std::string> Strings(std::string_view key);
  std::vector<std::pair<std::string, std::string>> StringMap(std::string_view key);  // in order; integers in decimal
  std::optional<std::chrono::nanoseconds> Duration(std::string_view key);
  std::optional<Options> Object(std::string_view key, std::initializer_list<std::string_view> known);

  // Records `message` (prefixed with this object's path) unless a problem is already recorded.
  void Fail(std::string_view message);
  Status status() const { return *status_; }
  const std::string& path() const { return path_; }

 private:
  Options(std::string path, const boost::json::value& value, std::initializer_list<std::string_view> known,
          std::shared_ptr<Status> status);
  const boost::json::value* Find(std::string_view key) const;
  void WrongType(std::string_view key, std::string_view want);

  std::string path_;
  const boost::json::object* object_ = nullptr;
  std::shared_ptr<Status> status_;
};

// ---- Addresses: Go's net.IP semantics (IPv4 and IPv4-mapped IPv6 are the same address) ----

struct IpAddress {
  std::array<uint8_t, 16> bytes{};  // IPv4 as IPv4-mapped
  bool Is4() const;                 // IPv4 or IPv4-mapped (Go's To4() != nil)
};
// An IPv4 or IPv6 address as Go's netip.ParseAddr reads it (no leading zeros; an IPv6 zone
// is accepted and dropped when `allow_zone`).
std::optional<IpAddress> ParseIp(std::string_view text, bool allow_zone);
// Go's net.SplitHostPort: host (without brackets) and port, or nullopt where Go fails.
std::optional<std::pair<std::string_view, std::string_view>> SplitHostPort(std::string_view hostport);
// The host part of `addr`, or `addr` itself where SplitHostPort fails (no port).
std::string_view HostWithoutPort(std::string_view addr);

// Traefik's ip.Checker: a list of addresses and CIDRs.
class IpChecker {
 public:
  // InvalidArgument "invalid CIDR address: 10.0.0.0/33" for an entry that is neither.
  static StatusOr<IpChecker> Make(const std::vector<std::string>& ranges);
  // Whether `address` (an IP, no port) is in the list; false when it does not parse.
  bool Contains(std::string_view address) const;

 private:
  struct Net {
    bool v4 = false;
    std::array<uint8_t, 16> ip{};
    std::array<uint8_t, 16> mask{};
  };
  std::vector<Net> nets_;
};

// Traefik's ip.Strategy: which address a request comes from.
class IpStrategy {
 public:
  // Reads an `ipStrategy` object {depth, excludedIPs, ipv6Subnet}; absent: the TCP peer.
  static StatusOr<IpStrategy> Read(std::optional<Options> config);
  // The client address as Traefik's strategy picks it: the peer's, the depth-th X-Forwarded-For
  // entry from the right, or the rightmost one not in excludedIPs; "" when there is none.
  std::string ClientIp(const Exchange& exchange) const;

 private:
  int depth_ = 0;
  std::optional<IpChecker> excluded_;
  std::optional<int> ipv6_subnet_;
};

// ---- The middlewares built in other files (`config` is the kind's options object) ----

StatusOr<std::shared_ptr<const Middleware>> BuildHeaders(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildBasicAuth(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildDigestAuth(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildIpAllowList(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildRateLimit(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildPassTlsClientCert(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildInFlightReq(const boost::json::value& config);
StatusOr<std::shared_ptr<const Middleware>> BuildCircuitBreaker(const boost::json::value& config);

// ---- passTLSClientCert's headers, from the certificates the client presented (its own first) ----

// The parts of a distinguished name passTLSClientCert's info asks for (Traefik's
// TLSClientCertificateSubjectDNInfo; an issuer has no organizational unit).
struct TlsClientCertDnFields {
  bool country = false, province = false, locality = false, organization = false, organizational_unit = false,
       common_name = false, serial_number = false, domain_component = false;
};
struct TlsClientCertInfoFields {
  bool not_after = false, not_before = false, sans = false, serial_number = false;
  std::optional<TlsClientCertDnFields> subject, issuer;
};
// X-Forwarded-Tls-Client-Cert: each certificate's DER in base64, joined by ','.
std::string TlsClientCertPem(std::span<x509_st* const> certs);
// X-Forwarded-Tls-Client-Cert-Info before its query escaping: per certificate
// `Subject="C=FR,O=Cheese";Issuer="…";SerialNumber="…";NB="…";NA="…";SAN="a,b"` (the fields asked
// for and not empty), certificates joined by ','.
std::string TlsClientCertInfo(const TlsClientCertInfoFields& want, std::span<x509_st* const> certs);

}  // namespace paddock::edge::mw
