// BuildMiddleware, the path middlewares (addPrefix, stripPrefix, stripPrefixRegex, replacePath,
// replacePathRegex), the redirects, and the configurations the proxy carries out (forwardAuth,
// retry, buffering, chain). headers, basicAuth, ipAllowList and rateLimit are in their own files.
#include "edge/middleware.h"

#include <algorithm>
#include <charconv>
#include <array>
#include <cctype>

#include <fmt/format.h>
#include <re2/re2.h>

#include "edge/dynamic.h"
#include "edge/compress.h"
#include "edge/internal/middleware_util.h"

namespace paddock::edge {
namespace {

using mw::GoPath;

std::string EnsureLeadingSlash(std::string s) {
  if (!s.empty() && s[0] != '/') s.insert(s.begin(), '/');
  return s;
}

std::string TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// The bytes of `raw` that encode the first `decoded_length` bytes of its decoding (Traefik's
// encodedPrefixLen: three per %XX, one otherwise).
size_t EncodedPrefixLength(std::string_view raw, size_t decoded_length) {
  size_t i = 0;
  for (size_t decoded = 0; i < raw.size() && decoded < decoded_length; ++decoded) {
    i += (raw[i] == '%' && i + 2 < raw.size()) ? 3 : 1;
  }
  return i;
}

Answer BadRequest() { return mw::HttpError(400, "Bad Request"); }

// ---- addPrefix ----

class AddPrefix final : public Middleware {
 public:
  explicit AddPrefix(std::string prefix) : prefix_(std::move(prefix)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    GoPath p = GoPath::FromEscaped(x.path);
    p.path = EnsureLeadingSlash(prefix_ + p.path);
    if (!p.raw_path.empty()) p.raw_path = EnsureLeadingSlash(prefix_ + p.raw_path);
    x.path = p.Escaped();
    return std::nullopt;
  }

 private:
  std::string prefix_;
};

// ---- stripPrefix ----

class StripPrefix final : public Middleware {
 public:
  StripPrefix(std::vector<std::string> prefixes, bool force_slash)
      : prefixes_(std::move(prefixes)), force_slash_(force_slash) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    GoPath p = GoPath::FromEscaped(x.path);
    for (const std::string& prefix : prefixes_) {
      if (!p.path.starts_with(prefix)) continue;
      p.path = Strip(std::string_view(p.path).substr(prefix.size()));
      if (!p.raw_path.empty()) {
        p.raw_path = Strip(std::string_view(p.raw_path).substr(EncodedPrefixLength(p.raw_path, prefix.size())));
      }
      if (!mw::JoinPathKeeps(p)) return BadRequest();
      mw::AddHeader(x.headers, "X-Forwarded-Prefix", prefix);
      x.path = p.Escaped();
      break;
    }
    return std::nullopt;
  }

 private:
  std::string Strip(std::string_view rest) const {
    if (force_slash_) {
      if (!rest.empty() && rest[0] == '/') rest.remove_prefix(1);
      return "/" + std::string(rest);
    }
    return EnsureLeadingSlash(std::string(rest));
  }

  std::vector<std::string> prefixes_;
  bool force_slash_;
};

// ---- stripPrefixRegex ----

class StripPrefixRegex final : public Middleware {
 public:
  explicit StripPrefixRegex(std::vector<std::shared_ptr<const re2::RE2>> regexes) : regexes_(std::move(regexes)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    GoPath p = GoPath::FromEscaped(x.path);
    for (const auto& re : regexes_) {
      std::optional<std::string_view> found = mw::RegexFind(*re, p.path);
      if (!found || found->empty()) continue;
      const std::string prefix(*found);
      if (!p.path.starts_with(prefix)) continue;
      mw::AddHeader(x.headers, "X-Forwarded-Prefix", prefix);
      p.path = EnsureLeadingSlash(p.path.substr(prefix.size()));
      if (!p.raw_path.empty()) {
        p.raw_path = EnsureLeadingSlash(p.raw_path.substr(EncodedPrefixLength(p.raw_path, prefix.size())));
      }
      if (!mw::JoinPathKeeps(p)) return BadRequest();
      x.path = p.Escaped();
      break;
    }
    return std::nullopt;
  }

