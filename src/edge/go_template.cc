#include "edge/go_template.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "common/encoding.h"
#include "edge/ecs_provider.h"
#include "edge/internal/go_json.h"

namespace paddock::edge {
namespace {

using internal::GoQuote;  // Go's strconv.Quote, as %q and Go's messages write strings

// ---- values ----

struct Value;
using List = std::vector<Value>;
using Dict = std::map<std::string, Value>;

// Go's interface{} as templates see it: nil, bool, int, float64, string, []interface{},
// map[string]interface{} (sprig's list and dict share their storage, as Go's slices and maps do).
struct Value {
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<List>, std::shared_ptr<Dict>> v;
  Value() = default;
  Value(bool b) : v(b) {}  // NOLINT: literals convert
  Value(int64_t i) : v(i) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(std::shared_ptr<List> l) : v(std::move(l)) {}
  Value(std::shared_ptr<Dict> d) : v(std::move(d)) {}
  bool nil() const { return v.index() == 0; }
  const bool* b() const { return std::get_if<bool>(&v); }
  const int64_t* i() const { return std::get_if<int64_t>(&v); }
  const double* f() const { return std::get_if<double>(&v); }
  const std::string* s() const { return std::get_if<std::string>(&v); }
  List* list() const { auto p = std::get_if<std::shared_ptr<List>>(&v); return p ? p->get() : nullptr; }
  Dict* dict() const { auto p = std::get_if<std::shared_ptr<Dict>>(&v); return p ? p->get() : nullptr; }
};

Value NewList(List l = {}) { return Value(std::make_shared<List>(std::move(l))); }
Value NewDict(Dict d = {}) { return Value(std::make_shared<Dict>(std::move(d))); }

std::string_view TypeName(const Value& v) {
  switch (v.v.index()) {
    case 0: return "<nil>";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "float64";
    case 4: return "string";
    case 5: return "[]interface {}";
    default: return "map[string]interface {}";
  }
}

// Go's truth for if/with/and/or/not: the zero value and empty collections are false.
bool Truth(const Value& v) {
  if (v.nil()) return false;
  if (auto b = v.b()) return *b;
  if (auto i = v.i()) return *i != 0;
  if (auto f = v.f()) return *f != 0;
  if (auto s = v.s()) return !s->empty();
  if (auto l = v.list()) return !l->empty();
  return !v.dict()->empty();
}

std::string FormatFloat(double d) {
  // Go's %v of a float64: strconv 'g' with the shortest representation, exponent as e+06.
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (std::isnan(d)) return "NaN";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  const size_t e = s.find('e');
  if (e == std::string::npos) {
    // Go switches to exponent form from 1e21 (and below 1e-4); to_chars's shortest picks its own.
    return s;
  }
  std::string mantissa = s.substr(0, e), exp = s.substr(e + 1);
  const char sign = exp[0] == '-' ? '-' : '+';
  if (exp[0] == '-' || exp[0] == '+') exp = exp.substr(1);
  if (exp.size() < 2) exp = "0" + exp;
  return mantissa + "e" + sign + exp;
}

// Go's fmt %v.
std::string Print(const Value& v, bool top = true) {
  if (v.nil()) return top ? "<no value>" : "<nil>";
  if (auto b = v.b()) return *b ? "true" : "false";
  if (auto i = v.i()) return std::to_string(*i);
  if (auto f = v.f()) return FormatFloat(*f);
  if (auto s = v.s()) return *s;
  if (auto l = v.list()) {
    std::string out = "[";
    for (size_t k = 0; k < l->size(); ++k) out += (k ? " " : "") + Print((*l)[k], false);
    return out + "]";
  }
  std::string out = "map[";
  bool first = true;
  for (const auto& [k, e] : *v.dict()) {
    out += (first ? "" : " ") + k + ":" + Print(e, false);
    first = false;
  }
  return out + "]";
}

// ---- the parse tree ----

struct Pipeline;

struct Operand {
  enum class Kind { kLiteral, kVariable, kDot, kField, kFunction, kPipeline, kNil };
  Kind kind = Kind::kLiteral;
  Value literal;
  std::string name;                  // variable ("$x") or function
  std::vector<std::string> fields;   // the chain after it (`.a.b`)
  std::shared_ptr<Pipeline> pipe;    // parenthesized
};

struct Command {
  std::vector<Operand> args;  // args[0] a function: called with the rest; otherwise alone
};

struct Pipeline {
  int line = 1;
  std::vector<std::string> decl;  // `$x :=` / `$i, $e :=`
  bool assign = false;            // `$x =`
  std::vector<Command> commands;
};

struct Node;
using NodeList = std::vector<std::shared_ptr<Node>>;

struct Node {
  enum class Kind { kText, kAction, kIf, kRange, kWith, kBreak, kContinue, kTemplate };
  Kind kind = Kind::kText;
  int line = 1;
  std::string text;                // kText; kTemplate: the template's name
  std::shared_ptr<Pipeline> pipe;  // may be null for kTemplate
  NodeList list, else_list;
};

// ---- lexing ----

struct Token {
  enum class Kind { kText, kLeft, kRight, kIdent, kVariable, kField, kDot, kString, kNumber, kChar, kLeftParen,
                    kRightParen, kPipe, kDeclare, kAssign, kComma, kEof };
  Kind kind = Kind::kEof;
  std::string text;
  int line = 1;
  bool space_before = false;
};

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  StatusOr<std::vector<Token>> Run() {
    while (pos_ < src_.size()) {
      const size_t open = src_.find("{{", pos_);
      std::string_view text = src_.substr(pos_, open == std::string_view::npos ? std::string_view::npos : open - pos_);
      bool trim_left = open != std::string_view::npos && open + 3 < src_.size() + 1 && src_.substr(open).starts_with("{{-") &&
                       open + 3 < src_.size() && IsSpace(src_[open + 3]);
      if (trim_left) text = RightTrim(text);
      if (!text.empty()) Emit(Token::Kind::kText, std::string(text));
      line_ += Lines(src_.substr(pos_, (open == std::string_view::npos ? src_.size() : open) - pos_));
      if (open == std::string_view::npos) break;
      pos_ = open + (trim_left ? 4 : 2);
      // A comment: {{/* … */}} (with its trim markers).
      size_t p = pos_;
      while (p < src_.size() && IsSpace(src_[p]) && trim_left) ++p;
      if (src_.substr(p).starts_with("/*")) {
        const size_t close = src_.find("*/", p + 2);
        if (close == std::string_view::npos) return Error("unclosed comment");
        line_ += Lines(src_.substr(pos_, close - pos_));
        size_t q = close + 2;
        bool trim_right = false;
        if (src_.substr(q).starts_with(" -}}")) {
          trim_right = true;
          q += 4;
        } else if (src_.substr(q).starts_with("}}")) {
          q += 2;
        } else {
          return Error("comment ends before closing delimiter");
        }
        pos_ = trim_right ? SkipSpace(q) : q;
        continue;
      }
      Emit(Token::Kind::kLeft, "{{");
      RETURN_IF_ERROR(Action());
    }
    Emit(Token::Kind::kEof, "");
    return std::move(tokens_);
  }

