// cli/console_relay: the consoles of every server on one PostgreSQL database hear every server's
// changes (issues 16 and 17).
//
// A console watches its account's changes on the server it is connected to (console/change_feed.h),
// which publishes what its own API calls, agents and scheduler commit. Servers sharing a database
// pass those changes on: each relays what it publishes — (account, kind) pairs, gathered for
// kGather and sent as one message (PostgresStore::Broadcast) — and publishes what the others relay
// to its own watches. A message names accounts and kinds only, as a local publish does, and only
// servers hear it (a database notification); a watch still wakes only for its own account, so
// nothing crosses accounts. A message is a hint: one lost (a server not listening at that moment)
// costs a view a refresh until the next change, never a wrong answer — the console reads through
// the API.
//
//   ConsoleRelay relay(*postgres, change_feed);  // before serving
//   ...                                          // destroyed before the store closes
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "console/change_feed.h"
#include "store/postgres/postgres_store.h"

namespace paddock::cli {

class ConsoleRelay {
 public:
  static constexpr std::chrono::milliseconds kGather{50};

  // Relays `feed`'s publishes through `store` and publishes the other servers' to it; both must
  // outlive the relay.
  ConsoleRelay(store::PostgresStore& store, console::ChangeFeed& feed);
  ~ConsoleRelay();  // Stop()
  ConsoleRelay(const ConsoleRelay&) = delete;
  ConsoleRelay& operator=(const ConsoleRelay&) = delete;

  // Sends what is gathered, then relays nothing more. Idempotent.
  void Stop();

  // The messages for `changes` (account -> kinds, bit 1 << ChangeKind), each within
  // PostgresStore::kMaxMessage: "console <account>:<kinds>,<account>:<kinds>…".
  static std::vector<std::string> Messages(const std::map<AccountId, uint32_t>& changes);
  // Publishes to `feed` what a message relays; anything else (another kind of message, a
  // malformed one) is ignored.
  static void Receive(std::string_view message, console::ChangeFeed& feed);

 private:
  void Loop();

  store::PostgresStore& store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<AccountId, uint32_t> pending_;  // GUARDED_BY(mu_)
  bool stop_ = false;                      // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace paddock::cli
