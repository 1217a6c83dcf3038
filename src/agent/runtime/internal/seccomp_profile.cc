#include "agent/runtime/internal/seccomp_profile.h"

#include <sys/utsname.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include <boost/json.hpp>
#include <fmt/core.h>

namespace paddock::agent::runtime::internal {
namespace json = boost::json;
namespace {

constexpr std::array<std::string_view, 9> kActions = {
    "SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP", "SCMP_ACT_ERRNO",
    "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW",        "SCMP_ACT_LOG",         "SCMP_ACT_NOTIFY"};
constexpr std::array<std::string_view, 7> kOperators = {"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ",
                                                        "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"};

template <size_t N>
bool OneOf(const std::array<std::string_view, N>& set, std::string_view s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Docker's rules where podman's profile is looser (seccomp_profile.h). Applied on top of the
// loaded profile: every name here is first taken out of the profile's own rules. In the profile
// format itself, so that it reads like the profiles it amends; 2114060288 is 0x7E020000, every
// CLONE_NEW* flag (Docker's mask).
constexpr std::string_view kDockerRestrictions = R"({
  "defaultAction": "SCMP_ACT_ERRNO",
  "syscalls": [
    {"names": ["unshare", "setns", "mount", "umount", "umount2", "mount_setattr", "move_mount", "open_tree",
               "fsopen", "fsconfig", "fsmount", "fspick", "pivot_root", "clone", "clone3"],
     "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["unshare", "setns", "mount", "umount", "umount2", "mount_setattr", "move_mount", "open_tree",
               "fsopen", "fsconfig", "fsmount", "fspick", "pivot_root"],
     "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
     "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390", "s390x"]}},
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 1, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
     "includes": {"arches": ["s390", "s390x"]}, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["syslog"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYSLOG"]}},
    {"names": ["syslog"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYSLOG"]}},
    {"names": ["reboot"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_BOOT"]}},
    {"names": ["reboot"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_BOOT"]}},
    {"names": ["keyctl", "add_key", "request_key"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}
  ]
})";

StatusOr<uint64_t> Unsigned(const json::value& v, std::string_view what) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint64_t>(v.get_int64());
  return InvalidArgument(fmt::format("{} is not a non-negative integer", what));
}

StatusOr<std::optional<uint32_t>> OptionalErrno(const json::object& o, std::string_view key, std::string_view what) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<uint32_t>();
  ASSIGN_OR_RETURN(uint64_t n, Unsigned(*v, fmt::format("{} {}", what, key)));
  if (n > 4095) return InvalidArgument(fmt::format("{} {} {} is not an errno", what, key, n));
  return std::optional<uint32_t>(static_cast<uint32_t>(n));
}

StatusOr<std::vector<std::string>> StringList(const json::object& o, std::string_view key, std::string_view what) {
  std::vector<std::string> out;
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array()) return InvalidArgument(fmt::format("{} {} is not a list", what, key));
  for (const json::value& s : v->get_array()) {
    if (!s.is_string()) return InvalidArgument(fmt::format("{} {} holds a non-string", what, key));
    out.emplace_back(s.get_string());
  }
  return out;
}

// "4.8" -> (4, 8).
StatusOr<std::pair<int, int>> KernelVersion(std::string_view text, std::string_view what) {
  int major = 0, minor = 0;
  char extra = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%d.%d%c", &major, &minor, &extra) != 2 || major < 0 || minor < 0)
    return InvalidArgument(fmt::format("{} minKernel '{}' is not MAJOR.MINOR", what, text));
  return std::make_pair(major, minor);
}

struct Filter {
  std::vector<std::string> caps;
  std::vector<std::string> arches;
  std::optional<std::pair<int, int>> min_kernel;
};

StatusOr<Filter> ParseFilter(const json::object& rule, std::string_view key, std::string_view what) {
  Filter f;
  const json::value* v = rule.if_contains(key);
  if (v == nullptr || v->is_null()) return f;
  if (!v->is_object()) return InvalidArgument(fmt::format("{} {} is not an object", what, key));
  const json::object& o = v->get_object();
  ASSIGN_OR_RETURN(f.caps, StringList(o, "caps", what));
  ASSIGN_OR_RETURN(f.arches, StringList(o, "arches", what));
  if (const json::value* k = o.if_contains("minKernel"); k != nullptr && !k->is_null()) {
    if (!k->is_string()) return InvalidArgument(fmt::format("{} minKernel is not a string", what));
    ASSIGN_OR_RETURN(f.min_kernel, KernelVersion(k->get_string(), what));
  }
  return f;
}

bool KernelAtLeast(const SeccompHost& host, std::pair<int, int> v) {
  return std::make_pair(host.kernel_major, host.kernel_minor) >= v;
}

bool Listed(const std::vector<std::string>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

}  // namespace

SeccompHost SeccompHost::Detect() {
  SeccompHost host;
  utsname u{};
  if (::uname(&u) != 0) return host;
  const std::string machine = u.machine;
  // Go's names (what the profiles' `arches` use) and libseccomp's (what `archMap` keys).
  static constexpr std::array<std::array<std::string_view, 3>, 8> kMachines = {{
      {"x86_64", "amd64", "SCMP_ARCH_X86_64"},
      {"aarch64", "arm64", "SCMP_ARCH_AARCH64"},
      {"s390x", "s390x", "SCMP_ARCH_S390X"},
      {"ppc64le", "ppc64le", "SCMP_ARCH_PPC64LE"},
      {"riscv64", "riscv64", "SCMP_ARCH_RISCV64"},
      {"mips64", "mips64", "SCMP_ARCH_MIPS64"},
      {"armv7l", "arm", "SCMP_ARCH_ARM"},
      {"i686", "386", "SCMP_ARCH_X86"},
  }};
  host.go_arch = machine;
  for (const auto& m : kMachines) {
    if (machine == m[0]) {
      host.go_arch = std::string(m[1]);
      host.scmp_arch = std::string(m[2]);
    }
  }
  std::sscanf(u.release, "%d.%d", &host.kernel_major, &host.kernel_minor);
  return host;
}

StatusOr<SeccompProfile> SeccompProfile::Parse(std::string_view text, const SeccompHost& host) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) return InvalidArgument(fmt::format("not JSON: {}", ec.message()));
  if (!doc.is_object()) return InvalidArgument("not a JSON object");
  const json::object& o = doc.get_object();

  SeccompProfile p;
  p.host_ = host;
  const json::value* action = o.if_contains("defaultAction");
  if (action == nullptr || !action->is_string() || !OneOf(kActions, action->get_string()))
    return InvalidArgument("defaultAction is missing or not a seccomp action");
  p.default_action_ = std::string(action->get_string());
  if (p.default_action_ == "SCMP_ACT_NOTIFY") return InvalidArgument("defaultAction SCMP_ACT_NOTIFY needs a listener");
  ASSIGN_OR_RETURN(p.default_errno_ret_, OptionalErrno(o, "defaultErrnoRet", "the profile's"));

  ASSIGN_OR_RETURN(std::vector<std::string> architectures, StringList(o, "architectures", "the profile's"));
  const json::value* arch_map = o.if_contains("archMap");
  const bool has_map = arch_map != nullptr && arch_map->is_array() && !arch_map->get_array().empty();
  if (has_map && !architectures.empty()) return InvalidArgument("the profile has both architectures and archMap");
  p.architectures_ = std::move(architectures);
  if (has_map) {
    for (const json::value& entry : arch_map->get_array()) {
      if (!entry.is_object()) return InvalidArgument("an archMap entry is not an object");
      const json::value* a = entry.get_object().if_contains("architecture");
      if (a == nullptr || !a->is_string()) return InvalidArgument("an archMap entry has no architecture");
      if (host.scmp_arch.empty() || a->get_string() != host.scmp_arch) continue;
      p.architectures_.push_back(host.scmp_arch);
      ASSIGN_OR_RETURN(std::vector<std::string> subs,
                       StringList(entry.get_object(), "subArchitectures", "an archMap entry's"));
      p.architectures_.insert(p.architectures_.end(), subs.begin(), subs.end());
      break;
    }
  }

  const json::value* syscalls = o.if_contains("syscalls");
  if (syscalls != nullptr && !syscalls->is_null() && !syscalls->is_array())
    return InvalidArgument("syscalls is not a list");
  static const json::array kNone;
  const json::array& list = syscalls == nullptr || syscalls->is_null() ? kNone : syscalls->get_array();
  size_t index = 0;
  for (const json::value& v : list) {
    const std::string what = fmt::format("syscalls[{}]", index++);
    if (!v.is_object()) return InvalidArgument(fmt::format("{} is not an object", what));
    const json::object& r = v.get_object();
    Rule rule;
    ASSIGN_OR_RETURN(rule.rule.names, StringList(r, "names", what));
    if (const json::value* name = r.if_contains("name"); name != nullptr && name->is_string() &&
                                                        !name->get_string().empty()) {
      if (!rule.rule.names.empty()) return InvalidArgument(fmt::format("{} has both name and names", what));
      rule.rule.names.emplace_back(name->get_string());
    }
    if (rule.rule.names.empty()) return InvalidArgument(fmt::format("{} names no syscall", what));
    const json::value* a = r.if_contains("action");
    if (a == nullptr || !a->is_string() || !OneOf(kActions, a->get_string()))
      return InvalidArgument(fmt::format("{} has no seccomp action", what));
    rule.rule.action = std::string(a->get_string());
    if (rule.rule.action == "SCMP_ACT_NOTIFY")
      return InvalidArgument(fmt::format("{}: SCMP_ACT_NOTIFY needs a listener", what));
    ASSIGN_OR_RETURN(rule.rule.errno_ret, OptionalErrno(r, "errnoRet", what));
    if (const json::value* args = r.if_contains("args"); args != nullptr && !args->is_null()) {
      if (!args->is_array()) return InvalidArgument(fmt::format("{} args is not a list", what));
      for (const json::value& arg : args->get_array()) {
        if (!arg.is_object()) return InvalidArgument(fmt::format("{} has an argument that is not an object", what));
        const json::object& ao = arg.get_object();
        SeccompArg sa;
        const json::value* op = ao.if_contains("op");
        if (op == nullptr || !op->is_string() || !OneOf(kOperators, op->get_string()))
          return InvalidArgument(fmt::format("{} has an argument without a known op", what));
        sa.op = std::string(op->get_string());
        const json::value* idx = ao.if_contains("index");
        if (idx == nullptr) return InvalidArgument(fmt::format("{} has an argument without index", what));
        ASSIGN_OR_RETURN(uint64_t i, Unsigned(*idx, what + " index"));
        if (i > 5) return InvalidArgument(fmt::format("{} has argument index {} (0-5)", what, i));
        sa.index = static_cast<uint32_t>(i);
        if (const json::value* val = ao.if_contains("value")) {
          ASSIGN_OR_RETURN(sa.value, Unsigned(*val, what + " value"));
        }
        if (const json::value* two = ao.if_contains("valueTwo")) {
          ASSIGN_OR_RETURN(sa.value_two, Unsigned(*two, what + " valueTwo"));
        }
        rule.rule.args.push_back(std::move(sa));
      }
    }
    ASSIGN_OR_RETURN(Filter includes, ParseFilter(r, "includes", what));
    ASSIGN_OR_RETURN(Filter excludes, ParseFilter(r, "excludes", what));
    // Architecture and kernel are the host's: settled now, once.
    if (!excludes.arches.empty() && Listed(excludes.arches, host.go_arch)) continue;
    if (excludes.min_kernel && KernelAtLeast(host, *excludes.min_kernel)) continue;
    if (!includes.arches.empty() && !Listed(includes.arches, host.go_arch)) continue;
    if (includes.min_kernel && !KernelAtLeast(host, *includes.min_kernel)) continue;
    rule.include_caps = std::move(includes.caps);
    rule.exclude_caps = std::move(excludes.caps);
    p.rules_.push_back(std::move(rule));
  }
  return p;
}

StatusOr<SeccompProfile> SeccompProfile::Load(const std::string& path, const SeccompHost& host) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  auto profile = Parse(text.str(), host);
  if (!profile.ok()) return InvalidArgument(fmt::format("{}: {}", path, profile.status().message()));
  return profile;
}

