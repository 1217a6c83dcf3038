#include "edge/proxy/compile.h"

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <set>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include "edge/dynamic.h"

namespace paddock::edge {
namespace {

namespace json = boost::json;

const json::object* Object(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key); v && v->is_object()) return &v->get_object();
  return nullptr;
}
std::string String(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
  return {};
}
std::optional<int64_t> Int(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key)) {
    if (v->is_int64()) return v->get_int64();
    if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
    if (v->is_string()) {
      int64_t n = 0;
      std::string_view s = v->get_string();
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec == std::errc() && end == s.data() + s.size()) return n;
    }
  }
  return std::nullopt;
}
std::optional<bool> Bool(const json::object& o, std::string_view key) {
  if (const json::value* v = o.if_contains(key)) {
    if (v->is_bool()) return v->get_bool();
    if (v->is_string()) {
      if (v->get_string() == "true") return true;
      if (v->get_string() == "false") return false;
    }
  }
  return std::nullopt;
}
std::optional<std::chrono::milliseconds> Duration(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v) return std::nullopt;
  std::string text = v->is_string() ? std::string(v->get_string()) : json::serialize(*v);
  auto d = ParseGoDuration(text);
  if (!d.ok()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
}

// A literal address as is; a name resolved to its first address (IPv4 first).
std::optional<std::string> Resolve(const std::string& host) {
  in6_addr six{};
  in_addr four{};
  if (inet_pton(AF_INET, host.c_str(), &four) == 1 || inet_pton(AF_INET6, host.c_str(), &six) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found) return std::nullopt;
  char text[INET6_ADDRSTRLEN] = {};
  std::optional<std::string> out;
  for (addrinfo* a = found; a && !out; a = a->ai_next) {
    if (a->ai_family == AF_INET)
      out = inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
  }
  for (addrinfo* a = found; a && !out; a = a->ai_next) {
    if (a->ai_family == AF_INET6)
      out = inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text, sizeof(text));
  }
  freeaddrinfo(found);
  return out;
}

HealthCheckConfig ParseHealthCheck(const json::object& hc) {
  HealthCheckConfig c;
  c.scheme = String(hc, "scheme");
  if (std::string path = String(hc, "path"); !path.empty()) c.path = path;
  if (std::string method = String(hc, "method"); !method.empty()) c.method = method;
  c.hostname = String(hc, "hostname");
  c.port = static_cast<int>(Int(hc, "port").value_or(0));
  c.status = static_cast<int>(Int(hc, "status").value_or(0));
  c.interval = Duration(hc, "interval").value_or(std::chrono::seconds(30));
  c.unhealthy_interval = Duration(hc, "unhealthyInterval").value_or(c.interval);
  c.timeout = Duration(hc, "timeout").value_or(std::chrono::seconds(5));
  c.follow_redirects = Bool(hc, "followRedirects").value_or(true);
  if (const json::object* headers = Object(hc, "headers"))
    for (const auto& [k, v] : *headers)
      if (v.is_string()) c.headers.emplace_back(std::string(k), std::string(v.get_string()));
  return c;
}

// loadBalancer.sticky.cookie, as Traefik reads it (path defaults to "/"; sameSite in any case).
StickyCookie ParseStickyCookie(const json::object& cookie, std::string_view service) {
  StickyCookie c;
  c.name = StickyCookieName(String(cookie, "name"), service);
  c.secure = Bool(cookie, "secure").value_or(false);
  c.http_only = Bool(cookie, "httpOnly").value_or(false);
  c.same_site = ParseSameSite(String(cookie, "sameSite"));
  c.max_age = Int(cookie, "maxAge").value_or(0);
  if (cookie.contains("path")) c.path = String(cookie, "path");
  c.domain = String(cookie, "domain");
  return c;
}

class Compiler {
 public:
  Compiler(const RuntimeConfig& runtime, ServerRegistry& registry) : runtime_(runtime), registry_(registry) {}

