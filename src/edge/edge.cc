#include "edge/edge.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "edge/api.h"
#include "edge/file_provider.h"
#include "edge/http_provider.h"
#include "edge/proxy/compile.h"
#include "http/server.h"
#include "edge/rule.h"
#include "edge/runtime.h"

namespace paddock::edge {

namespace {

ProxyOptions ProxyOptionsOf(const EdgeOptions& edge) {
  ProxyOptions o{.entry_points = edge.entry_points,
                 .io_threads = edge.io_threads,
                 .router_metrics = edge.router_metrics,
                 .entry_point_metrics = edge.entry_point_metrics,
                 .service_metrics = edge.service_metrics,
                 .duration_buckets = edge.duration_buckets};
  edge.servers_transport.ApplyTo(o);
  return o;
}

// An entry point's static http.tls as the dynamic configuration writes a router's (Traefik's
// RouterTLSConfig: options, certResolver; empty ones left out).
boost::json::object ModelTls(const EntryPointTls& tls) {
  boost::json::object out;
  if (!tls.options.empty()) out["options"] = tls.options;
  if (!tls.cert_resolver.empty()) out["certResolver"] = tls.cert_resolver;
  return out;
}

}  // namespace

class Edge::Impl {
 public:
  Impl(EdgeOptions options, TaskSource& source, DrainHoldSink* holds)
      : options_(std::move(options)),
        source_(source),
        holds_(holds),
        proxy_(ProxyOptionsOf(options_)) {}
  ~Impl() { Stop(); }

  StatusOr<std::map<std::string, uint16_t>> Start() {
    if (!options_.file.empty() || !options_.file_directory.empty())
      providers_.push_back(std::make_unique<FileProvider>(
          FileProviderOptions{.filename = options_.file, .directory = options_.file_directory}));
    if (!options_.http_endpoint.empty())
      providers_.push_back(std::make_unique<HttpProvider>(HttpProviderOptions{
          .endpoint = options_.http_endpoint, .poll_interval = options_.http_poll_interval,
          .poll_timeout = options_.http_poll_timeout, .max_body_bytes = options_.http_max_body_bytes,
          .headers = options_.http_headers, .tls = options_.http_tls}));
    for (auto& provider : providers_) {
      provider->SetWake([this] { Wake(); });
      if (Status s = provider->Start(); !s.ok())
        return Status(s.code(), fmt::format("the {} provider: {}", provider->name(), s.message()));
    }
    ASSIGN_OR_RETURN(auto ports, proxy_.Start());
    bound_ports_ = ports;
    for (const EntryPointOptions& ep : options_.entry_points) {
      boost::json::object fields = EntryPointDefaults();
      // Traefik's static http fields in its order: redirections, middlewares, tls, then the rest.
      boost::json::object http_fields;
      if (ep.redirect) {
        http_fields["redirections"] = boost::json::object{{"entryPoint", boost::json::object{
                                                                      {"to", ep.redirect->to},
                                                                      {"scheme", ep.redirect->scheme},
                                                                      {"permanent", ep.redirect->permanent},
                                                                      {"priority", ep.redirect->priority}}}};
      }
      if (!ep.middlewares.empty()) {
        boost::json::array middlewares;
        for (const std::string& m : ep.middlewares) middlewares.emplace_back(m);
        http_fields["middlewares"] = std::move(middlewares);
      }
      if (ep.tls) http_fields["tls"] = ModelTls(*ep.tls);
      if (boost::json::value* rest = fields.if_contains("http"); rest && rest->is_object())
        for (const auto& member : rest->get_object()) http_fields[member.key()] = member.value();
      fields["http"] = std::move(http_fields);
      if (boost::json::object* http = fields["http"].if_object()) (*http)["sanitizePath"] = ep.sanitize_path;
      entry_points_.push_back(EntryPoint{ep.name, fmt::format(":{}", ports.at(ep.name)), true, std::move(fields)});
    }
    if (options_.api) {
      http::ServerOptions o;
      o.host = options_.api->host;
      o.port = options_.api->port;
      o.io_threads = 1;
      o.worker_threads = 2;
      api_ = std::make_unique<http::Server>(o, [this](const http::Request& r) {
        // Traefik's Prometheus endpoint, on the API entry point (metrics.prometheus.entryPoint
        // defaults to `traefik`).
        if (r.target == "/metrics" || r.target.starts_with("/metrics?")) {
          http::Response resp;
          if (r.method != "GET" && r.method != "HEAD") {
            resp.status = 405;
            return resp;
          }
          resp.SetHeader("Content-Type", std::string(kPrometheusContentType));
          resp.body = RenderPrometheus(Metrics());
          return resp;
        }
        return ServeApi(View(), r);
      });
      ASSIGN_OR_RETURN(uint16_t port, api_->Start());
      ports[options_.api->name] = port;
      entry_points_.push_back(EntryPoint{options_.api->name, fmt::format(":{}", port), false, EntryPointDefaults()});
    }
    started_at_ = std::chrono::system_clock::now();
    if (Status s = Rebuild(); !s.ok()) fmt::print(stderr, "paddock: edge {}: first read: {}\n", options_.edge_id, s.ToString());
    thread_ = std::thread([this] { Loop(); });
    return ports;
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (auto& provider : providers_) provider->Stop();
    if (api_) api_->Stop();
    proxy_.Stop();
  }

