#include "edge/runtime.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "edge/dynamic.h"
#include "edge/internal/go_json.h"
#include "edge/rule.h"

namespace paddock::edge {
namespace {

using internal::GoQuote;
using internal::MiddlewareKinds;
using internal::ServiceKinds;

// Go's math.MaxInt - 1000: the highest priority a router outside the internal provider may have.
constexpr int64_t kMaxUserPriority = std::numeric_limits<int64_t>::max() - 1000;

template <typename Info>
void AddErrorTo(Info& info, std::string error, bool critical) {
  if (std::find(info.errors.begin(), info.errors.end(), error) != info.errors.end()) return;
  info.errors.push_back(std::move(error));
  if (critical) {
    info.status = RuntimeStatus::kDisabled;
  } else if (info.status != RuntimeStatus::kDisabled) {
    info.status = RuntimeStatus::kWarning;
  }
}

std::string StringMember(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::vector<std::string> StringList(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_array()) return out;
  for (const auto& element : v->get_array()) {
    if (element.is_string()) out.emplace_back(element.get_string());
  }
  return out;
}

bool Present(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && !v->is_null();
}

const boost::json::object* ObjectMember(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

int64_t IntMember(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) {
    return v->get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(v->get_uint64());
  }
  return 0;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

boost::json::array ToArray(const std::vector<std::string>& items) {
  boost::json::array out;
  for (const std::string& s : items) out.emplace_back(s);
  return out;
}

// Builds handlers the way Traefik's managers do, for their verdicts only: what a router, service
// or middleware reports when Traefik builds it, recorded on the runtime objects.
class Builder {
 public:
  Builder(RuntimeConfig& rt, const MiddlewareChecker& check_middleware)
      : rt_(rt), check_middleware_(check_middleware) {}

  // Traefik's serviceManager.BuildHTTP: the error text, or empty once it builds (then cached).
  std::string BuildService(const std::string& name, std::vector<std::string> stack) {
    if (built_services_.count(name) != 0) return {};
    auto it = rt_.services.find(name);
    if (it == rt_.services.end()) return fmt::format("the service {} does not exist", GoQuote(name));
    ServiceInfo& service = it->second;
    if (name.ends_with("@internal")) {  // Traefik's internal handlers (api, ping, ...) need no type
      built_services_.insert(name);
      return {};
    }
    if (service.status == RuntimeStatus::kDisabled) return Join(service.errors, ", ");

    const boost::json::object& config = service.config;
    const auto kinds = std::count_if(ServiceKinds().begin(), ServiceKinds().end(),
                                     [&](std::string_view k) { return Present(config, k); });
    if (kinds > 1) {
      return Fail(service,
                  "cannot create service: multi-types service not supported, consider declaring two different "
                  "pieces of service instead");
    }
    std::string key = "service:" + name;
    if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
      stack.push_back(key);
      return Fail(service, fmt::format("could not instantiate service {}: recursion detected in {}", name,
                                       Join(stack, "->")));
    }
    stack.push_back(std::move(key));
    const std::string provider = service.provider;

    std::string error;
    if (const boost::json::object* lb = ObjectMember(config, "loadBalancer")) {
      const std::string strategy = StringMember(*lb, "strategy");
      if (!strategy.empty() && strategy != "wrr" && strategy != "p2c" && strategy != "hrw" &&
          strategy != "leasttime") {
        return Fail(service, fmt::format("unsupported load-balancer strategy {}", GoQuote(strategy)));
      }
      // Traefik's getLoadBalancerServiceHandler: the serversTransport qualified (in place, so the API
      // shows it so), then found for each server's proxy (the first server's error is the
      // service's; Traefik's order is a shuffle's) and for the health checker.
      if (const std::string transport = StringMember(*lb, "serversTransport"); !transport.empty()) {
        const std::string qualified = QualifiedName(transport, provider);
        boost::json::object shown = *lb;
        shown["serversTransport"] = qualified;
        service.config["loadBalancer"] = std::move(shown);
        lb = ObjectMember(config, "loadBalancer");
        if (qualified != "default@internal" && rt_.servers_transports.count(qualified) == 0) {
          const std::string not_found = fmt::format("getting RoundTripper: servers transport not found {}", qualified);
          std::string first_url;
          if (const boost::json::value* servers = lb->if_contains("servers"); servers && servers->is_array())
            for (const auto& server : servers->get_array())
              if (server.is_object() && first_url.empty()) first_url = StringMember(server.get_object(), "url");
          if (!first_url.empty())
            return Fail(service, fmt::format("error building proxy for server URL {}: {}", first_url, not_found));
          if (Present(*lb, "healthCheck")) return Fail(service, not_found);
        }
      }
      if (!Present(*lb, "healthCheck")) {
        if (const boost::json::value* servers = lb->if_contains("servers"); servers && servers->is_array()) {
          for (const auto& server : servers->get_array()) {
            if (server.is_object()) {
              const std::string url = StringMember(server.get_object(), "url");
              service.server_status[url] = ServerStatus::kUp;
            }
          }
        }
      }
    } else if (const boost::json::object* weighted = ObjectMember(config, "weighted")) {
      for (const std::string& child : ChildNames(*weighted, "services")) {
        const std::string qualified = QualifiedName(child, provider);
        error = BuildService(qualified, stack);
        if (!error.empty()) {
          error = fmt::format("building HTTP service {}: {}", GoQuote(child), error);
          break;
        }
        // weighted.healthCheck: each child must report its status up (Traefik's
        // RegisterStatusUpdater), which only a child with a health check of its own does.
        if (Present(*weighted, "healthCheck")) {
          error = StatusUpdaterError(qualified);
          if (!error.empty()) {
            error = fmt::format("cannot register {} as updater for {}: {}", child, name, error);
            break;
          }
        }
      }
    } else if (const boost::json::object* hrw = ObjectMember(config, "highestRandomWeight")) {
      // Traefik's getHRWServiceHandler: a child's error as it is; with the service's healthCheck
      // each child must report its status.
      for (const std::string& child : ChildNames(*hrw, "services")) {
        error = BuildService(QualifiedName(child, provider), stack);
        if (error.empty() && Present(*hrw, "healthCheck")) {
          error = StatusUpdaterError(QualifiedName(child, provider));
          if (!error.empty()) error = fmt::format("cannot register {} as updater for {}: {}", child, name, error);
        }
        if (!error.empty()) break;
      }
    } else if (const boost::json::object* mirroring = ObjectMember(config, "mirroring")) {
      // Traefik's getMirrorServiceHandler: the main service, then each mirror built and added
      // (AddMirror refuses a percent outside 0..100); the first error is the service's.
      error = BuildService(QualifiedName(StringMember(*mirroring, "service"), provider), stack);
      const boost::json::value* mirrors = mirroring->if_contains("mirrors");
      if (error.empty() && mirrors != nullptr && mirrors->is_array()) {
        for (const auto& m : mirrors->get_array()) {
          if (!m.is_object()) continue;
          error = BuildService(QualifiedName(StringMember(m.get_object(), "name"), provider), stack);
          if (const int64_t percent = IntMember(m.get_object(), "percent");
              error.empty() && (percent < 0 || percent > 100))
            error = "percent must be between 0 and 100";
          if (!error.empty()) break;
        }
      }
    } else if (const boost::json::object* failover = ObjectMember(config, "failover")) {
      // Traefik's getFailoverServiceHandler: the main service must report its status (only one
      // with a health check does) unless `errors.status` sends to the fallback by the main's
      // answers; the fallback too when the failover reports its own.
      const std::string main = StringMember(*failover, "service");
      const std::string fallback = StringMember(*failover, "fallback");
      const boost::json::object* errors = ObjectMember(*failover, "errors");
      const std::vector<std::string> statuses = errors ? StringList(*errors, "status") : std::vector<std::string>();
      error = BuildService(QualifiedName(main, provider), stack);
      if (error.empty()) {  // failover.New
        if (auto ranges = HttpCodeRanges(statuses); !ranges.ok())
          error = fmt::format("error creating failover service {}: {}", name, ranges.status().message());
      }
      if (error.empty() && statuses.empty()) {
        error = StatusUpdaterError(QualifiedName(main, provider));
        if (!error.empty()) error = fmt::format("cannot register {} as updater for {}: {}", main, name, error);
      }
      if (error.empty()) error = BuildService(QualifiedName(fallback, provider), stack);
      if (error.empty() && Present(*failover, "healthCheck")) {
        error = StatusUpdaterError(QualifiedName(fallback, provider));
        if (!error.empty()) error = fmt::format("cannot register {} as updater for {}: {}", fallback, name, error);
      }
    } else {
      return Fail(service, fmt::format("the service {} does not have any type defined", GoQuote(name)));
    }
    if (!error.empty()) return Fail(service, std::move(error));

    const std::vector<std::string> middlewares = StringList(config, "middlewares");
    if (!middlewares.empty()) {
      error = BuildChain(middlewares, provider, stack);
      if (!error.empty()) return Fail(service, std::move(error));
    }
    built_services_.insert(name);
    return {};
  }

  // Traefik's BuildMiddlewareChain(...).Then(next): the constructors run last to first and the
  // first failure is the chain's.
  std::string BuildChain(const std::vector<std::string>& names, const std::string& provider,
                         const std::vector<std::string>& stack) {
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      std::string error = BuildMiddleware(QualifiedName(*it, provider), stack);
      if (!error.empty()) return error;
    }
    return {};
  }

