// cli/log_shipping: the node's provider of the awslogs driver's calls (agent/inprocess:
// LogsProvider) — logs::LogGroups of the task's own account and region, each call first
// authorized by the front's own authorizer for the task's execution role session
// (arn:aws:sts::<account>:assumed-role/<role>/<task id>): logs:CreateLogGroup (with
// awslogs-create-group), logs:CreateLogStream, logs:PutLogEvents. A task definition without an
// executionRoleArn writes as its account (the account's root may do anything in it): ECS on EC2
// writes with the instance role then, which Paddock does not have.
//
// The group is the one the task's pinned definition names for the container, never the agent's
// word; the stream must be that container's (prefix/container/task-id, or without a prefix a
// runtime id of this task's container: pdk-<instance>-<task id>-<index>).
//
//   control.SetLogsProvider(MakeLogsProvider(logs_module.groups(), &authorizer, clock));
#pragma once

#include <functional>
#include <string>

#include "agent/inprocess/inprocess_control.h"
#include "aws/service.h"
#include "common/clock.h"
#include "logs/log_groups.h"
#include "sts/roles.h"

namespace paddock::cli {

// The account's defaultLogDriverMode ("blocking" or "non-blocking") for a scope: what a stream
// creation answers, for the containers whose options name no mode.
using DefaultLogDriverMode = std::function<std::string(const Scope&)>;

// `groups`, `authorizer` and `roles` outlive the provider. `authorizer` null: nothing is
// authorized (--accept-any-credentials, the emulator's mode). `roles` gives the execution role
// session its aws:userid (ExecutionRolePrincipal). `default_mode` empty: AWS's default applies.
agent::LogsProvider MakeLogsProvider(logs::LogGroups& groups, aws::Authorizer* authorizer, const Clock& clock,
                                     sts::RoleDirectory* roles, DefaultLogDriverMode default_mode = {});

}  // namespace paddock::cli
