#include "agent/runtime/crun_runtime.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/core.h>

#include "agent/runtime/internal/oci_config.h"
#include "common/private_files.h"

namespace paddock::agent::runtime {
namespace fs = std::filesystem;
using subprocess::UniqueFd;

namespace {

// This process's capability bounding set, bit n = capability n: what a privileged container can
// be given (crun inherits it; one capability beyond it fails the container's capset).
uint64_t BoundingCaps() {
  static const uint64_t caps = [] {
    uint64_t out = 0;
    for (int n = 0; n < 64; ++n)
      if (prctl(PR_CAPBSET_READ, n, 0, 0, 0) == 1) out |= uint64_t{1} << n;
    return out;
  }();
  return caps;
}

// Standard base64 with padding (crun decodes run.oci.seccomp_bpf_data with it).
std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// Most distinct capability sets whose compiled filters are kept.
constexpr size_t kMaxCachedFilters = 64;

// Overlay mount data must fit in one page (docs/runtime-notes.md, gotcha 14).
constexpr size_t kMaxMountData = 4095;

std::string ReadSmallFile(const std::string& path, size_t max = 64 * 1024) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string s(max, '\0');
  in.read(s.data(), static_cast<std::streamsize>(max));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) return Internal(fmt::format("cannot write {}", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Internal(fmt::format("rename {}: {}", tmp, std::strerror(errno)));
  }
  return OkStatus();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Unmounts the bundle's rootfs if it is a mount point. Lazily when busy: the container is gone
// by now, so what holds it is a straggler (an exec'd process, a shell cd'd into it).
void UnmountRootfs(const std::string& rootfs) {
  if (::umount2(rootfs.c_str(), 0) != 0 && errno == EBUSY) ::umount2(rootfs.c_str(), MNT_DETACH);
}

bool IsAlive(ContainerStatus s) { return s != ContainerStatus::kStopped; }

// Makes the root mount of the created (not yet started) container `pid` nosuid,nodev (and ro
// again when `read_only`). crun 1.8 bind-mounts the rootfs onto itself and remounts that bind
// with only the flags the OCI root asks for, which drop the overlay's own nosuid,nodev, and the
// OCI root has no mount options. So the agent remounts it from inside the container's mount
// namespace, before its command runs. A short-lived thread does it: it first unshares its
// file-system context (setns(CLONE_NEWNS) refuses a thread that shares it with others), then joins
// the container's mount namespace — namespaces are per thread, so nothing else of the agent moves —
// and ends there. No fork: a forked child of a multithreaded process (and under TSan, whose runtime
// starts a thread in the child) cannot join a mount namespace either.
Status HardenRootMount(int pid, bool read_only) {
  const std::string ns = fmt::format("/proc/{}/ns/mnt", pid);
  const unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
  std::string failed;  // written by the thread, read after join
  std::thread worker([&] {
    if (::unshare(CLONE_FS) != 0) {
      failed = fmt::format("unshare(CLONE_FS): {}", std::strerror(errno));
      return;
    }
    const int fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      failed = fmt::format("open {}: {}", ns, std::strerror(errno));
      return;
    }
    const int joined = ::setns(fd, CLONE_NEWNS);
    const int join_errno = errno;
    ::close(fd);
    if (joined != 0) {
      failed = fmt::format("setns {}: {}", ns, std::strerror(join_errno));
      return;
    }
    if (::mount(nullptr, "/", nullptr, flags, nullptr) != 0)
      failed = fmt::format("mount -o remount,bind,nosuid,nodev /: {}", std::strerror(errno));
  });
  worker.join();
  if (!failed.empty()) return Internal(fmt::format("cannot remount the container's root nosuid,nodev: {}", failed));
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<CrunRuntime>> CrunRuntime::Open(CrunRuntimeOptions options) {
  if (options.state_dir.empty() || options.state_dir.front() != '/') {
    return InvalidArgument("runtime state_dir must be an absolute path");
  }
  if (options.cgroup_parent.empty() || options.cgroup_parent.front() != '/') {
    return InvalidArgument("cgroup_parent must be absolute (\"/paddock/<instance>\")");
  }
  // Private: bundles hold the containers' configs (their environment) and their upper dirs.
  if (Status s = MakePrivateDir(options.state_dir); !s.ok()) return Internal(s.message());
  std::error_code ec;
  fs::create_directories(options.state_dir + "/crun", ec);
  fs::create_directories(options.state_dir + "/c", ec);
  if (ec) return Internal(fmt::format("cannot create {}: {}", options.state_dir, ec.message()));

  ASSIGN_OR_RETURN(CgroupLayout layout, DetectCgroupLayout());

  auto version = subprocess::RunCaptured({options.crun_binary, "--version"}, std::chrono::seconds(5));
  if (!version.ok() || version->exit_code != 0) {
    return FailedPrecondition(fmt::format("cannot run '{} --version': {}", options.crun_binary,
                                          version.ok() ? Trim(version->output)
                                                       : version.status().message()));
  }
  if (!options.init_binary.empty() && ::access(options.init_binary.c_str(), X_OK) != 0) {
    options.init_binary.clear();  // initProcessEnabled containers are refused (see the header)
  }
  // Before any container goes under it: there is no moment when the node's tasks together are
  // unbounded.
  if (options.node_pids_max > 0) {
    CgroupLimits node;
    node.pids_max = options.node_pids_max;
    if (Status s = CreateCgroupWithLimits(layout, options.cgroup_parent, node); !s.ok())
      return Status(s.code(), fmt::format("bounding the node's processes ({} pids.max): {}", options.cgroup_parent,
                                          s.message()));
  }
  // Read and translated once, here: a container's Create only picks the rules of its capabilities.
  std::optional<internal::SeccompProfile> seccomp;
  Status seccomp_status = OkStatus();
  auto profile = internal::SeccompProfile::Load(options.seccomp_profile, internal::SeccompHost::Detect());
  if (profile.ok()) {
    seccomp = profile->WithDockerRestrictions();
  } else {
    seccomp_status = FailedPrecondition(fmt::format(
        "no seccomp profile ({}): containers are not run without one (scripts/setup installs Debian's "
        "golang-github-containers-common, which ships {})",
        profile.status().message(), kDefaultSeccompProfile));
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return Internal(fmt::format("prctl(PR_SET_CHILD_SUBREAPER): {}", std::strerror(errno)));
  }
  return std::unique_ptr<CrunRuntime>(
      new CrunRuntime(std::move(options), std::move(layout), std::move(seccomp), std::move(seccomp_status)));
}

CrunRuntime::CrunRuntime(CrunRuntimeOptions options, CgroupLayout layout,
                         std::optional<internal::SeccompProfile> seccomp, Status seccomp_status)
    : options_(std::move(options)),
      crun_root_(options_.state_dir + "/crun"),
      layout_(std::move(layout)),
      seccomp_(std::move(seccomp)),
      seccomp_status_(std::move(seccomp_status)) {}

uint64_t NodePidsMaxFor(uint64_t pid_max, uint64_t threads_max) {
  // Whichever runs out first: pids, or the kernel's count of threads (smaller on small hosts and
  // where systemd raised pid_max to 4,194,304).
  const uint64_t limit = threads_max > 0 ? std::min(pid_max, threads_max) : pid_max;
  const uint64_t reserve = std::max<uint64_t>(4096, limit / 10);
  return limit > reserve ? limit - reserve : 0;
}

uint64_t DefaultNodePidsMax() {
  uint64_t pid_max = 0;
  uint64_t threads_max = 0;
  std::istringstream(ReadSmallFile("/proc/sys/kernel/pid_max")) >> pid_max;
  std::istringstream(ReadSmallFile("/proc/sys/kernel/threads-max")) >> threads_max;
  return NodePidsMaxFor(pid_max, threads_max);
}

std::string CrunRuntime::BundleDir(const ContainerId& id) const {
  return options_.state_dir + "/c/" + id.str();
}

std::vector<std::string> CrunRuntime::CrunArgv(std::initializer_list<std::string> args) const {
  std::vector<std::string> argv{options_.crun_binary, "--root", crun_root_};
  argv.insert(argv.end(), args);
  return argv;
}

StatusOr<subprocess::RunResult> CrunRuntime::RunCrun(std::initializer_list<std::string> args) const {
  return subprocess::RunCaptured(CrunArgv(args), options_.crun_timeout);
}

std::string CrunRuntime::CrunLogTail(const ContainerId& id) const {
  std::string log = Trim(ReadSmallFile(BundleDir(id) + "/crun.log"));
  size_t nl = log.rfind('\n');
  return nl == std::string::npos ? log : log.substr(nl + 1);
}

std::string CrunRuntime::CgroupPathFromBundle(const ContainerId& id) const {
  return Trim(ReadSmallFile(BundleDir(id) + "/cgroup"));
}

Status CrunRuntime::Create(const ContainerSpec& spec) {
  const ContainerId& id = spec.id;
  if (!IsValidContainerId(id.str())) {
    return InvalidArgument(fmt::format("invalid container id '{}'", id.str()));
  }
  if (spec.lower_dirs.empty() == spec.rootfs_dir.empty()) {
    return InvalidArgument("a container needs either lower_dirs or rootfs_dir, not both");
  }
  if (!spec.privileged && !seccomp_) return seccomp_status_;
  const std::string bundle = BundleDir(id);
  const std::string cgroup_parent =
      spec.cgroup_parent.empty() ? options_.cgroup_parent : spec.cgroup_parent;
  // Devices (a host-level grant): what the host has at each path, for the container's node and
  // its device cgroup rule.
  std::vector<internal::DeviceNode> devices;
  for (const Device& d : spec.devices) {
    struct stat st {};
    if (::stat(d.host_path.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
      return FailedPrecondition(fmt::format("device '{}' is not a character or block device on this host", d.host_path));
    std::string access = std::string(d.read ? "r" : "") + (d.write ? "w" : "") + (d.mknod ? "m" : "");
    devices.push_back(internal::DeviceNode{d.container_path.empty() ? d.host_path : d.container_path,
                                           S_ISCHR(st.st_mode) ? 'c' : 'b', major(st.st_rdev), minor(st.st_rdev),
                                           st.st_mode & 07777, access});
  }
  // The seccomp filter depends only on the capabilities (the profile and the host are fixed).
  std::string filter_key;  // empty: no filter
  if (!spec.privileged) {
    ASSIGN_OR_RETURN(std::vector<std::string> caps, internal::EffectiveCapabilities(spec, BoundingCaps()));
    filter_key = "caps:";
    for (const std::string& c : caps) filter_key += c + ",";
  }
  std::string cached_filter;
  if (!filter_key.empty()) {
    std::lock_guard lock(mu_);
    if (auto it = seccomp_bpf_.find(filter_key); it != seccomp_bpf_.end()) cached_filter = it->second;
  }
  internal::BundleOptions bundle_options{
      .root_path = spec.lower_dirs.empty() ? spec.rootfs_dir : "rootfs",
      .cgroups_path = cgroup_parent + "/" + id.str(),
      .swap_accounting = layout_.swap_accounting,
      .init_binary = options_.init_binary,
      .bounding_caps = BoundingCaps(),
      .devices = std::move(devices),
      .seccomp = seccomp_ ? &*seccomp_ : nullptr,
      .seccomp_bpf_base64 = cached_filter,
  };
  ASSIGN_OR_RETURN(std::string config, internal::BuildOciConfig(spec, bundle_options));

  std::string mount_data;
  if (!spec.lower_dirs.empty()) {
    mount_data = "lowerdir=";
    for (size_t i = 0; i < spec.lower_dirs.size(); ++i) {
      const std::string& dir = spec.lower_dirs[i];
      if (dir.empty() || dir.front() != '/' || dir.find_first_of(",:") != std::string::npos) {
        return InvalidArgument(fmt::format("layer dir '{}' must be absolute, without ',' or ':'", dir));
      }
      mount_data += (i ? ":" : "") + dir;
    }
    mount_data += fmt::format(",upperdir={0}/upper,workdir={0}/work", bundle);
    if (mount_data.size() > kMaxMountData) {
      // TODO: fsconfig(2) with lowerdir+ (Linux ≥ 6.8) lifts the one-page limit for deep images.
      return InvalidArgument(fmt::format("{} layers do not fit in one overlay mount",
                                         spec.lower_dirs.size()));
    }
  }

  {
    std::lock_guard lock(mu_);
    if (tracked_.count(id)) return AlreadyExists(fmt::format("container {} exists", id.str()));
  }
  // mkdir claims the id atomically, also against another runtime object on the same state dir.
  if (::mkdir(bundle.c_str(), 0700) != 0) {
    if (errno == EEXIST) return AlreadyExists(fmt::format("container {} exists", id.str()));
    return Internal(fmt::format("mkdir {}: {}", bundle, std::strerror(errno)));
  }
  bool mounted = false;
  auto fail = [&](Status s) -> Status {
    if (mounted) UnmountRootfs(bundle + "/rootfs");
    std::error_code ec;
    fs::remove_all(bundle, ec);
    return s;
  };

  if (!spec.lower_dirs.empty()) {
    for (const char* sub : {"/upper", "/work", "/rootfs"}) {
      if (::mkdir((bundle + sub).c_str(), 0755) != 0) {
        return fail(Internal(fmt::format("mkdir {}{}: {}", bundle, sub, std::strerror(errno))));
      }
    }
    // nosuid,nodev: a setuid file or device node of an image (or one the container makes in its
    // upper dir) is inert through this mount for anyone on the host; the container's own view of
    // it gets the same flags from HardenRootMount.
    if (::mount("overlay", (bundle + "/rootfs").c_str(), "overlay", MS_NOSUID | MS_NODEV, mount_data.c_str()) != 0) {
      return fail(Internal(fmt::format("mounting the overlay rootfs ({}): {}", mount_data,
                                       std::strerror(errno))));
    }
    mounted = true;
  }
  if (Status s = WriteFileAtomically(bundle + "/config.json", config); !s.ok()) return fail(s);
  if (Status s = WriteFileAtomically(bundle + "/cgroup", bundle_options.cgroups_path + "\n");
      !s.ok()) {
    return fail(s);
  }

  auto open_log = [](const std::string& path) {
    if (path.empty()) return UniqueFd();
    struct stat st;
    // A FIFO (the agent's log pump reads it) is opened read-write: the container is then a reader
    // too, so its writes never fail with EPIPE or SIGPIPE while nobody else reads (they block
    // once the pipe is full), and the open never waits for a reader.
    if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) return UniqueFd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    return UniqueFd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  };
  UniqueFd out = open_log(spec.stdout_path);
  if (!spec.stdout_path.empty() && !out.valid()) {
    return fail(Internal(fmt::format("open {}: {}", spec.stdout_path, std::strerror(errno))));
  }
  UniqueFd err_owned;
  int err_fd = out.get();
  if (spec.stderr_path != spec.stdout_path) {
    err_owned = open_log(spec.stderr_path);
    if (!spec.stderr_path.empty() && !err_owned.valid()) {
      return fail(Internal(fmt::format("open {}: {}", spec.stderr_path, std::strerror(errno))));
    }
    err_fd = err_owned.get();
  }

  // The container inherits crun's stdio; crun's own messages go to crun.log instead.
  auto child = subprocess::Spawn(
      CrunArgv({"--log=file:" + bundle + "/crun.log", "create", "--bundle", bundle, "--pid-file",
                bundle + "/pid", id.str()}),
      subprocess::Stdio{-1, out.get(), err_fd});
  if (!child.ok()) return fail(child.status());
  auto exit = subprocess::WaitChild(*child, options_.crun_timeout);
  if (!exit.ok() || !*exit || **exit != 0) {
    subprocess::KillAndReap(*child);
    std::string why = !exit.ok() ? exit.status().message()
                      : !*exit   ? "timed out"
                                 : CrunLogTail(id);
    // crun may have got as far as its state and cgroup.
    RunCrun({"delete", "--force", id.str()}).status().IgnoreError();
    return fail(Internal(fmt::format("crun create {}: {}", id.str(), why)));
  }

  int pid = 0;
  std::istringstream(ReadSmallFile(bundle + "/pid")) >> pid;
  if (pid <= 0) {
    RunCrun({"delete", "--force", id.str()}).status().IgnoreError();
    return fail(Internal(fmt::format("crun create {} wrote no pid", id.str())));
  }
  if (Status s = HardenRootMount(pid, spec.readonly_rootfs); !s.ok()) {
    RunCrun({"delete", "--force", id.str()}).status().IgnoreError();
    return fail(Internal(fmt::format("crun create {}: {}", id.str(), s.message())));
  }
  // What crun compiled for this container serves the next ones with its capabilities. Whole
  // 8-byte instructions only: anything else is not a filter crun wrote completely.
  std::string compiled;
  if (!filter_key.empty() && cached_filter.empty()) {
    compiled = ReadSmallFile(fmt::format("{}/{}/{}", crun_root_, id.str(), internal::kCrunSeccompBpfFile), 1 << 20);
  }
  std::lock_guard lock(mu_);
  if (!compiled.empty() && compiled.size() % 8 == 0) {
    if (seccomp_bpf_.size() >= kMaxCachedFilters) seccomp_bpf_.clear();
    seccomp_bpf_.emplace(filter_key, Base64(compiled));
  }
  Tracked& t = tracked_[id];
  t.status = ContainerStatus::kCreated;
  t.pid = pid;
  t.pidfd = subprocess::OpenPidfd(pid);
  t.cgroup_path = bundle_options.cgroups_path;
  return OkStatus();
}

Status CrunRuntime::Start(const ContainerId& id) {
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(Tracked * t, FindLocked(id));
    RefreshLocked(id, *t);
    if (t->status != ContainerStatus::kCreated) {
      return FailedPrecondition(fmt::format("container {} is {}, not created", id.str(),
                                            ContainerStatusName(t->status)));
    }
  }
  ASSIGN_OR_RETURN(subprocess::RunResult r,
                   RunCrun({"--log=file:" + BundleDir(id) + "/crun.log", "start", id.str()}));
  if (r.exit_code != 0) {
    return Internal(fmt::format("crun start {}: {}", id.str(), CrunLogTail(id)));
  }
  std::lock_guard lock(mu_);
  auto it = tracked_.find(id);
  if (it != tracked_.end() && it->second.status == ContainerStatus::kCreated) {
    it->second.status = ContainerStatus::kRunning;
  }
  return OkStatus();
}

StatusOr<ExecResult> CrunRuntime::Exec(const ContainerId& id, const std::vector<std::string>& args,
                                       std::chrono::milliseconds timeout) {
  if (args.empty()) return InvalidArgument("exec needs a command");
  uint64_t n = 0;
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(Tracked * t, FindLocked(id));
    RefreshLocked(id, *t);
    if (t->status != ContainerStatus::kRunning) {
      return FailedPrecondition(fmt::format("container {} is {}, not running", id.str(),
                                            ContainerStatusName(t->status)));
    }
    n = ++exec_counter_;
  }
  const std::string base = fmt::format("{}/exec-{}", BundleDir(id), n);
  std::vector<std::string> argv =
      CrunArgv({"--log=file:" + base + ".log", "exec", "--pid-file", base + ".pid", id.str()});
  argv.insert(argv.end(), args.begin(), args.end());

  ASSIGN_OR_RETURN(UniqueFd out, subprocess::MakeMemfd("paddock-exec"));
  ASSIGN_OR_RETURN(subprocess::Child child, subprocess::Spawn(argv, subprocess::Stdio{-1, out.get(), out.get()}));
  auto status = subprocess::WaitChild(child, timeout);
  ExecResult result;
  if (!status.ok() || !*status) {
    // The command runs as a child of `crun exec` inside the container: kill it by the pid crun
    // recorded, or it would outlive its health check. Its pidfd is taken while `crun exec`, its
    // parent, still holds it, so the pid cannot have been reused.
    int pid = 0;
    std::istringstream(ReadSmallFile(base + ".pid")) >> pid;
    UniqueFd command = pid > 0 ? subprocess::OpenPidfd(pid) : UniqueFd();
    if (command.valid()) ::syscall(SYS_pidfd_send_signal, command.get(), SIGKILL, nullptr, 0);
    subprocess::KillAndReap(child);
    if (command.valid()) {
      // With `crun exec` gone the command is reparented to us, the subreaper. Reap it: an
      // unreaped zombie in the container's pid namespace would keep its PID 1 from ever
      // finishing its exit.
      subprocess::WaitPidfdReadable(command.get(), std::chrono::seconds(5));
      subprocess::TryReap(pid).status().IgnoreError();
    }
    result.timed_out = true;
  } else {
    result.exit_code = **status;
  }
  result.output = subprocess::ReadMemfd(out.get(), kMaxExecOutput);
  std::string crun_error = Trim(ReadSmallFile(base + ".log"));
  ::unlink((base + ".pid").c_str());
  ::unlink((base + ".log").c_str());
  if (!result.timed_out && result.exit_code != 0 && !crun_error.empty()) {
    // crun itself failed (the container went away, the command does not exist, …).
    return Internal(fmt::format("crun exec {}: {}", id.str(), crun_error));
  }
  return result;
}

Status CrunRuntime::Kill(const ContainerId& id, int signal) {
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(Tracked * t, FindLocked(id));
    RefreshLocked(id, *t);
    if (!IsAlive(t->status)) return OkStatus();
    if (t->pidfd.valid()) {
      // What `crun kill` does, minus a fork: signal PID 1 through its pidfd (no pid-reuse race).
      if (::syscall(SYS_pidfd_send_signal, t->pidfd.get(), signal, nullptr, 0) == 0 ||
          errno == ESRCH) {
        return OkStatus();
      }
      return Internal(fmt::format("signalling container {}: {}", id.str(), std::strerror(errno)));
    }
  }
  ASSIGN_OR_RETURN(subprocess::RunResult r, RunCrun({"kill", id.str(), std::to_string(signal)}));
  if (r.exit_code == 0) return OkStatus();
  ASSIGN_OR_RETURN(ContainerState s, State(id));
  if (s.status == ContainerStatus::kStopped) return OkStatus();
  return Internal(fmt::format("crun kill {}: {}", id.str(), Trim(r.output)));
}

