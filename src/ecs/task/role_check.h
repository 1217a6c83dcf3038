// ecs/task/role_check: ECS's refusal to launch a task whose task role or execution role it could
// not assume (issue 11 §3-§4).
//
// Every launch (RunTask, StartTask, a service's) checks, on the revision it pinned, the effective
// task role (RunTask's/StartTask's overrides.taskRoleArn wins over the revision's) and the
// effective execution role (overrides.executionRoleArn likewise). The check itself is a seam: ecs/
// knows nothing of IAM or STS, the node wires it (cli/node.cc) to sts::ServiceRoleSessions::
// MayAssume — the role exists in the task's account and its trust policy admits
// ecs-tasks.amazonaws.com. It runs for every principal, root included, after PassRole.
//
//   tasks.SetRoleCheck([&](const AccountId& a, std::string_view arn) { return sessions.MayAssume(a, arn); });
//   // RunTask with a missing role: ClientException "ECS was unable to assume the role '…' …"
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "common/ids.h"
#include "common/status.h"
#include "ecs/taskdef/taskdefs.h"

namespace paddock::ecs::task {

// Whether ECS could assume `role_arn` for a task of `account`. OK: it could. NotFound,
// PermissionDenied or InvalidArgument (any message): it could not — the role does not exist, its
// trust does not admit ecs-tasks.amazonaws.com, it is no role of the account. Any other code: the
// check itself failed (the store), returned as is. Called outside any store transaction. Empty: no
// check (the emulator mode, --accept-any-credentials, where made-up role ARNs launch).
using RoleCheck = std::function<Status(const AccountId& account, std::string_view role_arn)>;

// ECS's words for a role it could not assume (RunTask's ClientException, a service's event).
std::string RoleNotAssumableMessage(std::string_view role_arn);

// Checks the task role, then the execution role, of a launch of `view` in `account` with
// `overrides` (TaskOverride, may be null). A role that cannot be assumed: InvalidArgument with
// ecs::Error::kRoleNotAssumable (ClientException) and RoleNotAssumableMessage; nothing else
// changes the message. An empty `check` or an empty role checks nothing.
Status CheckLaunchRoles(const RoleCheck& check, const AccountId& account, const taskdef::LaunchView& view,
                        const boost::json::object* overrides);

}  // namespace paddock::ecs::task
