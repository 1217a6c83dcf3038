#include "vpc/ipam.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>

#include "store/key.h"
#include "vpc/errors.h"
#include "vpc/internal/tables.h"

namespace paddock::vpc {
namespace {

using internal::kAddresses;
using internal::kLegacyAddresses;
using internal::kLegacyPools;
using internal::kMembers;
using internal::kNodeAddresses;
using internal::kPools;
using internal::ScopeKey;

std::string PoolKey(const Scope& scope, const Subnet& subnet) { return ScopeKey(scope).Str(subnet.id).Done(); }
std::string NodeKey(uint32_t ip, const Scope& scope) {
  return store::Key().U64(ip).Str(scope.account.str()).Str(scope.region.str()).Done();
}

struct PoolState {
  uint32_t cursor = 0;  // the last address handed out (below the first usable: none yet)
  uint32_t in_use = 0;
};

// Where a VPC's next-fit starts in a subnet before it has handed anything out: a hash of the VPC
// and the subnet, so that two VPCs do not walk the same addresses in step.
uint32_t FirstCursor(const Scope& scope, const Subnet& subnet) {
  const std::string input = fmt::format("{}|{}|{}", scope.account.str(), scope.region.str(), subnet.id);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  const uint32_t h = (uint32_t{digest[0]} << 24) | (uint32_t{digest[1]} << 16) | (uint32_t{digest[2]} << 8) | digest[3];
  return subnet.FirstUsable() + h % subnet.UsableCount() - 1;
}

StatusOr<PoolState> ParsePool(std::string_view v) {
  PoolState st;
  const char* end = v.data() + v.size();
  auto [mid, ec1] = std::from_chars(v.data(), end, st.cursor);
  if (ec1 != std::errc() || mid == end) return DataLoss("corrupt IPAM pool record");
  auto [last, ec2] = std::from_chars(mid + 1, end, st.in_use);
  if (ec2 != std::errc() || last != end) return DataLoss("corrupt IPAM pool record");
  return st;
}

StatusOr<PoolState> ReadPool(store::ReadTxn& txn, const Scope& scope, const Subnet& subnet) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kPools, PoolKey(scope, subnet)));
  if (!v) return PoolState{FirstCursor(scope, subnet), 0};
  return ParsePool(*v);
}

Status WritePool(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, const PoolState& st) {
  return txn.Put(kPools, PoolKey(scope, subnet), fmt::format("{} {}", st.cursor, st.in_use));
}

// "<owner> <group>,<group>…[ <host>]"
std::string EncodeHeld(std::string_view owner, const std::vector<std::string>& groups, std::string_view host) {
  if (host.empty()) return fmt::format("{} {}", owner, fmt::join(groups, ","));
  return fmt::format("{} {} {}", owner, fmt::join(groups, ","), host);
}

StatusOr<HeldAddress> DecodeHeld(uint32_t ip, std::string_view v) {
  HeldAddress h;
  h.ip = ip;
  size_t space = v.find(' ');
  if (space == std::string_view::npos) return DataLoss("corrupt IPAM address record");
  h.owner = std::string(v.substr(0, space));
  std::string_view rest = v.substr(space + 1);
  if (size_t host = rest.find(' '); host != std::string_view::npos) {
    h.host = std::string(rest.substr(host + 1));
    rest = rest.substr(0, host);
  }
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    h.groups.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return h;
}

// The first address in [from, to] with no row under `prefix` in `table`, whose keys continue
// with the address (U64) — possibly several rows per address (node_addresses). Held addresses
// are index keys in address order: runs of them are stepped over with range scans instead of
// one Get per address.
StatusOr<std::optional<uint32_t>> FirstFree(store::ReadTxn& txn, std::string_view table, const std::string& prefix,
                                            uint32_t from, uint32_t to) {
  constexpr size_t kChunk = 64;
  uint64_t expect = from;
  while (expect <= to) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, {prefix + store::Key().U64(expect).Done(),
                                                 prefix + store::Key().U64(uint64_t{to} + 1).Done()},
                                         kChunk));
    for (const auto& row : rows) {
      store::KeyReader r(std::string_view(row.key).substr(prefix.size()));
      ASSIGN_OR_RETURN(uint64_t held, r.U64());
      if (held + 1 == expect) continue;  // another holder of the address just passed
      if (held != expect) return std::optional<uint32_t>(static_cast<uint32_t>(expect));
      ++expect;
    }
    if (rows.size() < kChunk) break;
  }
  if (expect <= to) return std::optional<uint32_t>(static_cast<uint32_t>(expect));
  return std::optional<uint32_t>();
}

