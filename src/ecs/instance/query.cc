#include "ecs/instance/query.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <optional>
#include <regex>
#include <vector>

#include "ecs/common/records.h"

namespace paddock::ecs::instance {
namespace {

enum class Op { kEq, kNe, kGt, kGe, kLt, kLe, kMatch, kNotMatch, kExists, kNotExists, kIn, kNotIn };
enum class Subject { kAttribute, kEc2InstanceId, kRunningTasksCount, kRegisteredAt, kAgentConnected, kAgentVersion };

Status Invalid(std::string_view why) { return ParamError(fmt::format("The filter expression is invalid: {}", why)); }

constexpr size_t kMaxMatchedValue = 128;
constexpr int kMaxQuantifiers = 3;

// =~ patterns run on std::regex, which backtracks: a repeated group ("(a|a)*", "(a*)*") or a
// back-reference can take exponential time, and many quantifiers polynomial time of a high
// degree, inside the placement's write transaction. Refused here: repeated groups,
// back-references, more than kMaxQuantifiers quantifiers.
Status CheckPattern(std::string_view p) {
  int quantifiers = 0;
  bool in_class = false;
  char prev = 0;  // the previous significant character outside a class
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 < p.size() && p[i + 1] >= '1' && p[i + 1] <= '9' && !in_class)
        return Invalid(fmt::format("'{}' has a back-reference.", p));
      ++i;
      prev = 'x';
      continue;
    }
    if (in_class) {
      if (c == ']') {
        in_class = false;
        prev = ']';
      }
      continue;
    }
    if (c == '[') {
      in_class = true;
      continue;
    }
    const bool quantifier = c == '*' || c == '+' || (c == '?' && prev != '(') ||
                            (c == '{' && i + 1 < p.size() && p[i + 1] >= '0' && p[i + 1] <= '9');
    if (quantifier) {
      if (prev == ')') return Invalid(fmt::format("'{}' repeats a group.", p));
      if (++quantifiers > kMaxQuantifiers)
        return Invalid(fmt::format("'{}' has more than {} quantifiers.", p, kMaxQuantifiers));
    }
    prev = c;
  }
  return OkStatus();
}

std::optional<double> Number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Compares dotted versions ("1.51.0") part by part, numerically where both parts are numbers.
int CompareVersions(std::string_view a, std::string_view b) {
  while (!a.empty() || !b.empty()) {
    auto part = [](std::string_view& s) {
      size_t dot = s.find('.');
      std::string_view p = s.substr(0, dot);
      s = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
      return p;
    };
    std::string_view pa = part(a), pb = part(b);
    auto na = Number(pa), nb = Number(pb);
    if (na && nb) {
      if (*na != *nb) return *na < *nb ? -1 : 1;
    } else if (pa != pb) {
      return pa < pb ? -1 : 1;
    }
  }
  return 0;
}

}  // namespace

StatusOr<double> ParseQueryDate(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  auto digits = [&](size_t pos, size_t n, int& out) {
    if (pos + n > text.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
      out = out * 10 + (text[i] - '0');
    }
    return true;
  };
  auto bad = [&] { return Invalid(fmt::format("'{}' is not a date (use 2018-06-18T22:28:28Z or 2018-06-18).", text)); };
  if (!digits(0, 4, y) || text.size() < 10 || text[4] != '-' || !digits(5, 2, mo) || text[7] != '-' || !digits(8, 2, d))
    return bad();
  size_t pos = 10;
  int offset_minutes = 0;
  if (pos < text.size()) {
    if (text[pos] != 'T' || !digits(pos + 1, 2, h) || text.size() < pos + 9 || text[pos + 3] != ':' ||
        !digits(pos + 4, 2, mi) || text[pos + 6] != ':' || !digits(pos + 7, 2, s))
      return bad();
    pos += 9;
    if (pos < text.size()) {
      if (text.substr(pos) == "Z") {
        pos += 1;
      } else if ((text[pos] == '+' || text[pos] == '-') && text.size() == pos + 6 && text[pos + 3] == ':') {
        int oh = 0, om = 0;
        if (!digits(pos + 1, 2, oh) || !digits(pos + 4, 2, om)) return bad();
        offset_minutes = (text[pos] == '+' ? 1 : -1) * (oh * 60 + om);
        pos = text.size();
      } else {
        return bad();
      }
    }
  }
  if (pos != text.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return bad();
  // Days from the civil date (Howard Hinnant's algorithm).
  int yy = y - (mo <= 2);
  int era = (yy >= 0 ? yy : yy - 399) / 400;
  int yoe = yy - era * 400;
  int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60 + s - offset_minutes * 60);
}

