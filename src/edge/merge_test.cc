#include "edge/merge.h"

#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace paddock::edge {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

NamedConfiguration Part(std::string name, std::string_view config) {
  return {std::move(name), json::parse(config).as_object()};
}

std::string Lb(std::string_view url, std::string_view extra = "") {
  return fmt::format(R"({{"loadBalancer":{{"servers":[{{"url":"{}"}}],"strategy":"wrr"{}}}}})", url, extra);
}

TEST(MergeTest, LoadBalancersOfOneNameMergeTheirServersInOrderWithoutDuplicates) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", fmt::format(R"({{"http":{{"services":{{"web":{}}}}}}})", Lb("http://10.0.0.1:80"))));
  parts.push_back(Part("b", fmt::format(R"({{"http":{{"services":{{"web":{}}}}}}})", Lb("http://10.0.0.2:80"))));
  parts.push_back(Part("c", fmt::format(R"({{"http":{{"services":{{"web":{}}}}}}})", Lb("http://10.0.0.1:80"))));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_THAT(m.errors, IsEmpty());
  EXPECT_EQ(m.config, json::parse(R"({"http":{"services":{"web":{"loadBalancer":{
      "servers":[{"url":"http://10.0.0.1:80"},{"url":"http://10.0.0.2:80"}],"strategy":"wrr"}}}}})"));
}

TEST(MergeTest, LoadBalancersThatDifferBeyondServersAreDeletedNamingEveryOrigin) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", fmt::format(R"({{"http":{{"services":{{"web":{},"other":{}}}}}}})",
                                        Lb("http://10.0.0.1:80"), Lb("http://10.0.0.9:80"))));
  parts.push_back(Part("b", fmt::format(R"({{"http":{{"services":{{"web":{}}}}}}})",
                                        Lb("http://10.0.0.2:80", R"(,"passHostHeader":false)"))));
  parts.push_back(Part("c", fmt::format(R"({{"http":{{"services":{{"web":{}}}}}}})", Lb("http://10.0.0.3:80"))));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_EQ(m.config, json::parse(fmt::format(R"({{"http":{{"services":{{"other":{}}}}}}})", Lb("http://10.0.0.9:80"))));
  ASSERT_EQ(m.errors.size(), 1u);
  EXPECT_EQ(m.errors[0], R"(HTTP service "web" defined multiple times with different configurations (in a, b, c))");
}

TEST(MergeTest, RoutersAndMiddlewaresMustBeEqual) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", R"j({"http":{"routers":{"r":{"rule":"Host(`a`)","service":"s"},
                                                    "same":{"rule":"Host(`s`)","service":"s"}},
                                        "middlewares":{"m":{"addPrefix":{"prefix":"/a"}}}}})j"));
  parts.push_back(Part("b", R"j({"http":{"routers":{"r":{"rule":"Host(`b`)","service":"s"},
                                                    "same":{"service":"s","rule":"Host(`s`)"}},
                                        "middlewares":{"m":{"addPrefix":{"prefix":"/b"}}}}})j"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_EQ(m.config, json::parse(R"j({"http":{"routers":{"same":{"rule":"Host(`s`)","service":"s"}}}})j"));
  EXPECT_THAT(m.errors, ElementsAre(HasSubstr(R"(HTTP middleware "m" defined multiple times)"),
                                    HasSubstr(R"(HTTP router "r" defined multiple times)")));
}