 private:
  std::string Fail(ServiceInfo& service, std::string error) {
    service.AddError(error, true);
    return error;
  }

  // What a (built) service's RegisterStatusUpdater says: empty when it has a health check to
  // report from, else Traefik's "healthCheck not enabled in config for this <kind> service".
  std::string StatusUpdaterError(const std::string& name) const {
    auto it = rt_.services.find(name);
    if (it == rt_.services.end()) return {};
    const boost::json::object& config = it->second.config;
    std::string kind;
    const boost::json::object* body = nullptr;
    if ((body = ObjectMember(config, "loadBalancer"))) {
      const std::string strategy = StringMember(*body, "strategy");
      kind = strategy == "p2c" ? "P2C" : strategy == "hrw" ? "HRW" : strategy == "leasttime" ? "LeastTime" : "WRR";
    } else if ((body = ObjectMember(config, "weighted"))) {
      kind = "WRR";
    } else if ((body = ObjectMember(config, "highestRandomWeight"))) {
      kind = "HRW";
    } else if ((body = ObjectMember(config, "mirroring"))) {
      kind = "mirroring";
    } else if ((body = ObjectMember(config, "failover"))) {
      kind = "failover";
    } else {
      return {};
    }
    if (!Present(*body, "healthCheck")) return fmt::format("healthCheck not enabled in config for this {} service", kind);
    // Traefik's Mirroring.RegisterStatusUpdater: its main service reports in its stead.
    if (kind == "mirroring") {
      std::string main_error = StatusUpdaterError(QualifiedName(StringMember(*body, "service"), it->second.provider));
      if (!main_error.empty()) return "cannot register service of mirroring as updater: " + main_error;
    }
    return {};
  }

