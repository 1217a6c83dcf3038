#include "edge/api.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <utility>

#include <boost/json/array.hpp>
#include <fmt/format.h>

#include "edge/dashboard.h"
#include "edge/internal/go_json.h"

namespace paddock::edge {
namespace {

using internal::GoJson;
using internal::GoQuote;
using internal::MiddlewareKinds;
using internal::ServiceKinds;
using internal::GoShape;

constexpr int64_t kDefaultPerPage = 100;
constexpr int64_t kDefaultPage = 1;

// ---- Go's URL handling -------------------------------------------------------------------------

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Go's url.PathUnescape (plus_is_space false) and url.QueryUnescape (true). On a bad escape,
// nullopt and `error` set to Go's text: invalid URL escape "%zz".
std::optional<std::string> Unescape(std::string_view s, bool plus_is_space, std::string* error) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        *error = fmt::format("invalid URL escape {}", GoQuote(s.substr(i, 3)));
        return std::nullopt;
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// Go's url.ParseQuery, keeping what it keeps: pairs with ';' or a bad escape are dropped.
class Query {
 public:
  explicit Query(std::string_view raw) {
    while (!raw.empty()) {
      const size_t amp = raw.find('&');
      std::string_view pair = raw.substr(0, amp);
      raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
      if (pair.find(';') != std::string_view::npos || pair.empty()) continue;
      const size_t eq = pair.find('=');
      std::string error;
      std::optional<std::string> key = Unescape(pair.substr(0, eq), true, &error);
      std::optional<std::string> value =
          Unescape(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true, &error);
      if (!key || !value) continue;
      pairs_.emplace_back(std::move(*key), std::move(*value));
    }
  }
  // url.Values.Get: the first value, or "".
  std::string Get(std::string_view key) const {
    for (const auto& [k, v] : pairs_) {
      if (k == key) return v;
    }
    return {};
  }
  bool empty() const { return pairs_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

// Go's strconv.Atoi (ParseUint, then ParseInt's range check): the value, and whether it parsed
// (out of range: clamped and false; not a number: 0 and false).
std::pair<int64_t, bool> Atoi(std::string_view s) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr uint64_t kMaxUint = std::numeric_limits<uint64_t>::max();
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return {0, false};
  uint64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return {0, false};
    if (value >= kMaxUint / 10 + 1 || value * 10 > kMaxUint - static_cast<uint64_t>(c - '0')) {
      value = kMaxUint;  // ParseUint stops here with a range error
      break;
    }
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  constexpr uint64_t kCutoff = uint64_t{1} << 63;
  if (!negative && value >= kCutoff) return {kMax, false};
  if (negative && value > kCutoff) return {kMin, false};
  if (negative) return {value == kCutoff ? kMin : -static_cast<int64_t>(value), true};
  return {static_cast<int64_t>(value), true};
}

// gorilla/mux's cleanPath: path.Clean, keeping a trailing slash.
std::string CleanPath(std::string_view p) {
  if (p.empty()) return "/";
  std::string rooted = p[0] == '/' ? std::string(p) : "/" + std::string(p);
  std::vector<std::string_view> parts;
  std::string_view rest = rooted;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string clean;
  for (std::string_view part : parts) {
    clean += '/';
    clean += part;
  }
  if (clean.empty()) clean = "/";
  if (rooted.back() == '/' && clean != "/") clean += '/';
  return clean;
}

// ---- Responses ---------------------------------------------------------------------------------

// What json.NewEncoder(rw).Encode writes.
http::Response JsonResponse(const boost::json::value& body) {
  http::Response r;
  r.status = 200;
  r.SetHeader("Content-Type", "application/json");
  r.body = GoJson(body) + "\n";
  return r;
}

// Go's http.Error (what Traefik's writeError ends in): the JSON message as text/plain.
http::Response TextError(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.SetHeader("Content-Type", "text/plain; charset=utf-8");
  r.SetHeader("X-Content-Type-Options", "nosniff");
  r.body = std::move(body) + "\n";
  return r;
}

http::Response ApiError(int status, std::string_view message) {
  return TextError(status, GoJson(boost::json::object{{"message", message}}));
}

http::Response NotFoundPage() { return TextError(404, "404 page not found"); }

// ---- Representations (pkg/api/handler_http.go) ------------------------------------------------

std::string ProviderOf(std::string_view qualified) {
  const size_t at = qualified.find('@');
  return at == std::string_view::npos ? std::string() : std::string(qualified.substr(at + 1));
}

boost::json::array ToArray(const std::vector<std::string>& items) {
  boost::json::array out;
  for (const std::string& s : items) out.emplace_back(s);
  return out;
}

int64_t PriorityOf(const boost::json::object& router) {
  const boost::json::value* v = router.if_contains("priority");
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  return 0;
}

std::string StringOf(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Traefik's extractType: the first kind set, in declaration order, lowercased; a single plugin
// is named by its key.
std::string TypeOf(const boost::json::object& config, const std::vector<std::string_view>& kinds) {
  for (std::string_view k : kinds) {
    const boost::json::value* v = config.if_contains(k);
    if (v == nullptr || v->is_null()) continue;
    if (k == "plugin") {
      if (v->is_object() && v->get_object().size() == 1) return Lower(v->get_object().begin()->key());
      continue;
    }
    return Lower(k);
  }
  return {};
}


void AddRuntimeFields(boost::json::object& out, const std::vector<std::string>& errors, RuntimeStatus status) {
  if (!errors.empty()) out["error"] = ToArray(errors);
  out["status"] = RuntimeStatusName(status);
}

boost::json::object ServerStatusJson(const std::map<std::string, ServerStatus>& statuses) {
  boost::json::object out;
  for (const auto& [url, status] : statuses) out[url] = ServerStatusName(status);
  return out;
}

// runtime.RouterInfo; with `representation`, the API's routerRepresentation (name, provider,
// priorityStr, and tls.options "default" when unset).
boost::json::object RouterJson(const std::string& name, const RouterInfo& info, bool representation) {
  boost::json::object config = info.config;
  if (representation) {
    if (boost::json::value* tls = config.if_contains("tls"); tls != nullptr && tls->is_object()) {
      if (StringOf(tls->get_object(), "options").empty()) tls->get_object()["options"] = "default";
    }
  }
  boost::json::object out = GoShape(config, "Router");
  AddRuntimeFields(out, info.errors, info.status);
  if (!info.using_entry_points.empty()) out["using"] = ToArray(info.using_entry_points);
  if (representation) {
    out["name"] = name;
    if (std::string provider = ProviderOf(name); !provider.empty()) out["provider"] = provider;
    out["priorityStr"] = fmt::format("{}", PriorityOf(info.config));
  }
  return out;
}

boost::json::object ServiceJson(const std::string& name, const ServiceInfo& info, bool representation) {
  boost::json::object out = GoShape(info.config, "Service");
  AddRuntimeFields(out, info.errors, info.status);
  if (!info.used_by.empty()) out["usedBy"] = ToArray(info.used_by);
  if (representation) {
    out["name"] = name;
    if (std::string provider = ProviderOf(name); !provider.empty()) out["provider"] = provider;
    if (std::string type = TypeOf(info.config, ServiceKinds()); !type.empty()) out["type"] = type;
  }
  if (!info.server_status.empty()) out["serverStatus"] = ServerStatusJson(info.server_status);
  return out;
}

boost::json::object MiddlewareJson(const std::string& name, const MiddlewareInfo& info, bool representation) {
  boost::json::object out = GoShape(info.config, "Middleware");
  AddRuntimeFields(out, info.errors, info.status);
  if (!info.used_by.empty()) out["usedBy"] = ToArray(info.used_by);
  if (representation) {
    out["name"] = name;
    if (std::string provider = ProviderOf(name); !provider.empty()) out["provider"] = provider;
    if (std::string type = TypeOf(info.config, MiddlewareKinds()); !type.empty()) out["type"] = type;
  }
  return out;
}

boost::json::object EntryPointJson(const EntryPoint& ep) {
  boost::json::object config = ep.fields;
  config["address"] = ep.address;
  if (ep.as_default) config["asDefault"] = true;
  boost::json::object out = GoShape(config, "EntryPoint");
  out["name"] = ep.name;
  return out;
}

// ---- Lists: filters, sorting, paging (pkg/api/criterion.go, sort.go) ---------------------------

// One element of a list, with what it can be sorted by.
struct Row {
  std::string name;
  boost::json::object json;
  std::map<std::string, std::string, std::less<>> text_keys;  // provider, status, rule, service, type
  std::map<std::string, int64_t, std::less<>> int_keys;        // priority, entryPoints, servers
};

struct Criterion {
  bool active = false;
  std::string search, status, service_name, middleware_name;

  explicit Criterion(const Query& query) {
    if (query.empty()) return;
    search = query.Get("search");
    status = query.Get("status");
    service_name = query.Get("serviceName");
    middleware_name = query.Get("middlewareName");
    active = !search.empty() || !status.empty() || !service_name.empty() || !middleware_name.empty();
  }
  bool WithStatus(RuntimeStatus s) const { return status.empty() || Lower(status) == RuntimeStatusName(s); }
  bool SearchIn(std::initializer_list<std::string_view> values) const {
    if (search.empty()) return true;
    const std::string needle = Lower(search);
    return std::any_of(values.begin(), values.end(),
                       [&](std::string_view v) { return Lower(v).find(needle) != std::string::npos; });
  }
  bool FilterService(std::string_view service) const {
    if (service_name.empty()) return true;
    if (service.find('@') != std::string_view::npos) return service_name == service;
    return std::string_view(service_name).substr(0, service_name.find('@')) == service;
  }
  bool FilterMiddleware(const std::vector<std::string>& middlewares) const {
    if (middleware_name.empty()) return true;
    return std::find(middlewares.begin(), middlewares.end(), middleware_name) != middlewares.end();
  }
};

std::vector<std::string> Strings(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_array()) return out;
  for (const auto& e : v->get_array()) {
    if (e.is_string()) out.emplace_back(e.get_string());
  }
  return out;
}

// Traefik's sortRouters/sortServices/sortMiddlewares: by `sortBy` (a field it knows, else name),
// ties by name; any direction but "asc" (the default) is descending.
void SortRows(std::vector<Row>& rows, const Query& query, const std::vector<std::string_view>& text_fields,
              const std::vector<std::string_view>& int_fields) {
  const std::string sort_by = query.Get("sortBy");
  std::string direction = query.Get("direction");
  if (direction.empty()) direction = "asc";
  const bool ascending = direction == "asc";
  const bool by_text = std::find(text_fields.begin(), text_fields.end(), sort_by) != text_fields.end();
  const bool by_int = std::find(int_fields.begin(), int_fields.end(), sort_by) != int_fields.end();
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    int c = 0;
    if (by_text) {
      const std::string& x = a.text_keys.find(sort_by)->second;
      const std::string& y = b.text_keys.find(sort_by)->second;
      c = x < y ? -1 : (y < x ? 1 : 0);
    } else if (by_int) {
      const int64_t x = a.int_keys.find(sort_by)->second;
      const int64_t y = b.int_keys.find(sort_by)->second;
      c = x < y ? -1 : (y < x ? 1 : 0);
    }
    if (c == 0) c = a.name < b.name ? -1 : (b.name < a.name ? 1 : 0);
    return ascending ? c < 0 : c > 0;
  });
}

// Traefik's pagination and getIntParam.
struct Page {
  size_t start = 0, end = 0;
  int64_t next = 1;
};
std::optional<Page> Paginate(const Query& query, size_t total, std::string* error) {
  int64_t values[2] = {kDefaultPerPage, kDefaultPage};
  const char* keys[2] = {"per_page", "page"};
  for (int i = 0; i < 2; ++i) {
    const std::string raw = query.Get(keys[i]);
    if (raw.empty()) continue;
    auto [value, ok] = Atoi(raw);
    if (!ok || value <= 0) {
      *error = fmt::format("invalid request: {}: {}", keys[i], value);
      return std::nullopt;
    }
    values[i] = value;
  }
  const int64_t per_page = values[0];
  const int64_t page = values[1];
  const auto total64 = static_cast<uint64_t>(total);
  // (page - 1) * per_page and page * per_page, saturated (Go's int would wrap; either way no list).
  const auto product = [](uint64_t a, uint64_t b) {
    return a != 0 && b > std::numeric_limits<uint64_t>::max() / a ? std::numeric_limits<uint64_t>::max() : a * b;
  };
  const uint64_t start = product(static_cast<uint64_t>(page - 1), static_cast<uint64_t>(per_page));
  if (start != 0 && start >= total64) {
    *error = fmt::format("invalid request: page: {}, per_page: {}", page, per_page);
    return std::nullopt;
  }
  Page p;
  p.start = static_cast<size_t>(start);
  p.end = static_cast<size_t>(std::min<uint64_t>(start + static_cast<uint64_t>(per_page), total64));
  p.next = product(static_cast<uint64_t>(page), static_cast<uint64_t>(per_page)) < total64 ? page + 1 : 1;
  return p;
}

http::Response ListResponse(const std::vector<Row>& rows, const Query& query) {
  std::string error;
  std::optional<Page> page = Paginate(query, rows.size(), &error);
  if (!page) return ApiError(400, error);
  boost::json::array body;
  for (size_t i = page->start; i < page->end; ++i) body.push_back(rows[i].json);
  http::Response r = JsonResponse(body);
  r.SetHeader("X-Next-Page", fmt::format("{}", page->next));
  return r;
}

http::Response ListRouters(const ApiView& view, const Query& query) {
  const Criterion criterion(query);
  std::vector<Row> rows;
  for (const auto& [name, info] : view.runtime.routers) {
    const std::string rule = StringOf(info.config, "rule");
    const std::string service = StringOf(info.config, "service");
    if (criterion.active &&
        !(criterion.WithStatus(info.status) && criterion.SearchIn({rule, name}) &&
          criterion.FilterService(service) && criterion.FilterMiddleware(Strings(info.config, "middlewares")))) {
      continue;
    }
    Row row{name, RouterJson(name, info, true), {}, {}};
    row.text_keys = {{"provider", ProviderOf(name)},
                     {"status", std::string(RuntimeStatusName(info.status))},
                     {"rule", rule},
                     {"service", service}};
    row.int_keys = {{"priority", PriorityOf(info.config)},
                    {"entryPoints", static_cast<int64_t>(Strings(info.config, "entryPoints").size())}};
    rows.push_back(std::move(row));
  }
  SortRows(rows, query, {"provider", "status", "rule", "service"}, {"priority", "entryPoints"});
  return ListResponse(rows, query);
}

int64_t ServerCount(const boost::json::object& service) {
  const boost::json::value* lb = service.if_contains("loadBalancer");
  if (lb == nullptr || !lb->is_object()) return 0;
  const boost::json::value* servers = lb->get_object().if_contains("servers");
  return servers != nullptr && servers->is_array() ? static_cast<int64_t>(servers->get_array().size()) : 0;
}

http::Response ListServices(const ApiView& view, const Query& query) {
  const Criterion criterion(query);
  std::vector<Row> rows;
  for (const auto& [name, info] : view.runtime.services) {
    if (criterion.active && !(criterion.WithStatus(info.status) && criterion.SearchIn({name}))) continue;
    Row row{name, ServiceJson(name, info, true), {}, {}};
    row.text_keys = {{"provider", ProviderOf(name)},
                     {"status", std::string(RuntimeStatusName(info.status))},
                     {"type", TypeOf(info.config, ServiceKinds())}};
    row.int_keys = {{"servers", ServerCount(info.config)}};
    rows.push_back(std::move(row));
  }
  SortRows(rows, query, {"type", "provider", "status"}, {"servers"});
  return ListResponse(rows, query);
}

http::Response ListMiddlewares(const ApiView& view, const Query& query) {
  const Criterion criterion(query);
  std::vector<Row> rows;
  for (const auto& [name, info] : view.runtime.middlewares) {
    if (criterion.active && !(criterion.WithStatus(info.status) && criterion.SearchIn({name}))) continue;
    Row row{name, MiddlewareJson(name, info, true), {}, {}};
    row.text_keys = {{"provider", ProviderOf(name)},
                     {"status", std::string(RuntimeStatusName(info.status))},
                     {"type", TypeOf(info.config, MiddlewareKinds())}};
    rows.push_back(std::move(row));
  }
  SortRows(rows, query, {"type", "provider", "status"}, {});
  return ListResponse(rows, query);
}

http::Response ListEntryPoints(const ApiView& view, const Query& query) {
  std::vector<Row> rows;
  for (const EntryPoint& ep : view.entry_points) rows.push_back(Row{ep.name, EntryPointJson(ep), {}, {}});
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.name < b.name; });
  return ListResponse(rows, query);
}

