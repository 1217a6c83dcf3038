#include "aws/sigv4.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "aws/errors.h"
#include "aws/internal/crypto.h"
#include "common/encoding.h"
#include "common/ids.h"

namespace paddock::aws {
namespace {

using internal::AsView;
using internal::HmacSha256;
using internal::Sha256Digest;

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kTerminator = "aws4_request";

constexpr Error kIncomplete = Error::kIncompleteSignature;
constexpr Error kInvalidSignature = Error::kInvalidSignature;
constexpr std::string_view kSignatureMismatch =
    "The request signature we calculated does not match the signature you provided. Check your "
    "AWS Secret Access Key and signing method. Consult the service documentation for details.";

Status AuthError(Error error, std::string message) { return Unauthenticated(std::move(message), error); }

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Whether header name `name` equals `lower` (already lowercase), ignoring ASCII case. Cheaper
// than http::EqualsIgnoreCase, which goes through the C locale: this runs for every header of
// every request.
bool NameIs(std::string_view name, std::string_view lower) {
  if (name.size() != lower.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (ToLower(name[i]) != lower[i]) return false;
  return true;
}

// The headers verification reads, found in one pass.
struct AuthHeaders {
  const std::string* authorization = nullptr;
  const std::string* amz_date = nullptr;
  const std::string* date = nullptr;
  const std::string* content_sha256 = nullptr;
};

AuthHeaders FindAuthHeaders(const http::Request& req) {
  AuthHeaders out;
  for (const auto& h : req.headers) {
    const std::string** slot = nullptr;
    switch (h.name.size()) {
      case 13: if (NameIs(h.name, "authorization")) slot = &out.authorization; break;
      case 10: if (NameIs(h.name, "x-amz-date")) slot = &out.amz_date; break;
      case 4: if (NameIs(h.name, "date")) slot = &out.date; break;
      case 20: if (NameIs(h.name, "x-amz-content-sha256")) slot = &out.content_sha256; break;
      default: break;
    }
    if (slot != nullptr && *slot == nullptr) *slot = &h.value;
  }
  return out;
}

bool IsDigits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---- Dates -------------------------------------------------------------------------------

std::string FormatAmzDate(TimePoint t) {
  auto secs = std::chrono::floor<std::chrono::seconds>(t);
  auto days = std::chrono::floor<std::chrono::days>(secs);
  std::chrono::year_month_day ymd(days);
  std::chrono::hh_mm_ss hms(secs - days);
  return fmt::format("{:04d}{:02d}{:02d}T{:02d}{:02d}{:02d}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                     hms.hours().count(), hms.minutes().count(),
                     static_cast<long>(hms.seconds().count()));
}

std::optional<TimePoint> MakeTime(int y, int mo, int d, int h, int mi, int s) {
  std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(static_cast<unsigned>(mo)),
                                  std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  return std::chrono::sys_days(ymd) + std::chrono::hours(h) + std::chrono::minutes(mi) +
         std::chrono::seconds(s);
}

int Num(std::string_view s) {
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// "20150830T123600Z"
std::optional<TimePoint> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z' || !IsDigits(s.substr(0, 8)) ||
      !IsDigits(s.substr(9, 6)))
    return std::nullopt;
  return MakeTime(Num(s.substr(0, 4)), Num(s.substr(4, 2)), Num(s.substr(6, 2)), Num(s.substr(9, 2)),
                  Num(s.substr(11, 2)), Num(s.substr(13, 2)));
}

// RFC 1123: "Sun, 30 Aug 2015 12:36:00 GMT".
std::optional<TimePoint> ParseHttpDate(std::string_view s) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  s = Trim(s);
  if (s.size() != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT")
    return std::nullopt;
  std::string_view d = s.substr(5, 2), y = s.substr(12, 4), h = s.substr(17, 2), mi = s.substr(20, 2),
                   sec = s.substr(23, 2);
  if (!IsDigits(d) || !IsDigits(y) || !IsDigits(h) || !IsDigits(mi) || !IsDigits(sec)) return std::nullopt;
  auto it = std::find(kMonths.begin(), kMonths.end(), s.substr(8, 3));
  if (it == kMonths.end()) return std::nullopt;
  return MakeTime(Num(y), static_cast<int>(it - kMonths.begin()) + 1, Num(d), Num(h), Num(mi), Num(sec));
}

// ---- Canonical request -------------------------------------------------------------------

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

void UriEncodeTo(std::string& out, std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

// The path as the SDKs canonicalize it for every service but S3: dot segments and empty
// segments removed, then each segment URI-encoded (the received path is already encoded once,
// so this is the SDKs' "double encoding").
void AppendCanonicalUri(std::string& out, std::string_view path) {
  if (path.empty() || path == "/") {
    out.push_back('/');
    return;
  }
  std::vector<std::string_view> segments;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(start, end - start);
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
    start = end + 1;
  }
  out.push_back('/');
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) out.push_back('/');
    UriEncodeTo(out, segments[i], false);
  }
  if (!segments.empty() && path.back() == '/') out.push_back('/');
}

