// vpc::SecurityGroups: the owner's rules (docs/contracts/security-group.md), the policy the agents
// enforce, and EC2's Query actions through the real front.
#include "vpc/security_groups.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "store/key.h"
#include "vpc/default_vpc.h"
#include "vpc/errors.h"
#include "vpc/ipam.h"

namespace paddock::vpc {
namespace {

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOther{AccountId("210987654321"), Region("us-east-1")};

RuleSpec Tcp(int32_t from, int32_t to, std::string cidr) {
  RuleSpec s;
  s.protocol = "tcp";
  s.from_port = from;
  s.to_port = to;
  s.cidr = std::move(cidr);
  return s;
}

RuleSpec FromGroup(std::string protocol, std::string group_id) {
  RuleSpec s;
  s.protocol = std::move(protocol);
  s.group_id = std::move(group_id);
  return s;
}

class SecurityGroupsTest : public ::testing::Test {
 protected:
  SecurityGroupsTest() {
    groups_.SetChangeListener([this](const Scope& s) {
      std::lock_guard lock(mu_);
      changed_.push_back(s);
    });
  }

  SecurityGroup Create(std::string name, const Scope& scope = kScope) {
    auto g = groups_.Create(scope, CreateRequest{name, "for " + name, std::nullopt, {}});
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : SecurityGroup{};
  }
  SecurityGroup Get(const std::string& id, const Scope& scope = kScope) {
    auto page = groups_.Describe(scope, GroupQuery{{id}, {}, nullptr, 0, ""});
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() && page->groups.size() == 1 ? page->groups[0] : SecurityGroup{};
  }
  std::vector<Rule> Rules(const SecurityGroup& g, RuleDirection d) {
    std::vector<Rule> out;
    for (const auto& r : g.rules)
      if (r.direction == d) out.push_back(r);
    return out;
  }
  // Allocates an address for `owner` in subnet a of the scope's VPC, with `groups`.
  StatusOr<uint32_t> Allocate(const Scope& scope, std::string owner, std::vector<std::string> groups,
                              std::string host = {}) {
    uint32_t ip = 0;
    Status st = store_->Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(ip, AllocateIp(txn, scope, DefaultVpcFor(scope).subnets[0], owner, groups, host));
      return OkStatus();
    });
    if (!st.ok()) return st;
    return ip;
  }
  Status Release(const Scope& scope, uint32_t ip) {
    return store_->Write([&](store::WriteTxn& txn) { return ReleaseIp(txn, scope, DefaultVpcFor(scope).subnets[0], ip); });
  }
  size_t Changes() {
    std::lock_guard lock(mu_);
    return changed_.size();
  }
  // The number of rows of `table` (every account).
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
  SecurityGroups groups_{*store_};
  DefaultVpc vpc_ = DefaultVpcFor(kScope);
  std::mutex mu_;
  std::vector<Scope> changed_;
};

TEST_F(SecurityGroupsTest, TheDefaultGroupHasAwsRulesAndCannotBeDeleted) {
  SecurityGroup d = Get(vpc_.security_group_id);
  EXPECT_EQ(d.name, "default");
  EXPECT_EQ(d.vpc_id, vpc_.vpc_id);
  ASSERT_EQ(Rules(d, RuleDirection::kIngress).size(), 1u);
  EXPECT_EQ(Rules(d, RuleDirection::kIngress)[0].protocol, "-1");
  EXPECT_EQ(Rules(d, RuleDirection::kIngress)[0].peer_group, d.id);  // from members of itself
  ASSERT_EQ(Rules(d, RuleDirection::kEgress).size(), 1u);
  EXPECT_EQ(Rules(d, RuleDirection::kEgress)[0].cidr, "0.0.0.0/0");
  EXPECT_EQ(Get(vpc_.security_group_id).rules[0].id, d.rules[0].id);  // stable ids

  auto by_name = groups_.Delete(kScope, GroupRef{"", "default"});
  ASSERT_FALSE(by_name.ok());
  EXPECT_EQ(by_name.status().detail(), ErrorDetail(Error::kCannotDelete));
  EXPECT_EQ(by_name.status().message(),
            fmt::format("the specified group: \"{}\" name: \"default\" cannot be deleted by a user", d.id));
  EXPECT_EQ(groups_.Delete(kScope, GroupRef{d.id, ""}).status().detail(), ErrorDetail(Error::kCannotDelete));
}

