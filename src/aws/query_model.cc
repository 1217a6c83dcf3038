#include "aws/query_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <regex>
#include <unordered_map>
#include <utility>

#include <boost/json.hpp>

namespace paddock::aws {
namespace json = boost::json;

namespace {

// "RoleName" -> "roleName": how AWS names a member in a validation message.
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

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// A value as a message shows it: at most 256 bytes, cut on a character boundary.
std::string Shown(std::string_view v) {
  constexpr size_t kMax = 256;
  if (v.size() <= kMax) return std::string(v);
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(v[cut]) & 0xC0) == 0x80) --cut;
  return std::string(v.substr(0, cut)) + "...";
}

std::optional<int64_t> Number(const json::object& shape, std::string_view name) {
  const json::value* v = shape.if_contains(name);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return static_cast<int64_t>(v->to_number<double>());
}

std::string_view Str(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// The request's parameters sorted by name (stable: a repeated name's first value wins, as
// FindParam's), so each lookup is a binary search rather than a scan.
class ParamIndex {
 public:
  explicit ParamIndex(const QueryParams& params) {
    sorted_.reserve(params.size());
    for (const auto& [k, v] : params) sorted_.emplace_back(k, v);
    std::stable_sort(sorted_.begin(), sorted_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  std::optional<std::string_view> Find(std::string_view name) const {
    auto it = LowerBound(name);
    if (it == sorted_.end() || it->first != name) return std::nullopt;
    return it->second;
  }

  // Whether some parameter is named "<prefix>.…".
  bool HasChildren(const std::string& prefix) const {
    const std::string dotted = prefix + ".";
    auto it = LowerBound(dotted);
    return it != sorted_.end() && it->first.starts_with(dotted);
  }

 private:
  using Entry = std::pair<std::string_view, std::string_view>;
  std::vector<Entry>::const_iterator LowerBound(std::string_view name) const {
    return std::lower_bound(sorted_.begin(), sorted_.end(), name,
                            [](const Entry& e, std::string_view n) { return e.first < n; });
  }
  std::vector<Entry> sorted_;
};

// The last segment of a parameter name ("IpPermissions.1.FromPort" -> "FromPort"): how EC2
// names a parameter in its messages.
std::string_view LastSegment(std::string_view q) {
  size_t dot = q.rfind('.');
  return dot == std::string_view::npos ? q : q.substr(dot + 1);
}

// The two wire flavours one decoder reads (query_model.h): where they differ, the code switches
// on this, explicitly.
enum class Flavour { kQuery, kEc2 };

// One failure found while decoding. `missing` tells EC2's MissingParameter from its
// InvalidParameterValue; the Query flavour words and reports every failure alike.
struct Problem {
  bool missing = false;
  std::string text;
};

}  // namespace

class QueryModel::Impl {
 public:
  json::object root;
  Flavour flavour = Flavour::kQuery;
  ErrorDetail validation;  // Query: every failure; ec2: InvalidParameterValue
  ErrorDetail missing;     // ec2: MissingParameter
  const json::object* shapes = nullptr;
  const json::object* operations = nullptr;
  std::unordered_map<std::string, std::regex> patterns;  // compiled, by shape name
  std::unordered_map<std::string, int> error_status;     // error code -> httpStatusCode

  const json::object* Shape(std::string_view name) const {
    const json::value* v = shapes->if_contains(name);
    return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
  }

  // A structure member's parameter name: the member name in Query; in ec2, its queryName, else
  // its locationName capitalized, else the member name.
  std::string WireName(std::string_view member, const json::object& ref) const {
    if (flavour == Flavour::kQuery) return std::string(member);
    if (std::string_view query_name = Str(ref, "queryName"); !query_name.empty()) return std::string(query_name);
    std::string name(Str(ref, "locationName"));
    if (name.empty()) return std::string(member);
    if (name[0] >= 'a' && name[0] <= 'z') name[0] = static_cast<char>(name[0] - 'a' + 'A');
    return name;
  }

  // Decodes the value of shape `shape_name` found at Query name `q` ("Tags.member.1"), whose
  // position in messages is `path` ("tags.1.member"); nullopt when absent.
  std::optional<json::value> DecodeShape(std::string_view shape_name, const std::string& q, const std::string& path,
                                         const ParamIndex& params, std::vector<Problem>& errors, int depth) const {
    const json::object* shape = Shape(shape_name);
    if (shape == nullptr || depth > 16) return std::nullopt;
    std::string_view type = Str(*shape, "type");
    if (type == "structure") return DecodeStructure(*shape, q, path, params, errors, depth);
    if (type == "list") return DecodeList(*shape, q, path, params, errors, depth);
    std::optional<std::string_view> raw = params.Find(q);
    if (!raw) return std::nullopt;
    auto error = [&](std::string_view constraint) {
      errors.push_back(Problem{
          false, fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must {}", Shown(*raw), path, constraint)});
    };
    if (flavour == Flavour::kEc2) return DecodeEc2Scalar(*shape, type, q, *raw, errors);
    if (type == "integer" || type == "long") {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), n);
      if (ec != std::errc() || end != raw->data() + raw->size() || raw->empty()) {
        error("be a number");
        return json::value(nullptr);
      }
      if (auto min = Number(*shape, "min"); min && n < *min)
        error(fmt::format("have value greater than or equal to {}", *min));
      if (auto max = Number(*shape, "max"); max && n > *max)
        error(fmt::format("have value less than or equal to {}", *max));
      return json::value(n);
    }
    if (type == "boolean") {
      if (*raw == "true") return json::value(true);
      if (*raw == "false") return json::value(false);
      error("be a boolean");
      return json::value(nullptr);
    }
    // Strings (and timestamps, kept as text).
    const auto length = static_cast<int64_t>(CodePoints(*raw));
    if (auto min = Number(*shape, "min"); min && length < *min)
      error(fmt::format("have length greater than or equal to {}", *min));
    if (auto max = Number(*shape, "max"); max && length > *max)
      error(fmt::format("have length less than or equal to {}", *max));
    if (const json::value* e = shape->if_contains("enum"); e != nullptr && e->is_array()) {
      const json::array& values = e->get_array();
      if (std::none_of(values.begin(), values.end(), [&](const json::value& x) { return x.is_string() && x.get_string() == *raw; })) {
        std::vector<std::string_view> names;
        for (const json::value& x : values)
          if (x.is_string()) names.push_back(x.get_string());
        error(fmt::format("satisfy enum value set: [{}]", fmt::join(names, ", ")));
      }
    }
    if (auto it = patterns.find(std::string(shape_name));
        it != patterns.end() && raw->size() <= 2048 && IsAscii(*raw) && !std::regex_match(raw->begin(), raw->end(), it->second))
      error(fmt::format("satisfy regular expression pattern: {}", Str(*shape, "pattern")));
    return json::value(json::string(*raw));
  }

  // An ec2-flavour scalar: integers (32 bits for "integer") within the model's range, booleans,
  // and strings as they come (query_model.h says why).
  std::optional<json::value> DecodeEc2Scalar(const json::object& shape, std::string_view type, std::string_view q,
                                             std::string_view raw, std::vector<Problem>& errors) const {
    auto invalid = [&] {
      errors.push_back(Problem{false, fmt::format("Invalid value '{}' for {}", Shown(raw), LastSegment(q))});
      return json::value(nullptr);
    };
    if (type == "integer" || type == "long") {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), n);
      if (ec != std::errc() || end != raw.data() + raw.size() || raw.empty()) return invalid();
      if (type == "integer" && (n < INT32_MIN || n > INT32_MAX)) return invalid();
      // EC2's wording names both bounds; the served operations' bounded integers (MaxResults)
      // have both.
      const std::optional<int64_t> min = Number(shape, "min"), max = Number(shape, "max");
      if ((min && n < *min) || (max && n > *max)) {
        errors.push_back(Problem{false, fmt::format("Value ( {} ) for parameter {} is invalid. Parameter must be between "
                                                    "{} and {}.",
                                                    n, LowerFirst(LastSegment(q)), min.value_or(INT64_MIN),
                                                    max.value_or(INT64_MAX))});
      }
      return json::value(n);
    }
    if (type == "boolean") {
      if (raw == "true") return json::value(true);
      if (raw == "false") return json::value(false);
      return invalid();
    }
    return json::value(json::string(raw));
  }

  std::optional<json::value> DecodeStructure(const json::object& shape, const std::string& q, const std::string& path,
                                             const ParamIndex& params, std::vector<Problem>& errors,
                                             int depth) const {
    if (!q.empty() && !params.HasChildren(q)) return std::nullopt;
    json::object out;
    const json::value* required = shape.if_contains("required");
    auto is_required = [&](std::string_view name) {
      if (required == nullptr || !required->is_array()) return false;
      const json::array& r = required->get_array();
      return std::any_of(r.begin(), r.end(), [&](const json::value& x) { return x.is_string() && x.get_string() == name; });
    };
    const json::value* members = shape.if_contains("members");
    if (members == nullptr || !members->is_object()) return json::value(std::move(out));
    for (const auto& m : members->get_object()) {
      if (!m.value().is_object()) continue;
      const std::string wire = WireName(m.key(), m.value().get_object());
      std::string member_q = q.empty() ? wire : fmt::format("{}.{}", q, wire);
      std::string member_path = path.empty() ? LowerFirst(m.key()) : fmt::format("{}.{}", path, LowerFirst(m.key()));
      std::optional<json::value> v =
          DecodeShape(Str(m.value().get_object(), "shape"), member_q, member_path, params, errors, depth + 1);
      if (v) {
        out[m.key()] = std::move(*v);
      } else if (is_required(m.key()) && flavour == Flavour::kEc2) {
        errors.push_back(Problem{true, fmt::format("The request must contain the parameter {}", wire)});
      } else if (is_required(m.key())) {
        errors.push_back(Problem{
            false, fmt::format("Value null at '{}' failed to satisfy constraint: Member must not be null", member_path)});
      }
    }
    return json::value(std::move(out));
  }

  // "Name.member.1", "Name.member.2" (ec2: "Name.1", "Name.2"), ... up to the first missing
  // index; "Name=" alone is an empty list.
  std::optional<json::value> DecodeList(const json::object& shape, const std::string& q, const std::string& path,
                                        const ParamIndex& params, std::vector<Problem>& errors, int depth) const {
    const json::value* member = shape.if_contains("member");
    if (member == nullptr || !member->is_object()) return std::nullopt;
    std::string_view element_shape = Str(member->get_object(), "shape");
    json::array out;
    bool present = params.Find(q).has_value();
    for (size_t i = 1;; ++i) {
      std::string element_q =
          flavour == Flavour::kEc2 ? fmt::format("{}.{}", q, i) : fmt::format("{}.member.{}", q, i);
      std::optional<json::value> v =
          DecodeShape(element_shape, element_q, fmt::format("{}.{}.member", path, i), params, errors, depth + 1);
      if (!v) break;
      out.push_back(std::move(*v));
      present = true;
    }
    if (!present) return std::nullopt;
    if (flavour == Flavour::kEc2) return json::value(std::move(out));  // lengths are the service's
    auto error = [&](std::string_view constraint, int64_t bound) {
      errors.push_back(Problem{false, fmt::format("Value '{}' at '{}' failed to satisfy constraint: Member must have "
                                                  "length {} {}",
                                                  Shown(json::serialize(out)), path, constraint, bound)});
    };
    if (auto max = Number(shape, "max"); max && static_cast<int64_t>(out.size()) > *max)
      error("less than or equal to", *max);
    if (auto min = Number(shape, "min"); min && static_cast<int64_t>(out.size()) < *min)
      error("greater than or equal to", *min);
    return json::value(std::move(out));
  }
};

