#include "agent/container_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "common/json_fields.h"
#include "ecs/taskdef/container_values.h"
#include "ecs/taskdef/host_grants.h"

namespace paddock::agent {
using json_fields::Str;
using json_fields::Int;
using json_fields::Bool;
using json_fields::Strings;
using json_fields::Obj;
using json_fields::Objects;
namespace json = boost::json;

namespace {

// "NAME=value" entries, later ones replacing earlier ones of the same name, order kept.
void SetEnv(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  std::string entry = fmt::format("{}={}", name, value);
  for (auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      e = std::move(entry);
      return;
    }
  }
  env.push_back(std::move(entry));
}

void MergeEnvironment(std::vector<std::string>& env, const json::object& o) {
  for (const json::object* kv : Objects(o, "environment")) SetEnv(env, Str(*kv, "name"), Str(*kv, "value"));
}

constexpr uint64_t kMiB = 1024 * 1024;

uint64_t NonNegative(std::optional<int64_t> v) { return v && *v > 0 ? static_cast<uint64_t>(*v) : 0; }

const json::object* FindContainer(const json::array* definitions, std::string_view name) {
  if (!definitions) return nullptr;
  for (const auto& v : *definitions)
    if (v.is_object() && Str(v.get_object(), "name") == name) return &v.get_object();
  return nullptr;
}

// The container's mountPoints, then (recursively, as Docker's --volumes-from copies every mount of
// its source) those of its volumesFrom sources; a volumesFrom readOnly makes them all read-only.
// `seen` stops a cycle (CheckSupported refuses one; this only has to be safe).
void CollectMounts(const json::object& def, const TaskContext& task, bool force_read_only,
                   std::vector<std::string>& seen, std::vector<runtime::BindMount>& out) {
  seen.push_back(Str(def, "name"));
  for (const json::object* mp : Objects(def, "mountPoints")) {
    auto dir = task.volumes.find(Str(*mp, "sourceVolume"));
    std::string path = Str(*mp, "containerPath");
    if (dir == task.volumes.end() || path.empty()) continue;
    bool read_only = force_read_only || Bool(*mp, "readOnly").value_or(false);
    // A later mount of the same path replaces an earlier one (the container's own come first).
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& b) { return b.destination == path; });
    if (same != out.end()) continue;
    out.push_back(runtime::BindMount{dir->second, path, read_only});
  }
  for (const json::object* vf : Objects(def, "volumesFrom")) {
    std::string source = Str(*vf, "sourceContainer");
    if (std::find(seen.begin(), seen.end(), source) != seen.end()) continue;
    const json::object* other = FindContainer(task.container_definitions, source);
    if (!other) continue;
    CollectMounts(*other, task, force_read_only || Bool(*vf, "readOnly").value_or(false), seen, out);
  }
}

size_t Depth(std::string_view path) { return static_cast<size_t>(std::count(path.begin(), path.end(), '/')); }

bool IsAbsolute(std::string_view path) { return !path.empty() && path.front() == '/'; }

}  // namespace

