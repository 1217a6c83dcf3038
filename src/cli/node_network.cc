#include "cli/node_network.h"

#include <fmt/format.h>

#include "common/encoding.h"
#include "store/key.h"
#include "vpc/default_vpc.h"

namespace paddock::cli {

StatusOr<std::string> NetworkIdentity(store::Store& store) {
  const std::string key = store::Key().Str("network-identity").Done();
  std::string out;
  RETURN_IF_ERROR(store.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto existing, txn.Get("meta", key));
    if (existing) {
      out = *existing;
      return OkStatus();
    }
    out = RandomString(16, "0123456789abcdef");
    return txn.Put("meta", key, out);
  }));
  return out;
}

StatusOr<vpc::VpcPolicy> DefaultGroupPolicy(store::Store& store, const Scope& scope) {
  const vpc::DefaultVpc vpc = vpc::DefaultVpcFor(scope);
  vpc::VpcPolicy p;
  p.vpc_id = vpc.vpc_id;
  const std::string owner = fmt::format("{} {} ", scope.account.str(), scope.region.str());
  RETURN_IF_ERROR(store.Read([&](store::ReadTxn& txn) -> Status {
    for (const vpc::Subnet& subnet : vpc.subnets) {
      // vpc/ipam's records: (pool CIDR, ip) -> "<account> <region> <owner>".
      const std::string prefix = store::Key().Str(subnet.Cidr()).Done();
      ASSIGN_OR_RETURN(auto rows, txn.Scan("ipam", {prefix + store::Key().U64(subnet.network).Done(),
                                                    prefix + store::Key().U64(uint64_t{subnet.network} + (1u << (32 - subnet.prefix_length))).Done()},
                                           subnet.UsableCount() + 8));
      for (const auto& row : rows) {
        if (!row.value.starts_with(owner)) continue;
        store::KeyReader r(std::string_view(row.key).substr(prefix.size()));
        ASSIGN_OR_RETURN(uint64_t ip, r.U64());
        p.members.push_back(vpc::PolicyMember{vpc::Ipv4ToString(static_cast<uint32_t>(ip)), {vpc.security_group_id}});
      }
    }
    return OkStatus();
  }));
  vpc::PolicyRule in_from_group{.protocol = "-1", .from_port = -1, .to_port = -1, .cidrs = {},
                                .groups = {vpc.security_group_id}};
  vpc::PolicyRule out_anywhere{.protocol = "-1", .from_port = -1, .to_port = -1, .cidrs = {"0.0.0.0/0"}, .groups = {}};
  p.groups.push_back(vpc::PolicyGroup{vpc.security_group_id, {in_from_group}, {out_anywhere}});
  std::sort(p.members.begin(), p.members.end(),
            [](const vpc::PolicyMember& a, const vpc::PolicyMember& b) { return a.ip < b.ip; });
  // The content's digest: equal policies, equal versions.
  std::string text = p.vpc_id;
  for (const vpc::PolicyMember& m : p.members) text += " " + m.ip;
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  p.version = fmt::format("standin-{:016x}", h);
  return p;
}

}  // namespace paddock::cli
