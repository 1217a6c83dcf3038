// Private to store/postgres: one libpq connection with its prepared statements, the transaction
// object closures run against, and the schema migration.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

// Connects to `url` (libpq's URI or key=value form) with TCP keepalives (idle 5 s, then 2 probes
// 2 s apart) and a TCP user timeout (10 s) unless the URL sets its own, so a server cut off from
// its database (a lost host, a dead network path) sees its calls fail within about ten seconds
// instead of waiting on the socket for the kernel's retransmissions (many minutes): its reads and
// writes report Unavailable, and what waits on them — the Fargate fence, the agents — can act.
// Unix sockets ignore these. Null only when out of memory; check PQstatus.
pg_conn* ConnectBounded(const std::string& url);

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
  // QueryText's answer for a statement without parameters that this connection runs often:
  // prepared (as `name`) on first use and after a reconnection, so PostgreSQL plans it once.
  StatusOr<std::optional<std::string>> QueryPrepared(std::string_view name, std::string_view sql);
  // A read-only snapshot transaction, in fewer round trips: BEGIN is queued to go out with the
  // transaction's first statement (a read that runs none costs no round trip), and EndRead sends
  // COMMIT without waiting for its answer, which the connection's next use collects.
  Status BeginRead();
  void EndRead();
  // Queues a statement that returns nothing of interest ("BEGIN", "SAVEPOINT w", ...) to go out
  // with the next round trip: the next read's, Flush's or Execute's. A queued "COMMIT" that
  // PostgreSQL answers with ROLLBACK (its transaction had failed) is a failure.
  void Queue(std::string sql);
  // Queues a query whose first column of the first row is wanted: it goes out like Queue's, and
  // `*into` (which must outlive the round trip) gets the value once answered (nullopt: no row).
  void QueueQuery(std::string sql, std::optional<std::string>* into) {
    queue_.push_back(Queued{.sql = std::move(sql), .into = into});
  }
  // Drops what is queued, unsent.
  void DiscardQueued() { queue_.clear(); }
  // Drops the statements queued at `position` and after, if none of them was sent yet (true);
  // otherwise does nothing (false). Positions: below.
  bool DiscardQueuedFrom(uint64_t position) {
    if (position < sent_ || position > next_position()) return false;
    queue_.resize(static_cast<size_t>(position - sent_));
    return true;
  }
  // The writer's mode: Put, Delete and DeleteRange are queued too (their failures then surface at
  // the next read or Flush, which return the first one), so writes cost no round trip of their
  // own: they go out with the next read, whichever closure makes it, or with the COMMIT.
  void SetDeferWrites(bool defer) { defer_writes_ = defer; }
  // Sends what is queued, in one pipeline, and waits for every answer. The first failure.
  Status Flush();
  // After a lost connection, connects again (its prepared statements are gone with it). OK
  // when the connection is usable.
  Status EnsureConnected();
  // Whether the server side ended the last transaction (failed or lost): no open transaction.
  bool Idle() const;
  // The tables Put, Delete or DeleteRange named since the last call (in catalog order), and
  // forgets them: what a write transaction announces (change_feed.h).
  std::vector<std::string> TakeWrittenTables();
  // Positions, for a writer that lets statements of several closures share round trips: every
  // statement sent gets the next position, in order, from 0 (queued ones in the order queued;
  // next_position() is the one the next queued statement gets). answered(): every statement
  // before it was answered OK. A round trip stops at its first failure (PostgreSQL skips the rest
  // of a pipeline): TakeFailure gives the first failed position since the last call, and its
  // status.
  struct Failure {
    uint64_t position;
    Status status;
  };
  uint64_t next_position() const { return sent_ + queue_.size(); }
  uint64_t answered() const { return answered_; }
  std::optional<Failure> TakeFailure() { return std::exchange(failure_, std::nullopt); }
  const std::optional<Failure>& failure() const { return failure_; }
  // Round trips so far (for tests and the bench: what a change costs).
  uint64_t round_trips() const { return round_trips_; }

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
  // A statement to send: a catalogued table's operation (index >= 0) with its parameters, or a
  // plain SQL statement (index < 0).
  struct Queued {
    int index = -1;
    Op op = Op::kGet;
    std::vector<std::string> params = {};
    std::string sql = "";
    std::optional<std::string>* into = nullptr;  // QueueQuery's
  };
  // Runs statement `op` of table `table` now, after whatever is queued, and returns its answer.
  StatusOr<Result> Run(std::string_view table, Op op, const std::vector<std::string_view>& params);
  // A write: run now, or queued in the writer's mode.
  Status Write(std::string_view table, Op op, const std::vector<std::string_view>& params);
  // Sends the queue and `last` in one round trip (connecting again and sending once more if a
  // transaction's first round trip finds the server gone); returns `last`'s answer.
  StatusOr<std::optional<Result>> Send(std::optional<Queued> last);
  // On failure, *failed is the index of the first item whose answer failed (or was not read).
  StatusOr<std::optional<Result>> SendOnce(const std::vector<Queued>& items, size_t* failed);
  // Notes the outcome of statements [base, base + count): all answered, or a failure at
  // base + failed.
  void Answered(uint64_t base, size_t count, const Status& status, size_t failed);
  // A prepared statement run alone, in one plain round trip.
  template <typename Strings>
  StatusOr<Result> ExecPrepared(int index, Op op, const Strings& params);
  size_t Slot(const Queued& q) const;
  std::string What(const Queued& q) const;
  // Collects the answer of a COMMIT EndRead sent, before the connection is used again.
  void Settle();

  pg_conn* conn_;
  std::string url_;
  std::shared_ptr<const TableCatalog> catalog_;
  std::vector<bool> prepared_;  // [table index * kOpCount + op]
  std::vector<bool> written_;   // [table index]: named by a write since TakeWrittenTables
  std::vector<std::string> prepared_queries_;  // QueryPrepared's names prepared on this connection
  std::vector<Queued> queue_;      // statements waiting for the next round trip
  bool defer_writes_ = false;
  bool commit_in_flight_ = false;  // EndRead's COMMIT, its answer not collected yet
  uint64_t sent_ = 0;                      // positions given to statements sent
  uint64_t answered_ = 0;                  // every position before it answered OK
  std::optional<Failure> failure_;         // the first failure not taken yet
  uint64_t round_trips_ = 0;
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
  // A closure begins, its statements at `position` and after (its SAVEPOINT's). A failed statement
  // before it (another closure's, whose round trip this closure's read shared) fails this
  // closure's operations with kAborted, not with that statement's error.
  void BeginClosure(uint64_t position) { closure_begin_ = position; }

 private:
  Status Note(Status s);
  Connection& conn_;
  Status last_error_;
  uint64_t closure_begin_ = 0;
};

// Brings every module of `catalog` to its version in one transaction under kMigrationLock
// (sqlite's Migrate's rules: new tables created, versions recorded; a newer module refused with
// kFailedPrecondition, changing nothing).
Status Migrate(Connection& conn, const TableCatalog& catalog);

}  // namespace paddock::store::postgres_internal
