#include "edge/internal/middleware_util.h"

#include "edge/dynamic.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <re2/re2.h>

#include "common/encoding.h"

namespace paddock::edge::mw {
namespace {

bool IsTokenByte(unsigned char c) {
  if (std::isalnum(c)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// Go's strconv.Quote for the short ASCII strings of error messages.
std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out + "\"";
}

size_t Utf8Width(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 1;
  }
  return n;
}

bool IsNameByte(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Go's regexp.extract: a group reference after '$' ("1", "{1}", "name", "{name}").
struct GroupRef {
  std::string name;
  int number = -1;
  size_t length = 0;  // bytes of the template consumed
};
std::optional<GroupRef> ExtractGroupRef(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool brace = s[0] == '{';
  size_t start = brace ? 1 : 0;
  size_t i = start;
  while (i < s.size() && IsNameByte(s[i])) ++i;
  if (i == start) return std::nullopt;
  GroupRef ref;
  ref.name = std::string(s.substr(start, i - start));
  if (brace) {
    if (i >= s.size() || s[i] != '}') return std::nullopt;
    ++i;
  }
  ref.length = i;
  int64_t num = 0;
  for (char c : ref.name) {
    if (c < '0' || c > '9' || num >= 100000000) {
      num = -1;
      break;
    }
    num = num * 10 + (c - '0');
  }
  if (ref.name[0] == '0' && ref.name.size() > 1) num = -1;
  ref.number = static_cast<int>(num);
  return ref;
}

// Go's Regexp.expand for one match.
void Expand(std::string& out, std::string_view templ, const re2::RE2& re, const std::vector<re2::StringPiece>& groups) {
  while (!templ.empty()) {
    size_t dollar = templ.find('$');
    if (dollar == std::string_view::npos) break;
    out.append(templ.substr(0, dollar));
    templ.remove_prefix(dollar + 1);
    if (!templ.empty() && templ[0] == '$') {
      out += '$';
      templ.remove_prefix(1);
      continue;
    }
    std::optional<GroupRef> ref = ExtractGroupRef(templ);
    if (!ref) {
      out += '$';
      continue;
    }
    templ.remove_prefix(ref->length);
    int index = ref->number;
    if (index < 0) {
      const auto& names = re.NamedCapturingGroups();
      auto it = names.find(ref->name);
      if (it != names.end()) index = it->second;
    }
    if (index >= 0 && static_cast<size_t>(index) < groups.size() && groups[index].data() != nullptr) {
      out.append(groups[index].data(), groups[index].size());
    }
  }
  out.append(templ);
}

std::string FormatIpv6(const std::array<uint8_t, 16>& b) {
  bool mapped = std::all_of(b.begin(), b.begin() + 10, [](uint8_t x) { return x == 0; }) && b[10] == 0xff && b[11] == 0xff;
  if (mapped) return fmt::format("::ffff:{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
  std::array<int, 8> words{};
  for (int i = 0; i < 8; ++i) words[i] = (b[2 * i] << 8) | b[2 * i + 1];
  int best_start = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (words[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && words[j] == 0) ++j;
    if (j - i > best_len) {
      best_start = i;
      best_len = j - i;
    }
    i = j;
  }
  if (best_len < 2) best_start = -1;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == best_start) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    out += fmt::format("{:x}", words[i]);
  }
  return out;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, at - start));
    start = at + 1;
  }
}

