// agent/net: the host side of ECS's network modes. For awsvpc, each account's VPC is a network of
// its own on the node: a "VPC router namespace" per VPC, which routes between the VPC's tasks and
// enforces its security groups with nftables, and which the node reaches through a transit link.
// Tasks of two VPCs share no L2 segment and no route, even with equal addresses.
//
//   host namespace                 VPC router namespace <vpc_prefix><hash>     task namespaces
//   <transit> 169.254.1.1/32  ===  transit0 169.254.1.2/32                      eth0 172.31.0.7/20
//   route 172.31.0.7/32 dev        lo: 172.31.{0,16,32}.1/32 (the gateways),    default via 172.31.0.1
//         <transit>                    169.254.170.2/32 (task metadata)
//                                  <veth of task> ========================== eth0
//                                  route 172.31.0.7/32 dev <veth of task>
//                                  nftables table inet paddock_vpc: the VPC's security groups
//                                  nftables table inet paddock_vpc_limits: its tasks' FlowLimits
//                                  vx0: the VXLAN overlay to the VPC's tasks on other hosts (below)
//
//   NetworkOptions options;                                       // VPC prefix "pdv-", ...
//   RETURN_IF_ERROR(EnsureHostFirewall(options));                 // at agent start; idempotent
//   ASSIGN_OR_RETURN(VpcNetwork vpc, VpcNetworkFor(options, {.vpc_id = "vpc-0a1b…", .node = id}));
//   FetchedPolicy p{policy, MonotonicNanos()};                    // the VPC's, listing the new task
//   ASSIGN_OR_RETURN(TaskNetwork tn, CreateTaskNetwork(options, vpc, p, task_id, ip, 20, gateway));
//   ... containers join tn.netns_path (OCI linux.namespaces[network].path) ...
//   RETURN_IF_ERROR(ApplyVpcPolicy(options, vpc, later).status()); // when the policy changes
//   RETURN_IF_ERROR(DeleteTaskNetwork(options, tn));               // idempotent
//   ASSIGN_OR_RETURN(bool gone, RemoveVpcNetworkIfUnused(options, vpc.netns_name));
//
// The VPC router namespace. Made by the first CreateTaskNetwork of the VPC on the host, under a
// host-wide lock (/run/lock/<vpc_prefix>vpc.lock, which every create and removal takes), with
// ip_forward=1, strict rp_filter (a task cannot send from an address that is not routed to its
// own veth), proxy_arp with no delay (it answers a task's ARP for the gateway and for its
// neighbours with its own MAC: every packet between two tasks is routed through it and passes
// its forward hook; no bridge, no ARP between tasks), IPv6 off, the gateways and 169.254.170.2 on
// lo, and the transit veth pair (the same link-local pair in every VPC: routes are by device).
// Its name hashes the VPC id with the node identity (VpcRef::node, the control plane's): agents
// of one server on one host share a VPC's namespace, so their tasks reach each other as on one
// network; two servers on one host never do. The host end of the transit carries, as its ifalias,
// which (node, VPC) the namespace is for (a hash collision is refused, never shared) and which
// policy was applied last. RemoveVpcNetworkIfUnused removes a namespace that has no task veth
// left (the agent does it once the VPC has had no task of its for a while, so that a VPC whose
// tasks come and go does not pay for a new namespace every time).
//
// Security groups (vpc/policy.h) compile to one table (CompileVpcPolicy, a pure function), applied
// in one nft transaction that replaces the previous table: tracked connections survive, as EC2's
// do when a rule is revoked. The forward hook: replies pass; from the transit (the node itself,
// trusted like the future edge) everything passes; a packet from a task passes when its source is
// a member of the VPC, its new connection is within the task's FlowLimits, and the sender's
// groups' egress rules allow it, and, unless it leaves by
// the transit, the receiver's groups' ingress rules allow it; anything else is dropped. The input
// hook (the router itself): only TCP to 169.254.170.2 (the task metadata endpoint), UDP and TCP
// to port 53 of 169.254.169.253 and 172.31.0.2 (the DNS server; nothing else listens in the
// namespace) and replies. Two agents of one host may apply policies of one VPC:
// ApplyVpcPolicy never replaces a policy with one whose fetch began earlier (FetchedPolicy).
//
// The overlay (issue 16 §3). With `overlay_address` set (this host's address on the network the
// hosts share: the underlay) and a policy whose `vni` is not 0, each VPC router namespace has a
// kernel VXLAN device, vx0, and reaches the VPC's tasks on other hosts (PolicyMember::host)
// through it, by their VPC addresses, as it reaches its own host's through their veths:
//
//   host 10.0.0.1 (overlay_address)                    host 10.0.0.2
//   UDP 4789 socket of every vx0 made here  <== VXLAN, VNI of the VPC ==>  UDP 4789 socket
//   VPC router pdv-…                                   VPC router pdv-… (the same VPC)
//     vx0 vxlan id <vni> local 10.0.0.1 dstport 4789 nolearning, mtu underlay - 50,
//         MAC 02:71:0a:00:00:01 (every host's router MAC is its address: nobody asks)
//     route 172.31.0.9/32 dev vx0                      <veth of task> 172.31.0.9 (mtu of vx0, both ends)
//     neigh 172.31.0.9 lladdr 02:71:0a:00:00:02 permanent
//     fdb   02:71:0a:00:00:02 dst 10.0.0.2 (one per peer host)
//
// No multicast (no `group`), no learning: the entries are static, written by ApplyVpcPolicy (and
// PrepareVpcNetwork, CreateTaskNetwork) from the policy, after its rules (a task of another host
// is never reachable before its rules are in place), under the host-wide lock, and by difference
// only (a changed version re-programs what changed; live connections are not touched; the same
// version is nothing to do). A member listed on this host, or with no host, keeps its veth route;
// an address still routed to a veth here is never routed to the overlay. vx0 is made from the
// host's namespace straight into the router (`ip link add … netns`, under a temporary name no host
// interface has, renamed inside), so that the kernel keeps its UDP socket in the host's namespace,
// on the underlay, while the device lives in the router; it is made again when missing (a
// leftover under the temporary name is deleted first) or when the VNI, address or port differ,
// and deleted when the overlay is off. The
// record on the transit says with which overlay settings the policy in place was applied, so an
// agent restarted with other ones re-programs it (agents sharing a host must share them, as they
// share FlowLimits). The kernel allows one VXLAN device per VNI and port among those made in one
// namespace: a VNI in use fails with kAlreadyExists naming it; an overlay address that is not the
// host's, with kFailedPrecondition. RemoveVpcNetworkIfUnused deletes vx0 first (the namespace's own
// teardown is asynchronous and would hold the VNI for a while).
//
// Security across hosts. A packet from another host's task passes the router's forward hook as any
// task's does: its source must be a member, the sender's egress and the receiver's ingress must
// allow it (both routers ask), within the sender's FlowLimits; strict rp_filter on vx0 drops one
// whose source is not routed back to vx0 (a task of this host spoofed from outside). The router
// itself takes nothing from vx0 but replies (its metadata endpoint and DNS server are for its own
// host's tasks). A task must never send VXLAN to a host's underlay (a crafted packet would enter
// any VPC by its VNI): the host firewall drops whatever is forwarded from a transit or the
// bridge-mode bridge to UDP `overlay_port`, anywhere. And a host takes a VPC's VXLAN packets only
// from the hosts that run that VPC's tasks: the host firewall keeps two sets, `overlay_vnis` (the
// VNIs of this host's routers) and `overlay_peers` (host address . VNI, from the policies'
// members), and its input hook drops (and counts) a packet to `overlay_port` whose VNI (bits
// 96-119 from the UDP header on) is one of this host's and whose (source, VNI) is not admitted —
// so no other machine of the underlay, a tenant's own `paddock agent` host included, injects into
// a VPC it has no task in. SyncOverlay admits a VPC's new peer hosts before it writes anything that
// leads to them and revokes the gone ones after, by the difference with the hosts the device
// forwards to (a changed policy whose hosts did not change runs no nft); RemoveVpcNetworkIfUnused (and a router made again
// with another VNI) forgets the VNI and its hosts. The sets outlive agent restarts (the firewall is
// brought up to date, not replaced). VNIs not of this host are left alone (another control plane's
// on the host would have its own table). What this cannot stop: a machine of the underlay that
// forges a peer host's source address — the underlay must not let its machines spoof (a private
// network of the hosts, as a cloud VPC is), docs/security.md.
//
// The FlowLimits are a second table of the router (CompileVpcFlowLimits), whose chains run before
// the groups' in the same hooks (priority filter - 1): a new connection over its task's limits is
// dropped there, one within them goes on to the groups. It holds the per-address counts, so no
// policy apply touches it (a tenant provokes those: RunTask, StopTask, a rule change); it is
// written with the namespace, before any task has a veth, and replaced only when the limits
// themselves change (an agent started with others; the transit's record says which are in place),
// which starts the counts again. Agents of one host that share a VPC namespace must share their
// FlowLimits: with two settings, each would replace the other's table at its next apply.
//
// The host. The node reaches each task by a host route <ip>/32 dev <transit> (the README's
// `curl http://$IP:8080/`), added unless another VPC's transit holds that /32 already (then the
// task is not reachable from the host by plain IP: TaskNetwork::host_route is false). The host
// firewall (EnsureHostFirewall, an nftables table named after chain_prefix) keeps tasks off the
// node: from a transit or the bridge-mode bridge, the host accepts only replies (and, from the
// bridge, TCP to a listener bound to 169.254.170.2 itself: the metadata endpoint, never a service
// bound to 0.0.0.0); it forwards nothing into a
// transit but replies (no packet from one VPC, a bridge-mode task or another machine enters a
// VPC), nothing from a transit to the bridge-mode bridge but DNATed (published) connections, and
// nothing from either to UDP `overlay_port` anywhere (see "The overlay").
//
// After an agent restart, ListTaskNamespaces finds the task namespaces this instance made (by
// netns_prefix): those of tasks still running are re-adopted (TaskNetworkFor recomputes the
// record), the others deleted (DeleteTaskNetwork finds a task's veth in whichever VPC namespace
// holds it, with its host route). ListVpcNamespaces lists the host's VPC namespaces, so that the
// agent can remove those left empty.
//
// Addresses come from vpc/ipam; this module does not choose them. The plumbing is done by
// iproute2 (`ip -batch -`, run inside a namespace by a thread that joined it: common/netns.h) and
// nft (`nft -f -`); their stderr is quoted in every error.
//
// Names. The task namespace is `<netns_prefix><task id>`. Interface names must fit in 15
// characters (IFNAMSIZ), so the task's veth (in the VPC namespace, or on the bridge-mode bridge)
// is `<netns_prefix>` followed by hex digits of a hash of the task id, as many as fit. The prefix
// is at most 7 characters, leaving at least 8 hex digits (32 bits; 11 digits, 44 bits, with the
// default "pdk-"). Should two live tasks' names collide anyway, the second create fails with
// kAlreadyExists; it never touches the other task's interface. The VPC namespace and the host end
// of its transit are both `<vpc_prefix>` + hex digits of a hash of (node, VPC id). eth0's MAC
// address is derived from the task's IP (02:70:<the four bytes of the IP>), so it is stable
// across re-adoption, like an ENI's.
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
//                               DNATed (always), and the VPC transits' outgoing traffic and its
//                               replies (EnsureForwarding, only when FORWARD could drop it: policy
//                               not ACCEPT, or another firewall's rules, e.g. Docker's -P FORWARD
//                               DROP with br_netfilter)
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
// one port.
//
// Port ranges (ECS's containerPortRange, bridge mode): a mapping with container_port_last set is
// the container ports container_port..container_port_last; its host ports are a contiguous block
// of as many ports from the dynamic range (ECS's agent looks for contiguous host ports the same
// way), found by the same search from the cursor and the same checks, one DNAT rule per port. The
// binding reports both ranges (NetworkBinding's *_last). Host mode takes no ranges (ECS allows them
// only in bridge and awsvpc modes; awsvpc publishes nothing: its ports are the task's address's).
//
// Thread safety: every function may be called from any thread. Calls for the same task must not
// run concurrently; calls for one VPC may (the host-wide lock orders them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "vpc/policy.h"

