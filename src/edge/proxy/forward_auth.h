// edge/proxy/forward_auth: the pure parts of Traefik v3's forwardAuth (pkg/middlewares/auth/
// forward.go, v3.7) — the auth request's headers, what a 2xx copies onto the request, what a
// non-2xx sends the client, and the auth cookies on the final response. The proxy (proxy.cc) does
// the call itself: a GET (the request's method with preserveRequestMethod) to `address`, redirects
// not followed, 30 s for the whole call, a fresh connection each time.
//
//   ASSIGN_OR_RETURN(auto auth, edge::ForwardAuth::Build(config));   // http:// only
//   HeaderList out = auth->RequestHeaders(exchange);                  // + Host, Content-Length
//   ... call ...
//   if (status / 100 == 2) auth->CopyResponseHeaders(auth_headers, exchange.headers);
//   else return auth->Refusal(exchange.method, status, auth_headers, body);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "edge/middleware.h"

namespace re2 {
class RE2;
}

namespace paddock::edge {

// Go's http.Client timeout in Traefik's forwardAuth (not configurable there).
inline constexpr std::chrono::seconds kForwardAuthTimeout{30};

// An http:// URL split for one request: "http://auth:9000/verify?x=1" -> {auth, 9000, "auth:9000",
// "/verify?x=1"}.
struct AuthAddress {
  std::string host;       // a name or an IP literal (brackets removed)
  uint16_t port = 80;
  std::string authority;  // as written: the Host header
  std::string target;     // path and query; "/" when empty
};

// InvalidArgument for anything but an absolute http:// URL (https: TLS to the auth server is not
// implemented; a router using it is refused when its table is compiled).
StatusOr<AuthAddress> ParseAuthAddress(std::string_view address);

// RFC 3986 §5 reference resolution of a Location value against the auth address (Go's
// Response.Location): "/login" -> "http://auth:9000/login".
std::string ResolveLocation(const AuthAddress& base, std::string_view location);

class ForwardAuth {
 public:
  static StatusOr<std::shared_ptr<const ForwardAuth>> Build(const ForwardAuthConfig& config);
  ~ForwardAuth();

  const ForwardAuthConfig& config() const { return config_; }
  const AuthAddress& address() const { return address_; }
  // The auth request's method: GET, or the request's with preserveRequestMethod.
  std::string_view Method(const Exchange& x) const;

  // The auth request's headers but Host and Content-Length (Traefik's writeHeader with
  // trustForwardHeader set): the request's headers less the hop-by-hop ones and those its
  // Connection names; without trustForwardHeader every X-Forwarded-* / X-Real-Ip dropped (the
  // edge's own included); kept to authRequestHeaders when given (plus the X-Forwarded-* ones with
  // trustForwardHeader); then X-Forwarded-For (the client, after any kept), and -Method, -Proto,
  // -Port, -Host, -Uri when absent. No User-Agent unless the client sent one.
  HeaderList RequestHeaders(const Exchange& x) const;

  // A 2xx: each authResponseHeaders name removed from the request and set to the auth answer's
  // values; with authResponseHeadersRegex, every matching request header removed and every
  // matching auth header copied.
  void CopyResponseHeaders(const HeaderList& auth_headers, HeaderList& request) const;

  // A non-2xx, as the client gets it: 401 with authSigninURL is a 302 to it (Go's http.Redirect);
  // otherwise the auth server's status, body and headers (hop-by-hop dropped), a Location made
  // absolute against the address unless preserveLocationHeader.
  Answer Refusal(std::string_view method, int status, const HeaderList& auth_headers, std::string body) const;

  // The Set-Cookie values of a 2xx auth answer to put on the final response; empty: leave the
  // response alone (Traefik installs no modifier when the auth answer set no cookie).
  std::vector<std::string> AuthCookies(const HeaderList& auth_headers) const;
  // On the final response: the backend's Set-Cookie named in addAuthCookiesToResponse replaced by
  // the auth server's of those names.
  void ApplyCookies(const std::vector<std::string>& auth_cookies, HeaderList& response) const;

 private:
  explicit ForwardAuth(ForwardAuthConfig config);
  ForwardAuthConfig config_;
  AuthAddress address_;
  std::unique_ptr<re2::RE2> regex_;
};

}  // namespace paddock::edge
