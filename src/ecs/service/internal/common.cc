#include "ecs/service/internal/common.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "common/json_fields.h"

namespace paddock::ecs::service::internal {
namespace json = boost::json;

bool IsServiceName(std::string_view s) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

json::value Canonical(const json::value& v) {
  if (v.is_object()) {
    std::vector<std::pair<std::string, json::value>> members;
    for (const auto& [k, val] : v.get_object()) members.emplace_back(std::string(k), Canonical(val));
    std::sort(members.begin(), members.end(), [](auto& a, auto& b) { return a.first < b.first; });
    json::object out;
    for (auto& [k, val] : members) out[k] = std::move(val);
    return out;
  }
  if (v.is_array()) {
    json::array out;
    for (const auto& e : v.get_array()) out.push_back(Canonical(e));
    return out;
  }
  return v;
}

}  // namespace paddock::ecs::service::internal
