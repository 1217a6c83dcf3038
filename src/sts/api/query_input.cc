#include "sts/api/query_input.h"
#include "sts/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <regex>
#include <unordered_map>

#include <boost/json.hpp>

namespace paddock::sts {
namespace json = boost::json;

namespace {

std::string LowerFirst(std::string_view s) {
  std::string out(s);
  if (!out.empty() && out[0] >= 'A' && out[0] <= 'Z') out[0] = static_cast<char>(out[0] - 'A' + 'a');
  return out;
}

// Characters, as AWS counts a string's length (UTF-8 input: count the non-continuation bytes).
size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::optional<double> Number(const json::object& shape, std::string_view name) {
  const json::value* v = shape.if_contains(name);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

std::string_view Str(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

bool HasPrefixedParam(const aws::QueryParams& params, const std::string& prefix) {
  for (const auto& [k, v] : params)
    if (k.size() > prefix.size() && k.starts_with(prefix) && k[prefix.size()] == '.') return true;
  return false;
}

}  // namespace

class QueryModel::Impl {
 public:
  json::object root;
  const json::object* shapes = nullptr;
  const json::object* operations = nullptr;
  // Compiled patterns, by shape name. Patterns that use Java's \p{…} or \u escapes, which
  // std::regex does not know, are not checked here.
  std::unordered_map<std::string, std::regex> patterns;

  const json::object* Shape(std::string_view name) const {
    const json::value* v = shapes->if_contains(name);
    return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
  }

  const json::object* MemberShape(const json::value& ref) const {
    return ref.is_object() ? Shape(Str(ref.get_object(), "shape")) : nullptr;
  }

  // Decodes the value of shape `shape_name` found at Query name `q` ("Tags.member.1"), whose
  // position in messages is `path` ("tags.1.member"); nullopt when absent.
  std::optional<json::value> DecodeShape(std::string_view shape_name, const std::string& q, const std::string& path,
                                         const aws::QueryParams& params, std::vector<std::string>& errors,
                                         int depth) const {
    const json::object* shape = Shape(shape_name);
    if (shape == nullptr || depth > 16) return std::nullopt;
    std::string_view type = Str(*shape, "type");
    if (type == "structure") {
      if (!q.empty() && !HasPrefixedParam(params, q)) return std::nullopt;
      json::object out;
      std::vector<std::string_view> required;
      if (const json::value* r = shape->if_contains("required"); r != nullptr && r->is_array())
        for (const json::value& name : r->get_array())
          if (name.is_string()) required.push_back(name.get_string());
      if (const json::value* members = shape->if_contains("members"); members != nullptr && members->is_object()) {
        for (const auto& m : members->get_object()) {
          std::string member_q = q.empty() ? std::string(m.key()) : fmt::format("{}.{}", q, std::string_view(m.key()));
          std::string member_path = path.empty() ? LowerFirst(m.key()) : fmt::format("{}.{}", path, LowerFirst(m.key()));
          if (!m.value().is_object()) continue;
          std::optional<json::value> v =
              DecodeShape(Str(m.value().get_object(), "shape"), member_q, member_path, params, errors, depth + 1);
          if (v) {
            out[m.key()] = std::move(*v);
          } else if (std::find(required.begin(), required.end(), std::string_view(m.key())) != required.end()) {
            errors.push_back(fmt::format("Value null at '{}' failed to satisfy constraint: Member must not be null",
                                         member_path));
          }
        }
      }
      return json::value(std::move(out));
    }
    if (type == "list") {
      const json::value* member = shape->if_contains("member");
      if (member == nullptr || !member->is_object()) return std::nullopt;
      std::string_view element_shape = Str(member->get_object(), "shape");
      json::array out;
      bool present = aws::FindParam(params, q).has_value();  // "Tags=" is an empty list
      for (size_t i = 1;; ++i) {
        std::string element_q = fmt::format("{}.member.{}", q, i);
        std::optional<json::value> v = DecodeShape(element_shape, element_q, fmt::format("{}.{}.member", path, i),
                                                   params, errors, depth + 1);
        if (!v) break;
        out.push_back(std::move(*v));
        present = true;
      }
      if (!present) return std::nullopt;
      if (auto max = Number(*shape, "max"); max && static_cast<double>(out.size()) > *max)
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have length less "
                                     "than or equal to {}",
                                     json::serialize(out).substr(0, 128), path, static_cast<int64_t>(*max)));
      if (auto min = Number(*shape, "min"); min && static_cast<double>(out.size()) < *min)
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have length "
                                     "greater than or equal to {}",
                                     json::serialize(out).substr(0, 128), path, static_cast<int64_t>(*min)));
      return json::value(std::move(out));
    }
    std::optional<std::string_view> raw = aws::FindParam(params, q);
    if (!raw) return std::nullopt;
    if (type == "integer" || type == "long") {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), n);
      if (ec != std::errc() || end != raw->data() + raw->size() || raw->empty()) {
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must be a number",
                                     raw->substr(0, 64), path));
        return json::value(nullptr);
      }
      if (auto min = Number(*shape, "min"); min && static_cast<double>(n) < *min)
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have value "
                                     "greater than or equal to {}",
                                     n, path, static_cast<int64_t>(*min)));
      if (auto max = Number(*shape, "max"); max && static_cast<double>(n) > *max)
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have value less "
                                     "than or equal to {}",
                                     n, path, static_cast<int64_t>(*max)));
      return json::value(n);
    }
    if (type == "boolean") {
      if (*raw == "true") return json::value(true);
      if (*raw == "false") return json::value(false);
      errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must be a boolean",
                                   raw->substr(0, 64), path));
      return json::value(nullptr);
    }
    // Strings (and timestamps, kept as text).
    size_t length = CodePoints(*raw);
    if (auto min = Number(*shape, "min"); min && static_cast<double>(length) < *min)
      errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have length "
                                   "greater than or equal to {}",
                                   *raw, path, static_cast<int64_t>(*min)));
    if (auto max = Number(*shape, "max"); max && static_cast<double>(length) > *max)
      errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have length less "
                                   "than or equal to {}",
                                   raw->substr(0, 256), path, static_cast<int64_t>(*max)));
    if (auto it = patterns.find(std::string(shape_name)); it != patterns.end()) {
      if (!std::regex_match(raw->begin(), raw->end(), it->second))
        errors.push_back(fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must satisfy regular "
                                     "expression pattern: {}",
                                     raw->substr(0, 256), path, Str(*shape, "pattern")));
    }
    return json::value(json::string(*raw));
  }
};

