#include "store/sqlite/sqlite_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

#include <fmt/format.h>

#include "common/private_files.h"
#include "store/schema.h"
#include "store/sqlite/internal/connection.h"

namespace paddock::store {

using sqlite_internal::Connection;
using sqlite_internal::Control;
using sqlite_internal::Mode;
using sqlite_internal::Txn;

namespace {

// Runs a closure; an exception it throws becomes kInternal instead of crossing the Store.
template <typename TxnT>
Status RunClosure(const std::function<Status(TxnT&)>& fn, TxnT& txn) {
  try {
    return fn(txn);
  } catch (const std::exception& e) {
    return Internal(fmt::format("store transaction threw: {}", e.what()));
  } catch (...) {
    return Internal("store transaction threw a non-std exception");
  }
}

Status ClosedError() { return Unavailable("store is closed"); }

// WAL size (in 8 KiB pages, see connection.cc) at which the background thread checkpoints:
// 4 MiB, SQLite's default.
constexpr int kCheckpointPages = 500;
// WAL size at which the writer checkpoints itself, because the background thread cannot keep up
// (it only finishes when no commit lands meanwhile). Bounds the WAL at ~32 MiB plus one batch.
constexpr int kWriterCheckpointPages = 8 * kCheckpointPages;

// The database holds every tenant's secrets: it is made 0600 before SQLite opens it (SQLite then
// gives its -wal and -shm files the database file's mode), and the three are tightened when an
// older Paddock made them looser.
Status MakeDatabaseFilesPrivate(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  ::close(fd);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) RETURN_IF_ERROR(TightenPrivateFile(path + suffix));
  return OkStatus();
}

}  // namespace

struct SqliteStore::PendingWrite {
  explicit PendingWrite(const std::function<Status(WriteTxn&)>* f) : fn(f) {}
  const std::function<Status(WriteTxn&)>* fn;
  Status result;                // set by the writer thread before `done`
  bool done = false;            // GUARDED_BY(write_mu_)
  std::condition_variable cv;   // signalled with write_mu_ held when `done` turns true
};

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteOptions& options) {
  if (options.path.empty()) return InvalidArgument("SqliteOptions.path is empty");
  if (options.readers < 1) return InvalidArgument("SqliteOptions.readers must be at least 1");
  if (options.max_batch < 1) return InvalidArgument("SqliteOptions.max_batch must be at least 1");

  RETURN_IF_ERROR(MakeDatabaseFilesPrivate(options.path));
  ASSIGN_OR_RETURN(auto catalog, sqlite_internal::TableCatalog::Build(options.schemas));
  ASSIGN_OR_RETURN(auto writer, Connection::Open(options.path, Mode::kReadWrite, options.durable, catalog));
  RETURN_IF_ERROR(sqlite_internal::Migrate(writer->db(), *catalog));
  RETURN_IF_ERROR(writer->Execute("PRAGMA wal_autocheckpoint = 0"));
  ASSIGN_OR_RETURN(auto checkpointer,
                   Connection::Open(options.path, Mode::kReadWrite, options.durable, catalog));
  RETURN_IF_ERROR(checkpointer->Execute("PRAGMA wal_autocheckpoint = 0"));
  // Readers open after the writer has switched the file to WAL, which they then follow.
  std::vector<std::unique_ptr<Connection>> readers;
  for (int i = 0; i < options.readers; ++i) {
    ASSIGN_OR_RETURN(auto r, Connection::Open(options.path, Mode::kReadOnly, options.durable, catalog));
    readers.push_back(std::move(r));
  }
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(options, std::move(writer), std::move(checkpointer), std::move(readers)));
}

SqliteStore::SqliteStore(SqliteOptions options, std::unique_ptr<Connection> writer,
                         std::unique_ptr<Connection> checkpointer,
                         std::vector<std::unique_ptr<Connection>> readers)
    : options_(std::move(options)),
      writer_conn_(std::move(writer)),
      checkpoint_conn_(std::move(checkpointer)),
      readers_(std::move(readers)) {
  for (auto& r : readers_) idle_readers_.push_back(r.get());
  writer_conn_->OnCommit([this](int pages) { wal_pages_ = pages; });
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  writer_thread_ = std::thread([this] { WriterLoop(); });
  writer_id_ = writer_thread_.get_id();
}

SqliteStore::~SqliteStore() { Close(); }

Status SqliteStore::Write(const std::function<Status(WriteTxn&)>& fn) {
  if (std::this_thread::get_id() == writer_id_)
    return Internal("Store::Write called from inside a write transaction");
  PendingWrite w(&fn);
  std::unique_lock lock(write_mu_);
  if (write_closed_) return ClosedError();
  queue_.push_back(&w);
  write_cv_.notify_one();
  w.cv.wait(lock, [&] { return w.done; });
  return std::move(w.result);
}