  CompileResult Run() {
    auto table = std::make_shared<Table>();
    for (const auto& [name, router] : runtime_.routers) {
      if (router.status == RuntimeStatus::kDisabled) continue;
      std::string why;
      std::optional<Route> route = BuildRoute(name, router, why);
      if (!route) {
        errors_.push_back(fmt::format("router {}: {}", name, why));
        continue;
      }
      // Traefik: a router with a `tls` section serves TLS connections only, one without plain ones.
      const json::value* tls = router.config.if_contains("tls");
      auto& by_entry_point = tls && !tls->is_null() ? table->tls_routes : table->routes;
      for (const std::string& ep : router.using_entry_points) {
        Route& added = by_entry_point[ep].emplace_back(*route);
        // The options Traefik's snicheck holds its requests to on this entry point.
        if (auto on_ep = runtime_.tls_options_by_router.find(ep); on_ep != runtime_.tls_options_by_router.end())
          if (auto it = on_ep->second.find(name); it != on_ep->second.end()) added.tls_options = it->second;
      }
    }
    for (auto* by_entry_point : {&table->routes, &table->tls_routes})
      for (auto& [ep, routes] : *by_entry_point)
        std::stable_sort(routes.begin(), routes.end(), [](const Route& a, const Route& b) {
          return a.priority != b.priority ? a.priority > b.priority : a.name < b.name;
        });
    table->backends = std::move(backends_);
    table->certificates = LoadCertificates();
    return CompileResult{std::move(table), std::move(errors_)};
  }

 private:
  std::optional<Route> BuildRoute(const std::string& name, const RouterInfo& router, std::string& why) {
    auto rule = Rule::Parse(String(router.config, "rule"));
    if (!rule.ok()) {
      why = std::string(rule.status().message());
      return std::nullopt;
    }
    Route route{.name = name, .rule = *rule, .priority = 0, .chain = {}, .backend = nullptr};
    route.priority = Int(router.config, "priority").value_or(rule->DefaultPriority());
    if (const json::value* mws = router.config.if_contains("middlewares"); mws && mws->is_array()) {
      for (const json::value& m : mws->get_array()) {
        if (!m.is_string()) continue;
        if (!AddMiddleware(std::string(m.get_string()), route.chain, 0, why)) return std::nullopt;
      }
    }
    // Traefik's noop@internal (an entry point's redirection router): its middlewares answer.
    if (router.service == "noop@internal") return route;
    std::shared_ptr<const Backend> backend = BackendFor(router.service, why);
    if (!backend) return std::nullopt;
    route.backend = std::move(backend);
    return route;
  }

  bool AddMiddleware(const std::string& name, std::vector<Step>& chain, int depth, std::string& why) {
    if (depth > 10) {
      why = fmt::format("middleware {}: chains nested too deep (a cycle?)", name);
      return false;
    }
    auto it = runtime_.middlewares.find(name);
    if (it == runtime_.middlewares.end() || it->second.status == RuntimeStatus::kDisabled) {
      why = fmt::format("middleware \"{}\" does not exist", name);
      return false;
    }
    auto built = BuildMiddleware(it->second.config);
    if (!built.ok()) {
      why = fmt::format("middleware {}: {}", name, built.status().message());
      return false;
    }
    if (!built->chain.empty()) {
      for (const std::string& member : built->chain)
        if (!AddMiddleware(QualifiedName(member, it->second.provider), chain, depth + 1, why)) return false;
      return true;
    }
    std::shared_ptr<const ForwardAuth> auth;
    if (built->forward_auth) {
      auto fa = ForwardAuth::Build(*built->forward_auth);
      if (!fa.ok()) {
        why = fmt::format("middleware {}: {}", name, fa.status().message());
        return false;
      }
      auth = std::move(*fa);
    }
    std::shared_ptr<const Backend> error_backend;
    if (built->errors) {
      error_backend = BackendFor(QualifiedName(built->errors->service, it->second.provider), why);
      if (!error_backend) return false;
    }
    chain.push_back(Step{.name = name, .middleware = built->middleware, .forward_auth = built->forward_auth,
                         .auth = std::move(auth), .retry = built->retry, .buffering = built->buffering,
                         .compress = built->compress, .errors = built->errors,
                         .error_backend = std::move(error_backend)});
    return true;
  }