 private:
  static bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static int Lines(std::string_view s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
  static std::string_view RightTrim(std::string_view s) {
    while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
    return s;
  }
  size_t SkipSpace(size_t p) {
    while (p < src_.size() && IsSpace(src_[p])) {
      if (src_[p] == '\n') ++line_;
      ++p;
    }
    return p;
  }
  Status Error(std::string_view what) { return InvalidArgument(fmt::format("{}:{}: {}", "", line_, what)); }
  void Emit(Token::Kind k, std::string text) {
    tokens_.push_back(Token{k, std::move(text), line_, space_});
    space_ = false;
  }
  static bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  Status Action() {
    while (true) {
      if (pos_ >= src_.size()) return Error("unclosed action");
      const char c = src_[pos_];
      if (IsSpace(c)) {
        // " -}}": the right trim marker.
        size_t p = pos_;
        while (p < src_.size() && IsSpace(src_[p])) ++p;
        if (src_.substr(p).starts_with("-}}") && p > pos_) {
          line_ += Lines(src_.substr(pos_, p - pos_));
          Emit(Token::Kind::kRight, "}}");
          pos_ = SkipSpace(p + 3);
          return OkStatus();
        }
        line_ += Lines(src_.substr(pos_, p - pos_));
        pos_ = p;
        space_ = true;
        continue;
      }
      if (src_.substr(pos_).starts_with("}}")) {
        Emit(Token::Kind::kRight, "}}");
        pos_ += 2;
        return OkStatus();
      }
      if (c == '(') { Emit(Token::Kind::kLeftParen, "("); ++pos_; continue; }
      if (c == ')') { Emit(Token::Kind::kRightParen, ")"); ++pos_; continue; }
      if (c == '|') { Emit(Token::Kind::kPipe, "|"); ++pos_; continue; }
      if (c == ',') { Emit(Token::Kind::kComma, ","); ++pos_; continue; }
      if (c == '=') { Emit(Token::Kind::kAssign, "="); ++pos_; continue; }
      if (c == ':') {
        if (pos_ + 1 < src_.size() && src_[pos_ + 1] == '=') {
          Emit(Token::Kind::kDeclare, ":=");
          pos_ += 2;
          continue;
        }
        return Error("expected :=");
      }
      if (c == '"' || c == '`') {
        const size_t start = pos_++;
        while (pos_ < src_.size() && src_[pos_] != c) {
          if (c == '"' && src_[pos_] == '\\') ++pos_;
          if (c == '"' && pos_ < src_.size() && src_[pos_] == '\n') return Error("unterminated quoted string");
          ++pos_;
        }
        if (pos_ >= src_.size()) return Error(c == '"' ? "unterminated quoted string" : "unterminated raw quoted string");
        ++pos_;
        line_ += Lines(src_.substr(start, pos_ - start));
        Emit(Token::Kind::kString, std::string(src_.substr(start, pos_ - start)));
        continue;
      }
      if (c == '\'') {
        const size_t start = pos_++;
        while (pos_ < src_.size() && src_[pos_] != '\'') {
          if (src_[pos_] == '\\') ++pos_;
          ++pos_;
        }
        if (pos_ >= src_.size()) return Error("unterminated character constant");
        ++pos_;
        Emit(Token::Kind::kChar, std::string(src_.substr(start, pos_ - start)));
        continue;
      }
      if (c == '$') {
        const size_t start = pos_++;
        while (pos_ < src_.size() && IsAlnum(src_[pos_])) ++pos_;
        Emit(Token::Kind::kVariable, std::string(src_.substr(start, pos_ - start)));
        continue;
      }
      if (c == '.') {
        if (pos_ + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
          RETURN_IF_ERROR(Number());
          continue;
        }
        const size_t start = ++pos_;
        while (pos_ < src_.size() && IsAlnum(src_[pos_])) ++pos_;
        if (pos_ == start) {
          Emit(Token::Kind::kDot, ".");
        } else {
          Emit(Token::Kind::kField, std::string(src_.substr(start, pos_ - start)));
        }
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '+') && pos_ + 1 < src_.size() &&
                                                          std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))) {
        RETURN_IF_ERROR(Number());
        continue;
      }
      if (IsAlnum(c)) {
        const size_t start = pos_;
        while (pos_ < src_.size() && IsAlnum(src_[pos_])) ++pos_;
        Emit(Token::Kind::kIdent, std::string(src_.substr(start, pos_ - start)));
        continue;
      }
      return Error(fmt::format("unexpected {} in command", GoQuote(std::string(1, c))));
    }
  }

  Status Number() {
    const size_t start = pos_;
    if (src_[pos_] == '-' || src_[pos_] == '+') ++pos_;
    while (pos_ < src_.size() && (IsAlnum(src_[pos_]) || src_[pos_] == '.' ||
                                  ((src_[pos_] == '-' || src_[pos_] == '+') &&
                                   (src_[pos_ - 1] == 'e' || src_[pos_ - 1] == 'E'))))
      ++pos_;
    Emit(Token::Kind::kNumber, std::string(src_.substr(start, pos_ - start)));
    return OkStatus();
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool space_ = false;
  std::vector<Token> tokens_;
};

// ---- parsing ----

StatusOr<std::string> Unquote(const std::string& lit) {
  if (lit.front() == '`') return lit.substr(1, lit.size() - 2);
  std::string out;
  for (size_t k = 1; k + 1 < lit.size(); ++k) {
    char c = lit[k];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++k + 1 >= lit.size()) return InvalidArgument("bad escape");
    switch (lit[k]) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case 'x': {
        if (k + 2 >= lit.size() - 1 + 1) return InvalidArgument("bad escape");
        int v = 0;
        auto [p, ec] = std::from_chars(lit.data() + k + 1, lit.data() + k + 3, v, 16);
        if (ec != std::errc() || p != lit.data() + k + 3) return InvalidArgument("bad escape");
        out += static_cast<char>(v);
        k += 2;
        break;
      }
      case 'u': case 'U': {
        const size_t n = lit[k] == 'u' ? 4 : 8;
        uint32_t cp = 0;
        auto [p, ec] = std::from_chars(lit.data() + k + 1, lit.data() + std::min(lit.size() - 1, k + 1 + n), cp, 16);
        if (ec != std::errc() || p != lit.data() + k + 1 + n) return InvalidArgument("bad escape");
        AppendUtf8(out, cp);
        k += n;
        break;
      }
      default: return InvalidArgument(fmt::format("unknown escape sequence \\{}", lit[k]));
    }
  }
  return out;
}

