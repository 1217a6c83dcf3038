// ecs/taskdef/port_mappings: a container's portMappings at RegisterTaskDefinition — checked, and
// normalized as DescribeTaskDefinition reports them (docs/contracts/task-definition.md, "Port
// mappings"):
//   - a mapping has a containerPort (1-65535) or a containerPortRange ("first-last", 1 <= first <
//     last <= 65535), not both; a hostPort is 0-65535;
//   - under awsvpc and host, hostPort is omitted or equals containerPort, and is set to it;
//   - containerPortRange only in bridge (the default mode) and awsvpc, without hostPort (0 counts
//     as not set; the agent chooses the host ports: bridge, a contiguous block from the ephemeral
//     range; awsvpc, the container's), at most 100 ranges per container, and none sharing a port
//     of its protocol with another mapping (two single mappings of one container port stay allowed);
//   - protocol defaults to tcp.
// Errors are ClientException; ECS's text where known ("When networkMode=…, the host ports and
// container ports in port mappings must match."), else ECS's form "Invalid '<field>' setting for
// container '<name>'." with what is wrong.
//
//   RETURN_IF_ERROR(CheckPortMappings(container_definition, network_mode));
// Pure: no store, no clock.
#pragma once

#include <string_view>

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::ecs::taskdef {

// The most containerPortRange mappings one container may have (ECS's limit).
inline constexpr size_t kMaxPortRanges = 100;

// Checks and normalizes `container_definition`'s portMappings in place. `network_mode` as
// registered ("" when omitted: bridge).
Status CheckPortMappings(boost::json::object& container_definition, std::string_view network_mode);

}  // namespace paddock::ecs::taskdef
