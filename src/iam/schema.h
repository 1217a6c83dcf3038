// The store tables iam/ owns (store/schema.h says how modules declare them).
#pragma once

#include "store/schema.h"

namespace paddock::iam {

inline constexpr store::TableDef kTables[] = {
    // accounts and access keys (iam/accounts.h)
    {"accounts", 1},      // (account) -> Account
    {"access_keys", 1},   // (access_key_id) -> AccessKey
    {"account_keys", 1},  // (account, access_key_id) -> ""            index
};
// Versions up to 9 are the store-wide versions from before per-module versions.
inline constexpr store::ModuleSchema kSchema{"iam", 9, kTables};

}  // namespace paddock::iam
