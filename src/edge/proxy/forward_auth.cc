#include "edge/proxy/forward_auth.h"

#include <charconv>
#include <set>

#include <fmt/format.h>
#include <re2/re2.h>

#include "edge/internal/middleware_util.h"

namespace paddock::edge {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (Lower(a[i]) != Lower(b[i])) return false;
  return true;
}

// Go's http.CanonicalHeaderKey: "x-auth-user" -> "X-Auth-User"; a name with a byte that is not a
// token character is left as it is.
std::string Canonical(std::string_view name) {
  std::string out(name);
  for (char c : out)
    if (c == ' ' || c == '\t' || c == ':' || c == '\r' || c == '\n' || static_cast<unsigned char>(c) >= 0x80)
      return out;
  bool upper = true;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    else if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    upper = c == '-';
  }
  return out;
}

// Traefik's hopHeaders for the auth request and answer (Proxy-Authorization is forwarded).
bool AuthHopHeader(std::string_view name) {
  for (std::string_view n : {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"})
    if (IEquals(name, n)) return true;
  return false;
}

// Traefik's managed X-headers (forwardedheaders.XHeadersSet), '_' read as '-'.
bool ManagedXHeader(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "x-forwarded-proto", "x-forwarded-scheme", "x-forwarded-for",    "x-forwarded-host",
      "x-forwarded-port",  "x-forwarded-server", "x-forwarded-uri",    "x-forwarded-method",
      "x-forwarded-prefix", "x-forwarded-tls-client-cert", "x-forwarded-tls-client-cert-info", "x-scheme",
      "x-real-ip"};
  std::string dashed(name);
  for (char& c : dashed)
    if (c == '_') c = '-';
  for (std::string_view n : kNames)
    if (IEquals(dashed, n)) return true;
  return false;
}

bool Has(const HeaderList& h, std::string_view name) {
  for (const auto& [n, v] : h)
    if (IEquals(n, name)) return true;
  return false;
}

std::string_view Get(const HeaderList& h, std::string_view name) {
  for (const auto& [n, v] : h)
    if (IEquals(n, name)) return v;
  return {};
}

void Remove(HeaderList& h, std::string_view name) {
  std::erase_if(h, [&](const auto& f) { return IEquals(f.first, name); });
}

std::string CookieName(std::string_view set_cookie) {
  std::string_view s = set_cookie.substr(0, set_cookie.find(';'));
  size_t eq = s.find('=');
  if (eq == std::string_view::npos) return {};
  s = s.substr(0, eq);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// RFC 3986 §5.2.4.
std::string RemoveDotSegments(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./")) {
      in.remove_prefix(2);
    } else if (in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../") || in == "/..") {
      in = in.size() == 3 ? std::string_view("/") : in.substr(3);
      size_t slash = out.rfind('/');
      out.erase(slash == std::string::npos ? 0 : slash);
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      size_t next = in.find('/', 1);
      out.append(in.substr(0, next));
      in = next == std::string_view::npos ? std::string_view() : in.substr(next);
    }
  }
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

StatusOr<AuthAddress> ParseAuthAddress(std::string_view address) {
  std::string_view rest = address;
  if (rest.size() >= 8 && IEquals(rest.substr(0, 8), "https://"))
    return InvalidArgument(fmt::format("forwardAuth: address {}: https is not supported (no TLS to the auth server)",
                                       address));
  if (rest.size() < 7 || !IEquals(rest.substr(0, 7), "http://"))
    return InvalidArgument(fmt::format("forwardAuth: address {}: not an absolute http:// URL", address));
  rest.remove_prefix(7);
  AuthAddress a;
  size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  target = target.substr(0, target.find('#'));
  if (authority.find('@') != std::string_view::npos)
    return InvalidArgument(fmt::format("forwardAuth: address {}: user information is not supported", address));
  a.authority = std::string(authority);
  std::string_view host = authority, port;
  if (authority.starts_with("[")) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return InvalidArgument(fmt::format("forwardAuth: address {}: bad IPv6 literal", address));
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument(fmt::format("forwardAuth: address {}: bad host", address));
      port = after.substr(1);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgument(fmt::format("forwardAuth: address {}: no host", address));
  a.host = std::string(host);
  if (!port.empty()) {
    unsigned p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || ptr != port.data() + port.size() || p == 0 || p > 65535)
      return InvalidArgument(fmt::format("forwardAuth: address {}: bad port", address));
    a.port = static_cast<uint16_t>(p);
  }
  a.target = target.empty() || target.front() == '?' ? "/" + std::string(target) : std::string(target);
  return a;
}