QueryModel::QueryModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
QueryModel::~QueryModel() = default;

StatusOr<std::unique_ptr<QueryModel>> QueryModel::Parse(std::string_view model_json, ErrorDetail validation) {
  boost::system::error_code ec;
  json::value v = json::parse(model_json, ec);
  if (ec || !v.is_object()) return InvalidArgument("service model is not a JSON object");
  auto impl = std::make_unique<Impl>();
  impl->root = std::move(v.get_object());
  impl->validation = validation;
  const json::value* shapes = impl->root.if_contains("shapes");
  const json::value* operations = impl->root.if_contains("operations");
  if (shapes == nullptr || !shapes->is_object() || operations == nullptr || !operations->is_object())
    return InvalidArgument("model has no 'shapes' or 'operations' object");
  impl->shapes = &shapes->get_object();
  impl->operations = &operations->get_object();
  for (const auto& s : *impl->shapes) {
    if (!s.value().is_object()) continue;
    const json::object& shape = s.value().get_object();
    if (const json::value* e = shape.if_contains("error"); e != nullptr && e->is_object()) {
      std::string_view code = Str(e->get_object(), "code");
      if (auto status = Number(e->get_object(), "httpStatusCode"); !code.empty() && status)
        impl->error_status[std::string(code)] = static_cast<int>(*status);
    }
    std::string pattern(Str(shape, "pattern"));
    if (pattern.empty()) continue;
    // ECMAScript has no Unicode classes: inside [...] (the only place the models use them) \p{L},
    // \p{Z} and \p{N} become their ASCII members; only ASCII values are matched.
    for (auto [from, to] : {std::pair<std::string_view, std::string_view>{"\\p{L}", "A-Za-z"},
                            {"\\p{Z}", " "},
                            {"\\p{N}", "0-9"}})
      for (size_t at; (at = pattern.find(from)) != std::string::npos;) pattern.replace(at, from.size(), to);
    try {
      impl->patterns.emplace(std::string(s.key()), std::regex(pattern, std::regex::ECMAScript | std::regex::optimize));
    } catch (const std::regex_error&) {
      // A construct std::regex cannot read: the pattern is left to the service.
    }
  }
  return std::unique_ptr<QueryModel>(new QueryModel(std::move(impl)));
}

