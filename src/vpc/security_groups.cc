#include "vpc/security_groups.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <set>

#include "common/encoding.h"
#include "common/json_fields.h"
#include "store/key.h"
#include "vpc/default_vpc.h"
#include "vpc/errors.h"
#include "vpc/internal/tables.h"
#include "vpc/ipam.h"

namespace paddock::vpc {
namespace json = boost::json;
namespace {

using internal::kGroupNames;
using internal::kGroupRefs;
using internal::kGroups;
using internal::kMembers;
using internal::kRuleIndex;
using internal::ScopeKey;

constexpr size_t kAll = std::numeric_limits<size_t>::max();
constexpr std::string_view kAllTraffic = "0.0.0.0/0";

// ---- errors: vpc::Error details, which EC2's table answers with EC2's codes (docs/contracts/security-group.md) ----

Status BadInput(Error error, std::string message) { return InvalidArgument(std::move(message), error); }

Status GroupNotFound(std::string_view id) {
  return NotFound(fmt::format("The security group '{}' does not exist", id), Error::kGroupNotFound);
}
Status GroupNameNotFound(std::string_view name, std::string_view vpc_id) {
  return NotFound(fmt::format("The security group '{}' does not exist in default VPC '{}'", name, vpc_id),
                  Error::kGroupNotFound);
}
Status RuleNotFound(std::string_view id) {
  return NotFound(fmt::format("The security group rule ID '{}' does not exist", id),
                  Error::kRuleNotFound);
}

// "sg-" / "sgr-" and 8 or 17 lowercase hex digits, as EC2's ids.
bool IsEc2Id(std::string_view id, std::string_view prefix) {
  if (!id.starts_with(prefix)) return false;
  std::string_view hex = id.substr(prefix.size());
  if (hex.size() != 8 && hex.size() != 17) return false;
  return std::all_of(hex.begin(), hex.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'); });
}

std::string NewId(std::string_view prefix) { return fmt::format("{}-{}", prefix, HexEncode(RandomBytes(9)).substr(0, 17)); }

// ---- keys ----

std::string GroupKey(const Scope& scope, std::string_view id) { return ScopeKey(scope).Str(id).Done(); }
std::string NameKey(const Scope& scope, std::string_view vpc_id, std::string_view name) {
  return ScopeKey(scope).Str(vpc_id).Str(name).Done();
}
std::string RuleIndexKey(const Scope& scope, std::string_view rule_id) { return ScopeKey(scope).Str(rule_id).Done(); }
std::string RefKey(const Scope& scope, std::string_view referenced, std::string_view referencing, std::string_view rule) {
  return ScopeKey(scope).Str(referenced).Str(referencing).Str(rule).Done();
}

// ---- the record ----

json::array TagsJson(const std::vector<Tag>& tags) {
  json::array out;
  for (const auto& t : tags) out.push_back(json::array{json::string(t.key), json::string(t.value)});
  return out;
}

std::vector<Tag> TagsFrom(const json::object& o) {
  std::vector<Tag> out;
  if (auto it = o.find("tags"); it != o.end() && it->value().is_array())
    for (const auto& t : it->value().get_array())
      if (t.is_array() && t.get_array().size() == 2 && t.get_array()[0].is_string() && t.get_array()[1].is_string())
        out.push_back(Tag{std::string(t.get_array()[0].get_string()), std::string(t.get_array()[1].get_string())});
  return out;
}

std::string EncodeGroup(const SecurityGroup& g) {
  json::array rules;
  for (const auto& r : g.rules) {
    json::object o{{"id", r.id},
                   {"egress", r.direction == RuleDirection::kEgress},
                   {"protocol", r.protocol},
                   {"from", r.from_port},
                   {"to", r.to_port}};
    if (!r.cidr.empty()) o["cidr"] = r.cidr;
    if (!r.peer_group.empty()) o["peer"] = r.peer_group;
    if (!r.description.empty()) o["description"] = r.description;
    if (!r.tags.empty()) o["tags"] = TagsJson(r.tags);
    rules.push_back(std::move(o));
  }
  json::object o{{"id", g.id}, {"name", g.name}, {"description", g.description}, {"rules", std::move(rules)}};
  if (!g.tags.empty()) o["tags"] = TagsJson(g.tags);
  return json::serialize(o);
}

// The parts not stored (VPC, ARN, owner) follow from the scope.
void Complete(const Scope& scope, SecurityGroup& g) {
  g.vpc_id = DefaultVpcFor(scope).vpc_id;
  g.arn = fmt::format("arn:aws:ec2:{}:{}:security-group/{}", scope.region.str(), scope.account.str(), g.id);
  g.owner = scope.account;
  for (auto& r : g.rules) r.group_id = g.id;
}

StatusOr<SecurityGroup> DecodeGroup(const Scope& scope, std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("corrupt security group record");
  const json::object& o = v.get_object();
  using json_fields::Str;
  SecurityGroup g;
  g.id = Str(o, "id");
  g.name = Str(o, "name");
  g.description = Str(o, "description");
  g.tags = TagsFrom(o);
  if (auto it = o.find("rules"); it != o.end() && it->value().is_array()) {
    for (const auto& rv : it->value().get_array()) {
      if (!rv.is_object()) return DataLoss("corrupt security group record");
      const json::object& ro = rv.get_object();
      Rule r;
      r.id = Str(ro, "id");
      r.direction = json_fields::Bool(ro, "egress").value_or(false) ? RuleDirection::kEgress : RuleDirection::kIngress;
      r.protocol = Str(ro, "protocol");
      r.from_port = static_cast<int32_t>(json_fields::Int(ro, "from").value_or(-1));
      r.to_port = static_cast<int32_t>(json_fields::Int(ro, "to").value_or(-1));
      r.cidr = Str(ro, "cidr");
      r.peer_group = Str(ro, "peer");
      r.description = Str(ro, "description");
      r.tags = TagsFrom(ro);
      g.rules.push_back(std::move(r));
    }
  }
  Complete(scope, g);
  return g;
}

// The default group as AWS creates it, before any change: all traffic in from its own members,
// all traffic out. Its rule ids are derived from the scope, so they are stable until it is stored.
SecurityGroup ComputedDefault(const Scope& scope) {
  const DefaultVpc vpc = DefaultVpcFor(scope);
  SecurityGroup g;
  g.id = vpc.security_group_id;
  g.name = "default";
  g.description = "default VPC security group";
  Rule in;
  in.id = StableId("sgr", scope, "default-sg-ingress");
  in.direction = RuleDirection::kIngress;
  in.protocol = "-1";
  in.peer_group = g.id;
  Rule out;
  out.id = StableId("sgr", scope, "default-sg-egress");
  out.direction = RuleDirection::kEgress;
  out.protocol = "-1";
  out.cidr = std::string(kAllTraffic);
  g.rules = {in, out};
  Complete(scope, g);
  return g;
}

StatusOr<std::optional<SecurityGroup>> LoadGroup(store::ReadTxn& txn, const Scope& scope, std::string_view id) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kGroups, GroupKey(scope, id)));
  if (v) {
    ASSIGN_OR_RETURN(SecurityGroup g, DecodeGroup(scope, *v));
    return std::optional<SecurityGroup>(std::move(g));
  }
  if (id == DefaultVpcFor(scope).security_group_id) return std::optional<SecurityGroup>(ComputedDefault(scope));
  return std::optional<SecurityGroup>();
}

