// logs/live_tail: StartLiveTail's sessions. A session subscribes to log groups of one (account,
// region), optionally to some of their streams (names or name prefixes) and a filter pattern; every
// event PutLogEvents commits to a matching stream (LogGroups' ingest listener, OnIngest) is handed
// to it, and its stream takes what arrived once a second (Take). Nothing here touches the store or
// the wire: the API adapter (logs/api/logs_service.cc) checks the groups exist and encodes events.
//
//   LiveTail tails;
//   groups.SetIngestListener([&](auto& s, auto g, auto& ev) { tails.OnIngest(s, g, ev); });
//   ASSIGN_OR_RETURN(auto session, tails.Open(scope, std::move(request)));
//   while (...) { LiveTailBatch b = session->Take(steady_now + 1s); ... }
//
// AWS's bounds: at most kMaxSessionsPerAccount open sessions per account (more: LimitExceeded); an
// update carries at most kMaxEventsPerUpdate events, sampled down when more matched (`sampled`);
// a session buffers at most kMaxBuffered events, dropping the oldest beyond.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "logs/filter.h"
#include "logs/log_groups.h"

namespace paddock::logs {

struct LiveTailRequest {
  struct Group {
    std::string name = {};        // the group's name in the caller's scope
    std::string identifier = {};  // as the caller named it (echoed in each event)
  };
  std::vector<Group> groups = {};
  std::vector<std::string> stream_names = {};     // empty: every stream (or the prefixes')
  std::vector<std::string> stream_prefixes = {};  // exclusive with stream_names
  Filter filter = *Filter::Compile("");  // the empty pattern: every event
};

struct LiveTailEvent {
  std::string group_identifier = {};
  std::string stream = {};
  int64_t timestamp_ms = 0;
  int64_t ingestion_ms = 0;
  std::string message = {};
};

struct LiveTailBatch {
  std::vector<LiveTailEvent> events = {};  // in arrival order
  bool sampled = false;                    // more matched since the last Take than this holds
};

class LiveTail {
 public:
  static constexpr size_t kMaxSessionsPerAccount = 15;
  static constexpr size_t kMaxEventsPerUpdate = 500;
  static constexpr size_t kMaxBuffered = 5000;

  class Session;

  LiveTail() = default;
  // REQUIRES: every session is closed (destroyed) first.
  ~LiveTail() = default;
  LiveTail(const LiveTail&) = delete;
  LiveTail& operator=(const LiveTail&) = delete;

  // A new session of `scope`'s account, subscribed from now on; ResourceExhausted with
  // Error::kLimitExceeded when the account already holds kMaxSessionsPerAccount. The session ends
  // (unsubscribes, frees its place) when it is destroyed.
  StatusOr<std::unique_ptr<Session>> Open(const Scope& scope, LiveTailRequest request);

  // LogGroups' ingest listener: hands `events`, stored in `group` (each names its stream), to each
  // matching session. Never blocks on a session's reader; costs one filter match per event and
  // session of that group.
  void OnIngest(const Scope& scope, std::string_view group, const std::vector<Event>& events);

  // Open sessions of `account` (for tests and limits).
  size_t OpenSessions(const AccountId& account) const;

 private:
  struct State;
  mutable std::mutex mu_;
  std::list<State*> sessions_;  // GUARDED_BY(mu_)
};

class LiveTail::Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& id() const;
  const LiveTailRequest& request() const;

  // What arrived since the last Take, waiting until `deadline` (AWS answers once a second, empty
  // or not). At most kMaxEventsPerUpdate events, evenly sampled from what arrived when more did.
  LiveTailBatch Take(std::chrono::steady_clock::time_point deadline);

 private:
  friend class LiveTail;
  Session(LiveTail& hub, std::unique_ptr<State> state);
  LiveTail& hub_;
  std::unique_ptr<State> state_;
};

}  // namespace paddock::logs