void SqliteStore::WriterLoop() {
  std::vector<PendingWrite*> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock lock(write_mu_);
      write_cv_.wait(lock, [&] { return write_closed_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closed and drained
      while (!queue_.empty() && batch.size() < options_.max_batch) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    CommitBatch(batch);
    {
      std::lock_guard lock(write_mu_);
      for (PendingWrite* w : batch) {
        w->done = true;
        w->cv.notify_one();
      }
    }
    if (wal_pages_ >= kWriterCheckpointPages) {
      // Copies everything committed so far, as nothing else commits meanwhile; the next write
      // then starts the WAL over. A failure (e.g. a reader still on an old snapshot) only means
      // the WAL stays long for now.
      // The background checkpoint never catches up while commits keep landing, so the writer
      // checkpoints in RESTART mode between batches: it waits for a running checkpoint and for
      // readers on old snapshots, and the next batch starts the WAL over. If it could not
      // finish, it is tried again after the next batch.
      StatusOr<bool> complete = writer_conn_->Checkpoint(/*restart=*/true);
      if (complete.ok() && *complete) wal_pages_ = 0;
    } else if (wal_pages_ >= kCheckpointPages) {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_wanted_ = true;
      checkpoint_cv_.notify_one();
    }
  }
}

void SqliteStore::CheckpointLoop() {
  for (;;) {
    {
      std::unique_lock lock(checkpoint_mu_);
      checkpoint_cv_.wait(lock, [&] { return checkpoint_stop_ || checkpoint_wanted_; });
      if (checkpoint_stop_) return;
      checkpoint_wanted_ = false;
    }
    // Best effort: a checkpoint that cannot finish now is retried after a later commit.
    checkpoint_conn_->Checkpoint().status().IgnoreError();
  }
}

void SqliteStore::CommitBatch(const std::vector<PendingWrite*>& batch) {
  Connection& conn = *writer_conn_;
  Txn txn(conn);
  // Closures that returned OK inside the open transaction; their result waits for COMMIT.
  std::vector<PendingWrite*> committing;
  bool open = false;
  // The open transaction is gone: nothing in it will be committed.
  auto lose_transaction = [&](const Status& cause) {
    for (PendingWrite* w : committing) w->result = cause;
    committing.clear();
    if (!conn.InAutocommit()) conn.Run(Control::kRollback).IgnoreError();
    open = false;
  };

  for (PendingWrite* w : batch) {
    if (!open) {
      Status s = conn.Run(Control::kBeginImmediate);
      if (!s.ok()) {
        w->result = s;
        continue;
      }
      open = true;
    }
    if (Status s = conn.Run(Control::kSavepoint); !s.ok()) {
      w->result = s;
      lose_transaction(s);
      continue;
    }
    txn.TakeLastError().IgnoreError();
    Status result = RunClosure<WriteTxn>(*w->fn, txn);
    if (conn.InAutocommit()) {
      // SQLite rolled back the whole transaction by itself (I/O error, disk full, ...).
      Status cause = txn.TakeLastError();
      if (cause.ok()) cause = Internal("sqlite rolled back the write transaction");
      w->result = result.ok() ? cause : result;
      lose_transaction(cause);
      continue;
    }
    if (result.ok()) {
      // A closure that ignored a failed Put or Delete must not commit the writes that did work.
      if (Status ignored = txn.TakeLastError(); !ignored.ok()) result = ignored;
    }
    if (result.ok()) {
      Status s = conn.Run(Control::kRelease);
      if (s.ok()) {
        committing.push_back(w);
        continue;
      }
      result = s;
    }
    w->result = std::move(result);
    Status undo = conn.Run(Control::kRollbackTo);
    if (undo.ok()) undo = conn.Run(Control::kRelease);
    // Without its savepoint, this closure's writes cannot be separated from the others'.
    if (!undo.ok()) lose_transaction(undo);
  }

  if (!open) return;
  Status s = conn.Run(Control::kCommit);
  if (!s.ok()) {
    lose_transaction(s);
    return;
  }
  for (PendingWrite* w : committing) w->result = OkStatus();
}

Status SqliteStore::Read(const std::function<Status(ReadTxn&)>& fn) {
  Connection* conn = nullptr;
  {
    std::unique_lock lock(read_mu_);
    read_cv_.wait(lock, [&] { return read_closed_ || !idle_readers_.empty(); });
    if (read_closed_) return ClosedError();
    conn = idle_readers_.back();
    idle_readers_.pop_back();
    ++readers_in_use_;
  }
  Status result = conn->Run(Control::kBegin);
  if (result.ok()) {
    Txn txn(*conn);
    result = RunClosure<ReadTxn>(fn, txn);
    Status end = conn->Run(Control::kCommit);
    if (!end.ok()) {
      if (!conn->InAutocommit()) conn->Run(Control::kRollback).IgnoreError();
      if (result.ok()) result = end;
    }
  }
  {
    std::lock_guard lock(read_mu_);
    idle_readers_.push_back(conn);
    --readers_in_use_;
  }
  read_cv_.notify_all();
  return result;
}

void SqliteStore::Close() {
  std::call_once(close_once_, [this] {
    {
      std::lock_guard lock(write_mu_);
      write_closed_ = true;
    }
    write_cv_.notify_all();
    if (writer_thread_.joinable()) writer_thread_.join();
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_all();
    if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
    checkpoint_conn_.reset();
    {
      std::unique_lock lock(read_mu_);
      read_closed_ = true;
      read_cv_.notify_all();
      read_cv_.wait(lock, [&] { return readers_in_use_ == 0; });
      idle_readers_.clear();
    }
    readers_.clear();
    // Last to close: closing the last connection checkpoints the WAL into the database file.
    writer_conn_.reset();
  });
}

}  // namespace paddock::store