// The id of the group `name` names in the scope's VPC, or nullopt.
StatusOr<std::optional<std::string>> IdForName(store::ReadTxn& txn, const Scope& scope, std::string_view name) {
  const DefaultVpc vpc = DefaultVpcFor(scope);
  if (name == "default") return std::optional<std::string>(vpc.security_group_id);
  ASSIGN_OR_RETURN(auto v, txn.Get(kGroupNames, NameKey(scope, vpc.vpc_id, name)));
  return v;
}

StatusOr<SecurityGroup> Resolve(store::ReadTxn& txn, const Scope& scope, const GroupRef& ref) {
  if (ref.id.empty() && ref.name.empty())
    return BadInput(Error::kMissingParameter, "The request must contain the parameter groupName or groupId");
  std::string id = ref.id;
  if (id.empty()) {
    ASSIGN_OR_RETURN(auto found, IdForName(txn, scope, ref.name));
    if (!found) return GroupNameNotFound(ref.name, DefaultVpcFor(scope).vpc_id);
    id = *found;
  } else if (!IsEc2Id(id, "sg-")) {
    return BadInput(Error::kGroupIdMalformed, fmt::format("Invalid id: \"{}\" (expecting \"sg-...\")", id));
  }
  ASSIGN_OR_RETURN(auto g, LoadGroup(txn, scope, id));
  if (!g) return GroupNotFound(id);
  return std::move(*g);
}

// ---- validation ----

// EC2's character set for VPC security group names, descriptions and rule descriptions.
bool IsGroupText(std::string_view s) {
  static constexpr std::string_view kExtra = " ._-:/()#,@[]+=&;{}!$*";
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || kExtra.find(c) != std::string_view::npos;
  });
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

Status CheckGroupText(std::string_view parameter, std::string_view value) {
  if (value.size() > 255)
    return BadInput(Error::kInvalidParameterValue, fmt::format("Value ({}) for parameter {} is invalid. Length exceeds maximum "
                                                         "of 255 characters.", value, parameter));
  if (!IsAscii(value))
    return BadInput(Error::kInvalidParameterValue, fmt::format("Value ({}) for parameter {} is invalid. Character sets beyond "
                                                         "ASCII are not supported.", value, parameter));
  if (!IsGroupText(value))
    return BadInput(Error::kInvalidParameterValue,
                    fmt::format("Value ({}) for parameter {} is invalid. Valid characters are a-z, A-Z, 0-9, spaces, "
                                "and ._-:/()#,@[]+=&;{{}}!$*", value, parameter));
  return OkStatus();
}

