#include "logs/internal/regex.h"

#include <algorithm>
#include <utility>

namespace paddock::logs::internal {
namespace {

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "Filter patterns with regex can only include the following" (regex-expressions.html).
bool IsAllowed(char c) {
  if (IsAlnum(c)) return true;
  switch (c) {
    case ':': case '_': case '#': case '=': case '@': case '/': case ';': case ',': case '-':   // symbols
    case '^': case '$': case '?': case '[': case ']': case '{': case '}': case '|': case '\\':  // operators
    case '*': case '+': case '.':
      return true;
    default:
      return false;
  }
}

Status Bad(std::string why) { return InvalidArgument(std::move(why)); }

}  // namespace

StatusOr<Regex> Regex::Compile(std::string_view body) {
  for (char c : body) {
    if (c == '(' || c == ')') return Bad("'(' and ')' are not supported in regular expressions");
    if (static_cast<unsigned char>(c) >= 0x80) return Bad("multi-byte characters are not supported in regular expressions");
    if (!IsAllowed(c)) return Bad("the character '" + std::string(1, c) + "' is not supported in regular expressions");
  }
  if (body.empty()) return Bad("a regular expression between '%' and '%' is empty");
  Regex r;
  std::size_t budget = kMaxPositions;
  std::size_t from = 0;
  // '|' splits alternatives; a '|' inside a class or escaped does not.
  bool in_class = false;
  for (std::size_t i = 0; i <= body.size(); ++i) {
    if (i < body.size()) {
      const char c = body[i];
      if (c == '\\') {
        ++i;
        continue;
      }
      if (in_class) {
        if (c == ']') in_class = false;
        continue;
      }
      if (c == '[') {
        in_class = true;
        if (i + 1 < body.size() && body[i + 1] == '^') ++i;
        if (i + 1 < body.size() && body[i + 1] == ']') ++i;  // a leading ']' is a member
        continue;
      }
      if (c != '|') continue;
    }
    ASSIGN_OR_RETURN(Alternative a, CompileAlternative(body.substr(from, i - from), budget));
    BuildTables(a);
    r.alternatives_.push_back(std::move(a));
    from = i + 1;
  }
  return r;
}

StatusOr<Regex::Alternative> Regex::CompileAlternative(std::string_view s, std::size_t& budget) {
  Alternative a;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '^') {
    a.anchored_start = true;
    ++i;
  }
  std::size_t end = s.size();
  if (end > i && s[end - 1] == '$' && !(end >= 2 && s[end - 2] == '\\')) {
    a.anchored_end = true;
    --end;
  }
  if (i == end && !a.anchored_start && !a.anchored_end) return Bad("a regular expression has an empty alternative");

  // Reads one escape (after '\') into `set`.
  auto escape = [&](char e, ByteSet& set) -> Status {
    ByteSet cls;
    bool negate = false;
    switch (e) {
      case 'd': case 'D':
        for (char c = '0'; c <= '9'; ++c) cls.Add(static_cast<unsigned char>(c));
        negate = e == 'D';
        break;
      case 'w': case 'W':
        for (int c = 0; c < 256; ++c) {
          if (IsAlnum(static_cast<char>(c)) || c == '_') cls.Add(static_cast<unsigned char>(c));
        }
        negate = e == 'W';
        break;
      case 's': case 'S':
        for (char c : {' ', '\t', '\n', '\r', '\f', '\v'}) cls.Add(static_cast<unsigned char>(c));
        negate = e == 'S';
        break;
      case 't': set.Add('\t'); return OkStatus();
      case 'n': set.Add('\n'); return OkStatus();
      case 'r': set.Add('\r'); return OkStatus();
      default:
        if (IsAlnum(e)) return Bad("the escape '\\" + std::string(1, e) + "' is not supported in regular expressions");
        set.Add(static_cast<unsigned char>(e));  // an escaped symbol or operator is itself
        return OkStatus();
    }
    for (int c = 0; c < 256; ++c) {
      if (cls.Has(static_cast<unsigned char>(c)) != negate) set.Add(static_cast<unsigned char>(c));
    }
    return OkStatus();
  };

