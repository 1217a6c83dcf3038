#include "edge/retry_expression.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

namespace paddock::edge {

// A predicate: a conjunction or disjunction of predicates, IsNetworkError(), or a comparison of a
// function's value with a literal.
struct RetryExpression::Node {
  enum class Kind { kAnd, kOr, kNetworkError, kCompare };
  enum class Function { kAttempts, kResponseCode, kRequestMethod };
  Kind kind = Kind::kNetworkError;
  std::vector<std::shared_ptr<const Node>> children;  // kAnd, kOr
  Function function = Function::kAttempts;             // kCompare
  std::string op;                                      // kCompare: == != < > <= >=
  long long number = 0;                                // kCompare, an int function
  std::string text;                                    // kCompare, RequestMethod()
};

namespace {

using Node = RetryExpression::Node;
using NodePtr = std::shared_ptr<const Node>;

constexpr size_t kMaxText = 4096;
constexpr int kMaxDepth = 64;

// What a sub-expression is before it is used: a predicate, a function's value, or a literal.
struct IntFunction {
  Node::Function function;
};
struct StringFunction {
  Node::Function function;
};
struct IntLiteral {
  long long value;
};
struct StringLiteral {
  std::string value;
};
using Value = std::variant<NodePtr, IntFunction, StringFunction, IntLiteral, StringLiteral>;

std::string_view TypeName(const Value& v) {
  switch (v.index()) {
    case 0: return "predicate";
    case 1: return "int function";
    case 2: return "string function";
    case 3: return "int";
    default: return "string";
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<NodePtr> Parse() {
    ASSIGN_OR_RETURN(Value v, Or(0));
    Skip();
    if (at_ != text_.size()) return Error(fmt::format("unexpected '{}'", text_.substr(at_, 1)));
    if (v.index() != 0) return Error(fmt::format("expected predicate, got {}", TypeName(v)), 0);
    return std::get<NodePtr>(std::move(v));
  }

 private:
  Status Error(std::string what, std::optional<size_t> at = std::nullopt) const {
    return InvalidArgument(fmt::format("retryExpression \"{}\": {} at offset {}", text_, what, at.value_or(at_)));
  }

  void Skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool Take(std::string_view token) {
    Skip();
    if (text_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }

  StatusOr<NodePtr> AsPredicate(Value v, size_t at) {
    if (v.index() != 0) return Error(fmt::format("expected predicate, got {}", TypeName(v)), at);
    return std::get<NodePtr>(std::move(v));
  }

  // a || b || ...   and   a && b && ...  (&& binds tighter, as in Go)
  StatusOr<Value> Or(int depth) { return Chain(depth, "||", Node::Kind::kOr); }
  StatusOr<Value> And(int depth) { return Chain(depth, "&&", Node::Kind::kAnd); }
  StatusOr<Value> Chain(int depth, std::string_view op, Node::Kind kind) {
    Skip();
    size_t first_at = at_;
    ASSIGN_OR_RETURN(Value first, kind == Node::Kind::kOr ? And(depth) : Compare(depth));
    if (!Take(op)) return first;
    auto node = std::make_shared<Node>();
    node->kind = kind;
    ASSIGN_OR_RETURN(NodePtr left, AsPredicate(std::move(first), first_at));
    node->children.push_back(std::move(left));
    do {
      Skip();
      size_t next_at = at_;
      ASSIGN_OR_RETURN(Value next, kind == Node::Kind::kOr ? And(depth) : Compare(depth));
      ASSIGN_OR_RETURN(NodePtr right, AsPredicate(std::move(next), next_at));
      node->children.push_back(std::move(right));
    } while (Take(op));
    return Value(NodePtr(std::move(node)));
  }

  // operand [op operand]
  StatusOr<Value> Compare(int depth) {
    Skip();
    const size_t left_at = at_;
    ASSIGN_OR_RETURN(Value left, Operand(depth));
    std::string op;
    for (std::string_view candidate : {"==", "!=", "<=", ">=", "<", ">"})
      if (Take(candidate)) {
        op = std::string(candidate);
        break;
      }
    if (op.empty()) return left;
    Skip();
    const size_t right_at = at_;
    ASSIGN_OR_RETURN(Value right, Operand(depth));
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kCompare;
    node->op = op;
    const bool ordering = op != "==" && op != "!=";
    if (auto* f = std::get_if<IntFunction>(&left)) {
      auto* n = std::get_if<IntLiteral>(&right);
      if (n == nullptr) return Error(fmt::format("expected int, got {}", TypeName(right)), right_at);
      node->function = f->function;
      node->number = n->value;
    } else if (auto* s = std::get_if<StringFunction>(&left)) {
      if (ordering) return Error(fmt::format("unsupported argument for {}: string function", op), left_at);
      auto* t = std::get_if<StringLiteral>(&right);
      if (t == nullptr) return Error(fmt::format("expected string, got {}", TypeName(right)), right_at);
      node->function = s->function;
      node->text = t->value;
    } else {
      return Error(fmt::format("unsupported argument: {}", TypeName(left)), left_at);
    }
    return Value(NodePtr(std::move(node)));
  }

  StatusOr<Value> Operand(int depth) {
    Skip();
    if (at_ >= text_.size()) return Error("unexpected end of expression");
    const char c = text_[at_];
    if (c == '(') {
      if (depth >= kMaxDepth) return Error("expression nested too deeply");
      ++at_;
      ASSIGN_OR_RETURN(Value inner, Or(depth + 1));
      if (!Take(")")) return Error("expected ')'");
      return inner;
    }
    if (c == '!') return Error("unsupported operator: !");
    if (c == '"' || c == '`') return String();
    if (std::isdigit(static_cast<unsigned char>(c))) return Number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return Call();
    return Error(fmt::format("unexpected '{}'", std::string(1, c)));
  }

  StatusOr<Value> Number() {
    const size_t start = at_;
    while (at_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[at_]))) ++at_;
    std::string_view digits = text_.substr(start, at_ - start);
    int base = 10;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
      base = 16;
      digits.remove_prefix(2);
    }
    long long value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (ec != std::errc() || end != digits.data() + digits.size())
      return Error(fmt::format("invalid number {}", text_.substr(start, at_ - start)), start);
    return Value(IntLiteral{value});
  }

