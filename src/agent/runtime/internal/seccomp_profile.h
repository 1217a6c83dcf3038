// The containers' default seccomp profile: a containers/common "seccomp.json" (the format Docker's
// default.json and podman's profile share; Debian's golang-github-containers-common ships podman's
// as /usr/share/containers/seccomp.json) read once when the runtime opens, and translated for each
// container into the OCI `linux.seccomp` section, as Docker and podman do:
//
//   - `archMap`: the entry of this host's architecture gives `architectures` (itself and its
//     sub-architectures, e.g. x86_64 + x86 + x32); a host the map lacks gets none (the native one);
//   - a rule applies when its `includes` hold (every listed capability is in the container's
//     bounding set, the host's architecture is listed, the kernel is at least `minKernel`) and its
//     `excludes` do not (any listed capability present, the architecture listed, the kernel at
//     least `minKernel`); architecture and kernel are settled at Parse, capabilities per container;
//   - `name`/`names`, `action`, `errnoRet`, `args` (index, value, valueTwo, op) carry over.
//
// Podman's profile is looser than Docker's (which ECS on EC2 applies) where podman relies on user
// namespaces: it allows unshare, setns, mount, clone with namespace flags, keyctl, syslog and
// reboot to every container. WithDockerRestrictions() puts Docker's rules back for those: the
// namespace and mount calls only with CAP_SYS_ADMIN (EPERM without; clone with a CLONE_NEW* flag
// falls to the default action, clone3 is ENOSYS so that libc falls back to clone), syslog with
// CAP_SYSLOG, reboot with CAP_SYS_BOOT, and the kernel keyring (keyctl, add_key, request_key),
// which no namespace separates, never.
//
//   ASSIGN_OR_RETURN(SeccompProfile p, SeccompProfile::Load(kDefaultSeccompProfile, SeccompHost::Detect()));
//   SeccompFilter f = p.For({"CAP_CHOWN", "CAP_NET_RAW", ...});  // -> config.json linux.seccomp
//
// Pure but for Load (a file) and SeccompHost::Detect (uname): no Boost.JSON in the interface.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace paddock::agent::runtime::internal {

// What a profile's conditions are checked against, besides capabilities.
struct SeccompHost {
  std::string go_arch;    // the architecture as the profiles' `arches` name it: "amd64", "arm64", ...
  std::string scmp_arch;  // libseccomp's name of it, as `archMap` keys it: "SCMP_ARCH_X86_64"
  int kernel_major = 0;
  int kernel_minor = 0;

  // This host (uname). An architecture the mapping does not know keeps its machine name in
  // go_arch and an empty scmp_arch.
  static SeccompHost Detect();
};

struct SeccompArg {
  uint32_t index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  // "SCMP_CMP_EQ", ...
};

struct SeccompRule {
  std::vector<std::string> names;
  std::string action;                 // "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", ...
  std::optional<uint32_t> errno_ret;  // with SCMP_ACT_ERRNO (EPERM when unset, as crun does)
  std::vector<SeccompArg> args;
};

// The OCI `linux.seccomp` of one container.
struct SeccompFilter {
  std::string default_action;
  std::optional<uint32_t> default_errno_ret;
  std::vector<std::string> architectures;
  std::vector<SeccompRule> syscalls;
};

class SeccompProfile {
 public:
  // A profile in the containers/common format for `host`. InvalidArgument (naming the rule) for
  // what is not that format: unknown actions or operators, a rule with neither name nor names,
  // both name and names, `architectures` together with `archMap`, a notify action (it needs a
  // listener), malformed numbers.
  static StatusOr<SeccompProfile> Parse(std::string_view json, const SeccompHost& host);
  // Parse of the file at `path`; NotFound when it does not exist.
  static StatusOr<SeccompProfile> Load(const std::string& path, const SeccompHost& host);

  // The profile with Docker's rules for namespaces, mounts, the kernel keyring, syslog and reboot
  // (see above): every rule of the profile loses those names (a rule left with none goes), then
  // Paddock's rules for them are added.
  SeccompProfile WithDockerRestrictions() const;

  // The filter of a container whose bounding set is `caps` ("CAP_SYS_ADMIN", ...).
  SeccompFilter For(const std::set<std::string>& caps) const;

 private:
  // A rule whose architecture and kernel conditions held at Parse.
  struct Rule {
    SeccompRule rule;
    std::vector<std::string> include_caps;  // all needed
    std::vector<std::string> exclude_caps;  // any one drops the rule
  };

  std::string default_action_;
  std::optional<uint32_t> default_errno_ret_;
  std::vector<std::string> architectures_;
  std::vector<Rule> rules_;
  SeccompHost host_;
};

}  // namespace paddock::agent::runtime::internal
