// The OCI codec and the FakeRuntime: no root, no crun, runs anywhere.
#include <signal.h>

#include <algorithm>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "agent/runtime/internal/oci_config.h"
#include "agent/runtime/runtime.h"
#include "agent/runtime/testing/fake_runtime.h"

namespace paddock::agent::runtime {
namespace {
namespace json = boost::json;
using internal::BuildOciConfig;
using internal::BundleOptions;
using internal::DeviceNode;

ContainerSpec BasicSpec() {
  ContainerSpec spec;
  spec.id = ContainerId("pdk-t-1");
  spec.lower_dirs = {"/l/a"};
  spec.args = {"sh", "-c", "true"};
  return spec;
}

BundleOptions Options(bool swap_accounting = false, std::string init_binary = {}) {
  BundleOptions options;
  options.root_path = "rootfs";
  options.cgroups_path = "/p/c";
  options.swap_accounting = swap_accounting;
  options.init_binary = std::move(init_binary);
  return options;
}

ExecResult Exited(int code) {
  ExecResult r;
  r.exit_code = code;
  return r;
}

json::object Build(const ContainerSpec& spec, BundleOptions options = Options()) {
  auto config = BuildOciConfig(spec, options);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? json::parse(*config).as_object() : json::object();
}

bool Contains(const json::value& array, std::string_view s) {
  const auto& a = array.as_array();
  return std::any_of(a.begin(), a.end(), [&](const json::value& v) { return v.as_string() == s; });
}

TEST(OciConfig, MinimalSpecIsCrunSpecShaped) {
  json::object c = Build(BasicSpec());
  const auto& process = c["process"].as_object();
  EXPECT_EQ(process.at("terminal"), false);
  EXPECT_EQ(process.at("noNewPrivileges"), true);
  EXPECT_EQ(process.at("cwd"), "/");
  EXPECT_EQ(process.at("user").at("uid"), 0);
  // A PATH is supplied when the spec's env has none.
  EXPECT_TRUE(Contains(process.at("env"), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  EXPECT_EQ(c["root"].at("path"), "rootfs");
  EXPECT_EQ(c["root"].at("readonly"), false);
  EXPECT_FALSE(c.contains("hostname"));
  const auto& linux_section = c["linux"].as_object();
  EXPECT_EQ(linux_section.at("cgroupsPath"), "/p/c");
  std::vector<std::string> ns;
  for (const auto& n : linux_section.at("namespaces").as_array()) ns.emplace_back(n.at("type").as_string());
  EXPECT_EQ(ns, (std::vector<std::string>{"pid", "ipc", "uts", "mount", "network"}));
  EXPECT_FALSE(linux_section.at("resources").as_object().contains("memory"));
  EXPECT_FALSE(linux_section.at("resources").as_object().contains("cpu"));
  // Docker's default capability set, in every set but inheritable/ambient.
  const auto& caps = process.at("capabilities");
  EXPECT_EQ(caps.at("bounding").as_array().size(), 14u);
  EXPECT_TRUE(Contains(caps.at("effective"), "CAP_NET_BIND_SERVICE"));
  EXPECT_FALSE(Contains(caps.at("effective"), "CAP_SYS_ADMIN"));
  EXPECT_TRUE(caps.at("ambient").as_array().empty());
}

TEST(OciConfig, EveryField) {
  ContainerSpec spec = BasicSpec();
  spec.env = {"X=1", "PATH=/bin"};
  spec.working_dir = "/srv";
  spec.user = "1000:50";
  spec.hostname = "web";
  spec.readonly_rootfs = true;
  spec.network = NetworkMode::kJoin;
  spec.netns_path = "/run/netns/t1";
  spec.binds = {{"/host/data", "/data", true}};
  spec.tmpfs = {{"/scratch", 1 << 20, {"noexec"}}};
  spec.shm_size_bytes = 128 << 20;
  spec.cpu_shares = 512;
  spec.cpu_limit_units = 512;
  spec.memory_limit_bytes = 64 << 20;
  spec.memory_reservation_bytes = 32 << 20;
  spec.cap_add = {"SYS_TIME", "cap_net_admin"};
  spec.cap_drop = {"NET_RAW"};
  spec.ulimits = {{"nofile", 4096, 8192}};
  spec.annotations = {{"com.amazonaws.ecs.container-name", "web"}};
  json::object c = Build(spec, Options(true));

  const auto& process = c["process"].as_object();
  EXPECT_EQ(process.at("cwd"), "/srv");
  EXPECT_EQ(process.at("user").at("uid"), 1000);
  EXPECT_EQ(process.at("user").at("gid"), 50);
  EXPECT_EQ(process.at("env").as_array().size(), 2u);  // the spec's PATH wins
  EXPECT_TRUE(Contains(process.at("capabilities").at("bounding"), "CAP_SYS_TIME"));
  EXPECT_TRUE(Contains(process.at("capabilities").at("bounding"), "CAP_NET_ADMIN"));
  EXPECT_FALSE(Contains(process.at("capabilities").at("bounding"), "CAP_NET_RAW"));
  const auto& rlimit = process.at("rlimits").as_array().at(0);
  EXPECT_EQ(rlimit.at("type"), "RLIMIT_NOFILE");
  EXPECT_EQ(rlimit.at("soft"), 4096);
  EXPECT_EQ(rlimit.at("hard"), 8192);
  EXPECT_EQ(c["hostname"], "web");
  EXPECT_EQ(c["root"].at("readonly"), true);
  EXPECT_EQ(c["annotations"].at("com.amazonaws.ecs.container-name"), "web");

  const auto& linux_section = c["linux"].as_object();
  const auto& net = linux_section.at("namespaces").as_array().back();
  EXPECT_EQ(net.at("type"), "network");
  EXPECT_EQ(net.at("path"), "/run/netns/t1");
  const auto& res = linux_section.at("resources");
  EXPECT_EQ(res.at("memory").at("limit"), 64 << 20);
  EXPECT_EQ(res.at("memory").at("swap"), 64 << 20);
  EXPECT_EQ(res.at("memory").at("reservation"), 32 << 20);
  EXPECT_EQ(res.at("cpu").at("shares"), 512);
  EXPECT_EQ(res.at("cpu").at("quota"), 50000);  // half a core
  EXPECT_EQ(res.at("cpu").at("period"), 100000);

  bool saw_bind = false, saw_tmpfs = false, saw_shm = false;
  for (const auto& m : c["mounts"].as_array()) {
    if (m.at("destination") == "/data") {
      saw_bind = true;
      EXPECT_EQ(m.at("type"), "bind");
      EXPECT_EQ(m.at("source"), "/host/data");
      EXPECT_TRUE(Contains(m.at("options"), "ro"));
    }
    if (m.at("destination") == "/scratch") {
      saw_tmpfs = true;
      EXPECT_TRUE(Contains(m.at("options"), "size=1048576"));
      EXPECT_TRUE(Contains(m.at("options"), "noexec"));
    }
    if (m.at("destination") == "/dev/shm") {
      saw_shm = true;
      EXPECT_TRUE(Contains(m.at("options"), "size=134217728"));
    }
  }
  EXPECT_TRUE(saw_bind && saw_tmpfs && saw_shm);
}

TEST(OciConfig, HostNetworkHasNoNetworkNamespace) {
  ContainerSpec spec = BasicSpec();
  spec.network = NetworkMode::kHost;
  json::object c = Build(spec);
  for (const auto& n : c["linux"].at("namespaces").as_array()) EXPECT_NE(n.at("type"), "network");
}

// Host-level grants (only for tasks on an instance whose operator allowed host access).
TEST(OciConfig, PrivilegedIsDockersPrivileged) {
  ContainerSpec spec = BasicSpec();
  json::object plain = Build(spec);
  EXPECT_EQ(plain["process"].at("noNewPrivileges"), true);
  EXPECT_FALSE(plain["linux"].at("maskedPaths").as_array().empty());
  spec.privileged = true;
  spec.cap_drop = {"ALL"};  // ignored, as Docker ignores it with --privileged
  json::object c = Build(spec);
  EXPECT_EQ(c["process"].at("capabilities").at("bounding").as_array().size(), 41u);
  EXPECT_EQ(c["process"].at("capabilities").at("effective").as_array().size(), 41u);
  EXPECT_EQ(c["process"].at("noNewPrivileges"), false);
  BundleOptions limited = Options();
  limited.bounding_caps = (uint64_t{1} << 41) - 1 - (uint64_t{1} << 24);  // no CAP_SYS_RESOURCE
  auto bounded = json::parse(*BuildOciConfig(spec, limited)).as_object();
  EXPECT_EQ(bounded["process"].at("capabilities").at("bounding").as_array().size(), 40u);
  EXPECT_FALSE(Contains(bounded["process"].at("capabilities").at("bounding"), "CAP_SYS_RESOURCE"));
  EXPECT_TRUE(Contains(bounded["process"].at("capabilities").at("bounding"), "CAP_SYS_ADMIN"));
  EXPECT_TRUE(c["linux"].at("maskedPaths").as_array().empty());
  EXPECT_TRUE(c["linux"].at("readonlyPaths").as_array().empty());
  EXPECT_EQ(c["linux"].at("resources").at("devices").as_array(),
            (json::array{json::object{{"allow", true}, {"access", "rwm"}}}));
  for (const auto& m : c["mounts"].as_array()) {
    if (m.at("destination") == "/dev") {
      EXPECT_EQ(m.at("type"), "bind");
      EXPECT_EQ(m.at("source"), "/dev");
    }
    if (m.at("destination") == "/sys" || m.at("destination") == "/sys/fs/cgroup") {
      EXPECT_TRUE(Contains(m.at("options"), "rw"));
    }
  }
  EXPECT_EQ(plain["linux"].at("resources").at("devices").as_array(),
            (json::array{json::object{{"allow", false}, {"access", "rwm"}}}));
}

TEST(OciConfig, DevicesAreCreatedAndAllowed) {
  ContainerSpec spec = BasicSpec();
  BundleOptions options = Options();
  options.devices = {DeviceNode{"/dev/fuse", 'c', 10, 229, 0666, "rwm"}, DeviceNode{"/dev/k", 'c', 1, 11, 0644, "r"}};
  auto c = json::parse(*BuildOciConfig(spec, options)).as_object();
  const auto& nodes = c["linux"].at("devices").as_array();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].at("path"), "/dev/fuse");
  EXPECT_EQ(nodes[0].at("type"), "c");
  EXPECT_EQ(nodes[0].at("major"), 10);
  EXPECT_EQ(nodes[0].at("minor"), 229);
  const auto& rules = c["linux"].at("resources").at("devices").as_array();
  ASSERT_EQ(rules.size(), 3u);  // deny all, then each device
  EXPECT_EQ(rules[0].at("allow"), false);
  EXPECT_EQ(rules[2].at("access"), "r");
  EXPECT_EQ(rules[2].at("minor"), 11);
  EXPECT_FALSE(Build(spec)["linux"].as_object().contains("devices"));
}

TEST(OciConfig, HostPidAndIpcJoinTheHostsNamespaces) {
  ContainerSpec spec = BasicSpec();
  auto types = [](json::object& c) {
    std::vector<std::string> out;
    for (const auto& n : c["linux"].at("namespaces").as_array()) out.emplace_back(n.at("type").as_string());
    return out;
  };
  json::object plain = Build(spec);
  EXPECT_TRUE(Contains(json::value_from(types(plain)), "pid"));
  EXPECT_TRUE(Contains(json::value_from(types(plain)), "ipc"));
  spec.host_pid = true;
  spec.host_ipc = true;
  json::object c = Build(spec);
  EXPECT_FALSE(Contains(json::value_from(types(c)), "pid"));
  EXPECT_FALSE(Contains(json::value_from(types(c)), "ipc"));
  for (const auto& m : c["mounts"].as_array()) {
    if (m.at("destination") == "/dev/shm") {
      EXPECT_EQ(m.at("source"), "/dev/shm");
    }
  }
}

TEST(OciConfig, CapabilitiesAll) {
  ContainerSpec spec = BasicSpec();
  spec.cap_drop = {"ALL"};
  spec.cap_add = {"KILL"};
  json::object c = Build(spec);
  EXPECT_EQ(c["process"].at("capabilities").at("bounding").as_array(), json::array{"CAP_KILL"});
  spec.cap_drop = {};
  spec.cap_add = {"ALL"};
  c = Build(spec);
  EXPECT_EQ(c["process"].at("capabilities").at("bounding").as_array().size(), 41u);
}

TEST(OciConfig, InitProcessUsesTheConfiguredBinary) {
  ContainerSpec spec = BasicSpec();
  spec.init_process_enabled = true;
  auto refused = BuildOciConfig(spec, Options());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  json::object c = Build(spec, Options(false, "/usr/bin/tini"));
  const auto& args = c["process"].at("args").as_array();
  EXPECT_EQ(args.at(0), "/dev/init");
  EXPECT_EQ(args.at(1), "--");
  EXPECT_EQ(args.at(2), "sh");
}

TEST(OciConfig, RefusesBadSpecs) {
  auto code = [](ContainerSpec spec) {
    return BuildOciConfig(spec, Options()).status().code();
  };
  ContainerSpec s = BasicSpec();
  s.args = {};
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = BasicSpec();
  s.user = "nginx";
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s.user = "1000:";
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = BasicSpec();
  s.cap_add = {"FLY"};
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = BasicSpec();
  s.ulimits = {{"bogus", 1, 1}};
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s.ulimits = {{"nofile", 10, 5}};
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = BasicSpec();
  s.working_dir = "relative";
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = BasicSpec();
  s.env = {"NOEQUALS"};
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
  s = BasicSpec();
  s.network = NetworkMode::kJoin;
  EXPECT_EQ(code(s), StatusCode::kInvalidArgument);
}

TEST(OciConfig, ParsesCrunStateAndList) {
  auto s = internal::ParseCrunState(R"({"ociVersion":"1.0.0","id":"a","pid":42,"status":"running"})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id, "a");
  EXPECT_EQ(s->pid, 42);
  EXPECT_EQ(s->status, "running");
  auto empty = internal::ParseCrunList("[\n\n]\n");  // what crun 1.8 prints for no containers
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(internal::ParseCrunList("").ok());
  auto two = internal::ParseCrunList(R"([{"id":"a","pid":0,"status":"stopped"},{"id":"b","pid":7,"status":"created"}])");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_FALSE(internal::ParseCrunList("{garbage").ok());
}

TEST(Runtime, CpuQuotaAndIds) {
  EXPECT_EQ(CpuQuotaUs(1024), 100000u);
  EXPECT_EQ(CpuQuotaUs(256), 25000u);
  EXPECT_EQ(CpuQuotaUs(1), 1000u);  // the kernel's minimum
  EXPECT_TRUE(IsValidContainerId("pdk-abc_1.2"));
  EXPECT_FALSE(IsValidContainerId(""));
  EXPECT_FALSE(IsValidContainerId(".."));
  EXPECT_FALSE(IsValidContainerId("a/b"));
  EXPECT_FALSE(IsValidContainerId(std::string(65, 'a')));
}

TEST(FakeRuntime, StopSequenceAndExec) {
  FakeRuntime rt;
  ContainerSpec spec = BasicSpec();
  ASSERT_TRUE(rt.Create(spec).ok());
  EXPECT_EQ(rt.Create(spec).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(rt.Start(spec.id).ok());
  EXPECT_EQ(rt.State(spec.id)->status, ContainerStatus::kRunning);

  rt.SetExecHandler([](const ContainerId&, const std::vector<std::string>& args) -> StatusOr<ExecResult> {
    return Exited(args.back() == "exit 1" ? 1 : 0);
  });
  EXPECT_EQ(rt.Exec(spec.id, {"sh", "-c", "exit 1"}, std::chrono::seconds(1))->exit_code, 1);
  EXPECT_EQ(rt.Exec(spec.id, {"sh", "-c", "exit 0"}, std::chrono::seconds(1))->exit_code, 0);

  rt.SetIgnoresSigterm(spec.id, true);
  ASSERT_TRUE(rt.Kill(spec.id, SIGTERM).ok());
  EXPECT_EQ(rt.Wait(spec.id, std::chrono::seconds(1))->status, ContainerStatus::kRunning);
  EXPECT_EQ(rt.Delete(spec.id, ForceDelete::kNo).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(rt.Kill(spec.id, SIGKILL).ok());
  auto st = rt.State(spec.id);
  EXPECT_EQ(st->status, ContainerStatus::kStopped);
  EXPECT_EQ(st->exit_code, 137);
  EXPECT_EQ(rt.signals().size(), 2u);
  EXPECT_TRUE(rt.Delete(spec.id, ForceDelete::kNo).ok());
  EXPECT_TRUE(rt.List()->empty());
}

TEST(FakeRuntime, OomAndInjectedFailures) {
  FakeRuntime rt;
  ContainerSpec spec = BasicSpec();
  rt.FailNext("Create", Internal("disk full"));
  EXPECT_EQ(rt.Create(spec).code(), StatusCode::kInternal);
  ASSERT_TRUE(rt.Create(spec).ok());
  ASSERT_TRUE(rt.Start(spec.id).ok());
  rt.Exit(spec.id, 137, true);
  auto st = rt.State(spec.id);
  EXPECT_TRUE(st->oom_killed);
  EXPECT_EQ(st->exit_code, 137);
}

}  // namespace
}  // namespace paddock::agent::runtime
