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
      readers_(std::move(readers)),
      writes_(options_.max_batch, [this](const auto& batch) { CommitBatch(batch); }, [this] { AfterBatch(); }) {
  writer_conn_->OnCommit([this](int pages) { wal_pages_ = pages; });
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  writes_.Start();
}

SqliteStore::~SqliteStore() { Close(); }

Status SqliteStore::Write(const std::function<Status(WriteTxn&)>& fn) { return writes_.Submit(fn); }

void SqliteStore::AfterBatch() {
  if (wal_pages_ >= kWriterCheckpointPages) {
    // The background checkpoint never catches up while commits keep landing, so the writer
    // checkpoints in RESTART mode between batches: it waits for a running checkpoint and for
    // readers on old snapshots, and the next batch starts the WAL over. If it could not finish
    // (e.g. a reader still on an old snapshot), it is tried again after the next batch.
    StatusOr<bool> complete = writer_conn_->Checkpoint(/*restart=*/true);
    if (complete.ok() && *complete) wal_pages_ = 0;
  } else if (wal_pages_ >= kCheckpointPages) {
    std::lock_guard lock(checkpoint_mu_);
    checkpoint_wanted_ = true;
    checkpoint_cv_.notify_one();
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

void SqliteStore::CommitBatch(const std::vector<internal::PendingWrite*>& batch) {
  Connection& conn = *writer_conn_;
  Txn txn(conn);
  // Closures that returned OK inside the open transaction; their result waits for COMMIT.
  std::vector<internal::PendingWrite*> committing;
  bool open = false;
  // The open transaction is gone: nothing in it will be committed.
  auto lose_transaction = [&](const Status& cause) {
    for (internal::PendingWrite* w : committing) w->result = cause;
    committing.clear();
    if (!conn.InAutocommit()) conn.Run(Control::kRollback).IgnoreError();
    open = false;
  };

  for (internal::PendingWrite* w : batch) {
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
    Status result = internal::RunClosure<WriteTxn>(*w->fn, txn);
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
  for (internal::PendingWrite* w : committing) w->result = OkStatus();
}

Status SqliteStore::Read(const std::function<Status(ReadTxn&)>& fn) {
  return readers_.With([&](Connection& conn) -> Status {
    Status result = conn.Run(Control::kBegin);
    if (!result.ok()) return result;
    Txn txn(conn);
    result = internal::RunClosure<ReadTxn>(fn, txn);
    Status end = conn.Run(Control::kCommit);
    if (!end.ok()) {
      if (!conn.InAutocommit()) conn.Run(Control::kRollback).IgnoreError();
      if (result.ok()) result = end;
    }
    return result;
  });
}

void SqliteStore::Close() {
  std::call_once(close_once_, [this] {
    writes_.Close();
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_all();
    if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
    checkpoint_conn_.reset();
    readers_.Close();
    // Last to close: closing the last connection checkpoints the WAL into the database file.
    writer_conn_.reset();
  });
}

}  // namespace paddock::store
