// vpc/security_groups: the one owner of security groups — each VPC's default group and the
// groups users create — with their rules, and of the network policy they make together with the
// addresses vpc/ipam hands out (vpc/policy.h), which the node agents enforce.
//
//   SecurityGroups groups(store);
//   ASSIGN_OR_RETURN(SecurityGroup web, groups.Create(scope, {.name = "web", .description = "web tier"}));
//   ASSIGN_OR_RETURN(std::vector<Rule> added,
//                    groups.Authorize(scope, GroupRef{.id = web.id}, RuleDirection::kIngress,
//                                     {RuleSpec{.protocol = "tcp", .from_port = 80, .to_port = 80,
//                                               .cidr = "0.0.0.0/0"}}));
//   ASSIGN_OR_RETURN(VpcPolicy policy, groups.PolicyFor(scope));
//
// Semantics are EC2's in a default VPC (every Paddock VPC is its account's default VPC):
// - The default group (name "default", id derived from the scope, vpc/default_vpc.h) exists from
//   the start with AWS's rules — all traffic in from members of itself, all traffic out to
//   0.0.0.0/0 — and cannot be deleted; its rules can be changed. It is computed until its first
//   change, then stored (so reads never write).
// - A new group has no inbound rule and one outbound rule, all traffic to 0.0.0.0/0.
// - A rule is a protocol, a port range and ONE peer (an IPv4 CIDR or a group of the same VPC);
//   a request's IpPermission with several peers makes several rules, each with its own "sgr-" id.
//   At most 60 inbound and 60 outbound rules per group; at most 2,500 groups per VPC.
// - A group is deleted only when no interface is in it and no other group's rule names it.
// Errors carry vpc::Error details (vpc/errors.h) and EC2's texts; EC2's table answers them with
// EC2's codes (InvalidGroup.NotFound, InvalidPermission.Duplicate, …), which the comments below
// name and docs/contracts/security-group.md lists.
//
// Records (vpc/schema.h; keys in vpc/internal/tables.h):
//   security_groups        (account, region, group id) -> group record JSON, its rules included
//   security_group_names   (account, region, vpc id, name) -> group id           user groups
//   security_group_rules   (account, region, rule id) -> group id
//   security_group_refs    (account, region, referenced, referencing, rule id) -> ""
//   security_group_members (account, region, group id, ip) -> owner              (vpc/ipam)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"
#include "vpc/policy.h"

namespace paddock::vpc {

inline constexpr size_t kMaxGroupsPerVpc = 2500;
inline constexpr size_t kMaxRulesPerDirection = 60;
// awsvpcConfiguration.securityGroups: at most this many per task interface (ECS's limit).
inline constexpr size_t kMaxGroupsPerInterface = 5;

enum class RuleDirection { kIngress, kEgress };

struct Tag {
  std::string key;
  std::string value;
  friend bool operator==(const Tag&, const Tag&) = default;
};

// One rule as a request states it: a protocol, a port range and exactly one peer. Authorize and
// Revoke validate it (an empty protocol, a second peer or none is InvalidParameterValue or
// MissingParameter).
struct RuleSpec {
  std::string protocol;              // "-1", "tcp", "udp", "icmp", "icmpv6" or a number ("6", "47")
  std::optional<int32_t> from_port;  // tcp/udp: first port; icmp: type (-1: all)
  std::optional<int32_t> to_port;    // tcp/udp: last port; icmp: code (-1: all)
  std::string cidr;                  // an IPv4 CIDR, or
  std::string group_id;              // a group of the same VPC by id, or
  std::string group_name;            // by name
  std::string group_owner;           // UserId as given ("" or the caller's account)
  std::string cidr_ipv6;             // not supported: refused
  std::string prefix_list_id;        // not supported: refused
  std::string description;
};

// A stored rule.
struct Rule {
  std::string id;  // "sgr-" + 17 hex digits
  std::string group_id;
  RuleDirection direction = RuleDirection::kIngress;
  std::string protocol;  // normalized: "-1", "tcp", "udp", "icmp" or a number ("47")
  int32_t from_port = -1;  // -1/-1 for "-1" and protocols without ports
  int32_t to_port = -1;
  std::string cidr;        // exactly one of cidr and peer_group
  std::string peer_group;
  std::string description;
  std::vector<Tag> tags;
};

struct SecurityGroup {
  std::string id;  // "sg-" + 17 hex digits
  std::string name;
  std::string description;
  std::string vpc_id;
  std::string arn;
  AccountId owner;
  std::vector<Tag> tags;
  std::vector<Rule> rules;  // ingress and egress, in the order they were authorized
};

// A group named by id, or (when id is empty) by name.
struct GroupRef {
  std::string id;
  std::string name;
};

struct CreateRequest {
  std::string name;
  std::string description;
  std::optional<std::string> vpc_id;  // omitted: the default VPC
  std::vector<Tag> tags;
};

struct RevokeResult {
  std::vector<Rule> revoked;
  // Permissions that matched no rule: EC2 in a default VPC answers them instead of failing.
  std::vector<RuleSpec> unknown;
};

struct GroupQuery {
  std::vector<std::string> ids;    // each must exist (InvalidGroup.NotFound)
  std::vector<std::string> names;  // each must exist
  std::function<bool(const SecurityGroup&)> keep;  // the request's filters; null keeps all
  size_t limit = 0;                // 0: every match
  std::string after;               // a group id from the previous page's `next`
};

struct GroupPage {
  std::vector<SecurityGroup> groups;
  std::string next;  // empty when done
};

struct RuleQuery {
  std::vector<std::string> rule_ids;  // each must exist (InvalidSecurityGroupRuleId.NotFound)
  std::vector<std::string> group_ids;  // only these groups' rules (unknown groups have none)
  std::function<bool(const Rule&)> keep;
  size_t limit = 0;
  std::string after;  // the previous page's `next` (an opaque position)
};

struct RulePage {
  std::vector<Rule> rules;
  std::string next;
};

class SecurityGroups {
 public:
  explicit SecurityGroups(store::Store& store) : store_(store) {}

