// edge/proxy/response_head: where the head of a server's response ends, and its line endings made
// CRLF, so Beast's parser reads the heads Go's net/http client (Traefik's) reads.
//
// Go reads a response's head — its status line, then header lines up to a blank line — line by
// line, each line ending at an LF with one CR before it dropped (bufio.Reader.ReadLine); a CR
// anywhere else stays in the line, where a header line's name or value refuses it (Go takes it in
// the status line's reason; Beast does not). Beast's parser takes only CRLF: given bare LFs it
// refuses the head, or waits for a CR that never comes. So a server answering
// "HTTP/1.1 200 OK\n..." is fine behind Traefik and a 502 behind Beast alone.
//
// ResponseHeadScanner finds the head's end by Go's rule — the first blank line ("\n" or "\r\n")
// after the status line — and counts the bare LFs before it; CrlfLineEndings writes each of them as
// CRLF. The lines stay Go's lines (no line is split or joined, no value gains a line), a bare CR is
// left for the parser to refuse, and nothing after the head — the body — is looked at or changed.
//
//   ResponseHeadScanner scan;
//   while (!scan.Scan(received)) { if (received.size() >= limit) fail; read more into received; }
//   if (scan.bare_lfs() > 0) head = CrlfLineEndings(received.substr(0, scan.end()));
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace paddock::edge {

class ResponseHeadScanner {
 public:
  // `bytes`: what has arrived of the response so far, from its first byte; each call's bytes start
  // with the previous call's (what was scanned is not scanned again). True once they hold the
  // whole head.
  bool Scan(std::string_view bytes);
  // The head's length, its blank line included; 0 until Scan returned true.
  size_t end() const { return end_; }
  // LFs in the head without a CR before them (so far, until Scan returned true).
  size_t bare_lfs() const { return bare_lfs_; }

 private:
  size_t scanned_ = 0;     // bytes looked at
  size_t line_start_ = 0;  // where the line being read began
  size_t end_ = 0;
  size_t bare_lfs_ = 0;
};

// `head` with a CR written before each LF that has none. Pure; a CR already there is kept, a CR
// not followed by an LF is left as it is.
std::string CrlfLineEndings(std::string_view head);

}  // namespace paddock::edge
