// agent: the node agent that runs the tasks the task owner assigns to it — inside the server, or
// in `paddock agent` (cli/agent_command.h) over the agent protocol.
//
// One loop thread wakes when its Control says the assignments may have changed (Control::Watch →
// Notify) and at least every `poll_interval`; it reads Control::Assignments(agent_id) and gives
// each new task a driver thread of its own, which takes it through
//
//   PENDING (images resolved from the local store) → ACTIVATING (the task's network) →
//   containers created and started in dependsOn order → RUNNING (health checks, restarts) →
//   (an essential container exits for good, or desiredStatus STOPPED) → DEACTIVATING (held there
//   while the edges routing to it drain it: Control::AwaitDrain, unless an essential container
//   has exited) → STOPPING
//   (SIGTERM in reverse dependsOn order, SIGKILL after stopTimeout) → containers deleted →
//   task netns deleted → DEPROVISIONING → STOPPED (with each container's exit code)
//
// reporting every transition through Control::Report (agent/control.h). Every wait is bounded.
//
//   Agent agent(control, images, runtime, AgentOptions{.agent_id = "fargate-local", .instance = "1a2b3c4d"});
//   RETURN_IF_ERROR(agent.Start());
//   ...
//   agent.Stop();  // before the store closes
//
// Names. Container ids are "pdk-<instance>-<task id>-<index>"; the task netns is agent/net's
// "<netns_prefix><task id>". Both are derived from the task alone, so a task found assigned but
// without a driver (the agent was restarted) can be cleaned up by name.
//
// Logs (agent/logs.h): each container's stdout and stderr is a FIFO in the task's log directory,
// which the agent's one LogPump thread moves into the container's log file, rotating it by
// rename so that it never passes max_log_bytes. A re-adopted container's FIFO is attached again.
//
// Reconciling (agent/sweep.h). What the control plane no longer lists does not run: a driver
// whose task disappears from Assignments (its account deleted, its record reaped) tears the task
// down without reporting; a task listed with lastStatus STOPPED while its containers run (marked
// so behind the agent's back) is torn down and reported STOPPED again, which is the confirmation
// that releases its address (ecs::task::Tasks::ReportState). Every `sweep_interval`, and at
// start, containers labelled as this agent's whose task is neither listed nor driven are removed
// (containers, then the network, then the task's files).
//
// Agent restart. Stop() leaves running containers and their netns in place. The next agent
// re-adopts what it finds: a RUNNING task whose desiredStatus is still RUNNING is watched again
// (containers found by id, nothing restarted; one that died meanwhile is reported STOPPED with its
// exit code, or a reason saying it is unknown, and an essential one stops the task; one missing
// is reported gone and an essential one stops the task). A task caught mid-launch (PENDING,
// ACTIVATING) and still wanted RUNNING is launched again: what the interrupted launch made is
// removed by name, unreported, and the launch starts over under the same ARN and address, so an
// acknowledged RunTask runs (only the relaunch's own failure stops it). One caught mid-teardown,
// or stopped meanwhile, is torn down with the stop code it has. Re-adopted containers' start
// times are unknown, so health start periods count from the re-adoption; their restart policies
// no longer apply (a restart needs the task's files and cgroup, which are not rebuilt).
//
// Network modes (docs/contracts/task.md, Networking): awsvpc — a netns at the task's address,
// attached to its VPC's router namespace with the VPC's security groups in force before the
// containers start, re-applied whenever the VPC's policy changes (agent/vpc_networks.h),
// networkBindings hostPort = containerPort at that address; bridge —
// a netns on the bridge-mode bridge and each container's portMappings published
// (CreateBridgeTaskNetwork, PublishPorts), the bindings reported with the container's RUNNING
// change; host — the host's namespace, ports reserved (ReserveHostPorts), no bindings; none — a
// private namespace. Teardown removes them by task id. With AgentOptions::metadata every container
// of a task with a network gets the task metadata endpoint, whose documents are the Task as
// Control::DescribeTask answers plus what the agent knows of its containers.
//
// Container semantics (docs/contracts/task.md): containers start in dependsOn order (START,
// COMPLETE, SUCCESS, HEALTHY; bounded by the dependency's startTimeout, if it has one); health checks run
// through Runtime::Exec on their own threads and are reported (container and task healthStatus)
// with RUNNING reports; restartPolicy restarts an exited container in place (same id: deleted,
// created and started again); every exit is reported with its exitCode (OOM: its reason).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "agent/container_spec.h"
#include "agent/control.h"
#include "agent/images/image_store.h"
#include "agent/logs.h"
#include "agent/metadata/metadata.h"
#include "agent/net/net.h"
#include "agent/runtime/runtime.h"
#include "agent/vpc_networks.h"
#include "common/clock.h"
#include "common/status.h"

