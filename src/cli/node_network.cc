#include "cli/node_network.h"

#include <fmt/format.h>

#include "common/encoding.h"
#include "store/key.h"

namespace paddock::cli {

StatusOr<std::string> KeptMetaValue(store::Store& store, std::string_view name,
                                    const std::function<std::string()>& make) {
  const std::string key = store::Key().Str(name).Done();
  std::string out;
  RETURN_IF_ERROR(store.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto existing, txn.Get("meta", key));
    if (existing) {
      out = *existing;
      return OkStatus();
    }
    out = make();
    return txn.Put("meta", key, out);
  }));
  return out;
}

StatusOr<std::string> NetworkIdentity(store::Store& store) {
  return KeptMetaValue(store, "network-identity", [] { return RandomString(16, "0123456789abcdef"); });
}

namespace {

// What the check's MAC is of: no tenant's binding (kms derives per account and region).
const kms::Binding kKeyCheck{"paddock", "node", "node-key-check"};
constexpr std::string_view kKeyCheckData = "one node key for every server of this store";

}  // namespace

Status CheckNodeKeyOfStore(store::Store& store, const kms::KeyRing& keys) {
  ASSIGN_OR_RETURN(std::string mine, keys.Mac(kKeyCheck, kKeyCheckData));
  ASSIGN_OR_RETURN(std::string kept, KeptMetaValue(store, "node-key-check", [&] { return mine; }));
  if (kept == mine || keys.MacMatches(kKeyCheck, kKeyCheckData, kept)) return OkStatus();
  return FailedPrecondition(fmt::format(
      "the node key {} is not the one the other servers of this store seal with: copy their "
      "keys/master.key here before starting this server (docs/scaling.md, \"Several servers\")",
      keys.path().empty() ? std::string("(in memory)") : keys.path()));
}

}  // namespace paddock::cli