  while (i < end) {
    ByteSet set;
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 >= end) return Bad("a regular expression ends with '\\'");
      RETURN_IF_ERROR(escape(s[i + 1], set));
      i += 2;
    } else if (c == '.') {
      for (int b = 0; b < 256; ++b) {
        if (b != '\n' && b != '\r') set.Add(static_cast<unsigned char>(b));  // Java's '.'
      }
      ++i;
    } else if (c == '[') {
      ++i;
      bool negate = false;
      if (i < end && s[i] == '^') {
        negate = true;
        ++i;
      }
      ByteSet members;
      bool first = true;
      while (true) {
        if (i >= end) return Bad("a '[' is not closed in a regular expression");
        char m = s[i];
        if (m == ']' && !first) {
          ++i;
          break;
        }
        first = false;
        if (m == '\\') {
          if (i + 1 >= end) return Bad("a regular expression ends with '\\'");
          RETURN_IF_ERROR(escape(s[i + 1], members));
          i += 2;
          continue;
        }
        if (i + 2 < end && s[i + 1] == '-' && s[i + 2] != ']') {
          const char hi = s[i + 2];
          if (hi == '\\' || hi < m) return Bad("an invalid range in a '[...]' of a regular expression");
          for (int b = static_cast<unsigned char>(m); b <= static_cast<unsigned char>(hi); ++b) {
            members.Add(static_cast<unsigned char>(b));
          }
          i += 3;
          continue;
        }
        members.Add(static_cast<unsigned char>(m));
        ++i;
      }
      for (int b = 0; b < 256; ++b) {
        if (members.Has(static_cast<unsigned char>(b)) != negate) set.Add(static_cast<unsigned char>(b));
      }
    } else if (c == '^' || c == '$') {
      return Bad("'" + std::string(1, c) + "' is supported only at the start ('^') or end ('$') of a regular expression");
    } else if (c == '?' || c == '*' || c == '+' || c == '{' || c == '}' || c == ']') {
      return Bad("'" + std::string(1, c) + "' follows nothing it could apply to in a regular expression");
    } else {
      set.Add(static_cast<unsigned char>(c));
      ++i;
    }

    // A quantifier, at most one.
    std::size_t min = 1;
    std::size_t max = 1;  // SIZE_MAX: unbounded
    constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);
    if (i < end && (s[i] == '?' || s[i] == '*' || s[i] == '+')) {
      min = s[i] == '+' ? 1 : 0;
      max = s[i] == '?' ? 1 : kUnbounded;
      ++i;
    } else if (i < end && s[i] == '{') {
      std::size_t j = i + 1;
      auto number = [&](std::size_t& out) {
        const std::size_t from = j;
        out = 0;
        while (j < end && IsDigit(s[j]) && j - from < 4) out = out * 10 + static_cast<std::size_t>(s[j++] - '0');
        return j > from;
      };
      if (!number(min)) return Bad("a '{' in a regular expression needs '{m}', '{m,}' or '{m,n}'");
      max = min;
      if (j < end && s[j] == ',') {
        ++j;
        if (!number(max)) max = kUnbounded;
      }
      if (j >= end || s[j] != '}') return Bad("a '{' in a regular expression needs '{m}', '{m,}' or '{m,n}'");
      if (max < min) return Bad("a '{m,n}' in a regular expression has n < m");
      i = j + 1;
    }
    if (i < end && (s[i] == '?' || s[i] == '*' || s[i] == '+' || s[i] == '{')) {
      return Bad("a regular expression has two quantifiers in a row");
    }
    // Unrolled: min mandatory copies (the last repeating when unbounded), then optional ones.
    const std::size_t copies = max == kUnbounded ? (min == 0 ? 1 : min) : max;
    if (copies > budget) {
      return Bad("a regular expression is larger than " + std::to_string(kMaxPositions) + " positions once '{m,n}' is unrolled");
    }
    budget -= copies;
    for (std::size_t k = 0; k < copies; ++k) {
      Position p;
      p.set = set;
      p.optional = k >= min;
      p.repeat = max == kUnbounded && k + 1 == copies;
      a.positions.push_back(p);
    }
  }
  return a;
}

void Regex::BuildTables(Alternative& a) {
  const std::size_t n = a.positions.size();
  a.size = n;
  a.words = (n + 1 + 63) / 64;
  auto set_bit = [&](std::uint64_t* words, std::size_t p) { words[p / 64] |= std::uint64_t{1} << (p % 64); };
  a.on_byte.assign(256 * a.words, 0);
  a.repeats.assign(a.words, 0);
  for (std::size_t p = 0; p < n; ++p) {
    for (int b = 0; b < 256; ++b) {
      if (a.positions[p].set.Has(static_cast<unsigned char>(b))) set_bit(&a.on_byte[b * a.words], p);
    }
    if (a.positions[p].repeat) set_bit(a.repeats.data(), p);
  }
  // Closes `active` (bools over 0..n) over optional positions, in order.
  auto close = [&](std::vector<char>& active) {
    for (std::size_t p = 0; p < n; ++p) {
      if (active[p] && a.positions[p].optional) active[p + 1] = 1;
    }
  };
  std::vector<char> active(n + 1);
  active[0] = 1;
  close(active);
  a.initial.assign(a.words, 0);
  for (std::size_t p = 0; p <= n; ++p) {
    if (active[p]) set_bit(a.initial.data(), p);
  }
  const std::size_t chunks = (n + 1 + 7) / 8;
  a.chunk_table.assign(chunks, -1);
  a.closures.clear();
  int tables = 0;
  for (std::size_t k = 0; k < chunks; ++k) {
    bool optional = false;
    for (std::size_t p = 8 * k; p < std::min(8 * k + 8, n); ++p) optional |= a.positions[p].optional;
    if (!optional) continue;  // the closure of these bits is themselves (no skip starts here)
    a.chunk_table[k] = tables++;
    const std::size_t base = a.closures.size();
    a.closures.resize(base + 256 * a.words, 0);
    for (int v = 0; v < 256; ++v) {
      std::fill(active.begin(), active.end(), 0);
      for (int bit = 0; bit < 8; ++bit) {
        if ((v >> bit & 1) && 8 * k + bit <= n) active[8 * k + bit] = 1;
      }
      close(active);
      std::uint64_t* out = &a.closures[base + static_cast<std::size_t>(v) * a.words];
      for (std::size_t p = 0; p <= n; ++p) {
        if (active[p]) set_bit(out, p);
      }
    }
  }
  a.positions.clear();
  a.positions.shrink_to_fit();
}

