// SqliteStore: the Store on one SQLite database file, for single-node Paddock.
//
// Each table a module declares (store/schema.h) is a real SQLite table `t_<name>(k BLOB PRIMARY KEY, v BLOB NOT
// NULL) WITHOUT ROWID`, so a Scan is a B-tree range search. The database runs in WAL mode: reads
// use a pool of read-only connections and never wait for the writer.
//
// Writes are group-committed. Write() queues its closure and blocks; one writer thread owns the
// only write connection and runs every queued closure (up to max_batch) inside one transaction,
// each under its own savepoint, then commits once. A closure that fails is rolled back to its
// savepoint and does not disturb the others; the batch shares one fsync, which is what lets many
// concurrent writers each get a durable commit without each paying for a disk flush.
//
// Checkpoints (copying the WAL back into the database file, with its own fsyncs) run on a
// background thread with its own connection, so commits do not stall behind them; only if the WAL
// grows far past its usual size does the writer thread checkpoint itself, to bound it.
//
//   ASSIGN_OR_RETURN(auto store, SqliteStore::Open({.path = dir + "/state.db"}));
//   RETURN_IF_ERROR(store->Write([&](WriteTxn& txn) { return txn.Put("meta", k, v); }));
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "store/internal/write_queue.h"
#include "store/schema.h"
#include "store/store.h"

namespace paddock::store {

namespace sqlite_internal {
class Connection;
}  // namespace sqlite_internal

struct SqliteOptions {
  // The database file; created if absent (mode 0600; it and its -wal and -shm files are tightened
  // to owner-only when found looser). Its directory must exist.
  std::string path;
  // true: synchronous=FULL, so a Write that returned OK was fsync'd and survives kill -9 and power
  // loss. false: synchronous=OFF, for unit tests only.
  bool durable = true;
  // Read-only connections, i.e. Reads that can run at once; more wait for a free one.
  int readers = 8;
  // Most closures committed by one transaction.
  size_t max_batch = 256;
  // The modules whose tables this store holds (store/schema.h), besides its own (kStoreSchema).
  std::vector<ModuleSchema> schemas = {};
};

class SqliteStore : public Store {
 public:
  // Opens (creating if needed) and migrates the database at options.path.
  // Fails with kFailedPrecondition if a module's tables in the file are newer than this build's;
  // InvalidArgument if options.schemas declare a module or table twice.
  static StatusOr<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Status Read(const std::function<Status(ReadTxn&)>& fn) override;
  Status Write(const std::function<Status(WriteTxn&)>& fn) override;
  // After Close, Read and Write return kUnavailable. Writes already queued are committed first;
  // Reads in progress finish first. Safe to call more than once and from several threads.
  void Close() override;

 private:
  using Connection = sqlite_internal::Connection;

  SqliteStore(SqliteOptions options, std::unique_ptr<Connection> writer, std::unique_ptr<Connection> checkpointer,
              std::vector<std::unique_ptr<Connection>> readers);

  void CheckpointLoop();
  // Runs `batch` in one transaction and sets each one's result (the writer thread).
  void CommitBatch(const std::vector<internal::PendingWrite*>& batch);
  // After each batch: checkpoints, or asks the checkpoint thread to, as the WAL has grown.
  void AfterBatch();

  const SqliteOptions options_;

  // Touched only by the writer thread once it runs (and by Close after joining it).
  std::unique_ptr<Connection> writer_conn_;
  int wal_pages_ = 0;  // the WAL's size after the last commit

  std::unique_ptr<Connection> checkpoint_conn_;  // checkpoint thread only
  std::thread checkpoint_thread_;
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_wanted_ = false;  // GUARDED_BY(checkpoint_mu_)
  bool checkpoint_stop_ = false;    // GUARDED_BY(checkpoint_mu_)

  internal::ReaderPool<Connection> readers_;
  internal::WriteQueue writes_;  // last: its thread uses the members above

  std::once_flag close_once_;
};

}  // namespace paddock::store