void AppendCanonicalQuery(std::string& out, std::string_view query) {
  if (query.empty()) return;
  std::vector<std::pair<std::string, std::string>> params;
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view pair = query.substr(start, end - start);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      std::string key, value;
      UriEncodeTo(key, PercentDecode(pair.substr(0, eq)), false);
      if (eq != std::string_view::npos) UriEncodeTo(value, PercentDecode(pair.substr(eq + 1)), false);
      params.emplace_back(std::move(key), std::move(value));
    }
    start = end + 1;
  }
  std::sort(params.begin(), params.end());
  for (size_t i = 0; i < params.size(); ++i) {
    if (i > 0) out.push_back('&');
    out += params[i].first;
    out.push_back('=');
    out += params[i].second;
  }
}

// Appends `value` trimmed, with runs of inner whitespace collapsed to one space.
void AppendHeaderValue(std::string& out, std::string_view value) {
  value = Trim(value);
  bool in_space = false;
  for (char c : value) {
    if (IsSpace(c)) {
      in_space = true;
      continue;
    }
    if (in_space) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
}

// The canonical request per
// https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html.
std::string CanonicalRequest(const http::Request& req, const std::vector<std::string>& signed_headers,
                             std::string_view payload_hash) {
  std::string cr;
  cr.reserve(256 + req.target.size());
  cr += req.method;
  cr.push_back('\n');
  AppendCanonicalUri(cr, req.Path());
  cr.push_back('\n');
  AppendCanonicalQuery(cr, req.Query());
  cr.push_back('\n');
  for (const auto& name : signed_headers) {
    cr += name;
    cr.push_back(':');
    bool first = true;
    for (const auto& h : req.headers) {
      if (!NameIs(h.name, name)) continue;
      if (!first) cr.push_back(',');
      first = false;
      AppendHeaderValue(cr, h.value);
    }
    cr.push_back('\n');
  }
  cr.push_back('\n');
  for (size_t i = 0; i < signed_headers.size(); ++i) {
    if (i > 0) cr.push_back(';');
    cr += signed_headers[i];
  }
  cr.push_back('\n');
  cr += payload_hash;
  return cr;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope_date, std::string_view region,
                         std::string_view service, std::string_view canonical_request) {
  std::string sts;
  sts.reserve(160);
  sts += kAlgorithm;
  sts.push_back('\n');
  sts += amz_date;
  sts.push_back('\n');
  sts += scope_date;
  sts.push_back('/');
  sts += region;
  sts.push_back('/');
  sts += service;
  sts.push_back('/');
  sts += kTerminator;
  sts.push_back('\n');
  sts += HexEncode(AsView(internal::Sha256(canonical_request)));
  return sts;
}

Sha256Digest DeriveSigningKey(std::string_view secret, std::string_view date, std::string_view region,
                              std::string_view service) {
  std::string k = "AWS4";
  k += secret;
  Sha256Digest k_date = HmacSha256(k, date);
  Sha256Digest k_region = HmacSha256(AsView(k_date), region);
  Sha256Digest k_service = HmacSha256(AsView(k_region), service);
  return HmacSha256(AsView(k_service), kTerminator);
}

std::string JoinAuthorization(std::string_view header) { return fmt::format("Authorization={}", header); }

}  // namespace

std::string Sha256Hex(std::string_view data) { return HexEncode(AsView(internal::Sha256(data))); }

