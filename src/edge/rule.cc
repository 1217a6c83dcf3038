#include "edge/rule.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <re2/re2.h>

#include "common/encoding.h"

// Three stages, each recursing at most kMaxNesting deep (chains of && and || are held n-ary, so
// a long chain is wide, not deep):
//   1. Go's scanner and expression grammar (what go/parser.ParseExpr accepts, reduced to what
//      can reach a matcher) -> Expr;
//   2. vulcand/predicate's evaluation of that expression (functions by name, string arguments,
//      && || ! only) -> Rule::Node, with the matcher's name and raw arguments;
//   3. Traefik's addRule over that tree (CheckRule, the argument count, each matcher's checks,
//      compiling regular expressions and IP ranges).
// Errors keep that order, as Traefik's do: a syntax error anywhere wins over an unknown function,
// which wins over a matcher's bad argument.

namespace paddock::edge {

// ------------------------------------------------------------------------------------------------
// The parsed tree shared by rules and constraints.

struct Rule::Node {
  enum class Kind {
    kAnd, kOr,
    kHost, kHostAny, kHostRegexp, kPath, kPathPrefix, kPathRegexp, kMethod,
    kHeader, kHeaderRegexp, kQuery, kQueryRegexp, kClientIP,
    kLabel, kLabelRegex,
    kNever,  // a leaf that can never be true (a header Go's server never shows, a bad LabelRegex)
  };
  struct IpRange {
    bool v4 = false;                     // compares an IPv4 (or IPv4-mapped) client's 4 bytes
    std::array<unsigned char, 16> addr{};  // v4: the first 4 bytes
    int bits = 0;                        // the prefix length; an exact IP is a full-length prefix
  };

