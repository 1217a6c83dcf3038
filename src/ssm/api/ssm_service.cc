#include "ssm/api/ssm_service.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>

#include "aws/model.h"
#include "common/json_fields.h"
#include "ssm/api/models/ssm_model.h"

namespace paddock::ssm::api {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {
    "PutParameter",        "GetParameter",        "GetParameters",         "DeleteParameter",
    "DeleteParameters",    "GetParameterHistory", "GetParametersByPath",   "DescribeParameters",
    "LabelParameterVersion", "UnlabelParameterVersion", "AddTagsToResource", "RemoveTagsFromResource",
    "ListTagsForResource",
};

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Status Validation(std::string message) { return InvalidArgument(std::move(message), Error::kValidation); }

// The name a request names, stripped of a ":selector" (an ARN's "arn:...:parameter/" kept as is).
std::string WithoutSelector(std::string_view reference) {
  size_t from = 0;
  if (reference.starts_with("arn:")) {
    size_t p = reference.find(":parameter/");
    from = p == std::string_view::npos ? reference.size() : p + 11;
  }
  size_t colon = reference.find(':', from);
  return std::string(colon == std::string_view::npos ? reference : reference.substr(0, colon));
}

// The resource IAM decides on for a name or ARN the caller gave.
std::string ResourceArn(const Scope& scope, std::string_view reference) {
  std::string bare = WithoutSelector(reference);
  if (bare.starts_with("arn:")) return bare;
  return Parameters::Arn(scope, bare);
}

Decryption DecryptionOf(const json::object& input) {
  return json_fields::Bool(input, "WithDecryption").value_or(false) ? Decryption::kYes : Decryption::kNo;
}

json::value Value(const Parameter& p) { return json::value(p.sealed ? Base64(p.value) : p.value); }

json::object ParameterJson(const Parameter& p) {
  json::object o{{"Name", p.name},
                 {"Type", FormatType(p.type)},
                 {"Value", Value(p)},
                 {"Version", p.version},
                 {"LastModifiedDate", EpochSeconds(p.last_modified)},
                 {"ARN", p.arn},
                 {"DataType", p.data_type}};
  if (!p.selector.empty()) o["Selector"] = p.selector;
  return o;
}

json::array LabelsJson(const Parameter& p) {
  json::array labels;
  for (const auto& l : p.labels) labels.emplace_back(l);
  return labels;
}

json::object HistoryJson(const Parameter& p) {
  json::object o{{"Name", p.name},
                 {"Type", FormatType(p.type)},
                 {"LastModifiedDate", EpochSeconds(p.last_modified)},
                 {"LastModifiedUser", p.last_modified_user},
                 {"Value", Value(p)},
                 {"Version", p.version},
                 {"Labels", LabelsJson(p)},
                 {"Tier", FormatTier(p.tier)},
                 {"Policies", json::array()},
                 {"DataType", p.data_type}};
  if (!p.key_id.empty()) o["KeyId"] = p.key_id;
  if (!p.description.empty()) o["Description"] = p.description;
  if (!p.allowed_pattern.empty()) o["AllowedPattern"] = p.allowed_pattern;
  return o;
}

json::object MetadataJson(const Parameter& p) {
  json::object o{{"Name", p.name},
                 {"ARN", p.arn},
                 {"Type", FormatType(p.type)},
                 {"LastModifiedDate", EpochSeconds(p.last_modified)},
                 {"LastModifiedUser", p.last_modified_user},
                 {"Version", p.version},
                 {"Tier", FormatTier(p.tier)},
                 {"Policies", json::array()},
                 {"DataType", p.data_type}};
  if (!p.key_id.empty()) o["KeyId"] = p.key_id;
  if (!p.description.empty()) o["Description"] = p.description;
  if (!p.allowed_pattern.empty()) o["AllowedPattern"] = p.allowed_pattern;
  return o;
}

std::vector<Filter> FiltersOf(const json::object& input) {
  std::vector<Filter> out;
  for (const json::object* f : json_fields::Objects(input, "ParameterFilters"))
    out.push_back(Filter{json_fields::Str(*f, "Key"), json_fields::OptStr(*f, "Option").value_or(""),
                         json_fields::Strings(*f, "Values")});
  return out;
}

std::vector<Tag> TagsOf(const json::object& input, std::string_view member) {
  std::vector<Tag> out;
  for (const json::object* t : json_fields::Objects(input, member))
    out.push_back(Tag{json_fields::Str(*t, "Key"), json_fields::Str(*t, "Value")});
  return out;
}

// A NextToken's context: the action and everything that shapes its list, so a token is good only
// for the listing that made it.
std::string TokenContext(const aws::CallContext& ctx, const json::object& input) {
  json::object shape = input;
  shape.erase("NextToken");
  shape.erase("MaxResults");
  shape.erase("WithDecryption");
  return fmt::format("ssm|{}|{}|{}|{}", ctx.action, ctx.scope.account.str(), ctx.scope.region.str(),
                     json::serialize(shape));
}

}  // namespace

