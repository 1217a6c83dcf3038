#include "secretsmanager/api/secrets_manager_service.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/model.h"
#include "common/json_fields.h"
#include "secretsmanager/api/models/secretsmanager_model.h"

namespace paddock::secretsmanager::api {
namespace {

namespace json = boost::json;
using json_fields::Bool;
using json_fields::Int;
using json_fields::OptStr;
using json_fields::Str;

constexpr std::string_view kActions[] = {
    "CreateSecret", "GetSecretValue",       "PutSecretValue",           "DescribeSecret",
    "ListSecrets",  "ListSecretVersionIds", "UpdateSecret",             "UpdateSecretVersionStage",
    "DeleteSecret", "RestoreSecret",        "TagResource",              "UntagResource",
};

constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Standard base64 with padding: the JSON protocols' blob encoding.
std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n =
        static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 | static_cast<uint8_t>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kBase64[(n >> s) & 63]);
  }
  if (i < in.size()) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    out.push_back(kBase64[(n >> 18) & 63]);
    out.push_back(kBase64[(n >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kBase64[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      uint32_t v = 0;
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
      } else {
        if (pad) return std::nullopt;
        size_t p = kBase64.find(c);
        if (p == std::string_view::npos) return std::nullopt;
        v = static_cast<uint32_t>(p);
      }
      n = n << 6 | v;
    }
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFF));
  }
  return out;
}

Status Param(std::string message) { return InvalidArgument(std::move(message), Error::kInvalidParameter); }

double Seconds(TimePoint t) { return static_cast<double>(EpochMillis(t)) / 1000.0; }

// SecretString / SecretBinary of a write, at most one of them.
StatusOr<std::optional<SecretValue>> ValueOf(const json::object& in) {
  std::optional<std::string> text = OptStr(in, "SecretString");
  std::optional<std::string> binary = OptStr(in, "SecretBinary");
  if (text && binary)
    return Param("You can't specify both a binary secret value and a string secret value in the same secret.");
  if (text) return std::optional<SecretValue>(SecretValue::String(std::move(*text)));
  if (binary) {
    std::optional<std::string> bytes = Base64Decode(*binary);
    if (!bytes) return Param("Invalid base64 in SecretBinary.");
    return std::optional<SecretValue>(SecretValue::Binary(std::move(*bytes)));
  }
  return std::optional<SecretValue>();
}

std::vector<Tag> TagsOf(const json::object& in) {
  std::vector<Tag> tags;
  for (const json::object* t : json_fields::Objects(in, "Tags")) tags.push_back(Tag{Str(*t, "Key"), Str(*t, "Value")});
  return tags;
}

json::array TagsJson(const std::vector<Tag>& tags) {
  json::array a;
  for (const Tag& t : tags) a.push_back(json::object{{"Key", t.key}, {"Value", t.value}});
  return a;
}

json::array StringsJson(const std::vector<std::string>& v) {
  json::array a;
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

json::object WriteJson(const WriteResult& r, bool with_stages) {
  json::object o{{"ARN", r.arn}, {"Name", r.name}};
  if (r.version_id) o["VersionId"] = *r.version_id;
  if (with_stages && r.version_id) o["VersionStages"] = StringsJson(r.stages);
  return o;
}

// DescribeSecret's output, and (list = true) ListSecrets' SecretListEntry.
json::object SecretJson(const SecretInfo& s, bool list) {
  json::object o{{"ARN", s.arn}, {"Name", s.name}, {"LastChangedDate", Seconds(s.last_changed)},
                 {"CreatedDate", Seconds(s.created)}};
  if (!s.description.empty()) o["Description"] = s.description;
  if (!s.key_id.empty()) o["KmsKeyId"] = s.key_id;
  if (s.deleted) o["DeletedDate"] = Seconds(*s.deleted);
  if (!s.tags.empty()) o["Tags"] = TagsJson(s.tags);
  json::object stages;
  for (const VersionInfo& v : s.versions)
    if (!v.stages.empty()) stages[v.id] = StringsJson(v.stages);
  o[list ? "SecretVersionsToStages" : "VersionIdsToStages"] = std::move(stages);
  return o;
}

std::string SecretIdOf(const json::object& in) { return Str(in, "SecretId"); }

// The ARN a policy names for `secret_id` when no secret answers to it.
std::string AssumedArn(const Scope& scope, std::string_view secret_id) {
  if (secret_id.starts_with("arn:")) return std::string(secret_id);
  return fmt::format("arn:aws:secretsmanager:{}:{}:secret:{}", scope.region.str(), scope.account.str(), secret_id);
}

}  // namespace

