// ecs/taskdef/host_grants: what a task definition asks of the host it runs on beyond its own
// containers. These grants reach the node itself (its files, its devices, its processes, its
// network), so they run only on container instances whose operator allowed them
// (docs/contracts/container-instance.md, "Host access"), never on Fargate.
//
//   std::vector<HostGrant> grants = HostGrantsOf(definition);
//   for (const std::string& name : HostGrantAttributes(grants)) Require(name);  // requiresAttributes
//   if (!grants.empty() && !allowed) return Refuse(grants.front().text);       // the agent, at launch
//
// The grants:
//   - a volume with host.sourcePath: a bind mount of the host's files;
//   - linuxParameters.capabilities.add other than SYS_PTRACE: without a user namespace a
//     container's capability is the host's (SYS_ADMIN, NET_ADMIN, ALL, ...); SYS_PTRACE only
//     reaches the task's own processes, and Fargate grants it too;
//   - linuxParameters.devices: the host's device nodes;
//   - privileged;
//   - pidMode "host", ipcMode "host": the host's process and IPC namespaces;
//   - networkMode "host": the node's network namespace, where every service listening on the
//     host (loopback included: the Paddock API, the metadata endpoint, sshd) is reachable and
//     the task can bind the node's ports;
//   - a ulimit rtprio above 0: real-time scheduling (SCHED_FIFO/SCHED_RR) without CAP_SYS_NICE,
//     which the CPU cgroup's shares and quota do not bound — a busy real-time thread takes its
//     CPUs from every other task on the node (the kernel keeps 5% back for non-real-time
//     work, host-wide). rttime only limits real-time threads further and is no grant.
// Pure: no store, no clock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace paddock::ecs::taskdef {

// ECS's attribute of container instances that may run privileged containers: the ECS agent
// advertises it unless ECS_DISABLE_PRIVILEGED=true, and a definition with a privileged container
// requires it.
inline constexpr std::string_view kPrivilegedAttribute = "com.amazonaws.ecs.capability.privileged-container";
// Paddock's attribute of container instances whose operator allowed host-level grants
// ([[ec2_instance]] host_access = true, `paddock agent --allow-host-access`). A definition with any
// grant requires it. Under "ecs.": an agent-reported attribute, replaced at each registration, so
// an instance whose operator withdrew host access stops advertising it.
inline constexpr std::string_view kHostAccessAttribute = "ecs.capability.paddock.host-access";

enum class HostGrantKind {
  kHostPath, kCapability, kDevice, kPrivileged, kHostPid, kHostIpc, kHostNetwork, kRealtimePriority
};

struct HostGrant {
  HostGrantKind kind;
  // What asks for it, for messages: "volume 'h' binds the host path '/'", "container 'c' adds
  // the capability SYS_ADMIN", "networkMode 'host'".
  std::string text;
};

// The grants of a task definition (its stored or request JSON), in a stable order: task-level
// ones first, then volumes, then containers in definition order.
std::vector<HostGrant> HostGrantsOf(const boost::json::object& definition);

// The attributes a container instance needs to run a definition with `grants`: none for none;
// kHostAccessAttribute for any; kPrivilegedAttribute as well for a privileged container.
std::vector<std::string> HostGrantAttributes(const std::vector<HostGrant>& grants);

// A capability name without its optional "CAP_" prefix ("CAP_SYS_PTRACE" -> "SYS_PTRACE").
std::string_view BareCapability(std::string_view name);

// The highest rtprio (soft or hard) a container definition's ulimits give, 0 when none does.
int64_t RealtimePriorityOf(const boost::json::object& container);

}  // namespace paddock::ecs::taskdef
