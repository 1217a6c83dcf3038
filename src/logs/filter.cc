#include "logs/filter.h"

#include "logs/internal/regex.h"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace paddock::logs {

namespace json = boost::json;

namespace internal {

// A substring searched for in messages. Knuth–Morris–Pratt, so one search costs at most about 2n
// steps whatever the needle and the message (std::string_view::find compares at every offset and is
// O(n·m) on crafted input); memchr skips to the next candidate start while nothing is matched, which
// is where an ordinary search spends its time.
class Needle {
 public:
  // REQUIRES: !text.empty()
  explicit Needle(std::string text) : text_(std::move(text)), border_(text_.size(), 0) {
    // border_[i]: the length of the longest proper prefix of text_[0..i] that is also its suffix.
    for (std::size_t i = 1, k = 0; i < text_.size(); ++i) {
      while (k > 0 && text_[i] != text_[k]) k = border_[k - 1];
      if (text_[i] == text_[k]) ++k;
      border_[i] = static_cast<std::uint32_t>(k);
    }
  }

  bool FoundIn(std::string_view hay) const {
    const std::size_t m = text_.size();
    const std::size_t n = hay.size();
    if (m > n) return false;
    const char* p = hay.data();
    std::size_t i = 0;
    std::size_t k = 0;  // bytes of text_ matched so far, ending just before hay[i]
    while (i < n) {
      if (k == 0) {
        const void* hit = std::memchr(p + i, static_cast<unsigned char>(text_[0]), n - i);
        if (hit == nullptr) return false;
        i = static_cast<std::size_t>(static_cast<const char*>(hit) - p) + 1;
        k = 1;
      } else if (p[i] == text_[k]) {
        ++i;
        ++k;
      } else {
        k = border_[k - 1];  // i stays: each step either advances i or shrinks k
        continue;
      }
      if (k == m) return true;
    }
    return false;
  }

 private:
  std::string text_;
  std::vector<std::uint32_t> border_;
};

// One '?' alternative of a terms pattern: every include appears and no exclude does.
struct TermGroup {
  std::vector<Needle> include;
  std::vector<Needle> exclude;
};

// One step of a JSON selector: `.key` or `[index]`.
struct Step {
  bool is_index = false;
  std::string key;
  std::size_t index = 0;
};

enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kIsNull, kIsTrue, kIsFalse, kExists, kNotExists };

// `selector op value` or `selector IS NULL` etc.
struct Condition {
  std::vector<Step> path;
  Op op = Op::kEq;
  // The value of = != < <= > >=: a number literal (numeric), else a string whose leading and trailing
  // '*' were wildcards (leading_star/trailing_star) around `core`.
  bool numeric = false;
  double number = 0;
  std::string literal;  // the value as written (unescaped), for a number literal against a string field
  bool leading_star = false;
  bool trailing_star = false;
  std::string core;
  std::optional<Needle> contains;  // *core*: a substring search, linear
  std::optional<Regex> regex;      // the value was %regex%: it decides alone
};

struct Node {
  enum class Kind { kCondition, kAnd, kOr };
  Kind kind = Kind::kCondition;
  std::size_t condition = 0;
  std::vector<std::size_t> children;
};

// One field of a space-delimited pattern: its name (empty for an unnamed field, `[a, , b]`) and its
// conditions as || of && chains (&& binds tighter; there are no parentheses); none: any value.
struct FieldSpec {
  bool ellipsis = false;
  std::string name;
  std::vector<std::vector<Condition>> any_of;
};

struct CompiledFilter {
  Filter::Kind kind = Filter::Kind::kAll;
  std::string pattern;
  std::optional<Regex> regex;          // kRegex
  std::vector<TermGroup> groups;       // kTerms
  std::vector<Condition> conditions;   // kJson
  std::vector<Node> nodes;             // kJson
  std::size_t root = 0;                // kJson
  std::vector<FieldSpec> prefix;       // kDelimited: the fields before '...' (all of them without one)
  std::vector<FieldSpec> suffix;       // kDelimited: the fields after '...'
  bool has_ellipsis = false;           // kDelimited
};

}  // namespace internal