  void Wake() {
    {
      std::lock_guard lock(mu_);
      wake_ = true;
    }
    cv_.notify_all();
  }

  Status Rebuild();

  EdgeSnapshot Snapshot() const {
    std::lock_guard lock(mu_);
    EdgeSnapshot s = snapshot_;
    for (const auto& [arn, held] : held_)
      for (const auto& server : held.fenced)
        if (server->in_flight() > 0 || !held.released)
          s.drains.push_back({arn, server->url(), server->in_flight(), held.since, held.since + held.drain_timeout});
    return s;
  }

  const Proxy& proxy() const { return proxy_; }

  MetricsSnapshot Metrics() const {
    MetricsSnapshot m = proxy_.Metrics();
    std::lock_guard lock(mu_);
    m.config_reloads = reloads_;
    m.config_last_reload_success = last_reload_success_;
    m.drain_seconds = drain_seconds_;
    m.drain_timeouts = drain_timeouts_;
    return m;
  }

  // What the API shows now: the runtime with each server's health (UP once a probe passed or when
  // unchecked; DOWN; absent while its first probe is pending).
  ApiView View() const {
    ApiView view;
    std::shared_ptr<const Table> table;
    {
      std::lock_guard lock(mu_);
      view.runtime = runtime_;
      table = table_for_api_;
    }
    if (table) {
      for (const auto& [name, backend] : table->backends) {
        auto it = view.runtime.services.find(name);
        if (it == view.runtime.services.end()) continue;
        it->second.server_status.clear();
        for (const Backend::Server& s : backend->servers) {
          const Health h = s.state->health();
          if (h == Health::kPending || s.state->fenced()) continue;
          it->second.server_status[s.state->url()] = h == Health::kDown ? ServerStatus::kDown : ServerStatus::kUp;
        }
      }
    }
    view.entry_points = entry_points_;
    view.version = options_.version;
    view.start_date = started_at_;
    // Traefik names the metrics backend that is on; ours, Prometheus on /metrics, always is.
    view.metrics = "Prometheus";
    std::vector<std::string> kinds = {"ecs"};
    for (const auto& provider : providers_) kinds.push_back(provider->name());
    view.providers = OverviewProviders(kinds);
    view.drains = Snapshot().drains;
    return view;
  }

 private:
  // One task the edge holds: routed now, or fenced and draining.
  struct Held {
    std::chrono::milliseconds drain_timeout{0};
    bool routed = false;
    bool released = false;
    int draining = 0;  // fenced servers with requests still in flight
    std::vector<std::shared_ptr<ServerState>> fenced;
    std::chrono::system_clock::time_point since;  // when its first server was fenced
  };

  void Loop();
  void PutHolds();
  void OnDrained(const std::string& task_arn);  // any thread (the proxy's)

