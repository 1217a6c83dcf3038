#include "secretsmanager/secrets.h"

#include <algorithm>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "common/json_fields.h"
#include "store/key.h"

namespace paddock::secretsmanager {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"secretsmanager", [](int code) -> std::string_view {
    switch (static_cast<Error>(code)) {
      case Error::kResourceNotFound: return "ResourceNotFound";
      case Error::kResourceExists: return "ResourceExists";
      case Error::kInvalidParameter: return "InvalidParameter";
      case Error::kInvalidRequest: return "InvalidRequest";
      case Error::kLimitExceeded: return "LimitExceeded";
      case Error::kValidation: return "Validation";
      case Error::kDecryptionFailure: return "DecryptionFailure";
      case Error::kEncryptionFailure: return "EncryptionFailure";
      case Error::kInvalidNextToken: return "InvalidNextToken";
    }
    return "Unknown";
  }};
  return kDomain;
}

namespace {

namespace json = boost::json;
using store::Key;
using store::KeyReader;
using store::PrefixRange;
using store::Range;
using store::ReadTxn;
using store::Row;
using store::WriteTxn;

constexpr std::string_view kSecrets = "sm_secrets";
constexpr std::string_view kVersions = "sm_secret_versions";
constexpr std::string_view kDeletions = "sm_deletions";

// AWS's texts (docs/contracts/secretsmanager.md names each one's source).
constexpr std::string_view kNotFoundText = "Secrets Manager can't find the specified secret.";
constexpr std::string_view kMarkedText =
    "You can't perform this operation on the secret because it was marked for deletion.";
constexpr std::string_view kModifyVersionText =
    "You can't modify an existing version, you can only create a new version.";
constexpr std::string_view kEncryptionText =
    "Secrets Manager can't encrypt the protected secret text using the provided KMS key. Check that the KMS key "
    "is available, enabled, and not in an invalid state.";
constexpr std::string_view kDecryptionText =
    "Secrets Manager can't decrypt the protected secret text using the provided KMS key.";

Status SecretNotFound() { return NotFound(std::string(kNotFoundText), Error::kResourceNotFound); }
Status Marked() { return FailedPrecondition(std::string(kMarkedText), Error::kInvalidRequest); }
Status Param(std::string message) { return InvalidArgument(std::move(message), Error::kInvalidParameter); }

// The secret record (sm_secrets), decoded.
struct Record {
  struct Version {
    std::string id;
    std::vector<std::string> stages;
    int64_t created = 0;
    std::string key_id;
  };
  std::string arn;
  std::string description;
  std::string key_id;  // empty: the default key
  int64_t created = 0;
  int64_t last_changed = 0;
  std::optional<int64_t> deleted;
  std::optional<int64_t> deletion;
  std::vector<Tag> tags;
  std::vector<Version> versions;  // oldest first

