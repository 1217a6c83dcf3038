// The compiled form of a policy document, shared by the parser (policy.cc), the condition
// operators (condition.cc) and the evaluator (evaluator.cc). Private to iam/policy.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "iam/policy/policy.h"

namespace paddock::iam::policy {
class RequestContext;
}  // namespace paddock::iam::policy

namespace paddock::iam::policy::internal {

// In a compiled glob, these bytes stand for the wildcards. The parser rejects documents holding
// control characters (AWS's policy grammar allows only \t, \n, \r and U+0020..U+00FF), and a
// substituted variable value holding one makes its element not match, so they never collide
// with literal text.
inline constexpr char kStar = '\x01';
inline constexpr char kQuestion = '\x02';

// Whether `pattern` (with kStar/kQuestion wildcards) matches all of `s`. With fold_case, ASCII
// letters compare case-insensitively (the pattern must then be lowercase already).
bool GlobMatch(std::string_view pattern, std::string_view s, bool fold_case);

// The first 8 bytes of s as a word, zero-padded when s is shorter.
inline uint64_t Head(std::string_view s) {
  uint64_t w = 0;
  if (!s.empty()) std::memcpy(&w, s.data(), s.size() < 8 ? s.size() : 8);
  return w;
}

// A value that may hold policy variables. Without variables, `text` is final. With variables,
// `parts` alternate text and variables and Resolve builds the final text per request.
struct Template {
  // Whether `text` (no variables) matches all of `s` as a glob. Compares the literal prefix
  // (before the first wildcard) with memcmp first: most patterns fail or succeed there.
  bool Matches(std::string_view s, bool fold_case) const;
  // Sets `prefix` from `text`; the parser calls it once the text is final.
  void Finish();

  struct Part {
    bool is_variable = false;
    std::string text;                    // literal text (wildcards already encoded), or the key
    std::string written;                 // a variable's key as the policy wrote it
    std::optional<std::string> default_value;  // ${key, 'default'}
  };
  // Whether Matches(s, false) can hold, judged on s's first 8 bytes only: `head` holds the
  // first min(prefix, 8) bytes of text, `head_mask` selects them. Never false when Matches would
  // be true, so Scan can skip Matches (and its call) for most of a policy set's action globs.
  // REQUIRES: s_head == Head(s).
  bool MayMatch(uint64_t s_head) const { return ((s_head ^ head) & head_mask) == 0; }

  std::string text;
  size_t prefix = 0;  // length of text's leading literal part (no wildcard)
  uint64_t head = 0, head_mask = 0;  // set by Finish, see MayMatch
  bool has_variables = false;
  std::vector<Part> parts;

  // The final text for `ctx`, or nullopt when a variable has no value and no default (AWS: the
  // element then does not match) or a value holds a wildcard byte. `fold_case` lowercases the
  // substituted values (for case-insensitive comparisons).
  std::optional<std::string> Resolve(const RequestContext& ctx, bool fold_case) const;
};

struct Cidr {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};
  int prefix = 0;
};
// Parses "10.0.0.0/8", "2001:db8::/32" or a bare address (a /32 or /128).
std::optional<Cidr> ParseCidr(std::string_view s);
// Parses an IPv4 or IPv6 address into a /32 or /128 Cidr.
std::optional<Cidr> ParseIp(std::string_view s);
bool CidrContains(const Cidr& net, const Cidr& ip);

// Milliseconds since the epoch from ISO 8601 ("2026-12-01", "2026-12-01T10:00:00Z",
// "2026-12-01T10:00:00.5+02:00") or epoch seconds ("1764583200").
std::optional<int64_t> ParseDate(std::string_view s);
std::optional<double> ParseNumber(std::string_view s);

enum class ConditionOp {
  kStringEquals,
  kStringEqualsIgnoreCase,
  kStringLike,
  kNumericEquals,
  kNumericLessThan,
  kNumericLessThanEquals,
  kNumericGreaterThan,
  kNumericGreaterThanEquals,
  kDateEquals,
  kDateLessThan,
  kDateLessThanEquals,
  kDateGreaterThan,
  kDateGreaterThanEquals,
  kBool,
  kBinaryEquals,
  kIpAddress,
  kArnLike,  // ArnEquals and ArnLike: AWS gives both wildcard matching per ARN segment.
  kNull,
};

enum class SetQualifier { kNone, kForAnyValue, kForAllValues };

struct ConditionValue {
  Template pattern;  // string and ARN operators
  std::optional<double> number;
  std::optional<int64_t> date_ms;
  std::optional<Cidr> cidr;
  bool boolean = false;  // Bool and Null
};

struct Condition {
  ConditionOp op = ConditionOp::kStringEquals;
  bool negated = false;    // StringNotEquals, NotIpAddress, ArnNotLike, ...
  bool if_exists = false;  // ...IfExists
  SetQualifier qualifier = SetQualifier::kNone;
  std::string key;         // lowercase: context-key names are case-insensitive
  std::string written_key; // as the policy wrote it (GetContextKeysFor*Policy)
  std::vector<ConditionValue> values;
};

// Whether one compiled condition holds for `ctx` (see condition.cc for AWS's rules).
bool ConditionHolds(const Condition& c, const RequestContext& ctx);

struct PrincipalEntry {
  enum class Kind { kAny, kAccount, kArn, kService, kFederated, kCanonicalUser };
  Kind kind = Kind::kAny;
  std::string value;  // account id, ARN, service or provider name
};

// A statement's action patterns grouped by service, for statements with many (AWS's
// ReadOnlyAccess holds ~1,500 in one). A pattern whose literal prefix (before any wildcard) holds
// a ':' can only match an action whose text before its first ':' is the same, so an action needs
// only its service's group and the patterns with a wildcard before their ':' (or none at all).
struct ActionIndex {
  struct Service {
    std::string name;                // lowercase, without the ':'
    std::vector<uint32_t> patterns;  // indexes into Statement::actions
  };
  // The group of `service` (lowercase, without the ':'), or nullptr.
  const Service* Find(std::string_view service) const;

  std::vector<Service> services;     // sorted by name
  std::vector<uint32_t> unkeyed;     // patterns no service bounds
};

// Index a statement's actions from this many patterns on; below it, trying each is cheaper.
inline constexpr size_t kIndexActionsFrom = 16;

// The index of `actions` (lowercase compiled globs).
ActionIndex IndexActions(const std::vector<Template>& actions);

struct Statement {
  std::string sid;
  TextPosition start, end;
  bool allow = true;
  bool not_action = false;
  std::vector<Template> actions;     // lowercase globs, no variables
  std::optional<ActionIndex> action_index;  // from kIndexActionsFrom patterns on
  bool has_resource = false;         // trust policies have none: the statement applies to all
  bool not_resource = false;
  std::vector<Template> resources;   // globs; "*" is stored as a lone kStar
  bool has_principal = false;
  bool not_principal = false;
  std::vector<PrincipalEntry> principals;
  std::vector<Condition> conditions;
};

struct CompiledPolicy {
  PolicyVersion version = PolicyVersion::k2008_10_17;
  std::vector<Statement> statements;
};

}  // namespace paddock::iam::policy::internal
