#include "edge/oxy_predicate.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace paddock::edge {

// A predicate: a conjunction or disjunction of predicates, a predicate function's call, or a
// comparison of a function's value with a literal.
struct OxyPredicate::Node {
  enum class Kind { kAnd, kOr, kCall, kCompare };
  Kind kind = Kind::kCall;
  std::vector<std::shared_ptr<const Node>> children;  // kAnd, kOr
  size_t function = 0;                                 // kCall, kCompare
  std::vector<OxyValue> arguments;                     // kCall, kCompare
  std::string op;                                      // kCompare: == != < > <= >=
  OxyValue literal;                                    // kCompare
};

namespace {

using Node = OxyPredicate::Node;
using NodePtr = std::shared_ptr<const Node>;

constexpr size_t kMaxText = 4096;
constexpr int kMaxDepth = 64;

// What a sub-expression is before it is used: a predicate, a function's value (its call), or a literal.
struct Call {
  size_t function;
  OxyType type;
  std::vector<OxyValue> arguments;
};
using Value = std::variant<NodePtr, Call, OxyValue>;

std::string_view TypeName(OxyType t) {
  switch (t) {
    case OxyType::kPredicate: return "predicate";
    case OxyType::kInt: return "int";
    case OxyType::kFloat: return "float64";
    case OxyType::kString: return "string";
  }
  return "";
}

std::string_view LiteralType(const OxyValue& v) {
  return v.index() == 0 ? "int" : v.index() == 1 ? "float64" : "string";
}

std::string TypeName(const Value& v) {
  if (v.index() == 0) return "predicate";
  if (const Call* c = std::get_if<Call>(&v)) return fmt::format("{} function", TypeName(c->type));
  return std::string(LiteralType(std::get<OxyValue>(v)));
}

bool OfType(const OxyValue& v, OxyType t) {
  return (t == OxyType::kInt && v.index() == 0) || (t == OxyType::kFloat && v.index() == 1) ||
         (t == OxyType::kString && v.index() == 2);
}

class Parser {
 public:
  Parser(std::string_view text, std::span<const OxyFunction> functions, std::string_view what)
      : text_(text), functions_(functions), what_(what) {}

  StatusOr<NodePtr> Parse() {
    ASSIGN_OR_RETURN(Value v, Or(0));
    Skip();
    if (at_ != text_.size()) return Error(fmt::format("unexpected '{}'", text_.substr(at_, 1)));
    return AsPredicate(std::move(v), 0);
  }

 private:
  Status Error(std::string problem, std::optional<size_t> at = std::nullopt) const {
    return InvalidArgument(fmt::format("{} \"{}\": {} at offset {}", what_, text_, problem, at.value_or(at_)));
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
    if (const Call* c = std::get_if<Call>(&v); c && c->type == OxyType::kPredicate) {
      auto node = std::make_shared<Node>();
      node->kind = Node::Kind::kCall;
      node->function = c->function;
      node->arguments = c->arguments;
      return NodePtr(std::move(node));
    }
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

  // operand [op literal]
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
    Call* f = std::get_if<Call>(&left);
    if (f == nullptr || f->type == OxyType::kPredicate)
      return Error(fmt::format("unsupported argument: {}", TypeName(left)), left_at);
    if (f->type == OxyType::kString && op != "==" && op != "!=")
      return Error(fmt::format("unsupported argument for {}: string function", op), left_at);
    const OxyValue* literal = std::get_if<OxyValue>(&right);
    if (literal == nullptr || !OfType(*literal, f->type))
      return Error(fmt::format("expected {}, got {}", TypeName(f->type), TypeName(right)), right_at);
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kCompare;
    node->op = op;
    node->function = f->function;
    node->arguments = std::move(f->arguments);
    node->literal = *literal;
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
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return CallOf();
    ASSIGN_OR_RETURN(OxyValue literal, Literal());
    return Value(std::move(literal));
  }

  StatusOr<OxyValue> Literal() {
    Skip();
    if (at_ >= text_.size()) return Error("unexpected end of expression");
    const char c = text_[at_];
    if (c == '"' || c == '`') return String();
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    return Error(fmt::format("unexpected '{}'", std::string(1, c)));
  }

