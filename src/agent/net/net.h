// agent/net: the host side of ECS's awsvpc network mode. Each task gets a network namespace of
// its own with one interface, `eth0`, whose other end (the host veth) is a port of the node's
// bridge; the bridge carries the gateway address (.1, AWS's router address) of every subnet it
// serves, so the host reaches each task at its IP and tasks reach each other and the host.
//
//   NetworkOptions options;                                   // bridge paddock0, 172.31.{0,16,32}.1/20
//   RETURN_IF_ERROR(EnsureBridge(options));                   // at agent start; idempotent
//   ASSIGN_OR_RETURN(TaskNetwork tn, CreateTaskNetwork(options, task_id, ip, 20, gateway));
//   ... containers join tn.netns_path (OCI linux.namespaces[network].path) ...
//   RETURN_IF_ERROR(DeleteTaskNetwork(options, tn));          // idempotent
//
// After an agent restart, ListTaskNamespaces finds the namespaces this instance made (by their
// prefix): those of tasks still running are re-adopted (TaskNetworkFor recomputes the record),
// the others deleted.
//
// Addresses come from vpc/ipam; this module does not choose them. The plumbing is done by
// iproute2 (`ip -batch -`, two runs per task); its stderr is quoted in every error.
//
// Names. The namespace is `<netns_prefix><task id>`. Interface names must fit in 15 characters
// (IFNAMSIZ), so the host veth is `<netns_prefix>` followed by hex digits of a hash of the task
// id, as many as fit. The prefix is at most 7 characters, leaving at least 8 hex digits (32 bits;
// 11 digits, 44 bits, with the default "pdk-"). Should two live tasks' names collide anyway, the
// second create fails with kAlreadyExists; it never touches the other task's interface.
// eth0's MAC address is derived from the task's IP (02:70:<the four bytes of the IP>), so it is
// stable across re-adoption, like an ENI's.
//
// Bridge mode (ECS networkMode "bridge", Docker's docker0 model). Each bridge-mode task gets a
// namespace of its own (same names as above) on a second bridge, `paddock1`, whose network
// (172.17.0.0/16 by default, like docker0) is not a VPC subnet: the bridge carries its .1, tasks
// get addresses from this module's allocator (a file under `state_dir`, see below), and leave
// the host with MASQUERADE. Containers' ports are reached through the host's ports:
//
//   RETURN_IF_ERROR(EnsureBridgeNetwork(options));                 // at agent start; idempotent
//   ASSIGN_OR_RETURN(TaskNetwork tn, CreateBridgeTaskNetwork(options, task_id));
//   ASSIGN_OR_RETURN(std::vector<NetworkBinding> b, PublishPorts(options, tn, mappings));
//   ... containers join tn.netns_path; b goes into the containers' networkBindings ...
//   RETURN_IF_ERROR(UnpublishPorts(options, task_id));             // idempotent
//   RETURN_IF_ERROR(DeleteBridgeTaskNetwork(options, task_id));    // idempotent; frees the address
//
// Host mode (ECS networkMode "host") makes nothing: containers use the host's namespace
// (runtime::NetworkMode::kHost). ReserveHostPorts checks that the task's ports are free on the
// host and records them against other tasks; UnpublishPorts releases them.
//
// Addresses (bridge mode). `<state_dir>/bridge-addresses` lists "<ip> <task id>" per task holding
// an address, rewritten (temp file, fsync, rename) under flock on `<state_dir>/bridge-addresses.lock`,
// so it survives agent restarts and several processes sharing it never hand out one address
// twice. A task asking again gets the address it holds. Addresses are handed out round-robin from
// .2 up (a cursor in the file), so a freed address is not reused at once (stale ARP entries and
// conntrack state of the previous holder). BridgeTaskNetworkFor recomputes a re-adopted task's
// record; ListBridgeAddresses lists the holders so the agent can free those of tasks it no longer
// runs (DeleteBridgeTaskNetwork).
//
// Ports. Published ports are iptables DNAT rules, and the rules are the record: no other state,
// so they stay across agent restarts with the tasks they serve, and several instances sharing the
// chains see each other's. Every rule carries the comment `<netns_prefix><task id>` (the task's
// namespace name, even for host mode), by which UnpublishPorts finds a task's rules and
// ListPublished this instance's. Chains (`<chain_prefix>` = "PADDOCK"):
//   nat    PADDOCK-DNAT         one DNAT rule per mapping; jumped to from PREROUTING (traffic from
//                               outside) and OUTPUT (the host's own connections, to 127.0.0.1 too)
//                               for destinations of type LOCAL
//   nat    PADDOCK-PORTS        host-mode reservations: RETURN rules nothing jumps to (a record)
//   nat    PADDOCK-POSTROUTING  per bridge-mode bridge: MASQUERADE for its subnet leaving by another
//                               interface (outbound), for 127.0.0.0/8 entering it (the host's
//                               loopback connections to published ports) and for DNATed
//                               connections from the bridge back into it (a task reaching a
//                               published port by a host address: hairpin)
//   filter PADDOCK-FORWARD      inserted first in FORWARD: accepts the bridge-mode bridge's
//                               outgoing and intra-bridge traffic and what enters it as a reply or
//                               DNATed (always), and the awsvpc bridge's traffic (EnsureForwarding,
//                               only when FORWARD could drop it: policy not ACCEPT, or another
//                               firewall's rules, e.g. Docker's -P FORWARD DROP with br_netfilter)
//   raw    PADDOCK-PREROUTING   drops packets for 127.0.0.0/8 arriving on a bridge-mode bridge:
//                               that bridge has route_localnet=1 (needed for the loopback DNAT),
//                               which would otherwise let tasks reach the host's loopback services
// Why DNAT and not a userland proxy (Docker's docker-proxy): a proxy lives in the agent and dies
// with it, while the rules keep serving re-adopted tasks across an agent restart; the cost is
// route_localnet, fenced by the raw rule. A DNAT rule does not hold the host port, so host
// processes binding it later are not prevented (their traffic is taken by the rule), and
// allocation must read the rules, not just probe by binding.
//
// Dynamic host ports (hostPort 0) come from the range ECS's agent uses on Linux: the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), else 49153-65535, or
// `dynamic_port_first`-`dynamic_port_last` when set (ECS_DYNAMIC_HOST_PORT_RANGE). As ECS's
// agent, the search goes on from the last port handed out, skipping ports published or reserved
// by any task (the rules) and ports a bind probe finds in use (SO_REUSEADDR, as ECS's Go probe).
// Static host ports get the same two checks. Choice and rule insertion happen under a flock on
// /run/lock/<chain_prefix>-ports.lock, so two tasks (of any instance using those chains) never get
// one port. Port ranges (containerPortRange) are not supported.
//
// Thread safety: every function may be called from any thread. Calls for the same task must not
// run concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace paddock::agent::net {