StatusOr<Value> NumberValue(const std::string& text) {
  int64_t i = 0;
  std::string_view body = text;
  bool negative = false;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  int base = 10;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) base = 16, body.remove_prefix(2);
  else if (body.size() > 2 && body[0] == '0' && (body[1] == 'o' || body[1] == 'O')) base = 8, body.remove_prefix(2);
  else if (body.size() > 2 && body[0] == '0' && (body[1] == 'b' || body[1] == 'B')) base = 2, body.remove_prefix(2);
  else if (body.size() > 1 && body[0] == '0' && body.find_first_of(".eE") == std::string_view::npos) base = 8, body.remove_prefix(1);
  std::string digits;
  for (char c : body)
    if (c != '_') digits += c;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i, base);
  if (ec == std::errc() && p == digits.data() + digits.size()) return Value(negative ? -i : i);
  double d = 0;
  auto [q, fec] = std::from_chars(text.data() + (text[0] == '+' ? 1 : 0), text.data() + text.size(), d);
  if (fec == std::errc() && q == text.data() + text.size()) return Value(d);
  return InvalidArgument(fmt::format("bad number syntax: {}", GoQuote(text)));
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::map<std::string, NodeList>& templates)
      : t_(std::move(tokens)), templates_(templates) {}

  StatusOr<NodeList> Run() {
    NodeList list;
    ASSIGN_OR_RETURN(std::string end, List(list));
    if (!end.empty()) return Error(fmt::format("unexpected {{{{{}}}}}", end));
    return list;
  }

 private:
  const Token& Peek() const { return t_[p_]; }
  const Token& Next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  Status Error(std::string_view what) const { return InvalidArgument(fmt::format(":{}: {}", Peek().line, what)); }
  bool IsKeyword(std::string_view k) const {
    return p_ + 1 < t_.size() && t_[p_].kind == Token::Kind::kLeft && t_[p_ + 1].kind == Token::Kind::kIdent &&
           t_[p_ + 1].text == k;
  }

  // Nodes until {{end}} or {{else…}} (returned: "end", "else"; "" at the end of input). On "else"
  // the parser stands after the `else` word.
  StatusOr<std::string> List(NodeList& out) {
    while (true) {
      const Token& tok = Peek();
      if (tok.kind == Token::Kind::kEof) return std::string();
      if (tok.kind == Token::Kind::kText) {
        auto n = std::make_shared<Node>();
        n->text = Next().text;
        n->line = tok.line;
        out.push_back(n);
        continue;
      }
      // kLeft
      Next();
      const Token& word = Peek();
      if (word.kind == Token::Kind::kIdent) {
        const std::string w = word.text;
        if (w == "end") {
          Next();
          RETURN_IF_ERROR(Expect(Token::Kind::kRight, "end"));
          return std::string("end");
        }
        if (w == "else") {
          Next();
          return std::string("else");
        }
        if (w == "if" || w == "range" || w == "with") {
          Next();
          ASSIGN_OR_RETURN(auto n, Control(w));
          out.push_back(n);
          continue;
        }
        if (w == "break" || w == "continue") {
          Next();
          if (loops_ == 0) return Error(fmt::format("{{{{{}}}}} outside {{{{range}}}}", w));
          RETURN_IF_ERROR(Expect(Token::Kind::kRight, w));
          auto n = std::make_shared<Node>();
          n->kind = w == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
          out.push_back(n);
          continue;
        }
        if (w == "define" || w == "block" || w == "template") {
          Next();
          ASSIGN_OR_RETURN(auto n, Template(w));
          if (n) out.push_back(n);
          continue;
        }
      }
      auto n = std::make_shared<Node>();
      n->kind = Node::Kind::kAction;
      n->line = word.line;
      ASSIGN_OR_RETURN(n->pipe, Pipe("command", /*decl_ok=*/true));
      out.push_back(n);
    }
  }

  Status Expect(Token::Kind k, std::string_view context) {
    if (Peek().kind != k) return Error(fmt::format("unexpected {} in {}", Describe(Peek()), context));
    Next();
    return OkStatus();
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::kEof: return "EOF";
      case Token::Kind::kRight: return "\"}}\"";
      default: return GoQuote(t.text);
    }
  }

  StatusOr<std::shared_ptr<Node>> Control(const std::string& w) {
    auto n = std::make_shared<Node>();
    n->kind = w == "if" ? Node::Kind::kIf : w == "range" ? Node::Kind::kRange : Node::Kind::kWith;
    n->line = Peek().line;
    ASSIGN_OR_RETURN(n->pipe, Pipe(w, /*decl_ok=*/true));
    if (n->kind == Node::Kind::kRange) ++loops_;
    ASSIGN_OR_RETURN(std::string end, List(n->list));
    if (n->kind == Node::Kind::kRange) --loops_;
    if (end.empty()) return Error(fmt::format("unexpected EOF"));
    if (end == "else") {
      // `else if …` / `else with …`: one nested node whose end is this one's.
      if (Peek().kind == Token::Kind::kIdent && (Peek().text == "if" || Peek().text == "with") && n->kind != Node::Kind::kRange &&
          ((Peek().text == "if") == (n->kind == Node::Kind::kIf))) {
        const std::string nested = Next().text;
        ASSIGN_OR_RETURN(auto inner, Control(nested));
        n->else_list.push_back(inner);
        return n;
      }
      RETURN_IF_ERROR(Expect(Token::Kind::kRight, "else"));
      ASSIGN_OR_RETURN(std::string end2, List(n->else_list));
      if (end2 != "end") return Error(end2.empty() ? "unexpected EOF" : "expected end; found {{else}}");
    }
    return n;
  }

  // {{define "name"}}…{{end}}, {{template "name" pipeline}}, {{block "name" pipeline}}…{{end}}.
  StatusOr<std::shared_ptr<Node>> Template(const std::string& w) {
    if (Peek().kind != Token::Kind::kString) return Error(fmt::format("unexpected {} in {} clause", Describe(Peek()), w));
    ASSIGN_OR_RETURN(std::string name, Unquote(Next().text));
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::kTemplate;
    n->text = name;
    n->line = Peek().line;
    if (w == "define") {
      RETURN_IF_ERROR(Expect(Token::Kind::kRight, "define clause"));
      NodeList body;
      ASSIGN_OR_RETURN(std::string end, List(body));
      if (end != "end") return Error("unexpected EOF in define");
      templates_[name] = std::move(body);
      return std::shared_ptr<Node>();
    }
    if (Peek().kind != Token::Kind::kRight) {
      ASSIGN_OR_RETURN(n->pipe, Pipe(w, /*decl_ok=*/false));
    } else {
      Next();
    }
    if (w == "block") {
      NodeList body;
      ASSIGN_OR_RETURN(std::string end, List(body));
      if (end != "end") return Error("unexpected EOF in block");
      templates_[name] = std::move(body);
    }
    return n;
  }

  // A pipeline up to its "}}" (or ")" when `paren`), with an optional declaration.
  StatusOr<std::shared_ptr<Pipeline>> Pipe(std::string_view context, bool decl_ok, bool paren = false) {
    auto pipe = std::make_shared<Pipeline>();
    pipe->line = Peek().line;
    if (decl_ok && Peek().kind == Token::Kind::kVariable) {
      // `$x :=`, `$x =`, `$i, $e :=`: look ahead without consuming a plain `$x` operand.
      size_t q = p_;
      std::vector<std::string> vars{t_[q].text};
      ++q;
      if (t_[q].kind == Token::Kind::kComma && t_[q + 1].kind == Token::Kind::kVariable) {
        vars.push_back(t_[q + 1].text);
        q += 2;
      }
      if (t_[q].kind == Token::Kind::kDeclare || (t_[q].kind == Token::Kind::kAssign && vars.size() == 1)) {
        pipe->assign = t_[q].kind == Token::Kind::kAssign;
        pipe->decl = vars;
        if (pipe->assign && !declared_.contains(vars[0])) return Error(fmt::format("undefined variable {}", GoQuote(vars[0])));
        p_ = q + 1;
        if (vars.size() == 2 && context != "range") return Error("too many declarations in command");
        for (const auto& v : vars)
          if (!pipe->assign) declared_.insert(v);
      }
    }
    while (true) {
      Command cmd;
      while (true) {
        const Token& tok = Peek();
        if (tok.kind == Token::Kind::kRight || tok.kind == Token::Kind::kPipe ||
            (paren && tok.kind == Token::Kind::kRightParen))
          break;
        if (tok.kind == Token::Kind::kEof) return Error(fmt::format("unclosed action"));
        if (!cmd.args.empty() && !tok.space_before && tok.kind != Token::Kind::kLeftParen)
          return Error(fmt::format("missing space?"));
        ASSIGN_OR_RETURN(Operand op, Term());
        cmd.args.push_back(std::move(op));
      }
      if (cmd.args.empty()) return Error(fmt::format("missing value for {}", context));
      pipe->commands.push_back(std::move(cmd));
      if (Peek().kind == Token::Kind::kPipe) {
        Next();
        continue;
      }
      Next();  // "}}" or ")"
      break;
    }
    return pipe;
  }

  StatusOr<Operand> Term() {
    const Token tok = Next();
    Operand op;
    switch (tok.kind) {
      case Token::Kind::kString: {
        ASSIGN_OR_RETURN(std::string s, Unquote(tok.text));
        op.literal = Value(std::move(s));
        break;
      }
      case Token::Kind::kChar: {
        ASSIGN_OR_RETURN(std::string s, Unquote("\"" + tok.text.substr(1, tok.text.size() - 2) + "\""));
        op.literal = Value(static_cast<int64_t>(static_cast<unsigned char>(s.empty() ? 0 : s[0])));
        break;
      }
      case Token::Kind::kNumber: {
        StatusOr<Value> v = NumberValue(tok.text);
        if (!v.ok()) return Error(v.status().message());
        op.literal = std::move(*v);
        break;
      }
      case Token::Kind::kVariable:
        if (!declared_.contains(tok.text) && tok.text != "$") return Error(fmt::format("undefined variable {}", GoQuote(tok.text)));
        op.kind = Operand::Kind::kVariable;
        op.name = tok.text;
        break;
      case Token::Kind::kDot: op.kind = Operand::Kind::kDot; break;
      case Token::Kind::kField:
        op.kind = Operand::Kind::kField;
        op.fields.push_back(tok.text);
        break;
      case Token::Kind::kLeftParen: {
        op.kind = Operand::Kind::kPipeline;
        ASSIGN_OR_RETURN(op.pipe, Pipe("parenthesized pipeline", /*decl_ok=*/false, /*paren=*/true));
        break;
      }
      case Token::Kind::kIdent:
        if (tok.text == "true" || tok.text == "false") {
          op.literal = Value(tok.text == "true");
        } else if (tok.text == "nil") {
          op.kind = Operand::Kind::kNil;
        } else {
          op.kind = Operand::Kind::kFunction;
          op.name = tok.text;
          if (!Known(tok.text)) {
            --p_;
            return Error(fmt::format("function {} not defined", GoQuote(tok.text)));
          }
        }
        break;
      default: --p_; return Error(fmt::format("unexpected {} in operand", Describe(tok)));
    }
    // A field chain right after it: `$x.a.b`, `(…).a`, `.a.b`.
    while (Peek().kind == Token::Kind::kField && !Peek().space_before) op.fields.push_back(Next().text);
    return op;
  }

  static bool Known(std::string_view name);

  std::vector<Token> t_;
  size_t p_ = 0;
  int loops_ = 0;
  std::set<std::string> declared_{"$"};
  std::map<std::string, NodeList>& templates_;
};

// ---- functions ----

// What the template being run may still spend, in steps (a step is one node or call, or 64 bytes
// or one element a function makes): functions that make big values ask before they make them.
thread_local size_t g_budget = 0;

