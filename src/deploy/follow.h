// deploy/follow: `paddock deployments logs --follow` on the controller's side — a deployment's
// log lines from `start_ms` on, then each new one as it is ingested, as newline-delimited JSON
// (D11, docs/deploy.md "The controller's API"). The API's streamed response writes what this
// produces; nothing here knows HTTP.
//
//   FollowLogs(aws, {.group_arn = arn, .group_name = "/paddock/apps", .stream_prefix = "paddock/shop/<id>/",
//                    .start_ms = EpochMillis(now - 1h)},
//              [&](std::string_view line) { return writer.Write(line); });
//
// How: StartLiveTail on the group, filtered to the deployment's stream prefix; when its
// sessionStart comes — from then on every ingested event reaches the tail — FilterLogEvents reads
// the backfill from `start_ms`, page after page, and only then are the tail's updates read (they
// wait in the session meanwhile). The seam has no gap: an event ingested before the session began
// is in the backfill, one ingested after it is in the tail. It has no duplicate: an event ingested
// between the two is in both, and SeenEvents lets its second copy through only if it is a distinct
// event with the same text (see there). A session the server ends (AWS: after three hours) is
// followed by another, with a backfill from `kWindow` before the newest line. A StartLiveTail
// refused before its sessionStart (AccessDenied, an endpoint without it) or failing mid-session
// switches to polling FilterLogEvents every `poll_interval`, said once in a notice line.
//
// The lines (each ends with '\n'):
//   {"stream": "...", "message": "...", "timestamp": 1764786612000}   a log event
//   {"notice": "..."}                                                   said once, for the user
//   {"error": "..."}                                                    the last line: why it ended
//   (an empty line)                                                     a heartbeat, about once a second
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "deploy/aws.h"

namespace paddock::deploy {

// Which events a reader has been given, across the sources it reads one after another (a
// backfill, a tail session, a poll): each source holds an event at most once, so an event of a
// source is new exactly when that source has already shown as many copies of its key (stream,
// timestamp, ingestion time, message) as were given. Keys older than `window` before the newest
// one seen are forgotten: sources overlap by less than that.
class SeenEvents {
 public:
  explicit SeenEvents(int64_t window_ms) : window_ms_(window_ms) {}
  // A new source begins: none of its events has been seen yet.
  void NewSource();
  // True when `e` has not been given yet (the caller gives it now).
  bool Admit(const LiveTailEvent& e);
  size_t size() const { return keys_.size(); }

 private:
  struct Count {
    int given = 0;
    int in_source = 0;
    int64_t at = 0;
  };
  const int64_t window_ms_;
  std::map<std::string, Count> keys_;
  int64_t newest_ = 0;
  size_t since_prune_ = 0;
};

struct FollowRequest {
  static constexpr std::chrono::minutes kWindow{5};
  std::string group_arn;      // StartLiveTail's logGroupIdentifiers (AWS wants the ARN)
  std::string group_name;     // FilterLogEvents' logGroupName
  std::string stream_prefix;  // the deployment's streams
  int64_t start_ms = 0;
  std::chrono::milliseconds poll_interval{500};  // polling, and retries of a group not there yet
};

// Writes lines to `write` until it returns false (the reader left, the server stops) or an error
// ends the follow (its line written last). Blocks meanwhile.
void FollowLogs(Aws& aws, const FollowRequest& request, const std::function<bool(std::string_view)>& write);

}  // namespace paddock::deploy