  std::shared_ptr<const Backend> BackendFor(const std::string& service, std::string& why) {
    if (auto it = backends_.find(service); it != backends_.end()) return it->second;
    auto info = runtime_.services.find(service);
    if (info == runtime_.services.end()) {
      why = fmt::format("the service \"{}\" does not exist", service);
      return nullptr;
    }
    if (const json::object* weighted = Object(info->second.config, "weighted"))
      return WeightedBackend(service, info->second.provider, *weighted, why);
    if (const json::object* failover = Object(info->second.config, "failover"))
      return FailoverBackend(service, info->second.provider, *failover, why);
    if (const json::object* hrw = Object(info->second.config, "highestRandomWeight"))
      return WeightedBackend(service, info->second.provider, *hrw, why, /*hrw=*/true);
    if (const json::object* mirroring = Object(info->second.config, "mirroring"))
      return MirroringBackend(service, info->second.provider, *mirroring, why);
    const json::object* lb = Object(info->second.config, "loadBalancer");
    if (!lb) {
      why = fmt::format("service {}: only loadBalancer, weighted, mirroring, failover and highestRandomWeight services "
                        "are served",
                        service);
      return nullptr;
    }
    auto backend = std::make_shared<Backend>();
    backend->name = service;
    backend->pass_host_header = Bool(*lb, "passHostHeader").value_or(true);
    // The runtime refused any other name (edge/runtime.cc); empty is wrr.
    const std::string strategy = String(*lb, "strategy");
    backend->strategy = strategy == "p2c"         ? LbStrategy::kP2c
                        : strategy == "hrw"       ? LbStrategy::kHrw
                        : strategy == "leasttime" ? LbStrategy::kLeastTime
                                                  : LbStrategy::kWrr;
    if (const json::object* hc = Object(*lb, "healthCheck")) backend->health_check = ParseHealthCheck(*hc);
    // The runtime qualified it and put the service in error when it names none (edge/runtime.h).
    if (std::string transport = String(*lb, "serversTransport"); !transport.empty() && transport != "default@internal")
      backend->transport = TransportFor(QualifiedName(transport, info->second.provider));
    // sticky.cookie present (even empty, as the label "sticky.cookie=true" makes it) turns it on.
    if (const json::object* sticky = Object(*lb, "sticky"))
      if (const json::object* cookie = Object(*sticky, "cookie")) backend->sticky = ParseStickyCookie(*cookie, service);
    if (const json::value* servers = lb->if_contains("servers"); servers && servers->is_array()) {
      for (const json::value& s : servers->get_array()) {
        if (!s.is_object()) continue;
        const std::string url = String(s.get_object(), "url");
        auto address = ParseServerUrl(url);
        if (!address.ok()) {
          errors_.push_back(fmt::format("service {}: server {}: {}", service, url, address.status().message()));
          continue;
        }
        if (address->scheme != "http" && address->scheme != "https") {
          errors_.push_back(fmt::format("service {}: server {}: only http and https servers are served", service, url));
          continue;
        }
        std::optional<std::string> ip = Resolve(address->host);
        if (!ip) {
          errors_.push_back(fmt::format("service {}: server {}: cannot resolve {}", service, url, address->host));
          continue;
        }
        const int weight = static_cast<int>(Int(s.get_object(), "weight").value_or(1));
        backend->servers.push_back({registry_.Get(service, url, *ip, address->port, address->scheme == "https",
                                                  address->host),
                                    std::clamp(weight, 0, 1000)});
      }
    }
    backends_[service] = backend;
    return backend;
  }

  // The service `name` that the service `service` (of `provider`) is made of, compiled (qualified
  // with that provider when it names none); null with `why` in the parent's words when it cannot be.
  std::shared_ptr<const Backend> ChildFor(const std::string& service, const std::string& provider,
                                          const std::string& name, std::string& why) {
    std::string child_why;
    std::shared_ptr<const Backend> child = BackendFor(QualifiedName(name, provider), child_why);
    if (!child) why = fmt::format("service {}: building HTTP service \"{}\": {}", service, name, child_why);
    return child;
  }