  const EdgeOptions options_;
  TaskSource& source_;
  DrainHoldSink* const holds_;
  Proxy proxy_;
  ServerRegistry registry_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                   // GUARDED_BY(mu_)
  bool wake_ = false;                   // GUARDED_BY(mu_)
  std::deque<std::string> to_release_;  // GUARDED_BY(mu_): drained tasks, released by the loop
  std::map<std::string, Held> held_;    // GUARDED_BY(mu_)
  EdgeSnapshot snapshot_;               // GUARDED_BY(mu_)
  RuntimeConfig runtime_;               // GUARDED_BY(mu_): the last rebuild's, for the API
  std::shared_ptr<const Table> table_for_api_;  // GUARDED_BY(mu_)
  uint64_t reloads_ = 0;                        // GUARDED_BY(mu_): tables swapped in
  std::optional<double> last_reload_success_;   // GUARDED_BY(mu_): unix seconds
  Histogram drain_seconds_ = Histogram::DrainDurations();  // GUARDED_BY(mu_): fence -> release
  uint64_t drain_timeouts_ = 0;                 // GUARDED_BY(mu_)
  std::vector<EntryPoint> entry_points_;  // set by Start
  std::map<std::string, uint16_t> bound_ports_;  // set by Start: the proxy's entry points
  std::chrono::system_clock::time_point started_at_;
  std::unique_ptr<http::Server> api_;
  std::vector<std::unique_ptr<ConfigProvider>> providers_;  // file, http: set by Start