TEST_F(SecurityGroupsTest, CreateValidatesNamesAndRefusesDuplicates) {
  SecurityGroup web = Create("web");
  EXPECT_TRUE(web.id.starts_with("sg-"));
  EXPECT_EQ(web.id.size(), 20u);
  EXPECT_EQ(web.arn, fmt::format("arn:aws:ec2:us-east-1:123456789012:security-group/{}", web.id));
  // A new group: no inbound rule, all traffic out.
  EXPECT_TRUE(Rules(web, RuleDirection::kIngress).empty());
  ASSERT_EQ(Rules(web, RuleDirection::kEgress).size(), 1u);
  EXPECT_EQ(Rules(web, RuleDirection::kEgress)[0].cidr, "0.0.0.0/0");

  auto code = [&](CreateRequest r) { return groups_.Create(kScope, r).status().detail(); };
  EXPECT_EQ(code({"", "d", std::nullopt, {}}), ErrorDetail(Error::kMissingParameter));
  EXPECT_EQ(code({"x", "", std::nullopt, {}}), ErrorDetail(Error::kMissingParameter));
  EXPECT_EQ(code({"default", "d", std::nullopt, {}}), ErrorDetail(Error::kGroupNameReserved));
  EXPECT_EQ(code({"sg-web", "d", std::nullopt, {}}), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(code({"caf\xc3\xa9", "d", std::nullopt, {}}), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(code({"a\nb", "d", std::nullopt, {}}), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(code({std::string(256, 'a'), "d", std::nullopt, {}}), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(code({"x", "d", std::string("vpc-0123456789abcdef0"), {}}), ErrorDetail(Error::kVpcNotFound));
  EXPECT_EQ(code({"x", "d", std::nullopt, {Tag{"aws:x", "y"}}}), ErrorDetail(Error::kInvalidParameterValue));
  auto dup = groups_.Create(kScope, CreateRequest{"web", "again", vpc_.vpc_id, {}});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().detail(), ErrorDetail(Error::kGroupDuplicate));
  EXPECT_EQ(dup.status().message(), fmt::format("The security group 'web' already exists for VPC '{}'", vpc_.vpc_id));
  // Another account may use the name: its VPC is another.
  EXPECT_TRUE(groups_.Create(kOther, CreateRequest{"web", "theirs", std::nullopt, {}}).ok());
  auto tagged = groups_.Create(kScope, CreateRequest{"tagged", "t", std::nullopt, {Tag{"team", "core"}}});
  ASSERT_TRUE(tagged.ok());
  EXPECT_EQ(Get(tagged->id).tags, (std::vector<Tag>{Tag{"team", "core"}}));
}

TEST_F(SecurityGroupsTest, AuthorizeAddsEveryRuleOrNone) {
  SecurityGroup web = Create("web"), lb = Create("lb");
  auto added = groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                                 {Tcp(80, 80, "10.0.0.0/8"), Tcp(443, 443, "0.0.0.0/0"), FromGroup("-1", lb.id)},
                                 {Tag{"why", "lb"}});
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  ASSERT_EQ(added->size(), 3u);
  std::set<std::string> ids;
  for (const auto& r : *added) {
    EXPECT_TRUE(r.id.starts_with("sgr-"));
    EXPECT_EQ(r.group_id, web.id);
    EXPECT_EQ(r.tags, (std::vector<Tag>{Tag{"why", "lb"}}));
    ids.insert(r.id);
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(Rules(Get(web.id), RuleDirection::kIngress).size(), 3u);

  // One duplicate refuses the whole request: the new rule beside it is not added.
  auto dup = groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                               {Tcp(22, 22, "10.0.0.0/8"), Tcp(80, 80, "10.0.0.0/8")});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().detail(), ErrorDetail(Error::kRuleDuplicate));
  EXPECT_EQ(dup.status().message(),
            "the specified rule \"peer: 10.0.0.0/8, TCP, from port: 80, to port: 80, ALLOW\" already exists");
  EXPECT_EQ(Rules(Get(web.id), RuleDirection::kIngress).size(), 3u);
  // A description does not make another rule.
  RuleSpec described = Tcp(443, 443, "0.0.0.0/0");
  described.description = "https";
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {described}).status().detail(),
            ErrorDetail(Error::kRuleDuplicate));
  // The same permission twice in one request.
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                              {Tcp(8080, 8080, "1.2.3.0/24"), Tcp(8080, 8080, "1.2.3.0/24")})
                .status()
                .detail(),
            ErrorDetail(Error::kInvalidParameterValue));
  // By name, and the protocol number 6 is tcp.
  RuleSpec by_number = Tcp(5432, 5432, "10.1.0.0/16");
  by_number.protocol = "6";
  auto named = groups_.Authorize(kScope, GroupRef{"", "web"}, RuleDirection::kIngress, {by_number});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ((*named)[0].protocol, "tcp");
  // Egress: the new group's all-traffic rule is there already.
  RuleSpec all_out;
  all_out.protocol = "-1";
  all_out.cidr = "0.0.0.0/0";
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kEgress, {all_out}).status().message(),
            "the specified rule \"peer: 0.0.0.0/0, ALL, ALLOW\" already exists");
}