  // Traefik's weighted service: its children compiled by name (qualified with this service's
  // provider when they name none), those of weight <= 0 left out as Traefik's balancer leaves
  // them. A child that does not exist or cannot be built, a cycle, or nesting deeper than
  // kMaxNesting fails the service (the runtime reports the first two in Traefik's words first).
  // `hrw`: Traefik's highestRandomWeight service, the same children (name, weight) chosen by
  // rendezvous hashing of the client's address instead (edge/proxy/table.h).
  std::shared_ptr<const Backend> WeightedBackend(const std::string& service, const std::string& provider,
                                                 const json::object& weighted, std::string& why, bool hrw = false) {
    if (!Enter(service, why)) return nullptr;
    Leave leave{building_};
    auto backend = std::make_shared<Backend>();
    backend->name = service;
    backend->weighted = !hrw;
    backend->hrw = hrw;
    if (const json::object* sticky = Object(weighted, "sticky"))
      if (const json::object* cookie = Object(*sticky, "cookie")) backend->sticky = ParseStickyCookie(*cookie, service);
    if (const json::value* children = weighted.if_contains("services"); children && children->is_array()) {
      for (const json::value& c : children->get_array()) {
        if (!c.is_object()) continue;
        const std::string name = String(c.get_object(), "name");
        if (name.empty()) {
          why = fmt::format("service {}: a child without a name (a status child) is not served", service);
          return nullptr;
        }
        std::shared_ptr<const Backend> child = ChildFor(service, provider, name, why);
        if (!child) return nullptr;
        const int64_t weight = Int(c.get_object(), "weight").value_or(1);
        if (weight <= 0) continue;
        backend->children.push_back(Backend::Child{.name = name,
                                                   .backend = std::move(child),
                                                   .weight = static_cast<int>(std::min<int64_t>(weight, 1'000'000)),
                                                   .sticky_hash = StickyServerHash(name)});
      }
    }
    if (!hrw) backend->StartSchedule();  // the EDF schedule is the weighted service's alone
    backends_[service] = backend;
    return backend;
  }

  // Traefik's failover service: its main service while that has a routable server, else its
  // fallback (edge/proxy/table.h). The runtime checked that the main has a health check (and the
  // fallback one, with the failover's own healthCheck), as Traefik's status updaters require.
  std::shared_ptr<const Backend> FailoverBackend(const std::string& service, const std::string& provider,
                                                 const json::object& failover, std::string& why) {
    if (!Enter(service, why)) return nullptr;
    Leave leave{building_};
    auto backend = std::make_shared<Backend>();
    backend->name = service;
    backend->failover = true;
    backend->reports_status = failover.contains("healthCheck");
    if (const json::object* errors = Object(failover, "errors")) {  // the runtime refused bad ranges
      std::vector<std::string> blocks;
      if (const json::value* status = errors->if_contains("status"); status && status->is_array())
        for (const json::value& b : status->get_array())
          if (b.is_string()) blocks.emplace_back(b.get_string());
      if (auto ranges = HttpCodeRanges(blocks); ranges.ok()) backend->failover_statuses = std::move(*ranges);
      if (!backend->failover_statuses.empty())
        backend->failover_max_body_bytes = Int(*errors, "maxRequestBodyBytes").value_or(-1);
    }
    for (const char* member : {"service", "fallback"}) {
      const std::string name = String(failover, member);
      std::shared_ptr<const Backend> child = ChildFor(service, provider, name, why);
      if (!child) return nullptr;
      backend->children.push_back(Backend::Child{.name = name, .backend = std::move(child), .sticky_hash = {}});
    }
    backends_[service] = backend;
    return backend;
  }

  // Traefik's mirroring service: its main service answers, its mirrors get copies
  // (edge/proxy/table.h). Traefik's defaults: mirrorBody true, maxBodySize -1 (no limit); the
  // runtime refused a percent outside 0..100.
  std::shared_ptr<const Backend> MirroringBackend(const std::string& service, const std::string& provider,
                                                  const json::object& mirroring, std::string& why) {
    if (!Enter(service, why)) return nullptr;
    Leave leave{building_};
    auto backend = std::make_shared<Backend>();
    backend->name = service;
    backend->mirroring = true;
    backend->mirror_body = Bool(mirroring, "mirrorBody").value_or(true);
    backend->max_mirror_body_bytes = Int(mirroring, "maxBodySize").value_or(-1);
    const std::string main = String(mirroring, "service");
    std::shared_ptr<const Backend> main_backend = ChildFor(service, provider, main, why);
    if (!main_backend) return nullptr;
    backend->children.push_back(Backend::Child{.name = main, .backend = std::move(main_backend), .sticky_hash = {}});
    if (const json::value* mirrors = mirroring.if_contains("mirrors"); mirrors && mirrors->is_array()) {
      for (const json::value& m : mirrors->get_array()) {
        if (!m.is_object()) continue;
        std::shared_ptr<const Backend> mirror = ChildFor(service, provider, String(m.get_object(), "name"), why);
        if (!mirror) return nullptr;
        const int64_t percent = Int(m.get_object(), "percent").value_or(0);
        backend->mirrors.push_back(
            Backend::Mirror{.backend = std::move(mirror), .percent = static_cast<int>(std::clamp<int64_t>(percent, 0, 100))});
      }
    }
    backends_[service] = backend;
    return backend;
  }

