// Helpers shared by agent/net's files (defined in net.cc).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/net/net.h"
#include "common/encoding.h"
#include "common/status.h"

namespace paddock::agent::net::internal {

// Every name and range in `options` (bridges, prefixes, chain prefix, dynamic port range).
Status ValidateOptions(const NetworkOptions& options);
// [A-Za-z0-9_-]{1,64}
Status ValidateTaskId(std::string_view task_id);
// "a.b.c.d" of a host-order address.
std::string Ipv4(uint32_t ip);

struct Cidr {
  uint32_t ip = 0;
  int prefix_length = 0;
  uint32_t mask() const { return ~uint32_t{0} << (32 - prefix_length); }
};
// "a.b.c.d/len" with len in 1-30.
StatusOr<Cidr> ParseCidr(std::string_view text);

inline constexpr size_t kMaxIfName = 15;  // IFNAMSIZ - 1

using ::paddock::Fnv1a64;  // common/encoding.h
// "b0:b1:<the four bytes of rest>"
std::string Mac(uint8_t b0, uint8_t b1, uint32_t rest);
// "/var/run/netns/<name>"
std::string NetnsPath(std::string_view name);
bool NetnsExists(std::string_view name);
// Looked up in the calling thread's network namespace, not through /sys.
bool InterfaceExists(const std::string& name);
// iproute2's complaint in one line.
std::string OneLine(std::string text);
// Runs `ip [-force] -batch -` with `lines` in the calling thread's namespace. Fails (quoting ip's
// stderr) when ip cannot be run or a command failed.
Status IpBatch(std::string_view what, bool force, const std::string& lines);
// The same inside the namespace at `netns_path` (common/netns.h: no remount of /sys).
Status IpBatchIn(std::string_view what, const std::string& netns_path, const std::string& lines);
// Writes `value` to a /proc/sys file (of the calling thread's namespace).
Status WriteSysctl(const std::string& path, std::string_view value);
// The task's veth: <netns_prefix> + hex digits of a hash of the task id, 15 characters.
std::string VethName(const NetworkOptions& options, std::string_view task_id);
// The `ip -batch` lines that give a task namespace's eth0 its address, bring it and lo up and
// route by `gateway`.
std::string TaskNamespaceLines(uint32_t ip, int prefix_length, uint32_t gateway);
// Creates in this process take turns: `ip netns add` creates and bind-mounts the namespace
// directory on first use, and two of them racing there can fail (each takes a few ms).
std::mutex& CreateMutex();
// Bridge mode's Dismantle: the host veth (both ends go), then the namespace, what exists.
Status DeleteBridgeVeth(std::string_view what, const std::string& netns_name, const std::string& host_veth);
// FlowLimits as nftables rules (defined in nft_policy.cc), each line starting with `match`: the
// sets `<set_prefix>flow_rate` (dynamic, with a timeout) and `<set_prefix>flows` (dynamic) of
// ipv4_addr must exist in the table. Empty when `limits` limit nothing.
std::string FlowLimitRules(const FlowLimits& limits, std::string_view match, std::string_view set_prefix);
// The overlay (defined in overlay.cc). The MAC address of every VPC router's overlay device on
// the host whose overlay address is `host`: "02:71:<its four bytes>", known to every host
// without asking.
std::string OverlayMac(uint32_t host);
// Brings the overlay device of VPC router `vpc` in line with `options` and `policy` (net.h, "The
// overlay"): made (from the calling thread's namespace, the host's) when the overlay is on and it
// is missing or of another VNI, address or port, deleted when the overlay is off; then its routes,
// neighbours and forwarding entries changed by the difference only. kFailedPrecondition: the
// overlay address is not the host's; kAlreadyExists: another device of the host has the VNI.
// REQUIRES: the host-wide VPC lock is held; the router namespace exists.
Status SyncOverlay(const NetworkOptions& options, const VpcNetwork& vpc, const vpc::VpcPolicy& policy);
// The MTU of an awsvpc task's eth0 (and its router's end): the overlay device's — the underlay's
// less the VXLAN encapsulation's 50 bytes — when the overlay is on, so a full-sized packet to a
// task of another host fits the overlay without fragmentation or path-MTU discovery; 0 (the
// kernel's 1500) when it is off. kFailedPrecondition: the overlay address is not the host's. In the
// calling thread's namespace, the host's.
StatusOr<int> TaskMtu(const NetworkOptions& options);
// The name the overlay device of `vpc` has between its creation and its renaming to vx0: its
// transit's with the last digit replaced by 'x' (no interface of the host has it).
std::string OverlayTemporaryName(const VpcNetwork& vpc);
// Deletes the overlay device of `vpc`'s router namespace (under either name), if it has one, at
// once (a namespace's own teardown is asynchronous, and would hold the VNI for a while).
Status DeleteOverlayDevice(const VpcNetwork& vpc);
// DeleteOverlayDevice, and first the host firewall's admission of the device's VNI and of its
// peers (in the calling thread's namespace, the host's). REQUIRES: the host-wide VPC lock.
Status ForgetOverlay(const NetworkOptions& options, const VpcNetwork& vpc);
// Binds a bridge-mode task's port of the bridge to its addresses (defined in vpc_network.cc): from
// `network.host_veth` the host's bridge table (EnsureHostFirewall) passes only IPv4 and ARP frames
// whose Ethernet source is the task's MAC and whose sender is its IP — no spoofed address, no
// poisoned forwarding table or ARP cache, no IPv6 — so what is keyed on the source address (the
// flow limits) holds per task. Idempotent.
Status GuardBridgePort(const NetworkOptions& options, const TaskNetwork& network);
// Forgets that binding; nothing to forget is no failure.
Status UnguardBridgePort(const NetworkOptions& options, const TaskNetwork& network);

}  // namespace paddock::agent::net::internal

namespace paddock::agent::net::internal {

// "<chain_prefix>-<suffix>", e.g. "PADDOCK-DNAT".
inline std::string ChainName(const NetworkOptions& options, std::string_view suffix) {
  return options.chain_prefix + "-" + std::string(suffix);
}

}  // namespace paddock::agent::net::internal
