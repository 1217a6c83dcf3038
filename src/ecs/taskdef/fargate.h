// ecs/taskdef/fargate: the options a Fargate task cannot have, with AWS's messages. A definition
// that requires FARGATE (requiresCompatibilities) is refused at registration with the first one
// found; a definition without requiresCompatibilities that has one is registered without FARGATE
// in its compatibilities, so RunTask / CreateService / CreateTaskSet on FARGATE answer
// "Task definition does not support launch_type FARGATE." instead of dropping the option
// (docs/contracts/task-definition.md, "Fargate").
//
//   if (requires_fargate) RETURN_IF_ERROR(CheckFargateOptions(definition));
//   bool fargate_compatible = ... && CheckFargateOptions(definition).ok();
//
// The task-level rules (networkMode awsvpc, task cpu and memory of a Fargate size, no ipcMode, no
// pidMode host) stay in validate.cc, which needs the normalized sizes.
// Pure: no store, no clock.
#pragma once

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::ecs::taskdef {

// ClientException with AWS's text for the first of: a volume with host.sourcePath or
// dockerVolumeConfiguration, placementConstraints, a privileged container, a capability added
// other than SYS_PTRACE, linuxParameters devices / sharedMemorySize / maxSwap / swappiness,
// dockerSecurityOptions, dnsSearchDomains, a GPU resource requirement, a ulimit rtprio above 0
// (Paddock's: every task shares the node's kernel), a systemControls namespace that is not
// namespaced (net.*, fs.mqueue.*, the IPC kernel.* ones). OK otherwise.
Status CheckFargateOptions(const boost::json::object& definition);

}  // namespace paddock::ecs::taskdef
