#include "agent/metadata/metadata.h"

#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>
#include <fmt/core.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/client.h"

namespace paddock::agent::metadata {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kTaskArn[] = "arn:aws:ecs:us-east-1:123456789012:task/default/0123456789abcdef0123456789abcdef";

// A running Fargate task as ecs/task writes it (DescribeTasks' Task shape).
std::string TaskJson(std::string_view last_status = "RUNNING") {
  return fmt::format(
      R"({{"attachments":[{{"id":"att-1","type":"ElasticNetworkInterface","status":"ATTACHED","details":[)"
      R"({{"name":"subnetId","value":"subnet-1"}},{{"name":"networkInterfaceId","value":"eni-1"}},)"
      R"({{"name":"macAddress","value":"02:70:ac:1f:00:05"}},)"
      R"({{"name":"privateDnsName","value":"ip-172-31-0-5.ec2.internal"}},)"
      R"({{"name":"privateIPv4Address","value":"172.31.0.5"}}]}}],)"
      R"("availabilityZone":"us-east-1a","clusterArn":"arn:aws:ecs:us-east-1:123456789012:cluster/default",)"
      R"("containers":[)"
      R"({{"containerArn":"arn:aws:ecs:us-east-1:123456789012:container/default/0123456789abcdef0123456789abcdef/c1",)"
      R"("taskArn":"{0}","name":"web","image":"busybox:latest","lastStatus":"RUNNING",)"
      R"("networkBindings":[{{"bindIP":"0.0.0.0","containerPort":80,"hostPort":80,"protocol":"tcp"}}],)"
      R"("healthStatus":"HEALTHY","networkInterfaces":[{{"attachmentId":"att-1","privateIpv4Address":"172.31.0.5"}}]}},)"
      R"({{"containerArn":"arn:aws:ecs:us-east-1:123456789012:container/default/0123456789abcdef0123456789abcdef/c2",)"
      R"("taskArn":"{0}","name":"side","image":"busybox","lastStatus":"STOPPED","exitCode":0,"networkBindings":[],)"
      R"("healthStatus":"UNKNOWN","networkInterfaces":[{{"attachmentId":"att-1","privateIpv4Address":"172.31.0.5"}}]}},)"
      R"({{"name":"later","image":"busybox","lastStatus":"PENDING","networkBindings":[],"healthStatus":"UNKNOWN",)"
      R"("networkInterfaces":[]}}],)"
      R"("cpu":"256","createdAt":1764504000.5,"desiredStatus":"RUNNING","group":"service:web-svc",)"
      R"("lastStatus":"{1}","launchType":"FARGATE","memory":"512","pullStartedAt":1764504001.123,)"
      R"("pullStoppedAt":1764504002.5,"ephemeralStorage":{{"sizeInGiB":20}},"taskArn":"{0}",)"
      R"("taskDefinitionArn":"arn:aws:ecs:us-east-1:123456789012:task-definition/web:7","version":4}})",
      kTaskArn, last_status);
}

TimePoint At(int64_t ns) { return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(ns))); }

