// agent/runtime: the seam between the agent and whatever runs containers.
//
// The agent resolves everything ECS-shaped (image config merged with the container definition,
// volumes, the task's netns) into a ContainerSpec and drives each container through
//
//   Create ─> Start ─> (Exec health checks) ─> Kill(TERM) ─> Wait(stopTimeout) ─> Kill(KILL)
//          ─> Wait ─> State (exit code, OOM) ─> Delete
//
//   CrunRuntime rt(CrunRuntimeOptions{.state_dir = state + "/runtime"});
//   RETURN_IF_ERROR(rt.Create(spec));
//   RETURN_IF_ERROR(rt.Start(spec.id));
//   ASSIGN_OR_RETURN(ContainerState s, rt.Wait(spec.id, std::chrono::seconds(30)));
//   if (s.status == ContainerStatus::kStopped && s.oom_killed) ... // OutOfMemoryError
//
// After an agent restart, List() returns every container this runtime's state holds, with the
// same answers State() gives, so the agent can re-adopt the running ones and report the dead.
//
// Every call is bounded in time: nothing here waits forever on a container or a helper process.
// Implementations are thread-safe; calls for different containers may run concurrently.
// testing/fake_runtime.h is an in-memory Runtime for the agent's unit tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::agent::runtime {

// Host-global (cgroup paths and crun ids are shared by every user of the machine), so callers
// put an instance prefix in it: "pdk-<instance>-<task>-<n>". [A-Za-z0-9_.-], 1..64 chars.
using ContainerId = TypedString<struct ContainerIdTag>;

// Whether `id` is acceptable as a ContainerId (see above).
bool IsValidContainerId(std::string_view id);

struct BindMount {
  std::string source;       // host path (a task volume dir, a host path on EC2)
  std::string destination;  // absolute path in the container
  bool read_only = false;
};

struct TmpfsMount {
  std::string destination;           // absolute path in the container
  uint64_t size_bytes = 0;           // 0: the kernel's default (half of RAM)
  std::vector<std::string> options;  // extra mount options as ECS passes them ("noexec", …)
};

// A host device given to the container (ECS linuxParameters.devices; a host-level grant).
struct Device {
  std::string host_path;       // e.g. /dev/fuse: must be a character or block device
  std::string container_path;  // empty: the host path
  bool read = true, write = true, mknod = true;  // ECS permissions; all three when none is given
};

// One rlimit. `name` is ECS's ulimit name: "nofile", "nproc", "core", "memlock", "stack", …
struct Ulimit {
  std::string name;
  uint64_t soft = 0;
  uint64_t hard = 0;
};

enum class NetworkMode {
  kPrivate,  // a new, empty network namespace (only lo, down): containers with networkMode none
  kJoin,     // join ContainerSpec::netns_path (awsvpc and bridge tasks; agent/net made it)
  kHost,     // the agent's own network namespace (networkMode host)
};

struct ContainerSpec {
  ContainerId id;

  // The root filesystem: either overlayfs layers (top first, as images::Resolve orders them),
  // which the runtime stacks under a per-container upper/work dir in its own state dir (mounted
  // nosuid,nodev), or a plain directory used as-is (writes then land in it). Exactly one of the
  // two is set.
  std::vector<std::string> lower_dirs;
  std::string rootfs_dir;
  bool readonly_rootfs = false;

  std::vector<std::string> args;  // entryPoint + command, already merged; args[0] non-empty
  std::vector<std::string> env;   // "NAME=value"
  std::string working_dir;        // empty: "/"
  std::string user;               // "uid" or "uid:gid", numeric; empty: 0:0
  std::string hostname;           // empty: the runtime leaves the container's uts name unset

  NetworkMode network = NetworkMode::kPrivate;
  std::string netns_path;  // with kJoin: "/run/netns/<name>"

  std::vector<BindMount> binds;  // mounted nosuid,nodev
  std::vector<TmpfsMount> tmpfs;
  uint64_t shm_size_bytes = 0;  // /dev/shm; 0: 64 MiB, Docker's default

  // cgroup limits. 0 means "not set" for each.
  uint64_t cpu_shares = 0;              // relative weight (ECS: the container's cpu units, ≥ 2)
  uint64_t cpu_limit_units = 0;         // hard CPU cap in ECS units: 1024 = one full core
  uint64_t memory_limit_bytes = 0;      // hard limit; exceeding it OOM-kills
  uint64_t memory_reservation_bytes = 0;  // soft limit, reclaimed to under memory pressure

  // Capability names with or without "CAP_" ("NET_ADMIN", "CAP_SYS_TIME", "ALL"), applied to
  // Docker's default set: drop first, then add, as Docker does.
  std::vector<std::string> cap_add;
  std::vector<std::string> cap_drop;

  // Host-level grants (ecs/taskdef/host_grants.h), set only for a task the agent let through,
  // that is on a container instance whose operator allowed host access. `privileged` is Docker's
  // --privileged: every capability (cap_add/cap_drop ignored), the host's devices, /sys and the
  // cgroup fs writable, no masked or read-only /proc paths, no no_new_privs. `host_pid` and
  // `host_ipc` join the host's PID / IPC namespace (pidMode / ipcMode "host"; with host_ipc the
  // host's /dev/shm, as Docker binds it).
  bool privileged = false;
  bool host_pid = false;
  bool host_ipc = false;
  std::vector<Device> devices;  // created in the container and allowed by its device cgroup

  // Runs an init (tini) as PID 1 that forwards signals and reaps zombies. Needs
  // CrunRuntimeOptions::init_binary; Create fails with FailedPrecondition without one.
  bool init_process_enabled = false;

