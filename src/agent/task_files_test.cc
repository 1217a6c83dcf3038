// task_files: the generated /etc files, the volume directories and the task group, in a temp dir
// with the fake runtime (which records groups).
#include "agent/task_files.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <boost/json.hpp>

namespace paddock::agent {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

// Records groups; everything else is unused here.
class GroupRecorder final : public runtime::Runtime {
 public:
  Status Create(const runtime::ContainerSpec&) override { return Internal("unused"); }
  Status Start(const runtime::ContainerId&) override { return Internal("unused"); }
  StatusOr<runtime::ExecResult> Exec(const runtime::ContainerId&, const std::vector<std::string>&,
                                     std::chrono::milliseconds) override {
    return Internal("unused");
  }
  Status Kill(const runtime::ContainerId&, int) override { return Internal("unused"); }
  StatusOr<runtime::ContainerState> State(const runtime::ContainerId&) override { return Internal("unused"); }
  StatusOr<runtime::ContainerState> Wait(const runtime::ContainerId&, std::chrono::milliseconds) override {
    return Internal("unused");
  }
  Status Delete(const runtime::ContainerId&, runtime::ForceDelete) override { return Internal("unused"); }
  StatusOr<std::vector<runtime::ContainerState>> List() override { return Internal("unused"); }
  StatusOr<std::string> CreateGroup(std::string_view name, const runtime::GroupLimits& limits) override {
    if (fail_create) return Internal("no cgroups here");
    groups[std::string(name)] = limits;
    return "/paddock/i/" + std::string(name);
  }
  Status DeleteGroup(std::string_view name) override {
    groups.erase(std::string(name));
    return OkStatus();
  }
  std::map<std::string, runtime::GroupLimits> groups;
  bool fail_create = false;
};

class TaskFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paddock-task-files-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.tasks_dir = (dir_ / "tasks").string();
    options_.pids_per_task = 4096;
    options_.host_resolv_conf = (dir_ / "resolv.conf").string();
    std::ofstream(options_.host_resolv_conf) << "# host\nnameserver 127.0.0.53\nnameserver 10.255.255.53\n"
                                                "search corp.example\noptions edns0\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  StatusOr<TaskFiles> Prepare(const json::object& definition, std::string ip = "10.0.1.5") {
    return PrepareTask(rt_, options_,
                       TaskFilesInput{.task_id = "0123abcd",
                                      .task_arn = "arn:aws:ecs:eu-west-1:123456789012:task/c/0123abcd",
                                      .definition = definition,
                                      .overrides = overrides_,
                                      .ip = std::move(ip),
                                      .cpu_units = 256,
                                      .memory_mib = 512});
  }

  fs::path dir_;
  TaskFilesOptions options_;
  GroupRecorder rt_;
  json::object overrides_;
};

TEST(TaskFilesText, DnsNamesHostsAndResolvConf) {
  EXPECT_EQ(PrivateDnsName("10.0.1.5", "us-east-1"), "ip-10-0-1-5.ec2.internal");
  EXPECT_EQ(PrivateDnsName("10.0.1.5", "eu-west-1"), "ip-10-0-1-5.eu-west-1.compute.internal");
  json::object def = Obj(R"({"name":"a","extraHosts":[{"hostname":"db","ipAddress":"10.1.1.1"},
                                                      {"hostname":"cache.internal","ipAddress":"10.1.1.2"}]})");
  EXPECT_EQ(HostsFile("10.0.1.5", "ip-10-0-1-5.ec2.internal", def),
            "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
            "ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
            "10.0.1.5\tip-10-0-1-5.ec2.internal ip-10-0-1-5\n10.1.1.1\tdb\n10.1.1.2\tcache.internal\n");
  EXPECT_EQ(HostsFile("", "", Obj(R"({"name":"a"})")).find("10."), std::string::npos);  // no address: no own line

  const std::string host = "nameserver 127.0.0.53\nnameserver ::1\n  nameserver 10.255.255.53 \nsearch corp\n";
  EXPECT_EQ(ResolvConf(Obj(R"({"name":"a"})"), host, "ec2.internal"),
            "nameserver 10.255.255.53\nsearch ec2.internal\n");  // loopback resolvers dropped
  EXPECT_EQ(ResolvConf(Obj(R"({"name":"a","dnsServers":["1.1.1.1","8.8.8.8"],"dnsSearchDomains":["a.b","c.d"]})"),
                       host, "ec2.internal"),
            "nameserver 1.1.1.1\nnameserver 8.8.8.8\nsearch a.b c.d\n");
  EXPECT_EQ(ResolvConf(Obj(R"({"name":"a"})"), "nameserver 127.0.0.1\n", ""),
            "nameserver 169.254.169.253\n");  // nothing usable: the VPC resolver
  // The node's DNS server serves the task's VPC: it, unless the container names its own.
  EXPECT_EQ(ResolvConf(Obj(R"({"name":"a"})"), host, "ec2.internal", "169.254.169.253"),
            "nameserver 169.254.169.253\nsearch ec2.internal\n");
  EXPECT_EQ(ResolvConf(Obj(R"({"name":"a","dnsServers":["1.1.1.1"]})"), host, "", "169.254.169.253"),
            "nameserver 1.1.1.1\n");
}

