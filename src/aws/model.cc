#include "aws/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include <boost/json.hpp>

#include "aws/errors.h"

namespace paddock::aws {
namespace json = boost::json;

namespace {

constexpr Error kSerialization = Error::kSerialization;
// Shapes nest far less than this in every AWS model; the bound only stops a hostile model or a
// recursive shape from recursing without end. Request bodies are bounded separately by the parser.
constexpr int kMaxDepth = 64;

enum class Type { kStructure, kList, kMap, kString, kInteger, kLong, kBoolean, kDouble, kTimestamp, kBlob, kDocument };

struct Member {
  std::string name;
  int shape = -1;
  std::string location;       // "uri", "querystring", "header", "headers"; empty: the body
  std::string location_name;  // as the model spells it; may be empty
};

struct Shape {
  std::string name;
  Type type = Type::kString;
  std::optional<double> min, max;
  std::vector<std::string> enum_values;
  std::vector<Member> members;     // sorted by name
  std::vector<std::string> required;
  int member = -1;  // list element
  int key = -1;     // map key
  int value = -1;   // map value
  std::string payload;  // a structure bound to a REST body as a whole: that member's name
};

// An operation's "http" trait.
struct OperationHttp {
  std::string method = "POST";
  std::string request_uri = "/";
  int response_code = 200;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Where in the input a value sits, for messages: "containerDefinitions[0].portMappings[1].containerPort".
struct PathElem {
  std::string_view name;
  size_t index = 0;
  bool is_index = false;
};

class Path {
 public:
  Path() { elems_.reserve(8); }
  void PushName(std::string_view n) { elems_.push_back({n, 0, false}); }
  void PushIndex(size_t i) { elems_.push_back({{}, i, true}); }
  void Pop() { elems_.pop_back(); }
  std::string ToString() const {
    std::string out;
    for (const auto& e : elems_) {
      if (e.is_index) {
        out += fmt::format("[{}]", e.index);
      } else {
        if (!out.empty()) out.push_back('.');
        out += e.name;
      }
    }
    return out;
  }

 private:
  std::vector<PathElem> elems_;
};

std::string_view TypeName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "a list";
    case json::kind::object: return "an object";
  }
  return "a value";
}

std::string_view Expected(Type t) {
  switch (t) {
    case Type::kStructure: return "an object";
    case Type::kList: return "a list";
    case Type::kMap: return "an object (map)";
    case Type::kString: return "a string";
    case Type::kBlob: return "a base64 string";
    case Type::kInteger:
    case Type::kLong: return "an integer";
    case Type::kBoolean: return "a boolean";
    case Type::kDouble: return "a number";
    case Type::kTimestamp: return "a timestamp (seconds since the epoch)";
    case Type::kDocument: return "a JSON document";
  }
  return "a value";
}

std::string Quote(std::string_view s) {
  constexpr size_t kMax = 200;
  if (s.size() <= kMax) return std::string(s);
  return fmt::format("{}...", s.substr(0, kMax));
}

std::string FormatNumber(double d) {
  if (std::floor(d) == d && std::fabs(d) < 1e15) return fmt::format("{}", static_cast<int64_t>(d));
  return fmt::format("{}", d);
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

Status TypeError(const Path& path, Type expected, const json::value& got) {
  std::string where = path.ToString();
  return InvalidArgument(fmt::format("Unexpected value type for '{}': expected {}, got {}.",
                                     where.empty() ? "the request" : where, Expected(expected), TypeName(got)),
                         kSerialization);
}

Status ParamError(std::string message) { return InvalidArgument(std::move(message)); }

// "must be between 1 and 100" / "at least 1" / "at most 100"; empty when within bounds.
std::string RangeText(const Shape& s) {
  if (s.min && s.max) return fmt::format("between {} and {}", FormatNumber(*s.min), FormatNumber(*s.max));
  if (s.min) return fmt::format("at least {}", FormatNumber(*s.min));
  return fmt::format("at most {}", FormatNumber(*s.max));
}

bool OutOfRange(const Shape& s, double v) { return (s.min && v < *s.min) || (s.max && v > *s.max); }

}  // namespace

class ServiceModel::Impl {
 public:
  StatusOr<int> ShapeIndex(std::string_view name) const {
    auto it = shape_index_.find(name);
    if (it == shape_index_.end()) return Internal(fmt::format("model refers to unknown shape '{}'", name));
    return it->second;
  }

