#include "agent/runtime/internal/oci_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <set>

#include <boost/json.hpp>
#include <fmt/core.h>

namespace paddock::agent::runtime::internal {
namespace json = boost::json;
namespace {

constexpr std::string_view kDefaultPath =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr uint64_t kDefaultShmBytes = 64ull << 20;

// Every capability of Linux 6.x, in capability-number order (CAP_CHOWN is 0), for "ALL", for
// privileged containers and for validating names.
constexpr std::array<std::string_view, 41> kAllCaps = {
    "CAP_CHOWN",           "CAP_DAC_OVERRIDE",   "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
    "CAP_FSETID",          "CAP_KILL",           "CAP_SETGID",          "CAP_SETUID",
    "CAP_SETPCAP",         "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",       "CAP_NET_RAW",        "CAP_IPC_LOCK",        "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",      "CAP_SYS_RAWIO",      "CAP_SYS_CHROOT",      "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",       "CAP_SYS_ADMIN",      "CAP_SYS_BOOT",        "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",    "CAP_SYS_TIME",       "CAP_SYS_TTY_CONFIG",  "CAP_MKNOD",
    "CAP_LEASE",           "CAP_AUDIT_WRITE",    "CAP_AUDIT_CONTROL",   "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",      "CAP_SYSLOG",          "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",   "CAP_AUDIT_READ",     "CAP_PERFMON",         "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE"};

// Docker's (and so ECS's) default set.
constexpr std::array<std::string_view, 14> kDefaultCaps = {
    "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FSETID",   "CAP_FOWNER",      "CAP_MKNOD",
    "CAP_NET_RAW", "CAP_SETGID",      "CAP_SETUID",   "CAP_SETFCAP",     "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"};

constexpr std::array<std::string_view, 16> kRlimits = {
    "as",     "core",   "cpu",   "data",       "fsize",  "locks",  "memlock", "msgqueue",
    "nice",   "nofile", "nproc", "rss",        "rtprio", "rttime", "sigpending", "stack"};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

StatusOr<std::string> CapName(std::string_view name) {
  std::string cap = Upper(name);
  if (cap.rfind("CAP_", 0) != 0) cap = "CAP_" + cap;
  if (std::find(kAllCaps.begin(), kAllCaps.end(), cap) == kAllCaps.end()) {
    return InvalidArgument(fmt::format("unknown capability '{}'", name));
  }
  return cap;
}

bool IsAll(std::string_view name) { return Upper(name) == "ALL" || Upper(name) == "CAP_ALL"; }

StatusOr<std::vector<std::string>> Capabilities(const ContainerSpec& spec) {
  std::set<std::string> caps(kDefaultCaps.begin(), kDefaultCaps.end());
  for (const auto& d : spec.cap_drop) {
    if (IsAll(d)) {
      caps.clear();
      continue;
    }
    ASSIGN_OR_RETURN(std::string cap, CapName(d));
    caps.erase(cap);
  }
  for (const auto& a : spec.cap_add) {
    if (IsAll(a)) {
      caps.insert(kAllCaps.begin(), kAllCaps.end());
      continue;
    }
    ASSIGN_OR_RETURN(std::string cap, CapName(a));
    caps.insert(cap);
  }
  return std::vector<std::string>(caps.begin(), caps.end());
}

StatusOr<uint32_t> ParseId(std::string_view s, std::string_view user) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    return InvalidArgument(fmt::format(
        "user '{}': only numeric uid[:gid] is supported (names need the image's /etc/passwd)",
        user));
  }
  return v;
}

json::array Strings(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

json::object Mount(std::string_view destination, std::string_view type, std::string_view source,
                   std::vector<std::string> options) {
  return json::object{{"destination", destination},
                      {"type", type},
                      {"source", source},
                      {"options", Strings(options)}};
}

Status CheckAbsolute(std::string_view what, std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return InvalidArgument(fmt::format("{} '{}' must be an absolute path", what, path));
  }
  return OkStatus();
}