  std::mutex rebuild_mu_;  // one rebuild at a time; guards the two below
  std::shared_ptr<const Table> current_;
  EcsBuild last_ecs_;  // the last good ecs read's, kept while the ecs provider fails
  std::map<const ServerState*, std::string> task_of_;  // the current table's servers' tasks
};

Status Edge::Impl::Rebuild() {
  std::lock_guard rebuild_lock(rebuild_mu_);
  StatusOr<TaskRead> read = source_.Read();
  if (!read.ok() && providers_.empty()) {
    std::lock_guard lock(mu_);
    snapshot_.errors = {fmt::format("ecs provider: {}", read.status().message())};
    return read.status();
  }
  // With other providers a failed ecs read still rebuilds (their changes go on), on the last good
  // ecs configuration.
  std::vector<std::string> errors;
  if (read.ok()) {
    last_ecs_ = BuildEcsConfiguration(read->tasks, options_.ecs);
    errors = read->errors;
    errors.insert(errors.end(), last_ecs_.errors.begin(), last_ecs_.errors.end());
  } else {
    errors.push_back(fmt::format("ecs provider: {}", read.status().message()));
  }
  const EcsBuild& build = last_ecs_;
  std::vector<ProviderConfiguration> configurations = {{"ecs", build.config}};
  bool every_provider_read = read.ok();  // traefik_config_last_reload_success
  for (const auto& provider : providers_) {
    StatusOr<boost::json::object> config = provider->Current();
    if (config.ok()) {
      configurations.push_back({provider->name(), std::move(*config)});
    } else {
      errors.push_back(fmt::format("{} provider: {}", provider->name(), config.status().message()));
      every_provider_read = false;
    }
  }

  boost::json::object internal = EntryPointRedirections(options_.entry_points, bound_ports_, errors);
  if (!internal.empty()) configurations.push_back({"internal", std::move(internal)});

  std::vector<std::string> entry_points;
  for (const EntryPoint& ep : entry_points_) entry_points.push_back(ep.name);
  std::map<std::string, EntryPointModel> models;  // Traefik's entry-point models
  for (const EntryPointOptions& ep : options_.entry_points) {
    if (!ep.tls && ep.middlewares.empty()) continue;
    EntryPointModel& model = models[ep.name];
    if (ep.tls) model.tls = ModelTls(*ep.tls);
    model.middlewares = ep.middlewares;
  }
  RuntimeConfig runtime = BuildRuntime(configurations, entry_points, DefaultEntryPoints(entry_points_),
                                       [](std::string_view rule) -> std::string {
                                         auto parsed = Rule::Parse(rule);
                                         return parsed.ok() ? std::string() : std::string(parsed.status().message());
                                       },
                                       {}, CheckTlsOptionsJson, models);
  CompileResult compiled = Compile(runtime, registry_);
  errors.insert(errors.end(), compiled.errors.begin(), compiled.errors.end());

  // Which task each server of the new table is, and each task's drain timeout.
  std::map<std::pair<std::string, std::string>, const EcsServer*> by_url;
  for (const EcsServer& s : build.servers) by_url[{s.service + "@ecs", s.url}] = &s;
  std::map<const ServerState*, std::string> task_of;
  std::map<std::string, std::chrono::milliseconds> routed;
  for (const auto& [name, backend] : compiled.table->backends) {
    for (const Backend::Server& server : backend->servers) {
      auto it = by_url.find({backend->name, server.state->url()});
      if (it == by_url.end()) continue;
      task_of[server.state.get()] = it->second->task_arn;
      auto timeout = it->second->drain_timeout_ms ? std::chrono::milliseconds(*it->second->drain_timeout_ms)
                                                  : options_.drain_timeout;
      auto [slot, fresh] = routed.emplace(it->second->task_arn, timeout);
      if (!fresh) slot->second = std::max(slot->second, timeout);
    }
  }

  // Hold what the new table routes to before it can route there.
  {
    std::lock_guard lock(mu_);
    for (auto& [arn, held] : held_) held.routed = false;
    for (const auto& [arn, timeout] : routed) {
      Held& held = held_[arn];
      held.routed = true;
      held.released = false;
      held.drain_timeout = timeout;
    }
  }
  PutHolds();
  proxy_.SetTable(compiled.table);

  // Fence the servers the new table no longer routes to; their tasks' holds go once they drain.
  std::vector<std::pair<std::shared_ptr<ServerState>, std::string>> leaving;
  if (current_) {
    for (const auto& [name, backend] : current_->backends)
      for (const Backend::Server& server : backend->servers)
        if (!task_of.count(server.state.get()))
          if (auto it = task_of_.find(server.state.get()); it != task_of_.end())
            leaving.emplace_back(server.state, it->second);
  }
  std::vector<std::string> release_now;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::system_clock::now();
    for (auto& [state, arn] : leaving) {
      if (state->fenced()) continue;
      Held& held = held_[arn];
      if (held.fenced.empty()) held.since = now;
      if (held.drain_timeout.count() == 0) held.drain_timeout = options_.drain_timeout;
      held.fenced.push_back(state);
      ++held.draining;
    }
    // Tasks that left with nothing in flight anywhere: released at once (below, outside the lock).
    for (auto& [arn, held] : held_)
      if (!held.routed && held.draining == 0 && !held.released) release_now.push_back(arn);
    snapshot_.generation++;
    ++reloads_;
    if (every_provider_read)
      last_reload_success_ =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // Logged once each, not on every rebuild.
    for (const std::string& e : errors)
      if (std::find(snapshot_.errors.begin(), snapshot_.errors.end(), e) == snapshot_.errors.end())
        fmt::print(stderr, "paddock: edge {}: {}\n", options_.edge_id, e);
    snapshot_.errors = errors;
    runtime_ = runtime;
    table_for_api_ = compiled.table;
  }
  for (auto& [state, arn] : leaving)
    if (!state->fenced()) state->Fence([this, task = arn] { OnDrained(task); });
  for (const std::string& arn : release_now) OnDrained(arn);
  current_ = compiled.table;
  task_of_ = std::move(task_of);
  registry_.Collect();
  return read.ok() ? OkStatus() : read.status();
}

void Edge::Impl::OnDrained(const std::string& task_arn) {
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(task_arn);
    if (it == held_.end()) return;
    Held& held = it->second;
    if (held.draining > 0) --held.draining;
    if (held.draining > 0 || held.routed || held.released) return;
    held.released = true;
    if (!held.fenced.empty())
      drain_seconds_.Observe(std::chrono::duration<double>(std::chrono::system_clock::now() - held.since).count());
    to_release_.push_back(task_arn);
  }
  cv_.notify_all();
}

void Edge::Impl::PutHolds() {
  if (!holds_) return;
  std::vector<DrainHoldSink::Hold> holds;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::system_clock::now();
    for (auto it = held_.begin(); it != held_.end();) {
      Held& held = it->second;
      // Released, or drained past its timeout (the agent has gone on): no longer held.
      const bool expired = !held.routed && !held.fenced.empty() && now > held.since + held.drain_timeout;
      if (!held.routed && (held.released || expired)) {
        if (held.draining == 0 || expired) {
          if (expired && held.draining > 0 && !held.released) ++drain_timeouts_;
          it = held_.erase(it);
          continue;
        }
      }
      if (!held.released) holds.push_back({it->first, held.drain_timeout});
      ++it;
    }
  }
  if (Status s = holds_->Put(options_.edge_id, holds, options_.hold_lease); !s.ok())
    fmt::print(stderr, "paddock: edge {}: putting {} drain hold(s): {}\n", options_.edge_id, holds.size(), s.ToString());
}

