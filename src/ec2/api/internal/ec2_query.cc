#include "ec2/api/internal/ec2_query.h"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace paddock::ec2::api::internal {
namespace json = boost::json;

std::optional<std::string> Input::Str(std::string_view member) const {
  const json::value* v = fields_->if_contains(member);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

std::optional<int32_t> Input::Int(std::string_view member) const {
  const json::value* v = fields_->if_contains(member);
  // The model checked that an "integer" fits 32 bits.
  if (v == nullptr || !v->is_int64()) return std::nullopt;
  return static_cast<int32_t>(v->get_int64());
}

bool Input::Bool(std::string_view member) const {
  const json::value* v = fields_->if_contains(member);
  return v != nullptr && v->is_bool() && v->get_bool();
}

std::vector<std::string> Input::Strings(std::string_view member) const {
  std::vector<std::string> out;
  const json::value* v = fields_->if_contains(member);
  if (v == nullptr || !v->is_array()) return out;
  for (const json::value& e : v->get_array())
    if (e.is_string()) out.emplace_back(e.get_string());
  return out;
}

std::vector<Input> Input::Structs(std::string_view member) const {
  std::vector<Input> out;
  const json::value* v = fields_->if_contains(member);
  if (v == nullptr || !v->is_array()) return out;
  for (const json::value& e : v->get_array())
    if (e.is_object()) out.emplace_back(e.get_object());
  return out;
}

Filters ParseFilters(const Input& in) {
  Filters out;
  for (const Input& filter : in.Structs("Filters")) {
    std::optional<std::string> name = filter.Str("Name");
    if (!name) continue;
    auto& values = out[*name];
    for (auto& v : filter.Strings("Values")) values.insert(std::move(v));
  }
  return out;
}

Status CheckFilterNames(const Filters& filters, const std::set<std::string>& known,
                        const std::vector<std::string>& known_prefixes) {
  for (const auto& [name, values] : filters) {
    if (known.count(name)) continue;
    bool prefixed = false;
    for (const auto& p : known_prefixes) prefixed = prefixed || (name.starts_with(p) && name.size() > p.size());
    if (!prefixed) return Ec2Error(Error::kInvalidParameterValue, fmt::format("The filter '{}' is invalid", name));
  }
  return OkStatus();
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative matching with one backtrack point for the last '*'.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool Matches(const Filters& filters, const Attributes& attributes) {
  for (const auto& [name, accepted] : filters) {
    auto [begin, end] = attributes.equal_range(name);
    bool any = false;
    for (auto it = begin; it != end && !any; ++it)
      for (const auto& pattern : accepted)
        if (GlobMatch(pattern, it->second)) {
          any = true;
          break;
        }
    if (!any) return false;
  }
  return true;
}

StatusOr<size_t> MaxResults(const Input& in) {
  const std::optional<int32_t> n = in.Int("MaxResults");
  if (!n) return size_t{0};
  if (*n < 5 || *n > 1000)
    return Ec2Error(Error::kInvalidParameterValue,
                    fmt::format("Value ( {} ) for parameter maxResults is invalid. Parameter must be between 5 and 1000.", *n));
  return static_cast<size_t>(*n);
}

std::string Response(std::string_view action, std::string_view request_id, std::string_view body) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{0}Response xmlns=\"{1}\"><requestId>{2}</requestId>{3}</{0}Response>",
      action, kEc2Xmlns, aws::XmlEscape(request_id), body);
}

std::string XmlText(std::string_view name, std::string_view text) {
  return fmt::format("<{0}>{1}</{0}>", name, aws::XmlEscape(text));
}

StatusOr<std::string> NextTokenPosition(const Input& in, const aws::TokenCodec& tokens, std::string_view context) {
  std::optional<std::string> token = in.Str("NextToken");
  if (!token || token->empty()) return std::string();
  StatusOr<std::string> after = tokens.Decode(context, *token);
  if (!after.ok()) return Ec2Error(Error::kInvalidNextToken, "The provided NextToken is not valid.");
  return after;
}

}  // namespace paddock::ec2::api::internal
