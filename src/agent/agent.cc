#include "agent/agent.h"

#include <cstring>

#include <fcntl.h>

#include "agent/awslogs.h"
#include "agent/container_spec.h"
#include "common/json_fields.h"
#include "agent/images/digest.h"
#include "agent/logs.h"
#include "agent/protocol/wire.h"
#include "agent/pull_progress.h"
#include "agent/sweep.h"
#include "agent/task_credentials.h"
#include "agent/task_files.h"
#include "agent/vpc_networks.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <stop_token>
#include <vector>

#include <boost/json.hpp>

namespace paddock::agent {
using json_fields::Str;
using json_fields::Int;
using json_fields::Bool;
using json_fields::Strings;
using json_fields::Obj;
using json_fields::Objects;
namespace json = boost::json;
using protocol::ContainerStateChange;
using protocol::LaunchSpec;
using protocol::TaskStateChange;

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

std::string IpText(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

// The task definition's networkMode. Without one: awsvpc when the task has an address (Fargate),
// else bridge (ECS's default for EC2 on Linux).
enum class NetMode { kAwsvpc, kBridge, kHost, kNone };

NetMode ParseNetMode(const json::object& definition, bool has_address) {
  std::string mode = Str(definition, "networkMode");
  if (mode == "bridge") return NetMode::kBridge;
  if (mode == "host") return NetMode::kHost;
  if (mode == "none") return NetMode::kNone;
  if (mode == "awsvpc") return NetMode::kAwsvpc;
  return has_address ? NetMode::kAwsvpc : NetMode::kBridge;
}

// "first-last" of a containerPortRange as registration checked it (1 <= first < last <= 65535);
// nullopt otherwise.
std::optional<std::pair<uint16_t, uint16_t>> ParsePortRange(std::string_view text) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  unsigned first = 0, last = 0;
  auto parse = [](std::string_view part, unsigned& out) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return ec == std::errc() && end == part.data() + part.size();
  };
  if (!parse(text.substr(0, dash), first) || !parse(text.substr(dash + 1), last)) return std::nullopt;
  if (first < 1 || first >= last || last > 65535) return std::nullopt;
  return std::pair(static_cast<uint16_t>(first), static_cast<uint16_t>(last));
}

// A container definition's portMappings: hostPort missing means 0 (dynamic), protocol tcp; a
// containerPortRange is container_port..container_port_last.
std::vector<net::PortMapping> MappingsOf(const json::object& definition) {
  std::vector<net::PortMapping> out;
  for (const json::object* m : Objects(definition, "portMappings")) {
    net::PortMapping pm;
    pm.container_port = static_cast<uint16_t>(std::clamp<int64_t>(Int(*m, "containerPort").value_or(0), 0, 65535));
    pm.host_port = static_cast<uint16_t>(std::clamp<int64_t>(Int(*m, "hostPort").value_or(0), 0, 65535));
    if (auto range = ParsePortRange(Str(*m, "containerPortRange"))) {
      pm.container_port = range->first;
      pm.container_port_last = range->second;
      pm.host_port = 0;
    }
    pm.protocol = Str(*m, "protocol") == "udp" ? net::Protocol::kUdp : net::Protocol::kTcp;
    out.push_back(pm);
  }
  return out;
}

protocol::NetworkBinding ToEcs(const net::NetworkBinding& b) {
  protocol::NetworkBinding out;
  out.bind_ip = b.bind_ip;
  out.protocol = std::string(net::ProtocolName(b.protocol));
  if (b.container_port_last != 0) {
    out.container_port_range = fmt::format("{}-{}", b.container_port, b.container_port_last);
    out.host_port_range = fmt::format("{}-{}", b.host_port, b.host_port_last);
  } else {
    out.container_port = b.container_port;
    out.host_port = b.host_port;
  }
  return out;
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

// Position in protocol::kLifecycle; -1 for an unknown status.
int Rank(std::string_view status) {
  for (size_t i = 0; i < std::size(protocol::kLifecycle); ++i)
    if (protocol::kLifecycle[i] == status) return static_cast<int>(i);
  return -1;
}

constexpr std::string_view kOomReason = "OutOfMemoryError: Container killed due to memory usage";
// Only a container started by an earlier agent (before a restart) can end without its status.
constexpr std::string_view kUnknownExit = "the container's exit code is unknown: it was started before the agent restarted";
constexpr std::string_view kHealthy = "HEALTHY";
constexpr std::string_view kUnhealthy = "UNHEALTHY";
constexpr std::string_view kUnknown = "UNKNOWN";

// A container definition's healthCheck, with Docker's and ECS's defaults.
struct HealthCheck {
  std::vector<std::string> args;  // what runtime::Exec runs
  std::chrono::seconds interval{30};
  std::chrono::seconds timeout{5};
  int retries = 3;
  std::chrono::seconds start_period{0};
};

// ["CMD", args...] runs args; ["CMD-SHELL", "cmd"] runs /bin/sh -c cmd (as Docker does); ["NONE"],
// an empty command or an unknown first word: no health check.
std::optional<HealthCheck> ParseHealthCheck(const json::object& def) {
  const json::object& hc = Obj(def, "healthCheck");
  if (hc.empty()) return std::nullopt;
  std::vector<std::string> command = Strings(hc, "command");
  HealthCheck out;
  if (command.size() >= 2 && command[0] == "CMD") {
    out.args.assign(command.begin() + 1, command.end());
  } else if (command.size() >= 2 && command[0] == "CMD-SHELL") {
    std::string joined = command[1];
    for (size_t i = 2; i < command.size(); ++i) joined += " " + command[i];
    out.args = {"/bin/sh", "-c", std::move(joined)};
  } else {
    return std::nullopt;
  }
  auto seconds = [&](std::string_view key, int64_t def_value, int64_t min_value) {
    int64_t v = Int(hc, key).value_or(def_value);
    return std::chrono::seconds(std::max(v, min_value));
  };
  out.interval = seconds("interval", 30, 1);
  out.timeout = seconds("timeout", 5, 1);
  out.retries = static_cast<int>(std::max<int64_t>(Int(hc, "retries").value_or(3), 1));
  out.start_period = seconds("startPeriod", 0, 0);
  return out;
}

struct RestartPolicy {
  bool enabled = false;
  std::vector<int64_t> ignored_exit_codes;
  std::chrono::seconds attempt_period{300};
};

RestartPolicy ParseRestartPolicy(const json::object& def) {
  const json::object& rp = Obj(def, "restartPolicy");
  RestartPolicy out;
  out.enabled = Bool(rp, "enabled").value_or(false);
  if (auto it = rp.find("ignoredExitCodes"); it != rp.end() && it->value().is_array())
    for (const auto& v : it->value().get_array())
      if (v.is_number()) out.ignored_exit_codes.push_back(v.to_number<int64_t>());
  if (auto p = Int(rp, "restartAttemptPeriod")) out.attempt_period = std::chrono::seconds(*p);
  return out;
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
    // The provider captures this driver: no call of it may outlive it.
    if (agent_.options_.metadata) agent_.options_.metadata->UnregisterTask(spec_.task_arn);
    // Their threads call the control plane for this driver: none may outlive it (the pump may
    // still hold them while the agent stops).
    for (Container& c : containers_)
      if (c.shipper) c.shipper->Close();
  }

  void RequestStop() {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
    cv_.notify_all();
  }
  // The control plane no longer lists the task: it is torn down like a stopped one, and nothing
  // is reported (there is no record left to report to, or it is no longer this agent's).
  void Orphan() {
    {
      std::lock_guard lock(mu_);
      orphaned_ = true;
      stop_requested_ = true;
      cv_.notify_all();
    }
    drain_stop_.request_stop();  // a drain wait for a task no longer ours ends
  }
  void Abandon() {
    {
      std::lock_guard lock(mu_);
      abandon_ = true;
      cv_.notify_all();
    }
    drain_stop_.request_stop();
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
    // Its secrets as "NAME=value", fetched by the control plane as the task's execution role
    // (FetchExecutionResources); only ever put into the container's environment.
    std::vector<std::string> secret_env;
    // Its repositoryCredentials' username and password, fetched likewise; only for its pull.
    std::optional<images::RegistryCredentials> registry_auth;
    // Its awslogs configuration (agent/awslogs.h), log stream and shipper (from its start on).
    std::optional<awslogs::Config> awslogs;
    std::string log_stream;
    std::shared_ptr<awslogs::Shipper> shipper;
    std::vector<std::pair<std::string, std::string>> depends_on;  // (containerName, condition)
    // How long dependants wait on this container for COMPLETE, SUCCESS or HEALTHY once it started;
    // 0: as long as the task lives.
    std::chrono::seconds start_timeout{0};
    std::optional<HealthCheck> health_check;
    RestartPolicy restart;
    std::vector<net::PortMapping> mappings;  // its portMappings
    // Reported with its RUNNING change (bridge: the published ports; awsvpc: hostPort =
    // containerPort at the task's address). Unset: none reported (host, none).
    std::optional<std::vector<protocol::NetworkBinding>> bindings;
    bool created = false;
    bool started = false;  // Start succeeded once: it ran (it may have exited since)
    bool stopped = false;  // for good: exited and not restarted, or never to start
    std::optional<int> exit_code;
    std::optional<std::string> reason;
    TimePoint started_at;  // of the first start
    std::optional<TimePoint> last_restart_at;
    int restart_count = 0;
    // Health (only with a health_check): UNKNOWN until a check passes or `retries` fail in a row
    // after the start period.
    std::string health = std::string(kUnknown);
    int failures = 0;
    TimePoint run_started_at;  // of the current run: the start period counts from here
    TimePoint next_check;
    TimePoint check_started_at;
    std::future<StatusOr<runtime::ExecResult>> check;  // in flight, if valid()
  };