// Go's time.ParseDuration (edge/dynamic's, the one parser of Go durations).
std::optional<std::chrono::nanoseconds> ParseGoDurationText(std::string_view s) {
  auto d = ParseSignedGoDuration(s);
  if (!d.ok()) return std::nullopt;
  return *d;
}

}  // namespace

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string GoIpString(std::span<const uint8_t> bytes) {
  if (bytes.size() == 4) return fmt::format("{}.{}.{}.{}", bytes[0], bytes[1], bytes[2], bytes[3]);
  if (bytes.size() != 16) return "?" + HexEncode({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
  std::array<uint8_t, 16> b{};
  std::copy(bytes.begin(), bytes.end(), b.begin());
  const bool mapped = std::all_of(b.begin(), b.begin() + 10, [](uint8_t x) { return x == 0; }) && b[10] == 0xff &&
                      b[11] == 0xff;
  if (mapped) return fmt::format("{}.{}.{}.{}", b[12], b[13], b[14], b[15]);  // Go's To4() form
  return FormatIpv6(b);
}

std::string QueryEscape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Go's url.shouldEscape(c, encodePath).
bool ShouldEscapeInPath(unsigned char c) {
  if (std::isalnum(c)) return false;
  switch (c) {
    case '-': case '_': case '.': case '~':
    case '$': case '&': case '+': case ',': case '/': case ':': case ';': case '=': case '@':
      return false;
    default:
      return true;
  }
}

// Go's url.validEncoded(s, encodePath).
bool ValidEncodedPath(std::string_view s) {
  for (unsigned char c : s) {
    switch (c) {
      case '!': case '$': case '&': case '\'': case '(': case ')': case '*': case '+': case ',':
      case ';': case '=': case ':': case '@': case '[': case ']': case '%':
        break;
      default:
        if (ShouldEscapeInPath(c)) return false;
    }
  }
  return true;
}

// Go's url.escape(s, encodePath).
std::string EscapePath(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (ShouldEscapeInPath(c)) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}


// ---- Headers ----

std::string CanonicalHeaderKey(std::string_view name) {
  for (unsigned char c : name) {
    if (!IsTokenByte(c)) return std::string(name);
  }
  std::string out(name);
  bool upper = true;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    else if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    upper = c == '-';
  }
  return out;
}

bool HeaderNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool TokenListHas(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (HeaderNameEquals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view GetHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (HeaderNameEquals(n, name)) return v;
  }
  return {};
}

void DelHeader(HeaderList& headers, std::string_view name) {
  std::erase_if(headers, [&](const auto& h) { return HeaderNameEquals(h.first, name); });
}

void AddHeader(HeaderList& headers, std::string_view name, std::string value) {
  headers.emplace_back(CanonicalHeaderKey(name), std::move(value));
}

void SetHeader(HeaderList& headers, std::string_view name, std::string value) {
  DelHeader(headers, name);
  AddHeader(headers, name, std::move(value));
}

// ---- Answers ----

std::string_view StatusText(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 102: return "Processing";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 207: return "Multi-Status";
    case 208: return "Already Reported";
    case 226: return "IM Used";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 305: return "Use Proxy";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Request Entity Too Large";
    case 414: return "Request URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Requested Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 418: return "I'm a teapot";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Entity";
    case 423: return "Locked";
    case 424: return "Failed Dependency";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 506: return "Variant Also Negotiates";
    case 507: return "Insufficient Storage";
    case 508: return "Loop Detected";
    case 510: return "Not Extended";
    case 511: return "Network Authentication Required";
    default: return "";
  }
}

Answer TextAnswer(int status, std::string body) {
  Answer a;
  a.status = status;
  if (!body.empty()) a.headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  a.body = std::move(body);
  return a;
}

Answer HttpError(int status, std::string_view message) {
  Answer a;
  a.status = status;
  a.headers = {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}};
  a.body = std::string(message) + "\n";
  return a;
}

// ---- Paths ----

std::optional<std::string> PathUnescape(std::string_view s, std::string* error) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '%') {
      out += s[i++];
      continue;
    }
    if (i + 2 >= s.size() || !IsHex(s[i + 1]) || !IsHex(s[i + 2])) {
      if (error != nullptr) *error = "invalid URL escape " + GoQuote(s.substr(i, 3));
      return std::nullopt;
    }
    out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
    i += 3;
  }
  return out;
}

GoPath GoPath::FromEscaped(std::string_view escaped) {
  GoPath p;
  std::optional<std::string> decoded = PathUnescape(escaped, nullptr);
  p.path = decoded ? std::move(*decoded) : std::string(escaped);
  if (EscapePath(p.path) != escaped) p.raw_path = std::string(escaped);
  return p;
}

std::string GoPath::Escaped() const {
  if (!raw_path.empty() && ValidEncodedPath(raw_path)) {
    std::optional<std::string> decoded = PathUnescape(raw_path, nullptr);
    if (decoded && *decoded == path) return raw_path;
  }
  if (path == "*") return "*";
  return EscapePath(path);
}

