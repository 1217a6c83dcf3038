// edge/proxy/sticky: Traefik v3's sticky sessions by cookie (loadBalancer.sticky.cookie;
// pkg/server/cookie and pkg/server/service/loadbalancer/sticky.go, v3.7) — the cookie's name, the
// value naming a server, the Set-Cookie written for it, and which server a request's cookie picks.
// Pure: the proxy (proxy.cc) calls ChooseSticky before it picks a server by round robin, and puts
// StickyCookie::SetCookie on the response when the choice asks for it.
//
// A client's cookie from a real Traefik works here and ours there: the name is Traefik's (the
// configured one with non-token bytes made '_', or "_" + the first 5 hex digits of
// SHA-1("_TRAEFIK_BACKEND_" + the qualified service name)), the value is the first 16 hex digits
// of SHA-256(server URL), and the older values Traefik still takes (the raw URL, its FNV-1 64 hash
// in hex, that hash hashed again) pick their server too and are rewritten to the SHA-256 form.
//
//   StickyChoice pick = ChooseSticky(backend, request_headers);
//   auto server = pick.server ? pick.server : backend.Pick();
//   if (!pick.server || pick.rewrite) response.emplace_back("Set-Cookie", backend.sticky->SetCookie(server->url()));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edge/middleware.h"

namespace paddock::edge {

class ServerState;
struct Backend;

// Traefik's cookie.GetName: `configured` with every byte outside RFC 2616's token set made '_',
// or, when it is empty, "_" + hex(SHA-1("_TRAEFIK_BACKEND_" + service))[:5].
std::string StickyCookieName(std::string_view configured, std::string_view service);

// The cookie value naming a server: hex(SHA-256(url))[:16] (Traefik's sha256Hash).
std::string StickyServerHash(std::string_view url);
// Go's fnv.New64 (FNV-1, not 1a) of `s`, in lower-case hex without leading zeros (Traefik's
// fnvHash, the value older Traefik versions wrote).
std::string StickyFnvHash(std::string_view s);

// The first value of cookie `name` in the request's Cookie headers, as Go's Request.Cookie reads
// it (pairs split on ';', spaces trimmed, one pair of surrounding quotes removed, a value with a
// byte Go refuses skipped); nullopt when there is none.
std::optional<std::string> RequestCookie(const HeaderList& headers, std::string_view name);

// Traefik's convertSameSite: "none", "lax", "strict" in any case; anything else is Go's default
// mode (no attribute).
enum class SameSite : uint8_t { kDefault, kNone, kLax, kStrict };
SameSite ParseSameSite(std::string_view text);

struct StickyCookie {
  std::string name{};  // already Traefik's (StickyCookieName)
  bool secure = false;
  bool http_only = false;
  SameSite same_site = SameSite::kDefault;
  int64_t max_age = 0;  // > 0: Max-Age=n; < 0: Max-Age=0; 0: none
  std::string path = "/";
  std::string domain{};

  // The Set-Cookie value for the server at `url`, as Go's http.Cookie.String() writes it:
  // "name=value; Path=/p; Domain=d; Max-Age=n; HttpOnly; Secure; SameSite=Lax" (a path's bytes
  // Go refuses dropped; a domain Go finds invalid left out).
  std::string SetCookie(std::string_view url) const;
};

// What a request's sticky cookie says.
struct StickyChoice {
  // The server it names, when that server is in the service and routable (not DOWN, not pending
  // its first probe, not fenced for a drain); null otherwise: round robin picks, and the response
  // gets a new cookie.
  std::shared_ptr<ServerState> server;
  // The cookie named the server in one of Traefik's older forms: the response gets the SHA-256 one.
  bool rewrite = false;
};

// Reads `backend.sticky`'s cookie from the request (REQUIRES: backend.sticky is set) and matches
// it against each server's sticky_hash, then its older forms.
StickyChoice ChooseSticky(const Backend& backend, const HeaderList& request_headers);

}  // namespace paddock::edge
