// The host checks over a fake host: each way a host can fail to run containers is found, named and
// given its fix, and what only degrades (pulls, routing) never blocks tasks.
#include "cli/host_checks.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace paddock::cli {
namespace {

// A host where everything Paddock needs is present (this repository's dev host: hybrid cgroups).
constexpr std::string_view kHybridMountinfo =
    "23 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "42 31 0:39 / /sys/fs/cgroup/hugetlb rw,relatime - cgroup cgroup rw,hugetlb\n";
constexpr std::string_view kUnifiedMountinfo =
    "23 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";
// What `ip netns exec blue` leaves: a fresh sysfs named after the namespace, no cgroups.
constexpr std::string_view kNetnsExecMountinfo = "117 114 0:117 / /sys rw,relatime - sysfs blue rw\n";

class FakeHost final : public HostProbe {
 public:
  FakeHost() {
    files["/proc/self/mountinfo"] = std::string(kHybridMountinfo);
    files["/sys/fs/cgroup/unified/cgroup.controllers"] = "\n";
    files["/proc/filesystems"] = "nodev\tsysfs\nnodev\tcgroup2\nnodev\toverlay\n\text4\n";
    files["/proc/sys/net/ipv4/ip_forward"] = "1\n";
    files["/usr/share/containers/seccomp.json"] = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": []}";
    for (const char* p : {"crun", "nft", "ip", "iptables", "skopeo"}) programs[p] = std::string("/usr/bin/") + p;
    programs["/usr/bin/tini-static"] = "/usr/bin/tini-static";
    runs["/usr/bin/crun --version"] = {0, "crun version 1.8.1\ncommit: ...\n"};
    runs["/usr/bin/nft list tables"] = {0, "table inet paddock\n"};
  }
  bool IsRoot() override { return root; }
  std::optional<std::string> ReadFile(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> FindProgram(const std::string& program) override {
    auto it = programs.find(program);
    if (it == programs.end()) return std::nullopt;
    return it->second;
  }
  StatusOr<ProgramResult> Run(const std::vector<std::string>& argv) override {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    ran.push_back(line);
    auto it = runs.find(line);
    if (it == runs.end()) return Unavailable("no such program");
    return it->second;
  }
  StatusOr<uint64_t> FreeBytes(const std::string&) override { return free_bytes; }
  Status TryBind(const std::string&, uint16_t port) override {
    return busy_ports.count(port) ? Unavailable("the address is in use") : OkStatus();
  }

  bool root = true;
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> programs;
  std::map<std::string, ProgramResult> runs;
  std::vector<std::string> ran;
  uint64_t free_bytes = uint64_t{50} << 30;
  std::set<uint16_t> busy_ports;
};

// g++ 12 warns about designated initializers that leave members to their defaults.
HostCheckOptions Options(std::string listen = "", std::string holder = "") {
  HostCheckOptions o;
  o.state_dir = "/var/lib/paddock";
  o.listen = std::move(listen);
  o.listen_holder = std::move(holder);
  return o;
}

const HostCheck& Find(const std::vector<HostCheck>& checks, std::string_view name) {
  for (const auto& c : checks)
    if (c.name == name) return c;
  static const HostCheck missing{"<missing>", CheckState::kSkip, "", "", false};
  ADD_FAILURE() << "no check named " << name;
  return missing;
}

TEST(HostChecksTest, AHealthyHostPassesEverything) {
  FakeHost host;
  auto checks = RunHostChecks(host, Options("127.0.0.1:4566"), CheckSet::kAll);
  ASSERT_EQ(checks.size(), 14u);
  for (const auto& c : checks) EXPECT_EQ(c.state, CheckState::kPass) << FormatCheck(c);
  EXPECT_TRUE(CanRunContainers(checks));
  EXPECT_EQ(CannotRunSummary(checks), "");
  EXPECT_NE(Find(checks, "crun").detail.find("crun version 1.8.1"), std::string::npos);
  EXPECT_NE(Find(checks, "cgroups").detail.find("hybrid"), std::string::npos);
  // The start set leaves the port to the server's own bind.
  EXPECT_EQ(RunHostChecks(host, Options("127.0.0.1:4566"), CheckSet::kStart).size(), 13u);
}

// Red team, 2026-12: containers ran with no seccomp filter. Without the profile the agent refuses
// them, so the host cannot run containers, and says how to fix it.
TEST(HostChecksTest, NoSeccompProfileBlocksTasks) {
  FakeHost host;
  host.files.erase("/usr/share/containers/seccomp.json");
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  const HostCheck& seccomp = Find(checks, "seccomp");
  EXPECT_EQ(seccomp.state, CheckState::kFail);
  EXPECT_TRUE(seccomp.blocks_tasks);
  EXPECT_NE(seccomp.fix.find("golang-github-containers-common"), std::string::npos);
  EXPECT_FALSE(CanRunContainers(checks));
  EXPECT_NE(CannotRunSummary(checks).find("seccomp: /usr/share/containers/seccomp.json is missing"), std::string::npos)
      << CannotRunSummary(checks);
  host.files["/usr/share/containers/seccomp.json"] = "not json";
  EXPECT_EQ(Find(RunHostChecks(host, {}, CheckSet::kStart), "seccomp").state, CheckState::kFail);
}

TEST(HostChecksTest, NotRootBlocksTasksAndSaysHow) {
  FakeHost host;
  host.root = false;
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  const HostCheck& root = Find(checks, "root");
  EXPECT_EQ(root.state, CheckState::kFail);
  EXPECT_TRUE(root.blocks_tasks);
  EXPECT_NE(root.fix.find("sudo -E"), std::string::npos);
  // nft's kernel side cannot be asked without root: skipped, not a second failure.
  EXPECT_EQ(Find(checks, "nftables").state, CheckState::kSkip);
  EXPECT_FALSE(CanRunContainers(checks));
  EXPECT_NE(CannotRunSummary(checks).find("root: not running as root"), std::string::npos);
}

TEST(HostChecksTest, IpNetnsExecHidesCgroupsAndTheFixIsNsenter) {
  FakeHost host;
  host.files["/proc/self/mountinfo"] = std::string(kNetnsExecMountinfo);
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  const HostCheck& cg = Find(checks, "cgroups");
  EXPECT_EQ(cg.state, CheckState::kFail);
  EXPECT_NE(cg.detail.find("ip netns exec blue"), std::string::npos) << cg.detail;
  EXPECT_NE(cg.fix.find("nsenter --net=/var/run/netns/blue"), std::string::npos) << cg.fix;
  EXPECT_EQ(Find(checks, "cgroup controllers").state, CheckState::kSkip);
  EXPECT_FALSE(CanRunContainers(checks));
}

TEST(HostChecksTest, NoCgroupsWithoutNetnsNeedsAMount) {
  FakeHost host;
  host.files["/proc/self/mountinfo"] = "23 1 0:21 / /sys rw - sysfs sysfs rw\n";
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  EXPECT_EQ(Find(checks, "cgroups").state, CheckState::kFail);
  EXPECT_EQ(Find(checks, "cgroups").fix.find("nsenter"), std::string::npos);
}

TEST(HostChecksTest, MissingV1ControllerNamesTheMount) {
  FakeHost host;
  std::string info(kHybridMountinfo);
  info.erase(info.find("39 31"), info.find("41 31") - info.find("39 31"));  // no pids hierarchy
  host.files["/proc/self/mountinfo"] = info;
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  const HostCheck& c = Find(checks, "cgroup controllers");
  EXPECT_EQ(c.state, CheckState::kFail);
  EXPECT_NE(c.detail.find("no pids cgroup controller"), std::string::npos) << c.detail;
  EXPECT_NE(c.fix.find("mount -t cgroup -o pids cgroup /sys/fs/cgroup/pids"), std::string::npos) << c.fix;
}

TEST(HostChecksTest, HybridWithAControllerOnCgroup2IsRefusedAsCrunDoes) {
  FakeHost host;
  host.files["/sys/fs/cgroup/unified/cgroup.controllers"] = "hugetlb\n";
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  const HostCheck& c = Find(checks, "cgroup controllers");
  EXPECT_EQ(c.state, CheckState::kFail);
  EXPECT_NE(c.detail.find("hugetlb"), std::string::npos);
  EXPECT_NE(c.fix.find("mount -t cgroup -o hugetlb"), std::string::npos);
}

TEST(HostChecksTest, UnifiedNeedsCpuMemoryPids) {
  FakeHost host;
  host.files["/proc/self/mountinfo"] = std::string(kUnifiedMountinfo);
  host.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io memory hugetlb pids rdma misc\n";
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  EXPECT_EQ(Find(checks, "cgroups").detail, "cgroup v2 at /sys/fs/cgroup");
  EXPECT_EQ(Find(checks, "cgroup controllers").state, CheckState::kPass);
  host.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset io hugetlb pids\n";
  checks = RunHostChecks(host, {}, CheckSet::kStart);
  EXPECT_EQ(Find(checks, "cgroup controllers").state, CheckState::kFail);
  EXPECT_NE(Find(checks, "cgroup controllers").detail.find("cpu, memory"), std::string::npos);
}

TEST(HostChecksTest, CrunMissingOrBroken) {
  FakeHost host;
  HostCheckOptions o = Options();
  o.crun = "/nonexistent/crun";
  auto checks = RunHostChecks(host, o, CheckSet::kStart);
  const HostCheck& missing = Find(checks, "crun");
  EXPECT_EQ(missing.state, CheckState::kFail);
  EXPECT_TRUE(missing.blocks_tasks);
  EXPECT_NE(missing.fix.find("PADDOCK_CRUN"), std::string::npos);
  host.runs["/usr/bin/crun --version"] = {127, "error while loading shared libraries: libyajl.so.2\n"};
  checks = RunHostChecks(host, {}, CheckSet::kStart);
  EXPECT_EQ(Find(checks, "crun").state, CheckState::kFail);
  EXPECT_NE(Find(checks, "crun").detail.find("libyajl"), std::string::npos);
  EXPECT_NE(Find(checks, "crun").fix.find("apt-get install crun"), std::string::npos);
}

TEST(HostChecksTest, OverlayAndNftablesBlockTasks) {
  FakeHost host;
  host.files["/proc/filesystems"] = "nodev\tsysfs\n\text4\n";
  host.runs["/usr/bin/nft list tables"] = {1, "Error: Could not process rule: Operation not supported\n"};
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  EXPECT_EQ(Find(checks, "overlayfs").state, CheckState::kFail);
  EXPECT_EQ(Find(checks, "nftables").state, CheckState::kFail);
  EXPECT_NE(Find(checks, "nftables").detail.find("Operation not supported"), std::string::npos);
  const std::string summary = CannotRunSummary(checks);
  EXPECT_NE(summary.find("overlayfs: "), std::string::npos);
  EXPECT_NE(summary.find("; nftables: "), std::string::npos);
}

TEST(HostChecksTest, WhatOnlyDegradesWarnsAndNeverBlocks) {
  FakeHost host;
  host.files["/proc/sys/net/ipv4/ip_forward"] = "0\n";
  host.programs.erase("skopeo");
  host.programs.erase("/usr/bin/tini-static");
  host.programs.erase("iptables");
  host.free_bytes = uint64_t{2} << 30;  // under 4 GiB: a warning
  auto checks = RunHostChecks(host, {}, CheckSet::kStart);
  for (const char* name : {"ip_forward", "skopeo", "tini", "iptables", "free disk"}) {
    EXPECT_EQ(Find(checks, name).state, CheckState::kWarn) << name;
    EXPECT_FALSE(Find(checks, name).fix.empty()) << name;
  }
  EXPECT_TRUE(CanRunContainers(checks));
  host.free_bytes = uint64_t{100} << 20;
  checks = RunHostChecks(host, {}, CheckSet::kStart);
  EXPECT_EQ(Find(checks, "free disk").state, CheckState::kFail);
  EXPECT_TRUE(CanRunContainers(checks));  // doctor's exit status says it; tasks still start
}

TEST(HostChecksTest, ApiPortInUseOrServedByThisStateDirectory) {
  FakeHost host;
  host.busy_ports.insert(4566);
  auto checks = RunHostChecks(host, Options("127.0.0.1:4566"), CheckSet::kAll);
  const HostCheck& port = Find(checks, "api port");
  EXPECT_EQ(port.state, CheckState::kFail);
  EXPECT_NE(port.fix.find("--listen 127.0.0.1:4567"), std::string::npos) << port.fix;
  for (const char* bad : {"127.0.0.1", "127.0.0.1:http", "127.0.0.1:99999", "127.0.0.1:"})
    EXPECT_EQ(Find(RunHostChecks(host, Options(bad), CheckSet::kAll), "api port").state, CheckState::kFail) << bad;
  checks = RunHostChecks(host, Options("127.0.0.1:4566", "paddock up (pid 42)"), CheckSet::kAll);
  EXPECT_EQ(Find(checks, "api port").state, CheckState::kPass);
  EXPECT_NE(Find(checks, "api port").detail.find("pid 42"), std::string::npos);
}

TEST(HostChecksTest, FormatIsOneLineWithTheFix) {
  HostCheck c{"crun", CheckState::kFail, "'crun' is not an installed program", "apt-get install crun", true};
  EXPECT_EQ(FormatCheck(c), "FAIL  crun                'crun' is not an installed program — fix: apt-get install crun");
  c.state = CheckState::kPass;
  EXPECT_EQ(FormatCheck(c).find("fix"), std::string::npos);
}

TEST(HostChecksTest, ParseCgroupMounts) {
  CgroupMounts m = ParseCgroupMounts(kHybridMountinfo);
  EXPECT_TRUE(m.any);
  EXPECT_FALSE(m.unified);
  EXPECT_EQ(m.v2_hybrid, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m.netns_sysfs, "");
  m = ParseCgroupMounts(kUnifiedMountinfo);
  EXPECT_TRUE(m.unified);
  EXPECT_EQ(m.v2_hybrid, "");
  m = ParseCgroupMounts(kNetnsExecMountinfo);
  EXPECT_FALSE(m.any);
  EXPECT_EQ(m.netns_sysfs, "blue");
  EXPECT_FALSE(ParseCgroupMounts("").any);
}

}  // namespace
}  // namespace paddock::cli
