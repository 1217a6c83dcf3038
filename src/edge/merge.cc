#include "edge/merge.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

namespace paddock::edge {
namespace {

namespace json = boost::json;

// The words Traefik's merge logs for a resource, from its section and map.
std::string ResourceWords(std::string_view section, std::string_view map) {
  static const std::map<std::pair<std::string_view, std::string_view>, std::string_view> kWords = {
      {{"http", "routers"}, "HTTP router"},
      {{"http", "services"}, "HTTP service"},
      {{"http", "middlewares"}, "HTTP middleware"},
      {{"http", "serversTransports"}, "HTTP servers transport"},
      {{"tcp", "routers"}, "TCP router"},
      {{"tcp", "services"}, "TCP service"},
      {{"tcp", "middlewares"}, "TCP middleware"},
      {{"tcp", "serversTransports"}, "TCP servers transport"},
      {{"udp", "routers"}, "UDP router"},
      {{"udp", "services"}, "UDP service"},
  };
  auto it = kWords.find({section, map});
  if (it != kWords.end()) return std::string(it->second);
  return fmt::format("{} {}", section, map);
}

// Services whose load balancers merge their servers, and the field a server is known by.
std::string_view ServerIdentity(std::string_view section) {
  if (section == "http") return "url";
  if (section == "tcp" || section == "udp") return "address";
  return {};
}

std::string ServerKeyOf(const json::value& server, std::string_view field) {
  if (const json::object* o = server.if_object()) {
    if (const json::value* v = o->if_contains(field); v != nullptr && v->is_string()) {
      return std::string(v->get_string());
    }
  }
  return {};
}

// Whether two objects are equal once `skip` is left out of both.
bool EqualExcept(const json::object& a, const json::object& b, std::string_view skip) {
  size_t counted = 0;
  for (const auto& [key, value] : a) {
    if (key == skip) continue;
    ++counted;
    const json::value* other = b.if_contains(key);
    if (other == nullptr || *other != value) return false;
  }
  size_t b_counted = b.size() - (b.contains(skip) ? 1 : 0);
  return counted == b_counted;
}

// parent[key] as an object, made one when it is not.
json::object& ObjectAt(json::object& parent, std::string_view key) {
  json::value& v = parent[key];
  if (!v.is_object()) v.emplace_object();
  return v.get_object();
}

struct ResourceKey {
  std::string section;
  std::string map;
  std::string name;
  auto operator<=>(const ResourceKey&) const = default;
};

class Merger {
 public:
  explicit Merger(MergeStrategy strategy) : strategy_(strategy) {}

  void Add(NamedConfiguration& part) {
    for (auto& [section_key, section_value] : part.config) {
      std::string section(section_key);
      json::object* src_section = section_value.if_object();
      if (src_section == nullptr) {
        errors_.push_back(fmt::format("{}: section \"{}\" is not an object, ignored", part.name, section));
        continue;
      }
      for (auto& [field_key, field_value] : *src_section) {
        std::string field(field_key);
        if (json::object* src_map = field_value.if_object()) {
          MergeMap(section, field, *src_map, part.name);
        } else if (section == "tls" && field == "certificates" && field_value.is_array()) {
          MergeCertificates(field_value.get_array(), part.name);
        } else {
          errors_.push_back(
              fmt::format("{}: \"{}.{}\" is not a map of resources, ignored", part.name, section, field));
        }
      }
    }
  }

  MergedConfiguration Finish() && {
    for (const ResourceKey& key : to_delete_) {
      const std::vector<std::string>& origins = origins_[key];
      errors_.push_back(fmt::format("{} \"{}\" defined multiple times with different configurations (in {})",
                                    ResourceWords(key.section, key.map), key.name, fmt::join(origins, ", ")));
      merged_[key.section].as_object()[key.map].as_object().erase(key.name);
    }
    MergedConfiguration out;
    for (auto& [section_key, section_value] : merged_) {
      json::object section;
      for (auto& [field_key, field_value] : section_value.as_object()) {
        if (json::object* map = field_value.if_object()) {
          if (map->empty()) continue;
          std::vector<std::string> names;
          names.reserve(map->size());
          for (const auto& entry : *map) names.emplace_back(entry.key());
          std::sort(names.begin(), names.end());
          json::object sorted;
          sorted.reserve(names.size());
          for (const std::string& name : names) sorted[name] = std::move((*map)[name]);
          section[field_key] = std::move(sorted);
        } else if (json::array* list = field_value.if_array(); list != nullptr && !list->empty()) {
          section[field_key] = std::move(*list);
        }
      }
      if (!section.empty()) out.config[section_key] = std::move(section);
    }
    out.errors = std::move(errors_);
    return out;
  }

