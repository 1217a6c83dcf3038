#include "agent/agent.h"

#include "agent/container_spec.h"
#include "agent/fields.h"
#include "agent/logs.h"
#include "agent/task_files.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <optional>
#include <vector>

#include <boost/json.hpp>

namespace paddock::agent {
namespace json = boost::json;
using ecs::task::ContainerStateChange;
using ecs::task::LaunchSpec;
using ecs::task::TaskStateChange;

namespace {

constexpr std::string_view kStopped = "STOPPED";

uint64_t ParseUnits(std::string_view text) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return (ec == std::errc() && p == text.data() + text.size()) ? v : 0;
}

std::optional<uint32_t> ParseIp(const std::string& text) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

TaskStateChange Change(std::string_view status) {
  TaskStateChange c;
  c.last_status = std::string(status);
  return c;
}

ContainerStateChange ContainerChange(std::string name, std::string_view status, std::optional<int> exit_code = {},
                                     std::optional<std::string> reason = {}, std::optional<std::string> runtime_id = {}) {
  ContainerStateChange c;
  c.name = std::move(name);
  c.last_status = std::string(status);
  if (exit_code) c.exit_code = *exit_code;
  c.reason = std::move(reason);
  c.runtime_id = std::move(runtime_id);
  return c;
}

void Log(std::string_view task_arn, std::string_view what, const Status& s) {
  fmt::print(stderr, "paddock: agent: task {}: {}: {}\n", task_arn, what, s.ToString());
}

}  // namespace

// Drives one task from PROVISIONING to STOPPED on a thread of its own.
class Agent::Driver {
 public:
  Driver(Agent& agent, LaunchSpec spec) : agent_(agent), spec_(std::move(spec)) {
    task_id_ = spec_.task_arn.substr(spec_.task_arn.rfind('/') + 1);
    thread_ = std::thread([this] { Run(); });
  }
  ~Driver() {
    Abandon();
    if (thread_.joinable()) thread_.join();
  }

  void RequestStop() {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
    cv_.notify_all();
  }
  void Abandon() {
    std::lock_guard lock(mu_);
    abandon_ = true;
    cv_.notify_all();
  }
  bool done() const { return done_.load(); }
  bool reported_stopped() const { return reported_stopped_.load(); }

 private:
  struct Container {
    std::string name;
    std::string image;
    bool essential = true;
    runtime::ContainerId id;
    json::object definition;
    json::object overrides;  // its containerOverrides entry, if any
    std::chrono::seconds stop_timeout{0};
    std::optional<images::ResolvedImage> resolved;
    bool created = false;
    bool stopped = false;
    std::optional<int> exit_code;
    std::optional<std::string> reason;
  };

  void Run() {
    Status s = Parse();
    if (!s.ok()) {
      Log(spec_.task_arn, "bad launch spec", s);
      Teardown("TaskFailedToStart", fmt::format("ResourceInitializationError: {}", s.message()));
    } else if (spec_.last_status != "PROVISIONING") {
      // Started by an earlier agent: not re-adopted (see agent.h); cleaned up by name.
      Teardown("TaskFailedToStart", "Task stopped: the agent restarted and re-adopting running tasks is not implemented yet");
    } else if (spec_.desired_status == kStopped) {
      Teardown(std::nullopt, std::nullopt);
    } else {
      Launch();
    }
    done_ = true;
    agent_.Notify();
  }

