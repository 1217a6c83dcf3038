#include "ecs/instance/instances.h"

#include <gtest/gtest.h>

#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::instance {
namespace {
namespace json = boost::json;
using std::chrono::seconds;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

json::array Resources(int64_t cpu, int64_t memory, std::vector<std::string> ports = {}) {
  json::array p;
  for (auto& x : ports) p.push_back(json::string(x));
  return json::array{json::object{{"name", "CPU"}, {"type", "INTEGER"}, {"integerValue", cpu}},
                     json::object{{"name", "MEMORY"}, {"type", "INTEGER"}, {"integerValue", memory}},
                     json::object{{"name", "PORTS"}, {"type", "STRINGSET"}, {"stringSetValue", std::move(p)}}};
}

int64_t ResourceValue(const json::object& ci, std::string_view which, std::string_view name) {
  for (const auto& r : ci.at(which).as_array())
    if (r.at("name").as_string() == name) return r.at("integerValue").as_int64();
  return -1;
}

class InstancesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clusters_.AddUsage(instances_.cluster_usage());
    ASSERT_TRUE(clusters_.Create(kScope, json::object{{"clusterName", "prod"}}).ok());
  }

  // Registers an instance in "prod" and returns its id.
  std::string Register(RegisterRequest r = {}) {
    if (r.cluster.empty()) r.cluster = "prod";
    if (!r.total_resources) r.total_resources = Resources(2048, 4096, {"22"});
    auto s = instances_.Register(kScope, r, clock_.Now());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return "";
    std::string arn(json::parse(*s).at("containerInstanceArn").as_string());
    return arn.substr(arn.rfind('/') + 1);
  }

  InstanceRef Ref(const std::string& id) { return InstanceRef{id, std::nullopt, id}; }

  json::object Describe(const std::string& id, Include include = {}) {
    auto d = instances_.Describe(kScope, "prod", {Ref(id)}, include, clock_.Now());
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->instances.size(), 1u);
    return json::parse(d->instances.at(0)).as_object();
  }

  int64_t RegisteredCount() {
    auto d = clusters_.Describe(kScope, {"prod"}, {});
    return json::parse(d->clusters.at(0)).at("registeredContainerInstancesCount").as_int64();
  }

  paddock::testing::FakeClock clock_{TimePoint(seconds(1'780'000'000))};
  paddock::testing::TempStore store_;
  cluster::Clusters clusters_{*store_};
  ContainerInstances instances_{*store_, clusters_};
};

TEST(InstanceRefTest, ParsesIdsAndArns) {
  auto id = ParseInstanceRef("0123456789abcdef0123456789abcdef", kScope, "X", kCaller);
  ASSERT_TRUE(id.ok());
  EXPECT_FALSE(id->cluster.has_value());
  auto arn = ParseInstanceRef("arn:aws:ecs:us-east-1:123456789012:container-instance/prod/0123456789abcdef0123456789abcdef",
                              kScope, "X", kCaller);
  ASSERT_TRUE(arn.ok());
  EXPECT_EQ(*arn->cluster, "prod");
  EXPECT_EQ(arn->id, "0123456789abcdef0123456789abcdef");
  auto other = ParseInstanceRef(
      "arn:aws:ecs:us-east-1:210987654321:container-instance/prod/0123456789abcdef0123456789abcdef", kScope, "X", kCaller);
  EXPECT_EQ(api::AnswerFor(other.status()).type, "AccessDeniedException");
  EXPECT_EQ(api::AnswerFor(ParseInstanceRef("nope", kScope, "X", kCaller).status()).type, "InvalidParameterException");
  EXPECT_EQ(api::AnswerFor(ParseInstanceRef("arn:aws:ecs:us-east-1:123456789012:cluster/prod", kScope, "X", kCaller).status()).type,
            "InvalidParameterException");
}

TEST(AttributeTest, NamesAndValuesFollowAwsRules) {
  EXPECT_TRUE(ValidateAttribute({"stack", "prod"}).ok());
  EXPECT_TRUE(ValidateAttribute({"a/b\\c.d-e_f", "x@y:z /w"}).ok());
  EXPECT_TRUE(ValidateAttribute({"flag", std::nullopt}).ok());
  EXPECT_FALSE(ValidateAttribute({"", "x"}).ok());
  EXPECT_FALSE(ValidateAttribute({"bad name", "x"}).ok());
  EXPECT_FALSE(ValidateAttribute({std::string(129, 'a'), "x"}).ok());
  EXPECT_FALSE(ValidateAttribute({"n", " lead"}).ok());
  EXPECT_FALSE(ValidateAttribute({"n", "trail "}).ok());
  EXPECT_FALSE(ValidateAttribute({"n", "semi;colon"}).ok());
  EXPECT_FALSE(ValidateAttribute({"n", ""}).ok());
}

TEST_F(InstancesTest, RegisterReportsResourcesAttributesAndCountsInTheCluster) {
  RegisterRequest r;
  r.identity_document = R"({"instanceId":"i-0abc","availabilityZone":"us-east-1c","instanceType":"m5.large","imageId":"ami-1"})";
  r.version_info = json::object{{"agentVersion", "1.80.0"}, {"agentHash", "abc"}, {"dockerVersion", "DockerVersion: 20.10"}};
  r.attributes = {{"stack", "prod"}};
  std::string id = Register(r);
  json::object ci = Describe(id);
  EXPECT_EQ(ci.at("containerInstanceArn").as_string(), ContainerInstanceArn(kScope, "prod", id));
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(ci.at("ec2InstanceId"), "i-0abc");
  EXPECT_EQ(ci.at("status"), "ACTIVE");
  EXPECT_EQ(ci.at("agentConnected"), true);
  EXPECT_EQ(ResourceValue(ci, "registeredResources", "CPU"), 2048);
  EXPECT_EQ(ResourceValue(ci, "remainingResources", "MEMORY"), 4096);
  EXPECT_EQ(ResourceValue(ci, "registeredResources", "PORTS_UDP"), 0);  // always present
  std::map<std::string, std::string> attrs;
  for (const auto& a : ci.at("attributes").as_array())
    attrs[std::string(a.at("name").as_string())] = a.as_object().contains("value") ? std::string(a.at("value").as_string()) : "";
  EXPECT_EQ(attrs["ecs.instance-type"], "m5.large");
  EXPECT_EQ(attrs["ecs.availability-zone"], "us-east-1c");
  EXPECT_EQ(attrs["ecs.ami-id"], "ami-1");
  EXPECT_EQ(attrs["ecs.os-type"], "linux");
  EXPECT_EQ(attrs["stack"], "prod");
  EXPECT_EQ(ci.at("versionInfo").at("agentVersion"), "1.80.0");
  EXPECT_EQ(RegisteredCount(), 1);

  // Without a document the EC2 instance id is generated: i- and 17 hex digits.
  std::string second = Register();
  std::string ec2(Describe(second).at("ec2InstanceId").as_string());
  EXPECT_EQ(ec2.size(), 19u);
  EXPECT_EQ(ec2.substr(0, 2), "i-");
  EXPECT_EQ(RegisteredCount(), 2);
}

TEST_F(InstancesTest, RegisterRefusesBadInputAndUnknownOrInactiveClustersWritingNothing) {
  RegisterRequest r;
  r.cluster = "prod";
  r.total_resources = json::array{json::object{{"name", "CPU"}, {"type", "INTEGER"}, {"integerValue", -1}}};
  EXPECT_EQ(api::AnswerFor(instances_.Register(kScope, r, clock_.Now()).status()).type, "InvalidParameterException");
  r.total_resources = json::array{json::object{{"name", "PORTS"}, {"type", "STRINGSET"}, {"stringSetValue", json::array{"http"}}}};
  EXPECT_EQ(api::AnswerFor(instances_.Register(kScope, r, clock_.Now()).status()).type, "InvalidParameterException");
  r.total_resources.reset();
  r.identity_document = "not json";
  EXPECT_EQ(api::AnswerFor(instances_.Register(kScope, r, clock_.Now()).status()).type, "InvalidParameterException");
  r.identity_document.reset();
  for (int i = 0; i < 11; ++i) r.attributes.push_back({fmt::format("custom{}", i), "v"});
  EXPECT_EQ(api::AnswerFor(instances_.Register(kScope, r, clock_.Now()).status()).type, "AttributeLimitExceededException");
  r.attributes.clear();
  r.cluster = "ghost";
  EXPECT_EQ(api::AnswerFor(instances_.Register(kScope, r, clock_.Now()).status()).type, "ClusterNotFoundException");
  EXPECT_EQ(RegisteredCount(), 0);
  ListQuery q;
  q.cluster = "prod";
  EXPECT_TRUE(instances_.List(kScope, q, clock_.Now())->items.empty());
}

TEST_F(InstancesTest, AgentConnectedFollowsHeartbeats) {
  std::string id = Register();
  EXPECT_EQ(Describe(id).at("agentConnected"), true);
  clock_.Advance(kAgentTimeout + seconds(1));
  EXPECT_EQ(Describe(id).at("agentConnected"), false);
  json::object health = Describe(id, Include{false, true}).at("healthStatus").as_object();
  EXPECT_EQ(health.at("overallStatus"), "IMPAIRED");
  ASSERT_TRUE(instances_.Heartbeat(kScope, "prod", id, clock_.Now()).ok());
  EXPECT_EQ(Describe(id).at("agentConnected"), true);
  EXPECT_EQ(Describe(id, Include{false, true}).at("healthStatus").at("overallStatus"), "OK");
  EXPECT_EQ(instances_.Heartbeat(kScope, "prod", std::string(32, 'f'), clock_.Now()).code(), StatusCode::kNotFound);
}

// Servers sharing one store (issue 16), and a restarted server: an agent connected to one is
// connected for all, through the stored heartbeat, which is written at most every quarter of the
// timeout — so another server may see the agent disconnected that much early, never late.
TEST_F(InstancesTest, EveryProcessOnTheStoreSeesTheStoredHeartbeat) {
  std::string id = Register();
  ContainerInstances other(*store_, clusters_);  // another server on the store, or this one restarted
  auto connected = [&](ContainerInstances& instances) {
    auto d = instances.Describe(kScope, "prod", {Ref(id)}, {}, clock_.Now());
    EXPECT_TRUE(d.ok() && d->instances.size() == 1u);
    return d.ok() && !d->instances.empty() && json::parse(d->instances[0]).at("agentConnected") == true;
  };
  EXPECT_TRUE(connected(other)) << "registered through the first";
  clock_.Advance(kAgentTimeout + std::chrono::seconds(1));
  EXPECT_FALSE(connected(other));
  EXPECT_FALSE(connected(instances_));
  ASSERT_TRUE(other.Heartbeat(kScope, "prod", id, clock_.Now()).ok());
  EXPECT_TRUE(connected(instances_)) << "a heartbeat through the other";
  clock_.Advance(kAgentTimeout / 8);
  ASSERT_TRUE(other.Heartbeat(kScope, "prod", id, clock_.Now()).ok());  // kept in memory only
  clock_.Advance(kAgentTimeout - kAgentTimeout / 8 + std::chrono::seconds(1));
  EXPECT_TRUE(connected(other)) << "its own heartbeat is a timeout old less an eighth";
  EXPECT_FALSE(connected(instances_)) << "the stored one is a timeout old";
}

// Losing a host (docs/contracts/container-instance.md): the ACTIVE and DRAINING instances whose
// agent has been silent longer than the grace, of every account; not a connected one, a
// deregistered one, nor one whose agent runs in a server ([[ec2_instance]]).
TEST_F(InstancesTest, LostInstancesAreTheSilentActiveAndDrainingOnesOfEveryAccount) {
  const std::string active = Register(), draining = Register(), alive = Register(), gone = Register();
  RegisterRequest in_process;
  in_process.agent = AgentKind::kInProcess;
  const std::string server_own = Register(in_process);
  const Scope other{AccountId("210987654321"), Region("eu-west-1")};
  ASSERT_TRUE(clusters_.Create(other, json::object{{"clusterName", "prod"}}).ok());
  RegisterRequest elsewhere;
  elsewhere.cluster = "prod";
  elsewhere.total_resources = Resources(1024, 1024, {});
  auto registered = instances_.Register(other, elsewhere, clock_.Now());
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  std::string other_arn(json::parse(*registered).at("containerInstanceArn").as_string());
  const std::string other_id = other_arn.substr(other_arn.rfind('/') + 1);
  ASSERT_TRUE(instances_.UpdateState(kScope, "prod", {Ref(draining)}, "DRAINING", clock_.Now()).ok());
  ASSERT_TRUE(instances_.Deregister(kScope, "prod", Ref(gone), false, clock_.Now()).ok());

  auto lost = [&](std::chrono::milliseconds grace) {
    std::set<std::string> ids;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto found, instances_.LostInstances(txn, clock_.Now(), grace));
      for (const auto& l : found) {
        ids.insert(l.id);
        EXPECT_TRUE(l.ec2_instance_id.starts_with("i-")) << l.ec2_instance_id;
        EXPECT_EQ(l.cluster, "prod");
      }
      return OkStatus();
    }).ok());
    return ids;
  };
  clock_.Advance(seconds(300));
  ASSERT_TRUE(instances_.Heartbeat(kScope, "prod", alive, clock_.Now()).ok());
  EXPECT_EQ(lost(seconds(300)), std::set<std::string>{}) << "not more than the grace yet";
  clock_.Advance(seconds(1));
  EXPECT_EQ(lost(seconds(300)), (std::set<std::string>{active, draining, other_id}));
  EXPECT_FALSE(lost(seconds(300)).contains(server_own)) << "its agent is a server, which does not fence";

  auto still = [&](const std::string& id) {
    bool out = false;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(out, instances_.StillLost(txn, ContainerInstances::Lost{kScope, "prod", id, ""}, clock_.Now(),
                                                 seconds(300)));
      return OkStatus();
    }).ok());
    return out;
  };
  EXPECT_TRUE(still(active));
  ASSERT_TRUE(instances_.Heartbeat(kScope, "prod", active, clock_.Now()).ok());
  EXPECT_FALSE(still(active)) << "its agent called since the list was read";
  EXPECT_FALSE(still(gone));
}