TEST_F(SecurityGroupsTest, AuthorizeValidatesEachRule) {
  SecurityGroup web = Create("web");
  auto status = [&](RuleSpec s) {
    return groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {s}).status();
  };
  auto with = [](std::string protocol, std::optional<int32_t> from, std::optional<int32_t> to) {
    RuleSpec s;
    s.protocol = std::move(protocol);
    s.from_port = from;
    s.to_port = to;
    s.cidr = "10.0.0.0/8";
    return s;
  };
  EXPECT_EQ(status(with("bogus", 1, 1)).message(), "Invalid value 'bogus' for IP protocol. Unknown protocol.");
  EXPECT_EQ(status(with("all", {}, {})).detail(), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(status(with("256", {}, {})).detail(), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(status(with("", {}, {})).detail(), ErrorDetail(Error::kMissingParameter));
  EXPECT_EQ(status(with("tcp", {}, {})).message(), "Invalid value 'Must specify both from and to ports with TCP/UDP.' for portRange");
  EXPECT_EQ(status(with("tcp", -1, -1)).message(), "TCP/UDP (from) port (-1) out of range");
  EXPECT_EQ(status(with("udp", 1, 70000)).message(), "TCP/UDP (to) port (70000) out of range");
  EXPECT_EQ(status(with("tcp", 90, 80)).detail(), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(status(with("icmp", 256, 0)).message(), "ICMP type (256) out of range");
  EXPECT_EQ(status(with("icmp", 8, 300)).message(), "ICMP code (300) out of range");
  EXPECT_EQ(status(with("icmp", -1, 0)).detail(), ErrorDetail(Error::kInvalidParameterValue));
  EXPECT_EQ(status(with("icmpv6", -1, -1)).detail(), ErrorDetail(Error::kInvalidParameterValue));
  RuleSpec bad_cidr = Tcp(1, 1, "10.0.0.0/33");
  EXPECT_EQ(status(bad_cidr).message(), "CIDR block 10.0.0.0/33 is malformed");
  EXPECT_EQ(status(Tcp(1, 1, "10.0.0.1/8")).detail(), ErrorDetail(Error::kInvalidParameterValue));  // host bits set
  EXPECT_EQ(status(Tcp(1, 1, "bogus")).detail(), ErrorDetail(Error::kInvalidParameterValue));
  RuleSpec none = Tcp(1, 1, "");
  EXPECT_EQ(status(none).detail(), ErrorDetail(Error::kRuleMalformed));
  RuleSpec v6 = Tcp(1, 1, "");
  v6.cidr_ipv6 = "::/0";
  EXPECT_EQ(status(v6).detail(), ErrorDetail(Error::kInvalidParameterValue));
  RuleSpec pl = Tcp(1, 1, "");
  pl.prefix_list_id = "pl-0123456789abcdef0";
  EXPECT_EQ(status(pl).detail(), ErrorDetail(Error::kPrefixListNotFound));
  RuleSpec described = Tcp(1, 1, "10.0.0.0/8");
  described.description = "no\nnewlines";
  EXPECT_EQ(status(described).detail(), ErrorDetail(Error::kInvalidParameterValue));
  auto missing_peer = status(FromGroup("-1", "sg-0123456789abcdef0"));
  EXPECT_EQ(missing_peer.detail(), ErrorDetail(Error::kGroupNotFound));
  EXPECT_EQ(missing_peer.message(), "The security group 'sg-0123456789abcdef0' does not exist");
  RuleSpec by_name = FromGroup("-1", "");
  by_name.group_name = "nope";
  EXPECT_EQ(status(by_name).message(),
            fmt::format("The security group 'nope' does not exist in default VPC '{}'", vpc_.vpc_id));
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{"sg-0123456789abcdef0", ""}, RuleDirection::kIngress, {Tcp(1, 1, "1.0.0.0/8")})
                .status()
                .detail(),
            ErrorDetail(Error::kGroupNotFound));
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{"sg-1", ""}, RuleDirection::kIngress, {Tcp(1, 1, "1.0.0.0/8")})
                .status()
                .detail(),
            ErrorDetail(Error::kGroupIdMalformed));
  // Accepted edges: all protocols (ports ignored), every tcp port, any ICMP, a numbered protocol.
  RuleSpec all = with("-1", 5, 7);
  auto ok = groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                              {all, with("tcp", 0, 65535), with("icmp", -1, -1), with("47", {}, {})});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].from_port, -1);
  EXPECT_EQ((*ok)[3].protocol, "47");
  EXPECT_TRUE(Rules(Get(web.id), RuleDirection::kIngress).size() == 4u);
}

TEST_F(SecurityGroupsTest, RuleAndGroupLimits) {
  SecurityGroup web = Create("web");
  std::vector<RuleSpec> sixty;
  for (int i = 0; i < 60; ++i) sixty.push_back(Tcp(1000 + i, 1000 + i, "10.0.0.0/8"));
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, sixty).ok());
  auto over = groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(1, 1, "10.0.0.0/8")});
  EXPECT_EQ(over.status().detail(), ErrorDetail(Error::kRuleLimitExceeded));
  EXPECT_EQ(over.status().message(), "The maximum number of rules per security group has been reached.");
  // Outbound has its own 60: the all-traffic rule and 59 more.
  std::vector<RuleSpec> out;
  for (int i = 0; i < 59; ++i) out.push_back(Tcp(1000 + i, 1000 + i, "10.0.0.0/8"));
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kEgress, out).ok());
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kEgress, {Tcp(1, 1, "10.0.0.0/8")})
                .status()
                .detail(),
            ErrorDetail(Error::kRuleLimitExceeded));

  // 2,500 groups per VPC, the default group included (web is one of them).
  for (size_t i = 0; i < kMaxGroupsPerVpc - 2; ++i) Create(fmt::format("g{}", i));
  auto full = groups_.Create(kScope, CreateRequest{"one-more", "x", std::nullopt, {}});
  EXPECT_EQ(full.status().detail(), ErrorDetail(Error::kGroupLimitExceeded));
  EXPECT_TRUE(groups_.Create(kOther, CreateRequest{"one-more", "x", std::nullopt, {}}).ok());  // per VPC
}