Status CheckTags(const std::vector<Tag>& tags) {
  if (tags.size() > 50) return BadInput(Error::kTagLimitExceeded, "The maximum number of tags for a resource is 50.");
  std::set<std::string> keys;
  for (const auto& t : tags) {
    if (t.key.empty() || t.key.size() > 128)
      return BadInput(Error::kInvalidParameterValue, fmt::format("Tag key '{}' is invalid: a key must be 1 to 128 "
                                                           "characters.", t.key));
    if (t.key.starts_with("aws:"))
      return BadInput(Error::kInvalidParameterValue, "Tag keys starting with 'aws:' are reserved for internal use");
    if (t.value.size() > 256)
      return BadInput(Error::kInvalidParameterValue, fmt::format("Tag value for key '{}' is invalid: a value must be at "
                                                           "most 256 characters.", t.key));
    if (!keys.insert(t.key).second)
      return BadInput(Error::kInvalidParameterValue, fmt::format("Duplicate tag key '{}' specified.", t.key));
  }
  return OkStatus();
}

// "a.b.c.d/n" with n in 0..32 and no host bits set.
bool IsIpv4Cidr(std::string_view cidr) {
  size_t slash = cidr.find('/');
  if (slash == std::string_view::npos) return false;
  uint32_t ip = 0;
  if (!ParseIpv4(cidr.substr(0, slash), &ip)) return false;
  std::string_view len = cidr.substr(slash + 1);
  int prefix = -1;
  auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), prefix);
  if (ec != std::errc() || end != len.data() + len.size() || len.empty() || prefix < 0 || prefix > 32) return false;
  if (len.size() > 1 && len[0] == '0') return false;
  const uint32_t host_mask = prefix == 32 ? 0 : (0xFFFFFFFFu >> prefix);
  return (ip & host_mask) == 0;
}

StatusOr<std::string> NormalizeProtocol(std::string_view given) {
  if (given.empty()) return BadInput(Error::kMissingParameter, "The request must contain the parameter ipProtocol");
  std::string p(given);
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (p == "-1" || p == "tcp" || p == "udp" || p == "icmp" || p == "icmpv6") return p;
  int number = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), number);
  if (ec == std::errc() && end == p.data() + p.size() && number >= 0 && number <= 255) {
    switch (number) {
      case 1: return std::string("icmp");
      case 6: return std::string("tcp");
      case 17: return std::string("udp");
      case 58: return std::string("icmpv6");
      default: return std::to_string(number);
    }
  }
  return BadInput(Error::kInvalidParameterValue, fmt::format("Invalid value '{}' for IP protocol. Unknown protocol.", given));
}

// The spec as a rule of `group`, without an id. `peers_must_exist` false (Revoke): a peer group
// that is not there makes the spec match nothing instead of failing (returns nullopt).
StatusOr<std::optional<Rule>> Normalize(store::ReadTxn& txn, const Scope& scope, const SecurityGroup& group,
                                        RuleDirection direction, const RuleSpec& spec, bool peers_must_exist) {
  Rule r;
  r.group_id = group.id;
  r.direction = direction;
  ASSIGN_OR_RETURN(r.protocol, NormalizeProtocol(spec.protocol));
  if (r.protocol == "icmpv6")
    return BadInput(Error::kInvalidParameterValue,
                    "Invalid value 'icmpv6' for IP protocol: ICMPv6 rules need IPv6 ranges, and Paddock's VPCs have no "
                    "IPv6 CIDR.");
  if (r.protocol == "tcp" || r.protocol == "udp") {
    if (!spec.from_port || !spec.to_port)
      return BadInput(Error::kInvalidParameterValue, "Invalid value 'Must specify both from and to ports with TCP/UDP.' for portRange");
    if (*spec.from_port < 0 || *spec.from_port > 65535)
      return BadInput(Error::kInvalidParameterValue, fmt::format("TCP/UDP (from) port ({}) out of range", *spec.from_port));
    if (*spec.to_port < 0 || *spec.to_port > 65535)
      return BadInput(Error::kInvalidParameterValue, fmt::format("TCP/UDP (to) port ({}) out of range", *spec.to_port));
    if (*spec.from_port > *spec.to_port)
      return BadInput(Error::kInvalidParameterValue,
                      fmt::format("Invalid value '{}-{}' for portRange. The from port must not be greater than the to "
                                  "port.", *spec.from_port, *spec.to_port));
    r.from_port = *spec.from_port;
    r.to_port = *spec.to_port;
  } else if (r.protocol == "icmp") {
    r.from_port = spec.from_port.value_or(-1);
    r.to_port = spec.to_port.value_or(-1);
    if (r.from_port < -1 || r.from_port > 255)
      return BadInput(Error::kInvalidParameterValue, fmt::format("ICMP type ({}) out of range", r.from_port));
    if (r.to_port < -1 || r.to_port > 255)
      return BadInput(Error::kInvalidParameterValue, fmt::format("ICMP code ({}) out of range", r.to_port));
    if (r.from_port == -1 && r.to_port != -1)
      return BadInput(Error::kInvalidParameterValue, fmt::format("ICMP code ({}) must be -1 when the ICMP type is -1", r.to_port));
  }
  // "-1" and protocols without ports: every port, whatever the request said (as EC2).

  const int peers = !spec.cidr.empty() + !(spec.group_id.empty() && spec.group_name.empty()) + !spec.cidr_ipv6.empty() +
                    !spec.prefix_list_id.empty();
  if (peers == 0)
    return BadInput(Error::kRuleMalformed,
                    "The specified security group rule is malformed: a rule needs a peer (IpRanges or "
                    "UserIdGroupPairs).");
  if (peers > 1) return BadInput(Error::kRuleMalformed, "The specified security group rule is malformed: a rule has one peer.");
  if (!spec.cidr_ipv6.empty())
    return BadInput(Error::kInvalidParameterValue,
                    fmt::format("IPv6 rules are not supported ({}): Paddock's VPCs have no IPv6 CIDR.", spec.cidr_ipv6));
  if (!spec.prefix_list_id.empty())
    return NotFound(fmt::format("The prefix list ID '{}' does not exist", spec.prefix_list_id),
                    Error::kPrefixListNotFound);
  if (!spec.cidr.empty()) {
    if (!IsIpv4Cidr(spec.cidr))
      return BadInput(Error::kInvalidParameterValue, fmt::format("CIDR block {} is malformed", spec.cidr));
    r.cidr = spec.cidr;
  } else {
    // Another account's group is never found: VPCs of different accounts share nothing.
    const bool other_owner = !spec.group_owner.empty() && spec.group_owner != scope.account.str();
    std::optional<std::string> id;
    if (!other_owner) {
      if (!spec.group_id.empty()) {
        ASSIGN_OR_RETURN(auto g, LoadGroup(txn, scope, spec.group_id));
        if (g) id = g->id;
      } else {
        ASSIGN_OR_RETURN(id, IdForName(txn, scope, spec.group_name));
      }
    }
    if (!id) {
      if (!peers_must_exist) return std::optional<Rule>();
      if (!spec.group_id.empty()) return GroupNotFound(spec.group_id);
      return GroupNameNotFound(spec.group_name, group.vpc_id);
    }
    r.peer_group = *id;
  }
  if (spec.description.size() >= 256 || !IsGroupText(spec.description))
    return BadInput(Error::kInvalidParameterValue,
                    "Invalid rule description. Valid descriptions are strings less than 256 characters from the "
                    "following set:  a-zA-Z0-9. _-:/()#,@[]+=&;{}!$*");
  r.description = spec.description;
  return std::optional<Rule>(std::move(r));
}

