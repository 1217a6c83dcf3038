// ParsePolicy: JSON policy document -> internal::CompiledPolicy, with AWS's MalformedPolicyDocument
// texts. Sources for the texts (AWS answers seen by users):
//   "Policy document should not specify a principal."  hashicorp/terraform#13449
//   "Policy statement must contain actions."            aws/aws-cdk#7615
//   "Policy statement must contain resources."          trussworks/terraform-aws-s3-anti-virus#22
//   "Resource  must be in ARN format or \"*\"."          cattle-ops/terraform-aws-gitlab-runner#1257
//   "Actions/Condition can contain only one colon."     garnaat/kappa#111
//   "Missing required field Principal", "Has prohibited field Principal" (S3/IAM console texts,
//   spantaleev/matrix-docker-ansible-deploy#1869, hashicorp/terraform#4730)
//   "Has prohibited field Resource" (CreateRole; many users' reports, e.g. the SAM CLI's error hints)
//   "This policy contains invalid Json", "Could not parse the policy: Statement is empty!",
//   "Missing required field Principal cannot be empty!", "AssumeRole policy may only specify STS
//   AssumeRole actions.", "AssumeRole policy must not contain resources." (NotResource),
//   "Allow with NotPrincipal is not allowed." - CreateRole's answers as public IAM emulators'
//   test tables record them (not re-verified against AWS here).
#include "iam/policy/policy.h"

#include <arpa/inet.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <charconv>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "iam/policy/evaluator.h"
#include "iam/policy/internal/compiled.h"

namespace paddock::iam::policy {
namespace internal {

namespace {

inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

}  // namespace

bool GlobMatch(std::string_view p, std::string_view s, bool fold_case) {
  // Iterative wildcard matching with one backtrack point: linear for the patterns policies use.
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == kStar) {
      if (pi + 1 == p.size()) return true;  // a trailing '*' takes the rest
      star = pi++;
      mark = si;
    } else if (pi < p.size() && (p[pi] == kQuestion || p[pi] == s[si] || (fold_case && p[pi] == Lower(s[si])))) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == kStar) ++pi;
  return pi == p.size();
}

// Whether the first n bytes of a and b are equal. Most literal prefixes of a policy set differ
// from the request within their first 8 bytes ("ecs:Upda" against "ecs:Desc", another service,
// another ARN partition): one 8-byte compare decides those without a call to memcmp, which
// dominated the authorizer's profile.
inline bool PrefixEquals(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    uint64_t x = 0, y = 0;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    return x == y && std::memcmp(a + 8, b + 8, n - 8) == 0;
  }
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

void Template::Finish() {
  prefix = 0;
  while (prefix < text.size() && text[prefix] != kStar && text[prefix] != kQuestion) ++prefix;
  const size_t n = prefix < 8 ? prefix : 8;
  unsigned char mask[8] = {};
  std::memset(mask, 0xff, n);
  head = Head(std::string_view(text).substr(0, n));
  std::memcpy(&head_mask, mask, 8);
}

ActionIndex IndexActions(const std::vector<Template>& actions) {
  ActionIndex index;
  std::map<std::string, std::vector<uint32_t>, std::less<>> by_service;
  for (uint32_t i = 0; i < actions.size(); ++i) {
    const std::string_view literal = std::string_view(actions[i].text).substr(0, actions[i].prefix);
    const size_t colon = literal.find(':');
    if (colon == std::string_view::npos) {
      index.unkeyed.push_back(i);
    } else {
      by_service[std::string(literal.substr(0, colon))].push_back(i);
    }
  }
  for (auto& [service, patterns] : by_service) index.services.push_back({service, std::move(patterns)});
  return index;
}

const ActionIndex::Service* ActionIndex::Find(std::string_view service) const {
  auto it = std::lower_bound(services.begin(), services.end(), service,
                             [](const Service& s, std::string_view name) { return s.name < name; });
  return it != services.end() && it->name == service ? &*it : nullptr;
}