const aws::ServiceModel& SsmService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(SsmModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool SsmService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> SsmService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

std::vector<aws::AuthRequest> SsmService::AuthorizationFor(const aws::CallContext& ctx,
                                                           const json::object& input) const {
  const std::string action = "ssm:" + ctx.action;
  std::vector<aws::AuthRequest> out;
  auto ask = [&](std::string resource) { out.push_back(aws::AuthRequest{action, std::move(resource), {}}); };
  if (ctx.action == "DescribeParameters") {
    ask("*");
  } else if (ctx.action == "GetParameters" || ctx.action == "DeleteParameters") {
    for (const auto& name : json_fields::Strings(input, "Names")) ask(ResourceArn(ctx.scope, name));
  } else if (ctx.action == "GetParametersByPath") {
    ask(ResourceArn(ctx.scope, json_fields::StrView(input, "Path")));
  } else if (ctx.action == "AddTagsToResource" || ctx.action == "RemoveTagsFromResource" ||
             ctx.action == "ListTagsForResource") {
    ask(ResourceArn(ctx.scope, json_fields::StrView(input, "ResourceId")));
  } else {
    ask(ResourceArn(ctx.scope, json_fields::StrView(input, "Name")));
  }
  return out;
}

std::optional<aws::AwsError> SsmService::ErrorFor(const Status& status) const {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    switch (*e) {
      case Error::kValidation: return aws::AwsError{"ValidationException", 400};
      case Error::kReservedName: return aws::AwsError{"AccessDeniedException", 400};
      case Error::kParameterNotFound: return aws::AwsError{"ParameterNotFound", 400};
      case Error::kParameterAlreadyExists: return aws::AwsError{"ParameterAlreadyExists", 400};
      case Error::kParameterVersionNotFound: return aws::AwsError{"ParameterVersionNotFound", 400};
      case Error::kHierarchyLevelLimitExceeded: return aws::AwsError{"HierarchyLevelLimitExceededException", 400};
      case Error::kInvalidAllowedPattern: return aws::AwsError{"InvalidAllowedPatternException", 400};
      case Error::kParameterPatternMismatch: return aws::AwsError{"ParameterPatternMismatchException", 400};
      case Error::kInvalidKeyId: return aws::AwsError{"InvalidKeyId", 400};
      case Error::kParameterLimitExceeded: return aws::AwsError{"ParameterLimitExceeded", 400};
      case Error::kParameterMaxVersionLimitExceeded: return aws::AwsError{"ParameterMaxVersionLimitExceeded", 400};
      case Error::kParameterVersionLabelLimitExceeded:
        return aws::AwsError{"ParameterVersionLabelLimitExceeded", 400};
      case Error::kInvalidFilterKey: return aws::AwsError{"InvalidFilterKey", 400};
      case Error::kInvalidFilterOption: return aws::AwsError{"InvalidFilterOption", 400};
      case Error::kInvalidFilterValue: return aws::AwsError{"InvalidFilterValue", 400};
      case Error::kInvalidResourceId: return aws::AwsError{"InvalidResourceId", 400};
      case Error::kInvalidResourceType: return aws::AwsError{"InvalidResourceType", 400};
      case Error::kTooManyTags: return aws::AwsError{"TooManyTagsError", 400};
      case Error::kInvalidNextToken: return aws::AwsError{"InvalidNextToken", 400};
    }
  }
  if (status.detail().As<kms::Error>()) return aws::AwsError{"InternalServerError", 500};
  // The model's own checks (lengths, enums, required members) carry no detail: SSM names them
  // ValidationException where ECS says InvalidParameterException.
  if (status.code() == StatusCode::kInvalidArgument && status.detail().empty())
    return aws::AwsError{"ValidationException", 400};
  return std::nullopt;
}

