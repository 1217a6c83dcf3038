// The metadata endpoint as a task reaches it: from inside a task namespace made by agent/net
// (attached to its VPC router namespace, default route via the subnet's gateway) to 169.254.170.2
// in that VPC namespace. Root only; skips otherwise. Each run owns its prefixes ("m<pid>-",
// "w<pid>-") and 10.253.<pid % 200 + 20>.0/24 in two VPCs.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <boost/json/parse.hpp>
#include <fmt/core.h>

#include "agent/metadata/metadata.h"
#include "agent/net/net.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace paddock::agent::metadata {
namespace {

constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return a << 24 | b << 16 | c << 8 | d; }

subprocess::RunResult RunCmd(const std::vector<std::string>& argv) {
  StatusOr<subprocess::RunResult> r = subprocess::RunCaptured(argv, std::chrono::seconds(20));
  if (r.ok()) return *r;
  subprocess::RunResult failed;
  failed.output = r.status().ToString();
  return failed;
}

// GET `uri` from inside namespace `netns` (or from the host when empty): "<status> <body>".
std::string Fetch(const std::string& netns, const std::string& uri) {
  std::vector<std::string> argv;
  if (!netns.empty()) argv = {"ip", "netns", "exec", netns};
  for (const char* a : {"curl", "-s", "-m", "10", "-w", "\n%{http_code}", uri.c_str()}) argv.emplace_back(a);
  subprocess::RunResult r = RunCmd(argv);
  size_t nl = r.output.rfind('\n');
  if (r.exit_code != 0 || nl == std::string::npos) return fmt::format("curl failed ({}): {}", r.exit_code, r.output);
  return r.output.substr(nl + 1) + " " + r.output.substr(0, nl);
}

class MetadataNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: makes VPC and task namespaces";
    if (RunCmd({"ip", "-V"}).exit_code != 0) GTEST_SKIP() << "needs iproute2's ip";
    if (RunCmd({"curl", "--version"}).exit_code != 0) GTEST_SKIP() << "needs curl";
    const unsigned pid = static_cast<unsigned>(getpid());
    network_.netns_prefix = fmt::format("m{}-", pid % 100000);
    network_.vpc_prefix = fmt::format("w{}-", pid % 100000);
    subnet_ = pid % 200 + 20;
    network_.gateway_cidrs = {fmt::format("10.253.{}.1/24", subnet_)};
    for (const char* id : {"vpc-0one", "vpc-0two"}) {
      StatusOr<net::VpcNetwork> vpc = net::VpcNetworkFor(network_, {id, fmt::format("md-{}", pid)});
      ASSERT_TRUE(vpc.ok()) << vpc.status().ToString();
      vpcs_.push_back(*vpc);
    }
    ready_ = true;

    MetadataServiceOptions o;  // AWS's address; the host's listener on an ephemeral port beside any agent's :80
    o.port = 0;
    o.interface = "lo";
    service_ = std::make_unique<MetadataService>(o);
    Status started = service_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  void TearDown() override {
    if (service_) service_->Stop();
    if (!ready_) return;
    for (const auto& tn : networks_) EXPECT_TRUE(net::DeleteTaskNetwork(network_, tn).ok());
    for (const auto& vpc : vpcs_) {
      StatusOr<bool> gone = net::RemoveVpcNetworkIfUnused(network_, vpc.netns_name);
      EXPECT_TRUE(gone.ok() && *gone) << gone.status().ToString();
    }
    for (const std::string& link : extra_links_) RunCmd({"ip", "link", "del", link});
    std::filesystem::remove(fmt::format("/run/lock/{}vpc.lock", network_.vpc_prefix));
  }

  // A task at .<host> of VPC `vpc` (0 or 1), in the VPC's default group with `peers`.
  net::TaskNetwork Task(const std::string& id, size_t vpc, uint32_t host, std::vector<uint32_t> peers = {}) {
    net::FetchedPolicy p;
    p.fetched_at = net::MonotonicNanos();
    p.policy.vpc_id = vpcs_[vpc].ref.vpc_id;
    p.policy.version = fmt::format("{}-{}", id, host);
    p.policy.groups = {vpc::PolicyGroup{"sg-d", {vpc::PolicyRule{.protocol = "-1", .from_port = -1, .to_port = -1,
                                                                 .cidrs = {}, .groups = {"sg-d"}}},
                                        {vpc::PolicyRule{.protocol = "-1", .from_port = -1, .to_port = -1,
                                                         .cidrs = {"0.0.0.0/0"}, .groups = {}}}}};
    peers.push_back(host);
    for (uint32_t h : peers) p.policy.members.push_back({fmt::format("10.253.{}.{}", subnet_, h), {"sg-d"}});
    StatusOr<net::TaskNetwork> tn = net::CreateTaskNetwork(network_, vpcs_[vpc], p, id, Ip(10, 253, subnet_, host), 24,
                                                           Ip(10, 253, subnet_, 1));
    EXPECT_TRUE(tn.ok()) << tn.status().ToString();
    if (!tn.ok()) return {};
    networks_.push_back(*tn);
    return *tn;
  }

  static TaskProvider Provider(const std::string& ip) {
    return [ip](WithTags) -> StatusOr<TaskFacts> {
      TaskFacts f;
      f.task_json = fmt::format(
          R"({{"taskArn":"arn:aws:ecs:us-east-1:123456789012:task/default/t1","clusterArn":"arn:aws:ecs:us-east-1:)"
          R"(123456789012:cluster/default","launchType":"FARGATE","desiredStatus":"RUNNING","lastStatus":"RUNNING",)"
          R"("taskDefinitionArn":"arn:aws:ecs:us-east-1:123456789012:task-definition/web:1","containers":[)"
          R"({{"name":"web","image":"busybox","lastStatus":"RUNNING",)"
          R"("networkInterfaces":[{{"privateIpv4Address":"{}"}}]}}]}})",
          ip);
      ContainerFacts web;
      web.name = "web";
      web.docker_id = "pdk-test-t1-0";
      f.containers.push_back(web);
      return f;
    };
  }

  net::NetworkOptions network_;
  std::vector<net::VpcNetwork> vpcs_;
  std::vector<std::string> extra_links_;
  uint32_t subnet_ = 0;
  bool ready_ = false;
  std::unique_ptr<MetadataService> service_;
  std::vector<net::TaskNetwork> networks_;
};

