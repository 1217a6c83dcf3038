#include "agent/container_spec.h"

#include <fmt/format.h>

#include <charconv>

#include "agent/fields.h"

namespace paddock::agent {
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

}  // namespace

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
  // Limits: the container's own, else the task's (no task-level cgroup yet, so each container
  // is capped at the task's size rather than all of them together).
  auto value = [&](std::string_view key) -> uint64_t {
    auto v = Int(in.overrides, key);
    if (!v) v = Int(def, key);
    return v && *v > 0 ? static_cast<uint64_t>(*v) : 0;
  };
  uint64_t memory = value("memory");
  if (memory == 0) memory = task.memory_mib;
  cs.memory_limit_bytes = memory * 1024 * 1024;
  cs.memory_reservation_bytes = value("memoryReservation") * 1024 * 1024;
  if (uint64_t cpu = value("cpu"); cpu >= 2) cs.cpu_shares = cpu;
  cs.cpu_limit_units = task.cpu_units;
  cs.annotations = {{"com.amazonaws.ecs.task-arn", task.task_arn},
                    {"com.amazonaws.ecs.container-name", Str(def, "name")}};
  cs.stdout_path = cs.stderr_path = in.log_path;
  return cs;
}

}  // namespace paddock::agent
