// Private to store/postgres: the database's change notifications (LISTEN/NOTIFY), which tell a
// store what other stores on the same database — other servers — committed.
//
// Every write transaction that changed a table sends, in the transaction itself (so PostgreSQL
// delivers it at the commit, and never for a rollback), one notification on kChannel whose payload
// is ChangePayload(origin, tables). A ChangeFeed keeps one connection of its own LISTENing there,
// on a thread of its own, and hands each other origin's tables to its listener.
//
//   ChangeFeed feed(url, origin, [](const std::vector<std::string>& tables) { ... });
//   ...
//   feed.Stop();  // or the destructor
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace paddock::store::postgres_internal {

inline constexpr std::string_view kChannel = "paddock_changes";

// PostgresStore::ChangeListener.
using ChangeListener = std::function<void(const std::vector<std::string>& tables)>;

// "<origin> <table>,<table>…"; "<origin> *" when the list would pass NOTIFY's payload limit
// (8,000 bytes): then every table may have changed. Table names are [a-z0-9_] (store/schema.h),
// so the payload needs no quoting in a string literal.
std::string ChangePayload(std::string_view origin, const std::vector<std::string>& tables);

// What a payload says: its origin and its tables (none for "*": everything). False when it is no
// payload of ours.
bool ParseChangePayload(std::string_view payload, std::string* origin, std::vector<std::string>* tables);

class ChangeFeed {
 public:
  // Starts the thread, which connects to `url` (and connects again, a second later, whenever the
  // connection fails or is lost) and LISTENs; returns once its first attempt is done, so that
  // every commit after a successful one is heard. `listener` gets the tables of every notification
  // whose origin is not `origin`; after a lost connection is re-established, once with no table:
  // changes may have been missed, so anything may have changed.
  ChangeFeed(std::string url, std::string origin, ChangeListener listener);
  ~ChangeFeed();  // Stop()
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  // Ends the thread (the listener is not called after it returns). Idempotent.
  void Stop();

 private:
  void Run();

  const std::string url_;
  const std::string origin_;
  const ChangeListener listener_;
  const int wake_fd_;  // an eventfd: Stop's signal to the thread's poll
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool first_attempt_done_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace paddock::store::postgres_internal
