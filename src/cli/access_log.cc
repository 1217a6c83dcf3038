#include "cli/access_log.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cstdio>
#include <mutex>

namespace paddock::cli {
namespace {

// What a client sent, printed only when it is a plain word: never a space or a newline.
std::string Word(const std::string& s) {
  if (s.empty()) return "-";
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return "?";
  return s;
}

}  // namespace

std::string FormatAccessLogLine(const aws::RequestRecord& r, TimePoint when) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  const std::string action = r.action.empty() ? "-" : fmt::format("{}.{}", Word(r.service), Word(r.action));
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z {} {} {} {} {:.1f}ms", fmt::gmtime(seconds), ms % 1000, Word(r.account),
                     action, r.http_status, Word(r.error), static_cast<double>(r.latency.count()) / 1000.0);
}

std::function<void(const aws::RequestRecord&)> StdoutAccessLog() {
  return [](const aws::RequestRecord& r) {
    static std::mutex mu;
    const std::string line = FormatAccessLogLine(r, SystemClock::Get().Now()) + "\n";
    std::lock_guard lock(mu);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  };
}

}  // namespace paddock::cli
