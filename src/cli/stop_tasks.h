// cli/stop_tasks: stopping every task of a state directory and waiting until their agents have
// confirmed them gone (containers, networks and files removed: the agent reports STOPPED last) —
// what `paddock up` does at Ctrl-C (unless --keep-tasks) and `paddock down` does.
//
// It drives the task owner as `paddock admin delete-account` does (cli/account_deletion.h): the
// scheduler is stopped first (Node::Quiesce), so no service replaces what is stopped; then, every
// poll, every task not yet asked is asked to stop (ecs::task::Tasks::StopAll: stopCode
// UserInitiated and `reason`, as StopTask records it) and the tasks not yet confirmed are counted. It waits only for tasks
// whose agent this process can hear from (Node::CanConfirm); the others stay asked to stop (their
// records say desiredStatus STOPPED, never an orphan) and are returned, so the caller can say so.
// Services are left as they are: a restarted server launches their tasks again.
//
//   StopTasksOptions o{.reason = "Task stopped: paddock down"};
//   o.progress = [](const std::string& line) { fmt::print(stderr, "paddock: {}\n", line); };
//   ASSIGN_OR_RETURN(StopTasksResult r, StopEveryTask(node, o));
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cli/node.h"
#include "common/status.h"
#include "ecs/task/tasks.h"

namespace paddock::cli {

struct StopTasksOptions {
  std::string reason;
  // ECS bounds a container's stopTimeout at 120 s; teardown takes a few more.
  std::chrono::milliseconds timeout = std::chrono::seconds(150);
  std::chrono::milliseconds poll = std::chrono::milliseconds(200);
  // Lines for the operator: what is still stopping, every `report_every`. May be empty.
  std::function<void(const std::string&)> progress;
  std::chrono::milliseconds report_every = std::chrono::seconds(3);
  // Asked every poll: true stops the wait at once (a second Ctrl-C). May be empty.
  std::function<bool()> interrupted;
};

struct StopTasksResult {
  // Tasks this call saw stopping that their agents confirmed gone.
  size_t confirmed = 0;
  // Tasks asked to stop but not confirmed: their agent is not one this process can hear from, or
  // the wait ended first.
  std::vector<ecs::task::Tasks::Unconfirmed> left;
  bool interrupted = false;
  bool timed_out = false;
};

// REQUIRES: `node` is open; its agents (Node::Start, or Node::StartAgentsOnly) run.
StatusOr<StopTasksResult> StopEveryTask(Node& node, const StopTasksOptions& options);

// "arn (RUNNING, agent fargate-local); ..." for up to `max` tasks.
std::string DescribeTasks(const std::vector<ecs::task::Tasks::Unconfirmed>& tasks, size_t max = 5);

}  // namespace paddock::cli
