// Tables for the store's own tests and benchmarks, declared as a module of their own
// (store/schema.h), so they need no real module's schema.
#pragma once

#include "store/schema.h"

namespace paddock::store::testing {

inline constexpr TableDef kTestTables[] = {
    {"tags", 1},
    {"clusters", 1},
    {"clusters_active", 1},
};
inline constexpr ModuleSchema kTestSchema{"test", 1, kTestTables};

}  // namespace paddock::store::testing