// Whether two rules allow the same thing (EC2's notion of "the same rule": the description does
// not count).
bool SameRule(const Rule& a, const Rule& b) {
  return a.direction == b.direction && a.protocol == b.protocol && a.from_port == b.from_port &&
         a.to_port == b.to_port && a.cidr == b.cidr && a.peer_group == b.peer_group;
}

// EC2's rendering of a rule in InvalidPermission.Duplicate.
std::string DuplicateText(const Rule& r) {
  const std::string peer = r.cidr.empty() ? r.peer_group : r.cidr;
  std::string what;
  if (r.protocol == "-1") {
    what = "ALL";
  } else if (r.protocol == "tcp" || r.protocol == "udp") {
    std::string p = r.protocol;
    std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    what = fmt::format("{}, from port: {}, to port: {}", p, r.from_port, r.to_port);
  } else if (r.protocol == "icmp") {
    what = fmt::format("ICMP, type: {}, code: {}", r.from_port, r.to_port);
  } else {
    what = r.protocol;
  }
  return fmt::format("the specified rule \"peer: {}, {}, ALLOW\" already exists", peer, what);
}

size_t CountRules(const SecurityGroup& g, RuleDirection d) {
  return static_cast<size_t>(std::count_if(g.rules.begin(), g.rules.end(), [&](const Rule& r) { return r.direction == d; }));
}

Status PutGroup(store::WriteTxn& txn, const Scope& scope, const SecurityGroup& g) {
  return txn.Put(kGroups, GroupKey(scope, g.id), EncodeGroup(g));
}

Status IndexRule(store::WriteTxn& txn, const Scope& scope, const Rule& r) {
  RETURN_IF_ERROR(txn.Put(kRuleIndex, RuleIndexKey(scope, r.id), r.group_id));
  if (!r.peer_group.empty()) RETURN_IF_ERROR(txn.Put(kGroupRefs, RefKey(scope, r.peer_group, r.group_id, r.id), ""));
  return OkStatus();
}

Status UnindexRule(store::WriteTxn& txn, const Scope& scope, const Rule& r) {
  RETURN_IF_ERROR(txn.Delete(kRuleIndex, RuleIndexKey(scope, r.id)));
  if (!r.peer_group.empty()) RETURN_IF_ERROR(txn.Delete(kGroupRefs, RefKey(scope, r.peer_group, r.group_id, r.id)));
  return OkStatus();
}

// The default group is computed until its first change; then it is stored, and its rules are
// indexed like any group's.
Status MaterializeDefault(store::WriteTxn& txn, const Scope& scope, const SecurityGroup& g) {
  if (g.id != DefaultVpcFor(scope).security_group_id) return OkStatus();
  ASSIGN_OR_RETURN(auto stored, txn.Get(kGroups, GroupKey(scope, g.id)));
  if (stored) return OkStatus();
  for (const auto& r : g.rules) RETURN_IF_ERROR(IndexRule(txn, scope, r));
  return OkStatus();
}

