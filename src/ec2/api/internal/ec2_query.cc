#include "ec2/api/internal/ec2_query.h"

#include <fmt/format.h>

#include <charconv>

namespace paddock::ec2::api::internal {
namespace {

// The positive index at the start of `rest` ("12.Foo" -> 12, rest "Foo"); 0 when there is none.
int TakeIndex(std::string_view& rest) {
  int index = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
  if (ec != std::errc() || index <= 0) return 0;
  rest.remove_prefix(static_cast<size_t>(end - rest.data()));
  return index;
}

}  // namespace

std::vector<std::string> ListParam(const Params& params, std::string_view name) {
  std::map<int, std::string> by_index;
  const std::string prefix = std::string(name) + ".";
  for (const auto& [k, v] : params) {
    if (!k.starts_with(prefix)) continue;
    std::string_view rest = std::string_view(k).substr(prefix.size());
    int index = TakeIndex(rest);
    if (index > 0 && rest.empty()) by_index[index] = v;
  }
  std::vector<std::string> out;
  for (auto& [i, v] : by_index) out.push_back(std::move(v));
  return out;
}

std::map<int, Params> StructList(const Params& params, std::string_view name) {
  std::map<int, Params> out;
  const std::string prefix = std::string(name) + ".";
  for (const auto& [k, v] : params) {
    if (!k.starts_with(prefix)) continue;
    std::string_view rest = std::string_view(k).substr(prefix.size());
    int index = TakeIndex(rest);
    if (index <= 0 || !rest.starts_with('.')) continue;
    out[index].emplace_back(std::string(rest.substr(1)), v);
  }
  return out;
}

std::optional<std::string> Param(const Params& params, std::string_view name) {
  for (const auto& [k, v] : params)
    if (k == name) return v;
  return std::nullopt;
}

StatusOr<std::optional<int32_t>> IntParam(const Params& params, std::string_view name) {
  std::optional<std::string> text = Param(params, name);
  if (!text) return std::optional<int32_t>();
  int32_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || text->empty())
    return Ec2Error(Error::kInvalidParameterValue, fmt::format("Invalid value '{}' for {}", *text, name));
  return std::optional<int32_t>(value);
}

bool BoolParam(const Params& params, std::string_view name) { return Param(params, name) == "true"; }

Filters ParseFilters(const Params& params) {
  Filters out;
  for (auto& [i, members] : StructList(params, "Filter")) {
    std::optional<std::string> name = Param(members, "Name");
    if (!name) continue;
    auto& values = out[*name];
    for (auto& v : ListParam(members, "Value")) values.insert(std::move(v));
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

StatusOr<size_t> MaxResults(const Params& params) {
  ASSIGN_OR_RETURN(std::optional<int32_t> n, IntParam(params, "MaxResults"));
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

StatusOr<std::string> NextTokenPosition(const Params& params, const aws::TokenCodec& tokens, std::string_view context) {
  std::optional<std::string> token = Param(params, "NextToken");
  if (!token || token->empty()) return std::string();
  StatusOr<std::string> after = tokens.Decode(context, *token);
  if (!after.ok()) return Ec2Error(Error::kInvalidNextToken, "The provided NextToken is not valid.");
  return after;
}

}  // namespace paddock::ec2::api::internal