  Kind kind = Kind::kNever;
  bool negated = false;            // the node's value is inverted (an odd number of `!` on it)
  std::string_view name;           // Traefik's matcher name ("Host"), for messages
  std::vector<std::string> args;   // as written (decoded literals); arg0 prepared for matching
  std::vector<Node> children;      // kAnd, kOr
  std::unique_ptr<RE2> re;         // the *Regexp kinds
  bool re_matches_empty = false;   // HostRegexp: Traefik also matches the (empty) flattened host
  std::vector<IpRange> ips;        // kClientIP
};

namespace {

using Node = Rule::Node;
using Kind = Rule::Node::Kind;

// ------------------------------------------------------------------------------------------------
// Small text helpers.

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
char AsciiUpper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

bool EqualFoldAscii(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

int Unhex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// The length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t Utf8Len(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

// Go's %q of a string (strconv.Quote), close enough for messages: printable UTF-8 kept.
std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = Utf8Len(s, i);
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

// Go's %v of a []string: "[a b]".
std::string GoList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(' ');
    out += v[i];
  }
  out.push_back(']');
  return out;
}

// ------------------------------------------------------------------------------------------------
// Stage 1: Go's scanner and expression grammar.

enum class Tok {
  kEof, kNewline,  // kNewline: the semicolon Go's scanner inserts at a line end
  kIdent, kString, kInt, kFloat, kChar,
  kLParen, kRParen, kComma, kDot, kAndAnd, kOrOr, kNot,
  kBinaryOp,  // any other Go binary operator: == != < <= > >= + - | ^ * / % << >> & &^
  kOther,     // any other Go punctuation: [ ] { } ; : = ~ ... <- and friends
};

struct Token {
  Tok kind = Tok::kEof;
  std::size_t pos = 0;
  std::string_view text;  // as written
  std::string value;      // kString, kChar: the decoded literal
};

// "1:5": Go's line:column (1-based, columns in bytes) of byte `pos`.
std::string Position(std::string_view src, std::size_t pos) {
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < pos && i < src.size(); ++i) {
    if (src[i] == '\n') ++line, line_start = i + 1;
  }
  return fmt::format("{}:{}", line, pos - line_start + 1);
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEof: return "'EOF'";
    case Tok::kNewline: return "newline";
    case Tok::kIdent:
    case Tok::kString:
    case Tok::kInt:
    case Tok::kFloat:
    case Tok::kChar: return std::string(t.text.substr(0, 64));
    default: return fmt::format("'{}'", t.text);
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {
    if (src_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // a leading byte order mark is skipped
  }

  Status Next(Token& t) {
    t = Token{};
    bool semi = insert_semi_;
    insert_semi_ = false;
    for (;;) {
      if (i_ >= src_.size()) {
        t.pos = i_;
        t.kind = semi ? Tok::kNewline : Tok::kEof;
        return OkStatus();
      }
      char c = src_[i_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else if (c == '\n') {
        if (semi) return Emit(t, Tok::kNewline, i_, i_ + 1);
        ++i_;
      } else if (src_.substr(i_, 2) == "//") {
        std::size_t end = src_.find('\n', i_);
        if (semi) return Emit(t, Tok::kNewline, i_, end == std::string_view::npos ? src_.size() : end + 1);
        i_ = end == std::string_view::npos ? src_.size() : end + 1;
      } else if (src_.substr(i_, 2) == "/*") {
        std::size_t end = src_.find("*/", i_ + 2);
        if (end == std::string_view::npos) return Error(i_, "comment not terminated");
        bool multiline = src_.substr(i_, end - i_).find('\n') != std::string_view::npos;
        if (semi && multiline) return Emit(t, Tok::kNewline, i_, end + 2);
        i_ = end + 2;
      } else {
        break;
      }
    }
    std::size_t start = i_;
    t.pos = start;
    unsigned char c = static_cast<unsigned char>(src_[i_]);
    if (c == 0) return Error(start, "illegal character NUL");
    if (c >= 0x80) {
      std::size_t n = Utf8Len(src_, i_);
      if (n == 0) return Error(start, "illegal UTF-8 encoding");
      if (src_.substr(i_, 3) == "\xEF\xBB\xBF") return Error(start, "illegal byte order mark");
    }
    if (IsIdentStart(c)) {
      while (i_ < src_.size() && IsIdentPart(static_cast<unsigned char>(src_[i_]))) {
        std::size_t n = Utf8Len(src_, i_);
        if (n == 0) return Error(i_, "illegal UTF-8 encoding");
        i_ += n;
      }
      insert_semi_ = true;
      return Emit(t, Tok::kIdent, start, i_);
    }
    if ((c >= '0' && c <= '9') || (c == '.' && i_ + 1 < src_.size() && src_[i_ + 1] >= '0' && src_[i_ + 1] <= '9')) {
      return Number(t);
    }
    if (c == '`') return RawString(t);
    if (c == '"') return QuotedString(t, '"', Tok::kString);
    if (c == '\'') return QuotedString(t, '\'', Tok::kChar);
    static constexpr std::string_view kLong[] = {"...", "&^=", "<<=", ">>=", "&&", "||", "==", "!=", "<=",
                                                 ">=", "<<", ">>", "&^", "<-", ":=", "++", "--", "+=",
                                                 "-=", "*=", "/=", "%=", "&=", "|=", "^="};
    for (std::string_view op : kLong) {
      if (src_.substr(i_, op.size()) != op) continue;
      Tok kind = Tok::kOther;
      if (op == "&&") kind = Tok::kAndAnd;
      else if (op == "||") kind = Tok::kOrOr;
      else if (op == "==" || op == "!=" || op == "<=" || op == ">=" || op == "<<" || op == ">>" || op == "&^")
        kind = Tok::kBinaryOp;
      else if (op == "++" || op == "--") insert_semi_ = true;
      return Emit(t, kind, start, start + op.size());
    }
    switch (c) {
      case '(': return Emit(t, Tok::kLParen, start, start + 1);
      case ')': insert_semi_ = true; return Emit(t, Tok::kRParen, start, start + 1);
      case ',': return Emit(t, Tok::kComma, start, start + 1);
      case '.': return Emit(t, Tok::kDot, start, start + 1);
      case '!': return Emit(t, Tok::kNot, start, start + 1);
      case '+': case '-': case '*': case '/': case '%': case '&': case '|': case '^': case '<': case '>':
        return Emit(t, Tok::kBinaryOp, start, start + 1);
      case ']': case '}': insert_semi_ = true; return Emit(t, Tok::kOther, start, start + 1);
      case '[': case '{': case ';': case ':': case '=': case '~':
        return Emit(t, Tok::kOther, start, start + 1);
      default:
        if (c >= 0x80) return Error(start, "invalid character in expression");
        return Error(start, fmt::format("invalid character U+{:04X} '{}'", c, static_cast<char>(c)));
    }
  }

  std::string_view source() const { return src_; }

 private:
  static bool IsIdentStart(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
  }
  static bool IsIdentPart(unsigned char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

  Status Emit(Token& t, Tok kind, std::size_t start, std::size_t end) {
    t.kind = kind;
    t.pos = start;
    t.text = src_.substr(start, end - start);
    i_ = end;
    return OkStatus();
  }

  Status Error(std::size_t pos, std::string_view message) const {
    return InvalidArgument(fmt::format("{}: {}", Position(src_, pos), message));
  }

  // A Go number literal, loosely: its kind decides only which error a caller gets.
  Status Number(Token& t) {
    std::size_t start = i_;
    bool hex = src_.substr(i_, 2) == "0x" || src_.substr(i_, 2) == "0X";
    bool is_float = false;
    while (i_ < src_.size()) {
      char c = src_[i_];
      if ((c == '+' || c == '-') && i_ > start &&
          (hex ? (src_[i_ - 1] == 'p' || src_[i_ - 1] == 'P') : (src_[i_ - 1] == 'e' || src_[i_ - 1] == 'E'))) {
        is_float = true;
        ++i_;
        continue;
      }
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) break;
      if (c == '.' || (!hex && (c == 'e' || c == 'E')) || (hex && (c == 'p' || c == 'P'))) is_float = true;
      ++i_;
    }
    insert_semi_ = true;
    return Emit(t, is_float ? Tok::kFloat : Tok::kInt, start, i_);
  }

  Status RawString(Token& t) {
    std::size_t start = i_;
    std::size_t end = src_.find('`', start + 1);
    if (end == std::string_view::npos) return Error(start, "raw string literal not terminated");
    for (std::size_t k = start + 1; k < end;) {
      if (src_[k] == 0) return Error(k, "illegal character NUL");
      std::size_t n = Utf8Len(src_, k);
      if (n == 0) return Error(k, "illegal UTF-8 encoding");
      if (src_[k] != '\r') t.value.append(src_.substr(k, n));  // Go drops carriage returns
      k += n;
    }
    insert_semi_ = true;
    return Emit(t, Tok::kString, start, end + 1);
  }

  // A double-quoted string or a rune literal, with Go's escapes.
  Status QuotedString(Token& t, char quote, Tok kind) {
    std::size_t start = i_;
    std::string value;
    std::size_t k = start + 1;
    for (;;) {
      if (k >= src_.size() || src_[k] == '\n') {
        return Error(start, quote == '"' ? "string literal not terminated" : "rune literal not terminated");
      }
      char c = src_[k];
      if (c == quote) break;
      if (c == 0) return Error(k, "illegal character NUL");
      if (c != '\\') {
        std::size_t n = Utf8Len(src_, k);
        if (n == 0) return Error(k, "illegal UTF-8 encoding");
        value.append(src_.substr(k, n));
        k += n;
        continue;
      }
      std::size_t esc = k;
      if (k + 1 >= src_.size()) return Error(esc + 1, "escape sequence not terminated");
      char e = src_[k + 1];
      k += 2;
      switch (e) {
        case 'a': value.push_back('\a'); continue;
        case 'b': value.push_back('\b'); continue;
        case 'f': value.push_back('\f'); continue;
        case 'n': value.push_back('\n'); continue;
        case 'r': value.push_back('\r'); continue;
        case 't': value.push_back('\t'); continue;
        case 'v': value.push_back('\v'); continue;
        case '\\': value.push_back('\\'); continue;
        default: break;
      }
      if (e == quote) {
        value.push_back(quote);
        continue;
      }
      int digits, base;
      std::uint32_t max;
      if (e >= '0' && e <= '7') {
        digits = 3, base = 8, max = 255, --k;
      } else if (e == 'x') {
        digits = 2, base = 16, max = 255;
      } else if (e == 'u') {
        digits = 4, base = 16, max = 0x10FFFF;
      } else if (e == 'U') {
        digits = 8, base = 16, max = 0x10FFFF;
      } else {
        return Error(esc + 1, "unknown escape sequence");
      }
      std::uint32_t v = 0;
      for (int d = 0; d < digits; ++d, ++k) {
        if (k >= src_.size()) return Error(esc + 1, "escape sequence not terminated");
        char h = src_[k];
        bool ok = base == 8 ? (h >= '0' && h <= '7') : IsHex(h);
        if (!ok) return Error(k, fmt::format("illegal character U+{:04X} in escape sequence", static_cast<unsigned char>(h)));
        v = v * static_cast<std::uint32_t>(base) + static_cast<std::uint32_t>(Unhex(h));
      }
      if (v > max || (v >= 0xD800 && v <= 0xDFFF && max > 255)) {
        return Error(esc + 1, "escape sequence is invalid Unicode code point");
      }
      if (max == 255) {
        value.push_back(static_cast<char>(v));  // \x and octal escapes are bytes
      } else {
        AppendUtf8(value, v);
      }
    }
    insert_semi_ = true;
    t.value = std::move(value);
    return Emit(t, kind, start, k + 1);
  }

  std::string_view src_;
  std::size_t i_ = 0;
  bool insert_semi_ = false;
};

// The part of Go's expression syntax tree predicate looks at.
struct Expr {
  enum class Kind {
    kAnd, kOr,       // operands: a chain a && b && c, evaluated left to right as Go's left-deep tree
    kNot,            // operands[0]
    kBadUnary,       // text: the operator (- + ^ & * <-); operands[0]
    kBadBinary,      // text: the first operator of a chain of non-logical ones; operands: the chain
    kParen,          // operands[0]
    kCall,           // text: the function's name ("Host", or "a.b"); operands: the arguments
    kBadCall,        // a call of something that is not a name; text: predicate's error
    kString, kInt, kFloat, kChar,  // text: the decoded string, or the literal as written
    kIdent, kSelector,             // text: "x", "a.b"
  };
  Kind kind;
  std::string text;
  std::vector<Expr> operands;
};

class SyntaxParser {
 public:
  explicit SyntaxParser(std::string_view src) : lex_(src) {}

  StatusOr<Expr> ParseAll() {
    RETURN_IF_ERROR(Advance());
    ASSIGN_OR_RETURN(Expr e, Or());
    if (tok_.kind == Tok::kNewline) RETURN_IF_ERROR(Advance());
    if (tok_.kind != Tok::kEof) return Expected("'EOF'");
    return e;
  }

 private:
  Status Advance() { return lex_.Next(tok_); }

  Status Expected(std::string_view what) const {
    return InvalidArgument(fmt::format("{}: expected {}, found {}", Position(lex_.source(), tok_.pos), what, Describe(tok_)));
  }

  Status Enter() {
    if (++depth_ > kMaxNesting) {
      return InvalidArgument(
          fmt::format("{}: the expression nests deeper than {} levels", Position(lex_.source(), tok_.pos), kMaxNesting));
    }
    return OkStatus();
  }

  StatusOr<Expr> Or() { return Chain(Tok::kOrOr, Expr::Kind::kOr, &SyntaxParser::And); }
  StatusOr<Expr> And() { return Chain(Tok::kAndAnd, Expr::Kind::kAnd, &SyntaxParser::Binary); }

  StatusOr<Expr> Chain(Tok op, Expr::Kind kind, StatusOr<Expr> (SyntaxParser::*next)()) {
    ASSIGN_OR_RETURN(Expr first, (this->*next)());
    if (tok_.kind != op) return first;
    Expr chain{kind, "", {}};
    chain.operands.push_back(std::move(first));
    while (tok_.kind == op) {
      RETURN_IF_ERROR(Advance());
      ASSIGN_OR_RETURN(Expr e, (this->*next)());
      chain.operands.push_back(std::move(e));
    }
    return chain;
  }

  // Go's comparison, additive and multiplicative operators all bind tighter than && and are all
  // refused by predicate; one flat level is enough to refuse them in the same place.
  StatusOr<Expr> Binary() {
    ASSIGN_OR_RETURN(Expr first, Unary());
    if (tok_.kind != Tok::kBinaryOp) return first;
    Expr chain{Expr::Kind::kBadBinary, std::string(tok_.text), {}};
    chain.operands.push_back(std::move(first));
    while (tok_.kind == Tok::kBinaryOp) {
      RETURN_IF_ERROR(Advance());
      ASSIGN_OR_RETURN(Expr e, Unary());
      chain.operands.push_back(std::move(e));
    }
    return chain;
  }

  StatusOr<Expr> Unary() {
    bool bad = tok_.kind == Tok::kBinaryOp &&
               (tok_.text == "-" || tok_.text == "+" || tok_.text == "^" || tok_.text == "&" || tok_.text == "*");
    if (tok_.kind != Tok::kNot && !bad && tok_.text != "<-") return Primary();
    Expr e{tok_.kind == Tok::kNot ? Expr::Kind::kNot : Expr::Kind::kBadUnary, std::string(tok_.text), {}};
    RETURN_IF_ERROR(Enter());
    RETURN_IF_ERROR(Advance());
    ASSIGN_OR_RETURN(Expr operand, Unary());
    --depth_;
    e.operands.push_back(std::move(operand));
    return e;
  }

  StatusOr<Expr> Primary() {
    Expr e{Expr::Kind::kIdent, "", {}};
    switch (tok_.kind) {
      case Tok::kLParen: {
        RETURN_IF_ERROR(Enter());
        RETURN_IF_ERROR(Advance());
        ASSIGN_OR_RETURN(Expr inner, Or());
        if (tok_.kind != Tok::kRParen) return Expected("')'");
        RETURN_IF_ERROR(Advance());
        --depth_;
        e.kind = Expr::Kind::kParen;
        e.operands.push_back(std::move(inner));
        break;
      }
      case Tok::kIdent:
        e.text = std::string(tok_.text);
        RETURN_IF_ERROR(Advance());
        while (tok_.kind == Tok::kDot) {
          RETURN_IF_ERROR(Advance());
          if (tok_.kind != Tok::kIdent) return Expected("selector or type assertion");
          e.kind = Expr::Kind::kSelector;
          e.text += ".";
          e.text += tok_.text;
          RETURN_IF_ERROR(Advance());
        }
        break;
      case Tok::kString:
        e.kind = Expr::Kind::kString;
        e.text = std::move(tok_.value);
        RETURN_IF_ERROR(Advance());
        break;
      case Tok::kInt:
      case Tok::kFloat:
      case Tok::kChar:
        e.kind = tok_.kind == Tok::kInt ? Expr::Kind::kInt : tok_.kind == Tok::kFloat ? Expr::Kind::kFloat : Expr::Kind::kChar;
        e.text = std::string(tok_.text);
        RETURN_IF_ERROR(Advance());
        break;
      default:
        return Expected("operand");
    }
    while (tok_.kind == Tok::kLParen) RETURN_IF_ERROR(Call(e));
    if (tok_.kind == Tok::kOther && (tok_.text == "[" || tok_.text == "{")) return Expected("'EOF'");
    return e;
  }

  // `e(args...)`: e becomes the call.
  Status Call(Expr& e) {
    RETURN_IF_ERROR(Enter());
    Expr call{Expr::Kind::kCall, e.text, {}};
    if (e.kind != Expr::Kind::kIdent && e.kind != Expr::Kind::kSelector) {
      call.kind = Expr::Kind::kBadCall;
      call.text = fmt::format("expected identifier, got: {}",
                              e.kind == Expr::Kind::kCall || e.kind == Expr::Kind::kBadCall ? "*ast.CallExpr"
                              : e.kind == Expr::Kind::kParen                                 ? "*ast.ParenExpr"
                                                                                              : "*ast.BasicLit");
    } else if (e.kind == Expr::Kind::kSelector && std::count(e.text.begin(), e.text.end(), '.') > 1) {
      call.kind = Expr::Kind::kBadCall;
      call.text = "expected selector identifier, got: *ast.SelectorExpr";
    }
    RETURN_IF_ERROR(Advance());
    while (tok_.kind != Tok::kRParen) {
      ASSIGN_OR_RETURN(Expr arg, Or());
      call.operands.push_back(std::move(arg));
      if (tok_.kind == Tok::kComma) {
        RETURN_IF_ERROR(Advance());
        continue;
      }
      if (tok_.kind == Tok::kRParen) break;
      if (tok_.kind == Tok::kNewline) {
        return InvalidArgument(
            fmt::format("{}: missing ',' before newline in argument list", Position(lex_.source(), tok_.pos)));
      }
      return InvalidArgument(fmt::format("{}: missing ',' in argument list", Position(lex_.source(), tok_.pos)));
    }
    RETURN_IF_ERROR(Advance());
    --depth_;
    e = std::move(call);
    return OkStatus();
  }

  Lexer lex_;
  Token tok_;
  int depth_ = 0;
};

// ------------------------------------------------------------------------------------------------
// Stage 2: vulcand/predicate.

struct MatcherSpec {
  std::string_view name;
  Kind kind;
  std::vector<int> arity;  // Traefik's expectNParameters
};

struct Dialect {
  // The Go type of a predicate value, as reflect names it in a failed call.
  std::string_view predicate_type;
  // The matcher (rules) or function (constraints) `name` stands for, or null.
  const MatcherSpec* (*lookup)(std::string_view name);
  bool variadic;  // rules' functions take ...string; constraints' take (name, value string)
};

const std::vector<MatcherSpec>& RuleMatchers() {
  static const auto* specs = new std::vector<MatcherSpec>{
      {"ClientIP", Kind::kClientIP, {1}},     {"Method", Kind::kMethod, {1}},
      {"Host", Kind::kHost, {1}},             {"HostRegexp", Kind::kHostRegexp, {1}},
      {"Path", Kind::kPath, {1}},             {"PathRegexp", Kind::kPathRegexp, {1}},
      {"PathPrefix", Kind::kPathPrefix, {1}}, {"Header", Kind::kHeader, {2}},
      {"HeaderRegexp", Kind::kHeaderRegexp, {2}}, {"Query", Kind::kQuery, {1, 2}},
      {"QueryRegexp", Kind::kQueryRegexp, {1, 2}},
  };
  return *specs;
}

const MatcherSpec* SpecOf(Kind kind) {
  for (const MatcherSpec& s : RuleMatchers()) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

// Traefik registers each matcher as written, lowercased, uppercased and title-cased ("Pathprefix").
const MatcherSpec* LookupMatcher(std::string_view name) {
  for (const MatcherSpec& s : RuleMatchers()) {
    std::string_view m = s.name;
    if (name.size() != m.size()) continue;
    bool exact = name == m, lower = true, upper = true, title = true;
    for (std::size_t i = 0; i < m.size(); ++i) {
      lower = lower && name[i] == AsciiLower(m[i]);
      upper = upper && name[i] == AsciiUpper(m[i]);
      title = title && name[i] == (i == 0 ? AsciiUpper(m[i]) : AsciiLower(m[i]));
    }
    if (exact || lower || upper || title) return &s;
  }
  return nullptr;
}

// pkg/provider/constraints: names as written only.
const MatcherSpec* LookupLabelFunction(std::string_view name) {
  static const auto* specs = new std::vector<MatcherSpec>{
      {"Label", Kind::kLabel, {2}},
      {"LabelRegex", Kind::kLabelRegex, {2}},
  };
  for (const MatcherSpec& s : *specs) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Dialect kRuleDialect{"rules.TreeBuilder", &LookupMatcher, true};
const Dialect kConstraintDialect{"constraints.constraintLabelFunc", &LookupLabelFunction, false};

// What evaluating an expression gives: a predicate, or a plain value.
struct Value {
  enum class Type { kPredicate, kString, kInt, kFloat } type = Type::kPredicate;
  Node node;
  std::string str;
};

std::string_view GoTypeName(const Value& v, const Dialect& d) {
  switch (v.type) {
    case Value::Type::kPredicate: return d.predicate_type;
    case Value::Type::kString: return "string";
    case Value::Type::kInt: return "int";
    case Value::Type::kFloat: return "float64";
  }
  return "";
}

class Predicate {
 public:
  explicit Predicate(const Dialect& d) : d_(d) {}

  // predicate's parse(): operators, parentheses, and otherwise evaluateExpr.
  StatusOr<Value> Parse(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: {
        Value chain;
        chain.node.kind = e.kind == Expr::Kind::kAnd ? Kind::kAnd : Kind::kOr;
        std::string first_type;  // the first join's operands are checked once both are evaluated
        for (std::size_t i = 0; i < e.operands.size(); ++i) {
          ASSIGN_OR_RETURN(Value v, Parse(e.operands[i]));
          if (i == 0) {
            if (v.type != Value::Type::kPredicate) first_type = GoTypeName(v, d_);
            chain.node.children.push_back(std::move(v.node));
            continue;
          }
          if (i == 1 && !first_type.empty()) return CallError(first_type);
          if (v.type != Value::Type::kPredicate) return CallError(GoTypeName(v, d_));
          chain.node.children.push_back(std::move(v.node));
        }
        return chain;
      }
      case Expr::Kind::kNot: {
        ASSIGN_OR_RETURN(Value v, Parse(e.operands[0]));
        if (v.type != Value::Type::kPredicate) return CallError(GoTypeName(v, d_));
        v.node.negated = !v.node.negated;
        return v;
      }
      case Expr::Kind::kBadUnary:
        // Go parses `*x` as a StarExpr, which predicate does not know at all.
        if (e.text == "*") return InvalidArgument("*ast.StarExpr is not supported");
        return InvalidArgument(fmt::format("{} is not supported", e.text));
      case Expr::Kind::kBadBinary:
        RETURN_IF_ERROR(Parse(e.operands[0]).status());
        RETURN_IF_ERROR(Parse(e.operands[1]).status());
        return InvalidArgument(fmt::format("{} is not supported", e.text));
      case Expr::Kind::kParen:
        return Parse(e.operands[0]);
      default:
        return Evaluate(e);
    }
  }

 private:
  Status CallError(std::string_view got) const {
    return InvalidArgument(fmt::format("reflect: Call using {} as type {}", got, d_.predicate_type));
  }

  // predicate's evaluateExpr(): literals, identifiers, calls.
  StatusOr<Value> Evaluate(const Expr& e) {
    Value v;
    switch (e.kind) {
      case Expr::Kind::kString:
        v.type = Value::Type::kString;
        v.str = e.text;
        return v;
      case Expr::Kind::kInt:
        v.type = Value::Type::kInt;
        return v;
      case Expr::Kind::kFloat:
        v.type = Value::Type::kFloat;
        return v;
      case Expr::Kind::kChar:
        return InvalidArgument("unsupported function argument type: 'CHAR'");
      case Expr::Kind::kIdent:
      case Expr::Kind::kSelector:
        return InvalidArgument(fmt::format("{} is not defined", e.text));
      case Expr::Kind::kBadCall:
        return InvalidArgument(e.text);
      case Expr::Kind::kCall:
        return EvaluateCall(e);
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr:
      case Expr::Kind::kBadBinary:
        return InvalidArgument("*ast.BinaryExpr is not supported");
      case Expr::Kind::kNot:
      case Expr::Kind::kBadUnary:
        return InvalidArgument(e.text == "*" ? "*ast.StarExpr is not supported" : "*ast.UnaryExpr is not supported");
      case Expr::Kind::kParen:
        return InvalidArgument("*ast.ParenExpr is not supported");
    }
    return InvalidArgument("unsupported expression");
  }

  StatusOr<Value> EvaluateCall(const Expr& e) {
    const MatcherSpec* fn = d_.lookup(e.text);
    if (fn == nullptr) return InvalidArgument(fmt::format("unsupported function: {}", e.text));
    std::vector<Value> args;
    for (const Expr& a : e.operands) {
      ASSIGN_OR_RETURN(Value v, Evaluate(a));
      args.push_back(std::move(v));
    }
    if (!d_.variadic && args.size() != 2) {
      return InvalidArgument(args.size() < 2 ? "reflect: Call with too few input arguments"
                                             : "reflect: Call with too many input arguments");
    }
    Value out;
    out.node.kind = fn->kind;
    out.node.name = fn->name;
    for (Value& a : args) {
      if (a.type != Value::Type::kString) {
        return InvalidArgument(d_.variadic ? fmt::format("reflect: cannot use {} as type string in Call", GoTypeName(a, d_))
                                           : fmt::format("reflect: Call using {} as type string", GoTypeName(a, d_)));
      }
      out.node.args.push_back(std::move(a.str));
    }
    return out;
  }

  const Dialect& d_;
};

// ------------------------------------------------------------------------------------------------
// Stage 3: Traefik's matchers.

// Go's regexp error names, for RE2's codes.
std::string_view GoRegexpError(RE2::ErrorCode code) {
  switch (code) {
    case RE2::ErrorBadEscape: return "invalid escape sequence";
    case RE2::ErrorBadCharClass: return "invalid character class";
    case RE2::ErrorBadCharRange: return "invalid character class range";
    case RE2::ErrorMissingBracket: return "missing closing ]";
    case RE2::ErrorMissingParen: return "missing closing )";
    case RE2::ErrorUnexpectedParen: return "unexpected )";
    case RE2::ErrorTrailingBackslash: return "trailing backslash at end of expression";
    case RE2::ErrorRepeatArgument: return "missing argument to repetition operator";
    case RE2::ErrorRepeatSize: return "invalid repeat count";
    case RE2::ErrorRepeatOp: return "invalid nested repetition operator";
    case RE2::ErrorBadPerlOp: return "invalid or unsupported Perl syntax";
    case RE2::ErrorBadUTF8: return "invalid UTF-8";
    case RE2::ErrorBadNamedCapture: return "invalid named capture";
    case RE2::ErrorPatternTooLarge: return "expression too large";
    default: return "internal error";
  }
}

// Compiles `pattern` within the bounds; the error is Go's regexp.Compile's message.
StatusOr<std::unique_ptr<RE2>> CompileRegexp(std::string_view pattern, int& count) {
  if (pattern.size() > kMaxPatternBytes) {
    return InvalidArgument(fmt::format("the pattern is longer than {} bytes", kMaxPatternBytes));
  }
  if (++count > kMaxRegexps) {
    return InvalidArgument(fmt::format("more than {} regular expressions in one expression", kMaxRegexps));
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kRegexpMaxMem);
  options.set_never_capture(true);
  auto re = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    return InvalidArgument(fmt::format("error parsing regexp: {}: `{}`", GoRegexpError(re->error_code()), re->error_arg()));
  }
  return re;
}

bool PartialMatch(const RE2& re, std::string_view text) {
  return re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, nullptr, 0);
}

using Ip16 = std::array<unsigned char, 16>;

bool IsV4Mapped(const Ip16& ip) {
  for (int i = 0; i < 10; ++i) {
    if (ip[i] != 0) return false;
  }
  return ip[10] == 0xFF && ip[11] == 0xFF;
}

// Go's netip.ParseAddr (IPv4 dotted quad without leading zeros, IPv6 with "::" and an embedded
// IPv4, an IPv6 zone when allowed), as its 16-byte form (IPv4 mapped).
std::optional<Ip16> ParseAddr(std::string_view s, bool allow_zone) {
  std::size_t k = s.find_first_of(".:%");
  if (k == std::string_view::npos || s[k] == '%') return std::nullopt;
  Ip16 out{};
  char buf[64];
  if (s[k] == '.') {
    if (s.size() >= sizeof(buf)) return std::nullopt;
    std::memcpy(buf, s.data(), s.size());
    buf[s.size()] = 0;
    out[10] = out[11] = 0xFF;
    if (inet_pton(AF_INET, buf, out.data() + 12) != 1) return std::nullopt;
    return out;
  }
  if (std::size_t pct = s.find('%'); pct != std::string_view::npos) {
    if (!allow_zone || pct + 1 == s.size()) return std::nullopt;
    s = s.substr(0, pct);
  }
  if (s.size() >= sizeof(buf)) return std::nullopt;
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = 0;
  if (inet_pton(AF_INET6, buf, out.data()) != 1) return std::nullopt;
  return out;
}

// Go's net.SplitHostPort; false where it fails.
bool SplitHostPort(std::string_view hostport, std::string_view& host) {
  std::size_t i = hostport.rfind(':');
  if (i == std::string_view::npos) return false;
  std::size_t j = 0, k = 0;
  if (hostport[0] == '[') {
    std::size_t end = hostport.find(']');
    if (end == std::string_view::npos || end + 1 != i) return false;
    host = hostport.substr(1, end - 1);
    j = 1, k = end + 1;
  } else {
    host = hostport.substr(0, i);
    if (host.find(':') != std::string_view::npos) return false;
  }
  if (hostport.find('[', j) != std::string_view::npos) return false;
  if (hostport.find(']', k) != std::string_view::npos) return false;
  return true;
}

// Traefik's ClientIP argument: net.ParseIP, else net.ParseCIDR, normalised as net.IPNet.Contains
// sees it (an IPv6 range whose network is IPv4-mapped is an IPv4 range).
std::optional<Node::IpRange> ParseIpRange(std::string_view s) {
  Node::IpRange r;
  if (std::optional<Ip16> ip = ParseAddr(s, false)) {
    r.addr = *ip;
    r.bits = 128;
    return r;
  }
  std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view addr = s.substr(0, slash), mask = s.substr(slash + 1);
  std::optional<Ip16> ip = ParseAddr(addr, false);
  if (!ip || mask.empty() || mask.size() > 8) return std::nullopt;
  int bits = 0;
  for (char c : mask) {
    if (c < '0' || c > '9') return std::nullopt;
    bits = bits * 10 + (c - '0');
  }
  bool is4 = addr.find(':') == std::string_view::npos;
  if (bits > (is4 ? 32 : 128)) return std::nullopt;
  if (is4) bits += 96;
  for (int b = 0; b < 128; ++b) {
    if (b >= bits) (*ip)[b / 8] &= static_cast<unsigned char>(~(0x80u >> (b % 8)));
  }
  if (IsV4Mapped(*ip) && bits >= 96) {
    r.v4 = true;
    std::memcpy(r.addr.data(), ip->data() + 12, 4);
    r.bits = bits - 96;
  } else {
    r.addr = *ip;
    r.bits = bits;
  }
  return r;
}

bool PrefixEqual(const unsigned char* a, const unsigned char* b, int bits) {
  int bytes = bits / 8;
  if (std::memcmp(a, b, static_cast<std::size_t>(bytes)) != 0) return false;
  if (bits % 8 == 0) return true;
  unsigned char mask = static_cast<unsigned char>(0xFF00u >> (bits % 8));
  return (a[bytes] & mask) == (b[bytes] & mask);
}

bool InRange(const Node::IpRange& r, const Ip16& client) {
  if (r.bits == 128 && !r.v4) return r.addr == client;  // net.IP.Equal over 16-byte forms
  bool mapped = IsV4Mapped(client);
  if (r.v4 != mapped) return false;
  return r.v4 ? PrefixEqual(r.addr.data(), client.data() + 12, r.bits) : PrefixEqual(r.addr.data(), client.data(), r.bits);
}

bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view KindOpName(Kind kind, bool flipped) {
  bool is_and = kind == Kind::kAnd;
  return is_and != flipped ? "and" : "or";
}

class Compiler {
 public:
  // Traefik's addRule for the tree under `n`; `flipped`: an odd number of `!` above or on it
  // (Traefik pushes `!` down with De Morgan, turning an `and` into an `or` in its messages).
  Status CompileRule(Node& n, bool flipped) {
    flipped = flipped != n.negated;
    if (n.kind == Kind::kAnd || n.kind == Kind::kOr) {
      // Go's tree for a b c is ((a b) c): the i-th operand sits left of (k-1-i) joins, the first
      // left of all k-1; each left branch's error is wrapped once per join.
      std::size_t k = n.children.size();
      for (std::size_t i = 0; i < k; ++i) {
        Status s = CompileRule(n.children[i], flipped);
        if (s.ok()) continue;
        std::size_t wraps = i == 0 ? k - 1 : k - 1 - i;
        std::string prefix;
        for (std::size_t w = 0; w < wraps; ++w) {
          prefix += fmt::format("error while adding rule {}: ", KindOpName(n.kind, flipped));
        }
        return InvalidArgument(prefix + s.message());
      }
      return OkStatus();
    }
    return Leaf(n);
  }