namespace paddock::agent::net {

// The address every VPC router namespace (and, for bridge- and host-mode tasks, the host) serves
// the task metadata endpoint on.
inline constexpr std::string_view kMetadataAddress = "169.254.170.2";
// The VPC resolver's addresses, on every VPC router namespace's lo (the node's DNS server,
// agent/dns_service.h, listens there on 53): AWS's link-local one, and the VPC's base + 2 (every
// VPC here is a default VPC, 172.31.0.0/16; vpc/ipam never hands out a subnet's first four).
inline constexpr std::string_view kDnsAddress = "169.254.169.253";
inline constexpr std::string_view kVpcDnsAddress = "172.31.0.2";
// The transit pair: the host's end and the VPC router's end carry these in every VPC.
inline constexpr std::string_view kTransitHostAddress = "169.254.1.1";
inline constexpr std::string_view kTransitVpcAddress = "169.254.1.2";
// The VPC router's end of the transit, and the nftables table in the VPC router namespace.
inline constexpr std::string_view kTransitInside = "transit0";
inline constexpr std::string_view kVpcTable = "paddock_vpc";
// The VPC router's end of the overlay (its VXLAN device), when the overlay is on.
inline constexpr std::string_view kOverlayDevice = "vx0";
// The VPC router's table of the FlowLimits (CompileVpcFlowLimits): never rebuilt by a policy apply.
inline constexpr std::string_view kVpcLimitsTable = "paddock_vpc_limits";

// How much of the node's connection tracking one task may take. The kernel's table
// (nf_conntrack_max entries, counted in each network namespace a flow crosses: its VPC router's
// and, leaving the node, the host's) is the node's: one full table drops every new flow of every
// task there. Enforced per task address with nftables: in each VPC router's forward hook for its
// tasks, in the host table's forward hook for the bridge-mode bridge. Flows the node itself opens
// toward tasks are not counted.
struct FlowLimits {
  // Tracked connections one task address may have at once (nftables `ct count`; TCP connections
  // count until they close, UDP "connections" until their conntrack entry expires, 30 s after
  // the last packet when unanswered). Past it, the task's new connections are dropped. 0: none.
  uint32_t tracked_per_task = 4096;
  // New connections one task address may open per second, with a burst of as many (nftables
  // `limit rate` per address): closed TCP connections stay tracked for a while (TIME_WAIT,
  // 120 s) without counting above, so the rate bounds how fast a task can fill the table with
  // them. Past it, new connections are dropped (TCP retries them). 0: none.
  uint32_t new_per_second = 2000;
};

struct NetworkOptions {
  // The gateway of each subnet (its .1; the length is ignored): the VPC router namespace carries
  // each as a /32, so that tasks' default routes reach it. A task's own gateway is added too.
  std::vector<std::string> gateway_cidrs = {"172.31.0.1/20", "172.31.16.1/20", "172.31.32.1/20"};
  // Starts the name of every task namespace and task veth this instance makes, so that several
  // instances (and tests) on one machine never see or touch each other's. 1 to 7 characters
  // from [A-Za-z0-9_.-].
  std::string netns_prefix = "pdk-";
  // Starts the name of every VPC router namespace and transit: shared by every agent of the host
  // (tests use their own). 1 to 7 characters as netns_prefix; neither may start the other.
  std::string vpc_prefix = "pdv-";

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
  // Per task address, in every VPC router and on the bridge-mode bridge (see FlowLimits).
  FlowLimits flow_limits;
  // Issue 16 §3, the overlay: this host's own IPv4 address on the network its hosts share (the
  // underlay), dotted quad. When set, each VPC router namespace reaches the VPC's tasks on other
  // hosts (vpc::PolicyMember::host) through a VXLAN device of the VPC's vni (vpc::VpcPolicy::vni);
  // empty: no overlay (one host). It must be an address of the host (checked when a VXLAN device
  // is made); agents sharing a host must share it.
  std::string overlay_address;
  // The UDP port the overlay's VXLAN devices send to and listen on (IANA's VXLAN port). Not 0.
  // The host firewall drops tasks' packets to it, whether the overlay is on or not.
  uint16_t overlay_port = 4789;
};

enum class Protocol { kTcp, kUdp };

// "tcp" / "udp", as ECS writes them.
std::string_view ProtocolName(Protocol protocol);

// One of a container's portMappings.
struct PortMapping {
  uint16_t container_port = 0;       // 1-65535; with container_port_last, the range's first port
  uint16_t container_port_last = 0;  // 0: one port; else a range's last port (> container_port)
  uint16_t host_port = 0;            // 0: dynamic (bridge mode); host mode: 0 or container_port.
                                     // A range's host ports are always dynamic (0).
  Protocol protocol = Protocol::kTcp;
  std::string host_ip;          // empty: every host address ("0.0.0.0"); else a local IPv4 address
};

// An ECS NetworkBinding: {"bindIP", "containerPort", "hostPort", "protocol"}, or for a port range
// {"bindIP", "containerPortRange", "hostPortRange", "protocol"} (the *_last fields set).
struct NetworkBinding {
  std::string bind_ip = "0.0.0.0";
  uint16_t container_port = 0;
  uint16_t host_port = 0;
  uint16_t container_port_last = 0;  // a range: container_port..container_port_last; 0: one port
  uint16_t host_port_last = 0;       // a range: host_port..host_port_last; 0: one port
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
  // eth0's peer, "pdk-1a2b3c4d5e6": in the VPC router namespace (awsvpc) or a port of the
  // bridge-mode bridge.
  std::string host_veth;
  std::string mac_address;  // eth0's, "02:70:ac:1f:00:05"
  uint32_t ip = 0;          // eth0's IPv4 address, host order
  // awsvpc: the VPC router namespace holding host_veth ("pdv-…"); empty for bridge mode, and for
  // a record of unknown VPC (DeleteTaskNetwork then looks in every VPC namespace).
  std::string vpc_netns;
  // awsvpc, from CreateTaskNetwork: whether the host has its route to `ip` (false when another
  // VPC's task on this host holds that address).
  bool host_route = false;
};

// Which VPC, and whose: the VPC id and the node identity of the control plane that runs it
// (agent::Control::NetworkIdentity), so that two Paddock servers on one host never share a VPC
// namespace while the agents of one server do.
struct VpcRef {
  std::string vpc_id;  // "vpc-0a1b…": [A-Za-z0-9-]{1,64}
  std::string node;    // [A-Za-z0-9-]{1,64}
};

// A VPC router namespace's names (VpcNetworkFor computes them; nothing needs to exist).
struct VpcNetwork {
  VpcRef ref;
  std::string netns_name;  // "pdv-1a2b3c4d5e6"
  std::string netns_path;  // "/var/run/netns/pdv-1a2b3c4d5e6"
  std::string transit;     // the host's end of the transit: the same name as the namespace
};

// A VPC's policy as an agent fetched it. `fetched_at` is when the fetch began
// (CLOCK_MONOTONIC, which every process of the host shares), so that of two agents applying
// policies to one VPC namespace, the one that asked later wins and an answer that was already
// stale when it arrived never replaces a newer one.
struct FetchedPolicy {
  vpc::VpcPolicy policy;
  int64_t fetched_at = 0;
};

// CLOCK_MONOTONIC now, in nanoseconds: FetchedPolicy::fetched_at.
int64_t MonotonicNanos();

// The names VPC `ref` has on this host under `options`. kInvalidArgument for ids outside
// [A-Za-z0-9-]{1,64}.
StatusOr<VpcNetwork> VpcNetworkFor(const NetworkOptions& options, const VpcRef& ref);

// The nftables script that replaces the VPC router's table (kVpcTable) with `policy` (see
// above): pure, for ApplyVpcPolicy and golden tests. It holds no flow limits
// (CompileVpcFlowLimits). kInvalidArgument for an address, CIDR, protocol, port range or group id
// it cannot express (the VPC's owner validates them first, so this means a bug).
StatusOr<std::string> CompileVpcPolicy(const vpc::VpcPolicy& policy);

// The nftables script that replaces the VPC router's flow-limits table (kVpcLimitsTable) with one
// holding each task address to `limits` (see above), its sets empty: pure, for the router's
// creation, a change of the limits and golden tests. Limits of 0 and 0: a table with no chains.
std::string CompileVpcFlowLimits(const FlowLimits& limits);

enum class Applied {
  kApplied,     // the table now enforces the policy
  kUnchanged,   // it did already (same version, applied by anyone)
  kSuperseded,  // a policy whose fetch began later is in place: left alone
};

// Replaces the table of the VPC's router namespace with `fetched.policy`'s, in one transaction,
// and then programs its overlay by difference (see "The overlay"), unless it is in place already
// or superseded (see FetchedPolicy); the result says which. A policy in place under other overlay
// settings has its overlay re-programmed (kUnchanged: the table is). Never
// touches the flow-limits table, unless `options.flow_limits` are not the ones in place: then it
// replaces that first (whatever the result). kNotFound when the namespace does not exist
// (CreateTaskNetwork makes it); kInvalidArgument when the policy does not compile; kInternal
// (quoting nft) when the kernel refuses it; for the overlay kFailedPrecondition (the overlay
// address is not the host's) and kAlreadyExists (another device of the host has the VNI). A
// failure leaves the previous table, or the new table with the record of the previous one (the
// next apply does it all again).
StatusOr<Applied> ApplyVpcPolicy(const NetworkOptions& options, const VpcNetwork& vpc, const FetchedPolicy& fetched);

// Makes VPC `vpc`'s router namespace unless it exists, and applies `fetched` there as
// ApplyVpcPolicy does: ahead of CreateTaskNetwork (the agent does it when a task is assigned,
// while the task's images are resolved), which then finds both done.
StatusOr<Applied> PrepareVpcNetwork(const NetworkOptions& options, const VpcNetwork& vpc, const FetchedPolicy& fetched);

// Creates task `task_id`'s network in VPC `vpc`: the VPC router namespace if it does not exist
// yet, `fetched`'s policy applied there (ApplyVpcPolicy: it must list the task's address, or its
// traffic is dropped), the task's namespace with eth0 (`ip`/`prefix_length`, the MAC derived from
// `ip`, up, as is lo, default route via `gateway`), its peer in the VPC namespace with the route
// to `ip`, and the host's route to `ip` when no other VPC holds it. The policy is in place before
// the task's veth exists, so the task is never reachable without its rules. On failure nothing
// of the task is left behind (the VPC namespace may stay). Fails with kAlreadyExists when the
// task's namespace or veth exists already (a repeated call) or the VPC's namespace name is taken
// by another VPC (a hash collision), kInvalidArgument for a task id outside
// [A-Za-z0-9_-]{1,64} or bad addresses, and kInternal (quoting iproute2 or nft) when the kernel
// refuses a step, e.g. a gateway outside eth0's subnet.
StatusOr<TaskNetwork> CreateTaskNetwork(const NetworkOptions& options, const VpcNetwork& vpc,
                                        const FetchedPolicy& fetched, std::string_view task_id, uint32_t ip,
                                        int prefix_length, uint32_t gateway);

// Deletes the task's veth (which takes eth0 with it; in the VPC namespace `network.vpc_netns`, or
// whichever VPC namespace of the host holds it when that is empty, or on the bridge-mode bridge),
// its host route (only one through that VPC's transit), and then its namespace. What is already
// gone is skipped, so a repeated call succeeds. The veth goes first and explicitly: the kernel
// dismantles a deleted namespace asynchronously, and its veth would otherwise linger (and block a
// reused name) for a while. Processes still inside the namespace keep it alive but cut off. The
// VPC namespace stays (RemoveVpcNetworkIfUnused). Refuses (kInvalidArgument) names that do not
// start with the instance's prefix.
Status DeleteTaskNetwork(const NetworkOptions& options, const TaskNetwork& network);

// The names of the namespaces under /var/run/netns that start with the instance's prefix,
// sorted. No namespace directory at all is an empty list.
StatusOr<std::vector<std::string>> ListTaskNamespaces(const NetworkOptions& options);

// The names and address CreateTaskNetwork uses for `task_id` and `ip` (in `vpc`, when given),
// without touching the system: for re-adopting a task after a restart, or for cleaning up after
// a crashed create.
StatusOr<TaskNetwork> TaskNetworkFor(const NetworkOptions& options, std::string_view task_id, uint32_t ip,
                                     const VpcNetwork* vpc = nullptr);

// The task id of a namespace name from ListTaskNamespaces; empty when `netns_name` does not
// start with the prefix.
std::string TaskIdOfNamespace(const NetworkOptions& options, std::string_view netns_name);

// The VPC router namespaces of the host (every agent's, names starting with vpc_prefix), sorted.
StatusOr<std::vector<std::string>> ListVpcNamespaces(const NetworkOptions& options);

// Removes VPC router namespace `netns_name` (with its transit, its host routes, its table and
// its overlay device)
// when no task veth is left in it, under the host-wide lock. Returns whether it is gone (also
// when it was not there). Sockets still open in it (a metadata listener) keep the namespace
// alive, cut off, until they close.
StatusOr<bool> RemoveVpcNetworkIfUnused(const NetworkOptions& options, std::string_view netns_name);

// Installs (or brings up to date) the host's firewall table (see above), `inet <chain prefix in
// lower case>`. Idempotent; one nft transaction. kFailedPrecondition when nft is missing.
Status EnsureHostFirewall(const NetworkOptions& options);

// Deletes the host firewall table. For tests (with a test-only chain prefix).
Status RemoveHostFirewall(const NetworkOptions& options);

// The host firewall table's name: chain_prefix in lower case ("paddock").
std::string HostFirewallTable(const NetworkOptions& options);

// Whether the VPC router namespace `vpc` lets tasks reach the DNS server (its input hook has the
// port 53 rules of CompileVpcPolicy): false for a namespace whose policy an agent older than the
// DNS server applied, until its policy next changes. One `nft list` in the namespace.
StatusOr<bool> VpcRouterAdmitsDns(const VpcNetwork& vpc);

// Gives `interface` the address `cidr` ("169.254.170.2/32") unless it has it already; idempotent.
// kFailedPrecondition when there is no such interface, kInternal (quoting iproute2) when the
// kernel refuses. For the host's task metadata endpoint address (on lo).
Status EnsureInterfaceAddress(std::string_view interface, std::string_view cidr);

// Adds PADDOCK-FORWARD's ACCEPT rules for the VPC transits (what leaves by them, and its
// replies) when FORWARD could drop their traffic (see Ports above); nothing when FORWARD is an
// empty ACCEPT chain. No iptables binary: nothing. Idempotent. (EnsureBridgeNetwork does it for
// its bridge.)
Status EnsureForwarding(const NetworkOptions& options);

// --- Bridge mode ---

// Creates the bridge-mode bridge unless it exists, gives it a fixed MAC address (else the kernel
// would take the lowest of its ports', and tasks' ARP entries for the gateway would go stale as
// tasks come and go), its address, brings it up, sets its route_localnet, and installs the
// chains, jumps and per-bridge rules described above and the host firewall
// (EnsureHostFirewall); what exists already is kept. Fails with kFailedPrecondition when another interface carries an
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
// kInvalidArgument: a bad mapping (port 0, a host_ip that is not IPv4, a range whose last port is
// not above its first or that has a host port), or one host port and protocol twice;
// kAlreadyExists: a static host port published or reserved by any task, or in use on the host
// (the message names which); kResourceExhausted: no free dynamic port (for a
// range: no block of as many contiguous free ports).
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
