#include "edge/proxy/table.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

namespace paddock::edge {

void ServerState::End() {
  if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) != 1 || !fenced()) return;
  std::function<void()> done;
  {
    std::lock_guard lock(mu_);
    if (in_flight_.load(std::memory_order_acquire) != 0) return;
    done = std::move(drained_);
    drained_ = nullptr;
  }
  if (done) done();
}

void ServerState::Fence(std::function<void()> drained) {
  std::function<void()> now;
  {
    std::lock_guard lock(mu_);
    if (fenced_.exchange(true, std::memory_order_acq_rel)) return;  // fenced already
    // Set under mu_ before checking the count: End's decrement to 0 either sees fenced_ and takes
    // drained_ (after this block), or happened before and this sees 0.
    if (in_flight_.load(std::memory_order_acquire) == 0) {
      now = std::move(drained);
    } else {
      drained_ = std::move(drained);
    }
  }
  if (now) now();
}

std::shared_ptr<ServerState> ServerRegistry::Get(const std::string& service, const std::string& url,
                                                 const std::string& host, uint16_t port, bool tls,
                                                 const std::string& url_host) {
  std::lock_guard lock(mu_);
  auto& slot = servers_[{service, url}];
  if (auto live = slot.lock(); live && !live->fenced()) return live;
  auto fresh = std::make_shared<ServerState>(service, url, host, port, tls, url_host);
  slot = fresh;
  return fresh;
}

std::chrono::milliseconds ProbeSchedule::After(ProbeResult result, const HealthCheckConfig& config) {
  if (result == ProbeResult::kPassed) passed_ = true;
  if (passed_) return result == ProbeResult::kPassed ? config.interval : config.unhealthy_interval;
  const std::chrono::milliseconds cap = std::min(config.interval, config.unhealthy_interval);
  const std::chrono::milliseconds wait = std::min(backoff_, cap);
  if (backoff_ < cap) backoff_ = backoff_ > cap / 2 ? cap : backoff_ * 2;
  return wait;
}

void ServerRegistry::Collect() {
  std::lock_guard lock(mu_);
  std::erase_if(servers_, [](const auto& entry) { return entry.second.expired(); });
}

void ServerState::RecordResponseTime(std::chrono::microseconds ttfb) {
  const double ms = static_cast<double>(ttfb.count()) / 1000.0;
  std::lock_guard lock(times_mu_);
  if (times_count_ < kResponseSamples) {
    ++times_count_;
  } else {
    times_sum_ -= times_ms_[times_next_];
  }
  times_ms_[times_next_] = ms;
  times_sum_ += ms;
  times_next_ = (times_next_ + 1) % kResponseSamples;
}

double ServerState::AverageResponseMs() const {
  std::lock_guard lock(times_mu_);
  return times_count_ == 0 ? 0 : times_sum_ / static_cast<double>(times_count_);
}

std::shared_ptr<ServerState> Backend::PickServer(std::string_view client_ip) const {
  switch (strategy) {
    case LbStrategy::kWrr: return PickRoundRobin();
    case LbStrategy::kP2c: return PickTwoChoices();
    case LbStrategy::kHrw: return PickRendezvous(client_ip);
    case LbStrategy::kLeastTime: return PickLeastTime();
  }
  return nullptr;
}

std::shared_ptr<ServerState> Backend::PickTwoChoices() const {
  // Counted, then found again by rank: no list of the routable ones is made per pick.
  size_t routable = 0;
  for (const Server& s : servers) routable += s.state->Routable() ? 1 : 0;
  if (routable == 0) return nullptr;
  auto nth = [&](size_t rank) -> const std::shared_ptr<ServerState>* {
    for (const Server& s : servers)
      if (s.state->Routable() && rank-- == 0) return &s.state;
    return nullptr;  // one went down between the count and here
  };
  if (routable == 1) {
    const auto* only = nth(0);
    return only ? *only : nullptr;
  }
  thread_local std::mt19937_64 rng(std::random_device{}());
  // Two distinct ranks: the second drawn from one fewer and shifted past the first (Traefik's).
  const size_t n1 = std::uniform_int_distribution<size_t>(0, routable - 1)(rng);
  size_t n2 = std::uniform_int_distribution<size_t>(0, routable - 2)(rng);
  if (n2 >= n1) ++n2;
  const auto* first = nth(n1);
  const auto* second = nth(n2);
  if (!first || !second) return first ? *first : second ? *second : nullptr;
  return (*second)->in_flight() < (*first)->in_flight() ? *second : *first;
}