namespace {

using internal::CompiledFilter;
using internal::Condition;
using internal::FieldSpec;
using internal::Needle;
using internal::Node;
using internal::Op;
using internal::Regex;
using internal::Step;
using internal::TermGroup;

Status Invalid(std::string why) {
  return InvalidArgument("Invalid filter pattern: " + std::move(why), Error::kInvalidParameter);
}

// AWS's text for a term it cannot read (https://github.com/DefangLabs/defang/issues/1008).
Status InvalidTerm(std::string_view term) {
  return Invalid("Invalid character(s) in term '" + std::string(term) + "'");
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
// An unquoted term: "Metric filter terms that include characters other than alphanumeric or underscore
// must be placed inside double quotes" (FilterAndPatternSyntax).
bool IsTermChar(char c) { return IsAlnum(c) || c == '_'; }
// An unquoted JSON value: alphanumerics plus what the documented examples write bare
// (`123.123.*`, `+1000`, `10e-3`, `55.5`).
bool IsBareValueChar(char c) { return IsAlnum(c) || c == '_' || c == '.' || c == '*' || c == '+' || c == '-'; }
bool IsSelectorChar(char c) { return IsAlnum(c) || c == '_' || c == '-' || c == '.' || c == '[' || c == ']'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

std::size_t CodePoints(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Reads a double-quoted string starting at s[i] == '"'; `\"` and `\\` are escapes, any other
// backslash is itself (the form AWS's CDK writes: aws-logs/lib/pattern.ts quoteTerm). Leaves i after
// the closing quote.
StatusOr<std::string> ReadQuoted(std::string_view s, std::size_t& i) {
  std::string out;
  for (++i; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      ++i;
      return out;
    }
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\\')) {
      out.push_back(s[++i]);
      continue;
    }
    out.push_back(c);
  }
  return Invalid("a quoted term has no closing '\"'");
}

// A number as the JSON pattern syntax writes it: an integer or decimal with an optional sign, and
// an optional exponent `e[+-]digits` (FilterAndPatternSyntax, "Numeric Comparisons").
std::optional<double> ParseNumber(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t digits_from = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == digits_from) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    const std::size_t fraction_from = ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == fraction_from) return std::nullopt;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t exponent_from = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == exponent_from) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  std::string_view text = s;
  if (text.front() == '+') text.remove_prefix(1);  // from_chars takes no '+'
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;  // out of range
  return value;
}

// ---- terms ----------------------------------------------------------------------------------------

Status CompileTerms(std::string_view s, CompiledFilter& c) {
  std::size_t i = 0;
  auto skip_blanks = [&] {
    while (i < s.size() && IsBlank(s[i])) ++i;
  };
  while (true) {
    skip_blanks();
    if (i == s.size()) break;
    bool alternative = false;
    bool exclude = false;
    if (s[i] == '?') {
      alternative = true;
      ++i;
      skip_blanks();
    }
    if (i < s.size() && s[i] == '-') {
      exclude = true;
      ++i;
      skip_blanks();
    }
    if (i == s.size()) return Invalid("'?' and '-' must be followed by a term");
    std::string term;
    const std::size_t start = i;
    if (s[i] == '"') {
      ASSIGN_OR_RETURN(term, ReadQuoted(s, i));
      if (i < s.size() && !IsBlank(s[i])) {
        while (i < s.size() && !IsBlank(s[i])) ++i;
        return InvalidTerm(s.substr(start, i - start));
      }
      if (term.empty()) return InvalidTerm("\"\"");
    } else {
      while (i < s.size() && !IsBlank(s[i])) ++i;
      const std::string_view raw = s.substr(start, i - start);
      if (raw.front() == '%') {
        // A regular expression is a pattern of its own (it has no blanks: they are not allowed in it).
        return Invalid("a regular expression (%...%) must be the whole filter pattern");
      }
      for (char ch : raw) {
        if (!IsTermChar(ch)) return InvalidTerm(raw);
      }
      term = std::string(raw);
    }
    if (alternative || c.groups.empty()) c.groups.emplace_back();
    (exclude ? c.groups.back().exclude : c.groups.back().include).emplace_back(std::move(term));
  }
  return OkStatus();
}

