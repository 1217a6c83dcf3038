#include "cli/host_checks.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/mountinfo.h"
#include "common/subprocess.h"

namespace paddock::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSetup = "scripts/setup (as root) does it";

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool Contains(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  size_t start = s.find_first_not_of(" \t\n");
  return start == std::string::npos ? "" : s.substr(start);
}

// The first line of a program's output, cut short: enough to quote in a check's detail.
std::string FirstLine(const std::string& output) {
  std::string line = Trim(output.substr(0, output.find('\n')));
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  return line;
}

HostCheck Pass(std::string name, std::string detail, bool blocks) {
  return {std::move(name), CheckState::kPass, std::move(detail), "", blocks};
}
HostCheck Failed(std::string name, std::string detail, std::string fix, bool blocks) {
  return {std::move(name), CheckState::kFail, std::move(detail), std::move(fix), blocks};
}
HostCheck Warned(std::string name, std::string detail, std::string fix) {
  return {std::move(name), CheckState::kWarn, std::move(detail), std::move(fix), false};
}

HostCheck CheckRoot(HostProbe& probe) {
  if (probe.IsRoot()) return Pass("root", "running as root", true);
  return Failed("root", "not running as root: containers, network namespaces and nftables need it",
                "run it as root (sudo -E paddock ...; -E keeps your HOME, where the AWS profile goes)", true);
}

HostCheck CheckCgroups(const CgroupMounts& m) {
  if (!m.any) {
    std::string detail = "no cgroup filesystem is mounted";
    std::string fix = "mount the host's cgroups on /sys/fs/cgroup";
    if (!m.netns_sysfs.empty()) {
      detail += fmt::format(" (/sys was remounted by `ip netns exec {}`, which hides /sys/fs/cgroup)", m.netns_sysfs);
      fix = fmt::format("enter the namespace with `nsenter --net=/var/run/netns/{} ...` instead of `ip netns exec`",
                        m.netns_sysfs);
    }
    return Failed("cgroups", detail, fix, true);
  }
  if (m.unified) return Pass("cgroups", "cgroup v2 at /sys/fs/cgroup", true);
  return Pass("cgroups", fmt::format("cgroup v1 hierarchies{}", m.v2_hybrid.empty() ? "" : fmt::format(" and cgroup2 at {} (hybrid)", m.v2_hybrid)), true);
}

// crun writes memory, cpu and pids limits for every task; on a hybrid host it refuses every
// container while a controller is still attached to the cgroup2 tree (docs/runtime-notes.md).
HostCheck CheckControllers(HostProbe& probe, const CgroupMounts& m) {
  constexpr std::string_view kName = "cgroup controllers";
  if (!m.any) return {std::string(kName), CheckState::kSkip, "no cgroups mounted (see above)", "", true};
  std::vector<std::string> missing;
  if (m.unified) {
    const std::vector<std::string> available = Words(probe.ReadFile("/sys/fs/cgroup/cgroup.controllers").value_or(""));
    for (std::string_view c : {"cpu", "memory", "pids"})
      if (!Contains(available, c)) missing.emplace_back(c);
    if (!missing.empty())
      return Failed(std::string(kName), fmt::format("cgroup v2 offers no {} controller", fmt::join(missing, ", ")),
                    "enable them in the kernel (cgroup_enable=... on its command line) or delegate them to this "
                    "cgroup",
                    true);
    return Pass(std::string(kName), "cpu, memory, pids", true);
  }
  for (std::string_view c : {"cpu", "memory", "pids"})
    if (!Contains(m.v1_controllers, c)) missing.emplace_back(c);
  if (!missing.empty()) {
    std::string mounts;
    for (const auto& c : missing)
      mounts += fmt::format("{}mkdir -p /sys/fs/cgroup/{} && mount -t cgroup -o {} cgroup /sys/fs/cgroup/{}",
                            mounts.empty() ? "" : "; ", c, c, c);
    return Failed(std::string(kName), fmt::format("no {} cgroup controller is mounted", fmt::join(missing, ", ")),
                  mounts, true);
  }
  if (!m.v2_hybrid.empty()) {
    const std::vector<std::string> attached =
        Words(probe.ReadFile(m.v2_hybrid + "/cgroup.controllers").value_or(""));
    if (!attached.empty()) {
      std::string mounts;
      for (const auto& c : attached)
        mounts += fmt::format("{}mkdir -p /sys/fs/cgroup/{} && mount -t cgroup -o {} cgroup /sys/fs/cgroup/{}",
                              mounts.empty() ? "" : "; ", c, c, c);
      return Failed(std::string(kName),
                    fmt::format("hybrid cgroups with {} still on the cgroup2 tree {}: crun refuses every container "
                                "(\"cgroups in hybrid mode not supported\")",
                                fmt::join(attached, ", "), m.v2_hybrid),
                    fmt::format("{} ({})", mounts, kSetup), true);
    }
  }
  return Pass(std::string(kName), "cpu, memory, pids", true);
}