std::shared_ptr<ServerState> Backend::PickRendezvous(std::string_view client_ip) const {
  const Server* best = nullptr;
  double best_score = 0;
  for (const Server& s : servers) {
    if (s.weight <= 0 || !s.state->Routable()) continue;
    const double score = HrwScore(client_ip, s.state->url(), s.weight);
    if (!best || score > best_score) {
      best = &s;
      best_score = score;
    }
  }
  return best ? best->state : nullptr;
}

std::shared_ptr<ServerState> Backend::PickLeastTime() const {
  auto score = [](const Server& s) { return s.state->AverageResponseMs() * (1 + s.state->in_flight()) / s.weight; };
  // The lowest score, then the earliest deadline among the servers that have it (every server
  // before its first response, say): weighted round robin among the tied, whose deadline then moves
  // on by 1/weight. Scores are read under the lock, so both passes see one set of them.
  std::lock_guard lock(wrr_mu_);
  std::vector<double>& deadlines = server_deadlines_;
  if (deadlines.size() != servers.size()) {
    deadlines.assign(servers.size(), 0);
    double d = 0;
    for (size_t i = 0; i < servers.size(); ++i)
      if (servers[i].weight > 0) deadlines[i] = d += 1.0 / servers[i].weight;
  }
  std::optional<size_t> pick;
  double min_score = 0;
  bool tied = false;  // Traefik's EDF turn is taken only among equal scores
  for (size_t i = 0; i < servers.size(); ++i) {
    const Server& s = servers[i];
    if (s.weight <= 0 || !s.state->Routable()) continue;
    const double sc = score(s);
    if (!pick || sc < min_score) {
      pick = i;
      min_score = sc;
      tied = false;
    } else if (sc == min_score) {
      tied = true;
      if (deadlines[i] < deadlines[*pick]) pick = i;
    }
  }
  if (!pick) return nullptr;
  if (tied) deadlines[*pick] += 1.0 / servers[*pick].weight;
  return servers[*pick].state;
}

std::shared_ptr<ServerState> Backend::PickRoundRobin() const {
  const size_t n = servers.size();
  if (n == 0) return nullptr;
  // Weighted: each server appears `weight` times in a virtual ring walked by one counter; the
  // counter's start spreads concurrent pickers. Unroutable servers are skipped.
  uint64_t total = 0;
  for (const Server& s : servers) total += static_cast<uint64_t>(std::max(s.weight, 0));
  if (total == 0) return nullptr;
  const uint64_t start = next.fetch_add(1, std::memory_order_relaxed);
  for (uint64_t i = 0; i < total; ++i) {
    uint64_t slot = (start + i) % total;
    for (const Server& s : servers) {
      const uint64_t w = static_cast<uint64_t>(std::max(s.weight, 0));
      if (slot < w) {
        if (s.state->Routable()) return s.state;
        break;
      }
      slot -= w;
    }
  }
  return nullptr;
}

bool Backend::HasRoutable() const {
  if (weighted || failover || hrw || mirroring) {
    for (const Child& c : children)
      if (c.backend->HasRoutable()) return true;
    return false;
  }
  for (const Server& s : servers)
    if (s.weight > 0 && s.state->Routable()) return true;
  return false;
}

size_t Backend::ServerCount() const {
  size_t n = servers.size();
  for (const Child& c : children) n += c.backend->ServerCount();
  return n;
}

