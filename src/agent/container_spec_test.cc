// container_spec: every container-definition option → the ContainerSpec fields it sets, and
// CheckSupported's refusals. Pure: no files, no runtime.
#include "agent/container_spec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace paddock::agent {
namespace {
namespace json = boost::json;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

class ContainerSpecTest : public ::testing::Test {
 protected:
  ContainerSpecTest() {
    image_.config.entrypoint = {"/entry"};
    image_.config.cmd = {"serve"};
    image_.config.env = {"PATH=/bin", "A=image"};
    image_.config.working_dir = "/app";
    image_.config.user = "1:1";
    image_.layer_dirs = {"/l/base", "/l/top"};
  }

  runtime::ContainerSpec Build(const json::object& def, const json::object& overrides = {}) {
    return BuildContainerSpec(ContainerInput{runtime::ContainerId("pdk-x-t-0"), def, overrides, image_, "/logs/c.log"},
                              task_);
  }

  images::ResolvedImage image_;
  TaskContext task_{.task_arn = "arn:aws:ecs:us-east-1:123456789012:task/c/t",
                    .cpu_units = 512,
                    .memory_mib = 1024,
                    .netns_path = "/var/run/netns/pdk-t"};
};

TEST_F(ContainerSpecTest, BasicsMergeImageDefinitionAndOverride) {
  runtime::ContainerSpec cs = Build(Obj(R"({"name":"web","environment":[{"name":"A","value":"def"}],
      "readonlyRootFilesystem":true,"memoryReservation":64,"cpu":128})"),
                                    Obj(R"({"command":["x"],"environment":[{"name":"B","value":"ov"}]})"));
  EXPECT_EQ(cs.id.str(), "pdk-x-t-0");
  EXPECT_EQ(cs.lower_dirs, (std::vector<std::string>{"/l/top", "/l/base"}));
  EXPECT_EQ(cs.args, (std::vector<std::string>{"/entry", "x"}));
  EXPECT_EQ(cs.env, (std::vector<std::string>{"PATH=/bin", "A=def", "B=ov"}));
  EXPECT_EQ(cs.working_dir, "/app");
  EXPECT_EQ(cs.user, "1:1");
  EXPECT_TRUE(cs.readonly_rootfs);
  EXPECT_EQ(cs.network, runtime::NetworkMode::kJoin);
  EXPECT_EQ(cs.netns_path, "/var/run/netns/pdk-t");
  EXPECT_EQ(cs.memory_reservation_bytes, 64u << 20);
  EXPECT_EQ(cs.cpu_shares, 128u);
  EXPECT_EQ(cs.stdout_path, "/logs/c.log");
  EXPECT_EQ(cs.annotations.at("com.amazonaws.ecs.container-name"), "web");
}

TEST_F(ContainerSpecTest, WithoutATaskCgroupEachContainerIsCappedAtTheTaskSize) {
  runtime::ContainerSpec cs = Build(Obj(R"({"name":"web"})"));
  EXPECT_EQ(cs.cgroup_parent, "");
  EXPECT_EQ(cs.memory_limit_bytes, 1024u << 20);
  EXPECT_EQ(cs.cpu_limit_units, 512u);
}

TEST_F(ContainerSpecTest, WithATaskCgroupContainersKeepOnlyTheirOwnLimits) {
  task_.cgroup_parent = "/paddock/i/t";
  runtime::ContainerSpec cs = Build(Obj(R"({"name":"web"})"));
  EXPECT_EQ(cs.cgroup_parent, "/paddock/i/t");
  EXPECT_EQ(cs.memory_limit_bytes, 0u);  // the task's cgroup bounds it
  EXPECT_EQ(cs.cpu_limit_units, 0u);
  cs = Build(Obj(R"({"name":"web","memory":256,"memoryReservation":128,"cpu":256})"), Obj(R"({"memory":300})"));
  EXPECT_EQ(cs.memory_limit_bytes, 300u << 20);  // the override wins
  EXPECT_EQ(cs.memory_reservation_bytes, 128u << 20);
  EXPECT_EQ(cs.cpu_shares, 256u);
  EXPECT_EQ(cs.cpu_limit_units, 0u);
}