  void Run() {
    Status s = Parse();
    if (!s.ok()) {
      Log(spec_.task_arn, "bad launch spec", s);
      Teardown("TaskFailedToStart", fmt::format("ResourceInitializationError: {}", s.message()));
    } else if (spec_.last_status != "PROVISIONING") {
      Readopt();  // started by an earlier agent (see agent.h)
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
    mode_ = ParseNetMode(def.get_object(), spec_.network.has_value());
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
      auto start_timeout = Int(c.definition, "startTimeout");
      c.start_timeout = start_timeout && *start_timeout > 0 ? std::chrono::seconds(*start_timeout)
                                                            : agent_.options_.default_start_timeout;
      for (const json::object* d : Objects(c.definition, "dependsOn"))
        c.depends_on.emplace_back(Str(*d, "containerName"), Str(*d, "condition"));
      c.health_check = ParseHealthCheck(c.definition);
      c.restart = ParseRestartPolicy(c.definition);
      c.mappings = MappingsOf(c.definition);
      auto awslogs = awslogs::ConfigOf(c.definition);
      if (!awslogs.ok())
        return InvalidArgument(fmt::format("container '{}': failed to initialize logging driver: {}", c.name,
                                           awslogs.status().message()));
      c.awslogs = std::move(*awslogs);
      if (c.awslogs) c.log_stream = awslogs::StreamName(*c.awslogs, c.name, task_id_, c.id.str());
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
  bool orphaned() {
    std::lock_guard lock(mu_);
    return orphaned_;
  }
  bool stop_requested() {
    std::lock_guard lock(mu_);
    return stop_requested_ || abandon_;
  }
  void SleepUnlessAbandoned(std::chrono::milliseconds d) {
    if (d.count() <= 0) return;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return abandon_; });
  }
  // Sleeps up to `d`, returning early on a stop request or abandon.
  void Pause(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return stop_requested_ || abandon_; });
  }

  bool Report(TaskStateChange change) {
    {
      std::lock_guard lock(mu_);
      if (orphaned_) return true;
    }
    Status s = agent_.control_.Report(agent_.options_.agent_id, spec_.task_arn, change, agent_.clock_.Now());
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
    // Secrets and registry credentials, as the execution role: before the pulls that use them.
    if (!FetchExecutionResources()) return;
    for (auto& c : containers_) {
      // From the store, else pulled (images/skopeo_puller.h); the message is ECS's text after the prefix.
      // A pull's progress shows in the task's log directory and the agent's log (agent/pull_progress.h).
      PullReporter pull(spec_.task_arn, c.name, c.image,
                        agent_.options_.logs_dir.empty() ? std::filesystem::path() : LogDir(), agent_.clock_);
      auto r = agent_.images_.ResolveOrPull(c.image, pull.Fn(), c.registry_auth ? &*c.registry_auth : nullptr);
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

    if (!CreateLogStreams()) return;  // awslogs, as the execution role
    if (!SetUpNetwork()) return;
    if (!PrepareTaskFiles()) return;  // hosts, resolv.conf, volumes, the task's cgroup
    Supervise();
  }

  // The containers' secrets and registry credentials, fetched by the control plane as the task's
  // execution role (Control::PrepareExecutionResources; a task without any asks nothing), kept for
  // SpecFor and the pulls.
  // A failure the control plane answers stops the task with its reason; a fetch that fails is
  // tried again after 1, 2 and 4 s, then the task stops. A control plane that fetches nothing
  // (FailedPrecondition) refuses the secrets as this node's before. False: torn down or stopping.
  bool FetchExecutionResources() {
    if (!NeedsExecutionResources(spec_)) return true;
    constexpr int kRetries = 3;
    for (int attempt = 0;; ++attempt) {
      StatusOr<protocol::ExecutionResources> r =
          agent_.control_.PrepareExecutionResources(agent_.options_.agent_id, spec_);
      if (r.ok() && !r->failure_reason.empty()) {
        Teardown("TaskFailedToStart", r->failure_reason);
        return false;
      }
      if (r.ok()) {
        for (const protocol::ExecutionResources::Container& got : r->containers)
          for (Container& c : containers_)
            if (c.name == got.name) {
              for (const auto& v : got.secrets) c.secret_env.push_back(v.name + "=" + v.value);
              if (got.registry_auth)
                c.registry_auth = images::RegistryCredentials{got.registry_auth->username, got.registry_auth->password};
            }
        return true;
      }
      if (r.status().code() == StatusCode::kFailedPrecondition) {
        for (const Container& c : containers_) {
          std::vector<const json::object*> secrets = Objects(c.definition, "secrets");
          if (secrets.empty()) continue;
          Teardown("TaskFailedToStart",
                   fmt::format("ResourceInitializationError: container '{}': unable to pull secrets: secrets from "
                               "SSM Parameter Store or Secrets Manager (valueFrom '{}') are not supported by this "
                               "node's control plane",
                               c.name, Str(*secrets.front(), "valueFrom")));
          return false;
        }
        for (const Container& c : containers_) {
          if (!c.definition.contains("repositoryCredentials")) continue;
          Teardown("TaskFailedToStart",
                   fmt::format("ResourceInitializationError: container '{}': unable to pull registry auth: private "
                               "registry credentials (repositoryCredentials) are not supported by this node's "
                               "control plane",
                               c.name));
          return false;
        }
      }
      Log(spec_.task_arn, "fetching the task's secrets", r.status());
      if (attempt == kRetries) {
        Teardown("TaskFailedToStart",
                 fmt::format("ResourceInitializationError: unable to pull secrets or registry auth: execution resource "
                             "retrieval failed: service call has been retried {} time(s): {}",
                             kRetries, r.status().message()));
        return false;
      }
      Pause(std::chrono::seconds(1 << attempt));
      if (abandoned()) return false;
      if (stop_requested()) {
        Teardown(std::nullopt, std::nullopt);
        return false;
      }
    }
  }

  // Each awslogs container's log stream (and group, with awslogs-create-group), created by the
  // control plane as the task's execution role (Control::ShipLogs). CloudWatch's refusal stops the
  // task with ECS's text; a call that fails is tried again after 1, 2 and 4 s. A control plane that
  // ships no logs (a remote agent's) refuses awslogs. False: torn down or stopping.
  bool CreateLogStreams() {
    constexpr std::string_view kPrefix = "CannotStartContainerError: Error response from daemon: failed to initialize logging driver: ";
    for (Container& c : containers_) {
      if (!c.awslogs) continue;
      auto fail = [&](const std::string& why) {
        c.reason = fmt::format("{}{}", kPrefix, why);
        Teardown("TaskFailedToStart", *c.reason);
        return false;
      };
      if (!c.awslogs->region.empty() && c.awslogs->region != spec_.scope.region.str())
        return fail(fmt::format("awslogs-region '{}' is not this node's region '{}': Paddock's CloudWatch Logs "
                                "serves the region the task runs in",
                                c.awslogs->region, spec_.scope.region.str()));
      constexpr int kRetries = 3;
      for (int attempt = 0;; ++attempt) {
        StatusOr<protocol::LogsAnswer> r = CreateLogStream(c);
        if (r.ok() && !r->failure.empty()) return fail(r->failure);
        if (r.ok()) {
          if (Status s = TakeDefaultMode(c, *r); !s.ok()) return fail(std::string(s.message()));
          break;
        }
        if (r.status().code() == StatusCode::kFailedPrecondition)
          return fail(fmt::format("the awslogs log driver is not supported by this node's control plane ({}); use "
                                  "logDriver json-file and paddock logs",
                                  r.status().message()));
        Log(spec_.task_arn, fmt::format("creating the log stream of {}", c.name), r.status());
        if (attempt == kRetries)
          return fail(fmt::format("failed to create Cloudwatch log stream: service call has been retried {} time(s): {}",
                                  kRetries, r.status().message()));
        Pause(std::chrono::seconds(1 << attempt));
        if (abandoned()) return false;
        if (stop_requested()) {
          Teardown(std::nullopt, std::nullopt);
          return false;
        }
      }
    }
    return true;
  }

  // `c`'s log stream (and group, with awslogs-create-group) created, or found there already.
  StatusOr<protocol::LogsAnswer> CreateLogStream(const Container& c) {
    return agent_.control_.ShipLogs(agent_.options_.agent_id, spec_,
                                    protocol::LogsCall{.container = c.name, .stream = c.log_stream,
                                                       .create_stream = true, .events = {}});
  }
  // Its mode, when its options name none: the account's default (in the stream's answer), as ECS
  // fills it in.
  Status TakeDefaultMode(Container& c, const protocol::LogsAnswer& answer) {
    ASSIGN_OR_RETURN(awslogs::Config config, awslogs::WithDefaultMode(*c.awslogs, answer.default_mode));
    c.awslogs = std::move(config);
    return OkStatus();
  }
  // A re-adopted awslogs container's stream again (deleted while no agent ran: made again) and its
  // account's default mode, before its shipper is made. A container is not stopped for a failure
  // here, as a running one on ECS is not: it is logged, and the container ships non-blocking
  // unless its options say otherwise (its refused batches dropped and counted).
  void ReopenLogStream(Container& c) {
    if (!c.awslogs) return;
    StatusOr<protocol::LogsAnswer> r = CreateLogStream(c);
    Status s = !r.ok() ? r.status()
               : !r->failure.empty() ? Status(StatusCode::kFailedPrecondition, r->failure)
                                     : TakeDefaultMode(c, *r);
    if (!s.ok()) Log(spec_.task_arn, fmt::format("re-opening the log stream of {}", c.name), s);
  }

  // The shipper of an awslogs container (made on first use: at its start, or when a restarted
  // agent re-adopts it, after ReopenLogStream).
  std::shared_ptr<LogSink> ShipperFor(Container& c) {
    if (!c.awslogs) return nullptr;
    if (!c.shipper) {
      awslogs::Shipper::Options o;
      o.label = fmt::format("task {} container {}", task_id_, c.name);
      c.shipper = std::make_shared<awslogs::Shipper>(
          *c.awslogs,
          [this, name = c.name, stream = c.log_stream](std::vector<protocol::LogEvent> batch) {
            return agent_.control_.ShipLogs(agent_.options_.agent_id, spec_,
                                            protocol::LogsCall{.container = name, .stream = stream, .create_stream = false,
                                                               .events = std::move(batch)});
          },
          std::move(o));
    }
    return c.shipper;
  }

  // The task's network by its mode: awsvpc, its netns at its address on the bridge; bridge, a netns
  // on the bridge-mode bridge and each container's portMappings published (agent/net); host, the
  // ports reserved; none, nothing. Sets task_ip_ and each container's bindings. False: failed, and
  // the task is torn down (ResourceInitializationError; CannotStartContainerError for ports).
  bool SetUpNetwork() {
    const net::NetworkOptions& options = agent_.options_.network;
    if (mode_ == NetMode::kAwsvpc && spec_.network) {
      task_ip_ = spec_.network->ip;
      {
        std::lock_guard l(facts_mu_);
        facts_.prefix_length = spec_.network->prefix_length;
        facts_.gateway = spec_.network->gateway;
      }
      // ECS's agent submits none for awsvpc (DescribeTasks shows []); Paddock reports where each
      // port is served: the task's address, hostPort = containerPort (docs/contracts/task.md).
      for (auto& c : containers_) {
        c.bindings.emplace();
        for (const auto& m : c.mappings)  // a range: hostPortRange = containerPortRange, as ECS
          c.bindings->push_back(ToEcs(net::NetworkBinding{.bind_ip = task_ip_,
                                                          .container_port = m.container_port,
                                                          .host_port = m.container_port,
                                                          .container_port_last = m.container_port_last,
                                                          .host_port_last = m.container_port_last,
                                                          .protocol = m.protocol}));
      }
    }
    if (!agent_.options_.task_networks) return true;
    auto fail = [&](std::string_view prefix, const Status& s) {
      Teardown("TaskFailedToStart", fmt::format("{}: {}", prefix, s.message()));
      return false;
    };
    constexpr std::string_view kInit = "ResourceInitializationError";
    constexpr std::string_view kPorts = "CannotStartContainerError";
    switch (mode_) {
      case NetMode::kAwsvpc: {
        if (!spec_.network) return true;
        Status s = agent_.EnsureHostNetwork();
        if (s.ok()) {
          auto ip = ParseIp(spec_.network->ip);
          auto gw = ParseIp(spec_.network->gateway);
          if (!ip || !gw) {
            s = InvalidArgument(fmt::format("bad task address {} / gateway {}", spec_.network->ip, spec_.network->gateway));
          } else {
            // In its VPC's router namespace, with the VPC's security groups in force (agent/vpc_networks.h).
            auto a = agent_.vpcs_->Attach(spec_, task_id_, *ip, spec_.network->prefix_length, *gw);
            if (a.ok()) {
              network_ = std::move(a->network);
              metadata_network_ = std::move(a->metadata_network);
              dns_served_ = a->dns;
              std::lock_guard l(facts_mu_);
              facts_.vpc_id = a->vpc_id;
            }
            s = a.status();
          }
        }
        if (!s.ok()) return fail(kInit, s);
        return true;
      }
      case NetMode::kBridge: {
        Status s = agent_.EnsureBridgeNetwork();
        if (!s.ok()) return fail(kInit, s);
        auto tn = net::CreateBridgeTaskNetwork(options, task_id_);
        if (!tn.ok()) return fail(kInit, tn.status());
        network_ = std::move(*tn);
        task_ip_ = IpText(network_->ip);
        SetMetadataNetwork("bridge", task_ip_);
        for (auto& c : containers_) {
          auto b = net::PublishPorts(options, *network_, c.mappings);
          if (!b.ok()) return fail(kPorts, b.status());
          c.bindings.emplace();
          for (const auto& x : *b) c.bindings->push_back(ToEcs(x));
        }
        return true;
      }
      case NetMode::kHost: {
        std::vector<net::PortMapping> all;
        for (const auto& c : containers_) all.insert(all.end(), c.mappings.begin(), c.mappings.end());
        auto r = net::ReserveHostPorts(options, task_id_, all);
        if (!r.ok()) return fail(kPorts, r.status());
        SetMetadataNetwork("host", "");
        return true;  // ECS's agent submits no networkBindings for host tasks
      }
      case NetMode::kNone:
        return true;
    }
    return true;
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
                      .ip = task_ip_,
                      .nameserver = dns_served_ ? std::string(net::kDnsAddress) : std::string(),
                      .cpu_units = ParseUnits(spec_.cpu),
                      .memory_mib = ParseUnits(spec_.memory)};
    if (mode_ == NetMode::kBridge || mode_ == NetMode::kNone) {  // Docker's name for them: their id
      in.default_hostname = DefaultHostname::kContainerId;
      for (const auto& c : containers_) in.container_ids[c.name] = c.id.str();
    }
    auto files = PrepareTask(agent_.runtime_, TaskFilesOpts(), in);
    if (!files.ok()) {
      Teardown("TaskFailedToStart", fmt::format("ResourceInitializationError: {}", files.status().message()));
      return false;
    }
    task_files_ = std::move(*files);
    if (agent_.options_.metadata && !task_files_.etc_files.empty()) {
      std::ifstream resolv(task_files_.etc_files.begin()->second.resolv_conf);
      std::stringstream text;
      text << resolv.rdbuf();
      std::lock_guard l(facts_mu_);
      metadata::ParseResolvConf(text.str(), facts_);
    }
    return true;
  }
  TaskFilesOptions TaskFilesOpts() const {
    TaskFilesOptions o;
    o.tasks_dir = agent_.options_.tasks_dir;
    o.host_access = agent_.options_.host_access;
    o.pids_per_task = agent_.options_.pids_per_task;
    return o;
  }

  runtime::ContainerSpec SpecFor(const Container& c) {
    TaskContext task;
    task.task_arn = spec_.task_arn;
    task.cpu_units = ParseUnits(spec_.cpu);
    task.memory_mib = ParseUnits(spec_.memory);
    task.netns_path = network_ ? network_->netns_path : std::string();
    ApplyTaskFiles(task_files_, task);
    std::string log_path = agent_.log_pump_ ? FifoPath(c).string() : std::string();
    runtime::ContainerSpec spec =
        BuildContainerSpec(ContainerInput{c.id, c.definition, c.overrides, *c.resolved, log_path}, task);
    // A secret replaces an environment variable of the same name (one entry each: a process
    // reading its environment must not find the definition's value first).
    for (const std::string& secret : c.secret_env) {
      const std::string_view name = std::string_view(secret).substr(0, secret.find('=') + 1);  // "NAME="
      std::erase_if(spec.env, [&](const std::string& e) { return e.starts_with(name); });
      spec.env.push_back(secret);
    }
    if (mode_ == NetMode::kHost && agent_.options_.task_networks) {
      spec.network = runtime::NetworkMode::kHost;
      spec.netns_path.clear();
    }
    for (std::string& e : MetadataEnv(c)) spec.env.push_back(std::move(e));
    // How this agent's sweep recognises the container as its own (agent/sweep.h).
    spec.annotations[std::string(kOwnerAnnotation)] = agent_.options_.container_owner;
    spec.annotations[std::string(kTaskAnnotation)] = task_id_;
    return spec;
  }

  // ---- The task metadata endpoint (agent/metadata) ----

  // Tasks with a network path to 169.254.170.2 are served: not networkMode none.
  bool ServesMetadata() const { return agent_.options_.metadata != nullptr && mode_ != NetMode::kNone; }

  // The container's endpoint environment, registering it on first use (again after a restart:
  // the service's id_key gives it the id it had).
  std::vector<std::string> MetadataEnv(const Container& c) {
    if (!ServesMetadata()) return {};
    // Host-mode containers share the host's addresses: no source check for them.
    const std::string source = mode_ == NetMode::kHost ? std::string() : task_ip_;
    auto [it, fresh] = endpoints_.try_emplace(c.name);
    if (fresh) {
      it->second = agent_.options_.metadata->RegisterContainer(
          spec_.task_arn, c.name, [this](metadata::WithTags with_tags) { return MetadataFacts(with_tags); }, source,
          metadata_network_);
    }
    std::vector<std::string> env = it->second.Env();
    for (std::string& e : CredentialsEnv(source)) env.push_back(std::move(e));
    return env;
  }

  // A task with a task role (agent/task_credentials.h): one credentials endpoint for the task,
  // registered with its first container, whose environment every container gets.
  std::vector<std::string> CredentialsEnv(const std::string& source) {
    if (TaskRoleArnOf(spec_).empty()) return {};
    if (!credentials_endpoint_) {
      credentials_.emplace(agent_.control_, agent_.options_.agent_id, spec_, agent_.clock_);
      credentials_endpoint_ = agent_.options_.metadata->RegisterCredentials(
          spec_.task_arn, [this] { return credentials_->Get(); }, source, metadata_network_);
    }
    return credentials_endpoint_->Env();
  }

  // The provider: the task as DescribeTasks shows it now, with what the runtime knows.
  StatusOr<metadata::TaskFacts> MetadataFacts(metadata::WithTags with_tags) {
    ASSIGN_OR_RETURN(std::string task_json,
                     agent_.control_.DescribeTask(spec_, /*with_tags=*/with_tags == metadata::WithTags::kYes));
    metadata::TaskFacts f;
    {
      std::lock_guard l(facts_mu_);
      f = facts_;
    }
    f.task_json = std::move(task_json);
    for (auto& c : f.containers) {
      if (c.finished_at) continue;
      auto st = agent_.runtime_.State(runtime::ContainerId(c.docker_id));
      c.pid = st.ok() && st->status == runtime::ContainerStatus::kRunning ? st->pid : 0;
    }
    return f;
  }

  // After each (re)start and at re-adoption.
  void RecordFacts(const Container& c, TimePoint now) {
    if (!ServesMetadata()) return;
    metadata::ContainerFacts f = metadata::FactsFromDefinition(c.definition);
    f.docker_id = c.id.str();
    f.created_at = f.started_at = now;
    if (c.resolved) f.image_id = images::Sha256Of(c.resolved->config_json).str();
    if (c.restart.enabled) f.restart_count = c.restart_count;
    boost::system::error_code ec;
    json::value def = json::parse(spec_.definition, ec);
    if (!ec && def.is_object()) {
      for (const auto& b : ContainerVolumes(TaskFilesOpts(), def.get_object(), task_id_, c.name))
        f.volumes.push_back(metadata::MountedVolume{b.source, b.destination});
    }
    std::lock_guard l(facts_mu_);
    std::erase_if(facts_.containers, [&](const metadata::ContainerFacts& x) { return x.name == c.name; });
    facts_.containers.push_back(std::move(f));
  }

  void RecordFinished(const Container& c, TimePoint now) {
    if (!ServesMetadata()) return;
    std::lock_guard l(facts_mu_);
    for (auto& f : facts_.containers)
      if (f.name == c.name && !f.finished_at) f.finished_at = now;
  }

  std::filesystem::path LogDir() const { return std::filesystem::path(agent_.options_.logs_dir) / task_id_; }
  std::filesystem::path LogPath(const Container& c) const { return LogDir() / (c.name + ".log"); }
  // The container's stdout and stderr (agent/logs.h).
  std::filesystem::path FifoPath(const Container& c) const { return LogDir() / (c.name + ".fifo"); }

  // Starts pumping `c`'s FIFO into its log (again after a restart of the agent: a no-op when it
  // is pumped already).
  Status AttachLog(Container& c) {
    if (!agent_.log_pump_) return OkStatus();
    return agent_.log_pump_->Attach(FifoPath(c), LogPath(c), ShipperFor(c));
  }
  // Once the containers are deleted: what is left in their FIFOs goes to their logs, and the
  // FIFOs go. A FIFO this agent never attached (the task was started by an earlier agent) is
  // attached first, so its leftovers are not lost.
  void DetachLogs() {
    if (!agent_.log_pump_) return;
    for (auto& c : containers_) {
      std::error_code ec;
      if (std::filesystem::exists(FifoPath(c), ec)) AttachLog(c).IgnoreError();
      agent_.log_pump_->Detach(FifoPath(c));
      if (!c.shipper) continue;
      c.shipper->Close();  // what the FIFO held is shipped before the task is STOPPED
      if (uint64_t dropped = c.shipper->dropped_lines(); dropped > 0)  // non-blocking mode's bound
        fmt::print(stderr, "paddock: agent: task {}: container {}: awslogs dropped {} lines (mode non-blocking, "
                   "max-buffer-size {} bytes)\n", spec_.task_arn, c.name, dropped, c.awslogs->max_buffer_bytes);
    }
  }

  Container* Find(std::string_view name) {
    for (auto& c : containers_)
      if (c.name == name) return &c;
    return nullptr;
  }

  // Creates and starts `c` (again, after a restart: same id). `now` is read before the start, so
  // whoever sees the container running sees its times set from a clock reading no later.
  Status CreateAndStart(Container& c, TimePoint now) {
    // Before Create: the container opens its FIFO as it is created.
    if (Status s = AttachLog(c); !s.ok()) return Status(s.code(), fmt::format("its log: {}", s.message()));
    Status s = agent_.runtime_.Create(SpecFor(c));
    if (s.ok()) {
      c.created = true;
      s = agent_.runtime_.Start(c.id);
    }
    if (!s.ok()) return s;
    if (!c.started) c.started_at = now;
    c.started = true;
    c.run_started_at = now;
    RecordFacts(c, now);
    c.health = std::string(kUnknown);
    c.failures = 0;
    if (c.health_check) c.next_check = NextCheck(c, now);
    return OkStatus();
  }

  ContainerStateChange RunningChange(const Container& c) {
    ContainerStateChange cc = ContainerChange(c.name, "RUNNING", std::nullopt, std::nullopt, c.id.str());
    if (c.resolved) cc.image_digest = c.resolved->ReportedDigest().str();
    if (c.health_check) cc.health_status = c.health;
    cc.network_bindings = c.bindings;
    return cc;
  }

  // Whether `c` may start now: nullopt to wait, "" to start, else why it never will (ECS's
  // dependency graph texts: the dependency is named, then the target).
  std::optional<std::string> DependencyVerdict(const Container& c, TimePoint now) {
    bool waiting = false;
    for (const auto& [name, condition] : c.depends_on) {
      const Container* d = Find(name);
      if (!d || d == &c) continue;  // registration refuses these
      const bool exited = d->stopped;
      auto never = [&](std::string_view why) {
        return fmt::format("dependency graph: failed to resolve container ordering dependency [{}] for target [{}] {}",
                           d->name, c.name, why);
      };
      if (!d->started) {
        if (exited) return never("because dependency will never start");
        waiting = true;
        continue;
      }
      if (condition == "START") continue;
      if (condition == "SUCCESS" && exited && d->exit_code != 0) return never("as dependency did not exit successfully.");
      if (condition == "HEALTHY" && exited) return never("as dependency stopped before it became HEALTHY.");
      if (condition == "HEALTHY" && !d->health_check) return never("as dependency has no health check.");
      bool satisfied = condition == "COMPLETE"  ? exited
                       : condition == "SUCCESS" ? exited && d->exit_code == 0
                       : condition == "HEALTHY" ? d->health == kHealthy
                                                : true;
      if (satisfied) continue;
      if (d->start_timeout.count() > 0 && now >= d->started_at + d->start_timeout)
        return fmt::format("dependency graph: container ordering dependency [{}] for target [{}] has timed out.", d->name,
                           c.name);
      waiting = true;
    }
    if (waiting) return std::nullopt;
    return std::string();
  }

  // ECS's task health: the essential containers with health checks (else the non-essential ones
  // with health checks) decide — any UNHEALTHY, else any UNKNOWN, else HEALTHY; none: UNKNOWN.
  std::string TaskHealth() const {
    for (bool essential : {true, false}) {
      bool any = false, unknown = false;
      for (const auto& c : containers_) {
        if (c.essential != essential || !c.health_check) continue;
        any = true;
        if (c.health == kUnhealthy) return std::string(kUnhealthy);
        if (c.health != kHealthy) unknown = true;
      }
      if (any) return std::string(unknown ? kUnknown : kHealthy);
    }
    return std::string(kUnknown);
  }

  // ECS's restart rule (its agent's restart tracker): enabled, the task not stopping, the exit
  // code known and not ignored, and the container ran for restartAttemptPeriod since its first
  // start or its last restart. Not for re-adopted containers (no `resolved`; see Readopt).
  bool ShouldRestart(const Container& c, TimePoint now) {
    if (!c.restart.enabled || stop_requested() || !c.exit_code || !c.resolved) return false;
    for (int64_t code : c.restart.ignored_exit_codes)
      if (code == *c.exit_code) return false;
    TimePoint since = c.last_restart_at.value_or(c.started_at);
    return now - since >= c.restart.attempt_period;
  }

  // Collects a finished health check of `c`. Returns whether the container's health changed.
  bool CollectHealth(Container& c) {
    if (!c.health_check || !c.check.valid() || c.check.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return false;
    const std::string before = c.health;
    auto r = c.check.get();
    if (r.ok() && !r->timed_out && r->exit_code == 0) {
      c.failures = 0;
      c.health = std::string(kHealthy);
    } else if (c.check_started_at >= c.run_started_at + c.health_check->start_period) {
      // A failure during the start period does not count (a pass does).
      if (++c.failures >= c.health_check->retries) c.health = std::string(kUnhealthy);
    }
    return c.health != before;
  }

  // When the check after one starting at `now` (or the first, the container starting at `now`) is
  // due: `interval` later, but kStartInterval later while the container is inside its start period
  // and has not passed yet — Docker's start interval (ECS sets none, so Docker's engine would take
  // its 5 s default): a container that comes up fast is HEALTHY, and what dependsOn it HEALTHY
  // starts, within a second rather than an interval. Failures inside the start period count for
  // nothing either way.
  static constexpr std::chrono::seconds kStartInterval{1};
  static TimePoint NextCheck(const Container& c, TimePoint now) {
    const HealthCheck& h = *c.health_check;
    const bool starting = c.health != kHealthy && now < c.run_started_at + h.start_period;
    return now + (starting ? std::min<std::chrono::seconds>(h.interval, kStartInterval) : h.interval);
  }

  // Starts the next health check of `c` when it is due (NextCheck), once the last one is collected.
  void LaunchHealthCheck(Container& c, TimePoint now) {
    if (!c.health_check || c.check.valid() || now < c.next_check) return;
    c.check_started_at = now;
    c.next_check = NextCheck(c, now);
    runtime::Runtime& rt = agent_.runtime_;
    c.check = std::async(std::launch::async, [&rt, id = c.id, args = c.health_check->args,
                                              timeout = c.health_check->timeout] {
      return rt.Exec(id, args, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    });
  }

  // Waits for every health check in flight (each is bounded by its timeout).
  void DrainChecks() {
    for (auto& c : containers_)
      if (c.check.valid()) c.check.wait();
  }

  // Starts the containers in dependency order, then watches them until the task stops: exits
  // (restarted under a restart policy, else reported; an essential one stops the task), health
  // checks. RUNNING is reported once no container waits to start any more.
  // A task an earlier agent left behind. RUNNING (and still wanted): its containers are found by
  // name and watched again without restarting anything; those that died meanwhile are reported
  // by Supervise as any exit (an essential one stops the task). Caught mid-launch: launched again
  // (Relaunch). Caught mid-teardown, or stopped meanwhile: torn down.
  void Readopt() {
    if (spec_.desired_status == kStopped || Rank(spec_.last_status) > Rank("RUNNING"))
      return Teardown(std::nullopt, std::nullopt);
    if (spec_.last_status != "RUNNING") return Relaunch();
    // No restart policy applies to re-adopted containers: the task files a restart needs (SpecFor:
    // /etc files, volumes, cgroup) are not rebuilt, and without `resolved` ShouldRestart says no.
    const TimePoint now = agent_.clock_.Now();
    ReadoptNetwork();
    TaskStateChange change = Change("RUNNING");
    bool essential_gone = false;
    for (auto& c : containers_) {
      auto st = agent_.runtime_.State(c.id);
      if (!st.ok()) {
        // Never created (a dependency it waited on failed: already reported STOPPED) or removed.
        c.stopped = true;
        c.reason = "CannotInspectContainerError: the container was not found after the agent restarted";
        change.containers.push_back(ContainerChange(c.name, kStopped, std::nullopt, c.reason));
        essential_gone = essential_gone || c.essential;
        continue;
      }
      c.created = true;
      c.started = true;
      // Its output waits in its FIFO (or blocks it, once full) until the pump reads it again.
      ReopenLogStream(c);
      if (Status s = AttachLog(c); !s.ok()) Log(spec_.task_arn, fmt::format("re-attaching the log of {}", c.name), s);
      // When it really started is unknown: counted from now (health start period, restart period).
      c.started_at = c.run_started_at = now;
      RecordFacts(c, now);
      MetadataEnv(c);  // registered again, under the id in its environment
      if (c.health_check) c.next_check = NextCheck(c, now);
    }
    if (essential_gone) {
      Report(std::move(change));
      return Teardown("EssentialContainerExited", "Essential container in task exited");
    }
    if (!change.containers.empty()) Report(std::move(change));
    fmt::print(stderr, "paddock: agent: task {}: re-adopted after an agent restart\n", spec_.task_arn);
    Supervise(/*running=*/true);
  }

  // A task an earlier agent was launching (PENDING, ACTIVATING) when it stopped or was killed: an
  // acknowledged RunTask means the task runs, so whatever that launch made (containers, stopped
  // as Teardown stops them; the task's files and cgroup; its network) is removed by name, nothing
  // reported, and the task is launched again from the start under the same ARN, at the address
  // the control plane gave it (still held: only the task's STOPPED releases it). Reports that
  // would move it back (PENDING after ACTIVATING) are ignored by the control plane. Only the
  // relaunch's own failure stops it. Killed again midway, the next agent does the same: every
  // step finds what is there by name.
  void Relaunch() {
    fmt::print(stderr, "paddock: agent: task {}: caught mid-launch ({}) by an agent restart: launching it again\n",
               spec_.task_arn, spec_.last_status);
    if (!StopContainers()) return;  // abandoned: the next agent starts over
    RemoveTaskResources();
    for (Container& c : containers_) {  // what StopContainers recorded of the earlier launch's
      c.created = c.stopped = false;
      c.exit_code.reset();
      c.reason.reset();
    }
    if (abandoned()) return;
    Launch();
  }

  // What a re-adopted task's network was: its address (for the metadata endpoint's source check)
  // and, for bridge mode, its namespace record. Its published ports are still in place.
  // What the metadata documents show as a bridge or host task's Networks entry.
  void SetMetadataNetwork(std::string mode, std::string ip) {
    std::lock_guard l(facts_mu_);
    facts_.network_mode = std::move(mode);
    facts_.ipv4 = std::move(ip);
  }

  void ReadoptNetwork() {
    if (mode_ == NetMode::kAwsvpc && spec_.network) {
      task_ip_ = spec_.network->ip;
      if (auto ip = ParseIp(task_ip_); ip && agent_.options_.task_networks) {
        auto a = agent_.vpcs_->Readopt(spec_, task_id_, *ip);
        if (a.ok()) {
          network_ = std::move(a->network);
          metadata_network_ = std::move(a->metadata_network);
          std::lock_guard l(facts_mu_);
          facts_.vpc_id = a->vpc_id;
        } else {
          Log(spec_.task_arn, "re-adopting the task's VPC network (its policy is retried every pass)", a.status());
        }
      }
      std::lock_guard l(facts_mu_);
      facts_.prefix_length = spec_.network->prefix_length;
      facts_.gateway = spec_.network->gateway;
    } else if (mode_ == NetMode::kBridge && agent_.options_.task_networks) {
      auto tn = net::BridgeTaskNetworkFor(agent_.options_.network, task_id_);
      if (tn.ok()) {
        network_ = std::move(*tn);
        task_ip_ = IpText(network_->ip);
        SetMetadataNetwork("bridge", task_ip_);
      }
    } else if (mode_ == NetMode::kHost) {
      SetMetadataNetwork("host", "");
    }
    if (ServesMetadata() && !agent_.options_.tasks_dir.empty()) {
      std::ifstream resolv(std::filesystem::path(agent_.options_.tasks_dir) / task_id_ / "etc" /
                           containers_.front().name / "resolv.conf");
      std::stringstream text;
      text << resolv.rdbuf();
      std::lock_guard l(facts_mu_);
      metadata::ParseResolvConf(text.str(), facts_);
    }
  }

  void Supervise(bool running = false) {
    std::string task_health = TaskHealth();
    while (true) {
      if (abandoned()) return DrainChecks();
      if (stop_requested()) return Teardown(std::nullopt, std::nullopt);
      const TimePoint now = agent_.clock_.Now();
      TaskStateChange change = Change(running ? "RUNNING" : "ACTIVATING");
      std::optional<std::string> essential_exit;  // the stop code, when an essential container is done

      for (auto& c : containers_) {
        if (!c.started || c.stopped) continue;
        auto st = agent_.runtime_.State(c.id);
        if (st.ok() && st->status != runtime::ContainerStatus::kStopped) continue;
        if (st.ok()) {
          c.exit_code = st->exit_code;
          c.reason = st->oom_killed ? std::optional<std::string>(kOomReason)
                     : !st->exit_code
                         ? std::optional<std::string>(kUnknownExit)
                         : std::nullopt;
        } else {
          c.exit_code.reset();
          c.reason = fmt::format("the container's state is lost: {}", st.status().message());
        }
        if (st.ok() && ShouldRestart(c, now)) {
          if (c.check.valid()) c.check.wait();
          c.check = {};
          Status s = agent_.runtime_.Delete(c.id, runtime::ForceDelete::kYes);
          if (s.ok() || s.code() == StatusCode::kNotFound) s = CreateAndStart(c, now);
          if (s.ok()) {
            c.last_restart_at = now;
            ++c.restart_count;
            RecordFacts(c, now);
            fmt::print(stderr, "paddock: agent: task {}: container {} exited ({}); restarted (restart {})\n",
                       spec_.task_arn, c.name, *c.exit_code, c.restart_count);
            c.exit_code.reset();
            c.reason.reset();
            if (c.health_check) change.containers.push_back(RunningChange(c));
            continue;
          }
          c.reason = fmt::format("CannotStartContainerError: restarting after exit code {}: {}", *c.exit_code, s.message());
        }
        c.stopped = true;
        RecordFinished(c, now);
        change.containers.push_back(ContainerChange(c.name, kStopped, c.exit_code, c.reason));
        if (c.essential && !essential_exit) essential_exit = "EssentialContainerExited";
      }
      if (essential_exit) {
        Report(std::move(change));
        if (stop_requested()) return Teardown(std::nullopt, std::nullopt);  // StopTask's code stands
        return Teardown(*essential_exit, "Essential container in task exited");
      }

      for (auto& c : containers_)
        if (c.started && !c.stopped && CollectHealth(c)) change.containers.push_back(RunningChange(c));

      bool waiting = false;
      for (auto& c : containers_) {
        if (c.started || c.stopped) continue;
        auto verdict = DependencyVerdict(c, now);
        if (!verdict) {
          waiting = true;
          continue;
        }
        if (verdict->empty()) {
          Status s = CreateAndStart(c, now);
          if (!s.ok()) {
            c.reason = fmt::format("CannotStartContainerError: {}", s.message());
            Report(std::move(change));
            return Teardown("TaskFailedToStart", *c.reason);
          }
          change.containers.push_back(RunningChange(c));
          continue;
        }
        // Never to start: the container is done; an essential one fails the task.
        c.stopped = true;
        c.reason = fmt::format("CannotStartContainerError: {}", *verdict);
        change.containers.push_back(ContainerChange(c.name, kStopped, std::nullopt, c.reason));
        if (c.essential) {
          Report(std::move(change));
          return Teardown("TaskFailedToStart", *c.reason);
        }
      }

      std::string health = TaskHealth();
      if (health != task_health || (!running && !waiting)) change.health_status = health;
      task_health = health;
      if (!running && !waiting) {
        running = true;
        change.last_status = "RUNNING";
        if (!Report(std::move(change))) return DrainChecks();
      } else if (!change.containers.empty() || change.health_status) {
        Report(std::move(change));
      }
      // After the report: a check started now implies every earlier result is reported.
      for (auto& c : containers_)
        if (c.started && !c.stopped) LaunchHealthCheck(c, now);
      Pause(agent_.options_.monitor_interval);
    }
  }

  // Records how a container ended (Teardown's part of what Supervise does for exits).
  void RecordStop(Container& c, const runtime::ContainerState& st, bool killed) {
    if (c.stopped) return;
    c.stopped = true;
    RecordFinished(c, agent_.clock_.Now());
    c.exit_code = st.exit_code;
    // A container started by an earlier agent is no child of this one, so the runtime cannot tell
    // its exit status; a SIGKILL it did not survive is 137 all the same.
    if (!c.exit_code && killed) c.exit_code = 128 + SIGKILL;
    if (!c.exit_code) c.reason = std::string(kUnknownExit);
    if (st.oom_killed) c.reason = std::string(kOomReason);
  }

  // Stops every live container in the reverse of the dependsOn order (ECS: "When a dependency is
  // defined for container startup, for container shutdown it is reversed"): a container gets
  // SIGTERM once every container that depends on it has stopped, and SIGKILL if it is still alive
  // its stopTimeout later (on the agent's clock, so tests drive it). A dependency cycle (refused at
  // registration) cannot hold it up: when nothing is stopping, every container left gets SIGTERM.
  // False if abandoned.
  bool StopContainers() {
    const size_t n = containers_.size();
    std::vector<bool> done(n, false);
    std::vector<std::optional<TimePoint>> termed(n);
    auto dependants_done = [&](size_t i) {
      for (size_t j = 0; j < n; ++j)
        for (const auto& dep : containers_[j].depends_on)
          if (j != i && dep.first == containers_[i].name && !done[j]) return false;
      return true;
    };
    while (true) {
      if (abandoned()) return false;
      const TimePoint now = agent_.clock_.Now();
      // Settle what has ended (or never ran: created only, or not there at all).
      for (size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        Container& c = containers_[i];
        auto st = agent_.runtime_.State(c.id);
        if (!st.ok()) {
          done[i] = true;
          continue;
        }
        c.created = true;
        if (st->status == runtime::ContainerStatus::kRunning) continue;
        if (st->status == runtime::ContainerStatus::kStopped) RecordStop(c, *st, false);
        done[i] = true;
      }
      std::optional<size_t> watch;  // a stopping container to wait on
      bool any_left = false;
      for (size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        any_left = true;
        Container& c = containers_[i];
        if (!termed[i] && dependants_done(i)) {
          agent_.runtime_.Kill(c.id, SIGTERM).IgnoreError();
          termed[i] = now;
        }
        if (termed[i] && now >= *termed[i] + c.stop_timeout) {
          bool killed = agent_.runtime_.Kill(c.id, SIGKILL).ok();
          auto st = agent_.runtime_.Wait(c.id, std::chrono::seconds(5));
          if (st.ok() && st->status == runtime::ContainerStatus::kStopped) RecordStop(c, *st, killed);
          done[i] = true;
          continue;
        }
        if (termed[i] && !watch) watch = i;
      }
      if (!any_left) return true;
      if (!watch) {
        for (size_t i = 0; i < n; ++i)
          if (!done[i] && !termed[i]) {
            agent_.runtime_.Kill(containers_[i].id, SIGTERM).IgnoreError();
            termed[i] = now;
          }
        continue;
      }
      // Wait on one stopping container (a real runtime returns as soon as it exits), at most
      // until its deadline or one monitor interval.
      const Container& w = containers_[*watch];
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*termed[*watch] + w.stop_timeout - now);
      auto slice = std::clamp(left, std::chrono::milliseconds(0), agent_.options_.monitor_interval);
      const auto asked = std::chrono::steady_clock::now();
      auto waited = agent_.runtime_.Wait(w.id, slice);
      if (waited.ok() && waited->status == runtime::ContainerStatus::kStopped) continue;  // settled above
      // Still running: a runtime whose Wait returns early (the fake) must not make this spin.
      SleepUnlessAbandoned(slice - std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - asked));
    }
  }

  // Whether every essential container still runs, as the runtime says (so also for a task
  // re-adopted mid-teardown): the task may still be serving. Otherwise nothing is left to drain.
  bool EssentialsRunning() {
    bool any = false;
    for (const auto& c : containers_) {
      if (!c.essential) continue;
      auto st = agent_.runtime_.State(c.id);
      if (!st.ok() || st->status != runtime::ContainerStatus::kRunning) return false;
      any = true;
    }
    return any;
  }

  // Drain before stop (docs/contracts/task.md "Drain before stop"): keeps the task in DEACTIVATING
  // while the edges that route to it drain it, asking the control plane (Control::AwaitDrain, up to
  // kMaxDrainAsk a time) until it says go — unless an essential container has exited already
  // (nothing is served), the task is no longer this agent's, or AgentOptions::max_drain_wait
  // passed. An answer the control plane cannot give (Unavailable) is asked again a second later,
  // for at most kMaxDrainLease since its last answer (no hold outlives that); a refusal ends the
  // wait. Logs how long the task was held. False if abandoned (the node stopping: the task stays
  // DEACTIVATING, and the next agent asks again, its first ask still counting).
  bool AwaitDrain() {
    if (orphaned() || !EssentialsRunning()) return true;
    using steady = std::chrono::steady_clock;
    const steady::time_point began = steady::now();
    steady::time_point answered = began;  // the control plane's last answer
    const TimePoint held_from = agent_.clock_.Now();
    bool held = false;  // an answer said to wait
    std::string outcome;
    for (;;) {
      if (abandoned()) return false;
      if (orphaned()) {
        outcome = "the task is no longer assigned to this agent";
        break;
      }
      const auto left = agent_.options_.max_drain_wait - (steady::now() - began);
      if (left <= steady::duration::zero()) {
        outcome = fmt::format("the agent's own bound of {} s", agent_.options_.max_drain_wait.count());
        break;
      }
      const auto ask = std::min<std::chrono::milliseconds>(
          protocol::kMaxDrainAsk, std::chrono::duration_cast<std::chrono::milliseconds>(left) + std::chrono::milliseconds(1));
      const steady::time_point asked = steady::now();
      StatusOr<protocol::DrainAnswer> a =
          agent_.control_.AwaitDrain(agent_.options_.agent_id, spec_, ask, drain_stop_.get_token());
      if (a.ok()) {
        answered = steady::now();
        if (a->go()) {
          outcome = protocol::DrainVerdictName(a->verdict);
          break;
        }
        if (!held)
          fmt::print(stderr, "paddock: agent: task {}: held in DEACTIVATING while {} edge(s) drain it\n", spec_.task_arn,
                     a->holds);
        held = true;
        // "Wait" at once (a control plane with no wait slot free): a second before asking again.
        if (answered - asked < std::chrono::milliseconds(100) && ask >= std::chrono::seconds(1))
          SleepUnlessAbandoned(std::chrono::seconds(1));
        continue;
      }
      if (abandoned()) return false;
      if (a.status().code() == StatusCode::kAborted) continue;  // orphaned meanwhile: said above
      if (a.status().code() == StatusCode::kUnavailable && steady::now() - answered < protocol::kMaxDrainLease) {
        SleepUnlessAbandoned(std::chrono::seconds(1));
        continue;
      }
      outcome = fmt::format("the control plane did not say ({})", a.status().ToString());
      break;
    }
    if (held || outcome != protocol::DrainVerdictName(protocol::DrainVerdict::kNoHolds))
      fmt::print(stderr, "paddock: agent: task {}: drained for {:.3f} s before its stop ({})\n", spec_.task_arn,
                 std::chrono::duration<double>(agent_.clock_.Now() - held_from).count(), outcome);
    return true;
  }

  // Stops whatever runs, removes what was made and reports the task down to STOPPED. A nullopt
  // stop code keeps what StopTask recorded. Safe on a task that was never (or partly) started:
  // everything is found by name and what is missing is skipped. Between DEACTIVATING and
  // STOPPING the task is held while edges drain it (AwaitDrain). A DEACTIVATING report that fails
  // (refused, or the control plane unreachable) does not leave the containers up until a later
  // pass: the task is stopped at once, without the drain wait (it needs the control plane that
  // just failed), and STOPPING carries the stop code and reason DEACTIVATING did not deliver.
  void Teardown(std::optional<std::string> stop_code, std::optional<std::string> reason) {
    TaskStateChange deactivating = Change("DEACTIVATING");
    deactivating.stopped_reason = reason;
    deactivating.stop_code = stop_code;
    TaskStateChange stopping = Change("STOPPING");
    if (Report(std::move(deactivating))) {
      if (!AwaitDrain()) return DrainChecks();  // abandoned
    } else {
      if (abandoned()) return DrainChecks();  // the node is stopping: the next agent re-adopts it
      stopping.stopped_reason = std::move(reason);
      stopping.stop_code = std::move(stop_code);
    }
    Report(std::move(stopping));
    if (!StopContainers()) return DrainChecks();  // abandoned
    DrainChecks();
    RemoveTaskResources();
    Report("DEPROVISIONING");
    if (!agent_.options_.logs_dir.empty()) {
      DetachLogs();
      // `paddock logs --follow` stops at this marker; RemoveExpiredLogs ages the directory out by it.
      if (Status s = MarkLogsStopped(LogDir()); !s.ok()) Log(spec_.task_arn, "marking the logs stopped", s);
    }
    TaskStateChange stopped = Change(kStopped);
    for (const auto& c : containers_) stopped.containers.push_back(ContainerChange(c.name, kStopped, c.exit_code, c.reason));
    if (Report(std::move(stopped))) reported_stopped_ = true;
  }

  // Removes what a launch of the task made, each found by name (so also what a launch that failed
  // half-way, or an earlier agent, made; what is missing is skipped): its containers (deleted
  // whatever their state), metadata endpoints, files and cgroup, published ports and network.
  void RemoveTaskResources() {
    for (auto& c : containers_) {
      Status s = agent_.runtime_.Delete(c.id, runtime::ForceDelete::kYes);
      if (!s.ok() && s.code() != StatusCode::kNotFound) Log(spec_.task_arn, fmt::format("deleting container {}", c.name), s);
    }
    if (agent_.options_.metadata) agent_.options_.metadata->UnregisterTask(spec_.task_arn);
    if (Status s = CleanUpTask(agent_.runtime_, TaskFilesOpts(), task_id_); !s.ok())
      Log(spec_.task_arn, "removing the task's files and cgroup", s);
    if ((mode_ == NetMode::kBridge || mode_ == NetMode::kHost) && agent_.options_.task_networks) {
      // By task id, so also for a task whose launch failed half-way or that an earlier agent ran.
      if (Status s = net::UnpublishPorts(agent_.options_.network, task_id_); !s.ok())
        Log(spec_.task_arn, "removing the task's published ports", s);
      if (mode_ == NetMode::kBridge) {
        if (Status s = net::DeleteBridgeTaskNetwork(agent_.options_.network, task_id_); !s.ok())
          Log(spec_.task_arn, "deleting the task network", s);
      }
    }
    if (mode_ == NetMode::kAwsvpc && spec_.network && agent_.options_.task_networks) {
      // By task id when network_ is unset (a launch that failed half-way, a task an earlier agent ran).
      if (Status s = agent_.vpcs_->Detach(spec_.scope, task_id_, network_); !s.ok())
        Log(spec_.task_arn, "deleting the task network", s);
      network_.reset();
    }
  }

  Agent& agent_;
  const LaunchSpec spec_;
  std::string task_id_;
  json::object overrides_;
  std::vector<Container> containers_;  // touched by the driver thread only
  std::optional<net::TaskNetwork> network_;
  std::string metadata_network_;   // awsvpc: the metadata endpoint's listener (VpcNetworks)
  bool dns_served_ = false;        // awsvpc: its VPC's DNS server serves it (VpcNetworks)
  NetMode mode_ = NetMode::kNone;  // from Parse
  std::string task_ip_;            // awsvpc: its address; bridge: its bridge-mode address
  TaskFiles task_files_;  // from PrepareTaskFiles

  // The metadata endpoint's view (read by the provider on the service's threads).
  std::mutex facts_mu_;
  metadata::TaskFacts facts_;  // GUARDED_BY(facts_mu_); task_json is filled per request
  std::map<std::string, metadata::ContainerEndpoint> endpoints_;  // by container name; driver thread only
  // The task role's credentials (issue 11); set with the first container, before the endpoint can
  // call it, and unregistered (UnregisterTask) before the driver goes.
  std::optional<TaskCredentialsCache> credentials_;
  std::optional<metadata::CredentialsEndpoint> credentials_endpoint_;  // driver thread only

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;  // GUARDED_BY(mu_)
  bool abandon_ = false;         // GUARDED_BY(mu_)
  bool orphaned_ = false;        // GUARDED_BY(mu_)
  std::stop_source drain_stop_;  // requested by Abandon and Orphan: ends a drain wait
  std::atomic<bool> done_{false};
  std::atomic<bool> reported_stopped_{false};
  std::thread thread_;  // last: started once everything above is constructed
};

