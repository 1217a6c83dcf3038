#include "cli/node.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "aws/sigv4.h"
#include "cli/config.h"
#include "cli/node_network.h"
#include "common/clock.h"
#include "ecs/testing/temp_store.h"
#include "http/client.h"
#include "sts/sessions.h"

namespace paddock::cli {
namespace {
namespace fs = std::filesystem;

std::string TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "paddock-node-XXXXXX").string();
  return mkdtemp(tmpl.data());
}

TEST(ConfigTest, FileValuesAndValidation) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  std::ofstream(path) << "listen = \"127.0.0.1:0\"\nstate_dir = \"/tmp/x\"\naccept_any_credentials = true\n"
                         "default_account = \"111122223333\"\napi_rate_limits = \"aws\"\nshort_timings = true\n";
  ServerConfig c;
  EXPECT_FALSE(c.short_timings);  // ECS's timing minimums unless a test asks otherwise
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_TRUE(c.short_timings);
  EXPECT_EQ(c.listen, "127.0.0.1:0");
  EXPECT_EQ(c.state_dir, "/tmp/x");
  EXPECT_TRUE(c.accept_any_credentials);
  EXPECT_EQ(c.default_account, "111122223333");
  EXPECT_EQ(c.api_rate_limits, "aws");
  EXPECT_TRUE(ValidateConfig(c).ok());

  std::ofstream(path) << "nonsense = 1\n";
  EXPECT_FALSE(LoadConfigFile(path, c).ok());
  c.api_rate_limits = "sometimes";
  EXPECT_FALSE(ValidateConfig(c).ok());
  c.api_rate_limits = "off";
  c.listen = "nohost";
  EXPECT_FALSE(ValidateConfig(c).ok());
  fs::remove_all(dir);
}

TEST(ConfigTest, DnsTable) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  EXPECT_TRUE(ServerConfig{}.dns.upstreams.empty());  // the host's resolv.conf then
  std::ofstream(path) << "[dns]\nupstreams = [\"10.0.0.2\", \"127.0.0.1:5353\"]\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.dns.upstreams, (std::vector<std::string>{"10.0.0.2", "127.0.0.1:5353"}));
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"[dns]\nupstreams = \"10.0.0.2\"\n", "[dns]\nupstreams = [53]\n", "[dns]\nforward = 1\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  c.dns.upstreams = {"udp://10.0.0.2"};
  EXPECT_FALSE(ValidateConfig(c).ok());
  fs::remove_all(dir);
}

// Issue 16 §3: the [agent] table names this host's overlay address beside its integer limits.
TEST(ConfigTest, AgentOverlayAddress) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  EXPECT_EQ(ServerConfig{}.agent.overlay_address, "");  // no overlay unless asked
  std::ofstream(path) << "[agent]\npids_per_task = 100\noverlay_address = \"10.0.0.7\"\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.agent.overlay_address, "10.0.0.7");
  EXPECT_EQ(c.agent.pids_per_task, 100);
  for (const char* bad : {"127.0.0.1", "169.254.1.1", "224.0.0.5", "0.0.0.0", "10.0.0", "host.lan"}) {
    std::ofstream(path) << "[agent]\noverlay_address = \"" << bad << "\"\n";
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  std::ofstream(path) << "[agent]\noverlay_address = 7\n";
  ServerConfig b;
  EXPECT_FALSE(LoadConfigFile(path, b).ok());
  fs::remove_all(dir);
}

// Issue 16 §2: servers sharing a store must share the node key that seals SSM and Secrets Manager
// values; one started with another key is refused before it serves, naming the file to copy.
TEST(NodeKeyOfStoreTest, AServerWithAnotherNodeKeyIsRefused) {
  paddock::testing::TempStore store;
  const std::string a(32, 'a'), b(32, 'b');
  auto first = kms::KeyRing::InMemory({{1, a}});
  ASSERT_TRUE(CheckNodeKeyOfStore(*store, *first).ok());
  EXPECT_TRUE(CheckNodeKeyOfStore(*store, *kms::KeyRing::InMemory({{1, a}})).ok());  // a replica with a copy
  EXPECT_TRUE(CheckNodeKeyOfStore(*store, *kms::KeyRing::InMemory({{1, a}, {2, b}})).ok());  // rotated since
  Status other = CheckNodeKeyOfStore(*store, *kms::KeyRing::InMemory({{1, b}}));
  EXPECT_EQ(other.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.message().find("keys/master.key"), std::string::npos) << other.message();
}