  // Services made of other services (weighted, mirroring, failover, highestRandomWeight) being compiled: a cycle or nesting
  // deeper than kMaxNesting fails the service (the runtime reports a cycle in Traefik's words
  // first). Enter pushes `service`; a Leave pops it.
  bool Enter(const std::string& service, std::string& why) {
    static constexpr size_t kMaxNesting = 16;
    if (std::find(building_.begin(), building_.end(), service) != building_.end()) {
      why = fmt::format("service {}: services made of services refer to each other (a cycle)", service);
      return false;
    }
    if (building_.size() >= kMaxNesting) {
      why = fmt::format("service {}: services made of services nested deeper than {}", service, kMaxNesting);
      return false;
    }
    building_.push_back(service);
    return true;
  }
  struct Leave {
    std::vector<std::string>& building;
    ~Leave() { building.pop_back(); }
  };

  // The serversTransport `name` (qualified) as the proxy uses it, made once per table; null when
  // the runtime has none of that name.
  std::shared_ptr<const UpstreamTransport> TransportFor(const std::string& name) {
    if (auto it = transports_.find(name); it != transports_.end()) return it->second;
    auto found = runtime_.servers_transports.find(name);
    if (found == runtime_.servers_transports.end()) return nullptr;
    const json::object& o = found->second;
    auto t = std::make_shared<UpstreamTransport>();
    t->name = name;
    UpstreamTlsConfig tls;
    tls.server_name = String(o, "serverName");
    tls.insecure_skip_verify = Bool(o, "insecureSkipVerify").value_or(false);
    if (const json::value* cas = o.if_contains("rootCAs"); cas && cas->is_array())
      for (const json::value& ca : cas->get_array())
        if (ca.is_string()) tls.root_cas.emplace_back(ca.get_string());
    if (const json::value* certs = o.if_contains("certificates"); certs && certs->is_array())
      for (const json::value& c : certs->get_array())
        if (c.is_object())
          tls.certificates.push_back({String(c.get_object(), "certFile"), String(c.get_object(), "keyFile")});
    if (const json::value* suites = o.if_contains("cipherSuites"); suites && suites->is_array())
      for (const json::value& suite : suites->get_array())
        if (suite.is_string()) tls.cipher_suites.emplace_back(suite.get_string());
    tls.min_version = String(o, "minVersion");
    tls.max_version = String(o, "maxVersion");
    if (const json::value* sans = o.if_contains("peerCertSANs"); sans && sans->is_array())
      for (const json::value& san : sans->get_array())
        if (san.is_object())
          tls.peer_cert_sans.push_back({String(san.get_object(), "type"), String(san.get_object(), "value")});
    if (std::string uri = String(o, "peerCertURI"); !uri.empty()) {  // deprecated: a URI SAN (Traefik warns)
      errors_.push_back(fmt::format("serversTransport {}: PeerCertURI option is deprecated, please use PeerCertSANs "
                                    "instead",
                                    name));
      tls.peer_cert_sans.push_back({"URI", std::move(uri)});
    }
    std::vector<std::string> tls_errors;
    t->tls = UpstreamTls::Build(tls, tls_errors);
    for (const std::string& e : tls_errors) errors_.push_back(fmt::format("serversTransport {}: {}", name, e));
    // Traefik's SetDefaults: 200 idle connections per host; dial 30 s, idle 90 s.
    t->max_idle_conns_per_host = static_cast<int>(Int(o, "maxIdleConnsPerHost").value_or(200));
    if (const json::object* timeouts = Object(o, "forwardingTimeouts")) {
      t->dial_timeout = Duration(*timeouts, "dialTimeout").value_or(std::chrono::seconds(30));
      t->response_header_timeout = Duration(*timeouts, "responseHeaderTimeout").value_or(std::chrono::seconds(0));
      t->idle_conn_timeout = Duration(*timeouts, "idleConnTimeout").value_or(std::chrono::seconds(90));
    }
    transports_[name] = t;
    return t;
  }