TaskFacts Facts() {
  TaskFacts f;
  f.task_json = TaskJson();
  ContainerFacts web;
  web.name = "web";
  web.docker_id = "pdk-1a2b-0123456789abcdef0123456789abcdef-0";
  web.pid = 4242;
  web.created_at = At(1764504003'044527186);
  web.started_at = At(1764504003'500000000);
  web.cpu_units = 128;
  web.memory_mib = 256;
  web.image_id = "sha256:25f3695bedfb454a50f12d127839a68ad3caf91e451c1da073db34c542c4d2cb";
  web.log_driver = "awslogs";
  web.log_options = {{"awslogs-group", "/ecs/web"}};
  web.docker_labels = {{"team", "blue"}};
  web.restart_count = 1;
  web.volumes = {{"/var/lib/paddock/tasks/0123456789abcdef0123456789abcdef/volumes/data", "/data"}};
  ContainerFacts side;
  side.name = "side";
  side.docker_id = "pdk-1a2b-0123456789abcdef0123456789abcdef-1";
  side.created_at = At(1764504003'000000000);
  side.started_at = At(1764504003'100000000);
  side.finished_at = At(1764504004'000000000);
  ContainerFacts later;
  later.name = "later";
  f.containers = {web, side, later};
  f.prefix_length = 20;
  f.gateway = "172.31.0.1";
  f.dns_servers = {"169.254.169.253"};
  f.dns_search = {"ec2.internal"};
  f.ephemeral_utilized_mib = 12;
  return f;
}

json::object Parse(std::string_view s) { return json::parse(s).as_object(); }

// The documents ECS's agent serves for this task (docs: "Task metadata v4 examples for Fargate").
constexpr char kLabels[] =
    R"("Labels":{"com.amazonaws.ecs.cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/default",)"
    R"("com.amazonaws.ecs.container-name":"web",)"
    R"("com.amazonaws.ecs.task-arn":"arn:aws:ecs:us-east-1:123456789012:task/default/0123456789abcdef0123456789abcdef",)"
    R"("com.amazonaws.ecs.task-definition-family":"web","com.amazonaws.ecs.task-definition-version":"7",)"
    R"("team":"blue"})";

const std::string kWebV4 =
    std::string(R"({"DockerId":"pdk-1a2b-0123456789abcdef0123456789abcdef-0","Name":"web","DockerName":"web",)"
                R"("Image":"busybox:latest",)"
                R"("ImageID":"sha256:25f3695bedfb454a50f12d127839a68ad3caf91e451c1da073db34c542c4d2cb",)"
                R"("Ports":[{"ContainerPort":80,"Protocol":"tcp","HostPort":80,"HostIp":"0.0.0.0"}],)") +
    kLabels +
    R"(,"DesiredStatus":"RUNNING","KnownStatus":"RUNNING","Limits":{"CPU":128,"Memory":256},)"
    R"("CreatedAt":"2025-11-30T12:00:03.044527186Z","StartedAt":"2025-11-30T12:00:03.5Z","Type":"NORMAL",)"
    R"("Health":{"status":"HEALTHY"},)"
    R"("Volumes":[{"Source":"/var/lib/paddock/tasks/0123456789abcdef0123456789abcdef/volumes/data",)"
    R"("Destination":"/data"}],)"
    R"("LogDriver":"awslogs","LogOptions":{"awslogs-group":"/ecs/web"},)"
    R"("ContainerARN":"arn:aws:ecs:us-east-1:123456789012:container/default/0123456789abcdef0123456789abcdef/c1",)"
    R"("Networks":[{"NetworkMode":"awsvpc","IPv4Addresses":["172.31.0.5"],"AttachmentIndex":0,)"
    R"("MACAddress":"02:70:ac:1f:00:05","IPv4SubnetCIDRBlock":"172.31.0.0/20",)"
    R"("DomainNameServers":["169.254.169.253"],"DomainNameSearchList":["ec2.internal"],)"
    R"("PrivateDNSName":"ip-172-31-0-5.ec2.internal","SubnetGatewayIpv4Address":"172.31.0.1/20"}],)"
    R"("RestartCount":1})";

const std::string kSideV4 =
    R"({"DockerId":"pdk-1a2b-0123456789abcdef0123456789abcdef-1","Name":"side","DockerName":"side",)"
    R"("Image":"busybox","ImageID":"",)"
    R"("Labels":{"com.amazonaws.ecs.cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/default",)"
    R"("com.amazonaws.ecs.container-name":"side",)"
    R"("com.amazonaws.ecs.task-arn":"arn:aws:ecs:us-east-1:123456789012:task/default/0123456789abcdef0123456789abcdef",)"
    R"("com.amazonaws.ecs.task-definition-family":"web","com.amazonaws.ecs.task-definition-version":"7"},)"
    R"("DesiredStatus":"RUNNING","KnownStatus":"STOPPED","ExitCode":0,"Limits":{"CPU":2,"Memory":0},)"
    R"("CreatedAt":"2025-11-30T12:00:03Z","StartedAt":"2025-11-30T12:00:03.1Z",)"
    R"("FinishedAt":"2025-11-30T12:00:04Z","Type":"NORMAL",)"
    R"("ContainerARN":"arn:aws:ecs:us-east-1:123456789012:container/default/0123456789abcdef0123456789abcdef/c2",)"
    R"("Networks":[{"NetworkMode":"awsvpc","IPv4Addresses":["172.31.0.5"],"AttachmentIndex":0,)"
    R"("MACAddress":"02:70:ac:1f:00:05","IPv4SubnetCIDRBlock":"172.31.0.0/20",)"
    R"("DomainNameServers":["169.254.169.253"],"DomainNameSearchList":["ec2.internal"],)"
    R"("PrivateDNSName":"ip-172-31-0-5.ec2.internal","SubnetGatewayIpv4Address":"172.31.0.1/20"}]})";

const std::string kTaskHead =
    R"({"Cluster":"arn:aws:ecs:us-east-1:123456789012:cluster/default",)"
    R"("TaskARN":"arn:aws:ecs:us-east-1:123456789012:task/default/0123456789abcdef0123456789abcdef",)"
    R"("Family":"web","Revision":"7","DesiredStatus":"RUNNING","KnownStatus":"RUNNING",)"
    R"("Limits":{"CPU":0.25,"Memory":512},"PullStartedAt":"2025-11-30T12:00:01.123Z",)"
    R"("PullStoppedAt":"2025-11-30T12:00:02.5Z","AvailabilityZone":"us-east-1a",)";
const std::string kTaskMiddle = R"("LaunchType":"FARGATE","Containers":[)" + kWebV4 + "," + kSideV4 +
                                R"(],"ServiceName":"web-svc",)";
const std::string kTaskTail = R"("EphemeralStorageMetrics":{"Utilized":12,"Reserved":20480},"FaultInjectionEnabled":false})";
const std::string kTaskV4 = kTaskHead + kTaskMiddle + kTaskTail;

// The ServiceTest's clock: a node whose NTP daemon keeps it within 0.5458 ms.
ClockDrift FakeClock() { return ClockDrift{At(1764504010'000000000), 0.5458, true}; }
constexpr char kClockDrift[] =
    R"("ClockDrift":{"ClockErrorBound":0.5458,"ReferenceTimestamp":"2025-11-30T12:00:10Z",)"
    R"("ClockSynchronizationStatus":"SYNCHRONIZED"},)";
// What the service answers for /task: the node's clock is read for it.
const std::string kTaskV4Served = kTaskHead + kTaskMiddle + kClockDrift + kTaskTail;

TEST(FormatTimeTest, IsGosRfc3339Nano) {
  EXPECT_EQ(FormatTime(At(1764504003'044527186)), "2025-11-30T12:00:03.044527186Z");
  EXPECT_EQ(FormatTime(At(1764504003'500000000)), "2025-11-30T12:00:03.5Z");
  EXPECT_EQ(FormatTime(At(1764504003'000000000)), "2025-11-30T12:00:03Z");
  EXPECT_EQ(FormatTime(At(0)), "1970-01-01T00:00:00Z");
}

TEST(SerializeTest, WritesNumbersWithoutExponents) {
  EXPECT_EQ(Serialize(json::object{{"a", 0.25}, {"b", 2.0}, {"c", int64_t{7}}, {"d", nullptr}, {"e", "x\"y"}}),
            R"({"a":0.25,"b":2,"c":7,"d":null,"e":"x\"y"})");
}

TEST(RenderTest, ContainerDocumentV4IsTheGolden) {
  StatusOr<json::object> doc = RenderContainer(Parse(TaskJson()), Facts(), "web");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(Serialize(*doc), kWebV4);
}

TEST(RenderTest, TaskDocumentV4IsTheGoldenAndLeavesOutContainersNotCreated) {
  EXPECT_EQ(Serialize(RenderTask(Parse(TaskJson()), Facts())), kTaskV4);
}

TEST(RenderTest, V3LeavesOutV4Fields) {
  StatusOr<json::object> doc = RenderContainer(Parse(TaskJson()), Facts(), "web", Version::kV3);
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE(doc->contains("LogDriver"));
  EXPECT_FALSE(doc->contains("ContainerARN"));
  EXPECT_FALSE(doc->contains("RestartCount"));
  EXPECT_EQ(Serialize(doc->at("Networks")), R"([{"NetworkMode":"awsvpc","IPv4Addresses":["172.31.0.5"]}])");
  EXPECT_EQ(Serialize(doc->at("Ports")), R"([{"ContainerPort":80,"Protocol":"tcp","HostPort":80}])");
  json::object task = RenderTask(Parse(TaskJson()), Facts(), Version::kV3);
  EXPECT_FALSE(task.contains("LaunchType"));
  EXPECT_FALSE(task.contains("EphemeralStorageMetrics"));
  EXPECT_FALSE(task.contains("FaultInjectionEnabled"));
  EXPECT_EQ(task.at("Containers").as_array().size(), 2u);
}

TEST(RenderTest, UnknownContainerIsNotFound) {
  EXPECT_EQ(RenderContainer(Parse(TaskJson()), Facts(), "nope").status().code(), StatusCode::kNotFound);
  TaskFacts no_facts = Facts();
  no_facts.containers.clear();
  EXPECT_EQ(RenderContainer(Parse(TaskJson()), no_facts, "web").status().code(), StatusCode::kNotFound);
}

TEST(RenderTest, StatusesUseTheEcsAgentsVocabulary) {
  EXPECT_EQ(RenderTask(Parse(TaskJson("PENDING")), Facts()).at("KnownStatus"), "CREATED");
  EXPECT_EQ(RenderTask(Parse(TaskJson("STOPPING")), Facts()).at("KnownStatus"), "RUNNING");
  EXPECT_EQ(RenderTask(Parse(TaskJson("STOPPED")), Facts()).at("KnownStatus"), "STOPPED");
}

TEST(RenderTest, Ec2TaskNamesTheClusterByNameAndLeavesOutWhatItLacks) {
  json::object task = Parse(TaskJson());
  task["launchType"] = "EC2";
  task.erase("cpu");
  task.erase("memory");
  task.erase("ephemeralStorage");
  task["group"] = "family:web";
  json::object doc = RenderTask(task, Facts());
  EXPECT_EQ(doc.at("Cluster"), "default");
  EXPECT_FALSE(doc.contains("Limits"));
  EXPECT_FALSE(doc.contains("ServiceName"));
  EXPECT_FALSE(doc.contains("EphemeralStorageMetrics"));
  EXPECT_EQ(doc.at("Containers").at(0).at("Labels").at("com.amazonaws.ecs.cluster"), "default");
}

TEST(RenderTest, BridgeAndHostTasksShowTheirNetworkModeWithoutAnEni) {
  json::object task = Parse(TaskJson());
  task["launchType"] = "EC2";
  task["attachments"] = json::array();
  for (auto& c : task["containers"].as_array()) c.as_object()["networkInterfaces"] = json::array();
  TaskFacts facts = Facts();
  facts.network_mode = "bridge";
  facts.ipv4 = "172.17.0.9";
  StatusOr<json::object> doc = RenderContainer(task, facts, "web");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->at("Networks"), json::parse(R"([{"NetworkMode":"bridge","IPv4Addresses":["172.17.0.9"]}])"));
  facts.network_mode = "host";
  facts.ipv4.clear();
  doc = RenderContainer(task, facts, "web");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->at("Networks"), json::parse(R"([{"NetworkMode":"host"}])"));
}

TEST(RenderTest, V3PutsNetworksAfterTypeAsTheV2ResponseDoes) {
  StatusOr<json::object> doc = RenderContainer(Parse(TaskJson()), Facts(), "web", Version::kV3);
  ASSERT_TRUE(doc.ok());
  std::vector<std::string> keys;
  for (const auto& [k, v] : *doc) keys.emplace_back(k);
  EXPECT_THAT(keys, ::testing::ElementsAre("DockerId", "Name", "DockerName", "Image", "ImageID", "Ports", "Labels",
                                           "DesiredStatus", "KnownStatus", "Limits", "CreatedAt", "StartedAt", "Type",
                                           "Networks", "Health", "Volumes"));
}

TEST(RenderTest, TaskTagsOnlyWithTagsAndOnlyWhenTheTaskHasSome) {
  json::object task = Parse(TaskJson());
  task["tags"] = json::parse(R"([{"key":"team","value":"blue"},{"key":"aws:ecs:serviceName","value":"web-svc"}])");
  EXPECT_FALSE(RenderTask(task, Facts()).contains("TaskTags"));  // /task
  json::object with = RenderTask(task, Facts(), Version::kV4, WithTags::kYes);
  EXPECT_EQ(with.at("TaskTags"), json::parse(R"({"team":"blue","aws:ecs:serviceName":"web-svc"})"));
  std::vector<std::string> keys;
  for (const auto& [k, v] : with) keys.emplace_back(k);
  // The ECS agent's order: TaskTags after AvailabilityZone, before LaunchType.
  EXPECT_THAT(keys, ::testing::Contains("TaskTags"));
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "TaskTags") + 1, std::find(keys.begin(), keys.end(), "LaunchType"));
  EXPECT_FALSE(with.contains("ContainerInstanceTags"));  // never told to the agent
  task.erase("tags");
  EXPECT_FALSE(RenderTask(task, Facts(), Version::kV4, WithTags::kYes).contains("TaskTags"));
  task["tags"] = json::array();
  EXPECT_FALSE(RenderTask(task, Facts(), Version::kV4, WithTags::kYes).contains("TaskTags"));
}

TEST(RenderTest, VpcIdOnlyForTasksOnEc2AndClockDriftWhenKnown) {
  TaskFacts facts = Facts();
  facts.vpc_id = "vpc-0a1b2c3d";
  EXPECT_FALSE(RenderTask(Parse(TaskJson()), facts).contains("VPCID"));  // Fargate, as AWS
  json::object task = Parse(TaskJson());
  task["launchType"] = "EC2";
  EXPECT_EQ(RenderTask(task, facts).at("VPCID"), "vpc-0a1b2c3d");
  EXPECT_FALSE(RenderTask(task, facts, Version::kV3).contains("VPCID"));
  facts.vpc_id.clear();  // bridge, host: no VPC the agent knows of
  EXPECT_FALSE(RenderTask(task, facts).contains("VPCID"));

  EXPECT_FALSE(RenderTask(task, facts).contains("ClockDrift"));
  facts.clock_drift = ClockDrift{At(1764504010'250000000), std::nullopt, false};
  EXPECT_EQ(Serialize(RenderTask(task, facts).at("ClockDrift")),
            R"({"ReferenceTimestamp":"2025-11-30T12:00:10.25Z","ClockSynchronizationStatus":"NOT_SYNCHRONIZED"})");
  EXPECT_FALSE(RenderTask(task, facts, Version::kV3).contains("ClockDrift"));
}

TEST(ClockDriftTest, IsTheKernelsMaximumErrorWhileSynchronized) {
  ClockDrift d = ClockDriftOf(TIME_OK, STA_PLL, 2500, At(5'000000000));
  EXPECT_TRUE(d.synchronized);
  EXPECT_EQ(d.error_bound_ms, 2.5);
  EXPECT_EQ(d.reference, At(5'000000000));
  // No daemon disciplines the clock: the kernel says so with STA_UNSYNC and TIME_ERROR, and its
  // maximum error is its 16 s ceiling, not a measurement.
  d = ClockDriftOf(TIME_ERROR, STA_UNSYNC, 16'000'000, At(5'000000000));
  EXPECT_FALSE(d.synchronized);
  EXPECT_FALSE(d.error_bound_ms.has_value());
  EXPECT_FALSE(ClockDriftOf(TIME_OK, STA_UNSYNC, 100, At(0)).synchronized);
  EXPECT_FALSE(ClockDriftOf(TIME_ERROR, 0, 100, At(0)).synchronized);
}

TEST(ClockDriftTest, ReadsThisHostsKernelClock) {
  StatusOr<ClockDrift> d = ReadKernelClock();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // The reading is of now.
  EXPECT_LT(std::chrono::abs(d->reference - std::chrono::system_clock::now()), std::chrono::seconds(5));
  struct timex tx {};
  int state = ::adjtimex(&tx);
  EXPECT_EQ(d->synchronized, state != TIME_ERROR && (tx.status & STA_UNSYNC) == 0);
  if (d->synchronized) {
    EXPECT_GE(*d->error_bound_ms, 0.0);
  }
}

TEST(RenderTest, FactsFromADefinitionAndAResolvConf) {
  ContainerFacts f = FactsFromDefinition(Parse(
      R"({"name":"web","image":"busybox","cpu":128,"memory":256,"memoryReservation":64,)"
      R"("logConfiguration":{"logDriver":"json-file","options":{"max-size":"10m"}},"dockerLabels":{"team":"blue"}})"));
  EXPECT_EQ(f.name, "web");
  EXPECT_EQ(f.cpu_units, 128);
  EXPECT_EQ(f.memory_mib, 256);
  EXPECT_EQ(f.log_driver, "json-file");
  EXPECT_EQ(f.log_options, (std::map<std::string, std::string>{{"max-size", "10m"}}));
  EXPECT_EQ(f.docker_labels, (std::map<std::string, std::string>{{"team", "blue"}}));
  ContainerFacts bare = FactsFromDefinition(Parse(R"({"name":"x","image":"busybox","memoryReservation":64})"));
  EXPECT_EQ(bare.memory_mib, 0);  // only a soft limit: Limits.Memory 0, as the ECS agent
  EXPECT_TRUE(bare.log_driver.empty());

  TaskFacts t;
  ParseResolvConf("# generated\nnameserver 169.254.169.253\nnameserver 10.0.0.2\nsearch a.internal b.internal\n"
                  "options ndots:2\n",
                  t);
  EXPECT_THAT(t.dns_servers, ::testing::ElementsAre("169.254.169.253", "10.0.0.2"));
  EXPECT_THAT(t.dns_search, ::testing::ElementsAre("a.internal", "b.internal"));
}

// ---- Stats -------------------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pdk-metadata-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void Write(const std::string& rel, std::string_view content) const {
    fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }

 private:
  std::string path_;
};

constexpr char kNetDev[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
    "carrier compressed\n"
    "    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       "
    "0          0\n"
    "  eth0:    5338      36    1    2    0     0          0         0      648       8    3    4    0     0       "
    "0          0\n";

uint64_t TickNs() { return 1'000'000'000ull / static_cast<uint64_t>(sysconf(_SC_CLK_TCK)); }

// A v1 (hybrid) host: one hierarchy per controller, as docs/runtime-notes.md describes this one.
StatsSources FakeV1(const TempDir& d) {
  const std::string c = "paddock/t1/c1/";
  d.Write("memory/" + c + "memory.usage_in_bytes", "1048576\n");
  d.Write("memory/" + c + "memory.max_usage_in_bytes", "2097152\n");
  d.Write("memory/" + c + "memory.failcnt", "0\n");
  d.Write("memory/" + c + "memory.limit_in_bytes", "9223372036854771712\n");
  d.Write("memory/" + c + "memory.stat", "cache 4096\nrss 8192\n");
  d.Write("cpuacct/" + c + "cpuacct.usage", "5000000000\n");
  d.Write("cpuacct/" + c + "cpuacct.stat", "user 300\nsystem 100\n");
  d.Write("cpuacct/" + c + "cpuacct.usage_percpu", "3000000000 2000000000 \n");
  d.Write("cpu/" + c + "cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n");
  d.Write("pids/" + c + "pids.current", "3\n");
  d.Write("blkio/" + c + "blkio.throttle.io_service_bytes_recursive", "8:0 Read 4096\n8:0 Write 0\nTotal 4096\n");
  d.Write("blkio/" + c + "blkio.throttle.io_serviced_recursive", "8:0 Read 1\n8:0 Write 0\nTotal 1\n");
  d.Write("proc/meminfo", "MemTotal:       16384 kB\nMemFree:         1024 kB\n");
  d.Write("proc/stat", "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n");
  d.Write("proc/4242/cgroup",
          "12:pids:/paddock/t1/c1\n7:memory:/paddock/t1/c1\n4:blkio:/paddock/t1/c1\n3:cpuset:/paddock/t1/c1\n"
          "2:cpuacct:/paddock/t1/c1\n1:cpu:/paddock/t1/c1\n0::/\n");
  d.Write("proc/4242/net/dev", kNetDev);
  runtime::CgroupLayout layout;
  layout.memory_root = d.path() + "/memory";
  layout.cpu_root = d.path() + "/cpu";
  for (const char* h : {"memory", "cpu", "cpuacct", "pids", "blkio", "unified"}) {
    layout.mount_points.push_back(d.path() + "/" + h);
  }
  StatsSources s = StatsSources::FromLayout(layout);
  s.proc_root = d.path() + "/proc";
  return s;
}

TEST(StatsSourcesTest, FindsEachV1ControllersHierarchy) {
  runtime::CgroupLayout layout;
  layout.memory_root = "/sys/fs/cgroup/memory";
  layout.mount_points = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
                         "/sys/fs/cgroup/blkio", "/sys/fs/cgroup/unified"};
  StatsSources s = StatsSources::FromLayout(layout);
  EXPECT_EQ(s.cpuacct_root, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(s.pids_root, "/sys/fs/cgroup/pids");
  EXPECT_EQ(s.blkio_root, "/sys/fs/cgroup/blkio");
  layout.unified = true;
  layout.memory_root = layout.cpu_root = "/sys/fs/cgroup";
  s = StatsSources::FromLayout(layout);
  EXPECT_EQ(s.cpuacct_root, "/sys/fs/cgroup");
  EXPECT_EQ(s.pids_root, "/sys/fs/cgroup");
}

TEST(ReadCgroupSampleTest, V1FilesAndTheTaskNamespacesInterfaces) {
  TempDir d;
  StatsSources sources = FakeV1(d);
  // The cgroup comes from /proc/<pid>/cgroup (the memory controller's line) when not given.
  StatusOr<CgroupSample> s = ReadCgroupSample(sources, "", 4242, At(1'000'000'000));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->cpu_total_ns, 5'000'000'000u);
  EXPECT_EQ(s->cpu_user_ns, 300 * TickNs());
  EXPECT_EQ(s->cpu_kernel_ns, 100 * TickNs());
  EXPECT_THAT(s->cpu_percpu_ns, ::testing::ElementsAre(3'000'000'000u, 2'000'000'000u));
  EXPECT_EQ(s->system_cpu_ns, 1150 * TickNs());
  EXPECT_EQ(s->throttling_periods, 10u);
  EXPECT_EQ(s->throttled_periods, 2u);
  EXPECT_EQ(s->throttled_time_ns, 3000u);
  EXPECT_EQ(s->memory_usage, 1048576u);
  EXPECT_EQ(s->memory_max_usage, 2097152u);
  EXPECT_EQ(s->memory_limit, 16384u * 1024);  // unlimited: the host's memory
  EXPECT_EQ(s->memory_stat.size(), 2u);
  EXPECT_EQ(s->pids_current, 3u);
  ASSERT_EQ(s->io_service_bytes.size(), 2u);
  EXPECT_EQ(s->io_service_bytes[0].op, "Read");
  EXPECT_EQ(s->io_service_bytes[0].value, 4096u);
  ASSERT_TRUE(s->networks.has_value());
  ASSERT_EQ(s->networks->size(), 1u);  // lo left out
  const NetDevCounters& eth0 = s->networks->at("eth0");
  EXPECT_EQ(eth0.rx_bytes, 5338u);
  EXPECT_EQ(eth0.rx_errors, 1u);
  EXPECT_EQ(eth0.rx_dropped, 2u);
  EXPECT_EQ(eth0.tx_bytes, 648u);
  EXPECT_EQ(eth0.tx_packets, 8u);
  EXPECT_EQ(eth0.tx_errors, 3u);
  EXPECT_EQ(eth0.tx_dropped, 4u);
}

TEST(ReadCgroupSampleTest, V2Files) {
  TempDir d;
  const std::string c = "unified/paddock/t1/c1/";
  d.Write(c + "memory.current", "1048576\n");
  d.Write(c + "memory.max", "67108864\n");
  d.Write(c + "memory.stat", "anon 8192\nfile 4096\n");
  d.Write(c + "cpu.stat", "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\nnr_periods 4\nnr_throttled 1\n"
                          "throttled_usec 7\n");
  d.Write(c + "pids.current", "2\n");
  d.Write(c + "io.stat", "8:0 rbytes=4096 wbytes=512 rios=1 wios=2 dbytes=0 dios=0\n");
  d.Write("proc/meminfo", "MemTotal:       1048576 kB\n");
  runtime::CgroupLayout layout;
  layout.unified = true;
  layout.memory_root = layout.cpu_root = d.path() + "/unified";
  layout.mount_points = {layout.memory_root};
  StatsSources sources = StatsSources::FromLayout(layout);
  sources.proc_root = d.path() + "/proc";
  StatusOr<CgroupSample> s = ReadCgroupSample(sources, "/paddock/t1/c1", 0, At(0));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->cpu_total_ns, 5'000'000u);
  EXPECT_EQ(s->cpu_user_ns, 3'000'000u);
  EXPECT_EQ(s->cpu_kernel_ns, 2'000'000u);
  EXPECT_EQ(s->throttled_time_ns, 7000u);
  EXPECT_EQ(s->memory_usage, 1048576u);
  EXPECT_FALSE(s->memory_max_usage.has_value());
  EXPECT_EQ(s->memory_limit, 67108864u);
  EXPECT_EQ(s->pids_current, 2u);
  ASSERT_EQ(s->io_service_bytes.size(), 2u);
  EXPECT_EQ(s->io_service_bytes[1].op, "write");
  EXPECT_EQ(s->io_service_bytes[1].value, 512u);
  ASSERT_EQ(s->io_serviced.size(), 2u);
  EXPECT_FALSE(s->networks.has_value());  // no pid, no namespace to read
  // "max" is no limit: the host's memory.
  d.Write(c + "memory.max", "max\n");
  s = ReadCgroupSample(sources, "/paddock/t1/c1", 0, At(0));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->memory_limit, 1048576u * 1024);
}

TEST(ReadCgroupSampleTest, GoneCgroupIsNotFound) {
  TempDir d;
  StatsSources sources = FakeV1(d);
  EXPECT_EQ(ReadCgroupSample(sources, "/paddock/t1/gone", 0, At(0)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadCgroupSample(sources, "", 0, At(0)).status().code(), StatusCode::kNotFound);
}

// The real files of this host (hybrid here, see docs/runtime-notes.md): this test process's own
// cgroup, found from /proc/self's pid, and its network namespace.
TEST(ReadCgroupSampleTest, ReadsThisHostsRealCgroupFiles) {
  StatusOr<runtime::CgroupLayout> layout = runtime::DetectCgroupLayout();
  if (!layout.ok()) GTEST_SKIP() << "no cgroup memory controller here: " << layout.status().ToString();
  StatsSources sources = StatsSources::FromLayout(*layout);
  StatusOr<CgroupSample> s = ReadCgroupSample(sources, "", getpid(), At(0));
  if (!s.ok() && s.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "this process sits in the root cgroup";
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_GT(s->memory_usage, 0u);
  EXPECT_GT(s->memory_limit, 0u);
  EXPECT_GT(s->cpu_total_ns, 0u);
  EXPECT_GT(s->system_cpu_ns, 0u);
  EXPECT_GT(s->online_cpus, 0u);
  EXPECT_FALSE(s->memory_stat.empty());
  ASSERT_TRUE(s->networks.has_value());
  EXPECT_FALSE(s->networks->contains("lo"));
}

CgroupSample Sample(TimePoint read, uint64_t scale) {
  CgroupSample s;
  s.read = read;
  s.cpu_total_ns = 5000 * scale;
  s.cpu_user_ns = 3000 * scale;
  s.cpu_kernel_ns = 1000 * scale;
  s.cpu_percpu_ns = {3000 * scale, 2000 * scale};
  s.system_cpu_ns = 90000 * scale;
  s.online_cpus = 2;
  s.throttling_periods = 10;
  s.throttled_periods = 2;
  s.throttled_time_ns = 3000;
  s.memory_usage = 1048576;
  s.memory_max_usage = 2097152;
  s.memory_failcnt = 0;
  s.memory_limit = 536870912;
  s.memory_stat = {{"cache", 4096}, {"rss", 8192}};
  s.pids_current = 3;
  s.io_service_bytes = {{8, 0, "Read", 4096}, {8, 0, "Write", 0}};
  s.io_serviced = {{8, 0, "Read", 1}, {8, 0, "Write", 0}};
  s.networks = std::map<std::string, NetDevCounters>{{"eth0", {5338 * scale, 36, 0, 0, 648 * scale, 8, 0, 0}}};
  return s;
}

// Docker's GET /containers/{id}/stats?stream=false plus ECS's network_rate_stats.
TEST(RenderStatsTest, IsDockersShape) {
  CgroupSample prev = Sample(At(1764504010'000000000), 1);
  CgroupSample cur = Sample(At(1764504012'000000000), 2);
  EXPECT_EQ(
      Serialize(RenderStats(cur, &prev, "pdk-1a2b-0123-0", "web")),
      R"({"read":"2025-11-30T12:00:12Z","preread":"2025-11-30T12:00:10Z","pids_stats":{"current":3},)"
      R"("blkio_stats":{"io_service_bytes_recursive":[{"major":8,"minor":0,"op":"Read","value":4096},)"
      R"({"major":8,"minor":0,"op":"Write","value":0}],"io_serviced_recursive":[{"major":8,"minor":0,"op":"Read",)"
      R"("value":1},{"major":8,"minor":0,"op":"Write","value":0}],"io_queue_recursive":null,)"
      R"("io_service_time_recursive":null,"io_wait_time_recursive":null,"io_merged_recursive":null,)"
      R"("io_time_recursive":null,"sectors_recursive":null},"num_procs":0,"storage_stats":{},)"
      R"("cpu_stats":{"cpu_usage":{"total_usage":10000,"percpu_usage":[6000,4000],"usage_in_kernelmode":2000,)"
      R"("usage_in_usermode":6000},"system_cpu_usage":180000,"online_cpus":2,)"
      R"("throttling_data":{"periods":10,"throttled_periods":2,"throttled_time":3000}},)"
      R"("precpu_stats":{"cpu_usage":{"total_usage":5000,"percpu_usage":[3000,2000],"usage_in_kernelmode":1000,)"
      R"("usage_in_usermode":3000},"system_cpu_usage":90000,"online_cpus":2,)"
      R"("throttling_data":{"periods":10,"throttled_periods":2,"throttled_time":3000}},)"
      R"("memory_stats":{"usage":1048576,"max_usage":2097152,"stats":{"cache":4096,"rss":8192},"failcnt":0,)"
      R"("limit":536870912},"name":"web","id":"pdk-1a2b-0123-0",)"
      R"("networks":{"eth0":{"rx_bytes":10676,"rx_packets":36,"rx_errors":0,"rx_dropped":0,"tx_bytes":1296,)"
      R"("tx_packets":8,"tx_errors":0,"tx_dropped":0}},)"
      R"("network_rate_stats":{"rx_bytes_per_sec":2669,"tx_bytes_per_sec":324}})");
}

TEST(RenderStatsTest, FirstReadingHasZeroPrecpuAndNoRates) {
  json::object d = RenderStats(Sample(At(0), 1), nullptr, "id", "web");
  EXPECT_EQ(d.at("preread"), "0001-01-01T00:00:00Z");
  EXPECT_EQ(Serialize(d.at("precpu_stats")),
            R"({"cpu_usage":{"total_usage":0,"usage_in_kernelmode":0,"usage_in_usermode":0},)"
            R"("throttling_data":{"periods":0,"throttled_periods":0,"throttled_time":0}})");
  EXPECT_FALSE(d.contains("network_rate_stats"));
  EXPECT_TRUE(d.contains("networks"));
  EXPECT_FALSE(RenderStats(Sample(At(0), 1), nullptr, "id", "web", Version::kV3).contains("networks"));
}

// ---- The service over loopback -------------------------------------------------------------------

http::Request Get(std::string target) {
  http::Request r;
  r.method = "GET";
  r.target = std::move(target);
  return r;
}

std::string PathOf(const std::string& uri) { return uri.substr(uri.find('/', std::string("http://").size())); }

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MetadataServiceOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.stats_sources = FakeV1(dir_);
    o.clock = [] { return StatusOr<ClockDrift>(FakeClock()); };
    service_ = std::make_unique<MetadataService>(o);
    ASSERT_TRUE(service_->Start().ok());
    client_ = std::make_unique<http::Client>("127.0.0.1", service_->port());
  }

  TaskProvider Provider() {
    return [this](WithTags) -> StatusOr<TaskFacts> {
      ++provider_calls_;
      TaskFacts f = Facts();
      f.containers[0].cgroup_path = "/paddock/t1/c1";
      f.containers[1].cgroup_path = "/paddock/t1/gone";  // its cgroup was deleted: stats null
      return f;
    };
  }

  http::Response Send(const std::string& target) {
    StatusOr<http::Response> r = client_->Send(Get(target));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) return *r;
    http::Response failed;
    failed.status = 0;
    return failed;
  }

  TempDir dir_;
  std::unique_ptr<MetadataService> service_;
  std::unique_ptr<http::Client> client_;
  std::atomic<int> provider_calls_{0};
};

TEST_F(ServiceTest, ServesTheFourPathsOfARegisteredContainer) {
  ContainerEndpoint ep = service_->RegisterContainer(kTaskArn, "web", Provider());
  EXPECT_EQ(ep.v4_uri, fmt::format("http://127.0.0.1:{}/v4/{}", service_->port(), ep.id));
  EXPECT_EQ(ep.v3_uri, fmt::format("http://127.0.0.1:{}/v3/{}", service_->port(), ep.id));
  EXPECT_THAT(ep.Env(), ::testing::ElementsAre("ECS_CONTAINER_METADATA_URI_V4=" + ep.v4_uri,
                                               "ECS_CONTAINER_METADATA_URI=" + ep.v3_uri));
  EXPECT_EQ(ep.id.size(), 32u);

  http::Response r = Send(PathOf(ep.v4_uri));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.GetHeader("Content-Type"), "application/json");
  EXPECT_EQ(r.body, kWebV4);
  EXPECT_EQ(Send(PathOf(ep.v4_uri) + "/").body, kWebV4);

  r = Send(PathOf(ep.v4_uri) + "/task");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kTaskV4Served);

  r = Send(PathOf(ep.v4_uri) + "/stats");
  EXPECT_EQ(r.status, 200);
  json::object stats = Parse(r.body);
  EXPECT_EQ(stats.at("id"), "pdk-1a2b-0123456789abcdef0123456789abcdef-0");
  EXPECT_EQ(stats.at("memory_stats").at("usage"), 1048576);
  EXPECT_EQ(stats.at("preread"), "0001-01-01T00:00:00Z");
  // The second reading has the first as precpu/preread.
  json::object again = Parse(Send(PathOf(ep.v4_uri) + "/stats").body);
  EXPECT_EQ(again.at("preread"), stats.at("read"));
  EXPECT_EQ(again.at("precpu_stats").at("cpu_usage").at("total_usage"), 5000000000);

  r = Send(PathOf(ep.v4_uri) + "/task/stats");
  EXPECT_EQ(r.status, 200);
  json::object all = Parse(r.body);
  EXPECT_EQ(all.size(), 2u);  // "later" was not created
  EXPECT_TRUE(all.at("pdk-1a2b-0123456789abcdef0123456789abcdef-0").is_object());
  EXPECT_TRUE(all.at("pdk-1a2b-0123456789abcdef0123456789abcdef-1").is_null());

  // v3: the same id, v3's shapes.
  json::object v3 = Parse(Send(PathOf(ep.v3_uri)).body);
  EXPECT_EQ(v3.at("Name"), "web");
  EXPECT_FALSE(v3.contains("ContainerARN"));
  EXPECT_FALSE(Parse(Send(PathOf(ep.v3_uri) + "/stats").body).contains("networks"));
}

TEST_F(ServiceTest, TaskWithTagsAddsTheTasksTagsOnV4Only) {
  // As the control plane answers: the tags only when asked for them.
  std::vector<WithTags> asked;
  TaskProvider tagged = [&asked](WithTags with_tags) {
    asked.push_back(with_tags);
    TaskFacts f = Facts();
    if (with_tags == WithTags::kNo) return StatusOr<TaskFacts>(std::move(f));
    json::object task = json::parse(f.task_json).as_object();
    task["tags"] = json::parse(R"([{"key":"team","value":"blue"}])");
    f.task_json = Serialize(task);
    return StatusOr<TaskFacts>(std::move(f));
  };
  ContainerEndpoint ep = service_->RegisterContainer(kTaskArn, "web", tagged);
  http::Response r = Send(PathOf(ep.v4_uri) + "/taskWithTags");
  EXPECT_EQ(r.status, 200);
  // /task's document with TaskTags where the ECS agent puts them (after AvailabilityZone).
  const std::string tags = R"("TaskTags":{"team":"blue"},)";
  EXPECT_EQ(r.body, kTaskHead + tags + kTaskMiddle + kClockDrift + kTaskTail);
  EXPECT_FALSE(Parse(Send(PathOf(ep.v4_uri) + "/task").body).contains("TaskTags"));
  EXPECT_EQ(Send(PathOf(ep.v3_uri) + "/taskWithTags").status, 404);
  EXPECT_EQ(Send(PathOf(ep.v4_uri)).status, 200);
  // Only taskWithTags reads the tags (a read of the task's tag rows on every request otherwise).
  EXPECT_THAT(asked, ::testing::ElementsAre(WithTags::kYes, WithTags::kNo, WithTags::kNo));
}

// The door to the deploy controller (D8): exactly the exchange and the issuer's two documents, the
// prefix taken off and the network put before the caller's address; anything else under
// /paddock/, or any of them with no door set (or after it is taken away), is 404.
TEST_F(ServiceTest, TheControllerDoorPassesOnlyTheIdentityEndpoints) {
  auto call = [&](std::string method, std::string target) {
    http::Request r = Get(std::move(target));
    r.method = std::move(method);
    r.remote_address = "172.31.0.9:41000";
    return service_->Handle(r, "pdv-1a2b");
  };
  EXPECT_EQ(call("POST", "/paddock/v1/identity/token").status, 404) << "no door yet";
  std::vector<http::Request> passed;
  service_->SetControllerDoor([&](const http::Request& r) {
    passed.push_back(r);
    http::Response ok;
    ok.status = 200;
    return ok;
  });
  EXPECT_EQ(call("POST", "/paddock/v1/identity/token").status, 200);
  EXPECT_EQ(call("GET", "/paddock/.well-known/jwks.json").status, 200);
  EXPECT_EQ(call("GET", "/paddock/.well-known/openid-configuration").status, 200);
  for (auto [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/paddock/v1/identity/token"}, {"POST", "/paddock/v1/deployments"}, {"GET", "/paddock/v1/deployments"},
           {"GET", "/paddock/../v1/deployments"}, {"POST", "/paddock/.well-known/jwks.json"}}) {
    EXPECT_EQ(call(method, target).status, 404) << method << " " << target;
  }
  ASSERT_EQ(passed.size(), 3u);
  EXPECT_EQ(passed[0].target, "/v1/identity/token");
  EXPECT_EQ(passed[0].remote_address, "pdv-1a2b/172.31.0.9:41000");
  EXPECT_EQ(passed[1].target, "/.well-known/jwks.json");

  service_->SetControllerDoor(nullptr);
  EXPECT_EQ(call("POST", "/paddock/v1/identity/token").status, 404);
  EXPECT_EQ(passed.size(), 3u);
}

TEST(ServiceClockTest, AClockThatCannotBeReadLeavesClockDriftOut) {
  MetadataServiceOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.clock = [] { return StatusOr<ClockDrift>(Unavailable("adjtimex: Operation not permitted")); };
  MetadataService service(o);
  ASSERT_TRUE(service.Start().ok());
  ContainerEndpoint ep = service.RegisterContainer(kTaskArn, "web", [](WithTags) { return StatusOr<TaskFacts>(Facts()); });
  http::Response r = service.Handle(Get(PathOf(ep.v4_uri) + "/task"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kTaskV4);
}

TEST_F(ServiceTest, UnknownIdsPathsAndMethodsAreRefused) {
  ContainerEndpoint ep = service_->RegisterContainer(kTaskArn, "web", Provider());
  EXPECT_EQ(Send("/v4/0123456789abcdef0123456789abcdef").status, 404);
  EXPECT_EQ(Send("/v4/0123456789abcdef0123456789abcdef/task").status, 404);
  EXPECT_EQ(Send("/v4/").status, 404);
  EXPECT_EQ(Send("/v2/metadata").status, 404);
  EXPECT_EQ(Send(PathOf(ep.v4_uri) + "/other").status, 404);
  EXPECT_EQ(Send(PathOf(ep.v4_uri) + "/task/other").status, 404);
  http::Request post = Get(PathOf(ep.v4_uri));
  post.method = "POST";
  StatusOr<http::Response> r = client_->Send(post);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(provider_calls_, 0);  // nothing about the task was looked up for any of them
}

TEST_F(ServiceTest, UnregisterTaskForgetsEveryContainerOfIt) {
  ContainerEndpoint web = service_->RegisterContainer(kTaskArn, "web", Provider());
  ContainerEndpoint side = service_->RegisterContainer(kTaskArn, "side", Provider());
  ContainerEndpoint other = service_->RegisterContainer("arn:other", "web", Provider());
  EXPECT_EQ(Parse(Send(PathOf(side.v4_uri)).body).at("Name"), "side");
  service_->UnregisterTask(kTaskArn);
  EXPECT_EQ(Send(PathOf(web.v4_uri)).status, 404);
  EXPECT_EQ(Send(PathOf(side.v4_uri) + "/task").status, 404);
  EXPECT_EQ(Send(PathOf(other.v4_uri)).status, 200);
  service_->UnregisterTask(kTaskArn);  // again: nothing to do
}

TEST_F(ServiceTest, RequestsFromAnotherAddressThanTheTasksAreNotFound) {
  ContainerEndpoint elsewhere = service_->RegisterContainer(kTaskArn, "web", Provider(), "172.31.0.5");
  EXPECT_EQ(Send(PathOf(elsewhere.v4_uri)).status, 404);  // we ask from 127.0.0.1
  EXPECT_EQ(Send(PathOf(elsewhere.v4_uri) + "/task/stats").status, 404);
  ContainerEndpoint here = service_->RegisterContainer("arn:t2", "web", Provider(), "127.0.0.1");
  EXPECT_EQ(Send(PathOf(here.v4_uri)).status, 200);
}

TEST_F(ServiceTest, ProviderFailureIs500) {
  ContainerEndpoint ep = service_->RegisterContainer(
      kTaskArn, "web", [](WithTags) -> StatusOr<TaskFacts> { return Unavailable("store closed"); });
  http::Response r = Send(PathOf(ep.v4_uri));
  EXPECT_EQ(r.status, 500);
  EXPECT_THAT(r.body, HasSubstr("store closed"));
}

// Once UnregisterTask returns, the provider (and whatever it captured: the agent's task driver)
// is never called again, even by a request that had looked the id up already.
TEST_F(ServiceTest, UnregisterTaskWaitsForRequestsInItsProvider) {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> unregistered{false};
  std::atomic<bool> called_after{false};
  ContainerEndpoint ep = service_->RegisterContainer(kTaskArn, "web", [&, released](WithTags) -> StatusOr<TaskFacts> {
    if (unregistered) called_after = true;
    entered.set_value();
    released.wait();
    return Facts();
  });
  std::future<int> request = std::async(std::launch::async, [&] {
    http::Client c("127.0.0.1", service_->port());
    StatusOr<http::Response> r = c.Send(Get(PathOf(ep.v4_uri)));
    return r.ok() ? r->status : -1;
  });
  entered.get_future().wait();
  std::future<void> unregister = std::async(std::launch::async, [&] {
    service_->UnregisterTask(kTaskArn);
    unregistered = true;
  });
  // Still inside the provider: UnregisterTask must not have returned.
  EXPECT_EQ(unregister.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_FALSE(unregistered);
  release.set_value();
  unregister.get();
  EXPECT_EQ(request.get(), 200);  // the request that was in flight is answered
  EXPECT_EQ(Send(PathOf(ep.v4_uri)).status, 404);
  EXPECT_FALSE(called_after);
}

// The agent registers a task's containers one by one as they start, each time with a provider:
// one registered while a request of an earlier container is inside the task's provider must not
// destroy the function being called (nor what it captured) under that request.
TEST_F(ServiceTest, RegisteringWhileARequestIsInTheProviderKeepsThatProviderAlive) {
  // Static: the provider reaches them without going through its own (possibly freed) closure.
  static std::promise<void> entered;
  static std::shared_future<void> released;
  static std::weak_ptr<int> watched;
  static std::atomic<bool> alive_after{false};
  entered = std::promise<void>();
  std::promise<void> release;
  released = release.get_future().share();
  auto token = std::make_shared<int>(1);
  watched = token;
  TaskProvider first = [token](WithTags) -> StatusOr<TaskFacts> {
    entered.set_value();
    released.wait();
    alive_after = !watched.expired();
    return Facts();
  };
  token.reset();
  ContainerEndpoint web = service_->RegisterContainer(kTaskArn, "web", std::move(first));
  std::future<int> request = std::async(std::launch::async, [&] {
    http::Client c("127.0.0.1", service_->port());
    StatusOr<http::Response> r = c.Send(Get(PathOf(web.v4_uri)));
    return r.ok() ? r->status : -1;
  });
  entered.get_future().wait();
  ContainerEndpoint side = service_->RegisterContainer(kTaskArn, "side", Provider());  // the next container starts
  release.set_value();
  EXPECT_EQ(request.get(), 200);
  EXPECT_TRUE(alive_after);         // what the first provider captured lived until it returned
  EXPECT_TRUE(watched.expired());   // and went once it was replaced and no request used it
  EXPECT_EQ(Send(PathOf(side.v4_uri)).status, 200);
  EXPECT_EQ(provider_calls_, 1);    // the new provider answers from now on
}

// With an id key, a container's id depends only on the key, its task and its name: an agent
// restarted on the same state serves the URI already in a re-adopted container's environment.
TEST_F(ServiceTest, KeyedIdsSurviveARestartOfTheService) {
  MetadataServiceOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.id_key = std::string(32, 'k');
  auto first = std::make_unique<MetadataService>(o);
  ASSERT_TRUE(first->Start().ok());
  ContainerEndpoint web = first->RegisterContainer(kTaskArn, "web", Provider());
  ContainerEndpoint side = first->RegisterContainer(kTaskArn, "side", Provider());
  EXPECT_NE(web.id, side.id);
  EXPECT_EQ(web.id.size(), 32u);
  EXPECT_EQ(first->RegisterContainer(kTaskArn, "web", Provider()).id, web.id);
  first.reset();  // the agent goes down

  MetadataService second(o);
  ASSERT_TRUE(second.Start().ok());
  http::Client c("127.0.0.1", second.port());
  StatusOr<http::Response> r = c.Send(Get(PathOf(web.v4_uri)));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);  // not re-adopted yet
  EXPECT_EQ(second.RegisterContainer(kTaskArn, "web", Provider()).id, web.id);
  r = c.Send(Get(PathOf(web.v4_uri)));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, kWebV4);

  o.id_key = std::string(32, 'x');  // another node's key: other ids
  MetadataService other(o);
  ASSERT_TRUE(other.Start().ok());
  EXPECT_NE(other.RegisterContainer(kTaskArn, "web", Provider()).id, web.id);
}

// ---- Task role credentials (/v2/credentials/<id>) ----------------------------------------------

RoleCredentials Creds() {
  return RoleCredentials{"arn:aws:iam::123456789012:role/app", "ASIAEXAMPLEEXAMPLE01", "secret", "token-1",
                         TimePoint(std::chrono::seconds(1'767'268'800))};  // 2026-01-01T12:00:00Z
}

CredentialsProvider CredsProvider(std::atomic<int>* calls = nullptr) {
  return [calls]() -> StatusOr<RoleCredentials> {
    if (calls) ++*calls;
    return Creds();
  };
}

http::Request From(std::string target, std::string remote, std::string authorization = {}) {
  http::Request r = Get(std::move(target));
  r.remote_address = std::move(remote);
  if (!authorization.empty()) r.headers.push_back({"Authorization", std::move(authorization)});
  return r;
}

constexpr char kNotFoundBody[] = R"({"code":"InvalidIdInRequest","message":"CredentialsV2Request: Credentials not found"})";

TEST(RenderCredentialsTest, IsTheShapeTheSdksRead) {
  EXPECT_EQ(RenderCredentials(Creds()),
            R"({"RoleArn":"arn:aws:iam::123456789012:role/app","AccessKeyId":"ASIAEXAMPLEEXAMPLE01",)"
            R"("SecretAccessKey":"secret","Token":"token-1","Expiration":"2026-01-01T12:00:00Z"})");
}

// On port 80 the relative form (the SDKs prepend http://169.254.170.2 and can add no port); only
// the task's own address gets an answer, and every refusal looks the same.
TEST(CredentialsEndpointTest, RelativeUriOnPort80AndOnlyTheTasksOwnAddress) {
  MetadataServiceOptions o;  // port 80, not started: Handle is called directly
  o.id_key = std::string(32, 'k');
  MetadataService service(o);
  std::atomic<int> calls{0};
  CredentialsEndpoint a = service.RegisterCredentials(kTaskArn, CredsProvider(&calls), "172.31.0.5", "vpc-ns");
  CredentialsEndpoint b = service.RegisterCredentials("arn:aws:ecs:us-east-1:123456789012:task/default/other",
                                                      CredsProvider(&calls), "172.31.0.6", "vpc-ns");
  EXPECT_EQ(a.id.size(), 32u);
  EXPECT_NE(a.id, b.id);
  EXPECT_THAT(a.Env(), ::testing::ElementsAre("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/" + a.id));
  EXPECT_TRUE(a.token.empty());

  http::Response ok = service.Handle(From(a.relative_uri, "172.31.0.5:40000"), "vpc-ns");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.GetHeader("Content-Type"), "application/json");
  EXPECT_EQ(ok.body, RenderCredentials(Creds()));
  EXPECT_EQ(calls, 1);

  auto refused = [&](const http::Request& r, std::string_view network) {
    http::Response resp = service.Handle(r, network);
    EXPECT_EQ(resp.status, 404) << r.target;
    EXPECT_EQ(resp.body, kNotFoundBody) << r.target;
  };
  refused(From(b.relative_uri, "172.31.0.5:40000"), "vpc-ns");       // another task's id
  refused(From(a.relative_uri, "172.31.0.6:40000"), "vpc-ns");       // the right id, another task's address
  refused(From(a.relative_uri, "172.31.0.5:40000"), "other-vpc-ns");  // the same address in another VPC
  refused(From(a.relative_uri, "172.31.0.5:40000"), "");              // the host's listener
  refused(From("/v2/credentials/0123456789abcdef0123456789abcdef", "172.31.0.5:40000"), "vpc-ns");
  refused(From("/v2/credentials/", "172.31.0.5:40000"), "vpc-ns");
  refused(From("/v2/credentials", "172.31.0.5:40000"), "vpc-ns");
  refused(From(a.relative_uri + "/x", "172.31.0.5:40000"), "vpc-ns");
  // A container's metadata id is no credentials id.
  ContainerEndpoint web = service.RegisterContainer(kTaskArn, "web", [](WithTags) -> StatusOr<TaskFacts> { return TaskFacts{}; },
                                                    "172.31.0.5", "vpc-ns");
  refused(From("/v2/credentials/" + web.id, "172.31.0.5:40000"), "vpc-ns");
  EXPECT_EQ(calls, 1);  // no refusal reached a provider

  // The task stops: its credentials are unreachable, the other task's are not.
  service.UnregisterTask(kTaskArn);
  refused(From(a.relative_uri, "172.31.0.5:40000"), "vpc-ns");
  EXPECT_EQ(service.Handle(From(b.relative_uri, "172.31.0.6:1"), "vpc-ns").status, 200);
}

// Any other port: the full URI, and the request must carry the token.
TEST_F(ServiceTest, FullUriWithATokenOffPort80) {
  CredentialsEndpoint ep = service_->RegisterCredentials(kTaskArn, CredsProvider(), "127.0.0.1");
  const std::string path = "/v2/credentials/" + ep.id;
  EXPECT_TRUE(ep.relative_uri.empty());
  EXPECT_EQ(ep.full_uri, fmt::format("http://127.0.0.1:{}{}", service_->port(), path));
  EXPECT_EQ(ep.token.size(), 32u);
  EXPECT_THAT(ep.Env(), ::testing::ElementsAre("AWS_CONTAINER_CREDENTIALS_FULL_URI=" + ep.full_uri,
                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN=" + ep.token));
  http::Response none = Send(path);
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(none.body, kNotFoundBody);
  http::Request wrong = Get(path);
  wrong.headers.push_back({"Authorization", std::string(32, '0')});
  StatusOr<http::Response> r = client_->Send(wrong);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  http::Request right = Get(path);
  right.headers.push_back({"Authorization", ep.token});
  r = client_->Send(right);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, RenderCredentials(Creds()));
}

TEST(CredentialsEndpointTest, ARefusedRoleIs400AndAnOutage503WithTheMessage) {
  MetadataServiceOptions o;
  MetadataService service(o);
  CredentialsEndpoint denied = service.RegisterCredentials("arn:t1", []() -> StatusOr<RoleCredentials> {
    return PermissionDenied("Unable to assume role arn:aws:iam::123456789012:role/app for ecs-tasks.amazonaws.com");
  });
  http::Response r = service.Handle(From(denied.relative_uri, "10.0.0.1:1"));
  EXPECT_EQ(r.status, 400);
  json::object body = Parse(r.body);
  EXPECT_EQ(body.at("code"), "AssumeRoleError");
  EXPECT_THAT(std::string(body.at("message").as_string()), HasSubstr("Unable to assume role"));
  CredentialsEndpoint down = service.RegisterCredentials("arn:t2", []() -> StatusOr<RoleCredentials> {
    return Unavailable("the control plane does not answer");
  });
  r = service.Handle(From(down.relative_uri, "10.0.0.1:1"));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(Parse(r.body).at("code"), "CredentialsUnavailable");
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("control plane")));  // nothing of the node reaches the task
}

TEST(CredentialsEndpointTest, KeyedIdsAreStablePerTaskAndRandomWithoutAKey) {
  MetadataServiceOptions o;
  o.id_key = std::string(32, 'k');
  MetadataService first(o), second(o);
  EXPECT_EQ(first.RegisterCredentials(kTaskArn, CredsProvider()).id, second.RegisterCredentials(kTaskArn, CredsProvider()).id);
  o.id_key.clear();
  MetadataService random1(o), random2(o);
  EXPECT_NE(random1.RegisterCredentials(kTaskArn, CredsProvider()).id,
            random2.RegisterCredentials(kTaskArn, CredsProvider()).id);
}

TEST_F(ServiceTest, ConcurrentRequestsAndRegistrations) {
  ContainerEndpoint ep = service_->RegisterContainer(kTaskArn, "web", Provider());
  const std::string paths[] = {PathOf(ep.v4_uri), PathOf(ep.v4_uri) + "/task", PathOf(ep.v4_uri) + "/stats",
                               PathOf(ep.v4_uri) + "/task/stats"};
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  // Meanwhile other tasks come and go; their ids answer while registered and 404 after.
  std::thread churn([&] {
    http::Client c("127.0.0.1", service_->port());
    for (int i = 0; i < 50; ++i) {
      std::string arn = fmt::format("arn:churn:{}", i);
      ContainerEndpoint e = service_->RegisterContainer(arn, "web", Provider());
      StatusOr<http::Response> r = c.Send(Get(PathOf(e.v4_uri)));
      if (!r.ok() || r->status != 200) ++failures;
      service_->UnregisterTask(arn);
      r = c.Send(Get(PathOf(e.v4_uri)));
      if (!r.ok() || r->status != 404) ++failures;
    }
    done = true;
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 6; ++t) {
    readers.emplace_back([&, t] {
      http::Client c("127.0.0.1", service_->port());
      for (int i = 0; i < 40; ++i) {
        const std::string& path = paths[(t + i) % 4];
        StatusOr<http::Response> r = c.Send(Get(path));
        if (!r.ok() || r->status != 200) {
          ++failures;
          continue;
        }
        if (path == paths[0] && r->body != kWebV4) ++failures;
        if (path == paths[1] && r->body != kTaskV4Served) ++failures;
      }
    });
  }
  for (auto& r : readers) r.join();
  churn.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace paddock::agent::metadata