  Version* Find(std::string_view id) {
    for (Version& v : versions)
      if (v.id == id) return &v;
    return nullptr;
  }
  Version* Holder(std::string_view stage) {
    for (Version& v : versions)
      if (std::find(v.stages.begin(), v.stages.end(), stage) != v.stages.end()) return &v;
    return nullptr;
  }
  std::string EffectiveKeyId() const { return key_id.empty() ? std::string(kDefaultKeyId) : key_id; }
};

json::array StringsJson(const std::vector<std::string>& v) {
  json::array a;
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

std::vector<std::string> StringsOf(const json::value& v) {
  std::vector<std::string> out;
  for (const json::value& s : v.as_array()) out.emplace_back(s.as_string());
  return out;
}

std::string EncodeRecord(const Record& r) {
  json::object o{{"arn", r.arn}, {"description", r.description}, {"keyId", r.key_id},
                 {"created", r.created}, {"lastChanged", r.last_changed}};
  if (r.deleted) o["deleted"] = *r.deleted;
  if (r.deletion) o["deletion"] = *r.deletion;
  json::array tags;
  for (const Tag& t : r.tags) tags.emplace_back(json::array{json::string(t.key), json::string(t.value)});
  o["tags"] = std::move(tags);
  json::array versions;
  for (const Record::Version& v : r.versions)
    versions.emplace_back(json::object{
        {"id", v.id}, {"stages", StringsJson(v.stages)}, {"created", v.created}, {"keyId", v.key_id}});
  o["versions"] = std::move(versions);
  return json::serialize(o);
}

StatusOr<Record> DecodeRecord(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("secretsmanager: a secret record does not parse");
  const json::object& o = v.as_object();
  Record r;
  try {
    r.arn = o.at("arn").as_string();
    r.description = o.at("description").as_string();
    r.key_id = o.at("keyId").as_string();
    r.created = o.at("created").to_number<int64_t>();
    r.last_changed = o.at("lastChanged").to_number<int64_t>();
    if (o.contains("deleted")) r.deleted = o.at("deleted").to_number<int64_t>();
    if (o.contains("deletion")) r.deletion = o.at("deletion").to_number<int64_t>();
    for (const json::value& t : o.at("tags").as_array())
      r.tags.push_back(Tag{std::string(t.as_array().at(0).as_string()), std::string(t.as_array().at(1).as_string())});
    for (const json::value& jv : o.at("versions").as_array()) {
      const json::object& vo = jv.as_object();
      r.versions.push_back(Record::Version{std::string(vo.at("id").as_string()), StringsOf(vo.at("stages")),
                                           vo.at("created").to_number<int64_t>(),
                                           std::string(vo.at("keyId").as_string())});
    }
  } catch (const std::exception&) {
    return DataLoss("secretsmanager: a secret record is malformed");
  }
  return r;
}

std::string SecretKey(const Scope& scope, std::string_view name) {
  return Key().Str(scope.account.str()).Str(scope.region.str()).Str(name).Done();
}
std::string VersionKey(const Scope& scope, std::string_view name, std::string_view id) {
  return Key().Str(scope.account.str()).Str(scope.region.str()).Str(name).Str(id).Done();
}
std::string VersionsPrefix(const Scope& scope, std::string_view name) { return SecretKey(scope, name); }
std::string DeletionKey(int64_t ms, const Scope& scope, std::string_view name) {
  return Key().U64(static_cast<uint64_t>(ms)).Str(scope.account.str()).Str(scope.region.str()).Str(name).Done();
}

// What a version's seal and MAC are bound to: the account, region, the secret's ARN (which a
// recreated secret of the same name does not share) and the version id.
kms::Binding BindingFor(const Scope& scope, std::string_view arn, std::string_view version_id) {
  return kms::Binding{scope.account.str(), scope.region.str(), fmt::format("{}|{}", arn, version_id)};
}

// The MAC's input: the kind, so a string and a binary of the same bytes differ.
std::string MacInput(const SecretValue& v) {
  return (v.kind == SecretValue::Kind::kBinary ? "b:" : "s:") + v.bytes;
}

struct Found {
  std::string name;
  Record record;
};

// The secret `id` names in `scope`: a name, the full ARN, or a partial ARN (no "-XXXXXX").
// An ARN of another account or region names nothing here.
StatusOr<std::optional<Found>> Lookup(ReadTxn& txn, const Scope& scope, std::string_view id) {
  auto load = [&](std::string_view name) -> StatusOr<std::optional<Found>> {
    ASSIGN_OR_RETURN(auto row, txn.Get(kSecrets, SecretKey(scope, name)));
    if (!row) return std::optional<Found>();
    ASSIGN_OR_RETURN(Record r, DecodeRecord(*row));
    return std::optional<Found>(Found{std::string(name), std::move(r)});
  };
  if (!id.starts_with("arn:")) return load(id);
  const std::string prefix =
      fmt::format("arn:aws:secretsmanager:{}:{}:secret:", scope.region.str(), scope.account.str());
  if (!id.starts_with(prefix)) return std::optional<Found>();
  std::string_view rest = id.substr(prefix.size());
  if (rest.size() > 7 && rest[rest.size() - 7] == '-') {
    ASSIGN_OR_RETURN(auto full, load(rest.substr(0, rest.size() - 7)));
    if (full && full->record.arn == id) return full;
  }
  return load(rest);  // a partial ARN
}

StatusOr<Found> Require(ReadTxn& txn, const Scope& scope, std::string_view id) {
  ASSIGN_OR_RETURN(auto found, Lookup(txn, scope, id));
  if (!found) return SecretNotFound();
  return std::move(*found);
}

// Names: ASCII letters, digits and /_+=.@- (AWS's set).
Status ValidateName(std::string_view name) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("/_+=.@-").find(c) != std::string_view::npos;
  });
  if (!ok)
    return InvalidArgument(
        "Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@!",
        Error::kValidation);
  return OkStatus();
}

