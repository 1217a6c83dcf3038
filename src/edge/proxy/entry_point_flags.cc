#include "edge/proxy/entry_point_flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "edge/dynamic.h"

namespace paddock::edge {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Go's strconv.ParseBool.
std::optional<bool> GoBool(std::string_view v) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"})
    if (v == t) return true;
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"})
    if (v == f) return false;
  return std::nullopt;
}

// "--KEY=VALUE" or "--KEY VALUE" at args[i] (i moves past a value word): the key after `prefix`,
// lower-cased, and the value. nullopt when args[i] does not start with `prefix` (in any case).
struct Flag {
  std::string key;
  std::optional<std::string_view> value;
};
std::optional<Flag> TakeFlag(const std::vector<std::string>& args, size_t& i, std::string_view prefix) {
  const std::string& arg = args[i];
  if (arg.size() <= prefix.size() || Lower(arg.substr(0, prefix.size())) != prefix) return std::nullopt;
  std::string_view rest = std::string_view(arg).substr(prefix.size());
  Flag f;
  if (size_t eq = rest.find('='); eq != std::string_view::npos) {
    f.value = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  } else if (i + 1 < args.size() && !args[i + 1].starts_with("--") &&
             (Lower(rest) != "insecureskipverify" || GoBool(args[i + 1]))) {  // a bool takes only a bool word
    f.value = args[++i];
  }
  f.key = Lower(rest);
  return f;
}

// A list flag's items (Traefik's: comma-separated), trimmed of spaces, empty ones left out.
std::vector<std::string> CommaList(std::string_view value) {
  std::vector<std::string> out;
  for (std::string_view left = value; !left.empty();) {
    const size_t comma = left.find(',');
    std::string_view item = left.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    left = comma == std::string_view::npos ? std::string_view() : left.substr(comma + 1);
  }
  return out;
}

}  // namespace

void ServersTransport::ApplyTo(ProxyOptions& options) const {
  options.upstream_connect_timeout = dial_timeout;
  options.upstream_response_timeout = response_header_timeout;
  options.upstream_idle_timeout = idle_conn_timeout;
  const int per_host = max_idle_conns_per_host == 0 ? 2 : max_idle_conns_per_host;  // Go's DefaultMaxIdleConnsPerHost
  const int threads = std::max(1, options.io_threads);
  options.max_idle_per_server = per_host < 0 ? 0 : static_cast<size_t>((per_host + threads - 1) / threads);
  options.upstream_tls.insecure_skip_verify = insecure_skip_verify;
  options.upstream_tls.root_cas = root_cas;
}

Status TakeServersTransportFlags(std::vector<std::string>& args, ServersTransport& transport) {
  static constexpr std::string_view kPrefix = "--serverstransport.";
  static constexpr std::string_view kTimeouts = "forwardingtimeouts.";
  ServersTransport out = transport;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::optional<Flag> f = TakeFlag(args, i, kPrefix);
    if (!f) {
      rest.push_back(arg);
      continue;
    }
    if (f->key == "insecureskipverify") {  // a Go bool; bare: true
      std::optional<bool> on = f->value ? GoBool(*f->value) : std::optional<bool>(true);
      if (!on) return InvalidArgument(fmt::format("'{}': '{}' is not a bool", arg, *f->value));
      out.insecure_skip_verify = *on;
      continue;
    }
    if (!f->value || f->value->empty()) return InvalidArgument(fmt::format("'{}' needs a value", arg));
    if (f->key == "rootcas") {  // Traefik's flag for a list: comma-separated files
      out.root_cas = CommaList(*f->value);
      continue;
    }
    if (f->key.starts_with(kTimeouts)) {
      const std::string field = f->key.substr(kTimeouts.size());
      std::chrono::milliseconds* slot = field == "dialtimeout"             ? &out.dial_timeout
                                        : field == "responseheadertimeout" ? &out.response_header_timeout
                                        : field == "idleconntimeout"       ? &out.idle_conn_timeout
                                                                           : nullptr;
      if (!slot) return InvalidArgument(fmt::format("'{}': the edge does not take serversTransport option {}", arg, f->key));
      auto d = ParseGoDuration(*f->value);
      if (!d.ok()) return InvalidArgument(fmt::format("'{}': {}", arg, d.status().message()));
      *slot = std::chrono::ceil<std::chrono::milliseconds>(*d);
    } else if (f->key == "maxidleconnsperhost") {
      int n = 0;
      auto [end, ec] = std::from_chars(f->value->data(), f->value->data() + f->value->size(), n);
      if (ec != std::errc() || end != f->value->data() + f->value->size())
        return InvalidArgument(fmt::format("'{}': '{}' is not an integer", arg, *f->value));
      out.max_idle_conns_per_host = n;
    } else {
      return InvalidArgument(fmt::format(
          "'{}': the edge does not take serversTransport option {} (it takes forwardingTimeouts, "
          "maxIdleConnsPerHost, insecureSkipVerify and rootCAs)",
          arg, f->key));
    }
  }
  args = std::move(rest);
  transport = out;
  return OkStatus();
}

