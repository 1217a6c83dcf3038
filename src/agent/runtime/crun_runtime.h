// CrunRuntime: the Runtime on Debian's `crun` (1.8) binary.
//
// State lives under options.state_dir:
//   crun/            crun --root: this instance's crun state, apart from other crun users
//   c/<id>/          the bundle: config.json, rootfs/ (the overlay mount point), upper/, work/,
//                    pid (init's host pid), exit ("<code|-> <oom 0|1>" once known), crun.log
//
// Exit codes: the constructor makes this process a child subreaper, so each container's PID 1
// (whose parent, `crun create`, exits at once) becomes this process's child, and its exit status
// is collected by waitid(P_PID) for exactly that pid — never P_ALL, so other waiters in the
// process keep theirs. The status and the OOM verdict (the cgroup's oom_kill counter, read before
// `crun delete` removes it) go to c/<id>/exit. A container that dies while no CrunRuntime of this
// process is its parent (the agent was restarted) is reported stopped with no exit code.
//
// REQUIRES: root; SIGCHLD not set to SIG_IGN (the kernel would then discard exit statuses).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/runtime/cgroups.h"
#include "agent/runtime/internal/seccomp_profile.h"
#include "agent/runtime/runtime.h"
#include "common/subprocess.h"

namespace paddock::agent::runtime {

// Debian `tini`'s statically linked build: it runs in any image, with or without a libc.
inline constexpr std::string_view kDefaultInitBinary = "/usr/bin/tini-static";
// The containers' default seccomp profile: podman's, as Debian's golang-github-containers-common
// installs it (a skopeo dependency; scripts/setup installs it).
inline constexpr std::string_view kDefaultSeccompProfile = "/usr/share/containers/seccomp.json";

struct CrunRuntimeOptions {
  std::string state_dir;              // required, absolute; created if missing
  std::string crun_binary = "crun";   // looked up in PATH when it has no '/'
  // Containers' cgroups go to <cgroup_parent>/<id> in every hierarchy unless the spec names its
  // own parent. Host-global: give each instance its own.
  std::string cgroup_parent = "/paddock";
  // A static tini or catatonit on the host, for initProcessEnabled: bind-mounted into the
  // container and run as its PID 1 (crun 1.8 has no built-in init). The default is Debian tini's
  // static build (scripts/setup installs it). Empty, or missing on the host when Open runs: such
  // containers are refused (FailedPrecondition).
  std::string init_binary = std::string(kDefaultInitBinary);
  // Bound on each crun invocation (create, start, kill, delete, state, list).
  std::chrono::milliseconds crun_timeout = std::chrono::seconds(30);
  // The seccomp profile every container that is not privileged runs under (internal/
  // seccomp_profile.h: read once by Open, tightened to Docker's rules, translated per container
  // for its capabilities). Missing or unreadable: Open still succeeds, SeccompStatus() says why,
  // and such containers are refused (FailedPrecondition) — never run unconfined.
  std::string seccomp_profile = std::string(kDefaultSeccompProfile);
  // pids.max of cgroup_parent itself, written by Open: the most processes and threads all of this
  // runtime's containers may have together (every task's own pids.max sits under it). 0: none.
  // DefaultNodePidsMax() leaves the host a reserve.
  uint64_t node_pids_max = 0;
};

// The node-wide bound Paddock puts on its containers' processes by default: the smaller of the
// host's pid_max and threads-max (/proc/sys/kernel/), less a reserve for the host of max(4096, 10%
// of it); 0 when they cannot be read or leave no room. threads_max 0: unknown.
uint64_t DefaultNodePidsMax();
uint64_t NodePidsMaxFor(uint64_t pid_max, uint64_t threads_max);

class CrunRuntime final : public Runtime {
 public:
  // Checks crun and the cgroup layout, creates the state dirs, and makes this process a child
  // subreaper. Containers already in state_dir are re-adopted lazily (List/State).
  static StatusOr<std::unique_ptr<CrunRuntime>> Open(CrunRuntimeOptions options);