std::string CleanPath(std::string_view path) {
  if (path.empty()) return ".";
  const bool rooted = path[0] == '/';
  const size_t n = path.size();
  std::string out;
  size_t r = 0, dotdot = 0;
  if (rooted) {
    out += '/';
    r = dotdot = 1;
  }
  while (r < n) {
    if (path[r] == '/') {
      ++r;
    } else if (path[r] == '.' && (r + 1 == n || path[r + 1] == '/')) {
      ++r;
    } else if (path[r] == '.' && path[r + 1] == '.' && (r + 2 == n || path[r + 2] == '/')) {
      r += 2;
      if (out.size() > dotdot) {
        out.pop_back();
        while (out.size() > dotdot && out.back() != '/') out.pop_back();
      } else if (!rooted) {
        if (!out.empty()) out += '/';
        out += "..";
        dotdot = out.size();
      }
    } else {
      if ((rooted && out.size() != 1) || (!rooted && !out.empty())) out += '/';
      for (; r < n && path[r] != '/'; ++r) out += path[r];
    }
  }
  if (out.empty()) return ".";
  return out;
}

bool JoinPathKeeps(const GoPath& p) {
  if (p.path.empty()) return true;
  const std::string escaped = p.Escaped();
  std::string joined;
  if (escaped.empty() || escaped[0] != '/') {
    joined = CleanPath("/" + escaped).substr(1);
  } else {
    joined = CleanPath(escaped);
  }
  if (!escaped.empty() && escaped.back() == '/' && (joined.empty() || joined.back() != '/')) joined += '/';
  std::optional<std::string> decoded = PathUnescape(joined, nullptr);
  if (!decoded) return true;  // Go's setPath fails and JoinPath keeps the path
  return *decoded == p.path;
}

std::string RequestUri(const Exchange& exchange) {
  std::string uri = exchange.path.empty() ? "/" : exchange.path;
  if (!exchange.raw_query.empty()) uri += "?" + exchange.raw_query;
  return uri;
}

// ---- Regular expressions ----

StatusOr<std::shared_ptr<const re2::RE2>> CompileRegex(std::string_view pattern) {
  if (pattern.size() > kMaxRegexLength) {
    return InvalidArgument(fmt::format("regular expression is longer than {} bytes", kMaxRegexLength));
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kRegexMaxMemory);
  auto re = std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    return InvalidArgument(fmt::format("error parsing regexp: {}: `{}`", re->error(), pattern));
  }
  return re;
}

bool RegexMatches(const re2::RE2& re, std::string_view text) {
  return re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), re2::RE2::UNANCHORED, nullptr, 0);
}

std::optional<std::string_view> RegexFind(const re2::RE2& re, std::string_view text) {
  re2::StringPiece m;
  if (!re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), re2::RE2::UNANCHORED, &m, 1)) {
    return std::nullopt;
  }
  return std::string_view(m.data() == nullptr ? text.data() : m.data(), m.size());
}

std::string RegexReplaceAll(const re2::RE2& re, std::string_view text, std::string_view replacement) {
  static constexpr char kEmpty[] = "";
  if (text.data() == nullptr) text = std::string_view(kEmpty, 0);
  const re2::StringPiece subject(text.data(), text.size());
  std::vector<re2::StringPiece> groups(static_cast<size_t>(re.NumberOfCapturingGroups()) + 1);
  std::string out;
  size_t last_end = 0;
  size_t search = 0;
  while (search <= text.size()) {
    if (!re.Match(subject, search, text.size(), re2::RE2::UNANCHORED, groups.data(), static_cast<int>(groups.size()))) {
      break;
    }
    const size_t begin = static_cast<size_t>(groups[0].data() - text.data());
    const size_t end = begin + groups[0].size();
    out.append(text.substr(last_end, begin - last_end));
    // Go skips an empty match right after the previous match.
    if (end > last_end || begin == 0) Expand(out, replacement, re, groups);
    last_end = end;
    const size_t width = search < text.size() ? Utf8Width(text, search) : 0;
    if (search + width > end) {
      search += width;
    } else if (search + 1 > end) {
      ++search;
    } else {
      search = end;
    }
  }
  out.append(text.substr(last_end));
  return out;
}