  // The `name` of each object in o[key] (weighted's and highestRandomWeight's services).
  static std::vector<std::string> ChildNames(const boost::json::object& o, std::string_view key) {
    std::vector<std::string> out;
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr || !v->is_array()) return out;
    for (const auto& element : v->get_array()) {
      if (element.is_object()) out.push_back(StringMember(element.get_object(), "name"));
    }
    return out;
  }

  std::string BuildMiddleware(const std::string& name, std::vector<std::string> stack) {
    auto it = rt_.middlewares.find(name);
    if (it == rt_.middlewares.end()) return fmt::format("middleware {} does not exist", GoQuote(name));
    MiddlewareInfo& middleware = it->second;
    std::string key = "middleware:" + name;
    if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
      stack.push_back(key);
      return Fail(middleware, fmt::format("could not instantiate middleware {}: recursion detected in {}", name,
                                          Join(stack, "->")));
    }
    stack.push_back(std::move(key));

    boost::json::object& config = middleware.config;
    std::vector<std::string_view> kinds;
    for (std::string_view k : MiddlewareKinds()) {
      if (Present(config, k)) kinds.push_back(k);
    }
    if (kinds.size() > 1) {
      return Fail(middleware,
                  "cannot create middleware: multi-types middleware not supported, consider declaring two "
                  "different pieces of middleware instead");
    }
    if (kinds.empty()) {
      return Fail(middleware, fmt::format("invalid middleware {} configuration: invalid middleware type or "
                                          "middleware does not exist",
                                          GoQuote(name)));
    }
    if (kinds[0] == "chain") {
      boost::json::object* chain = config["chain"].if_object();
      if (chain == nullptr) return {};
      std::vector<std::string> members = StringList(*chain, "middlewares");
      for (std::string& member : members) member = QualifiedName(member, middleware.provider);
      if (chain->contains("middlewares")) (*chain)["middlewares"] = ToArray(members);
      std::string error = BuildChain(members, middleware.provider, stack);
      if (!error.empty()) return Fail(middleware, std::move(error));
      return {};
    }
    if (check_middleware_) {
      const boost::json::value& options = config.at(kinds[0]);
      const boost::json::object none;
      std::string error = check_middleware_(kinds[0], options.is_object() ? options.get_object() : none);
      if (!error.empty()) return Fail(middleware, std::move(error));
    }
    return {};
  }

  std::string Fail(MiddlewareInfo& middleware, std::string error) {
    middleware.AddError(error, true);
    return error;
  }

  RuntimeConfig& rt_;
  const MiddlewareChecker& check_middleware_;
  std::set<std::string> built_services_;
};

