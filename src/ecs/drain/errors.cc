#include "ecs/drain/errors.h"

#include <string_view>

namespace paddock::ecs::drain {
namespace {

std::string_view ErrorName(int code) {
  switch (static_cast<Error>(code)) {
    case Error::kTooManyEdges: return "TooManyEdges";
  }
  return "Unknown";
}

}  // namespace

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"ecs.drain", &ErrorName};
  return kDomain;
}

}  // namespace paddock::ecs::drain