bool Template::Matches(std::string_view s, bool fold_case) const {
  if (s.size() < prefix) return false;
  if (fold_case) {
    for (size_t i = 0; i < prefix; ++i)
      if (text[i] != Lower(s[i])) return false;
  } else if (!PrefixEquals(text.data(), s.data(), prefix)) {
    return false;
  }
  if (prefix == text.size()) return s.size() == prefix;
  return GlobMatch(std::string_view(text).substr(prefix), s.substr(prefix), fold_case);
}

std::optional<std::string> Template::Resolve(const RequestContext& ctx, bool fold_case) const {
  if (!has_variables) return text;
  std::string out;
  for (const Part& part : parts) {
    if (!part.is_variable) {
      out += part.text;
      continue;
    }
    const std::vector<std::string>* v = ctx.FindLower(part.text);
    std::string_view value;
    // A multivalued key cannot be a variable (AWS: only single-valued keys substitute).
    if (v != nullptr && v->size() == 1) {
      value = v->front();
    } else if (part.default_value) {
      value = *part.default_value;
    } else {
      return std::nullopt;
    }
    if (value.find(kStar) != std::string_view::npos || value.find(kQuestion) != std::string_view::npos)
      return std::nullopt;
    if (fold_case) {
      for (char c : value) out += Lower(c);
    } else {
      out += value;
    }
  }
  return out;
}

std::optional<Cidr> ParseIp(std::string_view s) {
  if (s.empty() || s.size() > 45) return std::nullopt;
  char buf[64];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  Cidr c;
  if (inet_pton(AF_INET, buf, c.bytes.data()) == 1) {
    c.prefix = 32;
    return c;
  }
  if (inet_pton(AF_INET6, buf, c.bytes.data()) == 1) {
    c.v6 = true;
    c.prefix = 128;
    return c;
  }
  return std::nullopt;
}

std::optional<Cidr> ParseCidr(std::string_view s) {
  size_t slash = s.find('/');
  std::optional<Cidr> c = ParseIp(s.substr(0, slash));
  if (!c || slash == std::string_view::npos) return c;
  std::string_view len = s.substr(slash + 1);
  int prefix = -1;
  auto [ptr, ec] = std::from_chars(len.data(), len.data() + len.size(), prefix);
  if (ec != std::errc() || ptr != len.data() + len.size() || len.empty() || prefix < 0 ||
      prefix > (c->v6 ? 128 : 32))
    return std::nullopt;
  c->prefix = prefix;
  return c;
}

bool CidrContains(const Cidr& net, const Cidr& ip) {
  if (net.v6 != ip.v6) return false;
  int full = net.prefix / 8, rest = net.prefix % 8;
  if (std::memcmp(net.bytes.data(), ip.bytes.data(), full) != 0) return false;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (net.bytes[full] & mask) == (ip.bytes[full] & mask);
}

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Reads exactly `n` digits at s[i...].
bool Digits(std::string_view s, size_t& i, size_t n, int& out) {
  if (i + n > s.size()) return false;
  out = 0;
  for (size_t k = 0; k < n; ++k) {
    char c = s[i + k];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  i += n;
  return true;
}

}  // namespace

