// FakeRuntime: an in-memory Runtime for the agent's unit tests. No processes, no waiting.
//
// Containers move only when told: Start makes them running; the test ends them with
// Exit(id, code, oom); Kill(SIGKILL) stops one with 137 and Kill(SIGTERM) with 0 unless the test
// said it ignores TERM. Wait returns the current state at once (whatever the timeout), so a test
// of stopTimeout drives time with its FakeClock and calls Exit itself.
//
//   FakeRuntime rt;
//   ASSERT_TRUE(rt.Create(spec).ok());
//   ASSERT_TRUE(rt.Start(spec.id).ok());
//   rt.SetIgnoresSigterm(spec.id, true);
//   rt.SetExecHandler([](auto&, auto&) -> StatusOr<ExecResult> { ExecResult r; r.exit_code = 1; return r; });
//   rt.Exit(spec.id, 137, /*oom_killed=*/true);
#pragma once

#include <signal.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/runtime/runtime.h"

namespace paddock::agent::runtime {

class FakeRuntime final : public Runtime {
 public:
  using ExecHandler = std::function<StatusOr<ExecResult>(const ContainerId&, const std::vector<std::string>&)>;

  Status Create(const ContainerSpec& spec) override {
    std::lock_guard lock(mu_);
    if (Status s = TakeFailure("Create"); !s.ok()) return s;
    if (!IsValidContainerId(spec.id.str())) return InvalidArgument("invalid container id");
    if (containers_.count(spec.id)) return AlreadyExists("container " + spec.id.str() + " exists");
    Container& c = containers_[spec.id];
    c.spec = spec;
    c.state.id = spec.id;
    c.state.annotations = spec.annotations;
    c.state.pid = next_pid_++;
    return OkStatus();
  }

  Status Start(const ContainerId& id) override {
    std::lock_guard lock(mu_);
    if (Status s = TakeFailure("Start"); !s.ok()) return s;
    auto* c = Find(id);
    if (!c) return NotFound("no container " + id.str());
    if (c->state.status != ContainerStatus::kCreated) return FailedPrecondition("not created");
    c->state.status = ContainerStatus::kRunning;
    return OkStatus();
  }

  StatusOr<ExecResult> Exec(const ContainerId& id, const std::vector<std::string>& args,
                            std::chrono::milliseconds) override {
    ExecHandler handler;
    {
      std::lock_guard lock(mu_);
      if (Status s = TakeFailure("Exec"); !s.ok()) return s;
      auto* c = Find(id);
      if (!c) return NotFound("no container " + id.str());
      if (c->state.status != ContainerStatus::kRunning) return FailedPrecondition("not running");
      execs_.push_back({id, args});
      handler = exec_handler_;
    }
    if (handler) return handler(id, args);
    ExecResult ok;
    ok.exit_code = 0;
    return ok;
  }

  Status Kill(const ContainerId& id, int signal) override {
    std::lock_guard lock(mu_);
    if (Status s = TakeFailure("Kill"); !s.ok()) return s;
    auto* c = Find(id);
    if (!c) return NotFound("no container " + id.str());
    signals_.push_back({id, signal});
    if (c->state.status == ContainerStatus::kStopped) return OkStatus();
    if (signal == SIGKILL) {
      StopLocked(*c, 128 + SIGKILL, false);
    } else if (signal == SIGTERM && !ignores_term_.count(id)) {
      StopLocked(*c, 0, false);
    }
    return OkStatus();
  }

  StatusOr<ContainerState> State(const ContainerId& id) override {
    std::lock_guard lock(mu_);
    if (Status s = TakeFailure("State"); !s.ok()) return s;
    auto* c = Find(id);
    if (!c) return NotFound("no container " + id.str());
    return c->state;
  }

  StatusOr<ContainerState> Wait(const ContainerId& id, std::chrono::milliseconds) override {
    return State(id);
  }