StatusOr<ContainerState> CrunRuntime::State(const ContainerId& id) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Tracked * t, FindLocked(id));
  RefreshLocked(id, *t);
  return StateOf(id, *t);
}

StatusOr<ContainerState> CrunRuntime::Wait(const ContainerId& id, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  UniqueFd pidfd;
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(Tracked * t, FindLocked(id));
    RefreshLocked(id, *t);
    if (!IsAlive(t->status)) return StateOf(id, *t);
    if (t->pidfd.valid()) pidfd = UniqueFd(::fcntl(t->pidfd.get(), F_DUPFD_CLOEXEC, 0));
  }
  if (pidfd.valid()) {
    subprocess::WaitPidfdReadable(pidfd.get(), timeout);
    return State(id);
  }
  // No pidfd (could not be opened): poll, bounded by the deadline.
  for (;;) {
    ASSIGN_OR_RETURN(ContainerState s, State(id));
    if (s.status == ContainerStatus::kStopped || std::chrono::steady_clock::now() >= deadline) {
      return s;
    }
    ::usleep(10'000);
  }
}

Status CrunRuntime::Delete(const ContainerId& id, ForceDelete force) {
  const std::string bundle = BundleDir(id);
  UniqueFd pidfd;
  {
    std::lock_guard lock(mu_);
    auto t = FindLocked(id);
    if (!t.ok()) {
      if (t.status().code() != StatusCode::kNotFound) return t.status();
      // Not known to crun: a create that crashed half-way may have left a bundle.
      std::error_code ec;
      if (!fs::exists(bundle, ec)) return t.status();
      UnmountRootfs(bundle + "/rootfs");
      fs::remove_all(bundle, ec);
      return OkStatus();
    }
    RefreshLocked(id, **t);
    if ((*t)->status == ContainerStatus::kRunning && force == ForceDelete::kNo) {
      return FailedPrecondition(fmt::format("container {} is running", id.str()));
    }
    if (IsAlive((*t)->status) && (*t)->pidfd.valid()) {
      ::syscall(SYS_pidfd_send_signal, (*t)->pidfd.get(), SIGKILL, nullptr, 0);
      pidfd = UniqueFd(::fcntl((*t)->pidfd.get(), F_DUPFD_CLOEXEC, 0));
    }
  }
  if (pidfd.valid()) {
    // SIGKILL is prompt; the bound only guards against a process stuck in the kernel (D state).
    subprocess::WaitPidfdReadable(pidfd.get(), std::chrono::seconds(10));
    // Record exit code and OOM while the cgroup still exists.
    State(id).status().IgnoreError();
  }
  ASSIGN_OR_RETURN(subprocess::RunResult r, RunCrun({"delete", "--force", id.str()}));
  if (r.exit_code != 0) {
    auto still = RunCrun({"state", id.str()});
    if (still.ok() && still->exit_code == 0) {
      return Internal(fmt::format("crun delete {}: {}", id.str(), Trim(r.output)));
    }
  }
  UnmountRootfs(bundle + "/rootfs");
  std::error_code ec;
  fs::remove_all(bundle, ec);
  std::lock_guard lock(mu_);
  tracked_.erase(id);
  if (ec) return Internal(fmt::format("removing {}: {}", bundle, ec.message()));
  return OkStatus();
}