// ---- Single objects ----------------------------------------------------------------------------

// Looks `escaped` up after path-unescaping it; `variable` and `kind` name it in Traefik's errors.
template <typename Map, typename Render>
http::Response One(const Map& map, std::string_view escaped, std::string_view variable, std::string_view kind,
                   Render render) {
  std::string error;
  std::optional<std::string> id = Unescape(escaped, false, &error);
  if (!id) return ApiError(400, fmt::format("unable to decode {} {}: {}", variable, GoQuote(escaped), error));
  auto it = map.find(*id);
  if (it == map.end()) return ApiError(404, fmt::format("{} not found: {}", kind, *id));
  return JsonResponse(render(it->first, it->second));
}

http::Response OneEntryPoint(const ApiView& view, std::string_view escaped) {
  std::string error;
  std::optional<std::string> id = Unescape(escaped, false, &error);
  if (!id) {
    return ApiError(400, fmt::format("unable to decode entryPointID {}: {}", GoQuote(escaped), error));
  }
  for (const EntryPoint& ep : view.entry_points) {
    if (ep.name == *id) return JsonResponse(EntryPointJson(ep));
  }
  return ApiError(404, fmt::format("entry point not found: {}", *id));
}

// ---- Overview, rawdata, version, drains, ping --------------------------------------------------