TEST_F(InstancesTest, ReRegistrationKeepsIdentityCustomAttributesAndReservations) {
  std::string id = Register();
  ASSERT_TRUE(instances_.PutAttributes(kScope, "prod", {{{"team", "core"}, Ref(id)}}).ok());
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) {
    return instances_.Reserve(txn, kScope, "prod", id, "task1", Demand{512, 1024, {8080}, {}});
  }).ok());
  double registered_at = Describe(id).at("registeredAt").as_double();
  clock_.Advance(seconds(30));
  RegisterRequest again;
  again.container_instance = Ref(id);
  again.total_resources = Resources(4096, 8192, {"22"});
  Register(again);
  json::object ci = Describe(id);
  EXPECT_EQ(ci.at("registeredAt").as_double(), registered_at);
  EXPECT_EQ(ResourceValue(ci, "registeredResources", "CPU"), 4096);
  EXPECT_EQ(ResourceValue(ci, "remainingResources", "CPU"), 4096 - 512);
  EXPECT_EQ(ResourceValue(ci, "remainingResources", "MEMORY"), 8192 - 1024);
  bool team = false;
  for (const auto& a : ci.at("attributes").as_array()) team |= a.at("name") == "team";
  EXPECT_TRUE(team);
  EXPECT_EQ(RegisteredCount(), 1);
}

