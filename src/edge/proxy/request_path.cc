#include "edge/proxy/request_path.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "edge/internal/middleware_util.h"

namespace paddock::edge {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsAlnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool IsUnreserved(unsigned char c) { return IsAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }

bool HasControlByte(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// The caller has checked every '%' is followed by two hex digits.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Traefik's normalizePath on a RawPath: unreserved %XX decoded, the others upper-cased.
std::string Normalize(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      out += raw[i];
      continue;
    }
    const auto c = static_cast<unsigned char>(HexValue(raw[i + 1]) * 16 + HexValue(raw[i + 2]));
    if (IsUnreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    i += 2;
  }
  return out;
}

// Go's path.Clean of a rooted path, then URL.JoinPath's one trailing slash kept.
std::string Clean(std::string_view p) {
  std::vector<std::string_view> segments;
  size_t i = 0;
  while (i < p.size()) {
    size_t end = p.find('/', i);
    if (end == std::string_view::npos) end = p.size();
    std::string_view seg = p.substr(i, end - i);
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
    i = end + 1;
  }
  std::string out;
  out.reserve(p.size());
  for (std::string_view seg : segments) {
    out += '/';
    out += seg;
  }
  if (out.empty() || p.back() == '/') out += '/';
  return out;
}

}  // namespace

RequestTarget SanitizeRequestTarget(std::string_view path, std::string_view query, bool sanitize_path) {
  RequestTarget t;
  if (HasControlByte(path) || HasControlByte(query)) {
    t.refusal = TargetRefusal::kMalformed;
    return t;
  }
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && (i + 2 >= path.size() || HexValue(path[i + 1]) < 0 || HexValue(path[i + 2]) < 0)) {
      t.refusal = TargetRefusal::kMalformed;
      return t;
    }
  }
  if (path.find('#') != std::string_view::npos) {
    t.refusal = TargetRefusal::kFragment;
    return t;
  }
  t.query.assign(query);
  std::replace(t.query.begin(), t.query.end(), ';', '&');
  if (path.empty() || path.front() != '/') {
    t.path.assign(path);
    return t;
  }
  // Go's URL: Path is the decoded path, RawPath the received one unless it is Path's escaping.
  const std::string decoded = Unescape(path);
  std::string escaped = mw::EscapePath(decoded);
  if (escaped != path) {
    std::string normalized = Normalize(path);
    if (mw::ValidEncodedPath(normalized)) escaped = std::move(normalized);
  }
  t.path = sanitize_path ? Clean(escaped) : std::move(escaped);
  return t;
}

}  // namespace paddock::edge