boost::json::object SectionJson(const OverviewSection& s) {
  return boost::json::object{{"total", s.total}, {"warnings", s.warnings}, {"errors", s.errors}};
}

template <typename Map>
OverviewSection Count(const Map& map) {
  OverviewSection s;
  s.total = static_cast<int>(map.size());
  for (const auto& [name, info] : map) {
    if (info.status == RuntimeStatus::kDisabled) ++s.errors;
    if (info.status == RuntimeStatus::kWarning) ++s.warnings;
  }
  return s;
}

http::Response Overview(const ApiView& view) {
  const OverviewSection zero;
  boost::json::object out;
  out["http"] = boost::json::object{{"routers", SectionJson(Count(view.runtime.routers))},
                                    {"services", SectionJson(Count(view.runtime.services))},
                                    {"middlewares", SectionJson(Count(view.runtime.middlewares))}};
  out["tcp"] = boost::json::object{
      {"routers", SectionJson(zero)}, {"services", SectionJson(zero)}, {"middlewares", SectionJson(zero)}};
  out["udp"] = boost::json::object{{"routers", SectionJson(zero)}, {"services", SectionJson(zero)}};
  if (view.certificates) out["certificates"] = SectionJson(*view.certificates);
  out["features"] =
      boost::json::object{{"tracing", view.tracing}, {"metrics", view.metrics}, {"accessLog", view.access_log}};
  if (!view.providers.empty()) out["providers"] = ToArray(view.providers);
  return JsonResponse(out);
}

