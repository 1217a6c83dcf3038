// agent/inprocess/errors: the failures the control plane's side of the agent protocol names
// (InProcessControl), in its own words. The agent service's table (agent/remote/server,
// AgentService::ErrorFor) answers them; the in-process agent tells them apart by status code.
//
//   return PermissionDenied("The container instance has no such task.", agent::Error::kTaskNotAssigned);
#pragma once

#include "common/status.h"

namespace paddock::agent {

enum class Error {
  kTaskNotAssigned = 1,  // the task is not (or no longer) the asking agent's: AccessDeniedException
  kNoTaskRole,           // the task has no taskRoleArn: ClientException
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::agent