 private:
  std::vector<std::shared_ptr<const re2::RE2>> regexes_;
};

// ---- replacePath ----

class ReplacePath final : public Middleware {
 public:
  explicit ReplacePath(std::string path) : path_(std::move(path)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    mw::AddHeader(x.headers, "X-Replaced-Path", x.path);
    std::string error;
    std::optional<std::string> decoded = mw::PathUnescape(path_, &error);
    if (!decoded) return mw::HttpError(500, error);
    x.path = GoPath{std::move(*decoded), path_}.Escaped();
    return std::nullopt;
  }

 private:
  std::string path_;
};

// ---- replacePathRegex ----

class ReplacePathRegex final : public Middleware {
 public:
  ReplacePathRegex(std::shared_ptr<const re2::RE2> re, std::string replacement)
      : re_(std::move(re)), replacement_(std::move(replacement)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    const std::string current = x.path;
    if (!mw::RegexMatches(*re_, current)) return std::nullopt;
    mw::AddHeader(x.headers, "X-Replaced-Path", current);
    GoPath p;
    p.raw_path = mw::RegexReplaceAll(*re_, current, replacement_);
    std::string error;
    std::optional<std::string> decoded = mw::PathUnescape(p.raw_path, &error);
    if (!decoded) return mw::HttpError(500, error);
    p.path = std::move(*decoded);
    if (!mw::JoinPathKeeps(p)) return BadRequest();
    x.path = p.Escaped();
    return std::nullopt;
  }

 private:
  std::shared_ptr<const re2::RE2> re_;
  std::string replacement_;
};

// ---- redirectRegex, redirectScheme ----

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool ValidPercentEscapes(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      return false;
    }
  }
  return true;
}

// Go's url.parseHost, as far as it refuses: a bad port, a character a host cannot hold.
bool ValidUrlHost(std::string_view host) {
  std::string_view name = host;
  std::string_view port;
  if (!host.empty() && host[0] == '[') {
    size_t close = host.rfind(']');
    if (close == std::string_view::npos) return false;
    port = host.substr(close + 1);
    name = host.substr(1, close - 1);
    if (size_t zone = name.find("%25"); zone != std::string_view::npos) name = name.substr(0, zone);
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    port = host.substr(colon);
    name = host.substr(0, colon);
  }
  if (!port.empty()) {
    if (port[0] != ':') return false;
    for (char c : port.substr(1)) {
      if (c < '0' || c > '9') return false;
    }
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c == '%') {
      if (i + 2 >= name.size() || !std::isxdigit(static_cast<unsigned char>(name[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(name[i + 2]))) {
        return false;
      }
      if (name.substr(i, 3) != "%25" && name[i + 1] < '8') return false;
      i += 2;
      continue;
    }
    if (c >= 0x80 || std::isalnum(c)) continue;
    if (std::string_view("-_.~!$&'()*+,;=:[]<>\"").find(static_cast<char>(c)) == std::string_view::npos) return false;
  }
  return true;
}

// Whether Go's url.Parse accepts `url` (what redirects do with their rewritten URL: Traefik
// answers 502 "Bad Gateway" when it does not).
bool GoUrlParses(std::string_view url) {
  for (unsigned char c : url) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  std::string_view rest = url;
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) {
    if (!ValidPercentEscapes(rest.substr(hash + 1))) return false;
    rest = rest.substr(0, hash);
  }
  std::string_view scheme;
  for (size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    if (IsAlpha(c)) continue;
    if ((std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.') && i > 0) continue;
    if (c == ':') {
      if (i == 0) return false;  // missing protocol scheme
      scheme = rest.substr(0, i);
      rest = rest.substr(i + 1);
    }
    break;
  }
  if (size_t q = rest.find('?'); q != std::string_view::npos) rest = rest.substr(0, q);
  if (!rest.starts_with("/")) {
    if (!scheme.empty()) return true;  // opaque
    std::string_view segment = rest.substr(0, rest.find('/'));
    if (segment.find(':') != std::string_view::npos) return false;
  }
  if ((!scheme.empty() || !rest.starts_with("///")) && rest.starts_with("//")) {
    std::string_view authority = rest.substr(2);
    size_t slash = authority.find('/');
    rest = slash == std::string_view::npos ? std::string_view() : authority.substr(slash);
    authority = authority.substr(0, slash);
    if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
      std::string_view userinfo = authority.substr(0, at);
      for (unsigned char c : userinfo) {
        if (!std::isalnum(c) && std::string_view("-._:~!$&'()*+,;=%@").find(static_cast<char>(c)) == std::string_view::npos) {
          return false;
        }
      }
      if (!ValidPercentEscapes(userinfo)) return false;
      authority = authority.substr(at + 1);
    }
    if (!ValidUrlHost(authority)) return false;
  }
  return ValidPercentEscapes(rest);
}

class Redirect final : public Middleware {
 public:
  enum class Url { kAsReceived, kAsClientSentIt };  // redirectRegex's, redirectScheme's

  Redirect(std::shared_ptr<const re2::RE2> re, std::string replacement, bool permanent, Url url)
      : re_(std::move(re)), replacement_(std::move(replacement)), permanent_(permanent), url_(url) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    const std::string old_url = url_ == Url::kAsReceived ? RawUrl(x) : ClientRequestUrl(x);
    if (!mw::RegexMatches(*re_, old_url)) return std::nullopt;
    std::string new_url = mw::RegexReplaceAll(*re_, old_url, replacement_);
    if (!GoUrlParses(new_url)) return mw::TextAnswer(502, std::string(mw::StatusText(502)));
    if (new_url == old_url) return std::nullopt;
    int status = x.method == "GET" ? 302 : 307;
    if (permanent_) status = x.method == "GET" ? 301 : 308;
    Answer a = mw::TextAnswer(status, std::string(mw::StatusText(status)));
    a.headers.insert(a.headers.begin(), {"Location", std::move(new_url)});
    return a;
  }

 private:
  static std::string Scheme(const Exchange& x) { return x.scheme == "https" ? "https" : "http"; }

  static std::string RawUrl(const Exchange& x) { return Scheme(x) + "://" + x.host + mw::RequestUri(x); }

  static std::string ClientRequestUrl(const Exchange& x) {
    std::string scheme = Scheme(x);
    std::string host = x.host;
    std::string port;
    if (auto split = mw::SplitHostPort(x.host)) {
      host = std::string(split->first);
      port = ":" + std::string(split->second);
    }
    std::string_view proto = mw::GetHeader(x.headers, "X-Forwarded-Proto");
    if (mw::HeaderNameEquals(proto, "http") || mw::HeaderNameEquals(proto, "ws")) {
      scheme = "http";
    } else if (mw::HeaderNameEquals(proto, "https") || mw::HeaderNameEquals(proto, "wss")) {
      scheme = "https";
    }
    if ((scheme == "http" && port == ":80") || (scheme == "https" && port == ":443")) port.clear();
    return scheme + "://" + host + port + mw::RequestUri(x);
  }

  std::shared_ptr<const re2::RE2> re_;
  std::string replacement_;
  bool permanent_;
  Url url_;
};

