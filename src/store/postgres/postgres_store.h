// PostgresStore: the Store on a PostgreSQL database, for Paddock on several servers (issue 16).
//
// Each table a module declares (store/schema.h) is a real table `t_<name>(k bytea PRIMARY KEY,
// v bytea NOT NULL)`; bytea compares as memcmp, so a Scan is a B-tree range search in the order
// the Store promises. Keys and values travel in libpq's binary format.
//
// Writes are group-committed as in SqliteStore: Write() queues its closure and blocks; one writer
// thread owns the write connection and runs the queued closures (up to max_batch) in one
// transaction, each under its own savepoint, then commits once (synchronous_commit on: an OK
// means PostgreSQL flushed the commit to its WAL). Every write transaction first takes one
// transaction-scoped advisory lock, so the write transactions of every server on the database
// run one after another: each closure sees everything committed before it and nothing commits
// beside it, which is serializable without SERIALIZABLE's retries — and a closure runs exactly
// once, as the Store promises. The batch's statements share round trips (libpq pipelines): a
// closure's writes go out with the next read of any closure, or with the COMMIT, so a batch of N
// closures that read once costs N + 1; a statement PostgreSQL refuses fails its closure and the
// closures queued after it (kAborted), and the others commit. Reads run on a pool of connections,
// each in a REPEATABLE READ READ ONLY transaction (one snapshot), and never wait for writers.
//
// A lost connection fails the work in flight on it (kUnavailable; a commit whose answer was lost
// is not acknowledged) and is re-established for the next; so a PostgreSQL restart costs the
// writes in flight, never an acknowledged one.
//
// The read cache (PostgresOptions::cache_bytes; internal/read_cache.h) answers ReadRepeatable
// from memory, exactly as the database would. Every write transaction that changes tables bumps
// the database's generation and announces it with its tables; a ReadRepeatable first reads the
// generation in a query begun after it (one round trip shared by the reads waiting beside it),
// waits until this store has heard that far, and then runs its closure on the cache as of the
// cache's generation, which serves a table only if it has not changed since. So it sees every
// write acknowledged before it began, through any server, in one consistent state. On its first
// miss that run ends and the closure runs again on a database snapshot, which fills the cache.
// Read itself always reads the database.
//
// Change notifications (several servers on one database): a write transaction that changed
// tables sends one NOTIFY naming them inside the transaction (delivered at its commit, never for a
// rollback; it rides on the COMMIT's round trip). SetChangeListener starts a ChangeFeed: one more
// connection, LISTENing on a thread of its own, that hands other stores' changes to the listener
// (internal/change_feed.h).
//
// Migrations: Open creates each module's new tables and records each module's version
// (`schema_modules`) in one transaction under an advisory lock of its own, so servers starting
// together migrate once; a module newer in the database than in this build is refused.
//
//   ASSIGN_OR_RETURN(auto store, PostgresStore::Open({.url = "postgresql://paddock@db/paddock"}));
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/internal/write_queue.h"
#include "store/schema.h"
#include "store/store.h"

