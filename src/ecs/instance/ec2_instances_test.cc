// The container instances' hosts as EC2's DescribeInstances sees them (ec2_instances.cc).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/testing/fake_clock.h"
#include "ecs/instance/instances.h"
#include "ecs/testing/temp_store.h"

namespace paddock::ecs::instance {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOther{AccountId("210987654321"), Region("us-east-1")};

class Ec2InstancesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clusters_.AddUsage(instances_.cluster_usage());
    ASSERT_TRUE(clusters_.Create(kScope, json::object{{"clusterName", "prod"}}).ok());
    ASSERT_TRUE(clusters_.Create(kOther, json::object{{"clusterName", "prod"}}).ok());
  }

  // Registers an instance whose identity document names `ec2_id` and `ip`; returns its ARN.
  std::string Register(const Scope& scope, std::string ec2_id, std::string ip, std::optional<std::string> again = {}) {
    RegisterRequest r;
    r.cluster = "prod";
    json::object doc{{"availabilityZone", "us-east-1b"}, {"instanceType", "m5.large"}, {"imageId", "ami-0abc"}};
    if (!ec2_id.empty()) doc["instanceId"] = ec2_id;
    if (!ip.empty()) doc["privateIp"] = ip;
    r.identity_document = json::serialize(doc);
    if (again) r.container_instance = InstanceRef{*again, std::nullopt, again->substr(again->rfind('/') + 1)};
    auto s = instances_.Register(scope, r, clock_.Now());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::string(json::parse(*s).at("containerInstanceArn").as_string()) : "";
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  cluster::Clusters clusters_{*store_};
  instance::ContainerInstances instances_{*store_, clusters_};
};

TEST_F(Ec2InstancesTest, FindAnswersTheHostsAddressStateAndPlacement) {
  const std::string arn = Register(kScope, "i-0123456789abcdef0", "10.0.1.5");
  Register(kOther, "i-0fedcba9876543210", "10.9.9.9");
  auto found = instances_.ec2_instances()->Find(kScope, {"i-0123456789abcdef0", "i-0fedcba9876543210", "i-00000000"});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u) << "another account's instance is not found";
  const ec2::Instance& i = found->front();
  EXPECT_EQ(i.instance_id, "i-0123456789abcdef0");
  EXPECT_TRUE(i.running);
  EXPECT_EQ(i.private_ip, "10.0.1.5");
  EXPECT_EQ(i.availability_zone, "us-east-1b");
  EXPECT_EQ(i.instance_type, "m5.large");
  EXPECT_EQ(i.image_id, "ami-0abc");
  EXPECT_EQ(i.launch_time, FromEpochMillis(EpochMillis(clock_.Now())));

  // Re-registered without an address, it keeps the one reported before.
  Register(kScope, "i-0123456789abcdef0", "", arn);
  EXPECT_EQ(instances_.ec2_instances()->Find(kScope, {"i-0123456789abcdef0"})->front().private_ip, "10.0.1.5");

  // Deregistered: terminated until reaped, then gone.
  const std::string id = arn.substr(arn.rfind('/') + 1);
  ASSERT_TRUE(instances_.Deregister(kScope, "prod", InstanceRef{id, std::nullopt, id}, false, clock_.Now()).ok());
  EXPECT_FALSE(instances_.ec2_instances()->Find(kScope, {"i-0123456789abcdef0"})->front().running);
  clock_.Advance(kInactiveRetention + std::chrono::minutes(1));
  ASSERT_TRUE(instances_.ReapInactive(clock_.Now()).ok());
  EXPECT_TRUE(instances_.ec2_instances()->Find(kScope, {"i-0123456789abcdef0"})->empty());
}

TEST_F(Ec2InstancesTest, ListPagesInInstanceIdOrder) {
  for (int n : {3, 1, 2}) Register(kScope, fmt::format("i-000000000000000{:02d}", n), fmt::format("10.0.0.{}", n));
  Register(kScope, "", "");  // a generated id
  std::vector<std::string> seen;
  std::string after;
  for (int pages = 0; pages < 10; ++pages) {
    bool more = false;
    auto page = instances_.ec2_instances()->List(kScope, after, 2, &more);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const auto& i : *page) seen.push_back(i.instance_id);
    if (!more) break;
    after = page->back().instance_id;
  }
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen[0], "i-00000000000000001");
}

}  // namespace
}  // namespace paddock::ecs::instance
