// cli/execution_resources: the node's provider of what a task's start fetches as its execution
// role (agent/inprocess: ExecutionResourcesProvider) — ecs::execution::Resolver over the node's
// owners, each read first authorized by the front's own authorizer for the execution role's
// session (arn:aws:sts::<account>:assumed-role/<role>/<task id>).
//
//   control.SetExecutionResourcesProvider(ExecutionResourcesProvider(parameters, &authorizer, clock));
#pragma once

#include "agent/inprocess/inprocess_control.h"
#include "aws/service.h"
#include "common/clock.h"
#include "secretsmanager/secrets.h"
#include "ssm/parameters.h"
#include "sts/roles.h"

namespace paddock::cli {

// The principal a task's execution role `role_arn` acts as: the role session
// arn:aws:sts::<account>:assumed-role/<role>/<task id>, whose aws:userid is "<role id>:<task id>"
// (the role's unique AROA… id, as AWS gives a role session), read from `roles`; without `roles`,
// or a role that is gone, the userid is left empty (a policy testing it then denies). The
// providers pass no `roles` when nothing is authorized: the role's id is read only to be tested.
Principal ExecutionRolePrincipal(const Scope& scope, const std::string& role_arn, std::string_view task_id,
                                 sts::RoleDirectory* roles);

// `parameters`, `secrets`, `authorizer` and `roles` outlive the provider. `authorizer` null:
// nothing is authorized (--accept-any-credentials, the emulator's mode).
agent::ExecutionResourcesProvider MakeExecutionResourcesProvider(ssm::Parameters& parameters,
                                                                 secretsmanager::Secrets& secrets,
                                                                 aws::Authorizer* authorizer, const Clock& clock,
                                                                 sts::RoleDirectory* roles);

}  // namespace paddock::cli