TEST_F(SecurityGroupsTest, RevokeByPermissionAndByIdAndReportsUnknownPermissions) {
  SecurityGroup web = Create("web"), lb = Create("lb");
  auto added = groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                                 {Tcp(80, 80, "10.0.0.0/8"), Tcp(443, 443, "10.0.0.0/8"), FromGroup("tcp", lb.id)});
  ASSERT_FALSE(added.ok());  // tcp needs ports
  RuleSpec from_lb = FromGroup("tcp", lb.id);
  from_lb.from_port = 8080;
  from_lb.to_port = 8080;
  added = groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                            {Tcp(80, 80, "10.0.0.0/8"), Tcp(443, 443, "10.0.0.0/8"), from_lb});
  ASSERT_TRUE(added.ok());

  // By properties (a description need not be given); one permission matches nothing.
  auto r = groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress,
                          {Tcp(80, 80, "10.0.0.0/8"), Tcp(81, 81, "10.0.0.0/8")}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->revoked.size(), 1u);
  EXPECT_EQ(r->revoked[0].id, (*added)[0].id);
  ASSERT_EQ(r->unknown.size(), 1u);
  EXPECT_EQ(*r->unknown[0].from_port, 81);
  // By id; a rule id of the other direction, or unknown, is refused and removes nothing.
  const std::string egress_id = Rules(Get(web.id), RuleDirection::kEgress)[0].id;
  EXPECT_EQ(groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {}, {(*added)[1].id, egress_id})
                .status()
                .detail(),
            ErrorDetail(Error::kRuleNotFound));
  EXPECT_EQ(Rules(Get(web.id), RuleDirection::kIngress).size(), 2u);
  EXPECT_EQ(groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {}, {"sgr-1"}).status().detail(),
            ErrorDetail(Error::kRuleIdMalformed));
  r = groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {}, {(*added)[1].id, (*added)[2].id});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->revoked.size(), 2u);
  EXPECT_TRUE(Rules(Get(web.id), RuleDirection::kIngress).empty());
  // A permission naming a group that does not exist matches nothing (no error).
  r = groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {FromGroup("-1", "sg-0123456789abcdef0")}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->unknown.size(), 1u);
  EXPECT_EQ(groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {}, {}).status().detail(),
            ErrorDetail(Error::kMissingParameter));
}

TEST_F(SecurityGroupsTest, TheDefaultGroupsRulesCanChange) {
  SecurityGroup d = Get(vpc_.security_group_id);
  const std::string self_rule = Rules(d, RuleDirection::kIngress)[0].id;
  auto rules = groups_.DescribeRules(kScope, RuleQuery{{self_rule}, {}, nullptr, 0, ""});
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  ASSERT_EQ(rules->rules.size(), 1u);
  auto r = groups_.Revoke(kScope, GroupRef{"", "default"}, RuleDirection::kIngress, {}, {self_rule});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  SecurityGroup after = Get(vpc_.security_group_id);
  EXPECT_TRUE(Rules(after, RuleDirection::kIngress).empty());
  ASSERT_EQ(Rules(after, RuleDirection::kEgress).size(), 1u);
  EXPECT_EQ(Rules(after, RuleDirection::kEgress)[0].id, Rules(d, RuleDirection::kEgress)[0].id);  // ids kept
  // Once stored, its remaining rule is found by id like any other.
  auto egress = groups_.DescribeRules(kScope, RuleQuery{{Rules(d, RuleDirection::kEgress)[0].id}, {}, nullptr, 0, ""});
  ASSERT_TRUE(egress.ok());
  EXPECT_EQ(egress->rules.size(), 1u);
  EXPECT_EQ(groups_.DescribeRules(kScope, RuleQuery{{self_rule}, {}, nullptr, 0, ""}).status().detail(),
            ErrorDetail(Error::kRuleNotFound));
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{d.id, ""}, RuleDirection::kIngress, {FromGroup("-1", d.id)}).ok());
  EXPECT_EQ(Rules(Get(d.id), RuleDirection::kIngress).size(), 1u);
}

TEST_F(SecurityGroupsTest, DeleteRefusesGroupsInUse) {
  SecurityGroup web = Create("web"), lb = Create("lb"), lonely = Create("lonely");
  // Referenced by another group's rule: DependencyViolation until the rule goes.
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {FromGroup("-1", lb.id)}).ok());
  auto refused = groups_.Delete(kScope, GroupRef{lb.id, ""});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().detail(), ErrorDetail(Error::kDependencyViolation));
  EXPECT_EQ(refused.status().message(), fmt::format("resource {} has a dependent object", lb.id));
  // Its own rules naming itself do not hold it.
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{lonely.id, ""}, RuleDirection::kIngress, {FromGroup("-1", lonely.id)}).ok());
  EXPECT_TRUE(groups_.Delete(kScope, GroupRef{"", "lonely"}).ok());
  EXPECT_EQ(groups_.Delete(kScope, GroupRef{lonely.id, ""}).status().detail(), ErrorDetail(Error::kGroupNotFound));
  // An interface in the group: DependencyViolation until its address is released.
  auto ip = Allocate(kScope, "arn:task/1", {web.id});
  ASSERT_TRUE(ip.ok()) << ip.status().ToString();
  EXPECT_EQ(groups_.Delete(kScope, GroupRef{web.id, ""}).status().detail(), ErrorDetail(Error::kDependencyViolation));
  ASSERT_TRUE(Release(kScope, *ip).ok());
  ASSERT_TRUE(groups_.Delete(kScope, GroupRef{web.id, ""}).ok());  // and its rule naming lb went with it
  ASSERT_TRUE(groups_.Delete(kScope, GroupRef{lb.id, ""}).ok());
  // The name is free again; nothing of the deleted groups is left behind.
  EXPECT_TRUE(groups_.Create(kScope, CreateRequest{"web", "again", std::nullopt, {}}).ok());
  EXPECT_EQ(Rows("security_group_refs"), 0u);
  EXPECT_EQ(Rows("security_group_members"), 0u);
  EXPECT_EQ(Rows("security_group_rules"), 1u);  // the new web's all-traffic egress
}

