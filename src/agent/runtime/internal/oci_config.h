// The OCI codec: a ContainerSpec as a runtime-spec config.json (as `crun spec` lays one out,
// filled in), and crun's `state` / `list --format json` answers. The only Boost.JSON user here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/internal/seccomp_profile.h"
#include "agent/runtime/runtime.h"
#include "common/status.h"

namespace paddock::agent::runtime::internal {

// A ContainerSpec device as the host has it (the runtime stats it: the codec stays pure).
struct DeviceNode {
  std::string path;  // in the container
  char type = 'c';   // 'c' or 'b'
  int64_t major = 0, minor = 0;
  uint32_t file_mode = 0666;
  std::string access;  // "rwm" or a part of it
};

struct BundleOptions {
  std::string root_path;     // root.path: "rootfs" (the overlay in the bundle) or an absolute dir
  std::string cgroups_path;  // linux.cgroupsPath, absolute
  bool swap_accounting = false;  // set memory.swap = memory.limit
  std::string init_binary;   // host path of tini/catatonit, for init_process_enabled
  // The runtime's own capability bounding set (CapBnd, bit n = capability n): a privileged
  // container gets every capability in it, as Docker's --privileged does (asking for one the
  // runtime lacks fails the whole capset).
  uint64_t bounding_caps = ~uint64_t{0};
  std::vector<DeviceNode> devices;  // the spec's devices, resolved
  // The containers' default seccomp profile: linux.seccomp of every container that is not
  // privileged, for its capabilities (Docker's --privileged runs unconfined). Null: none.
  const SeccompProfile* seccomp = nullptr;
  // That filter compiled (raw BPF, base64) by an earlier crun create of a container with the same
  // capabilities: given to crun (annotation run.oci.seccomp_bpf_data), which then skips compiling
  // it (~30 ms with the x86 sub-architectures). Empty: crun compiles the seccomp section.
  std::string seccomp_bpf_base64;
};

// crun's annotation for a precompiled seccomp filter, and the file crun leaves the filter it
// compiled in (in its state directory, <root>/<id>/).
inline constexpr std::string_view kSeccompBpfAnnotation = "run.oci.seccomp_bpf_data";
inline constexpr std::string_view kCrunSeccompBpfFile = "seccomp.bpf";

// The capabilities `spec` runs with (bounding = effective = permitted): Docker's default set with
// cap_drop then cap_add applied (sorted by name), or, when privileged, every one of `bounding_caps`
// (in capability-number order).
// InvalidArgument for an unknown capability name.
StatusOr<std::vector<std::string>> EffectiveCapabilities(const ContainerSpec& spec, uint64_t bounding_caps);

// The container path the init binary is bind-mounted to.
inline constexpr std::string_view kInitPath = "/dev/init";

// config.json for `spec`. InvalidArgument for what the spec gets wrong (user, caps, ulimits, …);
// FailedPrecondition for init_process_enabled without an init binary.
StatusOr<std::string> BuildOciConfig(const ContainerSpec& spec, const BundleOptions& options);

struct CrunState {
  std::string id;
  std::string status;  // "created", "running", "stopped", "paused"
  int pid = 0;
};

StatusOr<CrunState> ParseCrunState(std::string_view json);
StatusOr<std::vector<CrunState>> ParseCrunList(std::string_view json);

// The "annotations" of a config.json (ContainerSpec::annotations as BuildOciConfig wrote them);
// empty when there are none or the text is not a config.
std::map<std::string, std::string> ParseAnnotations(std::string_view config_json);

}  // namespace paddock::agent::runtime::internal