Agent::Agent(Control& control, images::ImageStore& images, runtime::Runtime& runtime, AgentOptions options,
             Clock& clock)
    : control_(control),
      images_(images),
      runtime_(runtime),
      options_(std::move(options)),
      clock_(clock),
      vpcs_(std::make_unique<VpcNetworks>(control_, VpcOptions(options_))) {}

Agent::~Agent() { Stop(); }

VpcNetworks::Options Agent::VpcOptions(const AgentOptions& o) {
  return VpcNetworks::Options{.agent_id = o.agent_id, .network = o.network, .metadata = o.metadata, .dns = o.dns,
                              .linger = o.vpc_linger};
}

Status Agent::Start() {
  if (options_.instance.empty() || options_.instance.size() > 8 ||
      !std::all_of(options_.instance.begin(), options_.instance.end(),
                   [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }))
    return InvalidArgument(fmt::format("agent instance '{}' must be 1 to 8 of [a-z0-9]", options_.instance));
  if (!options_.logs_dir.empty()) {
    LogPump::Options pump;
    pump.max_bytes = options_.max_log_bytes;
    log_pump_ = std::make_unique<LogPump>(pump);
    RETURN_IF_ERROR(log_pump_->Start());
  }
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
  // After the drivers: none attaches or detaches any more. Running containers keep their FIFOs.
  if (log_pump_) log_pump_->Stop();
  // Running tasks keep theirs; a VPC namespace left lingering would have no pass to remove it.
  if (options_.task_networks) vpcs_->RemoveUnused();
}

