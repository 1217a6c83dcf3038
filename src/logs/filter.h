// CloudWatch Logs filter patterns: compiled once, then matched against one event's message at a
// time. What FilterLogEvents' `filterPattern`, StartLiveTail's `logEventFilterPattern` and (later)
// subscription filters use. Pure: no store, no I/O, no clock.
//
//   ASSIGN_OR_RETURN(logs::Filter f, logs::Filter::Compile(R"(ERROR -"health check")"));
//   for (const Event& e : candidates) if (f.Matches(e.message)) page.push_back(e);
//
// The grammar is AWS's ("Filter pattern syntax", docs/contracts/logs.md has the rows and the tests):
//   ""                      matches every event.
//   ERROR Exception         terms: every one must appear in the message, case-sensitive substrings.
//                           An unquoted term is letters, digits and '_' only.
//   "Failed to process"     a quoted term: any bytes, `\"` and `\\` escaped; not empty.
//   -Exiting  -"a b"        the term must not appear.
//   ?ERROR ?WARN            alternatives: each '?' starts a group of terms (the terms after it up to the
//                           next '?'); the event matches when any group matches. Terms before the first
//                           '?' are a group of their own.
//   { $.a.b[0] = "x*" }     JSON: the message must be a JSON object (anything else never matches);
//                           selectors `$` `.key` `[index]`; `=` `!=` with a string (quoted, or bare
//                           [A-Za-z0-9_.*+-]) whose leading/trailing '*' are wildcards; `= != < <= > >=`
//                           with a number; `IS NULL`, `IS TRUE`, `IS FALSE`, `EXISTS`, `NOT EXISTS`;
//                           `&&` binds tighter than `||`; parentheses.
//   [ip, user, ..., status_code = 4* && status_code != 403, bytes > 1000]
//                           space-delimited: the message's fields (split at blanks; "..." and [...]
//                           are one field each) named in order, `...` standing for any number of
//                           fields (at most one), each field optionally with conditions on itself
//                           (= != with wildcards, or numbers with = != < <= > >=, joined by && and ||).
//   %[Ee]rror|[Ff]ail%     a regular expression (logs/internal/regex.h: AWS's subset, no parentheses),
//                           searched in the message; also as the value of a JSON or field condition
//                           (`{ $.a = %^ab+$% }`, `[w1 = %ERR.*%, w2]`), at most 2 per pattern.
//
// Bounds, so that a hostile pattern or message costs at most linear time and bounded memory:
// a pattern is at most kMaxPatternLength characters and nests parentheses at most kMaxNesting deep;
// every substring search is linear in the message (KMP, never backtracking), a regular expression
// costs at most (message bytes × 256 positions) (an NFA, never backtracking); a space-delimited match
// keeps at most as many fields as the pattern names; a JSON message is
// parsed once per Matches call, at most kMaxJsonDepth deep (deeper never matches), into memory
// proportional to its size.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "logs/errors.h"

namespace paddock::logs {

namespace internal {
struct CompiledFilter;
}  // namespace internal

class Filter {
 public:
  // The model's bound on `filterPattern` and `logEventFilterPattern` (characters, i.e. code points).
  static constexpr std::size_t kMaxPatternLength = 1024;
  // Parentheses inside a JSON pattern (Paddock's bound; AWS publishes none).
  static constexpr int kMaxNesting = 32;
  // Nesting of a JSON message's objects and arrays beyond which it is not read (never matches).
  static constexpr int kMaxJsonDepth = 64;

  enum class Kind {
    kAll,    // the empty (or all-blank) pattern
    kTerms,  // terms, quoted terms, '?' and '-'
    kJson,   // { ... }
    kDelimited,  // [ip, user, ..., status_code = 4*, bytes > 1000]
    kRegex,      // %regex%
  };

  // Compiles `pattern`. An invalid pattern is InvalidArgument with logs::Error::kInvalidParameter
  // and AWS's text where it is known ("Invalid filter pattern: Invalid character(s) in term 'a@b'",
  // "If a filter pattern starts with '{' it must end with '}'"), else "Invalid filter pattern: <why>".
  static StatusOr<Filter> Compile(std::string_view pattern);

  // Whether the event whose message is `message` passes. Thread-safe; allocates only for JSON patterns.
  bool Matches(std::string_view message) const;

  Kind kind() const;
  // The pattern as given to Compile (to echo it back, e.g. in LiveTail's sessionStart).
  const std::string& pattern() const;

 private:
  explicit Filter(std::shared_ptr<const internal::CompiledFilter> compiled) : compiled_(std::move(compiled)) {}

  // Immutable once compiled: copies of a Filter share it.
  std::shared_ptr<const internal::CompiledFilter> compiled_;
};

}  // namespace paddock::logs