// Every group of the scope's VPC with id > `after`, in id order, the default group included
// whether it is stored or not; `visit` returns false to stop.
Status ForEachGroup(store::ReadTxn& txn, const Scope& scope, std::string_view after,
                    const std::function<StatusOr<bool>(SecurityGroup&)>& visit) {
  const std::string default_id = DefaultVpcFor(scope).security_group_id;
  bool default_pending = after < default_id;  // not yet visited, and not stored (found below)
  const store::Range range = store::PrefixRange(ScopeKey(scope).Done());
  std::string begin = after.empty() ? range.begin : store::KeySuccessor(GroupKey(scope, after));
  constexpr size_t kPage = 256;
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kGroups, {begin, range.end}, kPage));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(SecurityGroup g, DecodeGroup(scope, row.value));
      if (default_pending && g.id >= default_id) {
        default_pending = false;
        if (g.id != default_id) {
          SecurityGroup d = ComputedDefault(scope);
          ASSIGN_OR_RETURN(bool more, visit(d));
          if (!more) return OkStatus();
        }
      }
      ASSIGN_OR_RETURN(bool more, visit(g));
      if (!more) return OkStatus();
    }
    if (rows.size() < kPage) break;
    begin = store::KeySuccessor(rows.back().key);
  }
  if (default_pending) {
    SecurityGroup d = ComputedDefault(scope);
    RETURN_IF_ERROR(visit(d).status());
  }
  return OkStatus();
}

// Deletes every row of `table` whose key starts with the account.
Status DeleteAccountRows(store::Store& store, std::string_view table, const AccountId& account,
                         std::set<Scope>* scopes) {
  const store::Range range = store::PrefixRange(store::Key().Str(account.str()).Done());
  while (true) {
    size_t n = 0;
    RETURN_IF_ERROR(store.Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(table, range, 500));
      n = rows.size();
      for (const auto& row : rows) {
        if (scopes != nullptr) {
          store::KeyReader r(row.key);
          ASSIGN_OR_RETURN(std::string a, r.Str());
          ASSIGN_OR_RETURN(std::string region, r.Str());
          scopes->insert(Scope{AccountId(a), Region(region)});
        }
        if (table == internal::kAddresses) {  // the node-wide index row of the address goes too
          store::KeyReader r(row.key);
          ASSIGN_OR_RETURN(std::string a, r.Str());
          ASSIGN_OR_RETURN(std::string region, r.Str());
          RETURN_IF_ERROR(r.Str().status());
          ASSIGN_OR_RETURN(uint64_t ip, r.U64());
          RETURN_IF_ERROR(txn.Delete(internal::kNodeAddresses, store::Key().U64(ip).Str(a).Str(region).Done()));
        }
        RETURN_IF_ERROR(txn.Delete(table, row.key));
      }
      return OkStatus();
    }));
    if (n < 500) return OkStatus();
  }
}

// The canonical text the version digests: every field, in order, unambiguous.
void AppendCanonical(std::string& out, std::string_view s) { out += fmt::format("{}:{};", s.size(), s); }

}  // namespace

namespace internal {

StatusOr<bool> GroupExists(store::ReadTxn& txn, const Scope& scope, std::string_view group_id) {
  if (group_id == DefaultVpcFor(scope).security_group_id) return true;
  ASSIGN_OR_RETURN(auto v, txn.Get(kGroups, GroupKey(scope, group_id)));
  return v.has_value();
}

}  // namespace internal

StatusOr<std::vector<std::string>> MissingGroups(store::ReadTxn& txn, const Scope& scope,
                                                 const std::vector<std::string>& ids) {
  std::vector<std::string> missing;
  for (const auto& id : ids) {
    ASSIGN_OR_RETURN(bool exists, internal::GroupExists(txn, scope, id));
    if (!exists) missing.push_back(id);
  }
  return missing;
}

std::string PolicyVersion(const VpcPolicy& p) {
  std::string text;
  AppendCanonical(text, p.vpc_id);
  for (const auto& g : p.groups) {
    AppendCanonical(text, "group");
    AppendCanonical(text, g.group_id);
    for (const auto* rules : {&g.ingress, &g.egress}) {
      AppendCanonical(text, rules == &g.ingress ? "in" : "out");
      for (const auto& r : *rules) {
        AppendCanonical(text, r.protocol);
        AppendCanonical(text, std::to_string(r.from_port));
        AppendCanonical(text, std::to_string(r.to_port));
        for (const auto& c : r.cidrs) AppendCanonical(text, "c" + c);
        for (const auto& s : r.groups) AppendCanonical(text, "g" + s);
        AppendCanonical(text, "end");
      }
    }
  }
  for (const auto& m : p.members) {
    AppendCanonical(text, "member");
    AppendCanonical(text, m.ip);
    for (const auto& g : m.groups) AppendCanonical(text, g);
    AppendCanonical(text, "host" + m.host);
  }
  AppendCanonical(text, "vni" + std::to_string(p.vni));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), 16));
}