bool MatchesTerms(const CompiledFilter& c, std::string_view message) {
  for (const TermGroup& g : c.groups) {
    bool ok = true;
    for (const Needle& n : g.include) {
      if (!n.FoundIn(message)) {
        ok = false;
        break;
      }
    }
    for (std::size_t k = 0; ok && k < g.exclude.size(); ++k) {
      if (g.exclude[k].FoundIn(message)) ok = false;
    }
    if (ok) return true;
  }
  return false;
}

// ---- JSON -----------------------------------------------------------------------------------------

// The tokens of JSON and space-delimited patterns. A space-delimited pattern also has commas; a
// JSON one has selectors and parentheses.
class Lexer {
 public:
  struct Token {
    enum Kind { kEnd, kLParen, kRParen, kAnd, kOr, kOp, kSelector, kString, kWord, kComma, kRegex };
    Kind kind = kEnd;
    std::string text;  // kOp: the operator; kSelector/kWord: as written; kString: unescaped; kRegex: between the '%'
  };

  // "There is a limit of 2 regex for each filter pattern when creating a delimited or JSON filter
  // pattern [...] or when filtering log events or Live Tail" (FilterAndPatternSyntax).
  static constexpr int kMaxRegexes = 2;

  Lexer(std::string_view body, std::string_view what, bool commas) : s_(body), what_(what), commas_(commas) {}

 protected:
  Status Unexpected() const {
    if (token_.kind == Token::kEnd) return Invalid("the " + std::string(what_) + " ends too early");
    return Invalid("unexpected '" + token_.text + "' in the " + std::string(what_));
  }

  Status Advance() {
    while (i_ < s_.size() && IsBlank(s_[i_])) ++i_;
    token_ = Token{};
    if (i_ == s_.size()) return OkStatus();
    const char ch = s_[i_];
    const auto two = [&](char next) { return i_ + 1 < s_.size() && s_[i_ + 1] == next; };
    const std::size_t start = i_;
    switch (ch) {
      case '(': ++i_; token_ = {Token::kLParen, "("}; return OkStatus();
      case ')': ++i_; token_ = {Token::kRParen, ")"}; return OkStatus();
      case '&':
        if (!two('&')) return Invalid("'&' must be '&&'");
        i_ += 2;
        token_ = {Token::kAnd, "&&"};
        return OkStatus();
      case '|':
        if (!two('|')) return Invalid("'|' must be '||'");
        i_ += 2;
        token_ = {Token::kOr, "||"};
        return OkStatus();
      case '=': ++i_; token_ = {Token::kOp, "="}; return OkStatus();
      case '!':
        if (!two('=')) return Invalid("'!' must be '!='");
        i_ += 2;
        token_ = {Token::kOp, "!="};
        return OkStatus();
      case '<':
      case '>':
        i_ += two('=') ? 2 : 1;
        token_ = {Token::kOp, std::string(s_.substr(start, i_ - start))};
        return OkStatus();
      case '"': {
        ASSIGN_OR_RETURN(std::string text, ReadQuoted(s_, i_));
        token_ = {Token::kString, std::move(text)};
        return OkStatus();
      }
      case '$':
        for (++i_; i_ < s_.size() && IsSelectorChar(s_[i_]); ++i_) {
        }
        token_ = {Token::kSelector, std::string(s_.substr(start, i_ - start))};
        return OkStatus();
      case '%': {
        const std::size_t close = s_.find('%', i_ + 1);
        if (close == std::string_view::npos) return Invalid("a regular expression has no closing '%'");
        if (++regexes_ > kMaxRegexes) return Invalid("a filter pattern holds at most 2 regular expressions");
        token_ = {Token::kRegex, std::string(s_.substr(i_ + 1, close - i_ - 1))};
        i_ = close + 1;
        return OkStatus();
      }
      case ',':
        if (!commas_) break;
        ++i_;
        token_ = {Token::kComma, ","};
        return OkStatus();
      default: break;
    }
    if (!IsBareValueChar(ch)) {
      while (i_ < s_.size() && !IsBlank(s_[i_]) && !(commas_ && s_[i_] == ',')) ++i_;
      return InvalidTerm(s_.substr(start, i_ - start));
    }
    while (i_ < s_.size() && IsBareValueChar(s_[i_])) ++i_;
    token_ = {Token::kWord, std::string(s_.substr(start, i_ - start))};
    return OkStatus();
  }