// The deregistration hook (the task owner's part of a forced deregistration) runs inside the
// deregistration's transaction, once, when the instance goes INACTIVE: its error leaves the
// instance ACTIVE, and what it returns runs after the commit.
TEST_F(InstancesTest, TheDeregistrationHookRunsInItsTransactionAndItsErrorChangesNothing) {
  std::string id = Register();
  int calls = 0, after = 0;
  instances_.SetDeregistrationHook([&](store::WriteTxn&, const Scope& scope, std::string_view cluster,
                                       std::string_view target, TimePoint) -> StatusOr<std::function<void()>> {
    ++calls;
    EXPECT_EQ(scope.account.str(), kScope.account.str());
    EXPECT_EQ(cluster, "prod");
    EXPECT_EQ(target, id);
    if (calls == 1) return Internal("the task owner failed");
    return std::function<void()>([&] { ++after; });
  });
  auto refused = instances_.Deregister(kScope, "prod", Ref(id), true, clock_.Now());
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(Describe(id).at("status"), "ACTIVE");
  EXPECT_EQ(after, 0);
  ASSERT_TRUE(instances_.Deregister(kScope, "prod", Ref(id), true, clock_.Now()).ok());
  EXPECT_EQ(Describe(id).at("status"), "INACTIVE");
  EXPECT_EQ(after, 1);
  ASSERT_TRUE(instances_.Deregister(kScope, "prod", Ref(id), true, clock_.Now()).ok());  // a repeat
  EXPECT_EQ(calls, 2);
  instances_.SetDeregistrationHook(nullptr);
}