TEST_F(TaskFilesTest, WritesEtcFilesVolumesAndTheGroupAndCleansUpByName) {
  json::object def = Obj(R"({"volumes":[{"name":"shared"},{"name":"scratch","dockerVolumeConfiguration":{"scope":"task"}}],
      "containerDefinitions":[
        {"name":"web","extraHosts":[{"hostname":"db","ipAddress":"10.1.1.1"}],"dnsServers":["10.0.0.2"]},
        {"name":"side","hostname":"sidecar"}]})");
  auto files = Prepare(def);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  const fs::path task = dir_ / "tasks" / "0123abcd";
  EXPECT_EQ(files->dir, task.string());
  EXPECT_EQ(files->hostname, "ip-10-0-1-5.eu-west-1.compute.internal");
  EXPECT_EQ(files->cgroup_parent, "/paddock/i/0123abcd");
  ASSERT_EQ(rt_.groups.count("0123abcd"), 1u);
  EXPECT_EQ(rt_.groups["0123abcd"].cpu_limit_units, 256u);
  EXPECT_EQ(rt_.groups["0123abcd"].memory_limit_bytes, 512u << 20);
  EXPECT_EQ(rt_.groups["0123abcd"].pids_max, 4096u);
  // Private: nobody but root reaches the task's files (a setuid file a container left in a volume).
  for (const fs::path& d : {dir_ / "tasks", task}) {
    struct stat dst {};
    ASSERT_EQ(::stat(d.c_str(), &dst), 0);
    EXPECT_EQ(dst.st_mode & 07777, 0700u) << d;
  }

  const EtcFiles& web = files->etc_files.at("web");
  EXPECT_EQ(web.hosts, (task / "etc" / "web" / "hosts").string());
  EXPECT_NE(Read(web.hosts).find("10.0.1.5\tip-10-0-1-5.eu-west-1.compute.internal ip-10-0-1-5\n10.1.1.1\tdb\n"),
            std::string::npos);
  EXPECT_EQ(Read(web.resolv_conf), "nameserver 10.0.0.2\nsearch eu-west-1.compute.internal\n");
  EXPECT_EQ(Read(web.hostname), "ip-10-0-1-5.eu-west-1.compute.internal\n");
  const EtcFiles& side = files->etc_files.at("side");
  EXPECT_EQ(Read(side.hostname), "sidecar\n");
  EXPECT_NE(Read(side.hosts).find("10.0.1.5\tsidecar\n"), std::string::npos);
  EXPECT_EQ(Read(side.resolv_conf), "nameserver 10.255.255.53\nsearch eu-west-1.compute.internal\n");

  ASSERT_EQ(files->volumes.size(), 2u);
  EXPECT_EQ(files->volumes.at("shared"), (task / "volumes" / "shared").string());
  EXPECT_TRUE(fs::is_directory(files->volumes.at("scratch")));
  struct stat st {};
  ASSERT_EQ(::stat(files->volumes.at("shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_TRUE(fs::is_empty(files->volumes.at("shared")));

  TaskContext ctx;
  ApplyTaskFiles(*files, ctx);
  EXPECT_EQ(ctx.cgroup_parent, "/paddock/i/0123abcd");
  EXPECT_EQ(ctx.hostname, files->hostname);
  EXPECT_EQ(ctx.volumes, files->volumes);
  ASSERT_NE(ctx.container_definitions, nullptr);
  EXPECT_EQ(ctx.container_definitions->size(), 2u);
  EXPECT_EQ(ctx.etc_files.at("web").resolv_conf, web.resolv_conf);

  ASSERT_TRUE(CleanUpTask(rt_, options_, "0123abcd").ok());
  EXPECT_FALSE(fs::exists(task));
  EXPECT_TRUE(rt_.groups.empty());
  EXPECT_TRUE(CleanUpTask(rt_, options_, "0123abcd").ok());  // again: nothing to do
  EXPECT_EQ(CleanUpTask(rt_, options_, "../x").code(), StatusCode::kInvalidArgument);
}

TEST_F(TaskFilesTest, RefusalsLeaveNothingBehind) {
  auto refused = Prepare(Obj(
      R"({"containerDefinitions":[{"name":"a","environmentFiles":[{"value":"arn:aws:s3:::b/a.env","type":"s3"}]}]})"));
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(dir_ / "tasks" / "0123abcd"));
  EXPECT_TRUE(rt_.groups.empty());

  rt_.fail_create = true;  // fails after the files are written: they go again
  refused = Prepare(Obj(R"({"volumes":[{"name":"v"}],"containerDefinitions":[{"name":"a"}]})"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("the task's cgroup: no cgroups here"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "tasks" / "0123abcd"));

  options_.tasks_dir.clear();  // no directory: volumes cannot be made
  rt_.fail_create = false;
  refused = Prepare(Obj(R"({"volumes":[{"name":"v"}],"containerDefinitions":[{"name":"a"}]})"));
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  auto plain = Prepare(Obj(R"({"containerDefinitions":[{"name":"a"}]})"));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->etc_files.empty());
  EXPECT_EQ(plain->cgroup_parent, "/paddock/i/0123abcd");
}

// A task without a size still gets its group, for the pids bound alone; with no bound and no
// size, none.
TEST_F(TaskFilesTest, EveryTaskGetsItsPidsBound) {
  const json::object definition = Obj(R"({"containerDefinitions":[{"name":"a"}]})");
  TaskFilesInput in{.task_id = "0123abcd",
                    .task_arn = "arn:aws:ecs:eu-west-1:123456789012:task/c/0123abcd",
                    .definition = definition,
                    .overrides = overrides_,
                    .ip = "",
                    .cpu_units = 0,
                    .memory_mib = 0};
  auto sized_not = PrepareTask(rt_, options_, in);
  ASSERT_TRUE(sized_not.ok()) << sized_not.status().ToString();
  ASSERT_EQ(rt_.groups.count("0123abcd"), 1u);
  EXPECT_EQ(rt_.groups["0123abcd"].pids_max, 4096u);
  EXPECT_EQ(rt_.groups["0123abcd"].cpu_limit_units, 0u);
  ASSERT_TRUE(CleanUpTask(rt_, options_, "0123abcd").ok());
  options_.pids_per_task = 0;
  auto unbounded = PrepareTask(rt_, options_, in);
  ASSERT_TRUE(unbounded.ok());
  EXPECT_TRUE(rt_.groups.empty());
  EXPECT_EQ(unbounded->cgroup_parent, "");
}

TEST_F(TaskFilesTest, HostPathsBindOnlyWhereHostAccessIsAllowedAndAreNeverRemoved) {
  const fs::path host = dir_ / "host" / "srv";
  const json::object def = Obj(fmt::format(R"({{"volumes":[{{"name":"h","host":{{"sourcePath":"{}"}}}}],)"
                                           R"("containerDefinitions":[{{"name":"a","mountPoints":)"
                                           R"([{{"sourceVolume":"h","containerPath":"/data"}}]}}]}})",
                                           host.string()));
  auto fargate = Prepare(def);  // the default: refused (and always on Fargate)
  EXPECT_EQ(fargate.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(host));

  options_.host_access = HostAccess::kAllowed;
  auto ec2 = Prepare(def);
  ASSERT_TRUE(ec2.ok()) << ec2.status().ToString();
  EXPECT_EQ(ec2->volumes.at("h"), host.string());
  EXPECT_TRUE(fs::is_directory(host));  // created when missing, as the ECS agent does
  std::ofstream(host / "kept") << "x";
  ASSERT_TRUE(CleanUpTask(rt_, options_, "0123abcd").ok());
  EXPECT_FALSE(fs::exists(dir_ / "tasks" / "0123abcd"));
  EXPECT_TRUE(fs::exists(host / "kept"));  // the host's, not the task's

  auto relative = Prepare(Obj(R"({"volumes":[{"name":"h","host":{"sourcePath":"srv"}}],"containerDefinitions":[]})"));
  EXPECT_EQ(relative.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(TaskFilesTest, WithoutAnAddressThereIsNoTaskHostname) {
  auto files = Prepare(Obj(R"({"containerDefinitions":[{"name":"a"}]})"), "");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->hostname, "");
  EXPECT_TRUE(files->etc_files.at("a").hostname.empty());
  EXPECT_EQ(Read(files->etc_files.at("a").resolv_conf), "nameserver 10.255.255.53\n");
}

// Bridge (and none) tasks: Docker names a container it is given no hostname for by its id, and
// ECS on EC2 gives it none; the /etc/hosts line of the task's address carries that name.
TEST_F(TaskFilesTest, BridgeContainersAreNamedByTheirIdAsDockerNamesThem) {
  json::object def = Obj(R"({"containerDefinitions":[{"name":"web"},{"name":"side","hostname":"sidecar"}]})");
  auto files = PrepareTask(rt_, options_,
                           TaskFilesInput{.task_id = "0123abcd",
                                          .task_arn = "arn:aws:ecs:eu-west-1:123456789012:task/c/0123abcd",
                                          .definition = def,
                                          .overrides = overrides_,
                                          .ip = "172.31.255.9",
                                          .default_hostname = DefaultHostname::kContainerId,
                                          .container_ids = {{"web", "pdk-1a2b-0123abcd-0"}, {"side", "pdk-1a2b-0123abcd-1"}}});
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->hostname, "");  // no task-wide name: not ip-172-31-255-9.…
  const EtcFiles& web = files->etc_files.at("web");
  EXPECT_EQ(Read(web.hostname), "pdk-1a2b-0123abcd-0\n");
  EXPECT_NE(Read(web.hosts).find("\n172.31.255.9\tpdk-1a2b-0123abcd-0\n"), std::string::npos) << Read(web.hosts);
  EXPECT_EQ(Read(files->etc_files.at("side").hostname), "sidecar\n");  // the definition's wins

  TaskContext ctx;
  ApplyTaskFiles(*files, ctx);
  EXPECT_EQ(ctx.default_hostname, DefaultHostname::kContainerId);
  EXPECT_EQ(HostnameOf(Obj(R"({"name":"web"})"), ctx, "pdk-1a2b-0123abcd-0"), "pdk-1a2b-0123abcd-0");
}

// What the metadata endpoint lists as a container's Volumes: its binds, also for a task an earlier
// agent prepared (nothing but the definition is needed).
TEST_F(TaskFilesTest, ContainerVolumesAreTheContainersVolumeBinds) {
  options_.host_access = HostAccess::kAllowed;
  json::object def = Obj(R"({"volumes":[{"name":"data"},{"name":"logs","host":{"sourcePath":"/srv/logs"}}],
      "containerDefinitions":[
        {"name":"web","mountPoints":[{"sourceVolume":"data","containerPath":"/data"},
                                     {"sourceVolume":"logs","containerPath":"/var/log/app","readOnly":true}]},
        {"name":"side","volumesFrom":[{"sourceContainer":"web"}]},
        {"name":"bare"}]})");
  const std::string data = (dir_ / "tasks" / "0123abcd" / "volumes" / "data").string();
  std::vector<runtime::BindMount> web = ContainerVolumes(options_, def, "0123abcd", "web");
  ASSERT_EQ(web.size(), 2u);
  EXPECT_EQ(web[0].source, data);
  EXPECT_EQ(web[0].destination, "/data");
  EXPECT_EQ(web[1].source, "/srv/logs");
  EXPECT_EQ(web[1].destination, "/var/log/app");
  std::vector<runtime::BindMount> side = ContainerVolumes(options_, def, "0123abcd", "side");
  ASSERT_EQ(side.size(), 2u);  // volumesFrom: the source's mounts
  EXPECT_EQ(side[0].source, data);
  EXPECT_TRUE(ContainerVolumes(options_, def, "0123abcd", "bare").empty());
  EXPECT_TRUE(ContainerVolumes(options_, def, "0123abcd", "nope").empty());
  options_.tasks_dir.clear();
  EXPECT_TRUE(ContainerVolumes(options_, def, "0123abcd", "web").empty());
}

}  // namespace
}  // namespace paddock::agent