// Traefik's applyDefaultObservabilityModel: every root router gets access logs, metrics and
// tracing on, at minimal verbosity, unless it says otherwise.
void ApplyDefaultObservability(boost::json::object& router) {
  boost::json::object observability;
  if (const boost::json::object* o = ObjectMember(router, "observability")) observability = *o;
  for (std::string_view k : {"accessLogs", "metrics", "tracing"}) {
    if (!Present(observability, k)) observability[k] = true;
  }
  if (StringMember(observability, "traceVerbosity").empty()) observability["traceVerbosity"] = "minimal";
  router["observability"] = std::move(observability);
}

}  // namespace

std::string_view RuntimeStatusName(RuntimeStatus status) {
  switch (status) {
    case RuntimeStatus::kEnabled: return "enabled";
    case RuntimeStatus::kDisabled: return "disabled";
    case RuntimeStatus::kWarning: return "warning";
  }
  return "enabled";
}

std::string_view ServerStatusName(ServerStatus status) { return status == ServerStatus::kUp ? "UP" : "DOWN"; }

void RouterInfo::AddError(std::string error, bool critical) { AddErrorTo(*this, std::move(error), critical); }
void ServiceInfo::AddError(std::string error, bool critical) { AddErrorTo(*this, std::move(error), critical); }
void MiddlewareInfo::AddError(std::string error, bool critical) { AddErrorTo(*this, std::move(error), critical); }

bool RuntimeConfig::SetServerStatus(std::string_view service, std::string_view url, ServerStatus status) {
  auto it = services.find(std::string(service));
  if (it == services.end()) return false;
  it->second.server_status[std::string(url)] = status;
  return true;
}

std::string QualifiedName(std::string_view name, std::string_view provider) {
  if (name.find('@') != std::string_view::npos) return std::string(name);
  return fmt::format("{}@{}", name, provider);
}

