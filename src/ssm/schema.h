// The store tables the SSM Parameter Store owner (ssm::Parameters) keeps. Keys start with the
// account and region; values are JSON.
#pragma once

#include "store/schema.h"

namespace paddock::ssm {

inline constexpr store::TableDef kTables[] = {
    // (account, region, name) -> head: type, tier, data type, key id, allowed pattern,
    // description, latest version, last modified (ms) and by whom.
    {"ssm_parameters", 1},
    // (account, region, name, version) -> that version: value (plain, or for a SecureString the
    // kms::KeyRing blob, base64), type, key id, labels, ... (at most kMaxVersions per name).
    {"ssm_parameter_versions", 1},
    // (account, region, name, tag key) -> tag value.
    {"ssm_tags", 1},
    // (account, region, tier) -> how many parameters of that tier the scope holds (the quotas).
    {"ssm_parameter_counts", 1},
};
inline constexpr store::ModuleSchema kSchema{"ssm", 1, kTables};

}  // namespace paddock::ssm
