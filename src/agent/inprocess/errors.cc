#include "agent/inprocess/errors.h"

#include <string_view>

namespace paddock::agent {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"agent", [](int code) -> std::string_view {
                                         switch (static_cast<Error>(code)) {
                                           case Error::kTaskNotAssigned: return "TaskNotAssigned";
                                           case Error::kNoTaskRole: return "NoTaskRole";
                                         }
                                         return "?";
                                       }};
  return kDomain;
}

}  // namespace paddock::agent