StatusOr<std::string> SsmService::Call(const aws::CallContext& ctx, json::object& input) {
  const Scope& scope = ctx.scope;
  const std::string& action = ctx.action;
  auto page_after = [&]() -> StatusOr<std::optional<std::string>> {
    std::optional<std::string> token = json_fields::OptStr(input, "NextToken");
    if (!token) return std::optional<std::string>();
    auto position = tokens_.Decode(TokenContext(ctx, input), *token);
    if (!position.ok()) return InvalidArgument("The nextToken is not valid.", Error::kInvalidNextToken);
    return std::optional<std::string>(std::move(*position));
  };
  auto token_of = [&](const Page& page, json::object& out) {
    if (page.next) out["NextToken"] = tokens_.Encode(TokenContext(ctx, input), *page.next);
  };

  if (action == "PutParameter") {
    PutRequest r;
    r.name = json_fields::Str(input, "Name");
    r.value = json_fields::Str(input, "Value");
    if (auto t = json_fields::OptStr(input, "Type")) {
      r.type = ParseType(*t);
      if (!r.type) return Validation(fmt::format("Parameter type {} is not valid.", *t));
    }
    r.key_id = json_fields::OptStr(input, "KeyId");
    r.overwrite = json_fields::Bool(input, "Overwrite").value_or(false);
    r.allowed_pattern = json_fields::OptStr(input, "AllowedPattern");
    r.description = json_fields::OptStr(input, "Description");
    if (auto t = json_fields::OptStr(input, "Tier")) r.tier = ParseRequestedTier(*t);
    r.data_type = json_fields::OptStr(input, "DataType");
    r.tags = TagsOf(input, "Tags");
    r.modified_by = ctx.principal.arn;
    if (input.contains("Policies"))
      return Validation("Parameter policies are not supported by this server.");
    ASSIGN_OR_RETURN(PutResult put, parameters_.Put(scope, r));
    return json::serialize(json::object{{"Version", put.version}, {"Tier", FormatTier(put.tier)}});
  }
  if (action == "GetParameter") {
    ASSIGN_OR_RETURN(Parameter p, parameters_.Get(scope, json_fields::Str(input, "Name"), DecryptionOf(input)));
    return json::serialize(json::object{{"Parameter", ParameterJson(p)}});
  }
  if (action == "GetParameters") {
    ASSIGN_OR_RETURN(GetManyResult got,
                     parameters_.GetMany(scope, json_fields::Strings(input, "Names"), DecryptionOf(input)));
    json::array found, invalid;
    for (const Parameter& p : got.found) found.push_back(ParameterJson(p));
    for (const auto& n : got.invalid) invalid.emplace_back(n);
    return json::serialize(json::object{{"Parameters", std::move(found)}, {"InvalidParameters", std::move(invalid)}});
  }
  if (action == "DeleteParameter") {
    RETURN_IF_ERROR(parameters_.Delete(scope, json_fields::Str(input, "Name")));
    return std::string("{}");
  }
  if (action == "DeleteParameters") {
    ASSIGN_OR_RETURN(DeleteManyResult got, parameters_.DeleteMany(scope, json_fields::Strings(input, "Names")));
    json::array deleted, invalid;
    for (const auto& n : got.deleted) deleted.emplace_back(n);
    for (const auto& n : got.invalid) invalid.emplace_back(n);
    return json::serialize(
        json::object{{"DeletedParameters", std::move(deleted)}, {"InvalidParameters", std::move(invalid)}});
  }
  if (action == "GetParameterHistory") {
    ASSIGN_OR_RETURN(auto after, page_after());
    const size_t max = static_cast<size_t>(json_fields::Int(input, "MaxResults").value_or(50));
    ASSIGN_OR_RETURN(Page page,
                     parameters_.History(scope, json_fields::Str(input, "Name"), DecryptionOf(input), max, after));
    json::array items;
    for (const Parameter& p : page.items) items.push_back(HistoryJson(p));
    json::object out{{"Parameters", std::move(items)}};
    token_of(page, out);
    return json::serialize(out);
  }
  if (action == "GetParametersByPath") {
    ASSIGN_OR_RETURN(auto after, page_after());
    const size_t max = static_cast<size_t>(json_fields::Int(input, "MaxResults").value_or(10));
    ASSIGN_OR_RETURN(Page page, parameters_.ByPath(scope, json_fields::Str(input, "Path"),
                                                   json_fields::Bool(input, "Recursive").value_or(false),
                                                   FiltersOf(input), DecryptionOf(input), max, after));
    json::array items;
    for (const Parameter& p : page.items) items.push_back(ParameterJson(p));
    json::object out{{"Parameters", std::move(items)}};
    token_of(page, out);
    return json::serialize(out);
  }
  if (action == "DescribeParameters") {
    if (input.contains("Filters"))
      return Validation("The Filters parameter is deprecated and not supported by this server: use ParameterFilters.");
    ASSIGN_OR_RETURN(auto after, page_after());
    const size_t max = static_cast<size_t>(json_fields::Int(input, "MaxResults").value_or(50));
    ASSIGN_OR_RETURN(Page page, parameters_.Describe(scope, FiltersOf(input), max, after));
    json::array items;
    for (const Parameter& p : page.items) items.push_back(MetadataJson(p));
    json::object out{{"Parameters", std::move(items)}};
    token_of(page, out);
    return json::serialize(out);
  }
  if (action == "LabelParameterVersion") {
    ASSIGN_OR_RETURN(LabelResult got,
                     parameters_.Label(scope, json_fields::Str(input, "Name"),
                                       json_fields::Int(input, "ParameterVersion"), json_fields::Strings(input, "Labels")));
    json::array invalid;
    for (const auto& l : got.invalid_labels) invalid.emplace_back(l);
    return json::serialize(json::object{{"InvalidLabels", std::move(invalid)}, {"ParameterVersion", got.version}});
  }
  if (action == "UnlabelParameterVersion") {
    ASSIGN_OR_RETURN(UnlabelResult got,
                     parameters_.Unlabel(scope, json_fields::Str(input, "Name"),
                                         json_fields::Int(input, "ParameterVersion").value_or(0),
                                         json_fields::Strings(input, "Labels")));
    json::array removed, invalid;
    for (const auto& l : got.removed) removed.emplace_back(l);
    for (const auto& l : got.invalid) invalid.emplace_back(l);
    return json::serialize(json::object{{"RemovedLabels", std::move(removed)}, {"InvalidLabels", std::move(invalid)}});
  }
  // The tag actions: only parameters carry tags here.
  if (json_fields::StrView(input, "ResourceType") != "Parameter")
    return InvalidArgument("The resource type is not valid for this operation.", Error::kInvalidResourceType);
  const std::string id = json_fields::Str(input, "ResourceId");
  if (action == "AddTagsToResource") {
    RETURN_IF_ERROR(parameters_.AddTags(scope, id, TagsOf(input, "Tags")));
    return std::string("{}");
  }
  if (action == "RemoveTagsFromResource") {
    RETURN_IF_ERROR(parameters_.RemoveTags(scope, id, json_fields::Strings(input, "TagKeys")));
    return std::string("{}");
  }
  ASSIGN_OR_RETURN(std::vector<Tag> tags, parameters_.ListTags(scope, id));
  json::array list;
  for (const Tag& t : tags) list.push_back(json::object{{"Key", t.key}, {"Value", t.value}});
  return json::serialize(json::object{{"TagList", std::move(list)}});
}

StatusOr<std::unique_ptr<SsmModule>> SsmModule::Open(store::Store& store, kms::KeyRing& keys,
                                                     const std::string& token_key) {
  std::unique_ptr<SsmModule> m(new SsmModule());
  m->parameters_ = std::make_unique<Parameters>(store, keys, SystemClock::Get());
  m->service_ = std::make_unique<SsmService>(*m->parameters_, aws::TokenCodec(token_key));
  return m;
}

}  // namespace paddock::ssm::api
