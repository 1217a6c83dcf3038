// cli/host_checks: can this host run Paddock's containers, and if not, what is missing and how to
// fix it. One list of checks shared by `paddock up`/`paddock server` (at start: a host that cannot
// run containers says so in one block, and its tasks stop at once with the reason) and
// `paddock doctor` (every check, one line each).
//
// Every check reads the host through a HostProbe, so the checks are pure over what it answers:
// the real host (SystemHostProbe) or a fake in the tests.
//
//   SystemHostProbe probe;
//   std::vector<HostCheck> checks = RunHostChecks(probe, {.state_dir = ".paddock"}, CheckSet::kAll);
//   for (const HostCheck& c : checks) fmt::print("{}\n", FormatCheck(c));
//   if (!CanRunContainers(checks)) ... // tasks cannot run: CannotRunSummary(checks) says why
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::cli {

enum class CheckState {
  kPass,
  // Something works less well (pulls, initProcessEnabled, routing beyond the host), tasks run.
  kWarn,
  // Something Paddock needs is missing. With `blocks_tasks`, no container can run.
  kFail,
  // Could not be checked (it needs root, which another check already reports).
  kSkip,
};
std::string_view CheckStateName(CheckState state);  // "ok", "warn", "FAIL", "skip"

struct HostCheck {
  std::string name;    // "root", "cgroups", "crun", ... (stable: tests and docs name them)
  CheckState state = CheckState::kPass;
  std::string detail;  // what was found
  std::string fix;     // how to fix it; empty when it passes
  // A failure of this check means no container can run on this host.
  bool blocks_tasks = false;
};

// What the checks read from the host. Implementations answer from the real host or from a fake.
class HostProbe {
 public:
  virtual ~HostProbe() = default;
  // The effective uid is 0.
  virtual bool IsRoot() = 0;
  // The whole file, or nullopt when it is missing or unreadable.
  virtual std::optional<std::string> ReadFile(const std::string& path) = 0;
  // The executable `program` (a path, or a name looked up in PATH), or nullopt.
  virtual std::optional<std::string> FindProgram(const std::string& program) = 0;
  struct ProgramResult {
    int exit_code = -1;
    std::string output;
  };
  // Runs argv to completion (bounded: a few seconds).
  virtual StatusOr<ProgramResult> Run(const std::vector<std::string>& argv) = 0;
  // Bytes available to this process on the filesystem holding `path` (or its nearest existing
  // ancestor).
  virtual StatusOr<uint64_t> FreeBytes(const std::string& path) = 0;
  // OK when a listener could bind host:port now (it is released at once).
  virtual Status TryBind(const std::string& host, uint16_t port) = 0;
};

// The host as it is.
class SystemHostProbe final : public HostProbe {
 public:
  bool IsRoot() override;
  std::optional<std::string> ReadFile(const std::string& path) override;
  std::optional<std::string> FindProgram(const std::string& program) override;
  StatusOr<ProgramResult> Run(const std::vector<std::string>& argv) override;
  StatusOr<uint64_t> FreeBytes(const std::string& path) override;
  Status TryBind(const std::string& host, uint16_t port) override;
};

// The crun binary the node runs: $PADDOCK_CRUN when set (a path or a name in PATH), else "crun".
// (The variable lets an operator pick a build, and lets tests simulate a host without crun.)
std::string CrunBinary();

struct HostCheckOptions {
  std::string state_dir = "./.paddock";
  std::string crun = "crun";
  std::string init_binary = "/usr/bin/tini-static";
  // The containers' default seccomp profile (agent/runtime kDefaultSeccompProfile): without it no
  // container that is not privileged runs.
  std::string seccomp_profile = "/usr/share/containers/seccomp.json";
  // The API's HOST:PORT for the port check; empty: not checked.
  std::string listen;
  // Set when a Paddock server of `state_dir` already serves on `listen` (cli/state_lock.h): the
  // port check then passes, naming it.
  std::string listen_holder;
  // Below this, the free-disk check fails; below four times this, it warns.
  uint64_t min_free_bytes = uint64_t{1} << 30;
};

enum class CheckSet {
  // What decides whether containers can run, plus the warnings worth a line at start: `paddock
  // up` and `paddock server`.
  kStart,
  // Everything, the API port included: `paddock doctor`.
  kAll,
};

// The checks of `set`, in a fixed order: root, cgroups, cgroup controllers, crun, overlayfs,
// nftables, iproute2, iptables, ip_forward, tini, seccomp, skopeo, free disk, then (kAll) api port.
std::vector<HostCheck> RunHostChecks(HostProbe& probe, const HostCheckOptions& options, CheckSet set);

// No check that blocks tasks failed.
bool CanRunContainers(const std::vector<HostCheck>& checks);

// What blocks tasks, in one sentence for a task's stoppedReason: "not root; no crun (...)".
// Empty when containers can run.
std::string CannotRunSummary(const std::vector<HostCheck>& checks);

// One line: "FAIL  crun         'crun' is not installed — fix: apt-get install crun".
std::string FormatCheck(const HostCheck& check);

// ---- Pure pieces (exposed for the unit tests) ----

// The cgroup mounts of a /proc/self/mountinfo text.
struct CgroupMounts {
  bool any = false;           // some cgroup or cgroup2 filesystem is mounted
  bool unified = false;       // /sys/fs/cgroup itself is cgroup2 (pure v2)
  std::string v2_hybrid;      // a cgroup2 mount beside v1 hierarchies (hybrid), e.g. /sys/fs/cgroup/unified
  std::vector<std::string> v1_controllers;  // controllers of the v1 hierarchies
  // /sys is a sysfs whose source is not "sysfs": `ip netns exec NAME` mounted it (its source is
  // NAME) and, with it, hid the host's cgroup mounts.
  std::string netns_sysfs;
};
CgroupMounts ParseCgroupMounts(std::string_view mountinfo);

}  // namespace paddock::cli
