#include "common/arn.h"

#include <fmt/format.h>

namespace paddock {

std::string Arn::ToString() const {
  return fmt::format("arn:{}:{}:{}:{}:{}", partition, service, region, account, resource);
}

StatusOr<Arn> ParseArn(std::string_view s) {
  Arn arn;
  std::string* parts[] = {nullptr, &arn.partition, &arn.service, &arn.region, &arn.account};
  size_t pos = 0;
  for (int i = 0; i < 5; ++i) {
    size_t colon = s.find(':', pos);
    if (colon == std::string_view::npos) return InvalidArgument(fmt::format("Invalid ARN: {}", s));
    std::string_view part = s.substr(pos, colon - pos);
    if (i == 0 && part != "arn") return InvalidArgument(fmt::format("Invalid ARN: {}", s));
    if (parts[i] != nullptr) *parts[i] = std::string(part);
    pos = colon + 1;
  }
  arn.resource = std::string(s.substr(pos));
  if (arn.partition.empty() || arn.service.empty() || arn.resource.empty())
    return InvalidArgument(fmt::format("Invalid ARN: {}", s));
  return arn;
}

std::string MakeArn(std::string_view service, const Scope& scope, std::string_view resource) {
  return fmt::format("arn:aws:{}:{}:{}:{}", service, scope.region.str(), scope.account.str(), resource);
}

}  // namespace paddock
