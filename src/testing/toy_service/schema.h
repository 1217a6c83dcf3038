// The store tables the toy service owns (store/schema.h says how modules declare them). A test
// opens a store with the node's schemas plus this one (toy_service_test.cc), as a node would list
// a real service's in cli/schemas.h.
#pragma once

#include "store/schema.h"

namespace paddock::toy {

inline constexpr store::TableDef kTables[] = {
    {"toy_notes", 1},        // (account, region, name) -> "<version> <text>"
    {"toy_note_counts", 1},  // (account, region) -> number of notes (the per-scope limit)
};
inline constexpr store::ModuleSchema kSchema{"toy", 1, kTables};

}  // namespace paddock::toy
