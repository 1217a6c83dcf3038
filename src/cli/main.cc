// `paddock`: the one binary. Subcommands: server, up, down, doctor, agent, admin, image, logs.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "agent/images/image_store.h"
#include "agent/images/skopeo_puller.h"
#include "cli/account_deletion.h"
#include "cli/agent_command.h"
#include "cli/deploy_command.h"
#include "cli/edge_command.h"
#include "cli/fence_watch.h"
#include "cli/config.h"
#include "cli/host_checks.h"
#include "cli/node.h"
#include "store/dump.h"
#include "cli/state_lock.h"
#include "cli/stop_tasks.h"
#include "common/private_files.h"
#include "vpc/default_vpc.h"
#include "store/sqlite/sqlite_store.h"
#include "cli/schemas.h"

namespace paddock::cli {
namespace {

int Fail(const Status& s) {
  fmt::print(stderr, "paddock: {}\n", s.message().empty() ? s.ToString() : s.message());
  return 1;
}

// Adds the server flags; each overrides the config file.
void AddServerFlags(CLI::App* cmd, ServerConfig& c, std::string& config_file) {
  cmd->add_option("--config", config_file, "TOML file with any of: listen, state_dir, accept_any_credentials, "
                                           "default_account, api_rate_limits, region, short_timings, and an [images] table "
                                           "(insecure_registries, insecure_loopback, pull_timeout_seconds, "
                                           "auth_file), agent_long_polls, agent_timeout_seconds, "
                                           "[[ec2_instance]] tables (cluster, cpu, memory), a [scheduler] table "
                                           "(settle_seconds, resync_seconds, backoff_base_seconds, "
                                           "backoff_cap_seconds, lease_seconds) and a [quotas] table "
                                           "(services_per_cluster, tasks_per_service); flags override it");
  cmd->add_option("--listen", c.listen, "HOST:PORT to serve the AWS APIs on (default 127.0.0.1:4566; port 0 picks one)");
  cmd->add_option("--state-dir", c.state_dir, "Directory holding the store and generated credentials (default ./.paddock)");
  cmd->add_option("--store", c.store_url,
                  "postgres://USER@HOST:PORT/DB: keep the control plane's state in that PostgreSQL database instead of "
                  "the state directory's SQLite file (config: [store] url)");
  cmd->add_flag("--accept-any-credentials", c.accept_any_credentials,
                "Emulator mode: accept any well-formed SigV4 request without checking its signature; the account is "
                "the access key id when it is 12 digits, otherwise --default-account");
  cmd->add_option("--default-account", c.default_account,
                  "Account for --accept-any-credentials requests whose key is not a 12-digit id (default 000000000000)");
  cmd->add_option("--api-rate-limits", c.api_rate_limits,
                  "aws: apply AWS's documented per-account token buckets (ThrottlingException when exceeded); off: none "
                  "(default off)")
      ->check(CLI::IsMember({"aws", "off"}));
  cmd->add_option("--region", c.region, "Region written into the generated AWS profile (default us-east-1)");
  cmd->add_flag("--short-timings", c.short_timings,
                "Test mode: RegisterTaskDefinition accepts timings below ECS's minimums (restartAttemptPeriod from 1 s, "
                "healthCheck interval from 1 s and timeout from 1 s, a Fargate startTimeout/stopTimeout from 0 s), so "
                "tests of restarts and health checks need not wait a minute (default off)");
  cmd->add_flag("--access-log", c.access_log,
                "Print one line per API request: time, account, service.action, HTTP status, error code, latency "
                "(default off)");
}

// Applies the config file first, then re-parses flags so explicit flags win.
Status ResolveConfig(CLI::App* cmd, ServerConfig& c, const std::string& config_file) {
  if (config_file.empty()) return ValidateConfig(c);
  ServerConfig from_file;
  RETURN_IF_ERROR(LoadConfigFile(config_file, from_file));
  // Everything comes from the file (file-only tables included), except what a flag set explicitly.
  auto explicitly = [&](const char* flag) { return cmd->count(flag) > 0; };
  if (explicitly("--listen")) from_file.listen = c.listen;
  if (explicitly("--state-dir")) from_file.state_dir = c.state_dir;
  if (explicitly("--store")) from_file.store_url = c.store_url;
  if (explicitly("--accept-any-credentials")) from_file.accept_any_credentials = c.accept_any_credentials;
  if (explicitly("--default-account")) from_file.default_account = c.default_account;
  if (explicitly("--api-rate-limits")) from_file.api_rate_limits = c.api_rate_limits;
  if (explicitly("--region")) from_file.region = c.region;
  if (explicitly("--access-log")) from_file.access_log = c.access_log;
  if (explicitly("--short-timings")) from_file.short_timings = c.short_timings;
  c = std::move(from_file);
  return ValidateConfig(c);
}

// Blocks SIGINT, SIGTERM and SIGUSR1 (`paddock down`'s request) in every thread started after
// this, so only RunServer's sigwait sees them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

constexpr std::string_view kDownReason = "Task stopped: paddock down";
constexpr std::string_view kUpStoppedReason =
    "Task stopped: paddock up was stopped (pass --keep-tasks to keep tasks running)";

// The block a server prints at start when the host cannot run containers, or runs them less well
// (cli/host_checks.h): every failure and warning, with its fix.
void PrintHostBlock(const std::vector<HostCheck>& checks) {
  std::vector<const HostCheck*> shown;
  for (const HostCheck& c : checks)
    if (c.state == CheckState::kFail || c.state == CheckState::kWarn) shown.push_back(&c);
  if (shown.empty()) return;
  if (!CanRunContainers(checks))
    fmt::print("\nThis host cannot run containers. The API works, but every task stops at once (stopCode "
               "TaskFailedToStart) until this is fixed:\n");
  else
    fmt::print("\nThis host runs containers, with warnings:\n");
  for (const HostCheck* c : shown) fmt::print("  {}\n", FormatCheck(*c));
  fmt::print("`paddock doctor` runs every check.\n");
}

// After a stop signal: stops every task and waits for the agents' word (cli/stop_tasks.h); a
// second SIGINT or SIGTERM ends the wait and leaves the rest running.
void StopTasksBeforeExit(Node& node, const sigset_t& signals, std::string_view reason) {
  StopTasksOptions o;
  o.reason = std::string(reason);
  o.progress = [](const std::string& line) {
    fmt::print("paddock: {} (Ctrl-C again to leave them running)\n", line);
    std::fflush(stdout);
  };
  o.interrupted = [&signals] {
    const timespec now{0, 0};
    const int again = sigtimedwait(&signals, nullptr, &now);
    return again == SIGINT || again == SIGTERM;
  };
  auto r = StopEveryTask(node, o);
  if (!r.ok()) {
    fmt::print("paddock: stopping the tasks: {}\n", r.status().ToString());
    return;
  }
  fmt::print("paddock: {} task(s) stopped\n", r->confirmed);
  if (r->interrupted || r->timed_out)
    fmt::print("paddock: {}; {} task(s) left running: {}. The next start re-adopts them and stops them; `paddock "
               "down` stops them now\n",
               r->interrupted ? "interrupted" : "gave up waiting", r->left.size(), DescribeTasks(r->left));
  else if (!r->left.empty())
    fmt::print("paddock: {} task(s) are marked to stop but no agent here can confirm it now (a `paddock agent` stops "
               "its tasks when it next reaches a server): {}\n",
               r->left.size(), DescribeTasks(r->left));
}

// `paddock up`'s edge (cli/edge_command.h): on by default, off with --no-edge.
struct UpEdgeFlags {
  bool disabled = false;
  bool no_controller = false;  // --no-controller: no deploy controller
  std::string web = "127.0.0.1:8000";
  std::string api = "127.0.0.1:8081";
  std::string file;
  HttpProviderFlags http;                // the http provider; none when its endpoint is empty
  std::vector<std::string> http_headers;  // NAME=VALUE
  std::string websecure;  // none when empty
  bool redirect_https = false;
  int64_t drain_timeout_seconds = 30;
};

// Before anything starts: --edge-http-header's NAME=VALUE words become the provider's headers (as
// Traefik's --providers.http.headers.NAME checks them), and the http provider's flags are checked.
Status CheckUpEdgeFlags(UpEdgeFlags& flags) {
  std::vector<std::string> words;
  for (const std::string& h : flags.http_headers) {
    const size_t eq = h.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument(fmt::format("--edge-http-header '{}' is not NAME=VALUE", h));
    words.push_back(fmt::format("--providers.http.headers.{}", h));
  }
  if (Status s = paddock::edge::TakeHttpHeaderFlags(words, flags.http.headers); !s.ok())
    return InvalidArgument(fmt::format("--edge-http-header: {}", s.message()));
  paddock::edge::EdgeOptions scratch;
  return flags.http.Apply(scratch, kUpHttpFlagNames);
}

int RunServer(const ServerConfig& config, bool up, bool keep_tasks, const UpEdgeFlags& edge_flags = {}) {
  sigset_t signals = BlockStopSignals();
  // One server (or agent) per state directory (cli/state_lock.h), refused before anything opens.
  if (Status s = paddock::MakePrivateDir(config.state_dir); !s.ok()) return Fail(s);
  auto lock = StateDirLock::Acquire(config.state_dir, up ? "up" : "server");
  if (!lock.ok()) return Fail(lock.status());
  auto node = Node::Open(config);
  if (!node.ok()) return Fail(node.status());
  if (up) {  // before Start: in-process EC2 instances default to this account (cli/node_owner.h)
    if (auto me = (*node)->BootstrapAccount(); !me.ok()) return Fail(me.status());
  }
  auto port = (*node)->Start();
  if (!port.ok()) return Fail(port.status());
  std::unique_ptr<InProcessEdge> edge;  // `paddock up`'s, started once the API serves
  std::unique_ptr<InProcessController> controller;  // and its deploy controller, once the edge runs
  auto host_port = SplitListen(config.listen);
  // The address clients should use: a wildcard listen address is reached over loopback; an
  // IPv6 literal goes in brackets.
  std::string host = host_port->first;
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::string endpoint = fmt::format("http://{}:{}", host, *port);
  if (up) {
    auto boot = Bootstrap(**node, config, endpoint, /*update_home=*/true);
    if (!boot.ok()) return Fail(boot.status());
    fmt::print("Paddock is running.\n");
    fmt::print("  endpoint     {}\n", endpoint);
    fmt::print("  state        {}\n", config.state_dir);
    fmt::print("  account      {}\n", boot->account);
    fmt::print("  profile      {}\n", boot->profile);
    fmt::print("  credentials  {} (profile '{}'; config in {})\n", boot->credentials_path, boot->profile,
               boot->config_path);
    for (const auto& note : boot->notes) fmt::print("  note         {}\n", note);
    if (!edge_flags.disabled) {
      auto me = (*node)->BootstrapAccount();
      InProcessEdgeOptions eo;
      eo.web = edge_flags.web;
      eo.api = edge_flags.api;
      eo.file = edge_flags.file;
      eo.http = edge_flags.http;
      eo.websecure = edge_flags.websecure;
      eo.redirect_to_websecure = edge_flags.redirect_https;
      eo.drain_timeout = std::chrono::seconds(edge_flags.drain_timeout_seconds);
      eo.api_host = host_port->first == "0.0.0.0" ? "127.0.0.1" : host_port->first;
      eo.api_port = *port;
      if (me.ok()) {
        eo.credentials = {me->access_key_id, me->secret_access_key};
        eo.scope = paddock::Scope{me->account, paddock::Region(config.region)};
      }
      auto started = me.ok() ? InProcessEdge::Start(eo, &(*node)->drain_holds())
                             : StatusOr<std::unique_ptr<InProcessEdge>>(me.status());
      if (started.ok()) {
        edge = std::move(*started);
        (*node)->SetTaskListener([e = edge.get()](const paddock::Scope&) { e->Wake(); });
        const std::string api_host = eo.api.substr(0, eo.api.rfind(':'));
        fmt::print("  edge         http://{}:{} (API http://{}:{}/api/overview, dashboard http://{}:{}/dashboard/)\n",
                   eo.web.substr(0, eo.web.rfind(':')), edge->web_port(), api_host, edge->api_port(), api_host,
                   edge->api_port());
        if (!eo.websecure.empty())
          fmt::print("  edge (TLS)   https://{}:{}{}\n", eo.websecure.substr(0, eo.websecure.rfind(':')),
                     edge->websecure_port(), eo.redirect_to_websecure ? " (web redirects to it)" : "");
      } else {
        fmt::print("  note         the edge did not start: {} (--edge-web/--edge-api choose its addresses, "
                   "--no-edge turns it off)\n",
                   started.status().message());
      }
    }
    if (!edge_flags.no_controller) {
      auto me = (*node)->BootstrapAccount();
      InProcessControllerOptions co;
      co.state_dir = config.state_dir;
      co.api_host = host_port->first == "0.0.0.0" ? "127.0.0.1" : host_port->first;
      co.api_port = *port;
      co.region = config.region;
      if (edge) {
        co.edge_api_port = edge->api_port();
        co.edge_web_port = edge->web_port();
      }
      auto started = me.ok() ? StatusOr<bool>(true) : StatusOr<bool>(me.status());
      if (me.ok()) {
        co.credentials = {me->access_key_id, me->secret_access_key};
        co.account = me->account.str();
        const paddock::vpc::DefaultVpc vpc =
            paddock::vpc::DefaultVpcFor(paddock::Scope{me->account, paddock::Region(config.region)});
        for (const auto& subnet : vpc.subnets) co.subnets.push_back(subnet.id);
        co.security_groups.push_back(vpc.security_group_id);
        co.vpc_id = vpc.vpc_id;
        // D8: the identity sidecar's image from this host's busybox; without one, identity is off
        // (and a spec asking for tokens is refused, saying why).
        const std::string rootfs = config.state_dir + "/identity-agent";
        Status image = WriteIdentityAgentRootfs(rootfs);
        if (image.ok()) image = (*node)->ImportRootfs(rootfs, std::string(kIdentityAgentImage));
        if (image.ok()) {
          co.identity_agent_image = std::string(kIdentityAgentImage);
        } else {
          fmt::print("  note         workload identity is off: {}\n", image.message());
        }
        co.ticked = [feed = &(*node)->change_feed(), account = me->account] {
          feed->Publish(account, paddock::console::ChangeKind::kDeploy);  // the console's deploy views
        };
        auto c = InProcessController::Start(co);
        if (c.ok()) {
          controller = std::move(*c);
          (*node)->SetControllerDoor([c = controller.get()](const paddock::http::Request& r) { return c->Door(r); });
        } else {
          started = c.status();
        }
      }
      if (controller) {
        fmt::print("  deploy       {} (`paddock deploy` finds it; docs/deploy.md)\n", controller->url());
      } else {
        fmt::print("  note         the deploy controller did not start: {}\n", started.status().message());
      }
    }
    // With --endpoint-url: Debian 12's AWS CLI (2.9) ignores the profile's endpoint_url.
    fmt::print("\nTry:\n  aws --profile {} --endpoint-url {} ecs list-clusters\n\n{}\n", boot->profile, endpoint,
               keep_tasks ? "Ctrl-C stops it; its tasks keep running (--keep-tasks) until `paddock down`."
                          : "Ctrl-C stops it and its tasks (--keep-tasks keeps them running).");
    // Issue 17: the console shows the bootstrap account what has no AWS API: the edge, the
    // controller, the node's images (console/console_service.h).
    if (auto me = (*node)->BootstrapAccount(); me.ok()) {
      paddock::console::NodeParts parts;
      parts.owner = me->account;
      if (edge) parts.edge = [e = edge.get()](std::string_view path) { return e->ApiGet(path); };
      if (controller) parts.deploy = [c = controller.get()](const paddock::http::Request& r) { return c->CallApi(r); };
      (*node)->SetConsoleParts(std::move(parts));
    }
    fmt::print("  console      {}/console/ (sign in with the key in {})\n", endpoint, boot->credentials_path);
  } else {
    fmt::print("paddock server listening on {}\n", endpoint);
    fmt::print("  console      {}/console/\n", endpoint);
  }
  if (Status s = (*lock)->Publish(endpoint); !s.ok()) fmt::print(stderr, "paddock: note: {}\n", s.message());
  PrintHostBlock((*node)->host_checks());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  (*node)->SetControllerDoor(nullptr);  // no task's call reaches the controller from here on
  (*node)->SetConsoleParts({});         // nor the console's: the edge and controller go
  controller.reset();  // first: it must not act on tasks that are stopping, and it calls the API
  const std::string_view name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGUSR1 (paddock down)";
  // `paddock up` stops its tasks as a developer tool should, unless told to keep them; `paddock
  // server` keeps them for the next start to re-adopt; `paddock down` asks for them to stop.
  if (sig == SIGUSR1 || (up && !keep_tasks)) {
    fmt::print("paddock: {} received, stopping the tasks, then the server\n", name);
    std::fflush(stdout);
    StopTasksBeforeExit(**node, signals, sig == SIGUSR1 ? kDownReason : kUpStoppedReason);
  } else {
    fmt::print("paddock: {} received, stopping (tasks keep running; the next start re-adopts them, `paddock down` "
               "stops them)\n",
               name);
  }
  std::fflush(stdout);
  if (edge) {  // after the tasks' drains, before the API goes
    (*node)->SetTaskListener(nullptr);
    edge.reset();
  }
  (*node)->Stop();
  return 0;
}

// `paddock doctor`: every host check, one line each, and whether a server runs on the directory.
int RunDoctor(const std::string& state_dir, const std::string& listen) {
  HostCheckOptions o;
  o.state_dir = state_dir;
  o.listen = listen;
  o.crun = CrunBinary();
  auto holder = FindLockHolder(state_dir);
  if (holder.ok() && *holder && !(*holder)->endpoint.empty()) {
    // The port check passes when it is this directory's own server that listens there.
    const size_t colon = listen.rfind(':');
    if (colon != std::string::npos && (*holder)->endpoint.ends_with(listen.substr(colon)))
      o.listen_holder = DescribeHolder(**holder);
  }
  SystemHostProbe probe;
  const std::vector<HostCheck> checks = RunHostChecks(probe, o, CheckSet::kAll);
  fmt::print("paddock doctor: this host, for state directory {}\n", state_dir);
  int failed = 0;
  for (const HostCheck& c : checks) {
    fmt::print("  {}\n", FormatCheck(c));
    if (c.state == CheckState::kFail) ++failed;
  }
  if (holder.ok() && *holder) fmt::print("{} runs on this state directory.\n", DescribeHolder(**holder));
  if (failed == 0) {
    fmt::print("Every check passed: this host can run Paddock's containers.\n");
    return 0;
  }
  fmt::print("{} check(s) failed{}.\n", failed,
             CanRunContainers(checks) ? "" : ": tasks cannot run here until the failures marked above are fixed");
  return 1;
}

// `paddock down`: stops every task of the state directory and removes their networks — through
// its running server (asked with SIGUSR1: it stops its tasks, then exits) or, when none runs,
// here, with the node's own agents (cli/stop_tasks.h).
int RunDown(std::string state_dir, bool state_dir_given, int64_t timeout_seconds) {
  namespace fs = std::filesystem;
  if (!state_dir_given) {
    std::string note;
    auto found = DefaultStateDir(&note);
    if (!found.ok()) return Fail(found.status());
    state_dir = *found;
    if (!note.empty()) fmt::print(stderr, "paddock: {}\n", note);
  }
  std::error_code ec;
  if (!fs::exists(fs::path(state_dir) / "paddock.db", ec)) {
    fmt::print("paddock down: {} is not a Paddock state directory; nothing to stop\n", state_dir);
    return 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  auto holder = FindLockHolder(state_dir);
  if (!holder.ok()) return Fail(holder.status());
  if (*holder && ((*holder)->role == "up" || (*holder)->role == "server")) {
    const LockHolder server = **holder;
    // The pid is the lock holder's own word; make sure it names a paddock server in our pid
    // namespace before signalling it (SIGUSR1 would end any other process).
    std::ifstream cmdline(fmt::format("/proc/{}/cmdline", server.pid), std::ios::binary);
    std::string argv0, argv1;
    std::getline(cmdline, argv0, '\0');
    std::getline(cmdline, argv1, '\0');
    if (argv0.find("paddock") == std::string::npos || argv1 != server.role)
      return Fail(FailedPrecondition(fmt::format("{} holds {} but pid {} is not it here (another pid namespace?): "
                                                 "stop that server where it runs",
                                                 DescribeHolder(server), state_dir, server.pid)));
    fmt::print("paddock down: asking {} to stop its tasks, then exit\n", DescribeHolder(server));
    std::fflush(stdout);
    if (::kill(server.pid, SIGUSR1) != 0)
      return Fail(FailedPrecondition(fmt::format("cannot signal {}: {}", DescribeHolder(server), std::strerror(errno))));
    auto next_report = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      auto still = FindLockHolder(state_dir);
      if (!still.ok()) return Fail(still.status());
      if (!*still || (*still)->pid != server.pid) break;
      if (std::chrono::steady_clock::now() >= deadline)
        return Fail(Unavailable(fmt::format("{} did not exit within {} s; its output says what it waits for",
                                            DescribeHolder(server), timeout_seconds)));
      if (std::chrono::steady_clock::now() >= next_report) {
        fmt::print("paddock down: waiting for pid {} (its tasks are stopping)\n", server.pid);
        std::fflush(stdout);
        next_report = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    fmt::print("paddock down: pid {} has stopped\n", server.pid);
  }
  // Here: what is left (no server ran, or it could not confirm every task).
  auto lock = StateDirLock::Acquire(state_dir, "down");
  if (!lock.ok()) return Fail(lock.status());
  ServerConfig config;
  config.state_dir = state_dir;
  auto node = Node::Open(config);
  if (!node.ok()) return Fail(node.status());
  auto asked = (*node)->tasks().StopAll(kDownReason, paddock::SystemClock::Get().Now());
  if (!asked.ok()) return Fail(asked.status());
  if (asked->empty()) {
    fmt::print("paddock down: no task is running in {}\n", state_dir);
    (*node)->Stop();
    return 0;
  }
  std::vector<std::string> agents;
  for (const auto& t : *asked)
    if (std::find(agents.begin(), agents.end(), t.agent) == agents.end()) agents.push_back(t.agent);
  if (Status s = (*node)->StartAgentsOnly(agents); !s.ok()) {
    (*node)->Stop();
    return Fail(s);
  }
  StopTasksOptions o;
  o.reason = std::string(kDownReason);
  o.timeout = std::max<std::chrono::milliseconds>(
      std::chrono::milliseconds(0),
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  o.progress = [](const std::string& line) {
    fmt::print("paddock down: {}\n", line);
    std::fflush(stdout);
  };
  auto r = StopEveryTask(**node, o);
  (*node)->Stop();
  if (!r.ok()) return Fail(r.status());
  fmt::print("paddock down: {} task(s) stopped\n", r->confirmed);
  if (r->timed_out)
    return Fail(Unavailable(fmt::format("{} task(s) were not confirmed stopped within {} s: {}; run paddock down "
                                        "again to keep waiting",
                                        r->left.size(), timeout_seconds, DescribeTasks(r->left))));
  if (!r->left.empty()) {
    fmt::print("paddock down: {} task(s) are marked to stop but no agent here can stop them (`paddock agent`s, which "
               "stop them when they next reach a server of this state directory; or this host cannot run "
               "containers): {}\n",
               r->left.size(), DescribeTasks(r->left));
    return 1;
  }
  return 0;
}

// `paddock image …`: the node's image store in <state-dir>/images, names in the state
// directory's store, so it is safe while a server runs on the same directory.
struct ImageCommands {
  std::string state_dir = "./.paddock";
  std::string path, name, cmd, entrypoint, working_dir, user;
  std::vector<std::string> env, refs;
  bool json = false;
  std::vector<std::string> insecure_registries;
  int64_t pull_timeout_seconds = 300;
  std::string auth_file;
  uint64_t max_unpacked_bytes = paddock::agent::images::kDefaultMaxUnpackedBytes;
  CLI::App* import = nullptr;
  CLI::App* pull = nullptr;
  CLI::App* import_rootfs = nullptr;
  CLI::App* ls = nullptr;
  CLI::App* rm = nullptr;
  CLI::App* image = nullptr;
};

// What `--state-dir` of `image` and `logs` says when it is not given: the running server's
// (cli/state_lock.h DefaultStateDir), from any working directory.
constexpr std::string_view kFoundStateDir =
    "State directory (default: the running Paddock server's, from any directory; with none, ./.paddock)";

// Replaces `state_dir` by the running server's when `cmd` was not given --state-dir.
Status ResolveStateDir(const CLI::App* cmd, std::string& state_dir) {
  if (cmd->count("--state-dir") > 0) return OkStatus();
  std::string note;
  ASSIGN_OR_RETURN(state_dir, DefaultStateDir(&note));
  if (!note.empty()) fmt::print(stderr, "paddock: {}\n", note);
  return OkStatus();
}

void AddImageCommands(CLI::App& app, ImageCommands& c) {
  CLI::App* image = app.add_subcommand("image", "The node's local image store (safe while a server runs)");
  c.image = image;
  image->require_subcommand(1);
  image->add_option("--state-dir", c.state_dir, std::string(kFoundStateDir));
  image->add_option("--max-unpacked-bytes", c.max_unpacked_bytes,
                    "Refuse an import or pull that would unpack more than this many bytes (default 20 GiB; a "
                    "server's is its images.max_unpacked_bytes)")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  c.import = image->add_subcommand("import", "Import an OCI image-layout archive or a `docker save` archive");
  c.import->add_option("FILE", c.path, "The archive (tar, optionally gzip-compressed)")->required();
  c.import->add_option("--name", c.name,
                       "REPO[:TAG] for an image the archive does not name (or names by a tag only)");
  c.import_rootfs = image->add_subcommand("import-rootfs", "Make a one-layer image from a directory tree or a tar");
  c.import_rootfs->add_option("SOURCE", c.path, "A directory or a tar (optionally compressed)")->required();
  c.import_rootfs->add_option("--name", c.name, "REPO[:TAG] (the tag defaults to latest)")->required();
  c.import_rootfs->add_option("--cmd", c.cmd, R"(Default command: words ("httpd -f -p 80") or a JSON array)");
  c.import_rootfs->add_option("--entrypoint", c.entrypoint, "Entrypoint: words or a JSON array");
  c.import_rootfs->add_option("--env", c.env, "NAME=value (repeatable)");
  c.import_rootfs->add_option("--workdir", c.working_dir, "Working directory");
  c.import_rootfs->add_option("--user", c.user, "User (name, uid or uid:gid)");
  c.pull = image->add_subcommand("pull", "Pull an image from its registry with skopeo, unless the store has it "
                                         "(as a task would; rm it first to fetch a moved tag again)");
  c.pull->add_option("REF", c.name, "Image reference (busybox, registry:5000/app:1, repo@sha256:…)")->required();
  c.pull->add_option("--insecure-registry", c.insecure_registries,
                     "HOST[:PORT] to pull over plain HTTP (repeatable; loopback registries always are)");
  c.pull->add_option("--timeout", c.pull_timeout_seconds, "Seconds before the pull is abandoned (default 300)")
      ->check(CLI::Range(1, 86400));
  c.pull->add_option("--auth-file", c.auth_file, "containers-auth.json with registry credentials (default: anonymous)");
  c.ls = image->add_subcommand("ls", "List images");
  c.ls->add_flag("--json", c.json, "One JSON object per line instead of a table");
  c.rm = image->add_subcommand("rm", "Remove images by REPO:TAG or REPO@sha256:…, and the files no image uses");
  c.rm->add_option("REF", c.refs, "Image references")->required();
  for (CLI::App* sub : {c.import, c.import_rootfs, c.pull, c.ls, c.rm}) sub->fallthrough();
}

std::string HumanSize(uint64_t bytes) {
  if (bytes < 1000) return fmt::format("{}B", bytes);
  if (bytes < 1000 * 1000) return fmt::format("{:.1f}kB", static_cast<double>(bytes) / 1e3);
  if (bytes < 1000ull * 1000 * 1000) return fmt::format("{:.1f}MB", static_cast<double>(bytes) / 1e6);
  return fmt::format("{:.2f}GB", static_cast<double>(bytes) / 1e9);
}

int RunImageCommand(ImageCommands& c) {
  namespace images = paddock::agent::images;
  if (Status s = ResolveStateDir(c.image, c.state_dir); !s.ok()) return Fail(s);
  if (Status s = paddock::MakePrivateDir(c.state_dir); !s.ok()) return Fail(s);
  // The same database file Node::Open uses.
  auto store = paddock::store::SqliteStore::Open(
      {.path = (std::filesystem::path(c.state_dir) / "paddock.db").string(), .schemas = paddock::cli::NodeSchemas()});
  if (!store.ok()) return Fail(store.status());
  images::ImageStore image_store(**store, (std::filesystem::path(c.state_dir) / "images").string());
  image_store.SetMaxUnpackedBytes(c.max_unpacked_bytes);
  int rc = 0;
  if (c.import->parsed()) {
    images::ImportOptions options;
    options.name = c.name;
    auto refs = image_store.ImportArchive(c.path, options);
    if (!refs.ok()) return Fail(refs.status());
    for (const auto& r : *refs) fmt::print("{{\"imported\": \"{}\"}}\n", r);
  } else if (c.import_rootfs->parsed()) {
    images::ImageConfig config;
    config.env = c.env;
    config.working_dir = c.working_dir;
    config.user = c.user;
    for (auto [text, out] : {std::pair{&c.cmd, &config.cmd}, std::pair{&c.entrypoint, &config.entrypoint}}) {
      auto words = images::ParseCommand(*text);
      if (!words.ok()) return Fail(words.status());
      *out = std::move(*words);
    }
    auto ref = image_store.ImportRootfs(c.path, c.name, config);
    if (!ref.ok()) return Fail(ref.status());
    fmt::print("{{\"imported\": \"{}\"}}\n", *ref);
  } else if (c.pull->parsed()) {
    images::SkopeoOptions options;
    options.insecure_registries = c.insecure_registries;
    options.timeout = std::chrono::seconds(c.pull_timeout_seconds);
    options.auth_file = c.auth_file;
    options.max_bytes = c.max_unpacked_bytes;
    options.local = images::LocalRegistries::kAllowed;  // the operator's own pull, not a tenant's
    images::SkopeoPuller puller(std::move(options));
    // Progress on stderr (stdout keeps its one JSON line): redrawn in place on a terminal, else a
    // line per finished layer and every 2 s.
    const bool tty = ::isatty(STDERR_FILENO) == 1;
    bool shown = false;
    size_t layers_shown = SIZE_MAX;
    auto last_line = std::chrono::steady_clock::now();
    auto show = [&](const images::PullProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      const std::string line = fmt::format("pulling {}: {}", c.name, images::FormatPullProgress(p));
      if (tty) {
        fmt::print(stderr, "\r\x1b[K{}", line);
      } else if (p.layers_done != layers_shown || now - last_line >= std::chrono::seconds(2)) {
        fmt::print(stderr, "{}\n", line);
        layers_shown = p.layers_done;
        last_line = now;
      }
      shown = true;
    };
    auto img = image_store.ResolveOrPull(c.name, puller, show);
    if (shown && tty) fmt::print(stderr, "\n");
    if (!img.ok()) {
      // The text a task would stop with.
      fmt::print(stderr, "paddock: CannotPullContainerError: {}\n", img.status().message());
      rc = 1;
    } else {
      fmt::print("{{\"pulled\": \"{}\", \"manifestDigest\": \"{}\"}}\n", img->reference, img->manifest_digest.str());
    }
  } else if (c.ls->parsed()) {
    auto all = image_store.List();
    if (!all.ok()) return Fail(all.status());
    if (!c.json) fmt::print("{:<60} {:<12} {:>10} {}\n", "REFERENCE", "DIGEST", "SIZE", "CREATED");
    for (const auto& i : *all) {
      auto created = std::chrono::system_clock::to_time_t(i.created_at);
      if (c.json) {
        fmt::print(R"({{"reference": "{}", "manifestDigest": "{}", "configDigest": "{}", "layers": {}, "size": {}, )"
                   R"("createdAt": "{:%Y-%m-%dT%H:%M:%SZ}"}})"
                   "\n",
                   i.reference, i.manifest_digest.str(), i.config_digest.str(), i.layers.size(), i.size,
                   fmt::gmtime(created));
      } else {
        fmt::print("{:<60} {:<12} {:>10} {:%Y-%m-%d %H:%M:%S}\n", i.reference, i.manifest_digest.hex().substr(0, 12),
                   HumanSize(i.size), fmt::gmtime(created));
      }
    }
  } else if (c.rm->parsed()) {
    for (const auto& ref : c.refs) {
      auto removed = image_store.Remove(ref);
      if (!removed.ok()) {
        rc = Fail(removed.status());
        continue;
      }
      for (const auto& r : *removed) fmt::print("{{\"removed\": \"{}\"}}\n", r);
    }
  }
  (*store)->Close();
  return rc;
}

// `paddock logs TASK`: reads <state-dir>/logs/<task id>/ as the agent writes it (agent/logs.h);
// no store is opened, so it is safe while a server runs.
struct LogsCommand {
  std::string state_dir = "./.paddock";
  std::string task, container;
  bool follow = false;
  CLI::App* cmd = nullptr;
};

void AddLogsCommand(CLI::App& app, LogsCommand& c) {
  c.cmd = app.add_subcommand("logs", "Print a task's container logs (stdout and stderr interleaved)");
  c.cmd->add_option("TASK", c.task, "Task id or task ARN")->required();
  c.cmd->add_option("--container", c.container, "Only this container (default: all, in definition order)");
  c.cmd->add_flag("-f,--follow", c.follow, "Keep printing what is appended until the task has stopped");
  c.cmd->add_option("--state-dir", c.state_dir, std::string(kFoundStateDir));
}

// Copies `path` from `offset` to stdout; returns the bytes copied.
uint64_t CopyFrom(const std::filesystem::path& path, uint64_t& offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  in.seekg(static_cast<std::streamoff>(offset));
  char buf[64 * 1024];
  uint64_t copied = 0;
  while (in) {
    in.read(buf, sizeof(buf));
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    std::fwrite(buf, 1, static_cast<size_t>(n), stdout);
    copied += static_cast<uint64_t>(n);
  }
  offset += copied;
  return copied;
}

// The inode of `path`, 0 when it is missing.
uint64_t InodeOf(const std::filesystem::path& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// Where `paddock logs --follow` is in one container's log: the file (by inode) and the offset.
// The agent rotates by renaming <name>.log to <name>.log.1 and starting a new <name>.log
// (agent/logs.h), so a new inode under the name means: finish the old file (now .1), then read
// the new one from its start.
struct LogCursor {
  uint64_t inode = 0;
  uint64_t offset = 0;
};

// Prints what `cursor`'s container appended since the last call; returns the bytes printed.
uint64_t Follow(const std::filesystem::path& log, LogCursor& cursor) {
  uint64_t copied = 0;
  const uint64_t inode = InodeOf(log);
  if (inode != cursor.inode) {
    const std::filesystem::path old = log.string() + ".1";
    if (cursor.inode != 0 && InodeOf(old) == cursor.inode) copied += CopyFrom(old, cursor.offset);
    cursor = LogCursor{inode, 0};
  }
  if (inode != 0) copied += CopyFrom(log, cursor.offset);
  return copied;
}

// Prints the task's pull progress line (<dir>/pull, agent/pull_progress.h) on stderr when it is
// there and differs from `shown`; returns what is shown now.
std::string ShowPullStatus(const std::filesystem::path& dir, const std::string& shown) {
  std::ifstream in(dir / "pull");
  std::string line;
  if (!in || !std::getline(in, line) || line == shown) return line.empty() ? shown : line;
  fmt::print(stderr, "paddock: {}\n", line);
  return line;
}

int RunLogsCommand(LogsCommand& c) {
  namespace fs = std::filesystem;
  if (Status s = ResolveStateDir(c.cmd, c.state_dir); !s.ok()) return Fail(s);
  const std::string id = c.task.substr(c.task.rfind('/') + 1);
  const fs::path dir = fs::path(c.state_dir) / "logs" / id;
  std::error_code ec;
  if (id.empty() || id.find("..") != std::string::npos || !fs::is_directory(dir, ec))
    return Fail(NotFound(fmt::format("no logs for task {} in {} (unknown task, or it never started, or its "
                                     "logs were removed an hour after it stopped)",
                                     c.task, c.state_dir)));
  std::vector<std::string> names;
  {
    std::ifstream in(dir / "containers");
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) names.push_back(line);
  }
  if (!c.container.empty()) {
    if (std::find(names.begin(), names.end(), c.container) == names.end())
      return Fail(NotFound(fmt::format("task {} has no container named {}", c.task, c.container)));
    names = {c.container};
  }
  const bool headers = names.size() > 1;
  std::vector<LogCursor> cursors(names.size());
  size_t last = names.size();  // whose output was printed last
  auto header = [&](size_t i) {
    if (headers) fmt::print("{}==> {} <==\n", last == names.size() ? "" : "\n", names[i]);
    last = i;
  };
  // What is there now: each container's rotated part (.1), then its current file.
  for (size_t i = 0; i < names.size(); ++i) {
    header(i);
    const fs::path log = dir / (names[i] + ".log");
    cursors[i].inode = InodeOf(log);
    uint64_t old_offset = 0;
    CopyFrom(fs::path(log.string() + ".1"), old_offset);
    CopyFrom(log, cursors[i].offset);
  }
  std::fflush(stdout);
  // While the task's image is pulled there is no output yet, only the pull's progress (agent/pull_progress.h).
  std::string pull_status = ShowPullStatus(dir, "");
  // Following: what is appended, with a header whenever another container's output comes next.
  auto pass = [&]() {
    uint64_t total = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      const fs::path log = dir / (names[i] + ".log");
      std::error_code e;
      uint64_t size = fs::file_size(log, e);
      if (!e && size == cursors[i].offset && InodeOf(log) == cursors[i].inode) continue;
      if (last != i) header(i);
      total += Follow(log, cursors[i]);
    }
    std::fflush(stdout);
    return total;
  };
  if (!c.follow) return 0;
  while (true) {
    const bool stopped = fs::exists(dir / "STOPPED", ec);
    pull_status = ShowPullStatus(dir, pull_status);
    uint64_t n = pass();
    if (stopped && n == 0) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// `paddock admin migrate | export | import` on the store `config` names.
int RunStoreCommand(CLI::App* admin, const ServerConfig& config) {
  if (config.store_url.empty()) {
    if (Status s = paddock::MakePrivateDir(config.state_dir); !s.ok()) return Fail(s);
  }
  auto store = OpenNodeStore(config);  // opening migrates
  if (!store.ok()) return Fail(store.status());
  const std::vector<paddock::store::ModuleSchema> schemas = NodeSchemas();
  int rc = 0;
  if (admin->got_subcommand("migrate")) {
    std::string modules;
    for (const auto& m : schemas) modules += fmt::format("{}\"{}\": {}", modules.empty() ? "" : ", ", m.module, m.version);
    fmt::print("{{\"migrated\": {{{}}}}}\n", modules);
  } else if (admin->got_subcommand("export")) {
    if (Status s = paddock::store::ExportStore(**store, schemas, std::cout); !s.ok()) rc = Fail(s);
    std::cout.flush();
  } else {
    auto rows = paddock::store::ImportStore(**store, schemas, std::cin);
    if (!rows.ok())
      rc = Fail(rows.status());
    else
      fmt::print(stderr, "paddock: imported {} rows\n", *rows);
  }
  (*store)->Close();
  return rc;
}

}  // namespace
}  // namespace paddock::cli

int main(int argc, char** argv) {
  using namespace paddock::cli;
  CLI::App app{"Paddock: a self-hosted, Amazon ECS-compatible container platform"};
  app.require_subcommand(1);

  ServerConfig server_config, up_config;
  std::string server_config_file, up_config_file;
  CLI::App* server = app.add_subcommand("server", "Run the API server (ECS and friends) on the embedded store");
  AddServerFlags(server, server_config, server_config_file);
  CLI::App* up = app.add_subcommand(
      "up", "Run every role in one process, creating an account, an access key and the AWS profile 'paddock' on first start");
  AddServerFlags(up, up_config, up_config_file);
  UpEdgeFlags up_edge;
  up->add_option("--edge-web", up_edge.web, "[HOST]:PORT of the edge's `web` entry point (default 127.0.0.1:8000)");
  up->add_option("--edge-api", up_edge.api,
                 "[HOST]:PORT of the edge's API, ping and dashboard (Traefik's `traefik` entry point; default "
                 "127.0.0.1:8081)");
  up->add_option("--edge-file", up_edge.file,
                 "A dynamic-configuration file (YAML or TOML) or directory for the edge's file provider, as "
                 "Traefik's --providers.file.filename/directory: routers, services and middlewares beside the tasks' "
                 "labels (a router there may name a service <name>@ecs)");
  up->add_option("--edge-http", up_edge.http.endpoint,
                 "An http:// or https:// endpoint serving dynamic configuration (JSON or YAML) for the edge's http provider, as "
                 "Traefik's --providers.http.endpoint, polled every --edge-http-poll-interval");
  up->add_option("--edge-http-poll-interval", up_edge.http.poll_interval,
                 "How often the edge's http provider polls (a Go duration; default 5s)");
  up->add_option("--edge-http-poll-timeout", up_edge.http.poll_timeout,
                 "How long one poll of the edge's http provider may take (a Go duration; default 5s)");
  up->add_option("--edge-http-header", up_edge.http_headers,
                 "NAME=VALUE: a header on every poll of the edge's http provider (repeatable; Traefik's "
                 "--providers.http.headers.NAME)");
  up->add_option("--edge-http-tls-ca", up_edge.http.tls_ca,
                 "The http provider's CA (a PEM file, or PEM text), trusted instead of the system's");
  up->add_option("--edge-http-tls-cert", up_edge.http.tls_cert,
                 "The http provider's client certificate for mTLS (a PEM file, or PEM text); needs --edge-http-tls-key");
  up->add_option("--edge-http-tls-key", up_edge.http.tls_key,
                 "The client certificate's private key (a PEM file, or PEM text); needs --edge-http-tls-cert");
  up->add_flag("--edge-http-tls-insecure-skip-verify", up_edge.http.tls_insecure_skip_verify,
               "Accept any certificate the http provider's endpoint presents (default false)");
  up->add_option("--edge-http-max-response-body-size", up_edge.http.max_response_body_size,
                 "Traefik's --providers.http.maxResponseBodySize: the largest body the http provider takes, in "
                 "bytes (default -1: no limit of its own; Paddock bounds it at 16 MiB either way)");
  up->add_option("--edge-websecure", up_edge.websecure,
                 "[HOST]:PORT of the edge's `websecure` entry point, e.g. 127.0.0.1:8443: routers with `tls` served "
                 "over TLS with the file provider's certificates or a generated default (default: none)");
  up->add_flag("--edge-redirect-https", up_edge.redirect_https,
               "Redirect plain HTTP on `web` to `websecure` (Traefik's "
               "--entrypoints.web.http.redirections.entrypoint.to=websecure)");
  up->add_option("--edge-drain-timeout", up_edge.drain_timeout_seconds,
                 "Seconds the edge may take to drain a stopping task before its SIGTERM (default 30; a container's "
                 "paddock.edge.drain-timeout label overrides it)")
      ->check(CLI::Range(0, 3600));
  up->add_flag("--no-edge", up_edge.disabled, "Run no edge");
  up->add_flag("--no-controller", up_edge.no_controller, "Run no deploy controller");
  bool keep_tasks = false;
  up->add_flag("--keep-tasks", keep_tasks,
               "At Ctrl-C (SIGINT, SIGTERM), leave the tasks running for the next start to re-adopt (default: "
               "stop them; `paddock server` always keeps them)");

  CLI::App* down = app.add_subcommand(
      "down", "Stop every task of a state directory and remove their networks: through its running server (which "
              "then exits), else here");
  std::string down_state_dir = "./.paddock";
  int64_t down_timeout = 300;
  down->add_option("--state-dir", down_state_dir, std::string(kFoundStateDir));
  down->add_option("--timeout", down_timeout, "Seconds to wait for the tasks to stop (default 300)")
      ->check(CLI::Range(1, 86400));

  // The server's watchdog (cli/fence_watch.h): started by the server itself, not listed in --help.
  CLI::App* fence_watch = app.add_subcommand("fence-watch", "");
  std::string fence_watch_dir;
  int64_t fence_watch_after_ms = 0;
  fence_watch->add_option("--state-dir", fence_watch_dir)->required();
  fence_watch->add_option("--after-ms", fence_watch_after_ms)->required()->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));

  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check that this host can run Paddock's containers: one line per check, with the fix; exit status 1 "
                "when a check fails");
  std::string doctor_state_dir = "./.paddock", doctor_listen = "127.0.0.1:4566";
  doctor->add_option("--state-dir", doctor_state_dir, "State directory whose disk to check (default ./.paddock)");
  doctor->add_option("--listen", doctor_listen, "The API's HOST:PORT to check (default 127.0.0.1:4566)");