HostCheck CheckCrun(HostProbe& probe, const std::string& crun) {
  const bool chosen = crun != "crun";
  const std::string install = chosen ? fmt::format("point PADDOCK_CRUN at crun, or unset it (it is '{}')", crun)
                                     : fmt::format("apt-get install crun ({})", kSetup);
  std::optional<std::string> path = probe.FindProgram(crun);
  if (!path) return Failed("crun", fmt::format("'{}' is not an installed program", crun), install, true);
  auto run = probe.Run({*path, "--version"});
  if (!run.ok() || run->exit_code != 0)
    return Failed("crun", fmt::format("'{} --version' fails: {}", *path,
                                      run.ok() ? FirstLine(run->output) : std::string(run.status().message())),
                  install, true);
  return Pass("crun", fmt::format("{} ({})", *path, FirstLine(run->output)), true);
}

HostCheck CheckOverlay(HostProbe& probe) {
  std::optional<std::string> fss = probe.ReadFile("/proc/filesystems");
  if (fss && Contains(Words(*fss), "overlay")) return Pass("overlayfs", "overlay is in /proc/filesystems", true);
  return Failed("overlayfs", "the kernel has no overlay filesystem: image layers cannot be stacked",
                "modprobe overlay", true);
}

HostCheck CheckNftables(HostProbe& probe) {
  std::optional<std::string> nft = probe.FindProgram("nft");
  if (!nft)
    return Failed("nftables", "'nft' is not installed: security groups and the host firewall need it",
                  fmt::format("apt-get install nftables ({})", kSetup), true);
  if (!probe.IsRoot()) return {"nftables", CheckState::kSkip, fmt::format("{} (the kernel side needs root to check)", *nft), "", true};
  auto run = probe.Run({*nft, "list", "tables"});
  if (!run.ok() || run->exit_code != 0)
    return Failed("nftables",
                  fmt::format("'nft list tables' fails: {}",
                              run.ok() ? FirstLine(run->output) : std::string(run.status().message())),
                  "load the kernel's nf_tables (modprobe nf_tables)", true);
  return Pass("nftables", *nft, true);
}

HostCheck CheckIproute(HostProbe& probe) {
  if (auto ip = probe.FindProgram("ip")) return Pass("iproute2", *ip, true);
  return Failed("iproute2", "'ip' is not installed: task networks are made with it",
                fmt::format("apt-get install iproute2 ({})", kSetup), true);
}

HostCheck CheckIptables(HostProbe& probe) {
  if (auto p = probe.FindProgram("iptables")) return Pass("iptables", *p, false);
  return Warned("iptables", "'iptables' is not installed: bridge-mode tasks (published ports, NAT) cannot start",
                fmt::format("apt-get install iptables ({})", kSetup));
}

HostCheck CheckIpForward(HostProbe& probe) {
  std::optional<std::string> v = probe.ReadFile("/proc/sys/net/ipv4/ip_forward");
  if (v && Trim(*v) == "1") return Pass("ip_forward", "net.ipv4.ip_forward = 1", false);
  return Warned("ip_forward", "net.ipv4.ip_forward is off: tasks reach the host but nothing beyond it",
                fmt::format("sysctl -w net.ipv4.ip_forward=1 ({})", kSetup));
}

HostCheck CheckTini(HostProbe& probe, const std::string& init) {
  if (auto p = probe.FindProgram(init)) return Pass("tini", *p, false);
  return Warned("tini", fmt::format("{} is missing: tasks with initProcessEnabled are refused", init),
                fmt::format("apt-get install tini ({})", kSetup));
}

