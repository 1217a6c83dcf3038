#include "cli/node_network.h"

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

}  // namespace paddock::cli