std::string ResolveLocation(const AuthAddress& base, std::string_view location) {
  // A scheme: absolute already.
  size_t colon = location.find(':');
  if (colon != std::string_view::npos && colon > 0 && location.find_first_of("/?#") > colon) {
    bool scheme = true;
    for (size_t i = 0; i < colon; ++i) {
      char c = location[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && ((c >= '0' && c <= '9') || c == '+' ||
                                                                         c == '-' || c == '.'))))
        scheme = false;
    }
    if (scheme) return std::string(location);
  }
  const std::string origin = "http://" + base.authority;
  if (location.starts_with("//")) return "http:" + std::string(location);
  std::string_view base_path = std::string_view(base.target).substr(0, base.target.find('?'));
  std::string_view base_query =
      base.target.find('?') == std::string::npos ? std::string_view() : std::string_view(base.target).substr(base.target.find('?'));
  if (location.empty()) return origin + std::string(base_path) + std::string(base_query);
  if (location.front() == '?') return origin + std::string(base_path) + std::string(location);
  if (location.front() == '#') return origin + std::string(base.target) + std::string(location);
  size_t tail_at = location.find_first_of("?#");
  std::string_view path = location.substr(0, tail_at);
  std::string_view tail = tail_at == std::string_view::npos ? std::string_view() : location.substr(tail_at);
  std::string merged;
  if (path.front() == '/') {
    merged = std::string(path);
  } else {
    size_t slash = base_path.rfind('/');
    merged = std::string(base_path.substr(0, slash == std::string_view::npos ? 0 : slash + 1)) + std::string(path);
  }
  return origin + RemoveDotSegments(merged) + std::string(tail);
}

ForwardAuth::ForwardAuth(ForwardAuthConfig config) : config_(std::move(config)) {}
ForwardAuth::~ForwardAuth() = default;

StatusOr<std::shared_ptr<const ForwardAuth>> ForwardAuth::Build(const ForwardAuthConfig& config) {
  std::shared_ptr<ForwardAuth> fa(new ForwardAuth(config));
  ASSIGN_OR_RETURN(fa->address_, ParseAuthAddress(config.address));
  if (!config.auth_response_headers_regex.empty()) {
    RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(2 << 20);
    fa->regex_ = std::make_unique<RE2>(config.auth_response_headers_regex, options);
    if (!fa->regex_->ok())
      return InvalidArgument(fmt::format("forwardAuth: error compiling regular expression {}: {}",
                                         config.auth_response_headers_regex, fa->regex_->error()));
  }
  return std::shared_ptr<const ForwardAuth>(std::move(fa));
}

std::string_view ForwardAuth::Method(const Exchange& x) const {
  return config_.preserve_request_method ? std::string_view(x.method) : std::string_view("GET");
}

