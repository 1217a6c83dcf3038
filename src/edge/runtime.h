// edge/runtime: Traefik's runtime configuration — every provider's routers, services and
// middlewares under their qualified names (`name@provider`), each with the status and errors
// Traefik would give it, the entry points a router really uses, and who uses what. It is what the
// data plane compiles and what Traefik's API shows (edge/api.h); a pure function of the providers'
// dynamic configurations (edge/dynamic.h) and the static entry points.
//
// The checks are Traefik's, with its words (pkg/server/aggregator.go, pkg/server/router,
// pkg/server/service, pkg/server/middleware, pkg/config/runtime):
//   - a router without entryPoints gets the default ones; its priority, when unset, becomes the
//     length of its rule; its middlewares are rewritten qualified (its `service` is not: Traefik
//     shows it as configured); it gets the default observability model
//   - an unknown entry point: `entryPoint "x" doesn't exist` (warning); none left: `no valid
//     entryPoint for this router` (disabled)
//   - an unknown service: `the service "x@ecs" does not exist`; an unknown middleware:
//     `middleware "x@ecs" does not exist`; a rule the parser refuses: `error while parsing rule
//     <rule>: <why>` (disabled; the rule is only checked once the handler builds, as in Traefik)
//   - a service is checked only when a router uses it; its errors are its own and the router's
//   - a loadBalancer's `serversTransport` is qualified (shown so) and must name one of the
//     providers' `http.serversTransports` (or `default@internal`): `error building proxy for
//     server URL <url>: getting RoundTripper: servers transport not found <name>`
//   - per entry point, routers naming one host with different `tls.options`: each whose options
//     are not `default` gets Traefik's warning and the host gets the default options; a router with
//     options of its own and no Host matcher gets Traefik's "no domain found in rule" warning
//   - Paddock's own: a router with `tls.certResolver` is a warning (ACME is not reachable; it is
//     served on a static or the default certificate; research note §6.4)
//
//   std::vector<edge::ProviderConfiguration> providers = {{"ecs", ecs_config}, {"file", file_config}};
//   edge::RuntimeConfig rt = edge::BuildRuntime(providers, {"web", "websecure", "traefik"}, {"web", "websecure"},
//                                               [](std::string_view rule) { return CheckRule(rule); });
//   rt.routers.at("whoami@ecs").status;   // RuntimeStatus::kEnabled
//   rt.SetServerStatus("whoami@ecs", "http://10.0.0.5:80", ServerStatus::kUp);  // the health checker
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace paddock::edge {

enum class RuntimeStatus { kEnabled, kDisabled, kWarning };
// "enabled", "disabled", "warning" (Traefik's runtime.Status*).
std::string_view RuntimeStatusName(RuntimeStatus status);

enum class ServerStatus { kUp, kDown };
// "UP", "DOWN".
std::string_view ServerStatusName(ServerStatus status);

// One provider's dynamic configuration ({"http":{"routers":{},"services":{},"middlewares":{}},
// "tls":{"options":{}}}, Traefik's field names), names unqualified.
struct ProviderConfiguration {
  std::string provider;  // "ecs", "file", "http", "internal"
  boost::json::object config;
};

struct RouterInfo {
  // dynamic.Router as the runtime holds it: entryPoints defaulted, priority defaulted, middlewares
  // qualified, observability defaulted (see the header's opening).
  boost::json::object config;
  RuntimeStatus status = RuntimeStatus::kEnabled;
  std::vector<std::string> errors;           // Traefik's `error`, in the order they arose
  std::vector<std::string> using_entry_points;  // Traefik's `using`: sorted, unique
  std::string provider;
  std::string service;  // the service it routes to, qualified ("whoami@ecs"); empty when none

  // Traefik's AddError: once per text; critical -> disabled, otherwise warning unless disabled.
  void AddError(std::string error, bool critical);
};

struct ServiceInfo {
  boost::json::object config;  // dynamic.Service as configured
  RuntimeStatus status = RuntimeStatus::kEnabled;
  std::vector<std::string> errors;
  std::vector<std::string> used_by;  // routers, sorted
  std::string provider;
  // Server URL -> status. BuildRuntime marks the servers of a loadBalancer a router uses UP when
  // it has no healthCheck (Traefik's "UP by default"); with a healthCheck they are absent until the
  // health checker's first probe (Paddock's deviation, research note §6.2) — SetServerStatus.
  std::map<std::string, ServerStatus> server_status;

  void AddError(std::string error, bool critical);
};

struct MiddlewareInfo {
  boost::json::object config;  // dynamic.Middleware; a chain's members qualified once it is built
  RuntimeStatus status = RuntimeStatus::kEnabled;
  std::vector<std::string> errors;
  std::vector<std::string> used_by;  // routers, sorted
  std::string provider;

  void AddError(std::string error, bool critical);
};

struct RuntimeConfig {
  std::map<std::string, RouterInfo> routers;  // by qualified name
  std::map<std::string, ServiceInfo> services;
  std::map<std::string, MiddlewareInfo> middlewares;
  // Every provider's `tls.certificates` entries ({"certFile","keyFile"}), in provider order, and
  // the first `tls.stores.default.defaultCertificate` (empty: none) — what the proxy serves TLS
  // with (edge/proxy/tls.h). Paths or PEM text, as configured; never shown by the API.
  boost::json::array tls_certificates;
  boost::json::object default_certificate;
  // Traefik's TLS options by name ("default", "mine@file"), each as configured: `default` is
  // Traefik's own ({}) unless one provider defines it, and absent when several do.
  std::map<std::string, boost::json::object> tls_options;
  // Per entry point, the options each host name gets at the ClientHello (Traefik's per-SNI TLS
  // configuration): the hosts the Host matchers of its TLS routers name ("*" for Host(`*`)), each
  // with its routers' options, or `default` where they differ.
  std::map<std::string, std::map<std::string, std::string>> tls_options_by_host;
  // Per entry point, the options each TLS router's requests must have come with (Traefik's
  // ResolvedOptions, which its snicheck compares with the connection's: 421 otherwise).
  std::map<std::string, std::map<std::string, std::string>> tls_options_by_router;
  // Every provider's `http.serversTransports` by qualified name ("mine@file"), as configured: what
  // a loadBalancer's `serversTransport` names (qualified with its provider; `default@internal`, the
  // static one, is not here). One named but absent puts its service in error with Traefik's words
  // ("error building proxy for server URL <url>: getting RoundTripper: servers transport not found
  // <name>"). Not shown by the API (Traefik's has no endpoint for them).
  std::map<std::string, boost::json::object> servers_transports;

  // Records a health probe's verdict. False (and no change) when there is no such service.
  bool SetServerStatus(std::string_view service, std::string_view url, ServerStatus status);
};

// What the rule parser says of a rule: empty when it parses, else why not ("unknown matcher
// WrongRule" — BuildRuntime adds Traefik's "error while parsing rule <rule>: ").
using RuleChecker = std::function<std::string(std::string_view rule)>;
// What a middleware's constructor says of its options: `type` is its kind as Traefik's JSON names
// it ("stripPrefix"), `options` the object under it. Empty when it builds, else the error
// (added to the middleware and its routers, disabling both, as Traefik does).
using MiddlewareChecker = std::function<std::string(std::string_view type, const boost::json::object& options)>;

// What the TLS layer says of a `tls.options.<name>` object: empty when it builds, else Traefik's
// words ("invalid CipherSuite: X"); its routers are disabled with "building router handler:
// building TLS config: <why>".
using TlsOptionsChecker = std::function<std::string(const boost::json::object& options)>;

// Traefik's entry-point model (static `entryPoints.<name>.http.{tls,middlewares}`, applied as
// its applyModel does): every root router on the entry point is served there by a copy — named
// `<ep>-<name>` when the router is on several entry points, else keeping its name — whose
// middlewares are `middlewares` then its own, and whose `tls`, when it has none, is `tls`
// (`{"options":…,"certResolver":…}`, empty members left out).
struct EntryPointModel {
  std::optional<boost::json::object> tls;
  std::vector<std::string> middlewares;
};

// `entry_points`: every static entry point's name; `default_entry_points`: those a router naming
// none gets (DefaultEntryPoints in edge/api.h computes Traefik's choice). `check_middleware` may be
// empty (every middleware of a known kind builds). `models`: by entry point name.
RuntimeConfig BuildRuntime(const std::vector<ProviderConfiguration>& providers,
                           const std::vector<std::string>& entry_points,
                           const std::vector<std::string>& default_entry_points, const RuleChecker& check_rule,
                           const MiddlewareChecker& check_middleware = {},
                           const TlsOptionsChecker& check_tls_options = {},
                           const std::map<std::string, EntryPointModel>& models = {});

// The qualified form of `name` referenced from `provider`: unchanged when it has an '@'
// (Traefik's provider.GetQualifiedName).
std::string QualifiedName(std::string_view name, std::string_view provider);

// Traefik's internal provider (pkg/provider/traefik/internal.go): the routers and services it adds
// for the API, ping and Prometheus — what /api/http/routers lists as `api@internal`,
// `ping@internal`, ... Feed it to BuildRuntime as the provider "internal".
struct InternalOptions {
  bool api_insecure = false;       // api.insecure: the `api` router on the `traefik` entry point
  bool ping = false;               // ping enabled: the `ping` router
  std::string ping_entry_point = "traefik";
  bool prometheus = false;         // metrics.prometheus enabled: the `prometheus` router
  std::string prometheus_entry_point = "traefik";
};
boost::json::object InternalConfiguration(const InternalOptions& options);

}  // namespace paddock::edge
