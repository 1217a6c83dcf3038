// Traefik's basicAuth: htpasswd users checked as Traefik's go-http-auth does — bcrypt ($2a$, $2b$,
// $2x$, $2y$; computed by libxcrypt), {SHA} (base64 of SHA-1), and everything else read as an
// MD5-crypt "$magic$salt$hash" ($apr1$, $1$). A plain-text password never matches, as in Traefik.
// And its digestAuth: RFC 2617 Digest (MD5, qop=auth) with go-http-auth's DigestAuthenticator
// (containous' fork) — its own nonces (at most 1,100 remembered, the oldest 200 forgotten past
// that), each nonce count used once, "stale" for a count below the last one (pipelined requests out
// of order). Unlike go-http-auth, a user that is not configured never passes (go-http-auth checks
// the response against an empty HA1, which the client can compute).
#include <crypt.h>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <map>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/sha.h>

#include "common/encoding.h"
#include "edge/internal/middleware_util.h"

namespace paddock::edge::mw {
namespace {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// Go's base64.StdEncoding.DecodeString: padded, CR and LF ignored.
std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string clean;
  for (char c : text) {
    if (c != '\r' && c != '\n') clean += c;
  }
  if (clean.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < clean.size(); i += 4) {
    const bool last = i + 4 == clean.size();
    int pad = 0;
    if (last && clean[i + 3] == '=') pad = clean[i + 2] == '=' ? 2 : 1;
    uint32_t bits = 0;
    for (int k = 0; k < 4; ++k) {
      int v = 0;
      if (k < 4 - pad) {
        v = value(clean[i + k]);
        if (v < 0) return std::nullopt;
      }
      bits = (bits << 6) | static_cast<uint32_t>(v);
    }
    out += static_cast<char>(bits >> 16);
    if (pad < 2) out += static_cast<char>((bits >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(bits & 0xff);
  }
  return out;
}

std::string Md5(std::initializer_list<std::string_view> parts) {
  unsigned char digest[MD5_DIGEST_LENGTH];
  unsigned int n = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_md5(), nullptr);
  for (std::string_view p : parts) EVP_DigestUpdate(ctx, p.data(), p.size());
  EVP_DigestFinal_ex(ctx, digest, &n);
  EVP_MD_CTX_free(ctx);
  return std::string(reinterpret_cast<const char*>(digest), n);
}

// The MD5-crypt of Poul-Henning Kamp (Apache's $apr1$ with its magic), as go-http-auth's MD5Crypt.
std::string Md5Crypt(std::string_view password, std::string_view salt, std::string_view magic) {
  std::string mixin = Md5({password, salt, password});
  std::string ctx;
  ctx.append(password).append(magic).append(salt);
  for (size_t i = 0; i < password.size(); ++i) ctx += mixin[i % 16];
  for (size_t i = password.size(); i != 0; i >>= 1) {
    ctx += (i & 1) == 0 ? (password.empty() ? '\0' : password[0]) : '\0';
  }
  std::string final_digest = Md5({ctx});
  for (int i = 0; i < 1000; ++i) {
    std::string round;
    if (i & 1) round.append(password); else round.append(final_digest);
    if (i % 3 != 0) round.append(salt);
    if (i % 7 != 0) round.append(password);
    if (i & 1) round.append(final_digest); else round.append(password);
    final_digest = Md5({round});
  }
  static constexpr char kItoa64[] = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  static constexpr int kSwaps[16] = {12, 6, 0, 13, 7, 1, 14, 8, 2, 15, 9, 3, 5, 10, 4, 11};
  std::string encoded;
  unsigned v = 0, bits = 0;
  for (int i : kSwaps) {
    v |= static_cast<unsigned>(static_cast<unsigned char>(final_digest[static_cast<size_t>(i)])) << bits;
    for (bits += 8; bits > 6; bits -= 6) {
      encoded += kItoa64[v & 0x3f];
      v >>= 6;
    }
  }
  encoded += kItoa64[v & 0x3f];
  return std::string(magic) + std::string(salt) + "$" + encoded;
}

bool CheckBcrypt(std::string_view password, std::string_view secret) {
  // Go's bcrypt reads all of $2a$, $2b$, $2x$ and $2y$ as the corrected algorithm, which is
  // libxcrypt's $2b$ (its $2a$ and $2x$ keep the old bugs for 8-bit characters).
  if (password.find('\0') != std::string_view::npos || secret.size() < 29) return false;
  const std::string setting = "$2b$" + std::string(secret.substr(4));
  const std::string key(password);
  thread_local std::unique_ptr<crypt_data> data = std::make_unique<crypt_data>();
  *data = crypt_data{};
  const char* hashed = crypt_rn(key.c_str(), setting.c_str(), data.get(), static_cast<int>(sizeof(crypt_data)));
  if (hashed == nullptr || hashed[0] == '*') return false;
  std::string_view computed(hashed);
  if (computed.size() < 29) return false;
  return ConstantTimeEquals(computed.substr(29), secret.substr(29));
}

bool CheckSha(std::string_view password, std::string_view secret) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(password.data()), password.size(), digest);
  const std::string expected = Base64(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return ConstantTimeEquals(secret.substr(5), expected);
}

bool CheckMd5(std::string_view password, std::string_view secret) {
  // "$magic$salt$hash": four parts split on the first three '$'.
  if (secret.empty() || secret[0] != '$') return false;
  const size_t second = secret.find('$', 1);
  if (second == std::string_view::npos) return false;
  const size_t third = secret.find('$', second + 1);
  if (third == std::string_view::npos) return false;
  const std::string_view magic = secret.substr(0, second + 1);
  const std::string_view salt = secret.substr(second + 1, third - second - 1);
  return ConstantTimeEquals(secret, Md5Crypt(password, salt, magic));
}

// go-http-auth's CheckSecret.
bool CheckSecret(std::string_view password, std::string_view secret) {
  if (secret.starts_with("{SHA}")) return CheckSha(password, secret);
  for (std::string_view prefix : {"$2a$", "$2b$", "$2x$", "$2y$"}) {
    if (secret.starts_with(prefix)) return CheckBcrypt(password, secret);
  }
  return CheckMd5(password, secret);
}

struct BasicAuthConfig {
  std::map<std::string, std::string, std::less<>> users;  // name -> hash
  std::string decoy;  // a hash checked for an unknown user, so that the answer takes as long
  std::string realm;
  bool remove_header = false;
  std::string header_field;
};

class BasicAuth final : public Middleware {
 public:
  explicit BasicAuth(BasicAuthConfig c) : c_(std::move(c)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    std::optional<std::pair<std::string, std::string>> credentials = Credentials(x);
    if (!credentials || !Check(credentials->first, credentials->second)) {
      Answer a;
      a.status = 401;
      a.headers = {{"Content-Type", "text/plain"}, {"Www-Authenticate", "Basic realm=\"" + c_.realm + "\""}};
      a.body = "401 Unauthorized\n";
      return a;
    }
    x.user = credentials->first;
    if (!c_.header_field.empty()) {
      DelHeader(x.headers, c_.header_field);
      x.headers.emplace_back(c_.header_field, credentials->first);  // Traefik keeps the name as configured
    }
    if (c_.remove_header) DelHeader(x.headers, "Authorization");
    return std::nullopt;
  }

