#include "cli/agent_command.h"
#include "cli/credentials.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <boost/json.hpp>

#include "agent/agent.h"
#include "agent/images/image_store.h"
#include "agent/images/skopeo_puller.h"
#include "agent/remote/cluster_puller.h"
#include "agent/remote/registration.h"
#include "agent/remote/remote_control.h"
#include "agent/runtime/crun_runtime.h"
#include "aws/errors.h"
#include "cli/host_checks.h"
#include "cli/fence_watch.h"
#include "cli/state_lock.h"
#include "common/private_files.h"
#include "store/sqlite/sqlite_store.h"
#include "agent/images/schema.h"

namespace paddock::cli {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

int Fail(std::string_view what, const Status& s) {
  fmt::print(stderr, "paddock agent: {}: {}\n", what, s.message().empty() ? s.ToString() : s.message());
  return 1;
}

// An 8-character [a-z0-9] tag from the state directory, starting with 'a' (a server's tag is 8 hex
// digits of its own directory's hash): container ids and cgroups of different agents never meet.
std::string AgentTag(const std::string& state_dir) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char ch : fs::absolute(state_dir).lexically_normal().string()) h = (h ^ ch) * 16777619u;
  return fmt::format("a{:07x}", h & 0x0fffffffu);
}

// <state-dir>/instance.json: the instance this agent is, and its agent credential (issued by
// RegisterAgent; docs/agent-protocol.md, "Identity"). Absent credentials: written by an older
// Paddock (the instance is bound on the next registration).
struct Identity {
  std::string cluster;
  std::string arn;
  std::optional<aws::SigningCredentials> credentials;
};

std::optional<Identity> LoadIdentity(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::object& o = v.get_object();
  auto* cluster = o.if_contains("cluster");
  auto* arn = o.if_contains("containerInstanceArn");
  if (!cluster || !arn || !cluster->is_string() || !arn->is_string()) return std::nullopt;
  Identity id{std::string(cluster->get_string()), std::string(arn->get_string()), std::nullopt};
  if (auto* c = o.if_contains("credentials"); c && c->is_object()) {
    auto* key = c->get_object().if_contains("accessKeyId");
    auto* secret = c->get_object().if_contains("secretAccessKey");
    if (key && secret && key->is_string() && secret->is_string())
      id.credentials = aws::SigningCredentials{std::string(key->get_string()), std::string(secret->get_string())};
  }
  return id;
}

// Written 0600 from the start (it holds the agent's secret), in full and fsync'd before it
// replaces the old file.
Status SaveIdentity(const fs::path& path, const Identity& id) {
  json::object o{{"cluster", id.cluster}, {"containerInstanceArn", id.arn}};
  if (id.credentials)
    o["credentials"] = json::object{{"accessKeyId", id.credentials->access_key_id},
                                    {"secretAccessKey", id.credentials->secret_access_key}};
  const std::string text = json::serialize(o) + "\n";
  const std::string tmp = path.string() + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written) return Unavailable(fmt::format("cannot write {}", tmp));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Unavailable(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  return OkStatus();
}

constexpr std::string_view kRegisterAgent = "PaddockAgentV20261130.RegisterAgent";

