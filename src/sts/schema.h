// The store tables sts/ owns (store/schema.h says how modules declare them).
#pragma once

#include "store/schema.h"

namespace paddock::sts {

inline constexpr store::TableDef kTables[] = {
    // temporary credentials (sts/sessions.h)
    {"sts_sessions", 1},          // (access key id) -> session record JSON (secret, token SHA-256, expiry, principal)
    {"sts_session_expiry", 1},    // (expires ms, access key id) -> ""   ReapExpired's work list
    {"sts_account_sessions", 1},  // (account, access key id) -> ""   ReapAccount's index
};
inline constexpr store::ModuleSchema kSchema{"sts", 1, kTables};

}  // namespace paddock::sts
