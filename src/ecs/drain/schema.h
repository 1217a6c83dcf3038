// The store tables ecs/drain's owner (ecs::drain::DrainHolds) keeps: the edges' drain holds on
// tasks (drain_holds.h). Keys start with the account and region of the task held, but the expiry
// list's, which starts with the lease's end (the reaper's order).
#pragma once

#include "store/schema.h"

namespace paddock::ecs::drain {

inline constexpr store::TableDef kTables[] = {
    // (account, region, cluster, task id, edge id) -> "<drainTimeout seconds>": who holds a task
    // (the agent's question).
    {"drain_holds", 1},
    // (account, region, edge id, cluster, task id) -> "<drainTimeout seconds>": an edge's holds
    // (what its heartbeat replaces).
    {"drain_edge_holds", 1},
    // (account, region, edge id) -> "<lease end, epoch ms>": every hold of the edge lives until then.
    {"drain_edges", 1},
    // (lease end ms, account, region, edge id) -> "": ReapExpired's work list.
    {"drain_edge_expiry", 1},
};
// Its own module (not ecs/'s), so that adding it left ecs/'s layout version alone.
inline constexpr store::ModuleSchema kSchema{"ecs_drain", 1, kTables};

}  // namespace paddock::ecs::drain