TEST(ConfigTest, ImagesTable) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  ServerConfig defaults;
  EXPECT_TRUE(defaults.images.insecure_registries.empty());
  EXPECT_TRUE(defaults.images.insecure_loopback);
  EXPECT_EQ(defaults.images.pull_timeout_seconds, 300);
  std::ofstream(path) << "listen = \"127.0.0.1:0\"\n[images]\ninsecure_registries = [\"registry.lan:5000\", \"r2\"]\n"
                         "local_registries = [\"127.0.0.1:5000\"]\n"
                         "insecure_loopback = false\npull_timeout_seconds = 30\nauth_file = \"/etc/auth.json\"\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.images.insecure_registries, (std::vector<std::string>{"registry.lan:5000", "r2"}));
  EXPECT_FALSE(c.images.insecure_loopback);
  EXPECT_EQ(c.images.local_registries, (std::vector<std::string>{"127.0.0.1:5000"}));
  EXPECT_TRUE(defaults.images.local_registries.empty());  // no registry on the node is reachable by default
  EXPECT_EQ(c.images.pull_timeout_seconds, 30);
  EXPECT_EQ(c.images.auth_file, "/etc/auth.json");
  EXPECT_TRUE(ValidateConfig(c).ok());

  for (const char* bad : {"[images]\npull = 1\n", "[images]\ninsecure_registries = \"x\"\n",
                          "[images]\ninsecure_registries = [1]\n", "[images]\npull_timeout_seconds = \"5\"\n",
                          "images = 3\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  ServerConfig v;
  v.images.pull_timeout_seconds = 0;
  EXPECT_FALSE(ValidateConfig(v).ok());
  v.images.pull_timeout_seconds = 10;
  v.images.insecure_registries = {"http://registry.lan:5000"};
  EXPECT_FALSE(ValidateConfig(v).ok());
  v.images.insecure_registries.clear();
  v.images.local_registries = {"127.0.0.1:5000/v2"};
  EXPECT_FALSE(ValidateConfig(v).ok());
  v.images.local_registries.clear();

  // The cluster's registry: on by default, where the API listens unless told.
  EXPECT_TRUE(defaults.images.cluster_registry);
  EXPECT_EQ(defaults.images.cluster_registry_listen, "");
  std::ofstream(path) << "[images]\ncluster_registry = false\ncluster_registry_listen = \"0.0.0.0:5000\"\n";
  ServerConfig r;
  ASSERT_TRUE(LoadConfigFile(path, r).ok());
  EXPECT_FALSE(r.images.cluster_registry);
  EXPECT_EQ(r.images.cluster_registry_listen, "0.0.0.0:5000");
  EXPECT_TRUE(ValidateConfig(r).ok());
  v.images.cluster_registry_listen = "no-port";
  EXPECT_FALSE(ValidateConfig(v).ok());
  fs::remove_all(dir);
}

// The red team's follow-ups to issue 9: the node-wide process bound and each task's share of
// connection tracking, their defaults and their ranges.
TEST(ConfigTest, NodeProcessesAndTaskFlows) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  ServerConfig defaults;
  EXPECT_EQ(defaults.agent.pids_per_node, -1);  // pid_max less the host's reserve
  EXPECT_EQ(defaults.agent.flows_per_task, 4096);
  EXPECT_EQ(defaults.agent.new_flows_per_second, 2000);
  std::ofstream(path) << "[agent]\npids_per_node = 20000\nflows_per_task = 64\nnew_flows_per_second = 0\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.agent.pids_per_node, 20000);
  EXPECT_EQ(c.agent.flows_per_task, 64);
  EXPECT_EQ(c.agent.new_flows_per_second, 0);
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (auto set : std::initializer_list<void (*)(ServerConfig&)>{
           [](ServerConfig& v) { v.agent.pids_per_node = -2; }, [](ServerConfig& v) { v.agent.pids_per_node = 4194305; },
           [](ServerConfig& v) { v.agent.flows_per_task = -1; },
           [](ServerConfig& v) { v.agent.new_flows_per_second = 1000001; }}) {
    ServerConfig v;
    set(v);
    EXPECT_FALSE(ValidateConfig(v).ok());
  }
  fs::remove_all(dir);
}