  // Go's integer (decimal or 0x hex) and float literals.
  StatusOr<OxyValue> Number() {
    const size_t start = at_;
    auto digit_or_point = [&](size_t i) {
      const char ch = text_[i];
      if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.') return true;
      // an exponent's sign: 1e-3
      return (ch == '+' || ch == '-') && i > start && (text_[i - 1] == 'e' || text_[i - 1] == 'E') &&
             !(text_.substr(start, 2) == "0x" || text_.substr(start, 2) == "0X");
    };
    while (at_ < text_.size() && digit_or_point(at_)) ++at_;
    std::string_view literal = text_.substr(start, at_ - start);
    const bool hex = literal.size() > 2 && literal[0] == '0' && (literal[1] == 'x' || literal[1] == 'X');
    const bool is_float = !hex && literal.find_first_of(".eE") != std::string_view::npos;
    if (is_float) {
      double value = 0;
      auto [end, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
      if (ec != std::errc() || end != literal.data() + literal.size() || !std::isfinite(value))
        return Error(fmt::format("invalid number {}", literal), start);
      return OxyValue(value);
    }
    std::string_view digits = hex ? literal.substr(2) : literal;
    long long value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
      return Error(fmt::format("invalid number {}", literal), start);
    return OxyValue(value);
  }

  // A Go string literal: "…" with \" \\ \n \t escapes, or `…` raw.
  StatusOr<OxyValue> String() {
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
    return OxyValue(std::move(out));
  }

  // Name(literal, ...): the function's parameters take literals of their own types.
  StatusOr<Value> CallOf() {
    const size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    const std::string name(text_.substr(start, at_ - start));
    if (!Take("(")) return Error(fmt::format("{} is not a function call", name), start);
    size_t index = 0;
    while (index < functions_.size() && functions_[index].name != name) ++index;
    if (index == functions_.size()) return Error(fmt::format("unsupported function: {}", name), start);
    const OxyFunction& f = functions_[index];
    std::vector<OxyValue> arguments;
    if (!Take(")")) {
      if (f.params.empty()) return Error(fmt::format("{} takes no arguments", name));
      do {
        const size_t arg_at = at_;
        ASSIGN_OR_RETURN(OxyValue arg, Literal());
        if (arguments.size() < f.params.size()) {
          const OxyType want = f.params[arguments.size()] == 'i' ? OxyType::kInt : OxyType::kFloat;
          if (!OfType(arg, want))
            return Error(fmt::format("{}: argument {}: expected {}, got {}", name, arguments.size() + 1,
                                     TypeName(want), LiteralType(arg)),
                         arg_at);
        }
        arguments.push_back(std::move(arg));
      } while (Take(","));
      if (!Take(")")) return Error("expected ')'");
    }
    if (arguments.size() != f.params.size())
      return Error(fmt::format("{} takes {} arguments, got {}", name, f.params.size(), arguments.size()), start);
    return Value(Call{index, f.result, std::move(arguments)});
  }

  std::string_view text_;
  std::span<const OxyFunction> functions_;
  std::string_view what_;
  size_t at_ = 0;
};

template <typename T>
bool Compares(const T& v, const std::string& op, const T& literal) {
  if (op == "==") return v == literal;
  if (op == "!=") return v != literal;
  if (op == "<") return v < literal;
  if (op == ">") return v > literal;
  if (op == "<=") return v <= literal;
  return v >= literal;
}

bool Evaluate(const Node& n, const OxyPredicate::Values& value) {
  switch (n.kind) {
    case Node::Kind::kAnd:
      for (const NodePtr& child : n.children)
        if (!Evaluate(*child, value)) return false;
      return true;
    case Node::Kind::kOr:
      for (const NodePtr& child : n.children)
        if (Evaluate(*child, value)) return true;
      return false;
    case Node::Kind::kCall: {
      const OxyValue v = value(n.function, n.arguments);
      return v.index() == 0 && std::get<long long>(v) != 0;
    }
    case Node::Kind::kCompare:
      break;
  }
  const OxyValue v = value(n.function, n.arguments);
  if (v.index() != n.literal.index()) return false;  // a function that gave another type than it says
  switch (v.index()) {
    case 0: return Compares(std::get<long long>(v), n.op, std::get<long long>(n.literal));
    case 1: return Compares(std::get<double>(v), n.op, std::get<double>(n.literal));
    default: return Compares(std::get<std::string>(v), n.op, std::get<std::string>(n.literal));
  }
}

}  // namespace

StatusOr<OxyPredicate> OxyPredicate::Parse(std::string_view text, std::span<const OxyFunction> functions,
                                           std::string_view what) {
  if (text.size() > kMaxText) return InvalidArgument(fmt::format("{}: longer than {} bytes", what, kMaxText));
  ASSIGN_OR_RETURN(NodePtr root, Parser(text, functions, what).Parse());
  return OxyPredicate(std::move(root));
}

bool OxyPredicate::Holds(const Values& value) const { return Evaluate(*root_, value); }

}  // namespace paddock::edge