 private:
  // Go's Request.BasicAuth().
  static std::optional<std::pair<std::string, std::string>> Credentials(const Exchange& x) {
    std::string_view auth = GetHeader(x.headers, "Authorization");
    constexpr std::string_view kPrefix = "Basic ";
    if (auth.size() < kPrefix.size() || !HeaderNameEquals(auth.substr(0, kPrefix.size()), kPrefix)) return std::nullopt;
    std::optional<std::string> decoded = DecodeBase64(auth.substr(kPrefix.size()));
    if (!decoded) return std::nullopt;
    const size_t colon = decoded->find(':');
    if (colon == std::string::npos) return std::nullopt;
    return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
  }

  bool Check(std::string_view user, std::string_view password) const {
    auto it = c_.users.find(user);
    if (it == c_.users.end() || it->second.empty()) {
      (void)CheckSecret(password, c_.decoy);
      return false;
    }
    return CheckSecret(password, it->second);
  }

  BasicAuthConfig c_;
};

// go-http-auth's ParseList + ParsePairs of a Digest header's parameters: comma-separated (not
// inside quotes), `key=value` with the value unquoted; a pair without '=' is a key with no value.
std::map<std::string, std::string, std::less<>> DigestPairs(std::string_view value) {
  std::map<std::string, std::string, std::less<>> out;
  std::vector<std::string> items;
  std::string current;
  bool quoted = false, escape = false;
  for (char c : value) {
    if (escape) {
      escape = false;
      current += c;
      continue;
    }
    if (quoted && c == '\\') {
      escape = true;
      current += c;
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      items.push_back(std::move(current));
      current.clear();
      continue;
    }
    current += c;
  }
  items.push_back(std::move(current));
  for (std::string& item : items) {
    std::string_view pair = item;
    while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) pair.remove_prefix(1);
    while (!pair.empty() && (pair.back() == ' ' || pair.back() == '\t')) pair.remove_suffix(1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      out[std::string(pair)] = "";
      continue;
    }
    std::string_view v = pair.substr(eq + 1);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    out[std::string(pair.substr(0, eq))] = std::string(v);
  }
  return out;
}