// The limits of issue 9: [images] max_unpacked_bytes and [agent] pids_per_task, their defaults
// (20 GiB, 4,096) and their ranges.
TEST(ConfigTest, ImageAndTaskLimits) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  ServerConfig defaults;
  EXPECT_EQ(defaults.images.max_unpacked_bytes, int64_t{20} << 30);
  EXPECT_EQ(defaults.agent.pids_per_task, 4096);
  std::ofstream(path) << "[images]\nmax_unpacked_bytes = 8388608\n[agent]\npids_per_task = 64\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.images.max_unpacked_bytes, 8388608);
  EXPECT_EQ(c.agent.pids_per_task, 64);
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.agent.pids_per_task = 0;  // no bound
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"[agent]\npids_per_task = \"64\"\n", "[agent]\nnproc = 1\n",
                          "[images]\nmax_unpacked_bytes = \"1G\"\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  ServerConfig v;
  v.agent.pids_per_task = -1;
  EXPECT_FALSE(ValidateConfig(v).ok());
  v.agent.pids_per_task = 4194305;
  EXPECT_FALSE(ValidateConfig(v).ok());
  v.agent.pids_per_task = 1;
  v.images.max_unpacked_bytes = 0;
  EXPECT_FALSE(ValidateConfig(v).ok());
  fs::remove_all(dir);
}

TEST(ConfigTest, AgentSettingsAndEc2Instances) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  ServerConfig defaults;
  EXPECT_EQ(defaults.agent_long_polls, 16);
  EXPECT_EQ(defaults.agent_timeout_seconds, 60);
  EXPECT_TRUE(defaults.ec2_instances.empty());
  std::ofstream(path) << "agent_long_polls = 4\nagent_timeout_seconds = 6\n"
                         "[[ec2_instance]]\ncluster = \"a\"\n[[ec2_instance]]\ncluster = \"b\"\ncpu = 2048\nmemory = 1024\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.agent_long_polls, 4);
  EXPECT_EQ(c.agent_timeout_seconds, 6);
  ASSERT_EQ(c.ec2_instances.size(), 2u);
  EXPECT_EQ(c.ec2_instances[0].cluster, "a");
  EXPECT_EQ(c.ec2_instances[0].cpu, 0);
  EXPECT_EQ(c.ec2_instances[1].cluster, "b");
  EXPECT_EQ(c.ec2_instances[1].cpu, 2048);
  EXPECT_EQ(c.ec2_instances[1].memory, 1024);
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"[[ec2_instance]]\ncpu = 1\ncluster = 3\n", "[[ec2_instance]]\nzone = \"x\"\n",
                          "ec2_instance = 1\n", "agent_long_polls = \"8\"\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  ServerConfig v;
  v.agent_timeout_seconds = 1;
  EXPECT_FALSE(ValidateConfig(v).ok());
  v.agent_timeout_seconds = 60;
  v.ec2_instances.push_back({});
  EXPECT_FALSE(ValidateConfig(v).ok());  // no cluster
  fs::remove_all(dir);
}