  // CreateSecurityGroup. Errors: MissingParameter, InvalidParameterValue (name or description),
  // InvalidGroup.Reserved ("default"), InvalidVpcID.NotFound, InvalidGroup.Duplicate,
  // SecurityGroupLimitExceeded.
  StatusOr<SecurityGroup> Create(const Scope& scope, const CreateRequest& request);
  // DeleteSecurityGroup; returns the deleted group's id. CannotDelete for the default group,
  // DependencyViolation while an interface is in it or another group's rule names it.
  StatusOr<std::string> Delete(const Scope& scope, const GroupRef& group);
  // Authorize*: adds every rule of `specs` or none (InvalidPermission.Duplicate when one exists
  // already, RulesPerSecurityGroupLimitExceeded, InvalidParameterValue, InvalidGroup.NotFound
  // for an unknown peer group). Returns the rules added.
  StatusOr<std::vector<Rule>> Authorize(const Scope& scope, const GroupRef& group, RuleDirection direction,
                                        const std::vector<RuleSpec>& specs, const std::vector<Tag>& rule_tags = {});
  // Revoke*: removes the rules that match `specs` (protocol, ports and peer; not the description)
  // and the rules named by `rule_ids` (InvalidSecurityGroupRuleId.NotFound when one is not a rule
  // of this group in this direction; then nothing is removed).
  StatusOr<RevokeResult> Revoke(const Scope& scope, const GroupRef& group, RuleDirection direction,
                                const std::vector<RuleSpec>& specs, const std::vector<std::string>& rule_ids);
  // DescribeSecurityGroups, ordered by group id.
  StatusOr<GroupPage> Describe(const Scope& scope, const GroupQuery& query);
  // DescribeSecurityGroupRules, ordered by group id, then as each group holds them.
  StatusOr<RulePage> DescribeRules(const Scope& scope, const RuleQuery& query);

  // The scope's VPC as the agents enforce it: every group with its rules, every held address with
  // its groups, and a version that changes whenever any of it does. One store read; cost grows
  // with the VPC's groups, rules and addresses (docs/contracts/security-group.md has numbers).
  StatusOr<VpcPolicy> PolicyFor(const Scope& scope);

  // Removes every group of the account (after the tasks' reaper released their addresses) and
  // whatever address records remain. Tells the listener for each scope it touched.
  Status ReapAccount(const AccountId& account);

  // `listener` is called (on the caller's thread, after the commit) whenever a change altered a
  // VPC's policy: a group created or deleted, rules added or removed, an account reaped — and,
  // through NotifyPolicyChanged, addresses allocated or released by ecs/task. Must be cheap and
  // must not call back into SecurityGroups. Set it before serving.
  void SetChangeListener(std::function<void(const Scope&)> listener);
  // For owners that allocate or release addresses (vpc::AllocateIp/ReleaseIp) in their own
  // transactions: call after the commit.
  void NotifyPolicyChanged(const Scope& scope);

 private:
  store::Store& store_;
  std::mutex listener_mu_;
  std::function<void(const Scope&)> listener_;  // GUARDED_BY(listener_mu_)
};

// For ecs/ (RunTask, CreateService…): the ids among `ids` that are not groups of the scope's VPC,
// in order. Read inside the caller's transaction.
StatusOr<std::vector<std::string>> MissingGroups(store::ReadTxn& txn, const Scope& scope,
                                                 const std::vector<std::string>& ids);

// The policy's version for its content (a digest): what PolicyFor puts in `version`.
std::string PolicyVersion(const VpcPolicy& policy);

}  // namespace paddock::vpc
