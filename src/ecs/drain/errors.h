// ecs/drain/errors: the drain holds' own error details — the failures DrainHolds names that ECS's
// vocabulary (ecs/common/errors.h) has no word for. The holds' service (ecs/drain/api) maps them to
// AWS codes.
//
//   return ResourceExhausted("100 edges already hold tasks ...", drain::Error::kTooManyEdges);
#pragma once

#include "common/status.h"

namespace paddock::ecs::drain {

enum class Error {
  kTooManyEdges = 1,  // a new edge when kMaxEdgesPerScope edges of the scope hold tasks
};
const ErrorDomain& ErrorDomainOf(Error);

}  // namespace paddock::ecs::drain