StatusOr<std::vector<ContainerState>> CrunRuntime::List() {
  ASSIGN_OR_RETURN(subprocess::RunResult r, RunCrun({"list", "--format", "json"}));
  if (r.exit_code != 0) return Internal(fmt::format("crun list: {}", Trim(r.output)));
  ASSIGN_OR_RETURN(std::vector<internal::CrunState> listed, internal::ParseCrunList(r.output));
  std::vector<ContainerState> out;
  std::lock_guard lock(mu_);
  for (const auto& c : listed) {
    ContainerId id(c.id);
    auto it = tracked_.find(id);
    Tracked& t = it != tracked_.end() ? it->second : AdoptLocked(id, c.status, c.pid);
    RefreshLocked(id, t);
    out.push_back(StateOf(id, t));
    out.back().annotations = internal::ParseAnnotations(ReadSmallFile(BundleDir(id) + "/config.json", 4 << 20));
  }
  return out;
}

StatusOr<std::string> CrunRuntime::CreateGroup(std::string_view name, const GroupLimits& limits) {
  if (!IsValidContainerId(name)) return InvalidArgument(fmt::format("invalid cgroup name '{}'", name));
  std::string path = options_.cgroup_parent + "/" + std::string(name);
  CgroupLimits cgroup;
  cgroup.memory_limit_bytes = limits.memory_limit_bytes;
  cgroup.cpu_quota_us = limits.cpu_limit_units ? CpuQuotaUs(limits.cpu_limit_units) : 0;
  cgroup.cpu_period_us = kCpuPeriodUs;
  cgroup.pids_max = limits.pids_max;
  RETURN_IF_ERROR(CreateCgroupWithLimits(layout_, path, cgroup));
  return path;
}