TEST_F(MetadataNetnsTest, ATaskReachesItsOwnMetadataInItsVpcAndNoOneElseDoes) {
  net::TaskNetwork t1 = Task("t1", 0, 5);
  net::TaskNetwork t2 = Task("t2", 0, 6, {5});
  net::TaskNetwork t3 = Task("t3", 1, 5);  // another VPC, the same address as t1
  for (const auto& vpc : vpcs_) ASSERT_TRUE(service_->ServeNetwork(vpc.netns_name, vpc.netns_path).ok());
  const std::string ip1 = fmt::format("10.253.{}.5", subnet_);
  ContainerEndpoint ep = service_->RegisterContainer("arn:aws:ecs:us-east-1:123456789012:task/default/t1", "web",
                                                     Provider(ip1), ip1, vpcs_[0].netns_name);
  // AWS's URI: port 80 of the VPC namespace is the service's.
  EXPECT_THAT(ep.v4_uri, ::testing::StartsWith("http://169.254.170.2/v4/"));

  // The task itself: 200 and its document.
  std::string got = Fetch(t1.netns_name, ep.v4_uri);
  EXPECT_THAT(got, ::testing::StartsWith("200 {\"DockerId\":\"pdk-test-t1-0\",\"Name\":\"web\""));
  EXPECT_THAT(Fetch(t1.netns_name, ep.v4_uri + "/task"), ::testing::HasSubstr("\"TaskARN\""));
  // Another task of the VPC that learned the URI: not found; a task of another VPC with the very
  // same address: not found (its VPC's listener); the host: not found.
  EXPECT_EQ(Fetch(t2.netns_name, ep.v4_uri), "404 \"Not found\"");
  EXPECT_EQ(Fetch(t3.netns_name, ep.v4_uri), "404 \"Not found\"");
  EXPECT_EQ(Fetch("", fmt::format("http://169.254.170.2:{}/v4/{}", service_->port(), ep.id)), "404 \"Not found\"");
  // A guessed id from the task: not found.
  EXPECT_EQ(Fetch(t1.netns_name, fmt::format("http://169.254.170.2/v4/{}", std::string(32, '0'))), "404 \"Not found\"");
}