  CLI::App* admin = app.add_subcommand("admin", "Operator commands on a state directory (safe while a server runs)");
  admin->require_subcommand(1);
  std::string admin_state_dir = "./.paddock";
  admin->add_option("--state-dir", admin_state_dir, "State directory (default ./.paddock)");
  std::string admin_store_url;
  admin->add_option("--store", admin_store_url,
                    "postgres://… : the PostgreSQL database a server runs on with --store, instead of the state "
                    "directory's SQLite file");
  admin->add_subcommand("migrate", "Create this build's tables in the store and record their versions (servers also do "
                                   "this when they start; safe while others run)");
  admin->add_subcommand("export", "Write every row of the store to standard output (one JSON line each, from one "
                                  "snapshot; safe while a server runs)");
  admin->add_subcommand("import", "Read an export from standard input into an empty store, e.g. a new PostgreSQL "
                                  "database (--store) or a new state directory");
  std::string account_id, account_name;
  CLI::App* create_account = admin->add_subcommand("create-account", "Create an account (random 12-digit id unless --id)");
  create_account->add_option("--id", account_id, "12-digit account id");
  create_account->add_option("--name", account_name, "A label for the account");
  CLI::App* create_key = admin->add_subcommand("create-access-key", "Create an access key for an account");
  create_key->add_option("--account", account_id, "12-digit account id")->required();
  admin->add_subcommand("list-accounts", "List accounts");
  CLI::App* delete_account = admin->add_subcommand(
      "delete-account", "Delete an account and every resource it owns, in every region: its keys at once, then its "
                        "services and tasks are stopped, and once their agents confirm every container gone, its records");
  delete_account->add_option("--account", account_id, "12-digit account id")->required();
  int64_t delete_timeout = 300;
  bool delete_force = false;
  delete_account->add_option("--timeout", delete_timeout,
                             "Seconds to wait for the agents to stop the account's tasks (default 300)")
      ->check(CLI::Range(0, 86400));
  delete_account->add_flag("--force", delete_force,
                           "Remove the records even when tasks are still running (no server, or the timeout passed); "
                           "agents remove such containers when they next reconcile");

