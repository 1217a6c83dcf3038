#include "cli/edge_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli/credentials.h"
#include "common/clock.h"
#include "ecs/drain/drain_holds.h"
#include "ecs/drain/edge_id.h"
#include "edge/dynamic.h"
#include "edge/proxy/entry_point_flags.h"
#include "edge/remote_holds.h"
#include "http/client.h"

namespace paddock::cli {

StatusOr<edge::EntryPointOptions> ParseAddress(std::string_view name, std::string_view address) {
  edge::EntryPointOptions ep;
  ep.name = std::string(name);
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos)
    return InvalidArgument(fmt::format("'{}' is not [HOST]:PORT", address));
  std::string_view host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  ep.host = host.empty() ? "0.0.0.0" : std::string(host);
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || end != port.data() + port.size() || p > 65535)
    return InvalidArgument(fmt::format("'{}': the port must be 0 to 65535", address));
  ep.port = static_cast<uint16_t>(p);
  return ep;
}

StatusOr<edge::EntryPointOptions> ParseEntryPoint(std::string_view spec) {
  size_t eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return InvalidArgument(fmt::format("--entrypoint '{}' is not NAME=[HOST]:PORT", spec));
  std::string_view name = spec.substr(0, eq);
  for (char ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_')
      return InvalidArgument(fmt::format("--entrypoint '{}': the name is letters, digits, - and _", spec));
  return ParseAddress(name, spec.substr(eq + 1));
}

void AddEdgeCommand(CLI::App& app, EdgeCommand& c) {
  c.cmd = app.add_subcommand("edge", "Run an edge router: Traefik's ECS-provider labels and API, with drain-before-stop");
  c.cmd->add_option("--endpoint", c.endpoint, "The ECS endpoint to read tasks from (default http://127.0.0.1:4566)");
  c.cmd->add_option("--entrypoint", c.entry_points,
                    "An entry point NAME=[HOST]:PORT, as Traefik's (repeatable; default web=127.0.0.1:8000)");
  c.cmd->add_option("--api", c.api, "[HOST]:PORT of the API, ping and dashboard (default 127.0.0.1:8081)");
  c.cmd->add_flag("--no-api", c.no_api, "Serve no API");
  c.cmd->add_option("--cluster", c.clusters, "A cluster to read (repeatable; default: default)");
  c.cmd->add_flag("--auto-discover-clusters", c.auto_discover_clusters, "Read every cluster (ListClusters)");
  c.cmd->add_option("--exposed-by-default", c.exposed_by_default,
                    "Route containers without traefik.enable=true (default true, as Traefik)");
  c.cmd->add_option("--constraints", c.constraints, "Only containers whose labels match, e.g. Label(`a`,`b`)");
  c.cmd->add_option("--default-rule", c.default_rule, "The rule of a container's implicit router");
  c.cmd->add_flag("--healthy-tasks-only", c.healthy_tasks_only, "Route only tasks whose healthStatus is HEALTHY");
  c.cmd->add_option("--refresh-seconds", c.refresh_seconds, "Seconds between full reads (default 15)")
      ->check(CLI::Range(1, 3600));
  c.cmd->add_option("--io-threads", c.io_threads, "Threads serving the entry points (default 2)")
      ->check(CLI::Range(1, 64));
  c.cmd->add_option("--edge-id", c.edge_id,
                    "This replica's name in the drain holds: 1-64 of [A-Za-z0-9._-] (default edge-<host>-<pid>)");
  c.cmd->add_option("--credentials", c.credentials_file, "AWS credentials file (default: the environment, then ~/.aws)");
  c.cmd->add_option("--profile", c.profile, "Profile in the credentials file (default paddock)");
  c.cmd->add_option("--region", c.region, "Region to sign for (default us-east-1)");
  auto* file = c.cmd->add_option("--providers.file.filename", c.file_filename,
                                 "Traefik's file provider: a dynamic-configuration file (.yml, .yaml, .toml)");
  c.cmd->add_option("--providers.file.directory", c.file_directory,
                    "Traefik's file provider: every .yml/.yaml/.toml file under a directory")
      ->excludes(file);
  // Traefik reads its flags in any case (--providers.http.pollInterval): so do these.
  c.cmd->add_option("--providers.http.endpoint", c.http.endpoint,
                    "Traefik's http provider: an http:// or https:// endpoint serving dynamic configuration")
      ->ignore_case();
  c.cmd->add_option("--providers.http.pollinterval", c.http.poll_interval,
                    "How often the http provider polls (a Go duration; default 5s)")
      ->ignore_case();
  c.cmd->add_option("--providers.http.polltimeout", c.http.poll_timeout,
                    "How long one poll of the http provider may take (a Go duration; default 5s)")
      ->ignore_case();
  c.cmd->add_option("--providers.http.tls.ca", c.http.tls_ca,
                    "The http provider's CA (a PEM file, or PEM text), trusted instead of the system's")
      ->ignore_case();
  c.cmd->add_option("--providers.http.tls.cert", c.http.tls_cert,
                    "The http provider's client certificate for mTLS (a PEM file, or PEM text); needs .key")
      ->ignore_case();
  c.cmd->add_option("--providers.http.tls.key", c.http.tls_key,
                    "The client certificate's private key (a PEM file, or PEM text); needs .cert")
      ->ignore_case();
  c.cmd->add_flag("--providers.http.tls.insecureskipverify", c.http.tls_insecure_skip_verify,
                  "Accept any certificate the http provider's endpoint presents (default false)")
      ->ignore_case();
  c.cmd->add_option("--providers.http.maxresponsebodysize", c.http.max_response_body_size,
                    "The largest body the http provider takes, in bytes (default -1: Traefik's no limit; "
                    "Paddock bounds it at 16 MiB either way)")
      ->ignore_case();
  c.cmd->add_flag("--metrics.prometheus.addrouterslabels", c.add_routers_labels,
                  "Traefik's: the traefik_router_* series on /metrics, by router and service (default false)")
      ->ignore_case();
  c.cmd->add_flag("--metrics.prometheus.addentrypointslabels", c.add_entry_points_labels,
                  "Traefik's: the traefik_entrypoint_* series on /metrics (default true; =false leaves them out)")
      ->ignore_case();
  c.cmd->add_flag("--metrics.prometheus.addserviceslabels", c.add_services_labels,
                  "Traefik's: the traefik_service_* series on /metrics (default true; =false leaves them out)")
      ->ignore_case();
  c.cmd->add_option("--metrics.prometheus.buckets", c.buckets,
                    "Traefik's: the request-duration histograms' buckets, seconds, ascending (default 0.1,0.3,1.2,5)")
      ->ignore_case();
  // Traefik's own static flags for entry points name the entry point inside the flag
  // (--entrypoints.<name>.http.sanitizepath, .http.redirections.entrypoint.*), and its
  // --serversTransport.* flags are many: they arrive as extras, and edge/proxy/entry_point_flags.h
  // checks them all.
  c.cmd->allow_extras();
  c.cmd->footer(
      "Also, as Traefik's flags: --entrypoints.NAME.http.sanitizepath=false (default true); "
      "--entrypoints.NAME.http.redirections.entrypoint.to=OTHER [.scheme=https] [.permanent=true] "
      "[.priority=N]; --entrypoints.NAME.http.tls[=BOOL] [.options=NAME] [.certresolver=NAME] and "
      "--entrypoints.NAME.http.middlewares=M@PROVIDER[,...] (the entry point's model: every router on it gets that "
      "tls section when it has none, and those middlewares first); --entrypoints.NAME.transport.respondingtimeouts.{readtimeout,writetimeout,idletimeout}=DURATION "
      "(defaults 60s, 0, 180s; 0: none); --serverstransport.forwardingtimeouts.{dialtimeout,responseheadertimeout,"
      "idleconntimeout}=DURATION (defaults 30s, 0, 90s); --serverstransport.maxidleconnsperhost=N (default 200; "
      "below 0: none kept); --serverstransport.insecureskipverify[=BOOL] and --serverstransport.rootcas=FILE[,FILE] "
      "(how https servers are verified; default: the system's roots); --providers.http.headers.NAME=VALUE (repeatable: a header on every poll of the http "
      "provider)");
}

namespace {

int Fail(std::string_view what, const Status& s) {
  fmt::print(stderr, "paddock edge: {}: {}\n", what, s.message().empty() ? s.ToString() : s.message());
  return 1;
}

StatusOr<std::pair<std::string, uint16_t>> EndpointHostPort(std::string_view url) {
  std::string_view rest = url;
  if (rest.rfind("http://", 0) == 0) rest.remove_prefix(7);
  else return InvalidArgument(fmt::format("--endpoint '{}' must be http://HOST:PORT", url));
  rest = rest.substr(0, rest.find('/'));
  ASSIGN_OR_RETURN(edge::EntryPointOptions ep, ParseAddress("endpoint", rest));
  if (ep.port == 0) return InvalidArgument(fmt::format("--endpoint '{}' has no port", url));
  return std::make_pair(ep.host, ep.port);
}

}  // namespace

std::string DefaultEdgeId(std::string_view host, int pid) {
  std::string id = fmt::format("edge-{}-{}", host, pid);
  for (char& ch : id)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '-';
  // The pid is what tells two replicas of one host apart: a long host name gives way, not it.
  if (id.size() > ecs::drain::kMaxEdgeIdLength) {
    const std::string pid_tail = fmt::format("-{}", pid);
    id = id.substr(0, ecs::drain::kMaxEdgeIdLength - pid_tail.size()) + pid_tail;
  }
  return id;
}

Status HttpProviderFlags::Apply(edge::EdgeOptions& options, Names names) const {
  auto positive = [](std::string_view flag, std::string_view text) -> StatusOr<std::chrono::milliseconds> {
    auto d = edge::ParseGoDuration(text);
    if (!d.ok()) return InvalidArgument(fmt::format("{}: {}", flag, d.status().message()));
    if (d->count() <= 0) return InvalidArgument(fmt::format("{} must be greater than 0", flag));
    return std::chrono::ceil<std::chrono::milliseconds>(*d);
  };
  ASSIGN_OR_RETURN(std::chrono::milliseconds interval, positive(names.poll_interval, poll_interval));
  ASSIGN_OR_RETURN(std::chrono::milliseconds timeout, positive(names.poll_timeout, poll_timeout));
  int64_t max_body = 0;
  if (auto [end, ec] = std::from_chars(max_response_body_size.data(),
                                       max_response_body_size.data() + max_response_body_size.size(), max_body);
      ec != std::errc() || end != max_response_body_size.data() + max_response_body_size.size() || max_body < -1) {
    return InvalidArgument(fmt::format("{} must be a number of bytes, or -1 for no limit; got \"{}\"",
                                       names.max_response_body_size, max_response_body_size));
  }
  options.http_endpoint = endpoint;
  options.http_poll_interval = interval;
  options.http_poll_timeout = timeout;
  options.http_max_body_bytes = max_body < 0 ? edge::kMaxHttpProviderBody
                                             : std::min(static_cast<uint64_t>(max_body), edge::kMaxHttpProviderBody);
  options.http_headers = headers;
  if (!tls_ca.empty() || !tls_cert.empty() || !tls_key.empty() || tls_insecure_skip_verify)
    options.http_tls = edge::HttpProviderTls{
        .ca = tls_ca, .cert = tls_cert, .key = tls_key, .insecure_skip_verify = tls_insecure_skip_verify};
  return OkStatus();
}

int RunEdgeCommand(const EdgeCommand& c) {
  auto endpoint = EndpointHostPort(c.endpoint);
  if (!endpoint.ok()) return Fail("endpoint", endpoint.status());
  edge::EdgeOptions options;
  options.entry_points.clear();
  for (const std::string& spec : c.entry_points) {
    auto ep = ParseEntryPoint(spec);
    if (!ep.ok()) return Fail("entry point", ep.status());
    options.entry_points.push_back(*ep);
  }
  if (options.entry_points.empty()) options.entry_points.push_back({"web", "127.0.0.1", 8000});
  std::vector<std::string> extras = c.cmd->remaining();
  HttpProviderFlags http = c.http;
  if (Status s = edge::TakeHttpHeaderFlags(extras, http.headers); !s.ok()) return Fail("--providers.http.headers", s);
  if (Status s = edge::TakeServersTransportFlags(extras, options.servers_transport); !s.ok())
    return Fail("serversTransport", s);
  if (Status s = edge::ApplyEntryPointFlags(extras, options.entry_points); !s.ok())
    return Fail("entry point", s);
  auto credentials = ResolveCredentials(c.credentials_file, c.profile);
  if (!credentials.ok()) return Fail("credentials", credentials.status());
  if (!c.no_api) {
    auto api = ParseAddress("traefik", c.api);
    if (!api.ok()) return Fail("--api", api.status());
    options.api = *api;
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  options.edge_id = c.edge_id.empty() ? DefaultEdgeId(host, getpid()) : c.edge_id;
  if (Status s = ecs::drain::CheckEdgeId(options.edge_id); !s.ok()) return Fail("--edge-id", s);
  options.ecs.exposed_by_default = c.exposed_by_default;
  options.ecs.constraints = c.constraints;
  options.ecs.default_rule = c.default_rule;
  options.ecs.healthy_tasks_only = c.healthy_tasks_only;
  options.resync = std::chrono::seconds(c.refresh_seconds);
  options.io_threads = c.io_threads;
  options.file = c.file_filename;
  options.file_directory = c.file_directory;
  options.router_metrics = c.add_routers_labels;
  options.entry_point_metrics = c.add_entry_points_labels;
  options.service_metrics = c.add_services_labels;
  if (!c.buckets.empty()) {
    auto buckets = edge::ParseMetricsBuckets(c.buckets);
    if (!buckets.ok()) return Fail("metrics", buckets.status());
    options.duration_buckets = *std::move(buckets);
  }
  if (Status s = http.Apply(options, {"--providers.http.pollinterval", "--providers.http.polltimeout"}); !s.ok())
    return Fail("http provider", s);
  edge::EcsApiOptions api_options{.host = endpoint->first, .port = endpoint->second, .credentials = *credentials,
                                  .region = c.region};
  if (!c.clusters.empty()) api_options.clusters = c.clusters;
  api_options.auto_discover_clusters = c.auto_discover_clusters;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  edge::EcsApiSource source(api_options);
  // This replica's own holds, under its edge id, through the control plane's holds service
  // (ecs/drain/api): a stopping task waits until every replica that routes to it has drained it.
  edge::RemoteHoldSink holds({.host = endpoint->first, .port = endpoint->second, .region = c.region,
                              .credentials = *credentials, .timeout = std::chrono::seconds(10)});
  edge::Edge edge(options, source, &holds);
  auto ports = edge.Start();
  if (!ports.ok()) return Fail("starting", ports.status());
  for (const auto& ep : options.entry_points)
    fmt::print("paddock edge: entry point {} on {}:{}\n", ep.name, ep.host, ports->at(ep.name));
  if (options.api) {
    fmt::print("paddock edge: API on http://{}:{}/api/overview\n", options.api->host, ports->at("traefik"));
    fmt::print("paddock edge: dashboard on http://{}:{}/dashboard/\n", options.api->host, ports->at("traefik"));
  }
  fmt::print("paddock edge: holding drains as edge {}\n", options.edge_id);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  edge.Stop();
  return 0;
}

namespace {

// The in-process edge's holds: straight into the node's owner, in the edge's account's scope.
class OwnerHoldSink final : public edge::DrainHoldSink {
 public:
  OwnerHoldSink(ecs::drain::DrainHolds& holds, Scope scope) : holds_(holds), scope_(std::move(scope)) {}
  Status Put(std::string_view edge_id, const std::vector<Hold>& holds, std::chrono::milliseconds lease) override {
    std::vector<ecs::drain::Hold> out;
    out.reserve(holds.size());
    for (const Hold& h : holds)  // whole seconds, rounded up: never shorter than asked
      out.push_back({h.task_arn, std::chrono::ceil<std::chrono::seconds>(h.drain_timeout)});
    auto put = holds_.Put(scope_, ecs::drain::EdgeId(std::string(edge_id)), out,
                          std::chrono::ceil<std::chrono::seconds>(lease), SystemClock::Get().Now());
    return put.ok() ? OkStatus() : put.status();
  }
  Status Release(std::string_view edge_id, std::string_view task_arn) override {
    return holds_.Release(scope_, ecs::drain::EdgeId(std::string(edge_id)), task_arn);
  }

 private:
  ecs::drain::DrainHolds& holds_;
  const Scope scope_;
};

}  // namespace

StatusOr<std::unique_ptr<InProcessEdge>> InProcessEdge::Start(const InProcessEdgeOptions& o,
                                                              ecs::drain::DrainHolds* holds) {
  std::unique_ptr<InProcessEdge> self(new InProcessEdge());
  if (holds) self->holds_ = std::make_unique<OwnerHoldSink>(*holds, o.scope);
  edge::EdgeOptions options;
  ASSIGN_OR_RETURN(edge::EntryPointOptions web, ParseAddress("web", o.web));
  options.entry_points = {web};
  if (!o.websecure.empty()) {
    ASSIGN_OR_RETURN(edge::EntryPointOptions websecure, ParseAddress("websecure", o.websecure));
    options.entry_points.push_back(websecure);
    if (o.redirect_to_websecure) options.entry_points.front().redirect = edge::EntryPointRedirect{.to = "websecure"};
  } else if (o.redirect_to_websecure) {
    return InvalidArgument("--edge-redirect-https needs --edge-websecure");
  }
  ASSIGN_OR_RETURN(edge::EntryPointOptions api, ParseAddress("traefik", o.api));
  options.api = api;
  options.edge_id = "up";
  options.drain_timeout = o.drain_timeout;
  if (!o.file.empty()) {
    std::error_code ec;
    (std::filesystem::is_directory(o.file, ec) ? options.file_directory : options.file) = o.file;
  }
  RETURN_IF_ERROR(o.http.Apply(options, kUpHttpFlagNames));
  self->source_ = std::make_unique<edge::EcsApiSource>(
      edge::EcsApiOptions{.host = o.api_host, .port = o.api_port, .credentials = o.credentials,
                          .region = o.scope.region.str(), .auto_discover_clusters = true});
  self->edge_ = std::make_unique<edge::Edge>(options, *self->source_, self->holds_.get());
  ASSIGN_OR_RETURN(auto ports, self->edge_->Start());
  self->web_port_ = ports.at("web");
  self->api_port_ = ports.at("traefik");
  const std::string host = o.api.substr(0, o.api.rfind(':'));
  if (host == "::" || host == "[::]") {
    self->api_host_ = "::1";
  } else if (!host.empty() && host != "0.0.0.0") {
    self->api_host_ = host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  }
  if (auto it = ports.find("websecure"); it != ports.end()) self->websecure_port_ = it->second;
  return self;
}

StatusOr<std::string> InProcessEdge::ApiGet(std::string_view path) const {
  http::Client client(api_host_, api_port_, std::chrono::seconds(5));
  http::Request req;
  req.method = "GET";
  req.target = std::string(path);
  ASSIGN_OR_RETURN(http::Response r, client.Send(req));
  if (r.status != 200) return Unavailable(fmt::format("the edge's API answered {} to {}", r.status, path));
  return std::move(r.body);
}

InProcessEdge::~InProcessEdge() {
  if (edge_) edge_->Stop();
}

}  // namespace paddock::cli