Status CrunRuntime::DeleteGroup(std::string_view name) {
  if (!IsValidContainerId(name)) return InvalidArgument(fmt::format("invalid cgroup name '{}'", name));
  return RemoveCgroup(layout_, options_.cgroup_parent + "/" + std::string(name));
}

void CrunRuntime::RemoveEmptyCgroups() {
  // RemoveCgroup goes leaf-first and reports the busy ones, which are meant to stay.
  RemoveCgroup(layout_, options_.cgroup_parent).IgnoreError();
}

StatusOr<CrunRuntime::Tracked*> CrunRuntime::FindLocked(const ContainerId& id) {
  auto it = tracked_.find(id);
  if (it != tracked_.end()) return &it->second;
  if (!IsValidContainerId(id.str())) return NotFound(fmt::format("no container {}", id.str()));
  ASSIGN_OR_RETURN(subprocess::RunResult r, RunCrun({"state", id.str()}));
  if (r.exit_code != 0) return NotFound(fmt::format("no container {}", id.str()));
  ASSIGN_OR_RETURN(internal::CrunState s, internal::ParseCrunState(r.output));
  return &AdoptLocked(id, s.status, s.pid);
}

CrunRuntime::Tracked& CrunRuntime::AdoptLocked(const ContainerId& id, std::string_view crun_status,
                                               int pid) {
  Tracked& t = tracked_[id];
  t.cgroup_path = CgroupPathFromBundle(id);
  // A verdict written earlier (by this process or before a restart) is the truth.
  std::istringstream exit_file(ReadSmallFile(BundleDir(id) + "/exit"));
  std::string code;
  int oom = 0;
  if (exit_file >> code >> oom) {
    t.status = ContainerStatus::kStopped;
    if (code != "-") t.exit_code = std::atoi(code.c_str());
    t.oom_killed = oom != 0;
    return t;
  }
  if (crun_status != "stopped" && pid > 0) {
    t.status = crun_status == "created" ? ContainerStatus::kCreated : ContainerStatus::kRunning;
    t.pid = pid;
    t.pidfd = subprocess::OpenPidfd(pid);
  }
  // Otherwise (stopped, or its pid is gone): RefreshLocked records it with no exit code.
  return t;
}

