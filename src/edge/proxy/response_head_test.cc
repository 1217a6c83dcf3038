#include "edge/proxy/response_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace paddock::edge {
namespace {

struct Scanned {
  bool whole = false;
  size_t end = 0;
  size_t bare_lfs = 0;
};

Scanned ScanAll(std::string_view bytes) {
  ResponseHeadScanner scan;
  const bool whole = scan.Scan(bytes);
  return {whole, scan.end(), scan.bare_lfs()};
}

TEST(ResponseHeadScannerTest, TheHeadEndsAtTheFirstBlankLineAfterTheStatusLineAsGoReadsLines) {
  struct Case {
    std::string bytes;
    Scanned want;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", {true, 38, 0}},
      {"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", {true, 35, 3}},
      // A blank line is "\n" or "\r\n", whatever the lines before it end in.
      {"HTTP/1.1 200 OK\r\nA: 1\n\r\nok", {true, 24, 1}},
      {"HTTP/1.1 200 OK\nA: 1\r\n\nok", {true, 23, 2}},
      {"HTTP/1.1 204 No Content\n\n", {true, 25, 2}},
      // The body is not looked at: its LFs are not counted.
      {"HTTP/1.1 200 OK\r\n\r\na\nb\n\n", {true, 19, 0}},
      // Not yet whole.
      {"HTTP/1.1 200 OK\nA: 1\n", {false, 0, 2}},
      {"HTTP/1.1 200 OK\r\nA: 1\r\n\r", {false, 0, 0}},
      {"", {false, 0, 0}},
      // A CR that does not end a line is no line's end: the line goes on (for the parser to refuse).
      {"HTTP/1.1 200 OK\nA: 1\r\rB: 2\n\n", {true, 28, 3}},
      {"HTTP/1.1 200 OK\n\r\r\n\n", {true, 20, 2}},
      // An empty first line is the status line (the parser refuses it), not the head's end.
      {"\n\nok", {true, 2, 2}},
      {"\r\nHTTP/1.1 200 OK\r\n\r\n", {true, 21, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bytes);
    const Scanned got = ScanAll(c.bytes);
    EXPECT_EQ(got.whole, c.want.whole);
    EXPECT_EQ(got.end, c.want.end);
    EXPECT_EQ(got.bare_lfs, c.want.bare_lfs);
  }
}

TEST(ResponseHeadScannerTest, AHeadThatArrivesInPiecesEndsWhereItWouldWhole) {
  const std::string heads[] = {
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
      "HTTP/1.1 200 OK\r\nA: 1\n\r\nok",
      "HTTP/1.1 200 OK\nA: 1\r\rB: 2\n\nok",
  };
  for (const std::string& head : heads) {
    const Scanned whole = ScanAll(head);
    for (size_t piece = 1; piece <= 4; ++piece) {
      SCOPED_TRACE(head + " in pieces of " + std::to_string(piece));
      ResponseHeadScanner scan;
      size_t given = 0;
      bool done = false;
      while (!done && given < head.size()) {
        given = std::min(head.size(), given + piece);
        done = scan.Scan(std::string_view(head).substr(0, given));
      }
      EXPECT_TRUE(done);
      EXPECT_EQ(scan.end(), whole.end);
      EXPECT_EQ(scan.bare_lfs(), whole.bare_lfs);
      EXPECT_TRUE(scan.Scan(head));  // once whole, it stays so
      EXPECT_EQ(scan.end(), whole.end);
    }
  }
}

TEST(CrlfLineEndingsTest, WritesACrBeforeEachBareLfAndNothingElse) {
  EXPECT_EQ(CrlfLineEndings("HTTP/1.1 200 OK\nContent-Length: 2\n\n"), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(CrlfLineEndings("HTTP/1.1 200 OK\r\nA: 1\n\r\n"), "HTTP/1.1 200 OK\r\nA: 1\r\n\r\n");
  EXPECT_EQ(CrlfLineEndings("\n\n"), "\r\n\r\n");
  // A bare CR stays bare: Beast refuses it, as Go refuses it in a header line.
  EXPECT_EQ(CrlfLineEndings("A: 1\rB: 2\n"), "A: 1\rB: 2\r\n");
  EXPECT_EQ(CrlfLineEndings("A: 1\r\r\n"), "A: 1\r\r\n");
  EXPECT_EQ(CrlfLineEndings("\r\n\r\n"), "\r\n\r\n");
  EXPECT_EQ(CrlfLineEndings(""), "");
}

// Every head over a small alphabet: the rewritten head has the same lines as Go reads them — the
// same number, each the same once its CR before the LF is dropped — every LF has a CR before it,
// and the scanner counted exactly the CRs written in.
TEST(CrlfLineEndingsTest, KeepsGosLinesForEveryShortHead) {
  // Go's lines of `text`: split at LF, one CR before it dropped.
  auto lines = [](std::string_view text) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '\n') continue;
      size_t end = i > start && text[i - 1] == '\r' ? i - 1 : i;
      out.emplace_back(text.substr(start, end - start));
      start = i + 1;
    }
    out.emplace_back(text.substr(start));
    return out;
  };
  const char alphabet[] = {'a', '\r', '\n'};
  for (int length = 0; length <= 9; ++length) {
    int count = 1;
    for (int i = 0; i < length; ++i) count *= 3;
    for (int n = 0; n < count; ++n) {
      std::string head;
      for (int i = 0, k = n; i < length; ++i, k /= 3) head += alphabet[k % 3];
      const std::string rewritten = CrlfLineEndings(head);
      ASSERT_EQ(lines(rewritten), lines(head)) << testing::PrintToString(head);
      for (size_t i = 0; i < rewritten.size(); ++i) {
        const bool bare_lf = rewritten[i] == '\n' && (i == 0 || rewritten[i - 1] != '\r');
        ASSERT_FALSE(bare_lf) << testing::PrintToString(head);
      }
      ResponseHeadScanner scan;
      if (scan.Scan(head)) {
        ASSERT_EQ(CrlfLineEndings(head.substr(0, scan.end())).size(), scan.end() + scan.bare_lfs())
            << testing::PrintToString(head);
        // The rewritten head ends with its first CRLF CRLF, as Beast finds a head's end.
        const std::string head_rewritten = CrlfLineEndings(head.substr(0, scan.end()));
        ASSERT_EQ(head_rewritten.find("\r\n\r\n") + 4, head_rewritten.size()) << testing::PrintToString(head);
      }
    }
  }
}

}  // namespace
}  // namespace paddock::edge