// ---- Building ----

using Built = StatusOr<BuiltMiddleware>;

BuiltMiddleware Of(std::shared_ptr<const Middleware> m) {
  BuiltMiddleware b;
  b.middleware = std::move(m);
  return b;
}

Built BuildAddPrefix(const boost::json::value& config) {
  mw::Options o("addPrefix", config, {"prefix"});
  std::string prefix = o.String("prefix");
  RETURN_IF_ERROR(o.status());
  if (prefix.empty()) return InvalidArgument("addPrefix: prefix cannot be empty");
  return Of(std::make_shared<AddPrefix>(std::move(prefix)));
}

Built BuildStripPrefix(const boost::json::value& config) {
  mw::Options o("stripPrefix", config, {"prefixes", "forceSlash"});
  std::vector<std::string> prefixes = o.Strings("prefixes");
  const bool force_slash = o.Bool("forceSlash");
  RETURN_IF_ERROR(o.status());
  for (std::string& p : prefixes) p = TrimSpace(p);
  return Of(std::make_shared<StripPrefix>(std::move(prefixes), force_slash));
}

Built BuildStripPrefixRegex(const boost::json::value& config) {
  mw::Options o("stripPrefixRegex", config, {"regex"});
  std::vector<std::string> patterns = o.Strings("regex");
  RETURN_IF_ERROR(o.status());
  std::vector<std::shared_ptr<const re2::RE2>> regexes;
  for (const std::string& pattern : patterns) {
    StatusOr<std::shared_ptr<const re2::RE2>> re = mw::CompileRegex(TrimSpace(pattern));
    if (!re.ok()) return InvalidArgument("stripPrefixRegex: " + re.status().message());
    regexes.push_back(*std::move(re));
  }
  return Of(std::make_shared<StripPrefixRegex>(std::move(regexes)));
}

