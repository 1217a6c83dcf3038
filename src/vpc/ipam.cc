#include "vpc/ipam.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "store/key.h"

namespace paddock::vpc {
namespace {

constexpr std::string_view kIpam = "ipam";
constexpr std::string_view kSubnets = "ipam_subnets";

// The pool is the CIDR, not the (account, subnet id): see ipam.h.
std::string SubnetKey(const Scope&, const Subnet& subnet) { return store::Key().Str(subnet.Cidr()).Done(); }

struct SubnetState {
  uint32_t cursor = 0;  // the last address handed out (0: none yet)
  uint32_t in_use = 0;
};

StatusOr<SubnetState> ReadState(store::ReadTxn& txn, const Scope& scope, const Subnet& subnet) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kSubnets, SubnetKey(scope, subnet)));
  SubnetState st;
  if (!v) return st;
  const char* p = v->data();
  const char* end = v->data() + v->size();
  auto [mid, ec1] = std::from_chars(p, end, st.cursor);
  if (ec1 != std::errc() || mid == end) return DataLoss("corrupt IPAM subnet record");
  auto [last, ec2] = std::from_chars(mid + 1, end, st.in_use);
  if (ec2 != std::errc() || last != end) return DataLoss("corrupt IPAM subnet record");
  return st;
}

Status WriteState(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, const SubnetState& st) {
  return txn.Put(kSubnets, SubnetKey(scope, subnet), fmt::format("{} {}", st.cursor, st.in_use));
}

}  // namespace

StatusOr<uint32_t> AllocateIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, std::string_view owner) {
  ASSIGN_OR_RETURN(SubnetState st, ReadState(txn, scope, subnet));
  if (st.in_use >= subnet.UsableCount())
    return ResourceExhausted(fmt::format("There are not enough free addresses in subnet '{}' to satisfy the request.",
                                         subnet.id));
  const std::string prefix = SubnetKey(scope, subnet);
  const uint32_t first = subnet.FirstUsable(), last = subnet.LastUsable();
  uint32_t candidate = (st.cursor >= first && st.cursor < last) ? st.cursor + 1 : first;
  // Held addresses are index keys in address order: step over runs of them with range scans
  // instead of one Get per address.
  constexpr size_t kChunk = 64;
  for (uint32_t examined = 0; examined <= subnet.UsableCount();) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kIpam, {prefix + store::Key().U64(candidate).Done(),
                                                 prefix + store::Key().U64(uint64_t{last} + 1).Done()},
                                         kChunk));
    uint32_t expect = candidate;
    bool found = false;
    for (const auto& row : rows) {
      store::KeyReader r(std::string_view(row.key).substr(prefix.size()));
      ASSIGN_OR_RETURN(uint64_t held, r.U64());
      if (held != expect) {
        found = true;  // `expect` lies in a gap before `held`
        break;
      }
      ++expect;
    }
    if (!found && rows.size() < kChunk && expect <= last) found = true;  // free after the run
    if (found) {
      RETURN_IF_ERROR(txn.Put(kIpam, prefix + store::Key().U64(expect).Done(),
                              fmt::format("{} {} {}", scope.account.str(), scope.region.str(), owner)));
      st.cursor = expect;
      st.in_use += 1;
      RETURN_IF_ERROR(WriteState(txn, scope, subnet, st));
      return expect;
    }
    examined += expect - candidate;
    candidate = expect > last ? first : expect;  // past the end: wrap around
  }
  return ResourceExhausted(fmt::format("There are not enough free addresses in subnet '{}' to satisfy the request.",
                                       subnet.id));
}

Status ReleaseIp(store::WriteTxn& txn, const Scope& scope, const Subnet& subnet, uint32_t ip) {
  const std::string key = SubnetKey(scope, subnet) + store::Key().U64(ip).Done();
  ASSIGN_OR_RETURN(auto held, txn.Get(kIpam, key));
  if (!held) return OkStatus();
  RETURN_IF_ERROR(txn.Delete(kIpam, key));
  ASSIGN_OR_RETURN(SubnetState st, ReadState(txn, scope, subnet));
  if (st.in_use > 0) st.in_use -= 1;
  return WriteState(txn, scope, subnet, st);
}

StatusOr<uint32_t> AvailableIps(store::ReadTxn& txn, const Scope& scope, const Subnet& subnet) {
  ASSIGN_OR_RETURN(SubnetState st, ReadState(txn, scope, subnet));
  return subnet.UsableCount() - std::min(st.in_use, subnet.UsableCount());
}

}  // namespace paddock::vpc
