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

namespace paddock::cli {

// `parameters`, `secrets` and `authorizer` outlive the provider. `authorizer` null: nothing is
// authorized (--accept-any-credentials, the emulator's mode).
agent::ExecutionResourcesProvider MakeExecutionResourcesProvider(ssm::Parameters& parameters,
                                                                 secretsmanager::Secrets& secrets,
                                                                 aws::Authorizer* authorizer, const Clock& clock);

}  // namespace paddock::cli