 private:
  void MergeMap(const std::string& section, const std::string& map, json::object& src, const std::string& origin) {
    json::object& dst_map = ObjectAt(ObjectAt(merged_, section), map);
    for (auto& [name_key, value] : src) {
      ResourceKey key{section, map, std::string(name_key)};
      origins_[key].push_back(origin);
      json::value* existing = dst_map.if_contains(name_key);
      if (existing == nullptr) {
        dst_map[name_key] = std::move(value);
        continue;
      }
      if (strategy_ == MergeStrategy::kSkipDuplicates) {
        errors_.push_back(fmt::format("{}: {} \"{}\" already configured, skipping", origin,
                                      ResourceWords(section, map), key.name));
        continue;
      }
      if (!TryMerge(key, *existing, value)) to_delete_.insert(std::move(key));
    }
  }

  bool TryMerge(const ResourceKey& key, json::value& dst, const json::value& src) {
    std::string_view identity = key.map == "services" ? ServerIdentity(key.section) : std::string_view();
    if (identity.empty()) return dst == src;
    json::object* dst_service = dst.if_object();
    const json::object* src_service = src.if_object();
    if (dst_service == nullptr || src_service == nullptr) return dst == src;
    json::value* dst_lb_value = dst_service->if_contains("loadBalancer");
    const json::value* src_lb_value = src_service->if_contains("loadBalancer");
    if (dst_lb_value == nullptr || src_lb_value == nullptr) return dst == src;
    json::object* dst_lb = dst_lb_value->if_object();
    const json::object* src_lb = src_lb_value->if_object();
    if (dst_lb == nullptr || src_lb == nullptr) return dst == src;
    if (!EqualExcept(*dst_lb, *src_lb, "servers")) return false;

    const json::value* src_servers_value = src_lb->if_contains("servers");
    const json::array* src_servers = src_servers_value != nullptr ? src_servers_value->if_array() : nullptr;
    if (src_servers == nullptr || src_servers->empty()) return true;
    json::value& dst_servers_value = (*dst_lb)["servers"];
    if (!dst_servers_value.is_array()) dst_servers_value.emplace_array();
    json::array& dst_servers = dst_servers_value.get_array();

    // The servers already there, as Traefik collects them before each merge (the servers a
    // merge appends are not checked against each other).
    auto [it, fresh] = server_keys_.try_emplace(key);
    std::unordered_set<std::string>& known = it->second;
    if (fresh) {
      for (const json::value& server : dst_servers) known.insert(ServerKeyOf(server, identity));
    }
    std::vector<std::string> added;
    for (const json::value& server : *src_servers) {
      std::string server_key = ServerKeyOf(server, identity);
      if (known.contains(server_key)) continue;
      dst_servers.push_back(server);
      added.push_back(std::move(server_key));
    }
    known.insert(added.begin(), added.end());
    return true;
  }

  void MergeCertificates(json::array& src, const std::string& origin) {
    json::value& dst_value = ObjectAt(merged_, "tls")["certificates"];
    if (!dst_value.is_array()) dst_value.emplace_array();
    json::array& dst = dst_value.get_array();
    auto field = [](const json::value& cert, std::string_view name) -> const json::value* {
      const json::object* o = cert.if_object();
      return o != nullptr ? o->if_contains(name) : nullptr;
    };
    auto same_field = [&](const json::value& a, const json::value& b, std::string_view name) {
      const json::value* x = field(a, name);
      const json::value* y = field(b, name);
      if (x == nullptr || y == nullptr) return x == y;
      return *x == *y;
    };
    for (json::value& cert : src) {
      json::value* found = nullptr;
      for (json::value& existing : dst) {
        if (same_field(existing, cert, "certFile") && same_field(existing, cert, "keyFile")) {
          found = &existing;
          break;
        }
      }
      if (found == nullptr) {
        dst.push_back(std::move(cert));
        continue;
      }
      if (strategy_ == MergeStrategy::kSkipDuplicates) {
        errors_.push_back(fmt::format("{}: TLS certificate already configured, skipping", origin));
        continue;
      }
      const json::value* stores = field(cert, "stores");
      if (stores == nullptr || !stores->is_array() || !found->is_object()) continue;
      json::value& dst_stores_value = found->as_object()["stores"];
      if (!dst_stores_value.is_array()) dst_stores_value.emplace_array();
      json::array& dst_stores = dst_stores_value.get_array();
      for (const json::value& store : stores->get_array()) {
        if (std::find(dst_stores.begin(), dst_stores.end(), store) == dst_stores.end()) dst_stores.push_back(store);
      }
    }
  }

  MergeStrategy strategy_;
  json::object merged_;
  std::map<ResourceKey, std::vector<std::string>> origins_;
  std::set<ResourceKey> to_delete_;
  std::map<ResourceKey, std::unordered_set<std::string>> server_keys_;
  std::vector<std::string> errors_;
};

}  // namespace

MergedConfiguration MergeConfigurations(std::vector<NamedConfiguration> configurations, MergeStrategy strategy) {
  Merger merger(strategy);
  for (NamedConfiguration& part : configurations) merger.Add(part);
  return std::move(merger).Finish();
}

}  // namespace paddock::edge