Built BuildReplacePath(const boost::json::value& config) {
  mw::Options o("replacePath", config, {"path"});
  std::string path = o.String("path");
  RETURN_IF_ERROR(o.status());
  return Of(std::make_shared<ReplacePath>(std::move(path)));
}

Built BuildReplacePathRegex(const boost::json::value& config) {
  mw::Options o("replacePathRegex", config, {"regex", "replacement"});
  std::string pattern = o.String("regex");
  std::string replacement = o.String("replacement");
  RETURN_IF_ERROR(o.status());
  StatusOr<std::shared_ptr<const re2::RE2>> re = mw::CompileRegex(TrimSpace(pattern));
  if (!re.ok()) {
    return InvalidArgument(
        fmt::format("replacePathRegex: error compiling regular expression {}: {}", pattern, re.status().message()));
  }
  return Of(std::make_shared<ReplacePathRegex>(*std::move(re), TrimSpace(replacement)));
}

Built BuildRedirectRegex(const boost::json::value& config) {
  mw::Options o("redirectRegex", config, {"regex", "replacement", "permanent"});
  std::string pattern = o.String("regex");
  std::string replacement = o.String("replacement");
  const bool permanent = o.Bool("permanent");
  RETURN_IF_ERROR(o.status());
  StatusOr<std::shared_ptr<const re2::RE2>> re = mw::CompileRegex(pattern);
  if (!re.ok()) return InvalidArgument("redirectRegex: " + re.status().message());
  return Of(std::make_shared<Redirect>(*std::move(re), std::move(replacement), permanent, Redirect::Url::kAsReceived));
}

// Traefik's redirectScheme is a redirectRegex over the URL as the client sent it.
constexpr std::string_view kSchemeRedirectPattern = R"(^(https?:\/\/)?(\[[\w:.]+\]|[\w\._-]+)?(:\d+)?(.*)$)";

Built BuildRedirectScheme(const boost::json::value& config) {
  mw::Options o("redirectScheme", config, {"scheme", "port", "permanent"});
  const std::string scheme = o.String("scheme");
  const std::string port = o.String("port");
  const bool permanent = o.Bool("permanent");
  RETURN_IF_ERROR(o.status());
  if (scheme.empty()) return InvalidArgument("redirectScheme: you must provide a target scheme");
  std::string port_part;
  if (!port.empty() && !((scheme == "http" && port == "80") || (scheme == "https" && port == "443"))) {
    port_part = ":" + port;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const re2::RE2> re, mw::CompileRegex(kSchemeRedirectPattern));
  return Of(std::make_shared<Redirect>(std::move(re), scheme + "://${2}" + port_part + "${4}", permanent,
                                       Redirect::Url::kAsClientSentIt));
}

Built BuildChain(const boost::json::value& config) {
  mw::Options o("chain", config, {"middlewares"});
  BuiltMiddleware b;
  b.chain = o.Strings("middlewares");
  RETURN_IF_ERROR(o.status());
  return b;
}

Built BuildForwardAuth(const boost::json::value& config) {
  mw::Options o("forwardAuth", config,
                {"address", "tls", "trustForwardHeader", "authResponseHeaders", "authResponseHeadersRegex",
                 "authRequestHeaders", "addAuthCookiesToResponse", "headerField", "forwardBody", "maxBodySize",
                 "maxResponseBodySize", "preserveLocationHeader", "preserveRequestMethod", "authSigninURL"});
  ForwardAuthConfig c;
  c.address = o.String("address");
  c.trust_forward_header = o.Bool("trustForwardHeader");
  c.auth_response_headers = o.Strings("authResponseHeaders");
  c.auth_response_headers_regex = o.String("authResponseHeadersRegex");
  c.auth_request_headers = o.Strings("authRequestHeaders");
  c.add_auth_cookies_to_response = o.Strings("addAuthCookiesToResponse");
  c.header_field = o.String("headerField");
  c.forward_body = o.Bool("forwardBody");
  c.max_body_size = o.Int("maxBodySize").value_or(-1);
  c.max_response_body_size = o.Int("maxResponseBodySize").value_or(-1);
  c.preserve_location_header = o.Bool("preserveLocationHeader");
  c.preserve_request_method = o.Bool("preserveRequestMethod");
  c.auth_signin_url = o.String("authSigninURL");
  if (std::optional<mw::Options> tls = o.Object("tls", {"ca", "cert", "key", "insecureSkipVerify", "caOptional"})) {
    c.tls_ca = tls->String("ca");
    c.tls_cert = tls->String("cert");
    c.tls_key = tls->String("key");
    c.tls_insecure_skip_verify = tls->Bool("insecureSkipVerify");
    tls->Bool("caOptional");  // deprecated in Traefik v3, without effect
  }
  RETURN_IF_ERROR(o.status());
  if (!c.auth_response_headers_regex.empty()) {
    StatusOr<std::shared_ptr<const re2::RE2>> re = mw::CompileRegex(c.auth_response_headers_regex);
    if (!re.ok()) {
      return InvalidArgument(fmt::format("forwardAuth: error compiling regular expression {}: {}",
                                         c.auth_response_headers_regex, re.status().message()));
    }
  }
  BuiltMiddleware b;
  b.forward_auth = std::move(c);
  return b;
}

