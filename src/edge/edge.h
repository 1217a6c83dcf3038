// edge/edge: one edge — its providers read, Traefik's runtime built, the proxy's table swapped in,
// and servers that leave the configuration drained before their tasks may stop (research note
// §6.3). The thin driver around the pure parts (ecs_provider, runtime, proxy/compile) and the data
// plane (proxy).
//
// Providers: ecs (the TaskSource), and file and http when EdgeOptions names them; each
// provider's configuration goes to BuildRuntime under its name, so a file router may name
// `web@ecs`. A change of the file or http provider's configuration wakes the edge; a provider
// that fails keeps its last good configuration (its error is the rebuild's, see EdgeSnapshot).
//
// Drain protocol, the edge's half: every task that has a server in the configuration is held
// (DrainHoldSink::Put, renewed every lease/3, always before the table that routes to it is
// swapped in). A server that leaves the configuration — its task asked to stop, scaled in,
// replaced, unhealthy — is fenced at once (no new requests) and, once its in-flight requests are
// done, its task's hold is released; the task's agent waits in DEACTIVATING for that release.
//
//   edge::Edge edge(options, source, &holds);
//   ASSIGN_OR_RETURN(auto ports, edge.Start());   // {"web": 8000, "traefik": 8081}
//   tasks.SetTaskListener([&](const Scope&) { edge.Wake(); });
//   ...
//   edge.Stop();
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "edge/api.h"
#include "edge/ecs_provider.h"
#include "edge/ecs_source.h"
#include "edge/http_provider.h"
#include "edge/metrics.h"
#include "edge/proxy/proxy.h"

namespace paddock::edge {

// Where the edge's drain holds go: the control plane's owner of holds (in-process) or its API.
class DrainHoldSink {
 public:
  virtual ~DrainHoldSink() = default;
  struct Hold {
    std::string task_arn;
    std::chrono::milliseconds drain_timeout;
  };
  // Replaces every hold of `edge_id` with `holds`, each live for `lease` unless renewed.
  virtual Status Put(std::string_view edge_id, const std::vector<Hold>& holds, std::chrono::milliseconds lease) = 0;
  // The edge has drained `task_arn`.
  virtual Status Release(std::string_view edge_id, std::string_view task_arn) = 0;
};

struct EdgeOptions {
  std::vector<EntryPointOptions> entry_points = {{"web", "127.0.0.1", 8000}};
  std::string edge_id = "edge";
  EcsProviderOptions ecs;
  std::chrono::milliseconds resync{15'000};        // Traefik's refreshSeconds: a full re-read
  std::chrono::milliseconds drain_timeout{30'000};  // a task's default (its label overrides)
  std::chrono::milliseconds hold_lease{15'000};
  int io_threads = 2;
  // Traefik's static serversTransport: timeouts, idle connections and TLS towards the servers.
  ServersTransport servers_transport;
  // The API, ping and dashboard entry point (Traefik's `traefik`); none when unset.
  std::optional<EntryPointOptions> api;
  std::string version = "dev";
  // Traefik's file provider (edge/file_provider.h): one file, or a directory of them; none when
  // both are empty. Its names are `name@file`.
  std::string file;
  std::string file_directory;
  // Traefik's http provider (edge/http_provider.h): an http:// or https:// endpoint polled every
  // http_poll_interval, with Traefik's headers and tls options; none when empty. Its names are
  // `name@http`.
  std::string http_endpoint;
  std::chrono::milliseconds http_poll_interval{5000};
  std::chrono::milliseconds http_poll_timeout{5000};
  std::map<std::string, std::string> http_headers;
  std::optional<HttpProviderTls> http_tls;
  uint64_t http_max_body_bytes = kMaxHttpProviderBody;  // Traefik's maxResponseBodySize, bounded
  // Traefik's metrics.prometheus.addRoutersLabels (default false): the traefik_router_* series on
  // /metrics (ProxyOptions::router_metrics).
  bool router_metrics = false;
  // Traefik's addEntryPointsLabels, addServicesLabels and buckets (ProxyOptions).
  bool entry_point_metrics = true;
  bool service_metrics = true;
  std::vector<double> duration_buckets = {0.1, 0.3, 1.2, 5};
};

// What the edge runs now, for its API and the tests.
struct EdgeSnapshot {
  uint64_t generation = 0;          // rebuilds so far
  std::vector<std::string> errors;  // the last rebuild's (provider, runtime, compile)
  std::vector<Drain> drains;        // servers fenced and still answering (edge/api.h's Drain)
};

class Edge {
 public:
  // `holds` may be null: no drain protocol (the control's test, and edges told not to).
  Edge(EdgeOptions options, TaskSource& source, DrainHoldSink* holds);
  ~Edge();
  Edge(const Edge&) = delete;
  Edge& operator=(const Edge&) = delete;

  // Starts the providers, the proxy, the API and the driver; the first configuration is read
  // before it returns. The bound ports by entry point name (the API's as options.api->name).
  // InvalidArgument when a provider's options can never work (an https:// endpoint, a file of
  // another extension).
  StatusOr<std::map<std::string, uint16_t>> Start();
  void Stop();

  // Something changed: re-read now (cheap; from any thread).
  void Wake();
  // Re-reads, rebuilds and swaps now, on the caller's thread (tests; Start's first build).
  Status Rebuild();

  EdgeSnapshot Snapshot() const;
  const Proxy& proxy() const;
  // Everything /metrics on the API entry point renders (edge/metrics.h): the proxy's request,
  // connection and health families, with the reloads and drains of this edge.
  MetricsSnapshot Metrics() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Traefik's internal provider's entry-point redirections (pkg/provider/traefik/internal.go), as
// the dynamic configuration of the provider "internal": for each entry point with a `redirect`,
// the router `Normalize(<name>-to-<to>)` (rule HostRegexp(`^.+$`), the redirect's priority, only
// that entry point, service noop@internal) and its middleware `redirect-<router>` (redirectScheme
// to `to`'s port: `bound_ports[to]`, or the digits of ":PORT"). A `to` that names no entry point
// is an error (appended) and that entry point is not redirected.
boost::json::object EntryPointRedirections(const std::vector<EntryPointOptions>& entry_points,
                                           const std::map<std::string, uint16_t>& bound_ports,
                                           std::vector<std::string>& errors);

}  // namespace paddock::edge
