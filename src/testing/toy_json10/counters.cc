#include "testing/toy_json10/counters.h"

#include <fmt/format.h>

namespace paddock::toyjson10 {

int64_t Counters::Add(const Scope& scope, const std::string& name, int64_t amount) {
  std::lock_guard lock(mu_);
  return counters_[{scope.account.str(), scope.region.str(), name}] += amount;
}

StatusOr<int64_t> Counters::Get(const Scope& scope, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = counters_.find({scope.account.str(), scope.region.str(), name});
  if (it == counters_.end()) return NotFound(fmt::format("No counter named '{}' exists.", name));
  return it->second;
}

}  // namespace paddock::toyjson10