  // Constraints: only LabelRegex needs work; a pattern Go could not compile matches nothing.
  Status CompileConstraint(Node& n) {
    if (n.kind == Kind::kAnd || n.kind == Kind::kOr) {
      for (Node& c : n.children) RETURN_IF_ERROR(CompileConstraint(c));
      return OkStatus();
    }
    if (n.kind != Kind::kLabelRegex) return OkStatus();
    StatusOr<std::unique_ptr<RE2>> re = CompileRegexp(n.args[1], regexps_);
    if (re.ok()) {
      n.re = std::move(re).value();
    } else if (n.args[1].size() > kMaxPatternBytes || regexps_ > kMaxRegexps) {
      return InvalidArgument(fmt::format("LabelRegex: {}", re.status().message()));
    } else {
      n.kind = Kind::kNever;
    }
    return OkStatus();
  }

 private:
  Status Leaf(Node& n) {
    std::string_view name = n.name;
    // rules.CheckRule
    if (n.args.empty()) return InvalidArgument(fmt::format("error while checking rule {}: no args for matcher {}", name, name));
    for (const std::string& a : n.args) {
      if (a.empty()) {
        return InvalidArgument(
            fmt::format("error while checking rule {}: empty args for matcher {}, {}", name, name, GoList(n.args)));
      }
    }
    const MatcherSpec* spec = SpecOf(n.kind);
    if (spec == nullptr) return OkStatus();
    if (std::find(spec->arity.begin(), spec->arity.end(), static_cast<int>(n.args.size())) == spec->arity.end()) {
      std::vector<std::string> want;
      for (int a : spec->arity) want.push_back(std::to_string(a));
      return Adding(name, fmt::format("unexpected number of parameters; got {}, expected one of {}", n.args.size(),
                                      GoList(want)));
    }
    std::string& arg = n.args[0];
    switch (n.kind) {
      case Kind::kClientIP: {
        std::optional<Node::IpRange> r = ParseIpRange(arg);
        if (!r) {
          // Traefik formats the nil *net.IPNet ParseCIDR returned, hence "<nil>".
          return Adding(name, fmt::format("initializing IP checker for ClientIP matcher: parsing CIDR trusted IPs <nil>: "
                                          "invalid CIDR address: {}",
                                          arg));
        }
        n.ips.push_back(*r);
        return OkStatus();
      }
      case Kind::kMethod:
        UpperMethod(n);
        return OkStatus();
      case Kind::kHost:
        if (arg == "*") {
          n.kind = Kind::kHostAny;
          return OkStatus();
        }
        if (!IsAscii(arg)) {
          return Adding(name, fmt::format("invalid value {} for Host matcher, non-ASCII characters are not allowed",
                                          GoQuote(arg)));
        }
        std::transform(arg.begin(), arg.end(), arg.begin(), AsciiLower);
        return OkStatus();
      case Kind::kHostRegexp: {
        if (!IsAscii(arg)) {
          return Adding(name, fmt::format("invalid value {} for HostRegexp matcher, non-ASCII characters are not allowed",
                                          GoQuote(arg)));
        }
        RETURN_IF_ERROR(Regexp(n, arg, "HostRegexp"));
        n.re_matches_empty = PartialMatch(*n.re, "");
        return OkStatus();
      }
      case Kind::kPath:
      case Kind::kPathPrefix:
        if (!arg.starts_with('/')) return Adding(name, fmt::format("path {} does not start with a '/'", GoQuote(arg)));
        return OkStatus();
      case Kind::kPathRegexp:
        return Regexp(n, arg, "PathPrefix");  // sic: Traefik names PathRegexp's errors so
      case Kind::kHeader:
      case Kind::kHeaderRegexp: {
        // Go's server keeps Host and Transfer-Encoding out of req.Header, and has refused any
        // header whose name is not a token.
        bool never = EqualFoldAscii(arg, "Host") || EqualFoldAscii(arg, "Transfer-Encoding") ||
                     !std::all_of(arg.begin(), arg.end(), IsTokenChar);
        if (n.kind == Kind::kHeaderRegexp) RETURN_IF_ERROR(Regexp(n, n.args[1], "HeaderRegexp"));
        if (never) n.kind = Kind::kNever;
        return OkStatus();
      }
      case Kind::kQuery:
        return OkStatus();
      case Kind::kQueryRegexp:
        if (n.args.size() == 1) {
          n.kind = Kind::kQuery;  // Traefik hands QueryRegexp(`k`) to Query
          return OkStatus();
        }
        return Regexp(n, n.args[1], "QueryRegexp");
      default:
        return OkStatus();
    }
  }

