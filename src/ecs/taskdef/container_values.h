// ecs/taskdef/container_values: checks of the container-definition values that the agent writes
// as text into files inside the container, or into its environment block, where a line break, a
// NUL or an '=' would forge entries of their own (docs/contracts/task-definition.md, "Values
// written into the container"):
//   /etc/hosts        extraHosts[].hostname and .ipAddress, hostname
//   /etc/resolv.conf  dnsServers, dnsSearchDomains
//   /etc/hostname     hostname
//   environment       environment[].name, secrets[].name, and RunTask's / StartTask's
//                     containerOverrides[].environment[].name
// ECS itself leaves most of these to Docker, which refuses them when the container is created;
// Paddock refuses them at registration (and RunTask), with InvalidParameterException.
//
//   RETURN_IF_ERROR(CheckContainerValues(container_definition));
//   RETURN_IF_ERROR(CheckEnvironmentNames(container_override, name));
// Pure: no store, no clock.
#pragma once

#include <string_view>

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::ecs::taskdef {

// extraHosts (an IP address, a host name), dnsServers (IP addresses), dnsSearchDomains (domain
// names), hostname (a host name), environment and secrets names (not empty; no '=', NUL or line
// break). InvalidParameterException naming the container, the field and the value.
Status CheckContainerValues(const boost::json::object& container_definition);

// The names of `holder`'s "environment" list (a container definition or a containerOverrides
// entry) of container `container`.
Status CheckEnvironmentNames(const boost::json::object& holder, std::string_view container);

// A host name as /etc/hosts and the uts name take it: 1 to 255 of letters, digits, '-', '.' and
// '_', not starting with '-' or '.'.
bool IsHostName(std::string_view s);
// A DNS search domain: 1 to 253 of letters, digits, '-' and '.', not starting with '-' or '.'.
bool IsSearchDomain(std::string_view s);
// An IPv4 (dotted quad) or IPv6 address.
bool IsIpAddress(std::string_view s);

}  // namespace paddock::ecs::taskdef