std::chrono::milliseconds ToMillis(std::optional<std::chrono::nanoseconds> d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d.value_or(std::chrono::nanoseconds(0)));
}

Built BuildRetry(const boost::json::value& config) {
  mw::Options o("retry", config,
                {"attempts", "initialInterval", "timeout", "maxRequestBodyBytes", "status", "disableRetryOnNetworkError",
                 "retryNonIdempotentMethod"});
  RetryConfig c;
  const int64_t attempts = o.Int("attempts").value_or(0);
  c.initial_interval = ToMillis(o.Duration("initialInterval"));
  c.timeout = ToMillis(o.Duration("timeout"));
  c.max_request_body_bytes = o.Int("maxRequestBodyBytes").value_or(c.max_request_body_bytes);
  const std::vector<std::string> status = o.Strings("status");
  c.disable_retry_on_network_error = o.Bool("disableRetryOnNetworkError");
  c.retry_non_idempotent_method = o.Bool("retryNonIdempotentMethod");
  RETURN_IF_ERROR(o.status());
  if (status.empty() && c.disable_retry_on_network_error) {
    return InvalidArgument("retry: retry middleware requires at least HTTP status codes or retry on TCP");
  }
  if (attempts <= 0 || attempts > 1000) {
    return InvalidArgument(fmt::format("retry: incorrect (or empty) value for attempt ({})", attempts));
  }
  c.attempts = static_cast<int>(attempts);
  auto ranges = HttpCodeRanges(status);
  if (!ranges.ok()) return InvalidArgument(fmt::format("retry: {}", ranges.status().message()));
  c.status = std::move(*ranges);
  BuiltMiddleware b;
  b.retry = std::move(c);
  return b;
}

Built BuildBuffering(const boost::json::value& config) {
  mw::Options o("buffering", config,
                {"maxRequestBodyBytes", "memRequestBodyBytes", "maxResponseBodyBytes", "memResponseBodyBytes",
                 "retryExpression"});
  BufferingConfig c;
  c.max_request_body_bytes = o.Int("maxRequestBodyBytes").value_or(c.max_request_body_bytes);
  c.mem_request_body_bytes = o.Int("memRequestBodyBytes").value_or(c.mem_request_body_bytes);
  c.max_response_body_bytes = o.Int("maxResponseBodyBytes").value_or(c.max_response_body_bytes);
  c.mem_response_body_bytes = o.Int("memResponseBodyBytes").value_or(c.mem_response_body_bytes);
  c.retry_expression = o.String("retryExpression");
  RETURN_IF_ERROR(o.status());
  if (!c.retry_expression.empty()) {  // oxy's buffer.Retry: a bad expression fails the middleware
    ASSIGN_OR_RETURN(RetryExpression retry, RetryExpression::Parse(c.retry_expression));
    c.retry = std::make_shared<const RetryExpression>(std::move(retry));
  }
  for (int64_t v : {c.max_request_body_bytes, c.max_response_body_bytes}) {
    if (v < 0) return InvalidArgument(fmt::format("buffering: max bytes should be >= 0 got {}", v));
  }
  for (int64_t v : {c.mem_request_body_bytes, c.mem_response_body_bytes}) {
    if (v < 0) return InvalidArgument(fmt::format("buffering: mem bytes should be >= 0 got {}", v));
  }
  BuiltMiddleware b;
  b.buffering = std::move(c);
  return b;
}