struct NetworkOptions {
  // The bridge every task's host veth is a port of. At most 15 characters.
  std::string bridge = "paddock0";
  // The address the bridge carries in each subnet it serves: the subnet's .1 and its length.
  std::vector<std::string> gateway_cidrs = {"172.31.0.1/20", "172.31.16.1/20", "172.31.32.1/20"};
  // Starts the name of every namespace and host veth this instance makes, so that several
  // instances (and tests) on one machine never see or touch each other's. 1 to 7 characters
  // from [A-Za-z0-9_.-].
  std::string netns_prefix = "pdk-";

  // Bridge mode: the second bridge and the address it carries (its network's .1 and length;
  // tasks get the rest). Must not overlap another interface's network.
  std::string bridge_mode_bridge = "paddock1";
  std::string bridge_mode_gateway_cidr = "172.17.0.1/16";
  // Where the bridge-mode address allocator keeps its file (the agent's state dir). Required by
  // CreateBridgeTaskNetwork and its kin; nothing else uses it.
  std::string state_dir;
  // Starts the name of every iptables chain this module makes: 1-16 of [A-Z0-9_]. Tests use
  // their own, so they never touch a running Paddock's rules.
  std::string chain_prefix = "PADDOCK";
  // Dynamic host ports; 0, 0: the kernel's ephemeral range, else 49153-65535 (ECS's default).
  uint16_t dynamic_port_first = 0;
  uint16_t dynamic_port_last = 0;
};

enum class Protocol { kTcp, kUdp };

// "tcp" / "udp", as ECS writes them.
std::string_view ProtocolName(Protocol protocol);

// One of a container's portMappings.
struct PortMapping {
  uint16_t container_port = 0;  // 1-65535
  uint16_t host_port = 0;       // 0: dynamic (bridge mode); host mode: 0 or container_port
  Protocol protocol = Protocol::kTcp;
  std::string host_ip;          // empty: every host address ("0.0.0.0"); else a local IPv4 address
};