struct Query::Node {
  enum class Kind { kAnd, kOr, kNot, kPredicate } kind = Kind::kPredicate;
  std::unique_ptr<Node> left, right;  // kAnd/kOr: both; kNot: left
  Subject subject = Subject::kAttribute;
  std::string attribute;  // kAttribute: the name
  Op op = Op::kEq;
  std::vector<std::string> args;
  std::optional<std::regex> regex;
  std::vector<double> dates;  // registeredAt: the args as epoch seconds

  bool Eval(const Facts& f) const {
    switch (kind) {
      case Kind::kAnd: return left->Eval(f) && right->Eval(f);
      case Kind::kOr: return left->Eval(f) || right->Eval(f);
      case Kind::kNot: return !left->Eval(f);
      case Kind::kPredicate: break;
    }
    std::optional<std::string> value;
    switch (subject) {
      case Subject::kAttribute:
        if (auto it = f.attributes.find(attribute); it != f.attributes.end()) value = it->second;
        break;
      case Subject::kEc2InstanceId: value = f.ec2_instance_id; break;
      case Subject::kRunningTasksCount: value = std::to_string(f.running_tasks); break;
      case Subject::kRegisteredAt: value = ""; break;
      case Subject::kAgentConnected: value = f.agent_connected ? "true" : "false"; break;
      case Subject::kAgentVersion: value = f.agent_version; break;
    }
    if (op == Op::kExists) return value.has_value();
    if (op == Op::kNotExists) return !value.has_value();
    if (!value) return op == Op::kNe || op == Op::kNotIn || op == Op::kNotMatch;
    // -1, 0, 1 comparing the instance's value with argument i.
    auto compare = [&](size_t i) -> int {
      if (subject == Subject::kRegisteredAt) {
        double a = f.registered_at, b = dates[i];
        return a < b ? -1 : (a > b ? 1 : 0);
      }
      if (subject == Subject::kAgentVersion) return CompareVersions(*value, args[i]);
      auto na = Number(*value), nb = Number(args[i]);
      if (na && nb) return *na < *nb ? -1 : (*na > *nb ? 1 : 0);
      return value->compare(args[i]) < 0 ? -1 : (*value == args[i] ? 0 : 1);
    };
    switch (op) {
      case Op::kEq: return compare(0) == 0;
      case Op::kNe: return compare(0) != 0;
      case Op::kGt: return compare(0) > 0;
      case Op::kGe: return compare(0) >= 0;
      case Op::kLt: return compare(0) < 0;
      case Op::kLe: return compare(0) <= 0;
      // std::regex backtracks: with CheckPattern's bound on the pattern, a bound on the value
      // bounds the work (128 is AWS's limit on an attribute value; longer ones never match).
      case Op::kMatch: return value->size() <= kMaxMatchedValue && std::regex_match(*value, *regex);
      case Op::kNotMatch: return value->size() > kMaxMatchedValue || !std::regex_match(*value, *regex);
      case Op::kIn:
      case Op::kNotIn: {
        bool found = false;
        for (size_t i = 0; i < args.size() && !found; ++i) found = compare(i) == 0;
        return op == Op::kIn ? found : !found;
      }
      default: return false;
    }
  }
};

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<std::unique_ptr<Query::Node>> ParseAll() {
    ASSIGN_OR_RETURN(auto root, ParseOr());
    SkipSpace();
    if (pos_ != text_.size()) return Invalid(fmt::format("unexpected '{}'.", text_.substr(pos_)));
    return root;
  }

 private:
  using NodePtr = std::unique_ptr<Query::Node>;

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool At(std::string_view s) {
    SkipSpace();
    return text_.substr(pos_, s.size()) == s;
  }
  // A keyword (and, or, not, in, exists) followed by a non-word character.
  bool AtWord(std::string_view w) {
    if (!At(w)) return false;
    size_t end = pos_ + w.size();
    return end == text_.size() || !IsWordChar(text_[end]);
  }
  static bool IsWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }
  static bool IsValueChar(char c) {
    return !std::isspace(static_cast<unsigned char>(c)) && c != '(' && c != ')' && c != '[' && c != ']' && c != ',';
  }

  StatusOr<NodePtr> ParseOr() {
    ASSIGN_OR_RETURN(NodePtr left, ParseAnd());
    while (AtWord("or") || At("||")) {
      pos_ += 2;
      ASSIGN_OR_RETURN(NodePtr right, ParseAnd());
      left = Combine(Query::Node::Kind::kOr, std::move(left), std::move(right));
    }
    return left;
  }

  StatusOr<NodePtr> ParseAnd() {
    ASSIGN_OR_RETURN(NodePtr left, ParseUnary());
    while (true) {
      if (AtWord("and")) {
        pos_ += 3;
      } else if (At("&&")) {
        pos_ += 2;
      } else {
        break;
      }
      ASSIGN_OR_RETURN(NodePtr right, ParseUnary());
      left = Combine(Query::Node::Kind::kAnd, std::move(left), std::move(right));
    }
    return left;
  }

  static NodePtr Combine(Query::Node::Kind kind, NodePtr left, NodePtr right) {
    auto n = std::make_unique<Query::Node>();
    n->kind = kind;
    n->left = std::move(left);
    n->right = std::move(right);
    return n;
  }

  StatusOr<NodePtr> ParseUnary() {
    if (++depth_ > 32) return Invalid("it is nested too deeply.");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (AtWord("not") || (At("!") && !At("!=") && !At("!~"))) {
      pos_ += text_[pos_] == '!' ? 1 : 3;
      ASSIGN_OR_RETURN(NodePtr inner, ParseUnary());
      auto n = std::make_unique<Query::Node>();
      n->kind = Query::Node::Kind::kNot;
      n->left = std::move(inner);
      return n;
    }
    if (At("(")) {
      ++pos_;
      ASSIGN_OR_RETURN(NodePtr inner, ParseOr());
      if (!At(")")) return Invalid("a '(' is not closed.");
      ++pos_;
      return inner;
    }
    return ParsePredicate();
  }

  // A subject: letters, digits and . _ - : / \ (attribute names allow no more).
  StatusOr<std::string> Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   std::string_view("._-:/\\").find(text_[pos_]) != std::string_view::npos))
      ++pos_;
    if (pos_ == start)
      return Invalid(pos_ == text_.size() ? "it ends too early." : fmt::format("unexpected '{}'.", text_.substr(pos_)));
    return std::string(text_.substr(start, pos_ - start));
  }

  StatusOr<std::string> Value() {
    SkipSpace();
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      char quote = text_[pos_++];
      size_t end = text_.find(quote, pos_);
      if (end == std::string_view::npos) return Invalid("a quoted value is not closed.");
      std::string v(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      return v;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && IsValueChar(text_[pos_])) ++pos_;
    if (pos_ == start) return Invalid("a value is missing.");
    return std::string(text_.substr(start, pos_ - start));
  }

  StatusOr<NodePtr> ParsePredicate() {
    auto n = std::make_unique<Query::Node>();
    ASSIGN_OR_RETURN(std::string subject, Word());
    if (subject.starts_with("attribute:")) {
      n->subject = Subject::kAttribute;
      n->attribute = subject.substr(10);
      if (n->attribute.empty()) return Invalid("an attribute name is missing.");
    } else if (subject == "ec2InstanceId") {
      n->subject = Subject::kEc2InstanceId;
    } else if (subject == "runningTasksCount") {
      n->subject = Subject::kRunningTasksCount;
    } else if (subject == "registeredAt") {
      n->subject = Subject::kRegisteredAt;
    } else if (subject == "agentConnected") {
      n->subject = Subject::kAgentConnected;
    } else if (subject == "agentVersion") {
      n->subject = Subject::kAgentVersion;
    } else {
      return Invalid(fmt::format("'{}' is not a supported subject (attribute:<name>, ec2InstanceId, "
                                 "runningTasksCount, registeredAt, agentConnected, agentVersion).",
                                 subject));
    }
    struct OpName {
      std::string_view text;
      Op op;
      bool word;
    };
    // Longest first, so ">=" is not read as ">".
    static constexpr OpName kOps[] = {
        {"!exists", Op::kNotExists, true}, {"exists", Op::kExists, true}, {"not_in", Op::kNotIn, true},
        {"!in", Op::kNotIn, true},         {"in", Op::kIn, true},         {"==", Op::kEq, false},
        {"!=", Op::kNe, false},            {">=", Op::kGe, false},        {"<=", Op::kLe, false},
        {"=~", Op::kMatch, false},         {"!~", Op::kNotMatch, false},  {">", Op::kGt, false},
        {"<", Op::kLt, false},
    };
    bool found = false;
    for (const auto& o : kOps) {
      if (o.word ? AtWord(o.text) : At(o.text)) {
        n->op = o.op;
        pos_ += o.text.size();
        found = true;
        break;
      }
    }
    if (!found) return Invalid(fmt::format("'{}' needs an operator.", subject));
    const bool ordered = n->op == Op::kGt || n->op == Op::kGe || n->op == Op::kLt || n->op == Op::kLe;
    if (n->op == Op::kExists || n->op == Op::kNotExists) {
      if (n->subject != Subject::kAttribute) return Invalid("exists applies to attribute:<name> only.");
      return n;
    }
    if (ordered && (n->subject == Subject::kEc2InstanceId || n->subject == Subject::kAgentConnected))
      return Invalid(fmt::format("'{}' cannot be compared with <, <=, > or >=.", subject));
    if (n->op == Op::kIn || n->op == Op::kNotIn) {
      SkipSpace();
      if (pos_ >= text_.size() || (text_[pos_] != '[' && text_[pos_] != '('))
        return Invalid("in and !in need a list: [a, b].");
      char close = text_[pos_] == '[' ? ']' : ')';
      ++pos_;
      while (true) {
        ASSIGN_OR_RETURN(std::string v, Value());
        n->args.push_back(std::move(v));
        SkipSpace();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < text_.size() && text_[pos_] == close) {
          ++pos_;
          break;
        }
        return Invalid("a list is not closed.");
      }
    } else {
      ASSIGN_OR_RETURN(std::string v, Value());
      n->args.push_back(std::move(v));
    }
    if (n->subject == Subject::kRegisteredAt) {
      if (n->op == Op::kMatch || n->op == Op::kNotMatch) return Invalid("registeredAt cannot be matched with =~.");
      for (const auto& a : n->args) {
        ASSIGN_OR_RETURN(double t, ParseQueryDate(a));
        n->dates.push_back(t);
      }
    }
    if (n->subject == Subject::kRunningTasksCount)
      for (const auto& a : n->args)
        if (!Number(a)) return Invalid(fmt::format("runningTasksCount compares with numbers, not '{}'.", a));
    if (n->op == Op::kMatch || n->op == Op::kNotMatch) {
      RETURN_IF_ERROR(CheckPattern(n->args[0]));
      try {
        n->regex.emplace(n->args[0], std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return Invalid(fmt::format("'{}' is not a valid pattern.", n->args[0]));
      }
    }
    return n;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Query::Query(std::unique_ptr<Node> root) : root_(std::move(root)) {}
Query::Query(Query&&) noexcept = default;
Query& Query::operator=(Query&&) noexcept = default;
Query::~Query() = default;

StatusOr<Query> Query::Parse(std::string_view text) {
  if (text.size() > 1024) return Invalid("it is longer than 1024 characters.");
  Parser p(text);
  ASSIGN_OR_RETURN(auto root, p.ParseAll());
  return Query(std::move(root));
}

bool Query::Matches(const Facts& facts) const { return root_->Eval(facts); }

}  // namespace paddock::ecs::instance
