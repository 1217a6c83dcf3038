// ecs/api/errors: ECS's error table — the AWS code and HTTP status each ecs::Error detail (and
// each placement refusal) is answered with. The only place ECS's AWS error names are written.
//
//   EcsService::ErrorFor(s) == EcsErrorFor(s)
//   AnswerFor(NotFound("Cluster not found.", ecs::Error::kClusterNotFound))
//       // {"ClusterNotFoundException", 400}
#pragma once

#include <optional>
#include <string_view>

#include "aws/errors.h"
#include "common/status.h"
#include "ecs/common/errors.h"

namespace paddock::ecs::api {

// The AWS code and HTTP status of `status`'s ecs::Error detail; nullopt for any other detail (or
// none), which the front answers with aws::AwsErrorFor.
std::optional<aws::AwsError> EcsErrorFor(const Status& status);

// The ecs::Error whose AWS code is `type` ("ClusterNotFoundException"), for a client reading an
// ECS error answer back into a Status (the remote agent); nullopt for any other code.
std::optional<Error> EcsErrorFromAwsCode(std::string_view type);

// What an ECS call that failed with `status` is answered with: EcsErrorFor, else
// aws::AwsErrorFor. For tests and for services that speak ECS's vocabulary (the agent protocol).
aws::AwsError AnswerFor(const Status& status);

}  // namespace paddock::ecs::api