StatusOr<std::unique_ptr<QueryModel>> QueryModel::ParseEc2(std::string_view model_json, Ec2Errors errors) {
  ASSIGN_OR_RETURN(std::unique_ptr<QueryModel> model, Parse(model_json, errors.invalid));
  model->impl_->flavour = Flavour::kEc2;
  model->impl_->missing = errors.missing;
  return model;
}

std::vector<std::string> QueryModel::OperationNames() const {
  std::vector<std::string> out;
  for (const auto& op : *impl_->operations) out.emplace_back(op.key());
  std::sort(out.begin(), out.end());
  return out;
}

bool QueryModel::HasOperation(std::string_view op) const { return impl_->operations->contains(op); }

std::optional<int> QueryModel::ErrorStatus(std::string_view code) const {
  auto it = impl_->error_status.find(std::string(code));
  if (it == impl_->error_status.end()) return std::nullopt;
  return it->second;
}

StatusOr<json::object> QueryModel::Decode(std::string_view op, const QueryParams& params) const {
  const json::value* operation = impl_->operations->if_contains(op);
  if (operation == nullptr || !operation->is_object()) return Internal(fmt::format("no operation '{}' in the model", op));
  const json::value* input = operation->get_object().if_contains("input");
  if (input == nullptr || !input->is_object()) return json::object();
  std::vector<Problem> errors;
  const ParamIndex index(params);
  std::optional<json::value> out = impl_->DecodeShape(Str(input->get_object(), "shape"), "", "", index, errors, 0);
  if (!errors.empty() && impl_->flavour == Flavour::kEc2) {
    // EC2 answers one failure.
    return InvalidArgument(errors[0].text, errors[0].missing ? impl_->missing : impl_->validation);
  }
  if (!errors.empty()) {
    std::vector<std::string> texts;
    for (Problem& p : errors) texts.push_back(std::move(p.text));
    return InvalidArgument(fmt::format("{} validation error{} detected: {}", texts.size(), texts.size() == 1 ? "" : "s",
                                       fmt::join(texts, "; ")),
                           impl_->validation);
  }
  if (!out || !out->is_object()) return json::object();
  return std::move(out->get_object());
}

}  // namespace paddock::aws
