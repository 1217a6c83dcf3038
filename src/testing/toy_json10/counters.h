// The JSON 1.0 toy's owner: named counters per account and region, in memory (the toy proves
// the protocol; src/testing/toy_service/ proves the store).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::toyjson10 {

// The toy's failures, named on the wire by its adapter's table (api/toy_counters_service.cc).
enum class Error {
  kCounterNotFound = 1,  // NotFound
};
const ErrorDomain& ErrorDomainOf(Error);

class Counters {
 public:
  // Adds `amount` to the counter `name` (created at 0); returns its new value.
  int64_t Add(const Scope& scope, const std::string& name, int64_t amount);
  // NotFound (Error::kCounterNotFound) when no counter `name` exists.
  StatusOr<int64_t> Get(const Scope& scope, const std::string& name) const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // account, region, name
  mutable std::mutex mu_;
  std::map<Key, int64_t> counters_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::toyjson10