// ---- Durations ----

StatusOr<std::chrono::nanoseconds> ParseDuration(const boost::json::value& value) {
  if (value.is_int64()) return std::chrono::seconds(value.as_int64());
  if (value.is_uint64() && value.as_uint64() <= uint64_t{std::numeric_limits<int64_t>::max()}) {
    return std::chrono::seconds(static_cast<int64_t>(value.as_uint64()));
  }
  if (value.is_double() && std::isfinite(value.as_double()) && std::abs(value.as_double()) < 9e9) {
    return std::chrono::seconds(static_cast<int64_t>(value.as_double()));  // Go truncates
  }
  if (value.is_string()) {
    std::string_view text = value.as_string();
    int64_t seconds = 0;
    bool digits = !text.empty();
    size_t start = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
    if (start == text.size()) digits = false;
    for (size_t i = start; i < text.size() && digits; ++i) {
      if (text[i] < '0' || text[i] > '9' || seconds > std::numeric_limits<int64_t>::max() / 10 - 10) {
        digits = false;
      } else {
        seconds = seconds * 10 + (text[i] - '0');
      }
    }
    if (digits) return std::chrono::seconds(text[0] == '-' ? -seconds : seconds);
    if (std::optional<std::chrono::nanoseconds> d = ParseGoDurationText(text)) return *d;
    return InvalidArgument(fmt::format("time: invalid duration {}", GoQuote(text)));
  }
  return InvalidArgument("want a duration (\"10s\", \"100ms\") or a number of seconds");
}

std::string GoDurationString(std::chrono::nanoseconds d) { return FormatGoDuration(d); }

// ---- Options ----

Options::Options(std::string path, const boost::json::value& value, std::initializer_list<std::string_view> known)
    : Options(std::move(path), value, known, std::make_shared<Status>()) {}

Options::Options(std::string path, const boost::json::value& value, std::initializer_list<std::string_view> known,
                 std::shared_ptr<Status> status)
    : path_(std::move(path)), status_(std::move(status)) {
  if (!value.is_object()) {
    Fail("want an object");
    return;
  }
  object_ = &value.as_object();
  for (const auto& field : *object_) {
    if (std::find(known.begin(), known.end(), std::string_view(field.key())) == known.end()) {
      Fail(fmt::format("unknown field {}", std::string_view(field.key())));
    }
  }
}

void Options::Fail(std::string_view message) {
  if (status_->ok()) *status_ = InvalidArgument(fmt::format("{}: {}", path_, message));
}

void Options::WrongType(std::string_view key, std::string_view want) {
  Fail(fmt::format("{}: want {}", key, want));
}

const boost::json::value* Options::Find(std::string_view key) const {
  if (object_ == nullptr || !status_->ok()) return nullptr;
  const boost::json::value* v = object_->if_contains(key);
  if (v == nullptr || v->is_null()) return nullptr;
  return v;
}

bool Options::Has(std::string_view key) const { return Find(key) != nullptr; }

std::string Options::String(std::string_view key) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return {};
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64()) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  WrongType(key, "a string");
  return {};
}

bool Options::Bool(std::string_view key) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return false;
  if (v->is_bool()) return v->as_bool();
  WrongType(key, "a boolean");
  return false;
}

std::optional<int64_t> Options::Int(std::string_view key) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= uint64_t{std::numeric_limits<int64_t>::max()}) {
    return static_cast<int64_t>(v->as_uint64());
  }
  WrongType(key, "an integer");
  return std::nullopt;
}

std::vector<std::string> Options::Strings(std::string_view key) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return {};
  std::vector<std::string> out;
  if (v->is_array()) {
    for (const auto& item : v->as_array()) {
      if (!item.is_string()) {
        WrongType(key, "a list of strings");
        return {};
      }
      out.emplace_back(item.as_string());
    }
    return out;
  }
  WrongType(key, "a list of strings");
  return {};
}