TEST_F(InstancesTest, ReserveMarkRunningReleaseAccountResourcesAndCounts) {
  std::string id = Register();
  auto reserve = [&](std::string_view task, Demand d) {
    return store_->Write([&](store::WriteTxn& txn) { return instances_.Reserve(txn, kScope, "prod", id, task, d); });
  };
  ASSERT_TRUE(reserve("t1", Demand{1024, 1024, {80}, {53}}).ok());
  ASSERT_TRUE(reserve("t1", Demand{1024, 1024, {80}, {53}}).ok());  // repeated: no-op
  json::object ci = Describe(id);
  EXPECT_EQ(ResourceValue(ci, "remainingResources", "CPU"), 1024);
  EXPECT_EQ(ci.at("pendingTasksCount"), 1);
  EXPECT_EQ(RefusalReason(reserve("t2", Demand{2048, 0, {}, {}})), "RESOURCE:CPU");
  EXPECT_EQ(RefusalReason(reserve("t2", Demand{0, 8192, {}, {}})), "RESOURCE:MEMORY");
  EXPECT_EQ(RefusalReason(reserve("t2", Demand{0, 0, {80}, {}})), "RESOURCE:PORTS");
  EXPECT_EQ(RefusalReason(reserve("t2", Demand{0, 0, {22}, {}})), "RESOURCE:PORTS");  // reserved by the agent
  EXPECT_EQ(RefusalReason(reserve("t2", Demand{0, 0, {}, {53}})), "RESOURCE:PORTS_UDP");
  EXPECT_EQ(Describe(id).at("pendingTasksCount"), 1);  // refusals changed nothing

  std::vector<Candidate> candidates;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(candidates, instances_.Candidates(txn, kScope, "prod", clock_.Now()));
    return OkStatus();
  }).ok());
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].remaining_cpu, 1024);
  EXPECT_EQ(candidates[0].used_tcp_ports, (std::vector<std::string>{"22", "80"}));

  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return instances_.MarkRunning(txn, kScope, "prod", id, "t1"); }).ok());
  ci = Describe(id);
  EXPECT_EQ(ci.at("pendingTasksCount"), 0);
  EXPECT_EQ(ci.at("runningTasksCount"), 1);

  // Deregistering refuses an instance with tasks unless forced.
  EXPECT_EQ(api::AnswerFor(instances_.Deregister(kScope, "prod", Ref(id), false, clock_.Now()).status()).type,
            "InvalidParameterException");
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return instances_.Release(txn, kScope, "prod", id, "t1"); }).ok());
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) { return instances_.Release(txn, kScope, "prod", id, "t1"); }).ok());
  ci = Describe(id);
  EXPECT_EQ(ci.at("runningTasksCount"), 0);
  EXPECT_EQ(ResourceValue(ci, "remainingResources", "CPU"), 2048);
  EXPECT_EQ(ResourceValue(ci, "remainingResources", "MEMORY"), 4096);
  EXPECT_TRUE(reserve("t3", Demand{0, 0, {80}, {53}}).ok());  // the ports are free again

  // DRAINING instances take no new tasks.
  ASSERT_TRUE(instances_.UpdateState(kScope, "prod", {Ref(id)}, "DRAINING", clock_.Now()).ok());
  EXPECT_EQ(RefusalReason(reserve("t4", Demand{})), "INACTIVE");
}

