#include "cli/node.h"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <boost/json.hpp>

#include "agent/agent.h"
#include "agent/dns_service.h"
#include "agent/no_runtime_agent.h"
#include "agent/inprocess/inprocess_control.h"
#include "agent/images/image_store.h"
#include "agent/images/skopeo_puller.h"
#include "agent/remote/server/agent_service.h"
#include "registry/cluster_registry.h"
#include "agent/remote/registration.h"
#include "agent/runtime/crun_runtime.h"
#include "cli/node_network.h"
#include "common/arn.h"
#include "aws/front.h"
#include "aws/model.h"
#include "aws/pagination.h"
#include "cli/access_log.h"
#include "cli/aws_profile.h"
#include "cli/host_checks.h"
#include "cli/console_relay.h"
#include "cli/fence_watch.h"
#include "cli/node_owner.h"
#include "console/assets.h"
#include "common/encoding.h"
#include "common/private_files.h"
#include "ecs/api/ecs_service.h"
#include "ecs/api/models/models.h"
#include "ecs/cluster/clusters.h"
#include "ecs/drain/api/drain_service.h"  // issue 14: the holds of edges in processes of their own
#include "ecs/drain/drain_holds.h"  // issue 14: the edges' drain holds
#include "ecs/drain/task_lookup.h"
#include "ecs/instance/instances.h"
#include "ecs/service/services.h"
#include "sched/presence.h"
#include "sched/scheduler.h"
#include "ecs/task/tasks.h"
#include "ecs/taskdef/taskdefs.h"
#include "http/server.h"
#include "store/key.h"
#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"
#include "sts/api/session_credentials.h"
#include "sts/api/sts_service.h"
#include "kms/keyring.h"  // issue 12: the key ring SSM and Secrets Manager seal with
#include "ssm/api/ssm_service.h"  // issue 12: SSM Parameter Store
#include "cli/execution_resources.h"  // issue 12: secrets at task start
#include "cli/log_shipping.h"        // issue 12: the awslogs driver
#include "logs/api/logs_service.h"  // issue 12: CloudWatch Logs
#include "logs/schema.h"
#include "sts/service_sessions.h"
#include "sts/sessions.h"
#include "ec2/api/ec2_service.h"
#include "iam/api/account_credentials.h"
#include "iam/api/authorizer.h"
#include "iam/api/iam_service.h"
#include "iam/api/role_directory.h"  // issue 11: IAM
#include "iam/directory.h"
#include "secretsmanager/api/secrets_manager_service.h"  // issue 12: Secrets Manager
#include "cloudmap/api/cloudmap_service.h"  // issue 13: Cloud Map
#include "cloudmap/dns_authority.h"          // issue 13: what the VPCs' DNS servers answer
#include "cli/service_discovery.h"
#include "vpc/ipam.h"
#include "vpc/security_groups.h"
#include "cli/schemas.h"

namespace paddock::cli {
namespace fs = std::filesystem;

namespace {

// Adapts an owner with `Status ReapAccount(const AccountId&)` to iam::AccountReaper.
template <typename Owner>
class OwnerReaper final : public iam::AccountReaper {
 public:
  OwnerReaper(std::string_view name, Owner& owner) : name_(name), owner_(owner) {}
  std::string_view Name() const override { return name_; }
  Status ReapAccount(const AccountId& a) override { return owner_.ReapAccount(a); }

 private:
  std::string_view name_;
  Owner& owner_;
};
using ClusterReaper = OwnerReaper<ecs::cluster::Clusters>;
using TaskDefinitionReaper = OwnerReaper<ecs::taskdef::TaskDefinitions>;
using TaskReaper = OwnerReaper<ecs::task::Tasks>;
using ContainerInstanceReaper = OwnerReaper<ecs::instance::ContainerInstances>;
using ServiceReaper = OwnerReaper<ecs::service::Services>;
using SecurityGroupReaper = OwnerReaper<vpc::SecurityGroups>;
using AccountSettingReaper = OwnerReaper<ecs::setting::AccountSettings>;
using CapacityProviderReaper = OwnerReaper<ecs::capacity::CapacityProviders>;
using SessionReaper = OwnerReaper<sts::Sessions>;  // STS temporary credentials (issue 11)
using IamReaper = OwnerReaper<iam::Directory>;  // issue 11
using DrainReaper = OwnerReaper<ecs::drain::DrainHolds>;  // issue 14

// Who signed a request: an account's access key (iam::Accounts), a container instance's agent
// credential (ecs/instance/agent_identity.h; docs/agent-protocol.md, "Identity") or STS
// temporary credentials (sts/sessions.h). Long-term keys are told apart by their prefix; agent
// credentials and STS sessions share "ASIA" (both are AWS "temporary" keys), so an ASIA key the
// agents do not know is looked up among the sessions (random 16-character ids never collide in
// practice, and a session is minted only under an id its own table does not hold).
class NodeCredentials final : public aws::CredentialResolver {
 public:
  NodeCredentials(iam::Accounts& accounts, ecs::instance::AgentIdentities& agents, sts::Sessions& sessions)
      : accounts_(accounts), account_keys_(accounts), agents_(agents), sessions_(sessions) {}
  StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId& id) override {
    if (!id.str().starts_with(ecs::instance::kAgentKeyPrefix)) return account_keys_.Lookup(id);
    const TimePoint now = clock_.Now();
    if (std::optional<aws::Credential> cached = CachedSession(id, now)) return cached;
    ASSIGN_OR_RETURN(auto agent, agents_.Lookup(id.str()));
    if (!agent) return SessionLookup(id, now);
    aws::Credential c;
    c.secret_access_key = agent->secret;
    c.principal.account = agent->scope.account;
    c.principal.arn = ecs::instance::AgentPrincipalArn(agent->scope, agent->id);
    c.principal.access_key_id = id;
    c.principal.agent_of = agent->instance_arn;
    return std::optional<aws::Credential>(std::move(c));
  }

 private:
  // A session authenticates only while its account exists and is not being deleted: deleting
  // an account removes its keys at once (iam::Accounts::BeginDeletion) but its sessions only
  // when the reapers run, after its tasks have stopped.
  //
  // A found session is served from a cache for at most Accounts::kCacheTtl, as account keys are
  // (a session's record never changes and its expiry is the verifier's to check), so a request
  // with temporary credentials costs no store read, where it cost three (the agents' miss, the
  // session, its account). The cache is dropped when this process begins an account's deletion;
  // another process's deletion reaches it within kCacheTtl, which account deletion waits out
  // (cli/account_deletion.h). A miss is never cached.
  std::optional<aws::Credential> CachedSession(const AccessKeyId& id, TimePoint now) {
    std::lock_guard lock(mu_);
    if (cached_deletions_ != accounts_.DeletionsBegun()) {
      sessions_cache_.clear();
      cached_deletions_ = accounts_.DeletionsBegun();
    }
    auto it = sessions_cache_.find(id.str());
    if (it == sessions_cache_.end() || now - it->second.fetched >= iam::Accounts::kCacheTtl) return std::nullopt;
    return it->second.credential;
  }

  StatusOr<std::optional<aws::Credential>> SessionLookup(const AccessKeyId& id, TimePoint now) {
    const uint64_t deletions = accounts_.DeletionsBegun();
    ASSIGN_OR_RETURN(std::optional<sts::Session> session, sessions_.Find(id));
    if (!session) return std::optional<aws::Credential>();
    ASSIGN_OR_RETURN(auto account, accounts_.GetAccount(session->principal.account));
    if (!account || account->deleting) return std::optional<aws::Credential>();
    aws::Credential credential = sts::api::CredentialOf(*session);
    std::lock_guard lock(mu_);
    // Not kept when a deletion began during the reads (the account may be the one going).
    if (deletions == accounts_.DeletionsBegun()) {
      if (sessions_cache_.size() >= kMaxCachedSessions) std::erase_if(sessions_cache_, [&](const auto& e) {
          return now - e.second.fetched >= iam::Accounts::kCacheTtl;
        });
      if (sessions_cache_.size() >= kMaxCachedSessions) sessions_cache_.clear();
      sessions_cache_.insert_or_assign(id.str(), CachedCredential{credential, now});
    }
    return std::optional<aws::Credential>(std::move(credential));
  }

  struct CachedCredential {
    aws::Credential credential;
    TimePoint fetched;
  };
  static constexpr size_t kMaxCachedSessions = 4096;

  iam::Accounts& accounts_;
  iam::api::AccountCredentials account_keys_;  // the front's view of accounts_' keys
  ecs::instance::AgentIdentities& agents_;
  sts::Sessions& sessions_;
  const Clock& clock_ = SystemClock::Get();
  std::mutex mu_;
  std::unordered_map<std::string, CachedCredential> sessions_cache_;  // by access key id
  uint64_t cached_deletions_ = 0;  // accounts_.DeletionsBegun() when sessions_cache_ was last valid
};

// The agent that provides this node's Fargate capacity: tasks are assigned to it.
constexpr std::string_view kFargateAgent = "fargate-local";

// The key that authenticates pagination tokens: made once per state directory and kept.
StatusOr<std::string> TokenKey(store::Store& store) {
  return KeptMetaValue(store, "pagination-token-key", [] { return RandomBytes(32); });
}

// The instance tag in this node's container ids and cgroups: a hash of the state directory, so
// that nodes on one host never share one and a restarted node finds its own again.
std::string InstanceTag(const std::string& state_dir) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : fs::absolute(state_dir).lexically_normal().string()) h = (h ^ c) * 16777619u;
  return fmt::format("{:08x}", h);
}

// The node's [agent] limits, and its DNS server of awsvpc tasks (null: none), on top of an
// agent's options.
agent::AgentOptions WithNodeLimits(agent::AgentOptions options, const ServerConfig& config, agent::DnsService* dns) {
  options.dns = dns;
  options.pids_per_task = static_cast<uint64_t>(config.agent.pids_per_task);
  options.network.flow_limits.tracked_per_task = static_cast<uint32_t>(config.agent.flows_per_task);
  options.network.flow_limits.new_per_second = static_cast<uint32_t>(config.agent.new_flows_per_second);
  options.network.overlay_address = config.agent.overlay_address;
  return options;
}