json::object SeccompJson(const SeccompFilter& f) {
  json::array syscalls;
  for (const SeccompRule& r : f.syscalls) {
    json::object rule{{"names", Strings(r.names)}, {"action", r.action}};
    if (r.errno_ret) rule["errnoRet"] = *r.errno_ret;
    if (!r.args.empty()) {
      json::array args;
      for (const SeccompArg& a : r.args)
        args.push_back(json::object{{"index", a.index}, {"value", a.value}, {"valueTwo", a.value_two}, {"op", a.op}});
      rule["args"] = std::move(args);
    }
    syscalls.push_back(std::move(rule));
  }
  json::object out{{"defaultAction", f.default_action}, {"syscalls", std::move(syscalls)}};
  if (f.default_errno_ret) out["defaultErrnoRet"] = *f.default_errno_ret;
  if (!f.architectures.empty()) out["architectures"] = Strings(f.architectures);
  return out;
}

}  // namespace

StatusOr<std::vector<std::string>> EffectiveCapabilities(const ContainerSpec& spec, uint64_t bounding_caps) {
  if (!spec.privileged) return Capabilities(spec);
  std::vector<std::string> caps;
  for (size_t n = 0; n < kAllCaps.size(); ++n)  // kAllCaps is in capability-number order
    if (bounding_caps & (uint64_t{1} << n)) caps.emplace_back(kAllCaps[n]);
  return caps;
}

