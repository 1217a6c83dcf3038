// Private to store/: what the SQLite and PostgreSQL stores share around their connections — the
// group-commit queue (Write() callers wait while one writer thread commits their closures in
// batches), the pool of read connections, and running a closure so that an exception it throws
// becomes a Status instead of crossing the Store.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/status.h"
#include "store/store.h"

namespace paddock::store::internal {

// Runs a closure; an exception it throws becomes kInternal.
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

inline Status StoreClosedError() { return Unavailable("store is closed"); }

// One closure waiting in the queue; the writer sets `result`.
struct PendingWrite {
  explicit PendingWrite(const std::function<Status(WriteTxn&)>* f) : fn(f) {}
  const std::function<Status(WriteTxn&)>* fn;
  Status result;               // set by the writer thread before `done`
  bool done = false;           // guarded by the queue's mutex
  std::condition_variable cv;  // signalled with the queue's mutex held when `done` turns true
};

class WriteQueue {
 public:
  // `commit` runs each batch (up to max_batch closures, in arrival order) on the writer thread and
  // sets every closure's result; `after` (optional) runs on it after each batch's results are out.
  using Commit = std::function<void(const std::vector<PendingWrite*>&)>;
  WriteQueue(size_t max_batch, Commit commit, std::function<void()> after = {})
      : max_batch_(max_batch), commit_(std::move(commit)), after_(std::move(after)) {}
  ~WriteQueue() { Close(); }
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  // Starts the writer thread. Call once, before Submit.
  void Start() {
    thread_ = std::thread([this] { Loop(); });
    writer_id_ = thread_.get_id();
  }
  // Queues `fn` and waits for its result. kInternal from the writer thread itself (a Write inside
  // a write would wait for itself); kUnavailable once closed.
  Status Submit(const std::function<Status(WriteTxn&)>& fn) {
    if (std::this_thread::get_id() == writer_id_) return Internal("Store::Write called from inside a write transaction");
    PendingWrite w(&fn);
    std::unique_lock lock(mu_);
    if (closed_) return StoreClosedError();
    queue_.push_back(&w);
    cv_.notify_one();
    w.cv.wait(lock, [&] { return w.done; });
    return std::move(w.result);
  }
  // Refuses new closures, commits those queued, and joins the writer. Idempotent.
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    std::vector<PendingWrite*> batch;
    for (;;) {
      batch.clear();
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;  // closed and drained
        while (!queue_.empty() && batch.size() < max_batch_) {
          batch.push_back(queue_.front());
          queue_.pop_front();
        }
      }
      commit_(batch);
      {
        std::lock_guard lock(mu_);
        for (PendingWrite* w : batch) {
          w->done = true;
          w->cv.notify_one();
        }
      }
      if (after_) after_();
    }
  }

  const size_t max_batch_;
  const Commit commit_;
  const std::function<void()> after_;
  std::thread thread_;
  std::thread::id writer_id_;  // set before any Submit can run; never changes
  std::mutex mu_;
  std::condition_variable cv_;         // signals the writer: work queued or closing
  std::deque<PendingWrite*> queue_;    // guarded by mu_
  bool closed_ = false;                // guarded by mu_
};

// Read connections lent one Read at a time; more Reads wait for a free one.
template <typename Conn>
class ReaderPool {
 public:
  explicit ReaderPool(std::vector<std::unique_ptr<Conn>> conns) : conns_(std::move(conns)) {
    for (auto& c : conns_) idle_.push_back(c.get());
  }
  // Runs `use` with a connection of the pool; kUnavailable once closed.
  Status With(const std::function<Status(Conn&)>& use) {
    Conn* conn = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closed_ || !idle_.empty(); });
      if (closed_) return StoreClosedError();
      conn = idle_.back();
      idle_.pop_back();
      ++in_use_;
    }
    Status result = use(*conn);
    {
      std::lock_guard lock(mu_);
      idle_.push_back(conn);
      --in_use_;
    }
    cv_.notify_all();
    return result;
  }
  // Refuses new Reads, waits for those running, and closes the connections. Idempotent.
  void Close() {
    {
      std::unique_lock lock(mu_);
      closed_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return in_use_ == 0; });
      idle_.clear();
    }
    conns_.clear();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;  // a connection was returned, or closing
  std::vector<Conn*> idle_;     // guarded by mu_
  int in_use_ = 0;              // guarded by mu_
  bool closed_ = false;         // guarded by mu_
  std::vector<std::unique_ptr<Conn>> conns_;
};

}  // namespace paddock::store::internal
