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
// Thread safety: every function may be called from any thread. Calls for the same task must not
// run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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

}  // namespace paddock::agent::net