// The common case, up to 63 positions: the state set is one register.
bool Regex::SearchOneWord(const Alternative& a, std::string_view text) {
  const std::uint64_t accept = std::uint64_t{1} << a.size;
  const std::uint64_t restart = a.anchored_start ? 0 : 1;
  const std::uint64_t repeats = a.repeats[0];
  const std::uint64_t* on_byte = a.on_byte.data();
  const bool identity = a.closures.empty();
  std::uint64_t state = a.initial[0];
  if (!a.anchored_end && (state & accept)) return true;
  for (const char ch : text) {
    const std::uint64_t hit = state & on_byte[static_cast<unsigned char>(ch)];
    std::uint64_t moved = (hit << 1) | (hit & repeats) | restart;
    if (!identity) {
      std::uint64_t closed = 0;
      for (std::size_t k = 0; k < a.chunk_table.size(); ++k) {
        const unsigned v = static_cast<unsigned>(moved >> (8 * k)) & 0xFF;
        if (v == 0) continue;
        const int table = a.chunk_table[k];
        closed |= table < 0 ? std::uint64_t{v} << (8 * k) : a.closures[static_cast<std::size_t>(table) * 256 + v];
      }
      moved = closed;
    }
    state = moved;
    if (state == 0) return false;  // anchored at the start and nothing left alive
    if (!a.anchored_end && (state & accept)) return true;
  }
  return (state & accept) != 0;
}

bool Regex::SearchAlternative(const Alternative& a, std::string_view text) {
  if (a.words == 1) return SearchOneWord(a, text);
  constexpr std::size_t kMaxWords = (kMaxPositions + 1 + 63) / 64;
  const std::size_t w = a.words;
  const std::size_t accept_word = a.size / 64;
  const std::uint64_t accept_bit = std::uint64_t{1} << (a.size % 64);
  std::uint64_t state[kMaxWords] = {};
  std::uint64_t moved[kMaxWords];
  std::copy(a.initial.begin(), a.initial.end(), state);
  if (!a.anchored_end && (state[accept_word] & accept_bit)) return true;
  for (const char ch : text) {
    const std::uint64_t* on = &a.on_byte[static_cast<std::size_t>(static_cast<unsigned char>(ch)) * w];
    // Positions that match the byte advance (and stay, when they repeat).
    std::uint64_t carry = 0;
    bool any = false;
    for (std::size_t i = 0; i < w; ++i) {
      const std::uint64_t hit = state[i] & on[i];
      moved[i] = (hit << 1) | carry | (hit & a.repeats[i]);
      carry = hit >> 63;
    }
    if (!a.anchored_start) moved[0] |= 1;  // a match may start at the next byte
    // Close over optional positions, 8 positions at a time.
    std::fill(state, state + w, 0);
    for (std::size_t k = 0; k < a.chunk_table.size(); ++k) {
      const unsigned v = static_cast<unsigned>(moved[k / 8] >> (8 * (k % 8))) & 0xFF;
      if (v == 0) continue;
      any = true;
      const int table = a.chunk_table[k];
      if (table < 0) {
        state[k / 8] |= static_cast<std::uint64_t>(v) << (8 * (k % 8));
        continue;
      }
      const std::uint64_t* closed = &a.closures[(static_cast<std::size_t>(table) * 256 + v) * w];
      for (std::size_t i = 0; i < w; ++i) state[i] |= closed[i];
    }
    if (!any) return false;  // anchored at the start and nothing left alive
    if (!a.anchored_end && (state[accept_word] & accept_bit)) return true;
  }
  return (state[accept_word] & accept_bit) != 0;
}

bool Regex::Search(std::string_view text) const {
  for (const Alternative& a : alternatives_) {
    if (SearchAlternative(a, text)) return true;
  }
  return false;
}

}  // namespace paddock::logs::internal