// What the VPCs' DNS servers answer (issue 13 §3): Cloud Map's private namespaces of the VPC
// whose listener (agent::DnsListenerName) the query came in on.
std::shared_ptr<dns::Authority> CloudMapNames(cloudmap::Registry& registry) {
  return std::make_shared<cloudmap::DnsAuthority>(
      registry, [](std::string_view listener) -> std::optional<cloudmap::VpcRef> {
        std::optional<agent::DnsListener> l = agent::ParseDnsListenerName(listener);
        if (!l) return std::nullopt;
        return cloudmap::VpcRef{std::move(l->scope), std::move(l->vpc_id)};
      });
}

// The id of this server's Fargate agent. On the state directory's SQLite file, which one server
// at a time opens (cli/state_lock.h), it is kFargateAgent. On a PostgreSQL database that several
// servers share it names this server — its host and state directory, stable across restarts so a
// restarted server finds its tasks again —, so that each server's Fargate agent runs only the
// Fargate tasks placed on it, never another server's (docs/scaling.md, "Several servers").
std::string FargateAgentId(const ServerConfig& config) {
  if (config.store_url.empty()) return std::string(kFargateAgent);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return fmt::format("{}@{}:{}", kFargateAgent, host, InstanceTag(config.state_dir));
}

// This server among those of a store: its host and state directory, which the directory's lock
// (cli/state_lock.h) keeps to one running process, so a name's earlier lives are this server's
// (the scheduler lease's holder prefix, the presence row's name).
std::string ServerName(const ServerConfig& config) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::error_code ec;
  const std::string dir = std::filesystem::weakly_canonical(config.state_dir, ec).string();
  return fmt::format("{}:{:016x}", host, Fnv1a64(ec ? config.state_dir : dir));
}

// Several servers on one database share every account's API rate limits (docs/scaling.md): each
// keeps a presence row this fresh and divides the buckets by the live servers.
constexpr std::chrono::seconds kPresenceTtl{6};
constexpr std::chrono::seconds kPresenceRenewal{2};  // a third of the time to live

}  // namespace

class Node::Impl {
 public:
  ServerConfig config;
  // Issue 17: the console's change feed, before everything that publishes to it or watches it.
  // Declared before the feed: destroyed after it (the feed holds its relay hook), stopped in Stop.
  std::unique_ptr<ConsoleRelay> console_relay;  // on PostgreSQL (cli/console_relay.h)
  console::ChangeFeed change_feed;
  std::mutex task_listener_mu;
  std::function<void(const Scope&)> task_listener;  // GUARDED_BY(task_listener_mu): the edge's
  std::string fargate_agent;  // FargateAgentId(config)
  std::unique_ptr<store::Store> store;
  store::PostgresStore* postgres = nullptr;  // `store`, when it is a PostgreSQL database servers may share
  std::unique_ptr<iam::Accounts> accounts;
  std::unique_ptr<NodeCredentials> credentials;  // accounts' keys and agents' credentials
  std::unique_ptr<ecs::cluster::Clusters> clusters;
  std::unique_ptr<ecs::taskdef::TaskDefinitions> task_definitions;
  std::unique_ptr<ecs::task::FargateCapacity> fargate;  // what Fargate tasks may reserve (config [fargate])
  std::unique_ptr<ecs::task::Tasks> tasks;
  std::unique_ptr<ecs::instance::ContainerInstances> container_instances;
  std::unique_ptr<ecs::service::Services> services;
  // Account settings and capacity providers (issue 10), with their account reapers.
  std::unique_ptr<ecs::setting::AccountSettings> account_settings;
  std::unique_ptr<ecs::capacity::CapacityProviders> capacity_providers;
  std::unique_ptr<AccountSettingReaper> account_setting_reaper;
  std::unique_ptr<CapacityProviderReaper> capacity_provider_reaper;
  // The service scheduler: made by Open, started by Start (not by `paddock admin`).
  std::unique_ptr<sched::Scheduler> scheduler;
  // Issue 14: the edges' drain holds on the tasks they route to (ecs/drain), which every agent
  // waits on before it stops a task (Control::AwaitDrain); declared before `control`, which
  // uses them, so they outlive it.
  std::unique_ptr<ecs::drain::TasksLookup> drain_lookup;
  std::unique_ptr<ecs::drain::DrainHolds> drain;
  std::unique_ptr<DrainReaper> drain_reaper;
  std::unique_ptr<ecs::drain::api::DrainService> drain_service;  // PaddockEdgeV20261203 (`paddock edge`)
  // Agents' side of the control plane: Tasks' change listener, long-poll waiters, and the
  // Paddock agent protocol's service (docs/agent-protocol.md).
  std::unique_ptr<agent::InProcessControl> control;
  std::unique_ptr<agent::remote::AgentService> agent_service;
  std::unique_ptr<ClusterReaper> cluster_reaper;
  std::unique_ptr<TaskDefinitionReaper> taskdef_reaper;
  std::unique_ptr<TaskReaper> task_reaper;
  std::unique_ptr<ContainerInstanceReaper> container_instance_reaper;
  std::unique_ptr<ServiceReaper> service_reaper;
  // vpc/: security groups and the network policy of each VPC (with the tasks' addresses).
  std::unique_ptr<vpc::SecurityGroups> security_groups;
  std::unique_ptr<SecurityGroupReaper> security_group_reaper;
  std::unique_ptr<aws::ServiceModel> ecs_model;
  std::unique_ptr<ecs::api::EcsService> ecs;
  std::unique_ptr<ec2::api::Ec2Service> ec2;
  // sts/: temporary credentials and the STS API (issue 11).
  std::unique_ptr<sts::Sessions> sessions;
  std::unique_ptr<SessionReaper> session_reaper;
  std::unique_ptr<sts::api::StsService> sts;
  // issue 12: the node key that seals SSM SecureStrings and Secrets Manager values
  // (<state-dir>/keys/master.key), opened once and shared by both.
  std::unique_ptr<kms::KeyRing> keys;
  // issue 12: SSM Parameter Store (its owner, API and account reaper).
  std::unique_ptr<ssm::api::SsmModule> ssm;
  // issue 12: CloudWatch Logs (its own store <state-dir>/logs.db, owner, API and account reaper).
  std::unique_ptr<logs::api::LogsModule> logs;
  // IAM (issue 11): roles, users and policies, their reaper, and the Query API over them.
  std::unique_ptr<iam::Directory> iam_directory;
  std::unique_ptr<IamReaper> iam_reaper;
  std::unique_ptr<iam::api::IamService> iam_api;
  std::unique_ptr<iam::api::PolicyAuthorizer> authorizer;
  std::unique_ptr<iam::api::IamRoleDirectory> roles;
  // Task roles' credentials for every agent, in-process or remote (issue 11).
  std::unique_ptr<sts::ServiceRoleSessions> task_role_sessions;
  // issue 12: Secrets Manager (its owner, API and account reaper).
  std::unique_ptr<secretsmanager::api::SecretsManagerModule> secrets_manager;
  // issue 13: Cloud Map (its owner, API, operations worker and account reaper).
  std::unique_ptr<cloudmap::api::CloudMapModule> cloudmap;
  // ECS's service registries over Cloud Map: tasks of a service with serviceRegistries are
  // registered in their own transactions (ecs/task/discovery.h).
  std::unique_ptr<CloudMapDiscovery> discovery;
  std::unique_ptr<console::ConsoleService> console;  // PaddockConsole_20261204 (issue 17)
  std::unique_ptr<aws::ApiFront> front;
  std::unique_ptr<http::Server> server;
  // The Fargate agent: made by Start (not Open, which `paddock admin` uses too), stopped before
  // the store closes.
  std::unique_ptr<agent::images::SkopeoPuller> puller;  // images of tasks not in `images`
  // With a PostgreSQL store: the state directory's SQLite file, where the node's image names are.
  std::unique_ptr<store::Store> local_store;
  std::unique_ptr<agent::images::ImageStore> images;
  std::unique_ptr<agent::runtime::CrunRuntime> runtime;
  // The task metadata endpoint of every agent below (null: not root, or it could not start).
  std::unique_ptr<agent::metadata::MetadataService> metadata;
  // The DNS server of every agent's awsvpc tasks (null: not root). Its Authority is Cloud Map's
  // (cloudmap::DnsAuthority over `cloudmap`'s Registry): each VPC's private namespaces are
  // answered, every other name forwarded.
  std::unique_ptr<agent::DnsService> dns;
  std::unique_ptr<agent::Agent> agent;
  uint64_t agent_watch = 0;
  // The cluster's registry: `paddock agent`s pull this node's images from it (issue 10;
  // registry/cluster_registry.h). Made by Start, runs from the first agent's ask.
  std::unique_ptr<registry::ClusterRegistry> cluster_registry;
  // Issue 10: on a host that cannot run containers, the Fargate agent's stand-in (`agent` is
  // null then), and what the host checks found (Node::host_checks).
  std::unique_ptr<agent::NoRuntimeAgent> stand_in;
  std::vector<HostCheck> host_checks;

  // In-process EC2 container instances ([[ec2_instance]]): registered once their cluster exists
  // in their owner's account (cli/node_owner.h), then each runs an Agent for its instance ARN;
  // the loop heartbeats.
  struct Ec2Instance {
    Ec2InstanceConfig config;
    std::optional<Scope> scope;
    std::string id;   // container instance id, once registered
    std::string arn;
    std::unique_ptr<agent::Agent> agent;
    uint64_t watch = 0;
    std::string last_error;  // the last registration failure, printed once
  };
  std::vector<Ec2Instance> ec2_instances;
  std::thread ec2_loop;
  std::optional<BootstrapIdentity> bootstrap_identity;  // Node::BootstrapAccount's, once made