Status Afford(size_t cost, std::string_view fn) {
  if (cost > g_budget) return InvalidArgument(fmt::format("{}: the result is too large for the template's bounds", fn));
  return OkStatus();
}

// Lists and dicts nest at most this deep (so printing, encoding and costing them never recurse far),
// and a dict never holds itself.
constexpr int kMaxNesting = 100;

int Depth(const Value& v, int limit = kMaxNesting + 1) {
  if (limit == 0) return 0;
  int d = 0;
  if (auto l = v.list())
    for (const Value& e : *l) d = std::max(d, Depth(e, limit - 1));
  else if (auto m = v.dict())
    for (const auto& [k, e] : *m) d = std::max(d, Depth(e, limit - 1));
  else
    return 0;
  return d + 1;
}

bool Holds(const Value& v, const Dict* target, int limit = kMaxNesting + 1) {
  if (limit == 0) return false;
  if (auto m = v.dict()) {
    if (m == target) return true;
    for (const auto& [k, e] : *m)
      if (Holds(e, target, limit - 1)) return true;
  } else if (auto l = v.list()) {
    for (const Value& e : *l)
      if (Holds(e, target, limit - 1)) return true;
  }
  return false;
}

Status Nests(const Value& v) {
  if (Depth(v) > kMaxNesting) return InvalidArgument(fmt::format("lists and dicts nest at most {} deep", kMaxNesting));
  return OkStatus();
}

// What a value costs to make: 64 bytes or one element a step.
size_t Cost(const Value& v) {
  if (auto s = v.s()) return s->size() / 64;
  if (auto l = v.list()) {
    size_t c = l->size();
    for (const Value& e : *l) c += Cost(e);
    return c;
  }
  if (auto d = v.dict()) {
    size_t c = d->size();
    for (const auto& [k, e] : *d) c += k.size() / 64 + Cost(e);
    return c;
  }
  return 0;
}

struct Exec;
using Args = std::vector<Value>;
using Function = std::function<StatusOr<Value>(Args&)>;

StatusOr<int64_t> ToInt(const Value& v) {
  if (auto i = v.i()) return *i;
  if (auto f = v.f()) return static_cast<int64_t>(*f);
  if (auto b = v.b()) return static_cast<int64_t>(*b);
  if (v.nil()) return int64_t{0};
  if (auto s = v.s()) {
    StatusOr<Value> n = NumberValue(*s);  // sprig's cast.ToInt64: a string that parses, else 0
    if (n.ok() && n->i()) return *n->i();
    return int64_t{0};
  }
  return InvalidArgument(fmt::format("unable to cast {} of type {} to int64", Print(v), TypeName(v)));
}

std::string Str(const Value& v) { return v.nil() ? "" : Print(v, false); }

Status Need(const Args& a, size_t n, std::string_view fn) {
  if (a.size() != n) return InvalidArgument(fmt::format("wrong number of args for {}: want {} got {}", fn, n, a.size()));
  return OkStatus();
}

// Go's basic comparison for eq/lt: ints with ints, floats with floats (an int literal and a float
// compare as numbers), strings, bools; anything else is "incompatible types for comparison".
StatusOr<int> Compare(const Value& a, const Value& b, bool ordered) {
  if (a.i() && b.i()) return *a.i() < *b.i() ? -1 : *a.i() > *b.i() ? 1 : 0;
  if ((a.i() || a.f()) && (b.i() || b.f())) {
    const double x = a.i() ? static_cast<double>(*a.i()) : *a.f(), y = b.i() ? static_cast<double>(*b.i()) : *b.f();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.s() && b.s()) return a.s()->compare(*b.s()) < 0 ? -1 : a.s()->compare(*b.s()) > 0 ? 1 : 0;
  if (a.b() && b.b() && !ordered) return *a.b() == *b.b() ? 0 : 1;
  if (a.nil() && b.nil() && !ordered) return 0;
  if (ordered) return InvalidArgument(fmt::format("invalid type for comparison"));
  return InvalidArgument("incompatible types for comparison");
}

// fmt.Sprintf for the verbs templates use: %v %s %d %q %x %X %f %g %e %t %c %%, with flags
// (- + 0 space #), width and precision.
StatusOr<std::string> Sprintf(std::string_view format, const Args& args, size_t first) {
  std::string out;
  size_t next = first;
  for (size_t k = 0; k < format.size(); ++k) {
    if (format[k] != '%') {
      out += format[k];
      continue;
    }
    if (++k >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    std::string spec = "{:";
    std::string flags;
    while (k < format.size() && std::string_view("-+ 0#").find(format[k]) != std::string_view::npos) flags += format[k++];
    std::string width, precision;
    while (k < format.size() && std::isdigit(static_cast<unsigned char>(format[k]))) width += format[k++];
    if (k < format.size() && format[k] == '.') {
      precision = ".";
      ++k;
      while (k < format.size() && std::isdigit(static_cast<unsigned char>(format[k]))) precision += format[k++];
      if (precision == ".") precision = ".0";
    }
    if (k >= format.size()) break;
    if (width.size() > 7 || (!width.empty() && std::atoi(width.c_str()) > 1'000'000)) {
      out += "%!(BADWIDTH)";
      width.clear();
    }
    if (precision.size() > 8 || (!precision.empty() && std::atoi(precision.c_str() + 1) > 1'000'000)) {
      out += "%!(BADPREC)";
      precision.clear();
    }
    const char verb = format[k];
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) {
      out += fmt::format("%!{}(MISSING)", verb);
      continue;
    }
    const Value& v = args[next++];
    const bool left = flags.find('-') != std::string::npos;
    const bool zero = flags.find('0') != std::string::npos && !left;
    const bool plus = flags.find('+') != std::string::npos;
    std::string body;
    switch (verb) {
      case 'v': case 's': body = verb == 's' && v.nil() ? "%!s(<nil>)" : Print(v, false); break;
      case 'q': body = GoQuote(Str(v)); break;
      case 't': body = v.b() ? (*v.b() ? "true" : "false") : fmt::format("%!t({}={})", TypeName(v), Print(v, false)); break;
      case 'd': case 'x': case 'X': case 'o': case 'b': case 'c': {
        if (!v.i()) {
          if (v.s() && (verb == 'x' || verb == 'X')) {
            body = HexEncode(*v.s());
            if (verb == 'X') std::transform(body.begin(), body.end(), body.begin(), ::toupper);
            break;
          }
          body = fmt::format("%!{}({}={})", verb, TypeName(v), Print(v, false));
          break;
        }
        const int64_t i = *v.i();
        if (verb == 'c') {
          AppendUtf8(body, static_cast<uint32_t>(i));
          break;
        }
        const uint64_t mag = i < 0 ? static_cast<uint64_t>(-(i + 1)) + 1 : static_cast<uint64_t>(i);
        body = verb == 'd' ? fmt::format("{}", mag) : verb == 'x' ? fmt::format("{:x}", mag)
               : verb == 'X' ? fmt::format("{:X}", mag) : verb == 'o' ? fmt::format("{:o}", mag) : fmt::format("{:b}", mag);
        if (!precision.empty()) {
          const size_t p = static_cast<size_t>(std::atoi(precision.c_str() + 1));
          if (body.size() < p) body.insert(0, p - body.size(), '0');
        }
        const std::string sign = i < 0 ? "-" : plus ? "+" : "";
        if (zero && !width.empty() && precision.empty()) {
          const size_t w = static_cast<size_t>(std::atoi(width.c_str()));
          if (sign.size() + body.size() < w) body.insert(0, w - sign.size() - body.size(), '0');
        }
        body = sign + body;
        break;
      }
      case 'f': case 'F': case 'e': case 'g': {
        double d = 0;
        if (auto f = v.f()) d = *f;
        else if (auto i = v.i()) d = static_cast<double>(*i);
        else {
          body = fmt::format("%!{}({}={})", verb, TypeName(v), Print(v, false));
          break;
        }
        if (verb == 'g' && precision.empty()) {
          body = FormatFloat(d);
        } else {
          body = fmt::format(fmt::runtime("{:" + std::string(plus ? "+" : "") + (precision.empty() ? ".6" : precision) +
                                          (verb == 'F' ? 'f' : verb) + "}"),
                             d);
        }
        break;
      }
      default: body = fmt::format("%!{}({}={})", verb, TypeName(v), Print(v, false));
    }
    if (!precision.empty() && (verb == 's' || verb == 'v') && !v.i()) {
      const size_t p = static_cast<size_t>(std::atoi(precision.c_str() + 1));
      if (body.size() > p) body.resize(p);
    }
    const size_t w = width.empty() ? 0 : static_cast<size_t>(std::atoi(width.c_str()));
    if (body.size() < w) body = left ? body + std::string(w - body.size(), ' ') : std::string(w - body.size(), ' ') + body;
    out += body;
  }
  if (next < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = next; k < args.size(); ++k)
      out += (k > next ? ", " : "") + std::string(TypeName(args[k])) + "=" + Print(args[k], false);
    out += ")";
  }
  return out;
}

