// agent/no_runtime_agent: what stands in for a node's agent when the host cannot run containers
// (not root, no cgroups, no crun, ...: cli/host_checks.h), so that a task placed there stops at
// once with the reason instead of staying PROVISIONING for ever.
//
// ECS answers a task it accepted but cannot start with a STOPPED task whose stopCode is
// TaskFailedToStart and whose stoppedReason says why (e.g. "TaskFailedToStart: AGENT" for an
// instance whose agent is disconnected). This agent does the same for every task assigned to it
// that no agent has started (lastStatus PROVISIONING): one STOPPED report, stopCode
// TaskFailedToStart (or the StopTask code it already has), stoppedReason `reason`. ECS clients'
// waiters see STOPPED and fail at once (tasks-running), and a service's deployment counts a failed
// launch. A task an earlier, capable agent started (past PROVISIONING) is left alone: its
// containers may be running, and an agent that can run containers re-adopts it.
//
//   NoRuntimeAgent stand_in(control, "fargate-local",
//                           "ResourceInitializationError: this node cannot run containers: ...");
//   auto watch = control.Watch("fargate-local", [&] { stand_in.Notify(); });
//   RETURN_IF_ERROR(stand_in.Start());
//   ...
//   control.Unwatch(watch);
//   stand_in.Stop();
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "agent/control.h"
#include "common/clock.h"
#include "common/status.h"

namespace paddock::agent {

class NoRuntimeAgent {
 public:
  // `reason` becomes each refused task's stoppedReason. It reads its assignments when notified and
  // at least every `poll_interval` (changes made by another process on the store reach no
  // listener).
  NoRuntimeAgent(Control& control, std::string agent_id, std::string reason, Clock& clock = SystemClock::Get(),
                 std::chrono::milliseconds poll_interval = std::chrono::seconds(1));
  ~NoRuntimeAgent();
  NoRuntimeAgent(const NoRuntimeAgent&) = delete;
  NoRuntimeAgent& operator=(const NoRuntimeAgent&) = delete;

  // Starts the loop thread. REQUIRES: not started.
  Status Start();
  // Joins the loop. Idempotent.
  void Stop();
  // Something may have been assigned.
  void Notify();

  // One pass, on the caller's thread: refuses every unstarted task assigned now. Returns how many
  // it reported STOPPED. (The loop calls it; tests may too.)
  size_t RefuseAssigned();

 private:
  void Loop();

  Control& control_;
  const std::string agent_id_;
  const std::string reason_;
  Clock& clock_;
  const std::chrono::milliseconds poll_interval_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;      // GUARDED_BY(mu_)
  bool notified_ = false;  // GUARDED_BY(mu_)
  std::thread loop_;
  // Touched by RefuseAssigned only (one caller at a time): tasks already logged as left alone, and
  // the last failure logged, so that a pass every second does not repeat them.
  std::mutex pass_mu_;
  std::set<std::string> left_alone_;
  std::string last_error_;
};

}  // namespace paddock::agent
