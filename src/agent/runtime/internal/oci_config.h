// The OCI codec: a ContainerSpec as a runtime-spec config.json (as `crun spec` lays one out,
// filled in), and crun's `state` / `list --format json` answers. The only Boost.JSON user here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

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
};

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
