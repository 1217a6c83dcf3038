// How a module declares the store tables it owns. Each owner module lists its tables, with the
// version of the module's layout that introduced each, in a `schema.h` of its own
// (iam/schema.h, ecs/schema.h, vpc/schema.h, ...); the process that opens a store names the
// modules it runs (cli/schemas.h for the node). Migrations create a module's new tables in one
// transaction and record each module's version, so a newer binary upgrades an older state
// directory module by module, and an older binary refuses a store one of its modules is too old
// for.
//
//   inline constexpr store::TableDef kIamTables[] = {{"accounts", 1}, {"access_keys", 1}};
//   inline constexpr store::ModuleSchema kIamSchema{"iam", 1, kIamTables};
//
// Key and value layouts are documented where the owning module defines its records.
#pragma once

#include <span>
#include <string_view>

namespace paddock::store {

struct TableDef {
  std::string_view name;  // unique across every module of a store
  int since_version;      // the module version that introduced the table
};

struct ModuleSchema {
  std::string_view module;  // "iam", "ecs": unique in a store
  int version;              // the layout this build writes; at least every table's since_version
  std::span<const TableDef> tables;
};

// The store's own tables, for whatever a process keeps outside any module.
inline constexpr TableDef kStoreTables[] = {
    {"meta", 1},  // (name) -> value   e.g. the pagination-token key, the node's bootstrap account
};
// Version 9: before per-module versions every module carried the store-wide version, last 9.
// Version 10: on PostgreSQL every write transaction bumps the database's generation, which the
// servers' read caches rely on (store/postgres/internal/read_cache.h); a build before it would
// write without bumping it, so it must not open such a database.
inline constexpr ModuleSchema kStoreSchema{"store", 10, kStoreTables};

}  // namespace paddock::store
