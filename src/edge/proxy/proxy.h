// edge/proxy: the edge's data plane — HTTP/1.1 entry points that route each request by the current
// Table (edge/proxy/table.h) through its router's middlewares to a server of its service, over
// keep-alive connection pools, and the health checker that probes those servers.
//
// Requests are read whole (up to max_request_body_bytes; larger: 413; the bodies of all requests
// together up to max_buffered_request_bytes; past it: 503) and responses are relayed as they
// arrive (streamed, whatever their framing) — read whole first when the route's chain has a
// buffering middleware (edge/proxy/buffering.h). A service with a sticky cookie sends a client
// back to the server its cookie names (edge/proxy/sticky.h). At most max_client_connections
// clients at once. Each I/O thread has its own io_context, listener (SO_REUSEPORT) and upstream
// pools, so a request never changes thread. Traefik's answers where the
// proxy itself answers: 404 "404 page not found" when no router matches, 503 "Service Unavailable"
// when the service has no routable server, 502 "Bad Gateway" when the server cannot be reached
// (or, an https server, its certificate is not verified: edge/proxy/tls.h's UpstreamTls).
// Every entry point also serves TLS (edge/proxy/tls.h): a connection whose first byte opens a TLS
// handshake gets the table's certificate for its server name and is routed by the routers with
// `tls` (Table::tls_routes); the others by the routers without.
//
//   edge::Proxy proxy({.entry_points = {{"web", "127.0.0.1", 0}}});
//   ASSIGN_OR_RETURN(auto ports, proxy.Start());   // {"web": 41234}
//   proxy.SetTable(std::make_shared<const edge::Table>(std::move(table)));
//   ...
//   proxy.Stop();
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "edge/metrics.h"
#include "edge/proxy/table.h"

