// agent/remote/registration: what an EC2 container instance's agent tells RegisterContainerInstance
// about its host — the same for `paddock agent` and for the server's in-process EC2 instances.
//
//   HostResources host = DetectHost();                 // cores x 1024, MemTotal - reserve
//   boost::json::object request = RegistrationRequest("prod", host, {"22", "4566"}, stored_arn);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "agent/container_spec.h"

namespace paddock::agent::remote {

// The agent version reported in versionInfo.agentVersion.
inline constexpr std::string_view kAgentVersion = "1.0.0";
// Memory kept back for the host itself when MEMORY is not given.
inline constexpr int64_t kMemoryReserveMiB = 256;

struct HostResources {
  int64_t cpu = 0;     // CPU units: online cores x 1024
  int64_t memory = 0;  // MiB: /proc/meminfo MemTotal minus kMemoryReserveMiB
  // The host's primary IPv4 address: the source address of its default route ("" without one).
  // Registered as the instance identity document's privateIp, which EC2's DescribeInstances
  // answers (Traefik reaches bridge- and host-mode tasks at it).
  std::string private_ip;
  // The address other hosts' agents send this host's overlay traffic to (issue 16 §3; agent/net
  // NetworkOptions::overlay_address): RegisterAgent's overlayAddress. Empty: no overlay.
  std::string overlay_address = {};
};
HostResources DetectHost();

// The attributes the Paddock agent honestly has, beyond the ones the control plane adds to every
// instance (ecs.capability.task-eni, ecs.capability.container-health-check, ecs.os-type, ...):
// com.amazonaws.ecs.capability.docker-remote-api.1.17 … 1.44 (the task-definition features of
// those API versions that the agent supports; docs/contracts/container-instance.md),
// com.amazonaws.ecs.capability.task-iam-role and task-iam-role-network-host (it serves task roles'
// credentials), and, only
// when its operator allowed host access, ecs.capability.paddock.host-access and
// com.amazonaws.ecs.capability.privileged-container (ecs/taskdef/host_grants.h).
std::vector<std::string> AgentAttributeNames(HostAccess host_access = HostAccess::kRefused);

// RegisterContainerInstance's body: cluster, totalResources (CPU, MEMORY, PORTS = `ports`,
// PORTS_UDP empty), versionInfo and attributes (AgentAttributeNames(host_access)),
// instanceIdentityDocument {"privateIp"} when the host's address is known, overlayAddress when
// the host has one, and containerInstanceArn when re-registering.
boost::json::object RegistrationRequest(const std::string& cluster, const HostResources& host,
                                        const std::vector<std::string>& ports,
                                        const std::optional<std::string>& container_instance_arn,
                                        HostAccess host_access = HostAccess::kRefused);

}  // namespace paddock::agent::remote
