#include "edge/proxy/response_head.h"

#include <cstring>

namespace paddock::edge {

bool ResponseHeadScanner::Scan(std::string_view bytes) {
  if (end_ > 0) return true;
  const char* const data = bytes.data();
  while (scanned_ < bytes.size()) {
    const void* found = std::memchr(data + scanned_, '\n', bytes.size() - scanned_);
    if (found == nullptr) {
      scanned_ = bytes.size();
      return false;
    }
    const size_t lf = static_cast<size_t>(static_cast<const char*>(found) - data);
    const bool cr = lf > line_start_ && data[lf - 1] == '\r';
    if (!cr) ++bare_lfs_;
    scanned_ = lf + 1;
    // A blank line — nothing, or only the CR Go drops, before its LF — after the status line.
    if (line_start_ > 0 && lf - line_start_ == (cr ? 1u : 0u)) {
      end_ = lf + 1;
      return true;
    }
    line_start_ = lf + 1;
  }
  return false;
}

std::string CrlfLineEndings(std::string_view head) {
  std::string out;
  out.reserve(head.size() + head.size() / 8);
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) out += '\r';
    out += head[i];
  }
  return out;
}

}  // namespace paddock::edge