  // The runtime's TLS options and their hosts, for the ClientHello.
  TlsOptionsSpec TlsOptions() const {
    TlsOptionsSpec spec;
    for (const auto& [name, o] : runtime_.tls_options) spec.options[name] = TlsOptionsFromJson(o);
    spec.hosts_by_entry_point = runtime_.tls_options_by_host;
    return spec;
  }

  // The static certificates; one that does not load is an error and left out.
  std::shared_ptr<const TlsCertificates> LoadCertificates() {
    auto files = [](const json::object& o) {
      return CertificateFiles{.cert_file = String(o, "certFile"), .key_file = String(o, "keyFile")};
    };
    std::vector<CertificateFiles> certificates;
    for (const json::value& cert : runtime_.tls_certificates)
      if (cert.is_object()) certificates.push_back(files(cert.get_object()));
    std::optional<CertificateFiles> default_certificate;
    if (!runtime_.default_certificate.empty()) default_certificate = files(runtime_.default_certificate);
    return TlsCertificates::Load(certificates, default_certificate, errors_, TlsOptions());
  }

  const RuntimeConfig& runtime_;
  ServerRegistry& registry_;
  std::map<std::string, std::shared_ptr<const Backend>, std::less<>> backends_;
  std::vector<std::string> errors_;
  std::vector<std::string> building_;  // the services made of services being compiled, outermost first
  std::map<std::string, std::shared_ptr<const UpstreamTransport>> transports_;  // by qualified name
};

}  // namespace

StatusOr<ServerAddress> ParseServerUrl(std::string_view url) {
  ServerAddress out;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return InvalidArgument(fmt::format("'{}' is not a URL", url));
  out.scheme = std::string(url.substr(0, sep));
  for (char& c : out.scheme)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  std::string_view rest = url.substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (rest.empty()) return InvalidArgument(fmt::format("'{}' names no host", url));
  std::string_view host = rest, port_text;
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return InvalidArgument(fmt::format("'{}': unclosed [", url));
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return InvalidArgument(fmt::format("'{}': bad port", url));
      port_text = rest.substr(close + 2);
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  }
  out.host = std::string(host);
  out.port = out.scheme == "https" ? 443 : 80;
  if (!port_text.empty()) {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || p == 0 || p > 65535)
      return InvalidArgument(fmt::format("'{}': bad port", url));
    out.port = static_cast<uint16_t>(p);
  }
  if (out.host.empty()) return InvalidArgument(fmt::format("'{}' names no host", url));
  return out;
}

TlsOptionsConfig TlsOptionsFromJson(const json::object& o) {
  auto strings = [](const json::object& in, std::string_view key) -> std::optional<std::vector<std::string>> {
    const json::value* v = in.if_contains(key);
    if (!v || !v->is_array()) return std::nullopt;
    std::vector<std::string> out;
    for (const json::value& e : v->get_array())
      if (e.is_string()) out.emplace_back(e.get_string());
    return out;
  };
  TlsOptionsConfig c;
  c.min_version = String(o, "minVersion");
  c.max_version = String(o, "maxVersion");
  c.cipher_suites = strings(o, "cipherSuites");
  c.curve_preferences = strings(o, "curvePreferences");
  if (const json::object* auth = Object(o, "clientAuth")) {
    c.client_ca_files = strings(*auth, "caFiles").value_or(std::vector<std::string>{});
    c.client_auth_type = String(*auth, "clientAuthType");
  }
  c.sni_strict = Bool(o, "sniStrict").value_or(false);
  c.alpn_protocols = strings(o, "alpnProtocols");
  c.disable_session_tickets = Bool(o, "disableSessionTickets").value_or(false);
  return c;
}

std::string CheckTlsOptionsJson(const json::object& options) { return CheckTlsOptions(TlsOptionsFromJson(options)); }

CompileResult Compile(const RuntimeConfig& runtime, ServerRegistry& registry) {
  return Compiler(runtime, registry).Run();
}

}  // namespace paddock::edge