std::string Md5Hex(std::string_view text) { return HexEncode(Md5({text})); }

class DigestAuth final : public Middleware {
 public:
  static constexpr size_t kClientCacheSize = 1000;     // go-http-auth's defaults
  static constexpr size_t kClientCacheTolerance = 100;

  DigestAuth(std::map<std::string, std::string, std::less<>> users, std::string realm, bool remove_header,
             std::string header_field)
      : users_(std::move(users)),
        realm_(std::move(realm)),
        remove_header_(remove_header),
        header_field_(std::move(header_field)),
        opaque_(Base64(RandomBytes(12))),
        decoy_(HexEncode(RandomBytes(16))) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    bool stale = false;
    std::string user = Check(x, &stale);
    if (user.empty()) {
      // Traefik logs the user a failed attempt named (its access log's ClientUsername).
      std::string_view field = header_field_.empty() ? std::string_view("Authorization") : header_field_;
      if (auto params = Params(GetHeader(x.headers, field)); params) {
        if (auto it = params->find("username"); it != params->end()) x.user = it->second;
      }
      return Challenge(stale);
    }
    x.user = user;
    if (!header_field_.empty()) {
      DelHeader(x.headers, header_field_);
      x.headers.emplace_back(header_field_, user);
    }
    if (remove_header_) DelHeader(x.headers, "Authorization");
    return std::nullopt;
  }

 private:
  // go-http-auth's DigestAuthParams: "Digest <pairs>", the scheme exactly so.
  static std::optional<std::map<std::string, std::string, std::less<>>> Params(std::string_view authorization) {
    const size_t space = authorization.find(' ');
    if (space == std::string_view::npos || authorization.substr(0, space) != "Digest") return std::nullopt;
    return DigestPairs(authorization.substr(space + 1));
  }

  // go-http-auth's CheckAuth (containous' fork, which says "stale" for a nonce it does not know
  // or a count already used): the user, or "".
  std::string Check(const Exchange& x, bool* stale) const {
    auto params = Params(GetHeader(x.headers, "Authorization"));
    if (!params) return "";
    auto& auth = *params;
    auto get = [&auth](std::string_view k) -> std::string {
      auto it = auth.find(k);
      return it == auth.end() ? std::string() : it->second;
    };
    if (auth.find("algorithm") == auth.end()) auth["algorithm"] = "MD5";
    if (get("opaque") != opaque_ || get("algorithm") != "MD5" || get("qop") != "auth") return "";
    const std::string uri = get("uri");
    if (RequestUri(x) != uri) {  // the full path may name a prefix of the request's (go-http-auth's leniency)
      GoPath requested = GoPath::FromEscaped(x.path.empty() ? "/" : x.path);
      GoPath named = GoPath::FromEscaped(std::string_view(uri).substr(0, uri.find('?')));
      if (named.path.size() > requested.path.size() || !requested.path.starts_with(named.path)) return "";
    }
    auto user = users_.find(get("username") + ":" + realm_);
    const std::string ha1 = user == users_.end() ? decoy_ : user->second;  // the same work either way
    const std::string ha2 = Md5Hex(x.method + ":" + uri);
    const std::string kd = Md5Hex(ha1 + ":" + get("nonce") + ":" + get("nc") + ":" + get("cnonce") + ":" + get("qop") +
                                  ":" + ha2);
    if (!ConstantTimeEquals(kd, get("response")) || user == users_.end()) return "";
    const std::string nc_text = get("nc");
    uint64_t nc = 0;
    auto [end, ec] = std::from_chars(nc_text.data(), nc_text.data() + nc_text.size(), nc, 16);
    if (ec != std::errc() || end != nc_text.data() + nc_text.size() || nc_text.empty()) return "";
    std::lock_guard lock(mu_);
    auto client = clients_.find(get("nonce"));
    if (client == clients_.end()) return "";  // not a nonce it gave (or forgotten): a new one
    if (const uint64_t last = client->second.nc; last != 0) {
      if (nc == last) return "";  // a replay
      if (nc < last) {            // pipelined requests out of order: the client may retry as it is
        *stale = true;
        return "";
      }
    }
    client->second.nc = nc;
    client->second.last_seen = std::chrono::steady_clock::now();
    return get("username");
  }

  // go-http-auth's RequireAuth (RequireAuthStale adds stale=true): a new nonce, remembered.
  Answer Challenge(bool stale) const {
    const std::string nonce = Base64(RandomBytes(12));
    {
      std::lock_guard lock(mu_);
      if (clients_.size() > kClientCacheSize + kClientCacheTolerance) Purge(kClientCacheTolerance * 2);
      clients_[nonce] = Client{0, std::chrono::steady_clock::now()};
    }
    Answer a;
    a.status = 401;
    a.headers = {{"Content-Type", "text/plain"},
                 {"Www-Authenticate", fmt::format(R"(Digest realm="{}", nonce="{}", opaque="{}", {}algorithm="MD5", qop="auth")",
                                                  realm_, nonce, opaque_, stale ? "stale=\"true\", " : "")}};
    a.body = "401 Unauthorized\n";
    return a;
  }

  // Forgets the `count` nonces seen longest ago.
  void Purge(size_t count) const {  // REQUIRES(mu_)
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> by_age;
    by_age.reserve(clients_.size());
    for (const auto& [nonce, c] : clients_) by_age.emplace_back(c.last_seen, nonce);
    std::sort(by_age.begin(), by_age.end());
    for (size_t i = 0; i < count && i < by_age.size(); ++i) clients_.erase(by_age[i].second);
  }

  struct Client {
    uint64_t nc = 0;
    std::chrono::steady_clock::time_point last_seen;
  };
  std::map<std::string, std::string, std::less<>> users_;  // "user:realm" -> HA1
  std::string realm_;
  bool remove_header_;
  std::string header_field_;
  std::string opaque_;
  std::string decoy_;  // an HA1 no one knows, for a user that is not configured
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, Client> clients_;  // GUARDED_BY(mu_): by nonce
};

}  // namespace

