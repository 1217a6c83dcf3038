// What IAM authorizes for an ECS call, per action (docs/contracts/iam.md, "What each ECS call
// authorizes"): the action on its resource's ARN (or "*" where ECS names none), with the
// request's context keys, plus the questions a call implies — ecs:TagResource when a create
// carries tags (tag-on-create, with ecs:CreateAction), and iam:PassRole for each role the input
// passes (iam:PassedToService = ecs-tasks.amazonaws.com).
#pragma once

#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/service.h"

namespace paddock::ecs::api {

// REQUIRES: `input` was validated against the action's input shape.
std::vector<aws::AuthRequest> EcsAuthorization(const aws::CallContext& ctx, const boost::json::object& input);

}  // namespace paddock::ecs::api