namespace paddock::agent {

// Most processes and threads one task may have alive at once, unless the node says otherwise.
inline constexpr uint64_t kDefaultPidsPerTask = 4096;

struct AgentOptions {
  std::string agent_id = "fargate-local";
  // Goes into every container id so that several nodes on one host never share one. 1 to 8
  // characters from [a-z0-9].
  std::string instance;
  // Its netns_prefix must be this agent's alone (NetnsPrefixFor): at start the agent removes the
  // published ports, bridge-mode addresses and namespaces under it that belong to no task assigned
  // to it. state_dir: where bridge-mode addresses are allocated (shared by every agent of the host:
  // they share the bridge-mode bridge).
  net::NetworkOptions network;
  // false: tasks get no bridge, no netns, no published or reserved ports (their containers get a
  // private namespace). For the agent's unit tests, which run on FakeRuntime without root.
  bool task_networks = true;
  // kAllowed only for a container instance whose operator allowed host-level grants: then
  // host.sourcePath volumes bind that path of this host, any capability may be added, and so on
  // (ecs/taskdef/host_grants.h). Otherwise, and always for Fargate's agent, a task asking for one
  // fails with ResourceInitializationError (agent/container_spec.h CheckSupported).
  HostAccess host_access = HostAccess::kRefused;
  // The task metadata endpoint (agent/metadata): every container of a task with a network
  // (awsvpc, bridge, host) is registered and gets ECS_CONTAINER_METADATA_URI_V4 (and _URI).
  // Null: no endpoint. Must outlive the agent.
  metadata::MetadataService* metadata = nullptr;
  // The DNS server of awsvpc tasks (agent/dns_service.h), served in each VPC namespace: their
  // containers without dnsServers get `nameserver 169.254.169.253`. Null: none (they get the
  // host's nameservers). Must outlive the agent.
  DnsService* dns = nullptr;
  std::chrono::milliseconds poll_interval = std::chrono::seconds(1);
  // The io.paddock.agent annotation of every container this agent creates: the agent removes
  // leftovers carrying it (agent/sweep.h). Unique among the agents sharing a runtime, and stable
  // across restarts; NodeAgentOptions sets the agent id. Empty: no sweep.
  std::string container_owner;
  // How often leftover containers are looked for (one runtime List each time).
  std::chrono::milliseconds sweep_interval = std::chrono::seconds(5);
  // How long a VPC router namespace outlives the agent's last task in it (VpcNetworks::Options).
  std::chrono::milliseconds vpc_linger = std::chrono::seconds(30);
  // How often a running task's containers are checked for exits.
  std::chrono::milliseconds monitor_interval = std::chrono::milliseconds(200);
  // SIGTERM → SIGKILL when a container definition sets no stopTimeout; ECS's default.
  std::chrono::seconds default_stop_timeout = std::chrono::seconds(30);
  // The longest the agent keeps a stopping task in DEACTIVATING while edges drain it (Teardown's
  // drain wait, Control::AwaitDrain), whatever its control plane answers.
  std::chrono::seconds max_drain_wait = protocol::kMaxDrainTimeout;
  // Upper bound on any container's stopTimeout (ECS caps it at 120 s).
  std::chrono::seconds max_stop_timeout = std::chrono::seconds(120);
  // How long a container's dependants wait for it to COMPLETE, SUCCEED or become HEALTHY when its
  // definition sets no startTimeout. 0, ECS's way: as long as the task lives (StopTask ends the
  // wait; ECS recommends setting startTimeout for that reason).
  std::chrono::seconds default_start_timeout = std::chrono::seconds(0);
  // Container logs go to <logs_dir>/<task id>/<container name>.log (stdout and stderr in one
  // file), through a FIFO the agent's LogPump owns (agent/logs.h). Empty: /dev/null.
  std::string logs_dir;
  // Each task's generated /etc files (hosts, resolv.conf, hostname) and volume directories go to
  // <tasks_dir>/<task id>/ (agent/task_files.h), removed when the task stops. Empty: no /etc files,
  // and a task with volumes fails to start.
  std::string tasks_dir;
  // Each container's log is rotated (renamed to .1) before it would grow past this, by the pump
  // as it writes: a container's logs never take more than twice this on disk.
  uint64_t max_log_bytes = 10 * 1024 * 1024;
  // A stopped task's log directory is removed this long after its STOPPED marker (the same hour
  // the task record is kept for before ReapStopped removes it).
  std::chrono::seconds keep_logs = std::chrono::hours(1);
  // The task cgroup's pids.max (agent/task_files.h): a fork loop exhausts its own task's share
  // and no one else's. 0: no bound. Containers' ulimits nproc (RLIMIT_NPROC) apply within it.
  uint64_t pids_per_task = kDefaultPidsPerTask;
};

// A netns_prefix (7 characters: "p", 5 hex digits, "-") of the agent `agent_id` of the node or
// `paddock agent` tagged `instance`: distinct agents on one host get distinct prefixes (but for a
// 1-in-2^20 collision), so the leftover cleanup of one never touches another's tasks.
std::string NetnsPrefixFor(std::string_view instance, std::string_view agent_id);

// Where every agent of this host keeps bridge-mode addresses (NetworkOptions::state_dir): one
// file for the host, because all agents share the bridge-mode bridge and its network (an
// allocator per agent would hand two tasks one address). Under /run: the addresses die with the
// namespaces and rules at a reboot.
inline constexpr std::string_view kHostNetStateDir = "/run/paddock/net";

// The options of a node's (or `paddock agent`'s) agent `agent_id`: named by the node's `instance`
// tag, its own netns prefix (NetnsPrefixFor), the host's bridge-mode address book, logs and task
// files under `state_dir`, `metadata` (null: no endpoint), and what its tasks may do on the host.
AgentOptions NodeAgentOptions(std::string agent_id, std::string instance, const std::string& state_dir,
                              metadata::MetadataService* metadata, HostAccess host_access);

// The task metadata endpoint for the agents of a node or of `paddock agent`: as root only (else
// nullptr). For bridge- and host-mode tasks, adds 169.254.170.2 to the host's lo and listens on
// port 80, or, when another Paddock on this host holds that port, on an ephemeral port of the
// same address (the containers' URIs carry it); the host firewall lets bridge-mode tasks reach
// it (a listener bound to that address); awsvpc tasks are served in their VPC namespaces
// (VpcNetworks). The id key is kept in <state_dir>/metadata.key (0600) so a
// restarted agent serves the containers it re-adopts under the ids they have. Any failure is
// logged and answers nullptr: tasks then run without the endpoint.
std::unique_ptr<metadata::MetadataService> StartMetadataService(const std::string& state_dir);

class Agent {
 public:
  // Learns its work from `control` and reports through it (agent/control.h): InProcessControl in
  // the server, agent/remote's RemoteControl in `paddock agent`. Whoever owns `control` wakes the
  // agent (Control::Watch → Notify).
  Agent(Control& control, images::ImageStore& images, runtime::Runtime& runtime, AgentOptions options,
        Clock& clock = SystemClock::Get());
  ~Agent();

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Starts the loop thread. REQUIRES: not started.
  Status Start();
  // Stops the loop and every driver (promptly: drivers abandon their task where they are) and
  // joins them. Containers keep running. Idempotent.
  void Stop();
  // Wakes the loop: something was assigned or stopped.
  void Notify();
  // True once a pass found nothing to do: no task listed, none driven, no leftover container.
  bool Idle() const { return idle_.load(); }