// A key id this scope may use: any well-formed label, but a key ARN only of this account and
// region (there is no KMS here to grant another account's key).
Status ValidateKeyId(const Scope& scope, std::string_view key_id) {
  bool ok = kms::IsValidKeyId(key_id);
  if (ok && key_id.starts_with("arn:"))
    ok = key_id.starts_with(fmt::format("arn:aws:kms:{}:{}:", scope.region.str(), scope.account.str()));
  if (!ok) return FailedPrecondition(std::string(kEncryptionText), Error::kEncryptionFailure);
  return OkStatus();
}

Status ValidateTags(const std::vector<Tag>& tags) {
  for (const Tag& t : tags)
    if (t.key.starts_with("aws:"))
      return Param(fmt::format("Invalid tag key: {}. Tag keys can't start with aws:.", t.key));
  return OkStatus();
}

Status MergeTags(std::vector<Tag>& into, const std::vector<Tag>& tags) {
  RETURN_IF_ERROR(ValidateTags(tags));
  for (const Tag& t : tags) {
    auto it = std::find_if(into.begin(), into.end(), [&](const Tag& x) { return x.key == t.key; });
    if (it != into.end()) {
      it->value = t.value;
    } else {
      into.push_back(t);
    }
  }
  if (into.size() > Secrets::kMaxTags)
    return InvalidArgument(fmt::format("A secret can have at most {} tags.", Secrets::kMaxTags),
                           Error::kLimitExceeded);
  return OkStatus();
}

void RemoveStage(Record& r, std::string_view stage) {
  for (Record::Version& v : r.versions) std::erase(v.stages, std::string(stage));
}

// Moves `stage` onto version `to`; moving AWSCURRENT leaves AWSPREVIOUS on its old holder.
void MoveStage(Record& r, std::string_view stage, std::string_view to) {
  Record::Version* old = r.Holder(stage);
  std::string old_id = old ? old->id : "";
  RemoveStage(r, stage);
  if (stage == kCurrent && !old_id.empty() && old_id != to) {
    RemoveStage(r, kPrevious);
    r.Find(old_id)->stages.emplace_back(kPrevious);
  }
  Record::Version* target = r.Find(to);
  if (std::find(target->stages.begin(), target->stages.end(), stage) == target->stages.end())
    target->stages.emplace_back(stage);
}

// The outcome of writing a value under a token: a repeat of a version with the same value (no
// write), or a new version.
enum class Repeat { kNo, kYes };

// Writes `value` as a new version of `found` (stages moved, deprecated versions beyond
// kMaxVersions pruned), or recognises a repeat of an existing version id. Leaves the record for
// the caller to store.
StatusOr<Repeat> AddVersion(WriteTxn& txn, const kms::KeyRing& keys, const Scope& scope, Found& found,
                            const SecretValue& value, const std::optional<std::string>& token,
                            const std::optional<std::vector<std::string>>& stages, int64_t now, std::string& id) {
  Record& r = found.record;
  id = token ? *token : RandomUuid();
  const kms::Binding at = BindingFor(scope, r.arn, id);
  if (Record::Version* existing = r.Find(id)) {
    ASSIGN_OR_RETURN(auto row, txn.Get(kVersions, VersionKey(scope, found.name, id)));
    if (!row) return DataLoss("secretsmanager: a version's value is missing");
    (void)existing;
    boost::system::error_code ec;
    json::value stored = json::parse(*row, ec);
    if (ec || !stored.is_object() || !stored.as_object().contains("mac"))
      return DataLoss("secretsmanager: a version's value does not parse");
    auto mac = HexDecode(json_fields::StrView(stored.as_object(), "mac"));
    if (!mac.ok() || !keys.MacMatches(at, MacInput(value), *mac))
      return AlreadyExists(std::string(kModifyVersionText), Error::kResourceExists);
    return Repeat::kYes;
  }
  std::vector<std::string> wanted = stages ? *stages : std::vector<std::string>{std::string(kCurrent)};
  // A secret's first version is AWSCURRENT whatever else it is given.
  if (r.versions.empty() && std::find(wanted.begin(), wanted.end(), kCurrent) == wanted.end())
    wanted.emplace_back(kCurrent);
  if (wanted.size() > Secrets::kMaxStagesPerVersion)
    return InvalidArgument(fmt::format("A version can have at most {} staging labels.", Secrets::kMaxStagesPerVersion),
                           Error::kLimitExceeded);
  const std::string key_id = r.EffectiveKeyId();
  auto blob = keys.Encrypt(at, key_id, value.bytes);
  if (!blob.ok()) return FailedPrecondition(std::string(kEncryptionText), Error::kEncryptionFailure);
  ASSIGN_OR_RETURN(std::string mac, keys.Mac(at, MacInput(value)));
  json::object row{{"blob", Base64UrlEncode(*blob)},
                   {"binary", value.kind == SecretValue::Kind::kBinary},
                   {"mac", HexEncode(mac)}};
  RETURN_IF_ERROR(txn.Put(kVersions, VersionKey(scope, found.name, id), json::serialize(row)));
  r.versions.push_back(Record::Version{id, {}, now, r.key_id});
  for (const std::string& stage : wanted) MoveStage(r, stage, id);
  // Versions without a stage are deprecated; past kMaxVersions the oldest of them go.
  while (r.versions.size() > Secrets::kMaxVersions) {
    auto it = std::find_if(r.versions.begin(), r.versions.end(), [](const auto& v) { return v.stages.empty(); });
    if (it == r.versions.end()) break;
    RETURN_IF_ERROR(txn.Delete(kVersions, VersionKey(scope, found.name, it->id)));
    r.versions.erase(it);
  }
  r.last_changed = now;
  return Repeat::kNo;
}