  Status Parse() {
    boost::system::error_code ec;
    json::value def = json::parse(spec_.definition, ec);
    if (ec || !def.is_object()) return InvalidArgument("the task's definition is not a JSON object");
    json::value ov = json::parse(spec_.overrides.empty() ? "{}" : spec_.overrides, ec);
    if (ec || !ov.is_object()) ov = json::object();
    overrides_ = ov.get_object();
    auto it = def.get_object().find("containerDefinitions");
    if (it == def.get_object().end() || !it->value().is_array()) return InvalidArgument("no containerDefinitions");
    size_t index = 0;
    for (const auto& cv : it->value().get_array()) {
      if (!cv.is_object()) continue;
      Container c;
      c.definition = cv.get_object();
      c.name = Str(c.definition, "name");
      c.image = Str(c.definition, "image");
      c.essential = Bool(c.definition, "essential").value_or(true);
      c.id = runtime::ContainerId(fmt::format("pdk-{}-{}-{}", agent_.options_.instance, task_id_, index++));
      auto timeout = Int(c.definition, "stopTimeout");
      c.stop_timeout = timeout && *timeout > 0 ? std::chrono::seconds(*timeout) : agent_.options_.default_stop_timeout;
      c.stop_timeout = std::min(c.stop_timeout, agent_.options_.max_stop_timeout);
      if (auto co = overrides_.find("containerOverrides"); co != overrides_.end() && co->value().is_array())
        for (const auto& o : co->value().get_array())
          if (o.is_object() && Str(o.get_object(), "name") == c.name) c.overrides = o.get_object();
      containers_.push_back(std::move(c));
    }
    if (containers_.empty()) return InvalidArgument("no containerDefinitions");
    return OkStatus();
  }