  Status Create(const ContainerSpec& spec) override;
  Status Start(const ContainerId& id) override;
  StatusOr<ExecResult> Exec(const ContainerId& id, const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout) override;
  Status Kill(const ContainerId& id, int signal) override;
  StatusOr<ContainerState> State(const ContainerId& id) override;
  StatusOr<ContainerState> Wait(const ContainerId& id, std::chrono::milliseconds timeout) override;
  Status Delete(const ContainerId& id, ForceDelete force) override;
  StatusOr<std::vector<ContainerState>> List() override;
  // <cgroup_parent>/<name> with its limits written (CreateCgroupWithLimits) in the memory, cpu and
  // pids hierarchies; crun adds it to the others when the first container goes under it.
  StatusOr<std::string> CreateGroup(std::string_view name, const GroupLimits& limits) override;
  // RemoveCgroup of it in every hierarchy.
  Status DeleteGroup(std::string_view name) override;
  // Removes the empty cgroup directories under cgroup_parent, itself included, in every hierarchy
  // (rmdir only: a cgroup with a process in it, or above one, stays). For a node that stops, so
  // that its per-instance directory does not outlive it when nothing runs; never while its
  // agents may create groups.
  void RemoveEmptyCgroups();

  const CgroupLayout& cgroup_layout() const { return layout_; }
  // OK when the seccomp profile was loaded; otherwise why not (containers that are not
  // privileged are then refused). For the node's startup warning.
  const Status& SeccompStatus() const { return seccomp_status_; }
  // The bundle directory of `id` (exists between Create and Delete).
  std::string BundleDir(const ContainerId& id) const;

 private:
  // What this object knows about one container. Exit facts, once learned, never change.
  struct Tracked {
    ContainerStatus status = ContainerStatus::kCreated;
    int pid = 0;
    subprocess::UniqueFd pidfd;  // invalid once stopped
    std::string cgroup_path;
    std::optional<int> exit_code;
    bool oom_killed = false;
  };

  CrunRuntime(CrunRuntimeOptions options, CgroupLayout layout, std::optional<internal::SeccompProfile> seccomp,
              Status seccomp_status);

  std::vector<std::string> CrunArgv(std::initializer_list<std::string> args) const;
  StatusOr<subprocess::RunResult> RunCrun(std::initializer_list<std::string> args) const;
  std::string CrunLogTail(const ContainerId& id) const;

  // Brings `t` up to date: reaps its pid if it exited, records exit code and OOM.
  // REQUIRES: mu_ held.
  void RefreshLocked(const ContainerId& id, Tracked& t);
  // The tracked record of `id`, adopting it from crun's state if this object has none.
  // REQUIRES: mu_ held.
  StatusOr<Tracked*> FindLocked(const ContainerId& id);
  // Adopts `id` given crun's view of it. REQUIRES: mu_ held.
  Tracked& AdoptLocked(const ContainerId& id, std::string_view crun_status, int pid);
  ContainerState StateOf(const ContainerId& id, const Tracked& t) const;
  void WriteExitFile(const ContainerId& id, const Tracked& t) const;
  std::string CgroupPathFromBundle(const ContainerId& id) const;

  const CrunRuntimeOptions options_;
  const std::string crun_root_;
  const CgroupLayout layout_;
  const std::optional<internal::SeccompProfile> seccomp_;  // prepared once, by Open
  const Status seccomp_status_;

  std::mutex mu_;
  std::map<ContainerId, Tracked> tracked_;  // GUARDED_BY(mu_)
  uint64_t exec_counter_ = 0;               // GUARDED_BY(mu_)
  // The seccomp filter crun compiled for a set of capabilities (joined by ','), as raw BPF in
  // base64: later containers with the same capabilities hand it to crun, which then compiles
  // nothing (BundleOptions::seccomp_bpf_base64). A handful of entries: one per distinct set.
  std::map<std::string, std::string> seccomp_bpf_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::agent::runtime