http::Response RawData(const ApiView& view) {
  boost::json::object out;
  boost::json::object routers, middlewares, services;
  for (const auto& [name, info] : view.runtime.routers) routers[name] = RouterJson(name, info, false);
  for (const auto& [name, info] : view.runtime.middlewares) middlewares[name] = MiddlewareJson(name, info, false);
  for (const auto& [name, info] : view.runtime.services) services[name] = ServiceJson(name, info, false);
  if (!routers.empty()) out["routers"] = std::move(routers);
  if (!middlewares.empty()) out["middlewares"] = std::move(middlewares);
  if (!services.empty()) out["services"] = std::move(services);
  return JsonResponse(out);
}

// pkg/version: rendered by unrolled/render (json.Marshal, no newline, charset in the type).
http::Response Version(const ApiView& view) {
  http::Response r;
  r.SetHeader("Content-Type", "application/json; charset=UTF-8");
  r.body = GoJson(boost::json::object{{"Version", view.version},
                                      {"Codename", view.codename},
                                      {"startDate", internal::FormatGoTime(view.start_date)}});
  return r;
}

http::Response Drains(const ApiView& view) {
  std::vector<const Drain*> drains;
  for (const Drain& d : view.drains) drains.push_back(&d);
  std::sort(drains.begin(), drains.end(), [](const Drain* a, const Drain* b) {
    return std::tie(a->task_arn, a->url) < std::tie(b->task_arn, b->url);
  });
  boost::json::array out;
  for (const Drain* d : drains) {
    out.push_back(boost::json::object{{"taskArn", d->task_arn},
                                      {"url", d->url},
                                      {"inFlight", d->in_flight},
                                      {"since", internal::FormatGoTime(d->since)},
                                      {"deadline", internal::FormatGoTime(d->deadline)}});
  }
  return JsonResponse(out);
}