// Registers this agent: again as the stored instance with its own credential when there is one,
// else (none, or no longer accepted) with the account's key, which makes the instance's
// credential. Returns the instance and its credential, saved in `path`. `*unrecognised` tells
// whether the control plane refused the stored credential as unknown (revoked).
StatusOr<Identity> Register(const AgentCommand& c, agent::remote::ClientOptions client,
                            const agent::remote::HostResources& host, agent::HostAccess host_access,
                            const fs::path& path, bool* unrecognised) {
  *unrecognised = false;
  std::optional<Identity> stored = LoadIdentity(path);
  if (stored && stored->cluster != c.cluster) stored.reset();
  if (stored && stored->credentials) {
    client.credentials = *stored->credentials;
    agent::remote::JsonClient as_agent(client);
    auto again = as_agent.Call(kRegisterAgent, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, stored->arn, host_access));
    // A server that cannot be reached: the others in turn (the client moved on to the next).
    for (size_t i = 0; i < client.alternates.size() && again.status().code() == StatusCode::kUnavailable; ++i)
      again = as_agent.Call(kRegisterAgent, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, stored->arn, host_access));
    if (again.ok()) return *stored;
    // Not reached: keep the identity rather than make a second instance.
    if (again.status().code() == StatusCode::kUnavailable) return again.status();
    *unrecognised = IsError(again.status(), aws::Error::kUnrecognizedClient) ||
                    again.status().code() == StatusCode::kPermissionDenied;
    fmt::print(stderr, "paddock agent: {} cannot be registered again with its credential ({}); registering a new instance\n",
               stored->arn, again.status().message());
    stored.reset();
  }
  ASSIGN_OR_RETURN(client.credentials, ResolveCredentials(c.credentials_file, c.profile));
  agent::remote::JsonClient api(client);
  // An instance.json without credentials (an older Paddock's): the account binds that instance.
  std::optional<std::string> previous;
  if (stored) previous = stored->arn;
  auto registered = api.Call(kRegisterAgent, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, previous, host_access));
  for (size_t i = 0; i < client.alternates.size() && registered.status().code() == StatusCode::kUnavailable; ++i)
    registered = api.Call(kRegisterAgent, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, previous, host_access));
  if (!registered.ok() && previous) {
    fmt::print(stderr, "paddock agent: {} cannot be registered again ({}); registering a new instance\n", *previous,
               registered.status().message());
    registered = api.Call(kRegisterAgent, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, std::nullopt, host_access));
  }
  if (!registered.ok()) return registered.status();
  const json::object& o = registered->as_object();
  const json::value* creds = o.if_contains("credentials");
  if (creds == nullptr || !creds->is_object())
    return DataLoss("RegisterAgent answered no credentials for the new instance");
  Identity id;
  id.cluster = c.cluster;
  id.arn = std::string(o.at("containerInstance").at("containerInstanceArn").as_string());
  id.credentials = aws::SigningCredentials{std::string(creds->at("accessKeyId").as_string()),
                                           std::string(creds->at("secretAccessKey").as_string())};
  RETURN_IF_ERROR(SaveIdentity(path, id));
  return id;
}

// The control of an agent the control plane no longer recognises: nothing is assigned to it.
class NothingAssigned final : public agent::Control {
 public:
  StatusOr<std::vector<agent::protocol::LaunchSpec>> Assignments(std::string_view) override {
    return std::vector<agent::protocol::LaunchSpec>{};
  }
  Status Report(std::string_view, std::string_view, const agent::protocol::TaskStateChange&, TimePoint) override {
    return PermissionDenied("this agent is no longer recognised by the control plane");
  }
  uint64_t Watch(std::string_view, std::function<void()>) override { return 0; }
  void Unwatch(uint64_t) override {}
  StatusOr<std::string> DescribeTask(const agent::protocol::LaunchSpec& spec, bool) override {
    return NotFound(fmt::format("task {} not found", spec.task_arn));
  }
};

}  // namespace

