// agent/metadata/credentials: a task role's credentials as the task metadata endpoint serves them
// (GET 169.254.170.2/v2/credentials/<id>) and as the control plane hands them to the agent
// (agent/control.h Control::TaskRoleCredentials; docs/agent-protocol.md GetTaskCredentials).
#pragma once

#include <chrono>
#include <string>

#include "agent/protocol/messages.h"
#include "common/clock.h"

namespace paddock::agent::metadata {

// The agent protocol's (agent/protocol/messages.h): the control plane mints them.
using RoleCredentials = protocol::RoleCredentials;

// The agent asks its control plane again once a held set has less than this left: the control
// plane (sts::ServiceRoleSessions::kRefreshBefore) mints a new set then too.
inline constexpr Duration kCredentialsRefreshBefore = std::chrono::minutes(30);

}  // namespace paddock::agent::metadata
