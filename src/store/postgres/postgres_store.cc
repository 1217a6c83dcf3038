#include "store/postgres/postgres_store.h"

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "store/postgres/internal/connection.h"

namespace paddock::store {

using postgres_internal::Connection;
using postgres_internal::Txn;

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

}  // namespace

struct PostgresStore::PendingWrite {
  explicit PendingWrite(const std::function<Status(WriteTxn&)>* f) : fn(f) {}
  const std::function<Status(WriteTxn&)>* fn;
  Status result;               // set by the writer thread before `done`
  bool done = false;           // GUARDED_BY(write_mu_)
  std::condition_variable cv;  // signalled with write_mu_ held when `done` turns true
};

StatusOr<std::unique_ptr<PostgresStore>> PostgresStore::Open(const PostgresOptions& options) {
  if (options.url.empty()) return InvalidArgument("PostgresOptions.url is empty");
  if (options.readers < 1) return InvalidArgument("PostgresOptions.readers must be at least 1");
  if (options.max_batch < 1) return InvalidArgument("PostgresOptions.max_batch must be at least 1");
  ASSIGN_OR_RETURN(auto catalog, internal::TableCatalog::Build(options.schemas));
  ASSIGN_OR_RETURN(auto writer, Connection::Open(options.url, catalog));
  RETURN_IF_ERROR(postgres_internal::Migrate(*writer, *catalog));
  writer->SetDeferWrites(true);
  std::vector<std::unique_ptr<Connection>> readers;
  for (int i = 0; i < options.readers; ++i) {
    ASSIGN_OR_RETURN(auto r, Connection::Open(options.url, catalog));
    readers.push_back(std::move(r));
  }
  return std::unique_ptr<PostgresStore>(new PostgresStore(options, std::move(writer), std::move(readers)));
}

PostgresStore::PostgresStore(PostgresOptions options, std::unique_ptr<Connection> writer,
                             std::vector<std::unique_ptr<Connection>> readers)
    : options_(std::move(options)), writer_conn_(std::move(writer)), readers_(std::move(readers)) {
  for (auto& r : readers_) idle_readers_.push_back(r.get());
  writer_thread_ = std::thread([this] { WriterLoop(); });
  writer_id_ = writer_thread_.get_id();
}

PostgresStore::~PostgresStore() { Close(); }

Status PostgresStore::Write(const std::function<Status(WriteTxn&)>& fn) {
  if (std::this_thread::get_id() == writer_id_) return Internal("Store::Write called from inside a write transaction");
  PendingWrite w(&fn);
  std::unique_lock lock(write_mu_);
  if (write_closed_) return ClosedError();
  queue_.push_back(&w);
  write_cv_.notify_one();
  w.cv.wait(lock, [&] { return w.done; });
  return std::move(w.result);
}

void PostgresStore::WriterLoop() {
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
    std::lock_guard lock(write_mu_);
    for (PendingWrite* w : batch) {
      w->done = true;
      w->cv.notify_one();
    }
  }
}

void PostgresStore::CommitBatch(const std::vector<PendingWrite*>& batch) {
  Connection& conn = *writer_conn_;
  Txn txn(conn);
  std::vector<PendingWrite*> committing;  // closures that returned OK; their result waits for COMMIT
  bool open = false;
  // The open transaction is gone: nothing in it will be committed.
  auto lose_transaction = [&](const Status& cause) {
    for (PendingWrite* w : committing) w->result = cause;
    committing.clear();
    if (!conn.Idle()) conn.Execute("ROLLBACK").IgnoreError();
    open = false;
  };
  // Statements go out queued (Connection::Queue, SetDeferWrites): BEGIN, the lock and a closure's
  // savepoint with its first read; its writes with its next read or its end, where one round trip
  // sends them, the RELEASE, and brings back the first failure.
  for (PendingWrite* w : batch) {
    if (!open) {
      if (Status s = conn.EnsureConnected(); !s.ok()) {
        w->result = s;
        continue;
      }
      conn.Queue("BEGIN");
      // One write transaction at a time on the whole database, whichever server runs it.
      conn.Queue(fmt::format("SELECT pg_advisory_xact_lock({})", postgres_internal::kWriteLock));
      open = true;
    }
    conn.Queue("SAVEPOINT w");
    txn.TakeLastError().IgnoreError();
    Status result = RunClosure<WriteTxn>(*w->fn, txn);
    // A closure that ignored a failed Put or Delete must not commit the writes that did work.
    if (Status ignored = txn.TakeLastError(); result.ok() && !ignored.ok()) result = ignored;
    if (result.ok()) {
      conn.Queue("RELEASE SAVEPOINT w");
      Status s = conn.Flush();
      if (s.ok()) {
        committing.push_back(w);
        continue;
      }
      result = s;
    }
    w->result = std::move(result);
    // Undo it: what it queued goes out first (a failure there aborts the rest of that round trip,
    // so the undo is sent once more on its own).
    Status undo = OkStatus();
    for (int attempt = 0; attempt < 2; ++attempt) {
      conn.Queue("ROLLBACK TO SAVEPOINT w");
      conn.Queue("RELEASE SAVEPOINT w");
      undo = conn.Flush();
      if (undo.ok()) break;
    }
    // Without its savepoint, this closure's writes cannot be separated from the others'.
    if (!undo.ok()) lose_transaction(undo);
  }

  if (!open) return;
  // A COMMIT whose answer is lost may or may not have landed: it is not acknowledged.
  if (Status s = conn.Execute("COMMIT"); !s.ok()) {
    lose_transaction(s);
    return;
  }
  for (PendingWrite* w : committing) w->result = OkStatus();
}

Status PostgresStore::Read(const std::function<Status(ReadTxn&)>& fn) {
  Connection* conn = nullptr;
  {
    std::unique_lock lock(read_mu_);
    read_cv_.wait(lock, [&] { return read_closed_ || !idle_readers_.empty(); });
    if (read_closed_) return ClosedError();
    conn = idle_readers_.back();
    idle_readers_.pop_back();
    ++readers_in_use_;
  }
  Status result = conn->BeginRead();
  if (result.ok()) {
    Txn txn(*conn);
    result = RunClosure<ReadTxn>(fn, txn);
    conn->EndRead();
  }
  {
    std::lock_guard lock(read_mu_);
    idle_readers_.push_back(conn);
    --readers_in_use_;
  }
  read_cv_.notify_all();
  return result;
}

void PostgresStore::Close() {
  std::call_once(close_once_, [this] {
    {
      std::lock_guard lock(write_mu_);
      write_closed_ = true;
    }
    write_cv_.notify_all();
    if (writer_thread_.joinable()) writer_thread_.join();
    {
      std::unique_lock lock(read_mu_);
      read_closed_ = true;
      read_cv_.notify_all();
      read_cv_.wait(lock, [&] { return readers_in_use_ == 0; });
      idle_readers_.clear();
    }
    readers_.clear();
    writer_conn_.reset();
  });
}

}  // namespace paddock::store
