// Settings of `paddock server` and `paddock up`: defaults, then a TOML config file, then flags.
//
//   # paddock.toml
//   listen = "127.0.0.1:4566"
//   state_dir = "./.paddock"
//   accept_any_credentials = false
//   default_account = "000000000000"
//   api_rate_limits = "off"        # or "aws"
//
//   [images]                       # pulling task images from registries (skopeo)
//   insecure_registries = ["registry.lan:5000"]  # plain HTTP / unchecked TLS; loopback ones always
//   insecure_loopback = true       # localhost, 127.0.0.0/8, [::1] need no listing (as in Docker)
//   local_registries = ["127.0.0.1:5000"]  # registries on this node's own addresses tasks may pull from
//   pull_timeout_seconds = 300     # one pull, start to finish; then CannotPullContainerError
//   auth_file = ""                 # containers-auth.json for every pull; "" = anonymous
//   max_unpacked_bytes = 21474836480  # an image unpacking past this (or the free space) is refused
//   cluster_registry = true        # serve the node's images to `paddock agent`s (docker-registry)
//   cluster_registry_listen = ""   # its HOST:PORT; "": the API's host, a free port
//
//   [agent]                        # the node's agents: limits on each task
//   pids_per_task = 4096           # processes and threads a task may have at once; 0 = no bound
//   pids_per_node = 28672          # all tasks together; default pid_max less max(4096, 10%); 0 = no bound
//   flows_per_task = 4096          # tracked connections a task address may hold (conntrack); 0 = no bound
//   new_flows_per_second = 2000    # new connections a task address may open per second; 0 = no bound
//   overlay_address = ""           # this host's address in the hosts' VXLAN overlay; "" = none (docs/scaling.md)
//
//   agent_long_polls = 16          # agents waiting in PollAssignments at once (docs/agent-protocol.md)
//   agent_timeout_seconds = 60     # agentConnected: last heartbeat at most this old
//   host_lost_seconds = 300        # an instance's agent gone this long: its tasks STOPPED (TerminationNotice);
//                                  # at least 2 x agent_timeout_seconds (docs/contracts/task.md, "Losing a host");
//                                  # unset: the larger of 300 and 2 x agent_timeout_seconds
//
//   [scheduler]                    # the service scheduler (docs/contracts/service.md)
//   settle_seconds = 40            # RUNNING time before a task without health checks is healthy (AWS's 40)
//   resync_seconds = 10            # the periodic full pass over every service
//   backoff_base_seconds = 10      # first delay after a service's tasks fail to start; doubles
//   backoff_cap_seconds = 900      # the longest delay (AWS: 15 minutes)
//   lease_seconds = 10             # the leader lease's time to live
//
//   [quotas]                       # AWS's service quotas, adjustable as on AWS
//   services_per_cluster = 5000
//   tasks_per_service = 5000
//   fargate_vcpus_per_account = 4000  # vCPUs of an account's non-STOPPED Fargate tasks, all regions
//
//   [fargate]                      # the node's Fargate capacity (ecs/task/fargate_capacity.h)
//   cpu = 2048                     # CPU units; default cores x 1024
//   memory = 3840                  # MiB; default MemTotal minus 256 MiB
//   overcommit = 1.0               # Fargate tasks may reserve this many times cpu and memory
//
//   [dns]                          # the DNS server of awsvpc tasks (agent/dns_service.h)
//   upstreams = ["10.0.0.2", "127.0.0.1:5353"]  # where it forwards; default: the host's
//                                  # /etc/resolv.conf nameservers that are not loopback
//
//   [[ec2_instance]]               # an in-process EC2 container instance (repeatable)
//   cluster = "prod"               # registered once the cluster exists in its account
//   account = "123456789012"       # the owner; default: the account `paddock up` bootstrapped
//                                  # (with accept_any_credentials: default_account)
//   host_access = false            # true: its tasks may bind host paths, add capabilities, ...
//   cpu = 2048                     # CPU units; default cores x 1024
//   memory = 3072                  # MiB; default MemTotal minus 256 MiB
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "ecs/task/fargate_capacity.h"

