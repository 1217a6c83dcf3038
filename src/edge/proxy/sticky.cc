#include "edge/proxy/sticky.h"

#include <arpa/inet.h>
#include <openssl/evp.h>

#include <charconv>

#include "edge/proxy/table.h"

namespace paddock::edge {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string HexDigest(const EVP_MD* md, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, md, nullptr);
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

bool IsAlnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// RFC 2616 token bytes: what Traefik's sanitizeName keeps and Go's isCookieNameValid accepts.
bool IsTokenByte(unsigned char c) {
  if (IsAlnum(c)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

// How many bytes the UTF-8 sequence at s[i] spans (1 for an invalid one, as Go's range over a
// string yields one RuneError per bad byte).
size_t RuneLength(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
  if (n == 1 || c >= 0xF5) return 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

// Go's textproto.TrimString: ASCII space and tab (and CR, LF) off both ends.
std::string_view Trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool ValidCookieName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!IsTokenByte(static_cast<unsigned char>(c))) return false;
  return true;
}

// Go's parseCookieValue(raw, allowDoubleQuote=true).
std::optional<std::string_view> CookieValue(std::string_view raw) {
  if (raw.size() > 1 && raw.front() == '"' && raw.back() == '"') raw = raw.substr(1, raw.size() - 2);
  for (char ch : raw) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\') return std::nullopt;
  }
  return raw;
}

bool IEqualsCookie(std::string_view name) {
  static constexpr std::string_view kCookie = "cookie";
  if (name.size() != kCookie.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kCookie[i]) return false;
  }
  return true;
}

// Go's isCookieDomainName.
bool CookieDomainName(std::string_view s) {
  if (s.empty() || s.size() > 255) return false;
  if (s.front() == '.') s.remove_prefix(1);
  char last = '.';
  bool letter = false;
  size_t part = 0;
  for (char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      letter = true;
      ++part;
    } else if (c >= '0' && c <= '9') {
      ++part;
    } else if (c == '-') {
      if (last == '.') return false;
      ++part;
    } else if (c == '.') {
      if (last == '.' || last == '-' || part > 63 || part == 0) return false;
      part = 0;
    } else {
      return false;
    }
    last = c;
  }
  return last != '-' && part <= 63 && letter;
}

// Go's validCookieDomain: a domain name, or an IPv4 address (an IPv6 one has ':').
bool ValidCookieDomain(std::string_view d) {
  if (CookieDomainName(d)) return true;
  in_addr four{};
  return inet_pton(AF_INET, std::string(d).c_str(), &four) == 1;
}

}  // namespace

std::string StickyCookieName(std::string_view configured, std::string_view service) {
  if (configured.empty()) {
    std::string data = "_TRAEFIK_BACKEND_";
    data += service;
    return "_" + HexDigest(EVP_sha1(), data).substr(0, 5);
  }
  std::string out;
  out.reserve(configured.size());
  for (size_t i = 0; i < configured.size();) {
    const auto c = static_cast<unsigned char>(configured[i]);
    if (c < 0x80) {
      out += IsTokenByte(c) ? static_cast<char>(c) : '_';
      ++i;
    } else {
      out += '_';  // one '_' per rune, as strings.Map
      i += RuneLength(configured, i);
    }
  }
  return out;
}

std::string StickyServerHash(std::string_view url) { return HexDigest(EVP_sha256(), url).substr(0, 16); }

std::string StickyFnvHash(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (char c : s) {
    h *= 1099511628211ULL;
    h ^= static_cast<unsigned char>(c);
  }
  char buf[16];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), h, 16);
  return std::string(buf, end);
}

std::optional<std::string> RequestCookie(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (!IEqualsCookie(n)) continue;
    std::string_view line = Trim(v);
    while (!line.empty()) {
      const size_t semi = line.find(';');
      std::string_view part = Trim(line.substr(0, semi));
      line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
      if (part.empty()) continue;
      const size_t eq = part.find('=');
      std::string_view key = Trim(part.substr(0, eq));
      std::string_view raw = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
      if (!ValidCookieName(key) || key != name) continue;
      if (auto value = CookieValue(raw)) return std::string(*value);
    }
  }
  return std::nullopt;
}

SameSite ParseSameSite(std::string_view text) {
  std::string lower(text);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (lower == "none") return SameSite::kNone;
  if (lower == "lax") return SameSite::kLax;
  if (lower == "strict") return SameSite::kStrict;
  return SameSite::kDefault;
}

std::string StickyCookie::SetCookie(std::string_view url) const {
  std::string out = name;
  out += '=';
  out += StickyServerHash(url);
  std::string clean_path;
  for (char ch : path) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7f && b != ';') clean_path += ch;
  }
  if (!clean_path.empty()) {
    out += "; Path=";
    out += clean_path;
  }
  if (!domain.empty() && ValidCookieDomain(domain)) {
    out += "; Domain=";
    out += domain.front() == '.' ? std::string_view(domain).substr(1) : std::string_view(domain);
  }
  if (max_age > 0) {
    out += "; Max-Age=";
    out += std::to_string(max_age);
  } else if (max_age < 0) {
    out += "; Max-Age=0";
  }
  if (http_only) out += "; HttpOnly";
  if (secure) out += "; Secure";
  switch (same_site) {
    case SameSite::kDefault: break;
    case SameSite::kNone: out += "; SameSite=None"; break;
    case SameSite::kLax: out += "; SameSite=Lax"; break;
    case SameSite::kStrict: out += "; SameSite=Strict"; break;
  }
  return out;
}

StickyChoice ChooseSticky(const Backend& backend, const HeaderList& request_headers) {
  StickyChoice out;
  std::optional<std::string> value = RequestCookie(request_headers, backend.sticky->name);
  if (!value) return out;
  const Backend::Server* named = nullptr;
  // A server of weight 0 is not in Traefik's balancer at all: no cookie names it.
  for (const Backend::Server& s : backend.servers)
    if (s.weight > 0 && s.state->sticky_hash() == *value) {
      named = &s;
      break;
    }
  if (!named) {
    for (const Backend::Server& s : backend.servers) {
      if (s.weight <= 0) continue;
      const std::string& url = s.state->url();
      const std::string fnv = StickyFnvHash(url);
      if (url == *value || fnv == *value || StickyFnvHash(fnv) == *value) {
        named = &s;
        out.rewrite = true;
        break;
      }
    }
  }
  if (named && named->state->Routable()) {
    out.server = named->state;
  } else {
    out.rewrite = false;
  }
  return out;
}

}  // namespace paddock::edge
