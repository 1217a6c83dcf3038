// CompileVpcPolicy against golden scripts: testdata/policy/<case>.nft is the exact nftables
// script a policy compiles to (no root needed; NetTest.CompiledGoldensLoadIntoTheKernel checks
// that the kernel takes each of them). PADDOCK_UPDATE_GOLDENS=1 rewrites the files.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/net/net.h"

namespace paddock::agent::net {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

vpc::PolicyRule Rule(std::string protocol, int32_t from, int32_t to, std::vector<std::string> cidrs,
                     std::vector<std::string> groups = {}) {
  return vpc::PolicyRule{.protocol = std::move(protocol), .from_port = from, .to_port = to, .cidrs = std::move(cidrs),
                         .groups = std::move(groups)};
}

// AWS's default security group: inbound from its own members, everything outbound.
vpc::PolicyGroup DefaultGroup(const std::string& id) {
  return vpc::PolicyGroup{id, {Rule("-1", -1, -1, {}, {id})}, {Rule("-1", -1, -1, {"0.0.0.0/0"})}};
}

std::string Golden(const std::string& name) { return std::string(PADDOCK_GOLDEN_DIR) + "/policy/" + name + ".nft"; }

void ExpectGoldenText(const std::string& name, const std::string& script) {
  if (std::getenv("PADDOCK_UPDATE_GOLDENS") != nullptr) {
    std::filesystem::create_directories(std::filesystem::path(Golden(name)).parent_path());
    std::ofstream(Golden(name)) << script;
  }
  std::ifstream in(Golden(name));
  ASSERT_TRUE(in) << "no golden file " << Golden(name) << " (PADDOCK_UPDATE_GOLDENS=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(script, want.str()) << "the script of " << name << " differs from " << Golden(name);
}

void ExpectGolden(const std::string& name, const vpc::VpcPolicy& policy) {
  StatusOr<std::string> script = CompileVpcPolicy(policy);
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  ExpectGoldenText(name, *script);
}

// Red team, 2026-12: one task sprayed ~33,000 new UDP flows a second into the node's conntrack
// table. Each task address is held to FlowLimits before its groups are asked: in a table of its
// own, whose chains run first (priority filter - 1) and hand what they accept on to the groups'.
TEST(NftPolicyTest, EachTaskAddressIsHeldToItsFlowLimits) {
  ExpectGoldenText("flow_limits", CompileVpcFlowLimits(FlowLimits{}));  // the defaults

  std::string script = CompileVpcFlowLimits(FlowLimits{.tracked_per_task = 64, .new_per_second = 0});
  EXPECT_THAT(script, HasSubstr("\t\tiifname \"transit0\" accept\n"
                                "\t\tct state new add @flows { ip saddr ct count over 64 } drop\n"));
  EXPECT_THAT(script, Not(HasSubstr("flow_rate")));
  script = CompileVpcFlowLimits(FlowLimits{.tracked_per_task = 0, .new_per_second = 0});
  EXPECT_THAT(script, Not(HasSubstr("flows")));
  EXPECT_THAT(script, Not(HasSubstr("flow_rate")));
  EXPECT_THAT(script, Not(HasSubstr("chain")));
  EXPECT_THAT(script, HasSubstr("table inet paddock_vpc_limits {\n}\n"));
}

// Review, 2026-12-01: the limits' sets were in the groups' table, which every policy apply
// replaces, so their counts started again at every change. The groups' table holds none of them.
TEST(NftPolicyTest, APolicyNeverTouchesTheFlowLimits) {
  const vpc::VpcPolicy policy{.vpc_id = "vpc-0f", .version = "v1", .groups = {DefaultGroup("sg-0d")},
                              .members = {{"172.31.0.5", {"sg-0d"}}}};
  StatusOr<std::string> script = CompileVpcPolicy(policy);
  ASSERT_TRUE(script.ok());
  EXPECT_THAT(*script, Not(HasSubstr("set flow")));
  EXPECT_THAT(*script, Not(HasSubstr("@flow")));
  EXPECT_THAT(*script, Not(HasSubstr("\ntable inet paddock_vpc_limits")));
  EXPECT_THAT(*script, HasSubstr("\t\tip saddr != @members drop\n\t\tip saddr vmap @egress\n"));
  EXPECT_THAT(*script, HasSubstr("type filter hook forward priority filter; policy drop;"));
  // The limits' chains come first in both hooks, and only ever let a packet on.
  const std::string limits = CompileVpcFlowLimits(FlowLimits{});
  EXPECT_THAT(limits, HasSubstr("type filter hook forward priority filter - 1; policy accept;"));
  EXPECT_THAT(limits, HasSubstr("type filter hook input priority filter - 1; policy accept;"));
  EXPECT_THAT(limits, Not(HasSubstr("table inet paddock_vpc\n")));
}

TEST(NftPolicyTest, NoMembersDropsEverythingButTheNodeAndReplies) {
  ExpectGolden("empty", vpc::VpcPolicy{.vpc_id = "vpc-0empty", .version = "v0", .groups = {}, .members = {}});
}

TEST(NftPolicyTest, DefaultGroupAdmitsItsMembersAndLetsEverythingOut) {
  ExpectGolden("default_group",
               vpc::VpcPolicy{.vpc_id = "vpc-0123456789abcdef0",
                              .version = "v1",
                              .groups = {DefaultGroup("sg-0default")},
                              .members = {{"172.31.0.5", {"sg-0default"}}, {"172.31.16.9", {"sg-0default"}}}});
}

TEST(NftPolicyTest, RulesByProtocolPortsCidrsAndGroups) {
  vpc::PolicyGroup web{"sg-web",
                       {Rule("tcp", 80, 80, {}, {"sg-lb"}),
                        Rule("tcp", 8080, 8090, {"10.1.2.3/8", "192.168.1.7/32"}),
                        Rule("icmp", 8, -1, {"0.0.0.0/0"}),
                        Rule("udp", -1, -1, {}, {"sg-web"}),
                        Rule("6", 0, 65535, {"172.31.0.0/16"})},
                       {Rule("-1", -1, -1, {"0.0.0.0/0"})}};
  vpc::PolicyGroup lb{"sg-lb",
                      {Rule("tcp", 443, 443, {"0.0.0.0/0"})},
                      {Rule("tcp", 80, 80, {}, {"sg-web"}),
                       Rule("icmp", 3, 4, {"172.31.0.0/16"}),
                       Rule("47", -1, -1, {"10.1.2.3/32"}),
                       Rule("icmpv6", -1, -1, {"0.0.0.0/0"})}};
  ExpectGolden("rules", vpc::VpcPolicy{.vpc_id = "vpc-0rules",
                                       .version = "v7",
                                       .groups = {lb, web},
                                       .members = {{"172.31.0.5", {"sg-web"}},
                                                   {"172.31.0.6", {"sg-lb"}},
                                                   {"172.31.0.7", {"sg-web", "sg-lb"}},
                                                   {"172.31.0.8", {"sg-gone"}}}});
}

TEST(NftPolicyTest, MembersSharingGroupsShareChains) {
  vpc::VpcPolicy p{.vpc_id = "vpc-0shared", .version = "v2", .groups = {DefaultGroup("sg-a")}, .members = {}};
  for (int i = 4; i < 200; ++i) p.members.push_back({fmt::format("172.31.0.{}", i), {"sg-a"}});
  StatusOr<std::string> script = CompileVpcPolicy(p);
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  EXPECT_THAT(*script, HasSubstr("chain eg0 {"));
  EXPECT_EQ(script->find("chain eg1 {"), std::string::npos);
}

TEST(NftPolicyTest, RefusesWhatItCannotExpress) {
  auto with = [](auto change) {
    vpc::VpcPolicy p{.vpc_id = "vpc-0bad", .version = "v1", .groups = {DefaultGroup("sg-a")},
                     .members = {{"172.31.0.5", {"sg-a"}}}};
    change(p);
    return CompileVpcPolicy(p).status();
  };
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.members[0].ip = "172.31.0.300"; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.members[0].groups = {"sg-\"x"}; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].group_id = "sg a"; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].ingress = {Rule("gre", -1, -1, {"0.0.0.0/0"})}; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].ingress = {Rule("tcp", 10, 5, {"0.0.0.0/0"})}; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].ingress = {Rule("udp", 1, 70000, {"0.0.0.0/0"})}; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].egress = {Rule("-1", -1, -1, {"10.0.0.0/33"})}; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].egress = {Rule("256", -1, -1, {"10.0.0.0/8"})}; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](vpc::VpcPolicy& p) { p.groups[0].egress = {Rule("-1", -1, -1, {}, {"sg-}"})}; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(with([](vpc::VpcPolicy&) {}).ok());
}

}  // namespace
}  // namespace paddock::agent::net
