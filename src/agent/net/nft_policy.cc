// CompileVpcPolicy: a VPC's security groups (vpc::VpcPolicy) as the nftables table of its router
// namespace; CompileVpcFlowLimits: the FlowLimits of its tasks as a second table there. Pure: text
// in, text out; agent/net applies the results (vpc_network.cc).
#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "agent/net/net.h"
#include "agent/net/internal/util.h"

namespace paddock::agent::net {
namespace {

using internal::Ipv4;

bool IsGroupIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// Group ids end up in comments of the script: nothing that could end a comment or a line.
Status ValidateGroupId(std::string_view id) {
  if (id.empty() || id.size() > 64 || !std::all_of(id.begin(), id.end(), IsGroupIdChar))
    return InvalidArgument(fmt::format("security group id '{}' is not 1-64 of [A-Za-z0-9_-]", id));
  return OkStatus();
}

StatusOr<uint32_t> ParseAddress(std::string_view text) {
  in_addr a{};
  std::string s(text);
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return InvalidArgument(fmt::format("'{}' is not an IPv4 address", text));
  return ntohl(a.s_addr);
}

// "a.b.c.d/n" (n 0-32) with the host bits cleared, as nftables wants a prefix; "a.b.c.d" for /32.
StatusOr<std::string> NormalizeCidr(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return InvalidArgument(fmt::format("'{}' is not an IPv4 CIDR", text));
  ASSIGN_OR_RETURN(uint32_t ip, ParseAddress(text.substr(0, slash)));
  std::string_view len_text = text.substr(slash + 1);
  int len = -1;
  auto [end, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
  if (ec != std::errc() || end != len_text.data() + len_text.size() || len < 0 || len > 32)
    return InvalidArgument(fmt::format("'{}' is not an IPv4 CIDR", text));
  uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
  if (len == 32) return Ipv4(ip);
  return fmt::format("{}/{}", Ipv4(ip & mask), len);
}

// The protocol-and-port part of a rule ("tcp dport 80-90 "), empty for all traffic; nullopt for a
// rule that can never match an IPv4 packet (icmpv6).
StatusOr<std::optional<std::string>> MatchOf(const vpc::PolicyRule& rule) {
  std::string p = rule.protocol;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (p == "6") p = "tcp";
  if (p == "17") p = "udp";
  if (p == "1") p = "icmp";
  const int32_t from = rule.from_port, to = rule.to_port;
  if (p == "-1" || p == "all") return std::optional<std::string>("");
  if (p == "tcp" || p == "udp") {
    if ((from == -1 && to == -1) || (from == 0 && to == 65535))
      return std::optional<std::string>(fmt::format("meta l4proto {} ", p));
    if (from < 0 || to > 65535 || from > to)
      return InvalidArgument(fmt::format("{} port range {}-{} is not within 0-65535", p, from, to));
    if (from == to) return std::optional<std::string>(fmt::format("{} dport {} ", p, from));
    return std::optional<std::string>(fmt::format("{} dport {}-{} ", p, from, to));
  }
  if (p == "icmp") {
    // EC2: fromPort is the ICMP type and toPort the code, -1 for any.
    if (from == -1) return std::optional<std::string>("meta l4proto icmp ");
    if (from < 0 || from > 255 || to < -1 || to > 255)
      return InvalidArgument(fmt::format("icmp type {} code {} is not within 0-255", from, to));
    if (to == -1) return std::optional<std::string>(fmt::format("icmp type {} ", from));
    return std::optional<std::string>(fmt::format("icmp type {} icmp code {} ", from, to));
  }
  if (p == "icmpv6" || p == "58") return std::optional<std::string>();
  int number = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), number);
  if (ec != std::errc() || end != p.data() + p.size() || number < 0 || number > 255)
    return InvalidArgument(fmt::format("protocol '{}' is not -1, tcp, udp, icmp or a number 0-255", rule.protocol));
  return std::optional<std::string>(fmt::format("meta l4proto {} ", number));
}

}  // namespace

namespace internal {

std::string FlowLimitRules(const FlowLimits& limits, std::string_view match, std::string_view set_prefix) {
  std::string out;
  // The rate first: a connection it drops is never counted.
  if (limits.new_per_second > 0)
    out += fmt::format("{}ct state new update @{}flow_rate {{ ip saddr limit rate over {}/second burst {} packets }} drop\n",
                       match, set_prefix, limits.new_per_second, limits.new_per_second);
  if (limits.tracked_per_task > 0)
    out += fmt::format("{}ct state new add @{}flows {{ ip saddr ct count over {} }} drop\n", match, set_prefix,
                       limits.tracked_per_task);
  return out;
}

}  // namespace internal