TEST_F(InstancesTest, DrainingAndDeregisteringChangeStatusCountsAndTheClusterDelete) {
  std::string id = Register();
  EXPECT_EQ(api::AnswerFor(clusters_.Delete(kScope, "prod").status()).type, "ClusterContainsContainerInstancesException");
  auto drained = instances_.UpdateState(kScope, "prod", {Ref(id), Ref(std::string(32, 'a'))}, "DRAINING", clock_.Now());
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->instances.size(), 1u);
  ASSERT_EQ(drained->failures.size(), 1u);
  EXPECT_EQ(drained->failures[0].reason, "MISSING");
  EXPECT_EQ(Describe(id).at("status"), "DRAINING");
  EXPECT_EQ(RegisteredCount(), 1);  // DRAINING still counts
  EXPECT_EQ(api::AnswerFor(instances_.UpdateState(kScope, "prod", {Ref(id)}, "INACTIVE", clock_.Now()).status()).type,
            "InvalidParameterException");

  auto d = instances_.Deregister(kScope, "prod", Ref(id), false, clock_.Now());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(json::parse(*d).at("status"), "INACTIVE");
  EXPECT_EQ(json::parse(*d).at("agentConnected"), false);
  EXPECT_EQ(RegisteredCount(), 0);
  EXPECT_TRUE(instances_.Deregister(kScope, "prod", Ref(id), false, clock_.Now()).ok());  // repeat
  EXPECT_EQ(RegisteredCount(), 0);
  auto again = instances_.UpdateState(kScope, "prod", {Ref(id)}, "ACTIVE", clock_.Now());
  ASSERT_EQ(again->failures.size(), 1u);
  EXPECT_EQ(again->failures[0].reason, "INACTIVE");
  RegisterRequest re;
  re.container_instance = Ref(id);
  re.cluster = "prod";
  EXPECT_EQ(api::AnswerFor(instances_.Register(kScope, re, clock_.Now()).status()).type, "ClientException");

  ListQuery q;
  q.cluster = "prod";
  EXPECT_TRUE(instances_.List(kScope, q, clock_.Now())->items.empty());  // INACTIVE is not listed
  EXPECT_EQ(Describe(id).at("status"), "INACTIVE");                       // but describable
  EXPECT_TRUE(clusters_.Delete(kScope, "prod").ok());

  // An hour later the reaper removes it.
  clock_.Advance(kInactiveRetention - seconds(1));
  EXPECT_EQ(*instances_.ReapInactive(clock_.Now()), 0u);
  clock_.Advance(seconds(2));
  EXPECT_EQ(*instances_.ReapInactive(clock_.Now()), 1u);
  auto gone = instances_.Describe(kScope, "prod", {Ref(id)}, {}, clock_.Now());
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->failures.size(), 1u);
}