const aws::ServiceModel& SecretsManagerService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(SecretsManagerModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool SecretsManagerService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> SecretsManagerService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

std::optional<aws::AwsError> SecretsManagerService::ErrorFor(const Status& status) const {
  std::optional<Error> e = status.detail().As<Error>();
  if (!e) return std::nullopt;
  switch (*e) {
    case Error::kResourceNotFound: return aws::AwsError{"ResourceNotFoundException", 400};
    case Error::kResourceExists: return aws::AwsError{"ResourceExistsException", 400};
    case Error::kInvalidParameter: return aws::AwsError{"InvalidParameterException", 400};
    case Error::kInvalidRequest: return aws::AwsError{"InvalidRequestException", 400};
    case Error::kLimitExceeded: return aws::AwsError{"LimitExceededException", 400};
    case Error::kValidation: return aws::AwsError{"ValidationException", 400};
    case Error::kDecryptionFailure: return aws::AwsError{"DecryptionFailure", 400};
    case Error::kEncryptionFailure: return aws::AwsError{"EncryptionFailure", 400};
    case Error::kInvalidNextToken: return aws::AwsError{"InvalidNextTokenException", 400};
  }
  return std::nullopt;
}

std::vector<aws::AuthRequest> SecretsManagerService::AuthorizationFor(const aws::CallContext& ctx,
                                                                      const json::object& input) const {
  aws::AuthRequest q;
  q.action = fmt::format("secretsmanager:{}", ctx.action);
  const Scope scope = ctx.scope;
  if (ctx.action == "ListSecrets") {
    q.resource.assign(1, '*');  // not = "*": g++ 12 warns a false -Wrestrict on it
  } else if (ctx.action == "CreateSecret") {
    const std::string name = Str(input, "Name");
    q.resource = fmt::format("arn:aws:secretsmanager:{}:{}:secret:{}-??????", scope.region.str(),
                             scope.account.str(), name);
    q.context.emplace_back("secretsmanager:Name", name);
  } else {
    const std::string id = SecretIdOf(input);
    auto arn = secrets_.ArnOf(scope, id);
    q.resource = arn.ok() && *arn ? **arn : AssumedArn(scope, id);
    q.context.emplace_back("secretsmanager:SecretId", id);
    q.resource_tags = [this, scope, id]() -> StatusOr<std::vector<std::pair<std::string, std::string>>> {
      ASSIGN_OR_RETURN(std::vector<Tag> tags, secrets_.TagsOf(scope, id));
      std::vector<std::pair<std::string, std::string>> out;
      for (Tag& t : tags) out.emplace_back(std::move(t.key), std::move(t.value));
      return out;
    };
  }
  if (ctx.action == "CreateSecret" || ctx.action == "TagResource")
    for (const Tag& t : TagsOf(input)) {
      q.context.emplace_back(fmt::format("aws:RequestTag/{}", t.key), t.value);
      q.context.emplace_back("aws:TagKeys", t.key);
    }
  if (ctx.action == "UntagResource")
    for (const std::string& k : json_fields::Strings(input, "TagKeys")) q.context.emplace_back("aws:TagKeys", k);
  return {std::move(q)};
}

StatusOr<std::string> SecretsManagerService::Call(const aws::CallContext& ctx, json::object& in) {
  const Scope& scope = ctx.scope;
  const std::string& a = ctx.action;
  if (a == "CreateSecret") {
    // Paddock is one region's store: a replica would be a second, unsynchronised copy.
    if (in.contains("AddReplicaRegions"))
      return Param("Paddock does not replicate secrets: AddReplicaRegions is not supported.");
    ASSIGN_OR_RETURN(std::optional<SecretValue> value, ValueOf(in));
    CreateRequest r{Str(in, "Name"), std::move(value), OptStr(in, "KmsKeyId"), OptStr(in, "Description"),
                    TagsOf(in), OptStr(in, "ClientRequestToken")};
    ASSIGN_OR_RETURN(WriteResult w, secrets_.Create(scope, r));
    return json::serialize(WriteJson(w, false));
  }
  if (a == "GetSecretValue") {
    ASSIGN_OR_RETURN(SecretVersion v,
                     secrets_.GetValue(scope, SecretIdOf(in), {OptStr(in, "VersionId"), OptStr(in, "VersionStage")}));
    json::object o{{"ARN", v.arn}, {"Name", v.name}, {"VersionId", v.version_id},
                   {"VersionStages", StringsJson(v.stages)}, {"CreatedDate", Seconds(v.created)}};
    if (v.value.kind == SecretValue::Kind::kBinary) {
      o["SecretBinary"] = Base64Encode(v.value.bytes);
    } else {
      o["SecretString"] = v.value.bytes;
    }
    return json::serialize(o);
  }
  if (a == "PutSecretValue") {
    ASSIGN_OR_RETURN(std::optional<SecretValue> value, ValueOf(in));
    if (!value) return Param("You must provide either SecretString or SecretBinary.");
    bool has_stages = false;
    std::vector<std::string> stages = json_fields::Strings(in, "VersionStages", &has_stages);
    PutRequest r{SecretIdOf(in), std::move(*value), OptStr(in, "ClientRequestToken"),
                 has_stages ? std::optional(std::move(stages)) : std::nullopt};
    ASSIGN_OR_RETURN(WriteResult w, secrets_.Put(scope, r));
    return json::serialize(WriteJson(w, true));
  }
  if (a == "UpdateSecret") {
    ASSIGN_OR_RETURN(std::optional<SecretValue> value, ValueOf(in));
    UpdateRequest r{SecretIdOf(in), OptStr(in, "Description"), OptStr(in, "KmsKeyId"), std::move(value),
                    OptStr(in, "ClientRequestToken")};
    ASSIGN_OR_RETURN(WriteResult w, secrets_.Update(scope, r));
    return json::serialize(WriteJson(w, false));
  }
  if (a == "UpdateSecretVersionStage") {
    StageMove m{SecretIdOf(in), Str(in, "VersionStage"), OptStr(in, "RemoveFromVersionId"),
                OptStr(in, "MoveToVersionId")};
    ASSIGN_OR_RETURN(WriteResult w, secrets_.UpdateStage(scope, m));
    return json::serialize(WriteJson(w, false));
  }
  if (a == "DescribeSecret") {
    ASSIGN_OR_RETURN(SecretInfo s, secrets_.Describe(scope, SecretIdOf(in)));
    return json::serialize(SecretJson(s, false));
  }
  if (a == "ListSecrets") {
    ListRequest r;
    for (const json::object* f : json_fields::Objects(in, "Filters"))
      r.filters.push_back(ListFilter{Str(*f, "Key"), json_fields::Strings(*f, "Values")});
    r.include_planned_deletion = Bool(in, "IncludePlannedDeletion").value_or(false);
    r.descending = Str(in, "SortOrder") == "desc";
    r.max_results = static_cast<size_t>(Int(in, "MaxResults").value_or(100));
    // The token is bound to the list it pages: the scope, the filters and the order.
    const std::string context = fmt::format("ListSecrets|{}|{}|{}|{}|{}", scope.account.str(), scope.region.str(),
                                            json::serialize(in.contains("Filters") ? in.at("Filters") : json::value()),
                                            r.include_planned_deletion, r.descending);
    if (std::optional<std::string> token = OptStr(in, "NextToken")) {
      auto position = tokens_.Decode(context, *token);
      if (!position.ok()) return InvalidArgument("The NextToken value is invalid.", Error::kInvalidNextToken);
      r.after = *position;
    }
    ASSIGN_OR_RETURN(SecretPage page, secrets_.List(scope, r));
    json::array list;
    for (const SecretInfo& s : page.items) list.push_back(SecretJson(s, true));
    json::object o{{"SecretList", std::move(list)}};
    if (page.next) o["NextToken"] = tokens_.Encode(context, *page.next);
    return json::serialize(o);
  }
  if (a == "ListSecretVersionIds") {
    const std::string id = SecretIdOf(in);
    const bool deprecated = Bool(in, "IncludeDeprecated").value_or(false);
    const std::string context =
        fmt::format("ListSecretVersionIds|{}|{}|{}|{}", scope.account.str(), scope.region.str(), id, deprecated);
    std::optional<std::string> after;
    if (std::optional<std::string> token = OptStr(in, "NextToken")) {
      auto position = tokens_.Decode(context, *token);
      if (!position.ok()) return InvalidArgument("The NextToken value is invalid.", Error::kInvalidNextToken);
      after = *position;
    }
    ASSIGN_OR_RETURN(VersionPage page,
                     secrets_.ListVersions(scope, id, deprecated,
                                           static_cast<size_t>(Int(in, "MaxResults").value_or(100)), after));
    json::array versions;
    for (const VersionInfo& v : page.items)
      versions.push_back(json::object{{"VersionId", v.id},
                                      {"VersionStages", StringsJson(v.stages)},
                                      {"CreatedDate", Seconds(v.created)},
                                      {"KmsKeyIds", json::array{json::string(v.key_id)}}});
    json::object o{{"Versions", std::move(versions)}, {"ARN", page.arn}, {"Name", page.name}};
    if (page.next) o["NextToken"] = tokens_.Encode(context, *page.next);
    return json::serialize(o);
  }
  if (a == "DeleteSecret") {
    DeleteRequest r{SecretIdOf(in), Int(in, "RecoveryWindowInDays"),
                    Bool(in, "ForceDeleteWithoutRecovery").value_or(false)};
    ASSIGN_OR_RETURN(DeleteResult d, secrets_.Delete(scope, r));
    return json::serialize(json::object{{"ARN", d.arn}, {"Name", d.name}, {"DeletionDate", Seconds(d.deletion_date)}});
  }
  if (a == "RestoreSecret") {
    ASSIGN_OR_RETURN(WriteResult w, secrets_.Restore(scope, SecretIdOf(in)));
    return json::serialize(WriteJson(w, false));
  }
  if (a == "TagResource") {
    RETURN_IF_ERROR(secrets_.TagResource(scope, SecretIdOf(in), TagsOf(in)));
    return std::string("{}");
  }
  if (a == "UntagResource") {
    RETURN_IF_ERROR(secrets_.UntagResource(scope, SecretIdOf(in), json_fields::Strings(in, "TagKeys")));
    return std::string("{}");
  }
  return Internal(fmt::format("{} is not implemented", a));  // Implements() admits none other
}

StatusOr<std::unique_ptr<SecretsManagerModule>> SecretsManagerModule::Open(store::Store& store, kms::KeyRing& keys,
                                                                          const std::string& token_key) {
  std::unique_ptr<SecretsManagerModule> m(new SecretsManagerModule());
  m->secrets_ = std::make_unique<Secrets>(store, keys, SystemClock::Get());
  m->service_ = std::make_unique<SecretsManagerService>(*m->secrets_, aws::TokenCodec(token_key));
  return m;
}

}  // namespace paddock::secretsmanager::api