  // The Fargate agent's stand-in when containers cannot run here: its tasks stop at once, saying
  // why (agent/no_runtime_agent.h).
  void StartStandIn() {
    stand_in = std::make_unique<agent::NoRuntimeAgent>(
        *control, fargate_agent,
        fmt::format("ResourceInitializationError: this Paddock node cannot run containers: {}. Run `paddock doctor` "
                    "on its host",
                    CannotRunSummary(host_checks)));
    agent_watch = control->Watch(fargate_agent, [a = stand_in.get()] { a->Notify(); });
    stand_in->Start().IgnoreError();
  }

  // A failure the host checks did not foresee, recorded as one (it blocks tasks).
  void RuntimeFailed(std::string_view what, const Status& s) {
    host_checks.push_back(HostCheck{"container runtime", CheckState::kFail,
                                    fmt::format("{}: {}", what, s.message().empty() ? s.ToString() : s.message()),
                                    "run `paddock doctor`, and see docs/runtime-notes.md", true});
  }

  // Starts the agent: a real one when the host can run containers (cli/host_checks.h), else the
  // stand-in, so that no task waits in PROVISIONING for an agent that cannot start it.
  void StartAgent() {
    const fs::path state = fs::absolute(config.state_dir);
    const std::string instance = InstanceTag(config.state_dir);
    // Images are the node's own: their files are in its state directory, so their names are in the
    // state directory's SQLite file (where `paddock image` writes them), even when the node's
    // records are in a PostgreSQL database other servers share.
    store::Store* image_names = store.get();
    if (!config.store_url.empty()) {
      auto local = store::SqliteStore::Open({.path = (state / "paddock.db").string(), .schemas = NodeSchemas()});
      if (local.ok()) {
        local_store = std::move(*local);
        image_names = local_store.get();
      } else {
        fmt::print(stderr, "paddock: warning: the state directory's image names cannot be opened: {}\n",
                   local.status().ToString());
      }
    }
    images = std::make_unique<agent::images::ImageStore>(*image_names, (state / "images").string());
    images->SetMaxUnpackedBytes(static_cast<uint64_t>(config.images.max_unpacked_bytes));
    agent::images::SkopeoOptions pull;
    pull.max_bytes = static_cast<uint64_t>(config.images.max_unpacked_bytes);
    pull.insecure_registries = config.images.insecure_registries;
    pull.insecure_loopback = config.images.insecure_loopback;
    pull.local_registries = config.images.local_registries;  // the others on the node's addresses are refused
    pull.timeout = std::chrono::seconds(config.images.pull_timeout_seconds);
    pull.auth_file = config.images.auth_file;
    puller = std::make_unique<agent::images::SkopeoPuller>(std::move(pull));
    images->SetPuller(puller.get());
    SystemHostProbe probe;
    HostCheckOptions checks;
    checks.state_dir = state.string();
    checks.crun = CrunBinary();
    host_checks = RunHostChecks(probe, checks, CheckSet::kStart);
    if (!CanRunContainers(host_checks)) return StartStandIn();
    agent::runtime::CrunRuntimeOptions options;
    options.state_dir = (state / "containers").string();
    options.cgroup_parent = "/paddock/" + instance;
    options.crun_binary = checks.crun;
    // Every task of the node together (issue 9 hardening): the host keeps a reserve of PIDs.
    options.node_pids_max = config.agent.pids_per_node < 0 ? agent::runtime::DefaultNodePidsMax()
                                                            : static_cast<uint64_t>(config.agent.pids_per_node);
    auto rt = agent::runtime::CrunRuntime::Open(options);
    if (!rt.ok()) {
      RuntimeFailed("the container runtime did not start", rt.status());
      return StartStandIn();
    }
    runtime = std::move(*rt);
    if (!runtime->SeccompStatus().ok())  // its containers fail to start with this text, never run unconfined
      fmt::print(stderr, "paddock: warning: tasks will not run: {}\n", runtime->SeccompStatus().message());
    metadata = agent::StartMetadataService(state.string());
    dns = agent::StartDnsService(config.dns.upstreams);
    if (dns && cloudmap) dns->SetAuthority(CloudMapNames(cloudmap->registry()));
    agent = std::make_unique<agent::Agent>(
        *control, *images, *runtime,
        WithNodeLimits(agent::NodeAgentOptions(fargate_agent, instance, state.string(), metadata.get(),
                                               agent::HostAccess::kRefused),
                       config, dns.get()));
    Status s = agent->Start();
    if (!s.ok()) {
      RuntimeFailed("the agent did not start", s);
      agent.reset();
      return StartStandIn();
    }
    agent_watch = control->Watch(fargate_agent, [a = agent.get()] { a->Notify(); });
  }