TEST_F(ContainerSpecTest, HostnameIsTheDefinitionsElseTheTasks) {
  EXPECT_EQ(Build(Obj(R"({"name":"web"})")).hostname, "");
  task_.hostname = "ip-10-0-0-5.ec2.internal";
  EXPECT_EQ(Build(Obj(R"({"name":"web"})")).hostname, "ip-10-0-0-5.ec2.internal");
  EXPECT_EQ(Build(Obj(R"({"name":"web","hostname":"box"})")).hostname, "box");
  // Bridge and none: Docker's name for a container given none, its id.
  task_.hostname.clear();
  task_.default_hostname = DefaultHostname::kContainerId;
  EXPECT_EQ(Build(Obj(R"({"name":"web"})")).hostname, "pdk-x-t-0");
  EXPECT_EQ(Build(Obj(R"({"name":"web","hostname":"box"})")).hostname, "box");
}

TEST_F(ContainerSpecTest, EtcFilesAreBoundReadWriteUnlessTheRootIsReadOnly) {
  task_.etc_files["web"] = EtcFiles{"/t/etc/web/hosts", "/t/etc/web/resolv.conf", "/t/etc/web/hostname"};
  task_.etc_files["other"] = EtcFiles{"/t/etc/other/hosts", "", ""};
  runtime::ContainerSpec cs = Build(Obj(R"({"name":"web"})"));
  ASSERT_EQ(cs.binds.size(), 3u);
  EXPECT_EQ(cs.binds[0].source, "/t/etc/web/hosts");
  EXPECT_EQ(cs.binds[0].destination, "/etc/hosts");
  EXPECT_FALSE(cs.binds[0].read_only);
  EXPECT_EQ(cs.binds[1].destination, "/etc/resolv.conf");
  EXPECT_EQ(cs.binds[2].destination, "/etc/hostname");
  cs = Build(Obj(R"({"name":"web","readonlyRootFilesystem":true})"));
  for (const auto& b : cs.binds) EXPECT_TRUE(b.read_only) << b.destination;
  cs = Build(Obj(R"({"name":"other"})"));
  ASSERT_EQ(cs.binds.size(), 1u);  // empty paths are not bound
  EXPECT_EQ(cs.binds[0].destination, "/etc/hosts");
}

TEST_F(ContainerSpecTest, MountPointsAndVolumesFromBecomeBinds) {
  task_.volumes = {{"data", "/t/volumes/data"}, {"cache", "/t/volumes/cache"}, {"conf", "/t/volumes/conf"}};
  json::array defs = json::parse(R"([
    {"name":"writer","mountPoints":[{"sourceVolume":"data","containerPath":"/data/sub"},
                                    {"sourceVolume":"cache","containerPath":"/cache","readOnly":true}]},
    {"name":"middle","volumesFrom":[{"sourceContainer":"writer"}],
     "mountPoints":[{"sourceVolume":"conf","containerPath":"/data"}]},
    {"name":"reader","volumesFrom":[{"sourceContainer":"middle","readOnly":true}]},
    {"name":"loop","volumesFrom":[{"sourceContainer":"loop"}]}])").as_array();
  task_.container_definitions = &defs;

  runtime::ContainerSpec writer = Build(defs[0].as_object());
  ASSERT_EQ(writer.binds.size(), 2u);
  EXPECT_EQ(writer.binds[0].source, "/t/volumes/cache");  // /cache before /data/sub (depth order)
  EXPECT_TRUE(writer.binds[0].read_only);
  EXPECT_EQ(writer.binds[1].source, "/t/volumes/data");
  EXPECT_EQ(writer.binds[1].destination, "/data/sub");
  EXPECT_FALSE(writer.binds[1].read_only);

  // Its own mount, then the source's (parents first: /data before /data/sub), modes kept.
  runtime::ContainerSpec middle = Build(defs[1].as_object());
  ASSERT_EQ(middle.binds.size(), 3u);
  EXPECT_EQ(middle.binds[0].destination, "/data");
  EXPECT_EQ(middle.binds[1].destination, "/cache");
  EXPECT_TRUE(middle.binds[1].read_only);
  EXPECT_EQ(middle.binds[2].destination, "/data/sub");
  EXPECT_FALSE(middle.binds[2].read_only);

  // volumesFrom readOnly: everything it brings (transitively) is read-only.
  runtime::ContainerSpec reader = Build(defs[2].as_object());
  ASSERT_EQ(reader.binds.size(), 3u);
  for (const auto& b : reader.binds) EXPECT_TRUE(b.read_only) << b.destination;

  EXPECT_TRUE(Build(defs[3].as_object()).binds.empty());  // a loop ends
}