TEST(MergeTest, ServicesWithoutALoadBalancerMustBeEqualWhole) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", R"({"http":{"services":{"w":{"weighted":{"services":[{"name":"x"}]}}}}})"));
  parts.push_back(Part("b", R"({"http":{"services":{"w":{"weighted":{"services":[{"name":"x"}]}}}}})"));
  parts.push_back(Part("a", fmt::format(R"({{"http":{{"services":{{"v":{}}}}}}})", Lb("http://1.1.1.1:1"))));
  parts.push_back(Part("b", R"({"http":{"services":{"v":{"weighted":{"services":[{"name":"x"}]}}}}})"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_EQ(m.config, json::parse(R"({"http":{"services":{"w":{"weighted":{"services":[{"name":"x"}]}}}}})"));
  EXPECT_THAT(m.errors, ElementsAre(HasSubstr(R"(HTTP service "v")")));
}

TEST(MergeTest, AMergeDoesNotDeduplicateTheServersItAppends) {
  // Traefik collects the servers already there before each merge, not those it appends.
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", fmt::format(R"({{"http":{{"services":{{"s":{}}}}}}})", Lb("http://1.1.1.1:1"))));
  parts.push_back(Part("b", R"({"http":{"services":{"s":{"loadBalancer":{"strategy":"wrr",
      "servers":[{"url":"http://2.2.2.2:2"},{"url":"http://2.2.2.2:2"},{"url":"http://1.1.1.1:1"}]}}}}})"));
  parts.push_back(Part("c", fmt::format(R"({{"http":{{"services":{{"s":{}}}}}}})", Lb("http://2.2.2.2:2"))));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_THAT(m.errors, IsEmpty());
  EXPECT_EQ(json::serialize(m.config.at("http").at("services").at("s").at("loadBalancer").at("servers")),
            R"([{"url":"http://1.1.1.1:1"},{"url":"http://2.2.2.2:2"},{"url":"http://2.2.2.2:2"}])");
}

TEST(MergeTest, TcpServersAreKnownByAddress) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", R"({"tcp":{"services":{"t":{"loadBalancer":{"servers":[{"address":"1.1.1.1:1"}]}}}}})"));
  parts.push_back(Part("b", R"({"tcp":{"services":{"t":{"loadBalancer":{"servers":[{"address":"1.1.1.1:1"}]}}}}})"));
  parts.push_back(Part("c", R"({"tcp":{"services":{"t":{"loadBalancer":{"servers":[{"address":"2.2.2.2:2"}]}}}}})"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_EQ(json::serialize(m.config.at("tcp").at("services").at("t").at("loadBalancer").at("servers")),
            R"([{"address":"1.1.1.1:1"},{"address":"2.2.2.2:2"}])");
}

TEST(MergeTest, SkipDuplicatesKeepsTheFirstAndReportsTheOthers) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("one.yml", R"j({"http":{"routers":{"r":{"rule":"Host(`a`)"}}}})j"));
  parts.push_back(Part("two.yml", R"j({"http":{"routers":{"r":{"rule":"Host(`b`)"}}}})j"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kSkipDuplicates);
  EXPECT_EQ(m.config, json::parse(R"j({"http":{"routers":{"r":{"rule":"Host(`a`)"}}}})j"));
  EXPECT_THAT(m.errors, ElementsAre(R"(two.yml: HTTP router "r" already configured, skipping)"));
}

TEST(MergeTest, CertificatesSeenAgainAddTheirStores) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", R"({"tls":{"certificates":[{"certFile":"c","keyFile":"k","stores":["x"]}]}})"));
  parts.push_back(Part("b", R"({"tls":{"certificates":[{"certFile":"c","keyFile":"k","stores":["y","x"]},
                                                        {"certFile":"d","keyFile":"k"}]}})"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_EQ(m.config, json::parse(R"({"tls":{"certificates":[{"certFile":"c","keyFile":"k","stores":["x","y"]},
                                                             {"certFile":"d","keyFile":"k"}]}})"));
}

TEST(MergeTest, OutputMapsAreSortedAndEmptyOnesLeftOut) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", R"({"http":{"routers":{},"middlewares":{"z":{"addPrefix":{"prefix":"/"}}}}})"));
  parts.push_back(Part("b", R"({"http":{"middlewares":{"b":{"addPrefix":{"prefix":"/"}}}},"udp":{}})"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_EQ(json::serialize(m.config),
            R"({"http":{"middlewares":{"b":{"addPrefix":{"prefix":"/"}},"z":{"addPrefix":{"prefix":"/"}}}}})");
  EXPECT_THAT(m.errors, IsEmpty());
}

TEST(MergeTest, MalformedSectionsAreReportedNotFatal) {
  std::vector<NamedConfiguration> parts;
  parts.push_back(Part("a", R"({"http":[1],"tcp":{"routers":3}})"));
  MergedConfiguration m = MergeConfigurations(std::move(parts), MergeStrategy::kMerge);
  EXPECT_TRUE(m.config.empty());
  EXPECT_EQ(m.errors.size(), 2u);
}

}  // namespace
}  // namespace paddock::edge