StatusOr<SecurityGroup> SecurityGroups::Create(const Scope& scope, const CreateRequest& req) {
  const DefaultVpc vpc = DefaultVpcFor(scope);
  if (req.name.empty()) return BadInput(Error::kMissingParameter, "The request must contain the parameter GroupName");
  if (req.description.empty()) return BadInput(Error::kMissingParameter, "The request must contain the parameter GroupDescription");
  RETURN_IF_ERROR(CheckGroupText("GroupName", req.name));
  RETURN_IF_ERROR(CheckGroupText("GroupDescription", req.description));
  if (req.name.starts_with("sg-"))
    return BadInput(Error::kInvalidParameterValue,
                    fmt::format("Value ({}) for parameter GroupName is invalid. Group names may not be in the format sg-*.",
                                req.name));
  if (req.name == "default")
    return BadInput(Error::kGroupNameReserved, "The name 'default' is reserved, and cannot be used to create a new security group.");
  if (req.vpc_id && *req.vpc_id != vpc.vpc_id)
    return NotFound(fmt::format("The vpc ID '{}' does not exist", *req.vpc_id), Error::kVpcNotFound);
  RETURN_IF_ERROR(CheckTags(req.tags));

  SecurityGroup g;
  g.id = NewId("sg");
  g.name = req.name;
  g.description = req.description;
  g.tags = req.tags;
  Rule out;
  out.id = NewId("sgr");
  out.direction = RuleDirection::kEgress;
  out.protocol = "-1";
  out.cidr = std::string(kAllTraffic);
  g.rules.push_back(out);
  Complete(scope, g);
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    const std::string name_key = NameKey(scope, vpc.vpc_id, g.name);
    ASSIGN_OR_RETURN(auto existing, txn.Get(kGroupNames, name_key));
    if (existing)
      return AlreadyExists(fmt::format("The security group '{}' already exists for VPC '{}'", g.name, vpc.vpc_id),
                           Error::kGroupDuplicate);
    // The default group counts toward the VPC's groups.
    const store::Range names = store::PrefixRange(ScopeKey(scope).Str(vpc.vpc_id).Done());
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kGroupNames, names, kMaxGroupsPerVpc));
    if (rows.size() + 1 >= kMaxGroupsPerVpc)
      return ResourceExhausted(
          fmt::format("The maximum number of security groups for VPC '{}' has been reached.", vpc.vpc_id),
          Error::kGroupLimitExceeded);
    RETURN_IF_ERROR(txn.Put(kGroupNames, name_key, g.id));
    RETURN_IF_ERROR(PutGroup(txn, scope, g));
    return IndexRule(txn, scope, g.rules.front());
  }));
  NotifyPolicyChanged(scope);
  return g;
}

StatusOr<std::string> SecurityGroups::Delete(const Scope& scope, const GroupRef& ref) {
  std::string id;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(SecurityGroup g, Resolve(txn, scope, ref));
    id = g.id;
    if (g.id == DefaultVpcFor(scope).security_group_id)
      return FailedPrecondition(
          fmt::format("the specified group: \"{}\" name: \"default\" cannot be deleted by a user", g.id), Error::kCannotDelete);
    const Status in_use = FailedPrecondition(fmt::format("resource {} has a dependent object", g.id), Error::kDependencyViolation);
    // An interface (a task's address) in the group.
    ASSIGN_OR_RETURN(auto members, txn.Scan(kMembers, store::PrefixRange(ScopeKey(scope).Str(g.id).Done()), 1));
    if (!members.empty()) return in_use;
    // Another group's rule that names it (its own rules may).
    ASSIGN_OR_RETURN(auto refs, txn.Scan(kGroupRefs, store::PrefixRange(ScopeKey(scope).Str(g.id).Done()), kAll));
    for (const auto& row : refs) {
      store::KeyReader r(row.key);
      for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(r.Str().status());
      ASSIGN_OR_RETURN(std::string referencing, r.Str());
      if (referencing != g.id) return in_use;
    }
    for (const auto& rule : g.rules) RETURN_IF_ERROR(UnindexRule(txn, scope, rule));
    RETURN_IF_ERROR(txn.Delete(kGroupNames, NameKey(scope, g.vpc_id, g.name)));
    return txn.Delete(kGroups, GroupKey(scope, g.id));
  }));
  NotifyPolicyChanged(scope);
  return id;
}

