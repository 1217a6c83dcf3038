// Ec2Service's security-group actions: EC2's Query parameters (decoded by the model) into
// vpc::SecurityGroups' typed requests, and its answers into EC2's XML (botocore's ec2 2016-11-15 output shapes).
#include <fmt/format.h>

#include <algorithm>

#include "ec2/api/ec2_service.h"
#include "ec2/api/internal/ec2_query.h"
#include "vpc/default_vpc.h"

namespace paddock::ec2::api {

using vpc::CreateRequest;
using vpc::GroupPage;
using vpc::GroupQuery;
using vpc::GroupRef;
using vpc::RevokeResult;
using vpc::Rule;
using vpc::RuleDirection;
using vpc::RulePage;
using vpc::RuleQuery;
using vpc::RuleSpec;
using vpc::SecurityGroup;
using vpc::Tag;

namespace {

using internal::Attributes;
using internal::Ec2Error;
using internal::Filters;
using internal::Input;
using internal::Response;
using internal::XmlText;

// ---- parameters in ----

// TagSpecification.N.ResourceType / .Tag.M.Key / .Tag.M.Value: the tags for `resource_type`.
// Another resource type is refused, as EC2 refuses it for the action.
StatusOr<std::vector<Tag>> TagSpecifications(const Input& in, std::string_view resource_type) {
  std::vector<Tag> tags;
  for (const Input& spec : in.Structs("TagSpecifications")) {
    const std::string type = spec.Str("ResourceType").value_or("");
    if (type != resource_type)
      return Ec2Error(Error::kInvalidParameterValue,
                      fmt::format("'{}' is not a valid taggable resource type for this operation.", type));
    for (const Input& tag : spec.Structs("Tags")) tags.push_back(Tag{tag.Str("Key").value_or(""), tag.Str("Value").value_or("")});
  }
  return tags;
}

// One RuleSpec per peer of each IpPermissions.N (an IpPermission without a peer gives one spec
// without a peer, which the owner refuses).
StatusOr<std::vector<RuleSpec>> PermissionSpecs(const Input& in) {
  std::vector<RuleSpec> specs;
  for (const Input& perm : in.Structs("IpPermissions")) {
    RuleSpec base;
    base.protocol = perm.Str("IpProtocol").value_or("");
    base.from_port = perm.Int("FromPort");
    base.to_port = perm.Int("ToPort");
    const size_t before = specs.size();
    for (const Input& range : perm.Structs("IpRanges")) {
      RuleSpec s = base;
      s.cidr = range.Str("CidrIp").value_or("");
      s.description = range.Str("Description").value_or("");
      if (s.cidr.empty()) return Ec2Error(Error::kMissingParameter, "The request must contain the parameter cidrIp");
      specs.push_back(std::move(s));
    }
    for (const Input& pair : perm.Structs("UserIdGroupPairs")) {  // IpPermissions.N.Groups.M
      RuleSpec s = base;
      s.group_id = pair.Str("GroupId").value_or("");
      s.group_name = pair.Str("GroupName").value_or("");
      s.group_owner = pair.Str("UserId").value_or("");
      s.description = pair.Str("Description").value_or("");
      if (s.group_id.empty() && s.group_name.empty())
        return Ec2Error(Error::kMissingParameter, "The request must contain the parameter groupId or groupName");
      specs.push_back(std::move(s));
    }
    for (const Input& range : perm.Structs("Ipv6Ranges")) {
      RuleSpec s = base;
      s.cidr_ipv6 = range.Str("CidrIpv6").value_or("::/0");
      specs.push_back(std::move(s));
    }
    for (const Input& list : perm.Structs("PrefixListIds")) {
      RuleSpec s = base;
      s.prefix_list_id = list.Str("PrefixListId").value_or("pl-");
      specs.push_back(std::move(s));
    }
    if (specs.size() == before) specs.push_back(base);
  }
  return specs;
}

// The legacy flat form: CidrIp / SourceSecurityGroupName with IpProtocol, FromPort, ToPort. A
// source group without a protocol grants ICMP, TCP and UDP in full, as EC2 documents.
StatusOr<std::vector<RuleSpec>> FlatSpecs(const Input& in) {
  const std::optional<std::string> cidr = in.Str("CidrIp");
  const std::optional<std::string> source = in.Str("SourceSecurityGroupName");
  const std::optional<std::string> protocol = in.Str("IpProtocol");
  if (!cidr && !source) {
    if (protocol) return Ec2Error(Error::kMissingParameter, "The request must contain the parameter cidrIp or sourceSecurityGroupName");
    return std::vector<RuleSpec>();
  }
  if (cidr && source)
    return Ec2Error(Error::kInvalidParameterCombination, "The parameter 'cidrIp' may not be used in combination with 'sourceSecurityGroupName'.");
  RuleSpec base;
  base.from_port = in.Int("FromPort");
  base.to_port = in.Int("ToPort");
  if (cidr) {
    base.cidr = *cidr;
  } else {
    base.group_name = *source;
    base.group_owner = in.Str("SourceSecurityGroupOwnerId").value_or("");
  }
  if (protocol || cidr) {
    base.protocol = protocol.value_or("");
    return std::vector<RuleSpec>{base};
  }
  RuleSpec icmp = base, tcp = base, udp = base;
  icmp.protocol = "icmp";
  icmp.from_port = icmp.to_port = -1;
  tcp.protocol = "tcp";
  udp.protocol = "udp";
  tcp.from_port = udp.from_port = 0;
  tcp.to_port = udp.to_port = 65535;
  return std::vector<RuleSpec>{icmp, tcp, udp};
}

StatusOr<std::vector<RuleSpec>> RequestSpecs(const Input& in) {
  ASSIGN_OR_RETURN(std::vector<RuleSpec> specs, PermissionSpecs(in));
  ASSIGN_OR_RETURN(std::vector<RuleSpec> flat, FlatSpecs(in));
  if (!specs.empty() && !flat.empty())
    return Ec2Error(Error::kInvalidParameterCombination,
                    "The parameter 'ipPermissions' may not be used in combination with 'cidrIp', "
                    "'sourceSecurityGroupName', 'ipProtocol', 'fromPort' or 'toPort'.");
  return specs.empty() ? flat : specs;
}

GroupRef RefFrom(const Input& in) { return GroupRef{in.Str("GroupId").value_or(""), in.Str("GroupName").value_or("")}; }

// ---- XML out ----

std::string TagSetXml(const std::vector<Tag>& tags) {
  std::string out = "<tagSet>";
  for (const auto& t : tags) out += "<item>" + XmlText("key", t.key) + XmlText("value", t.value) + "</item>";
  return out + "</tagSet>";
}

bool HasPorts(std::string_view protocol) { return protocol == "tcp" || protocol == "udp" || protocol == "icmp"; }

// IpPermissions: the rules of one direction, one item per (protocol, ports) with every peer.
std::string PermissionsXml(std::string_view element, const SecurityGroup& g, RuleDirection d) {
  struct Perm {
    const Rule* first;
    std::string groups, ranges;
  };
  std::vector<Perm> perms;
  for (const auto& r : g.rules) {
    if (r.direction != d) continue;
    auto it = std::find_if(perms.begin(), perms.end(), [&](const Perm& p) {
      return p.first->protocol == r.protocol && p.first->from_port == r.from_port && p.first->to_port == r.to_port;
    });
    if (it == perms.end()) {
      perms.push_back(Perm{&r, {}, {}});
      it = perms.end() - 1;
    }
    const std::string description = r.description.empty() ? "" : XmlText("description", r.description);
    if (!r.cidr.empty()) {
      it->ranges += "<item>" + XmlText("cidrIp", r.cidr) + description + "</item>";
    } else {
      it->groups += "<item>" + description + XmlText("userId", g.owner.str()) + XmlText("groupId", r.peer_group) + "</item>";
    }
  }
  std::string out = fmt::format("<{}>", element);
  for (const auto& p : perms) {
    out += "<item>" + XmlText("ipProtocol", p.first->protocol);
    if (HasPorts(p.first->protocol))
      out += fmt::format("<fromPort>{}</fromPort><toPort>{}</toPort>", p.first->from_port, p.first->to_port);
    out += "<groups>" + p.groups + "</groups><ipRanges>" + p.ranges + "</ipRanges><ipv6Ranges/><prefixListIds/></item>";
  }
  return out + fmt::format("</{}>", element);
}

std::string GroupXml(const SecurityGroup& g) {
  return "<item>" + XmlText("ownerId", g.owner.str()) + XmlText("groupId", g.id) + XmlText("groupName", g.name) +
         XmlText("groupDescription", g.description) + XmlText("vpcId", g.vpc_id) + XmlText("securityGroupArn", g.arn) +
         PermissionsXml("ipPermissions", g, RuleDirection::kIngress) +
         PermissionsXml("ipPermissionsEgress", g, RuleDirection::kEgress) + TagSetXml(g.tags) + "</item>";
}

std::string RulePortsXml(const Rule& r) {
  return XmlText("ipProtocol", r.protocol) + fmt::format("<fromPort>{}</fromPort><toPort>{}</toPort>", r.from_port, r.to_port);
}

// A SecurityGroupRule (Authorize*'s answer, DescribeSecurityGroupRules).
std::string RuleXml(const Scope& scope, const Rule& r) {
  std::string out = "<item>" + XmlText("securityGroupRuleId", r.id) + XmlText("groupId", r.group_id) +
                    XmlText("groupOwnerId", scope.account.str()) +
                    fmt::format("<isEgress>{}</isEgress>", r.direction == RuleDirection::kEgress) + RulePortsXml(r);
  if (!r.cidr.empty()) {
    out += XmlText("cidrIpv4", r.cidr);
  } else {
    out += "<referencedGroupInfo>" + XmlText("groupId", r.peer_group) + XmlText("userId", scope.account.str()) +
           "</referencedGroupInfo>";
  }
  if (!r.description.empty()) out += XmlText("description", r.description);
  out += TagSetXml(r.tags);
  out += XmlText("securityGroupRuleArn", fmt::format("arn:aws:ec2:{}:{}:security-group-rule/{}", scope.region.str(),
                                                     scope.account.str(), r.id));
  return out + "</item>";
}

// A RevokedSecurityGroupRule.
std::string RevokedXml(const Rule& r) {
  std::string out = "<item>" + XmlText("securityGroupRuleId", r.id) + XmlText("groupId", r.group_id) +
                    fmt::format("<isEgress>{}</isEgress>", r.direction == RuleDirection::kEgress) + RulePortsXml(r);
  out += r.cidr.empty() ? XmlText("referencedGroupId", r.peer_group) : XmlText("cidrIpv4", r.cidr);
  if (!r.description.empty()) out += XmlText("description", r.description);
  return out + "</item>";
}

// A permission of the request that matched no rule, as it was given.
std::string UnknownPermissionXml(const RuleSpec& s) {
  std::string out = "<item>" + XmlText("ipProtocol", s.protocol);
  if (s.from_port) out += fmt::format("<fromPort>{}</fromPort>", *s.from_port);
  if (s.to_port) out += fmt::format("<toPort>{}</toPort>", *s.to_port);
  out += "<groups>";
  if (!s.group_id.empty() || !s.group_name.empty()) {
    out += "<item>";
    if (!s.group_owner.empty()) out += XmlText("userId", s.group_owner);
    if (!s.group_name.empty()) out += XmlText("groupName", s.group_name);
    if (!s.group_id.empty()) out += XmlText("groupId", s.group_id);
    out += "</item>";
  }
  out += "</groups><ipRanges>";
  if (!s.cidr.empty()) out += "<item>" + XmlText("cidrIp", s.cidr) + "</item>";
  out += "</ipRanges><ipv6Ranges>";
  if (!s.cidr_ipv6.empty()) out += "<item>" + XmlText("cidrIpv6", s.cidr_ipv6) + "</item>";
  out += "</ipv6Ranges><prefixListIds>";
  if (!s.prefix_list_id.empty()) out += "<item>" + XmlText("prefixListId", s.prefix_list_id) + "</item>";
  return out + "</prefixListIds></item>";
}

// ---- filters ----

void AddTags(Attributes& a, const std::vector<Tag>& tags) {
  for (const auto& t : tags) {
    a.emplace("tag-key", t.key);
    a.emplace("tag-value", t.value);
    a.emplace("tag:" + t.key, t.value);
  }
}

Attributes GroupAttributes(const SecurityGroup& g) {
  Attributes a{{"group-id", g.id}, {"group-name", g.name}, {"vpc-id", g.vpc_id}, {"description", g.description},
               {"owner-id", g.owner.str()}};
  AddTags(a, g.tags);
  for (const auto& r : g.rules) {
    const std::string prefix = r.direction == RuleDirection::kEgress ? "egress.ip-permission." : "ip-permission.";
    a.emplace(prefix + "protocol", r.protocol);
    a.emplace(prefix + "from-port", std::to_string(r.from_port));
    a.emplace(prefix + "to-port", std::to_string(r.to_port));
    if (!r.cidr.empty()) a.emplace(prefix + "cidr", r.cidr);
    if (!r.peer_group.empty()) a.emplace(prefix + "group-id", r.peer_group);
  }
  return a;
}

const std::set<std::string> kGroupFilters = {
    "group-id", "group-name", "vpc-id", "description", "owner-id", "tag-key", "tag-value",
    "ip-permission.protocol", "ip-permission.from-port", "ip-permission.to-port", "ip-permission.cidr",
    "ip-permission.group-id", "egress.ip-permission.protocol", "egress.ip-permission.from-port",
    "egress.ip-permission.to-port", "egress.ip-permission.cidr", "egress.ip-permission.group-id"};

Attributes RuleAttributes(const Rule& r) {
  Attributes a{{"group-id", r.group_id}, {"security-group-rule-id", r.id}};
  AddTags(a, r.tags);
  return a;
}

const std::set<std::string> kRuleFilters = {"group-id", "security-group-rule-id", "tag-key", "tag-value"};

// The token context: the list and everything that shaped it, so a token is only good for the
// same request's next page.
std::string TokenContext(std::string_view action, const Scope& scope, const Filters& filters,
                         const std::vector<std::string>& ids, const std::vector<std::string>& names) {
  std::string out = fmt::format("{}|{}|{}", action, scope.account.str(), scope.region.str());
  for (const auto& [name, values] : filters) out += fmt::format("|f:{}={}", name, fmt::join(values, ","));
  for (const auto& id : ids) out += "|i:" + id;
  for (const auto& n : names) out += "|n:" + n;
  return out;
}

}  // namespace

StatusOr<std::string> Ec2Service::CreateSecurityGroup(const aws::CallContext& ctx, const Input& in) {
  CreateRequest req;
  req.name = in.Str("GroupName").value_or("");
  req.description = in.Str("Description").value_or("");  // sent as GroupDescription
  req.vpc_id = in.Str("VpcId");
  ASSIGN_OR_RETURN(req.tags, TagSpecifications(in, "security-group"));
  ASSIGN_OR_RETURN(SecurityGroup g, groups_.Create(ctx.scope, req));
  return Response("CreateSecurityGroup", ctx.request_id,
                  XmlText("groupId", g.id) + TagSetXml(g.tags) + XmlText("securityGroupArn", g.arn));
}

StatusOr<std::string> Ec2Service::DeleteSecurityGroup(const aws::CallContext& ctx, const Input& in) {
  ASSIGN_OR_RETURN(std::string id, groups_.Delete(ctx.scope, RefFrom(in)));
  return Response("DeleteSecurityGroup", ctx.request_id, "<return>true</return>" + XmlText("groupId", id));
}

StatusOr<std::string> Ec2Service::AuthorizeRules(const aws::CallContext& ctx, const Input& in, RuleDirection d) {
  ASSIGN_OR_RETURN(std::vector<RuleSpec> specs, RequestSpecs(in));
  ASSIGN_OR_RETURN(std::vector<Tag> tags, TagSpecifications(in, "security-group-rule"));
  ASSIGN_OR_RETURN(std::vector<Rule> added, groups_.Authorize(ctx.scope, RefFrom(in), d, specs, tags));
  std::string rules;
  for (const auto& r : added) rules += RuleXml(ctx.scope, r);
  return Response(ctx.action, ctx.request_id, "<return>true</return><securityGroupRuleSet>" + rules + "</securityGroupRuleSet>");
}

StatusOr<std::string> Ec2Service::RevokeRules(const aws::CallContext& ctx, const Input& in, RuleDirection d) {
  ASSIGN_OR_RETURN(std::vector<RuleSpec> specs, RequestSpecs(in));
  const std::vector<std::string> ids = in.Strings("SecurityGroupRuleIds");
  ASSIGN_OR_RETURN(RevokeResult result, groups_.Revoke(ctx.scope, RefFrom(in), d, specs, ids));
  // In a default VPC, EC2 answers permissions that match no rule instead of failing.
  std::string body = fmt::format("<return>{}</return>", result.unknown.empty());
  if (!result.unknown.empty()) {
    body += "<unknownIpPermissionSet>";
    for (const auto& s : result.unknown) body += UnknownPermissionXml(s);
    body += "</unknownIpPermissionSet>";
  }
  body += "<revokedSecurityGroupRuleSet>";
  for (const auto& r : result.revoked) body += RevokedXml(r);
  body += "</revokedSecurityGroupRuleSet>";
  return Response(ctx.action, ctx.request_id, body);
}

StatusOr<std::string> Ec2Service::DescribeSecurityGroups(const aws::CallContext& ctx, const Input& in) {
  GroupQuery q;
  q.ids = in.Strings("GroupIds");
  q.names = in.Strings("GroupNames");
  const Filters filters = internal::ParseFilters(in);
  RETURN_IF_ERROR(internal::CheckFilterNames(filters, kGroupFilters, {"tag:"}));
  q.keep = [&](const SecurityGroup& g) { return internal::Matches(filters, GroupAttributes(g)); };
  ASSIGN_OR_RETURN(q.limit, internal::MaxResults(in));
  const std::string context = TokenContext("DescribeSecurityGroups", ctx.scope, filters, q.ids, q.names);
  ASSIGN_OR_RETURN(q.after, internal::NextTokenPosition(in, tokens_, context));
  ASSIGN_OR_RETURN(GroupPage page, groups_.Describe(ctx.scope, q));
  std::string body = "<securityGroupInfo>";
  for (const auto& g : page.groups) body += GroupXml(g);
  body += "</securityGroupInfo>";
  if (!page.next.empty()) body += XmlText("nextToken", tokens_.Encode(context, page.next));
  return Response("DescribeSecurityGroups", ctx.request_id, body);
}

StatusOr<std::string> Ec2Service::DescribeSecurityGroupRules(const aws::CallContext& ctx, const Input& in) {
  RuleQuery q;
  q.rule_ids = in.Strings("SecurityGroupRuleIds");
  const Filters filters = internal::ParseFilters(in);
  RETURN_IF_ERROR(internal::CheckFilterNames(filters, kRuleFilters, {"tag:"}));
  if (auto it = filters.find("group-id"); it != filters.end() &&
      std::none_of(it->second.begin(), it->second.end(), [](const std::string& v) {
        return v.find_first_of("*?") != std::string::npos;
      }))
    q.group_ids.assign(it->second.begin(), it->second.end());  // only those groups need reading
  q.keep = [&](const Rule& r) { return internal::Matches(filters, RuleAttributes(r)); };
  ASSIGN_OR_RETURN(q.limit, internal::MaxResults(in));
  const std::string context = TokenContext("DescribeSecurityGroupRules", ctx.scope, filters, q.rule_ids, {});
  ASSIGN_OR_RETURN(q.after, internal::NextTokenPosition(in, tokens_, context));
  ASSIGN_OR_RETURN(RulePage page, groups_.DescribeRules(ctx.scope, q));
  std::string body = "<securityGroupRuleSet>";
  for (const auto& r : page.rules) body += RuleXml(ctx.scope, r);
  body += "</securityGroupRuleSet>";
  if (!page.next.empty()) body += XmlText("nextToken", tokens_.Encode(context, page.next));
  return Response("DescribeSecurityGroupRules", ctx.request_id, body);
}

}  // namespace paddock::ec2::api