namespace paddock::cli {

// The [images] table: how the node's agent pulls images (agent/images/skopeo_puller.h).
struct ImagesConfig {
  std::vector<std::string> insecure_registries;  // "host" or "host:port", as in image names
  bool insecure_loopback = true;
  // Registries on the node's own addresses (loopback, link-local, its interfaces', its tasks')
  // that tasks may pull from, as in image names; every other one is refused (agent/images).
  std::vector<std::string> local_registries;
  int64_t pull_timeout_seconds = 300;
  std::string auth_file;
  // No import or pull may unpack more than this (agent/images ImageStoreOptions).
  int64_t max_unpacked_bytes = int64_t{20} << 30;
  // The cluster's registry (registry/cluster_registry.h): `paddock agent`s pull the node's images
  // from it. Off: they pull only from images' own registries.
  bool cluster_registry = true;
  std::string cluster_registry_listen;  // "HOST:PORT" (port 0: a free one); "": the API's host, a free port
};

// The [agent] table: limits the node's agents put on each task (agent/agent.h AgentOptions).
struct AgentLimitsConfig {
  int64_t pids_per_task = 4096;  // 0: no bound
  // All the node's tasks together (the pids.max of /paddock/<instance>). -1: the host's pid_max
  // less a reserve of max(4096, 10%) (runtime::DefaultNodePidsMax); 0: no bound.
  int64_t pids_per_node = -1;
  // Each task address's share of the node's connection tracking (agent/net FlowLimits); 0: none.
  int64_t flows_per_task = 4096;
  int64_t new_flows_per_second = 2000;
  // Issue 16 §3: this host's IPv4 address on the network the hosts share, where other hosts' agents
  // send its VPCs' overlay traffic (agent/net NetworkOptions::overlay_address); "": no overlay.
  std::string overlay_address;
};

// One [[ec2_instance]]: a container instance whose agent runs inside the server.
struct Ec2InstanceConfig {
  std::string cluster;
  // The account it registers in (12 digits). Empty: the owner default (cli/ec2_owner.h), never
  // "the first account".
  std::string account;
  // Whether its tasks may have host-level grants (ecs/taskdef/host_grants.h): host paths, added
  // capabilities, devices, privileged, host pid/ipc/network namespaces. Off by default.
  bool host_access = false;
  int64_t cpu = 0;     // 0: cores x 1024
  int64_t memory = 0;  // 0: MemTotal minus the reserve
};

// The [scheduler] table (sched/scheduler.h), in seconds.
struct SchedulerConfig {
  // AWS's wait for tasks without health checks (sched::kDefaultSettle): a revision whose tasks exit
  // within it fails its deployment instead of completing (issue 10).
  int64_t settle_seconds = 40;
  int64_t resync_seconds = 10;
  int64_t backoff_base_seconds = 10;
  int64_t backoff_cap_seconds = 900;
  int64_t lease_seconds = 10;
};

// The [quotas] table (ecs/service/services.h Quotas; the Fargate one: ecs/task/fargate_capacity.h).
struct QuotasConfig {
  int64_t services_per_cluster = 5000;
  int64_t tasks_per_service = 5000;
  // Generous by default: the node's capacity is what bounds a lone account. AWS starts new
  // accounts at 6 per Region and raises the quota with use.
  int64_t fargate_vcpus_per_account = 4000;
};

// The [fargate] table: what the node's Fargate tasks may reserve, in total, of this host.
struct FargateConfig {
  int64_t cpu = 0;          // CPU units; 0: cores x 1024
  int64_t memory = 0;       // MiB; 0: MemTotal minus the reserve
  double overcommit = 1.0;  // admitted = cpu (memory) x overcommit
};

// The [dns] table: the DNS server of the node's awsvpc tasks (agent/dns_service.h).
struct DnsConfig {
  // Where names it does not answer are forwarded ("10.0.0.2", "127.0.0.1:5353", "[::1]:53"),
  // reached from the host. Empty: the host's /etc/resolv.conf nameservers that are not loopback.
  std::vector<std::string> upstreams;
};

struct ServerConfig {
  std::string listen = "127.0.0.1:4566";
  std::string state_dir = "./.paddock";
  // The control plane's store ([store] url, --store): empty, the SQLite file paddock.db in
  // state_dir; a postgres:// or postgresql:// URL, that PostgreSQL database (store/postgres).
  std::string store_url;
  bool accept_any_credentials = false;
  std::string default_account = "000000000000";
  std::string api_rate_limits = "off";  // "aws" | "off"
  std::string region = "us-east-1";     // the region written into the AWS profile
  bool access_log = false;  // one line per API request on stdout (cli/access_log.h)
  // A test mode: RegisterTaskDefinition accepts timings below ECS's minimums (restartAttemptPeriod,
  // healthCheck interval and timeout, a Fargate startTimeout/stopTimeout: ecs/taskdef/value_ranges.h).
  bool short_timings = false;
  ImagesConfig images;
  AgentLimitsConfig agent;
  int64_t agent_long_polls = 16;
  int64_t agent_timeout_seconds = 60;
  int64_t host_lost_seconds = 0;  // 0: unset (HostLostSeconds)
  std::vector<Ec2InstanceConfig> ec2_instances;
  SchedulerConfig scheduler;
  QuotasConfig quotas;
  FargateConfig fargate;
  DnsConfig dns;
};

// When a silent agent's instance is lost: host_lost_seconds, or when unset the larger of
// ecs::instance::kHostLost (300) and twice agent_timeout_seconds.
int64_t HostLostSeconds(const ServerConfig& config);

// Reads the keys above from a TOML file into `config`; unknown keys are an error.
Status LoadConfigFile(const std::string& path, ServerConfig& config);
// Checks values (listen is HOST:PORT, api_rate_limits is aws|off, default_account and every
// ec2_instance account 12 digits, pull_timeout_seconds 1..86400, insecure_registries are bare
// HOST[:PORT]).
Status ValidateConfig(const ServerConfig& config);
// What the node's Fargate tasks may reserve ([fargate], [quotas]) on a host of `host_cpu` CPU units
// and `host_memory` MiB (agent/remote DetectHost): the configured or the host's cpu and memory,
// each times overcommit (rounded down), and the per-account vCPU quota.
ecs::task::FargateLimits FargateLimitsFor(const ServerConfig& config, int64_t host_cpu, int64_t host_memory);
// Splits "HOST:PORT".
StatusOr<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen);

}  // namespace paddock::cli
