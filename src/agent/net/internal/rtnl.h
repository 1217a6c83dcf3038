// Host routes to single addresses through one device, set with one rtnetlink message each (no
// `ip` process): the routes the node reaches awsvpc tasks by (agent/net, "The host").
//
//   RETURN_IF_ERROR(AddDeviceRoute(ip, "pdv-1a2b3c4d5e6"));    // ip route add <ip>/32 dev …
//   RETURN_IF_ERROR(DeleteDeviceRoute(ip, "pdv-1a2b3c4d5e6")); // ip route del <ip>/32 dev …
//
// They act in the calling thread's network namespace.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace paddock::agent::net::internal {

// Adds `ip`/32 dev `device` to the main table. kAlreadyExists when a route to `ip`/32 is there
// already (through any device); kNotFound when there is no such device.
Status AddDeviceRoute(uint32_t ip, const std::string& device);

// Deletes the route `ip`/32 through `device` (only that device's). kNotFound when there is none.
Status DeleteDeviceRoute(uint32_t ip, const std::string& device);

}  // namespace paddock::agent::net::internal