// Next-fit: the first address free in `table` from `start` to the subnet's end, then from its
// beginning.
StatusOr<std::optional<uint32_t>> NextFit(store::ReadTxn& txn, std::string_view table, const std::string& prefix,
                                          const Subnet& subnet, uint32_t start) {
  ASSIGN_OR_RETURN(auto found, FirstFree(txn, table, prefix, start, subnet.LastUsable()));
  if (found || start == subnet.FirstUsable()) return found;
  return FirstFree(txn, table, prefix, subnet.FirstUsable(), start - 1);
}

Status Exhausted(const Subnet& subnet) {
  return ResourceExhausted(
      fmt::format("There are not enough free addresses in subnet '{}' to satisfy the request.", subnet.id));
}

// The scope's VPC's vni, given now (the store-wide counter's next) when it has none.
StatusOr<uint32_t> EnsureVni(store::WriteTxn& txn, const Scope& scope) {
  ASSIGN_OR_RETURN(uint32_t vni, VniOf(txn, scope));
  if (vni != 0) return vni;
  ASSIGN_OR_RETURN(auto next, txn.Get(internal::kVniNext, ""));
  vni = 1;
  if (next && (std::from_chars(next->data(), next->data() + next->size(), vni).ec != std::errc() || vni == 0))
    return DataLoss("corrupt vni counter record");
  if (vni >= (1u << 24)) return ResourceExhausted("every VXLAN network identifier of this store is taken");
  RETURN_IF_ERROR(txn.Put(internal::kVniNext, "", std::to_string(vni + 1)));
  RETURN_IF_ERROR(txn.Put(internal::kVnis, ScopeKey(scope).Done(), std::to_string(vni)));
  return vni;
}

}  // namespace

StatusOr<uint32_t> VniOf(store::ReadTxn& txn, const Scope& scope) {
  ASSIGN_OR_RETURN(auto v, txn.Get(internal::kVnis, ScopeKey(scope).Done()));
  if (!v) return uint32_t{0};
  uint32_t vni = 0;
  if (std::from_chars(v->data(), v->data() + v->size(), vni).ec != std::errc() || vni == 0 || vni >= (1u << 24))
    return DataLoss("corrupt vni record");
  return vni;
}

StatusOr<uint32_t> AllocateIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, std::string_view owner,
                              const std::vector<std::string>& requested_groups, std::string_view host) {
  std::vector<std::string> groups;
  for (const auto& g : requested_groups)
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  if (groups.empty()) groups.push_back(DefaultVpcFor(scope).security_group_id);
  for (const auto& g : groups) {
    ASSIGN_OR_RETURN(bool exists, internal::GroupExists(txn, scope, g));
    if (!exists) return NotFound(fmt::format("The security group '{}' does not exist", g), Error::kGroupNotFound);
  }

  ASSIGN_OR_RETURN(PoolState st, ReadPool(txn, scope, subnet));
  if (st.in_use >= subnet.UsableCount()) return Exhausted(subnet);
  const uint32_t first = subnet.FirstUsable(), last = subnet.LastUsable();
  const uint32_t start = (st.cursor >= first && st.cursor < last) ? st.cursor + 1 : first;
  const std::string pool = PoolKey(scope, subnet);
  // Preferred: an address no VPC of this store holds (node_addresses covers this VPC too).
  ASSIGN_OR_RETURN(std::optional<uint32_t> ip, NextFit(txn, kNodeAddresses, std::string(), subnet, start));
  if (!ip) {
    ASSIGN_OR_RETURN(ip, NextFit(txn, kAddresses, pool, subnet, start));
  }
  if (!ip) return Exhausted(subnet);
  RETURN_IF_ERROR(EnsureVni(txn, scope).status());

  RETURN_IF_ERROR(txn.Put(kAddresses, pool + store::Key().U64(*ip).Done(), EncodeHeld(owner, groups, host)));
  RETURN_IF_ERROR(txn.Put(kNodeAddresses, NodeKey(*ip, scope), ""));
  for (const auto& g : groups) RETURN_IF_ERROR(txn.Put(kMembers, internal::MemberKey(scope, g, *ip), owner));
  st.cursor = *ip;
  st.in_use += 1;
  RETURN_IF_ERROR(WritePool(txn, scope, subnet, st));
  return *ip;
}

Status ReleaseIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, uint32_t ip) {
  const std::string key = PoolKey(scope, subnet) + store::Key().U64(ip).Done();
  ASSIGN_OR_RETURN(auto held, txn.Get(kAddresses, key));
  if (!held) return OkStatus();
  ASSIGN_OR_RETURN(HeldAddress h, DecodeHeld(ip, *held));
  for (const auto& g : h.groups) RETURN_IF_ERROR(txn.Delete(kMembers, internal::MemberKey(scope, g, ip)));
  RETURN_IF_ERROR(txn.Delete(kNodeAddresses, NodeKey(ip, scope)));
  RETURN_IF_ERROR(txn.Delete(kAddresses, key));
  ASSIGN_OR_RETURN(PoolState st, ReadPool(txn, scope, subnet));
  if (st.in_use > 0) st.in_use -= 1;
  return WritePool(txn, scope, subnet, st);
}