std::vector<std::string> StagesOf(Record& r, std::string_view id) {
  Record::Version* v = r.Find(id);
  return v ? v->stages : std::vector<std::string>{};
}

SecretInfo InfoOf(const std::string& name, const Record& r) {
  SecretInfo info;
  info.arn = r.arn;
  info.name = name;
  info.description = r.description;
  info.key_id = r.key_id;
  info.created = FromEpochMillis(r.created);
  info.last_changed = FromEpochMillis(r.last_changed);
  if (r.deleted) info.deleted = FromEpochMillis(*r.deleted);
  if (r.deletion) info.deletion_date = FromEpochMillis(*r.deletion);
  info.tags = r.tags;
  for (const Record::Version& v : r.versions)
    info.versions.push_back(VersionInfo{v.id, v.stages, FromEpochMillis(v.created),
                                        v.key_id.empty() ? std::string(kDefaultKeyId) : v.key_id});
  return info;
}

// ListSecrets' filters: each value a prefix (a leading '!' negates it); a filter passes when one
// of its values does, a secret when every filter passes.
bool Passes(const std::string& name, const Record& r, const std::vector<ListFilter>& filters) {
  auto prefix_of = [](std::string_view s, std::string_view p) { return s.starts_with(p); };
  for (const ListFilter& f : filters) {
    bool any = false;
    for (std::string_view value : f.values) {
      const bool negate = value.starts_with('!');
      if (negate) value.remove_prefix(1);
      bool hit = false;
      if (f.key == "name" || f.key == "all") hit = hit || prefix_of(name, value);
      if (f.key == "description" || f.key == "all") hit = hit || prefix_of(r.description, value);
      for (const Tag& t : r.tags) {
        if (f.key == "tag-key" || f.key == "all") hit = hit || prefix_of(t.key, value);
        if (f.key == "tag-value" || f.key == "all") hit = hit || prefix_of(t.value, value);
      }
      if (hit != negate) any = true;
    }
    if (!any) return false;
  }
  return true;
}

std::string NameOfKey(std::string_view key) {
  KeyReader reader(key);
  (void)reader.Str();
  (void)reader.Str();
  auto name = reader.Str();
  return name.ok() ? *name : std::string();
}

}  // namespace