// fmt.Sprint: operands joined, with a space between two when neither is a string.
std::string Sprint(const Args& args) {
  std::string out;
  for (size_t k = 0; k < args.size(); ++k) {
    if (k > 0 && !args[k].s() && !args[k - 1].s()) out += ' ';
    out += Print(args[k], false);
  }
  return out;
}

StatusOr<std::string> Indent(int64_t n, const std::string& s) {
  const size_t lines = static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) + 1;
  RETURN_IF_ERROR(Afford(static_cast<size_t>(std::clamp<int64_t>(n, 0, int64_t{1} << 40)) * lines / 64, "indent"));
  const std::string pad(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
  std::string out = pad;
  for (char c : s) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

std::string Title(std::string s) {
  bool start = true;
  for (char& c : s) {
    if (std::isalpha(static_cast<unsigned char>(c)) && start) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    start = std::isspace(static_cast<unsigned char>(c)) != 0;
  }
  return s;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  size_t at = 0, hit;
  while ((hit = s.find(from, at)) != std::string::npos) {
    out += s.substr(at, hit - at) + to;
    at = hit + from.size();
  }
  return out + s.substr(at);
}

std::string TrimSet(std::string_view s, std::string_view set, bool left, bool right) {
  while (left && !s.empty() && set.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (right && !s.empty() && set.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return std::string(s);
}

List Split(const std::string& s, const std::string& sep) {
  List out;
  if (sep.empty()) {
    for (char c : s) out.emplace_back(std::string(1, c));
    return out;
  }
  size_t at = 0, hit;
  while ((hit = s.find(sep, at)) != std::string::npos) {
    out.emplace_back(s.substr(at, hit - at));
    at = hit + sep.size();
  }
  out.emplace_back(s.substr(at));
  return out;
}

std::string ToJson(const Value& v) {
  if (v.nil()) return "null";
  if (auto b = v.b()) return *b ? "true" : "false";
  if (auto i = v.i()) return std::to_string(*i);
  if (auto f = v.f()) return FormatFloat(*f);
  if (auto s = v.s()) {
    std::string out = "\"";
    for (unsigned char c : *s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
        out += fmt::format("\\u{:04x}", c);
      } else {
        out += static_cast<char>(c);
      }
    }
    return out + "\"";
  }
  if (auto l = v.list()) {
    std::string out = "[";
    for (size_t k = 0; k < l->size(); ++k) out += (k ? "," : "") + ToJson((*l)[k]);
    return out + "]";
  }
  std::string out = "{";
  bool first = true;
  for (const auto& [k, e] : *v.dict()) {
    out += (first ? "" : ",") + ToJson(Value(k)) + ":" + ToJson(e);
    first = false;
  }
  return out + "}";
}

// Base64 with padding (Go's base64.StdEncoding, which sprig's b64enc/b64dec use).
constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(std::string_view in) {
  std::string out;
  for (size_t k = 0; k < in.size(); k += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(in[k])) << 16;
    if (k + 1 < in.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(in[k + 1])) << 8;
    if (k + 2 < in.size()) n |= static_cast<unsigned char>(in[k + 2]);
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += k + 1 < in.size() ? kBase64[(n >> 6) & 63] : '=';
    out += k + 2 < in.size() ? kBase64[n & 63] : '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (size_t k = 0; k < in.size(); k += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = in[k + j];
      size_t v = 0;
      if (c == '=' && k + 4 == in.size() && j >= 2) {
        ++pad;
      } else if ((v = kBase64.find(c)) == std::string_view::npos || pad > 0) {
        return std::nullopt;
      }
      n = (n << 6) | static_cast<uint32_t>(c == '=' ? 0 : v);
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

std::string ExpandEnv(const std::string& s) {
  std::string out;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] != '$' || k + 1 >= s.size()) {
      out += s[k];
      continue;
    }
    std::string name;
    size_t j = k + 1;
    if (s[j] == '{') {
      const size_t close = s.find('}', j);
      if (close == std::string::npos) {
        out += s.substr(k);
        break;
      }
      name = s.substr(j + 1, close - j - 1);
      k = close;
    } else {
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) name += s[j++];
      if (name.empty()) {
        out += '$';
        continue;
      }
      k = j - 1;
    }
    const char* v = std::getenv(name.c_str());
    out += v ? v : "";
  }
  return out;
}