  // Reads the value after `subject op` into `cond`: a number literal, or a string whose leading and
  // trailing '*' are wildcards. Leaves the token after the value.
  Status ReadValue(const std::string& subject, const std::string& op, Condition& cond) {
    cond.op = op == "=" ? Op::kEq : op == "!=" ? Op::kNe : op == "<" ? Op::kLt : op == "<=" ? Op::kLe : op == ">" ? Op::kGt : Op::kGe;
    RETURN_IF_ERROR(Advance());
    if (token_.kind != Token::kWord && token_.kind != Token::kString && token_.kind != Token::kRegex) {
      if (token_.kind == Token::kEnd) return Unexpected();
      return Invalid("expected a value after '" + subject + " " + op + "'");
    }
    cond.literal = token_.text;
    if (token_.kind == Token::kRegex) {
      if (cond.op != Op::kEq && cond.op != Op::kNe) return Invalid("'" + op + "' compares numbers, and a regular expression is not one");
      StatusOr<Regex> regex = Regex::Compile(token_.text);
      if (!regex.ok()) return Invalid(regex.status().message());
      cond.regex = std::move(regex).value();
      return Advance();
    }
    if (token_.kind == Token::kWord) {
      if (std::optional<double> n = ParseNumber(token_.text)) {
        cond.numeric = true;
        cond.number = *n;
      }
    }
    const bool ordering = cond.op != Op::kEq && cond.op != Op::kNe;
    if (ordering && !cond.numeric) {
      return Invalid("'" + op + "' compares numbers, and '" + cond.literal + "' is not one");
    }
    if (!cond.numeric) {
      std::string_view core = cond.literal;
      if (!core.empty() && core.front() == '*') {
        cond.leading_star = true;
        core.remove_prefix(1);
      }
      if (!core.empty() && core.back() == '*') {
        cond.trailing_star = true;
        core.remove_suffix(1);
      }
      cond.core = std::string(core);
      if (cond.leading_star && cond.trailing_star && !cond.core.empty()) cond.contains.emplace(cond.core);
    }
    return Advance();
  }

  Token token_;

 private:
  std::string_view s_;
  std::string_view what_;
  bool commas_;
  std::size_t i_ = 0;
  int regexes_ = 0;
};

class JsonPatternParser : Lexer {
 public:
  JsonPatternParser(std::string_view body, CompiledFilter& c) : Lexer(body, "JSON filter pattern", false), c_(c) {}

  Status Parse() {
    RETURN_IF_ERROR(Advance());
    if (token_.kind == Token::kEnd) return Invalid("a JSON filter pattern needs a condition between '{' and '}'");
    ASSIGN_OR_RETURN(c_.root, ParseOr(0));
    if (token_.kind != Token::kEnd) return Unexpected();
    return OkStatus();
  }

 private:
  std::size_t AddNode(Node node) {
    c_.nodes.push_back(std::move(node));
    return c_.nodes.size() - 1;
  }

  // or := and ('||' and)*
  StatusOr<std::size_t> ParseOr(int depth) {
    ASSIGN_OR_RETURN(std::size_t first, ParseAnd(depth));
    if (token_.kind != Token::kOr) return first;
    Node node{Node::Kind::kOr, 0, {first}};
    while (token_.kind == Token::kOr) {
      RETURN_IF_ERROR(Advance());
      ASSIGN_OR_RETURN(std::size_t next, ParseAnd(depth));
      node.children.push_back(next);
    }
    return AddNode(std::move(node));
  }

  // and := unary ('&&' unary)*
  StatusOr<std::size_t> ParseAnd(int depth) {
    ASSIGN_OR_RETURN(std::size_t first, ParseUnary(depth));
    if (token_.kind != Token::kAnd) return first;
    Node node{Node::Kind::kAnd, 0, {first}};
    while (token_.kind == Token::kAnd) {
      RETURN_IF_ERROR(Advance());
      ASSIGN_OR_RETURN(std::size_t next, ParseUnary(depth));
      node.children.push_back(next);
    }
    return AddNode(std::move(node));
  }