std::vector<std::pair<std::string, std::string>> Options::StringMap(std::string_view key) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return {};
  if (!v->is_object()) {
    WrongType(key, "a map of strings");
    return {};
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& field : v->as_object()) {
    const boost::json::value& item = field.value();
    if (item.is_string()) {
      out.emplace_back(std::string(field.key()), std::string(item.as_string()));
    } else if (item.is_int64() || item.is_uint64()) {  // as String(): an integer in decimal
      out.emplace_back(std::string(field.key()),
                       item.is_int64() ? std::to_string(item.as_int64()) : std::to_string(item.as_uint64()));
    } else {
      WrongType(key, "a map of strings");
      return {};
    }
  }
  return out;
}

std::optional<std::chrono::nanoseconds> Options::Duration(std::string_view key) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return std::nullopt;
  StatusOr<std::chrono::nanoseconds> d = ParseDuration(*v);
  if (!d.ok()) {
    Fail(fmt::format("{}: {}", key, d.status().message()));
    return std::nullopt;
  }
  return *d;
}

std::optional<Options> Options::Object(std::string_view key, std::initializer_list<std::string_view> known) {
  const boost::json::value* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) {
    WrongType(key, "an object");
    return std::nullopt;
  }
  return Options(fmt::format("{}.{}", path_, key), *v, known, status_);
}

// ---- Addresses ----

bool IpAddress::Is4() const {
  return std::all_of(bytes.begin(), bytes.begin() + 10, [](uint8_t b) { return b == 0; }) && bytes[10] == 0xff &&
         bytes[11] == 0xff;
}

std::optional<IpAddress> ParseIp(std::string_view text, bool allow_zone) {
  if (text.empty() || text.find('\0') != std::string_view::npos) return std::nullopt;
  std::string s(text);
  IpAddress ip;
  if (s.find(':') != std::string::npos) {
    size_t pct = s.find('%');
    if (pct != std::string::npos) {
      if (!allow_zone || pct + 1 == s.size()) return std::nullopt;
      s.resize(pct);
    }
    in6_addr a{};
    if (inet_pton(AF_INET6, s.c_str(), &a) != 1) return std::nullopt;
    std::memcpy(ip.bytes.data(), &a, 16);
    return ip;
  }
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  ip.bytes[10] = ip.bytes[11] = 0xff;
  std::memcpy(ip.bytes.data() + 12, &a, 4);
  return ip;
}

std::optional<std::pair<std::string_view, std::string_view>> SplitHostPort(std::string_view hostport) {
  const size_t i = hostport.rfind(':');
  if (i == std::string_view::npos) return std::nullopt;
  std::string_view host;
  size_t j = 0, k = 0;
  if (hostport[0] == '[') {
    const size_t end = hostport.find(']');
    if (end == std::string_view::npos || end + 1 != i) return std::nullopt;
    host = hostport.substr(1, end - 1);
    j = 1;
    k = end + 1;
  } else {
    host = hostport.substr(0, i);
    if (host.find(':') != std::string_view::npos) return std::nullopt;
  }
  if (hostport.find('[', j) != std::string_view::npos) return std::nullopt;
  if (hostport.find(']', k) != std::string_view::npos) return std::nullopt;
  return std::make_pair(host, hostport.substr(i + 1));
}

std::string_view HostWithoutPort(std::string_view addr) {
  if (auto split = SplitHostPort(addr)) return split->first;
  return addr;
}

StatusOr<IpChecker> IpChecker::Make(const std::vector<std::string>& ranges) {
  if (ranges.empty()) return InvalidArgument("no trusted IPs provided");
  IpChecker checker;
  for (const std::string& entry : ranges) {
    Net net;
    if (std::optional<IpAddress> ip = ParseIp(entry, false)) {
      net.v4 = ip->Is4();
      net.ip = ip->bytes;
      net.mask.fill(0xff);
      checker.nets_.push_back(net);
      continue;
    }
    const Status bad = InvalidArgument(fmt::format("invalid CIDR address: {}", entry));
    size_t slash = entry.find('/');
    if (slash == std::string::npos) return bad;
    std::string_view addr_text = std::string_view(entry).substr(0, slash);
    std::string_view bits_text = std::string_view(entry).substr(slash + 1);
    std::optional<IpAddress> ip = ParseIp(addr_text, false);
    if (!ip || bits_text.empty() || bits_text.size() > 6) return bad;
    int bits = 0;
    for (char c : bits_text) {
      if (c < '0' || c > '9') return bad;
      bits = bits * 10 + (c - '0');
    }
    const bool text_v4 = addr_text.find(':') == std::string_view::npos;
    if (bits > (text_v4 ? 32 : 128)) return bad;
    const int mask_bits = text_v4 ? bits + 96 : bits;
    for (int i = 0; i < 16; ++i) {
      int left = std::clamp(mask_bits - 8 * i, 0, 8);
      net.mask[i] = static_cast<uint8_t>(0xff00 >> left);
      net.ip[i] = ip->bytes[i] & net.mask[i];
    }
    IpAddress masked{net.ip};
    net.v4 = masked.Is4();
    checker.nets_.push_back(net);
  }
  return checker;
}