  std::vector<Ulimit> ulimits;  // none: the container inherits the agent's limits

  // The container's stdout/stderr (the same path for both is fine). A FIFO is opened O_RDWR (the
  // agent's log pump reads it: agent/logs.h; the container never gets EPIPE, its writes block
  // when the pipe is full); anything else is a file opened O_APPEND|O_CREAT (0600), written by
  // the container directly. Empty: /dev/null. Either way it outlives an agent restart.
  std::string stdout_path;
  std::string stderr_path;

  // The cgroup the container's cgroup goes under, absolute from each hierarchy's root
  // ("/paddock/<instance>/<task>"); empty: the runtime's default parent. The runtime never
  // writes the parent's limits (a task-level cgroup is the agent's).
  std::string cgroup_parent;

  // Free-form labels stored with the container (task ARN, container name).
  std::map<std::string, std::string> annotations;
};

enum class ContainerStatus { kCreated, kRunning, kStopped };
std::string_view ContainerStatusName(ContainerStatus s);

struct ContainerState {
  ContainerId id;
  ContainerStatus status = ContainerStatus::kCreated;
  int pid = 0;  // host pid of the container's init while created/running; 0 once stopped
  // Set once stopped, when known: the exit status (128+N for signal N). Unknown when the process
  // exited while no runtime object of this process was its parent (agent restarted meanwhile).
  std::optional<int> exit_code;
  // Once stopped: the kernel's OOM killer killed a process of the container's cgroup, PID 1
  // (then exit_code is 137) or any other (then the container may even have exited 0).
  bool oom_killed = false;
  // ContainerSpec::annotations, as stored with the container: filled by List() only (how an
  // agent recognises its own containers among those of a runtime it shares).
  std::map<std::string, std::string> annotations;
};

struct ExecResult {
  int exit_code = -1;   // 128+N for signal N
  bool timed_out = false;  // killed at the deadline; exit_code is then meaningless
  std::string output;   // stdout and stderr interleaved, at most kMaxExecOutput bytes (the head)
};
inline constexpr size_t kMaxExecOutput = 64 * 1024;

enum class ForceDelete : bool { kNo = false, kYes = true };

// What a group of containers (a task) may use together. 0: not limited.
struct GroupLimits {
  uint64_t cpu_limit_units = 0;     // hard CPU cap in ECS units, for all of them (1024 = one core)
  uint64_t memory_limit_bytes = 0;  // hard memory limit, for all of them; exceeding it OOM-kills
  // Most processes and threads of all of them alive at once (the pids controller): past it fork
  // and clone fail with EAGAIN in this group only, so a fork loop cannot take the host's PIDs.
  uint64_t pids_max = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // Prepares the container (rootfs, cgroup, namespaces) without running its command.
  // AlreadyExists if the id is taken; InvalidArgument for a bad spec.
  virtual Status Create(const ContainerSpec& spec) = 0;

  // Runs the created container's command. When this returns OK the process is running (it may
  // already have exited).
  // REQUIRES: the container is created (FailedPrecondition otherwise).
  virtual Status Start(const ContainerId& id) = 0;

  // Runs `args` inside the running container (health checks: CMD-SHELL is {"sh","-c",…}), as the
  // container's user, and waits at most `timeout`; on timeout the process is killed.
  virtual StatusOr<ExecResult> Exec(const ContainerId& id, const std::vector<std::string>& args,
                                    std::chrono::milliseconds timeout) = 0;

  // Sends `signal` to the container's PID 1. Stopping is Kill(SIGTERM), Wait(stopTimeout),
  // Kill(SIGKILL), Wait. OK (a no-op) when the container has already stopped.
  virtual Status Kill(const ContainerId& id, int signal) = 0;

  // The container's state now. NotFound for an unknown id.
  virtual StatusOr<ContainerState> State(const ContainerId& id) = 0;

  // Waits until the container has stopped or `timeout` passed, then returns State().
  virtual StatusOr<ContainerState> Wait(const ContainerId& id, std::chrono::milliseconds timeout) = 0;

  // Removes the container and everything the runtime made for it (its cgroup, rootfs mount,
  // upper dir, bundle). A running container is refused (FailedPrecondition) unless `force`, which
  // SIGKILLs it first. Read State() first: exit code and OOM are gone afterwards.
  virtual Status Delete(const ContainerId& id, ForceDelete force) = 0;

  // Every container this runtime holds, with its State().
  virtual StatusOr<std::vector<ContainerState>> List() = 0;

  // A cgroup that bounds several containers together (a task's): makes it under the runtime's
  // parent with `limits` and returns its path, to be put in each container's
  // ContainerSpec::cgroup_parent. The containers keep their own limits inside it. `name` follows
  // the ContainerId rules (InvalidArgument otherwise) and is host-global the same way. Calling it
  // again for the same name is fine (the limits are written again). This default, for runtimes
  // without cgroups, makes nothing and returns "" (the runtime's default parent).
  virtual StatusOr<std::string> CreateGroup(std::string_view name, const GroupLimits& limits) {
    (void)name;
    (void)limits;
    return std::string();
  }
  // Removes the group `name` made; call once every container in it is deleted. A missing group
  // is fine (so it works by name after a restart).
  virtual Status DeleteGroup(std::string_view name) {
    (void)name;
    return OkStatus();
  }
};

// The cfs quota, in µs per kCpuPeriodUs, for `units` ECS cpu units (1024 = one core).
inline constexpr uint64_t kCpuPeriodUs = 100'000;
uint64_t CpuQuotaUs(uint64_t units);

}  // namespace paddock::agent::runtime