  static Status Adding(std::string_view name, std::string_view message) {
    return InvalidArgument(fmt::format("error while adding rule {}: {}", name, message));
  }

  Status Regexp(Node& n, std::string_view pattern, std::string_view matcher) {
    StatusOr<std::unique_ptr<RE2>> re = CompileRegexp(pattern, regexps_);
    if (!re.ok()) return Adding(n.name, fmt::format("compiling {} matcher: {}", matcher, re.status().message()));
    n.re = std::move(re).value();
    return OkStatus();
  }

  // strings.ToUpper: ASCII, plus the two non-ASCII letters whose upper case is ASCII (ı -> I,
  // ſ -> S). Any other non-ASCII letter stays non-ASCII, which no method token contains.
  static void UpperMethod(Node& n) {
    std::string& arg = n.args[0];
    std::string out;
    for (std::size_t i = 0; i < arg.size(); ++i) {
      std::string_view rest = std::string_view(arg).substr(i);
      if (rest.starts_with("\xC4\xB1")) {
        out.push_back('I'), ++i;
      } else if (rest.starts_with("\xC5\xBF")) {
        out.push_back('S'), ++i;
      } else {
        out.push_back(AsciiUpper(arg[i]));
      }
    }
    arg = std::move(out);
  }

  int regexps_ = 0;
};

// ------------------------------------------------------------------------------------------------
// Matching.

// Go's URL.EscapedPath keeps a raw path that is a valid encoding: no byte that escape() encodes.
bool PathByteValidEncoded(unsigned char c) {
  if (std::isalnum(c)) return true;
  return std::string_view("-_.~$&+,/:;=@!'()*[]").find(static_cast<char>(c)) != std::string_view::npos;
}

// Reserved characters (RFC 3986 §2.2, and '%'): Traefik's routing path keeps them encoded.
bool Reserved(unsigned char c) {
  return std::string_view(":/?#[]@!$&'()*+,;=%").find(static_cast<char>(c)) != std::string_view::npos;
}

// The subset of Reserved that Go's escape() encodes in a path (the rest it writes as they are).
bool ReservedEscapedByGo(unsigned char c) {
  return std::string_view("?#[]!'()*%").find(static_cast<char>(c)) != std::string_view::npos;
}

void AppendPercent(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 15]);
}