std::optional<int64_t> ParseDate(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const bool all_digits = std::all_of(s.begin() + (s[0] == '-' ? 1 : 0), s.end(),
                                      [](char c) { return c >= '0' && c <= '9'; });
  if (all_digits && s.size() > (s[0] == '-' ? 1u : 0u) && s.size() < 16 && s.find('-', 1) == std::string_view::npos) {
    int64_t secs = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), secs);
    if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return secs * 1000;
  }
  size_t i = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(s, i, 4, year) || i >= s.size() || s[i++] != '-' || !Digits(s, i, 2, month) || i >= s.size() ||
      s[i++] != '-' || !Digits(s, i, 2, day))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31) return std::nullopt;
  int64_t ms = 0;
  int64_t offset_min = 0;
  if (i < s.size()) {
    if (s[i] != 'T' && s[i] != 't') return std::nullopt;
    ++i;
    if (!Digits(s, i, 2, hour) || i >= s.size() || s[i++] != ':' || !Digits(s, i, 2, minute)) return std::nullopt;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!Digits(s, i, 2, second)) return std::nullopt;
      if (i < s.size() && s[i] == '.') {
        ++i;
        int64_t scale = 100;
        size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          ms += (s[i] - '0') * scale;
          scale /= 10;
          ++i;
        }
        if (i == start) return std::nullopt;
      }
    }
    if (hour > 23 || minute > 59 || second > 60) return std::nullopt;
    if (i < s.size()) {
      if (s[i] == 'Z' || s[i] == 'z') {
        ++i;
      } else if (s[i] == '+' || s[i] == '-') {
        const int sign = s[i++] == '-' ? -1 : 1;
        int oh = 0, om = 0;
        if (!Digits(s, i, 2, oh)) return std::nullopt;
        if (i < s.size() && s[i] == ':') ++i;
        if (!Digits(s, i, 2, om) || oh > 23 || om > 59) return std::nullopt;
        offset_min = sign * (oh * 60 + om);
      } else {
        return std::nullopt;
      }
    }
    if (i != s.size()) return std::nullopt;
  }
  const int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_min * 60;
  return secs * 1000 + ms;
}

std::optional<double> ParseNumber(std::string_view s) {
  double d = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return d;
}

}  // namespace internal

namespace {

using namespace internal;
namespace json = boost::json;

Status Malformed(std::string message) { return InvalidArgument(std::move(message), iam::Error::kMalformedPolicyDocument); }
Status SyntaxError() { return Malformed("Syntax errors in policy."); }

inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// AWS's policy grammar admits \t, \n, \r and U+0020..U+00FF; other control characters would
// also collide with the wildcard encoding.
bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 && c != '\t' && c != '\n' && c != '\r';
  });
}

struct TemplateOptions {
  bool wildcards = false;  // '*' and '?' are globs
  bool variables = false;  // "${...}" substitutes (Version 2012-10-17 only)
  bool lower = false;      // fold to lowercase (case-insensitive comparisons)
};

void AppendLiteral(std::string& out, char c, const TemplateOptions& o) {
  if (o.wildcards && c == '*') {
    out += kStar;
  } else if (o.wildcards && c == '?') {
    out += kQuestion;
  } else {
    out += o.lower ? Lower(c) : c;
  }
}

Template Compile(std::string_view s, const TemplateOptions& o) {
  Template t;
  std::string text;
  size_t i = 0;
  while (i < s.size()) {
    if (o.variables && s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      const size_t close = s.find('}', i + 2);
      if (close != std::string_view::npos) {
        std::string_view inner = Trim(s.substr(i + 2, close - i - 2));
        i = close + 1;
        // ${*}, ${?} and ${$} stand for the literal character (AWS: special characters).
        if (inner == "*" || inner == "?" || inner == "$") {
          text += o.lower ? Lower(inner[0]) : inner[0];
          continue;
        }
        Template::Part var;
        var.is_variable = true;
        const size_t comma = inner.find(',');
        if (comma != std::string_view::npos) {
          std::string_view def = Trim(inner.substr(comma + 1));
          if (def.size() >= 2 && def.front() == '\'' && def.back() == '\'') def = def.substr(1, def.size() - 2);
          var.default_value = o.lower ? ToLower(def) : std::string(def);
          inner = Trim(inner.substr(0, comma));
        }
        var.text = ToLower(inner);
        var.written = std::string(inner);
        if (!text.empty()) t.parts.push_back({false, std::move(text), {}, std::nullopt});
        text.clear();
        t.parts.push_back(std::move(var));
        t.has_variables = true;
        continue;
      }
    }
    AppendLiteral(text, s[i], o);
    ++i;
  }
  if (t.has_variables) {
    if (!text.empty()) t.parts.push_back({false, std::move(text), {}, std::nullopt});
  } else {
    t.text = std::move(text);
    t.Finish();
  }
  return t;
}