bool IpChecker::Contains(std::string_view address) const {
  std::optional<IpAddress> ip = ParseIp(address, true);
  if (!ip) return false;
  const bool v4 = ip->Is4();
  for (const Net& net : nets_) {
    if (net.v4 != v4) continue;
    bool in = true;
    for (int i = v4 ? 12 : 0; i < 16 && in; ++i) in = (ip->bytes[i] & net.mask[i]) == net.ip[i];
    if (in) return true;
  }
  return false;
}

StatusOr<IpStrategy> IpStrategy::Read(std::optional<Options> config) {
  IpStrategy s;
  if (!config) return s;
  const int64_t depth = config->Int("depth").value_or(0);
  const std::vector<std::string> excluded = config->Strings("excludedIPs");
  const std::optional<int64_t> subnet = config->Int("ipv6Subnet");
  RETURN_IF_ERROR(config->status());
  auto check_subnet = [&]() -> Status {
    if (subnet && (*subnet <= 0 || *subnet > 128)) {
      return InvalidArgument(fmt::format(
          "invalid IPv6 subnet {} value, should be greater to 0 and lower or equal to 128", *subnet));
    }
    if (subnet) s.ipv6_subnet_ = static_cast<int>(*subnet);
    return OkStatus();
  };
  if (depth > 0) {
    s.depth_ = static_cast<int>(std::min<int64_t>(depth, std::numeric_limits<int>::max()));
    RETURN_IF_ERROR(check_subnet());
    return s;
  }
  if (!excluded.empty()) {
    ASSIGN_OR_RETURN(IpChecker checker, IpChecker::Make(excluded));
    s.excluded_ = std::move(checker);
    return s;
  }
  RETURN_IF_ERROR(check_subnet());
  return s;
}

std::string IpStrategy::ClientIp(const Exchange& exchange) const {
  std::string ip;
  if (depth_ > 0) {
    std::vector<std::string_view> xffs = Split(GetHeader(exchange.headers, "X-Forwarded-For"), ',');
    if (xffs.size() < static_cast<size_t>(depth_)) return "";
    ip = std::string(TrimSpace(xffs[xffs.size() - static_cast<size_t>(depth_)]));
  } else if (excluded_) {
    std::vector<std::string_view> xffs = Split(GetHeader(exchange.headers, "X-Forwarded-For"), ',');
    for (auto it = xffs.rbegin(); it != xffs.rend(); ++it) {
      std::string_view candidate = TrimSpace(*it);
      if (candidate.empty()) continue;
      if (!excluded_->Contains(candidate)) return std::string(candidate);
    }
    return "";
  } else {
    ip = std::string(HostWithoutPort(exchange.client_ip));
  }
  // Traefik's ipv6Subnet: an IPv6 address becomes the first address of its subnet.
  if (ipv6_subnet_ && ip.find(':') != std::string::npos) {
    if (std::optional<IpAddress> addr = ParseIp(ip, true)) {
      for (int i = 0; i < 16; ++i) {
        int left = std::clamp(*ipv6_subnet_ - 8 * i, 0, 8);
        addr->bytes[i] &= static_cast<uint8_t>(0xff00 >> left);
      }
      return FormatIpv6(addr->bytes);
    }
  }
  return ip;
}

}  // namespace paddock::edge::mw
