#include "edge/proxy/table.h"

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
                                                 const std::string& host, uint16_t port) {
  std::lock_guard lock(mu_);
  auto& slot = servers_[{service, url}];
  if (auto live = slot.lock(); live && !live->fenced()) return live;
  auto fresh = std::make_shared<ServerState>(service, url, host, port);
  slot = fresh;
  return fresh;
}

void ServerRegistry::Collect() {
  std::lock_guard lock(mu_);
  std::erase_if(servers_, [](const auto& entry) { return entry.second.expired(); });
}

std::shared_ptr<ServerState> Backend::Pick() const {
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

const Route* Table::Match(std::string_view entry_point, const RequestFacts& facts, Transport transport) const {
  const auto& by_entry_point = transport == Transport::kTls ? tls_routes : routes;
  auto it = by_entry_point.find(entry_point);
  if (it == by_entry_point.end()) return nullptr;
  for (const Route& r : it->second)
    if (r.rule.Matches(facts)) return &r;
  return nullptr;
}

}  // namespace paddock::edge