const std::map<std::string, Function, std::less<>>& Functions() {
  static const auto* table = new std::map<std::string, Function, std::less<>>{
      // Go's built-ins (and/or are evaluated lazily by the executor; these see every argument).
      {"not", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "not")); return Value(!Truth(a[0])); }},
      {"len", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "len"));
         if (auto s = a[0].s()) return Value(static_cast<int64_t>(s->size()));
         if (auto l = a[0].list()) return Value(static_cast<int64_t>(l->size()));
         if (auto d = a[0].dict()) return Value(static_cast<int64_t>(d->size()));
         return InvalidArgument(fmt::format("len of type {}", TypeName(a[0])));
       }},
      {"index", [](Args& a) -> StatusOr<Value> {
         if (a.empty()) return InvalidArgument("wrong number of args for index: want at least 1 got 0");
         Value v = a[0];
         for (size_t k = 1; k < a.size(); ++k) {
           if (auto l = v.list()) {
             ASSIGN_OR_RETURN(int64_t i, ToInt(a[k]));
             if (i < 0 || static_cast<size_t>(i) >= l->size()) return InvalidArgument(fmt::format("index out of range: {}", i));
             v = (*l)[static_cast<size_t>(i)];
           } else if (auto d = v.dict()) {
             auto it = d->find(Str(a[k]));
             v = it == d->end() ? Value() : it->second;
           } else if (auto s = v.s()) {
             ASSIGN_OR_RETURN(int64_t i, ToInt(a[k]));
             if (i < 0 || static_cast<size_t>(i) >= s->size()) return InvalidArgument(fmt::format("index out of range: {}", i));
             v = Value(static_cast<int64_t>(static_cast<unsigned char>((*s)[static_cast<size_t>(i)])));
           } else {
             return InvalidArgument(fmt::format("can't index item of type {}", TypeName(v)));
           }
         }
         return v;
       }},
      {"slice", [](Args& a) -> StatusOr<Value> {
         if (a.empty()) return InvalidArgument("wrong number of args for slice: want at least 1 got 0");
         const size_t size = a[0].s() ? a[0].s()->size() : a[0].list() ? a[0].list()->size() : 0;
         if (!a[0].s() && !a[0].list()) return InvalidArgument(fmt::format("can't slice item of type {}", TypeName(a[0])));
         int64_t lo = 0, hi = static_cast<int64_t>(size);
         if (a.size() > 1) {
           ASSIGN_OR_RETURN(lo, ToInt(a[1]));
         }
         if (a.size() > 2) {
           ASSIGN_OR_RETURN(hi, ToInt(a[2]));
         }
         if (lo < 0 || hi < lo || static_cast<size_t>(hi) > size) return InvalidArgument(fmt::format("slice index out of range"));
         if (auto s = a[0].s()) return Value(s->substr(static_cast<size_t>(lo), static_cast<size_t>(hi - lo)));
         return NewList(List(a[0].list()->begin() + lo, a[0].list()->begin() + hi));
       }},
      {"print", [](Args& a) -> StatusOr<Value> { return Value(Sprint(a)); }},
      {"println", [](Args& a) -> StatusOr<Value> {
         std::string out;
         for (size_t k = 0; k < a.size(); ++k) out += (k ? " " : "") + Print(a[k], false);
         return Value(out + "\n");
       }},
      {"printf", [](Args& a) -> StatusOr<Value> {
         if (a.empty() || !a[0].s()) return InvalidArgument("printf needs a format string");
         ASSIGN_OR_RETURN(std::string s, Sprintf(*a[0].s(), a, 1));
         return Value(std::move(s));
       }},
      {"urlquery", [](Args& a) -> StatusOr<Value> {
         std::string out;
         for (unsigned char c : Sprint(a)) {
           if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
           else if (c == ' ') out += '+';
           else out += fmt::format("%{:02X}", c);
         }
         return Value(out);
       }},
      {"eq", [](Args& a) -> StatusOr<Value> {
         if (a.size() < 2) return InvalidArgument("missing argument for comparison");
         for (size_t k = 1; k < a.size(); ++k) {
           ASSIGN_OR_RETURN(int c, Compare(a[0], a[k], false));
           if (c == 0) return Value(true);
         }
         return Value(false);
       }},
      {"ne", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "ne")); ASSIGN_OR_RETURN(int c, Compare(a[0], a[1], false)); return Value(c != 0); }},
      {"lt", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "lt")); ASSIGN_OR_RETURN(int c, Compare(a[0], a[1], true)); return Value(c < 0); }},
      {"le", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "le")); ASSIGN_OR_RETURN(int c, Compare(a[0], a[1], true)); return Value(c <= 0); }},
      {"gt", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "gt")); ASSIGN_OR_RETURN(int c, Compare(a[0], a[1], true)); return Value(c > 0); }},
      {"ge", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "ge")); ASSIGN_OR_RETURN(int c, Compare(a[0], a[1], true)); return Value(c >= 0); }},
      // Traefik's own.
      {"normalize", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "normalize")); return Value(Normalize(Str(a[0]))); }},
      {"split", [](Args& a) -> StatusOr<Value> {  // Traefik's: strings.Split(s, sep)
         RETURN_IF_ERROR(Need(a, 2, "split"));
         return NewList(Split(Str(a[0]), Str(a[1])));
       }},
      // sprig: environment, defaults and flow.
      {"env", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "env"));
         const char* v = std::getenv(Str(a[0]).c_str());
         return Value(std::string(v ? v : ""));
       }},
      {"expandenv", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "expandenv")); return Value(ExpandEnv(Str(a[0]))); }},
      {"default", [](Args& a) -> StatusOr<Value> {
         if (a.empty() || a.size() > 2) return InvalidArgument("wrong number of args for default: want 2 got " + std::to_string(a.size()));
         return a.size() == 2 && Truth(a[1]) ? a[1] : a[0];
       }},
      {"empty", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "empty")); return Value(!Truth(a[0])); }},
      {"coalesce", [](Args& a) -> StatusOr<Value> {
         for (const Value& v : a)
           if (Truth(v)) return v;
         return Value();
       }},
      {"ternary", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 3, "ternary")); return Truth(a[2]) ? a[0] : a[1]; }},
      {"fail", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "fail")); return InvalidArgument(Str(a[0])); }},
      // sprig: strings.
      {"upper", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "upper")); std::string s = Str(a[0]); std::transform(s.begin(), s.end(), s.begin(), ::toupper); return Value(s); }},
      {"lower", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "lower")); std::string s = Str(a[0]); std::transform(s.begin(), s.end(), s.begin(), ::tolower); return Value(s); }},
      {"title", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "title")); return Value(Title(Str(a[0]))); }},
      {"trim", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "trim")); return Value(TrimSet(Str(a[0]), " \t\n\r\v\f", true, true)); }},
      {"trimAll", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "trimAll")); return Value(TrimSet(Str(a[1]), Str(a[0]), true, true)); }},
      {"trimPrefix", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "trimPrefix"));
         std::string s = Str(a[1]), p = Str(a[0]);
         return Value(s.starts_with(p) ? s.substr(p.size()) : s);
       }},
      {"trimSuffix", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "trimSuffix"));
         std::string s = Str(a[1]), p = Str(a[0]);
         return Value(s.ends_with(p) ? s.substr(0, s.size() - p.size()) : s);
       }},
      {"replace", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 3, "replace")); return Value(Replace(Str(a[2]), Str(a[0]), Str(a[1]))); }},
      {"repeat", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "repeat"));
         ASSIGN_OR_RETURN(int64_t n, ToInt(a[0]));
         const std::string s = Str(a[1]);
         if (n < 0) return InvalidArgument("strings: negative Repeat count");
         RETURN_IF_ERROR(Afford(static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 40)) * (s.size() / 64 + 1) / 2, "repeat"));
         std::string out;
         for (int64_t k = 0; k < n; ++k) out += s;
         return Value(out);
       }},
      {"contains", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "contains")); return Value(Str(a[1]).find(Str(a[0])) != std::string::npos); }},
      {"hasPrefix", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "hasPrefix")); return Value(Str(a[1]).starts_with(Str(a[0]))); }},
      {"hasSuffix", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "hasSuffix")); return Value(Str(a[1]).ends_with(Str(a[0]))); }},
      {"quote", [](Args& a) -> StatusOr<Value> {
         std::string out;
         for (const Value& v : a)
           if (!v.nil()) out += (out.empty() ? "" : " ") + GoQuote(Str(v));
         return Value(out);
       }},
      {"squote", [](Args& a) -> StatusOr<Value> {
         std::string out;
         for (const Value& v : a)
           if (!v.nil()) out += (out.empty() ? "'" : " '") + Str(v) + "'";
         return Value(out);
       }},
      {"cat", [](Args& a) -> StatusOr<Value> {
         std::string out;
         for (const Value& v : a)
           if (!v.nil()) out += (out.empty() ? "" : " ") + Str(v);
         return Value(out);
       }},
      {"indent", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "indent"));
         ASSIGN_OR_RETURN(int64_t n, ToInt(a[0]));
         ASSIGN_OR_RETURN(std::string out, Indent(n, Str(a[1])));
         return Value(std::move(out));
       }},
      {"nindent", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "nindent"));
         ASSIGN_OR_RETURN(int64_t n, ToInt(a[0]));
         ASSIGN_OR_RETURN(std::string out, Indent(n, Str(a[1])));
         return Value("\n" + out);
       }},
      {"nospace", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "nospace"));
         std::string s = Str(a[0]);
         std::erase_if(s, [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
         return Value(s);
       }},
      {"trunc", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "trunc"));
         ASSIGN_OR_RETURN(int64_t n, ToInt(a[0]));
         std::string s = Str(a[1]);
         if (n >= 0) return Value(s.substr(0, std::min(s.size(), static_cast<size_t>(n))));
         const size_t keep = static_cast<size_t>(-n);
         return Value(keep >= s.size() ? s : s.substr(s.size() - keep));
       }},
      {"substr", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 3, "substr"));
         ASSIGN_OR_RETURN(int64_t start, ToInt(a[0]));
         ASSIGN_OR_RETURN(int64_t end, ToInt(a[1]));
         std::string s = Str(a[2]);
         const int64_t n = static_cast<int64_t>(s.size());
         if (start < 0) start = 0;
         if (end < 0 || end > n) end = n;
         if (start > end) start = end;
         return Value(s.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)));
       }},
      {"splitList", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "splitList")); return NewList(Split(Str(a[1]), Str(a[0]))); }},
      {"join", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "join"));
         std::string out;
         if (auto l = a[1].list()) {
           for (size_t k = 0; k < l->size(); ++k) out += (k ? Str(a[0]) : "") + Str((*l)[k]);
         } else {
           out = Str(a[1]);
         }
         return Value(out);
       }},
      {"toString", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "toString")); return Value(Str(a[0])); }},
      {"toJson", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "toJson")); return Value(ToJson(a[0])); }},
      {"b64enc", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "b64enc")); return Value(Base64Encode(Str(a[0]))); }},
      {"b64dec", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "b64dec"));
         std::optional<std::string> d = Base64Decode(Str(a[0]));
         return Value(d ? *d : std::string("illegal base64 data"));
       }},
      // sprig: numbers.
      {"atoi", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "atoi")); ASSIGN_OR_RETURN(int64_t i, ToInt(a[0])); return Value(i); }},
      {"int", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "int")); ASSIGN_OR_RETURN(int64_t i, ToInt(a[0])); return Value(i); }},
      {"int64", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "int64")); ASSIGN_OR_RETURN(int64_t i, ToInt(a[0])); return Value(i); }},
      {"float64", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "float64"));
         if (auto f = a[0].f()) return Value(*f);
         if (auto s = a[0].s()) return Value(std::strtod(s->c_str(), nullptr));
         ASSIGN_OR_RETURN(int64_t i, ToInt(a[0]));
         return Value(static_cast<double>(i));
       }},
      {"add1", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 1, "add1")); ASSIGN_OR_RETURN(int64_t i, ToInt(a[0])); return Value(i + 1); }},
      {"add", [](Args& a) -> StatusOr<Value> {
         int64_t sum = 0;
         for (const Value& v : a) {
           ASSIGN_OR_RETURN(int64_t i, ToInt(v));
           sum += i;
         }
         return Value(sum);
       }},
      {"mul", [](Args& a) -> StatusOr<Value> {
         int64_t product = 1;
         for (const Value& v : a) {
           ASSIGN_OR_RETURN(int64_t i, ToInt(v));
           product *= i;
         }
         return Value(product);
       }},
      {"sub", [](Args& a) -> StatusOr<Value> { RETURN_IF_ERROR(Need(a, 2, "sub")); ASSIGN_OR_RETURN(int64_t x, ToInt(a[0])); ASSIGN_OR_RETURN(int64_t y, ToInt(a[1])); return Value(x - y); }},
      {"div", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "div"));
         ASSIGN_OR_RETURN(int64_t x, ToInt(a[0]));
         ASSIGN_OR_RETURN(int64_t y, ToInt(a[1]));
         if (y == 0) return InvalidArgument("runtime error: integer divide by zero");
         return Value(x / y);
       }},
      {"mod", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "mod"));
         ASSIGN_OR_RETURN(int64_t x, ToInt(a[0]));
         ASSIGN_OR_RETURN(int64_t y, ToInt(a[1]));
         if (y == 0) return InvalidArgument("runtime error: integer divide by zero");
         return Value(x % y);
       }},
      {"max", [](Args& a) -> StatusOr<Value> {
         if (a.empty()) return InvalidArgument("wrong number of args for max");
         ASSIGN_OR_RETURN(int64_t m, ToInt(a[0]));
         for (const Value& v : a) {
           ASSIGN_OR_RETURN(int64_t i, ToInt(v));
           m = std::max(m, i);
         }
         return Value(m);
       }},
      {"min", [](Args& a) -> StatusOr<Value> {
         if (a.empty()) return InvalidArgument("wrong number of args for min");
         ASSIGN_OR_RETURN(int64_t m, ToInt(a[0]));
         for (const Value& v : a) {
           ASSIGN_OR_RETURN(int64_t i, ToInt(v));
           m = std::min(m, i);
         }
         return Value(m);
       }},
      {"until", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "until"));
         ASSIGN_OR_RETURN(int64_t n, ToInt(a[0]));
         RETURN_IF_ERROR(Afford(static_cast<size_t>(std::min<int64_t>(n < 0 ? -n : n, int64_t{1} << 40)), "until"));
         List out;
         for (int64_t k = 0; k < n; ++k) out.emplace_back(k);  // sprig's until counts down for n < 0
         for (int64_t k = 0; k > n; --k) out.emplace_back(k);
         return NewList(std::move(out));
       }},
      {"untilStep", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 3, "untilStep"));
         ASSIGN_OR_RETURN(int64_t start, ToInt(a[0]));
         ASSIGN_OR_RETURN(int64_t stop, ToInt(a[1]));
         ASSIGN_OR_RETURN(int64_t step, ToInt(a[2]));
         List out;
         if (step == 0) return NewList();
         for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
           RETURN_IF_ERROR(Afford(out.size() + 1, "untilStep"));
           out.emplace_back(k);
         }
         return NewList(std::move(out));
       }},
      // sprig: lists and dicts.
      {"list", [](Args& a) -> StatusOr<Value> {
         Value l = NewList(a);
         RETURN_IF_ERROR(Nests(l));
         return l;
       }},
      {"first", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "first"));
         auto l = a[0].list();
         return l && !l->empty() ? l->front() : Value();
       }},
      {"last", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "last"));
         auto l = a[0].list();
         return l && !l->empty() ? l->back() : Value();
       }},
      {"append", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "append"));
         if (!a[0].list()) return InvalidArgument(fmt::format("Cannot push on type {}", TypeName(a[0])));
         List l = *a[0].list();
         l.push_back(a[1]);
         Value out = NewList(std::move(l));
         RETURN_IF_ERROR(Nests(out));
         return out;
       }},
      {"has", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "has"));
         if (auto l = a[1].list())
           for (const Value& v : *l) {
             StatusOr<int> c = Compare(a[0], v, false);
             if (c.ok() && *c == 0) return Value(true);
           }
         return Value(false);
       }},
      {"uniq", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "uniq"));
         List out;
         if (auto l = a[0].list()) RETURN_IF_ERROR(Afford(l->size() * l->size() / 64, "uniq"));
         if (auto l = a[0].list())
           for (const Value& v : *l) {
             bool seen = false;
             for (const Value& o : out) {
               StatusOr<int> c = Compare(v, o, false);
               if (c.ok() && *c == 0) seen = true;
             }
             if (!seen) out.push_back(v);
           }
         return NewList(std::move(out));
       }},
      {"sortAlpha", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 1, "sortAlpha"));
         List out;
         if (auto l = a[0].list()) out = *l;
         std::sort(out.begin(), out.end(), [](const Value& x, const Value& y) { return Str(x) < Str(y); });
         return NewList(std::move(out));
       }},
      {"dict", [](Args& a) -> StatusOr<Value> {
         Dict d;
         for (size_t k = 0; k < a.size(); k += 2) d[Str(a[k])] = k + 1 < a.size() ? a[k + 1] : Value(std::string());
         Value out = NewDict(std::move(d));
         RETURN_IF_ERROR(Nests(out));
         return out;
       }},
      {"get", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "get"));
         if (auto d = a[0].dict()) {
           auto it = d->find(Str(a[1]));
           if (it != d->end()) return it->second;
         }
         return Value(std::string());
       }},
      {"set", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 3, "set"));
         if (auto d = a[0].dict()) {
           if (Holds(a[2], d)) return InvalidArgument("a dict cannot hold itself");
           (*d)[Str(a[1])] = a[2];
           if (Status nests = Nests(a[0]); !nests.ok()) {
             d->erase(Str(a[1]));
             return nests;
           }
         }
         return a[0];
       }},
      {"hasKey", [](Args& a) -> StatusOr<Value> {
         RETURN_IF_ERROR(Need(a, 2, "hasKey"));
         auto d = a[0].dict();
         return Value(d != nullptr && d->contains(Str(a[1])));
       }},
      {"keys", [](Args& a) -> StatusOr<Value> {
         List out;
         for (const Value& v : a)
           if (auto d = v.dict())
             for (const auto& [k, e] : *d) out.emplace_back(k);
         return NewList(std::move(out));
       }},
  };
  return *table;
}