// A string or an array of strings (Action, Resource, principal lists).
StatusOr<std::vector<std::string>> StringList(const json::value& v) {
  std::vector<std::string> out;
  if (v.is_string()) {
    out.emplace_back(v.get_string());
  } else if (v.is_array()) {
    for (const json::value& e : v.get_array()) {
      if (!e.is_string()) return SyntaxError();
      out.emplace_back(e.get_string());
    }
  } else {
    return SyntaxError();
  }
  for (const std::string& s : out)
    if (HasControl(s)) return SyntaxError();
  return out;
}

// Condition values: strings, numbers and booleans, alone or in an array.
StatusOr<std::vector<std::string>> ConditionValues(const json::value& v) {
  std::vector<std::string> out;
  auto one = [&](const json::value& e) -> bool {
    if (e.is_string()) {
      out.emplace_back(e.get_string());
    } else if (e.is_bool()) {
      out.emplace_back(e.get_bool() ? "true" : "false");
    } else if (e.is_int64()) {
      out.push_back(std::to_string(e.get_int64()));
    } else if (e.is_uint64()) {
      out.push_back(std::to_string(e.get_uint64()));
    } else if (e.is_double()) {
      out.push_back(fmt::format("{}", e.get_double()));
    } else {
      return false;
    }
    return !HasControl(out.back());
  };
  if (v.is_array()) {
    for (const json::value& e : v.get_array())
      if (!one(e)) return SyntaxError();
  } else if (!one(v)) {
    return SyntaxError();
  }
  return out;
}

StatusOr<Template> CompileAction(std::string_view a) {
  if (a != "*") {
    const size_t colons = std::count(a.begin(), a.end(), ':');
    if (colons == 0) return Malformed("Actions/Conditions must be prefaced by a vendor, e.g., iam, sdb, ec2, etc.");
    if (colons > 1) return Malformed("Actions/Condition can contain only one colon.");
  }
  return Compile(a, {.wildcards = true, .variables = false, .lower = true});
}