// host_lost_seconds: when a silent agent's instance is lost (docs/contracts/task.md, "Losing a
// host"); at least twice the agent timeout, so the agents' fence time comes after they count as
// disconnected.
TEST(ConfigTest, HostLostSeconds) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  EXPECT_EQ(HostLostSeconds(ServerConfig{}), 300);
  EXPECT_TRUE(ValidateConfig(ServerConfig{}).ok());
  ServerConfig slow;  // agents that call rarely (bench/ceiling.sh): unset, it follows the timeout
  slow.agent_timeout_seconds = 3600;
  EXPECT_TRUE(ValidateConfig(slow).ok());
  EXPECT_EQ(HostLostSeconds(slow), 7200);
  std::ofstream(path) << "agent_timeout_seconds = 3\nhost_lost_seconds = 6\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(HostLostSeconds(c), 6);
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.host_lost_seconds = 5;
  Status refused = ValidateConfig(c);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("host_lost_seconds must be 2 x agent_timeout_seconds (6)"), std::string::npos)
      << refused.ToString();
  std::ofstream(path) << "host_lost_seconds = \"300\"\n";
  ServerConfig b;
  EXPECT_FALSE(LoadConfigFile(path, b).ok());
  fs::remove_all(dir);
}

TEST(ConfigTest, FargateCapacityAndQuota) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  ServerConfig defaults;
  EXPECT_EQ(defaults.quotas.fargate_vcpus_per_account, 4000);
  // The host's resources by default.
  ecs::task::FargateLimits host = FargateLimitsFor(defaults, 2048, 23000);
  EXPECT_EQ(host.cpu, 2048);
  EXPECT_EQ(host.memory, 23000);
  EXPECT_EQ(host.vcpus_per_account, 4000);
  std::ofstream(path) << "[fargate]\ncpu = 1024\nmemory = 2048\novercommit = 1.5\n[quotas]\nfargate_vcpus_per_account = 2\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_TRUE(ValidateConfig(c).ok());
  ecs::task::FargateLimits l = FargateLimitsFor(c, 2048, 23000);
  EXPECT_EQ(l.cpu, 1536);
  EXPECT_EQ(l.memory, 3072);
  EXPECT_EQ(l.vcpus_per_account, 2);
  std::ofstream(path) << "[fargate]\novercommit = 2\n";
  ServerConfig whole;
  ASSERT_TRUE(LoadConfigFile(path, whole).ok());
  EXPECT_EQ(FargateLimitsFor(whole, 2048, 1000).cpu, 4096);
  EXPECT_EQ(FargateLimitsFor(whole, 2048, 1000).memory, 2000);
  for (const char* bad : {"[fargate]\ncpu = \"1\"\n", "[fargate]\nzone = 1\n", "[fargate]\novercommit = \"2\"\n",
                          "fargate = 1\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  for (auto change : std::vector<std::function<void(ServerConfig&)>>{
           [](ServerConfig& v) { v.fargate.cpu = -1; }, [](ServerConfig& v) { v.fargate.overcommit = 0; },
           [](ServerConfig& v) { v.fargate.overcommit = 101; },
           [](ServerConfig& v) { v.quotas.fargate_vcpus_per_account = 0; }}) {
    ServerConfig v;
    change(v);
    EXPECT_FALSE(ValidateConfig(v).ok());
  }
  fs::remove_all(dir);
}

TEST(ConfigTest, SchedulerAndQuotas) {
  std::string dir = TempDir();
  std::string path = dir + "/paddock.toml";
  ServerConfig defaults;
  EXPECT_EQ(defaults.scheduler.settle_seconds, 40);
  EXPECT_EQ(defaults.scheduler.backoff_cap_seconds, 900);
  EXPECT_EQ(defaults.quotas.services_per_cluster, 5000);
  std::ofstream(path) << "[scheduler]\nsettle_seconds = 0\nresync_seconds = 2\nbackoff_base_seconds = 1\n"
                         "backoff_cap_seconds = 4\n[quotas]\ntasks_per_service = 7\n";
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, c).ok());
  EXPECT_EQ(c.scheduler.settle_seconds, 0);
  EXPECT_EQ(c.scheduler.resync_seconds, 2);
  EXPECT_EQ(c.scheduler.backoff_base_seconds, 1);
  EXPECT_EQ(c.scheduler.backoff_cap_seconds, 4);
  EXPECT_EQ(c.quotas.tasks_per_service, 7);
  EXPECT_EQ(c.quotas.services_per_cluster, 5000);
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"[scheduler]\nsettle = 1\n", "[scheduler]\nsettle_seconds = \"1\"\n", "scheduler = 1\n",
                          "[quotas]\nservices = 1\n"}) {
    std::ofstream(path) << bad;
    ServerConfig b;
    EXPECT_FALSE(LoadConfigFile(path, b).ok()) << bad;
  }
  ServerConfig v;
  v.scheduler.backoff_base_seconds = 10;
  v.scheduler.backoff_cap_seconds = 5;
  EXPECT_FALSE(ValidateConfig(v).ok());
  v = ServerConfig{};
  v.quotas.tasks_per_service = 0;
  EXPECT_FALSE(ValidateConfig(v).ok());
  fs::remove_all(dir);
}

