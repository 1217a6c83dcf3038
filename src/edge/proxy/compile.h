// edge/proxy/compile: the runtime configuration (edge/runtime.h) made into the Table the proxy
// routes by — rules parsed, middleware chains built and flattened, load balancers with their
// servers' shared state (ServerRegistry), health checks parsed — for every router Traefik would run
// (status enabled or warning), on each entry point it uses.
//
//   edge::CompileResult c = edge::Compile(runtime, registry);
//   proxy.SetTable(c.table);   // c.errors: what could not be built (logged; the router is left out)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "edge/proxy/table.h"
#include "edge/runtime.h"

namespace paddock::edge {

struct CompileResult {
  std::shared_ptr<const Table> table;
  std::vector<std::string> errors;
};

// Servers are named by URL: `http://<ip>:<port>` or `https://<host>:<port>` (an IP literal; a host
// name is resolved once, here, and an https server's certificate is verified against it); a
// loadBalancer's `serversTransport` (qualified with its provider) is made from the runtime's
// servers transports (a root CA or client certificate that cannot be read is an error, and left
// out, as Traefik logs it). loadBalancer, weighted, highestRandomWeight, failover and mirroring
// services are served (the children of a service made of services compiled by name, qualified
// with its provider; a cycle or nesting deeper than 16 is an error, never a deep recursion). A
// router whose service cannot be built, or whose middlewares cannot be built, is left out with an
// error.
CompileResult Compile(const RuntimeConfig& runtime, ServerRegistry& registry);

// A `tls.options.<name>` object of the dynamic configuration as the proxy takes it, and Traefik's
// error for it ("" when it builds; its CA files read): BuildRuntime's TlsOptionsChecker.
TlsOptionsConfig TlsOptionsFromJson(const boost::json::object& options);
std::string CheckTlsOptionsJson(const boost::json::object& options);

// Parses "http://10.0.0.5:8080" (the scheme lower-cased, as Go's url.Parse; the port defaults to
// 80, or 443 for https). InvalidArgument otherwise.
struct ServerAddress {
  std::string scheme;
  std::string host;
  uint16_t port = 0;
};
StatusOr<ServerAddress> ParseServerUrl(std::string_view url);

}  // namespace paddock::edge
