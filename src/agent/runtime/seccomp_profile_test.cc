// The seccomp profile codec (internal/seccomp_profile.h) and its place in the OCI config: pure, no
// root. The Debian profile cases read /usr/share/containers/seccomp.json and skip without it.
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "agent/runtime/crun_runtime.h"
#include "agent/runtime/internal/oci_config.h"
#include "agent/runtime/internal/seccomp_profile.h"

namespace paddock::agent::runtime::internal {
namespace {
namespace json = boost::json;

SeccompHost Amd64(int major = 6, int minor = 1) {
  SeccompHost h;
  h.go_arch = "amd64";
  h.scmp_arch = "SCMP_ARCH_X86_64";
  h.kernel_major = major;
  h.kernel_minor = minor;
  return h;
}

// Docker's default caps, as BuildOciConfig gives a container that neither adds nor drops any.
const std::set<std::string> kDefaultCaps = {
    "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FSETID",     "CAP_FOWNER", "CAP_MKNOD",       "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID",       "CAP_SETFCAP",    "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL",     "CAP_AUDIT_WRITE"};

// The actions the filter's rules take for `name` (with the rule's args, if any, in brackets).
std::vector<std::string> ActionsFor(const SeccompFilter& f, std::string_view name) {
  std::vector<std::string> out;
  for (const SeccompRule& r : f.syscalls) {
    if (std::find(r.names.begin(), r.names.end(), name) == r.names.end()) continue;
    std::string a = r.action;
    if (r.errno_ret) a += "(" + std::to_string(*r.errno_ret) + ")";
    if (!r.args.empty()) a += "[args]";
    out.push_back(a);
  }
  return out;
}

using Actions = std::vector<std::string>;

constexpr std::string_view kSmall = R"({
  "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
  "archMap": [
    {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
    {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}
  ],
  "syscalls": [
    {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "args": [], "comment": "", "includes": {}, "excludes": {}},
    {"name": "personality", "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 4294967295, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]},
    {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64", "x32"]}},
    {"names": ["set_tls"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm", "arm64"]}},
    {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4.8"}},
    {"names": ["old_thing"], "action": "SCMP_ACT_ALLOW", "excludes": {"minKernel": "5.0"}},
    {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["bpf"], "action": "SCMP_ACT_ERRNO", "excludes": {"caps": ["CAP_SYS_ADMIN"]}, "errnoRet": 1},
    {"names": ["s390only"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
    {"names": ["socket"], "action": "SCMP_ACT_ALLOW", "args": null}
  ]
})";

TEST(SeccompProfileTest, TranslatesArchitectureKernelAndCapabilitiesAsContainersCommonDoes) {
  auto p = SeccompProfile::Parse(kSmall, Amd64());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  SeccompFilter f = p->For(kDefaultCaps);
  EXPECT_EQ(f.default_action, "SCMP_ACT_ERRNO");
  EXPECT_EQ(f.default_errno_ret, 38u);
  EXPECT_EQ(f.architectures, (std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}));
  EXPECT_EQ(ActionsFor(f, "read"), Actions{"SCMP_ACT_ALLOW"});
  EXPECT_EQ(ActionsFor(f, "personality"), Actions{"SCMP_ACT_ALLOW[args]"});
  EXPECT_EQ(ActionsFor(f, "arch_prctl"), Actions{"SCMP_ACT_ALLOW"});
  EXPECT_TRUE(ActionsFor(f, "set_tls").empty());   // another architecture's
  EXPECT_EQ(ActionsFor(f, "ptrace"), Actions{"SCMP_ACT_ALLOW"});  // kernel 6.1 >= 4.8
  EXPECT_TRUE(ActionsFor(f, "old_thing").empty());  // excluded from 5.0 on
  EXPECT_TRUE(ActionsFor(f, "s390only").empty());
  EXPECT_EQ(ActionsFor(f, "bpf"), Actions{"SCMP_ACT_ERRNO(1)"});
  EXPECT_EQ(ActionsFor(f, "socket"), Actions{"SCMP_ACT_ALLOW"});
  for (const SeccompRule& r : f.syscalls) {
    if (r.names[0] == "personality") {
      EXPECT_EQ(r.args[0].value, 4294967295u);
    }
  }

  std::set<std::string> admin = kDefaultCaps;
  admin.insert("CAP_SYS_ADMIN");
  EXPECT_EQ(ActionsFor(p->For(admin), "bpf"), Actions{"SCMP_ACT_ALLOW"});

  // An old kernel and a host the archMap lacks.
  auto old = SeccompProfile::Parse(kSmall, Amd64(4, 4));
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(ActionsFor(old->For(kDefaultCaps), "ptrace").empty());
  EXPECT_EQ(ActionsFor(old->For(kDefaultCaps), "old_thing"), Actions{"SCMP_ACT_ALLOW"});
  SeccompHost odd;
  odd.go_arch = "loong64";
  auto unmapped = SeccompProfile::Parse(kSmall, odd);
  ASSERT_TRUE(unmapped.ok());
  EXPECT_TRUE(unmapped->For(kDefaultCaps).architectures.empty());  // libseccomp's native one
}

TEST(SeccompProfileTest, RefusesWhatIsNotTheFormat) {
  for (const char* bad : {
           "[]", "{", R"({"syscalls": []})", R"({"defaultAction": "SCMP_ACT_MAYBE", "syscalls": []})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"action": "SCMP_ACT_ALLOW"}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"name": "a", "names": ["b"], "action": "SCMP_ACT_ALLOW"}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["a"], "action": "SCMP_ACT_NOTIFY"}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["a"], "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 9, "value": 0, "op": "SCMP_CMP_EQ"}]}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["a"], "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": -1, "op": "SCMP_CMP_EQ"}]}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["a"], "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_LIKE"}]}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["a"], "action": "SCMP_ACT_ALLOW",
                "includes": {"minKernel": "four"}}]})",
           R"({"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
               "archMap": [{"architecture": "SCMP_ARCH_X86_64"}], "syscalls": []})",
       }) {
    EXPECT_FALSE(SeccompProfile::Parse(bad, Amd64()).ok()) << bad;
  }
  EXPECT_EQ(SeccompProfile::Load("/nonexistent/seccomp.json", Amd64()).status().code(), StatusCode::kNotFound);
}