TEST_F(SecurityGroupsTest, AllocateIpRecordsGroupsAndRefusesUnknownOnesLeavingNothing) {
  SecurityGroup web = Create("web");
  auto missing = Allocate(kScope, "arn:task/1", {web.id, "sg-0123456789abcdef0"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().detail(), ErrorDetail(Error::kGroupNotFound));
  EXPECT_EQ(Rows("vpc_addresses"), 0u);
  EXPECT_EQ(Rows("security_group_members"), 0u);
  EXPECT_EQ(Rows("node_addresses"), 0u);
  // Another account's group is unknown here.
  SecurityGroup theirs = Create("theirs", kOther);
  EXPECT_EQ(Allocate(kScope, "arn:task/1", {theirs.id}).status().detail(), ErrorDetail(Error::kGroupNotFound));
  // No groups: the default group. Duplicates are dropped.
  auto a = Allocate(kScope, "arn:task/a", {});
  auto b = Allocate(kScope, "arn:task/b", {web.id, web.id, vpc_.security_group_id});
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<HeldAddress> held;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(held, HeldAddresses(txn, kScope));
                return OkStatus();
              }).ok());
  ASSERT_EQ(held.size(), 2u);
  for (const auto& h : held) {
    if (h.ip == *a) {
      EXPECT_EQ(h.groups, std::vector<std::string>{vpc_.security_group_id});
    }
    if (h.ip == *b) {
      EXPECT_EQ(h.groups, (std::vector<std::string>{web.id, vpc_.security_group_id}));
    }
  }
  EXPECT_EQ(Rows("security_group_members"), 3u);
  ASSERT_TRUE(Release(kScope, *b).ok());
  EXPECT_EQ(Rows("security_group_members"), 1u);
}

TEST_F(SecurityGroupsTest, MissingGroupsForEcs) {
  SecurityGroup web = Create("web");
  SecurityGroup theirs = Create("web", kOther);
  std::vector<std::string> missing;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(missing, MissingGroups(txn, kScope, {web.id, vpc_.security_group_id, theirs.id, "x"}));
                return OkStatus();
              }).ok());
  EXPECT_EQ(missing, (std::vector<std::string>{theirs.id, "x"}));
}

