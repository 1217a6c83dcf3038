#include "agent/pull_progress.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace paddock::agent {
namespace {

// How often the file is rewritten at most (skopeo redraws its bars about 8 times a second), and
// how often a pull in progress is logged.
constexpr auto kWriteEvery = std::chrono::milliseconds(200);
constexpr auto kLogEvery = std::chrono::seconds(10);

// Replaces `path` with `text` (0600: the task's logs are its account's), by rename.
void WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::string tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace

PullReporter::PullReporter(std::string task_arn, std::string container, std::string image,
                           std::filesystem::path log_dir, Clock& clock)
    : task_arn_(std::move(task_arn)),
      container_(std::move(container)),
      image_(std::move(image)),
      file_(log_dir.empty() ? std::filesystem::path() : log_dir / "pull"),
      clock_(clock),
      started_(clock.Now()),
      last_logged_(started_) {}

PullReporter::~PullReporter() {
  std::lock_guard lock(mu_);
  if (!file_.empty()) ::unlink(file_.c_str());
  if (logged_) {
    const double took = std::chrono::duration<double>(clock_.Now() - started_).count();
    fmt::print(stderr, "paddock: agent: task {}: pull of {} ended after {:.0f} s ({})\n", task_arn_, image_, took,
               images::FormatPullProgress(latest_));
  }
}

images::PullProgressFn PullReporter::Fn() {
  return [this](const images::PullProgress& p) { Update(p); };
}

std::string PullReporter::Line(const images::PullProgress& progress) const {
  return fmt::format("pulling {} for container {}: {}\n", image_, container_, images::FormatPullProgress(progress));
}

void PullReporter::Update(const images::PullProgress& progress) {
  const TimePoint now = clock_.Now();
  std::lock_guard lock(mu_);
  latest_ = progress;
  // A finished layer is always shown; bytes at most every kWriteEvery.
  if (!file_.empty() && (!written_ || progress.layers_done != layers_done_ || now - last_written_ >= kWriteEvery)) {
    WriteFileAtomically(file_, Line(progress));
    written_ = true;
    last_written_ = now;
    layers_done_ = progress.layers_done;
  }
  if (now - last_logged_ >= kLogEvery) {
    fmt::print(stderr, "paddock: agent: task {}: {}", task_arn_, Line(progress));
    last_logged_ = now;
    logged_ = true;
  }
}

}  // namespace paddock::agent