 private:
  class Driver;

  void Loop();
  // net::EnsureHostFirewall (and EnsureForwarding) once per agent (again after a failure), on the
  // first awsvpc task.
  Status EnsureHostNetwork();
  static VpcNetworks::Options VpcOptions(const AgentOptions& options);
  // net::EnsureBridgeNetwork once per agent, on the first bridge-mode task.
  Status EnsureBridgeNetwork();
  // With every sweep (the first answer of Assignments, then every sweep_interval): removes the
  // published ports, bridge addresses and namespaces under this agent's netns_prefix of tasks not
  // in `assigned` (task ids: those listed or driven); at the first sweep, also the host's VPC
  // namespaces that hold no task.
  void CleanUpLeftovers(const std::set<std::string>& assigned);
  // One pass: start drivers for new assignments, pass stop requests, join finished drivers.
  void Reconcile();
  // Removes this agent's containers of tasks not in `keep`, then their networks and files.
  // Returns how many tasks' leftovers it found.
  size_t Sweep(const std::set<std::string>& keep);

  Control& control_;
  images::ImageStore& images_;
  runtime::Runtime& runtime_;
  const AgentOptions options_;
  Clock& clock_;
  // Moves every container's output from its FIFO to its log file (with logs_dir; made by Start,
  // stopped by Stop after the drivers). Drivers attach and detach their containers.
  std::unique_ptr<LogPump> log_pump_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;     // GUARDED_BY(mu_)
  bool notified_ = false;  // GUARDED_BY(mu_)
  std::thread loop_;

  // Touched by the loop thread only (and by Stop after the loop has been joined).
  std::map<std::string, std::unique_ptr<Driver>> drivers_;  // by task ARN
  // Tasks whose driver reported STOPPED: not driven again while Assignments still lists them.
  std::set<std::string> finished_;
  std::optional<TimePoint> last_sweep_;  // none yet: the first pass sweeps
  std::atomic<bool> idle_{false};

  // The VPCs of the agent's awsvpc tasks (their namespaces, policies, metadata listeners).
  std::unique_ptr<VpcNetworks> vpcs_;

  std::mutex bridge_mu_;
  bool bridge_ready_ = false;         // GUARDED_BY(bridge_mu_)
  bool bridge_network_ready_ = false;  // GUARDED_BY(bridge_mu_)
};

}  // namespace paddock::agent
