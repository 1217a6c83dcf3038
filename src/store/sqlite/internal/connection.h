// Private to store/sqlite: one SQLite connection with its prepared-statement cache, the
// transaction object closures run against, and the schema migration.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "store/internal/table_catalog.h"
#include "store/schema.h"
#include "store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace paddock::store::sqlite_internal {

// Per-table statements.
enum class Op {
  kGet, kPut, kDelete, kScanForward, kScanForwardToEnd, kScanBackward, kScanBackwardToEnd,
  kDeleteRange, kDeleteRangeToEnd,
};
inline constexpr int kOpCount = 9;

// Transaction-control statements.
enum class Control { kBegin, kBeginImmediate, kSavepoint, kRelease, kRollbackTo, kCommit, kRollback };
inline constexpr int kControlCount = 7;

// The SQL of `op` on `table` (table name without the "t_" prefix). Parameters: ?1 key or range
// begin, ?2 value or range end, ?3 limit.
std::string StatementSql(std::string_view table, Op op);

// A Status for SQLite result code `rc` from doing `what` on `db` (which may be null).
Status SqliteError(int rc, sqlite3* db, std::string_view what);

using store::internal::TableCatalog;

// The last store-wide schema version, from before modules were versioned one by one. A store
// from then is read as: every module whose tables it holds is at that version.
inline constexpr int kLastStoreWideVersion = 9;
// What Migrate records in the legacy `schema_version` row once modules are versioned one by one,
// so that a build from before refuses the store as newer than it.
inline constexpr int kPerModuleFormat = 10;

// Brings every module of `catalog` to its version, in one transaction: creates each table whose
// since_version is above the version recorded for its module, and records the module's version.
// Fails with kFailedPrecondition, changing nothing, if a module's recorded version is above this
// build's, or if the store's format is newer than per-module versions. Modules the store holds
// but `catalog` does not name are left alone.
Status Migrate(sqlite3* db, const TableCatalog& catalog);

// The version recorded for `module`, or 0 when none is.
StatusOr<int> ModuleVersion(sqlite3* db, std::string_view module);

enum class Mode { kReadWrite, kReadOnly };

// One connection. Not thread-safe: used by one thread at a time.
class Connection {
 public:
  // kReadWrite creates the file if needed and puts it in WAL mode; `durable` selects
  // synchronous=FULL over OFF.
  static StatusOr<std::unique_ptr<Connection>> Open(const std::string& path, Mode mode, bool durable,
                                                    std::shared_ptr<const TableCatalog> catalog);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }

  Status Run(Control c);
  Status Execute(const std::string& sql);
  // Copies the WAL into the database. PASSIVE (restart=false) never waits; RESTART waits (up to
  // the busy timeout) for other checkpoints and readers, so the next write starts the WAL over.
  // Returns whether every frame was copied.
  StatusOr<bool> Checkpoint(bool restart = false);
  // Calls fn after each commit with the WAL's size in pages. Replaces SQLite's autocheckpoint.
  void OnCommit(std::function<void(int wal_pages)> fn);
  // True when no transaction is open (SQLite rolls back by itself after some errors).
  bool InAutocommit() const;

  // The cached statement for `op` on `table`, reset and ready to bind.
  // kInternal for a table no module of the catalog declares.
  StatusOr<sqlite3_stmt*> Statement(std::string_view table, Op op);

 private:
  Connection(sqlite3* db, std::shared_ptr<const TableCatalog> catalog);

  sqlite3* db_;
  std::shared_ptr<const TableCatalog> catalog_;
  std::array<sqlite3_stmt*, kControlCount> control_{};
  std::vector<sqlite3_stmt*> statements_;  // [table index * kOpCount + op], prepared lazily
  std::function<void(int)> on_commit_;
};

// The transaction a closure sees: every call runs on `conn` inside whatever transaction the
// caller opened.
class Txn final : public WriteTxn {
 public:
  explicit Txn(Connection& conn) : conn_(conn) {}

  StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override;
  StatusOr<std::vector<Row>> Scan(std::string_view table, const Range& range, size_t limit,
                                  Direction dir) override;
  Status Put(std::string_view table, std::string_view key, std::string_view value) override;
  Status Delete(std::string_view table, std::string_view key) override;
  Status DeleteRange(std::string_view table, const Range& range) override;

  // The last SQLite failure seen by this Txn (OK if none), then forgets it.
  Status TakeLastError();

 private:
  Status Fail(Status s);
  // The connection's cached statement; a failure is remembered like any other.
  StatusOr<sqlite3_stmt*> Prepare(std::string_view table, Op op);

  Connection& conn_;
  Status last_error_;
};

}  // namespace paddock::store::sqlite_internal