StatusOr<WriteResult> Secrets::Create(const Scope& scope, const CreateRequest& request) {
  RETURN_IF_ERROR(ValidateName(request.name));
  if (request.key_id) RETURN_IF_ERROR(ValidateKeyId(scope, *request.key_id));
  RETURN_IF_ERROR(ValidateTags(request.tags));
  if (request.tags.size() > kMaxTags)
    return InvalidArgument(fmt::format("A secret can have at most {} tags.", kMaxTags), Error::kLimitExceeded);
  const int64_t now = EpochMillis(clock_.Now());
  WriteResult result;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    result = WriteResult{};
    ASSIGN_OR_RETURN(auto existing, Lookup(txn, scope, request.name));
    if (existing) {
      if (existing->record.deleted)
        return FailedPrecondition(
            "You can't create this secret because a secret with this name is already scheduled for deletion.",
            Error::kInvalidRequest);
      // A retried CreateSecret: the same token and value answer the first call.
      if (request.value && request.token) {
        if (existing->record.Find(*request.token)) {
          std::string id;
          ASSIGN_OR_RETURN(Repeat repeat, AddVersion(txn, keys_, scope, *existing, *request.value, request.token,
                                                     std::nullopt, now, id));
          (void)repeat;  // an existing id is always a repeat (or kResourceExists)
          result = WriteResult{existing->record.arn, existing->name, id, StagesOf(existing->record, id)};
          return OkStatus();
        }
      }
      return AlreadyExists(fmt::format("The operation failed because the secret {} already exists.", request.name),
                           Error::kResourceExists);
    }
    Found found;
    found.name = request.name;
    Record& r = found.record;
    r.arn = fmt::format("arn:aws:secretsmanager:{}:{}:secret:{}-{}", scope.region.str(), scope.account.str(),
                        request.name,
                        RandomString(6, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"));
    r.description = request.description.value_or("");
    r.key_id = request.key_id && *request.key_id != kDefaultKeyId ? *request.key_id : "";
    r.created = now;
    r.last_changed = now;
    r.tags = request.tags;
    result.arn = r.arn;
    result.name = request.name;
    if (request.value) {
      std::string id;
      ASSIGN_OR_RETURN(Repeat repeat, AddVersion(txn, keys_, scope, found, *request.value, request.token,
                                                 std::nullopt, now, id));
      (void)repeat;
      result.version_id = id;
      result.stages = StagesOf(r, id);
    }
    return txn.Put(kSecrets, SecretKey(scope, request.name), EncodeRecord(r));
  }));
  return result;
}

StatusOr<SecretVersion> Secrets::GetValue(const Scope& scope, std::string_view secret_id,
                                          const VersionSelector& which) {
  SecretVersion out;
  std::string blob;
  bool binary = false;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, secret_id));
    Record& r = found.record;
    if (r.deleted) return Marked();
    Record::Version* v = nullptr;
    if (which.version_id) {
      v = r.Find(*which.version_id);
      if (!v)
        return NotFound(
            fmt::format("Secrets Manager can't find the specified secret value for VersionId: {}", *which.version_id),
            Error::kResourceNotFound);
      if (which.stage && std::find(v->stages.begin(), v->stages.end(), *which.stage) == v->stages.end())
        return FailedPrecondition("You provided a VersionStage that is not associated to the provided VersionId.",
                                  Error::kInvalidRequest);
    } else {
      const std::string stage = which.stage.value_or(std::string(kCurrent));
      v = r.Holder(stage);
      if (!v)
        return NotFound(
            fmt::format("Secrets Manager can't find the specified secret value for staging label: {}", stage),
            Error::kResourceNotFound);
    }
    ASSIGN_OR_RETURN(auto row, txn.Get(kVersions, VersionKey(scope, found.name, v->id)));
    if (!row) return DataLoss("secretsmanager: a version's value is missing");
    boost::system::error_code ec;
    json::value stored = json::parse(*row, ec);
    if (ec || !stored.is_object()) return DataLoss("secretsmanager: a version's value does not parse");
    auto decoded = Base64UrlDecode(json_fields::StrView(stored.as_object(), "blob"));
    if (!decoded.ok()) return DataLoss("secretsmanager: a version's value is malformed");
    blob = std::move(*decoded);
    binary = json_fields::Bool(stored.as_object(), "binary").value_or(false);
    out = SecretVersion{r.arn, found.name, v->id, {}, v->stages, FromEpochMillis(v->created)};
    return OkStatus();
  }));
  auto plain = keys_.Decrypt(BindingFor(scope, out.arn, out.version_id), blob);
  if (!plain.ok()) return FailedPrecondition(std::string(kDecryptionText), Error::kDecryptionFailure);
  out.value = binary ? SecretValue::Binary(std::move(*plain)) : SecretValue::String(std::move(*plain));
  return out;
}