Built BuildErrors(const boost::json::value& config) {
  mw::Options o("errors", config, {"status", "statusRewrites", "service", "query", "errorRequestHeaders", "nginxHeaders"});
  ErrorPagesConfig c;
  const std::vector<std::string> status = o.Strings("status");
  const std::vector<std::pair<std::string, std::string>> rewrites = o.StringMap("statusRewrites");
  c.service = o.String("service");
  c.query = o.String("query");
  if (o.Has("errorRequestHeaders")) c.request_headers = o.Strings("errorRequestHeaders");
  RETURN_IF_ERROR(o.status());
  auto ranges = HttpCodeRanges(status);
  if (!ranges.ok()) return InvalidArgument(fmt::format("errors: {}", ranges.status().message()));
  c.status = *std::move(ranges);
  for (const auto& [from, to] : rewrites) {
    auto from_ranges = HttpCodeRanges({from});
    if (!from_ranges.ok()) return InvalidArgument(fmt::format("errors: {}", from_ranges.status().message()));
    int code = 0;
    auto [end, ec] = std::from_chars(to.data(), to.data() + to.size(), code);
    if (ec != std::errc() || end != to.data() + to.size() || code < 100 || code > 999)
      return InvalidArgument(fmt::format("errors: statusRewrites {}: {} is not a status code", from, to));
    c.rewrites.emplace_back(*std::move(from_ranges), code);
  }
  if (c.service.empty()) return InvalidArgument("errors: no service for the error pages");
  BuiltMiddleware b;
  b.errors = std::move(c);
  return b;
}

Built FromMiddleware(StatusOr<std::shared_ptr<const Middleware>> m) {
  if (!m.ok()) return m.status();
  return Of(*std::move(m));
}

}  // namespace

StatusOr<BuiltMiddleware> BuildMiddleware(const boost::json::object& config) {
  if (config.empty()) {
    return InvalidArgument("invalid middleware configuration: invalid middleware type or middleware does not exist");
  }
  if (config.size() > 1) {
    return InvalidArgument(
        "cannot create middleware: multi-types middleware not supported, consider declaring two different pieces of "
        "middleware instead");
  }
  const std::string_view kind = config.begin()->key();
  const boost::json::value& options = config.begin()->value();
  if (kind == "addPrefix") return BuildAddPrefix(options);
  if (kind == "stripPrefix") return BuildStripPrefix(options);
  if (kind == "stripPrefixRegex") return BuildStripPrefixRegex(options);
  if (kind == "replacePath") return BuildReplacePath(options);
  if (kind == "replacePathRegex") return BuildReplacePathRegex(options);
  if (kind == "redirectRegex") return BuildRedirectRegex(options);
  if (kind == "redirectScheme") return BuildRedirectScheme(options);
  if (kind == "headers") return FromMiddleware(mw::BuildHeaders(options));
  if (kind == "basicAuth") return FromMiddleware(mw::BuildBasicAuth(options));
  if (kind == "digestAuth") return FromMiddleware(mw::BuildDigestAuth(options));
  if (kind == "ipAllowList") return FromMiddleware(mw::BuildIpAllowList(options));
  if (kind == "rateLimit") return FromMiddleware(mw::BuildRateLimit(options));
  if (kind == "chain") return BuildChain(options);
  if (kind == "forwardAuth") return BuildForwardAuth(options);
  if (kind == "retry") return BuildRetry(options);
  if (kind == "buffering") return BuildBuffering(options);
  if (kind == "passTLSClientCert") return FromMiddleware(mw::BuildPassTlsClientCert(options));
  if (kind == "inFlightReq") return FromMiddleware(mw::BuildInFlightReq(options));
  if (kind == "circuitBreaker") return FromMiddleware(mw::BuildCircuitBreaker(options));
  if (kind == "errors") return BuildErrors(options);
  if (kind == "compress") {
    ASSIGN_OR_RETURN(CompressConfig c, ParseCompressConfig(options));
    BuiltMiddleware b;
    b.compress = std::make_shared<const CompressConfig>(std::move(c));
    return b;
  }
  static constexpr std::array<std::string_view, 2> kPhaseTwo = {"grpcWeb", "plugin"};
  if (std::find(kPhaseTwo.begin(), kPhaseTwo.end(), kind) != kPhaseTwo.end()) {
    return InvalidArgument(fmt::format("middleware {} is not supported", kind));
  }
  return InvalidArgument(fmt::format("unknown middleware type {}", kind));
}

}  // namespace paddock::edge