  // unary := '(' or ')' | condition
  StatusOr<std::size_t> ParseUnary(int depth) {
    if (token_.kind != Token::kLParen) return ParseCondition();
    if (depth >= Filter::kMaxNesting) {
      return Invalid("parentheses nest more than " + std::to_string(Filter::kMaxNesting) + " deep");
    }
    RETURN_IF_ERROR(Advance());
    ASSIGN_OR_RETURN(std::size_t inner, ParseOr(depth + 1));
    if (token_.kind != Token::kRParen) return token_.kind == Token::kEnd ? Invalid("a '(' is not closed") : Unexpected();
    RETURN_IF_ERROR(Advance());
    return inner;
  }

  // $ then .key / [index] steps; an index follows a property ("Array elements are denoted with
  // [NUMBER] syntax, and must follow a property").
  static StatusOr<std::vector<Step>> ParsePath(std::string_view selector) {
    const Status bad = Invalid("invalid selector '" + std::string(selector) + "'");
    std::vector<Step> path;
    std::size_t i = 1;  // after '$'
    while (i < selector.size()) {
      if (selector[i] == '.') {
        const std::size_t from = ++i;
        while (i < selector.size() && (IsAlnum(selector[i]) || selector[i] == '_' || selector[i] == '-')) ++i;
        if (i == from) return bad;
        path.push_back(Step{false, std::string(selector.substr(from, i - from)), 0});
      } else if (selector[i] == '[') {
        const std::size_t from = ++i;
        while (i < selector.size() && IsDigit(selector[i])) ++i;
        if (i == from || i - from > 9 || i == selector.size() || selector[i] != ']' || path.empty()) return bad;
        std::size_t index = 0;
        std::from_chars(selector.data() + from, selector.data() + i, index);
        ++i;
        path.push_back(Step{true, {}, index});
      } else {
        return bad;
      }
    }
    if (path.empty()) return bad;
    return path;
  }

  // condition := selector op value | selector IS (NULL|TRUE|FALSE) | selector [NOT] EXISTS
  StatusOr<std::size_t> ParseCondition() {
    if (token_.kind != Token::kSelector) {
      if (token_.kind == Token::kEnd) return Unexpected();
      return Invalid("expected a selector starting with '$', found '" + token_.text + "'");
    }
    Condition cond;
    const std::string selector = token_.text;
    ASSIGN_OR_RETURN(cond.path, ParsePath(selector));
    RETURN_IF_ERROR(Advance());
    if (token_.kind == Token::kWord && (token_.text == "IS" || token_.text == "NOT" || token_.text == "EXISTS")) {
      const std::string first = token_.text;
      if (first == "EXISTS") {
        cond.op = Op::kExists;
      } else {
        RETURN_IF_ERROR(Advance());
        if (first == "NOT" && token_.kind == Token::kWord && token_.text == "EXISTS") {
          cond.op = Op::kNotExists;
        } else if (first == "IS" && token_.kind == Token::kWord && token_.text == "NULL") {
          cond.op = Op::kIsNull;
        } else if (first == "IS" && token_.kind == Token::kWord && token_.text == "TRUE") {
          cond.op = Op::kIsTrue;
        } else if (first == "IS" && token_.kind == Token::kWord && token_.text == "FALSE") {
          cond.op = Op::kIsFalse;
        } else {
          return Invalid("expected " + std::string(first == "IS" ? "NULL, TRUE or FALSE" : "EXISTS") + " after " +
                         first);
        }
      }
      RETURN_IF_ERROR(Advance());
      return AddCondition(std::move(cond));
    }
    if (token_.kind != Token::kOp) {
      return Invalid("expected =, !=, <, <=, >, >=, IS, EXISTS or NOT EXISTS after '" + selector + "'");
    }
    const std::string op = token_.text;
    RETURN_IF_ERROR(ReadValue(selector, op, cond));
    return AddCondition(std::move(cond));
  }

  std::size_t AddCondition(Condition cond) {
    c_.conditions.push_back(std::move(cond));
    return AddNode(Node{Node::Kind::kCondition, c_.conditions.size() - 1, {}});
  }

  CompiledFilter& c_;
};