// The agent reads and translates the profile when its runtime opens; here: is it there at all.
HostCheck CheckSeccomp(HostProbe& probe, const std::string& profile) {
  std::optional<std::string> text = probe.ReadFile(profile);
  if (text && text->find("\"defaultAction\"") != std::string::npos)
    return Pass("seccomp", fmt::format("{} (the containers' default profile)", profile), true);
  return Failed("seccomp",
                fmt::format("{} is {}: containers are refused rather than run without a seccomp profile", profile,
                            text ? "not a seccomp profile" : "missing"),
                fmt::format("apt-get install golang-github-containers-common ({})", kSetup), true);
}

HostCheck CheckSkopeo(HostProbe& probe) {
  if (auto p = probe.FindProgram("skopeo")) return Pass("skopeo", *p, false);
  return Warned("skopeo", "'skopeo' is not installed: images can be imported (paddock image import) but not pulled",
                fmt::format("apt-get install skopeo ({})", kSetup));
}

std::string Bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(n) / double(uint64_t{1} << 30));
  return fmt::format("{} MiB", n >> 20);
}

HostCheck CheckDisk(HostProbe& probe, const HostCheckOptions& o) {
  auto free = probe.FreeBytes(o.state_dir);
  if (!free.ok())
    return {"free disk", CheckState::kSkip, fmt::format("cannot tell: {}", free.status().message()), "", false};
  const std::string detail = fmt::format("{} free for {}", Bytes(*free), o.state_dir);
  const std::string fix = "free some space, or use a --state-dir on a larger filesystem (images and container "
                          "layers live there)";
  if (*free < o.min_free_bytes) return Failed("free disk", detail, fix, false);
  if (*free < 4 * o.min_free_bytes) return Warned("free disk", detail, fix);
  return Pass("free disk", detail, false);
}

HostCheck CheckPort(HostProbe& probe, const HostCheckOptions& o) {
  const size_t colon = o.listen.rfind(':');
  std::string host = colon == std::string::npos ? o.listen : o.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string digits = colon == std::string::npos ? "" : o.listen.substr(colon + 1);
  const bool numeric = !digits.empty() && digits.size() <= 5 &&
                       std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  const int port = numeric ? std::atoi(digits.c_str()) : -1;
  if (port < 0 || port > 65535) return Failed("api port", fmt::format("'{}' is not HOST:PORT", o.listen), "pass --listen HOST:PORT", false);
  if (port == 0) return Pass("api port", "port 0: the server picks a free one", false);
  if (!o.listen_holder.empty()) return Pass("api port", fmt::format("{} is served by {}", o.listen, o.listen_holder), false);
  Status s = probe.TryBind(host, static_cast<uint16_t>(port));
  if (s.ok()) return Pass("api port", fmt::format("{} is free", o.listen), false);
  return Failed("api port", fmt::format("cannot listen on {}: {}", o.listen, s.message()),
                fmt::format("stop what listens there, or pass --listen {}:{}", host, port == 65535 ? 4567 : port + 1),
                false);
}

}  // namespace

std::string_view CheckStateName(CheckState state) {
  switch (state) {
    case CheckState::kPass: return "ok";
    case CheckState::kWarn: return "warn";
    case CheckState::kFail: return "FAIL";
    case CheckState::kSkip: return "skip";
  }
  return "?";
}

CgroupMounts ParseCgroupMounts(std::string_view mountinfo) {
  CgroupMounts m;
  bool v2_root = false;
  std::vector<std::string> v2_elsewhere;
  for (const MountInfo& mount : ParseMountInfo(mountinfo)) {
    if (mount.fstype == "cgroup") {
      m.any = true;
      std::istringstream opts(mount.super_options);
      for (std::string o; std::getline(opts, o, ',');)
        if (o == "cpu" || o == "memory" || o == "pids" || o == "cpuacct" || o == "cpuset" || o == "hugetlb" ||
            o == "devices" || o == "freezer" || o == "blkio" || o == "net_cls" || o == "net_prio" ||
            o == "perf_event" || o == "rdma" || o == "misc")
          m.v1_controllers.push_back(o);
    } else if (mount.fstype == "cgroup2") {
      m.any = true;
      if (mount.mount_point == "/sys/fs/cgroup") v2_root = true;
      else v2_elsewhere.push_back(mount.mount_point);
    } else if (mount.fstype == "sysfs" && mount.mount_point == "/sys") {
      m.netns_sysfs = mount.source == "sysfs" || mount.source == "none" ? "" : mount.source;
    }
  }
  // As agent/runtime's DetectCgroupLayout decides: v1 controllers first, else v2 at the root.
  const bool v1_memory = Contains(m.v1_controllers, "memory");
  m.unified = !v1_memory && v2_root;
  if (!m.unified && !v2_elsewhere.empty()) m.v2_hybrid = v2_elsewhere.front();
  if (m.any) m.netns_sysfs.clear();  // cgroups are there: whoever mounted /sys, it hid nothing
  return m;
}