  // A Go string literal: "…" with \" \\ \n \t escapes, or `…` raw.
  StatusOr<Value> String() {
    const size_t start = at_;
    const char quote = text_[at_++];
    std::string out;
    while (at_ < text_.size() && text_[at_] != quote) {
      char c = text_[at_++];
      if (c == '\n') return Error("newline in string", start);
      if (c == '\\' && quote == '"') {
        if (at_ >= text_.size()) break;
        const char e = text_[at_++];
        switch (e) {
          case '"': case '\\': out += e; break;
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          default: return Error(fmt::format("unknown escape sequence \\{}", std::string(1, e)), at_ - 2);
        }
        continue;
      }
      out += c;
    }
    if (at_ >= text_.size()) return Error("string literal not terminated", start);
    ++at_;
    return Value(StringLiteral{std::move(out)});
  }

  StatusOr<Value> Call() {
    const size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    const std::string name(text_.substr(start, at_ - start));
    if (!Take("(")) return Error(fmt::format("{} is not a function call", name), start);
    if (!Take(")")) return Error(fmt::format("{} takes no arguments", name));
    if (name == "IsNetworkError") {
      auto node = std::make_shared<Node>();
      node->kind = Node::Kind::kNetworkError;
      return Value(NodePtr(std::move(node)));
    }
    if (name == "Attempts") return Value(IntFunction{Node::Function::kAttempts});
    if (name == "ResponseCode") return Value(IntFunction{Node::Function::kResponseCode});
    if (name == "RequestMethod") return Value(StringFunction{Node::Function::kRequestMethod});
    return Error(fmt::format("unsupported function: {}", name), start);
  }

  std::string_view text_;
  size_t at_ = 0;
};

bool Holds(const Node& n, const RetryContext& c) {
  switch (n.kind) {
    case Node::Kind::kAnd:
      for (const NodePtr& child : n.children)
        if (!Holds(*child, c)) return false;
      return true;
    case Node::Kind::kOr:
      for (const NodePtr& child : n.children)
        if (Holds(*child, c)) return true;
      return false;
    case Node::Kind::kNetworkError:
      return c.response_code == 502 || c.response_code == 504;
    case Node::Kind::kCompare:
      break;
  }
  if (n.function == Node::Function::kRequestMethod) return (c.method == n.text) == (n.op == "==");
  const long long v = n.function == Node::Function::kAttempts ? c.attempt : c.response_code;
  if (n.op == "==") return v == n.number;
  if (n.op == "!=") return v != n.number;
  if (n.op == "<") return v < n.number;
  if (n.op == ">") return v > n.number;
  if (n.op == "<=") return v <= n.number;
  return v >= n.number;
}

}  // namespace

StatusOr<RetryExpression> RetryExpression::Parse(std::string_view text) {
  if (text.size() > kMaxText)
    return InvalidArgument(fmt::format("retryExpression: longer than {} bytes", kMaxText));
  ASSIGN_OR_RETURN(NodePtr root, Parser(text).Parse());
  return RetryExpression(std::move(root));
}

bool RetryExpression::Matches(const RetryContext& context) const { return Holds(*root_, context); }

}  // namespace paddock::edge