StatusOr<WriteResult> Secrets::Put(const Scope& scope, const PutRequest& request) {
  if (request.stages)
    for (const std::string& s : *request.stages)
      if (s.empty()) return Param("A staging label can't be empty.");
  const int64_t now = EpochMillis(clock_.Now());
  WriteResult result;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, request.secret_id));
    if (found.record.deleted) return Marked();
    std::string id;
    ASSIGN_OR_RETURN(Repeat repeat,
                     AddVersion(txn, keys_, scope, found, request.value, request.token, request.stages, now, id));
    result = WriteResult{found.record.arn, found.name, id, StagesOf(found.record, id)};
    if (repeat == Repeat::kYes) return OkStatus();
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(found.record));
  }));
  return result;
}

StatusOr<WriteResult> Secrets::Update(const Scope& scope, const UpdateRequest& request) {
  if (request.key_id) RETURN_IF_ERROR(ValidateKeyId(scope, *request.key_id));
  const int64_t now = EpochMillis(clock_.Now());
  WriteResult result;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, request.secret_id));
    Record& r = found.record;
    if (r.deleted) return Marked();
    if (request.description) r.description = *request.description;
    if (request.key_id) r.key_id = *request.key_id == kDefaultKeyId ? "" : *request.key_id;
    r.last_changed = now;
    result = WriteResult{r.arn, found.name, std::nullopt, {}};
    if (request.value) {
      std::string id;
      ASSIGN_OR_RETURN(Repeat repeat,
                       AddVersion(txn, keys_, scope, found, *request.value, request.token, std::nullopt, now, id));
      (void)repeat;
      result.version_id = id;
    }
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(r));
  }));
  return result;
}

StatusOr<WriteResult> Secrets::UpdateStage(const Scope& scope, const StageMove& move) {
  const int64_t now = EpochMillis(clock_.Now());
  WriteResult result;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, move.secret_id));
    Record& r = found.record;
    if (r.deleted) return Marked();
    Record::Version* holder = r.Holder(move.stage);
    if (move.remove_from && (!holder || holder->id != *move.remove_from)) {
      if (move.move_to)
        return Param(fmt::format("When you move staging label {}, if you specify RemoveFromVersionId, it must be set "
                                 "to the version that currently has the staging label {}.",
                                 move.stage, move.stage));
      return Param(fmt::format("The staging label {} is not attached to version {}.", move.stage, *move.remove_from));
    }
    if (move.move_to) {
      Record::Version* to = r.Find(*move.move_to);
      if (!to)
        return NotFound(
            fmt::format("Secrets Manager can't find the specified secret value for VersionId: {}", *move.move_to),
            Error::kResourceNotFound);
      if (holder && holder->id != *move.move_to && !move.remove_from)
        return Param(fmt::format(
            "The parameter RemoveFromVersionId can't be empty. Staging label {} is currently attached to version {}, "
            "so you must explicitly reference that version in RemoveFromVersionId.",
            move.stage, holder->id));
      if (std::find(to->stages.begin(), to->stages.end(), move.stage) == to->stages.end() &&
          to->stages.size() >= kMaxStagesPerVersion)
        return InvalidArgument(fmt::format("A version can have at most {} staging labels.", kMaxStagesPerVersion),
                               Error::kLimitExceeded);
      MoveStage(r, move.stage, *move.move_to);
    } else {
      if (!move.remove_from) return Param("You must specify MoveToVersionId or RemoveFromVersionId.");
      if (move.stage == kCurrent)
        return Param("You can only move staging label AWSCURRENT to a different secret version. It can't be "
                     "completely removed.");
      RemoveStage(r, move.stage);
    }
    r.last_changed = now;
    result = WriteResult{r.arn, found.name, std::nullopt, {}};
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(r));
  }));
  return result;
}

StatusOr<SecretInfo> Secrets::Describe(const Scope& scope, std::string_view secret_id) {
  SecretInfo info;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, secret_id));
    info = InfoOf(found.name, found.record);
    return OkStatus();
  }));
  return info;
}