TEST_F(InstancesTest, ListFiltersByStatusAndQueryAndPaginates) {
  RegisterRequest a;
  a.attributes = {{"stack", "prod"}};
  a.identity_document = R"({"instanceId":"i-aaa","instanceType":"t2.small"})";
  std::string ia = Register(a);
  RegisterRequest b;
  b.attributes = {{"stack", "dev"}};
  b.identity_document = R"({"instanceId":"i-bbb","instanceType":"t2.medium"})";
  std::string ib = Register(b);
  std::string ic = Register();
  ASSERT_TRUE(instances_.UpdateState(kScope, "prod", {Ref(ic)}, "DRAINING", clock_.Now()).ok());
  auto list = [&](std::optional<std::string> status, std::optional<std::string> filter) {
    ListQuery q;
    q.cluster = "prod";
    q.status = status;
    q.filter = filter;
    auto p = instances_.List(kScope, q, clock_.Now());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    std::set<std::string> ids;
    for (auto& arn : p->items) ids.insert(arn.substr(arn.rfind('/') + 1));
    return ids;
  };
  EXPECT_EQ(list(std::nullopt, std::nullopt), (std::set<std::string>{ia, ib, ic}));
  EXPECT_EQ(list("ACTIVE", std::nullopt), (std::set<std::string>{ia, ib}));
  EXPECT_EQ(list("DRAINING", std::nullopt), (std::set<std::string>{ic}));
  EXPECT_EQ(list(std::nullopt, "attribute:stack == prod"), (std::set<std::string>{ia}));
  EXPECT_EQ(list(std::nullopt, "attribute:stack exists"), (std::set<std::string>{ia, ib}));
  EXPECT_EQ(list(std::nullopt, "attribute:stack != prod"), (std::set<std::string>{ib, ic}));
  EXPECT_EQ(list(std::nullopt, "attribute:ecs.instance-type in [t2.small, t2.medium]"), (std::set<std::string>{ia, ib}));
  EXPECT_EQ(list(std::nullopt, "attribute:ecs.instance-type =~ t2.* and attribute:stack == dev"), (std::set<std::string>{ib}));
  EXPECT_EQ(list(std::nullopt, "ec2InstanceId == i-aaa or ec2InstanceId == i-bbb"), (std::set<std::string>{ia, ib}));
  EXPECT_EQ(list("ACTIVE", "runningTasksCount == 0"), (std::set<std::string>{ia, ib}));
  EXPECT_EQ(list(std::nullopt, "registeredAt < 2020-01-01"), (std::set<std::string>{}));
  EXPECT_EQ(list(std::nullopt, "registeredAt >= 2020-01-01T00:00:00Z").size(), 3u);
  ListQuery bad;
  bad.cluster = "prod";
  bad.filter = "attribute:stack ==";
  EXPECT_EQ(api::AnswerFor(instances_.List(kScope, bad, clock_.Now()).status()).type, "InvalidParameterException");
  bad.filter = "task:group == web";
  EXPECT_EQ(api::AnswerFor(instances_.List(kScope, bad, clock_.Now()).status()).type, "InvalidParameterException");
  bad.cluster = "ghost";
  bad.filter.reset();
  EXPECT_EQ(api::AnswerFor(instances_.List(kScope, bad, clock_.Now()).status()).type, "ClusterNotFoundException");

  // Pages of one cover everything once.
  ListQuery q;
  q.cluster = "prod";
  q.limit = 1;
  std::set<std::string> seen;
  for (int i = 0; i < 5; ++i) {
    auto p = instances_.List(kScope, q, clock_.Now());
    ASSERT_TRUE(p.ok());
    for (auto& arn : p->items) EXPECT_TRUE(seen.insert(arn).second);
    if (p->next.empty()) break;
    q.after = p->next;
  }
  EXPECT_EQ(seen.size(), 3u);
}

