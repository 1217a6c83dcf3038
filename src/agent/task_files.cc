#include "agent/task_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/json_fields.h"
#include "common/private_files.h"

namespace paddock::agent {
using json_fields::Str;
using json_fields::Strings;
using json_fields::Obj;
using json_fields::Objects;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// The Amazon VPC resolver at its link-local address, reachable from every VPC.
constexpr std::string_view kVpcResolver = "169.254.169.253";

bool IsLoopback(std::string_view address) {
  return address.rfind("127.", 0) == 0 || address == "::1" || address == "0:0:0:0:0:0:0:1";
}

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Status WriteText(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Internal(fmt::format("cannot write {}", path.string()));
  ::chmod(path.c_str(), 0644);
  return OkStatus();
}

// Where PrepareTask puts task volume `name` (one without host.sourcePath).
fs::path TaskVolumeDir(const TaskFilesOptions& options, std::string_view task_id, std::string_view name) {
  return fs::path(options.tasks_dir) / task_id / "volumes" / name;
}

bool IsTaskId(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::string RegionOf(std::string_view arn) {
  // arn:aws:ecs:<region>:<account>:task/…
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    start = arn.find(':', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  size_t end = arn.find(':', start);
  return end == std::string_view::npos ? std::string() : std::string(arn.substr(start, end - start));
}

Status Write(runtime::Runtime& runtime, const TaskFilesOptions& options, const TaskFilesInput& in, TaskFiles& out) {
  RETURN_IF_ERROR(CheckSupported(in.definition, in.overrides, options.host_access));
  if (!IsTaskId(in.task_id)) return InvalidArgument(fmt::format("bad task id '{}'", in.task_id));
  std::string region = RegionOf(in.task_arn);
  out.default_hostname = in.default_hostname;
  if (!in.ip.empty() && in.default_hostname == DefaultHostname::kTask) out.hostname = PrivateDnsName(in.ip, region);
  std::vector<const json::object*> containers = Objects(in.definition, "containerDefinitions");
  for (const json::object* c : containers) out.container_definitions.push_back(*c);
  out.host_pid = Str(in.definition, "pidMode") == "host";  // CheckSupported allowed them
  out.host_ipc = Str(in.definition, "ipcMode") == "host";
  std::vector<const json::object*> volumes = Objects(in.definition, "volumes");

  if (options.tasks_dir.empty()) {
    if (!volumes.empty()) return FailedPrecondition("task volumes need the agent's tasks directory, and none is configured");
  } else {
    const fs::path dir = fs::path(options.tasks_dir) / in.task_id;
    std::error_code ec;
    RETURN_IF_ERROR(MakePrivateDir(options.tasks_dir));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return Internal(fmt::format("cannot create {}: {}", dir.string(), std::strerror(errno)));
    out.dir = dir.string();
    // An existing one (a retried launch) is tightened too: mkdir's mode is not applied to it.
    if (::chmod(dir.c_str(), 0700) != 0) return Internal(fmt::format("chmod {}: {}", dir.string(), std::strerror(errno)));
    std::string search = in.ip.empty() ? std::string() : RegionDomain(region);
    std::string host_resolv = ReadText(options.host_resolv_conf);
    for (const json::object* c : containers) {
      std::string name = Str(*c, "name");
      const fs::path etc = dir / "etc" / name;
      fs::create_directories(etc, ec);
      if (ec) return Internal(fmt::format("cannot create {}: {}", etc.string(), ec.message()));
      TaskContext task;
      task.hostname = out.hostname;
      task.default_hostname = in.default_hostname;
      auto id = in.container_ids.find(name);
      std::string hostname = HostnameOf(*c, task, id == in.container_ids.end() ? std::string_view() : id->second);
      EtcFiles files{(etc / "hosts").string(), (etc / "resolv.conf").string(), std::string()};
      RETURN_IF_ERROR(WriteText(files.hosts, HostsFile(in.ip, hostname, *c)));
      RETURN_IF_ERROR(WriteText(files.resolv_conf, ResolvConf(*c, host_resolv, search, in.nameserver)));
      if (!hostname.empty()) {
        files.hostname = (etc / "hostname").string();
        RETURN_IF_ERROR(WriteText(files.hostname, hostname + "\n"));
      }
      out.etc_files[name] = std::move(files);
    }
    for (const json::object* v : volumes) {
      std::string name = Str(*v, "name");
      if (name.find('/') != std::string::npos || name == "." || name == "..") {
        return InvalidArgument(fmt::format("bad volume name '{}'", name));
      }
      if (std::string source = Str(Obj(*v, "host"), "sourcePath"); !source.empty()) {
        fs::create_directories(source, ec);  // CheckSupported allowed it: host access is allowed here
        if (ec) return Internal(fmt::format("cannot create host path {}: {}", source, ec.message()));
        out.volumes[name] = source;
        continue;
      }
      const fs::path vol = TaskVolumeDir(options, in.task_id, name);
      fs::create_directories(vol, ec);
      if (ec) return Internal(fmt::format("cannot create {}: {}", vol.string(), ec.message()));
      ::chmod(vol.c_str(), 0755);
      out.volumes[name] = vol.string();
    }
  }

  runtime::GroupLimits limits;
  limits.cpu_limit_units = in.cpu_units;
  limits.memory_limit_bytes = in.memory_mib * 1024 * 1024;
  limits.pids_max = options.pids_per_task;
  if (limits.cpu_limit_units || limits.memory_limit_bytes || limits.pids_max) {
    auto group = runtime.CreateGroup(in.task_id, limits);
    if (!group.ok()) return Status(group.status().code(), fmt::format("the task's cgroup: {}", group.status().message()));
    out.cgroup_parent = std::move(*group);
  }
  return OkStatus();
}

}  // namespace

std::string RegionDomain(std::string_view region) {
  if (region.empty() || region == "us-east-1") return "ec2.internal";
  return fmt::format("{}.compute.internal", region);
}

std::string PrivateDnsName(std::string_view ip, std::string_view region) {
  std::string dashed(ip);
  std::replace(dashed.begin(), dashed.end(), '.', '-');
  return fmt::format("ip-{}.{}", dashed, RegionDomain(region));
}

std::string HostsFile(std::string_view ip, std::string_view hostname, const json::object& container_definition) {
  std::string out =
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "fe00::0\tip6-localnet\n"
      "ff00::0\tip6-mcastprefix\n"
      "ff02::1\tip6-allnodes\n"
      "ff02::2\tip6-allrouters\n";
  if (!ip.empty() && !hostname.empty()) {
    std::string_view short_name = hostname.substr(0, hostname.find('.'));
    out += short_name == hostname ? fmt::format("{}\t{}\n", ip, hostname)
                                  : fmt::format("{}\t{} {}\n", ip, hostname, short_name);
  }
  for (const json::object* h : Objects(container_definition, "extraHosts")) {
    out += fmt::format("{}\t{}\n", Str(*h, "ipAddress"), Str(*h, "hostname"));
  }
  return out;
}

std::string ResolvConf(const json::object& container_definition, std::string_view host_resolv_conf,
                       std::string_view default_search, std::string_view nameserver) {
  std::vector<std::string> servers = Strings(container_definition, "dnsServers");
  if (servers.empty() && !nameserver.empty()) servers.emplace_back(nameserver);
  if (servers.empty()) {
    std::istringstream lines{std::string(host_resolv_conf)};
    for (std::string line; std::getline(lines, line);) {
      std::vector<std::string> w = Words(line);
      if (w.size() >= 2 && w[0] == "nameserver" && !IsLoopback(w[1])) servers.push_back(w[1]);
    }
  }
  if (servers.empty()) servers.emplace_back(kVpcResolver);
  std::vector<std::string> search = Strings(container_definition, "dnsSearchDomains");
  if (search.empty() && !default_search.empty()) search.emplace_back(default_search);
  std::string out;
  for (const auto& s : servers) out += fmt::format("nameserver {}\n", s);
  if (!search.empty()) out += fmt::format("search {}\n", fmt::join(search, " "));
  return out;
}

StatusOr<TaskFiles> PrepareTask(runtime::Runtime& runtime, const TaskFilesOptions& options, const TaskFilesInput& in) {
  TaskFiles out;
  Status s = Write(runtime, options, in, out);
  if (!s.ok()) {
    if (!out.dir.empty() || !out.cgroup_parent.empty()) CleanUpTask(runtime, options, in.task_id).IgnoreError();
    return s;
  }
  return out;
}

std::vector<runtime::BindMount> ContainerVolumes(const TaskFilesOptions& options, const json::object& definition,
                                                 std::string_view task_id, std::string_view container_name) {
  if (options.tasks_dir.empty()) return {};
  json::array containers;
  for (const json::object* c : Objects(definition, "containerDefinitions")) containers.push_back(*c);
  TaskContext task;
  task.container_definitions = &containers;
  for (const json::object* v : Objects(definition, "volumes")) {
    std::string name = Str(*v, "name");
    std::string source = Str(Obj(*v, "host"), "sourcePath");
    task.volumes[name] = source.empty() ? TaskVolumeDir(options, task_id, name).string() : source;
  }
  for (const json::value& c : containers)
    if (Str(c.get_object(), "name") == container_name) return VolumeBinds(c.get_object(), task);
  return {};
}

void ApplyTaskFiles(const TaskFiles& files, TaskContext& task) {
  task.cgroup_parent = files.cgroup_parent;
  task.hostname = files.hostname;
  task.default_hostname = files.default_hostname;
  task.volumes = files.volumes;
  task.etc_files = files.etc_files;
  task.container_definitions = &files.container_definitions;
  task.host_pid = files.host_pid;
  task.host_ipc = files.host_ipc;
}

Status CleanUpTask(runtime::Runtime& runtime, const TaskFilesOptions& options, std::string_view task_id) {
  if (!IsTaskId(task_id)) return InvalidArgument(fmt::format("bad task id '{}'", task_id));
  std::string failures;
  if (!options.tasks_dir.empty()) {
    std::error_code ec;
    fs::remove_all(fs::path(options.tasks_dir) / task_id, ec);
    if (ec) failures += fmt::format("removing the task directory: {}; ", ec.message());
  }
  if (Status s = runtime.DeleteGroup(task_id); !s.ok()) failures += fmt::format("removing the task's cgroup: {}", s.message());
  if (!failures.empty()) return Internal(failures);
  return OkStatus();
}

}  // namespace paddock::agent
