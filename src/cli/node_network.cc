#include "cli/node_network.h"

#include "common/encoding.h"
#include "store/key.h"

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

}  // namespace paddock::cli
