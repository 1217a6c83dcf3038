// Traefik's basicAuth: htpasswd users checked as Traefik's go-http-auth does — bcrypt ($2a$, $2b$,
// $2x$, $2y$; computed by libxcrypt), {SHA} (base64 of SHA-1), and everything else read as an
// MD5-crypt "$magic$salt$hash" ($apr1$, $1$). A plain-text password never matches, as in Traefik.
#include <crypt.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/sha.h>

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

}  // namespace

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