void AddAgentCommand(CLI::App& app, AgentCommand& c) {
  c.cmd = app.add_subcommand("agent", "Run a node agent that registers as an EC2 container instance of a Paddock "
                                      "server and runs the tasks placed on it");
  c.cmd->add_option("--endpoint", c.endpoints,
                    "The server's URL, http://HOST:PORT; repeated for several servers of one store, which the agent "
                    "turns to in order when the one it talks to cannot be reached")
      ->required();
  c.cmd->add_option("--cluster", c.cluster, "Cluster to join (default 'default'); it must exist");
  c.cmd->add_option("--state-dir", c.state_dir,
                    "The agent's own directory: store, images, containers, logs, instance.json (default ./.paddock-agent)");
  c.cmd->add_option("--credentials", c.credentials_file,
                    "AWS credentials file with the account's key, used to register a new instance only (default: "
                    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then AWS_SHARED_CREDENTIALS_FILE, then "
                    "~/.aws/credentials); afterwards the agent signs with its instance's own credential "
                    "(instance.json)");
  c.cmd->add_option("--profile", c.profile, "Profile in the credentials file (default paddock)");
  c.cmd->add_option("--region", c.region, "Region to sign for (default us-east-1)");
  c.cmd->add_option("--cpu", c.cpu, "CPU units to offer (default cores x 1024)")->check(CLI::Range(0, 1 << 24));
  c.cmd->add_option("--memory", c.memory, "MiB to offer (default MemTotal minus 256)")->check(CLI::Range(0, 1 << 30));
  c.cmd->add_option("--poll-wait", c.poll_wait_seconds, "Seconds one assignment long-poll may wait (1-20, default 20)")
      ->check(CLI::Range(1, 20));
  c.cmd->add_flag("--allow-host-access", c.allow_host_access,
                  "Let this instance's tasks reach the host: host.sourcePath volumes, added capabilities, privileged, "
                  "host pid/ipc/network namespaces (default: refused, as placement failures ATTRIBUTE)");
  c.cmd->add_option("--pids-per-task", c.pids_per_task,
                    "Processes and threads one task may have at once (its cgroup's pids.max; default 4096, 0: no bound)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{4194304}));
  c.cmd->add_option("--pids-per-node", c.pids_per_node,
                    "Processes and threads all tasks may have together (default: pid_max less max(4096, 10%), "
                    "0: no bound)")
      ->check(CLI::Range(int64_t{0}, int64_t{4194304}));
  c.cmd->add_option("--flows-per-task", c.flows_per_task,
                    "Connections one task address may have tracked at once (conntrack; default 4096, 0: no bound)")
      ->check(CLI::Range(uint32_t{0}, uint32_t{1000000}));
  c.cmd->add_option("--new-flows-per-second", c.new_flows_per_second,
                    "New connections one task address may open per second (default 2000, 0: no bound)")
      ->check(CLI::Range(uint32_t{0}, uint32_t{1000000}));
  c.cmd->add_option("--local-registry", c.local_registries,
                    "A registry on this host's own addresses (HOST:PORT as in image names) that tasks may pull from; "
                    "every other registry on a loopback, link-local or own address is refused (repeatable)");
  c.cmd->add_option("--overlay-address", c.overlay_address,
                    "Join the hosts' VXLAN overlay at this host's IPv4 address on the network the hosts share "
                    "('auto': the source address of its default route); off by default");
  c.cmd->add_option("--max-unpacked-bytes", c.max_unpacked_bytes,
                    "Refuse an image whose pull would unpack more than this many bytes (default 20 GiB)")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
}

int RunAgentCommand(const AgentCommand& c) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  agent::remote::ClientOptions client{"", 0, c.region, {}};
  for (const std::string& endpoint : c.endpoints) {
    auto host_port = agent::remote::ParseEndpoint(endpoint);
    if (!host_port.ok()) return Fail("--endpoint", host_port.status());
    if (client.port == 0) {
      std::tie(client.host, client.port) = *host_port;
    } else {
      client.alternates.push_back(*host_port);
    }
  }

  const fs::path state = fs::absolute(c.state_dir);
  if (Status s = MakePrivateDir(state.string()); !s.ok()) return Fail("state directory", s);
  // Issue 10: one process per state directory (cli/state_lock.h) — never a server's, never a
  // second agent's. Held until the process exits.
  auto lock = StateDirLock::Acquire(state.string(), "agent");
  if (!lock.ok()) return Fail("state directory", lock.status());
  // Issue 10: a host that cannot run containers says what is missing, before it registers an
  // instance no task could run on (cli/host_checks.h).
  {
    SystemHostProbe probe;
    HostCheckOptions checks;
    checks.state_dir = state.string();
    checks.crun = CrunBinary();
    const std::vector<HostCheck> found = RunHostChecks(probe, checks, CheckSet::kStart);
    if (!CanRunContainers(found)) {
      fmt::print(stderr, "paddock agent: this host cannot run containers:\n");
      for (const HostCheck& check : found)
        if (check.state == CheckState::kFail && check.blocks_tasks) fmt::print(stderr, "  {}\n", FormatCheck(check));
      fmt::print(stderr, "`paddock doctor` runs every check.\n");
      return 1;
    }
  }
  auto store = store::SqliteStore::Open(
      {.path = (state / "paddock.db").string(), .schemas = {agent::images::kSchema}});  // a remote node keeps only its images
  if (!store.ok()) return Fail("store", store.status());

  // Register (again, as the stored instance, when there is one for this cluster); from then on
  // every call is signed with the instance's own agent credential.
  agent::remote::HostResources host = agent::remote::DetectHost();
  if (c.cpu > 0) host.cpu = c.cpu;
  if (c.memory > 0) host.memory = c.memory;
  if (c.overlay_address == "auto") {
    if (host.private_ip.empty()) {
      fmt::print(stderr, "paddock agent: --overlay-address auto: this host has no default route to take its address "
                         "from; name the address\n");
      return 1;
    }
    host.overlay_address = host.private_ip;
  } else {
    host.overlay_address = c.overlay_address;
  }
  // Host-level grants as its operator set them (--allow-host-access), whatever placement decided.
  const agent::HostAccess host_access = c.allow_host_access ? agent::HostAccess::kAllowed : agent::HostAccess::kRefused;
  bool unrecognised = false;
  std::optional<Identity> previous = LoadIdentity(state / "instance.json");
  auto identity = Register(c, client, host, host_access, state / "instance.json", &unrecognised);
  const std::string tag = AgentTag(c.state_dir);
  if (!identity.ok() && (!unrecognised || !previous)) return Fail("RegisterAgent", identity.status());
  agent::images::ImageStore images(**store, (state / "images").string());
  images.SetMaxUnpackedBytes(c.max_unpacked_bytes);
  agent::images::SkopeoOptions pull;
  pull.max_bytes = c.max_unpacked_bytes;
  pull.local_registries = c.local_registries;
  agent::images::SkopeoPuller puller(std::move(pull));
  agent::runtime::CrunRuntimeOptions runtime_options;
  runtime_options.state_dir = (state / "containers").string();
  runtime_options.cgroup_parent = "/paddock/" + tag;
  runtime_options.crun_binary = CrunBinary();
  runtime_options.node_pids_max =
      c.pids_per_node < 0 ? agent::runtime::DefaultNodePidsMax() : static_cast<uint64_t>(c.pids_per_node);
  auto runtime = agent::runtime::CrunRuntime::Open(runtime_options);
  if (!runtime.ok()) return Fail("container runtime", runtime.status());
  if (!(*runtime)->SeccompStatus().ok())  // its containers fail to start with this text, never run unconfined
    fmt::print(stderr, "paddock agent: warning: tasks will not run: {}\n", (*runtime)->SeccompStatus().message());

  if (!identity.ok()) {
    // The control plane no longer knows the instance this agent was (its account deleted, or
    // it deregistered, while the agent was down) and no new one could be registered: nothing is
    // assigned to it, so what it still runs goes (agent.h, "Reconciling"), then it exits.
    fmt::print(stderr, "paddock agent: {} is no longer recognised and no new instance could be registered ({}); "
                       "stopping what it still runs\n", previous->arn, identity.status().message());
    NothingAssigned nothing;
    agent::AgentOptions o = agent::NodeAgentOptions(agent::protocol::InstanceAgentId(previous->arn), tag, state.string(),
                                                    nullptr, host_access);
    o.container_owner = tag;
    agent::Agent orphan_sweeper(nothing, images, **runtime, std::move(o));
    if (Status s = orphan_sweeper.Start(); !s.ok()) return Fail("agent", s);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    while (!orphan_sweeper.Idle() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    orphan_sweeper.Stop();
    (*runtime)->RemoveEmptyCgroups();
    (*store)->Close();
    return Fail("RegisterAgent", identity.status());
  }
  const std::string arn = identity->arn;
  client.credentials = *identity->credentials;

  agent::remote::RemoteOptions remote_options;
  remote_options.poll_wait = std::chrono::seconds(c.poll_wait_seconds);
  agent::remote::RemoteControl control(client, c.cluster, arn, remote_options);
  // Images the agent's store lacks come from the cluster's image store (the server's registry)
  // first, then from their own registries (agent/remote/cluster_puller.h).
  agent::remote::ClusterPuller cluster_puller(
      [&control](const std::string& reference) { return control.GetImageAccess(reference); }, puller);
  images.SetPuller(&cluster_puller);
  std::unique_ptr<agent::metadata::MetadataService> metadata =
      agent::StartMetadataService(state.string());
  // Host-level grants as its operator set them (--allow-host-access), whatever placement decided.
  agent::AgentOptions agent_options = agent::NodeAgentOptions(agent::protocol::InstanceAgentId(arn), tag, state.string(),
                                                              metadata.get(), host_access);
  agent_options.pids_per_task = c.pids_per_task;
  agent_options.network.flow_limits = {.tracked_per_task = c.flows_per_task, .new_per_second = c.new_flows_per_second};
  agent_options.network.overlay_address = host.overlay_address;
  // The runtime is this agent's alone: every container in it is its own, whichever instance it
  // was registered as when it made it.
  agent_options.container_owner = tag;
  agent::Agent agent(control, images, **runtime, std::move(agent_options));
  const uint64_t watch = control.Watch(arn, [&agent] { agent.Notify(); });
  if (Status s = control.Start(); !s.ok()) return Fail("control", s);
  // The first poll is answered at once: the agent's first pass then has its assignments instead of
  // logging "no answer from the control plane yet" (which read like a failure at every start).
  control.WaitForFirstPoll(std::chrono::seconds(5));
  if (Status s = agent.Start(); !s.ok()) {
    control.Stop();
    return Fail("agent", s);
  }
  fmt::print("paddock agent registered as {}\n", arn);
  std::fflush(stdout);

  // The fence of this agent's containers if it dies or stays stopped (cli/fence_watch.h), once
  // the control plane has said its fence time (its first answer).
  std::optional<FenceWatch> fence_watch;
  const auto watch_fence = [&] {
    const std::chrono::milliseconds fence = control.FenceAfter();
    if (fence_watch || fence <= std::chrono::milliseconds::zero()) return;
    StatusOr<FenceWatch> started = FenceWatch::Start(state.string(), fence);
    if (started.ok())
      fence_watch.emplace(std::move(*started));
    else
      fmt::print(stderr, "paddock agent: warning: no fence watchdog ({}): a killed agent's containers outlive it\n",
                 started.status().ToString());
  };
  watch_fence();
  int sig = 0;
  std::optional<std::chrono::steady_clock::time_point> revoked_at;
  for (;;) {
    const timespec second{1, 0};
    sig = sigtimedwait(&signals, nullptr, &second);
    if (sig > 0) break;
    watch_fence();
    if (!control.Revoked()) continue;
    // Nothing is assigned to a revoked agent: it stops what it runs, then exits (bounded by the
    // longest stop timeout).
    if (!revoked_at) revoked_at = std::chrono::steady_clock::now();
    if (agent.Idle() || std::chrono::steady_clock::now() - *revoked_at > std::chrono::seconds(180)) break;
  }
  if (sig > 0) {
    if (fence_watch) {
      fmt::print("paddock agent: {} received, stopping (tasks keep running; unless an agent takes {} over within "
                 "{} ms, its containers are then stopped: its host will be found lost)\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", state.string(), control.FenceAfter().count());
    } else {
      fmt::print("paddock agent: {} received, stopping (tasks keep running)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
  } else {
    fmt::print("paddock agent: {} is no longer accepted by the control plane (deregistered, or its account "
               "deleted); its tasks are stopped. Exiting\n", arn);
  }
  std::fflush(stdout);
  puller.Shutdown();
  agent.Stop();
  if (metadata) metadata->Stop();
  (*runtime)->RemoveEmptyCgroups();  // running tasks' stay for re-adoption
  control.Unwatch(watch);
  control.Stop();
  (*store)->Close();
  if (fence_watch) {
    // Stopped or revoked alike, the agent is gone: a revoked one's tasks are stopped already.
    if (sig > 0) fence_watch->Abandon(); else fence_watch->StopCleanly();
  }
  return sig > 0 ? 0 : 1;
}

}  // namespace paddock::cli