  AgentCommand agent_command;
  AddAgentCommand(app, agent_command);
  EdgeCommand edge_command;
  AddEdgeCommand(app, edge_command);
  DeployCommands deploy_commands;
  AddDeployCommands(app, deploy_commands);
  ImageCommands image_commands;
  AddImageCommands(app, image_commands);
  LogsCommand logs_command;
  AddLogsCommand(app, logs_command);

  CLI11_PARSE(app, argc, argv);

  if (server->parsed()) {
    if (auto s = ResolveConfig(server, server_config, server_config_file); !s.ok()) return Fail(s);
    return RunServer(server_config, /*up=*/false, /*keep_tasks=*/true);
  }
  if (up->parsed()) {
    if (auto s = ResolveConfig(up, up_config, up_config_file); !s.ok()) return Fail(s);
    if (auto s = CheckUpEdgeFlags(up_edge); !s.ok()) return Fail(s);
    return RunServer(up_config, /*up=*/true, keep_tasks, up_edge);
  }
  if (down->parsed()) return RunDown(down_state_dir, down->count("--state-dir") > 0, down_timeout);
  if (doctor->parsed()) return RunDoctor(doctor_state_dir, doctor_listen);
  if (fence_watch->parsed())
    return paddock::cli::RunFenceWatch(fence_watch_dir, std::chrono::milliseconds(fence_watch_after_ms));
  if (app.got_subcommand("image")) return RunImageCommand(image_commands);
  if (agent_command.cmd->parsed()) return RunAgentCommand(agent_command);
  if (edge_command.cmd->parsed()) return RunEdgeCommand(edge_command);
  if (std::optional<int> rc = RunDeployCommands(deploy_commands)) return *rc;
  if (logs_command.cmd->parsed()) return RunLogsCommand(logs_command);