  // An agent for the in-process container instance `arn` (Node::StartAgentsOnly): as RegisterEc2
  // makes one, without registering (the instance is there; only its tasks matter).
  Status StartInstanceAgent(const std::string& arn) {
    StatusOr<Arn> parsed = ParseArn(arn);
    const std::string resource = parsed.ok() ? parsed->resource : "";
    const size_t slash = resource.find('/'), last = resource.rfind('/');
    if (!parsed.ok() || parsed->service != "ecs" || !resource.starts_with("container-instance/") || slash == last)
      return InvalidArgument(fmt::format("'{}' is not a container instance ARN", arn));
    const Scope scope{AccountId(parsed->account), Region(parsed->region)};
    const std::string cluster = resource.substr(slash + 1, last - slash - 1), id = resource.substr(last + 1);
    ecs::instance::AgentKind kind = ecs::instance::AgentKind::kNone;
    RETURN_IF_ERROR(store->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(kind, container_instances->agents().KindOf(txn, scope, cluster, id));
      return OkStatus();
    }));
    if (kind != ecs::instance::AgentKind::kInProcess) return OkStatus();  // a `paddock agent`'s: not ours
    Ec2Instance e{Ec2InstanceConfig{}, scope, id, arn, nullptr, 0, ""};
    e.config.cluster = cluster;
    e.agent = std::make_unique<agent::Agent>(
        *control, *images, *runtime,
        WithNodeLimits(agent::NodeAgentOptions(ecs::task::InstanceAgentId(arn), InstanceTag(config.state_dir),
                                               fs::absolute(config.state_dir).string(), metadata.get(),
                                               agent::HostAccess::kRefused),
                       config, dns.get()));
    RETURN_IF_ERROR(e.agent->Start());
    e.watch = control->Watch(arn, [a = e.agent.get()] { a->Notify(); });
    ec2_instances.push_back(std::move(e));
    return OkStatus();
  }

  // The meta key keeping an in-process instance's ARN, so a restarted server re-registers it. By
  // owner: an instance whose configured account changed registers anew in the new account.
  static std::string Ec2MetaKey(size_t index, const Ec2InstanceConfig& c, const AccountId& owner) {
    return store::Key().Str("ec2-instance").Str(std::to_string(index)).Str(c.cluster).Str(owner.str()).Done();
  }

  // One attempt to register instance `index` (re-registering its stored ARN when there is one), in
  // its owner's account only.
  Status RegisterEc2(size_t index) {
    Ec2Instance& e = ec2_instances[index];
    ASSIGN_OR_RETURN(std::optional<AccountId> bootstrap, RecordedBootstrapAccount(*store, *accounts));
    ASSIGN_OR_RETURN(AccountId owner, Ec2Owner(e.config, config, bootstrap));
    const Scope scope{owner, Region(config.region)};
    const agent::HostAccess host_access = e.config.host_access ? agent::HostAccess::kAllowed : agent::HostAccess::kRefused;
    agent::remote::HostResources host = agent::remote::DetectHost();
    if (e.config.cpu > 0) host.cpu = e.config.cpu;
    if (e.config.memory > 0) host.memory = e.config.memory;
    std::optional<std::string> stored;
    const std::string meta_key = Ec2MetaKey(index, e.config, owner);
    RETURN_IF_ERROR(store->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(stored, txn.Get("meta", meta_key));
      return OkStatus();
    }));
    ecs::instance::RegisterRequest r;
    r.cluster = e.config.cluster;
    r.agent = ecs::instance::AgentKind::kInProcess;  // no credential: only this server speaks for it
    boost::json::object body = agent::remote::RegistrationRequest(e.config.cluster, host, {}, std::nullopt, host_access);
    r.total_resources = body.at("totalResources").as_array();
    r.version_info = body.at("versionInfo").as_object();
    // The node's address, for EC2's DescribeInstances (agent/remote/registration.h).
    if (const auto* doc = body.if_contains("instanceIdentityDocument")) r.identity_document = std::string(doc->as_string());
    for (const auto& a : body.at("attributes").as_array())
      r.attributes.push_back({std::string(a.at("name").as_string()), std::nullopt});
    if (stored) {
      auto ref = ecs::instance::ParseInstanceRef(*stored, scope, "RegisterContainerInstance", "");
      if (ref.ok()) r.container_instance = *ref;
    }
    auto ci = container_instances->Register(scope, r, SystemClock::Get().Now());
    if (!ci.ok() && r.container_instance) {  // deregistered meanwhile: a new instance
      r.container_instance.reset();
      ci = container_instances->Register(scope, r, SystemClock::Get().Now());
    }
    if (!ci.ok()) return ci.status();
    boost::json::value v = boost::json::parse(*ci);
    e.arn = std::string(v.at("containerInstanceArn").as_string());
    e.id = e.arn.substr(e.arn.rfind('/') + 1);
    e.scope = scope;
    RETURN_IF_ERROR(store->Write([&](store::WriteTxn& txn) { return txn.Put("meta", meta_key, e.arn); }));
    // Host-level grants as its operator set them (host_access), whatever placement decided.
    e.agent = std::make_unique<agent::Agent>(
        *control, *images, *runtime,
        WithNodeLimits(agent::NodeAgentOptions(ecs::task::InstanceAgentId(e.arn), InstanceTag(config.state_dir),
                                               fs::absolute(config.state_dir).string(), metadata.get(),
                                               host_access),
                       config, dns.get()));
    RETURN_IF_ERROR(e.agent->Start());
    e.watch = control->Watch(e.arn, [a = e.agent.get()] { a->Notify(); });
    {
      std::lock_guard lock(ec2_ids_mu);
      const std::string id = ecs::task::InstanceAgentId(e.arn);
      if (std::find(ec2_agent_ids.begin(), ec2_agent_ids.end(), id) == ec2_agent_ids.end()) ec2_agent_ids.push_back(id);
    }
    fmt::print(stderr, "paddock: in-process EC2 container instance {}{}\n", e.arn,
               e.config.host_access ? " (host access allowed)" : "");
    return OkStatus();
  }

  void Ec2Loop() {
    const auto period = std::min<std::chrono::milliseconds>(std::chrono::seconds(5),
                                                            std::chrono::seconds(config.agent_timeout_seconds) / 3);
    std::unique_lock lock(reaper_mu);
    do {
      lock.unlock();
      for (size_t i = 0; i < ec2_instances.size(); ++i) {
        Ec2Instance& e = ec2_instances[i];
        if (!e.agent) {
          Status s = RegisterEc2(i);
          if (s.ok()) {
            last_ec2_heartbeat_ms = SteadyMillis();
            StartFencing();
          } else {
            e.agent.reset();
            // A missing cluster (or owner) is expected until the user creates it: said once.
            std::string said = s.ToString();
            if (said != e.last_error) fmt::print(stderr, "paddock: [[ec2_instance]] {}: not registered yet: {}\n",
                                                 e.config.cluster, said);
            e.last_error = std::move(said);
          }
        } else {
          // Any answer but a lost database says the database was reached.
          const Status s = control->Heartbeat(*e.scope, e.config.cluster, e.id, SystemClock::Get().Now());
          if (s.ok() || s.code() != StatusCode::kUnavailable) last_ec2_heartbeat_ms = SteadyMillis();
        }
      }
      lock.lock();
    } while (!reaper_cv.wait_for(lock, period, [&] { return reaper_stop; }));
  }

  void StartEc2Instances() {
    if (config.ec2_instances.empty()) return;
    if (!runtime) {
      fmt::print(stderr, "paddock: warning: [[ec2_instance]] ignored: no container runtime\n");
      return;
    }
    for (const auto& c : config.ec2_instances) ec2_instances.push_back(Ec2Instance{c, std::nullopt, "", "", nullptr, 0, ""});
    ec2_loop = std::thread([this] { Ec2Loop(); });
  }

  // Issue 16: on a database several servers share, this server's presence row (sched/presence.h)
  // and the loop that renews it — telling the front how many servers share every account's budget
  // when the API's rate limits are on — and, once its Fargate agent runs containers, renews its
  // host's Fargate offer (ecs/task/fargate_capacity.h) with it. Null on SQLite (one server per
  // file).
  std::unique_ptr<sched::Presence> presence;
  std::atomic<bool> offering_fargate{false};  // this host's Fargate capacity is offered to the others
  // Losing a host (issue 16 §3): when the last offer renewed (steady clock, ms), and the thread that
  // fences the Fargate agent off once that is older than fence_after_time — before any other
  // server can find the host lost (its offer lapsed by host_lost_seconds) and hand its tasks'
  // addresses out again. The renewal itself may hang on a lost database: the check is its own.
  std::atomic<int64_t> last_offer_ms{0};
  // The fence time of this server's agents (AgentFenceTime), Fargate and [[ec2_instance]] alike.
  std::chrono::milliseconds fence_after_time{0};  // zero: no fence (no sweep either)
  // Like last_offer_ms, for this server's [[ec2_instance]]s on a shared store: when a heartbeat last reached
  // the database (zero: none registered yet). Their agents are fenced once it is older than the
  // fence time (the same: AgentFenceTime), as a `paddock agent` cut off from its control plane.
  std::atomic<int64_t> last_ec2_heartbeat_ms{0};
  std::once_flag fencing_once;
  std::thread fence_loop;
  // The fence of a killed server's containers (cli/fence_watch.h), while the offer is made.
  std::optional<FenceWatch> fence_watch;
  std::thread presence_loop;
  std::mutex presence_mu;
  std::condition_variable presence_cv;
  bool presence_stop = false;     // GUARDED_BY(presence_mu)
  bool presence_recount = false;  // GUARDED_BY(presence_mu): another server's row changed
  int rate_limit_servers = 1;     // the presence loop's (and StartPresence's, before it)

  // Hands `servers` (a count, or the failure to get one: then the last count stands) to the front.
  void ShareRateLimits(const StatusOr<int>& servers) {
    if (config.api_rate_limits != "aws") return;
    if (!servers.ok()) {
      fmt::print(stderr, "paddock: server presence: {}\n", servers.status().ToString());
      return;
    }
    if (*servers == rate_limit_servers) return;
    rate_limit_servers = *servers;
    front->SetRateLimitServers(*servers);
    if (*servers == 1) {
      fmt::print("paddock server: this server alone holds each account's API rate limits\n");
    } else {
      fmt::print("paddock server: {} servers share each account's API rate limits\n", *servers);
    }
    std::fflush(stdout);
  }

  // Before serving: this server's row, and its share from the first request on.
  void StartPresence() {
    if (!presence) return;
    ShareRateLimits(presence->Renew(SystemClock::Get().Now()));
    presence_loop = std::thread([this] { PresenceLoop(); });
  }

  // Renews the row every kPresenceRenewal; recounts (a read) at once when another server's row
  // changed, so a server joining or leaving cleanly changes the shares within milliseconds.
  void PresenceLoop() {
    auto next_renewal = std::chrono::steady_clock::now() + kPresenceRenewal;
    std::unique_lock lock(presence_mu);
    while (true) {
      presence_cv.wait_until(lock, next_renewal, [&] { return presence_stop || presence_recount; });
      if (presence_stop) return;
      const bool renew = !presence_recount;
      presence_recount = false;
      lock.unlock();
      if (renew) {
        ShareRateLimits(presence->Renew(SystemClock::Get().Now()));
        if (offering_fargate) OfferFargate();
        next_renewal = std::chrono::steady_clock::now() + kPresenceRenewal;
      } else {
        ShareRateLimits(presence->Count(SystemClock::Get().Now()));
      }
      lock.lock();
    }
  }

  void RecountPresence() {
    {
      std::lock_guard lock(presence_mu);
      presence_recount = true;
    }
    presence_cv.notify_all();
  }

  // Offers this host's Fargate capacity to the other servers for the presence's time to live: its
  // agent runs what they place here, reached by the overlay at [agent] overlay_address.
  void OfferFargate() {
    Status s = fargate->Offer(*store, SystemClock::Get().Now(), kPresenceTtl, fargate_agent,
                              config.agent.overlay_address);
    if (!s.ok()) {
      fmt::print(stderr, "paddock: Fargate capacity offer: {}\n", s.ToString());
      return;
    }
    last_offer_ms = SteadyMillis();
  }

  static int64_t SteadyMillis() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Once the Fargate agent runs containers (not the stand-in): its capacity is offered from now on,
  // and fenced when the offer cannot be renewed.
  void StartOfferingFargate() {
    if (!presence || agent == nullptr) return;
    OfferFargate();
    offering_fargate = true;
    StartFencing();
  }

  // On a shared store, once this server runs agents the others may find lost (its Fargate agent,
  // its [[ec2_instance]]s): the loop that fences them when the database is out of reach, and the
  // watchdog that fences them if the server is killed. Once; from whichever thread starts first.
  void StartFencing() {
    if (!presence || fence_after_time <= std::chrono::milliseconds::zero()) return;
    std::call_once(fencing_once, [this] {
      fence_loop = std::thread([this] { FenceLoop(); });
      StatusOr<FenceWatch> watch = FenceWatch::Start(config.state_dir, fence_after_time);
      if (watch.ok()) {
        fence_watch.emplace(std::move(*watch));
      } else {  // the live server still fences; a killed one's containers would outlive it
        fmt::print(stderr, "paddock: warning: the fence watchdog did not start: {}\n", watch.status().ToString());
      }
    });
  }

  // Every quarter second: the Fargate agent is fenced off (InProcessControl::SetFenced: it stops
  // its containers) while the last renewed offer is older than fence_after_time, and let back
  // once one is renewed again (the store's answer then stands: what the other servers recorded
  // STOPPED meanwhile is no longer assigned, and its leftovers are removed).
  // The [[ec2_instance]]s' agents likewise while no heartbeat has reached the database for that long.
  void FenceLoop() {
    bool fenced = false, ec2_fenced = false;
    std::unique_lock lock(presence_mu);
    while (!presence_cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return presence_stop; })) {
      const int64_t now = SteadyMillis();
      const bool late = offering_fargate && now - last_offer_ms > fence_after_time.count();
      const int64_t beat = last_ec2_heartbeat_ms;
      const bool ec2_late = beat > 0 && now - beat > fence_after_time.count();
      if (late == fenced && ec2_late == ec2_fenced) continue;
      lock.unlock();
      if (late != fenced) {
        fenced = late;
        control->SetFenced(fargate_agent, fenced);
        if (fenced) {
          fmt::print(stderr, "paddock: Fargate host fenced: no offer renewed for {} ms; its tasks' containers stop\n",
                     fence_after_time.count());
        } else {
          fmt::print(stderr, "paddock: Fargate host back: its offer is renewed again\n");
        }
      }
      if (ec2_late != ec2_fenced) {
        ec2_fenced = ec2_late;
        for (const std::string& id : Ec2AgentIds()) control->SetFenced(id, ec2_fenced);
        if (ec2_fenced) {
          fmt::print(stderr, "paddock: [[ec2_instance]]s fenced: no heartbeat stored for {} ms; their tasks' "
                             "containers stop\n",
                     fence_after_time.count());
        } else {
          fmt::print(stderr, "paddock: [[ec2_instance]]s back: their heartbeats are stored again\n");
        }
      }
      lock.lock();
    }
  }

  // The agent ids of the registered [[ec2_instance]]s (the Ec2Loop's, under ec2_ids_mu).
  std::mutex ec2_ids_mu;
  std::vector<std::string> ec2_agent_ids;  // GUARDED_BY(ec2_ids_mu)
  std::vector<std::string> Ec2AgentIds() {
    std::lock_guard lock(ec2_ids_mu);
    return ec2_agent_ids;
  }

  // A clean stop on a shared store: this server's [[ec2_instance]]s' stored heartbeats are
  // forgotten, so no server finds them lost while it is away (as its Fargate offer is withdrawn);
  // then the watchdog is told the stop is clean. After the Ec2Loop has ended.
  void ForgetEc2Heartbeats() {
    if (!presence) return;
    for (const Ec2Instance& e : ec2_instances) {
      if (!e.scope || e.id.empty()) continue;
      if (Status s = container_instances->ForgetHeartbeat(*e.scope, e.config.cluster, e.id); !s.ok())
        fmt::print(stderr, "paddock: [[ec2_instance]] {}: its heartbeat could not be withdrawn: {}\n", e.id,
                   s.ToString());
    }
  }

  // After serving: the others stop counting this server, and placing Fargate tasks here, at once.
  void StopPresence() {
    if (!presence) return;
    {
      std::lock_guard lock(presence_mu);
      if (presence_stop) return;  // stopped already (Stop, then the destructor's)
      presence_stop = true;
    }
    presence_cv.notify_all();
    if (presence_loop.joinable()) presence_loop.join();
    // Waits out a StartFencing in progress (the Ec2Loop's), and keeps any later one from starting.
    std::call_once(fencing_once, [] {});
    if (fence_loop.joinable()) fence_loop.join();
    if (offering_fargate.exchange(false)) {
      if (Status s = fargate->Withdraw(*store); !s.ok())
        fmt::print(stderr, "paddock: Fargate capacity offer: {}\n", s.ToString());
    }
    if (Status s = presence->Leave(); !s.ok()) fmt::print(stderr, "paddock: server presence: {}\n", s.ToString());
  }

  // The periodic reaper: removes STOPPED tasks an hour after they stopped, then
  // DELETE_IN_PROGRESS task definitions once nothing references them (tasks and services that
  // held them stop later than the delete call), then container instances an hour after they were
  // deregistered.
  std::thread reaper;
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  bool reaper_stop = false;  // GUARDED_BY(reaper_mu)

  // Removes sessions that expired more than a day ago, a bounded number per pass.
  void ReapExpiredSessions() {
    for (int batch = 0; batch < 8; ++batch) {
      auto reaped = sessions->ReapExpired(SystemClock::Get().Now(), 500);
      if (!reaped.ok()) fmt::print(stderr, "paddock: session reaper: {}\n", reaped.status().ToString());
      if (!reaped.ok() || *reaped < 500) return;
    }
  }

  // Removes the edges whose lease lapsed, with their holds, a bounded number per pass.
  void ReapLapsedDrainHolds() {
    for (int batch = 0; batch < 8; ++batch) {
      auto reaped = drain->ReapExpired(SystemClock::Get().Now(), 16);
      if (!reaped.ok()) fmt::print(stderr, "paddock: drain-hold reaper: {}\n", reaped.status().ToString());
      if (!reaped.ok() || *reaped < 16) return;
    }
  }

  void ReaperLoop() {
    std::unique_lock lock(reaper_mu);
    while (!reaper_cv.wait_for(lock, std::chrono::seconds(30), [&] { return reaper_stop; })) {
      lock.unlock();
      auto stopped = tasks->ReapStopped(SystemClock::Get().Now());
      if (!stopped.ok()) fmt::print(stderr, "paddock: task reaper: {}\n", stopped.status().ToString());
      auto reaped = task_definitions->ReapAllDeleting();
      if (!reaped.ok()) fmt::print(stderr, "paddock: task-definition reaper: {}\n", reaped.status().ToString());
      auto inactive = container_instances->ReapInactive(SystemClock::Get().Now());
      if (!inactive.ok()) fmt::print(stderr, "paddock: container-instance reaper: {}\n", inactive.status().ToString());
      auto services_reaped = services->ReapInactive(SystemClock::Get().Now());
      if (!services_reaped.ok()) fmt::print(stderr, "paddock: service reaper: {}\n", services_reaped.status().ToString());
      ReapExpiredSessions();
      ReapLapsedDrainHolds();
      // Secrets whose recovery window ended (issue 12).
      auto secrets_reaped = secrets_manager->secrets().ReapDeleted();
      if (!secrets_reaped.ok()) fmt::print(stderr, "paddock: secret reaper: {}\n", secrets_reaped.status().ToString());
      // issue 12: CloudWatch Logs retention (a pass every 10 minutes at most).
      if (Status pruned = logs->PruneIfDue(SystemClock::Get().Now()); !pruned.ok())
        fmt::print(stderr, "paddock: logs retention: {}\n", pruned.ToString());
      lock.lock();
    }
  }
};