TEST_F(MetadataNetnsTest, AListenerLivesAsLongAsItsUsersAndFollowsItsNamespace) {
  net::TaskNetwork t1 = Task("t1", 0, 5);
  const net::VpcNetwork& vpc = vpcs_[0];
  ASSERT_TRUE(service_->ServeNetwork(vpc.netns_name, vpc.netns_path).ok());
  ASSERT_TRUE(service_->ServeNetwork(vpc.netns_name, vpc.netns_path).ok());
  EXPECT_EQ(service_->PortOf(vpc.netns_name), 80);
  service_->ReleaseNetwork(vpc.netns_name);
  EXPECT_EQ(service_->PortOf(vpc.netns_name), 80);
  service_->ReleaseNetwork(vpc.netns_name);
  EXPECT_EQ(service_->PortOf(vpc.netns_name), 0);

  // Port 80 taken in the namespace (another process of the node): any port of the address.
  MetadataServiceOptions o;
  o.port = 0;
  MetadataService other(o);
  ASSERT_TRUE(other.Start().ok());
  ASSERT_TRUE(other.ServeNetwork(vpc.netns_name, vpc.netns_path).ok());
  ASSERT_TRUE(service_->ServeNetwork(vpc.netns_name, vpc.netns_path).ok());
  EXPECT_NE(service_->PortOf(vpc.netns_name), 80);
  EXPECT_NE(service_->PortOf(vpc.netns_name), 0);
  const std::string ip1 = fmt::format("10.253.{}.5", subnet_);
  ContainerEndpoint ep = service_->RegisterContainer("arn:aws:ecs:us-east-1:123456789012:task/default/t1", "web",
                                                     Provider(ip1), ip1, vpc.netns_name);
  EXPECT_THAT(ep.v4_uri, ::testing::StartsWith(fmt::format("http://169.254.170.2:{}/", service_->PortOf(vpc.netns_name))));
  EXPECT_THAT(Fetch(t1.netns_name, ep.v4_uri), ::testing::StartsWith("200 "));
  other.Stop();
}

// /stats reads the interfaces of the task's namespace through the container's pid: here a
// process started inside the namespace stands in for the container's init.
TEST_F(MetadataNetnsTest, StatsNetworksAreTheTaskNamespaces) {
  net::TaskNetwork t1 = Task("t1", 0, 5);
  ASSERT_TRUE(service_->ServeNetwork(vpcs_[0].netns_name, vpcs_[0].netns_path).ok());
  const std::string ip1 = fmt::format("10.253.{}.5", subnet_);
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  subprocess::UniqueFd read_end(fds[0]), write_end(fds[1]);
  subprocess::Stdio stdio;
  stdio.out = write_end.get();
  StatusOr<subprocess::Child> child = subprocess::Spawn(
      {"ip", "netns", "exec", t1.netns_name, "sh", "-c", "echo ready; exec sleep 60"}, stdio);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  write_end.Reset();
  char buf[6] = {};
  ASSERT_EQ(read(read_end.get(), buf, 5), 5);  // it is inside the namespace now
  EXPECT_STREQ(buf, "ready");

  const int pid = child->pid;
  ContainerEndpoint ep = service_->RegisterContainer(
      "arn:aws:ecs:us-east-1:123456789012:task/default/t1", "web",
      [base = Provider(ip1), pid](WithTags) -> StatusOr<TaskFacts> {
        ASSIGN_OR_RETURN(TaskFacts f, base(WithTags::kNo));
        f.containers[0].pid = pid;  // its cgroups are read from /proc/<pid>/cgroup
        return f;
      },
      ip1, vpcs_[0].netns_name);
  EXPECT_THAT(Fetch(t1.netns_name, ep.v4_uri), ::testing::StartsWith("200 "));  // some traffic on eth0
  std::string stats = Fetch(t1.netns_name, ep.v4_uri + "/stats");
  subprocess::KillAndReap(*child);
  ASSERT_THAT(stats, ::testing::StartsWith("200 "));
  boost::json::object doc = boost::json::parse(stats.substr(4)).as_object();
  const boost::json::object& networks = doc.at("networks").as_object();
  ASSERT_EQ(networks.size(), 1u) << stats;  // eth0 alone: not the host's interfaces, lo left out
  EXPECT_GT(networks.at("eth0").at("rx_bytes").to_number<uint64_t>(), 0u);
  EXPECT_GT(networks.at("eth0").at("tx_bytes").to_number<uint64_t>(), 0u);
  EXPECT_GT(doc.at("memory_stats").at("usage").to_number<uint64_t>(), 0u);
}

TEST_F(MetadataNetnsTest, StartIsIdempotentAboutTheAddress) {
  const std::string link = fmt::format("{}if", network_.netns_prefix);
  ASSERT_EQ(RunCmd({"ip", "link", "add", link, "type", "veth", "peer", "name", link + "2"}).exit_code, 0);
  extra_links_.push_back(link);
  MetadataServiceOptions o;
  o.port = 0;
  o.interface = link;
  MetadataService first(o);
  ASSERT_TRUE(first.Start().ok());
  MetadataService second(o);  // the address is there already: kept, not added twice
  ASSERT_TRUE(second.Start().ok());
  subprocess::RunResult shown = RunCmd({"ip", "-o", "-4", "addr", "show", "dev", link});
  size_t at = shown.output.find("169.254.170.2/32");
  EXPECT_NE(at, std::string::npos) << shown.output;
  EXPECT_EQ(shown.output.find("169.254.170.2/32", at + 1), std::string::npos);
  MetadataServiceOptions missing;
  missing.port = 0;
  missing.interface = fmt::format("{}none", network_.netns_prefix);
  EXPECT_EQ(MetadataService(missing).Start().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace paddock::agent::metadata