StatusOr<std::string> BuildOciConfig(const ContainerSpec& spec, const BundleOptions& options) {
  if (spec.args.empty() || spec.args[0].empty()) {
    return InvalidArgument("the container has no command (entryPoint and command are empty)");
  }

  // process
  json::object user{{"uid", 0}, {"gid", 0}};
  if (!spec.user.empty()) {
    std::string_view u = spec.user;
    size_t colon = u.find(':');
    ASSIGN_OR_RETURN(uint32_t uid, ParseId(u.substr(0, colon), u));
    uint32_t gid = 0;
    if (colon != std::string_view::npos) {
      ASSIGN_OR_RETURN(gid, ParseId(u.substr(colon + 1), u));
    }
    user = json::object{{"uid", uid}, {"gid", gid}};
  }

  std::vector<std::string> env = spec.env;
  for (const auto& e : env) {
    if (e.find('=') == std::string::npos) {
      return InvalidArgument(fmt::format("environment entry '{}' has no '='", e));
    }
  }
  if (std::none_of(env.begin(), env.end(), [](const std::string& e) { return e.rfind("PATH=", 0) == 0; })) {
    env.emplace_back(kDefaultPath);
  }

  std::vector<std::string> args = spec.args;
  std::vector<std::string> init_mounts;
  if (spec.init_process_enabled) {
    if (options.init_binary.empty()) {
      return FailedPrecondition(
          "initProcessEnabled needs an init binary and none is installed (scripts/setup installs "
          "Debian's tini: /usr/bin/tini-static)");
    }
    args.insert(args.begin(), {std::string(kInitPath), "--"});
  }

  ASSIGN_OR_RETURN(std::vector<std::string> caps, EffectiveCapabilities(spec, options.bounding_caps));
  json::object capabilities{{"bounding", Strings(caps)},
                            {"effective", Strings(caps)},
                            {"permitted", Strings(caps)},
                            {"inheritable", json::array()},
                            {"ambient", json::array()}};

  json::array rlimits;
  for (const auto& u : spec.ulimits) {
    std::string name = u.name;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::find(kRlimits.begin(), kRlimits.end(), name) == kRlimits.end()) {
      return InvalidArgument(fmt::format("unknown ulimit '{}'", u.name));
    }
    if (u.soft > u.hard) {
      return InvalidArgument(fmt::format("ulimit '{}': soft limit {} exceeds hard limit {}", u.name,
                                         u.soft, u.hard));
    }
    rlimits.push_back(json::object{{"type", "RLIMIT_" + Upper(name)}, {"soft", u.soft}, {"hard", u.hard}});
  }

  std::string cwd = spec.working_dir.empty() ? "/" : spec.working_dir;
  RETURN_IF_ERROR(CheckAbsolute("workingDirectory", cwd));

  json::object process{{"terminal", false},
                       {"user", user},
                       {"args", Strings(args)},
                       {"env", Strings(env)},
                       {"cwd", cwd},
                       {"capabilities", capabilities},
                       {"rlimits", rlimits},
                       {"noNewPrivileges", !spec.privileged}};

  // mounts: crun spec's defaults, then the spec's own.
  uint64_t shm = spec.shm_size_bytes ? spec.shm_size_bytes : kDefaultShmBytes;
  // Privileged: the host's /dev (its devices) under the container's own devpts, and /sys and the
  // cgroup fs writable; host IPC: the host's /dev/shm.
  const std::string_view sys_mode = spec.privileged ? "rw" : "ro";
  json::array mounts{
      Mount("/proc", "proc", "proc", {}),
      spec.privileged ? Mount("/dev", "bind", "/dev", {"rbind", "rslave", "nosuid"})
                      : Mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      Mount("/dev/pts", "devpts", "devpts",
            {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
      spec.host_ipc ? Mount("/dev/shm", "bind", "/dev/shm", {"rbind", "rslave"})
                    : Mount("/dev/shm", "tmpfs", "shm",
                            {"nosuid", "noexec", "nodev", "mode=1777", fmt::format("size={}", shm)}),
      Mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}),
      Mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", std::string(sys_mode)}),
      Mount("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", std::string(sys_mode)}),
  };
  for (const auto& t : spec.tmpfs) {
    RETURN_IF_ERROR(CheckAbsolute("tmpfs containerPath", t.destination));
    std::vector<std::string> opts{"nosuid", "nodev"};
    if (t.size_bytes) opts.push_back(fmt::format("size={}", t.size_bytes));
    opts.insert(opts.end(), t.options.begin(), t.options.end());
    mounts.push_back(Mount(t.destination, "tmpfs", "tmpfs", opts));
  }
  for (const auto& b : spec.binds) {
    RETURN_IF_ERROR(CheckAbsolute("bind mount source", b.source));
    RETURN_IF_ERROR(CheckAbsolute("containerPath", b.destination));
    // nosuid,nodev: whatever a container leaves in a volume (a setuid-root copy of a shell, a
    // device node) is inert there, for this container and any other that mounts it.
    mounts.push_back(Mount(b.destination, "bind", b.source,
                           {"rbind", "rprivate", "nosuid", "nodev", b.read_only ? "ro" : "rw"}));
  }
  if (spec.init_process_enabled) {
    mounts.push_back(Mount(kInitPath, "bind", options.init_binary, {"bind", "nosuid", "nodev", "ro"}));
  }

  // linux
  json::array namespaces;
  if (!spec.host_pid) namespaces.push_back(json::object{{"type", "pid"}});
  if (!spec.host_ipc) namespaces.push_back(json::object{{"type", "ipc"}});
  namespaces.push_back(json::object{{"type", "uts"}});
  namespaces.push_back(json::object{{"type", "mount"}});
  switch (spec.network) {
    case NetworkMode::kPrivate:
      namespaces.push_back(json::object{{"type", "network"}});
      break;
    case NetworkMode::kJoin:
      RETURN_IF_ERROR(CheckAbsolute("network namespace path", spec.netns_path));
      namespaces.push_back(json::object{{"type", "network"}, {"path", spec.netns_path}});
      break;
    case NetworkMode::kHost:
      break;
  }

  json::array device_rules{json::object{{"allow", spec.privileged}, {"access", "rwm"}}};
  json::array device_nodes;
  for (const DeviceNode& d : options.devices) {
    RETURN_IF_ERROR(CheckAbsolute("device containerPath", d.path));
    device_nodes.push_back(json::object{{"path", d.path}, {"type", std::string(1, d.type)}, {"major", d.major},
                                        {"minor", d.minor}, {"fileMode", d.file_mode}, {"uid", 0}, {"gid", 0}});
    device_rules.push_back(json::object{{"allow", true}, {"type", std::string(1, d.type)}, {"major", d.major},
                                        {"minor", d.minor}, {"access", d.access}});
  }
  json::object resources{{"devices", std::move(device_rules)}};
  json::object memory;
  if (spec.memory_limit_bytes) {
    memory["limit"] = spec.memory_limit_bytes;
    if (options.swap_accounting) memory["swap"] = spec.memory_limit_bytes;
  }
  if (spec.memory_reservation_bytes) memory["reservation"] = spec.memory_reservation_bytes;
  if (!memory.empty()) resources["memory"] = std::move(memory);
  json::object cpu;
  if (spec.cpu_shares) cpu["shares"] = std::max<uint64_t>(2, spec.cpu_shares);
  if (spec.cpu_limit_units) {
    cpu["quota"] = CpuQuotaUs(spec.cpu_limit_units);
    cpu["period"] = kCpuPeriodUs;
  }
  if (!cpu.empty()) resources["cpu"] = std::move(cpu);

  json::object linux_section{
      {"resources", resources},
      {"cgroupsPath", options.cgroups_path},
      {"namespaces", namespaces},
      {"maskedPaths", json::array{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                                  "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                                  "/proc/sched_debug", "/sys/firmware", "/proc/scsi"}},
      {"readonlyPaths", json::array{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                    "/proc/sysrq-trigger"}}};
  if (!device_nodes.empty()) linux_section["devices"] = std::move(device_nodes);
  if (options.seccomp != nullptr && !spec.privileged) {
    linux_section["seccomp"] = SeccompJson(options.seccomp->For(std::set<std::string>(caps.begin(), caps.end())));
  }
  if (spec.privileged) {  // as Docker's --privileged: nothing of /proc hidden or read-only
    linux_section["maskedPaths"] = json::array();
    linux_section["readonlyPaths"] = json::array();
  }

  json::object annotations;
  for (const auto& [k, v] : spec.annotations) {
    // crun acts on its own annotations (a precompiled seccomp filter, kept groups, ...): none may
    // come from a spec.
    if (k.starts_with("run.oci.")) return InvalidArgument(fmt::format("annotation '{}' is crun's own", k));
    annotations[k] = v;
  }
  if (linux_section.contains("seccomp") && !options.seccomp_bpf_base64.empty())
    annotations[kSeccompBpfAnnotation] = options.seccomp_bpf_base64;

  json::object config{{"ociVersion", "1.0.0"},
                      {"process", process},
                      {"root", json::object{{"path", options.root_path},
                                            {"readonly", spec.readonly_rootfs}}},
                      {"mounts", mounts},
                      {"linux", linux_section},
                      {"annotations", annotations}};
  if (!spec.hostname.empty()) config["hostname"] = spec.hostname;
  return json::serialize(config);
}

namespace {

StatusOr<CrunState> StateFrom(const json::value& v) {
  const json::object* o = v.if_object();
  if (!o) return Internal("crun state: not an object");
  CrunState s;
  if (auto* id = o->if_contains("id"); id && id->is_string()) s.id = std::string(id->get_string());
  if (auto* st = o->if_contains("status"); st && st->is_string()) s.status = std::string(st->get_string());
  if (auto* pid = o->if_contains("pid"); pid && pid->is_int64()) s.pid = static_cast<int>(pid->get_int64());
  if (s.id.empty() || s.status.empty()) return Internal("crun state: no id or status");
  return s;
}

StatusOr<json::value> Parse(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Internal(fmt::format("crun answered unparsable JSON: {}", ec.message()));
  return v;
}

}  // namespace

StatusOr<CrunState> ParseCrunState(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  return StateFrom(v);
}

StatusOr<std::vector<CrunState>> ParseCrunList(std::string_view text) {
  std::vector<CrunState> out;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return out;
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  const json::array* a = v.if_array();
  if (!a) return Internal("crun list: not an array");
  for (const auto& e : *a) {
    ASSIGN_OR_RETURN(CrunState s, StateFrom(e));
    out.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, std::string> ParseAnnotations(std::string_view config_json) {
  std::map<std::string, std::string> out;
  auto v = Parse(config_json);
  if (!v.ok() || !v->is_object()) return out;
  const json::value* a = v->get_object().if_contains("annotations");
  if (a == nullptr || !a->is_object()) return out;
  for (const auto& [k, val] : a->get_object()) {
    if (k == kSeccompBpfAnnotation) continue;  // crun's, not the spec's
    if (val.is_string()) out.emplace(std::string(k), std::string(val.get_string()));
  }
  return out;
}

}  // namespace paddock::agent::runtime::internal