// An ECS NetworkBinding: {"bindIP", "containerPort", "hostPort", "protocol"}.
struct NetworkBinding {
  std::string bind_ip = "0.0.0.0";
  uint16_t container_port = 0;
  uint16_t host_port = 0;
  Protocol protocol = Protocol::kTcp;

  friend bool operator==(const NetworkBinding&, const NetworkBinding&) = default;
};

// One published (bridge) or reserved (host) port, as ListPublished finds it.
struct PublishedPort {
  std::string task_id;
  NetworkBinding binding;
  uint32_t container_ip = 0;  // the task's address (bridge mode); 0 for a host-mode reservation
};

struct TaskNetwork {
  std::string netns_name;   // "pdk-<task id>"
  std::string netns_path;   // "/var/run/netns/pdk-<task id>": what containers join
  std::string host_veth;    // "pdk-1a2b3c4d5e6" (the bridge port)
  std::string mac_address;  // eth0's, "02:70:ac:1f:00:05"
  uint32_t ip = 0;          // eth0's IPv4 address, host order
};

// Creates the bridge if it does not exist, gives it a fixed MAC address (else the kernel would
// take the lowest of its ports', and tasks' ARP entries for the gateway would go stale as tasks
// come and go), adds each gateway address it lacks and brings it up. Safe to call again, and
// when the bridge was left by an earlier run. Fails with kFailedPrecondition when an interface
// of that name exists and is not a bridge.
Status EnsureBridge(const NetworkOptions& options);

// Gives `interface` the address `cidr` ("169.254.170.2/32") unless it has it already; idempotent.
// kFailedPrecondition when there is no such interface, kInternal (quoting iproute2) when the
// kernel refuses. For the task metadata endpoint's address on the tasks' bridge.
Status EnsureInterfaceAddress(std::string_view interface, std::string_view cidr);

// Creates task `task_id`'s namespace, its veth pair (the host end on the bridge; eth0 inside,
// with `ip`/`prefix_length`, up, as is lo) and its default route via `gateway`. On failure
// nothing of it is left behind. Fails with kAlreadyExists when the task's namespace or host veth
// exists already (a repeated call), kFailedPrecondition when the bridge is missing,
// kInvalidArgument for a task id outside [A-Za-z0-9_-]{1,64} or bad addresses, and kInternal
// (quoting iproute2) when the kernel refuses a step, e.g. a gateway outside eth0's subnet.
StatusOr<TaskNetwork> CreateTaskNetwork(const NetworkOptions& options, std::string_view task_id, uint32_t ip,
                                        int prefix_length, uint32_t gateway);

// Deletes the host veth (which takes eth0 with it) and then the namespace. What is already gone
// is skipped, so a repeated call succeeds. The host veth goes first and explicitly: the kernel
// dismantles a deleted namespace asynchronously, and its veth would otherwise linger (and block
// a reused name) for a while. Processes still inside the namespace keep it alive but cut off.
// Refuses (kInvalidArgument) names that do not start with the instance's prefix.
Status DeleteTaskNetwork(const NetworkOptions& options, const TaskNetwork& network);

// The names of the namespaces under /var/run/netns that start with the instance's prefix,
// sorted. No namespace directory at all is an empty list.
StatusOr<std::vector<std::string>> ListTaskNamespaces(const NetworkOptions& options);

// The names and address CreateTaskNetwork uses for `task_id` and `ip`, without touching the
// system: for re-adopting a task after a restart, or for cleaning up after a crashed create.
StatusOr<TaskNetwork> TaskNetworkFor(const NetworkOptions& options, std::string_view task_id, uint32_t ip);

// The task id of a namespace name from ListTaskNamespaces; empty when `netns_name` does not
// start with the prefix.
std::string TaskIdOfNamespace(const NetworkOptions& options, std::string_view netns_name);

// Adds PADDOCK-FORWARD's ACCEPT rules for `options.bridge` when FORWARD could drop its traffic
// (see Ports above); nothing when FORWARD is an empty ACCEPT chain. No iptables binary: nothing.
// Idempotent. The agent calls it after EnsureBridge. (EnsureBridgeNetwork does it for its bridge.)
Status EnsureForwarding(const NetworkOptions& options);

// --- Bridge mode ---