Status CheckSupported(const json::object& task_definition, const json::object& overrides, HostAccess host_access) {
  if (host_access == HostAccess::kRefused) {
    std::vector<ecs::taskdef::HostGrant> grants = ecs::taskdef::HostGrantsOf(task_definition);
    if (!grants.empty())
      return FailedPrecondition(fmt::format(
          "{}: host-level access is not allowed on this container instance (its operator allows it with "
          "host_access = true in [[ec2_instance]] or paddock agent --allow-host-access; Fargate never does)",
          grants.front().text));
  }
  std::set<std::string> volumes;
  for (const json::object* v : Objects(task_definition, "volumes")) {
    std::string name = Str(*v, "name");
    if (name.empty()) return InvalidArgument("a volume has no name");
    auto unsupported = [&](std::string_view what) {
      return FailedPrecondition(fmt::format("volume '{}': {} are not supported", name, what));
    };
    if (v->contains("efsVolumeConfiguration")) return unsupported("Amazon EFS volumes (efsVolumeConfiguration)");
    if (v->contains("fsxWindowsFileServerVolumeConfiguration"))
      return unsupported("FSx for Windows File Server volumes (fsxWindowsFileServerVolumeConfiguration)");
    if (Bool(*v, "configuredAtLaunch").value_or(false)) return unsupported("volumes configured at launch (configuredAtLaunch)");
    if (std::string source = Str(Obj(*v, "host"), "sourcePath"); !source.empty()) {  // host access: allowed above
      if (!IsAbsolute(source)) return unsupported(fmt::format("host paths that are not absolute ('{}')", source));
      volumes.insert(std::move(name));
      continue;
    }
    if (auto dv = v->find("dockerVolumeConfiguration"); dv != v->end() && dv->value().is_object()) {
      const json::object& d = dv->value().get_object();
      std::string scope = Str(d, "scope"), driver = Str(d, "driver");
      if (!scope.empty() && scope != "task")
        return unsupported(fmt::format("Docker volumes of scope '{}' (only scope 'task')", scope));
      if (!driver.empty() && driver != "local")
        return unsupported(fmt::format("Docker volume drivers other than 'local' (driver '{}')", driver));
    }
    volumes.insert(std::move(name));
  }

  std::map<std::string, const json::object*> containers;
  for (const json::object* c : Objects(task_definition, "containerDefinitions")) containers[Str(*c, "name")] = c;
  std::vector<const json::object*> container_overrides = Objects(overrides, "containerOverrides");
  for (const auto& [name, c] : containers) {
    auto refuse = [&](std::string_view what) { return FailedPrecondition(fmt::format("container '{}': {}", name, what)); };
    std::vector<const json::object*> env_files = Objects(*c, "environmentFiles");
    for (const json::object* o : container_overrides)
      if (Str(*o, "name") == name)
        for (const json::object* f : Objects(*o, "environmentFiles")) env_files.push_back(f);
    if (!env_files.empty()) {
      return refuse(fmt::format(
          "failed to download env files: environmentFiles from Amazon S3 ({}) cannot be fetched: Paddock has no S3 "
          "yet; put the variables in environment instead",
          Str(*env_files.front(), "value")));
    }
    if (std::string driver = Str(Obj(*c, "logConfiguration"), "logDriver"); !driver.empty() && driver != "json-file" && driver != "awslogs") {
      return refuse(fmt::format(
          "failed to initialize logging driver: log driver '{}' is not supported yet (a container's output is kept "
          "on the node: paddock logs TASK)",
          driver));
    }
    if (Status s = ecs::taskdef::CheckContainerValues(*c); !s.ok()) return InvalidArgument(s.message());
    for (const json::object* o : container_overrides)
      if (Str(*o, "name") == name)
        if (Status s = ecs::taskdef::CheckEnvironmentNames(*o, name); !s.ok()) return InvalidArgument(s.message());
    const json::object& lp = Obj(*c, "linuxParameters");
    for (const json::object* d : Objects(lp, "devices")) {  // host access: allowed above
      if (!IsAbsolute(Str(*d, "hostPath")))
        return InvalidArgument(fmt::format("container '{}': device hostPath '{}' must be absolute", name, Str(*d, "hostPath")));
      if (std::string to = Str(*d, "containerPath"); !to.empty() && !IsAbsolute(to))
        return InvalidArgument(fmt::format("container '{}': device containerPath '{}' must be absolute", name, to));
    }
    for (const json::object* t : Objects(lp, "tmpfs")) {
      if (!IsAbsolute(Str(*t, "containerPath")))
        return InvalidArgument(fmt::format("container '{}': tmpfs containerPath '{}' must be absolute", name,
                                           Str(*t, "containerPath")));
    }
    for (const json::object* mp : Objects(*c, "mountPoints")) {
      std::string source = Str(*mp, "sourceVolume");
      if (!volumes.count(source))
        return InvalidArgument(fmt::format("container '{}': mountPoints: no volume named '{}' in the task", name, source));
      if (!IsAbsolute(Str(*mp, "containerPath")))
        return InvalidArgument(fmt::format("container '{}': mountPoints: containerPath '{}' must be absolute", name,
                                           Str(*mp, "containerPath")));
    }
    for (const json::object* vf : Objects(*c, "volumesFrom")) {
      std::string source = Str(*vf, "sourceContainer");
      if (!containers.count(source) || source == name)
        return InvalidArgument(
            fmt::format("container '{}': volumesFrom: no other container named '{}' in the task", name, source));
    }
  }
  // volumesFrom must not loop (a → b → a).
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::function<bool(const std::string&)> loops = [&](const std::string& n) {
    if (state[n] == 1) return true;
    if (state[n] == 2) return false;
    state[n] = 1;
    for (const json::object* vf : Objects(*containers[n], "volumesFrom"))
      if (loops(Str(*vf, "sourceContainer"))) return true;
    state[n] = 2;
    return false;
  };
  for (const auto& [name, c] : containers)
    if (loops(name)) return InvalidArgument(fmt::format("container '{}': volumesFrom forms a cycle", name));
  return OkStatus();
}

std::string HostnameOf(const json::object& definition, const TaskContext& task, std::string_view container_id) {
  std::string own = Str(definition, "hostname");
  if (!own.empty()) return own;
  return task.default_hostname == DefaultHostname::kContainerId ? std::string(container_id) : task.hostname;
}

std::vector<runtime::BindMount> VolumeBinds(const json::object& definition, const TaskContext& task) {
  std::vector<std::string> seen;
  std::vector<runtime::BindMount> binds;
  CollectMounts(definition, task, false, seen, binds);
  std::stable_sort(binds.begin(), binds.end(),
                   [](const auto& a, const auto& b) { return Depth(a.destination) < Depth(b.destination); });
  return binds;
}

