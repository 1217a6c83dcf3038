// edge/dynamic: Traefik's dynamic configuration — what a provider (ecs, file, http) produces and
// what the edge routes by — held as a JSON tree in Traefik's own field names, checked against one
// schema of Traefik's dynamic-configuration types.
//
// One representation for three sources: the ecs provider decodes `traefik.*` dockerLabels into it
// (DecodeLabels), the http provider receives it as JSON and the file provider as YAML or TOML
// converted to JSON (CheckDynamic), and /api/rawdata renders it back. The data plane compiles the
// checked tree into its own typed objects (edge/runtime), so field names are spelt once, in the
// schema (dynamic.cc), and every source obeys the same types.
//
// The tree's shape, as Traefik's JSON (pkg/config/dynamic):
//   {"http": {"routers":     {"<name>": {"rule": "...", "entryPoints": ["web"], "service": "...",
//                                        "middlewares": [...], "priority": 10, "tls": {...}}},
//             "services":    {"<name>": {"loadBalancer": {"servers": [{"url": "http://..."}], ...}}},
//             "middlewares": {"<name>": {"stripPrefix": {"prefixes": ["/a"]}}}},
//    "tls": {"certificates": [{"certFile": "...", "keyFile": "..."}], "stores": {...}}}
// Values have the schema's JSON types: strings, integers, booleans, lists of strings, maps of
// strings (header maps), lists of objects, objects. Durations are Go duration strings as Go
// renders them ("10s", "1m30s", "100ms": "90s" and "90" both become "1m30s"), so two sources that
// mean the same duration give equal trees. An absent field is absent: defaults are applied by
// the provider (ecs: ApplyServiceDefaults) or the runtime, never by the decoder, so a rendering
// shows what was configured.
//
//   std::map<std::string, std::string> labels = {{"traefik.http.routers.web.rule", "Host(`a.test`)"}};
//   StatusOr<boost::json::object> c = edge::DecodeLabels(labels);
//   // *c == {"http":{"routers":{"web":{"rule":"Host(`a.test`)"}}}}
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "common/status.h"

namespace paddock::edge {

// Decodes one container's labels as Traefik's label parser does (pkg/config/label, paerser): only
// keys under `traefik.http`, `traefik.tcp`, `traefik.udp` and `traefik.tls.stores.default`
// (case-insensitive) are read — Traefik's own filters; every other key (`traefik.enable`, the
// provider's; `traefik.docker.network`, other providers'; `rise.dev/...`) is ignored. Path segments
// are matched to the schema's field names case-insensitively and written in the schema's spelling;
// names of routers, services, middlewares and header-map keys keep the label's case (two labels
// whose names differ only in case name one object, spelt as the first in byte order — Traefik's
// node tree). Lists are comma-separated, items trimmed ("web, websecure"); lists of objects are
// indexed (`tls.domains[0].main`, items in index order); the singular `loadbalancer.server.<field>`
// is servers[0] (Traefik's label-slice-as-struct), and only there may `port` and `scheme` appear
// (label-only fields, strings, which the provider turns into the server's url). Scalars are
// converted to the field's type (`priority=10` -> 10, `passhostheader=false` -> false, Go's
// strconv rules); durations become Go duration strings (`interval=10` -> "10s"). An object that
// Traefik lets stand alone takes `true` (`tls=true` -> "tls":{}), and any other value disables it
// as in Traefik (`tls=false`: no tls, whatever its sub-labels say). Empty strings and empty lists
// are absent, as Traefik's zero values are (header-map values excepted: "" removes a header).
// Fields Traefik's labels ignore (label:"-": services' weighted, mirroring, failover,
// highestRandomWeight; routers' parentRefs; stores' defaultCertificate) are ignored.
//
// A label that names no field of the schema, a value of the wrong type, a `traefik.tcp.*` or
// `traefik.udp.*` label, a phase-2 middleware (grpcWeb, plugin): InvalidArgument naming the label
// (`serversTransports` themselves are Traefik's label:"-", ignored; a loadBalancer's
// `serversTransport` name is taken). Traefik drops the whole container's configuration on such an error (the caller does).
// Bounds (hostile input): at most kMaxLabels labels read, keys of at most kMaxLabelKeyBytes and
// kMaxLabelSegments segments (the deepest label of the schema has 8), values of at most
// kMaxLabelValueBytes, list indexes at most kMaxListIndex; beyond them, InvalidArgument. The work
// is linear in the labels' size times the labels' count.
inline constexpr size_t kMaxLabels = 1000;
inline constexpr size_t kMaxLabelKeyBytes = 1024;
inline constexpr size_t kMaxLabelSegments = 16;
inline constexpr size_t kMaxLabelValueBytes = 64 * 1024;
inline constexpr int kMaxListIndex = 1000;
StatusOr<boost::json::object> DecodeLabels(const std::map<std::string, std::string>& labels);

// Checks a dynamic configuration received as JSON (the http provider's body, the file provider's
// document converted to JSON) against the schema: field names exact as Traefik's JSON spells them
// (Traefik's JSON decoding is case-insensitive: so is this one, and the result uses the schema's
// spelling), types as above. Unknown fields (the label-only `port`/`scheme` of a server among them),
// two keys naming one field, a `tcp` or `udp` section and the refusals above: InvalidArgument
// naming the path ("http.routers.r.rul", "tls.certificates[0].certFile").
// The file provider's YAML and TOML reach Traefik through its label-style parser, which reads any
// scalar as text, so scalars are converted as label values are: "10" for an integer, "true" for a
// boolean, 443 for a string ("443"), a number of seconds or a Go duration string for a duration
// (rendered as a Go duration string). null is an absent field, or an empty object for the objects
// that may stand alone (`tls: ~`). The recursion follows the schema, so its depth is the schema's.
StatusOr<boost::json::object> CheckDynamic(const boost::json::value& config);

// A Go duration string ("1h2m3.5s", "100ms", "0") or a bare integer number of seconds, as
// Traefik's ptypes.Duration reads them. InvalidArgument otherwise, or when negative.
StatusOr<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);
// The same, negative durations allowed ("-1s", "-5"), exactly Go's time.ParseDuration (plus the
// bare integer): what flushInterval takes (negative: flush after every write).
StatusOr<std::chrono::nanoseconds> ParseSignedGoDuration(std::string_view text);
// The Go rendering of a duration (time.Duration.String()): "10s", "1m30s", "100ms", "0s", "-1.5s".
std::string FormatGoDuration(std::chrono::nanoseconds d);

// Traefik's types.NewHTTPCodeRanges: "500" or "500-599" each an inclusive range of statuses.
// InvalidArgument "creating HTTP code ranges: invalid status \"<block>\"" for a block that is
// not one or two whole numbers.
StatusOr<std::vector<std::pair<int, int>>> HttpCodeRanges(const std::vector<std::string>& blocks);

}  // namespace paddock::edge