StatusOr<SigV4Authorization> ParseAuthorization(std::string_view header) {
  std::string_view h = Trim(header);
  size_t sp = h.find(' ');
  std::string_view algorithm = h.substr(0, sp);
  if (algorithm != kAlgorithm) {
    return AuthError(kIncomplete, fmt::format("Unsupported AWS 'algorithm': '{}'. Only '{}' is supported.",
                                              algorithm, kAlgorithm));
  }
  std::string_view rest = sp == std::string_view::npos ? std::string_view() : h.substr(sp + 1);

  std::optional<std::string_view> credential, signed_headers, signature;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(',', start);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view part = Trim(rest.substr(start, end - start));
    start = end + 1;
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return AuthError(kIncomplete,
                       fmt::format("'{}' not a valid key=value pair (missing equal-sign) in Authorization "
                                   "header: '{}'.",
                                   part, header));
    }
    std::string_view key = Trim(part.substr(0, eq)), value = Trim(part.substr(eq + 1));
    if (key == "Credential") credential = value;
    else if (key == "SignedHeaders") signed_headers = value;
    else if (key == "Signature") signature = value;
  }
  if (!credential || !signed_headers || !signature) {
    std::string msg;
    if (!credential) msg += "Authorization header requires 'Credential' parameter. ";
    if (!signature) msg += "Authorization header requires 'Signature' parameter. ";
    if (!signed_headers) msg += "Authorization header requires 'SignedHeaders' parameter. ";
    msg += JoinAuthorization(header);
    return AuthError(kIncomplete, std::move(msg));
  }

  SigV4Authorization auth;
  std::array<std::string_view, 5> scope;
  size_t n = 0, pos = 0;
  std::string_view cred = *credential;
  while (n < scope.size()) {
    size_t slash = cred.find('/', pos);
    if (slash == std::string_view::npos || n == scope.size() - 1) {
      scope[n++] = cred.substr(pos);
      pos = std::string_view::npos;
      break;
    }
    scope[n++] = cred.substr(pos, slash - pos);
    pos = slash + 1;
  }
  if (n != 5 || scope[0].empty() || scope[2].empty() || scope[3].empty() ||
      scope[4].find('/') != std::string_view::npos) {
    return AuthError(kIncomplete,
                     fmt::format("Credential '{}' is malformed: expected "
                                 "'<access key id>/<YYYYMMDD>/<region>/<service>/aws4_request'. {}",
                                 cred, JoinAuthorization(header)));
  }
  if (scope[1].size() != 8 || !IsDigits(scope[1])) {
    return AuthError(kIncomplete,
                     fmt::format("Credential scope date '{}' is not in YYYYMMDD format. {}", scope[1],
                                 JoinAuthorization(header)));
  }
  auth.access_key_id = scope[0];
  auth.date = scope[1];
  auth.region = scope[2];
  auth.service = scope[3];
  auth.terminator = scope[4];

  std::string_view sh = *signed_headers;
  if (sh.empty()) {
    return AuthError(kIncomplete, fmt::format("Authorization header requires 'SignedHeaders' parameter to "
                                              "name at least one header. {}",
                                              JoinAuthorization(header)));
  }
  start = 0;
  while (start <= sh.size()) {
    size_t end = sh.find(';', start);
    if (end == std::string_view::npos) end = sh.size();
    std::string_view name = sh.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), ToLower);
    auth.signed_headers.push_back(std::move(lower));
  }
  auth.signature.assign(*signature);
  std::transform(auth.signature.begin(), auth.signature.end(), auth.signature.begin(), ToLower);
  return auth;
}

namespace {

std::string ComputeSignature(const http::Request& req, const std::vector<std::string>& signed_headers,
                             std::string_view payload_hash, std::string_view amz_date,
                             std::string_view scope_date, std::string_view region, std::string_view service,
                             const Sha256Digest& signing_key) {
  std::string cr = CanonicalRequest(req, signed_headers, payload_hash);
  std::string sts = StringToSign(amz_date, scope_date, region, service, cr);
  return HexEncode(AsView(HmacSha256(AsView(signing_key), sts)));
}

void RemoveHeader(http::Request& req, std::string_view name) {
  std::erase_if(req.headers, [&](const http::Header& h) { return http::EqualsIgnoreCase(h.name, name); });
}

}  // namespace

void SignRequest(http::Request& req, const SigningCredentials& creds, std::string_view region,
                 std::string_view service, TimePoint now) {
  std::string amz_date = FormatAmzDate(now);
  std::string scope_date = amz_date.substr(0, 8);
  RemoveHeader(req, "Authorization");
  RemoveHeader(req, "X-Amz-Date");
  req.headers.push_back({"X-Amz-Date", amz_date});

  std::vector<std::string> signed_headers;
  for (std::string_view name : {"content-type", "host", "x-amz-content-sha256", "x-amz-date",
                                "x-amz-security-token", "x-amz-target"}) {
    if (req.HasHeader(name)) signed_headers.emplace_back(name);
  }
  std::string payload_hash = req.HasHeader("x-amz-content-sha256")
                                 ? std::string(req.GetHeader("x-amz-content-sha256"))
                                 : Sha256Hex(req.body);
  Sha256Digest key = DeriveSigningKey(creds.secret_access_key, scope_date, region, service);
  std::string signature =
      ComputeSignature(req, signed_headers, payload_hash, amz_date, scope_date, region, service, key);

  std::string auth = fmt::format("{} Credential={}/{}/{}/{}/{}, SignedHeaders=", kAlgorithm,
                                 creds.access_key_id, scope_date, region, service, kTerminator);
  for (size_t i = 0; i < signed_headers.size(); ++i) {
    if (i > 0) auth.push_back(';');
    auth += signed_headers[i];
  }
  auth += ", Signature=";
  auth += signature;
  req.headers.push_back({"Authorization", std::move(auth)});
}