StatusOr<uint32_t> AvailableIps(store::ReadTxn& txn, const Scope& scope, const Subnet& subnet) {
  ASSIGN_OR_RETURN(PoolState st, ReadPool(txn, scope, subnet));
  return subnet.UsableCount() - std::min(st.in_use, subnet.UsableCount());
}

StatusOr<std::vector<HeldAddress>> HeldAddresses(store::ReadTxn& txn, const Scope& scope) {
  const store::Range range = store::PrefixRange(ScopeKey(scope).Done());
  std::vector<HeldAddress> out;
  std::string begin = range.begin;
  constexpr size_t kPage = 1024;
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kAddresses, {begin, range.end}, kPage));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(r.Str().status());  // account, region, subnet
      ASSIGN_OR_RETURN(uint64_t ip, r.U64());
      ASSIGN_OR_RETURN(HeldAddress h, DecodeHeld(static_cast<uint32_t>(ip), row.value));
      out.push_back(std::move(h));
    }
    if (rows.size() < kPage) break;
    begin = store::KeySuccessor(rows.back().key);
  }
  return out;
}

Status UpgradeLegacyIpam(store::Store& store) {
  constexpr size_t kAll = std::numeric_limits<size_t>::max();
  bool any = false;
  RETURN_IF_ERROR(store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto a, txn.Scan(kLegacyAddresses, {"", ""}, 1));
    ASSIGN_OR_RETURN(auto p, txn.Scan(kLegacyPools, {"", ""}, 1));
    any = !a.empty() || !p.empty();
    return OkStatus();
  }));
  if (!any) return OkStatus();
  return store.Write([&](store::WriteTxn& txn) -> Status {
    // The node-wide cursors, by pool CIDR: each VPC continues from there, so an address released
    // just before the upgrade is not handed out again at once.
    std::map<std::string, uint32_t> cursors;
    ASSIGN_OR_RETURN(auto pools, txn.Scan(kLegacyPools, {"", ""}, kAll));
    for (const auto& row : pools) {
      store::KeyReader r(row.key);
      ASSIGN_OR_RETURN(std::string cidr, r.Str());
      ASSIGN_OR_RETURN(PoolState st, ParsePool(row.value));
      cursors[cidr] = st.cursor;
      RETURN_IF_ERROR(txn.Delete(kLegacyPools, row.key));
    }
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kLegacyAddresses, {"", ""}, kAll));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      ASSIGN_OR_RETURN(std::string cidr, r.Str());
      ASSIGN_OR_RETURN(uint64_t ip64, r.U64());
      const uint32_t ip = static_cast<uint32_t>(ip64);
      // "<account> <region> <owner>"
      std::string_view v = row.value;
      size_t a = v.find(' ');
      size_t b = a == std::string_view::npos ? a : v.find(' ', a + 1);
      if (b == std::string_view::npos) return DataLoss("corrupt legacy IPAM record");
      const Scope scope{AccountId(std::string(v.substr(0, a))), Region(std::string(v.substr(a + 1, b - a - 1)))};
      const std::string owner(v.substr(b + 1));
      const DefaultVpc vpc = DefaultVpcFor(scope);
      const Subnet* subnet = nullptr;
      for (const auto& s : vpc.subnets)
        if (s.Cidr() == cidr) subnet = &s;
      RETURN_IF_ERROR(txn.Delete(kLegacyAddresses, row.key));
      if (subnet == nullptr || !subnet->Contains(ip)) continue;  // not a default-VPC address: nothing holds it
      const std::string key = PoolKey(scope, *subnet) + store::Key().U64(ip).Done();
      ASSIGN_OR_RETURN(auto existing, txn.Get(kAddresses, key));
      if (existing) continue;
      const std::vector<std::string> groups{vpc.security_group_id};
      RETURN_IF_ERROR(txn.Put(kAddresses, key, EncodeHeld(owner, groups, {})));
      RETURN_IF_ERROR(txn.Put(kNodeAddresses, NodeKey(ip, scope), ""));
      RETURN_IF_ERROR(txn.Put(kMembers, internal::MemberKey(scope, groups[0], ip), owner));
      ASSIGN_OR_RETURN(PoolState st, ReadPool(txn, scope, *subnet));
      if (auto c = cursors.find(cidr); c != cursors.end()) st.cursor = c->second;
      st.in_use += 1;
      RETURN_IF_ERROR(WritePool(txn, scope, *subnet, st));
    }
    return OkStatus();
  });
}

}  // namespace paddock::vpc
