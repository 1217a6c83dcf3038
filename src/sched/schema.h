// The store tables sched/ owns (store/schema.h says how modules declare them).
#pragma once

#include "store/schema.h"

namespace paddock::sched {

inline constexpr store::TableDef kTables[] = {
    {"scheduler_lease", 5},   // ("scheduler") -> "<holder> <epoch> <expires ms>"   sched/lease.h
    {"server_presence", 10},  // (<server>) -> "<expires ms>"   sched/presence.h (issue 16)
};
// Versions up to 9 are the store-wide versions from before per-module versions.
inline constexpr store::ModuleSchema kSchema{"sched", 10, kTables};

}  // namespace paddock::sched