void Agent::Notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

Status Agent::EnsureHostNetwork() {
  std::lock_guard lock(bridge_mu_);
  if (!bridge_ready_) {
    RETURN_IF_ERROR(net::EnsureHostFirewall(options_.network));
    RETURN_IF_ERROR(net::EnsureForwarding(options_.network));
    bridge_ready_ = true;
  }
  return OkStatus();
}

Status Agent::EnsureBridgeNetwork() {
  std::lock_guard lock(bridge_mu_);
  if (!bridge_network_ready_) {
    RETURN_IF_ERROR(net::EnsureBridgeNetwork(options_.network));
    bridge_network_ready_ = true;
  }
  return OkStatus();
}

AgentOptions NodeAgentOptions(std::string agent_id, std::string instance, const std::string& state_dir,
                              metadata::MetadataService* metadata, HostAccess host_access) {
  AgentOptions o;
  o.network.netns_prefix = NetnsPrefixFor(instance, agent_id);
  o.network.state_dir = std::string(kHostNetStateDir);
  o.container_owner = agent_id;
  o.agent_id = std::move(agent_id);
  o.instance = std::move(instance);
  o.metadata = metadata;
  o.logs_dir = (std::filesystem::path(state_dir) / "logs").string();
  o.tasks_dir = (std::filesystem::path(state_dir) / "tasks").string();
  o.host_access = host_access;
  return o;
}