StatusOr<std::string> CompileVpcPolicy(const vpc::VpcPolicy& policy) {
  // Members: address -> its groups (sorted, without repeats; one address listed twice gets both
  // lists' groups).
  std::map<uint32_t, std::set<std::string>> members;
  for (const vpc::PolicyMember& m : policy.members) {
    ASSIGN_OR_RETURN(uint32_t ip, ParseAddress(m.ip));
    std::set<std::string>& groups = members[ip];
    for (const std::string& g : m.groups) {
      RETURN_IF_ERROR(ValidateGroupId(g));
      groups.insert(g);
    }
  }
  std::map<std::string, const vpc::PolicyGroup*> groups;
  for (const vpc::PolicyGroup& g : policy.groups) {
    RETURN_IF_ERROR(ValidateGroupId(g.group_id));
    groups[g.group_id] = &g;
  }

  // A task's verdicts depend only on its set of groups (a "profile"): one pair of chains per
  // distinct set, shared by every member that has it.
  std::map<std::set<std::string>, size_t> profiles;
  for (const auto& [ip, gs] : members) profiles.emplace(gs, 0);
  size_t next = 0;
  for (auto& [gs, index] : profiles) index = next++;

  // Groups named as a rule's peer become sets of their members' addresses: g0, g1, ... by id.
  std::map<std::string, size_t> peer_sets;
  for (const vpc::PolicyGroup& g : policy.groups) {
    for (const auto* rules : {&g.ingress, &g.egress})
      for (const vpc::PolicyRule& r : *rules)
        for (const std::string& peer : r.groups) {
          RETURN_IF_ERROR(ValidateGroupId(peer));
          peer_sets.emplace(peer, 0);
        }
  }
  next = 0;
  for (auto& [id, index] : peer_sets) index = next++;

  // The chain of one profile and direction: each allowing rule of each of its groups, then drop.
  // Egress rules `return` to the forward chain (which then asks the receiver's ingress), ingress
  // rules accept.
  auto chain_body = [&](const std::set<std::string>& profile, bool egress) -> StatusOr<std::string> {
    std::string body;
    const char* peer_field = egress ? "daddr" : "saddr";
    const char* verdict = egress ? "return" : "accept";
    for (const std::string& id : profile) {
      auto it = groups.find(id);
      if (it == groups.end()) continue;  // a group the policy has no rules for allows nothing
      for (const vpc::PolicyRule& rule : egress ? it->second->egress : it->second->ingress) {
        ASSIGN_OR_RETURN(std::optional<std::string> match, MatchOf(rule));
        if (!match) continue;
        for (const std::string& cidr : rule.cidrs) {
          ASSIGN_OR_RETURN(std::string c, NormalizeCidr(cidr));
          body += fmt::format("\t\tip {} {} {}{} comment \"{}\"\n", peer_field, c, *match, verdict, id);
        }
        for (const std::string& peer : rule.groups)
          body += fmt::format("\t\tip {} @g{} {}{} comment \"{}\"\n", peer_field, peer_sets.at(peer), *match, verdict,
                              id);
      }
    }
    body += "\t\tdrop\n";
    return body;
  };

  auto elements = [](const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out;
  };
  auto set_block = [&](const std::string& name, const std::vector<std::string>& items, const std::string& comment) {
    std::string out = comment.empty() ? "" : fmt::format("\t# {}\n", comment);
    out += fmt::format("\tset {} {{\n\t\ttype ipv4_addr\n", name);
    if (!items.empty()) out += fmt::format("\t\telements = {{ {} }}\n", elements(items));
    return out + "\t}\n";
  };

  std::string out = fmt::format(
      "# The security groups of {} (policy {}) in its VPC router namespace (agent/net CompileVpcPolicy).\n"
      "# Replaces the table in one transaction: the first two lines make sure there is one to delete.\n"
      "table inet {t}\n"
      "delete table inet {t}\n"
      "table inet {t} {{\n",
      policy.vpc_id.empty() ? "a VPC" : policy.vpc_id, policy.version.empty() ? "-" : policy.version,
      fmt::arg("t", kVpcTable));

  std::vector<std::string> all;
  for (const auto& [ip, gs] : members) all.push_back(Ipv4(ip));
  out += set_block("members", all, "every task address of the VPC on any host");
  for (const auto& [id, index] : peer_sets) {
    std::vector<std::string> in_group;
    for (const auto& [ip, gs] : members)
      if (gs.count(id)) in_group.push_back(Ipv4(ip));
    out += set_block(fmt::format("g{}", index), in_group, "members of " + id);
  }

  for (const auto& [profile, index] : profiles) {
    std::vector<std::string> names(profile.begin(), profile.end());
    std::string label = names.empty() ? "no group" : elements(names);
    ASSIGN_OR_RETURN(std::string eg, chain_body(profile, true));
    ASSIGN_OR_RETURN(std::string in, chain_body(profile, false));
    out += fmt::format("\t# {}: what may leave\n\tchain eg{} {{\n{}\t}}\n", label, index, eg);
    out += fmt::format("\t# {}: what may arrive\n\tchain in{} {{\n{}\t}}\n", label, index, in);
  }

  std::vector<std::string> egress, ingress;
  for (const auto& [ip, gs] : members) {
    size_t index = profiles.at(gs);
    egress.push_back(fmt::format("{} : jump eg{}", Ipv4(ip), index));
    ingress.push_back(fmt::format("{} : jump in{}", Ipv4(ip), index));
  }
  auto map_block = [&](const char* name, const std::vector<std::string>& items) {
    std::string m = fmt::format("\tmap {} {{\n\t\ttype ipv4_addr : verdict\n", name);
    if (!items.empty()) m += fmt::format("\t\telements = {{ {} }}\n", elements(items));
    return m + "\t}\n";
  };
  out += map_block("egress", egress);
  out += map_block("ingress", ingress);

  out += fmt::format(
      "\t# Between tasks: the sender's groups must let it out and the receiver's let it in. From\n"
      "\t# the node (the transit) everything passes; to it, what the sender's egress allows. (The\n"
      "\t# flow limits are in table inet {lt}, whose chains run first.) A task of another host\n"
      "\t# (through the overlay, {ov}) is a task as any: both its host's router and this one ask.\n"
      "\tchain forward {{\n"
      "\t\ttype filter hook forward priority filter; policy drop;\n"
      "\t\tmeta nfproto ipv6 drop\n"
      "\t\tct state established,related accept\n"
      "\t\tct state invalid drop\n"
      "\t\tiifname \"{tr}\" accept\n"
      "\t\tip saddr != @members drop\n"
      "\t\tip saddr vmap @egress\n"
      "\t\toifname \"{tr}\" accept\n"
      "\t\tip daddr vmap @ingress\n"
      "\t}}\n"
      "\t# The router itself: only the task metadata endpoint, the DNS server (53 only), and replies,\n"
      "\t# to this host's tasks (another host's reach their own router; nothing comes from the overlay).\n"
      "\tchain input {{\n"
      "\t\ttype filter hook input priority filter; policy drop;\n"
      "\t\tmeta nfproto ipv6 drop\n"
      "\t\tct state established,related accept\n"
      "\t\tct state invalid drop\n"
      "\t\tiifname \"lo\" accept\n"
      "\t\tiifname \"{ov}\" drop\n"
      "\t\tip daddr {md} meta l4proto tcp accept\n"
      "\t\tip daddr {{ {dns}, {vdns} }} udp dport 53 accept\n"
      "\t\tip daddr {{ {dns}, {vdns} }} tcp dport 53 accept\n"
      "\t}}\n"
      "}}\n",
      fmt::arg("tr", kTransitInside), fmt::arg("md", kMetadataAddress), fmt::arg("dns", kDnsAddress),
      fmt::arg("vdns", kVpcDnsAddress), fmt::arg("lt", kVpcLimitsTable), fmt::arg("ov", kOverlayDevice));
  return out;
}

