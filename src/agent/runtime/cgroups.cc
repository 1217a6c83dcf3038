#include "agent/runtime/cgroups.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "common/mountinfo.h"

namespace paddock::agent::runtime {
namespace {

std::string Join(const std::string& root, std::string_view path) {
  std::string p(path);
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  return p.empty() ? root : root + "/" + p;
}

}  // namespace

StatusOr<CgroupLayout> DetectCgroupLayout() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return Internal("cannot read /proc/self/mountinfo");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CgroupLayout layout;
  std::string v2_root;
  for (const MountInfo& m : ParseMountInfo(text)) {
    if (m.fstype == "cgroup") {
      layout.mount_points.push_back(m.mount_point);
      if (HasMountOption(m.super_options, "memory")) layout.memory_root = m.mount_point;
      if (HasMountOption(m.super_options, "cpu")) layout.cpu_root = m.mount_point;
      if (HasMountOption(m.super_options, "pids")) layout.pids_root = m.mount_point;
    } else if (m.fstype == "cgroup2") {
      layout.mount_points.push_back(m.mount_point);
      if (m.mount_point == "/sys/fs/cgroup") v2_root = m.mount_point;
    }
  }
  if (layout.memory_root.empty() && !v2_root.empty()) {
    layout.unified = true;
    layout.memory_root = v2_root;
    layout.cpu_root = v2_root;
    layout.pids_root = v2_root;
  }
  if (layout.memory_root.empty()) {
    return FailedPrecondition("no cgroup memory controller is mounted (see docs/runtime-notes.md)");
  }
  if (!layout.unified) {
    layout.swap_accounting =
        ::access((layout.memory_root + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
  } else {
    // On v2, memory.swap.max exists in non-root cgroups whenever swap accounting is on; the root
    // has no interface files, so look for swap itself.
    std::ifstream swaps("/proc/swaps");
    std::string header, entry;
    std::getline(swaps, header);
    layout.swap_accounting = static_cast<bool>(std::getline(swaps, entry));
  }
  return layout;
}

StatusOr<uint64_t> ReadOomKillCount(const CgroupLayout& layout, std::string_view path) {
  std::string file =
      Join(layout.memory_root, path) + (layout.unified ? "/memory.events" : "/memory.oom_control");
  std::ifstream in(file);
  if (!in) return NotFound(fmt::format("cannot read {}", file));
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  // Kernels before 4.13 have no oom_kill in v1's oom_control: no way to tell, so report none.
  return uint64_t{0};
}

namespace {

Status WriteCgroupFile(const std::string& file, std::string_view value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  if (!out) return Internal(fmt::format("cannot write '{}' to {}", value, file));
  return OkStatus();
}

Status MakeCgroupDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal(fmt::format("cannot create cgroup {}: {}", dir, ec.message()));
  return OkStatus();
}

}  // namespace

Status CreateCgroupWithLimits(const CgroupLayout& layout, std::string_view path, const CgroupLimits& limits) {
  if (path.empty() || path.front() != '/' || path == "/" || path.find("..") != std::string_view::npos) {
    return InvalidArgument(fmt::format("cgroup path '{}' must be absolute, below the root", path));
  }
  if (limits.pids_max && layout.pids_root.empty()) {
    return FailedPrecondition("no pids cgroup controller is mounted (set the node's pids_per_task and "
                              "pids_per_node to 0 to run tasks without a process limit)");
  }
  if (layout.unified) {
    // Controllers reach a cgroup only through every ancestor's subtree_control.
    const std::string controllers = limits.pids_max ? "+cpu +memory +pids" : "+cpu +memory";
    std::string dir = layout.memory_root;
    std::string_view rest = path.substr(1);
    while (!rest.empty()) {
      RETURN_IF_ERROR(WriteCgroupFile(dir + "/cgroup.subtree_control", controllers));
      size_t slash = rest.find('/');
      dir += "/" + std::string(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
      RETURN_IF_ERROR(MakeCgroupDir(dir));
    }
    if (limits.memory_limit_bytes) {
      RETURN_IF_ERROR(WriteCgroupFile(dir + "/memory.max", std::to_string(limits.memory_limit_bytes)));
      if (layout.swap_accounting) RETURN_IF_ERROR(WriteCgroupFile(dir + "/memory.swap.max", "0"));
    }
    if (limits.cpu_quota_us) {
      RETURN_IF_ERROR(
          WriteCgroupFile(dir + "/cpu.max", fmt::format("{} {}", limits.cpu_quota_us, limits.cpu_period_us)));
    }
    if (limits.pids_max) RETURN_IF_ERROR(WriteCgroupFile(dir + "/pids.max", std::to_string(limits.pids_max)));
    return OkStatus();
  }
  const std::string memory_dir = Join(layout.memory_root, path);
  RETURN_IF_ERROR(MakeCgroupDir(memory_dir));
  if (limits.memory_limit_bytes) {
    RETURN_IF_ERROR(
        WriteCgroupFile(memory_dir + "/memory.limit_in_bytes", std::to_string(limits.memory_limit_bytes)));
    // memsw ≥ limit is enforced by the kernel: written after the limit it may equal it.
    if (layout.swap_accounting) {
      RETURN_IF_ERROR(
          WriteCgroupFile(memory_dir + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory_limit_bytes)));
    }
  }
  if (limits.pids_max) {
    // Written before any container goes under it: there is no moment when the task's processes
    // are unbounded.
    const std::string pids_dir = Join(layout.pids_root, path);
    RETURN_IF_ERROR(MakeCgroupDir(pids_dir));
    RETURN_IF_ERROR(WriteCgroupFile(pids_dir + "/pids.max", std::to_string(limits.pids_max)));
  }
  if (layout.cpu_root.empty()) {
    if (limits.cpu_quota_us) return FailedPrecondition("no cpu cgroup controller is mounted");
    return OkStatus();
  }
  const std::string cpu_dir = Join(layout.cpu_root, path);
  RETURN_IF_ERROR(MakeCgroupDir(cpu_dir));
  if (limits.cpu_quota_us) {
    RETURN_IF_ERROR(WriteCgroupFile(cpu_dir + "/cpu.cfs_period_us", std::to_string(limits.cpu_period_us)));
    RETURN_IF_ERROR(WriteCgroupFile(cpu_dir + "/cpu.cfs_quota_us", std::to_string(limits.cpu_quota_us)));
  }
  return OkStatus();
}

Status RemoveCgroup(const CgroupLayout& layout, std::string_view path) {
  std::string failures;
  for (const auto& mount_point : layout.mount_points) {
    std::string dir = Join(mount_point, path);
    if (dir == mount_point) continue;  // never the root
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) continue;
    // Children first: a cgroup directory only goes when empty of sub-cgroups (its files are not
    // real files and rmdir ignores them).
    std::vector<std::string> dirs;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path().string());
    }
    dirs.push_back(dir);
    for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) {
      // Deeper paths come later in a pre-order walk, so reverse order is leaf-first.
      if (::rmdir(d->c_str()) != 0 && errno != ENOENT) {
        failures += fmt::format("{}: {}; ", *d, std::strerror(errno));
      }
    }
  }
  if (!failures.empty()) return FailedPrecondition("cannot remove cgroup: " + failures);
  return OkStatus();
}

}  // namespace paddock::agent::runtime