TEST_F(SecurityGroupsTest, PolicyHasEveryGroupRuleAndMemberAndItsVersionFollowsChanges) {
  SecurityGroup web = Create("web"), db = Create("db");
  RuleSpec pg = FromGroup("tcp", web.id);
  pg.from_port = pg.to_port = 5432;
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{db.id, ""}, RuleDirection::kIngress,
                                {pg, Tcp(5432, 5432, "10.0.0.0/8"), Tcp(22, 22, "192.168.0.0/16")})
                  .ok());
  auto web_ip = Allocate(kScope, "arn:task/web", {web.id});
  auto db_ip = Allocate(kScope, "arn:task/db", {db.id, vpc_.security_group_id});
  ASSERT_TRUE(web_ip.ok() && db_ip.ok());

  auto p = groups_.PolicyFor(kScope);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->vpc_id, vpc_.vpc_id);
  ASSERT_EQ(p->groups.size(), 3u);
  std::vector<std::string> ids;
  for (const auto& g : p->groups) ids.push_back(g.group_id);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  for (const auto& g : p->groups) {
    if (g.group_id == db.id) {
      // Rules of one (protocol, ports) merge into one PolicyRule with all their peers.
      ASSERT_EQ(g.ingress.size(), 2u);
      EXPECT_EQ(g.ingress[0], (PolicyRule{"tcp", 5432, 5432, {"10.0.0.0/8"}, {web.id}}));
      EXPECT_EQ(g.ingress[1], (PolicyRule{"tcp", 22, 22, {"192.168.0.0/16"}, {}}));
      ASSERT_EQ(g.egress.size(), 1u);
      EXPECT_EQ(g.egress[0], (PolicyRule{"-1", -1, -1, {"0.0.0.0/0"}, {}}));
    }
    if (g.group_id == vpc_.security_group_id) {
      EXPECT_EQ(g.ingress, (std::vector<PolicyRule>{PolicyRule{"-1", -1, -1, {}, {g.group_id}}}));
    }
    if (g.group_id == web.id) {
      EXPECT_TRUE(g.ingress.empty());
    }
  }
  ASSERT_EQ(p->members.size(), 2u);
  for (const auto& m : p->members) {
    if (m.ip == Ipv4ToString(*web_ip)) {
      EXPECT_EQ(m.groups, std::vector<std::string>{web.id});
    }
    if (m.ip == Ipv4ToString(*db_ip)) {
      EXPECT_EQ(m.groups, (std::vector<std::string>{db.id, vpc_.security_group_id}));
    }
  }
  EXPECT_EQ(p->version, PolicyVersion(*p));
  EXPECT_EQ(p->version.size(), 32u);

  // Unchanged: same version. Each kind of change: another one (and undoing a change gives the
  // earlier version back: equal versions are equal policies).
  std::string last = p->version;
  auto again = groups_.PolicyFor(kScope);
  EXPECT_EQ(*again, *p);
  auto changed = [&] {
    auto next = groups_.PolicyFor(kScope);
    EXPECT_TRUE(next.ok());
    const bool differs = next->version != last;
    last = next->version;
    return differs;
  };
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(80, 80, "0.0.0.0/0")}).ok());
  EXPECT_TRUE(changed());
  ASSERT_TRUE(groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(80, 80, "0.0.0.0/0")}, {}).ok());
  EXPECT_TRUE(changed());
  auto third = Allocate(kScope, "arn:task/3", {});
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(changed());
  ASSERT_TRUE(Release(kScope, *third).ok());
  EXPECT_TRUE(changed());
  SecurityGroup extra = Create("extra");
  EXPECT_TRUE(changed());
  ASSERT_TRUE(groups_.Delete(kScope, GroupRef{extra.id, ""}).ok());
  EXPECT_TRUE(changed());
  EXPECT_EQ(last, p->version);  // back where it started
  // Another VPC's changes are not this one's.
  auto before = groups_.PolicyFor(kScope);
  Create("theirs", kOther);
  ASSERT_TRUE(Allocate(kOther, "arn:task/theirs", {}).ok());
  EXPECT_EQ(groups_.PolicyFor(kScope)->version, before->version);
  EXPECT_EQ(groups_.PolicyFor(kOther)->members.size(), 1u);
}

TEST_F(SecurityGroupsTest, TheListenerHearsEveryChangeAfterItsCommit) {
  size_t n = Changes();
  SecurityGroup web = Create("web");
  EXPECT_EQ(Changes(), ++n);
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(1, 1, "1.0.0.0/8")}).ok());
  EXPECT_EQ(Changes(), ++n);
  ASSERT_TRUE(groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(1, 1, "1.0.0.0/8")}, {}).ok());
  EXPECT_EQ(Changes(), ++n);
  // A revoke that removes nothing and a refused change are not changes.
  ASSERT_TRUE(groups_.Revoke(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(1, 1, "1.0.0.0/8")}, {}).ok());
  EXPECT_FALSE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {Tcp(1, 0, "1.0.0.0/8")}).ok());
  EXPECT_EQ(Changes(), n);
  ASSERT_TRUE(groups_.Delete(kScope, GroupRef{web.id, ""}).ok());
  EXPECT_EQ(Changes(), ++n);
  groups_.NotifyPolicyChanged(kOther);  // what ecs/task calls after an allocation
  EXPECT_EQ(Changes(), ++n);
  std::lock_guard lock(mu_);
  EXPECT_EQ(changed_.back(), kOther);
}

TEST_F(SecurityGroupsTest, DescribeFiltersAndPages) {
  for (int i = 0; i < 7; ++i) Create(fmt::format("g{}", i));
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  do {
    auto page = groups_.Describe(kScope, GroupQuery{{}, {}, nullptr, 3, after});
    ASSERT_TRUE(page.ok());
    for (const auto& g : page->groups) seen.push_back(g.id);
    after = page->next;
    ++pages;
  } while (!after.empty());
  EXPECT_EQ(seen.size(), 8u);  // and the default group, in its place
  EXPECT_EQ(pages, 3);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 8u);
  auto filtered = groups_.Describe(kScope, GroupQuery{{}, {}, [](const SecurityGroup& g) { return g.name == "g3"; }, 0, ""});
  ASSERT_TRUE(filtered.ok());
  ASSERT_EQ(filtered->groups.size(), 1u);
  EXPECT_EQ(groups_.Describe(kScope, GroupQuery{{}, {"nope"}, nullptr, 0, ""}).status().detail(), ErrorDetail(Error::kGroupNotFound));
  auto by_name = groups_.Describe(kScope, GroupQuery{{}, {"default", "g1"}, nullptr, 0, ""});
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->groups.size(), 2u);
  // Another account sees none of them.
  auto theirs = groups_.Describe(kOther, GroupQuery{});
  ASSERT_TRUE(theirs.ok());
  ASSERT_EQ(theirs->groups.size(), 1u);
  EXPECT_EQ(theirs->groups[0].name, "default");
  EXPECT_EQ(groups_.Describe(kOther, GroupQuery{{seen[0]}, {}, nullptr, 0, ""}).status().detail(),
            ErrorDetail(Error::kGroupNotFound));
}