class SigV4Verifier::Impl {
 public:
  Impl(const Clock& clock, CredentialResolver& resolver, VerifierOptions options)
      : clock_(clock), resolver_(resolver), options_(std::move(options)) {}

  StatusOr<VerifiedRequest> Verify(const http::Request& req, std::string_view expected_service);

 private:
  Sha256Digest SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                          std::string_view service);

  static constexpr size_t kMaxCachedKeys = 4096;

  const Clock& clock_;
  CredentialResolver& resolver_;
  const VerifierOptions options_;
  std::shared_mutex mu_;
  std::unordered_map<std::string, Sha256Digest> keys_;  // GUARDED_BY(mu_)
};

Sha256Digest SigV4Verifier::Impl::SigningKey(std::string_view secret, std::string_view date,
                                             std::string_view region, std::string_view service) {
  std::string cache_key;
  cache_key.reserve(secret.size() + date.size() + region.size() + service.size() + 3);
  cache_key.append(secret).push_back('\0');
  cache_key.append(date).push_back('\0');
  cache_key.append(region).push_back('\0');
  cache_key.append(service);
  {
    std::shared_lock lock(mu_);
    auto it = keys_.find(cache_key);
    if (it != keys_.end()) return it->second;
  }
  Sha256Digest key = DeriveSigningKey(secret, date, region, service);
  std::unique_lock lock(mu_);
  // Keys change daily; dropping everything when full keeps the bound without LRU bookkeeping.
  if (keys_.size() >= kMaxCachedKeys) keys_.clear();
  keys_.emplace(std::move(cache_key), key);
  return key;
}

