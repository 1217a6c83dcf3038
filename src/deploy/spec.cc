// deploy/spec: ParseAppSpec — paddock.toml (toml++) to an AppSpec, every error at its line.
//
// The document is read in three steps: each part (the base tables, then each [environments.<name>]
// table) is checked alone for unknown keys and wrong types, so a typo in an environment not deployed
// today is still an error; the chosen environment is merged over the base; the merged document is
// decoded with its required values and handed to CheckAppSpec, whose path is mapped back to a line.
// Lines are the keys' (toml++ keeps a key's source region when a table is copied, not a value's).
#include <algorithm>
#include <map>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "deploy/internal/spec_keys.h"
#include "deploy/spec.h"

namespace paddock::deploy {
namespace {

constexpr size_t kMaxSpecBytes = 256 * 1024;
// Durations beyond this are refused at decode time (CheckAppSpec's bounds are far lower); it keeps
// the arithmetic inside int.
constexpr int64_t kMaxSeconds = 1'000'000;

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

int LineOf(const toml::key& key) { return static_cast<int>(key.source().begin.line); }

// Decodes one table of paddock.toml's shape. `complete`: the table is the whole (merged) document,
// so required values must be present and each key's line is recorded for CheckAppSpec's paths;
// otherwise it is one part, checked for unknown keys and wrong types only. `prefix` is put before
// every path an error names ("environments.staging.").
class Decoder {
 public:
  Decoder(std::string_view file, std::string prefix, bool complete)
      : file_(file), prefix_(std::move(prefix)), complete_(complete) {}

  // "environments" is skipped here (ParseAppSpec's); every other key of `root` must be in `keys`.
  Status Decode(const toml::table& root, std::span<const std::string_view> keys, AppSpec& spec) {
    RETURN_IF_ERROR(CheckKeys(root, "", keys));
    for (auto&& [key, node] : root) {
      const std::string_view k = key.str();
      const int line = LineOf(key);
      if (k == "project") {
        RETURN_IF_ERROR(DecodeProject(node, line, spec));
      } else if (k == "containers") {
        RETURN_IF_ERROR(DecodeContainers(node, line, spec));
      } else if (k == "deploy") {
        RETURN_IF_ERROR(DecodeDeploy(node, line, spec.deploy));
      } else if (k == "routes") {
        RETURN_IF_ERROR(DecodeRoutes(node, line, spec.routes));
      } else if (k == "identity") {
        RETURN_IF_ERROR(DecodeIdentity(node, line, spec.identity_audiences));
      }
    }
    if (complete_ && !root.contains("project")) return Error(1, "project.name is required (a [project] table)");
    return OkStatus();
  }

  // The line of the value at `path` (a CheckAppSpec path), or of the nearest enclosing table
  // recorded; the document's first line when none is.
  int LineFor(std::string path) const {
    while (true) {
      if (auto it = lines_.find(path); it != lines_.end()) return it->second;
      const size_t dot = path.rfind('.');
      if (dot == std::string::npos) return 1;
      path.resize(dot);
    }
  }

  Status Error(int line, std::string_view what) const {
    return InvalidArgument(fmt::format("{}:{}: {}", file_, line, what));
  }

 private:
  std::string Name(std::string_view path) const { return prefix_ + std::string(path); }

  void Record(const std::string& path, int line) {
    if (complete_) lines_.emplace(path, line);
  }

  Status CheckKeys(const toml::table& t, std::string_view path, std::span<const std::string_view> allowed) const {
    for (auto&& [key, node] : t) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
        return Error(LineOf(key), fmt::format("unknown key {}", Name(Join(path, key.str()))));
      }
    }
    return OkStatus();
  }

  StatusOr<const toml::table*> Table(const toml::node& node, const std::string& path, int line) const {
    if (const toml::table* t = node.as_table()) return t;
    return Error(line, fmt::format("{} must be a table", Name(path)));
  }

  StatusOr<std::string> String(const toml::node& node, const std::string& path, int line) const {
    if (std::optional<std::string> s = node.value_exact<std::string>()) return *s;
    return Error(line, fmt::format("{} must be a string", Name(path)));
  }

  StatusOr<int64_t> Integer(const toml::node& node, const std::string& path, int line) const {
    if (std::optional<int64_t> i = node.value_exact<int64_t>()) return *i;
    return Error(line, fmt::format("{} must be an integer", Name(path)));
  }

