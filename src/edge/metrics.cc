#include "edge/metrics.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

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

// The request families of one kind: `name_label` is "entrypoint" or "service".
void AppendRequests(std::string& out, const std::map<RequestKey, RequestSeries>& series, std::string_view prefix,
                    std::string_view name_label, std::string_view duration_help, std::string_view total_help,
                    std::string_view between = {}) {
  if (series.empty()) return;
  std::vector<std::pair<Labels, const RequestSeries*>> rows;
  for (const auto& [key, s] : series) {
    Labels labels = {{"code", key.code}, {"method", key.method}, {"protocol", key.protocol}, {name_label, key.name}};
    std::sort(labels.begin(), labels.end());
    rows.emplace_back(std::move(labels), &s);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::string duration = fmt::format("{}request_duration_seconds", prefix);
  AppendHeader(out, duration, duration_help, "histogram");
  for (const auto& [labels, s] : rows) AppendHistogram(out, duration, labels, s->duration);
  out += between;  // a family whose name sorts between the two
  const std::string total = fmt::format("{}requests_total", prefix);
  AppendHeader(out, total, total_help, "counter");
  for (const auto& [labels, s] : rows) AppendSample(out, total, labels, std::to_string(s->requests));
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
  if (counts.size() < other.counts.size()) counts.resize(other.counts.size());
  for (size_t i = 0; i < other.counts.size(); ++i) counts[i] += other.counts[i];
  count += other.count;
  sum += other.sum;
}

void RequestSeries::Merge(const RequestSeries& other) {
  requests += other.requests;
  duration.Merge(other.duration);
}

std::string_view MetricMethod(std::string_view method) {
  static constexpr std::array<std::string_view, 9> kMethods = {"GET",     "HEAD",    "POST",  "PUT",  "PATCH",
                                                               "DELETE", "CONNECT", "OPTIONS", "TRACE"};
  for (std::string_view m : kMethods)
    if (m == method) return m;
  return "EXTENSION_METHOD";
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
  std::string tls;
  if (!m.entry_point_tls_requests.empty()) {
    AppendHeader(tls, "traefik_entrypoint_requests_tls_total",
                 "How many HTTP requests with TLS processed on an entrypoint, partitioned by TLS Version and TLS cipher "
                 "Used.",
                 "counter");
    for (const auto& [key, n] : m.entry_point_tls_requests)
      AppendSample(tls, "traefik_entrypoint_requests_tls_total",
                   {{"entrypoint", std::get<0>(key)}, {"tls_cipher", std::get<2>(key)}, {"tls_version", std::get<1>(key)}},
                   std::to_string(n));
  }
  AppendRequests(out, m.entry_point_requests, "traefik_entrypoint_", "entrypoint",
                 "How long it took to process the request on an entrypoint, partitioned by status code, protocol, and method.",
                 "How many HTTP requests processed on an entrypoint, partitioned by status code, protocol, and method.",
                 tls);
  if (!m.open_connections.empty()) {
    AppendHeader(out, "traefik_open_connections", "How many open connections exist, by entryPoint and protocol",
                 "gauge");
    for (const auto& [ep, n] : m.open_connections)
      AppendSample(out, "traefik_open_connections", {{"entrypoint", ep}, {"protocol", "TCP"}}, std::to_string(n));
  }
  AppendRequests(out, m.service_requests, "traefik_service_", "service",
                 "How long it took to process the request on a service, partitioned by status code, protocol, and method.",
                 "How many HTTP requests processed on a service, partitioned by status code, protocol, and method.");
  if (!m.server_up.empty()) {
    AppendHeader(out, "traefik_service_server_up", "service server is up, described by gauge value of 0 or 1.", "gauge");
    for (const auto& [key, up] : m.server_up)
      AppendSample(out, "traefik_service_server_up", {{"service", key.first}, {"url", key.second}}, std::to_string(up));
  }
  return out;
}

}  // namespace paddock::edge
