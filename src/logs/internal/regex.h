// The regular expressions of CloudWatch Logs filter patterns (`%...%`), and nothing more: AWS allows
// letters, digits, the symbols `: _ # = @ / ; , -` and the operators `^ $ ? [ ] { } | \ * + .` —
// no parentheses, so `|` splits the whole expression into alternatives and every quantifier applies
// to one character, class or escape (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/regex-expressions.html).
//
//   ASSIGN_OR_RETURN(Regex r, Regex::Compile(R"(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})"));
//   r.Search("from 10.0.0.1:443")  // true: unanchored unless ^ or $ says otherwise
//
// Without groups every alternative is a line of positions, each a byte set that may be optional
// and/or repeated; Search runs them as a Thompson NFA over the text, bit-parallel (a state set is
// ≤ 5 words; the closure over optional positions is a table lookup per 8 positions), so it costs
// O(text × positions / 8) with positions ≤ kMaxPositions — no backtracking, whatever the input.
// Tables cost at most ~340 KB for the largest expression, a few KB for ordinary ones.
// Bytes, not characters: multibyte characters are refused in the expression, and `.` matches one
// byte of the text except '\n' and '\r' (as Java's `.`).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::logs::internal {

class Regex {
 public:
  // Positions over all alternatives after `{m,n}` is unrolled (Paddock's bound: it caps Search's cost).
  static constexpr std::size_t kMaxPositions = 256;

  // `body` is the text between the two '%'. On failure: InvalidArgument whose message is the reason
  // alone ("'(' is not supported..."); the caller prefixes it.
  static StatusOr<Regex> Compile(std::string_view body);

  // Whether some substring of `text` matches (anchors: ^ the text's start, $ its end).
  bool Search(std::string_view text) const;

 private:
  struct ByteSet {
    std::array<std::uint64_t, 4> bits{};
    void Add(unsigned char c) { bits[c >> 6] |= std::uint64_t{1} << (c & 63); }
    bool Has(unsigned char c) const { return (bits[c >> 6] >> (c & 63)) & 1; }
  };
  struct Position {
    ByteSet set;
    bool optional = false;  // may be skipped (x? x*)
    bool repeat = false;    // may match again (x* x+)
  };
  // One alternative as a bit-parallel NFA: bit p of a state set means "positions [0, p) matched";
  // bit `size` is a whole match.
  struct Alternative {
    bool anchored_start = false;
    bool anchored_end = false;
    std::vector<Position> positions;  // while compiling
    std::size_t size = 0;             // positions.size()
    std::size_t words = 0;            // 64-bit words per state set: (size + 1) / 64 rounded up
    std::vector<std::uint64_t> on_byte;  // [256][words]: positions whose set has the byte
    std::vector<std::uint64_t> repeats;  // [words]: positions that may match again
    std::vector<std::uint64_t> initial;  // [words]: {0} closed over optional positions
    // The closure over optional positions, 8 positions at a time: chunk k's table (when it has an
    // optional position; -1 else) maps the byte of the set's bits 8k..8k+7 to their closure.
    std::vector<int> chunk_table;
    std::vector<std::uint64_t> closures;  // [tables][256][words]
  };

  static StatusOr<Alternative> CompileAlternative(std::string_view body, std::size_t& budget);
  static void BuildTables(Alternative& a);
  static bool SearchAlternative(const Alternative& a, std::string_view text);
  static bool SearchOneWord(const Alternative& a, std::string_view text);

  std::vector<Alternative> alternatives_;
};

}  // namespace paddock::logs::internal