StatusOr<SecretPage> Secrets::List(const Scope& scope, const ListRequest& request) {
  for (const ListFilter& f : request.filters)
    if (f.key != "name" && f.key != "description" && f.key != "tag-key" && f.key != "tag-value" && f.key != "all")
      return Param(fmt::format("Invalid filter key: {}. Paddock filters by name, description, tag-key, tag-value "
                               "and all.",
                               f.key));
  const size_t max = std::clamp<size_t>(request.max_results, 1, 100);
  const std::string prefix = Key().Str(scope.account.str()).Str(scope.region.str()).Done();
  const Range all = PrefixRange(prefix);
  SecretPage page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    page = SecretPage{};
    Range range = all;
    const store::Direction dir = request.descending ? store::Direction::kBackward : store::Direction::kForward;
    if (request.after) {
      if (request.descending) {
        range.end = SecretKey(scope, *request.after);
      } else {
        range.begin = store::KeySuccessor(SecretKey(scope, *request.after));
      }
    }
    size_t scanned = 0;
    std::string last;
    while (true) {
      ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kSecrets, range, 256, dir));
      for (const Row& row : rows) {
        ++scanned;
        last = NameOfKey(row.key);
        ASSIGN_OR_RETURN(Record r, DecodeRecord(row.value));
        if ((!r.deleted || request.include_planned_deletion) && Passes(last, r, request.filters))
          page.items.push_back(InfoOf(last, r));
        if (page.items.size() == max || scanned >= kListScanBudget) break;
      }
      const bool stopped = page.items.size() == max || scanned >= kListScanBudget;
      if (rows.size() < 256 && !stopped) return OkStatus();  // the end
      if (stopped) {
        // More to come only if a row follows `last`.
        Range rest = range;
        if (request.descending) {
          rest.end = SecretKey(scope, last);
        } else {
          rest.begin = store::KeySuccessor(SecretKey(scope, last));
        }
        ASSIGN_OR_RETURN(std::vector<Row> more, txn.Scan(kSecrets, rest, 1, dir));
        if (!more.empty()) page.next = last;
        return OkStatus();
      }
      if (request.descending) {
        range.end = rows.back().key;
      } else {
        range.begin = store::KeySuccessor(rows.back().key);
      }
    }
  }));
  return page;
}

StatusOr<VersionPage> Secrets::ListVersions(const Scope& scope, std::string_view secret_id, bool include_deprecated,
                                            size_t max_results, const std::optional<std::string>& after) {
  const size_t max = std::clamp<size_t>(max_results, 1, 100);
  VersionPage page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, secret_id));
    SecretInfo info = InfoOf(found.name, found.record);
    page = VersionPage{info.arn, info.name, {}, std::nullopt};
    bool started = !after.has_value();
    for (size_t i = 0; i < info.versions.size(); ++i) {
      const VersionInfo& v = info.versions[i];
      if (!started) {
        started = v.id == *after;
        continue;
      }
      if (v.stages.empty() && !include_deprecated) continue;
      if (page.items.size() == max) {
        page.next = page.items.back().id;
        break;
      }
      page.items.push_back(v);
    }
    return OkStatus();
  }));
  return page;
}

StatusOr<DeleteResult> Secrets::Delete(const Scope& scope, const DeleteRequest& request) {
  if (request.force && request.recovery_days)
    return Param("You can't use ForceDeleteWithoutRecovery in conjunction with RecoveryWindowInDays.");
  const int64_t days = request.recovery_days.value_or(30);
  if (days < 7 || days > 30) return Param("The RecoveryWindowInDays value must be between 7 and 30 days (inclusive).");
  const int64_t now = EpochMillis(clock_.Now());
  DeleteResult result;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, request.secret_id));
    Record& r = found.record;
    if (request.force) {
      if (r.deletion) RETURN_IF_ERROR(txn.Delete(kDeletions, DeletionKey(*r.deletion, scope, found.name)));
      RETURN_IF_ERROR(txn.DeleteRange(kVersions, PrefixRange(VersionsPrefix(scope, found.name))));
      RETURN_IF_ERROR(txn.Delete(kSecrets, SecretKey(scope, found.name)));
      result = DeleteResult{r.arn, found.name, FromEpochMillis(now)};
      return OkStatus();
    }
    if (r.deleted) return Marked();
    r.deleted = now;
    r.deletion = now + days * 24 * 3600 * 1000;
    RETURN_IF_ERROR(txn.Put(kDeletions, DeletionKey(*r.deletion, scope, found.name), ""));
    result = DeleteResult{r.arn, found.name, FromEpochMillis(*r.deletion)};
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(r));
  }));
  return result;
}

