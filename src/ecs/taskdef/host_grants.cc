#include "ecs/taskdef/host_grants.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "common/json_fields.h"

namespace paddock::ecs::taskdef {
namespace json = boost::json;
using json_fields::Bool;
using json_fields::Obj;
using json_fields::Objects;
using json_fields::Str;
using json_fields::Strings;

std::string_view BareCapability(std::string_view name) {
  if (name.starts_with("CAP_")) name.remove_prefix(4);
  return name;
}

int64_t RealtimePriorityOf(const json::object& container) {
  int64_t highest = 0;
  for (const json::object* u : Objects(container, "ulimits")) {
    std::string name = Str(*u, "name");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (name != "rtprio") continue;
    for (const char* key : {"softLimit", "hardLimit"}) {
      const json::value* v = u->if_contains(key);
      if (v == nullptr) continue;
      // Beyond int64 (unlimited as an unsigned number) is the highest there is.
      if (v->is_uint64()) return INT64_MAX;
      if (v->is_int64()) highest = std::max(highest, v->get_int64());
    }
  }
  return highest;
}

std::vector<HostGrant> HostGrantsOf(const json::object& definition) {
  std::vector<HostGrant> out;
  if (Str(definition, "networkMode") == "host") out.push_back({HostGrantKind::kHostNetwork, "networkMode 'host'"});
  if (Str(definition, "pidMode") == "host") out.push_back({HostGrantKind::kHostPid, "pidMode 'host'"});
  if (Str(definition, "ipcMode") == "host") out.push_back({HostGrantKind::kHostIpc, "ipcMode 'host'"});
  for (const json::object* v : Objects(definition, "volumes")) {
    if (std::string source = Str(Obj(*v, "host"), "sourcePath"); !source.empty())
      out.push_back({HostGrantKind::kHostPath,
                     fmt::format("volume '{}' binds the host path '{}'", Str(*v, "name"), source)});
  }
  for (const json::object* c : Objects(definition, "containerDefinitions")) {
    const std::string name = Str(*c, "name");
    if (Bool(*c, "privileged").value_or(false))
      out.push_back({HostGrantKind::kPrivileged, fmt::format("container '{}' is privileged", name)});
    const json::object& lp = Obj(*c, "linuxParameters");
    for (const std::string& cap : Strings(Obj(lp, "capabilities"), "add")) {
      if (BareCapability(cap) != "SYS_PTRACE")
        out.push_back({HostGrantKind::kCapability, fmt::format("container '{}' adds the capability {}", name, cap)});
    }
    for (const json::object* d : Objects(lp, "devices"))
      out.push_back({HostGrantKind::kDevice,
                     fmt::format("container '{}' maps the host device '{}'", name, Str(*d, "hostPath"))});
    if (int64_t rtprio = RealtimePriorityOf(*c); rtprio > 0)
      out.push_back({HostGrantKind::kRealtimePriority,
                     fmt::format("container '{}' sets the ulimit rtprio to {} (real-time scheduling)", name, rtprio)});
  }
  return out;
}

std::vector<std::string> HostGrantAttributes(const std::vector<HostGrant>& grants) {
  std::vector<std::string> out;
  if (grants.empty()) return out;
  out.emplace_back(kHostAccessAttribute);
  for (const HostGrant& g : grants) {
    if (g.kind == HostGrantKind::kPrivileged) {
      out.emplace_back(kPrivilegedAttribute);
      break;
    }
  }
  return out;
}

}  // namespace paddock::ecs::taskdef