TEST_F(SecurityGroupsTest, DescribeRulesPagesAcrossGroups) {
  SecurityGroup a = Create("a"), b = Create("b");
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{a.id, ""}, RuleDirection::kIngress,
                                {Tcp(1, 1, "1.0.0.0/8"), Tcp(2, 2, "1.0.0.0/8"), Tcp(3, 3, "1.0.0.0/8")})
                  .ok());
  // 2 (default) + 4 (a) + 1 (b) rules.
  std::vector<std::string> seen;
  std::string after;
  do {
    auto page = groups_.DescribeRules(kScope, RuleQuery{{}, {}, nullptr, 2, after});
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const auto& r : page->rules) seen.push_back(r.id);
    after = page->next;
  } while (!after.empty());
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 7u);
  auto only_a = groups_.DescribeRules(kScope, RuleQuery{{}, {a.id}, nullptr, 0, ""});
  ASSERT_TRUE(only_a.ok());
  EXPECT_EQ(only_a->rules.size(), 4u);
  EXPECT_EQ(groups_.DescribeRules(kScope, RuleQuery{{"sgr-0123456789abcdef0"}, {}, nullptr, 0, ""}).status().detail(),
            ErrorDetail(Error::kRuleNotFound));
  // Another account cannot read a rule by id.
  EXPECT_EQ(groups_.DescribeRules(kOther, RuleQuery{{seen[3]}, {}, nullptr, 0, ""}).status().detail(),
            ErrorDetail(Error::kRuleNotFound));
}

TEST_F(SecurityGroupsTest, AccountsCannotReferenceEachOthersGroups) {
  SecurityGroup mine = Create("mine"), theirs = Create("theirs", kOther);
  RuleSpec cross = FromGroup("-1", theirs.id);
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{mine.id, ""}, RuleDirection::kIngress, {cross}).status().detail(),
            ErrorDetail(Error::kGroupNotFound));
  cross.group_owner = kOther.account.str();
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{mine.id, ""}, RuleDirection::kIngress, {cross}).status().detail(),
            ErrorDetail(Error::kGroupNotFound));
  EXPECT_EQ(groups_.Delete(kScope, GroupRef{theirs.id, ""}).status().detail(), ErrorDetail(Error::kGroupNotFound));
  EXPECT_EQ(groups_.Authorize(kScope, GroupRef{theirs.id, ""}, RuleDirection::kIngress, {Tcp(1, 1, "1.0.0.0/8")})
                .status()
                .detail(),
            ErrorDetail(Error::kGroupNotFound));
  EXPECT_TRUE(groups_.Delete(kOther, GroupRef{theirs.id, ""}).ok());
}

TEST_F(SecurityGroupsTest, ReapAccountRemovesGroupsAndAddresses) {
  SecurityGroup web = Create("web");
  ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{web.id, ""}, RuleDirection::kIngress, {FromGroup("-1", web.id)}).ok());
  ASSERT_TRUE(Allocate(kScope, "arn:task/left", {web.id}).ok());
  Create("theirs", kOther);
  ASSERT_TRUE(Allocate(kOther, "arn:task/theirs", {}).ok());
  const size_t before = Changes();
  ASSERT_TRUE(groups_.ReapAccount(kScope.account).ok());
  EXPECT_GT(Changes(), before);
  auto mine = groups_.Describe(kScope, GroupQuery{});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->groups.size(), 1u);  // the computed default group only
  EXPECT_EQ(groups_.PolicyFor(kScope)->members.size(), 0u);
  // The other account keeps everything.
  EXPECT_EQ(groups_.Describe(kOther, GroupQuery{})->groups.size(), 2u);
  EXPECT_EQ(groups_.PolicyFor(kOther)->members.size(), 1u);
  EXPECT_EQ(Rows("node_addresses"), 1u);
  EXPECT_EQ(Rows("security_group_members"), 1u);
  EXPECT_EQ(Rows("security_group_refs"), 0u);
}

TEST_F(SecurityGroupsTest, UpgradeMovesLegacyAddressesIntoEachVpc) {
  // A state directory from before schema 7: node-wide pools by CIDR.
  const Subnet mine = vpc_.subnets[0], theirs = DefaultVpcFor(kOther).subnets[1];
  const uint32_t a = mine.FirstUsable() + 7, b = theirs.FirstUsable() + 2;
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
                RETURN_IF_ERROR(txn.Put("ipam", store::Key().Str(mine.Cidr()).U64(a).Done(),
                                        "123456789012 us-east-1 arn:aws:ecs:us-east-1:123456789012:task/c/1"));
                RETURN_IF_ERROR(txn.Put("ipam", store::Key().Str(theirs.Cidr()).U64(b).Done(),
                                        "210987654321 us-east-1 arn:aws:ecs:us-east-1:210987654321:task/c/2"));
                RETURN_IF_ERROR(txn.Put("ipam_subnets", store::Key().Str(mine.Cidr()).Done(),
                                        fmt::format("{} 1", a)));
                return txn.Put("ipam_subnets", store::Key().Str(theirs.Cidr()).Done(), fmt::format("{} 1", b));
              }).ok());
  ASSERT_TRUE(UpgradeLegacyIpam(*store_).ok());
  ASSERT_TRUE(UpgradeLegacyIpam(*store_).ok());  // again: nothing to do
  EXPECT_EQ(Rows("ipam"), 0u);
  EXPECT_EQ(Rows("ipam_subnets"), 0u);
  auto p = groups_.PolicyFor(kScope);
  ASSERT_EQ(p->members.size(), 1u);
  EXPECT_EQ(p->members[0], (PolicyMember{Ipv4ToString(a), {vpc_.security_group_id}}));
  EXPECT_EQ(groups_.PolicyFor(kOther)->members.size(), 1u);
  // The upgraded records behave as new ones: counted, released, and next-fit goes on from the
  // old cursor.
  uint32_t available = 0;
  ASSERT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                ASSIGN_OR_RETURN(available, AvailableIps(txn, kScope, mine));
                return OkStatus();
              }).ok());
  EXPECT_EQ(available, mine.UsableCount() - 1);
  auto next = Allocate(kScope, "arn:task/3", {});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, a + 1);
  EXPECT_EQ(groups_.Delete(kScope, GroupRef{"", "default"}).status().detail(), ErrorDetail(Error::kCannotDelete));
  ASSERT_TRUE(Release(kScope, a).ok());
  EXPECT_EQ(groups_.PolicyFor(kScope)->members.size(), 1u);
}

