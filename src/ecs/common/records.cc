#include "ecs/common/records.h"

#include <fmt/format.h>

#include <boost/json/parse.hpp>

namespace paddock::ecs {

StatusOr<boost::json::object> ParseRecordObject(std::string_view text, std::string_view what) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss(fmt::format("corrupt {} record", what));
  return std::move(v.as_object());
}

}  // namespace paddock::ecs