TEST_F(InstancesTest, AttributesPutDeleteListAndLimits) {
  std::string id = Register();
  std::vector<TargetedAttribute> put;
  for (int i = 0; i < 10; ++i) put.push_back({{fmt::format("c{}", i), "v"}, Ref(id)});
  ASSERT_TRUE(instances_.PutAttributes(kScope, "prod", put).ok());
  auto over = instances_.PutAttributes(kScope, "prod", {{{"c10", "v"}, Ref(id)}});
  EXPECT_EQ(api::AnswerFor(over.status()).type, "AttributeLimitExceededException");
  auto replace = instances_.PutAttributes(kScope, "prod", {{{"c0", "w"}, Ref(id)}});  // overwriting is no new one
  ASSERT_TRUE(replace.ok());
  EXPECT_EQ(replace->at(0).target_arn, ContainerInstanceArn(kScope, "prod", id));
  EXPECT_EQ(api::AnswerFor(instances_.PutAttributes(kScope, "prod", {{{"x", "v"}, Ref(std::string(32, 'b'))}}).status()).type,
            "TargetNotFoundException");

  AttributeQuery q;
  q.cluster = "prod";
  q.name = "c0";
  auto listed = instances_.ListAttributes(kScope, q);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->attributes.size(), 1u);
  EXPECT_EQ(listed->attributes[0].attribute.value, "w");
  q.value = "v";
  EXPECT_TRUE(instances_.ListAttributes(kScope, q)->attributes.empty());

  ASSERT_TRUE(instances_.DeleteAttributes(kScope, "prod", {{{"c0", std::nullopt}, Ref(id)}}).ok());
  q.value.reset();
  EXPECT_TRUE(instances_.ListAttributes(kScope, q)->attributes.empty());
  EXPECT_TRUE(instances_.PutAttributes(kScope, "prod", {{{"c10", "v"}, Ref(id)}}).ok());  // room again

  // Every attribute, in pages of 3, once each.
  AttributeQuery all;
  all.cluster = "prod";
  all.limit = 3;
  size_t total = 0;
  std::set<std::string> names;
  for (int i = 0; i < 20; ++i) {
    auto p = instances_.ListAttributes(kScope, all);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    for (auto& a : p->attributes) EXPECT_TRUE(names.insert(a.attribute.name).second) << a.attribute.name;
    total += p->attributes.size();
    if (p->next.empty()) break;
    all.after = p->next;
  }
  EXPECT_EQ(total, Describe(id).at("attributes").as_array().size());
}

TEST_F(InstancesTest, UpdateAgentHasNoUpdateAndTagsRoundTrip) {
  std::string without = Register();
  EXPECT_EQ(api::AnswerFor(instances_.UpdateAgent(kScope, "prod", Ref(without), clock_.Now()).status()).type,
            "MissingVersionException");
  RegisterRequest r;
  r.version_info = json::object{{"agentVersion", "1.80.0"}};
  std::string with = Register(r);
  EXPECT_EQ(api::AnswerFor(instances_.UpdateAgent(kScope, "prod", Ref(with), clock_.Now()).status()).type,
            "NoUpdateAvailableException");
  EXPECT_EQ(api::AnswerFor(instances_.UpdateAgent(kScope, "prod", Ref(std::string(32, 'e')), clock_.Now()).status()).type,
            "InvalidParameterException");
  ASSERT_TRUE(instances_.Deregister(kScope, "prod", Ref(without), false, clock_.Now()).ok());
  EXPECT_EQ(api::AnswerFor(instances_.UpdateAgent(kScope, "prod", Ref(without), clock_.Now()).status()).type,
            "InvalidParameterException");

  ASSERT_TRUE(instances_.TagResource(kScope, "prod", with, {{"env", "prod"}}).ok());
  EXPECT_EQ(*instances_.ListTags(kScope, "prod", with), (Tags{{"env", "prod"}}));
  EXPECT_EQ(Describe(with, Include{true, false}).at("tags").as_array().size(), 1u);
  EXPECT_FALSE(Describe(with).contains("tags"));
  ASSERT_TRUE(instances_.UntagResource(kScope, "prod", with, {"env"}).ok());
  EXPECT_TRUE(instances_.ListTags(kScope, "prod", with)->empty());
  EXPECT_EQ(api::AnswerFor(instances_.TagResource(kScope, "prod", std::string(32, 'c'), {{"k", "v"}})).type,
            "ResourceNotFoundException");
}