// Go's QueryUnescape(raw) == want, without building the string; false for a bad escape.
bool QueryUnescapedEquals(std::string_view raw, std::string_view want) {
  std::size_t j = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%') {
      if (i + 2 >= raw.size() || !IsHex(raw[i + 1]) || !IsHex(raw[i + 2])) return false;
      c = static_cast<char>(Unhex(raw[i + 1]) * 16 + Unhex(raw[i + 2]));
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (j >= want.size() || want[j] != c) return false;
    ++j;
  }
  return j == want.size();
}

// Go's QueryUnescape into `out` (or a view of `raw` itself); false for a bad escape.
bool QueryUnescape(std::string_view raw, std::string& out, std::string_view& result) {
  if (raw.find_first_of("%+") == std::string_view::npos) {
    result = raw;
    return true;
  }
  out.clear();
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%') {
      if (i + 2 >= raw.size() || !IsHex(raw[i + 1]) || !IsHex(raw[i + 2])) return false;
      c = static_cast<char>(Unhex(raw[i + 1]) * 16 + Unhex(raw[i + 2]));
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    out.push_back(c);
  }
  result = out;
  return true;
}

// Go's url.ParseQuery drops every parameter past this many (GODEBUG urlmaxqueryparams, whose
// default Traefik, built with Go 1.26, has): it then returns no parameter at all.
constexpr std::size_t kGoMaxQueryParams = 10000;

