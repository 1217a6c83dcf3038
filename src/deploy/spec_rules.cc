// deploy/spec: the vocabularies, the semantic rules (CheckAppSpec), the JSON form and image
// overrides. ParseAppSpec (TOML) is in spec.cc.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <set>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "deploy/sizing.h"
#include "deploy/spec.h"

namespace paddock::deploy {
namespace json = boost::json;

std::string_view CapacityName(Capacity c) {
  switch (c) {
    case Capacity::kFargate: return "fargate";
    case Capacity::kEc2: return "ec2";
    case Capacity::kInterruptible: return "interruptible";
  }
  return "fargate";
}

std::optional<Capacity> ParseCapacity(std::string_view s) {
  for (Capacity c : {Capacity::kFargate, Capacity::kEc2, Capacity::kInterruptible}) {
    if (CapacityName(c) == s) return c;
  }
  return std::nullopt;
}

std::string_view AccessName(Access a) { return a == Access::kPrivate ? "private" : "public"; }

std::optional<Access> ParseAccess(std::string_view s) {
  if (s == "public") return Access::kPublic;
  if (s == "private") return Access::kPrivate;
  return std::nullopt;
}

namespace {

bool IsLabel(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || !(s[0] >= 'a' && s[0] <= 'z') || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsReservedEnv(std::string_view s) { return s == "PORT" || s.starts_with("PADDOCK_"); }

SpecProblem Problem(std::string path, std::string_view what) { return {path, fmt::format("{} {}", path, what)}; }

}  // namespace

std::optional<SpecProblem> CheckAppSpec(const AppSpec& spec) {
  if (!IsLabel(spec.project, 63)) {
    return Problem("project.name",
                   fmt::format("must be 1 to 63 lowercase letters, digits and '-', starting with a letter and not "
                               "ending with '-' (got \"{}\")",
                               spec.project));
  }
  if (spec.containers.empty()) return Problem("containers", "must name at least one container");
  if (spec.containers.size() > 9) {
    return Problem("containers", fmt::format("may name at most 9 containers (got {})", spec.containers.size()));
  }
  std::set<std::string_view> names;
  for (const ContainerSpec& c : spec.containers) {
    const std::string at = "containers." + c.name;
    if (!IsLabel(c.name, 32)) {
      return Problem(at, "names must be 1 to 32 lowercase letters, digits and '-', starting with a letter");
    }
    if (!names.insert(c.name).second) return Problem(at, "is named twice");
    if (c.name == "paddock-identity") return Problem(at, "is the identity sidecar's name (D8): choose another");
    if (c.image.empty() || std::any_of(c.image.begin(), c.image.end(), [](char ch) {
          return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
        })) {
      return Problem(at + ".image", "must be a non-empty image reference without whitespace");
    }
    if (c.port && *c.port == 0) return Problem(at + ".port", "must be between 1 and 65535 (got 0)");
    for (const auto& [k, v] : c.env) {
      if (!IsEnvName(k)) {
        return Problem(at + ".env." + k, "is not a valid variable name (letters, digits and '_', not starting with a digit)");
      }
      if (IsReservedEnv(k)) return Problem(at + ".env." + k, "is set by Paddock (PORT and PADDOCK_* are reserved)");
      if (v.size() > 4096) return Problem(at + ".env." + k, fmt::format("is longer than 4096 bytes ({})", v.size()));
    }
    if (c.health_check) {
      const HealthCheck& h = *c.health_check;
      if (!c.port) return Problem(at + ".health_check", "needs the container's port");
      if (h.path.empty() || h.path[0] != '/') return Problem(at + ".health_check.path", "must start with '/'");
      if (h.path.find_first_of("` \t\r\n") != std::string::npos) {
        return Problem(at + ".health_check.path", "must not contain whitespace or '`'");
      }
      if (h.interval_seconds < 1 || h.interval_seconds > 300) {
        return Problem(at + ".health_check.interval", fmt::format("must be between 1s and 300s (got {}s)", h.interval_seconds));
      }
      if (h.timeout_seconds < 1 || h.timeout_seconds > 60 || h.timeout_seconds >= h.interval_seconds) {
        return Problem(at + ".health_check.timeout",
                       fmt::format("must be between 1s and 60s and shorter than the interval (got {}s)", h.timeout_seconds));
      }
    }
  }
  if (spec.deploy.replicas < 0 || spec.deploy.replicas > 100) {
    return Problem("deploy.replicas", fmt::format("must be between 0 and 100 (got {})", spec.deploy.replicas));
  }
  if (auto cpu = ParseCpuUnits(spec.deploy.cpu); !cpu.ok()) return Problem("deploy.cpu", cpu.status().message());
  if (auto mem = ParseMemoryMib(spec.deploy.memory); !mem.ok()) return Problem("deploy.memory", mem.status().message());
  if (auto size = ResolveSize(spec.deploy.cpu, spec.deploy.memory, spec.deploy.capacity); !size.ok()) {
    return Problem("deploy", size.status().message());
  }
  std::set<std::string_view> prefixes;
  for (const Route& r : spec.routes) {
    const std::string at = "routes." + r.path_prefix;
    if (r.path_prefix.empty() || r.path_prefix[0] != '/') return Problem(at, "must be a path starting with '/'");
    if (r.path_prefix.find_first_of("` \t\r\n") != std::string::npos) {
      return Problem(at, "must not contain whitespace or '`'");
    }
    if (!prefixes.insert(r.path_prefix).second) return Problem(at, "is routed twice");
    auto it = std::find_if(spec.containers.begin(), spec.containers.end(),
                           [&](const ContainerSpec& c) { return c.name == r.container; });
    if (it == spec.containers.end()) return Problem(at, fmt::format("names no container (\"{}\")", r.container));
    if (!it->port) return Problem(at, fmt::format("routes to \"{}\", which has no port", r.container));
  }
  if (spec.identity_audiences.size() > 10) {
    return Problem("identity.audiences", fmt::format("may name at most 10 token files (got {})", spec.identity_audiences.size()));
  }
  for (const auto& [file, audience] : spec.identity_audiences) {
    const std::string at = "identity.audiences." + file;
    const bool file_ok = !file.empty() && file.size() <= 64 && std::isalnum(static_cast<unsigned char>(file[0])) &&
                         std::all_of(file.begin(), file.end(), [](char ch) {
                           return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
                         });
    if (!file_ok) {
      return Problem(at, "is not a token file name (1 to 64 letters, digits, '.', '_' and '-', starting with a letter or digit)");
    }
    const bool audience_ok = !audience.empty() && audience.size() <= 256 &&
                             std::all_of(audience.begin(), audience.end(), [](char ch) {
                               return ch > ' ' && ch < 0x7f && std::string_view("\"'\\`$").find(ch) == std::string_view::npos;
                             });
    if (!audience_ok) {
      return Problem(at, "must be an audience of 1 to 256 printable characters without whitespace, quotes, '\\', '`' or '$'");
    }
  }
  return std::nullopt;
}

namespace {

json::object HealthJson(const HealthCheck& h) {
  return {{"path", h.path}, {"interval_seconds", h.interval_seconds}, {"timeout_seconds", h.timeout_seconds}};
}

Status Bad(std::string_view what) { return InvalidArgument(fmt::format("app spec: {}", what)); }

StatusOr<std::string> Str(const json::object& o, std::string_view key, std::string_view at, bool required = true) {
  const json::value* v = o.if_contains(key);
  if (!v) {
    if (required) return Bad(fmt::format("{}.{} is missing", at, key));
    return std::string();
  }
  if (!v->is_string()) return Bad(fmt::format("{}.{} must be a string", at, key));
  return std::string(v->as_string());
}

StatusOr<int64_t> Int(const json::object& o, std::string_view key, std::string_view at, int64_t dflt) {
  const json::value* v = o.if_contains(key);
  if (!v) return dflt;
  // A value built in memory may hold an unsigned integer; one parsed from text holds int64.
  if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(v->as_uint64());
  if (!v->is_int64()) return Bad(fmt::format("{}.{} must be an integer", at, key));
  return v->as_int64();
}

}  // namespace

json::object ToJson(const AppSpec& spec) {
  json::array containers;
  for (const ContainerSpec& c : spec.containers) {
    json::object o{{"name", c.name}, {"image", c.image}};
    if (c.port) o["port"] = static_cast<int64_t>(*c.port);
    if (!c.command.empty()) {
      json::array cmd;
      for (const std::string& a : c.command) cmd.emplace_back(a);
      o["command"] = std::move(cmd);
    }
    if (!c.env.empty()) {
      json::object env;
      for (const auto& [k, v] : c.env) env[k] = v;
      o["env"] = std::move(env);
    }
    if (c.health_check) o["health_check"] = HealthJson(*c.health_check);
    containers.emplace_back(std::move(o));
  }
  json::array routes;
  for (const Route& r : spec.routes) {
    routes.emplace_back(json::object{{"path", r.path_prefix}, {"container", r.container}, {"access", AccessName(r.access)}});
  }
  json::object out{{"project", spec.project},
          {"containers", std::move(containers)},
          {"deploy",
           {{"replicas", spec.deploy.replicas},
            {"cpu", spec.deploy.cpu},
            {"memory", spec.deploy.memory},
            {"capacity", CapacityName(spec.deploy.capacity)}}},
          {"routes", std::move(routes)}};
  if (!spec.identity_audiences.empty()) {
    json::object audiences;
    for (const auto& [file, audience] : spec.identity_audiences) audiences[file] = audience;
    out["identity"] = json::object{{"audiences", std::move(audiences)}};
  }
  return out;
}

StatusOr<AppSpec> AppSpecFromJson(const json::value& value) {
  if (!value.is_object()) return Bad("must be an object");
  const json::object& o = value.as_object();
  AppSpec spec;
  ASSIGN_OR_RETURN(spec.project, Str(o, "project", "spec"));
  const json::value* cs = o.if_contains("containers");
  if (!cs || !cs->is_array()) return Bad("containers must be an array");
  for (const json::value& cv : cs->as_array()) {
    if (!cv.is_object()) return Bad("containers[] must be objects");
    const json::object& c = cv.as_object();
    ContainerSpec out;
    ASSIGN_OR_RETURN(out.name, Str(c, "name", "containers[]"));
    const std::string at = "containers." + out.name;
    ASSIGN_OR_RETURN(out.image, Str(c, "image", at));
    if (c.contains("port")) {
      ASSIGN_OR_RETURN(int64_t port, Int(c, "port", at, 0));
      if (port < 0 || port > 65535) return Bad(fmt::format("{}.port must be between 1 and 65535", at));
      out.port = static_cast<uint16_t>(port);
    }
    if (const json::value* cmd = c.if_contains("command")) {
      if (!cmd->is_array()) return Bad(fmt::format("{}.command must be an array of strings", at));
      for (const json::value& a : cmd->as_array()) {
        if (!a.is_string()) return Bad(fmt::format("{}.command must be an array of strings", at));
        out.command.emplace_back(a.as_string());
      }
    }
    if (const json::value* env = c.if_contains("env")) {
      if (!env->is_object()) return Bad(fmt::format("{}.env must be an object of strings", at));
      for (const auto& [k, v] : env->as_object()) {
        if (!v.is_string()) return Bad(fmt::format("{}.env.{} must be a string", at, std::string_view(k)));
        out.env[std::string(k)] = std::string(v.as_string());
      }
    }
    if (const json::value* h = c.if_contains("health_check")) {
      if (!h->is_object()) return Bad(fmt::format("{}.health_check must be an object", at));
      HealthCheck hc;
      ASSIGN_OR_RETURN(hc.path, Str(h->as_object(), "path", at + ".health_check"));
      ASSIGN_OR_RETURN(int64_t interval, Int(h->as_object(), "interval_seconds", at + ".health_check", 10));
      ASSIGN_OR_RETURN(int64_t timeout, Int(h->as_object(), "timeout_seconds", at + ".health_check", 5));
      hc.interval_seconds = static_cast<int>(std::clamp<int64_t>(interval, -1, 100000));
      hc.timeout_seconds = static_cast<int>(std::clamp<int64_t>(timeout, -1, 100000));
      out.health_check = std::move(hc);
    }
    spec.containers.push_back(std::move(out));
  }
  std::sort(spec.containers.begin(), spec.containers.end(),
            [](const ContainerSpec& a, const ContainerSpec& b) { return a.name < b.name; });
  if (const json::value* d = o.if_contains("deploy")) {
    if (!d->is_object()) return Bad("deploy must be an object");
    ASSIGN_OR_RETURN(int64_t replicas, Int(d->as_object(), "replicas", "deploy", 1));
    spec.deploy.replicas = static_cast<int>(std::clamp<int64_t>(replicas, -1, 100000));
    ASSIGN_OR_RETURN(std::string cpu, Str(d->as_object(), "cpu", "deploy", false));
    ASSIGN_OR_RETURN(std::string memory, Str(d->as_object(), "memory", "deploy", false));
    ASSIGN_OR_RETURN(std::string capacity, Str(d->as_object(), "capacity", "deploy", false));
    if (!cpu.empty()) spec.deploy.cpu = cpu;
    if (!memory.empty()) spec.deploy.memory = memory;
    if (!capacity.empty()) {
      std::optional<Capacity> c = ParseCapacity(capacity);
      if (!c) return Bad(fmt::format("deploy.capacity must be fargate, ec2 or interruptible (got \"{}\")", capacity));
      spec.deploy.capacity = *c;
    }
  }
  if (const json::value* rs = o.if_contains("routes")) {
    if (!rs->is_array()) return Bad("routes must be an array");
    for (const json::value& rv : rs->as_array()) {
      if (!rv.is_object()) return Bad("routes[] must be objects");
      Route r;
      ASSIGN_OR_RETURN(r.path_prefix, Str(rv.as_object(), "path", "routes[]"));
      ASSIGN_OR_RETURN(r.container, Str(rv.as_object(), "container", "routes." + r.path_prefix));
      ASSIGN_OR_RETURN(std::string access, Str(rv.as_object(), "access", "routes." + r.path_prefix, false));
      if (!access.empty()) {
        std::optional<Access> a = ParseAccess(access);
        if (!a) return Bad(fmt::format("routes.{}.access must be public or private", r.path_prefix));
        r.access = *a;
      }
      spec.routes.push_back(std::move(r));
    }
  }
  std::sort(spec.routes.begin(), spec.routes.end(), [](const Route& a, const Route& b) {
    return a.path_prefix.size() != b.path_prefix.size() ? a.path_prefix.size() > b.path_prefix.size()
                                                        : a.path_prefix < b.path_prefix;
  });
  if (const json::value* id = o.if_contains("identity")) {
    const json::value* audiences = id->is_object() ? id->as_object().if_contains("audiences") : nullptr;
    if (!audiences || !audiences->is_object()) return Bad("identity.audiences must be an object");
    for (const auto& [file, audience] : audiences->as_object()) {
      if (!audience.is_string()) return Bad(fmt::format("identity.audiences.{} must be a string", std::string_view(file)));
      spec.identity_audiences[std::string(file)] = std::string(audience.as_string());
    }
  }
  if (std::optional<SpecProblem> p = CheckAppSpec(spec)) return Bad(p->message);
  return spec;
}

Status OverrideImage(AppSpec& spec, std::string_view container_equals_image) {
  size_t eq = container_equals_image.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument(fmt::format("--image takes CONTAINER=IMAGE (got \"{}\")", container_equals_image));
  }
  std::string_view name = container_equals_image.substr(0, eq);
  std::string_view image = container_equals_image.substr(eq + 1);
  if (image.empty()) return InvalidArgument(fmt::format("--image {}= names no image", name));
  for (ContainerSpec& c : spec.containers) {
    if (c.name == name) {
      // A refused override leaves the spec as it was.
      std::string previous = std::exchange(c.image, std::string(image));
      if (std::optional<SpecProblem> p = CheckAppSpec(spec)) {
        c.image = std::move(previous);
        return InvalidArgument(p->message);
      }
      return OkStatus();
    }
  }
  return InvalidArgument(fmt::format("--image names no container of the spec (\"{}\")", name));
}

}  // namespace paddock::deploy