StatusOr<std::vector<Rule>> SecurityGroups::Authorize(const Scope& scope, const GroupRef& ref, RuleDirection direction,
                                                      const std::vector<RuleSpec>& specs,
                                                      const std::vector<Tag>& rule_tags) {
  if (specs.empty())
    return BadInput(Error::kMissingParameter, "The request must contain the parameter ipPermissions");
  RETURN_IF_ERROR(CheckTags(rule_tags));
  std::vector<Rule> added;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    added.clear();
    ASSIGN_OR_RETURN(SecurityGroup g, Resolve(txn, scope, ref));
    RETURN_IF_ERROR(MaterializeDefault(txn, scope, g));
    for (const auto& spec : specs) {
      ASSIGN_OR_RETURN(std::optional<Rule> r, Normalize(txn, scope, g, direction, spec, true));
      for (const auto& a : added)
        if (SameRule(a, *r)) return BadInput(Error::kInvalidParameterValue, "The same permission must not appear multiple times");
      for (const auto& existing : g.rules)
        if (SameRule(existing, *r)) return AlreadyExists(DuplicateText(*r), Error::kRuleDuplicate);
      r->id = NewId("sgr");
      r->tags = rule_tags;
      added.push_back(std::move(*r));
    }
    if (CountRules(g, direction) + added.size() > kMaxRulesPerDirection)
      return ResourceExhausted("The maximum number of rules per security group has been reached.",
                               Error::kRuleLimitExceeded);
    for (const auto& r : added) {
      g.rules.push_back(r);
      RETURN_IF_ERROR(IndexRule(txn, scope, r));
    }
    return PutGroup(txn, scope, g);
  }));
  NotifyPolicyChanged(scope);
  return added;
}

StatusOr<RevokeResult> SecurityGroups::Revoke(const Scope& scope, const GroupRef& ref, RuleDirection direction,
                                              const std::vector<RuleSpec>& specs,
                                              const std::vector<std::string>& rule_ids) {
  if (specs.empty() && rule_ids.empty())
    return BadInput(Error::kMissingParameter, "The request must contain the parameter ipPermissions or securityGroupRuleIds");
  RevokeResult result;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    result = RevokeResult{};
    ASSIGN_OR_RETURN(SecurityGroup g, Resolve(txn, scope, ref));
    RETURN_IF_ERROR(MaterializeDefault(txn, scope, g));
    std::set<std::string> doomed;
    for (const auto& id : rule_ids) {
      if (!IsEc2Id(id, "sgr-"))
        return BadInput(Error::kRuleIdMalformed, fmt::format("Invalid id: \"{}\" (expecting \"sgr-...\")", id));
      auto it = std::find_if(g.rules.begin(), g.rules.end(),
                             [&](const Rule& r) { return r.id == id && r.direction == direction; });
      if (it == g.rules.end()) return RuleNotFound(id);
      doomed.insert(id);
    }
    for (const auto& spec : specs) {
      ASSIGN_OR_RETURN(std::optional<Rule> wanted, Normalize(txn, scope, g, direction, spec, false));
      auto it = wanted ? std::find_if(g.rules.begin(), g.rules.end(), [&](const Rule& r) { return SameRule(r, *wanted); })
                       : g.rules.end();
      if (it == g.rules.end()) {
        result.unknown.push_back(spec);
      } else {
        doomed.insert(it->id);
      }
    }
    std::vector<Rule> kept;
    for (auto& r : g.rules) {
      if (doomed.count(r.id)) {
        RETURN_IF_ERROR(UnindexRule(txn, scope, r));
        result.revoked.push_back(r);
      } else {
        kept.push_back(r);
      }
    }
    if (result.revoked.empty()) return OkStatus();
    g.rules = std::move(kept);
    return PutGroup(txn, scope, g);
  }));
  if (!result.revoked.empty()) NotifyPolicyChanged(scope);
  return result;
}

StatusOr<GroupPage> SecurityGroups::Describe(const Scope& scope, const GroupQuery& q) {
  GroupPage page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    page = GroupPage{};
    auto keep = [&](const SecurityGroup& g) { return !q.keep || q.keep(g); };
    if (!q.ids.empty() || !q.names.empty()) {
      std::map<std::string, SecurityGroup> found;  // by id: ordered, each once
      for (const auto& id : q.ids) {
        ASSIGN_OR_RETURN(SecurityGroup g, Resolve(txn, scope, GroupRef{id, ""}));
        found.emplace(g.id, std::move(g));
      }
      for (const auto& name : q.names) {
        ASSIGN_OR_RETURN(SecurityGroup g, Resolve(txn, scope, GroupRef{"", name}));
        found.emplace(g.id, std::move(g));
      }
      for (auto& [id, g] : found) {
        if (id <= q.after || !keep(g)) continue;
        if (q.limit != 0 && page.groups.size() == q.limit) {
          page.next = page.groups.back().id;
          break;
        }
        page.groups.push_back(std::move(g));
      }
      return OkStatus();
    }
    return ForEachGroup(txn, scope, q.after, [&](SecurityGroup& g) -> StatusOr<bool> {
      if (!keep(g)) return true;
      if (q.limit != 0 && page.groups.size() == q.limit) {
        page.next = page.groups.back().id;
        return false;
      }
      page.groups.push_back(std::move(g));
      return true;
    });
  }));
  return page;
}

