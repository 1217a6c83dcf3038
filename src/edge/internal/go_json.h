// edge/internal/go_json: JSON written byte for byte as Traefik's Go code writes it — the writing
// half of edge/api and the Go spellings edge/runtime's error texts use.
//
// Go's encoding/json differs from Boost.JSON's serializer in ways a client can see: struct fields
// come in declaration order and map keys sorted, `omitempty` drops zero values, '<', '>' and '&'
// are escaped as \u003c, \u003e and \u0026, invalid UTF-8 becomes \ufffd, durations are strings
// such as "1m0s". GoShape puts a configuration object (Traefik's JSON field names) into the order
// and form Go would give it; GoJson then writes any tree in its stored member order.
//
//   boost::json::object router = GoShape(config, "Router");  // entryPoints, middlewares, service, rule, ...
//   router["status"] = "enabled";                              // later fields keep their place
//   std::string body = GoJson(router) + "\n";                  // what json.Encoder.Encode writes
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace paddock::edge::internal {

// Appends `s` quoted as Go's json.Marshal quotes strings (HTML-safe escaping on).
void AppendGoJsonString(std::string& out, std::string_view s);

// `v` compact, members in stored order, numbers as Go prints them.
std::string GoJson(const boost::json::value& v);

// `config` as Go marshals the Traefik type named `type` — "Router", "Service", "Middleware",
// "EntryPoint" (static), and the types they contain: members in declaration order; `omitempty`
// fields holding a zero value ("", 0, false, [], {}) dropped; a pointer field is kept whatever it
// holds; `passHostHeader` (a pointer without omitempty) is null when absent; a struct held by value
// (an entry point's `http`) is {} when absent; maps (header maps, `plugin`) sorted by key;
// durations rewritten as Go's Duration.String() ("60s" -> "1m0s", a bare number of seconds 10 ->
// "10s"). Members the type does not declare follow the declared ones, in stored order. An unknown
// `type` leaves the object as it is.
boost::json::object GoShape(const boost::json::object& config, std::string_view type);

// A service's kinds ("loadBalancer", "weighted", ...) and a middleware's ("addPrefix", ...): the
// fields of Traefik's Service (but `middlewares`) and Middleware, in declaration order.
const std::vector<std::string_view>& ServiceKinds();
const std::vector<std::string_view>& MiddlewareKinds();

// Go's strconv.Quote, as fmt's %q writes a string: "\"a\\tb\"".
std::string GoQuote(std::string_view s);

// Go's time.Time marshalled as JSON text (RFC 3339 with nanoseconds, trailing zeros trimmed), in
// UTC: "2026-12-01T10:00:00.5Z".
std::string FormatGoTime(std::chrono::system_clock::time_point t);

// A duration as Traefik's ptypes.Duration reads it: a Go duration string ("1h2m3.5s", "100ms",
// "0") or a bare integer number of seconds. nullopt when it is neither.
std::optional<int64_t> ParseGoDurationNanos(std::string_view text);
// Go's time.Duration.String(): "1m30s", "100ms", "1.5µs", "0s".
std::string FormatGoDurationNanos(int64_t nanos);

}  // namespace paddock::edge::internal