  // "10s", "1m" or an integer number of seconds.
  StatusOr<int> Seconds(const toml::node& node, const std::string& path, int line) const {
    if (std::optional<int64_t> i = node.value_exact<int64_t>()) {
      if (*i < -kMaxSeconds || *i > kMaxSeconds) {
        return Error(line, fmt::format("{} is out of range (got {})", Name(path), *i));
      }
      return static_cast<int>(*i);
    }
    const std::string what =
        fmt::format("{} must be a duration such as \"10s\" or \"1m\", or a number of seconds", Name(path));
    std::optional<std::string> s = node.value_exact<std::string>();
    if (!s) return Error(line, what);
    const std::string_view text = *s;
    const std::string_view digits = text.substr(0, text.empty() ? 0 : text.size() - 1);
    const bool well_formed = text.size() >= 2 && text.size() <= 8 && (text.back() == 's' || text.back() == 'm') &&
                             std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!well_formed) return Error(line, fmt::format("{} (got \"{}\")", what, text));
    int64_t seconds = 0;
    for (char c : digits) seconds = seconds * 10 + (c - '0');
    if (text.back() == 'm') seconds *= 60;
    if (seconds > kMaxSeconds) return Error(line, fmt::format("{} is out of range (got \"{}\")", Name(path), text));
    return static_cast<int>(seconds);
  }

  Status DecodeProject(const toml::node& node, int line, AppSpec& spec) {
    ASSIGN_OR_RETURN(const toml::table* t, Table(node, "project", line));
    Record("project", line);
    RETURN_IF_ERROR(CheckKeys(*t, "project", internal::kProjectKeys));
    if (const toml::node* name = t->get("name")) {
      const int name_line = LineOf(t->find("name")->first);
      Record("project.name", name_line);
      ASSIGN_OR_RETURN(spec.project, String(*name, "project.name", name_line));
    } else if (complete_) {
      return Error(line, "project.name is required");
    }
    return OkStatus();
  }

  Status DecodeContainers(const toml::node& node, int line, AppSpec& spec) {
    ASSIGN_OR_RETURN(const toml::table* containers, Table(node, "containers", line));
    Record("containers", line);
    for (auto&& [key, value] : *containers) {
      ContainerSpec c;
      c.name = std::string(key.str());
      const std::string at = Join("containers", c.name);
      const int container_line = LineOf(key);
      ASSIGN_OR_RETURN(const toml::table* t, Table(value, at, container_line));
      Record(at, container_line);
      RETURN_IF_ERROR(CheckKeys(*t, at, internal::kContainerKeys));
      for (auto&& [field_key, field] : *t) {
        const std::string_view f = field_key.str();
        const std::string path = Join(at, f);
        const int field_line = LineOf(field_key);
        Record(path, field_line);
        if (f == "image") {
          ASSIGN_OR_RETURN(c.image, String(field, path, field_line));
        } else if (f == "port") {
          ASSIGN_OR_RETURN(int64_t port, Integer(field, path, field_line));
          if (port < 1 || port > 65535) {
            return Error(field_line, fmt::format("{} must be between 1 and 65535 (got {})", Name(path), port));
          }
          c.port = static_cast<uint16_t>(port);
        } else if (f == "command") {
          const toml::array* args = field.as_array();
          if (!args) return Error(field_line, fmt::format("{} must be an array of strings", Name(path)));
          for (const toml::node& arg : *args) {
            std::optional<std::string> s = arg.value_exact<std::string>();
            if (!s) return Error(field_line, fmt::format("{} must be an array of strings", Name(path)));
            c.command.push_back(std::move(*s));
          }
        } else if (f == "env") {
          ASSIGN_OR_RETURN(const toml::table* env, Table(field, path, field_line));
          for (auto&& [var_key, var] : *env) {
            const std::string var_path = Join(path, var_key.str());
            Record(var_path, LineOf(var_key));
            ASSIGN_OR_RETURN(c.env[std::string(var_key.str())], String(var, var_path, LineOf(var_key)));
          }
        } else if (f == "health_check") {
          ASSIGN_OR_RETURN(c.health_check, DecodeHealthCheck(field, path, field_line));
        }
      }
      if (complete_ && !t->contains("image")) {
        return Error(container_line, fmt::format("{}.image is required", Name(at)));
      }
      spec.containers.push_back(std::move(c));
    }
    return OkStatus();
  }

  StatusOr<HealthCheck> DecodeHealthCheck(const toml::node& node, const std::string& at, int line) {
    ASSIGN_OR_RETURN(const toml::table* t, Table(node, at, line));
    RETURN_IF_ERROR(CheckKeys(*t, at, internal::kHealthCheckKeys));
    HealthCheck h;
    for (auto&& [key, value] : *t) {
      const std::string_view f = key.str();
      const std::string path = Join(at, f);
      const int field_line = LineOf(key);
      Record(path, field_line);
      if (f == "path") {
        ASSIGN_OR_RETURN(h.path, String(value, path, field_line));
      } else if (f == "interval") {
        ASSIGN_OR_RETURN(h.interval_seconds, Seconds(value, path, field_line));
      } else if (f == "timeout") {
        ASSIGN_OR_RETURN(h.timeout_seconds, Seconds(value, path, field_line));
      }
    }
    if (complete_ && !t->contains("path")) return Error(line, fmt::format("{}.path is required", Name(at)));
    return h;
  }

  Status DecodeDeploy(const toml::node& node, int line, DeploySettings& deploy) {
    ASSIGN_OR_RETURN(const toml::table* t, Table(node, "deploy", line));
    Record("deploy", line);
    RETURN_IF_ERROR(CheckKeys(*t, "deploy", internal::kDeployKeys));
    for (auto&& [key, value] : *t) {
      const std::string_view f = key.str();
      const std::string path = Join("deploy", f);
      const int field_line = LineOf(key);
      Record(path, field_line);
      if (f == "replicas") {
        ASSIGN_OR_RETURN(int64_t replicas, Integer(value, path, field_line));
        if (replicas < 0 || replicas > 100) {
          return Error(field_line, fmt::format("{} must be between 0 and 100 (got {})", Name(path), replicas));
        }
        deploy.replicas = static_cast<int>(replicas);
      } else if (f == "cpu") {
        // A bare number is vCPU, kept as the user wrote it (ToJson stores the quantity as a string).
        if (std::optional<std::string> s = value.value_exact<std::string>()) {
          deploy.cpu = *s;
        } else if (std::optional<int64_t> i = value.value_exact<int64_t>()) {
          deploy.cpu = fmt::format("{}", *i);
        } else if (std::optional<double> d = value.value_exact<double>()) {
          deploy.cpu = fmt::format("{}", *d);
        } else {
          return Error(field_line, fmt::format("{} must be a string such as \"0.5\" or \"500m\", or a number of vCPU",
                                               Name(path)));
        }
      } else if (f == "memory") {
        if (std::optional<std::string> s = value.value_exact<std::string>()) {
          deploy.memory = *s;
        } else if (std::optional<int64_t> i = value.value_exact<int64_t>()) {
          deploy.memory = fmt::format("{}", *i);
        } else {
          return Error(field_line, fmt::format("{} must be a string such as \"512Mi\" or \"1Gi\", or an integer number "
                                               "of MiB",
                                               Name(path)));
        }
      } else if (f == "capacity") {
        ASSIGN_OR_RETURN(std::string name, String(value, path, field_line));
        std::optional<Capacity> capacity = ParseCapacity(name);
        if (!capacity) {
          return Error(field_line,
                       fmt::format("{} must be fargate, ec2 or interruptible (got \"{}\")", Name(path), name));
        }
        deploy.capacity = *capacity;
      }
    }
    return OkStatus();
  }

  Status DecodeIdentity(const toml::node& node, int line, std::map<std::string, std::string>& audiences) {
    ASSIGN_OR_RETURN(const toml::table* t, Table(node, "identity", line));
    Record("identity", line);
    RETURN_IF_ERROR(CheckKeys(*t, "identity", internal::kIdentityKeys));
    if (const toml::node* a = t->get("audiences")) {
      const int a_line = static_cast<int>(a->source().begin.line);
      ASSIGN_OR_RETURN(const toml::table* files, Table(*a, "identity.audiences", a_line));
      Record("identity.audiences", a_line);
      for (auto&& [key, value] : *files) {
        const std::string path = Join("identity.audiences", key.str());
        Record(path, LineOf(key));
        ASSIGN_OR_RETURN(audiences[std::string(key.str())], String(value, path, LineOf(key)));
      }
    }
    return OkStatus();
  }

  Status DecodeRoutes(const toml::node& node, int line, std::vector<Route>& routes) {
    ASSIGN_OR_RETURN(const toml::table* t, Table(node, "routes", line));
    Record("routes", line);
    for (auto&& [key, value] : *t) {
      Route r;
      r.path_prefix = std::string(key.str());
      const std::string at = Join("routes", r.path_prefix);
      const int route_line = LineOf(key);
      Record(at, route_line);
      if (std::optional<std::string> container = value.value_exact<std::string>()) {
        r.container = std::move(*container);
      } else if (const toml::table* route = value.as_table()) {
        RETURN_IF_ERROR(CheckKeys(*route, at, internal::kRouteKeys));
        for (auto&& [field_key, field] : *route) {
          const std::string_view f = field_key.str();
          const std::string path = Join(at, f);
          const int field_line = LineOf(field_key);
          Record(path, field_line);
          if (f == "container") {
            ASSIGN_OR_RETURN(r.container, String(field, path, field_line));
          } else if (f == "access") {
            ASSIGN_OR_RETURN(std::string name, String(field, path, field_line));
            std::optional<Access> access = ParseAccess(name);
            if (!access) {
              return Error(field_line, fmt::format("{} must be public or private (got \"{}\")", Name(path), name));
            }
            r.access = *access;
          }
        }
        if (complete_ && !route->contains("container")) {
          return Error(route_line, fmt::format("{}.container is required", Name(at)));
        }
      } else {
        return Error(route_line, fmt::format("{} must be a container's name or a table {{ container = \"...\", "
                                             "access = \"public\" }}",
                                             Name(at)));
      }
      routes.push_back(std::move(r));
    }
    return OkStatus();
  }

  std::string_view file_;
  std::string prefix_;
  bool complete_;
  std::map<std::string, int> lines_;  // CheckAppSpec path -> line; complete only
};

