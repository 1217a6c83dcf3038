#include "edge/metrics.h"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "edge/internal/middleware_util.h"

namespace paddock::edge {
namespace {

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

void AppendEscaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

std::string Number(double v) { return fmt::format("{}", v); }

// `labels` sorted by name already; `extra` (le) goes last, as client_golang writes it.
void AppendSample(std::string& out, std::string_view name, const Labels& labels, std::string_view value,
                  std::string_view le = {}) {
  out += name;
  if (!labels.empty() || !le.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out += ',';
      first = false;
      out += k;
      out += "=\"";
      AppendEscaped(out, v);
      out += '"';
    }
    if (!le.empty()) {
      if (!first) out += ',';
      out += "le=\"";
      out += le;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

void AppendHeader(std::string& out, std::string_view name, std::string_view help, std::string_view type) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void AppendHistogram(std::string& out, std::string_view name, const Labels& labels, const Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    AppendSample(out, std::string(name) + "_bucket", labels, std::to_string(cumulative), Number(h.bounds[i]));
  }
  AppendSample(out, std::string(name) + "_bucket", labels, std::to_string(h.count), "+Inf");
  AppendSample(out, std::string(name) + "_sum", labels, Number(h.sum));
  AppendSample(out, std::string(name) + "_count", labels, std::to_string(h.count));
}

// The help texts of one level's request families.
struct LevelHelp {
  std::string_view duration, requests_bytes, tls, total, responses_bytes;
};

// Rows sorted by their labels (sorted by name), as client_golang orders a family's series.
template <typename Series>
std::vector<std::pair<Labels, const Series*>> SortedRows(std::vector<std::pair<Labels, const Series*>> rows) {
  for (auto& row : rows) std::sort(row.first.begin(), row.first.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return rows;
}

// One level's request families (entry point, router or service), in name order:
// <prefix>request_duration_seconds, requests_bytes_total, requests_tls_total, requests_total,
// responses_bytes_total. `name_label` is "entrypoint", "router" or "service"; router series carry
// their service too. A family with no series is left out.
void AppendLevel(std::string& out, std::string_view prefix, std::string_view name_label,
                 const std::map<RequestKey, RequestSeries>& series, const std::map<TlsKey, uint64_t>& tls,
                 const LevelHelp& help) {
  const bool router = name_label == "router";
  std::vector<std::pair<Labels, const RequestSeries*>> unsorted;
  for (const auto& [key, s] : series) {
    Labels labels = {{"code", key.code}, {"method", key.method}, {"protocol", key.protocol}, {name_label, key.name}};
    if (router) labels.emplace_back("service", key.service);
    unsorted.emplace_back(std::move(labels), &s);
  }
  const auto rows = SortedRows(std::move(unsorted));
  auto counter = [&](std::string_view suffix, std::string_view text, auto value) {
    if (rows.empty()) return;
    const std::string name = fmt::format("{}{}", prefix, suffix);
    AppendHeader(out, name, text, "counter");
    for (const auto& [labels, s] : rows) AppendSample(out, name, labels, std::to_string(value(*s)));
  };
  if (!rows.empty()) {
    const std::string duration = fmt::format("{}request_duration_seconds", prefix);
    AppendHeader(out, duration, help.duration, "histogram");
    for (const auto& [labels, s] : rows) AppendHistogram(out, duration, labels, s->duration);
  }
  counter("requests_bytes_total", help.requests_bytes, [](const RequestSeries& s) { return s.request_bytes; });
  std::vector<std::pair<Labels, const uint64_t*>> tls_unsorted;
  for (const auto& [key, n] : tls) {
    Labels labels = {{name_label, key.name}, {"tls_cipher", key.tls_cipher}, {"tls_version", key.tls_version}};
    if (router) labels.emplace_back("service", key.service);
    tls_unsorted.emplace_back(std::move(labels), &n);
  }
  if (!tls_unsorted.empty()) {
    const std::string name = fmt::format("{}requests_tls_total", prefix);
    AppendHeader(out, name, help.tls, "counter");
    for (const auto& [labels, n] : SortedRows(std::move(tls_unsorted))) AppendSample(out, name, labels, std::to_string(*n));
  }
  counter("requests_total", help.total, [](const RequestSeries& s) { return s.requests; });
  counter("responses_bytes_total", help.responses_bytes, [](const RequestSeries& s) { return s.response_bytes; });
}

}  // namespace

Histogram Histogram::WithBounds(std::vector<double> bounds) {
  Histogram h;
  h.counts.assign(bounds.size() + 1, 0);
  h.bounds = std::move(bounds);
  return h;
}
Histogram Histogram::RequestDurations() { return WithBounds({0.1, 0.3, 1.2, 5}); }
Histogram Histogram::DrainDurations() { return WithBounds({0.1, 0.5, 1, 5, 15, 30, 60, 300}); }

void Histogram::Observe(double seconds) {
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();  // le: v <= bound
  if (counts.size() < bounds.size() + 1) counts.resize(bounds.size() + 1);
  ++counts[i];
  ++count;
  sum += seconds;
}

void Histogram::Merge(const Histogram& other) {
  if (bounds != other.bounds) {
    if (count == 0) *this = other;  // an empty one takes the other's buckets
    return;                         // (never adds counts of other buckets into its own)
  }
  if (counts.size() < other.counts.size()) counts.resize(other.counts.size());
  for (size_t i = 0; i < other.counts.size(); ++i) counts[i] += other.counts[i];
  count += other.count;
  sum += other.sum;
}

void RequestSeries::Merge(const RequestSeries& other) {
  requests += other.requests;
  request_bytes += other.request_bytes;
  response_bytes += other.response_bytes;
  duration.Merge(other.duration);
}

std::string_view MetricMethod(std::string_view method) {
  static constexpr std::array<std::string_view, 9> kMethods = {"GET",     "HEAD",    "POST",  "PUT",  "PATCH",
                                                               "DELETE", "CONNECT", "OPTIONS", "TRACE"};
  for (std::string_view m : kMethods)
    if (m == method) return m;
  return "EXTENSION_METHOD";
}

std::string_view MetricProtocol(std::string_view connection, std::string_view upgrade, std::string_view accept,
                                std::string_view content_type) {
  if (mw::TokenListHas(connection, "upgrade") && mw::TokenListHas(upgrade, "websocket")) return "websocket";
  if (mw::TokenListHas(accept, "text/event-stream")) return "sse";
  if (content_type.starts_with("application/grpc-web")) return "grpc-web";
  if (content_type.starts_with("application/grpc")) return "grpc";
  return "http";
}

bool IsGrpcProtocol(std::string_view protocol) { return protocol == "grpc" || protocol == "grpc-web"; }

int GrpcStatusCode(std::string_view grpc_status) {
  constexpr int kUnknown = 2;
  int code = 0;
  auto [end, ec] = std::from_chars(grpc_status.data(), grpc_status.data() + grpc_status.size(), code);
  if (grpc_status.empty() || ec != std::errc() || end != grpc_status.data() + grpc_status.size() || code < 0 ||
      code >= 17)
    return kUnknown;
  return code;
}

std::string RenderPrometheus(const MetricsSnapshot& m) {
  std::string out;
  AppendHeader(out, "paddock_edge_drain_seconds",
               "How long servers taken out of the configuration took to finish their requests, from fence to release.",
               "histogram");
  AppendHistogram(out, "paddock_edge_drain_seconds", {}, m.drain_seconds);
  AppendHeader(out, "paddock_edge_drain_timeouts_total",
               "Drains whose deadline passed before their requests finished.", "counter");
  AppendSample(out, "paddock_edge_drain_timeouts_total", {}, std::to_string(m.drain_timeouts));
  AppendHeader(out, "traefik_config_last_reload_success", "Last config reload success", "gauge");
  AppendSample(out, "traefik_config_last_reload_success", {}, Number(m.config_last_reload_success.value_or(0)));
  AppendHeader(out, "traefik_config_reloads_total", "Config reloads", "counter");
  AppendSample(out, "traefik_config_reloads_total", {}, std::to_string(m.config_reloads));
  AppendLevel(out, "traefik_entrypoint_", "entrypoint", m.entry_point_requests, m.entry_point_tls_requests,
              {.duration = "How long it took to process the request on an entrypoint, partitioned by status code, "
                           "protocol, and method.",
               .requests_bytes = "The total size of requests in bytes handled by an entrypoint, partitioned by status "
                                 "code, protocol, and method.",
               .tls = "How many HTTP requests with TLS processed on an entrypoint, partitioned by TLS Version and TLS "
                      "cipher Used.",
               .total = "How many HTTP requests processed on an entrypoint, partitioned by status code, protocol, and "
                        "method.",
               .responses_bytes = "The total size of responses in bytes handled by an entrypoint, partitioned by "
                                  "status code, protocol, and method."});
  if (!m.open_connections.empty()) {
    AppendHeader(out, "traefik_open_connections", "How many open connections exist, by entryPoint and protocol",
                 "gauge");
    for (const auto& [ep, n] : m.open_connections)
      AppendSample(out, "traefik_open_connections", {{"entrypoint", ep}, {"protocol", "TCP"}}, std::to_string(n));
  }
  AppendLevel(out, "traefik_router_", "router", m.router_requests, m.router_tls_requests,
              {.duration = "How long it took to process the request on a router, partitioned by service, status "
                           "code, protocol, and method.",
               .requests_bytes = "The total size of requests in bytes handled by a router, partitioned by service, "
                                 "status code, protocol, and method.",
               .tls = "How many HTTP requests with TLS are processed on a router, partitioned by service, TLS "
                      "Version, and TLS cipher Used.",
               .total = "How many HTTP requests are processed on a router, partitioned by service, status code, "
                        "protocol, and method.",
               .responses_bytes = "The total size of responses in bytes handled by a router, partitioned by service, "
                                  "status code, protocol, and method."});
  AppendLevel(out, "traefik_service_", "service", m.service_requests, m.service_tls_requests,
              {.duration = "How long it took to process the request on a service, partitioned by status code, "
                           "protocol, and method.",
               .requests_bytes = "The total size of requests in bytes received by a service, partitioned by status "
                                 "code, protocol, and method.",
               .tls = "How many HTTP requests with TLS processed on a service, partitioned by TLS version and TLS "
                      "cipher.",
               .total = "How many HTTP requests processed on a service, partitioned by status code, protocol, and "
                        "method.",
               .responses_bytes = "The total size of responses in bytes returned by a service, partitioned by status "
                                  "code, protocol, and method."});
  if (!m.service_retries.empty()) {
    AppendHeader(out, "traefik_service_retries_total", "How many request retries happened on a service.", "counter");
    for (const auto& [service, n] : m.service_retries)
      AppendSample(out, "traefik_service_retries_total", {{"service", service}}, std::to_string(n));
  }
  if (!m.server_up.empty()) {
    AppendHeader(out, "traefik_service_server_up", "service server is up, described by gauge value of 0 or 1.", "gauge");
    for (const auto& [key, up] : m.server_up)
      AppendSample(out, "traefik_service_server_up", {{"service", key.first}, {"url", key.second}}, std::to_string(up));
  }
  if (!m.tls_certs_not_after.empty()) {
    AppendHeader(out, "traefik_tls_certs_not_after", "Certificate expiration timestamp", "gauge");
    for (const auto& [key, not_after] : m.tls_certs_not_after) {
      const auto& [cn, serial, sans] = key;
      AppendSample(out, "traefik_tls_certs_not_after", {{"cn", cn}, {"sans", sans}, {"serial", serial}},
                   Number(static_cast<double>(not_after)));
    }
  }
  return out;
}

}  // namespace paddock::edge
