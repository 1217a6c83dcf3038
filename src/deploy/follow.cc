#include "deploy/follow.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace paddock::deploy {
namespace json = boost::json;

void SeenEvents::NewSource() {
  for (auto& [key, count] : keys_) count.in_source = 0;
}

bool SeenEvents::Admit(const LiveTailEvent& e) {
  const int64_t at = std::max(e.timestamp_ms, e.ingestion_ms);
  newest_ = std::max(newest_, at);
  if (++since_prune_ >= 1024) {
    since_prune_ = 0;
    std::erase_if(keys_, [&](const auto& kv) { return kv.second.at < newest_ - window_ms_; });
  }
  std::string key = fmt::format("{}\n{}\n{}\n{}", e.stream, e.timestamp_ms, e.ingestion_ms, e.message);
  Count& c = keys_[std::move(key)];
  c.at = at;
  const bool fresh = c.in_source >= c.given;
  ++c.in_source;
  if (fresh) ++c.given;
  return fresh;
}

namespace {

class Follower {
 public:
  Follower(Aws& aws, const FollowRequest& request, const std::function<bool(std::string_view)>& write)
      : aws_(aws), r_(request), write_(write),
        seen_(std::chrono::duration_cast<std::chrono::milliseconds>(FollowRequest::kWindow).count()) {}

  void Run() {
    int64_t from = r_.start_ms;
    bool live = true;
    while (alive_) {
      if (!live) {
        Status s = Read(from);
        if (!alive_) return;
        if (!s.ok()) return Error(s);
        from = std::max(from, newest_ms_);
        if (!Pause()) return;
        continue;
      }
      bool started = false;
      Status backfill;
      LiveTailHandler handler{
          .started =
              [&] {
                started = true;
                backfill = Read(from);
                seen_.NewSource();  // the tail's
                return alive_ && backfill.ok();
              },
          .update =
              [&](const LiveTailUpdate& u) {
                bool any = false;
                for (const LiveTailEvent& e : u.events) any |= Emit(e);
                if (!any) Write("\n");
                return alive_;
              },
      };
      json::object body{{"logGroupIdentifiers", json::array{json::string(r_.group_arn)}},
                        {"logStreamNamePrefixes", json::array{json::string(r_.stream_prefix)}}};
      StatusOr<LiveTailEnd> end = aws_.StartLiveTail(body, handler);
      if (!alive_) return;
      if (!backfill.ok()) return Error(backfill);
      if (started) from = Resume(from);
      if (end.ok()) continue;  // the server ended the session: another one, and the backfill since
      if (!started && IsError(end.status(), Error::kNotFound)) {
        // The group does not exist yet (awslogs makes it with the first line): nothing has logged.
        if (!Write("\n") || !Pause()) return;
        continue;
      }
      live = false;
      Notice(fmt::format("{} ({}); following by polling FilterLogEvents every {} ms",
                         started ? "the live tail failed" : "StartLiveTail was refused", end.status().message(),
                         r_.poll_interval.count()));
    }
  }

 private:
  // Where a backfill after a session resumes: a window before the newest line given, so lines of
  // other tasks that arrive a little out of order are not lost.
  int64_t Resume(int64_t from) const {
    if (newest_ms_ == 0) return from;
    const int64_t window = std::chrono::duration_cast<std::chrono::milliseconds>(FollowRequest::kWindow).count();
    return std::max(from, newest_ms_ - window);
  }

  // Every FilterLogEvents page from `from` (one source), each new event given, a heartbeat for a
  // page that gave none. A group that does not exist holds none; a throttled page is asked again
  // after a pause.
  Status Read(int64_t from) {
    seen_.NewSource();
    std::string token;
    while (alive_) {
      bool any = false;
      json::object body{{"logGroupName", r_.group_name}, {"logStreamNamePrefix", r_.stream_prefix}, {"startTime", from}};
      if (!token.empty()) body["nextToken"] = token;
      StatusOr<json::value> v = aws_.Call(AwsService::kLogs, "FilterLogEvents", body);
      if (!v.ok() && IsError(v.status(), Error::kNotFound)) {
        Write("\n");
        break;
      }
      if (!v.ok() && IsError(v.status(), Error::kThrottled)) {
        if (!Write("\n") || !Pause()) return OkStatus();
        continue;
      }
      if (!v.ok()) return v.status();
      token.clear();
      if (!v->is_object()) break;
      const json::object& o = v->as_object();
      if (const json::value* es = o.if_contains("events"); es && es->is_array()) {
        for (const json::value& e : es->as_array()) {
          if (!e.is_object()) continue;
          const json::object& eo = e.as_object();
          LiveTailEvent event;
          if (const json::value* x = eo.if_contains("logStreamName"); x && x->is_string()) event.stream = x->as_string();
          if (const json::value* x = eo.if_contains("message"); x && x->is_string()) event.message = x->as_string();
          if (const json::value* x = eo.if_contains("timestamp"); x && x->is_number()) {
            event.timestamp_ms = x->to_number<int64_t>();
          }
          if (const json::value* x = eo.if_contains("ingestionTime"); x && x->is_number()) {
            event.ingestion_ms = x->to_number<int64_t>();
          }
          any |= Emit(event);
          if (!alive_) return OkStatus();
        }
      }
      if (const json::value* t = o.if_contains("nextToken"); t && t->is_string()) token = t->as_string();
      // A page that gave nothing (AWS answers empty pages with a token on long searches) still
      // tells the reader the follow is alive.
      if (!any) Write("\n");
      if (token.empty()) break;
    }
    return OkStatus();
  }

  // Gives `e` if it is new; true when it was.
  bool Emit(const LiveTailEvent& e) {
    if (!seen_.Admit(e)) return false;
    newest_ms_ = std::max(newest_ms_, e.timestamp_ms);
    Write(json::serialize(json::object{{"stream", e.stream}, {"message", e.message}, {"timestamp", e.timestamp_ms}}) + "\n");
    return true;
  }

  void Notice(const std::string& text) {
    Write(json::serialize(json::object{{"notice", text}}) + "\n");
    // The controller's own log says it once, however many follows see it.
    static std::atomic_flag said;
    if (!said.test_and_set()) fmt::print(stderr, "paddock: controller: deployments logs --follow: {}\n", text);
  }

  void Error(const Status& s) { Write(json::serialize(json::object{{"error", s.message()}}) + "\n"); }

  bool Write(std::string_view line) {
    if (alive_ && !write_(line)) alive_ = false;
    return alive_;
  }

  bool Pause() {
    std::this_thread::sleep_for(r_.poll_interval);
    return alive_;
  }

  Aws& aws_;
  const FollowRequest& r_;
  const std::function<bool(std::string_view)>& write_;
  SeenEvents seen_;
  int64_t newest_ms_ = 0;  // the newest timestamp given
  bool alive_ = true;      // the reader is still there
};

}  // namespace

void FollowLogs(Aws& aws, const FollowRequest& request, const std::function<bool(std::string_view)>& write) {
  Follower(aws, request, write).Run();
}

}  // namespace paddock::deploy
