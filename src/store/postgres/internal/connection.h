// Private to store/postgres: one libpq connection with its prepared statements, the transaction
// object closures run against, and the schema migration.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/internal/table_catalog.h"
#include "store/store.h"

struct pg_conn;  // libpq's PGconn

namespace paddock::store::postgres_internal {

using store::internal::TableCatalog;

// Per-table statements.
enum class Op {
  kGet, kPut, kDelete, kScanForward, kScanForwardToEnd, kScanBackward, kScanBackwardToEnd,
  kDeleteRange, kDeleteRangeToEnd,
};
inline constexpr int kOpCount = 9;

// The SQL of `op` on table `t_<table>`. Parameters: $1 key or range begin, $2 value or range end,
// $3 limit.
std::string StatementSql(std::string_view table, Op op);

// The advisory lock every write transaction takes first (one writer at a time, across servers),
// and the one migrations take.
inline constexpr int64_t kWriteLock = 0x50616464'6f636b01;
inline constexpr int64_t kMigrationLock = 0x50616464'6f636b02;

// One connection. Not thread-safe: used by one thread at a time.
class Connection {
 public:
  // kUnavailable when the server cannot be reached.
  static StatusOr<std::unique_ptr<Connection>> Open(const std::string& url, std::shared_ptr<const TableCatalog> catalog);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs statements that return no rows of interest ("BEGIN", "SAVEPOINT w", ...).
  Status Execute(std::string_view sql);
  // The first column of the first row of `sql` with text parameters, or nullopt with no row.
  StatusOr<std::optional<std::string>> QueryText(std::string_view sql, const std::vector<std::string>& params);
  // Starts a transaction with `sql` ("BEGIN ..."), connecting again first if the connection was
  // lost, and once more if the server turns out to have gone away since it was last used.
  Status Begin(std::string_view sql);
  // A read-only snapshot transaction, in fewer round trips: BEGIN goes out in one pipeline with
  // the transaction's first statement (a read that runs none costs no round trip), and EndRead
  // sends COMMIT without waiting for its answer, which the connection's next use collects.
  Status BeginRead();
  void EndRead();
  // After a lost connection, connects again (its prepared statements are gone with it). OK
  // when the connection is usable.
  Status EnsureConnected();
  // Whether the server side ended the last transaction (failed or lost): no open transaction.
  bool Idle() const;

  // The catalogued table operations (txn.h's WriteTxn). Unknown tables are kInternal.
  StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key);
  StatusOr<std::vector<Row>> Scan(std::string_view table, const Range& range, size_t limit, Direction dir);
  Status Put(std::string_view table, std::string_view key, std::string_view value);
  Status Delete(std::string_view table, std::string_view key);
  Status DeleteRange(std::string_view table, const Range& range);

 private:
  Connection(pg_conn* conn, std::string url, std::shared_ptr<const TableCatalog> catalog);
  // Runs statement `op` of table `table` (preparing it on first use) with binary parameters.
  struct Result;
  StatusOr<Result> Run(std::string_view table, Op op, const std::vector<std::string_view>& params);
  // Run's one attempt; `begin` (when not empty) is sent first, in the same pipeline.
  StatusOr<Result> RunOnce(int index, Op op, const std::vector<std::string_view>& params, const std::string& begin);
  // Collects the answer of a COMMIT EndRead sent, before the connection is used again.
  void Settle();

  pg_conn* conn_;
  std::string url_;
  std::shared_ptr<const TableCatalog> catalog_;
  std::vector<bool> prepared_;  // [table index * kOpCount + op]
  std::string deferred_begin_;   // BeginRead's BEGIN, until the first statement takes it along
  bool commit_in_flight_ = false;  // EndRead's COMMIT, its answer not collected yet
};

// The WriteTxn a closure gets. It remembers the first failed operation: a closure that returns OK
// after one must not commit (store.h).
class Txn : public WriteTxn {
 public:
  explicit Txn(Connection& conn) : conn_(conn) {}
  StatusOr<std::optional<std::string>> Get(std::string_view table, std::string_view key) override;
  StatusOr<std::vector<Row>> Scan(std::string_view table, const Range& range, size_t limit, Direction dir) override;
  Status Put(std::string_view table, std::string_view key, std::string_view value) override;
  Status Delete(std::string_view table, std::string_view key) override;
  Status DeleteRange(std::string_view table, const Range& range) override;
  // The first failure since the last call, and forgets it.
  Status TakeLastError();

 private:
  Status Note(Status s);
  Connection& conn_;
  Status last_error_;
};

// Brings every module of `catalog` to its version in one transaction under kMigrationLock
// (sqlite's Migrate's rules: new tables created, versions recorded; a newer module refused with
// kFailedPrecondition, changing nothing).
Status Migrate(Connection& conn, const TableCatalog& catalog);

}  // namespace paddock::store::postgres_internal