bool Parser::Known(std::string_view name) { return name == "and" || name == "or" || Functions().contains(name); }

// ---- execution ----

struct Exec {
  std::string name;
  const std::map<std::string, NodeList>& templates;
  std::string out;
  std::vector<std::pair<std::string, Value>> vars;
  TemplateLimits limits;
  size_t steps = 0;
  int depth = 0;
  enum class Flow { kNormal, kBreak, kContinue };
  Flow flow = Flow::kNormal;

  Status Error(int line, std::string_view what) const {
    return InvalidArgument(fmt::format("template: {}:{}: {}", name, line, what));
  }
  Status Step(int line) {
    if (++steps > limits.max_steps) return Error(line, fmt::format("stopped after {} steps", limits.max_steps));
    if (out.size() > limits.max_output_bytes)
      return Error(line, fmt::format("the output passed {} bytes", limits.max_output_bytes));
    return OkStatus();
  }

  StatusOr<Value> Variable(int line, const std::string& n) const {
    for (auto it = vars.rbegin(); it != vars.rend(); ++it)
      if (it->first == n) return it->second;
    return Error(line, fmt::format("undefined variable: {}", n));
  }

  StatusOr<Value> Fields(int line, Value v, const std::vector<std::string>& fields) const {
    for (const std::string& f : fields) {
      if (auto d = v.dict()) {
        auto it = d->find(f);
        v = it == d->end() ? Value() : it->second;
      } else if (v.nil()) {
        return Error(line, fmt::format("nil pointer evaluating interface {{}}.{}", f));
      } else {
        return Error(line, fmt::format("can't evaluate field {} in type {}", f, TypeName(v)));
      }
    }
    return v;
  }