StatusOr<VerifiedRequest> SigV4Verifier::Impl::Verify(const http::Request& req,
                                                      std::string_view expected_service) {
  const AuthHeaders headers = FindAuthHeaders(req);
  if (headers.authorization == nullptr) {
    return AuthError(Error::kMissingAuthenticationToken, "Request is missing Authentication Token");
  }
  std::string_view header = *headers.authorization;
  ASSIGN_OR_RETURN(SigV4Authorization auth, ParseAuthorization(header));

  if (!IsRegionName(auth.region)) {
    return AuthError(kInvalidSignature,
                     fmt::format("Credential should be scoped to a valid region, not '{}'. ", auth.region));
  }

  if (options_.accept_any_credentials) {
    VerifiedRequest out;
    out.region = Region(auth.region);
    auto found = resolver_.Lookup(AccessKeyId(auth.access_key_id));
    if (!found.ok()) return found.status();  // never guess the account when the lookup failed
    if (found->has_value()) {
      out.principal = std::move(found->value().principal);
      return out;
    }
    out.principal.account = IsAccountId(auth.access_key_id) ? AccountId(auth.access_key_id)
                                                            : options_.default_account;
    out.principal.arn = fmt::format("arn:aws:iam::{}:root", out.principal.account.str());
    out.principal.access_key_id = AccessKeyId(std::move(auth.access_key_id));
    return out;
  }

  if (std::find(auth.signed_headers.begin(), auth.signed_headers.end(), "host") == auth.signed_headers.end()) {
    return AuthError(kIncomplete, "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");
  }

  // The request time: X-Amz-Date, else Date.
  std::string amz_date;
  std::optional<TimePoint> request_time;
  if (headers.amz_date != nullptr) {
    std::string_view v = *headers.amz_date;
    request_time = ParseAmzDate(v);
    if (!request_time) {
      return AuthError(kIncomplete, fmt::format("Date must be in ISO-8601 'basic format'. Got '{}'. See "
                                                "http://en.wikipedia.org/wiki/ISO_8601",
                                                v));
    }
    amz_date = v;
  } else if (headers.date != nullptr) {
    std::string_view v = *headers.date;
    request_time = ParseHttpDate(v);
    if (!request_time) {
      return AuthError(kIncomplete, fmt::format("Date must be in RFC 1123 format. Got '{}'.", v));
    }
    amz_date = FormatAmzDate(*request_time);
  } else {
    return AuthError(kIncomplete, fmt::format("Authorization header requires existence of either a "
                                              "'X-Amz-Date' or a 'Date' header. {}",
                                              JoinAuthorization(header)));
  }

  // AWS reports every scope problem at once, each sentence followed by a space.
  std::string scope_errors;
  if (auth.service != expected_service) {
    scope_errors += fmt::format("Credential should be scoped to correct service: '{}'. ", expected_service);
  }
  if (auth.terminator != kTerminator) {
    scope_errors += fmt::format("Credential should be scoped with a valid terminator: 'aws4_request', not '{}'. ",
                                auth.terminator);
  }
  if (std::string_view(amz_date).substr(0, 8) != auth.date) {
    scope_errors += fmt::format(
        "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{}', "
        "from '{}'.",
        auth.date, std::string_view(amz_date).substr(0, 8), amz_date);
  }
  if (!scope_errors.empty()) {
    return AuthError(kInvalidSignature, std::move(scope_errors));
  }

  TimePoint now = clock_.Now();
  auto skew = options_.max_skew;
  long skew_min = static_cast<long>(std::chrono::duration_cast<std::chrono::minutes>(skew).count());
  if (*request_time < now - skew) {
    return AuthError(kInvalidSignature,
                     fmt::format("Signature expired: {} is now earlier than {} ({} - {} min.)", amz_date,
                                 FormatAmzDate(now - skew), FormatAmzDate(now), skew_min));
  }
  if (*request_time > now + skew) {
    return AuthError(kInvalidSignature,
                     fmt::format("Signature not yet current: {} is still later than {} ({} + {} min.)", amz_date,
                                 FormatAmzDate(now + skew), FormatAmzDate(now), skew_min));
  }

  ASSIGN_OR_RETURN(std::optional<Credential> credential, resolver_.Lookup(AccessKeyId(auth.access_key_id)));
  if (!credential) {
    return AuthError(Error::kUnrecognizedClient, "The security token included in the request is invalid.");
  }
  // Temporary credentials: the request must carry the session's token, and the session must not
  // have expired. A missing or wrong token reads like an unknown key, as on AWS.
  if (!credential->session_token_sha256.empty() || credential->expires) {
    std::string_view token = req.GetHeader("X-Amz-Security-Token");
    if (token.empty() || credential->session_token_sha256.empty() ||
        !internal::ConstantTimeEquals(Sha256Hex(token), credential->session_token_sha256)) {
      return AuthError(Error::kUnrecognizedClient, "The security token included in the request is invalid.");
    }
    if (credential->expires && now >= *credential->expires) {
      return AuthError(Error::kExpiredToken, "The security token included in the request is expired");
    }
  }

  std::string body_hash = Sha256Hex(req.body);
  if (headers.content_sha256 != nullptr) {
    std::string_view claimed = *headers.content_sha256;
    if (!internal::ConstantTimeEquals(claimed, body_hash)) {
      return AuthError(kInvalidSignature,
                       "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
  }

  Sha256Digest key = SigningKey(credential->secret_access_key, auth.date, auth.region, auth.service);
  std::string cr = CanonicalRequest(req, auth.signed_headers, body_hash);
  std::string sts = StringToSign(amz_date, auth.date, auth.region, auth.service, cr);
  std::string expected = HexEncode(AsView(HmacSha256(AsView(key), sts)));
  if (!internal::ConstantTimeEquals(expected, auth.signature)) {
    // Like AWS, show what was signed: it names nothing the caller did not send.
    return AuthError(kInvalidSignature,
                     fmt::format("{}\n\nThe Canonical String for this request should have been\n'{}'\n\n"
                                 "The String-to-Sign should have been\n'{}'\n",
                                 kSignatureMismatch, cr, sts));
  }

  VerifiedRequest out;
  out.principal = std::move(credential->principal);
  out.region = Region(std::move(auth.region));
  return out;
}

SigV4Verifier::SigV4Verifier(const Clock& clock, CredentialResolver& resolver, VerifierOptions options)
    : impl_(std::make_unique<Impl>(clock, resolver, std::move(options))) {}

SigV4Verifier::~SigV4Verifier() = default;

StatusOr<VerifiedRequest> SigV4Verifier::Verify(const http::Request& req, std::string_view expected_service) {
  return impl_->Verify(req, expected_service);
}

}  // namespace paddock::aws