bool IsAccountId(std::string_view s) {
  return s.size() == 12 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

StatusOr<PrincipalEntry> CompileAwsPrincipal(std::string_view v) {
  PrincipalEntry p;
  if (v == "*") return p;
  if (IsAccountId(v)) return PrincipalEntry{PrincipalEntry::Kind::kAccount, std::string(v)};
  // arn:aws:iam::<account>:root | user/... | role/... ; arn:aws:sts::<account>:assumed-role/...
  std::vector<std::string_view> f;
  size_t start = 0;
  for (int k = 0; k < 5; ++k) {
    size_t colon = v.find(':', start);
    if (colon == std::string_view::npos) break;
    f.push_back(v.substr(start, colon - start));
    start = colon + 1;
  }
  const bool wildcard = v.find_first_of("*?") != std::string_view::npos;
  if (f.size() == 5 && f[0] == "arn" && f[3].empty() && IsAccountId(f[4]) && !wildcard) {
    std::string_view res = v.substr(start);
    if (f[2] == "iam" && res == "root") return PrincipalEntry{PrincipalEntry::Kind::kAccount, std::string(f[4])};
    if ((f[2] == "iam" && (res.starts_with("user/") || res.starts_with("role/"))) ||
        (f[2] == "sts" && res.starts_with("assumed-role/")))
      return PrincipalEntry{PrincipalEntry::Kind::kArn, std::string(v)};
  }
  return Malformed(fmt::format("Invalid principal in policy: \"AWS\":\"{}\"", v));
}

StatusOr<std::vector<PrincipalEntry>> CompilePrincipal(const json::value& v) {
  std::vector<PrincipalEntry> out;
  if (v.is_string()) {
    if (v.get_string() != "*") return SyntaxError();
    out.push_back({});
    return out;
  }
  if (!v.is_object()) return SyntaxError();
  if (v.get_object().empty()) return Malformed("Missing required field Principal cannot be empty!");
  for (const auto& [type, values] : v.get_object()) {
    ASSIGN_OR_RETURN(std::vector<std::string> list, StringList(values));
    for (const std::string& s : list) {
      if (type == "AWS") {
        ASSIGN_OR_RETURN(PrincipalEntry p, CompileAwsPrincipal(s));
        out.push_back(std::move(p));
      } else if (type == "Service") {
        out.push_back({s == "*" ? PrincipalEntry::Kind::kAny : PrincipalEntry::Kind::kService, s});
      } else if (type == "Federated") {
        out.push_back({PrincipalEntry::Kind::kFederated, s});
      } else if (type == "CanonicalUser") {
        out.push_back({PrincipalEntry::Kind::kCanonicalUser, s});
      } else {
        return SyntaxError();
      }
    }
  }
  return out;
}

struct OpName {
  std::string_view name;
  ConditionOp op;
  bool negated;
};
constexpr OpName kOps[] = {
    {"StringEquals", ConditionOp::kStringEquals, false},
    {"StringNotEquals", ConditionOp::kStringEquals, true},
    {"StringEqualsIgnoreCase", ConditionOp::kStringEqualsIgnoreCase, false},
    {"StringNotEqualsIgnoreCase", ConditionOp::kStringEqualsIgnoreCase, true},
    {"StringLike", ConditionOp::kStringLike, false},
    {"StringNotLike", ConditionOp::kStringLike, true},
    {"NumericEquals", ConditionOp::kNumericEquals, false},
    {"NumericNotEquals", ConditionOp::kNumericEquals, true},
    {"NumericLessThan", ConditionOp::kNumericLessThan, false},
    {"NumericLessThanEquals", ConditionOp::kNumericLessThanEquals, false},
    {"NumericGreaterThan", ConditionOp::kNumericGreaterThan, false},
    {"NumericGreaterThanEquals", ConditionOp::kNumericGreaterThanEquals, false},
    {"DateEquals", ConditionOp::kDateEquals, false},
    {"DateNotEquals", ConditionOp::kDateEquals, true},
    {"DateLessThan", ConditionOp::kDateLessThan, false},
    {"DateLessThanEquals", ConditionOp::kDateLessThanEquals, false},
    {"DateGreaterThan", ConditionOp::kDateGreaterThan, false},
    {"DateGreaterThanEquals", ConditionOp::kDateGreaterThanEquals, false},
    {"Bool", ConditionOp::kBool, false},
    {"BinaryEquals", ConditionOp::kBinaryEquals, false},
    {"IpAddress", ConditionOp::kIpAddress, false},
    {"NotIpAddress", ConditionOp::kIpAddress, true},
    {"ArnEquals", ConditionOp::kArnLike, false},
    {"ArnLike", ConditionOp::kArnLike, false},
    {"ArnNotEquals", ConditionOp::kArnLike, true},
    {"ArnNotLike", ConditionOp::kArnLike, true},
    {"Null", ConditionOp::kNull, false},
};

StatusOr<std::vector<Condition>> CompileConditions(const json::value& v, bool variables) {
  if (!v.is_object()) return SyntaxError();
  std::vector<Condition> out;
  for (const auto& [op_key, keys] : v.get_object()) {
    std::string_view name = op_key;
    SetQualifier qualifier = SetQualifier::kNone;
    if (name.starts_with("ForAnyValue:")) {
      qualifier = SetQualifier::kForAnyValue;
      name.remove_prefix(12);
    } else if (name.starts_with("ForAllValues:")) {
      qualifier = SetQualifier::kForAllValues;
      name.remove_prefix(13);
    }
    bool if_exists = false;
    if (name.ends_with("IfExists")) {
      if_exists = true;
      name.remove_suffix(8);
    }
    const OpName* found = nullptr;
    for (const OpName& o : kOps)
      if (o.name == name) found = &o;
    if (found == nullptr || (found->op == ConditionOp::kNull && if_exists)) return SyntaxError();
    if (!keys.is_object() || keys.get_object().empty()) return SyntaxError();
    for (const auto& [key, raw] : keys.get_object()) {
      if (key.empty() || HasControl(key)) return SyntaxError();
      Condition c;
      c.op = found->op;
      c.negated = found->negated;
      c.if_exists = if_exists;
      c.qualifier = qualifier;
      c.key = ToLower(key);
      c.written_key = std::string(key);
      ASSIGN_OR_RETURN(std::vector<std::string> values, ConditionValues(raw));
      for (const std::string& s : values) {
        ConditionValue cv;
        switch (c.op) {
          case ConditionOp::kStringEquals:
          case ConditionOp::kBinaryEquals:
            cv.pattern = Compile(s, {.wildcards = false, .variables = variables && c.op != ConditionOp::kBinaryEquals});
            break;
          case ConditionOp::kStringEqualsIgnoreCase:
            cv.pattern = Compile(s, {.wildcards = false, .variables = variables, .lower = true});
            break;
          case ConditionOp::kStringLike:
          case ConditionOp::kArnLike:
            cv.pattern = Compile(s, {.wildcards = true, .variables = variables});
            break;
          case ConditionOp::kNumericEquals:
          case ConditionOp::kNumericLessThan:
          case ConditionOp::kNumericLessThanEquals:
          case ConditionOp::kNumericGreaterThan:
          case ConditionOp::kNumericGreaterThanEquals:
            cv.number = ParseNumber(s);
            break;
          case ConditionOp::kDateEquals:
          case ConditionOp::kDateLessThan:
          case ConditionOp::kDateLessThanEquals:
          case ConditionOp::kDateGreaterThan:
          case ConditionOp::kDateGreaterThanEquals:
            cv.date_ms = ParseDate(s);
            break;
          case ConditionOp::kBool:
          case ConditionOp::kNull:
            cv.boolean = ToLower(s) == "true";
            break;
          case ConditionOp::kIpAddress:
            cv.cidr = ParseCidr(s);
            break;
        }
        c.values.push_back(std::move(cv));
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

bool IsAlnum(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

StatusOr<Statement> CompileStatement(const json::value& v, DocumentKind kind, bool variables) {
  if (!v.is_object()) return SyntaxError();
  const json::object& o = v.get_object();
  Statement st;
  const json::value* effect = nullptr;
  const json::value* action = nullptr;
  const json::value* resource = nullptr;
  const json::value* principal = nullptr;
  const json::value* condition = nullptr;
  for (const auto& [k, value] : o) {
    auto take = [&](const json::value*& slot) -> bool {
      if (slot != nullptr) return false;  // Action with NotAction, Resource with NotResource, ...
      slot = &value;
      return true;
    };
    bool ok = true;
    if (k == "Sid") {
      if (!value.is_string()) return SyntaxError();
      st.sid = std::string(value.get_string());
    } else if (k == "Effect") {
      ok = take(effect);
    } else if (k == "Action" || k == "NotAction") {
      ok = take(action);
      st.not_action = k == "NotAction";
    } else if (k == "Resource" || k == "NotResource") {
      ok = take(resource);
      st.not_resource = k == "NotResource";
    } else if (k == "Principal" || k == "NotPrincipal") {
      ok = take(principal);
      st.not_principal = k == "NotPrincipal";
    } else if (k == "Condition") {
      ok = take(condition);
    } else {
      return SyntaxError();
    }
    if (!ok) return SyntaxError();
  }
  if (kind != DocumentKind::kResource && !IsAlnum(st.sid))
    return Malformed(
        "Statement IDs (SID) must be alpha-numeric. Check that your input satisfies the regular expression "
        "[0-9A-Za-z]*");
  if (effect == nullptr || !effect->is_string()) return SyntaxError();
  if (effect->get_string() == "Allow") {
    st.allow = true;
  } else if (effect->get_string() == "Deny") {
    st.allow = false;
  } else {
    return SyntaxError();
  }
  if (action == nullptr) return Malformed("Policy statement must contain actions.");
  ASSIGN_OR_RETURN(std::vector<std::string> actions, StringList(*action));
  if (actions.empty()) return Malformed("Policy statement must contain actions.");
  for (const std::string& a : actions) {
    ASSIGN_OR_RETURN(Template compiled, CompileAction(a));
    // A trust policy grants only STS's role actions (AssumeRole*, TagSession, SetSourceIdentity...).
    if (kind == DocumentKind::kTrust && !compiled.text.starts_with("sts:"))
      return Malformed("AssumeRole policy may only specify STS AssumeRole actions.");
    st.actions.push_back(std::move(compiled));
  }
  if (st.actions.size() >= kIndexActionsFrom) st.action_index = IndexActions(st.actions);

  if (principal != nullptr) {
    if (kind == DocumentKind::kIdentity) return Malformed("Policy document should not specify a principal.");
    if (st.not_principal && st.allow) return Malformed("Allow with NotPrincipal is not allowed.");
    st.has_principal = true;
    ASSIGN_OR_RETURN(st.principals, CompilePrincipal(*principal));
  } else if (kind != DocumentKind::kIdentity) {
    return Malformed("Missing required field Principal");
  }

  if (resource != nullptr) {
    if (kind == DocumentKind::kTrust)
      return Malformed(st.not_resource ? "AssumeRole policy must not contain resources." : "Has prohibited field Resource");
    st.has_resource = true;
    ASSIGN_OR_RETURN(std::vector<std::string> resources, StringList(*resource));
    if (resources.empty()) return Malformed("Policy statement must contain resources.");
    for (const std::string& r : resources) {
      if (r != "*" && !r.starts_with("arn:")) return Malformed(fmt::format("Resource {} must be in ARN format or \"*\".", r));
      st.resources.push_back(Compile(r, {.wildcards = true, .variables = variables}));
    }
  } else if (kind != DocumentKind::kTrust) {
    return Malformed("Policy statement must contain resources.");
  }

  if (condition != nullptr) {
    ASSIGN_OR_RETURN(st.conditions, CompileConditions(*condition, variables));
  }
  return st;
}

// Finds each statement's text span. The text is valid JSON (Boost.JSON parsed it), so a small
// scanner that knows strings and nesting suffices: the top-level "Statement" member's value is
// one object or an array whose elements are the statements.
class SpanScanner {
 public:
  explicit SpanScanner(std::string_view text) : t_(text) {}

  std::vector<std::pair<TextPosition, TextPosition>> Statements() {
    std::vector<std::pair<TextPosition, TextPosition>> spans;
    SkipSpace();
    if (!Eat('{')) return {};
    while (true) {
      SkipSpace();
      if (Peek() != '"') return spans;
      const std::string_view key = ReadString();
      SkipSpace();
      if (!Eat(':')) return {};
      SkipSpace();
      if (key == "Statement") {
        spans.clear();  // a later duplicate wins, as in the parsed document
        if (Peek() == '{') {
          spans.push_back(Span());
        } else if (Eat('[')) {
          while (true) {
            SkipSpace();
            if (Peek() == '{') {
              spans.push_back(Span());
            } else {
              SkipValue();
            }
            SkipSpace();
            if (!Eat(',')) break;
          }
          if (!Eat(']')) return {};
        } else {
          SkipValue();
        }
      } else {
        SkipValue();
      }
      SkipSpace();
      if (!Eat(',')) return spans;
    }
  }

 private:
  char Peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void Advance() {
    if (t_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++i_;
  }
  bool Eat(char c) {
    if (i_ >= t_.size() || t_[i_] != c) return false;
    Advance();
    return true;
  }
  void SkipSpace() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) Advance();
  }
  // The raw text between the quotes (escapes left as written).
  std::string_view ReadString() {
    Advance();  // the opening quote
    const size_t start = i_;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) Advance();
      Advance();
    }
    const std::string_view s = t_.substr(start, i_ - start);
    if (i_ < t_.size()) Advance();  // the closing quote
    return s;
  }
  // Skips one value: a string, a number or literal, or a whole object or array.
  void SkipValue() {
    int depth = 0;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '"') {
        ReadString();
        if (depth == 0) return;
        continue;
      }
      if (depth == 0 && (c == ',' || c == '}' || c == ']')) return;
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      Advance();
      if (depth == 0 && (c == '}' || c == ']')) return;
    }
  }
  std::pair<TextPosition, TextPosition> Span() {
    const TextPosition start{line_, col_};
    SkipValue();
    return {start, TextPosition{line_, col_}};
  }

  std::string_view t_;
  size_t i_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

TextPosition Policy::start(size_t i) const { return compiled_->statements[i].start; }
TextPosition Policy::end(size_t i) const { return compiled_->statements[i].end; }

std::vector<std::string> ContextKeys(const Policy& policy) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& lower, const std::string& written) {
    if (seen.insert(lower).second) out.push_back(written);
  };
  auto add_template = [&](const Template& t) {
    for (const Template::Part& part : t.parts)
      if (part.is_variable && part.text != "*" && part.text != "?" && part.text != "$") add(part.text, part.written);
  };
  for (const Statement& st : policy.compiled().statements) {
    for (const Template& r : st.resources) add_template(r);
    for (const Condition& c : st.conditions) {
      add(c.key, c.written_key);
      for (const ConditionValue& v : c.values) add_template(v.pattern);
    }
  }
  return out;
}

