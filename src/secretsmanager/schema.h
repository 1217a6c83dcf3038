// The store tables the Secrets Manager owner (secretsmanager::Secrets) keeps. Values are JSON.
#pragma once

#include "store/schema.h"

namespace paddock::secretsmanager {

inline constexpr store::TableDef kTables[] = {
    // (account, region, name) -> the secret: ARN, description, key id, dates, deletion, tags,
    // and every kept version's id, stages and creation (its value lives in sm_secret_versions).
    {"sm_secrets", 1},
    // (account, region, name, version id) -> that version's value sealed with kms::KeyRing
    // (bound to the account, region, secret ARN and version id), string or binary, its key id
    // and the MAC that ClientRequestToken idempotency compares.
    {"sm_secret_versions", 1},
    // (deletion ms, account, region, name) -> "": secrets marked for deletion, by when their
    // recovery window ends (node-wide, so a reaper finds what is due without a scan per account;
    // RestoreSecret and a forced delete remove the row).
    {"sm_deletions", 1},
};
inline constexpr store::ModuleSchema kSchema{"secretsmanager", 1, kTables};

}  // namespace paddock::secretsmanager