Status ApplyEntryPointFlags(const std::vector<std::string>& args, std::vector<EntryPointOptions>& entry_points) {
  static constexpr std::string_view kPrefix = "--entrypoints.";
  static constexpr std::string_view kRedirect = "http.redirections.entrypoint.";
  std::vector<EntryPointOptions> out = entry_points;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() <= kPrefix.size() || Lower(arg.substr(0, kPrefix.size())) != kPrefix)
      return InvalidArgument(fmt::format("unknown argument '{}'", arg));
    std::string_view rest = std::string_view(arg).substr(kPrefix.size());
    std::optional<std::string_view> value;
    if (size_t eq = rest.find('='); eq != std::string_view::npos) {
      value = rest.substr(eq + 1);
      rest = rest.substr(0, eq);
    }
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0)
      return InvalidArgument(fmt::format("'{}' is not --entrypoints.<name>.<option>", arg));
    const std::string name = Lower(rest.substr(0, dot));
    const std::string option = Lower(rest.substr(dot + 1));
    EntryPointOptions* ep = nullptr;
    for (EntryPointOptions& e : out)
      if (Lower(e.name) == name) ep = &e;
    if (!ep)
      return InvalidArgument(
          fmt::format("'{}': entry point {} is not declared (--entrypoint {}=[HOST]:PORT)", arg, name, name));
    const bool is_bool = option == "http.sanitizepath" || option == std::string(kRedirect) + "permanent" ||
                         option == "http.tls";
    if (!value && i + 1 < args.size() && (is_bool ? GoBool(args[i + 1]).has_value() : !args[i + 1].starts_with("--")))
      value = args[++i];
    std::optional<bool> on;
    if (is_bool) {
      on = value ? GoBool(*value) : std::optional<bool>(true);
      if (!on) return InvalidArgument(fmt::format("'{}': '{}' is not a bool", arg, *value));
    } else if (!value || value->empty()) {
      return InvalidArgument(fmt::format("'{}' needs a value", arg));
    }
    if (option == "http.sanitizepath") {
      ep->sanitize_path = *on;
      continue;
    }
    // The entry-point model: http.tls (allowEmpty: a bare flag or true makes it, false leaves
    // none), http.tls.{options,certResolver}, http.middlewares (comma-separated).
    if (option == "http.tls") {
      if (*on && !ep->tls) ep->tls.emplace();
      if (!*on) ep->tls.reset();
      continue;
    }
    if (option == "http.tls.options" || option == "http.tls.certresolver") {
      EntryPointTls& tls = ep->tls ? *ep->tls : ep->tls.emplace();
      (option == "http.tls.options" ? tls.options : tls.cert_resolver) = std::string(*value);
      continue;
    }
    if (option == "http.middlewares") {
      ep->middlewares = CommaList(*value);
      continue;
    }
    static constexpr std::string_view kResponding = "transport.respondingtimeouts.";
    if (option.starts_with(kResponding)) {
      const std::string field = option.substr(kResponding.size());
      std::optional<std::chrono::milliseconds>* slot = field == "readtimeout"    ? &ep->read_timeout
                                                       : field == "writetimeout" ? &ep->write_timeout
                                                       : field == "idletimeout"  ? &ep->idle_timeout
                                                                                 : nullptr;
      if (!slot) return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
      auto d = ParseGoDuration(*value);
      if (!d.ok()) return InvalidArgument(fmt::format("'{}': {}", arg, d.status().message()));
      *slot = std::chrono::ceil<std::chrono::milliseconds>(*d);
      continue;
    }
    if (!option.starts_with(kRedirect))
      return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
    EntryPointRedirect& r = ep->redirect ? *ep->redirect : ep->redirect.emplace();
    const std::string field = option.substr(kRedirect.size());
    if (field == "to") {
      r.to = std::string(*value);
    } else if (field == "scheme") {
      r.scheme = std::string(*value);
    } else if (field == "permanent") {
      r.permanent = *on;
    } else if (field == "priority") {
      int64_t p = 0;
      auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), p);
      if (ec != std::errc() || end != value->data() + value->size())
        return InvalidArgument(fmt::format("'{}': '{}' is not an integer", arg, *value));
      r.priority = p;
    } else {
      return InvalidArgument(fmt::format("'{}': the edge does not take entry point option {}", arg, option));
    }
  }
  for (const EntryPointOptions& ep : out)
    if (ep.redirect && ep.redirect->to.empty())
      return InvalidArgument(fmt::format("entry point {}: a redirection needs --entrypoints.{}.{}to", ep.name, ep.name,
                                         kRedirect));
  entry_points = std::move(out);
  return OkStatus();
}

StatusOr<std::vector<double>> ParseMetricsBuckets(std::string_view value) {
  std::vector<double> bounds;
  for (const std::string& item : CommaList(value)) {
    double v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || !std::isfinite(v))
      return InvalidArgument(fmt::format("--metrics.prometheus.buckets: '{}' is not a number of seconds", item));
    if (!bounds.empty() && v <= bounds.back())
      return InvalidArgument(fmt::format("--metrics.prometheus.buckets: histogram buckets must be in increasing order: {} >= {}",
                                         bounds.back(), v));
    bounds.push_back(v);
  }
  if (bounds.empty()) return InvalidArgument("--metrics.prometheus.buckets: no bucket given");
  return bounds;
}

}  // namespace paddock::edge