runtime::ContainerSpec BuildContainerSpec(const ContainerInput& in, const TaskContext& task) {
  const images::ImageConfig& img = in.image.config;
  const json::object& def = in.definition;
  runtime::ContainerSpec cs;
  cs.id = in.id;
  cs.lower_dirs.assign(in.image.layer_dirs.rbegin(), in.image.layer_dirs.rend());  // top first
  cs.readonly_rootfs = Bool(def, "readonlyRootFilesystem").value_or(false);
  // As Docker merges them: an entryPoint of the definition replaces the image's and drops its Cmd.
  bool has_entrypoint = false, has_command = false, has_override_command = false;
  std::vector<std::string> entrypoint = Strings(def, "entryPoint", &has_entrypoint);
  std::vector<std::string> command = Strings(def, "command", &has_command);
  std::vector<std::string> override_command = Strings(in.overrides, "command", &has_override_command);
  if (has_override_command) {
    command = std::move(override_command);
    has_command = true;
  }
  if (!has_entrypoint || entrypoint.empty()) {
    entrypoint = img.entrypoint;
    if (!has_command || command.empty()) command = img.cmd;
  }
  cs.args = std::move(entrypoint);
  cs.args.insert(cs.args.end(), command.begin(), command.end());
  cs.env = img.env;
  MergeEnvironment(cs.env, def);
  MergeEnvironment(cs.env, in.overrides);
  cs.working_dir = Str(def, "workingDirectory");
  if (cs.working_dir.empty()) cs.working_dir = img.working_dir;
  cs.user = Str(def, "user");
  if (cs.user.empty()) cs.user = img.user;
  if (!task.netns_path.empty()) {
    cs.network = runtime::NetworkMode::kJoin;
    cs.netns_path = task.netns_path;
  }
  cs.hostname = HostnameOf(def, task, in.id.str());
  // Host-level grants: CheckSupported refused them unless the instance allows host access.
  cs.privileged = Bool(def, "privileged").value_or(false);
  cs.host_pid = task.host_pid;
  cs.host_ipc = task.host_ipc;

  // Limits: the container's own. The task's cpu and memory bound all containers together in the
  // task's cgroup; without one, each container is capped at the task's size itself.
  auto value = [&](std::string_view key) -> uint64_t {
    auto v = Int(in.overrides, key);
    if (!v) v = Int(def, key);
    return NonNegative(v);
  };
  uint64_t memory = value("memory");
  if (memory == 0 && task.cgroup_parent.empty()) memory = task.memory_mib;
  cs.memory_limit_bytes = memory * kMiB;
  cs.memory_reservation_bytes = value("memoryReservation") * kMiB;
  if (uint64_t cpu = value("cpu"); cpu >= 2) cs.cpu_shares = cpu;
  if (task.cgroup_parent.empty()) cs.cpu_limit_units = task.cpu_units;
  cs.cgroup_parent = task.cgroup_parent;

  // Mounts: the generated /etc files (read-only with a read-only root, as Docker binds them),
  // then the task volumes of mountPoints and volumesFrom, parents before children.
  if (auto files = task.etc_files.find(Str(def, "name")); files != task.etc_files.end()) {
    for (const auto& [source, destination] : {std::pair{files->second.hosts, "/etc/hosts"},
                                              std::pair{files->second.resolv_conf, "/etc/resolv.conf"},
                                              std::pair{files->second.hostname, "/etc/hostname"}}) {
      if (!source.empty()) cs.binds.push_back(runtime::BindMount{source, destination, cs.readonly_rootfs});
    }
  }
  std::vector<runtime::BindMount> volume_binds = VolumeBinds(def, task);
  cs.binds.insert(cs.binds.end(), volume_binds.begin(), volume_binds.end());

  // linuxParameters and ulimits.
  const json::object& lp = Obj(def, "linuxParameters");
  const json::object& caps = Obj(lp, "capabilities");
  for (const json::object* d : Objects(lp, "devices")) {  // host access: CheckSupported allowed them
    runtime::Device dev{Str(*d, "hostPath"), Str(*d, "containerPath")};
    bool given = false;
    std::vector<std::string> permissions = Strings(*d, "permissions", &given);
    if (given && !permissions.empty()) {
      auto has = [&](std::string_view p) { return std::find(permissions.begin(), permissions.end(), p) != permissions.end(); };
      dev.read = has("read");
      dev.write = has("write");
      dev.mknod = has("mknod");
    }
    cs.devices.push_back(std::move(dev));
  }
  cs.cap_add = Strings(caps, "add");
  cs.cap_drop = Strings(caps, "drop");
  cs.init_process_enabled = Bool(lp, "initProcessEnabled").value_or(false);
  cs.shm_size_bytes = NonNegative(Int(lp, "sharedMemorySize")) * kMiB;
  for (const json::object* t : Objects(lp, "tmpfs")) {
    cs.tmpfs.push_back(runtime::TmpfsMount{Str(*t, "containerPath"), NonNegative(Int(*t, "size")) * kMiB,
                                           Strings(*t, "mountOptions")});
  }
  for (const json::object* u : Objects(def, "ulimits")) {
    cs.ulimits.push_back(runtime::Ulimit{Str(*u, "name"), NonNegative(Int(*u, "softLimit")),
                                         NonNegative(Int(*u, "hardLimit"))});
  }
  cs.annotations = {{"com.amazonaws.ecs.task-arn", task.task_arn},
                    {"com.amazonaws.ecs.container-name", Str(def, "name")}};
  cs.stdout_path = cs.stderr_path = in.log_path;
  return cs;
}

}  // namespace paddock::agent