namespace {

// Traefik v3.7's resolveHTTPTLSOptions and the TCP router's per-SNI TLS configuration (pkg/server/
// aggregator.go, router/tcp/manager.go), per entry point: every host a TLS router's Host matchers
// name takes that router's options. The routers in conflict on an entry point — those naming a
// host that routers with other options name too, and those with options of their own and no Host
// to select them by — are taken off that entry point and served there by a copy of themselves,
// `<ep>-conflicted-<name>`, with the default options (a copy whose own options are not the default
// warned, as Traefik's TCP manager warns it); a router left on no entry point goes.
void ResolveTlsOptions(RuntimeConfig& rt) {
  struct Named {
    std::string router;
    std::string options;                // qualified, or "default"
    std::vector<std::string> domains;   // lower-cased
  };
  std::map<std::string, std::vector<Named>> by_entry_point;
  for (auto& [name, router] : rt.routers) {
    if (router.status == RuntimeStatus::kDisabled) continue;
    const boost::json::object* tls = ObjectMember(router.config, "tls");
    if (tls == nullptr) continue;
    auto rule = Rule::Parse(StringMember(router.config, "rule"));
    if (!rule.ok()) continue;
    const std::string options = StringMember(*tls, "options");
    Named named{name, options.empty() || options == "default" ? "default" : QualifiedName(options, router.provider),
                rule->Domains()};
    if (named.domains.empty() && named.options != "default") {
      router.AddError(fmt::format("no domain found in rule {}, the TLS option {} cannot be applied",
                                  StringMember(router.config, "rule"), named.options),
                      false);
    }
    for (const std::string& ep : router.using_entry_points) by_entry_point[ep].push_back(named);
  }
  std::map<std::string, std::vector<std::pair<std::string, bool>>> conflicted;  // router -> (ep, warned)
  for (auto& [ep, routers] : by_entry_point) {
    std::map<std::string, std::set<std::string>> options_by_host;
    for (const Named& r : routers)
      for (const std::string& d : r.domains) options_by_host[d].insert(r.options);
    std::map<std::string, std::string>& hosts = rt.tls_options_by_host[ep];
    for (Named& r : routers) {
      bool conflicting = r.domains.empty() && r.options != "default";
      for (const std::string& d : r.domains) conflicting = conflicting || options_by_host[d].size() > 1;
      if (!conflicting) continue;
      conflicted[r.router].emplace_back(ep, !r.domains.empty() && r.options != "default");
      r.router = fmt::format("{}-conflicted-{}", ep, r.router);
      r.options = "default";
    }
    for (const Named& r : routers) {
      // A router with no Host to select its options by is served with the default ones.
      rt.tls_options_by_router[ep][r.router] = r.domains.empty() ? std::string("default") : r.options;
      for (const std::string& d : r.domains) {
        auto [it, added] = hosts.try_emplace(d, r.options);
        if (!added && it->second != r.options) it->second = "default";
      }
    }
  }
  for (const auto& [name, on] : conflicted) {
    RouterInfo& router = rt.routers.at(name);
    for (const auto& [ep, warned] : on) {
      RouterInfo copy = router;
      copy.using_entry_points = {ep};
      copy.config["entryPoints"] = boost::json::array{boost::json::string(ep)};
      if (warned) {
        copy.AddError(
            "router's TLSOptions configuration is conflicting with other routers on the same entrypoint and host, "
            "default TLS options will be used instead",
            false);
      }
      std::erase(router.using_entry_points, ep);
      rt.routers.emplace(fmt::format("{}-conflicted-{}", ep, name), std::move(copy));
    }
    if (router.using_entry_points.empty()) {
      rt.routers.erase(name);
      continue;
    }
    std::vector<std::string> configured = StringList(router.config, "entryPoints");
    for (const auto& [ep, warned] : on) std::erase(configured, ep);
    router.config["entryPoints"] = ToArray(configured);
  }
}

// Traefik's applyModel (pkg/server/aggregator.go): each root router's entry points with a model
// get a copy of it each, the others keep the router.
void ApplyModels(RuntimeConfig& rt, const std::map<std::string, EntryPointModel>& models) {
  std::map<std::string, RouterInfo> out;
  for (auto& [name, router] : rt.routers) {
    if (Present(router.config, "parentRefs")) {
      out.emplace(name, std::move(router));
      continue;
    }
    const std::vector<std::string> eps = StringList(router.config, "entryPoints");
    std::vector<std::string> plain;
    for (const std::string& ep : eps) {
      auto model = models.find(ep);
      if (model == models.end()) {
        plain.push_back(ep);
        continue;
      }
      RouterInfo copy = router;
      copy.config["entryPoints"] = boost::json::array{boost::json::string(ep)};
      if (!Present(copy.config, "tls") && model->second.tls) copy.config["tls"] = *model->second.tls;
      if (!model->second.middlewares.empty()) {
        std::vector<std::string> middlewares = model->second.middlewares;
        for (std::string& own : StringList(copy.config, "middlewares")) middlewares.push_back(std::move(own));
        copy.config["middlewares"] = ToArray(middlewares);
      }
      out.insert_or_assign(eps.size() > 1 ? fmt::format("{}-{}", ep, name) : name, std::move(copy));
    }
    if (!plain.empty() || eps.empty()) {
      if (!eps.empty()) router.config["entryPoints"] = ToArray(plain);
      out.insert_or_assign(name, std::move(router));
    }
  }
  rt.routers = std::move(out);
}

}  // namespace