namespace paddock::edge {

// Traefik's `entryPoints.<name>.http.redirections.entryPoint`: plain-HTTP requests to this entry
// point are redirected to `to` — carried out by the Edge as Traefik does, with an internal router
// `<name>-to-<to>@internal` (edge/edge.h, EntryPointRedirections); the proxy itself ignores it.
struct EntryPointRedirect {
  std::string to;  // another entry point's name (its port), or ":PORT"
  std::string scheme = "https";
  bool permanent = true;
  int64_t priority = std::numeric_limits<int64_t>::max() - 1;  // Traefik's math.MaxInt - 1
};

// Traefik's `entryPoints.<name>.http.tls`: the TLS section every router on the entry point without
// one of its own takes (carried out by the runtime: edge/runtime.h, EntryPointModel).
struct EntryPointTls {
  std::string options;        // a TLS options name; empty: the router's provider's default
  std::string cert_resolver;  // shown, and warned as any certResolver (no ACME)
};

// An entry point. Every entry point takes both plain HTTP and TLS (Traefik's: a connection whose
// first byte opens a TLS handshake is served over TLS, by the routers with a `tls` section).
struct EntryPointOptions {
  std::string name;  // "web"
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: an ephemeral port
  // entryPoints.<name>.http.sanitizePath (Traefik's default true): "." and ".." segments and
  // duplicate slashes cleaned from the path before routing (edge/proxy/request_path.h, step 4).
  // false: the path is routed and forwarded as received ("/a/../b" stays so).
  bool sanitize_path = true;
  std::optional<EntryPointRedirect> redirect = std::nullopt;
  // entryPoints.<name>.http.{middlewares,tls}: Traefik's entry-point model — the middlewares go
  // before every router's own on this entry point, and `tls` is the TLS section of every router on
  // it that has none (edge/runtime.h, EntryPointModel).
  std::vector<std::string> middlewares = {};
  std::optional<EntryPointTls> tls = std::nullopt;
  // entryPoints.<name>.transport.respondingTimeouts.{readTimeout,writeTimeout,idleTimeout}: unset,
  // ProxyOptions' client_read_timeout, client_write_timeout, client_idle_timeout; 0: none.
  std::optional<std::chrono::milliseconds> read_timeout = std::nullopt;
  std::optional<std::chrono::milliseconds> write_timeout = std::nullopt;
  std::optional<std::chrono::milliseconds> idle_timeout = std::nullopt;
};

struct ProxyOptions {
  std::vector<EntryPointOptions> entry_points;
  int io_threads = 2;
  size_t max_request_body_bytes = 16 << 20;
  size_t max_header_bytes = 32 << 10;
  // Traefik's respondingTimeouts defaults (0: none). Read: a whole request, from its first byte;
  // write: the answer, from the request's end; idle: between requests.
  std::chrono::milliseconds client_read_timeout{60'000};
  std::chrono::milliseconds client_write_timeout{0};
  std::chrono::milliseconds client_idle_timeout{180'000};
  std::chrono::milliseconds upstream_connect_timeout{30'000};
  std::chrono::milliseconds upstream_response_timeout{0};  // 0: none (Traefik's default)
  size_t max_idle_per_server = 100;  // per I/O thread; 0: none kept
  // Traefik's serversTransport idleConnTimeout (Go's http.Transport, 90 s): a pooled upstream
  // connection unused this long is closed. 0: kept until the server closes it.
  std::chrono::milliseconds upstream_idle_timeout{90'000};
  // Client connections open at once; one accepted past it is closed at once (refused_connections).
  size_t max_client_connections = 10'000;
  // Bodies held at once, all connections together: a request whose body would put the total over
  // it is answered 503 before its body is read (one without a Content-Length counts as
  // max_request_body_bytes). With max_client_connections, what bounds the edge's memory. The
  // bodies held for later are taken from it too: a buffering middleware's responses (past it:
  // oxy's 500) and mirroring's copies (past it: dropped).
  uint64_t max_buffered_request_bytes = uint64_t{512} << 20;
  // A response a buffering middleware holds whole before sending it is held in memory — oxy spills
  // it to disk past memResponseBodyBytes — so at most this many bytes of it, whatever its
  // maxResponseBodyBytes (0: none, as Traefik's): past it the client gets oxy's 500, as past
  // maxResponseBodyBytes. A server (a tenant's task) cannot make the edge hold more.
  uint64_t max_buffered_response_bytes = uint64_t{16} << 20;
  // A forwardAuth server's answer is read whole (a refusal's body goes to the client): at most
  // this many body bytes, whatever its maxResponseBodySize (-1: none, as Traefik's); past it, as
  // past maxResponseBodySize (401). A task's labels name the auth server: it cannot make the edge
  // hold more.
  uint64_t max_auth_response_bytes = uint64_t{16} << 20;
  // The static serversTransport's TLS (`--serversTransport.insecureSkipVerify`, `.rootCAs`): how
  // https servers of a loadBalancer without a serversTransport are verified (edge/proxy/tls.h).
  UpstreamTlsConfig upstream_tls{};
  // Traefik's metrics.prometheus.addRoutersLabels (its default false): the traefik_router_*
  // series, by router and service (not for @internal routers, as Traefik without addInternals).
  bool router_metrics = false;
  // Traefik's metrics.prometheus.addEntryPointsLabels and addServicesLabels (both true by default):
  // false leaves the traefik_entrypoint_* and traefik_service_* families out of Metrics().
  bool entry_point_metrics = true;
  bool service_metrics = true;
  // Traefik's metrics.prometheus.buckets: the request-duration histograms' upper bounds, ascending.
  std::vector<double> duration_buckets = {0.1, 0.3, 1.2, 5};
};

// Traefik's static serversTransport: how the edge reaches every server (Go's http.Transport under
// Traefik's defaults). ApplyTo sets the ProxyOptions fields it stands for.
struct ServersTransport {
  std::chrono::milliseconds dial_timeout{30'000};            // forwardingTimeouts.dialTimeout
  std::chrono::milliseconds response_header_timeout{0};      // forwardingTimeouts.responseHeaderTimeout
  std::chrono::milliseconds idle_conn_timeout{90'000};       // forwardingTimeouts.idleConnTimeout
  // maxIdleConnsPerHost: idle connections kept per server (0 is Go's default, 2; below 0, none),
  // shared out among the I/O threads, each keeping its part rounded up.
  int max_idle_conns_per_host = 200;
  bool insecure_skip_verify = false;  // insecureSkipVerify
  std::vector<std::string> root_cas;  // rootCAs (files); none: the system's roots

  void ApplyTo(ProxyOptions& options) const;
};

// Counters for /metrics and the tests.
struct ProxyCounters {
  uint64_t requests = 0;
  uint64_t upstream_connects = 0;
  uint64_t upstream_reuses = 0;
  uint64_t retried_stale = 0;  // a pooled connection the server had closed, retried on a fresh one
  uint64_t bad_gateway = 0;      // 502s: no answer, or not one that parses
  uint64_t gateway_timeout = 0;  // 504s: the connect or the response's head took too long
  uint64_t unavailable = 0;      // 503s: no server to send to, or the retries ran out
  uint64_t open_connections = 0;
  uint64_t refused_connections = 0;  // closed at accept: max_client_connections were open
  // Of max_buffered_request_bytes, reserved now: request bodies, buffered responses, mirrored copies.
  uint64_t buffered_request_bytes = 0;
  uint64_t upstream_tls_failures = 0;  // TLS handshakes with https servers that failed (502)
  // Mirroring's copies: answered by their mirror; not answered (no routable server, no
  // connection, no response head in time); not sent (past the copies or body bytes under way).
  uint64_t mirrored = 0;
  uint64_t mirror_failed = 0;
  uint64_t mirror_dropped = 0;
};

class Proxy {
 public:
  explicit Proxy(ProxyOptions options);
  ~Proxy();  // Stops.
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Binds every entry point and starts serving (with an empty table until SetTable). Returns the
  // bound port of each entry point by name.
  StatusOr<std::map<std::string, uint16_t>> Start();
  // Stops accepting, lets requests in flight finish (bounded by `grace`), closes every connection.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  // From any thread. Requests already routed finish on the table they were routed by.
  void SetTable(std::shared_ptr<const Table> table);
  std::shared_ptr<const Table> table() const;

  ProxyCounters counters() const;
  // The last error of a connection to a server that failed its TLS handshake ("tls: failed to
  // verify certificate: x509: certificate signed by unknown authority"), as Traefik logs it; also
  // written to stderr when it differs from the one before. Empty: none yet.
  std::string LastUpstreamError() const;
  // The request, connection and server-health metrics (edge/metrics.h); the config and drain
  // families are the Edge's. Service and router series only for the services and routers of the
  // current table (a worker drops the others when it takes a new table).
  MetricsSnapshot Metrics() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::edge
