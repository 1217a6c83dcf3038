// The store tables agent/images owns (store/schema.h says how modules declare them): the node's
// local image store, node-local and not per account.
#pragma once

#include "store/schema.h"

namespace paddock::agent::images {

inline constexpr store::TableDef kTables[] = {
    {"images", 2},         // (reference "domain/path:tag") -> image record JSON
    {"image_digests", 2},  // (repository, manifest digest, reference) -> ""  index: name@sha256:
};
// Versions up to 9 are the store-wide versions from before per-module versions.
inline constexpr store::ModuleSchema kSchema{"images", 9, kTables};

}  // namespace paddock::agent::images
