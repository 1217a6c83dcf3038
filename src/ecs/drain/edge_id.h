// ecs/drain/edge_id: the rule an edge replica's name (drain_holds.h EdgeId) follows — 1 to
// kMaxEdgeIdLength characters of [A-Za-z0-9._-] — for the holds and for `paddock edge --edge-id`,
// which checks it before it starts.
//
//   RETURN_IF_ERROR(ecs::drain::CheckEdgeId("edge-a"));
#pragma once

#include <cstddef>
#include <string_view>

#include "common/status.h"

namespace paddock::ecs::drain {

inline constexpr size_t kMaxEdgeIdLength = 64;

// OK when `id` is a valid edge id; InvalidArgument (ecs::Error::kInvalidParameter) naming the rule
// otherwise.
Status CheckEdgeId(std::string_view id);

}  // namespace paddock::ecs::drain