QueryModel::QueryModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
QueryModel::~QueryModel() = default;

StatusOr<std::unique_ptr<QueryModel>> QueryModel::Parse(std::string_view model_json) {
  boost::system::error_code ec;
  json::value v = json::parse(model_json, ec);
  if (ec || !v.is_object()) return InvalidArgument("service model is not a JSON object");
  auto impl = std::make_unique<Impl>();
  impl->root = std::move(v.get_object());
  const json::value* shapes = impl->root.if_contains("shapes");
  const json::value* operations = impl->root.if_contains("operations");
  if (shapes == nullptr || !shapes->is_object() || operations == nullptr || !operations->is_object())
    return InvalidArgument("model has no 'shapes' or 'operations' object");
  impl->shapes = &shapes->get_object();
  impl->operations = &operations->get_object();
  for (const auto& s : *impl->shapes) {
    if (!s.value().is_object()) continue;
    std::string_view pattern = Str(s.value().get_object(), "pattern");
    if (pattern.empty() || pattern.find("\\p") != std::string_view::npos ||
        pattern.find("\\u") != std::string_view::npos)
      continue;
    try {
      impl->patterns.emplace(std::string(s.key()), std::regex(std::string(pattern), std::regex::ECMAScript));
    } catch (const std::regex_error&) {
      // A Java-only construct: the pattern is left to the service.
    }
  }
  return std::unique_ptr<QueryModel>(new QueryModel(std::move(impl)));
}

std::vector<std::string> QueryModel::OperationNames() const {
  std::vector<std::string> out;
  for (const auto& op : *impl_->operations) out.emplace_back(op.key());
  std::sort(out.begin(), out.end());
  return out;
}

bool QueryModel::HasOperation(std::string_view op) const { return impl_->operations->contains(op); }

StatusOr<json::object> QueryModel::Decode(std::string_view op, const aws::QueryParams& params) const {
  const json::value* operation = impl_->operations->if_contains(op);
  if (operation == nullptr || !operation->is_object()) return Internal(fmt::format("no operation '{}' in the model", op));
  const json::value* input = operation->get_object().if_contains("input");
  if (input == nullptr || !input->is_object()) return json::object();
  std::vector<std::string> errors;
  std::optional<json::value> out =
      impl_->DecodeShape(Str(input->get_object(), "shape"), "", "", params, errors, 0);
  if (!errors.empty()) {
    std::string message = fmt::format("{} validation error{} detected: ", errors.size(), errors.size() == 1 ? "" : "s");
    for (size_t i = 0; i < errors.size(); ++i) {
      if (i > 0) message += "; ";
      message += errors[i];
    }
    return InvalidArgument(std::move(message), Error::kValidation);
  }
  if (!out || !out->is_object()) return json::object();
  return std::move(out->get_object());
}

}  // namespace paddock::sts