std::vector<HostCheck> RunHostChecks(HostProbe& probe, const HostCheckOptions& options, CheckSet set) {
  std::vector<HostCheck> out;
  out.push_back(CheckRoot(probe));
  const CgroupMounts mounts = ParseCgroupMounts(probe.ReadFile("/proc/self/mountinfo").value_or(""));
  out.push_back(CheckCgroups(mounts));
  out.push_back(CheckControllers(probe, mounts));
  out.push_back(CheckCrun(probe, options.crun));
  out.push_back(CheckOverlay(probe));
  out.push_back(CheckNftables(probe));
  out.push_back(CheckIproute(probe));
  out.push_back(CheckIptables(probe));
  out.push_back(CheckIpForward(probe));
  out.push_back(CheckTini(probe, options.init_binary));
  out.push_back(CheckSeccomp(probe, options.seccomp_profile));
  out.push_back(CheckSkopeo(probe));
  out.push_back(CheckDisk(probe, options));
  if (set == CheckSet::kAll && !options.listen.empty()) out.push_back(CheckPort(probe, options));
  return out;
}

bool CanRunContainers(const std::vector<HostCheck>& checks) {
  return std::none_of(checks.begin(), checks.end(),
                      [](const HostCheck& c) { return c.blocks_tasks && c.state == CheckState::kFail; });
}

std::string CannotRunSummary(const std::vector<HostCheck>& checks) {
  std::string out;
  for (const HostCheck& c : checks) {
    if (!c.blocks_tasks || c.state != CheckState::kFail) continue;
    out += fmt::format("{}{}: {} (fix: {})", out.empty() ? "" : "; ", c.name, c.detail, c.fix);
  }
  return out;
}

std::string FormatCheck(const HostCheck& c) {
  std::string line = fmt::format("{:<5} {:<19} {}", CheckStateName(c.state), c.name, c.detail);
  if (!c.fix.empty() && c.state != CheckState::kPass) line += fmt::format(" — fix: {}", c.fix);
  return line;
}

std::string CrunBinary() {
  const char* env = std::getenv("PADDOCK_CRUN");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("crun");
}

// ---- SystemHostProbe ----

bool SystemHostProbe::IsRoot() { return ::geteuid() == 0; }

std::optional<std::string> SystemHostProbe::ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return text;
}

std::optional<std::string> SystemHostProbe::FindProgram(const std::string& program) {
  if (program.empty()) return std::nullopt;
  auto executable = [](const std::string& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return executable(program) ? std::optional(program) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + program;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

StatusOr<HostProbe::ProgramResult> SystemHostProbe::Run(const std::vector<std::string>& argv) {
  ASSIGN_OR_RETURN(subprocess::RunResult r, subprocess::RunCaptured(argv, std::chrono::seconds(5), 4096));
  return ProgramResult{r.exit_code, std::move(r.output)};
}

StatusOr<uint64_t> SystemHostProbe::FreeBytes(const std::string& path) {
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs st;
  if (::statvfs(p.c_str(), &st) != 0) return Unavailable(fmt::format("statvfs {}: {}", p.string(), std::strerror(errno)));
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

Status SystemHostProbe::TryBind(const std::string& host, uint16_t port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  const std::string h = host.empty() || host == "localhost" ? "127.0.0.1" : host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(*v4);
  } else if (::inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(*v6);
  } else {
    return InvalidArgument(fmt::format("'{}' is not an IP address", host));
  }
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(std::strerror(errno));
  // As the server binds (SO_REUSEADDR): a port in TIME_WAIT is free for it.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Unavailable(err == EADDRINUSE ? "the address is in use" : std::strerror(err));
  return OkStatus();
}

}  // namespace paddock::cli
