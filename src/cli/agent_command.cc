#include "cli/agent_command.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <boost/json.hpp>

#include "agent/agent.h"
#include "agent/images/image_store.h"
#include "agent/images/skopeo_puller.h"
#include "agent/remote/registration.h"
#include "agent/remote/remote_control.h"
#include "agent/runtime/crun_runtime.h"
#include "store/sqlite/sqlite_store.h"

namespace paddock::cli {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

int Fail(std::string_view what, const Status& s) {
  fmt::print(stderr, "paddock agent: {}: {}\n", what, s.message().empty() ? s.ToString() : s.message());
  return 1;
}

// The [profile] section's aws_access_key_id and aws_secret_access_key of an INI credentials file.
StatusOr<aws::SigningCredentials> ReadCredentials(const std::string& path, const std::string& profile) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("cannot read credentials file {}", path));
  aws::SigningCredentials c;
  std::string line;
  bool in_section = false;
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
    return s;
  };
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      in_section = line == "[" + profile + "]";
      continue;
    }
    if (!in_section) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty())
    return NotFound(fmt::format("profile '{}' in {} has no aws_access_key_id and aws_secret_access_key", profile, path));
  return c;
}

StatusOr<aws::SigningCredentials> ResolveCredentials(const AgentCommand& c) {
  if (!c.credentials_file.empty()) return ReadCredentials(c.credentials_file, c.profile);
  const char* id = std::getenv("AWS_ACCESS_KEY_ID");
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (id != nullptr && secret != nullptr && *id && *secret) return aws::SigningCredentials{id, secret};
  if (const char* file = std::getenv("AWS_SHARED_CREDENTIALS_FILE")) return ReadCredentials(file, c.profile);
  if (const char* home = std::getenv("HOME")) return ReadCredentials(fs::path(home) / ".aws" / "credentials", c.profile);
  return NotFound("no credentials: give --credentials or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
}

// An 8-character [a-z0-9] tag from the state directory, starting with 'a' (a server's tag is 8 hex
// digits of its own directory's hash): container ids and cgroups of different agents never meet.
std::string AgentTag(const std::string& state_dir) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char ch : fs::absolute(state_dir).lexically_normal().string()) h = (h ^ ch) * 16777619u;
  return fmt::format("a{:07x}", h & 0x0fffffffu);
}

struct Identity {
  std::string cluster;
  std::string arn;
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
  return Identity{std::string(cluster->get_string()), std::string(arn->get_string())};
}

