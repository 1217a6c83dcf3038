// RunTask and security groups: awsvpcConfiguration.securityGroups are validated against the
// caller's VPC, default to the VPC's default group, and are recorded with the task's address in
// the run's transaction (vpc/security_groups.h, docs/contracts/task.md).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include <set>

#include "common/testing/fake_clock.h"
#include "ecs/task/tasks.h"
#include "ecs/testing/temp_store.h"
#include "vpc/default_vpc.h"
#include "vpc/errors.h"
#include "vpc/ipam.h"
#include "vpc/security_groups.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::task {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOther{AccountId("210987654321"), Region("us-east-1")};
constexpr std::string_view kAgent = "fargate-local";

std::string Caller(const Scope& s) { return fmt::format("arn:aws:iam::{}:root", s.account.str()); }

json::object Def() {
  return json::parse(R"({"family":"web","networkMode":"awsvpc","requiresCompatibilities":["FARGATE"],"cpu":"256",)"
                     R"("memory":"512","containerDefinitions":[{"name":"app","image":"nginx"}]})")
      .as_object();
}

class TaskSecurityGroupsTest : public ::testing::Test {
 protected:
  TaskSecurityGroupsTest() {
    for (const Scope& s : {kScope, kOther}) {
      EXPECT_TRUE(clusters_.Create(s, json::parse(R"({"clusterName":"default"})").as_object()).ok());
      EXPECT_TRUE(tds_.Register(s, Caller(s), Def(), clock_.Now()).ok());
    }
    tasks_.SetAddressListener([this](const Scope& s) { address_changes_.push_back(s); });
  }

  RunRequest Req(const Scope& scope, std::optional<std::vector<std::string>> groups, int64_t count = 1) {
    RunRequest r;
    r.task_definition = "web";
    r.count = count;
    r.launch_type = "FARGATE";
    json::object awsvpc{{"subnets", json::array{json::string(vpc::DefaultVpcFor(scope).subnets[0].id)}}};
    if (groups) {
      json::array a;
      for (const auto& g : *groups) a.push_back(json::string(g));
      awsvpc["securityGroups"] = std::move(a);
    }
    r.network_configuration = json::object{{"awsvpcConfiguration", std::move(awsvpc)}};
    return r;
  }

  // The task's address, from its ENI attachment.
  static std::string Ip(const std::string& task_json) {
    json::object t = json::parse(task_json).as_object();
    for (const auto& d : t.at("attachments").at(0).at("details").as_array())
      if (d.at("name").as_string() == "privateIPv4Address") return std::string(d.at("value").as_string());
    return {};
  }

  std::vector<vpc::PolicyMember> Members(const Scope& scope) {
    auto p = groups_.PolicyFor(scope);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? p->members : std::vector<vpc::PolicyMember>{};
  }

  size_t Rows(std::string_view table) {
    size_t n = 0;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(auto rows, txn.Scan(table, {"", ""}, 1u << 20));
                  n = rows.size();
                  return OkStatus();
                }).ok());
    return n;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  taskdef::TaskDefinitions tds_{*store_};
  cluster::Clusters clusters_{*store_};
  Tasks tasks_{*store_, tds_, clusters_, std::string(kAgent)};
  vpc::SecurityGroups groups_{*store_};
  std::vector<Scope> address_changes_;
};

TEST_F(TaskSecurityGroupsTest, RunTaskValidatesGroupsAgainstTheCallersVpc) {
  auto refused = [&](RunRequest r, std::string_view message) {
    auto res = tasks_.Run(kScope, Caller(kScope), r, clock_.Now());
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(api::AnswerFor(res.status()).type, "InvalidParameterException");
    EXPECT_EQ(res.status().message(), message);
  };
  refused(Req(kScope, std::vector<std::string>{"sg-0123456789abcdef0"}),
          "Error retrieving security group information for [sg-0123456789abcdef0]: The security group "
          "'sg-0123456789abcdef0' does not exist (ECS)");
  // Another account's group is not the caller's: the same answer, its existence not revealed.
  auto theirs = groups_.Create(kOther, vpc::CreateRequest{"web", "theirs", std::nullopt, {}});
  ASSERT_TRUE(theirs.ok());
  refused(Req(kScope, std::vector<std::string>{theirs->id}),
          fmt::format("Error retrieving security group information for [{0}]: The security group '{0}' does not "
                      "exist (ECS)", theirs->id));
  std::vector<std::string> six;
  for (int i = 0; i < 6; ++i) six.push_back(vpc::DefaultVpcFor(kScope).security_group_id);
  refused(Req(kScope, six), "At most 5 security groups can be specified.");
  // Nothing of a refused run is left.
  EXPECT_EQ(Rows("vpc_addresses"), 0u);
  EXPECT_EQ(Rows("security_group_members"), 0u);
  EXPECT_TRUE(address_changes_.empty());
}