TEST_F(ContainerSpecTest, LinuxParametersAndUlimits) {
  runtime::ContainerSpec cs = Build(Obj(R"({"name":"web",
      "linuxParameters":{"capabilities":{"add":["SYS_PTRACE"],"drop":["NET_RAW","CHOWN"]},
                         "initProcessEnabled":true,"sharedMemorySize":128,
                         "tmpfs":[{"containerPath":"/run","size":16,"mountOptions":["noexec","mode=1777"]}]},
      "ulimits":[{"name":"nofile","softLimit":1024,"hardLimit":4096}]})"));
  EXPECT_EQ(cs.cap_add, (std::vector<std::string>{"SYS_PTRACE"}));
  EXPECT_EQ(cs.cap_drop, (std::vector<std::string>{"NET_RAW", "CHOWN"}));
  EXPECT_TRUE(cs.init_process_enabled);
  EXPECT_EQ(cs.shm_size_bytes, 128u << 20);
  ASSERT_EQ(cs.tmpfs.size(), 1u);
  EXPECT_EQ(cs.tmpfs[0].destination, "/run");
  EXPECT_EQ(cs.tmpfs[0].size_bytes, 16u << 20);
  EXPECT_EQ(cs.tmpfs[0].options, (std::vector<std::string>{"noexec", "mode=1777"}));
  ASSERT_EQ(cs.ulimits.size(), 1u);
  EXPECT_EQ(cs.ulimits[0].name, "nofile");
  EXPECT_EQ(cs.ulimits[0].soft, 1024u);
  EXPECT_EQ(cs.ulimits[0].hard, 4096u);

  cs = Build(Obj(R"({"name":"web"})"));
  EXPECT_TRUE(cs.cap_add.empty());
  EXPECT_TRUE(cs.cap_drop.empty());
  EXPECT_FALSE(cs.init_process_enabled);
  EXPECT_EQ(cs.shm_size_bytes, 0u);
  EXPECT_TRUE(cs.tmpfs.empty());
  EXPECT_TRUE(cs.ulimits.empty());
}

// Host-level grants reach the runtime as they are (CheckSupported decided whether they may).
TEST_F(ContainerSpecTest, PrivilegedAndHostNamespacesReachTheRuntime) {
  runtime::ContainerSpec cs = Build(Obj(R"({"name":"web"})"));
  EXPECT_FALSE(cs.privileged);
  EXPECT_FALSE(cs.host_pid);
  EXPECT_FALSE(cs.host_ipc);
  task_.host_pid = true;
  task_.host_ipc = true;
  cs = Build(Obj(R"({"name":"web","privileged":true,"linuxParameters":{"devices":[
      {"hostPath":"/dev/fuse"},{"hostPath":"/dev/kmsg","containerPath":"/dev/k","permissions":["read"]}]}})"));
  EXPECT_TRUE(cs.privileged);
  EXPECT_TRUE(cs.host_pid);
  EXPECT_TRUE(cs.host_ipc);
  ASSERT_EQ(cs.devices.size(), 2u);
  EXPECT_EQ(cs.devices[0].host_path, "/dev/fuse");
  EXPECT_EQ(cs.devices[0].container_path, "");
  EXPECT_TRUE(cs.devices[0].read && cs.devices[0].write && cs.devices[0].mknod);  // none given: all
  EXPECT_EQ(cs.devices[1].container_path, "/dev/k");
  EXPECT_TRUE(cs.devices[1].read);
  EXPECT_FALSE(cs.devices[1].write || cs.devices[1].mknod);
}

// The message CheckSupported gives for a task definition (empty: OK).
std::string Refusal(std::string_view definition, std::string_view overrides = "{}") {
  Status s = CheckSupported(Obj(definition), Obj(overrides));
  return s.ok() ? std::string() : s.message();
}

TEST(CheckSupportedTest, AcceptsWhatTheAgentProvides) {
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","image":"x"}]})"), "");
  EXPECT_EQ(Refusal(R"({"volumes":[{"name":"v"},{"name":"w","host":{}},
                                   {"name":"d","dockerVolumeConfiguration":{"scope":"task","driver":"local"}}],
      "containerDefinitions":[{"name":"a","mountPoints":[{"sourceVolume":"v","containerPath":"/v"},
                                                         {"sourceVolume":"d","containerPath":"/d"}],
                               "logConfiguration":{"logDriver":"json-file"},
                               "linuxParameters":{"tmpfs":[{"containerPath":"/t","size":1}]}},
                              {"name":"b","volumesFrom":[{"sourceContainer":"a","readOnly":true}]}]})"),
            "");
}

