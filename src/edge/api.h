// edge/api: Traefik's HTTP API (pkg/api) and ping, answered from a snapshot of the edge's state —
// a pure function from (view, request) to response, so the same bytes a real Traefik sends can be
// pinned by golden files (testdata/api/*.test) and the server around it stays thin.
//
// Routes (GET; research note §2 and §6.5):
//   /api/overview, /api/rawdata, /api/version
//   /api/entrypoints[/{name}]
//   /api/http/routers|services|middlewares[/{name}]   lists take search, status, serviceName,
//        middlewareName (routers), page, per_page (default 100), sortBy, direction; the X-Next-Page
//        header is the next page, or 1 on the last; a page past the end is 400
//   /api/tcp/routers|services|middlewares, /api/udp/routers|services   always empty (HTTP only)
//   /api/paddock/drains   Paddock's own: the servers being drained (research note §6.3)
//   /ping (any method, any path under it)   200 "OK", 503 "Service Unavailable" when shutting down
//   /, /dashboard[/], /dashboard/app.js|app.css   the dashboard (edge/dashboard.h)
// {name} is path-unescaped and includes "@provider". Errors are Traefik's:
// 404 {"message":"router not found: x@ecs"}, 400 {"message":"invalid request: page: 2, per_page: 100"};
// an unknown path is Go's "404 page not found", a known one with another method 405.
//
// The bytes are Go's: struct fields in declaration order, maps by key, omitempty, HTML-safe
// escaping (`&&` in a rule is `\u0026\u0026`), a newline after each body (json.Encoder).
//
//   edge::ApiView view;  view.runtime = edge::BuildRuntime(...);  view.entry_points = ...;
//   http::Response r = edge::ServeApi(view, request);  // GET /api/http/routers/whoami@ecs
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "edge/runtime.h"
#include "http/message.h"

namespace paddock::edge {

// A static entry point as Traefik's API shows it.
struct EntryPoint {
  std::string name;      // "web"
  std::string address;   // ":80", ":8000/tcp"
  bool as_default = false;
  // The rest of static.EntryPoint in Traefik's JSON names (transport, forwardedHeaders, http,
  // http2, udp, ...); EntryPointDefaults() is what Traefik fills in for an entry point declared
  // with an address only.
  boost::json::object fields;
};

// Traefik's static.EntryPoint SetDefaults, as its JSON: transport (lifeCycle.graceTimeOut 10s,
// respondingTimeouts read 60s and idle 180s), forwardedHeaders {}, http (sanitizePath, maxHeaderBytes
// 1 MiB, underscoreHeadersStrategy keep), http2 (250 streams, 4096-byte tables), udp (timeout 3s).
boost::json::object EntryPointDefaults();

// The entry points a router naming none gets (Traefik's getDefaultsEntrypoints): those marked
// as_default, or all when none is; never `traefik` nor a UDP one; sorted.
std::vector<std::string> DefaultEntryPoints(const std::vector<EntryPoint>& entry_points);

// What overview's "providers" lists, in Traefik's order (its static Providers struct), for the
// kinds the edge runs ("ecs", "file", "http", "rest"): {"file","ecs"} -> {"File","Ecs"}.
std::vector<std::string> OverviewProviders(const std::vector<std::string>& kinds);

struct OverviewSection {
  int total = 0;
  int warnings = 0;
  int errors = 0;
};

// A server taken out of rotation and waiting for its in-flight requests (edge drain protocol).
struct Drain {
  std::string task_arn;
  std::string url;
  int64_t in_flight = 0;
  std::chrono::system_clock::time_point since;
  std::chrono::system_clock::time_point deadline;
};

struct ApiView {
  RuntimeConfig runtime;
  std::vector<EntryPoint> entry_points;

  // /api/version
  std::string version = "dev";
  std::string codename = "cheddar";
  std::chrono::system_clock::time_point start_date;

  // /api/overview
  std::string tracing;   // features.tracing: the backend's name, or ""
  std::string metrics;   // features.metrics: "Prometheus" or ""
  bool access_log = false;
  std::vector<std::string> providers;  // OverviewProviders(...)
  std::optional<OverviewSection> certificates;  // Traefik shows it when it has a TLS manager

  std::vector<Drain> drains;  // /api/paddock/drains
  bool shutting_down = false;  // /ping answers 503
};

// Answers `request` (its method and target; the body is not read). Never fails: every outcome is
// an HTTP answer.
http::Response ServeApi(const ApiView& view, const http::Request& request);

}  // namespace paddock::edge