TEST_F(TaskSecurityGroupsTest, TasksGetTheirGroupsOrTheDefaultOne) {
  auto web = groups_.Create(kScope, vpc::CreateRequest{"web", "web tier", std::nullopt, {}});
  ASSERT_TRUE(web.ok());
  const std::string default_group = vpc::DefaultVpcFor(kScope).security_group_id;
  auto with = tasks_.Run(kScope, Caller(kScope), Req(kScope, std::vector<std::string>{web->id, default_group}), clock_.Now());
  auto without = tasks_.Run(kScope, Caller(kScope), Req(kScope, std::nullopt), clock_.Now());
  auto empty = tasks_.Run(kScope, Caller(kScope), Req(kScope, std::vector<std::string>{}), clock_.Now());
  ASSERT_TRUE(with.ok() && without.ok() && empty.ok()) << with.status().ToString() << without.status().ToString();
  EXPECT_EQ(address_changes_.size(), 3u);  // each run changed the VPC's policy
  std::map<std::string, std::vector<std::string>> by_ip;
  for (const auto& m : Members(kScope)) by_ip[m.ip] = m.groups;
  ASSERT_EQ(by_ip.size(), 3u);
  EXPECT_EQ(by_ip[Ip(with->tasks[0])], (std::vector<std::string>{web->id, default_group}));
  EXPECT_EQ(by_ip[Ip(without->tasks[0])], std::vector<std::string>{default_group});
  EXPECT_EQ(by_ip[Ip(empty->tasks[0])], std::vector<std::string>{default_group});
  // The group is in use now.
  // EC2's table answers it DependencyViolation (Ec2ErrorsTest).
  EXPECT_TRUE(IsError(groups_.Delete(kScope, vpc::GroupRef{web->id, ""}).status(), vpc::Error::kDependencyViolation));
  // STOPPED releases the address and the membership, and tells the listener.
  const std::string arn(json::parse(with->tasks[0]).at("taskArn").as_string());
  TaskStateChange stopped;
  stopped.last_status = "STOPPED";
  ASSERT_TRUE(tasks_.ReportState(kAgent, arn, stopped, clock_.Now()).ok());
  EXPECT_EQ(address_changes_.size(), 4u);
  EXPECT_EQ(Members(kScope).size(), 2u);
  EXPECT_TRUE(groups_.Delete(kScope, vpc::GroupRef{web->id, ""}).ok());
}

TEST_F(TaskSecurityGroupsTest, AFailedRunLeavesNoAddressAndNoMembership) {
  auto web = groups_.Create(kScope, vpc::CreateRequest{"web", "web tier", std::nullopt, {}});
  ASSERT_TRUE(web.ok());
  RunRequest r = Req(kScope, std::vector<std::string>{web->id}, 3);
  // The run's transaction fails after every address was allocated (as a deposed scheduler's).
  r.in_txn = [](store::WriteTxn&, const std::vector<std::string>& arns) -> Status {
    EXPECT_EQ(arns.size(), 3u);
    return FailedPrecondition("deposed");
  };
  auto res = tasks_.Run(kScope, Caller(kScope), r, clock_.Now());
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(Rows("vpc_addresses"), 0u);
  EXPECT_EQ(Rows("node_addresses"), 0u);
  EXPECT_EQ(Rows("security_group_members"), 0u);
  EXPECT_EQ(Rows("vpc_address_pools"), 0u);
  EXPECT_TRUE(Members(kScope).empty());
  EXPECT_TRUE(address_changes_.empty());
  EXPECT_TRUE(groups_.Delete(kScope, vpc::GroupRef{web->id, ""}).ok());  // never in use
}

TEST_F(TaskSecurityGroupsTest, TwoAccountsTasksCanHoldTheSameAddress) {
  // The other account's VPC holds every address of subnet a (172.31.0.0/20): my VPC's pool is
  // its own, so my task still gets one — an address the other VPC holds too.
  const vpc::Subnet theirs = vpc::DefaultVpcFor(kOther).subnets[0];
  std::set<uint32_t> held;
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
                for (uint32_t i = 0; i < theirs.UsableCount(); ++i) {
                  ASSIGN_OR_RETURN(uint32_t ip, vpc::AllocateIp(txn, kOther, theirs, fmt::format("eni-{}", i), {}));
                  held.insert(ip);
                }
                return OkStatus();
              }).ok());
  ASSERT_EQ(held.size(), theirs.UsableCount());
  auto mine = tasks_.Run(kScope, Caller(kScope), Req(kScope, std::nullopt, 2), clock_.Now());
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_EQ(mine->tasks.size(), 2u);
  for (const auto& t : mine->tasks) {
    uint32_t ip = 0;
    ASSERT_TRUE(vpc::ParseIpv4(Ip(t), &ip));
    EXPECT_TRUE(held.count(ip)) << Ip(t);
  }
  EXPECT_EQ(Members(kScope).size(), 2u);
  EXPECT_EQ(Members(kOther).size(), theirs.UsableCount());
}

}  // namespace
}  // namespace paddock::ecs::task