// Per-request state: what several matchers derive from the request, computed at most once.
class Request {
 public:
  explicit Request(const RequestFacts& f) : f_(f) {}

  const RequestFacts& facts() const { return f_; }

  // Traefik's canonical host: parseHost (port and brackets removed), TrimSpace.
  std::string_view Host() {
    if (host_done_) return host_;
    host_done_ = true;
    std::string_view h = f_.host;
    if (h.find(':') != std::string_view::npos) {
      std::string_view split;
      if (SplitHostPort(h, split)) {
        h = split;
      } else if (h.front() == '[' && h.back() == ']') {
        h = h.substr(1, h.size() - 2);
      }
    }
    constexpr std::string_view kSpace = " \t\n\v\f\r";
    std::size_t b = h.find_first_not_of(kSpace);
    h = b == std::string_view::npos ? std::string_view() : h.substr(b, h.find_last_not_of(kSpace) - b + 1);
    host_ = h;
    return host_;
  }

  std::string_view LowerHost() {
    if (lower_done_) return lower_host_;
    lower_done_ = true;
    std::string_view h = Host();
    if (std::none_of(h.begin(), h.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      lower_host_ = h;
    } else {
      lower_buf_.assign(h);
      std::transform(lower_buf_.begin(), lower_buf_.end(), lower_buf_.begin(), AsciiLower);
      lower_host_ = lower_buf_;
    }
    return lower_host_;
  }

  // Traefik's routing path, or nullopt for a path with a bad %-escape (which Go's server
  // answers 400 before any rule runs).
  std::optional<std::string_view> RoutingPath() {
    if (path_done_) return path_;
    path_done_ = true;
    std::string_view p = f_.path;
    bool valid_encoded = true, has_percent = false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(p[i]);
      if (c == '%') {
        if (i + 2 >= p.size() || !IsHex(p[i + 1]) || !IsHex(p[i + 2])) return path_ = std::nullopt;
        has_percent = true;
        i += 2;
      } else if (!PathByteValidEncoded(c)) {
        valid_encoded = false;
      }
    }
    if (valid_encoded && !has_percent) return path_ = p;
    path_buf_.clear();
    path_buf_.reserve(p.size() * (valid_encoded ? 1 : 3));
    for (std::size_t i = 0; i < p.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(p[i]);
      bool encoded = c == '%';
      if (encoded) {
        c = static_cast<unsigned char>(Unhex(p[i + 1]) * 16 + Unhex(p[i + 2]));
        i += 2;
      }
      // A valid raw path is Go's EscapedPath as is: its reserved escapes stay (upper-cased, as
      // the entry point's normalizePath leaves them). Otherwise Go re-escapes the decoded path,
      // and of what it escapes only the reserved characters stay encoded.
      bool keep = valid_encoded ? (encoded && Reserved(c)) : ReservedEscapedByGo(c);
      if (keep) {
        AppendPercent(path_buf_, c);
      } else {
        path_buf_.push_back(static_cast<char>(c));
      }
    }
    return path_ = std::string_view(path_buf_);
  }