StatusOr<std::unique_ptr<store::Store>> OpenNodeStore(const ServerConfig& config) {
  if (!config.store_url.empty()) {
    // The read cache answers the hot Describe paths from memory (store/postgres/postgres_store.h).
    ASSIGN_OR_RETURN(auto pg, store::PostgresStore::Open(
                                  {.url = config.store_url, .schemas = NodeSchemas(), .cache_bytes = 64 << 20}));
    return std::unique_ptr<store::Store>(std::move(pg));
  }
  store::SqliteOptions options;
  options.path = (fs::path(config.state_dir) / "paddock.db").string();
  options.schemas = NodeSchemas();
  ASSIGN_OR_RETURN(auto lite, store::SqliteStore::Open(options));
  return std::unique_ptr<store::Store>(std::move(lite));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() { Stop(); }

StatusOr<std::unique_ptr<Node>> Node::Open(const ServerConfig& config) {
  RETURN_IF_ERROR(ValidateConfig(config));
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->fargate_agent = FargateAgentId(config);
  // 0700: the store holds every tenant's secrets (common/private_files.h).
  RETURN_IF_ERROR(MakePrivateDir(config.state_dir));
  ASSIGN_OR_RETURN(impl->store, OpenNodeStore(config));
  impl->postgres = dynamic_cast<store::PostgresStore*>(impl->store.get());
  // A state directory from before per-VPC address pools (schema 7): move its addresses over.
  RETURN_IF_ERROR(vpc::UpgradeLegacyIpam(*impl->store));
  impl->accounts = std::make_unique<iam::Accounts>(*impl->store, SystemClock::Get());
  impl->clusters = std::make_unique<ecs::cluster::Clusters>(*impl->store);
  impl->account_settings = std::make_unique<ecs::setting::AccountSettings>(*impl->store);
  impl->capacity_providers = std::make_unique<ecs::capacity::CapacityProviders>(*impl->store);
  impl->clusters->SetAccountSettings(impl->account_settings.get());
  impl->clusters->SetCapacityProviders(impl->capacity_providers.get());
  impl->account_setting_reaper = std::make_unique<AccountSettingReaper>("account settings", *impl->account_settings);
  impl->capacity_provider_reaper =
      std::make_unique<CapacityProviderReaper>("capacity providers", *impl->capacity_providers);
  impl->task_definitions = std::make_unique<ecs::taskdef::TaskDefinitions>(
      *impl->store, ecs::taskdef::RegisterRules{.short_timings = config.short_timings});
  impl->container_instances = std::make_unique<ecs::instance::ContainerInstances>(*impl->store, *impl->clusters);
  const agent::remote::HostResources machine = agent::remote::DetectHost();
  // This host's capacity: on a shared database, the node of this server's own Fargate agent.
  impl->fargate = std::make_unique<ecs::task::FargateCapacity>(
      FargateLimitsFor(config, machine.cpu, machine.memory),
      config.store_url.empty() ? std::string(ecs::task::kDefaultFargateNode) : impl->fargate_agent);
  impl->tasks = std::make_unique<ecs::task::Tasks>(*impl->store, *impl->task_definitions, *impl->clusters,
                                                    impl->fargate_agent, impl->container_instances.get(),
                                                    impl->fargate.get());
  impl->container_instances->SetAgentTimeout(std::chrono::seconds(config.agent_timeout_seconds));
  // On a shared store a server's own [[ec2_instance]]s are lost like any host when their heartbeats
  // stop (Impl::FenceLoop and the watchdog stop their containers first; a clean stop forgets them).
  impl->container_instances->SetSweepInProcess(impl->postgres != nullptr);
  // The node identity names its agents' VPC namespaces on a host (cli/node_network.h).
  ASSIGN_OR_RETURN(std::string network_identity, NetworkIdentity(*impl->store));
  agent::InProcessOptions control_options;
  control_options.max_waiters = static_cast<size_t>(config.agent_long_polls);
  control_options.network_identity = network_identity;
  impl->control =
      std::make_unique<agent::InProcessControl>(*impl->tasks, impl->container_instances.get(), control_options);
  // Drain before stop (issue 14): every agent, in process or remote, waits on the edges' holds.
  impl->drain_lookup = std::make_unique<ecs::drain::TasksLookup>(*impl->tasks);
  impl->drain = std::make_unique<ecs::drain::DrainHolds>(*impl->store, *impl->drain_lookup);
  impl->drain_reaper = std::make_unique<DrainReaper>("drain holds", *impl->drain);
  impl->control->SetDrainHolds(impl->drain.get());
  // Agents fence themselves this long after they last heard from the control plane (zero: no
  // host-loss sweep, no fence): `paddock agent`s by their polls, this server's Fargate agent by its
  // host's offer (Impl::FenceLoop).
  const std::chrono::milliseconds fence_after = std::max(
      std::chrono::milliseconds::zero(), ecs::instance::AgentFenceTime(std::chrono::seconds(HostLostSeconds(config)),
                                                                       std::chrono::seconds(config.agent_timeout_seconds)));
  impl->fence_after_time = fence_after;
  // A long-poll returns in time to keep its instance connected.
  impl->agent_service = std::make_unique<agent::remote::AgentService>(
      *impl->control, *impl->container_instances,
      agent::remote::AgentServiceOptions{
          .max_wait = std::min<std::chrono::milliseconds>(std::chrono::seconds(20),
                                                          std::chrono::seconds(config.agent_timeout_seconds) / 3),
          .max_drain_waiters = static_cast<size_t>(config.agent_long_polls),
          .fence_after = fence_after});
  impl->services = std::make_unique<ecs::service::Services>(
      *impl->store, *impl->task_definitions, *impl->clusters,
      ecs::service::Quotas{.services_per_cluster = config.quotas.services_per_cluster,
                           .tasks_per_service = config.quotas.tasks_per_service});
  {
    const SchedulerConfig& sc = config.scheduler;
    sched::SchedulerOptions so;
    // Unique per process, and prefixed with what names this server: its host and state directory.
    // The directory's lock (cli/state_lock.h) keeps that to one running process, so a lease held
    // under the prefix is an earlier life's (killed, or stopped without releasing it), taken over
    // at once with a new epoch instead of waited out.
    so.successor_of = ServerName(config) + ":";
    so.holder = fmt::format("{}{}:{}", so.successor_of, getpid(), RandomString(8, "0123456789abcdef"));
    so.lease_ttl = std::chrono::seconds(sc.lease_seconds);
    so.resync_interval = std::chrono::seconds(sc.resync_seconds);
    so.settle = std::chrono::seconds(sc.settle_seconds);
    so.backoff_base = std::chrono::seconds(sc.backoff_base_seconds);
    so.backoff_cap = std::chrono::seconds(sc.backoff_cap_seconds);
    so.host_lost = std::chrono::seconds(HostLostSeconds(config));
    so.service_written = [feed = &impl->change_feed](const ecs::service::ServiceKey& key) {
      feed->Publish(key.scope.account, console::ChangeKind::kEcs);
    };
    impl->scheduler = std::make_unique<sched::Scheduler>(*impl->store, *impl->services, *impl->tasks,
                                                         impl->container_instances.get(), SystemClock::Get(), so);
  }
  impl->task_definitions->AddReferenceCheck(impl->tasks->reference_check());
  impl->task_definitions->AddReferenceCheck(impl->services->reference_check());
  impl->clusters->AddUsage(impl->services->cluster_usage());
  impl->service_reaper = std::make_unique<ServiceReaper>("services", *impl->services);
  impl->clusters->AddUsage(impl->tasks->cluster_usage());
  impl->clusters->AddUsage(impl->container_instances->cluster_usage());
  impl->container_instance_reaper =
      std::make_unique<ContainerInstanceReaper>("container instances", *impl->container_instances);
  impl->task_reaper = std::make_unique<TaskReaper>("tasks", *impl->tasks);
  impl->cluster_reaper = std::make_unique<ClusterReaper>("clusters", *impl->clusters);
  impl->taskdef_reaper = std::make_unique<TaskDefinitionReaper>("task definitions", *impl->task_definitions);
  impl->security_groups = std::make_unique<vpc::SecurityGroups>(*impl->store);
  // The security groups the agents enforce (agent/vpc_networks.h).
  impl->control->SetNetworkPolicyProvider(
      [groups = impl->security_groups.get()](const Scope& scope) { return groups->PolicyFor(scope); });
  impl->security_group_reaper = std::make_unique<SecurityGroupReaper>("security groups", *impl->security_groups);
  ASSIGN_OR_RETURN(impl->ecs_model, aws::ServiceModel::Parse(ecs::api::EcsModelJson()));
  ASSIGN_OR_RETURN(std::string token_key, TokenKey(*impl->store));
  impl->ecs = std::make_unique<ecs::api::EcsService>(
      *impl->ecs_model, ecs::api::Owners{impl->clusters.get(), impl->task_definitions.get(), impl->tasks.get(),
                                          impl->container_instances.get(), impl->services.get(),
                                          impl->account_settings.get(), impl->capacity_providers.get()},
      aws::TokenCodec(token_key));
  // IAM (issue 11): roles, users and policies; the authorizer that decides every call of a
  // non-root principal with them; STS's view of the roles.
  impl->iam_directory = std::make_unique<iam::Directory>(*impl->store, SystemClock::Get());
  impl->iam_reaper = std::make_unique<IamReaper>("iam", *impl->iam_directory);
  impl->authorizer = std::make_unique<iam::api::PolicyAuthorizer>(*impl->iam_directory, SystemClock::Get());
  impl->roles = std::make_unique<iam::api::IamRoleDirectory>(*impl->iam_directory, *impl->authorizer);
  aws::FrontOptions front_options;
  front_options.auth.accept_any_credentials = config.accept_any_credentials;
  front_options.auth.default_account = AccountId(config.default_account);
  front_options.rate_limits = config.api_rate_limits == "aws";
  // --accept-any-credentials is the emulator's mode: anyone is root, nothing is authorized.
  if (!config.accept_any_credentials) front_options.authorizer = impl->authorizer.get();
  if (config.access_log) front_options.observer = StdoutAccessLog();
  // Every write an account makes through the API tells its console watches (issue 17); an agent's
  // reports reach them through the task owner's listener instead.
  front_options.call_succeeded = [feed = &impl->change_feed](const aws::CallContext& ctx, std::string_view service) {
    if (!ctx.principal.agent_of.empty() || console::ActionOnlyReads(ctx.action)) return;
    if (std::optional<console::ChangeKind> kind = console::ChangeKindOfService(service))
      feed->Publish(ctx.scope.account, *kind);
  };
  impl->sessions = std::make_unique<sts::Sessions>(*impl->store);
  impl->session_reaper = std::make_unique<SessionReaper>("sts sessions", *impl->sessions);
  impl->credentials =
      std::make_unique<NodeCredentials>(*impl->accounts, impl->container_instances->agents(), *impl->sessions);
  impl->front = std::make_unique<aws::ApiFront>(front_options, SystemClock::Get(), *impl->credentials);
  impl->front->AddJsonService(impl->ecs.get());
  impl->front->AddJsonService(impl->agent_service.get());
  impl->drain_service = std::make_unique<ecs::drain::api::DrainService>(*impl->drain);
  impl->front->AddJsonService(impl->drain_service.get());
  impl->ec2 = std::make_unique<ec2::api::Ec2Service>(*impl->store, *impl->security_groups, aws::TokenCodec(token_key));
  impl->ec2->SetInstanceSource(impl->container_instances->ec2_instances());  // DescribeInstances
  impl->front->AddQueryService(impl->ec2.get());
  impl->sts = std::make_unique<sts::api::StsService>(*impl->sessions, impl->roles.get());
  impl->front->AddQueryService(impl->sts.get());
  // issue 12: SSM Parameter Store and Secrets Manager (below) seal with <state-dir>/keys/master.key.
  ASSIGN_OR_RETURN(impl->keys, kms::KeyRing::Open(config.state_dir));
  RETURN_IF_ERROR(CheckNodeKeyOfStore(*impl->store, *impl->keys));
  ASSIGN_OR_RETURN(impl->ssm, ssm::api::SsmModule::Open(*impl->store, *impl->keys, token_key));
  impl->front->AddJsonService(&impl->ssm->service());
  // issue 12: CloudWatch Logs, on its own store so that ingest never queues behind ECS writes in
  // this process (on PostgreSQL its own writer and readers; the commits of every store of the
  // database still take turns under its one write lock, docs/scaling.md).
  if (config.store_url.empty()) {
    ASSIGN_OR_RETURN(impl->logs, logs::api::LogsModule::Open(config.state_dir, token_key));
  } else {  // one log for every server of the database: its own connections, the same tables
    ASSIGN_OR_RETURN(auto logs_store,
                     store::PostgresStore::Open({.url = config.store_url, .readers = 4, .schemas = {logs::kSchema}}));
    ASSIGN_OR_RETURN(impl->logs, logs::api::LogsModule::OpenOn(std::move(logs_store), token_key));
  }
  impl->front->AddJsonService(&impl->logs->service());
  ASSIGN_OR_RETURN(impl->iam_api, iam::api::IamService::Create(*impl->iam_directory, *impl->accounts));
  impl->iam_api->SetAuthorizer(impl->authorizer.get());  // SimulatePrincipalPolicy decides as live calls do
  impl->front->AddQueryService(impl->iam_api.get());
  // issue 12: Secrets Manager; values sealed with the same key ring as SSM's.
  ASSIGN_OR_RETURN(impl->secrets_manager,
                   secretsmanager::api::SecretsManagerModule::Open(*impl->store, *impl->keys, token_key));
  impl->front->AddJsonService(&impl->secrets_manager->service());
  ASSIGN_OR_RETURN(impl->cloudmap, cloudmap::api::CloudMapModule::Open(*impl->store, token_key));  // issue 13
  impl->front->AddJsonService(&impl->cloudmap->service());
  impl->console = std::make_unique<console::ConsoleService>(impl->change_feed);  // issue 17
  impl->front->AddJsonService(impl->console.get());
  impl->ecs->SetNamespaceLookup([registry = &impl->cloudmap->registry()](const Scope& scope, std::string_view ns) {
    return registry->ServiceArnsIn(scope, ns);  // ListServicesByNamespace (issue 13)
  });
  impl->discovery = std::make_unique<CloudMapDiscovery>(impl->cloudmap->registry());
  impl->tasks->SetDiscovery(impl->discovery.get());
  impl->tasks->SetOverlayAddress(config.agent.overlay_address);
  impl->services->SetDiscovery(impl->discovery.get());
  // Task roles (issue 11): the control plane mints every task's role credentials, for its own
  // agents and over the agent protocol (GetTaskCredentials) for `paddock agent`s, from the same
  // roles as AssumeRole's.
  impl->task_role_sessions = std::make_unique<sts::ServiceRoleSessions>(*impl->sessions, impl->roles.get(),
                                                                        SystemClock::Get(), "ecs-tasks.amazonaws.com");
  // Every launch checks that ECS can assume its task and execution roles (ecs/task/role_check.h);
  // the emulator mode launches made-up role ARNs as before.
  if (!config.accept_any_credentials)
    impl->tasks->SetRoleCheck([roles = impl->task_role_sessions.get()](const AccountId& account, std::string_view arn) {
      return roles->MayAssume(account, arn);
    });
  impl->control->SetTaskCredentialsProvider(
      [roles = impl->task_role_sessions.get()](const AccountId& account, std::string_view role_arn,
                                               std::string_view task_id) -> StatusOr<agent::metadata::RoleCredentials> {
        ASSIGN_OR_RETURN(sts::IssuedCredentials c, roles->Get(account, role_arn, task_id));
        return agent::metadata::RoleCredentials{std::string(role_arn), c.access_key_id.str(), c.secret_access_key,
                                                c.session_token, c.expiration};
      });
  // issue 12: a task's secrets, read at its start as its execution role (cli/execution_resources.h).
  impl->control->SetExecutionResourcesProvider(MakeExecutionResourcesProvider(
      impl->ssm->parameters(), impl->secrets_manager->secrets(),
      config.accept_any_credentials ? nullptr : impl->authorizer.get(), SystemClock::Get(), impl->roles.get()));
  // issue 12: the awslogs driver's streams and events, written as the execution role (cli/log_shipping.h);
  // a container whose options name no mode takes its account's defaultLogDriverMode (the root's value).
  ecs::setting::AccountSettings* settings = impl->account_settings.get();
  store::Store* settings_store = impl->store.get();
  auto default_log_driver_mode = [settings, settings_store](const Scope& scope) {
    std::string mode;  // a failed read: AWS's default
    settings_store
        ->Read([&](store::ReadTxn& txn) -> Status {
          ASSIGN_OR_RETURN(ecs::setting::Setting s,
                           settings->Effective(txn, scope, ecs::setting::RootArn(scope),
                                               ecs::setting::SettingName::kDefaultLogDriverMode));
          mode = s.value;
          return OkStatus();
        })
        .IgnoreError();
    return mode;
  };
  impl->control->SetLogsProvider(MakeLogsProvider(impl->logs->groups(),
                                                  config.accept_any_credentials ? nullptr : impl->authorizer.get(),
                                                  SystemClock::Get(), impl->roles.get(),
                                                  std::move(default_log_driver_mode)));
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

StatusOr<uint16_t> Node::Start() {
  ASSIGN_OR_RETURN(auto host_port, SplitListen(impl_->config.listen));
  // The scheduler's cues, set before anything can call the owners.
  sched::Scheduler* scheduler = impl_->scheduler.get();
  console::ChangeFeed* feed = &impl_->change_feed;
  impl_->services->SetChangeListener([scheduler, feed](const ecs::service::ServiceKey& key) {
    scheduler->Wake(key);
    feed->Publish(key.scope.account, console::ChangeKind::kEcs);
  });
  impl_->tasks->SetTaskListener([impl = impl_.get()](const Scope& scope) {
    impl->change_feed.Publish(scope.account, console::ChangeKind::kEcs);
    std::lock_guard lock(impl->task_listener_mu);
    if (impl->task_listener) impl->task_listener(scope);
  });
  impl_->tasks->SetGroupListener([scheduler](const Scope& scope, const std::string& cluster, const std::string& group) {
    if (group.starts_with("service:")) scheduler->Wake(ecs::service::ServiceKey{scope, cluster, group.substr(8)});
  });
  impl_->container_instances->SetChangeListener([scheduler, feed](const Scope& scope, const std::string&) {
    scheduler->WakeAll();
    feed->Publish(scope.account, console::ChangeKind::kEcs);
  });
  // A VPC's network policy changes with its groups and its tasks' addresses
  // (vpc/security_groups.h): the in-process agents apply it at once; `paddock agent`s on their
  // next pass (at most a second later).
  vpc::SecurityGroups* security_groups = impl_->security_groups.get();
  impl_->tasks->SetAddressListener([security_groups](const Scope& scope) { security_groups->NotifyPolicyChanged(scope); });
  agent::InProcessControl* control = impl_->control.get();
  security_groups->SetChangeListener([control](const Scope&) { control->NotifyAll(); });
  // Several servers on one database (issue 16): what another server commits wakes here what this
  // server's own owners' listeners wake for its own writes — its agents and the agents
  // long-polling it, the scheduler, an edge in its process —, by the tables it wrote (none: any
  // may have changed). A SQLite file is one server's: nothing to hear.
  ecs::task::Tasks* tasks = impl_->tasks.get();
  Impl* impl = impl_.get();
  auto on_other_servers_commit = [control, scheduler, tasks, impl](const std::vector<std::string>& tables) {
    auto wrote = [&](std::initializer_list<std::string_view> names) {
      return tables.empty() || std::any_of(tables.begin(), tables.end(), [&](const std::string& t) {
               return std::find(names.begin(), names.end(), t) != names.end();
             });
    };
    if (wrote({"tasks"})) tasks->NotifyChangedElsewhere();  // agents' assignments, the edge's routes
    if (wrote({"security_groups", "security_group_members", "security_group_rules", "vpc_addresses"}))
      control->NotifyAll();  // the VPCs' network policies
    if (wrote({"services", "task_by_group", "container_instances"})) scheduler->WakeAll();
    if (wrote({"server_presence"}) && impl->presence && impl->config.api_rate_limits == "aws")
      impl->RecountPresence();  // the rate limits' share
  };
  // Made before the listener that reads it starts; a node only opened (`paddock admin`) has none.
  if (impl_->postgres) {
    impl_->presence = std::make_unique<sched::Presence>(*impl_->store, ServerName(impl_->config), kPresenceTtl);
    impl_->postgres->SetChangeListener(std::move(on_other_servers_commit));
    // The consoles of every server hear every server's changes.
    impl_->console_relay = std::make_unique<ConsoleRelay>(*impl_->postgres, impl_->change_feed);
  }
  impl_->StartPresence();
  http::ServerOptions options;
  options.host = host_port.first;
  options.port = host_port.second;
  // On PostgreSQL an inline read waits for a round trip (the read cache's generation, or the read
  // itself): more I/O threads let more of them wait at once, and share the cache's round trips.
  options.io_threads = impl_->postgres ? 8 : 2;
  options.worker_threads = 64;
  // Describe*/List* only read a WAL snapshot and never wait for a commit, so they run on the I/O
  // thread that read them, saving two thread hand-offs; everything else goes to a worker.
  options.run_inline = [](const http::Request& r) {
    std::string_view target = r.GetHeader("X-Amz-Target");
    size_t dot = target.rfind('.');
    std::string_view op = dot == std::string_view::npos ? target : target.substr(dot + 1);
    return op.starts_with("Describe") || op.starts_with("List") || (target.empty() && r.Path().starts_with("/console"));
  };
  // Every body is at most 1 MiB but PutLogEvents' and the agent protocol's ShipLogs (a remote
  // agent's batch for it): a batch at CloudWatch's limit (1,048,576 bytes of messages, 26 counted
  // per event) is larger as JSON — up to about 6.8 MiB when every byte of its messages is a
  // control character escaped as \u00XX (docs/contracts/logs.md).
  options.large_body_bytes = 8 << 20;
  options.large_body_header = "X-Amz-Target";
  options.allow_large_body = [](std::string_view target) {
    static const std::string kShipLogs = fmt::format("{}.ShipLogs", agent::protocol::kAgentTargetPrefix);
    return target == "Logs_20140328.PutLogEvents" || target == kShipLogs;
  };
  aws::ApiFront* front = impl_->front.get();
  impl_->server = std::make_unique<http::Server>(options, [front](const http::Request& r) {
    if (std::optional<http::Response> page = console::ServeConsole(r)) return std::move(*page);  // issue 17
    return front->Handle(r);
  });
  ASSIGN_OR_RETURN(uint16_t port, impl_->server->Start());
  // DiscoverPollEndpoint's answer: this server, reachable at its listen address (a wildcard
  // listen answers loopback; agents on other hosts are given --endpoint anyway).
  std::string host = host_port.first;
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  impl_->ecs->SetEndpoint(fmt::format("http://{}:{}", host, port));
  impl_->StartAgent();
  impl_->StartOfferingFargate();
  if (impl_->config.images.cluster_registry && impl_->images) {
    // One image store per cluster as users see it: the registry listens where the API does unless
    // the config says otherwise (registry/cluster_registry.h).
    registry::RegistryOptions ro;
    ro.dir = (fs::absolute(impl_->config.state_dir) / "registry").string();
    ro.listen_host = host_port.first;
    if (!impl_->config.images.cluster_registry_listen.empty()) {
      ASSIGN_OR_RETURN(auto listen, SplitListen(impl_->config.images.cluster_registry_listen));
      ro.listen_host = listen.first;
      ro.port = listen.second;
    }
    impl_->cluster_registry = std::make_unique<registry::ClusterRegistry>(std::move(ro));
    impl_->agent_service->SetImageAccessProvider(registry::AccessProvider(*impl_->cluster_registry, *impl_->images));
  }
  impl_->StartEc2Instances();
  impl_->reaper = std::thread([impl = impl_.get()] { impl->ReaperLoop(); });
  impl_->scheduler->Start();
  return port;
}

void Node::Stop() {
  if (!impl_) return;
  if (impl_->control) impl_->control->Shutdown();  // long-polls answer now, so the server can stop
  impl_->change_feed.Shutdown();                   // and the console's watches end
  if (impl_->server) impl_->server->Stop();
  impl_->StopPresence();  // after the API: no request is served at the old share
  if (impl_->console_relay) impl_->console_relay->Stop();  // before the store closes
  if (impl_->scheduler) impl_->scheduler->Stop();  // no launch after the API has stopped
  {
    std::lock_guard lock(impl_->reaper_mu);
    impl_->reaper_stop = true;
  }
  impl_->reaper_cv.notify_all();
  if (impl_->reaper.joinable()) impl_->reaper.join();
  if (impl_->ec2_loop.joinable()) impl_->ec2_loop.join();
  impl_->ForgetEc2Heartbeats();
  // Withdrawn and forgotten: not lost, nothing to fence.
  if (impl_->fence_watch) impl_->fence_watch->StopCleanly();
  if (impl_->puller) impl_->puller->Shutdown();  // drivers pulling return at once (task left PENDING)
  if (impl_->cluster_registry) impl_->cluster_registry->Stop();  // after the API: no grant is in flight
  for (auto& e : impl_->ec2_instances) {
    if (!e.agent) continue;
    impl_->control->Unwatch(e.watch);
    e.agent->Stop();
  }
  if (impl_->agent) {
    impl_->control->Unwatch(impl_->agent_watch);
    impl_->agent->Stop();
  }
  if (impl_->stand_in) {
    impl_->control->Unwatch(impl_->agent_watch);
    impl_->stand_in->Stop();
  }
  if (impl_->metadata) impl_->metadata->Stop();  // after the agents, whose drivers it serves
  if (impl_->dns) impl_->dns->Stop();
  if (impl_->runtime) impl_->runtime->RemoveEmptyCgroups();  // running tasks' stay for re-adoption
  if (impl_->local_store) impl_->local_store->Close();
  if (impl_->store) impl_->store->Close();
}

iam::Accounts& Node::accounts() { return *impl_->accounts; }
store::Store& Node::store() { return *impl_->store; }
ecs::service::Services& Node::services() { return *impl_->services; }
ecs::task::Tasks& Node::tasks() { return *impl_->tasks; }
ecs::drain::DrainHolds& Node::drain_holds() { return *impl_->drain; }

StatusOr<BootstrapIdentity> Node::BootstrapAccount() {
  if (!impl_->bootstrap_identity) {
    const std::string credentials = (fs::absolute(impl_->config.state_dir) / "credentials").string();
    ASSIGN_OR_RETURN(impl_->bootstrap_identity, EnsureBootstrapAccount(*impl_->accounts, *impl_->store, credentials));
  }
  return *impl_->bootstrap_identity;
}

std::vector<iam::AccountReaper*> Node::reapers() {
  // Services first (nothing relaunches their tasks), then tasks: they hold addresses (and with
  // them group memberships) and pin task definitions; then the security groups.
  return {impl_->service_reaper.get(),         impl_->task_reaper.get(),
          impl_->security_group_reaper.get(),  impl_->container_instance_reaper.get(),
          impl_->taskdef_reaper.get(),         impl_->cluster_reaper.get(),
          impl_->capacity_provider_reaper.get(), impl_->account_setting_reaper.get(),
          impl_->session_reaper.get(),         impl_->iam_reaper.get(),
          impl_->ssm.get(),                    impl_->secrets_manager.get(),
          impl_->logs.get(),                   impl_->cloudmap.get(),  // issues 12, 13
          impl_->drain_reaper.get()};                                      // issue 14
}

std::vector<std::string> Node::ImplementedEcsActions() const { return impl_->ecs->ImplementedActions(); }

Status Node::ImportRootfs(const std::string& rootfs, const std::string& reference) {
  if (!impl_->images) return FailedPrecondition("this node has no image store");
  return impl_->images->ImportRootfs(rootfs, reference).status();
}

void Node::SetControllerDoor(std::function<http::Response(const http::Request&)> door) {
  if (impl_->metadata) impl_->metadata->SetControllerDoor(std::move(door));
}

void Node::SetConsoleParts(console::NodeParts parts) {
  if (!parts.owner.str().empty() && impl_->images) {  // the node's own part: its image store
    parts.images = [images = impl_->images.get()]() -> StatusOr<std::vector<console::ConsoleImage>> {
      ASSIGN_OR_RETURN(std::vector<agent::images::ImageInfo> infos, images->List());
      std::vector<console::ConsoleImage> out;
      for (const auto& i : infos)
        out.push_back({.reference = i.reference,
                       .manifest_digest = i.manifest_digest.str(),
                       .size = i.size,
                       .created_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                            i.created_at.time_since_epoch())
                                            .count()});
      return out;
    };
  }
  impl_->console->SetNodeParts(std::move(parts));
}

console::ChangeFeed& Node::change_feed() { return impl_->change_feed; }

void Node::SetTaskListener(std::function<void(const Scope&)> listener) {
  std::lock_guard lock(impl_->task_listener_mu);
  impl_->task_listener = std::move(listener);
}

const std::vector<HostCheck>& Node::host_checks() const { return impl_->host_checks; }

void Node::Quiesce() {
  if (impl_->scheduler) impl_->scheduler->Stop();
  {
    std::lock_guard lock(impl_->reaper_mu);
    impl_->reaper_stop = true;
  }
  impl_->reaper_cv.notify_all();
  if (impl_->reaper.joinable()) impl_->reaper.join();
  if (impl_->ec2_loop.joinable()) impl_->ec2_loop.join();  // CanConfirm reads ec2_instances after this
}

bool Node::CanConfirm(std::string_view agent_id) const {
  if (agent_id == impl_->fargate_agent) return impl_->agent != nullptr;
  for (const auto& e : impl_->ec2_instances)
    if (e.arn == agent_id) return e.agent != nullptr;
  return impl_->server != nullptr;  // a `paddock agent` reports through the API
}

Status Node::StartAgentsOnly(const std::vector<std::string>& agent_ids) {
  impl_->StartAgent();
  if (!impl_->runtime) return OkStatus();  // the stand-in stops what no agent started; nothing else can
  for (const std::string& id : agent_ids) {
    if (id == impl_->fargate_agent) continue;
    if (std::any_of(impl_->ec2_instances.begin(), impl_->ec2_instances.end(),
                    [&](const Impl::Ec2Instance& e) { return e.arn == id; }))
      continue;
    RETURN_IF_ERROR(impl_->StartInstanceAgent(id));
  }
  return OkStatus();
}

namespace {

// kSection: the rest of the file stays (the user's ~/.aws files); kWholeFile: the file holds only
// this section (the state directory's own files, which Paddock alone writes).
enum class IniScope { kSection, kWholeFile };

// Replaces (or appends) the INI section `[section]` of `path` with `body`, keeping the rest.
Status UpsertIniSection(const fs::path& path, const std::string& section, const std::string& body, IniScope scope) {
  std::string existing;
  if (scope == IniScope::kSection) {
    std::ifstream in(path);
    if (in) existing.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string out;
  bool skipping = false;
  size_t pos = 0;
  while (pos < existing.size()) {
    size_t eol = existing.find('\n', pos);
    std::string line = existing.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? existing.size() : eol + 1;
    std::string trimmed = line;
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\r')) trimmed.pop_back();
    if (!trimmed.empty() && trimmed.front() == '[') skipping = trimmed == "[" + section + "]";
    if (!skipping) out += line + "\n";
  }
  if (!out.empty() && out.back() != '\n') out += "\n";
  if (!out.empty() && out.substr(out.size() >= 2 ? out.size() - 2 : 0) != "\n\n") out += "\n";
  out += "[" + section + "]\n" + body;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // A private temporary file (0600 from the start: it holds a secret), written in full and
  // fsync'd before it replaces the user's file, so a failure never leaves a truncated one.
  std::string tmp = path.string() + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Unavailable(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  bool written = fchmod(fd, 0600) == 0;
  for (size_t done = 0; written && done < out.size();) {
    ssize_t n = write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) done += static_cast<size_t>(n);
  }
  written = written && fsync(fd) == 0;
  written = close(fd) == 0 && written;
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    unlink(tmp.c_str());
    return Unavailable(fmt::format("cannot write {}: {}", path.string(), reason));
  }
  return OkStatus();
}

}  // namespace

StatusOr<BootstrapResult> Bootstrap(Node& node, const ServerConfig& config, const std::string& endpoint,
                                    bool update_home) {
  BootstrapResult r;
  const fs::path dir = fs::absolute(config.state_dir);
  r.credentials_path = (dir / "credentials").string();
  r.config_path = (dir / "config").string();

  // The recorded bootstrap account and a valid key of it (cli/node_owner.h).
  ASSIGN_OR_RETURN(BootstrapIdentity me, node.BootstrapAccount());
  r.account = me.account.str();
  r.access_key_id = me.access_key_id;
  r.notes = me.notes;

  // The profile's name: "paddock", unless the user's files hold another Paddock's (aws_profile.h).
  std::optional<ProfileFiles> home = update_home ? HomeProfileFiles() : std::nullopt;
  r.profile = home ? ChooseProfileName(*home, config.state_dir, endpoint, me.access_key_id) : "paddock";

  const std::string cred_body =
      fmt::format("aws_access_key_id = {}\naws_secret_access_key = {}\n", me.access_key_id, me.secret_access_key);
  const std::string config_body = ProfileConfigBody(config.region, endpoint);
  // The state directory's own files hold this one profile, under the same name as in ~/.aws.
  RETURN_IF_ERROR(UpsertIniSection(r.credentials_path, r.profile, cred_body, IniScope::kWholeFile));
  RETURN_IF_ERROR(UpsertIniSection(r.config_path, "profile " + r.profile, config_body, IniScope::kWholeFile));
  if (home) {
    RETURN_IF_ERROR(UpsertIniSection(home->credentials, r.profile, cred_body, IniScope::kSection));
    RETURN_IF_ERROR(UpsertIniSection(home->config, "profile " + r.profile, config_body, IniScope::kSection));
    r.notes.push_back(fmt::format("profile '{}' written to {} and {}", r.profile, home->credentials, home->config));
    if (r.profile != "paddock")
      r.notes.push_back(fmt::format("profile 'paddock' in {} belongs to another Paddock and was left as it is; "
                                    "this server's profile is '{}'",
                                    home->credentials, r.profile));
  }
  return r;
}

}  // namespace paddock::cli