Status CompileJson(std::string_view s, CompiledFilter& c) {
  if (s.size() < 2 || s.back() != '}') {
    // AWS's own text (https://github.com/jorgebastida/awslogs/issues/210).
    return InvalidArgument("If a filter pattern starts with '{' it must end with '}'", Error::kInvalidParameter);
  }
  return JsonPatternParser(s.substr(1, s.size() - 2), c).Parse();
}

const json::value* Resolve(const json::value& root, const std::vector<Step>& path) {
  const json::value* cur = &root;
  for (const Step& step : path) {
    if (step.is_index) {
      if (!cur->is_array() || step.index >= cur->get_array().size()) return nullptr;
      cur = &cur->get_array()[step.index];
    } else {
      if (!cur->is_object()) return nullptr;
      cur = cur->get_object().if_contains(step.key);
      if (cur == nullptr) return nullptr;
    }
  }
  return cur;
}

double ToDouble(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

bool StringMatches(const Condition& c, std::string_view text) {
  if (c.regex) return c.regex->Search(text);
  const std::string_view core = c.core;
  if (c.leading_star && c.trailing_star) return core.empty() || c.contains->FoundIn(text);
  if (c.leading_star) return text.size() >= core.size() && text.substr(text.size() - core.size()) == core;
  if (c.trailing_star) return text.substr(0, core.size()) == core;
  return text == core;
}

bool EvalCondition(const Condition& c, const json::value& root) {
  const json::value* v = Resolve(root, c.path);
  switch (c.op) {
    case Op::kNotExists: return v == nullptr;
    case Op::kExists: return v != nullptr;
    case Op::kIsNull: return v != nullptr && v->is_null();
    case Op::kIsTrue: return v != nullptr && v->is_bool() && v->get_bool();
    case Op::kIsFalse: return v != nullptr && v->is_bool() && !v->get_bool();
    default: break;
  }
  // A comparison needs a value node: "If it points to an array or object, the filter will not be
  // applied" — neither = nor != matches; null is no value either (IS NULL asks for it).
  if (v == nullptr || v->is_object() || v->is_array() || v->is_null()) return false;
  switch (c.op) {
    case Op::kLt: return v->is_number() && ToDouble(*v) < c.number;
    case Op::kLe: return v->is_number() && ToDouble(*v) <= c.number;
    case Op::kGt: return v->is_number() && ToDouble(*v) > c.number;
    case Op::kGe: return v->is_number() && ToDouble(*v) >= c.number;
    default: break;
  }
  bool equal = false;
  if (v->is_number() && c.numeric) {
    equal = ToDouble(*v) == c.number;
  } else if (v->is_string()) {
    const json::string& s = v->get_string();
    const std::string_view text(s.data(), s.size());
    equal = c.numeric ? text == c.literal : StringMatches(c, text);
  } else if (v->is_bool()) {
    equal = !c.numeric && StringMatches(c, v->get_bool() ? "true" : "false");
  } else {
    // A number compared with a string value: its JSON text ("2", "2.5").
    equal = StringMatches(c, json::serialize(*v));
  }
  return c.op == Op::kEq ? equal : !equal;
}

bool EvalNode(const CompiledFilter& c, std::size_t index, const json::value& root) {
  const Node& node = c.nodes[index];
  switch (node.kind) {
    case Node::Kind::kCondition: return EvalCondition(c.conditions[node.condition], root);
    case Node::Kind::kAnd:
      for (std::size_t child : node.children) {
        if (!EvalNode(c, child, root)) return false;
      }
      return true;
    case Node::Kind::kOr:
      for (std::size_t child : node.children) {
        if (EvalNode(c, child, root)) return true;
      }
      return false;
  }
  return false;
}

bool MatchesJson(const CompiledFilter& c, std::string_view message) {
  // Only a message that is one JSON object can match; most messages are not, and are refused
  // before any parsing.
  std::size_t first = 0;
  while (first < message.size() && IsBlank(message[first])) ++first;
  if (first == message.size() || message[first] != '{') return false;
  unsigned char buffer[4096];
  json::monotonic_resource arena(buffer, sizeof buffer);
  json::parse_options options;
  options.max_depth = Filter::kMaxJsonDepth;
  json::error_code ec;
  const json::value v = json::parse(json::string_view(message.data(), message.size()), ec, &arena, options);
  if (ec || !v.is_object()) return false;
  return EvalNode(c, c.root, v);
}

// ---- space-delimited ------------------------------------------------------------------------------

bool IsFieldName(std::string_view name) {
  // AWS's CDK accepts these as column names (aws-logs/lib/pattern.ts validColumnName).
  for (char ch : name) {
    if (!IsAlnum(ch) && ch != '_' && ch != '-') return false;
  }
  return !name.empty();
}

// [field, field, ...]: each field a name, a name with conditions on itself (`status_code = 4* &&
// status_code != 403`, `w1=ERROR || w1=WARN`), `...` (any number of fields; at most one, as the
// CDK allows), or nothing (an unnamed field, `[a, , b]` or a trailing comma).
class DelimitedPatternParser : Lexer {
 public:
  DelimitedPatternParser(std::string_view body, CompiledFilter& c)
      : Lexer(body, "space-delimited filter pattern", true), c_(c) {}

  Status Parse() {
    RETURN_IF_ERROR(Advance());
    if (token_.kind == Token::kEnd) {
      return Invalid("a space-delimited filter pattern needs at least one field between '[' and ']'");
    }
    while (true) {
      ASSIGN_OR_RETURN(FieldSpec spec, ParseField());
      if (spec.ellipsis) {
        if (c_.has_ellipsis) return Invalid("a space-delimited filter pattern has at most one '...'");
        c_.has_ellipsis = true;
      } else {
        (c_.has_ellipsis ? c_.suffix : c_.prefix).push_back(std::move(spec));
      }
      if (token_.kind == Token::kEnd) return OkStatus();
      if (token_.kind != Token::kComma) return Unexpected();
      RETURN_IF_ERROR(Advance());
    }
  }

 private:
  StatusOr<FieldSpec> ParseField() {
    FieldSpec spec;
    if (token_.kind == Token::kComma || token_.kind == Token::kEnd) return spec;
    if (token_.kind != Token::kWord) return Unexpected();
    if (token_.text == "...") {
      spec.ellipsis = true;
      RETURN_IF_ERROR(Advance());
      if (token_.kind != Token::kComma && token_.kind != Token::kEnd) return Invalid("'...' takes no condition");
      return spec;
    }
    if (!IsFieldName(token_.text)) return Invalid("invalid field name '" + token_.text + "'");
    spec.name = token_.text;
    RETURN_IF_ERROR(Advance());
    if (token_.kind != Token::kOp) return spec;
    spec.any_of.emplace_back();
    while (true) {
      const std::string op = token_.text;
      Condition cond;
      RETURN_IF_ERROR(ReadValue(spec.name, op, cond));
      spec.any_of.back().push_back(std::move(cond));
      if (token_.kind == Token::kOr) {
        spec.any_of.emplace_back();
      } else if (token_.kind != Token::kAnd) {
        return spec;
      }
      RETURN_IF_ERROR(Advance());
      if (token_.kind != Token::kWord) return Unexpected();
      if (token_.text != spec.name) {
        // AWS refuses its own old example `status_code = 4* && bytes > 1000`
        // (https://github.com/awsdocs/amazon-cloudwatch-logs-user-guide/issues/21).
        return Invalid("a condition in field '" + spec.name + "' is on '" + token_.text + "'");
      }
      RETURN_IF_ERROR(Advance());
      if (token_.kind != Token::kOp) return Unexpected();
    }
  }

  CompiledFilter& c_;
};

Status CompileDelimited(std::string_view s, CompiledFilter& c) {
  if (s.size() < 2 || s.back() != ']') return Invalid("a space-delimited filter pattern must end with ']'");
  return DelimitedPatternParser(s.substr(1, s.size() - 2), c).Parse();
}

bool FieldConditionHolds(const Condition& c, std::string_view field) {
  switch (c.op) {
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe: {
      const std::optional<double> n = ParseNumber(field);
      if (!n) return false;
      return c.op == Op::kLt ? *n < c.number : c.op == Op::kLe ? *n <= c.number : c.op == Op::kGt ? *n > c.number : *n >= c.number;
    }
    default: break;
  }
  bool equal = false;
  if (c.numeric) {
    const std::optional<double> n = ParseNumber(field);
    equal = n ? *n == c.number : field == c.literal;
  } else {
    equal = StringMatches(c, field);
  }
  return c.op == Op::kEq ? equal : !equal;
}

bool FieldMatches(const FieldSpec& spec, std::string_view field) {
  if (spec.any_of.empty()) return true;
  for (const std::vector<Condition>& all : spec.any_of) {
    bool ok = true;
    for (std::size_t k = 0; ok && k < all.size(); ++k) ok = FieldConditionHolds(all[k], field);
    if (ok) return true;
  }
  return false;
}

// The message's fields: runs of blanks separate them; a field opening with '"' runs to the next '"',
// one opening with '[' to the next ']' (to the end when there is none), without the delimiters
// ("The characters between a pair of square brackets [] or two double quotes ("") are treated as a
// single field"). The fields before '...' are checked as they come, the last ones after it are kept in
// a ring of the suffix's size: memory is the pattern's, not the message's.
bool MatchesDelimited(const CompiledFilter& c, std::string_view m) {
  const std::size_t prefix = c.prefix.size();
  const std::size_t suffix = c.suffix.size();
  std::vector<std::string_view> ring(suffix);
  std::size_t seen = 0;  // fields read
  std::size_t i = 0;
  while (true) {
    while (i < m.size() && IsBlank(m[i])) ++i;
    if (i == m.size()) break;
    std::string_view field;
    if (m[i] == '"' || m[i] == '[') {
      const char close = m[i] == '"' ? '"' : ']';
      const std::size_t from = i + 1;
      const std::size_t end = m.find(close, from);
      field = m.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from);
      i = end == std::string_view::npos ? m.size() : end + 1;
    } else {
      const std::size_t from = i;
      while (i < m.size() && !IsBlank(m[i])) ++i;
      field = m.substr(from, i - from);
    }
    if (seen < prefix) {
      if (!FieldMatches(c.prefix[seen], field)) return false;
    } else if (!c.has_ellipsis) {
      return false;  // more fields than the pattern names
    } else if (suffix > 0) {
      ring[(seen - prefix) % suffix] = field;
    }
    ++seen;
  }
  if (seen < prefix + suffix) return false;
  const std::size_t rest = seen - prefix;
  for (std::size_t j = 0; j < suffix; ++j) {
    if (!FieldMatches(c.suffix[j], ring[(rest - suffix + j) % suffix])) return false;
  }
  return true;
}

}  // namespace

