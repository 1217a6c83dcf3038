#include "ecs/cluster/clusters.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::cluster {
namespace {
namespace json = boost::json;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
constexpr std::string_view kCaller = "arn:aws:iam::123456789012:root";

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

class ClustersTest : public ::testing::Test {
 protected:
  paddock::testing::TempStore store_;
  Clusters clusters_{*store_};
};

TEST_F(ClustersTest, CreateIsIdempotentForAnActiveCluster) {
  auto a = clusters_.Create(kScope, Obj(R"({"clusterName":"prod","tags":[{"key":"k","value":"v"}]})"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto c = json::parse(*a).as_object();
  EXPECT_EQ(c.at("clusterArn"), "arn:aws:ecs:us-east-1:123456789012:cluster/prod");
  EXPECT_EQ(c.at("status"), "ACTIVE");
  auto b = clusters_.Create(kScope, Obj(R"({"clusterName":"prod","settings":[{"name":"containerInsights","value":"enabled"}]})"));
  ASSERT_TRUE(b.ok());
  auto again = json::parse(*b).as_object();
  EXPECT_EQ(again.at("settings").at(0).at("value"), "disabled");  // unchanged, as AWS returns it
  EXPECT_EQ(again.at("tags").as_array().size(), 1u);
}

TEST_F(ClustersTest, DefaultNameAndInvalidNames) {
  auto d = clusters_.Create(kScope, json::object{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(json::parse(*d).at("clusterName"), "default");
  auto bad = clusters_.Create(kScope, Obj(R"({"clusterName":"no spaces"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(api::AnswerFor(bad.status()).type, "InvalidParameterException");
}

TEST_F(ClustersTest, DescribeReportsMissingAndIncludes) {
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"a","tags":[{"key":"k","value":"v"}]})")).ok());
  auto r = clusters_.Describe(kScope, {"a", "ghost"}, Include{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->clusters.size(), 1u);
  EXPECT_EQ(r->missing, (std::vector<std::string>{"arn:aws:ecs:us-east-1:123456789012:cluster/ghost"}));
  auto plain = json::parse(r->clusters[0]).as_object();
  EXPECT_TRUE(plain.at("tags").as_array().empty());
  EXPECT_TRUE(plain.at("settings").as_array().empty());
  Include all{true, true, true, true, true};
  auto full = json::parse(clusters_.Describe(kScope, {"a"}, all)->clusters[0]).as_object();
  EXPECT_EQ(full.at("tags").as_array().size(), 1u);
  EXPECT_EQ(full.at("settings").at(0).at("name"), "containerInsights");
  EXPECT_FALSE(full.at("statistics").as_array().empty());
}

TEST_F(ClustersTest, DeleteMakesInactiveButDescribableAndUnlisted) {
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"a"})")).ok());
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"b"})")).ok());
  auto del = clusters_.Delete(kScope, "a");
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(json::parse(*del).at("status"), "INACTIVE");
  EXPECT_EQ(json::parse(clusters_.Describe(kScope, {"a"}, Include{})->clusters[0]).at("status"), "INACTIVE");
  auto page = clusters_.List(kScope, 100, "");
  EXPECT_EQ(page->arns, (std::vector<std::string>{"arn:aws:ecs:us-east-1:123456789012:cluster/b"}));
  auto missing = clusters_.Delete(kScope, "ghost");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(api::AnswerFor(missing.status()).type, "ClusterNotFoundException");
  EXPECT_EQ(missing.status().message(), "Cluster not found.");
}

TEST_F(ClustersTest, DeleteRefusesAClusterInUse) {
  struct Busy : ClusterUsage {
    StatusOr<Counts> Count(store::ReadTxn&, const Scope&, std::string_view) override {
      Counts c;
      c.active_services = 1;
      return c;
    }
  } busy;
  clusters_.AddUsage(&busy);
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"a"})")).ok());
  auto del = clusters_.Delete(kScope, "a");
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(api::AnswerFor(del.status()).type, "ClusterContainsServicesException");
}

TEST_F(ClustersTest, ListPaginates) {
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(clusters_.Create(kScope, Obj(fmt::format(R"({{"clusterName":"c{}"}})", i))).ok());
  ASSERT_TRUE(clusters_.Delete(kScope, "c3").ok());
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  do {
    auto p = clusters_.List(kScope, 2, after);
    ASSERT_TRUE(p.ok());
    seen.insert(seen.end(), p->arns.begin(), p->arns.end());
    after = p->next;
    ++pages;
  } while (!after.empty());
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(pages, 3);
}