  Status Delete(const ContainerId& id, ForceDelete force) override {
    std::lock_guard lock(mu_);
    if (Status s = TakeFailure("Delete"); !s.ok()) return s;
    auto* c = Find(id);
    if (!c) return NotFound("no container " + id.str());
    if (c->state.status == ContainerStatus::kRunning && force == ForceDelete::kNo) {
      return FailedPrecondition("running");
    }
    containers_.erase(id);
    return OkStatus();
  }

  StatusOr<std::vector<ContainerState>> List() override {
    std::lock_guard lock(mu_);
    if (Status s = TakeFailure("List"); !s.ok()) return s;
    std::vector<ContainerState> out;
    for (const auto& [id, c] : containers_) out.push_back(c.state);
    return out;
  }

  // --- test controls ---

  // The container's process exits now with `exit_code` (an OOM kill is Exit(id, 137, true)).
  void Exit(const ContainerId& id, int exit_code, bool oom_killed = false) {
    std::lock_guard lock(mu_);
    if (auto* c = Find(id); c && c->state.status != ContainerStatus::kStopped) {
      StopLocked(*c, exit_code, oom_killed);
    }
  }
  // As after an agent restart: stopped, exit code unknown.
  void ExitUnknown(const ContainerId& id) {
    std::lock_guard lock(mu_);
    if (auto* c = Find(id)) {
      c->state.status = ContainerStatus::kStopped;
      c->state.pid = 0;
      c->state.exit_code.reset();
    }
  }
  void SetIgnoresSigterm(const ContainerId& id, bool ignores) {
    std::lock_guard lock(mu_);
    if (ignores) ignores_term_.insert(id); else ignores_term_.erase(id);
  }
  void SetExecHandler(ExecHandler handler) {
    std::lock_guard lock(mu_);
    exec_handler_ = std::move(handler);
  }
  // The next call of `op` ("Create", "Start", "Exec", "Kill", "State", "Delete", "List") fails.
  void FailNext(std::string op, Status status) {
    std::lock_guard lock(mu_);
    failures_[std::move(op)] = std::move(status);
  }

  // What was asked of it.
  std::optional<ContainerSpec> SpecOf(const ContainerId& id) {
    std::lock_guard lock(mu_);
    auto* c = Find(id);
    return c ? std::optional<ContainerSpec>(c->spec) : std::nullopt;
  }
  std::vector<std::pair<ContainerId, int>> signals() {
    std::lock_guard lock(mu_);
    return signals_;
  }
  std::vector<std::pair<ContainerId, std::vector<std::string>>> execs() {
    std::lock_guard lock(mu_);
    return execs_;
  }

 private:
  struct Container {
    ContainerSpec spec;
    ContainerState state;
  };

  Container* Find(const ContainerId& id) {
    auto it = containers_.find(id);
    return it == containers_.end() ? nullptr : &it->second;
  }
  static void StopLocked(Container& c, int exit_code, bool oom_killed) {
    c.state.status = ContainerStatus::kStopped;
    c.state.pid = 0;
    c.state.exit_code = exit_code;
    c.state.oom_killed = oom_killed;
  }
  Status TakeFailure(const std::string& op) {
    auto it = failures_.find(op);
    if (it == failures_.end()) return OkStatus();
    Status s = std::move(it->second);
    failures_.erase(it);
    return s;
  }

  std::mutex mu_;
  std::map<ContainerId, Container> containers_;                        // GUARDED_BY(mu_)
  std::set<ContainerId> ignores_term_;                                 // GUARDED_BY(mu_)
  ExecHandler exec_handler_;                                           // GUARDED_BY(mu_)
  std::map<std::string, Status> failures_;                             // GUARDED_BY(mu_)
  std::vector<std::pair<ContainerId, int>> signals_;                   // GUARDED_BY(mu_)
  std::vector<std::pair<ContainerId, std::vector<std::string>>> execs_;  // GUARDED_BY(mu_)
  int next_pid_ = 1000;                                                // GUARDED_BY(mu_)
};

}  // namespace paddock::agent::runtime