SeccompProfile SeccompProfile::WithDockerRestrictions() const {
  // The rules are ours and known to parse; a failure would be a bug caught by the unit tests.
  auto restrictions = Parse(kDockerRestrictions, host_);
  if (!restrictions.ok()) return *this;
  std::set<std::string> restricted;
  for (const Rule& r : restrictions->rules_) restricted.insert(r.rule.names.begin(), r.rule.names.end());
  SeccompProfile out = *this;
  out.rules_.clear();
  for (Rule r : rules_) {
    std::erase_if(r.rule.names, [&](const std::string& n) { return restricted.count(n) > 0; });
    if (!r.rule.names.empty()) out.rules_.push_back(std::move(r));
  }
  out.rules_.insert(out.rules_.end(), restrictions->rules_.begin(), restrictions->rules_.end());
  return out;
}

SeccompFilter SeccompProfile::For(const std::set<std::string>& caps) const {
  SeccompFilter f;
  f.default_action = default_action_;
  f.default_errno_ret = default_errno_ret_;
  f.architectures = architectures_;
  for (const Rule& r : rules_) {
    const bool excluded =
        std::any_of(r.exclude_caps.begin(), r.exclude_caps.end(), [&](const std::string& c) { return caps.count(c); });
    const bool included =
        std::all_of(r.include_caps.begin(), r.include_caps.end(), [&](const std::string& c) { return caps.count(c); });
    if (!excluded && included) f.syscalls.push_back(r.rule);
  }
  return f;
}

}  // namespace paddock::agent::runtime::internal