TEST_F(ClustersTest, SettingsAndCapacityProviders) {
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"a"})")).ok());
  auto s = clusters_.UpdateSettings(kScope, "a", json::parse(R"([{"name":"containerInsights","value":"enhanced"}])").as_array());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(json::parse(*s).at("settings").at(0).at("value"), "enhanced");
  EXPECT_FALSE(clusters_.UpdateSettings(kScope, "a", json::parse(R"([{"name":"containerInsights","value":"maybe"}])").as_array()).ok());
  auto cp = clusters_.PutCapacityProviders(kScope, "a", json::parse(R"(["FARGATE","FARGATE_SPOT"])").as_array(),
                                           json::parse(R"([{"capacityProvider":"FARGATE","weight":1,"base":1}])").as_array());
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  EXPECT_EQ(json::parse(*cp).at("capacityProviders").as_array().size(), 2u);
  EXPECT_FALSE(clusters_.PutCapacityProviders(kScope, "a", json::parse(R"(["MINE"])").as_array(), json::array()).ok());
  EXPECT_FALSE(clusters_.PutCapacityProviders(kScope, "a", json::parse(R"(["FARGATE"])").as_array(),
                                              json::parse(R"([{"capacityProvider":"FARGATE_SPOT"}])").as_array()).ok());
}

// A cluster created without a containerInsights setting takes the account setting that applies
// to its creator: the principal's own, else the account default, else disabled.
TEST_F(ClustersTest, ContainerInsightsDefaultsToTheAccountSetting) {
  setting::AccountSettings settings(*store_);
  clusters_.SetAccountSettings(&settings);
  auto insights = [&](std::string_view name, std::string_view caller) {
    auto c = clusters_.Create(kScope, Obj(fmt::format(R"({{"clusterName":"{}"}})", name)), caller);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::string(json::parse(*c).at("settings").at(0).at("value").as_string());
  };
  EXPECT_EQ(insights("plain", kCaller), "disabled");
  ASSERT_TRUE(settings.PutDefault(kScope, kCaller, setting::SettingName::kContainerInsights, "enhanced").ok());
  EXPECT_EQ(insights("by-default", kCaller), "enhanced");
  constexpr std::string_view kAlice = "arn:aws:iam::123456789012:user/alice";
  ASSERT_TRUE(settings.Put(kScope, kAlice, setting::SettingName::kContainerInsights, "enabled", std::nullopt).ok());
  EXPECT_EQ(insights("alices", kAlice), "enabled");
  // The request's own setting wins.
  auto own = clusters_.Create(kScope, Obj(R"({"clusterName":"own","settings":[{"name":"containerInsights","value":"disabled"}]})"));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(json::parse(*own).at("settings").at(0).at("value"), "disabled");
}

// An Auto Scaling group provider can be associated once it exists, with one cluster at a time,
// and deleting the cluster releases it.
TEST_F(ClustersTest, AutoScalingGroupProvidersAreAssociatedThroughTheirOwner) {
  capacity::CapacityProviders providers(*store_);
  clusters_.SetCapacityProviders(&providers);
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"a"})")).ok());
  ASSERT_TRUE(clusters_.Create(kScope, Obj(R"({"clusterName":"b"})")).ok());
  auto mine = json::parse(R"(["mine"])").as_array();
  EXPECT_EQ(api::AnswerFor(clusters_.PutCapacityProviders(kScope, "a", mine, json::array()).status()).type,
            "InvalidParameterException");
  capacity::CreateRequest r;
  r.name = "mine";
  r.asg = capacity::AsgProvider{};
  r.asg->auto_scaling_group_arn = "my-asg";
  ASSERT_TRUE(providers.Create(kScope, r).ok());
  auto put = clusters_.PutCapacityProviders(kScope, "a", mine,
                                            json::parse(R"([{"capacityProvider":"mine","weight":1}])").as_array());
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(api::AnswerFor(clusters_.PutCapacityProviders(kScope, "b", mine, json::array()).status()).type,
            "InvalidParameterException");
  EXPECT_EQ(providers.Delete(kScope, "mine")->update_status, "DELETE_FAILED");
  ASSERT_TRUE(clusters_.Delete(kScope, "a").ok());
  EXPECT_EQ(providers.Delete(kScope, "mine")->status, "INACTIVE");
}

TEST(ClusterNameTest, ParsesNamesAndArns) {
  EXPECT_EQ(*ClusterName(std::nullopt, kScope, "X", kCaller), "default");
  EXPECT_EQ(*ClusterName("arn:aws:ecs:us-east-1:123456789012:cluster/prod", kScope, "X", kCaller), "prod");
  auto other = ClusterName("arn:aws:ecs:us-east-1:999999999999:cluster/prod", kScope, "X", kCaller);
  EXPECT_EQ(api::AnswerFor(other.status()).type, "AccessDeniedException");
  auto region = ClusterName("arn:aws:ecs:eu-west-1:123456789012:cluster/prod", kScope, "X", kCaller);
  EXPECT_EQ(api::AnswerFor(region.status()).type, "InvalidParameterException");
}

}  // namespace
}  // namespace paddock::ecs::cluster