// `over` merged into `base`: tables merge key by key, recursively; any other value replaces. The
// keys are copied from `over` with their source regions, so a replaced value keeps its own line.
void MergeOver(toml::table& base, const toml::table& over) {
  for (auto&& [key, node] : over) {
    toml::node* mine = base.get(key.str());
    if (mine && mine->is_table() && node.is_table()) {
      MergeOver(*mine->as_table(), *node.as_table());
      continue;
    }
    base.erase(key.str());
    base.insert(key, node);
  }
}

}  // namespace

StatusOr<AppSpec> ParseAppSpec(std::string_view text, const ParseOptions& options) {
  const std::string_view file = options.file_name;
  if (text.size() > kMaxSpecBytes) {
    return InvalidArgument(
        fmt::format("{}: is {} bytes, more than the 256 KiB an app spec may have", file, text.size()));
  }
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(
        fmt::format("{}:{}:{}: {}", file, e.source().begin.line, e.source().begin.column, e.description()));
  }

  // Each part alone: the base, then every environment.
  AppSpec unused;
  RETURN_IF_ERROR(Decoder(file, "", false).Decode(root, internal::kTopLevelKeys, unused));
  const toml::table* environments = nullptr;
  if (auto it = root.find("environments"); it != root.end()) {
    environments = it->second.as_table();
    if (!environments) {
      return InvalidArgument(fmt::format("{}:{}: environments must be a table", file, LineOf(it->first)));
    }
    for (auto&& [name, env] : *environments) {
      const std::string at = fmt::format("environments.{}", name.str());
      const toml::table* t = env.as_table();
      if (!t) return InvalidArgument(fmt::format("{}:{}: {} must be a table", file, LineOf(name), at));
      RETURN_IF_ERROR(Decoder(file, at + ".", false).Decode(*t, internal::kEnvironmentKeys, unused));
    }
  }

  toml::table merged = root;
  merged.erase("environments");
  if (!options.environment.empty()) {
    const toml::node* env = environments ? environments->get(options.environment) : nullptr;
    if (!env) {
      std::vector<std::string_view> defined;
      if (environments) {
        for (auto&& [name, unused_env] : *environments) defined.push_back(name.str());
      }
      return InvalidArgument(fmt::format("{}: environment \"{}\" is not defined ({})", file, options.environment,
                                         defined.empty() ? std::string("the file has no [environments.<name>] table")
                                                         : fmt::format("it defines {}", fmt::join(defined, ", "))));
    }
    MergeOver(merged, *env->as_table());
  }

  Decoder decoder(file, "", true);
  AppSpec spec;
  RETURN_IF_ERROR(decoder.Decode(merged, internal::kTopLevelKeys, spec));
  std::sort(spec.containers.begin(), spec.containers.end(),
            [](const ContainerSpec& a, const ContainerSpec& b) { return a.name < b.name; });
  // Longest prefix first, the order AppSpecFromJson gives.
  std::sort(spec.routes.begin(), spec.routes.end(), [](const Route& a, const Route& b) {
    return a.path_prefix.size() != b.path_prefix.size() ? a.path_prefix.size() > b.path_prefix.size()
                                                        : a.path_prefix < b.path_prefix;
  });
  if (std::optional<SpecProblem> problem = CheckAppSpec(spec)) {
    return decoder.Error(decoder.LineFor(problem->path), problem->message);
  }
  return spec;
}

}  // namespace paddock::deploy
