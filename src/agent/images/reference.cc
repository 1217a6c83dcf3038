#include "agent/images/reference.h"

#include <fmt/format.h>

namespace paddock::agent::images {
namespace {

constexpr size_t kMaxNameLength = 255;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
bool IsPathComponent(std::string_view s) {
  size_t i = 0;
  auto run = [&] {
    size_t start = i;
    while (i < s.size() && IsLowerAlnum(s[i])) ++i;
    return i > start;
  };
  if (!run()) return false;
  while (i < s.size()) {
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      ++i;
      if (i < s.size() && s[i] == '_') ++i;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
    if (!run()) return false;
  }
  return true;
}

// [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])? ('.' ...)* (':' [0-9]+)?
bool IsDomain(std::string_view s) {
  size_t colon = s.find(':');
  std::string_view host = s.substr(0, colon);
  if (colon != std::string_view::npos) {
    std::string_view port = s.substr(colon + 1);
    if (port.empty()) return false;
    for (char c : port)
      if (c < '0' || c > '9') return false;
  }
  if (host.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = host.find('.', start);
    std::string_view label = host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsAlnum(label.front()) || !IsAlnum(label.back())) return false;
    for (char c : label)
      if (!IsAlnum(c) && c != '-') return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool HasUpper(std::string_view s) {
  for (char c : s)
    if (c >= 'A' && c <= 'Z') return true;
  return false;
}

}  // namespace

bool IsValidTag(std::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  auto word = [](char c) { return IsAlnum(c) || c == '_'; };
  if (!word(t[0])) return false;
  for (char c : t)
    if (!word(c) && c != '.' && c != '-') return false;
  return true;
}

std::string Reference::String() const {
  std::string out = Repository();
  if (!tag.empty()) out += ":" + tag;
  if (digest) out += "@" + digest->str();
  return out;
}

std::string Reference::Familiar() const {
  std::string out = String();
  constexpr std::string_view kLibrary = "docker.io/library/", kHub = "docker.io/";
  if (out.starts_with(kLibrary) && path.find('/', 8) == std::string::npos) return out.substr(kLibrary.size());
  if (out.starts_with(kHub)) return out.substr(kHub.size());
  return out;
}

StatusOr<Reference> ParseReference(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("invalid image reference '{}': {}", text, why));
  };
  if (text.empty()) return bad("empty");
  Reference r;
  std::string_view name = text;
  if (size_t at = name.rfind('@'); at != std::string_view::npos) {
    auto d = Digest::Parse(name.substr(at + 1));
    if (!d.ok()) return bad("the digest must be sha256:<64 lowercase hex digits>");
    r.digest = *d;
    name = name.substr(0, at);
  }
  size_t last_slash = name.rfind('/');
  size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    r.tag = std::string(name.substr(colon + 1));
    if (!IsValidTag(r.tag)) return bad("the tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
    name = name.substr(0, colon);
  }
  if (name.empty()) return bad("no repository name");
  if (name.size() > kMaxNameLength) return bad("the repository name is longer than 255 characters");

  std::string_view remainder = name;
  size_t slash = name.find('/');
  std::string_view first = name.substr(0, slash);
  if (slash != std::string_view::npos &&
      (first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos ||
       first == "localhost" || HasUpper(first))) {
    if (!IsDomain(first)) return bad(fmt::format("'{}' is not a registry host[:port]", first));
    r.domain = std::string(first);
    remainder = name.substr(slash + 1);
  } else {
    r.domain = "docker.io";
  }
  if (r.domain == "index.docker.io") r.domain = "docker.io";
  if (HasUpper(remainder)) return bad("repository names must be lowercase");
  size_t start = 0;
  while (true) {
    size_t next = remainder.find('/', start);
    std::string_view component = remainder.substr(start, next == std::string_view::npos ? next : next - start);
    if (!IsPathComponent(component))
      return bad(fmt::format("'{}' is not a valid path component (lowercase letters, digits, and . _ __ - between them)",
                             component));
    if (next == std::string_view::npos) break;
    start = next + 1;
  }
  r.path = std::string(remainder);
  if (r.domain == "docker.io" && r.path.find('/') == std::string::npos) r.path = "library/" + r.path;
  if (r.tag.empty() && !r.digest) r.tag = "latest";
  return r;
}

}  // namespace paddock::agent::images
