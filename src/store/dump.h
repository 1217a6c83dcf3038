// Moving a whole store between implementations (`paddock admin export` / `import`: SQLite to
// PostgreSQL and back). The dump is text, one JSON object per line: first a header naming the
// format and each module's version, then one line per row {"t": table, "k": key, "v": value} with
// key and value in unpadded base64url, tables in the order the modules declare them, rows in key
// order.
//
//   RETURN_IF_ERROR(ExportStore(sqlite, cli::NodeSchemas(), std::cout));
//   RETURN_IF_ERROR(ImportStore(postgres, cli::NodeSchemas(), std::cin));
#pragma once

#include <cstddef>
#include <istream>
#include <ostream>
#include <span>

#include "common/status.h"
#include "store/schema.h"
#include "store/store.h"

namespace paddock::store {

// Writes every row of every table of `modules` (and the store's own) to `out`, from one snapshot.
Status ExportStore(Store& store, std::span<const ModuleSchema> modules, std::ostream& out);

// Reads a dump into `store`, which must hold no row in any table of `modules` (else
// kFailedPrecondition, changing nothing). A dump from a build whose module is newer than this
// one's, a table no module of this build declares, or a malformed line is InvalidArgument naming
// the line; rows are written in transactions of up to 1,000, so a failure midway leaves the rows
// before it (import again into an empty store). Returns the number of rows written.
StatusOr<size_t> ImportStore(Store& store, std::span<const ModuleSchema> modules, std::istream& in);

}  // namespace paddock::store
