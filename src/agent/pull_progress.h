// agent/pull_progress: where a task's image pull shows while the task is PENDING.
//
// ECS's API says nothing of a pull's progress (only pullStartedAt / pullStoppedAt), and Paddock's
// neither; ECS's agent writes it to its own log. Paddock's agent shows each container's pull in two
// places a user looks:
//
//   <logs>/<task id>/pull   one line, replaced as the pull goes and removed when it ends:
//                           "pulling docker.io/library/nginx:1.27 for container web: 2/7 layers,
//                           12.3 MiB of 67.8 MiB" — `paddock logs TASK` prints it on stderr while
//                           the task has no container output yet
//   the agent's stderr      (the server's log, or `paddock agent`'s) a line every 10 s while a
//                           pull lasts, and one when a pull that long ends
//
//   PullReporter reporter(task_arn, "web", "nginx:1.27", log_dir, clock);
//   auto img = images.ResolveOrPull("nginx:1.27", reporter.Fn());
//   // ~PullReporter removes the file
#pragma once

#include <filesystem>
#include <mutex>
#include <string>

#include "agent/images/puller.h"
#include "common/clock.h"

namespace paddock::agent {

class PullReporter {
 public:
  // `log_dir` is the task's log directory (it exists: the agent made it); empty: no file.
  PullReporter(std::string task_arn, std::string container, std::string image, std::filesystem::path log_dir,
               Clock& clock);
  ~PullReporter();
  PullReporter(const PullReporter&) = delete;
  PullReporter& operator=(const PullReporter&) = delete;

  // The progress callback for ImageStore::ResolveOrPull; valid while this reporter lives.
  images::PullProgressFn Fn();
  // The line the file holds for `progress`.
  std::string Line(const images::PullProgress& progress) const;

 private:
  void Update(const images::PullProgress& progress);

  const std::string task_arn_;
  const std::string container_;
  const std::string image_;
  const std::filesystem::path file_;
  Clock& clock_;
  const TimePoint started_;
  std::mutex mu_;
  bool written_ = false;    // GUARDED_BY(mu_): the file holds a line
  TimePoint last_written_;  // GUARDED_BY(mu_)
  TimePoint last_logged_;   // GUARDED_BY(mu_)
  size_t layers_done_ = 0;  // GUARDED_BY(mu_)
  images::PullProgress latest_;  // GUARDED_BY(mu_)
  bool logged_ = false;     // GUARDED_BY(mu_): a line went to the log (so its end goes too)
};

}  // namespace paddock::agent