  Status Load(const json::object& root);
  Status Validate(int shape_index, json::value& v, Path& path, int depth) const;

  std::vector<Shape> shapes_;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> shape_index_;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> operations_;  // name -> input shape or -1
  std::map<std::string, OperationHttp, std::less<>> http_;  // name -> its "http" trait
  ModelMetadata metadata_;
};

namespace {

std::optional<double> NumberField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

Type ParseType(std::string_view t, bool document) {
  if (document) return Type::kDocument;
  if (t == "structure") return Type::kStructure;
  if (t == "list") return Type::kList;
  if (t == "map") return Type::kMap;
  if (t == "string") return Type::kString;
  if (t == "integer" || t == "short" || t == "byte") return Type::kInteger;
  if (t == "long") return Type::kLong;
  if (t == "boolean") return Type::kBoolean;
  if (t == "double" || t == "float") return Type::kDouble;
  if (t == "timestamp") return Type::kTimestamp;
  if (t == "blob") return Type::kBlob;
  return Type::kDocument;  // a type this validator does not know: accept what arrives
}

}  // namespace

Status ServiceModel::Impl::Load(const json::object& root) {
  const json::value* shapes = root.if_contains("shapes");
  const json::value* operations = root.if_contains("operations");
  if (shapes == nullptr || !shapes->is_object() || operations == nullptr || !operations->is_object())
    return InvalidArgument("model has no 'shapes' or 'operations' object");

  for (const auto& [name, _] : shapes->get_object()) {
    shape_index_.emplace(std::string(name), static_cast<int>(shapes_.size()));
    shapes_.emplace_back().name = name;
  }
  for (const auto& [name, def_value] : shapes->get_object()) {
    if (!def_value.is_object()) return InvalidArgument(fmt::format("shape '{}' is not an object", std::string_view(name)));
    const json::object& def = def_value.get_object();
    Shape& s = shapes_[static_cast<size_t>(shape_index_.find(std::string_view(name))->second)];
    const json::value* type = def.if_contains("type");
    const json::value* document = def.if_contains("document");
    s.type = ParseType(type && type->is_string() ? std::string_view(type->get_string()) : std::string_view(),
                       document && document->is_bool() && document->get_bool());
    s.min = NumberField(def, "min");
    s.max = NumberField(def, "max");
    if (const json::value* e = def.if_contains("enum"); e && e->is_array()) {
      for (const auto& ev : e->get_array())
        if (ev.is_string()) s.enum_values.emplace_back(ev.get_string());
    }
    auto target = [&](std::string_view field) -> StatusOr<int> {
      const json::value* ref = def.if_contains(field);
      if (ref == nullptr || !ref->is_object()) return -1;
      const json::value* shape = ref->get_object().if_contains("shape");
      if (shape == nullptr || !shape->is_string()) return -1;
      return ShapeIndex(shape->get_string());
    };
    ASSIGN_OR_RETURN(s.member, target("member"));
    ASSIGN_OR_RETURN(s.key, target("key"));
    ASSIGN_OR_RETURN(s.value, target("value"));
    if (const json::value* members = def.if_contains("members"); members && members->is_object()) {
      for (const auto& [member_name, ref] : members->get_object()) {
        const json::value* shape = ref.is_object() ? ref.get_object().if_contains("shape") : nullptr;
        if (shape == nullptr || !shape->is_string())
          return InvalidArgument(fmt::format("member '{}' has no shape", std::string_view(member_name)));
        ASSIGN_OR_RETURN(int idx, ShapeIndex(shape->get_string()));
        Member& m = s.members.emplace_back();
        m.name = member_name;
        m.shape = idx;
        if (const json::value* loc = ref.get_object().if_contains("location"); loc && loc->is_string())
          m.location = loc->get_string();
        if (const json::value* ln = ref.get_object().if_contains("locationName"); ln && ln->is_string())
          m.location_name = ln->get_string();
      }
      std::sort(s.members.begin(), s.members.end(),
                [](const Member& a, const Member& b) { return a.name < b.name; });
    }
    if (const json::value* payload = def.if_contains("payload"); payload && payload->is_string())
      s.payload = payload->get_string();
    if (const json::value* req = def.if_contains("required"); req && req->is_array()) {
      for (const auto& r : req->get_array())
        if (r.is_string()) s.required.emplace_back(r.get_string());
    }
    if ((s.type == Type::kList && s.member < 0) || (s.type == Type::kMap && (s.key < 0 || s.value < 0)))
      return InvalidArgument(fmt::format("shape '{}' lacks its element shapes", s.name));
  }

  for (const auto& [name, op] : operations->get_object()) {
    int input = -1;
    OperationHttp& http = http_[std::string(name)];
    if (op.is_object()) {
      if (const json::value* h = op.get_object().if_contains("http"); h && h->is_object()) {
        const json::object& ho = h->get_object();
        if (const json::value* m = ho.if_contains("method"); m && m->is_string()) http.method = m->get_string();
        if (const json::value* u = ho.if_contains("requestUri"); u && u->is_string())
          http.request_uri = u->get_string();
        if (std::optional<double> code = NumberField(ho, "responseCode")) http.response_code = static_cast<int>(*code);
      }
      if (const json::value* in = op.get_object().if_contains("input"); in && in->is_object()) {
        if (const json::value* shape = in->get_object().if_contains("shape"); shape && shape->is_string()) {
          ASSIGN_OR_RETURN(input, ShapeIndex(shape->get_string()));
        }
      }
    }
    operations_.emplace(std::string(name), input);
  }

  if (const json::value* meta = root.if_contains("metadata"); meta && meta->is_object()) {
    auto text = [&](std::string_view key) {
      const json::value* v = meta->get_object().if_contains(key);
      return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    metadata_.protocol = text("protocol");
    metadata_.json_version = text("jsonVersion");
    metadata_.target_prefix = text("targetPrefix");
    metadata_.signing_name = text("signingName");
    if (metadata_.signing_name.empty()) metadata_.signing_name = text("endpointPrefix");
  }
  return OkStatus();
}

Status ServiceModel::Impl::Validate(int shape_index, json::value& v, Path& path, int depth) const {
  if (depth > kMaxDepth) {
    return InvalidArgument(fmt::format("The input nests deeper than {} levels.", kMaxDepth), kSerialization);
  }
  const Shape& s = shapes_[static_cast<size_t>(shape_index)];
  switch (s.type) {
    case Type::kDocument:
      return OkStatus();

    case Type::kStructure: {
      if (!v.is_object()) return TypeError(path, s.type, v);
      json::object& obj = v.get_object();
      for (auto it = obj.begin(); it != obj.end();) {
        std::string_view key = it->key();
        auto m = std::lower_bound(s.members.begin(), s.members.end(), key,
                                  [](const Member& a, std::string_view k) { return a.name < k; });
        // Unknown members are dropped, and an explicit null means "not given", as AWS reads JSON.
        if (m == s.members.end() || m->name != key || it->value().is_null()) {
          it = obj.erase(it);
          continue;
        }
        path.PushName(m->name);
        Status st = Validate(m->shape, it->value(), path, depth + 1);
        path.Pop();
        if (!st.ok()) return st;
        ++it;
      }
      for (const auto& r : s.required) {
        if (!obj.contains(r)) {
          path.PushName(r);
          std::string where = path.ToString();
          path.Pop();
          return ParamError(fmt::format("{} can not be null.", where));
        }
      }
      return OkStatus();
    }

    case Type::kList: {
      if (!v.is_array()) return TypeError(path, s.type, v);
      json::array& arr = v.get_array();
      if (OutOfRange(s, static_cast<double>(arr.size()))) {
        return ParamError(fmt::format("{} must contain {} items, but contained {}.", path.ToString(), RangeText(s),
                                      arr.size()));
      }
      for (size_t i = 0; i < arr.size(); ++i) {
        path.PushIndex(i);
        Status st = arr[i].is_null() ? ParamError(fmt::format("{} can not be null.", path.ToString()))
                                     : Validate(s.member, arr[i], path, depth + 1);
        path.Pop();
        if (!st.ok()) return st;
      }
      return OkStatus();
    }

    case Type::kMap: {
      if (!v.is_object()) return TypeError(path, s.type, v);
      json::object& obj = v.get_object();
      if (OutOfRange(s, static_cast<double>(obj.size()))) {
        return ParamError(fmt::format("{} must contain {} entries, but contained {}.", path.ToString(),
                                      RangeText(s), obj.size()));
      }
      for (auto& kv : obj) {
        path.PushName(kv.key());
        json::value key(kv.key());
        Status st = Validate(s.key, key, path, depth + 1);
        if (st.ok()) {
          st = kv.value().is_null() ? ParamError(fmt::format("{} can not be null.", path.ToString()))
                                    : Validate(s.value, kv.value(), path, depth + 1);
        }
        path.Pop();
        if (!st.ok()) return st;
      }
      return OkStatus();
    }

    case Type::kString:
    case Type::kBlob: {
      if (!v.is_string()) return TypeError(path, s.type, v);
      std::string_view str = v.get_string();
      if (s.min || s.max) {
        size_t len = CodePoints(str);
        if (OutOfRange(s, static_cast<double>(len))) {
          return ParamError(fmt::format("{} must have length {}, but had length {}.", path.ToString(),
                                        RangeText(s), len));
        }
      }
      if (!s.enum_values.empty() &&
          std::find(s.enum_values.begin(), s.enum_values.end(), str) == s.enum_values.end()) {
        return ParamError(fmt::format("{} must be one of [{}], but was {}", path.ToString(),
                                      fmt::join(s.enum_values, ", "), Quote(str)));
      }
      return OkStatus();
    }

    case Type::kInteger:
    case Type::kLong: {
      int64_t n;
      if (v.is_int64()) {
        n = v.get_int64();
      } else if (v.is_uint64()) {
        if (v.get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return ParamError(fmt::format("{} is out of range for a 64-bit integer.", path.ToString()));
        n = static_cast<int64_t>(v.get_uint64());
      } else if (v.is_double()) {
        // 5.0 is an integer written as a number; 5.5 is not. Handlers then see an int64.
        double d = v.get_double();
        if (std::floor(d) != d || std::fabs(d) > 9.2e18) return TypeError(path, s.type, v);
        n = static_cast<int64_t>(d);
        v = n;
      } else {
        return TypeError(path, s.type, v);
      }
      if (s.type == Type::kInteger &&
          (n < std::numeric_limits<int32_t>::min() || n > std::numeric_limits<int32_t>::max()))
        return ParamError(fmt::format("{} is out of range for a 32-bit integer, but was {}.", path.ToString(), n));
      if (OutOfRange(s, static_cast<double>(n)))
        return ParamError(fmt::format("{} must be {}, but was {}.", path.ToString(), RangeText(s), n));
      if (v.is_uint64()) v = n;
      return OkStatus();
    }

    case Type::kDouble: {
      if (!v.is_number()) return TypeError(path, s.type, v);
      double d = v.to_number<double>();
      if (OutOfRange(s, d))
        return ParamError(fmt::format("{} must be {}, but was {}.", path.ToString(), RangeText(s), FormatNumber(d)));
      return OkStatus();
    }

    case Type::kTimestamp:
      if (!v.is_number()) return TypeError(path, s.type, v);
      return OkStatus();

    case Type::kBoolean:
      if (!v.is_bool()) return TypeError(path, s.type, v);
      return OkStatus();
  }
  return OkStatus();
}

ServiceModel::ServiceModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServiceModel::~ServiceModel() = default;

StatusOr<std::unique_ptr<ServiceModel>> ServiceModel::Parse(std::string_view model_json) {
  boost::system::error_code ec;
  json::value root = json::parse(json::string_view(model_json.data(), model_json.size()), ec);
  if (ec) return InvalidArgument(fmt::format("service model is not valid JSON: {}", ec.message()));
  if (!root.is_object()) return InvalidArgument("service model is not a JSON object");
  auto impl = std::make_unique<Impl>();
  RETURN_IF_ERROR(impl->Load(root.get_object()));
  return std::unique_ptr<ServiceModel>(new ServiceModel(std::move(impl)));
}

std::vector<std::string> ServiceModel::OperationNames() const {
  std::vector<std::string> names;
  names.reserve(impl_->operations_.size());
  for (const auto& [name, _] : impl_->operations_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

bool ServiceModel::HasOperation(std::string_view op) const { return impl_->operations_.contains(op); }

const ModelMetadata& ServiceModel::Metadata() const { return impl_->metadata_; }

namespace {

HttpBinding::Kind KindOf(Type t) {
  switch (t) {
    case Type::kString:
    case Type::kBlob: return HttpBinding::Kind::kString;
    case Type::kInteger:
    case Type::kLong: return HttpBinding::Kind::kInteger;
    case Type::kBoolean: return HttpBinding::Kind::kBoolean;
    case Type::kDouble: return HttpBinding::Kind::kDouble;
    case Type::kTimestamp: return HttpBinding::Kind::kTimestamp;
    case Type::kList: return HttpBinding::Kind::kList;
    case Type::kMap: return HttpBinding::Kind::kMap;
    case Type::kStructure: return HttpBinding::Kind::kStructure;
    case Type::kDocument: return HttpBinding::Kind::kOther;
  }
  return HttpBinding::Kind::kOther;
}

HttpBinding::Location LocationOf(std::string_view location) {
  if (location == "uri") return HttpBinding::Location::kUri;
  if (location == "querystring") return HttpBinding::Location::kQueryString;
  if (location == "header") return HttpBinding::Location::kHeader;
  if (location == "headers") return HttpBinding::Location::kHeaders;
  return HttpBinding::Location::kBody;  // "statusCode" and others bind output only
}

}  // namespace

std::vector<HttpBinding> ServiceModel::HttpBindings() const {
  std::vector<HttpBinding> out;
  out.reserve(impl_->http_.size());
  for (const auto& [name, http] : impl_->http_) {
    HttpBinding& b = out.emplace_back();
    b.operation = name;
    b.method = http.method;
    b.request_uri = http.request_uri;
    b.response_code = http.response_code;
    const int input = impl_->operations_.find(name)->second;
    if (input < 0) continue;
    const Shape& in = impl_->shapes_[static_cast<size_t>(input)];
    b.payload = in.payload;
    for (const Member& m : in.members) {
      const Shape& target = impl_->shapes_[static_cast<size_t>(m.shape)];
      HttpBinding::Member& bm = b.members.emplace_back();
      bm.name = m.name;
      bm.location = LocationOf(m.location);
      bm.location_name = m.location_name;
      // A map bound to "querystring" without a name takes every parameter no other member binds.
      const bool query_map = bm.location == HttpBinding::Location::kQueryString && target.type == Type::kMap;
      if (bm.location_name.empty() && !query_map) bm.location_name = m.name;
      bm.kind = KindOf(target.type);
      const int element = target.type == Type::kList ? target.member : target.type == Type::kMap ? target.value : -1;
      if (element >= 0) bm.element = KindOf(impl_->shapes_[static_cast<size_t>(element)].type);
    }
  }
  return out;
}

std::string_view ServiceModel::ErrorMessageMember(std::string_view error_shape) const {
  auto it = impl_->shape_index_.find(error_shape);
  if (it == impl_->shape_index_.end()) return "message";
  const Shape& s = impl_->shapes_[static_cast<size_t>(it->second)];
  for (const Member& m : s.members)
    if (m.name == "Message") return "Message";
  return "message";
}

Status ServiceModel::ValidateInput(std::string_view op, json::value& input) const {
  auto it = impl_->operations_.find(op);
  if (it == impl_->operations_.end())
    return InvalidArgument(fmt::format("Unknown operation '{}'.", op), Error::kUnknownOperation);
  if (!input.is_object()) {
    return InvalidArgument(fmt::format("The request body must be a JSON object, not {}.", TypeName(input)),
                           kSerialization);
  }
  if (it->second < 0) {
    input.get_object().clear();
    return OkStatus();
  }
  Path path;
  return impl_->Validate(it->second, input, path, 0);
}

}  // namespace paddock::aws