// Go's container/heap (up, down), with Traefik's Less: the earlier deadline. Ties fall where Go's
// heap leaves them, so the order is Traefik's to the pick.
void Backend::HeapUp(size_t j) const {
  while (j > 0) {
    const size_t i = (j - 1) / 2;
    if (!(heap_[j].deadline < heap_[i].deadline)) break;
    std::swap(heap_[i], heap_[j]);
    j = i;
  }
}

bool Backend::HeapDown(size_t i0, size_t n) const {
  size_t i = i0;
  for (;;) {
    const size_t j1 = 2 * i + 1;
    if (j1 >= n) break;
    size_t j = j1;
    if (const size_t j2 = j1 + 1; j2 < n && heap_[j2].deadline < heap_[j1].deadline) j = j2;
    if (!(heap_[j].deadline < heap_[i].deadline)) break;
    std::swap(heap_[i], heap_[j]);
    i = j;
  }
  return i > i0;
}

void Backend::StartSchedule() {
  std::lock_guard lock(wrr_mu_);
  heap_.clear();
  current_deadline_ = 0;
  // Traefik's Add, child by child: deadline = curDeadline + 1/weight, heap.Push.
  for (size_t i = 0; i < children.size(); ++i) {
    heap_.push_back(Entry{i, current_deadline_ + 1 / static_cast<double>(children[i].weight)});
    HeapUp(heap_.size() - 1);
  }
}

int Backend::NextChild(const std::function<bool(size_t)>& usable) const {
  bool any = false;
  for (size_t i = 0; i < children.size() && !any; ++i) any = usable(i);
  if (!any) return -1;
  std::lock_guard lock(wrr_mu_);
  if (heap_.empty()) return -1;
  // Traefik's nextServer: pop the earliest deadline, move it on by 1/weight, push it back; a
  // child that is down is skipped (its turn spent) and the next one popped.
  for (;;) {
    const size_t n = heap_.size() - 1;
    std::swap(heap_[0], heap_[n]);
    HeapDown(0, n);
    Entry e = heap_.back();
    current_deadline_ = e.deadline;
    e.deadline += 1 / static_cast<double>(children[e.child].weight);
    heap_.back() = e;
    HeapUp(n);
    if (usable(e.child)) return static_cast<int>(e.child);
  }
}

double HrwScore(std::string_view client_ip, std::string_view child_name, int weight) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits (Go's hash/fnv New64a)
  for (std::string_view part : {client_ip, child_name}) {
    for (unsigned char c : part) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  }
  const double score = static_cast<double>(h) / std::pow(2.0, 64);
  return (1.0 / -std::log(score)) * static_cast<double>(weight);
}

const Backend::Child* Backend::HighestRandomWeight(std::string_view client_ip) const {
  const Child* best = nullptr;
  double best_score = 0;
  for (const Child& c : children) {
    if (!c.backend->HasRoutable()) continue;
    const double s = HrwScore(client_ip, c.name, c.weight);
    if (s > best_score) {
      best = &c;
      best_score = s;
    }
  }
  return best;
}

std::shared_ptr<ServerState> Backend::Pick() const {
  if (mirroring) return children[0].backend->Pick();
  if (failover) return (children[0].backend->HasRoutable() ? children[0] : children[1]).backend->Pick();
  if (hrw) {
    const Child* c = HighestRandomWeight({});
    return c ? c->backend->Pick() : nullptr;
  }
  if (weighted) {
    const int i = NextChild([this](size_t k) { return children[k].backend->HasRoutable(); });
    return i < 0 ? nullptr : children[static_cast<size_t>(i)].backend->Pick();
  }
  return PickServer();
}

Selection Backend::Choose(const HeaderList* request_headers, std::string_view client_ip) const {
  Selection out;
  ChooseInto(request_headers, client_ip, out);
  if (!out.server) out.leaf = nullptr;
  return out;
}