http::Response Ping(const ApiView& view, std::string_view method) {
  http::Response r;
  r.status = view.shutting_down ? 503 : 200;
  r.SetHeader("Content-Type", "text/plain; charset=utf-8");
  if (method != "HEAD") r.body = view.shutting_down ? "Service Unavailable" : "OK";
  return r;
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  path.remove_prefix(1);  // the leading '/'
  while (true) {
    const size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

boost::json::object EntryPointDefaults() {
  return boost::json::object{
      {"transport", boost::json::object{{"lifeCycle", boost::json::object{{"graceTimeOut", "10s"}}},
                                        {"respondingTimeouts",
                                         boost::json::object{{"readTimeout", "1m0s"}, {"idleTimeout", "3m0s"}}}}},
      {"forwardedHeaders", boost::json::object{}},
      {"http", boost::json::object{{"sanitizePath", true},
                                   {"maxHeaderBytes", 1 << 20},
                                   {"underscoreHeadersStrategy", "keep"}}},
      {"http2", boost::json::object{{"maxConcurrentStreams", 250},
                                    {"maxDecoderHeaderTableSize", 4096},
                                    {"maxEncoderHeaderTableSize", 4096}}},
      {"udp", boost::json::object{{"timeout", "3s"}}},
  };
}

std::vector<std::string> DefaultEntryPoints(const std::vector<EntryPoint>& entry_points) {
  const bool any_default =
      std::any_of(entry_points.begin(), entry_points.end(), [](const EntryPoint& ep) { return ep.as_default; });
  std::vector<std::string> out;
  for (const EntryPoint& ep : entry_points) {
    if (any_default && !ep.as_default) continue;
    const size_t slash = ep.address.find('/');
    const std::string protocol = slash == std::string::npos ? "tcp" : Lower(ep.address.substr(slash + 1));
    if (protocol == "udp" || ep.name == "traefik") continue;
    out.push_back(ep.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> OverviewProviders(const std::vector<std::string>& kinds) {
  // Traefik's static Providers struct, in declaration order, with the kinds the edge knows.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kOrder = {
      {{"file", "File"}, {"rest", "Rest"}, {"ecs", "Ecs"}, {"http", "HTTP"}}};
  std::vector<std::string> out;
  for (const auto& [kind, name] : kOrder) {
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) out.emplace_back(name);
  }
  return out;
}

http::Response ServeApi(const ApiView& view, const http::Request& request) {
  const std::string_view path = request.Path();
  if (path.starts_with("/ping")) return Ping(view, request.method);
  if (!path.starts_with("/api")) {
    if (std::optional<http::Response> page = ServeDashboard(request)) return std::move(*page);
    return NotFoundPage();
  }

  const std::string clean = CleanPath(path);
  if (clean != path) {
    http::Response r;
    r.status = 301;
    const std::string_view query = request.Query();
    r.SetHeader("Location", query.empty() ? clean : clean + "?" + std::string(query));
    return r;
  }

  const std::vector<std::string_view> s = Segments(path);
  const Query query(request.Query());
  // Each route: does it match, and its answer. Matched with the wrong method: 405.
  std::function<http::Response()> answer;
  const auto is = [&](std::initializer_list<std::string_view> pattern) {
    if (s.size() != pattern.size()) return false;
    size_t i = 0;
    for (std::string_view p : pattern) {
      if (p == "*" ? s[i].empty() : p != s[i]) return false;
      ++i;
    }
    return true;
  };
  const RuntimeConfig& rt = view.runtime;
  if (is({"api", "rawdata"})) {
    answer = [&] { return RawData(view); };
  } else if (is({"api", "overview"})) {
    answer = [&] { return Overview(view); };
  } else if (is({"api", "version"})) {
    answer = [&] { return Version(view); };
  } else if (is({"api", "entrypoints"})) {
    answer = [&] { return ListEntryPoints(view, query); };
  } else if (is({"api", "entrypoints", "*"})) {
    answer = [&] { return OneEntryPoint(view, s[2]); };
  } else if (is({"api", "http", "routers"})) {
    answer = [&] { return ListRouters(view, query); };
  } else if (is({"api", "http", "routers", "*"})) {
    answer = [&] {
      return One(rt.routers, s[3], "routerID", "router",
                 [](const std::string& n, const RouterInfo& i) { return RouterJson(n, i, true); });
    };
  } else if (is({"api", "http", "services"})) {
    answer = [&] { return ListServices(view, query); };
  } else if (is({"api", "http", "services", "*"})) {
    answer = [&] {
      return One(rt.services, s[3], "serviceID", "service",
                 [](const std::string& n, const ServiceInfo& i) { return ServiceJson(n, i, true); });
    };
  } else if (is({"api", "http", "middlewares"})) {
    answer = [&] { return ListMiddlewares(view, query); };
  } else if (is({"api", "http", "middlewares", "*"})) {
    answer = [&] {
      return One(rt.middlewares, s[3], "middlewareID", "middleware",
                 [](const std::string& n, const MiddlewareInfo& i) { return MiddlewareJson(n, i, true); });
    };
  } else if (is({"api", "tcp", "routers"}) || is({"api", "tcp", "services"}) || is({"api", "tcp", "middlewares"}) ||
             is({"api", "udp", "routers"}) || is({"api", "udp", "services"})) {
    answer = [&] { return ListResponse({}, query); };
  } else if (is({"api", "tcp", "routers", "*"}) || is({"api", "tcp", "services", "*"}) ||
             is({"api", "tcp", "middlewares", "*"}) || is({"api", "udp", "routers", "*"}) ||
             is({"api", "udp", "services", "*"})) {
    answer = [&] {
      static const std::map<std::string, int> kNone;
      const std::string_view collection = s[2];
      const std::string_view kind = collection == "routers" ? "router" : collection == "services" ? "service" : "middleware";
      const std::string variable = fmt::format("{}ID", kind);
      return One(kNone, s[3], variable, kind, [](const std::string&, int) { return boost::json::object{}; });
    };
  } else if (is({"api", "paddock", "drains"})) {
    answer = [&] { return Drains(view); };
  } else {
    return NotFoundPage();
  }
  if (request.method != "GET") {
    http::Response r;
    r.status = 405;
    return r;
  }
  return answer();
}

}  // namespace paddock::edge