  ServerConfig admin_config;
  admin_config.state_dir = admin_state_dir;
  admin_config.store_url = admin_store_url;
  if (paddock::Status s = ValidateConfig(admin_config); !s.ok()) return Fail(s);
  if (admin->got_subcommand("migrate") || admin->got_subcommand("export") || admin->got_subcommand("import"))
    return RunStoreCommand(admin, admin_config);
  auto node = Node::Open(admin_config);
  if (!node.ok()) return Fail(node.status());
  paddock::iam::Accounts& accounts = (*node)->accounts();
  if (create_account->parsed()) {
    std::optional<paddock::AccountId> id;
    if (create_account->count("--id") > 0) id = paddock::AccountId(account_id);
    auto a = accounts.CreateAccount(id, account_name);
    if (!a.ok()) return Fail(a.status());
    fmt::print("{{\"account\": \"{}\", \"name\": \"{}\"}}\n", a->id.str(), a->name);
  } else if (create_key->parsed()) {
    auto k = accounts.CreateAccessKey(paddock::AccountId(account_id));
    if (!k.ok()) return Fail(k.status());
    fmt::print("{{\"account\": \"{}\", \"accessKeyId\": \"{}\", \"secretAccessKey\": \"{}\"}}\n", k->account.str(),
               k->id.str(), k->secret);
  } else if (admin->got_subcommand("list-accounts")) {
    auto all = accounts.ListAccounts();
    if (!all.ok()) return Fail(all.status());
    for (const auto& a : *all)
      fmt::print("{{\"account\": \"{}\", \"name\": \"{}\"{}}}\n", a.id.str(), a.name, a.deleting ? ", \"deleting\": true" : "");
  } else if (delete_account->parsed()) {
    AccountDeletionOptions options;
    options.timeout = std::chrono::seconds(delete_timeout);
    options.force = delete_force;
    options.progress = [](const std::string& line) {
      fmt::print(stderr, "paddock: {}\n", line);
      std::fflush(stderr);
    };
    auto s = DeleteAccount(**node, paddock::AccountId(account_id), options);
    if (!s.ok()) {
      (*node)->Stop();
      return Fail(s);
    }
    fmt::print("{{\"deleted\": \"{}\"}}\n", account_id);
  }
  (*node)->Stop();
  return 0;
}