RuntimeConfig BuildRuntime(const std::vector<ProviderConfiguration>& providers,
                           const std::vector<std::string>& entry_points,
                           const std::vector<std::string>& default_entry_points, const RuleChecker& check_rule,
                           const MiddlewareChecker& check_middleware, const TlsOptionsChecker& check_tls_options,
                           const std::map<std::string, EntryPointModel>& models) {
  RuntimeConfig rt;
  std::set<std::string> tls_options;
  std::vector<std::string> default_tls_option_providers;

  // Traefik's mergeConfiguration: every element under its qualified name.
  for (const ProviderConfiguration& p : providers) {
    if (const boost::json::object* http = ObjectMember(p.config, "http")) {
      if (const boost::json::object* routers = ObjectMember(*http, "routers")) {
        for (const auto& [name, value] : *routers) {
          if (!value.is_object()) continue;
          RouterInfo info;
          info.config = value.get_object();
          info.provider = p.provider;
          if (StringList(info.config, "entryPoints").empty() && !Present(info.config, "parentRefs")) {
            if (default_entry_points.empty()) {
              info.config.erase("entryPoints");
            } else {
              info.config["entryPoints"] = ToArray(default_entry_points);
            }
          }
          rt.routers[fmt::format("{}@{}", std::string_view(name), p.provider)] = std::move(info);
        }
      }
      if (const boost::json::object* services = ObjectMember(*http, "services")) {
        for (const auto& [name, value] : *services) {
          if (!value.is_object()) continue;
          ServiceInfo info;
          info.config = value.get_object();
          info.provider = p.provider;
          rt.services[fmt::format("{}@{}", std::string_view(name), p.provider)] = std::move(info);
        }
      }
      if (const boost::json::object* transports = ObjectMember(*http, "serversTransports")) {
        for (const auto& [name, value] : *transports)
          if (value.is_object())
            rt.servers_transports[fmt::format("{}@{}", std::string_view(name), p.provider)] = value.get_object();
      }
      if (const boost::json::object* middlewares = ObjectMember(*http, "middlewares")) {
        for (const auto& [name, value] : *middlewares) {
          if (!value.is_object()) continue;
          MiddlewareInfo info;
          info.config = value.get_object();
          info.provider = p.provider;
          rt.middlewares[fmt::format("{}@{}", std::string_view(name), p.provider)] = std::move(info);
        }
      }
    }
    if (const boost::json::object* tls = ObjectMember(p.config, "tls")) {
      // Traefik's tls.Manager: a certificate goes to the stores it names (none: `default`), and
      // entry points serve the `default` store only, so one named only in others is never served.
      if (const boost::json::value* certs = tls->if_contains("certificates"); certs && certs->is_array())
        for (const boost::json::value& cert : certs->get_array()) {
          if (!cert.is_object()) continue;
          const std::vector<std::string> stores = StringList(cert.get_object(), "stores");
          if (stores.empty() || std::find(stores.begin(), stores.end(), "default") != stores.end())
            rt.tls_certificates.push_back(cert);
        }
      if (const boost::json::object* stores = ObjectMember(*tls, "stores"))
        if (const boost::json::object* store = ObjectMember(*stores, "default"))
          if (const boost::json::object* cert = ObjectMember(*store, "defaultCertificate");
              cert && rt.default_certificate.empty())
            rt.default_certificate = *cert;
      if (const boost::json::object* options = ObjectMember(*tls, "options")) {
        for (const auto& member : *options) {
          const boost::json::object* option = member.value().if_object();
          if (member.key() == "default") {
            default_tls_option_providers.push_back(p.provider);
            if (option) rt.tls_options["default"] = *option;
          } else {
            if (option) rt.tls_options[fmt::format("{}@{}", std::string_view(member.key()), p.provider)] = *option;
            tls_options.insert(fmt::format("{}@{}", std::string_view(member.key()), p.provider));
          }
        }
      }
    }
  }
  // Several providers defining `default` remove it, so routers needing it fail (Traefik's choice).
  if (default_tls_option_providers.size() <= 1) {
    tls_options.insert("default");
    rt.tls_options.try_emplace("default");  // Traefik's DefaultTLSOptions
  } else {
    rt.tls_options.erase("default");
  }

  if (!models.empty()) ApplyModels(rt, models);

  for (auto& [name, router] : rt.routers) {
    if (!Present(router.config, "parentRefs")) ApplyDefaultObservability(router.config);
  }

  // Traefik's ParseRouterTree, for root routers only: a router needs a service.
  for (auto& [name, router] : rt.routers) {
    if (Present(router.config, "parentRefs")) {
      router.AddError("multi-layer routing (parentRefs) is not supported", true);
      continue;
    }
    if (StringMember(router.config, "service").empty()) {
      router.AddError("router has no service and no child routers", true);
    }
  }

  const std::set<std::string> known_entry_points(entry_points.begin(), entry_points.end());
  Builder builder(rt, check_middleware);
  std::map<std::string, std::string> tls_option_errors;  // check_tls_options' verdict by option set
  std::set<std::string> built_routers;

  // Traefik's BuildHandlers, once for routers without TLS and once for those with it.
  for (const bool tls_pass : {false, true}) {
    std::map<std::string, std::vector<std::string>> routers_by_entry_point;
    for (auto& [name, router] : rt.routers) {
      if (Present(router.config, "tls") != tls_pass) continue;
      if (Present(router.config, "parentRefs")) continue;
      int count = 0;
      for (const std::string& ep : StringList(router.config, "entryPoints")) {
        if (known_entry_points.count(ep) == 0) {
          router.AddError(fmt::format("entryPoint {} doesn't exist", GoQuote(ep)), false);
          continue;
        }
        routers_by_entry_point[ep].push_back(name);
        router.using_entry_points.push_back(ep);
        ++count;
      }
      if (count == 0) router.AddError("no valid entryPoint for this router", true);
      auto& eps = router.using_entry_points;
      std::sort(eps.begin(), eps.end());
      eps.erase(std::unique(eps.begin(), eps.end()), eps.end());
    }

    for (const auto& [ep, names] : routers_by_entry_point) {
      for (const std::string& name : names) {
        RouterInfo& router = rt.routers.at(name);
        boost::json::object& config = router.config;
        const std::string rule = StringMember(config, "rule");
        int64_t priority = IntMember(config, "priority");
        if (priority == 0 && !rule.empty()) {
          priority = static_cast<int64_t>(rule.size());
          config["priority"] = priority;
        }
        if (priority > kMaxUserPriority && !name.ends_with("@internal")) {
          router.AddError(fmt::format("the router priority {} exceeds the max user-defined priority {}", priority,
                                      kMaxUserPriority),
                          true);
          continue;
        }

        if (built_routers.count(name) == 0) {
          std::string error;
          if (const boost::json::object* tls = ObjectMember(config, "tls")) {
            const std::string options = StringMember(*tls, "options");
            const std::string qualified =
                options.empty() || options == "default" ? "default" : QualifiedName(options, router.provider);
            if (tls_options.count(qualified) == 0) {
              error = fmt::format("building router handler: unknown TLS options: {}", qualified);
            } else if (check_tls_options) {
              // Once per option set, however many routers use it (the check reads its CA files).
              auto checked = tls_option_errors.find(qualified);
              if (checked == tls_option_errors.end()) {
                auto it = rt.tls_options.find(qualified);
                checked = tls_option_errors
                              .emplace(qualified, it == rt.tls_options.end() ? std::string() : check_tls_options(it->second))
                              .first;
              }
              if (!checked->second.empty())
                error = fmt::format("building router handler: building TLS config: {}", checked->second);
            }
          }
          if (error.empty()) {
            std::vector<std::string> middlewares = StringList(config, "middlewares");
            for (std::string& m : middlewares) m = QualifiedName(m, router.provider);
            if (config.contains("middlewares")) config["middlewares"] = ToArray(middlewares);

            const std::string service = StringMember(config, "service");
            if (service.empty()) {
              error = "router must have either a service or child routers";
            } else {
              router.service = QualifiedName(service, router.provider);
              error = builder.BuildService(router.service, {});
              if (error.empty()) error = builder.BuildChain(middlewares, router.provider, {});
            }
          }
          if (!error.empty()) {
            router.AddError(std::move(error), true);
            continue;
          }
          built_routers.insert(name);
        }

        if (check_rule) {
          const std::string why = check_rule(rule);
          if (!why.empty()) {
            router.AddError(fmt::format("error while parsing rule {}: {}", rule, why), true);
            continue;
          }
        }
      }
    }
  }

  for (auto& [name, router] : rt.routers) {
    const boost::json::object* tls = ObjectMember(router.config, "tls");
    if (tls == nullptr) continue;
    const std::string resolver = StringMember(*tls, "certResolver");
    if (resolver.empty()) continue;
    router.AddError(fmt::format("certificate resolver {} is not available (ACME is not supported): the router "
                                "is served with a static or the default certificate",
                                GoQuote(resolver)),
                    false);
  }

  ResolveTlsOptions(rt);

  // Traefik's PopulateUsedBy.
  for (const auto& [name, router] : rt.routers) {
    for (const std::string& m : StringList(router.config, "middlewares")) {
      auto it = rt.middlewares.find(QualifiedName(m, router.provider));
      if (it != rt.middlewares.end()) it->second.used_by.push_back(name);
    }
    auto it = rt.services.find(QualifiedName(StringMember(router.config, "service"), router.provider));
    if (it != rt.services.end()) it->second.used_by.push_back(name);
  }
  for (auto& [name, service] : rt.services) std::sort(service.used_by.begin(), service.used_by.end());
  for (auto& [name, middleware] : rt.middlewares) std::sort(middleware.used_by.begin(), middleware.used_by.end());
  return rt;
}