Status SaveIdentity(const fs::path& path, const Identity& id) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json::serialize(json::object{{"cluster", id.cluster}, {"containerInstanceArn", id.arn}}) << "\n";
    if (!out.flush()) return Unavailable(fmt::format("cannot write {}", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Unavailable(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  return OkStatus();
}

}  // namespace

void AddAgentCommand(CLI::App& app, AgentCommand& c) {
  c.cmd = app.add_subcommand("agent", "Run a node agent that registers as an EC2 container instance of a Paddock "
                                      "server and runs the tasks placed on it");
  c.cmd->add_option("--endpoint", c.endpoint, "The server's URL, http://HOST:PORT")->required();
  c.cmd->add_option("--cluster", c.cluster, "Cluster to join (default 'default'); it must exist");
  c.cmd->add_option("--state-dir", c.state_dir,
                    "The agent's own directory: store, images, containers, logs, instance.json (default ./.paddock-agent)");
  c.cmd->add_option("--credentials", c.credentials_file,
                    "AWS credentials file (default: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then "
                    "AWS_SHARED_CREDENTIALS_FILE, then ~/.aws/credentials)");
  c.cmd->add_option("--profile", c.profile, "Profile in the credentials file (default paddock)");
  c.cmd->add_option("--region", c.region, "Region to sign for (default us-east-1)");
  c.cmd->add_option("--cpu", c.cpu, "CPU units to offer (default cores x 1024)")->check(CLI::Range(0, 1 << 24));
  c.cmd->add_option("--memory", c.memory, "MiB to offer (default MemTotal minus 256)")->check(CLI::Range(0, 1 << 30));
  c.cmd->add_option("--poll-wait", c.poll_wait_seconds, "Seconds one assignment long-poll may wait (1-20, default 20)")
      ->check(CLI::Range(1, 20));
}

int RunAgentCommand(const AgentCommand& c) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto host_port = agent::remote::ParseEndpoint(c.endpoint);
  if (!host_port.ok()) return Fail("--endpoint", host_port.status());
  auto creds = ResolveCredentials(c);
  if (!creds.ok()) return Fail("credentials", creds.status());
  agent::remote::ClientOptions client{host_port->first, host_port->second, c.region, *creds};

  const fs::path state = fs::absolute(c.state_dir);
  std::error_code ec;
  fs::create_directories(state, ec);
  if (ec) return Fail("state directory", Unavailable(ec.message()));
  auto store = store::SqliteStore::Open({.path = (state / "paddock.db").string()});
  if (!store.ok()) return Fail("store", store.status());

  // Register (again, as the stored instance, when there is one for this cluster).
  agent::remote::HostResources host = agent::remote::DetectHost();
  if (c.cpu > 0) host.cpu = c.cpu;
  if (c.memory > 0) host.memory = c.memory;
  const fs::path identity_path = state / "instance.json";
  std::optional<Identity> stored = LoadIdentity(identity_path);
  std::optional<std::string> previous;
  if (stored && stored->cluster == c.cluster) previous = stored->arn;
  agent::remote::JsonClient api(client);
  const std::string register_target = "AmazonEC2ContainerServiceV20141113.RegisterContainerInstance";
  auto registered = api.Call(register_target, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, previous));
  if (!registered.ok() && previous) {
    fmt::print(stderr, "paddock agent: {} cannot be registered again ({}); registering a new instance\n", *previous,
               registered.status().message());
    registered = api.Call(register_target, agent::remote::RegistrationRequest(c.cluster, host, {"22"}, std::nullopt));
  }
  if (!registered.ok()) return Fail("RegisterContainerInstance", registered.status());
  const std::string arn(registered->at("containerInstance").at("containerInstanceArn").as_string());
  if (Status s = SaveIdentity(identity_path, Identity{c.cluster, arn}); !s.ok()) return Fail("instance.json", s);

  const std::string tag = AgentTag(c.state_dir);
  agent::images::ImageStore images(**store, (state / "images").string());
  agent::images::SkopeoPuller puller(agent::images::SkopeoOptions{});
  images.SetPuller(&puller);
  agent::runtime::CrunRuntimeOptions runtime_options;
  runtime_options.state_dir = (state / "containers").string();
  runtime_options.cgroup_parent = "/paddock/" + tag;
  auto runtime = agent::runtime::CrunRuntime::Open(runtime_options);
  if (!runtime.ok()) return Fail("container runtime", runtime.status());

  agent::remote::RemoteOptions remote_options;
  remote_options.poll_wait = std::chrono::seconds(c.poll_wait_seconds);
  agent::remote::RemoteControl control(client, c.cluster, arn, remote_options);
  std::unique_ptr<agent::metadata::MetadataService> metadata =
      agent::StartMetadataService(state.string());
  // An EC2 instance: its tasks may bind host paths and add capabilities.
  agent::Agent agent(control, images, **runtime,
                     agent::NodeAgentOptions(ecs::task::InstanceAgentId(arn), tag, state.string(), metadata.get(),
                                             agent::HostAccess::kEc2Instance));
  const uint64_t watch = control.Watch(arn, [&agent] { agent.Notify(); });
  if (Status s = control.Start(); !s.ok()) return Fail("control", s);
  if (Status s = agent.Start(); !s.ok()) {
    control.Stop();
    return Fail("agent", s);
  }
  fmt::print("paddock agent registered as {}\n", arn);
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  fmt::print("paddock agent: {} received, stopping (tasks keep running)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  puller.Shutdown();
  agent.Stop();
  if (metadata) metadata->Stop();
  (*runtime)->RemoveEmptyCgroups();  // running tasks' stay for re-adoption
  control.Unwatch(watch);
  control.Stop();
  (*store)->Close();
  return 0;
}

}  // namespace paddock::cli