StatusOr<std::shared_ptr<const Middleware>> BuildDigestAuth(const boost::json::value& config) {
  Options o("digestAuth", config, {"users", "usersFile", "realm", "removeHeader", "headerField"});
  const std::vector<std::string> users = o.Strings("users");
  const std::string users_file = o.String("usersFile");
  std::string realm = o.String("realm");
  const bool remove_header = o.Bool("removeHeader");
  std::string header_field = o.String("headerField");
  RETURN_IF_ERROR(o.status());
  if (!users_file.empty()) {
    return InvalidArgument("digestAuth: usersFile is not supported (the edge reads no files for a middleware): list users");
  }
  std::map<std::string, std::string, std::less<>> parsed;
  for (const std::string& entry : users) {
    const size_t first = entry.find(':');
    const size_t second = first == std::string::npos ? first : entry.find(':', first + 1);
    if (second == std::string::npos || entry.find(':', second + 1) != std::string::npos)
      return InvalidArgument(fmt::format("digestAuth: error parsing DigestUser: {}", entry));
    parsed[entry.substr(0, second)] = entry.substr(second + 1);
  }
  if (realm.empty()) realm = "traefik";  // (without users every request is refused)
  return std::shared_ptr<const Middleware>(
      std::make_shared<DigestAuth>(std::move(parsed), std::move(realm), remove_header, std::move(header_field)));
}

StatusOr<std::shared_ptr<const Middleware>> BuildBasicAuth(const boost::json::value& config) {
  Options o("basicAuth", config, {"users", "usersFile", "realm", "removeHeader", "headerField"});
  const std::vector<std::string> users = o.Strings("users");
  const std::string users_file = o.String("usersFile");
  BasicAuthConfig c;
  c.realm = o.String("realm");
  c.remove_header = o.Bool("removeHeader");
  c.header_field = o.String("headerField");
  RETURN_IF_ERROR(o.status());
  if (!users_file.empty()) {
    return InvalidArgument("basicAuth: usersFile is not supported (the edge reads no files for a middleware): list users");
  }
  for (const std::string& entry : users) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos || entry.find(':', colon + 1) != std::string::npos) {
      return InvalidArgument(fmt::format("basicAuth: error parsing BasicUser: {}", entry));
    }
    c.users[entry.substr(0, colon)] = entry.substr(colon + 1);
    if (c.decoy.empty()) c.decoy = entry.substr(colon + 1);
  }
  if (c.users.empty()) return InvalidArgument("basicAuth: no users found");
  if (c.realm.empty()) c.realm = "traefik";
  return std::shared_ptr<const Middleware>(std::make_shared<BasicAuth>(std::move(c)));
}

}  // namespace paddock::edge::mw