void Backend::ChooseInto(const HeaderList* request_headers, std::string_view client_ip, Selection& out) const {
  if (mirroring) {
    out.mirroring.push_back(this);
    children[0].backend->ChooseInto(request_headers, client_ip, out);
    return;
  }
  if (failover) {
    const bool main_up = children[0].backend->HasRoutable();
    if (!main_up && reports_status && !children[1].backend->HasRoutable()) {
      out.unavailable = "Service Unavailable\n";
      return;
    }
    if (main_up && !failover_statuses.empty()) out.failover = this;
    (main_up ? children[0] : children[1]).backend->ChooseInto(request_headers, client_ip, out);
    return;
  }
  if (hrw) {
    if (const Child* chosen = HighestRandomWeight(client_ip)) chosen->backend->ChooseInto(request_headers, client_ip, out);
    return;
  }
  if (!weighted) {
    StickyChoice stuck;
    if (sticky && request_headers) stuck = ChooseSticky(*this, *request_headers);
    out.server = stuck.server ? stuck.server : PickServer(client_ip);
    if (!out.server) return;
    out.leaf = this;
    if (sticky && (!stuck.server || stuck.rewrite)) out.set_cookies.push_back(sticky->SetCookie(out.server->url()));
    return;
  }
  // Traefik's weighted ServeHTTP: a cookie naming a child that is up sends there (its older
  // forms rewritten); otherwise the schedule picks and the cookie names the pick.
  const Child* child = nullptr;
  bool write = true;
  if (sticky && request_headers) {
    if (std::optional<std::string> value = RequestCookie(*request_headers, sticky->name)) {
      for (const Child& c : children)
        if (c.sticky_hash == *value) {
          child = &c;
          write = false;
          break;
        }
      if (!child) {
        for (const Child& c : children) {
          const std::string fnv = StickyFnvHash(c.name);
          if (c.name == *value || fnv == *value || StickyFnvHash(fnv) == *value) {
            child = &c;
            break;
          }
        }
      }
      if (child && !child->backend->HasRoutable()) {
        child = nullptr;
        write = true;
      }
    }
  }
  if (!child) {
    const int i = NextChild([this](size_t k) { return children[k].backend->HasRoutable(); });
    if (i < 0) return;
    child = &children[static_cast<size_t>(i)];
  }
  if (sticky && write) out.set_cookies.push_back(sticky->SetCookie(child->name));
  child->backend->ChooseInto(request_headers, client_ip, out);
}

Selection Backend::ChooseFallback(const HeaderList* request_headers, std::string_view client_ip) const {
  Selection out;
  if (reports_status && !children[1].backend->HasRoutable()) {
    out.unavailable = "Service Unavailable\n";
    return out;
  }
  children[1].backend->ChooseInto(request_headers, client_ip, out);
  if (!out.server) out.leaf = nullptr;
  return out;
}

std::vector<std::shared_ptr<const Backend>> Backend::ActiveMirrors() const {
  std::vector<std::shared_ptr<const Backend>> active;
  std::lock_guard lock(mirror_mu_);
  mirror_counts_.resize(mirrors.size());
  ++mirror_total_;
  for (size_t i = 0; i < mirrors.size(); ++i) {
    if (mirror_counts_[i] * 100 < mirror_total_ * static_cast<uint64_t>(mirrors[i].percent)) {
      ++mirror_counts_[i];
      active.push_back(mirrors[i].backend);
    }
  }
  return active;
}

const Route* Table::Match(std::string_view entry_point, const RequestFacts& facts, Transport transport) const {
  const auto& by_entry_point = transport == Transport::kTls ? tls_routes : routes;
  auto it = by_entry_point.find(entry_point);
  if (it == by_entry_point.end()) return nullptr;
  for (const Route& r : it->second)
    if (r.rule.Matches(facts)) return &r;
  return nullptr;
}

}  // namespace paddock::edge
