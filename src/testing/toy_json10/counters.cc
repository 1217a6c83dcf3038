#include "testing/toy_json10/counters.h"

#include <fmt/format.h>

namespace paddock::toyjson10 {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"toyjson10", [](int code) -> std::string_view {
                                         return static_cast<Error>(code) == Error::kCounterNotFound ? "CounterNotFound"
                                                                                                    : "?";
                                       }};
  return kDomain;
}

int64_t Counters::Add(const Scope& scope, const std::string& name, int64_t amount) {
  std::lock_guard lock(mu_);
  return counters_[{scope.account.str(), scope.region.str(), name}] += amount;
}

StatusOr<int64_t> Counters::Get(const Scope& scope, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = counters_.find({scope.account.str(), scope.region.str(), name});
  if (it == counters_.end())
    return NotFound(fmt::format("No counter named '{}' exists.", name), Error::kCounterNotFound);
  return it->second;
}

}  // namespace paddock::toyjson10