TEST(CheckSupportedTest, RefusesWhatItCannotProvide) {
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a",
      "environmentFiles":[{"value":"arn:aws:s3:::bucket/a.env","type":"s3"}]}]})"),
            "container 'a': failed to download env files: environmentFiles from Amazon S3 (arn:aws:s3:::bucket/a.env) "
            "cannot be fetched: Paddock has no S3 yet; put the variables in environment instead");
  EXPECT_NE(Refusal(R"({"containerDefinitions":[{"name":"a"}]})",
                    R"({"containerOverrides":[{"name":"a","environmentFiles":[{"value":"arn:aws:s3:::b/o.env","type":"s3"}]}]})")
                .find("arn:aws:s3:::b/o.env"),
            std::string::npos);
  // Secrets are the control plane's to fetch before this check (Agent: FetchExecutionResources).
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a",
      "secrets":[{"name":"P","valueFrom":"arn:aws:ssm:us-east-1:123456789012:parameter/p"}]}]})"),
            "");
  // awslogs is the driver's (agent/awslogs.h); other drivers are refused.
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","logConfiguration":{"logDriver":"awslogs"}}]})"), "");
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","logConfiguration":{"logDriver":"splunk"}}]})"),
            "container 'a': failed to initialize logging driver: log driver 'splunk' is not supported yet (a "
            "container's output is kept on the node: paddock logs TASK)");
  // So are repositoryCredentials (the pull authenticates with what it fetched).
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","repositoryCredentials":{"credentialsParameter":"x"}}]})"), "");
  EXPECT_NE(Refusal(R"({"containerDefinitions":[{"name":"a","linuxParameters":{"devices":[{"hostPath":"/dev/fuse"}]}}]})"), "");
  EXPECT_TRUE(CheckSupported(Obj(R"({"containerDefinitions":[{"name":"a","linuxParameters":{"devices":[{"hostPath":"/dev/fuse"}]}}]})"),
                             Obj("{}"), HostAccess::kAllowed)
                  .ok());
  EXPECT_EQ(CheckSupported(Obj(R"({"containerDefinitions":[{"name":"a","linuxParameters":{"devices":[{"hostPath":"fuse"}]}}]})"),
                           Obj("{}"), HostAccess::kAllowed)
                .message(),
            "container 'a': device hostPath 'fuse' must be absolute");
  EXPECT_EQ(Refusal(R"({"volumes":[{"name":"e","efsVolumeConfiguration":{"fileSystemId":"fs-1"}}],
                       "containerDefinitions":[{"name":"a"}]})"),
            "volume 'e': Amazon EFS volumes (efsVolumeConfiguration) are not supported");
  EXPECT_NE(Refusal(R"({"volumes":[{"name":"f","fsxWindowsFileServerVolumeConfiguration":{}}],"containerDefinitions":[]})"), "");
  EXPECT_NE(Refusal(R"({"volumes":[{"name":"c","configuredAtLaunch":true}],"containerDefinitions":[]})"), "");
  EXPECT_NE(Refusal(R"({"volumes":[{"name":"s","dockerVolumeConfiguration":{"scope":"shared"}}],"containerDefinitions":[]})"), "");
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","linuxParameters":{"capabilities":{"add":["SYS_PTRACE"],"drop":["ALL"]}}}]})"), "");
  EXPECT_NE(Refusal(R"({"volumes":[{"name":"s","dockerVolumeConfiguration":{"driver":"rexray"}}],"containerDefinitions":[]})"), "");
}