StatusOr<Filter> Filter::Compile(std::string_view pattern) {
  if (CodePoints(pattern) > kMaxPatternLength) {
    return Invalid("a filter pattern has at most " + std::to_string(kMaxPatternLength) + " characters");
  }
  auto c = std::make_shared<CompiledFilter>();
  c->pattern = std::string(pattern);
  const std::string_view body = Trim(pattern);
  if (body.empty()) {
    c->kind = Kind::kAll;
  } else if (body.front() == '{') {
    c->kind = Kind::kJson;
    RETURN_IF_ERROR(CompileJson(body, *c));
  } else if (body.front() == '%') {
    c->kind = Kind::kRegex;
    if (body.size() < 2 || body.back() != '%') return Invalid("a regular expression has no closing '%'");
    StatusOr<internal::Regex> regex = internal::Regex::Compile(body.substr(1, body.size() - 2));
    if (!regex.ok()) return Invalid(regex.status().message());
    c->regex = std::move(regex).value();
  } else if (body.front() == '[') {
    c->kind = Kind::kDelimited;
    RETURN_IF_ERROR(CompileDelimited(body, *c));
  } else {
    c->kind = Kind::kTerms;
    RETURN_IF_ERROR(CompileTerms(body, *c));
  }
  return Filter(std::move(c));
}

bool Filter::Matches(std::string_view message) const {
  switch (compiled_->kind) {
    case Kind::kAll: return true;
    case Kind::kTerms: return MatchesTerms(*compiled_, message);
    case Kind::kJson: return MatchesJson(*compiled_, message);
    case Kind::kDelimited: return MatchesDelimited(*compiled_, message);
    case Kind::kRegex: return compiled_->regex->Search(message);
  }
  return false;
}

Filter::Kind Filter::kind() const { return compiled_->kind; }

const std::string& Filter::pattern() const { return compiled_->pattern; }

}  // namespace paddock::logs