// Issue 16 §3: the policy tells each agent where the VPC's other members run (their hosts' overlay
// addresses) and the VPC's vni, given with its first address, never shared with another VPC.
TEST_F(SecurityGroupsTest, PolicyNamesEachMembersHostAndTheVpcsOwnVni) {
  const Scope other{AccountId("222233334444"), Region("us-east-1")};
  auto empty = groups_.PolicyFor(kScope);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->vni, 0u);  // no address yet: no vni
  auto a = Allocate(kScope, "arn:task/a", {}, "10.9.0.11");
  auto b = Allocate(kScope, "arn:task/b", {}, "10.9.0.13");
  auto c = Allocate(kScope, "arn:task/c", {});  // a host without an overlay
  auto d = Allocate(other, "arn:task/d", {}, "10.9.0.11");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  auto p = groups_.PolicyFor(kScope), q = groups_.PolicyFor(other);
  ASSERT_TRUE(p.ok() && q.ok());
  EXPECT_NE(p->vni, 0u);
  EXPECT_NE(q->vni, 0u);
  EXPECT_NE(p->vni, q->vni);
  std::map<std::string, std::string> hosts;
  for (const auto& m : p->members) hosts[m.ip] = m.host;
  EXPECT_EQ(hosts, (std::map<std::string, std::string>{
                       {Ipv4ToString(*a), "10.9.0.11"}, {Ipv4ToString(*b), "10.9.0.13"}, {Ipv4ToString(*c), ""}}));
  ASSERT_EQ(q->members.size(), 1u);
  EXPECT_EQ(q->members[0].host, "10.9.0.11");
  // A member moving away (released, re-allocated on another host) changes the version; the vni stays.
  const std::string version = p->version;
  ASSERT_TRUE(Release(kScope, *b).ok());
  ASSERT_TRUE(Allocate(kScope, "arn:task/b2", {}, "10.9.0.12").ok());
  auto later = groups_.PolicyFor(kScope);
  ASSERT_TRUE(later.ok());
  EXPECT_NE(later->version, version);
  EXPECT_EQ(later->vni, p->vni);
  // Every address released: the VPC keeps its vni (it is never handed to another VPC).
  for (const auto& m : later->members) {
    uint32_t ip = 0;
    ASSERT_TRUE(ParseIpv4(m.ip, &ip));
    ASSERT_TRUE(Release(kScope, ip).ok());
  }
  EXPECT_EQ(groups_.PolicyFor(kScope)->vni, p->vni);
}

TEST_F(SecurityGroupsTest, PolicyOfABusyVpcHasEveryGroupAndMember) {
  // A busy VPC: 20 groups of 10 rules, 400 tasks in two groups each (its cost: vpc_policy_bench).
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    SecurityGroup g = Create(fmt::format("g{}", i));
    std::vector<RuleSpec> rules;
    for (int j = 0; j < 9; ++j) rules.push_back(Tcp(8000 + j, 8000 + j, fmt::format("10.{}.0.0/16", j)));
    rules.push_back(FromGroup("-1", g.id));
    ASSERT_TRUE(groups_.Authorize(kScope, GroupRef{g.id, ""}, RuleDirection::kIngress, rules).ok());
    ids.push_back(g.id);
  }
  for (int t = 0; t < 400; ++t) {
    uint32_t ip = 0;
    ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
                  const Subnet& s = vpc_.subnets[t % 3];
                  ASSIGN_OR_RETURN(ip, AllocateIp(txn, kScope, s, fmt::format("arn:task/{}", t),
                                                  {ids[t % 20], ids[(t + 1) % 20]}));
                  return OkStatus();
                }).ok());
  }
  auto p = groups_.PolicyFor(kScope);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->members.size(), 400u);
  EXPECT_EQ(p->groups.size(), 21u);
  for (const auto& m : p->members) EXPECT_EQ(m.groups.size(), 2u) << m.ip;
}

}  // namespace
}  // namespace paddock::vpc