std::string NetnsPrefixFor(std::string_view instance, std::string_view agent_id) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : instance) h = (h ^ c) * 16777619u;
  h = (h ^ '/') * 16777619u;
  for (unsigned char c : agent_id) h = (h ^ c) * 16777619u;
  return fmt::format("p{:05x}-", h & 0xfffffu);
}

namespace {

// <state_dir>/metadata.key: 32 random bytes, made on first use.
StatusOr<std::string> MetadataKey(const std::string& state_dir) {
  const std::filesystem::path path = std::filesystem::path(state_dir) / "metadata.key";
  {
    std::ifstream in(path, std::ios::binary);
    std::string key((std::istreambuf_iterator<char>(in)), {});
    if (key.size() >= 32) return key;
  }
  std::ifstream random("/dev/urandom", std::ios::binary);
  std::string key(32, '\0');
  if (!random.read(key.data(), static_cast<std::streamsize>(key.size()))) return Unavailable("cannot read /dev/urandom");
  const std::string tmp = path.string() + ".tmp";
  {
    // Created 0600 from the start, never through a link: nobody gets a handle on the key.
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
    const bool written = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!written) return Unavailable(fmt::format("cannot write {}", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Unavailable(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  return key;
}

}  // namespace

std::unique_ptr<metadata::MetadataService> StartMetadataService(const std::string& state_dir) {
  if (geteuid() != 0) return nullptr;
  auto warn = [](const Status& s) {
    fmt::print(stderr, "paddock: warning: no task metadata endpoint: {}\n", s.ToString());
    return nullptr;
  };
  auto key = MetadataKey(state_dir);
  if (!key.ok()) return warn(key.status());
  metadata::MetadataServiceOptions o;
  // For bridge- and host-mode tasks, which reach the host; awsvpc tasks are served inside their
  // VPC namespaces (MetadataService::ServeNetwork).
  o.interface = "lo";
  o.id_key = *key;
  auto service = std::make_unique<metadata::MetadataService>(o);
  Status s = service->Start();
  if (!s.ok()) {
    // Port 80 of the address is another Paddock's on this host (or refused): any port will do.
    o.port = 0;
    service = std::make_unique<metadata::MetadataService>(o);
    if (Status again = service->Start(); !again.ok()) return warn(again);
    fmt::print(stderr, "paddock: task metadata endpoint on {}:{} ({}:80: {})\n", o.host, service->port(), o.host,
               s.message());
  }
  return service;
}

void Agent::CleanUpLeftovers(const std::set<std::string>& assigned) {
  if (!options_.task_networks) return;
  const net::NetworkOptions& o = options_.network;
  auto log = [](std::string_view what, const std::string& id, const Status& s) {
    if (!s.ok()) fmt::print(stderr, "paddock: agent: leftover of task {}: {}: {}\n", id, what, s.ToString());
  };
  std::set<std::string> namespaces;
  if (auto ns = net::ListTaskNamespaces(o); ns.ok())
    for (const auto& n : *ns) namespaces.insert(net::TaskIdOfNamespace(o, n));
  if (auto published = net::ListPublished(o); published.ok()) {
    std::set<std::string> done;
    for (const auto& p : *published)
      if (!assigned.count(p.task_id) && done.insert(p.task_id).second)
        log("removing its published ports", p.task_id, net::UnpublishPorts(o, p.task_id));
  }
  // The address file may be shared with other agents of the host: only addresses whose namespace
  // is under this agent's prefix are this agent's.
  if (!o.state_dir.empty()) {
    if (auto held = net::ListBridgeAddresses(o); held.ok()) {
      for (const auto& [id, ip] : *held) {
        if (assigned.count(id) || !namespaces.count(id)) continue;
        log("deleting its bridge-mode network", id, net::DeleteBridgeTaskNetwork(o, id));
        namespaces.erase(id);
      }
    }
  }
  for (const auto& id : namespaces) {
    if (id.empty() || assigned.count(id)) continue;
    // Its veth and host route are found in whichever VPC namespace holds them.
    auto tn = net::TaskNetworkFor(o, id, 0);
    log("deleting its network", id, tn.ok() ? net::DeleteTaskNetwork(o, *tn) : tn.status());
  }
  // VPC namespaces no agent of the host has a task in any more (after a crash, or left lingering):
  // at the first pass only. Later, a namespace without tasks may be one an agent has just prepared
  // for a task still resolving its images (with its policy and metadata listener); VpcNetworks
  // removes its own once they have lingered.
  if (last_sweep_) return;
  if (auto vpcs = net::ListVpcNamespaces(o); vpcs.ok())
    for (const auto& name : *vpcs)
      if (auto gone = net::RemoveVpcNetworkIfUnused(o, name); !gone.ok()) log("removing the VPC namespace", name, gone.status());
}

size_t Agent::Sweep(const std::set<std::string>& keep) {
  if (options_.container_owner.empty()) return 0;
  auto containers = runtime_.List();
  if (!containers.ok()) {
    fmt::print(stderr, "paddock: agent: listing containers: {}\n", containers.status().ToString());
    return 0;
  }
  const auto plan = PlanSweep(*containers, options_.container_owner, keep);
  TaskFilesOptions files;
  files.tasks_dir = options_.tasks_dir;
  files.host_access = options_.host_access;
  for (const auto& [task_id, ids] : plan) {
    fmt::print(stderr, "paddock: agent: task {} is not assigned to this agent: removing its {} container(s)\n", task_id,
               ids.size());
    for (const auto& id : ids) {
      Status s = runtime_.Delete(id, runtime::ForceDelete::kYes);
      if (!s.ok() && s.code() != StatusCode::kNotFound)
        fmt::print(stderr, "paddock: agent: leftover container {}: {}\n", id.str(), s.ToString());
    }
  }
  // The networks go next (CleanUpLeftovers, called by Reconcile after this), then the files.
  for (const auto& [task_id, ids] : plan) {
    if (Status s = CleanUpTask(runtime_, files, task_id); !s.ok())
      fmt::print(stderr, "paddock: agent: leftover task {}: removing its files: {}\n", task_id, s.ToString());
    if (!options_.logs_dir.empty())
      MarkLogsStopped(std::filesystem::path(options_.logs_dir) / task_id).IgnoreError();
  }
  return plan.size();
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
  auto assigned = control_.Assignments(options_.agent_id);
  if (!assigned.ok()) {
    fmt::print(stderr, "paddock: agent: reading assignments: {}\n", assigned.status().ToString());
    return;
  }
  std::set<std::string> listed;
  std::set<Scope> new_vpcs;  // of awsvpc tasks about to start
  for (auto& spec : *assigned) {
    listed.insert(spec.task_arn);
    if (finished_.count(spec.task_arn)) continue;
    auto it = drivers_.find(spec.task_arn);
    if (it != drivers_.end()) {
      // A task whose record says STOPPED while its driver runs was stopped behind the agent's
      // back: its containers go too, and the STOPPED report confirms it.
      if (spec.desired_status == kStopped || spec.last_status == kStopped) it->second->RequestStop();
      continue;
    }
    // Also a task caught mid-launch by a restart: it is launched again (Driver::Relaunch).
    if (spec.network && Rank(spec.last_status) < Rank("RUNNING") && spec.desired_status != kStopped)
      new_vpcs.insert(spec.scope);
    std::string arn = spec.task_arn;
    drivers_.emplace(std::move(arn), std::make_unique<Driver>(*this, std::move(spec)));
  }
  // What the control plane no longer lists does not run here (agent.h, "Reconciling").
  for (auto& [arn, d] : drivers_)
    if (!listed.count(arn)) d->Orphan();
  // While the new drivers resolve their images: their VPCs' namespaces and policies (which list
  // them), off the drivers' path to RUNNING.
  if (options_.task_networks)
    for (const Scope& scope : new_vpcs) vpcs_->Prepare(scope);
  // Security-group changes reach running tasks within a pass (agent/vpc_networks.h).
  if (options_.task_networks) vpcs_->Refresh();
  std::erase_if(finished_, [&](const std::string& arn) { return !listed.count(arn); });
  // Leftovers: at the first answer, then every sweep_interval.
  std::set<std::string> keep;
  for (const auto& arn : listed) keep.insert(arn.substr(arn.rfind('/') + 1));
  for (const auto& [arn, d] : drivers_) keep.insert(arn.substr(arn.rfind('/') + 1));
  const TimePoint now = clock_.Now();
  if (!last_sweep_ || now - *last_sweep_ >= options_.sweep_interval) {
    const size_t left = Sweep(keep);
    CleanUpLeftovers(keep);  // networks of unlisted tasks, once their containers are gone
    last_sweep_ = now;
    idle_ = listed.empty() && drivers_.empty() && left == 0;
  } else if (!listed.empty() || !drivers_.empty()) {
    idle_ = false;
  }
  // Logs of stopped tasks: removed keep_logs after their STOPPED marker, i.e. about when
  // ReapStopped removes the task record (hooking the reaper itself would put file-system work in
  // the task owner; this keeps it in the agent, which wrote the files).
  if (!options_.logs_dir.empty()) RemoveExpiredLogs(options_.logs_dir, options_.keep_logs);
}

}  // namespace paddock::agent