// Docker's rules over podman's: the namespace, mount and keyring calls that podman's profile
// allows every container.
TEST(SeccompProfileTest, DockerRestrictionsTakeNamespacesMountsAndTheKeyringAway) {
  constexpr std::string_view kLoose = R"({
    "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
    "syscalls": [
      {"names": ["read", "clone", "clone3", "unshare", "setns", "mount", "keyctl", "syslog", "reboot"],
       "action": "SCMP_ACT_ALLOW"},
      {"names": ["setns", "bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
      {"names": ["setns", "bpf"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_ADMIN"]}}
    ]})";
  auto loose = SeccompProfile::Parse(kLoose, Amd64());
  ASSERT_TRUE(loose.ok());
  ASSERT_EQ(ActionsFor(loose->For(kDefaultCaps), "unshare"), Actions{"SCMP_ACT_ALLOW"});  // podman's
  SeccompProfile p = loose->WithDockerRestrictions();

  SeccompFilter f = p.For(kDefaultCaps);
  EXPECT_EQ(ActionsFor(f, "read"), Actions{"SCMP_ACT_ALLOW"});
  for (const char* call : {"unshare", "setns", "mount", "umount2", "pivot_root", "fsopen", "open_tree"})
    EXPECT_EQ(ActionsFor(f, call), Actions{"SCMP_ACT_ERRNO(1)"}) << call;
  EXPECT_EQ(ActionsFor(f, "clone"), Actions{"SCMP_ACT_ALLOW[args]"});  // only without CLONE_NEW* flags
  EXPECT_EQ(ActionsFor(f, "clone3"), Actions{"SCMP_ACT_ERRNO(38)"});   // ENOSYS: libc falls back to clone
  for (const char* call : {"keyctl", "add_key", "request_key", "syslog", "reboot"})
    EXPECT_EQ(ActionsFor(f, call), Actions{"SCMP_ACT_ERRNO(1)"}) << call;
  EXPECT_EQ(ActionsFor(f, "bpf"), Actions{"SCMP_ACT_ERRNO(1)"});  // the profile's own rule stays
  for (const SeccompRule& r : f.syscalls) {
    if (r.names == std::vector<std::string>{"clone"}) {
      ASSERT_EQ(r.args.size(), 1u);
      EXPECT_EQ(r.args[0].value, 0x7E020000u);
      EXPECT_EQ(r.args[0].op, "SCMP_CMP_MASKED_EQ");
    }
  }

  // CAP_SYS_ADMIN (a host-level grant) opens namespaces and mounts, as in Docker; never keyrings.
  std::set<std::string> admin = kDefaultCaps;
  admin.insert("CAP_SYS_ADMIN");
  SeccompFilter a = p.For(admin);
  for (const char* call : {"unshare", "setns", "mount", "clone", "clone3", "bpf"})
    EXPECT_EQ(ActionsFor(a, call), Actions{"SCMP_ACT_ALLOW"}) << call;
  EXPECT_EQ(ActionsFor(a, "keyctl"), Actions{"SCMP_ACT_ERRNO(1)"});
  std::set<std::string> boot = kDefaultCaps;
  boot.insert("CAP_SYS_BOOT");
  EXPECT_EQ(ActionsFor(p.For(boot), "reboot"), Actions{"SCMP_ACT_ALLOW"});
}

// The profile Debian ships, as the runtime uses it.
TEST(SeccompProfileTest, DebiansProfileConfinesADefaultContainerAsDockerDoes) {
  const std::string path(kDefaultSeccompProfile);
  if (::access(path.c_str(), R_OK) != 0) GTEST_SKIP() << path << " is not installed (golang-github-containers-common)";
  auto loaded = SeccompProfile::Load(path, Amd64());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  SeccompFilter f = loaded->WithDockerRestrictions().For(kDefaultCaps);
  EXPECT_EQ(f.architectures, (std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}));
  for (const char* call : {"read", "write", "execve", "fork", "socket", "ptrace", "chroot", "setuid"})
    EXPECT_FALSE(ActionsFor(f, call).empty()) << call << " has no rule";
  EXPECT_EQ(ActionsFor(f, "chroot"), Actions{"SCMP_ACT_ALLOW"});  // CAP_SYS_CHROOT is a default
  for (const char* call : {"unshare", "setns", "mount", "keyctl", "bpf", "perf_event_open", "syslog"})
    EXPECT_EQ(ActionsFor(f, call), Actions{"SCMP_ACT_ERRNO(1)"}) << call;
  for (const char* call : {"userfaultfd", "kexec_load", "open_by_handle_at", "clock_settime"}) {
    Actions actions = ActionsFor(f, call);
    EXPECT_TRUE(std::none_of(actions.begin(), actions.end(),
                             [](const std::string& a) { return a.starts_with("SCMP_ACT_ALLOW"); }))
        << call;
  }
  EXPECT_TRUE(ActionsFor(f, "io_uring_setup").empty());  // not listed: the default, ENOSYS
}

TEST(SeccompProfileTest, EveryContainerButAPrivilegedOneGetsTheFilterOfItsCapabilities) {
  auto p = SeccompProfile::Parse(kSmall, Amd64());
  ASSERT_TRUE(p.ok());
  BundleOptions options;
  options.root_path = "rootfs";
  options.cgroups_path = "/p/c";
  options.seccomp = &*p;
  ContainerSpec spec;
  spec.id = ContainerId("pdk-t-1");
  spec.lower_dirs = {"/l/a"};
  spec.args = {"true"};

  auto bpf_action = [](const json::object& config) -> std::string {
    for (const json::value& r : config.at("linux").at("seccomp").at("syscalls").as_array())
      if (r.at("names").as_array().at(0) == "bpf") return std::string(r.at("action").as_string());
    return "";
  };
  auto config = BuildOciConfig(spec, options);
  ASSERT_TRUE(config.ok());
  json::object c = json::parse(*config).as_object();
  const json::object& seccomp = c.at("linux").at("seccomp").as_object();
  EXPECT_EQ(seccomp.at("defaultAction"), "SCMP_ACT_ERRNO");
  EXPECT_EQ(seccomp.at("defaultErrnoRet"), 38);
  EXPECT_EQ(seccomp.at("architectures").as_array().size(), 3u);
  EXPECT_EQ(bpf_action(c), "SCMP_ACT_ERRNO");
  for (const json::value& r : seccomp.at("syscalls").as_array()) {
    if (r.at("names").as_array().at(0) == "bpf") {
      EXPECT_EQ(r.at("errnoRet"), 1);
    }
    if (r.at("names").as_array().at(0) == "personality") {
      const json::object& arg = r.at("args").as_array().at(0).as_object();
      EXPECT_EQ(arg.at("index"), 0);
      EXPECT_EQ(arg.at("value").to_number<uint64_t>(), 4294967295u);
      EXPECT_EQ(arg.at("op"), "SCMP_CMP_EQ");
    }
  }

  spec.cap_add = {"SYS_ADMIN"};  // widens it as Docker's profile does
  config = BuildOciConfig(spec, options);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(bpf_action(json::parse(*config).as_object()), "SCMP_ACT_ALLOW");

  spec.cap_add.clear();
  spec.privileged = true;  // Docker's --privileged: unconfined
  config = BuildOciConfig(spec, options);
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(json::parse(*config).at("linux").as_object().contains("seccomp"));

  // A precompiled filter rides along as crun's annotation; a spec can never bring its own.
  spec.privileged = false;
  options.seccomp_bpf_base64 = "AAAA";
  config = BuildOciConfig(spec, options);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(json::parse(*config).at("annotations").at(kSeccompBpfAnnotation), "AAAA");
  EXPECT_TRUE(ParseAnnotations(*config).empty());
  spec.annotations = {{std::string(kSeccompBpfAnnotation), "BBBB"}};
  EXPECT_EQ(BuildOciConfig(spec, options).status().code(), StatusCode::kInvalidArgument);
  spec.annotations.clear();
  options.seccomp_bpf_base64.clear();

  options.seccomp = nullptr;
  spec.privileged = false;
  config = BuildOciConfig(spec, options);
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(json::parse(*config).at("linux").as_object().contains("seccomp"));
}

TEST(NodePidsMaxTest, LeavesTheHostAReserveOfTenPercentOrAtLeast4096) {
  EXPECT_EQ(NodePidsMaxFor(32768, 192729), 32768u - 4096u);
  EXPECT_EQ(NodePidsMaxFor(4194304, 0), 4194304u - 419430u);
  EXPECT_EQ(NodePidsMaxFor(4096, 100000), 0u);
  EXPECT_EQ(NodePidsMaxFor(0, 0), 0u);
}

TEST(NodePidsMaxTest, TheKernelsThreadCountBoundsItWherePidMaxIsHigher) {
  // systemd's pid_max on a small host: fork fails at threads-max long before pid_max.
  EXPECT_EQ(NodePidsMaxFor(4194304, 62000), 62000u - 6200u);
  EXPECT_EQ(NodePidsMaxFor(4194304, 30000), 30000u - 4096u);
}

}  // namespace
}  // namespace paddock::agent::runtime::internal