TEST_F(InstancesTest, ReapAccountRemovesEverything) {
  std::string id = Register();
  ASSERT_TRUE(instances_.ReapAccount(kScope.account).ok());
  EXPECT_EQ(RegisteredCount(), 0);
  auto d = instances_.Describe(kScope, "prod", {Ref(id)}, {}, clock_.Now());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->failures.size(), 1u);
}

TEST(QueryTest, ParsesTheCommonFormsAndRefusesTheRest) {
  Facts f;
  f.attributes = {{"ecs.instance-type", "t2.small"}, {"zone", "us-east-1a"}, {"n", "5"}};
  f.ec2_instance_id = "i-1";
  f.running_tasks = 2;
  f.registered_at = 1'700'000'000;
  f.agent_connected = true;
  f.agent_version = "1.51.0";
  auto m = [&](std::string_view text) {
    auto q = Query::Parse(text);
    EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
    return q.ok() && q->Matches(f);
  };
  EXPECT_TRUE(m("attribute:ecs.instance-type == t2.small"));
  EXPECT_TRUE(m("attribute:ecs.instance-type==t2.small"));
  EXPECT_TRUE(m("attribute:ecs.instance-type == 't2.small'"));
  EXPECT_FALSE(m("attribute:ecs.instance-type != t2.small"));
  EXPECT_TRUE(m("attribute:missing != x"));
  EXPECT_TRUE(m("attribute:zone exists and not attribute:missing exists"));
  EXPECT_TRUE(m("attribute:missing !exists"));
  EXPECT_TRUE(m("attribute:zone in [us-east-1a, us-east-1b]"));
  EXPECT_TRUE(m("attribute:zone !in [us-east-1b]"));
  EXPECT_TRUE(m("attribute:n > 3 && attribute:n <= 5"));
  EXPECT_TRUE(m("(attribute:n < 3 || runningTasksCount >= 2) and agentConnected == true"));
  EXPECT_TRUE(m("ec2InstanceId =~ i-.*"));
  EXPECT_TRUE(m("agentVersion < 1.100.0"));
  EXPECT_TRUE(m("registeredAt < 2024-01-01T00:00:00+00:00 and registeredAt > 2023-11-14"));
  EXPECT_TRUE(m("!(runningTasksCount == 0)"));
  for (std::string_view bad : {"", "attribute:x", "attribute:x ==", "foo == 1", "attribute:x in t2", "(attribute:x exists",
                               "runningTasksCount == many", "registeredAt > yesterday", "ec2InstanceId > i-1",
                               "attribute:x =~ (", "attribute:x == 1 extra"}) {
    auto q = Query::Parse(bad);
    EXPECT_FALSE(q.ok()) << bad;
    if (!q.ok()) {
      EXPECT_EQ(api::AnswerFor(q.status()).type, "InvalidParameterException") << bad;
    }
  }
  EXPECT_EQ(*ParseQueryDate("1970-01-02"), 86400.0);
  EXPECT_EQ(*ParseQueryDate("1970-01-01T01:00:00+01:00"), 0.0);
}

// =~ runs a backtracking regex inside placement's write transaction: patterns that can take
// exponential (or high-degree polynomial) time are refused, and over-long values never match.
TEST(QueryTest, MatchPatternsAreBounded) {
  for (std::string_view bad : {"attribute:x =~ '(a|a)*b'", "attribute:x =~ '(a*)+b'", "attribute:x =~ '(ab){2,}'",
                               "attribute:x =~ '(a)\\1'", "attribute:x =~ 'a*a*a*a*b'", "ec2InstanceId !~ '(i-.)*'"}) {
    auto q = Query::Parse(bad);
    EXPECT_FALSE(q.ok()) << bad;
    if (!q.ok()) {
      EXPECT_EQ(api::AnswerFor(q.status()).type, "InvalidParameterException") << bad;
    }
  }
  Facts f;
  f.attributes = {{"x", "t2.small"}, {"long", std::string(200, 'a')}};
  for (std::string_view good : {"attribute:x =~ 't2.*'", "attribute:x =~ '(t2|m5)\\.[a-z]+'", "attribute:x =~ 't[0-9*+]?.s.*'"}) {
    auto q = Query::Parse(good);
    ASSERT_TRUE(q.ok()) << good << ": " << q.status().ToString();
    EXPECT_TRUE(q->Matches(f)) << good;
  }
  auto q = Query::Parse("attribute:long =~ 'a*'");
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->Matches(f));
  q = Query::Parse("attribute:long !~ 'a*'");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->Matches(f));
}

}  // namespace
}  // namespace paddock::ecs::instance
