// Private to store/postgres: the database's change notifications (LISTEN/NOTIFY), which tell a
// store what other stores on the same database — other servers — committed.
//
// Every write transaction that changed a table sends, in the transaction itself (so PostgreSQL
// delivers it at the commit, and never for a rollback), one notification on kChannel whose payload
// is "<origin> <generation> <tables>" (read_cache.h's AnnounceSql: the statement bumps the
// database's generation too). A ChangeFeed keeps one connection of its own LISTENing there, on a
// thread of its own: it hands every announcement, in commit order, to its `on_commit` (a store's
// read cache) and other origins' tables to its listener (the owners' change listeners).
//
//   ChangeFeed feed(url, origin, {.on_commit = ..., .on_listening = ..., .on_lost = ...});
//   feed.SetListener([](const std::vector<std::string>& tables) { ... });
//   ...
//   feed.Stop();  // or the destructor
#pragma once

#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace paddock::store::postgres_internal {

inline constexpr std::string_view kChannel = "paddock_changes";
// Messages between servers outside any transaction (PostgresStore::Broadcast): "<origin> <message>".
inline constexpr std::string_view kMessageChannel = "paddock_messages";

// PostgresStore::ChangeListener.
using ChangeListener = std::function<void(const std::vector<std::string>& tables)>;

// A payload's tables: "<table>,<table>…", or "*" when the list would pass NOTIFY's payload limit
// (8,000 bytes with the origin and generation before it): then every table may have changed.
// Table names are [a-z0-9_] (store/schema.h), so the payload needs no quoting in a string literal.
std::string ChangedTables(const std::vector<std::string>& tables);

// What a payload "<origin> <generation> <tables>" says (tables: none for "*", everything). False
// when it is no payload of ours.
bool ParseChangePayload(std::string_view payload, std::string* origin, uint64_t* generation,
                        std::vector<std::string>* tables);

// What a feed tells its store besides the listener; each may be empty. All run on the feed's thread.
struct FeedCallbacks {
  // Every announcement, the store's own too, in commit order.
  std::function<void(uint64_t generation, const std::vector<std::string>& tables)> on_commit;
  // Listening (again): every commit after `generation` will be announced.
  std::function<void(uint64_t generation)> on_listening;
  // The connection is lost: announcements may be missed until on_listening.
  std::function<void()> on_lost;
};

class ChangeFeed {
 public:
  // Starts the thread, which connects to `url` (and connects again, a second later, whenever the
  // connection fails or is lost), LISTENs and reads the generation; returns once its first attempt
  // is done, so that every commit after a successful one is heard.
  ChangeFeed(std::string url, std::string origin, FeedCallbacks callbacks);
  ~ChangeFeed();  // Stop()
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  // From now on the tables of every announcement whose origin is not the feed's go to `listener`;
  // after a lost connection is re-established, once with no table: changes may have been missed,
  // so anything may have changed.
  void SetListener(ChangeListener listener);
  // From now on every message of another origin on kMessageChannel goes to `listener`.
  void SetMessageListener(std::function<void(std::string_view message)> listener);

  // Ends the thread (nothing is called after it returns). Idempotent.
  void Stop();

 private:
  void Run();

  const std::string url_;
  const std::string origin_;
  const FeedCallbacks callbacks_;
  std::mutex listener_mu_;
  ChangeListener listener_;  // GUARDED_BY(listener_mu_)
  std::function<void(std::string_view)> message_listener_;  // GUARDED_BY(listener_mu_)
  const int wake_fd_;  // an eventfd: Stop's signal to the thread's poll
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool first_attempt_done_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace paddock::store::postgres_internal