boost::json::object InternalConfiguration(const InternalOptions& options) {
  constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  boost::json::object routers;
  boost::json::object services;
  const auto router = [](std::string_view entry_point, std::string_view service, std::string_view rule,
                         int64_t priority) {
    return boost::json::object{{"entryPoints", boost::json::array{boost::json::string(entry_point)}},
                               {"service", service},
                               {"rule", rule},
                               {"ruleSyntax", "default"},
                               {"priority", priority}};
  };
  if (options.api_insecure) routers["api"] = router("traefik", "api@internal", "PathPrefix(`/api`)", kMaxInt - 1);
  services["api"] = boost::json::object{};
  if (options.ping) {
    routers["ping"] = router(options.ping_entry_point, "ping@internal", "PathPrefix(`/ping`)", kMaxInt);
    services["ping"] = boost::json::object{};
  }
  if (options.prometheus) {
    routers["prometheus"] =
        router(options.prometheus_entry_point, "prometheus@internal", "PathPrefix(`/metrics`)", kMaxInt);
    services["prometheus"] = boost::json::object{};
  }
  services["noop"] = boost::json::object{};
  return boost::json::object{{"http", boost::json::object{{"routers", std::move(routers)},
                                                          {"services", std::move(services)}}}};
}

}  // namespace paddock::edge