  const std::optional<Ip16>& ClientIp() {
    if (ip_done_) return ip_;
    ip_done_ = true;
    std::string_view host = f_.client_ip;
    std::string_view split;
    if (SplitHostPort(host, split)) host = split;  // Traefik's RemoteAddrStrategy
    ip_ = ParseAddr(host, true);
    return ip_;
  }

  // Whether some value of query parameter `key` satisfies `accept(raw value)`.
  template <typename F>
  bool AnyQueryValue(std::string_view key, F&& accept) {
    std::string_view q = f_.query;
    if (static_cast<std::size_t>(std::count(q.begin(), q.end(), '&')) + 1 > kGoMaxQueryParams) return false;
    while (!q.empty()) {
      std::size_t amp = q.find('&');
      std::string_view pair = q.substr(0, amp);
      q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
      if (pair.empty() || pair.find(';') != std::string_view::npos) continue;
      std::size_t eq = pair.find('=');
      std::string_view k = pair.substr(0, eq);
      std::string_view v = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
      if (QueryUnescapedEquals(k, key) && accept(v)) return true;
    }
    return false;
  }

  std::string& scratch() { return scratch_; }

 private:
  const RequestFacts& f_;
  bool host_done_ = false, lower_done_ = false, path_done_ = false, ip_done_ = false;
  std::string_view host_, lower_host_;
  std::string lower_buf_, path_buf_, scratch_;
  std::optional<std::string_view> path_;
  std::optional<Ip16> ip_;
};

// Traefik's muxer.DomainMatchHostExpression: `expr` is lower case.
bool DomainMatch(std::string_view domain, std::string_view expr) {
  if (expr.starts_with('*')) {
    std::size_t dot = domain.find('.');
    return EqualFoldAscii(dot == std::string_view::npos ? std::string_view() : domain.substr(dot), expr.substr(1));
  }
  return EqualFoldAscii(domain, expr);
}

bool MatchHost(std::string_view host, std::string_view expr) {
  if (host.empty()) return false;
  if (DomainMatch(host, expr)) return true;
  if (expr.ends_with('.') && DomainMatch(host, expr.substr(0, expr.size() - 1))) return true;
  if (host.ends_with('.') && DomainMatch(host.substr(0, host.size() - 1), expr)) return true;
  return false;
}

template <typename F>
bool AnyHeader(const RequestFacts& f, std::string_view name, F&& accept) {
  if (f.headers == nullptr) return false;
  for (const auto& [k, v] : *f.headers) {
    if (EqualFoldAscii(k, name) && accept(v)) return true;
  }
  return false;
}

