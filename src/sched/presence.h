// sched/presence: which servers of a shared store are running, from a row each one keeps fresh.
//
// Several `paddock server`s on one PostgreSQL database (docs/scaling.md, "Several servers") each
// keep a row here: the server's name and when the row expires. A server renews its row every few
// seconds (Renew, at most a third of the time to live apart); a row not renewed in time (a killed
// server, a lost host) stops counting once it expires and is removed by any server's next Renew;
// a server that stops cleanly removes its own (Leave). The count is what the API's rate limits
// divide every account's budget by (aws/throttle.h, Throttler::SetServers).
//
//   Presence presence(store, "host-1:0123456789abcdef", std::chrono::seconds(6));
//   ASSIGN_OR_RETURN(int servers, presence.Renew(clock.Now()));  // this one and the live others
//   ...                                                          // another's row changed:
//   ASSIGN_OR_RETURN(servers, presence.Count(clock.Now()));      // a read, no write
//   presence.Leave().IgnoreError();
//
// Record (sched/schema.h): server_presence (<server name>) -> "<expires, ms since the epoch>".
// Expiry is judged on each reader's wall clock, as the scheduler lease's is (sched/lease.h): the
// servers' clocks must agree to well within the time to live.
#pragma once

#include <chrono>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::sched {

class Presence {
 public:
  // `server` names this server among those of the store and is stable across its restarts (a
  // restarted server takes its earlier life's row over instead of being counted twice until it
  // expires). The caller guarantees that no other running server uses the same name (Paddock:
  // the host and the state directory, whose lock keeps it to one process).
  Presence(store::Store& store, std::string server, std::chrono::milliseconds ttl)
      : store_(store), server_(std::move(server)), ttl_(ttl) {}

  // In one write: this server's row, live until now + ttl; every other row that expired at `now`
  // removed. Returns the servers live at `now`: this one and every other whose row is live.
  StatusOr<int> Renew(TimePoint now);

  // The servers live at `now`, read only: this one (whatever its row says: a server that asks
  // is running) and every other whose row is live.
  StatusOr<int> Count(TimePoint now) const;

  // Removes this server's row, so that the others stop counting it at once.
  Status Leave();

  const std::string& server() const { return server_; }
  std::chrono::milliseconds ttl() const { return ttl_; }

 private:
  store::Store& store_;
  std::string server_;
  std::chrono::milliseconds ttl_;
};

}  // namespace paddock::sched
