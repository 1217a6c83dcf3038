#include "agent/no_runtime_agent.h"

#include <fmt/format.h>

#include <cstdio>

namespace paddock::agent {

NoRuntimeAgent::NoRuntimeAgent(Control& control, std::string agent_id, std::string reason, Clock& clock,
                               std::chrono::milliseconds poll_interval)
    : control_(control),
      agent_id_(std::move(agent_id)),
      reason_(std::move(reason)),
      clock_(clock),
      poll_interval_(poll_interval) {}

NoRuntimeAgent::~NoRuntimeAgent() { Stop(); }

Status NoRuntimeAgent::Start() {
  loop_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void NoRuntimeAgent::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

void NoRuntimeAgent::Notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

size_t NoRuntimeAgent::RefuseAssigned() {
  std::lock_guard pass(pass_mu_);
  auto specs = control_.Assignments(agent_id_);
  if (!specs.ok()) {
    std::string said = specs.status().ToString();
    if (said != last_error_) fmt::print(stderr, "paddock: {}: reading assignments: {}\n", agent_id_, said);
    last_error_ = std::move(said);
    return 0;
  }
  size_t refused = 0;
  for (const protocol::LaunchSpec& spec : *specs) {
    if (spec.last_status == "STOPPED") continue;
    if (spec.last_status != "PROVISIONING") {
      if (left_alone_.insert(spec.task_arn).second)
        fmt::print(stderr, "paddock: task {} ({}) was started by an earlier agent; it is left for an agent that can run "
                           "containers\n",
                   spec.task_arn, spec.last_status);
      continue;
    }
    protocol::TaskStateChange stopped;
    stopped.last_status = "STOPPED";
    stopped.stopped_reason = reason_;
    // A task StopTask stopped before it started keeps that code (and its reason: a user's stop
    // says why better than we can).
    if (spec.desired_status == "STOPPED") stopped.stopped_reason.reset();
    else stopped.stop_code = "TaskFailedToStart";
    Status s = control_.Report(agent_id_, spec.task_arn, stopped, clock_.Now());
    if (!s.ok()) {
      std::string said = fmt::format("reporting {} STOPPED: {}", spec.task_arn, s.ToString());
      if (said != last_error_) fmt::print(stderr, "paddock: {}: {}\n", agent_id_, said);
      last_error_ = std::move(said);
      continue;
    }
    ++refused;
  }
  return refused;
}

void NoRuntimeAgent::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    notified_ = false;
    lock.unlock();
    RefuseAssigned();
    lock.lock();
    cv_.wait_for(lock, poll_interval_, [&] { return stop_ || notified_; });
  }
}

}  // namespace paddock::agent