void CrunRuntime::RefreshLocked(const ContainerId& id, Tracked& t) {
  if (!IsAlive(t.status)) return;
  if (t.pid > 0 && t.pidfd.valid()) {
    auto reaped = subprocess::TryReap(t.pid);
    if (reaped.ok()) {
      if (!*reaped) return;  // our child, still running
      t.exit_code = **reaped;
    } else if (!subprocess::WaitPidfdReadable(t.pidfd.get(), std::chrono::milliseconds(0))) {
      return;  // not our child (adopted after a restart) and, by its pidfd, still running
    }
  }
  // Exited, or its pid was already gone when adopted. The exit code stays unknown unless reaped.
  t.status = ContainerStatus::kStopped;
  t.pid = 0;
  t.pidfd.Reset();
  auto kills = ReadOomKillCount(layout_, t.cgroup_path);
  t.oom_killed = kills.ok() && *kills > 0;
  WriteExitFile(id, t);
}

ContainerState CrunRuntime::StateOf(const ContainerId& id, const Tracked& t) const {
  ContainerState s;
  s.id = id;
  s.status = t.status;
  s.pid = t.pid;
  s.exit_code = t.exit_code;
  s.oom_killed = t.oom_killed;
  return s;
}

void CrunRuntime::WriteExitFile(const ContainerId& id, const Tracked& t) const {
  std::string content = fmt::format("{} {}\n", t.exit_code ? std::to_string(*t.exit_code) : "-",
                                    t.oom_killed ? 1 : 0);
  // Best effort: the bundle may already be gone (Delete of a crashed create).
  WriteFileAtomically(BundleDir(id) + "/exit", content).IgnoreError();
}

}  // namespace paddock::agent::runtime
