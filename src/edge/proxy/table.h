// edge/proxy/table: what the data plane routes by — a compiled, immutable routing table (routers
// with parsed rules and built middleware chains, in Traefik's order, per entry point) and the live
// state of each backend server, which outlives tables.
//
// A table is built from the runtime configuration (edge/proxy/compile.h) and swapped into the
// proxy whole (Proxy::SetTable); requests in flight finish on the table they started with. Server
// state (health, in-flight count, fenced) lives in a ServerRegistry keyed by (service, URL), so a
// reload never resets a server's health (Traefik's health checker does) and a drain outlives the
// table that removed the server.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edge/middleware.h"
#include "edge/proxy/forward_auth.h"
#include "edge/proxy/sticky.h"
#include "edge/proxy/tls.h"
#include "edge/rule.h"

namespace paddock::edge {

enum class Health : uint8_t {
  kUnchecked,  // no health check configured: routable
  kPending,    // health-checked, first probe not passed yet: not routable, absent from serverStatus
  kUp,
  kDown,
};

// One backend server's live state. Thread-safe; shared by every table that routes to it.
class ServerState {
 public:
  // `tls`: an https server, whose URL names `url_host` (the name its certificate is verified
  // against, `host` being what it resolved to).
  ServerState(std::string service, std::string url, std::string host, uint16_t port, bool tls = false,
              std::string url_host = {})
      : service_(std::move(service)),
        url_(std::move(url)),
        host_(std::move(host)),
        port_(port),
        tls_(tls),
        url_host_(url_host.empty() ? host_ : std::move(url_host)),
        sticky_hash_(StickyServerHash(url_)) {}

  const std::string& service() const { return service_; }
  const std::string& url() const { return url_; }
  const std::string& host() const { return host_; }  // an IP address literal or a name
  uint16_t port() const { return port_; }
  bool tls() const { return tls_; }  // reached over TLS (an https URL)
  const std::string& url_host() const { return url_host_; }
  // The sticky cookie value naming this server (edge/proxy/sticky.h).
  const std::string& sticky_hash() const { return sticky_hash_; }

  Health health() const { return health_.load(std::memory_order_acquire); }
  void set_health(Health h) { health_.store(h, std::memory_order_release); }
  bool fenced() const { return fenced_.load(std::memory_order_acquire); }
  int in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  bool Routable() const {
    if (fenced()) return false;
    Health h = health();
    return h == Health::kUnchecked || h == Health::kUp;
  }

  // The proxy counts each request it sends here from choice to the response's last byte.
  void Begin() { in_flight_.fetch_add(1, std::memory_order_acq_rel); }
  void End();

  // Takes the server out of rotation for good and calls `drained` (once, from whichever thread ends
  // the last request, or from here when none is in flight) when nothing is in flight.
  void Fence(std::function<void()> drained);

  // The leasttime strategy's measure: the time from sending a request to its response's first byte
  // (Traefik's TTFB), kept for the last kResponseSamples responses. Thread-safe.
  static constexpr size_t kResponseSamples = 100;
  void RecordResponseTime(std::chrono::microseconds ttfb);
  // Their mean in milliseconds (fractional); 0 before the first.
  double AverageResponseMs() const;

