// The modules whose tables a node's store holds: the one place that names them all (each
// module declares its own tables in its schema.h; store/schema.h).
#pragma once

#include <vector>

#include "agent/images/schema.h"
#include "cloudmap/schema.h"        // issue 13: Cloud Map
#include "ecs/drain/schema.h"        // issue 14: the edges' drain holds
#include "ecs/schema.h"
#include "iam/schema.h"
#include "sched/schema.h"
#include "secretsmanager/schema.h"  // issue 12: Secrets Manager
#include "ssm/schema.h"             // issue 12: SSM Parameter Store
#include "store/schema.h"
#include "sts/schema.h"
#include "vpc/schema.h"

namespace paddock::cli {

inline std::vector<store::ModuleSchema> NodeSchemas() {
  // The store adds its own (store::kStoreSchema).
  return {iam::kSchema, sts::kSchema, ecs::kSchema, vpc::kSchema, sched::kSchema, agent::images::kSchema,
          ssm::kSchema, secretsmanager::kSchema, cloudmap::kSchema, ecs::drain::kSchema};
}

}  // namespace paddock::cli
