#include "cli/stop_tasks.h"

#include <fmt/format.h>

#include <set>
#include <thread>

namespace paddock::cli {

std::string DescribeTasks(const std::vector<ecs::task::Tasks::Unconfirmed>& tasks, size_t max) {
  std::string out;
  for (size_t i = 0; i < tasks.size() && i < max; ++i)
    out += fmt::format("{}{} ({}, agent {})", i ? "; " : "", tasks[i].arn, tasks[i].last_status, tasks[i].agent);
  if (tasks.size() > max) out += fmt::format("; and {} more", tasks.size() - max);
  return out;
}

StatusOr<StopTasksResult> StopEveryTask(Node& node, const StopTasksOptions& options) {
  node.Quiesce();
  StopTasksResult result;
  std::set<std::string> seen;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  auto next_report = std::chrono::steady_clock::now() + options.report_every;
  for (;;) {
    ASSIGN_OR_RETURN(std::vector<ecs::task::Tasks::Unconfirmed> left,
                     node.tasks().StopAll(options.reason, SystemClock::Get().Now()));
    std::vector<ecs::task::Tasks::Unconfirmed> waiting;
    for (const auto& t : left) {
      seen.insert(t.arn);
      if (node.CanConfirm(t.agent)) waiting.push_back(t);
    }
    const auto now = std::chrono::steady_clock::now();
    if (options.interrupted && options.interrupted()) result.interrupted = true;
    else if (now >= deadline && !waiting.empty()) result.timed_out = true;
    if (waiting.empty() || result.interrupted || result.timed_out) {
      result.confirmed = seen.size() - left.size();
      result.left = std::move(left);
      return result;
    }
    if (options.progress && now >= next_report) {
      options.progress(fmt::format("{} task(s) still stopping: {}", waiting.size(), DescribeTasks(waiting)));
      next_report = now + options.report_every;
    }
    std::this_thread::sleep_for(options.poll);
  }
}

}  // namespace paddock::cli