HeaderList ForwardAuth::RequestHeaders(const Exchange& x) const {
  std::string_view connection = Get(x.headers, "connection");
  HeaderList copied;
  for (const auto& [n, v] : x.headers) {
    if (AuthHopHeader(n) || (!connection.empty() && mw::TokenListHas(connection, n))) continue;
    if (IEquals(n, "content-length")) continue;
    if (!config_.trust_forward_header && ManagedXHeader(n)) continue;
    copied.emplace_back(n, v);
  }
  HeaderList out;
  if (config_.auth_request_headers.empty()) {
    out = std::move(copied);
  } else {
    std::vector<std::string> allowed = config_.auth_request_headers;
    if (config_.trust_forward_header)
      for (std::string_view n : {"X-Forwarded-Proto", "X-Forwarded-Scheme", "X-Forwarded-For", "X-Forwarded-Host",
                                 "X-Forwarded-Port", "X-Forwarded-Server", "X-Forwarded-Uri", "X-Forwarded-Method",
                                 "X-Forwarded-Prefix", "X-Forwarded-Tls-Client-Cert",
                                 "X-Forwarded-Tls-Client-Cert-Info", "X-Scheme", "X-Real-Ip"})
        allowed.emplace_back(n);
    std::set<std::string> seen;
    for (const std::string& name : allowed) {
      std::string canonical = Canonical(name);
      if (!seen.insert(canonical).second) continue;
      for (const auto& [n, v] : copied)
        if (IEquals(n, name)) out.emplace_back(canonical, v);
    }
  }
  std::string forwarded_for = x.client_ip;
  {
    std::string prior;
    for (const auto& [n, v] : out)
      if (IEquals(n, "x-forwarded-for")) prior += (prior.empty() ? "" : ", ") + v;
    if (!prior.empty()) forwarded_for = prior + ", " + forwarded_for;
    Remove(out, "x-forwarded-for");
  }
  if (!x.client_ip.empty()) out.emplace_back("X-Forwarded-For", forwarded_for);
  if (!Has(out, "x-forwarded-method")) out.emplace_back("X-Forwarded-Method", x.method);
  if (!Has(out, "x-forwarded-proto")) out.emplace_back("X-Forwarded-Proto", x.scheme == "https" ? "https" : "http");
  if (!Has(out, "x-forwarded-port")) {
    std::string port;
    std::string_view host = x.host;
    size_t colon = host.rfind(':');
    if (colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos)
      port = std::string(host.substr(colon + 1));
    if (port.empty()) {
      std::string_view proto = Get(out, "x-forwarded-proto");
      port = IEquals(proto, "https") || IEquals(proto, "wss") || x.scheme == "https" ? "443" : "80";
    }
    out.emplace_back("X-Forwarded-Port", port);
  }
  if (!Has(out, "x-forwarded-host")) out.emplace_back("X-Forwarded-Host", x.host);
  if (!Has(out, "x-forwarded-uri")) {
    std::string uri = x.path.empty() ? "/" : x.path;
    if (!x.raw_query.empty()) uri += "?" + x.raw_query;
    out.emplace_back("X-Forwarded-Uri", uri);
  }
  return out;
}

void ForwardAuth::CopyResponseHeaders(const HeaderList& auth_headers, HeaderList& request) const {
  for (const std::string& name : config_.auth_response_headers) {
    Remove(request, name);
    std::string canonical = Canonical(name);
    for (const auto& [n, v] : auth_headers)
      if (IEquals(n, name)) request.emplace_back(canonical, v);
  }
  if (regex_) {
    std::erase_if(request, [&](const auto& f) { return RE2::PartialMatch(Canonical(f.first), *regex_); });
    for (const auto& [n, v] : auth_headers) {
      std::string canonical = Canonical(n);
      if (RE2::PartialMatch(canonical, *regex_)) request.emplace_back(canonical, v);
    }
  }
}

Answer ForwardAuth::Refusal(std::string_view method, int status, const HeaderList& auth_headers,
                            std::string body) const {
  Answer a;
  if (!config_.auth_signin_url.empty() && status == 401) {
    a.status = 302;
    a.headers.emplace_back("Location", config_.auth_signin_url);
    if (method == "GET" || method == "HEAD") a.headers.emplace_back("Content-Type", "text/html; charset=utf-8");
    if (method == "GET") a.body = "<a href=\"" + HtmlEscape(config_.auth_signin_url) + "\">Found</a>.\n\n";
    return a;
  }
  a.status = status;
  for (const auto& [n, v] : auth_headers) {
    if (AuthHopHeader(n) || IEquals(n, "content-length")) continue;
    if (IEquals(n, "location")) continue;
    a.headers.emplace_back(n, v);
  }
  std::string_view location = Get(auth_headers, "location");
  if (!location.empty())
    a.headers.emplace_back("Location",
                           config_.preserve_location_header ? std::string(location) : ResolveLocation(address_, location));
  a.body = std::move(body);
  return a;
}

std::vector<std::string> ForwardAuth::AuthCookies(const HeaderList& auth_headers) const {
  std::vector<std::string> out;
  for (const auto& [n, v] : auth_headers)
    if (IEquals(n, "set-cookie") && !CookieName(v).empty()) out.push_back(v);
  return out;
}

void ForwardAuth::ApplyCookies(const std::vector<std::string>& auth_cookies, HeaderList& response) const {
  if (auth_cookies.empty()) return;
  auto named = [&](const std::string& cookie) {
    std::string name = CookieName(cookie);
    for (const std::string& n : config_.add_auth_cookies_to_response)
      if (n == name) return true;
    return false;
  };
  std::erase_if(response, [&](const auto& f) { return IEquals(f.first, "set-cookie") && named(f.second); });
  for (const std::string& c : auth_cookies)
    if (named(c)) response.emplace_back("Set-Cookie", c);
}

}  // namespace paddock::edge
