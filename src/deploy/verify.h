// deploy/verify: the controller's preflight (`paddock verify`, ADR D6 / research B12) — what must hold
// before a deployment can succeed, each checked against the live endpoint with the controller's own
// credentials, each with a sentence a user can act on.
//
//   std::vector<Check> checks = Verify(aws, query, edge, settings, {.create_cluster = true});
//   for (const Check& c : checks) fmt::print("{} {}: {}\n", c.ok ? "ok  " : "FAIL", c.name, c.detail);
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "deploy/aws.h"
#include "deploy/controller.h"
#include "deploy/render.h"

namespace paddock::deploy {

struct Check {
  std::string name;    // "cluster", "identity", "subnets", "security groups", "execution role", "task role", "edge"
  bool ok = false;
  std::string detail;
};

struct VerifyOptions {
  bool create_cluster = false;  // a missing cluster is made with the first service (paddock up)
  bool create_task_roles = false;  // a project's missing task role is made with its first service
};

std::vector<Check> Verify(Aws& aws, QueryAws& query, EdgeView* edge, const ControllerSettings& settings,
                          const VerifyOptions& options);

}  // namespace paddock::deploy