TEST(NodeTest, ServesSignedRequestsAndBootstrapsAProfile) {
  std::string dir = TempDir();
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.state_dir = dir + "/state";
  auto node = Node::Open(config);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto port = (*node)->Start();
  ASSERT_TRUE(port.ok());
  auto boot = Bootstrap(**node, config, "http://127.0.0.1:" + std::to_string(*port), /*update_home=*/false);
  ASSERT_TRUE(boot.ok()) << boot.status().ToString();
  EXPECT_TRUE(fs::exists(boot->credentials_path));
  EXPECT_TRUE(fs::exists(boot->config_path));

  auto cred = (*node)->accounts().FindActiveKey(AccessKeyId(boot->access_key_id));
  ASSERT_TRUE(cred.ok() && cred->has_value());
  http::Client client("127.0.0.1", *port);
  auto call = [&](std::string secret) {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "AmazonEC2ContainerServiceV20141113.ListClusters"},
                   {"Host", "127.0.0.1:" + std::to_string(*port)}};
    req.body = "{}";
    aws::SignRequest(req, {boot->access_key_id, secret}, "us-east-1", "ecs", SystemClock::Get().Now());
    return client.Send(req);
  };
  auto ok = call((*cred)->secret);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(ok->body, "{\"clusterArns\":[]}");
  auto bad = call("wrong");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(bad->GetHeader("x-amzn-ErrorType"), "InvalidSignatureException");

  // A second bootstrap reuses the key it wrote.
  auto again = Bootstrap(**node, config, "http://127.0.0.1:" + std::to_string(*port), false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->access_key_id, boot->access_key_id);
  (*node)->Stop();
  fs::remove_all(dir);
}

// STS sessions (issue 11) authenticate through the node's resolver beside long-term keys and
// agent credentials, and only while their account lives: BeginDeletion removes the account's
// keys at once, and its sessions must stop at the same moment, not when the reapers run.
TEST(NodeTest, SessionsAuthenticateUntilTheirAccountIsBeingDeleted) {
  std::string dir = TempDir();
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.state_dir = dir + "/state";
  auto node = Node::Open(config);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto port = (*node)->Start();
  ASSERT_TRUE(port.ok());
  auto account = (*node)->accounts().CreateAccount(std::nullopt, "doomed");
  ASSERT_TRUE(account.ok());
  aws::Principal root;
  root.account = account->id;
  root.arn = iam::RootArn(account->id);
  root.user_id = account->id.str();
  sts::Sessions sessions((*node)->store());
  auto session = sessions.IssueSessionToken(root, std::chrono::hours(1), SystemClock::Get().Now());
  ASSERT_TRUE(session.ok()) << session.status().ToString();

  http::Client client("127.0.0.1", *port);
  auto list_clusters = [&] {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", "AmazonEC2ContainerServiceV20141113.ListClusters"},
                   {"Host", "127.0.0.1:" + std::to_string(*port)},
                   {"X-Amz-Security-Token", session->session_token}};
    req.body = "{}";
    aws::SignRequest(req, {session->access_key_id.str(), session->secret_access_key}, "us-east-1", "ecs",
                     SystemClock::Get().Now());
    return client.Send(req);
  };
  auto ok = list_clusters();
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200) << ok->body;

  ASSERT_TRUE((*node)->accounts().BeginDeletion(account->id).ok());
  auto refused = list_clusters();
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(refused->GetHeader("x-amzn-ErrorType"), "UnrecognizedClientException") << refused->body;
  (*node)->Stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace paddock::cli