  bool abandoned() {
    std::lock_guard lock(mu_);
    return abandon_;
  }
  bool stop_requested() {
    std::lock_guard lock(mu_);
    return stop_requested_ || abandon_;
  }
  // Sleeps up to `d`, returning early on a stop request or abandon.
  void Pause(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return stop_requested_ || abandon_; });
  }

  bool Report(TaskStateChange change) {
    Status s = agent_.tasks_.ReportState(agent_.options_.agent_id, spec_.task_arn, change, agent_.clock_.Now());
    if (!s.ok()) Log(spec_.task_arn, fmt::format("reporting {}", change.last_status), s);
    return s.ok();
  }
  bool Report(std::string_view status) { return Report(Change(status)); }

  void Launch() {
    if (!agent_.options_.logs_dir.empty()) {
      std::vector<std::string> names;
      for (const auto& c : containers_) names.push_back(c.name);
      if (Status s = WriteLogIndex(LogDir(), names); !s.ok()) Log(spec_.task_arn, "creating the log directory", s);
    }
    const TimePoint pull_started = agent_.clock_.Now();
    TaskStateChange pending = Change("PENDING");
    pending.pull_started_at = pull_started;
    if (!Report(std::move(pending))) return;
    for (auto& c : containers_) {
      // From the store, else pulled (images/skopeo_puller.h); the message is ECS's text after the prefix.
      auto r = agent_.images_.ResolveOrPull(c.image);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kAborted) return;  // the node is stopping: abandoned where it is
        c.reason = fmt::format("CannotPullContainerError: {}", r.status().message());
        Teardown("TaskFailedToStart", *c.reason);
        return;
      }
      c.resolved = std::move(*r);
    }
    if (abandoned()) return;
    if (stop_requested()) return Teardown(std::nullopt, std::nullopt);
    TaskStateChange activating = Change("ACTIVATING");
    activating.pull_stopped_at = agent_.clock_.Now();
    if (!Report(std::move(activating))) return;

    if (spec_.network) {
      Status s = agent_.EnsureBridge();
      if (s.ok()) {
        auto ip = ParseIp(spec_.network->ip);
        auto gw = ParseIp(spec_.network->gateway);
        if (!ip || !gw) {
          s = InvalidArgument(fmt::format("bad task address {} / gateway {}", spec_.network->ip, spec_.network->gateway));
        } else {
          auto tn = net::CreateTaskNetwork(agent_.options_.network, task_id_, *ip, spec_.network->prefix_length, *gw);
          if (tn.ok()) network_ = std::move(*tn);
          s = tn.status();
        }
      }
      if (!s.ok()) return Teardown("TaskFailedToStart", fmt::format("ResourceInitializationError: {}", s.message()));
    }

    if (!PrepareTaskFiles()) return;  // hosts, resolv.conf, volumes, the task's cgroup

    for (auto& c : containers_) {
      if (abandoned()) return;
      if (stop_requested()) return Teardown(std::nullopt, std::nullopt);
      runtime::ContainerSpec cs = SpecFor(c);
      Status s = agent_.runtime_.Create(cs);
      if (s.ok()) {
        c.created = true;
        s = agent_.runtime_.Start(c.id);
      }
      if (!s.ok()) {
        c.reason = fmt::format("CannotStartContainerError: {}", s.message());
        return Teardown("TaskFailedToStart", *c.reason);
      }
    }
    TaskStateChange running = Change("RUNNING");
    for (const auto& c : containers_)
      running.containers.push_back(ContainerChange(c.name, "RUNNING", std::nullopt, std::nullopt, c.id.str()));
    if (!Report(std::move(running))) return;
    Monitor();
  }

  // The task's /etc files, volume directories and cgroup (agent/task_files.h), kept for SpecFor.
  // False: refused or failed, and the task is torn down (ResourceInitializationError).
  bool PrepareTaskFiles() {
    boost::system::error_code ec;
    json::value def = json::parse(spec_.definition, ec);
    if (ec || !def.is_object()) def = json::object();
    TaskFilesInput in{.task_id = task_id_,
                      .task_arn = spec_.task_arn,
                      .definition = def.get_object(),
                      .overrides = overrides_,
                      .ip = spec_.network ? spec_.network->ip : std::string(),
                      .cpu_units = ParseUnits(spec_.cpu),
                      .memory_mib = ParseUnits(spec_.memory)};
    auto files = PrepareTask(agent_.runtime_, TaskFilesOpts(), in);
    if (!files.ok()) {
      Teardown("TaskFailedToStart", fmt::format("ResourceInitializationError: {}", files.status().message()));
      return false;
    }
    task_files_ = std::move(*files);
    return true;
  }
  TaskFilesOptions TaskFilesOpts() const {
    TaskFilesOptions o;
    o.tasks_dir = agent_.options_.tasks_dir;
    return o;
  }

  runtime::ContainerSpec SpecFor(const Container& c) {
    TaskContext task{.task_arn = spec_.task_arn,
                     .cpu_units = ParseUnits(spec_.cpu),
                     .memory_mib = ParseUnits(spec_.memory),
                     .netns_path = network_ ? network_->netns_path : std::string()};
    ApplyTaskFiles(task_files_, task);
    std::string log_path = agent_.options_.logs_dir.empty() ? std::string() : LogPath(c).string();
    return BuildContainerSpec(ContainerInput{c.id, c.definition, c.overrides, *c.resolved, log_path}, task);
  }

  std::filesystem::path LogDir() const { return std::filesystem::path(agent_.options_.logs_dir) / task_id_; }
  std::filesystem::path LogPath(const Container& c) const { return LogDir() / (c.name + ".log"); }

  // Bounds each container's log (see agent/logs.h for why copy-truncate, not rename).
  void RotateLogs() {
    if (agent_.options_.logs_dir.empty()) return;
    for (const auto& c : containers_) {
      auto r = RotateLog(LogPath(c), agent_.options_.max_log_bytes);
      if (!r.ok()) Log(spec_.task_arn, fmt::format("rotating the log of {}", c.name), r.status());
    }
  }

  void Monitor() {
    while (true) {
      if (abandoned()) return;
      if (stop_requested()) return Teardown(std::nullopt, std::nullopt);
      TaskStateChange change = Change("RUNNING");
      bool essential_exited = false;
      for (auto& c : containers_) {
        if (c.stopped) continue;
        auto st = agent_.runtime_.State(c.id);
        if (st.ok() && st->status != runtime::ContainerStatus::kStopped) continue;
        c.stopped = true;
        if (st.ok()) {
          c.exit_code = st->exit_code;
          if (st->oom_killed) c.reason = "OutOfMemoryError: Container killed due to memory usage";
        } else {
          c.reason = fmt::format("the container's state is lost: {}", st.status().message());
        }
        essential_exited = essential_exited || c.essential;
        change.containers.push_back(ContainerChange(c.name, kStopped, c.exit_code, c.reason));
      }
      RotateLogs();
      if (essential_exited) return Teardown("EssentialContainerExited", "Essential container in task exited");
      if (!change.containers.empty()) Report(std::move(change));
      Pause(agent_.options_.monitor_interval);
    }
  }

  // Stops whatever runs, removes what was made and reports the task down to STOPPED. A nullopt
  // stop code keeps what StopTask recorded. Safe on a task that was never (or partly) started:
  // everything is found by name and what is missing is skipped.
  void Teardown(std::optional<std::string> stop_code, std::optional<std::string> reason) {
    TaskStateChange deactivating = Change("DEACTIVATING");
    deactivating.stopped_reason = std::move(reason);
    deactivating.stop_code = std::move(stop_code);
    if (!Report(std::move(deactivating))) return;
    Report("STOPPING");
    // SIGTERM every live container, then SIGKILL each one still alive at its stopTimeout.
    const auto start = std::chrono::steady_clock::now();
    for (auto& c : containers_) {
      auto st = agent_.runtime_.State(c.id);
      if (!st.ok() || st->status == runtime::ContainerStatus::kStopped) continue;
      c.created = true;
      if (st->status == runtime::ContainerStatus::kRunning) agent_.runtime_.Kill(c.id, SIGTERM).IgnoreError();
    }
    for (auto& c : containers_) {
      if (!c.created) continue;
      while (true) {
        if (abandoned()) return;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(start + c.stop_timeout -
                                                                          std::chrono::steady_clock::now());
        auto slice = std::min(left, agent_.options_.monitor_interval);
        auto st = agent_.runtime_.Wait(c.id, std::max(slice, std::chrono::milliseconds(0)));
        if (!st.ok() || st->status == runtime::ContainerStatus::kStopped || left.count() <= 0) break;
      }
      auto st = agent_.runtime_.State(c.id);
      if (st.ok() && st->status == runtime::ContainerStatus::kRunning) {
        agent_.runtime_.Kill(c.id, SIGKILL).IgnoreError();
        st = agent_.runtime_.Wait(c.id, std::chrono::seconds(5));
      }
      if (st.ok() && st->status == runtime::ContainerStatus::kStopped && !c.stopped) {
        c.stopped = true;
        c.exit_code = st->exit_code;
        if (st->oom_killed) c.reason = "OutOfMemoryError: Container killed due to memory usage";
      }
    }
    for (auto& c : containers_) {
      Status s = agent_.runtime_.Delete(c.id, runtime::ForceDelete::kYes);
      if (!s.ok() && s.code() != StatusCode::kNotFound) Log(spec_.task_arn, fmt::format("deleting container {}", c.name), s);
    }
    if (Status s = CleanUpTask(agent_.runtime_, TaskFilesOpts(), task_id_); !s.ok())
      Log(spec_.task_arn, "removing the task's files and cgroup", s);
    if (spec_.network) {
      std::optional<net::TaskNetwork> tn = network_;
      if (!tn) {
        if (auto ip = ParseIp(spec_.network->ip)) {
          auto computed = net::TaskNetworkFor(agent_.options_.network, task_id_, *ip);
          if (computed.ok()) tn = std::move(*computed);
        }
      }
      if (tn) {
        Status s = net::DeleteTaskNetwork(agent_.options_.network, *tn);
        if (!s.ok()) Log(spec_.task_arn, "deleting the task network", s);
      }
    }
    Report("DEPROVISIONING");
    if (!agent_.options_.logs_dir.empty()) {
      RotateLogs();
      // `paddock logs --follow` stops at this marker; RemoveExpiredLogs ages the directory out by it.
      if (Status s = MarkLogsStopped(LogDir()); !s.ok()) Log(spec_.task_arn, "marking the logs stopped", s);
    }
    TaskStateChange stopped = Change(kStopped);
    for (const auto& c : containers_) stopped.containers.push_back(ContainerChange(c.name, kStopped, c.exit_code, c.reason));
    if (Report(std::move(stopped))) reported_stopped_ = true;
  }

  Agent& agent_;
  const LaunchSpec spec_;
  std::string task_id_;
  json::object overrides_;
  std::vector<Container> containers_;  // touched by the driver thread only
  std::optional<net::TaskNetwork> network_;
  TaskFiles task_files_;  // from PrepareTaskFiles

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;  // GUARDED_BY(mu_)
  bool abandon_ = false;         // GUARDED_BY(mu_)
  std::atomic<bool> done_{false};
  std::atomic<bool> reported_stopped_{false};
  std::thread thread_;  // last: started once everything above is constructed
};