bool Eval(const Node& n, Request& r) {
  bool v = false;
  switch (n.kind) {
    case Kind::kAnd:
      v = std::all_of(n.children.begin(), n.children.end(), [&](const Node& c) { return Eval(c, r); });
      break;
    case Kind::kOr:
      v = std::any_of(n.children.begin(), n.children.end(), [&](const Node& c) { return Eval(c, r); });
      break;
    case Kind::kHost:
      v = MatchHost(r.Host(), n.args[0]);
      break;
    case Kind::kHostAny:
      v = true;
      break;
    case Kind::kHostRegexp:
      v = n.re_matches_empty || PartialMatch(*n.re, r.LowerHost());
      break;
    case Kind::kPath:
    case Kind::kPathPrefix:
    case Kind::kPathRegexp: {
      std::optional<std::string_view> p = r.RoutingPath();
      if (!p) break;
      v = n.kind == Kind::kPath         ? *p == n.args[0]
          : n.kind == Kind::kPathPrefix ? p->starts_with(n.args[0])
                                        : PartialMatch(*n.re, *p);
      break;
    }
    case Kind::kMethod:
      v = r.facts().method == n.args[0];
      break;
    case Kind::kHeader:
      v = AnyHeader(r.facts(), n.args[0], [&](std::string_view value) { return value == n.args[1]; });
      break;
    case Kind::kHeaderRegexp:
      v = AnyHeader(r.facts(), n.args[0], [&](std::string_view value) { return PartialMatch(*n.re, value); });
      break;
    case Kind::kQuery: {
      std::string_view want = n.args.size() == 2 ? std::string_view(n.args[1]) : std::string_view();
      v = r.AnyQueryValue(n.args[0], [&](std::string_view raw) { return QueryUnescapedEquals(raw, want); });
      break;
    }
    case Kind::kQueryRegexp:
      v = r.AnyQueryValue(n.args[0], [&](std::string_view raw) {
        std::string_view value;
        return QueryUnescape(raw, r.scratch(), value) && PartialMatch(*n.re, value);
      });
      break;
    case Kind::kClientIP: {
      const std::optional<Ip16>& ip = r.ClientIp();
      v = ip && std::any_of(n.ips.begin(), n.ips.end(), [&](const Node::IpRange& range) { return InRange(range, *ip); });
      break;
    }
    case Kind::kLabel:
    case Kind::kLabelRegex:
    case Kind::kNever:
      break;
  }
  return v != n.negated;
}

bool EvalLabels(const Node& n, const std::map<std::string, std::string>& labels) {
  bool v = false;
  auto value_of = [&](const std::string& name) -> std::string_view {
    auto it = labels.find(name);
    return it == labels.end() ? std::string_view() : std::string_view(it->second);
  };
  switch (n.kind) {
    case Kind::kAnd:
      v = std::all_of(n.children.begin(), n.children.end(), [&](const Node& c) { return EvalLabels(c, labels); });
      break;
    case Kind::kOr:
      v = std::any_of(n.children.begin(), n.children.end(), [&](const Node& c) { return EvalLabels(c, labels); });
      break;
    case Kind::kLabel:
      v = value_of(n.args[0]) == n.args[1];
      break;
    case Kind::kLabelRegex:
      v = PartialMatch(*n.re, value_of(n.args[0]));
      break;
    default:
      break;
  }
  return v != n.negated;
}

// Traefik quotes the whole rule in its messages; a tenant's 64 KiB rule is cut short.
std::string Quoted(std::string_view text) {
  constexpr std::size_t kMax = 1024;
  if (text.size() <= kMax) return std::string(text);
  return fmt::format("{}... ({} bytes)", text.substr(0, kMax), text.size());
}

StatusOr<Node> ParsePredicate(std::string_view text, const Dialect& dialect) {
  SyntaxParser syntax(text);
  ASSIGN_OR_RETURN(Expr e, syntax.ParseAll());
  Predicate predicate(dialect);
  ASSIGN_OR_RETURN(Value v, predicate.Parse(e));
  if (v.type != Value::Type::kPredicate) {
    return FailedPrecondition("not a predicate");  // the caller words it
  }
  return std::move(v.node);
}

}  // namespace

// ------------------------------------------------------------------------------------------------

Rule::Rule(std::shared_ptr<const Node> root, std::string text) : root_(std::move(root)), text_(std::move(text)) {}

StatusOr<Rule> Rule::Parse(std::string_view text) {
  if (text.size() > kMaxRuleBytes) {
    return InvalidArgument(fmt::format("the rule is {} bytes long, over the limit of {}", text.size(), kMaxRuleBytes));
  }
  std::string quoted = Quoted(text);
  StatusOr<Node> parsed = ParsePredicate(text, kRuleDialect);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kFailedPrecondition) {
      return InvalidArgument(fmt::format("error while parsing rule {}: obtaining build tree", quoted));
    }
    return InvalidArgument(
        fmt::format("error while parsing rule {}: parsing rule {}: {}", quoted, quoted, parsed.status().message()));
  }
  auto root = std::make_shared<Node>(std::move(parsed).value());
  Compiler compiler;
  if (Status s = compiler.CompileRule(*root, false); !s.ok()) {
    return InvalidArgument(fmt::format("error while parsing rule {}: adding rule {}: {}", quoted, quoted, s.message()));
  }
  return Rule(std::move(root), std::string(text));
}

bool Rule::Matches(const RequestFacts& request) const {
  if (root_ == nullptr) return false;
  Request r(request);
  return Eval(*root_, r);
}

const std::string& Rule::text() const { return text_; }

namespace {
void CollectDomains(const Node& n, std::vector<std::string>& out) {
  if (n.kind == Kind::kHost) {
    std::string_view d = n.args[0];
    if (d.size() > 1 && d.back() == '.') d.remove_suffix(1);  // as Traefik's HostSNI
    out.emplace_back(d);
  }
  if (n.kind == Kind::kHostAny) out.emplace_back("*");
  for (const Node& c : n.children) CollectDomains(c, out);
}
}  // namespace

std::vector<std::string> Rule::Domains() const {
  std::vector<std::string> out;
  if (root_) CollectDomains(*root_, out);
  return out;
}

int Rule::DefaultPriority() const { return static_cast<int>(text_.size()); }

Constraint::Constraint(std::shared_ptr<const Rule::Node> root) : root_(std::move(root)) {}

StatusOr<Constraint> Constraint::Parse(std::string_view text) {
  if (text.empty()) return Constraint(nullptr);
  if (text.size() > kMaxRuleBytes) {
    return InvalidArgument(fmt::format("the constraint is {} bytes long, over the limit of {}", text.size(), kMaxRuleBytes));
  }
  StatusOr<Node> parsed = ParsePredicate(text, kConstraintDialect);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kFailedPrecondition) return InvalidArgument("not a constraintLabelFunc");
    return InvalidArgument(parsed.status().message());
  }
  auto root = std::make_shared<Node>(std::move(parsed).value());
  Compiler compiler;
  RETURN_IF_ERROR(compiler.CompileConstraint(*root));
  return Constraint(std::move(root));
}

bool Constraint::Matches(const std::map<std::string, std::string>& labels) const {
  if (root_ == nullptr) return true;
  return EvalLabels(*root_, labels);
}

}  // namespace paddock::edge
