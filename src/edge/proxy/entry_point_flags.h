// edge/proxy/entry_point_flags: Traefik's static entry-point and servers-transport options given as
// its command-line flags. Entry points: `--entrypoints.<name>.<option>=<value>` (names and options case-insensitive, as Traefik's
// flag parser reads them), applied to entry points already declared (`paddock edge --entrypoint`).
//
// Taken: `http.sanitizePath` (a Go bool: 1 0 t f true false in any case; a bare flag is true),
// `http.redirections.entryPoint.{to,scheme,permanent,priority}` (Traefik's defaults: https,
// permanent, priority MaxInt-1; `to` is required once any is given), the entry-point model's
// `http.tls` (a Go bool; bare: true), `http.tls.{options,certResolver}` and `http.middlewares`
// (comma-separated) and
// `transport.respondingTimeouts.{readTimeout,writeTimeout,idleTimeout}` (a Go duration or a bare
// number of seconds, as Traefik reads them; 0: none). Anything else is refused by
// name, so a Traefik flag the edge does not carry out is never silently ignored.
//
//   std::vector<edge::EntryPointOptions> eps = {{"web", "0.0.0.0", 8000}, {"websecure", "0.0.0.0", 8443}};
//   RETURN_IF_ERROR(edge::ApplyEntryPointFlags({"--entrypoints.web.http.sanitizepath=false",
//                                               "--entrypoints.web.http.redirections.entrypoint.to=websecure"}, eps));
//
// The servers transport: `--serversTransport.forwardingTimeouts.{dialTimeout,responseHeaderTimeout,
// idleConnTimeout}` (Go durations), `--serversTransport.maxIdleConnsPerHost` (an integer),
// `--serversTransport.insecureSkipVerify` (a Go bool; bare: true) and `--serversTransport.rootCAs`
// (files, comma-separated), taken out of the words before the entry points' flags are read. The
// others (spiffe, ...) are refused by name.
//
//   edge::ServersTransport st;
//   RETURN_IF_ERROR(edge::TakeServersTransportFlags(extras, st));   // extras keeps the rest
//   st.ApplyTo(proxy_options);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "edge/proxy/proxy.h"

namespace paddock::edge {

// `args` are command-line words the CLI did not recognise, in order: "--key=value", or "--key"
// followed by a value word (for a bool option, only a bool word), or a bare "--key" (bools: true).
// InvalidArgument naming the word for anything that is not such a flag, an option not taken, an
// undeclared entry point, a bad value or a redirection without `to`; `entry_points` is then
// unchanged.
Status ApplyEntryPointFlags(const std::vector<std::string>& args, std::vector<EntryPointOptions>& entry_points);

// Takes the `--serversTransport.*` words (and their value words) out of `args` into `transport`.
// InvalidArgument naming the word for an option not taken or a bad value; both are then unchanged.
Status TakeServersTransportFlags(std::vector<std::string>& args, ServersTransport& transport);

// Traefik's `--metrics.prometheus.buckets`: seconds as Go floats, comma-separated ("0.1,0.3,1.2,5").
// InvalidArgument for one that is not a number, or for bounds not strictly ascending (Prometheus
// refuses them: Traefik fails to start).
StatusOr<std::vector<double>> ParseMetricsBuckets(std::string_view value);

}  // namespace paddock::edge