std::string CompileVpcFlowLimits(const FlowLimits& limits) {
  std::string out = fmt::format(
      "# The flow limits of every task address in a VPC router namespace (agent/net CompileVpcFlowLimits).\n"
      "# A table of their own, which no policy apply touches: the per-address counts outlive every\n"
      "# change of the security groups (inet {p}). Replaced in one transaction only when the\n"
      "# limits change; the first two lines make sure there is one to delete.\n"
      "table inet {t}\n"
      "delete table inet {t}\n"
      "table inet {t} {{\n",
      fmt::arg("t", kVpcLimitsTable), fmt::arg("p", kVpcTable));
  if (limits.tracked_per_task > 0)
    out += "\t# tracked connections per task address\n\tset flows {\n\t\ttype ipv4_addr\n\t\tsize 65535\n"
           "\t\tflags dynamic\n\t}\n";
  if (limits.new_per_second > 0)
    out += "\t# new connections per second per task address\n\tset flow_rate {\n\t\ttype ipv4_addr\n"
           "\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout 1m\n\t}\n";
  if (limits.tracked_per_task > 0 || limits.new_per_second > 0) {
    // Priority filter - 1: these chains see a packet before the security groups' chains of the
    // same hook. A drop here is final; an accept (the policy) only hands the packet on to the
    // groups' chains, which must accept it too. A connection the groups then drop was counted
    // for an instant: its conntrack entry is never confirmed, and `ct count` forgets it.
    out += fmt::format(
        "\t# New connections of tasks, before the security groups decide (inet {p}): none over its\n"
        "\t# task's limits passes. From the node (the transit), nothing is counted.\n"
        "\tchain forward {{\n"
        "\t\ttype filter hook forward priority filter - 1; policy accept;\n"
        "\t\tiifname \"{tr}\" accept\n"
        "{limits}"
        "\t}}\n"
        "\t# A task's connections to the router itself (the task metadata endpoint, DNS) count too.\n"
        "\tchain input {{\n"
        "\t\ttype filter hook input priority filter - 1; policy accept;\n"
        "\t\tiifname \"lo\" accept\n"
        "{limits}"
        "\t}}\n",
        fmt::arg("p", kVpcTable), fmt::arg("tr", kTransitInside),
        fmt::arg("limits", internal::FlowLimitRules(limits, "\t\t", "")));
  }
  return out + "}\n";
}

}  // namespace paddock::agent::net