// Host-level grants run only where the instance's operator allowed them (HostAccess), whatever
// the instance's kind: the agent's own check behind placement's attribute check.
TEST(CheckSupportedTest, HostLevelGrantsOnlyWhereHostAccessIsAllowed) {
  const std::string suffix =
      ": host-level access is not allowed on this container instance (its operator allows it with host_access = "
      "true in [[ec2_instance]] or paddock agent --allow-host-access; Fargate never does)";
  const std::pair<std::string, std::string> grants[] = {
      {R"({"volumes":[{"name":"h","host":{"sourcePath":"/"}}],
           "containerDefinitions":[{"name":"a","mountPoints":[{"sourceVolume":"h","containerPath":"/host"}]}]})",
       "volume 'h' binds the host path '/'"},
      {R"({"containerDefinitions":[{"name":"a","linuxParameters":{"capabilities":{"add":["SYS_ADMIN"]}}}]})",
       "container 'a' adds the capability SYS_ADMIN"},
      {R"({"containerDefinitions":[{"name":"a","linuxParameters":{"capabilities":{"add":["ALL"]}}}]})",
       "container 'a' adds the capability ALL"},
      {R"({"containerDefinitions":[{"name":"a","privileged":true}]})", "container 'a' is privileged"},
      {R"({"pidMode":"host","containerDefinitions":[{"name":"a"}]})", "pidMode 'host'"},
      {R"({"ipcMode":"host","containerDefinitions":[{"name":"a"}]})", "ipcMode 'host'"},
      {R"({"networkMode":"host","containerDefinitions":[{"name":"a"}]})", "networkMode 'host'"},
      {R"({"containerDefinitions":[{"name":"a","linuxParameters":{"devices":[{"hostPath":"/dev/kmsg"}]}}]})",
       "container 'a' maps the host device '/dev/kmsg'"},
      {R"({"containerDefinitions":[{"name":"a","ulimits":[{"name":"rtprio","softLimit":50,"hardLimit":50}]}]})",
       "container 'a' sets the ulimit rtprio to 50 (real-time scheduling)"},
  };
  for (const auto& [def, what] : grants) {
    Status refused = CheckSupported(Obj(def), Obj("{}"), HostAccess::kRefused);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << def;
    EXPECT_EQ(refused.message(), what + suffix) << def;
  }
  for (int i : {0, 1, 2, 4, 5, 6, 8}) {
    EXPECT_TRUE(CheckSupported(Obj(grants[i].first), Obj("{}"), HostAccess::kAllowed).ok()) << grants[i].first;
  }
  EXPECT_TRUE(CheckSupported(Obj(R"({"containerDefinitions":[{"name":"a","ulimits":[{"name":"rtprio","softLimit":0,"hardLimit":0},
      {"name":"rttime","softLimit":100,"hardLimit":100}]}]})"),
                             Obj("{}"), HostAccess::kRefused)
                  .ok());
  EXPECT_EQ(CheckSupported(Obj(R"({"volumes":[{"name":"h","host":{"sourcePath":"srv"}}],"containerDefinitions":[]})"),
                           Obj("{}"), HostAccess::kAllowed)
                .message(),
            "volume 'h': host paths that are not absolute ('srv') are not supported");
}

// Definitions stored before registration checked these values are refused at launch.
TEST(CheckSupportedTest, RefusesValuesThatWouldForgeFileLinesOrVariables) {
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","dnsServers":["8.8.8.8\nnameserver 6.6.6.6"]}]})"),
            "Invalid dnsServers entry for container 'a': '8.8.8.8\\x0anameserver 6.6.6.6' is not an IPv4 or IPv6 "
            "address.");
  EXPECT_NE(Refusal(R"({"containerDefinitions":[{"name":"a","environment":[{"name":"A=B","value":"1"}]}]})"), "");
  EXPECT_NE(Refusal(R"({"containerDefinitions":[{"name":"a"}]})",
                    R"({"containerOverrides":[{"name":"a","environment":[{"name":"LD_PRELOAD=/x","value":"1"}]}]})"),
            "");
}

TEST(CheckSupportedTest, RefusesReferencesThatDoNotResolve) {
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","mountPoints":[{"sourceVolume":"nope","containerPath":"/x"}]}]})"),
            "container 'a': mountPoints: no volume named 'nope' in the task");
  EXPECT_EQ(Refusal(R"({"volumes":[{"name":"v"}],
      "containerDefinitions":[{"name":"a","mountPoints":[{"sourceVolume":"v","containerPath":"x"}]}]})"),
            "container 'a': mountPoints: containerPath 'x' must be absolute");
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","volumesFrom":[{"sourceContainer":"b"}]}]})"),
            "container 'a': volumesFrom: no other container named 'b' in the task");
  EXPECT_NE(Refusal(R"({"containerDefinitions":[{"name":"a","volumesFrom":[{"sourceContainer":"a"}]}]})"), "");
  EXPECT_EQ(Refusal(R"({"containerDefinitions":[{"name":"a","volumesFrom":[{"sourceContainer":"b"}]},
                                                {"name":"b","volumesFrom":[{"sourceContainer":"a"}]}]})"),
            "container 'a': volumesFrom forms a cycle");
  EXPECT_NE(Refusal(R"({"containerDefinitions":[{"name":"a","linuxParameters":{"tmpfs":[{"containerPath":"rel","size":1}]}}]})"), "");
  EXPECT_NE(Refusal(R"({"volumes":[{}],"containerDefinitions":[]})"), "");
}

}  // namespace
}  // namespace paddock::agent