  StatusOr<Value> Operand(int line, const struct Operand& op, const Value& dot) {
    switch (op.kind) {
      case Operand::Kind::kLiteral: return op.literal;
      case Operand::Kind::kNil: return Value();
      case Operand::Kind::kDot: return Fields(line, dot, op.fields);
      case Operand::Kind::kField: return Fields(line, dot, op.fields);
      case Operand::Kind::kVariable: {
        ASSIGN_OR_RETURN(Value v, Variable(line, op.name));
        return Fields(line, v, op.fields);
      }
      case Operand::Kind::kPipeline: {
        ASSIGN_OR_RETURN(Value v, Pipe(*op.pipe, dot));
        return Fields(line, v, op.fields);
      }
      case Operand::Kind::kFunction: {
        Command alone;
        alone.args.push_back(op);
        alone.args.back().fields.clear();
        ASSIGN_OR_RETURN(Value v, Call(line, alone, dot, std::nullopt));
        return Fields(line, v, op.fields);
      }
    }
    return Value();
  }

  StatusOr<Value> Call(int line, const Command& cmd, const Value& dot, std::optional<Value> piped) {
    RETURN_IF_ERROR(Step(line));
    const struct Operand& head = cmd.args[0];
    if (head.kind != Operand::Kind::kFunction) {
      if (head.kind == Operand::Kind::kNil) return Error(line, "nil is not a command");
      if (cmd.args.size() > 1 || piped)
        return Error(line, fmt::format("can't give argument to non-function {}", Describe(head)));
      return Operand(line, head, dot);
    }
    const size_t n = cmd.args.size() - 1 + (piped ? 1 : 0);
    auto arg = [&](size_t k) -> StatusOr<Value> {
      if (k + 1 < cmd.args.size()) return Operand(line, cmd.args[k + 1], dot);
      return *piped;
    };
    if (head.name == "and" || head.name == "or") {
      if (n == 0) return Error(line, fmt::format("wrong number of args for {}: want at least 1 got 0", head.name));
      Value v;
      for (size_t k = 0; k < n; ++k) {
        ASSIGN_OR_RETURN(v, arg(k));
        if (Truth(v) != (head.name == "and")) return v;
      }
      return v;
    }
    Args args;
    for (size_t k = 0; k < n; ++k) {
      ASSIGN_OR_RETURN(Value v, arg(k));
      args.push_back(std::move(v));
    }
    const Function& fn = Functions().find(head.name)->second;
    g_budget = limits.max_steps - std::min(steps, limits.max_steps);
    StatusOr<Value> r = fn(args);
    if (!r.ok()) return Error(line, fmt::format("error calling {}: {}", head.name, r.status().message()));
    steps += Cost(*r);  // what it made counts against the bound (a loop that grows a list pays for it)
    RETURN_IF_ERROR(Step(line));
    return r;
  }

  static std::string Describe(const struct Operand& op) {
    if (op.kind == Operand::Kind::kLiteral) return Print(op.literal);
    if (op.kind == Operand::Kind::kVariable) return op.name;
    return ".";
  }

  StatusOr<Value> Pipe(const Pipeline& p, const Value& dot) {
    std::optional<Value> v;
    for (const Command& c : p.commands) {
      ASSIGN_OR_RETURN(Value r, Call(p.line, c, dot, v));
      v = std::move(r);
    }
    Value result = v ? *v : Value();
    if (p.assign) {
      for (auto it = vars.rbegin(); it != vars.rend(); ++it)
        if (it->first == p.decl[0]) {
          it->second = result;
          return result;
        }
      return Error(p.line, fmt::format("undefined variable: {}", p.decl[0]));
    }
    if (p.decl.size() == 1) vars.emplace_back(p.decl[0], result);
    return result;
  }

  Status Walk(const NodeList& list, const Value& dot) {
    for (const auto& n : list) {
      if (flow != Flow::kNormal) return OkStatus();
      RETURN_IF_ERROR(Step(n->line));
      switch (n->kind) {
        case Node::Kind::kText: out += n->text; break;
        case Node::Kind::kAction: {
          ASSIGN_OR_RETURN(Value v, Pipe(*n->pipe, dot));
          if (n->pipe->decl.empty()) out += Print(v);
          break;
        }
        case Node::Kind::kIf:
        case Node::Kind::kWith: {
          const size_t mark = vars.size();
          ASSIGN_OR_RETURN(Value v, Pipe(*n->pipe, dot));
          Status s = Truth(v) ? Walk(n->list, n->kind == Node::Kind::kWith ? v : dot) : Walk(n->else_list, dot);
          vars.resize(mark);
          RETURN_IF_ERROR(s);
          break;
        }
        case Node::Kind::kRange: RETURN_IF_ERROR(Range(*n, dot)); break;
        case Node::Kind::kBreak: flow = Flow::kBreak; return OkStatus();
        case Node::Kind::kContinue: flow = Flow::kContinue; return OkStatus();
        case Node::Kind::kTemplate: {
          auto it = templates.find(n->text);
          if (it == templates.end()) return Error(n->line, fmt::format("no such template {}", GoQuote(n->text)));
          Value arg;
          if (n->pipe) {
            ASSIGN_OR_RETURN(arg, Pipe(*n->pipe, dot));
          }
          if (++depth > 100) return Error(n->line, "exceeded maximum template depth (100000)");
          std::vector<std::pair<std::string, Value>> saved = std::exchange(vars, {{"$", arg}});
          Status s = Walk(it->second, arg);
          vars = std::move(saved);
          --depth;
          RETURN_IF_ERROR(s);
          break;
        }
      }
    }
    return OkStatus();
  }

  Status Range(const Node& n, const Value& dot) {
    const size_t mark = vars.size();
    // The declared variables are the loop's, not the pipeline's result.
    Pipeline p = *n.pipe;
    const std::vector<std::string> decl = p.decl;
    const bool assign = p.assign;  // `range $x = …`: each element assigned to an outer $x
    p.decl.clear();
    p.assign = false;
    ASSIGN_OR_RETURN(Value over, Pipe(p, dot));
    size_t count = 0;
    auto body = [&](Value key, Value elem) -> StatusOr<bool> {
      ++count;
      RETURN_IF_ERROR(Step(n.line));
      vars.resize(mark);
      if (assign) {
        for (auto it = vars.rbegin(); it != vars.rend(); ++it)
          if (it->first == decl[0]) {
            it->second = elem;
            break;
          }
      } else if (decl.size() == 1) {
        vars.emplace_back(decl[0], elem);
      }
      if (decl.size() == 2) {
        vars.emplace_back(decl[0], key);
        vars.emplace_back(decl[1], elem);
      }
      RETURN_IF_ERROR(Walk(n.list, elem));
      const bool stop = flow == Flow::kBreak;
      flow = Flow::kNormal;
      return !stop;
    };
    if (auto l = over.list()) {
      const List items = *l;  // a copy: the body may append to the list it ranges over
      for (size_t k = 0; k < items.size(); ++k) {
        ASSIGN_OR_RETURN(bool more, body(Value(static_cast<int64_t>(k)), items[k]));
        if (!more) break;
      }
    } else if (auto d = over.dict()) {
      const Dict items = *d;
      for (const auto& [k, e] : items) {
        ASSIGN_OR_RETURN(bool more, body(Value(k), e));
        if (!more) break;
      }
    } else if (auto i = over.i()) {
      if (decl.size() == 2) return Error(n.line, "can't use two variables ranging over an integer");
      for (int64_t k = 0; k < *i; ++k) {
        ASSIGN_OR_RETURN(bool more, body(Value(k), Value(k)));
        if (!more) break;
      }
    } else if (!over.nil()) {
      return Error(n.line, fmt::format("range can't iterate over {}", Print(over)));
    }
    vars.resize(mark);
    if (count == 0) {
      Status s = Walk(n.else_list, dot);
      vars.resize(mark);
      return s;
    }
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::string> RenderGoTemplate(std::string_view text, std::string_view name, TemplateLimits limits) {
  auto fail = [&](const Status& s) {
    // Lexer and parser errors carry ":<line>: …"; Go's: "template: <name>:<line>: …".
    return InvalidArgument(fmt::format("template: {}{}", name, s.message()));
  };
  StatusOr<std::vector<Token>> tokens = Lexer(text).Run();
  if (!tokens.ok()) return fail(tokens.status());
  std::map<std::string, NodeList> templates;
  StatusOr<NodeList> tree = Parser(std::move(*tokens), templates).Run();
  if (!tree.ok()) return fail(tree.status());
  Exec exec{.name = std::string(name), .templates = templates, .out = {}, .vars = {{"$", Value()}}, .limits = limits};
  RETURN_IF_ERROR(exec.Walk(*tree, Value()));
  if (exec.out.size() > limits.max_output_bytes)
    return exec.Error(1, fmt::format("the output passed {} bytes", limits.max_output_bytes));
  return std::move(exec.out);
}

}  // namespace paddock::edge