 private:
  const std::string service_, url_, host_;
  const uint16_t port_;
  const bool tls_;
  const std::string url_host_;
  const std::string sticky_hash_;
  std::atomic<Health> health_{Health::kUnchecked};
  std::atomic<bool> fenced_{false};
  std::atomic<int> in_flight_{0};
  std::mutex mu_;
  std::function<void()> drained_;  // GUARDED_BY(mu_); set once by Fence, called once
  mutable std::mutex times_mu_;
  std::array<double, kResponseSamples> times_ms_{};  // GUARDED_BY(times_mu_): a ring
  size_t times_next_ = 0, times_count_ = 0;          // GUARDED_BY(times_mu_)
  double times_sum_ = 0;                             // GUARDED_BY(times_mu_)
};

// A loadBalancer's `strategy` (Traefik v3.7's pkg/server/service/loadbalancer): wrr (the default),
// p2c (two distinct routable servers at random, the one with fewer requests in flight; weights
// ignored, as Traefik's), hrw (the routable server whose rendezvous score for the client's address
// is highest: HrwScore of the address and the server's URL), leasttime (the lowest mean response
// time × (1 + requests in flight) / weight, ties broken in earliest-deadline-first turn).
enum class LbStrategy { kWrr, kP2c, kHrw, kLeastTime };

// Server state by (service, URL): the same object for as long as any table or drain holds it.
class ServerRegistry {
 public:
  std::shared_ptr<ServerState> Get(const std::string& service, const std::string& url, const std::string& host,
                                   uint16_t port, bool tls = false, const std::string& url_host = {});
  // Forgets entries no one holds any more (called after a table swap).
  void Collect();

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::weak_ptr<ServerState>> servers_;  // GUARDED_BY(mu_)
};

struct HealthCheckConfig {
  std::string scheme;  // empty: the server's
  std::string path = "/";
  std::string method = "GET";
  std::string hostname;  // Host header; empty: the server's
  int port = 0;          // 0: the server's
  int status = 0;        // 0: any of 200..399
  std::chrono::milliseconds interval{30'000};
  std::chrono::milliseconds unhealthy_interval{30'000};
  std::chrono::milliseconds timeout{5'000};
  bool follow_redirects = true;
  HeaderList headers;
};

enum class ProbeResult : uint8_t { kPassed, kFailed };

// When a health-checked server is probed next. Once the server has passed a probe, Traefik's
// cadence: `interval` after a probe that passed, `unhealthyInterval` after one that failed. Before
// that — its task's server may not be listening yet when the first probe runs — a failed probe is
// followed by another after a backoff: kFirstPassBackoff, doubling, never longer than the shorter
// of the two intervals, so a new server is routed soon after it starts answering rather than a
// whole interval later. One schedule per server: many new servers that fail back off each on its
// own, each within its own cadence.
//
//   ProbeSchedule schedule(server.health());   // kPending: never passed
//   wait = schedule.After(ProbeResult::kFailed, config);   // 100 ms, then 200 ms, 400 ms, ...
class ProbeSchedule {
 public:
  static constexpr std::chrono::milliseconds kFirstPassBackoff{100};

  // For a server whose health is `health` now: one that is UP has passed a probe (its health kept
  // across a reload); any other is taken as never having passed.
  explicit ProbeSchedule(Health health) : passed_(health == Health::kUp) {}

  // The wait before the next probe, after one with `result`, under `config` (the current one: a
  // reload may change it between probes).
  std::chrono::milliseconds After(ProbeResult result, const HealthCheckConfig& config);

 private:
  bool passed_;
  std::chrono::milliseconds backoff_ = kFirstPassBackoff;
};

// A servers transport as the proxy uses it: Traefik's `http.serversTransports.<name>` of the
// dynamic configuration (forwardingTimeouts, maxIdleConnsPerHost and its TLS), with Traefik's
// defaults for what it leaves out. The static one (`default@internal`) is the proxy's own options
// (ProxyOptions): a loadBalancer without a serversTransport has no UpstreamTransport.
struct UpstreamTransport {
  std::string name;  // qualified: "mine@file"
  std::shared_ptr<const UpstreamTls> tls;  // never null
  std::chrono::milliseconds dial_timeout{30'000};
  std::chrono::milliseconds response_header_timeout{0};  // 0: none
  std::chrono::milliseconds idle_conn_timeout{90'000};   // 0: none
  int max_idle_conns_per_host = 200;  // 0: Go's default, 2; below 0: none kept
};

// What Backend::Choose picked for a request: the server, the loadBalancer service it belongs to,
// and the Set-Cookie values the response carries (the sticky levels on the way down whose
// cookie did not name what was picked, root first, as Traefik's balancers write them).
struct Selection {
  std::shared_ptr<ServerState> server;  // null: no routable server: 503 with `unavailable`
  const Backend* leaf = nullptr;  // the loadBalancer holding `server`; null with it
  std::vector<std::string> set_cookies;
  // The 503's body when no server was picked: a balancer's "no available server", or the
  // level that answered for itself (a failover reporting its own status: Traefik's http.Error).
  std::string_view unavailable = "no available server\n";
  // The mirroring services passed on the way down, root first: each sends copies of the request
  // to its mirrors once it is answered (Backend::ActiveMirrors).
  std::vector<const Backend*> mirroring;
  // The failover with `failover_statuses` whose main service was chosen (the innermost, when
  // they nest): an answer with one of its statuses goes to its fallback instead (ChooseFallback).
  const Backend* failover = nullptr;
};

// A service the proxy sends to. Either a loadBalancer (`servers`: weighted round robin over its
// routable servers), a weighted service (`children`: Traefik v3's weighted round robin over
// child services, its EDF schedule exactly — pkg/server/service/loadbalancer/wrr — then the
// child's own choice), a mirroring service (its main service's choice, with copies to mirrors) or
// a failover service (`children`: its main service and its fallback; the
// main while it has a routable server, else the fallback — Traefik's failover, whose main is
// "up" while its health check finds a server up). Thread-safe: Pick and Choose are called from
// every I/O thread.
//
//   Selection s = backend.Choose(&request_headers);   // s.server null: 503
struct Backend {
  std::string name;  // qualified: "web@ecs"
  struct Server {
    std::shared_ptr<ServerState> state;
    int weight = 1;
  };
  std::vector<Server> servers;
  bool pass_host_header = true;
  std::optional<HealthCheckConfig> health_check;
  // loadBalancer.sticky.cookie: a client's cookie keeps it on one server (edge/proxy/sticky.h);
  // weighted.sticky.cookie: on one child service.
  std::optional<StickyCookie> sticky{};
  LbStrategy strategy = LbStrategy::kWrr;
  // loadBalancer.serversTransport; null: the static one (ProxyOptions).
  std::shared_ptr<const UpstreamTransport> transport{};
  mutable std::atomic<uint64_t> next{0};

  // weighted: the child services with a positive weight, in configuration order (Traefik leaves
  // weight <= 0 out of its balancer; it also shuffles the order once per build, we do not).
  struct Child {
    std::string name;  // as the configuration writes it: the sticky cookie's value is its hash
    std::shared_ptr<const Backend> backend;
    int weight = 1;
    std::string sticky_hash;  // StickyServerHash(name)
  };
  bool weighted = false;
  // failover: children[0] the main service, children[1] the fallback.
  bool failover = false;
  // highestRandomWeight: the child with a routable server whose score for the client's address
  // is highest (HrwScore; the first of equal scores), so a client keeps to one child while it is
  // up (Traefik's pkg/server/service/loadbalancer/hrw).
  bool hrw = false;
  // mirroring: children[0] its main service, which answers every request; after the answer a
  // copy goes to each mirror whose turn it is (ActiveMirrors), its answer dropped (Traefik's
  // mirroring). With `mirror_body` the copies carry the body, and a request whose body is over
  // `max_mirror_body_bytes` (-1: no limit) is not mirrored; without it they go without one.
  bool mirroring = false;
  bool mirror_body = true;
  int64_t max_mirror_body_bytes = -1;
  struct Mirror {
    std::shared_ptr<const Backend> backend;
    int percent = 0;  // 0..100 (the runtime refused others)
  };
  std::vector<Mirror> mirrors;
  // mirroring: the mirrors that get a copy of this request, in configuration order — Traefik's
  // getActiveMirrors: the request is counted, and each mirror takes it while the copies it has
  // taken are fewer than `percent` of the requests counted (so 50 takes every second one).
  std::vector<std::shared_ptr<const Backend>> ActiveMirrors() const;
  // failover.errors (Traefik v3.7): an answer of the main service with a status in one of these
  // inclusive ranges is dropped and the request goes to the fallback instead, once; while the
  // main is chosen, a request whose body is over `failover_max_body_bytes` (-1: no limit) is
  // refused (Traefik's 413, as it keeps the body to send it again).
  std::vector<std::pair<int, int>> failover_statuses;
  int64_t failover_max_body_bytes = -1;
  // A failover's fallback choice; with neither side routable and the failover reporting its own
  // status, no server and the failover's "Service Unavailable".
  Selection ChooseFallback(const HeaderList* request_headers, std::string_view client_ip = {}) const;
  // failover.healthCheck: the failover reports its own status (and, with neither child
  // routable, answers Traefik's failover 503 "Service Unavailable" itself: Selection::unavailable).
  bool reports_status = false;
  std::vector<Child> children;

  // weighted: makes the EDF schedule (each child's first deadline 1/weight). Call once, after
  // `children` is filled and before the backend is shared.
  void StartSchedule();

  // A routable server; null when none is routable. A loadBalancer: smooth round robin over its
  // servers. A weighted service: the next child of the EDF schedule that has a routable server
  // (a child without one is skipped, its turn spent), then that child's Pick.
  std::shared_ptr<ServerState> Pick() const;
  // Pick, with the sticky cookies of `request_headers` (null: none read, every sticky level
  // writes a cookie for what it picked) at every level that has one, and `client_ip` (the TCP
  // peer's address) for highestRandomWeight levels.
  Selection Choose(const HeaderList* request_headers, std::string_view client_ip = {}) const;
  // The servers under this backend, its children's included (bounds the proxy's retries of a
  // refused connection).
  size_t ServerCount() const;
  // True when Pick would find a routable server now (a weighted child for which it is false is
  // skipped by the schedule).
  bool HasRoutable() const;

  // weighted: the index of the next child in Traefik's EDF order (its heap, its ties), skipping
  // the children for which `usable(i)` is false (their turns spent, as Traefik's nextServer
  // spends a down child's); -1 when none is usable.
  int NextChild(const std::function<bool(size_t)>& usable) const;

 private:
  struct Entry {
    size_t child;
    double deadline;
  };
  // The loadBalancer's pick by its strategy (`client_ip` for hrw).
  std::shared_ptr<ServerState> PickServer(std::string_view client_ip = {}) const;
  std::shared_ptr<ServerState> PickRoundRobin() const;
  std::shared_ptr<ServerState> PickTwoChoices() const;
  std::shared_ptr<ServerState> PickRendezvous(std::string_view client_ip) const;
  std::shared_ptr<ServerState> PickLeastTime() const;
  const Child* HighestRandomWeight(std::string_view client_ip) const;  // null: no child routable
  void ChooseInto(const HeaderList* request_headers, std::string_view client_ip, Selection& out) const;
  void HeapUp(size_t j) const;
  bool HeapDown(size_t i0, size_t n) const;
  mutable std::mutex wrr_mu_;
  mutable std::vector<Entry> heap_;  // GUARDED_BY(wrr_mu_): Go's container/heap order
  mutable double current_deadline_ = 0;  // GUARDED_BY(wrr_mu_)
  // leasttime's tie-break: each server's EDF deadline (servers[i]'s), made on first use.
  mutable std::vector<double> server_deadlines_;  // GUARDED_BY(wrr_mu_)
  mutable std::mutex mirror_mu_;
  mutable uint64_t mirror_total_ = 0;              // GUARDED_BY(mirror_mu_)
  mutable std::vector<uint64_t> mirror_counts_;    // GUARDED_BY(mirror_mu_): per mirror, sized on first use
};

// Traefik's rendezvous score of a child for a client (hrw getNodeScore): FNV-1a 64 of the client's
// address followed by the child's name, as a fraction of 2^64, s; then weight / -ln(s).
double HrwScore(std::string_view client_ip, std::string_view child_name, int weight);

// One step of a router's middleware chain, in order.
struct Step {
  std::string name;  // qualified middleware name
  std::shared_ptr<const Middleware> middleware;  // null for the proxy-run kinds
  std::optional<ForwardAuthConfig> forward_auth;
  std::shared_ptr<const ForwardAuth> auth;  // forward_auth, built (compile.cc); null: built per request
  std::optional<RetryConfig> retry;
  // buffering: the request refused past max_request_body_bytes (413) here; the response read
  // whole before it is sent, refused (500) past the smallest max_response_body_bytes of the chain.
  std::optional<BufferingConfig> buffering{};
  // compress: the encoding chosen for the request here (PlanCompression); the response encoded as
  // it is relayed when DecideCompression says so.
  std::shared_ptr<const CompressConfig> compress{};
  // errors: the statuses it catches and the service (compiled, as any) whose page answers instead.
  std::optional<ErrorPagesConfig> errors{};
  std::shared_ptr<const Backend> error_backend{};
};

struct Route {
  std::string name;  // qualified: "web@ecs"
  Rule rule;
  int64_t priority = 0;  // Traefik's are 64-bit (an entry point's redirection: MaxInt - 1)
  std::vector<Step> chain;
  std::shared_ptr<const Backend> backend;  // null: the router's service is broken (503)
  // A TLS route's options on its entry point: a request on a connection that shook hands with
  // other options is answered 421 (Traefik's snicheck, against domain fronting).
  std::string tls_options = "default";
};

// How a request came: Traefik routes plain HTTP by the routers without a `tls` section and TLS
// connections (one entry point takes both, told apart by their first byte) by those with one.
enum class Transport : uint8_t { kPlain, kTls };

struct Table {
  // Routes per entry point name, in matching order: priority descending, then name ascending.
  // `routes` for plain HTTP, `tls_routes` (routers with `tls`) for requests that came over TLS.
  std::map<std::string, std::vector<Route>, std::less<>> routes;
  std::map<std::string, std::vector<Route>, std::less<>> tls_routes;
  // Every backend the table knows, by qualified name.
  std::map<std::string, std::shared_ptr<const Backend>, std::less<>> backends;
  // The certificates TLS connections are served with; null: only the generated default.
  std::shared_ptr<const TlsCertificates> certificates;

  // The first route of `entry_point` for `transport` whose rule matches; null when none.
  const Route* Match(std::string_view entry_point, const RequestFacts& facts,
                     Transport transport = Transport::kPlain) const;
};

}  // namespace paddock::edge