void Edge::Impl::Loop() {
  using Clock = std::chrono::steady_clock;
  auto next_read = Clock::now() + options_.resync;
  const auto beat = std::max(options_.hold_lease / 3, std::chrono::milliseconds(100));
  auto next_beat = Clock::now() + beat;
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_until(lock, std::min(next_read, next_beat), [&] { return stop_ || wake_ || !to_release_.empty(); });
    if (stop_) break;
    std::deque<std::string> release;
    release.swap(to_release_);
    const bool read = wake_ || Clock::now() >= next_read;
    wake_ = false;
    lock.unlock();
    for (const std::string& arn : release) {
      if (!holds_) continue;
      if (Status s = holds_->Release(options_.edge_id, arn); !s.ok())
        fmt::print(stderr, "paddock: edge {}: releasing the drain hold of {}: {}\n", options_.edge_id, arn, s.ToString());
    }
    if (read) {
      const bool ok = Rebuild().ok();
      next_read = Clock::now() + (ok ? options_.resync : std::chrono::milliseconds(1000));
    }
    if (!release.empty() || Clock::now() >= next_beat) {
      PutHolds();
      next_beat = Clock::now() + beat;
    }
    lock.lock();
  }
}

boost::json::object EntryPointRedirections(const std::vector<EntryPointOptions>& entry_points,
                                           const std::map<std::string, uint16_t>& bound_ports,
                                           std::vector<std::string>& errors) {
  boost::json::object routers, middlewares;
  for (const EntryPointOptions& ep : entry_points) {
    if (!ep.redirect) continue;
    const EntryPointRedirect& r = *ep.redirect;
    std::string port;
    if (r.to.size() > 1 && r.to.front() == ':' &&
        std::all_of(r.to.begin() + 1, r.to.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      port = r.to.substr(1);
    } else if (auto it = bound_ports.find(r.to); it != bound_ports.end()) {
      port = std::to_string(it->second);
    } else {
      errors.push_back(fmt::format("entry point {}: unable to create the redirection: 'to' entry point field "
                                   "references a non-existing entry point: {}",
                                   ep.name, r.to));
      continue;
    }
    const std::string router = Normalize(ep.name + "-to-" + r.to);
    const std::string middleware = "redirect-" + router;
    routers[router] = boost::json::object{{"entryPoints", boost::json::array{boost::json::string(ep.name)}},
                                          {"middlewares", boost::json::array{boost::json::string(middleware)}},
                                          {"service", "noop@internal"},
                                          {"rule", "HostRegexp(`^.+$`)"},
                                          {"ruleSyntax", "default"},
                                          {"priority", r.priority}};
    middlewares[middleware] = boost::json::object{
        {"redirectScheme", boost::json::object{{"scheme", r.scheme}, {"port", port}, {"permanent", r.permanent}}}};
  }
  if (routers.empty()) return {};
  return boost::json::object{
      {"http", boost::json::object{{"routers", std::move(routers)},
                                   {"services", boost::json::object{{"noop", boost::json::object{}}}},
                                   {"middlewares", std::move(middlewares)}}}};
}

Edge::Edge(EdgeOptions options, TaskSource& source, DrainHoldSink* holds)
    : impl_(std::make_unique<Impl>(std::move(options), source, holds)) {}
Edge::~Edge() = default;
StatusOr<std::map<std::string, uint16_t>> Edge::Start() { return impl_->Start(); }
void Edge::Stop() { impl_->Stop(); }
void Edge::Wake() { impl_->Wake(); }
Status Edge::Rebuild() { return impl_->Rebuild(); }
EdgeSnapshot Edge::Snapshot() const { return impl_->Snapshot(); }
const Proxy& Edge::proxy() const { return impl_->proxy(); }
MetricsSnapshot Edge::Metrics() const { return impl_->Metrics(); }

}  // namespace paddock::edge
