#include "logs/live_tail.h"

#include <algorithm>
#include <thread>

#include "common/encoding.h"

namespace paddock::logs {

struct LiveTail::State {
  Scope scope;
  std::string id;
  LiveTailRequest request;
  // GUARDED_BY(LiveTail::mu_):
  std::deque<LiveTailEvent> buffered;
  size_t matched = 0;  // since the last Take, including those dropped from `buffered`
};

StatusOr<std::unique_ptr<LiveTail::Session>> LiveTail::Open(const Scope& scope, LiveTailRequest request) {
  auto state = std::make_unique<State>();
  state->scope = scope;
  state->id = RandomUuid();
  state->request = std::move(request);
  std::lock_guard lock(mu_);
  size_t held = std::count_if(sessions_.begin(), sessions_.end(),
                              [&](const State* s) { return s->scope.account == scope.account; });
  if (held >= kMaxSessionsPerAccount)
    return ResourceExhausted("The maximum number of concurrent Live Tail sessions (15) for this account has been "
                             "reached; close a session before starting another.",
                             Error::kLimitExceeded);
  sessions_.push_back(state.get());
  return std::unique_ptr<Session>(new Session(*this, std::move(state)));
}

size_t LiveTail::OpenSessions(const AccountId& account) const {
  std::lock_guard lock(mu_);
  return std::count_if(sessions_.begin(), sessions_.end(), [&](const State* s) { return s->scope.account == account; });
}

void LiveTail::OnIngest(const Scope& scope, std::string_view group, const std::vector<Event>& events) {
  std::lock_guard lock(mu_);
  for (State* s : sessions_) {
    if (s->scope != scope) continue;
    const LiveTailRequest& r = s->request;
    auto g = std::find_if(r.groups.begin(), r.groups.end(), [&](const auto& x) { return x.name == group; });
    if (g == r.groups.end()) continue;
    for (const Event& e : events) {
      if (!r.stream_names.empty() &&
          std::find(r.stream_names.begin(), r.stream_names.end(), e.stream) == r.stream_names.end())
        continue;
      if (!r.stream_prefixes.empty() &&
          std::none_of(r.stream_prefixes.begin(), r.stream_prefixes.end(),
                       [&](const std::string& p) { return e.stream.starts_with(p); }))
        continue;
      if (!r.filter.Matches(e.message)) continue;
      ++s->matched;
      if (s->buffered.size() == kMaxBuffered) s->buffered.pop_front();  // AWS drops the oldest
      s->buffered.push_back(LiveTailEvent{g->identifier, e.stream, e.timestamp_ms, e.ingestion_ms, e.message});
    }
  }
}

LiveTail::Session::Session(LiveTail& hub, std::unique_ptr<State> state) : hub_(hub), state_(std::move(state)) {}

LiveTail::Session::~Session() {
  std::lock_guard lock(hub_.mu_);
  hub_.sessions_.remove(state_.get());
}

const std::string& LiveTail::Session::id() const { return state_->id; }

const LiveTailRequest& LiveTail::Session::request() const { return state_->request; }

LiveTailBatch LiveTail::Session::Take(std::chrono::steady_clock::time_point deadline) {
  // Updates come once per interval, whatever arrives in it: wait out the deadline.
  std::this_thread::sleep_until(deadline);
  std::lock_guard lock(hub_.mu_);
  LiveTailBatch batch;
  std::deque<LiveTailEvent>& in = state_->buffered;
  batch.sampled = state_->matched > kMaxEventsPerUpdate;
  if (in.size() <= kMaxEventsPerUpdate) {
    batch.events.assign(std::make_move_iterator(in.begin()), std::make_move_iterator(in.end()));
  } else {
    // Evenly spaced over what arrived, first to last.
    batch.events.reserve(kMaxEventsPerUpdate);
    for (size_t i = 0; i < kMaxEventsPerUpdate; ++i) batch.events.push_back(std::move(in[i * in.size() / kMaxEventsPerUpdate]));
  }
  in.clear();
  state_->matched = 0;
  return batch;
}

}  // namespace paddock::logs