PolicyVersion Policy::version() const { return compiled_->version; }
size_t Policy::statement_count() const { return compiled_->statements.size(); }
const std::string& Policy::sid(size_t i) const { return compiled_->statements[i].sid; }

StatusOr<Policy> ParsePolicy(std::string_view text, DocumentKind kind) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) return Malformed("This policy contains invalid Json");
  if (!doc.is_object()) return SyntaxError();
  auto compiled = std::make_shared<CompiledPolicy>();
  const json::value* statements = nullptr;
  for (const auto& [k, v] : doc.get_object()) {
    if (k == "Version") {
      if (!v.is_string()) return SyntaxError();
      if (v.get_string() == "2012-10-17") {
        compiled->version = PolicyVersion::k2012_10_17;
      } else if (v.get_string() == "2008-10-17") {
        compiled->version = PolicyVersion::k2008_10_17;
      } else {
        return Malformed("The policy failed legacy parsing");
      }
    } else if (k == "Id") {
      if (!v.is_string()) return SyntaxError();
    } else if (k == "Statement") {
      statements = &v;
    } else {
      return SyntaxError();
    }
  }
  if (statements == nullptr) return SyntaxError();
  const bool variables = compiled->version == PolicyVersion::k2012_10_17;
  std::set<std::string> sids;
  auto add = [&](const json::value& s) -> Status {
    ASSIGN_OR_RETURN(Statement st, CompileStatement(s, kind, variables));
    if (!st.sid.empty() && !sids.insert(st.sid).second)
      return Malformed("Statement IDs (SID) in a single policy must be unique.");
    compiled->statements.push_back(std::move(st));
    return OkStatus();
  };
  if (statements->is_array()) {
    if (statements->get_array().empty()) return Malformed("Could not parse the policy: Statement is empty!");
    for (const json::value& s : statements->get_array()) RETURN_IF_ERROR(add(s));
  } else {
    RETURN_IF_ERROR(add(*statements));
  }
  const auto spans = SpanScanner(text).Statements();
  if (spans.size() == compiled->statements.size()) {
    for (size_t i = 0; i < spans.size(); ++i) {
      compiled->statements[i].start = spans[i].first;
      compiled->statements[i].end = spans[i].second;
    }
  }
  return Policy(std::move(compiled));
}

}  // namespace paddock::iam::policy
