// What IAM authorizes for an ECS call, per action (docs/contracts/iam.md, "What each ECS call
// authorizes"): the action on its resource's ARN (or "*" where ECS names none), with the
// request's context keys, plus the questions a call implies — ecs:TagResource when a create
// carries tags (tag-on-create, with ecs:CreateAction), and iam:PassRole for each role the input
// passes (iam:PassedToService = ecs-tasks.amazonaws.com).
#pragma once

#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/service.h"
#include "ecs/taskdef/taskdefs.h"

namespace paddock::ecs::api {

// REQUIRES: `input` was validated against the action's input shape.
std::vector<aws::AuthRequest> EcsAuthorization(const aws::CallContext& ctx, const boost::json::object& input);

// The launch paths' iam:PassRole check (RunTask, StartTask, CreateService, UpdateService,
// CreateTaskSet): the caller must be allowed to pass the task role and the execution role of the
// revision the launch pinned — the same view the launch then uses, so a register racing the
// launch cannot slip another revision's roles past it (seed gaps 4 and 5). Empty when requests
// are not authorized.
taskdef::LaunchCheck PassRoleCheck(const aws::CallContext& ctx);

}  // namespace paddock::ecs::api