StatusOr<RulePage> SecurityGroups::DescribeRules(const Scope& scope, const RuleQuery& q) {
  // A position is "<group id> <rule id>": the last rule of the previous page and its group, so a
  // page resumes even when that rule was revoked meanwhile (then at the group's next one).
  std::string after_group, after_rule;
  if (!q.after.empty()) {
    size_t space = q.after.find(' ');
    if (space == std::string::npos) return BadInput(Error::kInvalidNextToken, "The token is invalid");
    after_group = q.after.substr(0, space);
    after_rule = q.after.substr(space + 1);
  }
  RulePage page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    page = RulePage{};
    for (const auto& id : q.rule_ids) {
      if (!IsEc2Id(id, "sgr-"))
        return BadInput(Error::kRuleIdMalformed, fmt::format("Invalid id: \"{}\" (expecting \"sgr-...\")", id));
      ASSIGN_OR_RETURN(auto indexed, txn.Get(kRuleIndex, RuleIndexKey(scope, id)));
      // The default group's rules are not indexed until it is first changed.
      const std::string group = indexed.value_or(DefaultVpcFor(scope).security_group_id);
      ASSIGN_OR_RETURN(auto g, LoadGroup(txn, scope, group));
      if (!g || std::none_of(g->rules.begin(), g->rules.end(), [&](const Rule& r) { return r.id == id; }))
        return RuleNotFound(id);
    }
    const std::set<std::string> wanted_rules(q.rule_ids.begin(), q.rule_ids.end());
    const std::set<std::string> groups(q.group_ids.begin(), q.group_ids.end());
    auto visit = [&](SecurityGroup& g, bool resuming) -> StatusOr<bool> {
      if (!groups.empty() && !groups.count(g.id)) return true;
      if (resuming && std::none_of(g.rules.begin(), g.rules.end(), [&](const Rule& r) { return r.id == after_rule; }))
        resuming = false;  // the rule was revoked since: repeat the group rather than miss some of it
      for (auto& r : g.rules) {
        if (resuming) {
          if (r.id == after_rule) resuming = false;
          continue;
        }
        if (!wanted_rules.empty() && !wanted_rules.count(r.id)) continue;
        if (q.keep && !q.keep(r)) continue;
        if (q.limit != 0 && page.rules.size() == q.limit) {
          page.next = fmt::format("{} {}", page.rules.back().group_id, page.rules.back().id);
          return false;
        }
        page.rules.push_back(r);
      }
      return true;
    };
    if (!after_group.empty()) {  // the rest of the previous page's last group first
      ASSIGN_OR_RETURN(auto g, LoadGroup(txn, scope, after_group));
      if (g) {
        ASSIGN_OR_RETURN(bool more, visit(*g, true));
        if (!more) return OkStatus();
      }
    }
    return ForEachGroup(txn, scope, after_group, [&](SecurityGroup& g) { return visit(g, false); });
  }));
  return page;
}

StatusOr<VpcPolicy> SecurityGroups::PolicyFor(const Scope& scope) {
  VpcPolicy p;
  p.vpc_id = DefaultVpcFor(scope).vpc_id;
  std::vector<HeldAddress> held;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    p.groups.clear();
    RETURN_IF_ERROR(ForEachGroup(txn, scope, "", [&](SecurityGroup& g) -> StatusOr<bool> {
      PolicyGroup pg;
      pg.group_id = g.id;
      for (const auto& r : g.rules) {
        std::vector<PolicyRule>& list = r.direction == RuleDirection::kIngress ? pg.ingress : pg.egress;
        // One PolicyRule per (protocol, ports), with every peer of the group's rules that share them.
        auto it = std::find_if(list.begin(), list.end(), [&](const PolicyRule& pr) {
          return pr.protocol == r.protocol && pr.from_port == r.from_port && pr.to_port == r.to_port;
        });
        if (it == list.end()) {
          list.push_back(PolicyRule{r.protocol, r.from_port, r.to_port, {}, {}});
          it = list.end() - 1;
        }
        std::vector<std::string>& peers = r.cidr.empty() ? it->groups : it->cidrs;
        const std::string& peer = r.cidr.empty() ? r.peer_group : r.cidr;
        if (std::find(peers.begin(), peers.end(), peer) == peers.end()) peers.push_back(peer);
      }
      p.groups.push_back(std::move(pg));
      return true;
    }));
    ASSIGN_OR_RETURN(held, HeldAddresses(txn, scope));
    ASSIGN_OR_RETURN(p.vni, VniOf(txn, scope));
    return OkStatus();
  }));
  std::sort(held.begin(), held.end(), [](const HeldAddress& a, const HeldAddress& b) { return a.ip < b.ip; });
  for (auto& h : held) p.members.push_back(PolicyMember{Ipv4ToString(h.ip), std::move(h.groups), std::move(h.host)});
  p.version = PolicyVersion(p);
  return p;
}

Status SecurityGroups::ReapAccount(const AccountId& account) {
  std::set<Scope> scopes;
  for (std::string_view table : {internal::kAddresses, internal::kPools, kMembers, kGroups, kGroupNames, kRuleIndex, kGroupRefs,
                                 internal::kVnis})
    RETURN_IF_ERROR(DeleteAccountRows(store_, table, account, &scopes));
  for (const auto& s : scopes) NotifyPolicyChanged(s);
  return OkStatus();
}

void SecurityGroups::SetChangeListener(std::function<void(const Scope&)> listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void SecurityGroups::NotifyPolicyChanged(const Scope& scope) {
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_(scope);
}

}  // namespace paddock::vpc