StatusOr<WriteResult> Secrets::Restore(const Scope& scope, std::string_view secret_id) {
  WriteResult result;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, secret_id));
    Record& r = found.record;
    result = WriteResult{r.arn, found.name, std::nullopt, {}};
    if (!r.deleted) return OkStatus();
    if (r.deletion) RETURN_IF_ERROR(txn.Delete(kDeletions, DeletionKey(*r.deletion, scope, found.name)));
    r.deleted.reset();
    r.deletion.reset();
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(r));
  }));
  return result;
}

Status Secrets::TagResource(const Scope& scope, std::string_view secret_id, const std::vector<Tag>& tags) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, secret_id));
    RETURN_IF_ERROR(MergeTags(found.record.tags, tags));
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(found.record));
  });
}

Status Secrets::UntagResource(const Scope& scope, std::string_view secret_id, const std::vector<std::string>& keys) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(Found found, Require(txn, scope, secret_id));
    std::erase_if(found.record.tags, [&](const Tag& t) {
      return std::find(keys.begin(), keys.end(), t.key) != keys.end();
    });
    return txn.Put(kSecrets, SecretKey(scope, found.name), EncodeRecord(found.record));
  });
}

StatusOr<std::optional<std::string>> Secrets::ArnOf(const Scope& scope, std::string_view secret_id) {
  std::optional<std::string> arn;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto found, Lookup(txn, scope, secret_id));
    if (found) arn = found->record.arn;
    return OkStatus();
  }));
  return arn;
}

StatusOr<std::vector<Tag>> Secrets::TagsOf(const Scope& scope, std::string_view secret_id) {
  std::vector<Tag> tags;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto found, Lookup(txn, scope, secret_id));
    if (found) tags = found->record.tags;
    return OkStatus();
  }));
  return tags;
}

StatusOr<size_t> Secrets::ReapDeleted(size_t limit) {
  const int64_t now = EpochMillis(clock_.Now());
  size_t reaped = 0;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    reaped = 0;
    Range due{"", Key().U64(static_cast<uint64_t>(now) + 1).Done()};
    ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kDeletions, due, limit));
    for (const Row& row : rows) {
      KeyReader reader(row.key);
      ASSIGN_OR_RETURN(uint64_t ms, reader.U64());
      ASSIGN_OR_RETURN(std::string account, reader.Str());
      ASSIGN_OR_RETURN(std::string region, reader.Str());
      ASSIGN_OR_RETURN(std::string name, reader.Str());
      const Scope scope{AccountId(account), Region(region)};
      RETURN_IF_ERROR(txn.Delete(kDeletions, row.key));
      ASSIGN_OR_RETURN(auto stored, txn.Get(kSecrets, SecretKey(scope, name)));
      if (!stored) continue;
      ASSIGN_OR_RETURN(Record r, DecodeRecord(*stored));
      if (r.deletion != static_cast<int64_t>(ms)) continue;  // restored (and perhaps deleted again) since
      RETURN_IF_ERROR(txn.DeleteRange(kVersions, PrefixRange(VersionsPrefix(scope, name))));
      RETURN_IF_ERROR(txn.Delete(kSecrets, SecretKey(scope, name)));
      ++reaped;
    }
    return OkStatus();
  }));
  return reaped;
}

Status Secrets::ReapAccount(const AccountId& account) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    const Range mine = PrefixRange(Key().Str(account.str()).Done());
    // The deletion rows are keyed by time first: find this account's through its records.
    std::string begin = mine.begin;
    while (true) {
      ASSIGN_OR_RETURN(std::vector<Row> rows, txn.Scan(kSecrets, Range{begin, mine.end}, 256));
      for (const Row& row : rows) {
        ASSIGN_OR_RETURN(Record r, DecodeRecord(row.value));
        if (!r.deletion) continue;
        KeyReader reader(row.key);
        ASSIGN_OR_RETURN(std::string a, reader.Str());
        ASSIGN_OR_RETURN(std::string region, reader.Str());
        ASSIGN_OR_RETURN(std::string name, reader.Str());
        RETURN_IF_ERROR(txn.Delete(kDeletions, DeletionKey(*r.deletion, Scope{account, Region(region)}, name)));
      }
      if (rows.size() < 256) break;
      begin = store::KeySuccessor(rows.back().key);
    }
    RETURN_IF_ERROR(txn.DeleteRange(kVersions, mine));
    return txn.DeleteRange(kSecrets, mine);
  });
}

}  // namespace paddock::secretsmanager