namespace paddock::store {

namespace postgres_internal {
class Connection;
class ChangeFeed;
class ReadCache;
class GenerationBarrier;
}  // namespace postgres_internal

struct PostgresOptions {
  // A libpq connection string: "postgresql://user@host:port/db" or "host=... dbname=...".
  std::string url = "";
  // Read connections, i.e. Reads that can run at once; more wait for a free one.
  int readers = 8;
  // Most closures committed by one transaction.
  size_t max_batch = 256;
  // The modules whose tables this store holds (store/schema.h), besides its own (kStoreSchema).
  std::vector<ModuleSchema> schemas = {};
  // Bytes of rows the read cache holds at most; 0: no cache (every Read is a database snapshot).
  // The cache takes two connections more (its feed and its generation reads).
  size_t cache_bytes = 0;
};

class PostgresStore : public Store {
 public:
  // Connects, and migrates the database. kUnavailable when PostgreSQL cannot be reached;
  // kFailedPrecondition if a module's tables in the database are newer than this build's;
  // InvalidArgument if options.schemas declare a module or table twice.
  static StatusOr<std::unique_ptr<PostgresStore>> Open(const PostgresOptions& options);

  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  Status Read(const std::function<Status(ReadTxn&)>& fn) override;
  Status ReadRepeatable(const std::function<Status(ReadTxn&)>& fn) override;
  Status Write(const std::function<Status(WriteTxn&)>& fn) override;
  // After Close, Read and Write return kUnavailable. Writes already queued are committed first;
  // Reads in progress finish first. Safe to call more than once and from several threads.
  void Close() override;
  // What other stores on the same database commit: for several servers on one database, whose
  // owners' change listeners hear only their own server's writes. `listener` is called on a
  // thread of the store's once another store's write transaction has committed, with the tables
  // it wrote — or with none when changes may have been missed (the listening connection was lost
  // and is back): then any table may have changed. This store's own writes are never reported
  // (their callers know them). It must be cheap and must not call back into the store. Set it
  // once, before serving: it starts listening (one connection more; the read cache's feed, if the
  // store has one, which listens already) and returns once it listens (or its first attempt
  // failed: it tries again every second). Close stops the calls.
  //
  // SqliteStore has no such seam: its file is one server's (the state directory's lock), and the
  // few writes other processes make there (`paddock admin`) are found by the readers that recheck
  // on a timer (agent long-polls: agent/inprocess/inprocess_control.h).
  using ChangeListener = std::function<void(const std::vector<std::string>& tables)>;
  void SetChangeListener(ChangeListener listener);

  // Several servers on one database: `message` (printable, at most kMaxMessage bytes) reaches
  // every other store on the database whose message listener is set, at once, as a notification
  // outside any transaction — a hint, not a record: a store that is not listening at that moment
  // never hears it. The console's changes travel so (cli/console_relay.h). One round trip.
  static constexpr size_t kMaxMessage = 7900;
  Status Broadcast(std::string_view message);
  // Every other store's Broadcast from now on, on the feed's thread (cheap; must not call back
  // into the store). Starts the feed as SetChangeListener does.
  using MessageListener = std::function<void(std::string_view message)>;
  void SetMessageListener(MessageListener listener);

  // What the writer has done so far, for tests and benchmarks: what a change costs.
  struct WriterStats {
    uint64_t transactions = 0;
    uint64_t round_trips = 0;  // on the write connection
  };
  WriterStats writer_stats() const;
  // What the read cache has done so far (all zero without one).
  struct CacheStats {
    uint64_t hits = 0;            // rows or scans answered from memory
    uint64_t misses = 0;          // looked up and not there (or not servable)
    uint64_t generation_reads = 0;  // round trips of the generation barrier
    uint64_t reruns = 0;          // closures run again on the database after a miss
  };
  CacheStats cache_stats() const;

 private:
  using Connection = postgres_internal::Connection;

  PostgresStore(PostgresOptions options, std::unique_ptr<Connection> writer,
                std::vector<std::unique_ptr<Connection>> readers, std::unique_ptr<Connection> barrier);

  // Runs `batch` in one transaction and sets each one's result (the writer thread).
  void CommitBatch(const std::vector<internal::PendingWrite*>& batch);

  const PostgresOptions options_;
  // Names this store in its change notifications, so that its feed skips its own.
  const std::string origin_;
  std::mutex feed_mu_;
  std::unique_ptr<postgres_internal::ChangeFeed> feed_;  // GUARDED_BY(feed_mu_); null: nobody listens
  bool closed_ = false;                                  // GUARDED_BY(feed_mu_)
  std::unique_ptr<Connection> writer_conn_;  // the writer thread's once it runs
  std::atomic<uint64_t> transactions_ = 0;   // the writer thread adds; anyone reads
  std::atomic<uint64_t> round_trips_ = 0;
  std::unique_ptr<postgres_internal::ReadCache> cache_;  // null without one
  std::unique_ptr<postgres_internal::GenerationBarrier> barrier_;
  std::atomic<uint64_t> reruns_ = 0;
  std::atomic<bool> reads_closed_ = false;
  internal::ReaderPool<Connection> readers_;
  internal::WriteQueue writes_;  // last: its thread uses the members above
  std::once_flag close_once_;
};

}  // namespace paddock::store