Agent::Agent(ecs::task::Tasks& tasks, images::ImageStore& images, runtime::Runtime& runtime, AgentOptions options,
             Clock& clock)
    : tasks_(tasks), images_(images), runtime_(runtime), options_(std::move(options)), clock_(clock) {}

Agent::~Agent() { Stop(); }

Status Agent::Start() {
  if (options_.instance.empty() || options_.instance.size() > 8 ||
      !std::all_of(options_.instance.begin(), options_.instance.end(),
                   [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }))
    return InvalidArgument(fmt::format("agent instance '{}' must be 1 to 8 of [a-z0-9]", options_.instance));
  loop_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void Agent::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  for (auto& [arn, d] : drivers_) d->Abandon();
  drivers_.clear();  // joins each
}

void Agent::Notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

Status Agent::EnsureBridge() {
  std::lock_guard lock(bridge_mu_);
  if (!bridge_ready_) {
    RETURN_IF_ERROR(net::EnsureBridge(options_.network));
    bridge_ready_ = true;
  }
  return OkStatus();
}

void Agent::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    notified_ = false;
    lock.unlock();
    Reconcile();
    lock.lock();
    cv_.wait_for(lock, options_.poll_interval, [&] { return stop_ || notified_; });
  }
}

void Agent::Reconcile() {
  for (auto it = drivers_.begin(); it != drivers_.end();) {
    if (!it->second->done()) {
      ++it;
      continue;
    }
    if (it->second->reported_stopped()) finished_.insert(it->first);
    it = drivers_.erase(it);  // joins the finished thread
  }
  auto assigned = tasks_.Assignments(options_.agent_id);
  if (!assigned.ok()) {
    fmt::print(stderr, "paddock: agent: reading assignments: {}\n", assigned.status().ToString());
    return;
  }
  std::set<std::string> listed;
  for (auto& spec : *assigned) {
    listed.insert(spec.task_arn);
    if (finished_.count(spec.task_arn)) continue;
    auto it = drivers_.find(spec.task_arn);
    if (it != drivers_.end()) {
      if (spec.desired_status == kStopped) it->second->RequestStop();
      continue;
    }
    std::string arn = spec.task_arn;
    drivers_.emplace(std::move(arn), std::make_unique<Driver>(*this, std::move(spec)));
  }
  std::erase_if(finished_, [&](const std::string& arn) { return !listed.count(arn); });
  // Logs of stopped tasks: removed keep_logs after their STOPPED marker, i.e. about when
  // ReapStopped removes the task record (hooking the reaper itself would put file-system work in
  // the task owner; this keeps it in the agent, which wrote the files).
  if (!options_.logs_dir.empty()) RemoveExpiredLogs(options_.logs_dir, options_.keep_logs);
}

}  // namespace paddock::agent