// Creates the bridge-mode bridge as EnsureBridge does (fixed MAC, its address, up), sets its
// route_localnet, and installs the chains, jumps and per-bridge rules described above; what
// exists already is kept. Fails with kFailedPrecondition when another interface carries an
// address in the bridge's network (e.g. Docker's docker0 on 172.17.0.0/16: choose another
// bridge_mode_gateway_cidr), or when iptables is missing.
Status EnsureBridgeNetwork(const NetworkOptions& options);

// Removes what EnsureBridgeNetwork made for this bridge: the per-bridge rules and the bridge
// (the chains and jumps stay: other instances may use them). Idempotent. For uninstalling and tests.
Status RemoveBridgeNetwork(const NetworkOptions& options);

// Removes the jumps to every `<chain_prefix>-*` chain and the chains with all their rules, of
// every instance using that prefix. Idempotent. For tests (with a test-only prefix).
Status RemoveChains(const NetworkOptions& options);

// Allocates task `task_id` an address on the bridge-mode network (the one it holds already, if
// any) and creates its namespace there, as CreateTaskNetwork does, with the bridge's address as
// gateway. On failure the namespace is not left behind and a newly allocated address is freed.
// kFailedPrecondition: no state_dir, or the bridge missing (EnsureBridgeNetwork first);
// kResourceExhausted: no address left; kAlreadyExists: the namespace exists.
StatusOr<TaskNetwork> CreateBridgeTaskNetwork(const NetworkOptions& options, std::string_view task_id);

// The record of a bridge-mode task from the address it holds (re-adoption). kNotFound: none.
StatusOr<TaskNetwork> BridgeTaskNetworkFor(const NetworkOptions& options, std::string_view task_id);

// Deletes the task's namespace and host veth (DeleteTaskNetwork) and frees its address. What is
// gone already is skipped: idempotent, and fine for a task that never got an address.
Status DeleteBridgeTaskNetwork(const NetworkOptions& options, std::string_view task_id);

// Task id -> address, of every task holding a bridge-mode address.
StatusOr<std::map<std::string, uint32_t>> ListBridgeAddresses(const NetworkOptions& options);

// --- Ports ---

// Publishes `mappings` of the bridge-mode task `network` (from CreateBridgeTaskNetwork or
// BridgeTaskNetworkFor): a DNAT rule per mapping from hostPort (chosen when 0) on the host's
// addresses (or host_ip) to the task's address and containerPort. All or nothing: on failure no
// rule of this call remains. Returns one binding per mapping, in order, as ECS's agent submits
// them (IPv4 only: its default is ECS_EXCLUDE_IPV6_PORTBINDING=true).
// kInvalidArgument: a bad mapping (port 0, a host_ip that is not IPv4), or one host port and
// protocol twice; kAlreadyExists: a static host port published or reserved by any task, or in
// use on the host (the message names which); kResourceExhausted: no free dynamic port.
// Several calls for one task (e.g. one per container) add to its rules; a host port it holds
// already counts as taken.
StatusOr<std::vector<NetworkBinding>> PublishPorts(const NetworkOptions& options, const TaskNetwork& network,
                                                   const std::vector<PortMapping>& mappings);

// Host mode: checks each mapping's port (host_port, which must be 0 or container_port) is free on
// the host and not published or reserved by another task, and records it for the task (a
// PADDOCK-PORTS rule). All or nothing; errors as PublishPorts. The bindings have
// hostPort = containerPort; they are for the agent's own use (task metadata): ECS's agent
// submits no networkBindings for host (or awsvpc) tasks.
StatusOr<std::vector<NetworkBinding>> ReserveHostPorts(const NetworkOptions& options, std::string_view task_id,
                                                       const std::vector<PortMapping>& mappings);

// The range dynamic host ports come from (first, last): the options' when set, else the kernel's
// ephemeral range, else 49153-65535, as ECS's agent on Linux.
std::pair<uint16_t, uint16_t> DynamicHostPortRange(const NetworkOptions& options);

// Removes every rule of the task (published ports and host-mode reservations). Idempotent.
Status UnpublishPorts(const NetworkOptions& options, std::string_view task_id);

// This instance's published and reserved ports (rules whose comment starts with netns_prefix),
// sorted by task id then host port: after a restart, the agent unpublishes the tasks it does not
// re-adopt.
StatusOr<std::vector<PublishedPort>> ListPublished(const NetworkOptions& options);

}  // namespace paddock::agent::net
