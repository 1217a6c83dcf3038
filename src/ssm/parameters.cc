#include "ssm/parameters.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "ssm/schema.h"
#include "store/key.h"

namespace paddock::ssm {

const ErrorDomain& ErrorDomainOf(Error) {
  static constexpr ErrorDomain kDomain{"ssm", [](int code) -> std::string_view {
    switch (static_cast<Error>(code)) {
      case Error::kValidation: return "ValidationException";
      case Error::kReservedName: return "ReservedName";
      case Error::kParameterNotFound: return "ParameterNotFound";
      case Error::kParameterAlreadyExists: return "ParameterAlreadyExists";
      case Error::kParameterVersionNotFound: return "ParameterVersionNotFound";
      case Error::kHierarchyLevelLimitExceeded: return "HierarchyLevelLimitExceeded";
      case Error::kInvalidAllowedPattern: return "InvalidAllowedPattern";
      case Error::kParameterPatternMismatch: return "ParameterPatternMismatch";
      case Error::kInvalidKeyId: return "InvalidKeyId";
      case Error::kParameterLimitExceeded: return "ParameterLimitExceeded";
      case Error::kParameterMaxVersionLimitExceeded: return "ParameterMaxVersionLimitExceeded";
      case Error::kParameterVersionLabelLimitExceeded: return "ParameterVersionLabelLimitExceeded";
      case Error::kInvalidFilterKey: return "InvalidFilterKey";
      case Error::kInvalidFilterOption: return "InvalidFilterOption";
      case Error::kInvalidFilterValue: return "InvalidFilterValue";
      case Error::kInvalidResourceId: return "InvalidResourceId";
      case Error::kInvalidResourceType: return "InvalidResourceType";
      case Error::kTooManyTags: return "TooManyTags";
      case Error::kInvalidNextToken: return "InvalidNextToken";
    }
    return "Unknown";
  }};
  return kDomain;
}

std::string_view FormatType(ParameterType t) {
  switch (t) {
    case ParameterType::kString: return "String";
    case ParameterType::kStringList: return "StringList";
    case ParameterType::kSecureString: return "SecureString";
  }
  return "String";
}

std::optional<ParameterType> ParseType(std::string_view s) {
  if (s == "String") return ParameterType::kString;
  if (s == "StringList") return ParameterType::kStringList;
  if (s == "SecureString") return ParameterType::kSecureString;
  return std::nullopt;
}

std::string_view FormatTier(Tier t) { return t == Tier::kAdvanced ? "Advanced" : "Standard"; }

std::optional<RequestedTier> ParseRequestedTier(std::string_view s) {
  if (s == "Standard") return RequestedTier::kStandard;
  if (s == "Advanced") return RequestedTier::kAdvanced;
  if (s == "Intelligent-Tiering") return RequestedTier::kIntelligentTiering;
  return std::nullopt;
}

namespace {

namespace json = boost::json;
using store::Key;
using store::PrefixRange;
using store::Range;
using store::ReadTxn;
using store::Row;
using store::WriteTxn;

constexpr std::string_view kHeads = "ssm_parameters";
constexpr std::string_view kVersions = "ssm_parameter_versions";
constexpr std::string_view kTags = "ssm_tags";
constexpr std::string_view kCounts = "ssm_parameter_counts";

// AWS's texts (docs/contracts/ssm.md names each one's source).
constexpr std::string_view kBadNameText =
    "Parameter name: can't be prefixed with \"aws\" or \"ssm\" (case-insensitive). If formed as a path, it can "
    "consist of sub-paths divided by slash symbol; each sub-path can be formed as a mix of letters, numbers and the "
    "following 3 symbols .-_";
constexpr std::string_view kSsmPrefixText =
    "Parameter name: can't be prefixed with \"ssm\" (case-insensitive). If formed as a path, it can consist of "
    "sub-paths divided by slash symbol; each sub-path can be formed as a mix of letters, numbers and the following "
    "3 symbols .-_";

Status Validation(std::string message) { return InvalidArgument(std::move(message), Error::kValidation); }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || c == '/';
}

int Levels(std::string_view name) {
  if (name.starts_with('/')) name.remove_prefix(1);
  return static_cast<int>(std::count(name.begin(), name.end(), '/')) + 1;
}

// The rules a name must meet to be created (reads of a malformed name simply find nothing).
Status ValidateName(std::string_view name) {
  if (name.size() > Parameters::kMaxNameLength)
    return Validation(fmt::format("Parameter name: the name must be at most {} characters.",
                                  Parameters::kMaxNameLength));
  if (!std::all_of(name.begin(), name.end(), NameChar) || name.ends_with('/') ||
      name.find("//") != std::string_view::npos)
    return Validation(std::string(kBadNameText));
  if (name.find('/') != std::string_view::npos && !name.starts_with('/'))
    return Validation("Parameter name must be a fully qualified name.");
  std::string bare = Lower(name.starts_with('/') ? name.substr(1) : name);
  if (bare.starts_with("aws"))
    return PermissionDenied(fmt::format("No access to reserved parameter name: {}.", name), Error::kReservedName);
  if (bare.starts_with("ssm")) return Validation(std::string(kSsmPrefixText));
  if (Levels(name) > Parameters::kMaxHierarchyLevels)
    return InvalidArgument("A hierarchy can have a maximum of 15 levels.", Error::kHierarchyLevelLimitExceeded);
  return OkStatus();
}

// A label may hold letters, digits, '.', '-' and '_', at most 100 of them; it may not start with
// a digit (it would read as a version) nor with "aws" or "ssm".
bool ValidLabel(std::string_view label) {
  if (label.empty() || label.size() > 100) return false;
  if (label[0] >= '0' && label[0] <= '9') return false;
  std::string lower = Lower(label);
  if (lower.starts_with("aws") || lower.starts_with("ssm")) return false;
  return std::all_of(label.begin(), label.end(), [](char c) { return NameChar(c) && c != '/'; });
}

std::string HeadKey(const Scope& s, std::string_view name) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(name).Done();
}
std::string VersionKey(const Scope& s, std::string_view name, int64_t v) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(name).U64(static_cast<uint64_t>(v)).Done();
}
std::string CountKey(const Scope& s, Tier t) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(FormatTier(t)).Done();
}
std::string TagKey(const Scope& s, std::string_view name, std::string_view key) {
  return Key().Str(s.account.str()).Str(s.region.str()).Str(name).Str(key).Done();
}
// Every row of parameter `name` in the tables keyed (account, region, name, ...).
Range NameRange(const Scope& s, std::string_view name) { return PrefixRange(HeadKey(s, name)); }

// A stored record: the head (`version` = the newest) or one version (`labels`, `value`).
struct Record {
  ParameterType type = ParameterType::kString;
  Tier tier = Tier::kStandard;
  std::string data_type = "text";
  std::string key_id;
  std::string allowed_pattern;
  std::string description;
  int64_t version = 0;
  int64_t modified_ms = 0;
  std::string user;
  std::string value;  // versions: plaintext, or the hex of the sealed blob for a SecureString
  std::vector<std::string> labels;
};

std::string Encode(const Record& r, bool with_value) {
  json::object o{{"type", FormatType(r.type)},          {"tier", FormatTier(r.tier)},
                 {"dataType", r.data_type},              {"keyId", r.key_id},
                 {"allowedPattern", r.allowed_pattern},  {"description", r.description},
                 {"version", r.version},                 {"modified", r.modified_ms},
                 {"user", r.user}};
  if (with_value) {
    o["value"] = r.value;
    json::array labels;
    for (const auto& l : r.labels) labels.emplace_back(l);
    o["labels"] = std::move(labels);
  }
  return json::serialize(o);
}

StatusOr<Record> Decode(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("ssm: a stored parameter record is not JSON");
  const json::object& o = v.as_object();
  auto str = [&](std::string_view k) -> std::string {
    const json::value* f = o.if_contains(k);
    return f && f->is_string() ? std::string(f->as_string()) : std::string();
  };
  auto num = [&](std::string_view k) -> int64_t {
    const json::value* f = o.if_contains(k);
    return f && f->is_int64() ? f->as_int64() : 0;
  };
  Record r;
  r.type = ParseType(str("type")).value_or(ParameterType::kString);
  r.tier = str("tier") == "Advanced" ? Tier::kAdvanced : Tier::kStandard;
  r.data_type = str("dataType");
  r.key_id = str("keyId");
  r.allowed_pattern = str("allowedPattern");
  r.description = str("description");
  r.version = num("version");
  r.modified_ms = num("modified");
  r.user = str("user");
  r.value = str("value");
  if (const json::value* l = o.if_contains("labels"); l && l->is_array())
    for (const auto& e : l->as_array())
      if (e.is_string()) r.labels.emplace_back(e.as_string());
  return r;
}

StatusOr<std::optional<Record>> ReadRecord(ReadTxn& txn, std::string_view table, const std::string& key) {
  ASSIGN_OR_RETURN(auto raw, txn.Get(table, key));
  if (!raw) return std::optional<Record>();
  ASSIGN_OR_RETURN(Record r, Decode(*raw));
  return std::optional<Record>(std::move(r));
}

StatusOr<int64_t> ReadCount(ReadTxn& txn, const Scope& s, Tier t) {
  ASSIGN_OR_RETURN(auto raw, txn.Get(kCounts, CountKey(s, t)));
  if (!raw) return int64_t{0};
  return static_cast<int64_t>(std::strtoll(raw->c_str(), nullptr, 10));
}

Status AddCount(WriteTxn& txn, const Scope& s, Tier t, int64_t delta) {
  ASSIGN_OR_RETURN(int64_t n, ReadCount(txn, s, t));
  n = std::max<int64_t>(0, n + delta);
  if (n == 0) return txn.Delete(kCounts, CountKey(s, t));
  return txn.Put(kCounts, CountKey(s, t), std::to_string(n));
}

kms::Binding BindingFor(const Scope& s, std::string_view name, int64_t version) {
  return kms::Binding{s.account.str(), s.region.str(), fmt::format("{}#{}", Parameters::Arn(s, name), version)};
}

// The user's regex, with libstdc++'s polynomial-time executor: a tenant's pattern must not be able
// to spend exponential time (or stack) on a value.
StatusOr<std::regex> CompilePattern(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex_constants::__polynomial);
  } catch (const std::regex_error& e) {
    // Also what a pattern too large to compile gets (libstdc++ caps an automaton's states).
    return InvalidArgument(fmt::format("The request does not meet the regular expression requirement: {}", e.what()),
                           Error::kInvalidAllowedPattern);
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("The request does not meet the regular expression requirement: {}", e.what()),
                           Error::kInvalidAllowedPattern);
  }
}

// Whether `value` matches all of `pattern`. A pattern the executor gives up on does not match.
bool PatternMatches(const std::regex& pattern, const std::string& value) {
  try {
    return std::regex_match(value, pattern);
  } catch (const std::exception&) {
    return false;
  }
}

// A key id of another account or region names a key this caller cannot use.
Status CheckKeyId(const Scope& s, std::string_view key_id) {
  if (!kms::IsValidKeyId(key_id))
    return InvalidArgument(fmt::format("Invalid KeyId: {}", key_id), Error::kInvalidKeyId);
  if (key_id.starts_with("arn:")) {
    // arn:<partition>:kms:<region>:<account>:key/<id> | alias/<name>
    std::vector<std::string_view> parts;
    std::string_view rest = key_id;
    for (int i = 0; i < 5; ++i) {
      size_t colon = rest.find(':');
      if (colon == std::string_view::npos) break;
      parts.push_back(rest.substr(0, colon));
      rest.remove_prefix(colon + 1);
    }
    if (parts.size() != 5 || parts[2] != "kms" || parts[3] != s.region.str() || parts[4] != s.account.str() ||
        !(rest.starts_with("key/") || rest.starts_with("alias/")))
      return InvalidArgument(fmt::format("Invalid KeyId: {}", key_id), Error::kInvalidKeyId);
  }
  return OkStatus();
}

// A reference split: the parameter's name(s) to try, and the selector after ':' if any.
struct Reference {
  std::vector<std::string> names;  // in the order to try
  std::optional<std::string> selector;
};

// `reference` is a name or an ARN of this scope, with an optional ":selector". nullopt when it
// cannot name a parameter of this scope.
std::optional<Reference> ParseReference(const Scope& s, std::string_view reference) {
  Reference out;
  std::string_view name = reference;
  bool from_arn = false;
  if (reference.starts_with("arn:")) {
    const std::string prefix = fmt::format(":ssm:{}:{}:parameter/", s.region.str(), s.account.str());
    size_t p = reference.find(prefix);
    // arn:<partition>: before the prefix, nothing else.
    if (p == std::string_view::npos || reference.substr(4, p - 4).find(':') != std::string_view::npos)
      return std::nullopt;
    name = reference.substr(p + prefix.size());
    from_arn = true;
  }
  if (size_t colon = name.find(':'); colon != std::string_view::npos) {
    out.selector = std::string(name.substr(colon + 1));
    name = name.substr(0, colon);
    if (out.selector->empty() || out.selector->find(':') != std::string::npos) return std::nullopt;
  }
  if (name.empty()) return std::nullopt;
  if (from_arn) {
    // The ARN drops the name's leading slash: "parameter/a/b" is "/a/b"; "parameter/x" is "x" or "/x".
    if (name.find('/') != std::string_view::npos) {
      out.names.push_back("/" + std::string(name));
    } else {
      out.names.emplace_back(name);
      out.names.push_back("/" + std::string(name));
    }
  } else {
    out.names.emplace_back(name);
  }
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status NotFoundError(std::string message = "") { return NotFound(std::move(message), Error::kParameterNotFound); }

}  // namespace

std::string Parameters::Arn(const Scope& scope, std::string_view name) {
  if (name.starts_with('/')) name.remove_prefix(1);
  return fmt::format("arn:aws:ssm:{}:{}:parameter/{}", scope.region.str(), scope.account.str(), name);
}

namespace {

// The reader's view of version `v` of `name` (its record `r`), opened when asked.
StatusOr<Parameter> View(const kms::KeyRing& keys, const Scope& s, const std::string& name, const Record& r,
                         Decryption decryption) {
  Parameter p;
  p.name = name;
  p.arn = Parameters::Arn(s, name);
  p.type = r.type;
  p.version = r.version;
  p.last_modified = FromEpochMillis(r.modified_ms);
  p.last_modified_user = r.user;
  p.data_type = r.data_type.empty() ? "text" : r.data_type;
  p.key_id = r.key_id;
  p.description = r.description;
  p.allowed_pattern = r.allowed_pattern;
  p.tier = r.tier;
  p.labels = r.labels;
  if (r.type != ParameterType::kSecureString) {
    p.value = r.value;
    return p;
  }
  ASSIGN_OR_RETURN(std::string blob, HexDecode(r.value));
  if (decryption == Decryption::kYes) {
    ASSIGN_OR_RETURN(p.value, keys.Decrypt(BindingFor(s, name, r.version), blob));
  } else {
    p.value = std::move(blob);
    p.sealed = true;
  }
  return p;
}

// Finds the head of the first of `names` that exists.
StatusOr<std::optional<std::pair<std::string, Record>>> FindHead(ReadTxn& txn, const Scope& s,
                                                                  const std::vector<std::string>& names) {
  for (const auto& n : names) {
    ASSIGN_OR_RETURN(auto head, ReadRecord(txn, kHeads, HeadKey(s, n)));
    if (head) return std::optional<std::pair<std::string, Record>>(std::make_pair(n, std::move(*head)));
  }
  return std::optional<std::pair<std::string, Record>>();
}

// The version record `selector` names (none: the newest), and the selector as AWS echoes it.
StatusOr<std::pair<Record, std::string>> ResolveVersion(ReadTxn& txn, const Scope& s, const std::string& name,
                                                        const Record& head, const std::optional<std::string>& selector,
                                                        std::string_view reference) {
  if (!selector) {
    ASSIGN_OR_RETURN(auto v, ReadRecord(txn, kVersions, VersionKey(s, name, head.version)));
    if (!v) return DataLoss(fmt::format("ssm: parameter {} lacks its newest version", name));
    return std::make_pair(std::move(*v), std::string());
  }
  if (AllDigits(*selector)) {
    int64_t n = std::stoll(*selector);
    ASSIGN_OR_RETURN(auto v, ReadRecord(txn, kVersions, VersionKey(s, name, n)));
    if (!v)
      return NotFound(fmt::format("Systems Manager could not find version {} of {}. Verify the version and try again.",
                                  *selector, name),
                      Error::kParameterVersionNotFound);
    return std::make_pair(std::move(*v), ":" + *selector);
  }
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kVersions, NameRange(s, name), Parameters::kMaxVersions + 1));
  for (const Row& row : rows) {
    ASSIGN_OR_RETURN(Record v, Decode(row.value));
    if (std::find(v.labels.begin(), v.labels.end(), *selector) != v.labels.end())
      return std::make_pair(std::move(v), ":" + *selector);
  }
  (void)reference;
  return NotFoundError();
}

}  // namespace

StatusOr<PutResult> Parameters::Put(const Scope& scope, const PutRequest& req) {
  RETURN_IF_ERROR(ValidateName(req.name));
  if (req.overwrite && !req.tags.empty())
    return Validation(
        "Invalid request: tags and overwrite can't be used together. To create a parameter with tags, please remove "
        "overwrite flag. To update tags for an existing parameter, please use AddTagsToResource or "
        "RemoveTagsFromResource.");
  if (req.tags.size() > kMaxTags) return InvalidArgument("You exceeded the maximum number of tags allowed.", Error::kTooManyTags);
  if (req.data_type && *req.data_type != "text" && *req.data_type != "aws:ec2:image")
    return Validation(fmt::format("The following data type is not supported: {} (Data type names are all lowercase.)",
                                  *req.data_type));
  if (req.value.size() > kMaxAdvancedValue)
    return Validation(fmt::format("Parameter value must be at most {} characters.", kMaxAdvancedValue));
  std::optional<std::regex> pattern;
  if (req.allowed_pattern) {
    ASSIGN_OR_RETURN(pattern, CompilePattern(*req.allowed_pattern));
  }
  const TimePoint now = clock_.Now();
  PutResult result;
  Status s = store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, ReadRecord(txn, kHeads, HeadKey(scope, req.name)));
    if (head && !req.overwrite)
      return AlreadyExists("The parameter already exists. To overwrite this value, set the overwrite option in the "
                           "request to true.",
                           Error::kParameterAlreadyExists);
    Record r;
    if (head) r = *head;
    r.type = req.type.value_or(head ? head->type : ParameterType::kString);
    if (req.key_id && r.type != ParameterType::kSecureString)
      return Validation("KeyId is required for SecureString type parameter only.");
    if (r.type == ParameterType::kSecureString) {
      std::string key = req.key_id.value_or(head && head->type == ParameterType::kSecureString && !head->key_id.empty()
                                                ? head->key_id
                                                : std::string(kDefaultKeyId));
      RETURN_IF_ERROR(CheckKeyId(scope, key));
      r.key_id = std::move(key);
    } else {
      r.key_id.clear();
    }
    if (req.allowed_pattern) r.allowed_pattern = *req.allowed_pattern;
    if (!r.allowed_pattern.empty()) {
      if (!pattern) {
        ASSIGN_OR_RETURN(pattern, CompilePattern(r.allowed_pattern));
      }
      if (!PatternMatches(*pattern, req.value))
        return InvalidArgument(fmt::format("Parameter value, cannot be validated against allowedPattern: {}",
                                           r.allowed_pattern),
                               Error::kParameterPatternMismatch);
    }
    if (req.description) r.description = *req.description;
    if (req.data_type) r.data_type = *req.data_type;
    if (r.data_type.empty()) r.data_type = "text";

    // The tier: never down from Advanced; Intelligent-Tiering picks the smallest that fits.
    const Tier old_tier = head ? head->tier : Tier::kStandard;
    const bool fits_standard = req.value.size() <= kMaxStandardValue;
    Tier tier = old_tier;
    if (req.tier == RequestedTier::kAdvanced) tier = Tier::kAdvanced;
    if (req.tier == RequestedTier::kIntelligentTiering && !fits_standard) tier = Tier::kAdvanced;
    if (req.tier == RequestedTier::kStandard && old_tier == Tier::kAdvanced)
      return Validation(
          "This parameter uses the advanced-parameter tier. You can't downgrade a parameter from the "
          "advanced-parameter tier to the standard-parameter tier. If necessary, you can delete the advanced "
          "parameter and recreate it as a standard parameter.");
    if (tier == Tier::kStandard && !fits_standard)
      return Validation(
          "Standard tier parameters support a maximum parameter value of 4096 characters. To create a larger "
          "parameter value, upgrade the parameter to use the advanced-parameter tier. For more information, see "
          "https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html");
    r.tier = tier;
    if (!head || tier != old_tier) {
      ASSIGN_OR_RETURN(int64_t n, ReadCount(txn, scope, tier));
      const int64_t limit = tier == Tier::kAdvanced ? kMaxAdvancedParameters : kMaxStandardParameters;
      if (n >= limit)
        return ResourceExhausted(
            "You have exceeded the number of parameters for this AWS account. Delete unnecessary parameters and try "
            "again.",
            Error::kParameterLimitExceeded);
      RETURN_IF_ERROR(AddCount(txn, scope, tier, 1));
      if (head) RETURN_IF_ERROR(AddCount(txn, scope, old_tier, -1));
    }

    r.version = head ? head->version + 1 : 1;
    r.modified_ms = EpochMillis(now);
    r.user = req.modified_by;
    Record v = r;
    v.labels.clear();
    if (r.type == ParameterType::kSecureString) {
      ASSIGN_OR_RETURN(std::string blob, keys_.Encrypt(BindingFor(scope, req.name, r.version), r.key_id, req.value));
      v.value = HexEncode(blob);
    } else {
      v.value = req.value;
    }
    RETURN_IF_ERROR(txn.Put(kVersions, VersionKey(scope, req.name, r.version), Encode(v, true)));
    r.value.clear();
    RETURN_IF_ERROR(txn.Put(kHeads, HeadKey(scope, req.name), Encode(r, false)));

    // Keep kMaxVersions: the oldest goes, unless a label holds it.
    if (r.version > kMaxVersions) {
      const std::string oldest_key = VersionKey(scope, req.name, r.version - kMaxVersions);
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kVersions, Range{HeadKey(scope, req.name), store::KeySuccessor(oldest_key)}, 1));
      if (!rows.empty()) {
        ASSIGN_OR_RETURN(Record oldest, Decode(rows[0].value));
        if (!oldest.labels.empty())
          return InvalidArgument(
              fmt::format("You attempted to create a new version of {} by calling the PutParameter API with the "
                          "overwrite flag. Version {}, the oldest version, can't be deleted because it has a label "
                          "associated with it. Move the label to another version of the parameter, and try again.",
                          req.name, oldest.version),
              Error::kParameterMaxVersionLimitExceeded);
        RETURN_IF_ERROR(txn.Delete(kVersions, rows[0].key));
      }
    }
    for (const Tag& t : req.tags) RETURN_IF_ERROR(txn.Put(kTags, TagKey(scope, req.name, t.key), t.value));
    result = PutResult{r.version, r.tier};
    return OkStatus();
  });
  if (!s.ok()) return s;
  return result;
}

StatusOr<Parameter> Parameters::Get(const Scope& scope, std::string_view reference, Decryption decryption) {
  std::optional<Reference> ref = ParseReference(scope, reference);
  if (!ref) return NotFoundError();
  std::optional<std::pair<std::string, Record>> found;
  std::pair<Record, std::string> version;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(found, FindHead(txn, scope, ref->names));
    if (!found) return NotFoundError();
    ASSIGN_OR_RETURN(version, ResolveVersion(txn, scope, found->first, found->second, ref->selector, reference));
    return OkStatus();
  }));
  ASSIGN_OR_RETURN(Parameter p, View(keys_, scope, found->first, version.first, decryption));
  p.selector = version.second;
  return p;
}

StatusOr<GetManyResult> Parameters::GetMany(const Scope& scope, const std::vector<std::string>& references,
                                            Decryption decryption) {
  GetManyResult out;
  std::set<std::string> seen;
  for (const auto& ref : references) {
    if (!seen.insert(ref).second) continue;
    StatusOr<Parameter> p = Get(scope, ref, decryption);
    if (p.ok()) {
      out.found.push_back(std::move(*p));
    } else if (IsError(p.status(), Error::kParameterNotFound) || IsError(p.status(), Error::kParameterVersionNotFound)) {
      out.invalid.push_back(ref);
    } else {
      return p.status();
    }
  }
  std::stable_sort(out.found.begin(), out.found.end(),
                   [](const Parameter& a, const Parameter& b) { return a.name < b.name; });
  return out;
}

Status Parameters::Delete(const Scope& scope, std::string_view name) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, ReadRecord(txn, kHeads, HeadKey(scope, name)));
    if (!head) return NotFoundError(fmt::format("Parameter {} not found.", name));
    RETURN_IF_ERROR(txn.Delete(kHeads, HeadKey(scope, name)));
    RETURN_IF_ERROR(txn.DeleteRange(kVersions, NameRange(scope, name)));
    RETURN_IF_ERROR(txn.DeleteRange(kTags, NameRange(scope, name)));
    return AddCount(txn, scope, head->tier, -1);
  });
}

StatusOr<DeleteManyResult> Parameters::DeleteMany(const Scope& scope, const std::vector<std::string>& names) {
  DeleteManyResult out;
  std::set<std::string> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) continue;
    Status s = Delete(scope, name);
    if (s.ok()) {
      out.deleted.push_back(name);
    } else if (IsError(s, Error::kParameterNotFound)) {
      out.invalid.push_back(name);
    } else {
      return s;
    }
  }
  return out;
}

StatusOr<Page> Parameters::History(const Scope& scope, std::string_view name, Decryption decryption,
                                   size_t max_results, const std::optional<std::string>& after) {
  std::vector<Record> records;
  bool more = false;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, ReadRecord(txn, kHeads, HeadKey(scope, name)));
    if (!head) return NotFoundError(fmt::format("Parameter {} not found.", name));
    Range r = NameRange(scope, name);
    if (after) {
      if (!AllDigits(*after)) return InvalidArgument("The nextToken is not valid.", Error::kInvalidNextToken);
      r.begin = VersionKey(scope, name, std::stoll(*after) + 1);
    }
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kVersions, r, max_results + 1));
    more = rows.size() > max_results;
    if (more) rows.pop_back();
    for (const Row& row : rows) {
      ASSIGN_OR_RETURN(Record v, Decode(row.value));
      records.push_back(std::move(v));
    }
    return OkStatus();
  }));
  Page page;
  const std::string n(name);
  for (const Record& r : records) {
    ASSIGN_OR_RETURN(Parameter p, View(keys_, scope, n, r, decryption));
    page.items.push_back(std::move(p));
  }
  if (more && !page.items.empty()) page.next = std::to_string(page.items.back().version);
  return page;
}

namespace {

// Whether the head `r` of `name` passes every filter (keys and options checked beforehand).
bool Matches(const std::string& name, const Record& r, const std::vector<Filter>& filters) {
  for (const Filter& f : filters) {
    auto any = [&](auto pred) { return std::any_of(f.values.begin(), f.values.end(), pred); };
    if (f.key == "Name") {
      const bool begins = f.option == "BeginsWith";
      if (!any([&](const std::string& v) {
            // Names match with or without their leading slash, as AWS's do.
            std::string want = v.starts_with('/') || !name.starts_with('/') ? v : "/" + v;
            return begins ? name.starts_with(want) : name == want;
          }))
        return false;
    } else if (f.key == "Type") {
      if (!any([&](const std::string& v) { return v == FormatType(r.type); })) return false;
    } else if (f.key == "KeyId") {
      if (!any([&](const std::string& v) { return v == r.key_id; })) return false;
    } else if (f.key == "Tier") {
      if (!any([&](const std::string& v) { return v == FormatTier(r.tier); })) return false;
    } else if (f.key == "DataType") {
      if (!any([&](const std::string& v) { return v == r.data_type; })) return false;
    } else if (f.key == "Path") {
      const bool recursive = f.option == "Recursive";
      if (!any([&](const std::string& v) {
            std::string prefix = v == "/" ? "/" : v + "/";
            if (!name.starts_with(prefix)) return false;
            return recursive || name.find('/', prefix.size()) == std::string::npos;
          }))
        return false;
    }
  }
  return true;
}

Status CheckFilters(const std::vector<Filter>& filters, bool by_path) {
  for (const Filter& f : filters) {
    static const std::set<std::string> kDescribeKeys = {"Name", "Type", "KeyId", "Tier", "Path", "DataType"};
    static const std::set<std::string> kByPathKeys = {"Type", "KeyId", "Label"};
    const auto& keys = by_path ? kByPathKeys : kDescribeKeys;
    if (!keys.contains(f.key))
      return InvalidArgument(fmt::format("The following filter key is not valid: {}. Valid filter keys include: [{}].",
                                         f.key, fmt::join(keys, ", ")),
                             Error::kInvalidFilterKey);
    std::string option = f.option.empty() ? (f.key == "Path" ? "OneLevel" : "Equals") : f.option;
    bool ok = f.key == "Path" ? (option == "OneLevel" || option == "Recursive")
              : f.key == "Name" ? (option == "Equals" || option == "BeginsWith")
                                : option == "Equals";
    if (!ok)
      return InvalidArgument(fmt::format("The following filter option is not valid: {}.", option),
                             Error::kInvalidFilterOption);
    if (f.values.empty() && f.key != "Path")
      return InvalidArgument(fmt::format("The following filter values are missing : null for filter key {}.", f.key),
                             Error::kInvalidFilterValue);
  }
  return OkStatus();
}

std::vector<Filter> WithDefaultOptions(std::vector<Filter> filters) {
  for (Filter& f : filters)
    if (f.option.empty()) f.option = f.key == "Path" ? "OneLevel" : "Equals";
  return filters;
}

}  // namespace

StatusOr<Page> Parameters::Describe(const Scope& scope, const std::vector<Filter>& raw_filters, size_t max_results,
                                    const std::optional<std::string>& after) {
  RETURN_IF_ERROR(CheckFilters(raw_filters, false));
  const std::vector<Filter> filters = WithDefaultOptions(raw_filters);
  Page page;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    Range r = PrefixRange(Key().Str(scope.account.str()).Str(scope.region.str()).Done());
    if (after) r.begin = store::KeySuccessor(HeadKey(scope, *after));
    constexpr size_t kChunk = 256;
    for (;;) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kHeads, r, kChunk));
      for (const Row& row : rows) {
        store::KeyReader reader(row.key);
        ASSIGN_OR_RETURN(std::string a, reader.Str());
        ASSIGN_OR_RETURN(std::string g, reader.Str());
        ASSIGN_OR_RETURN(std::string name, reader.Str());
        ASSIGN_OR_RETURN(Record head, Decode(row.value));
        if (!Matches(name, head, filters)) continue;
        if (page.items.size() == max_results) {
          page.next = page.items.back().name;
          return OkStatus();
        }
        ASSIGN_OR_RETURN(Parameter p, View(keys_, scope, name, head, Decryption::kNo));
        p.value.clear();
        p.sealed = false;
        page.items.push_back(std::move(p));
      }
      if (rows.size() < kChunk) return OkStatus();
      r.begin = store::KeySuccessor(rows.back().key);
    }
  }));
  return page;
}

StatusOr<Page> Parameters::ByPath(const Scope& scope, std::string_view path, bool recursive,
                                  const std::vector<Filter>& raw_filters, Decryption decryption, size_t max_results,
                                  const std::optional<std::string>& after) {
  if (!path.starts_with('/') || (path.size() > 1 && path.ends_with('/')) ||
      !std::all_of(path.begin(), path.end(), NameChar))
    return Validation(std::string(kBadNameText));
  if (Levels(path) > kMaxHierarchyLevels)
    return InvalidArgument("A hierarchy can have a maximum of 15 levels.", Error::kHierarchyLevelLimitExceeded);
  RETURN_IF_ERROR(CheckFilters(raw_filters, true));
  const std::vector<Filter> filters = WithDefaultOptions(raw_filters);
  const std::string prefix = path == "/" ? "/" : std::string(path) + "/";
  std::vector<std::pair<std::string, Record>> picked;
  std::optional<std::string> next;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    Range r = PrefixRange(Key().Str(scope.account.str()).Str(scope.region.str()).StrPrefix(prefix).Done());
    if (after) r.begin = std::max(r.begin, store::KeySuccessor(HeadKey(scope, *after)));
    constexpr size_t kChunk = 256;
    for (;;) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kHeads, r, kChunk));
      for (const Row& row : rows) {
        store::KeyReader reader(row.key);
        ASSIGN_OR_RETURN(std::string a, reader.Str());
        ASSIGN_OR_RETURN(std::string g, reader.Str());
        ASSIGN_OR_RETURN(std::string name, reader.Str());
        if (!recursive && name.find('/', prefix.size()) != std::string::npos) continue;
        ASSIGN_OR_RETURN(Record head, Decode(row.value));
        bool match = true;
        std::optional<Record> labelled;
        for (const Filter& f : filters) {
          if (f.key == "Type" && std::find(f.values.begin(), f.values.end(), FormatType(head.type)) == f.values.end())
            match = false;
          if (f.key == "KeyId" && std::find(f.values.begin(), f.values.end(), head.key_id) == f.values.end())
            match = false;
          if (f.key == "Label" && match) {
            // The version carrying one of the labels, in place of the newest.
            ASSIGN_OR_RETURN(auto versions, txn.Scan(kVersions, NameRange(scope, name), kMaxVersions + 1));
            for (const Row& vr : versions) {
              ASSIGN_OR_RETURN(Record v, Decode(vr.value));
              for (const auto& l : v.labels)
                if (std::find(f.values.begin(), f.values.end(), l) != f.values.end()) labelled = v;
            }
            if (!labelled) match = false;
          }
        }
        if (!match) continue;
        if (picked.size() == max_results) {
          next = picked.back().first;
          return OkStatus();
        }
        if (labelled) {
          picked.emplace_back(name, std::move(*labelled));
        } else {
          ASSIGN_OR_RETURN(auto v, ReadRecord(txn, kVersions, VersionKey(scope, name, head.version)));
          if (!v) return DataLoss(fmt::format("ssm: parameter {} lacks its newest version", name));
          picked.emplace_back(name, std::move(*v));
        }
      }
      if (rows.size() < kChunk) return OkStatus();
      r.begin = store::KeySuccessor(rows.back().key);
    }
  }));
  Page page;
  for (const auto& [name, record] : picked) {
    ASSIGN_OR_RETURN(Parameter p, View(keys_, scope, name, record, decryption));
    page.items.push_back(std::move(p));
  }
  page.next = next;
  return page;
}

StatusOr<LabelResult> Parameters::Label(const Scope& scope, std::string_view name, std::optional<int64_t> version,
                                        const std::vector<std::string>& labels) {
  LabelResult out;
  std::vector<std::string> good;
  for (const auto& l : labels) {
    if (!ValidLabel(l)) {
      out.invalid_labels.push_back(l);
    } else if (std::find(good.begin(), good.end(), l) == good.end()) {
      good.push_back(l);
    }
  }
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, ReadRecord(txn, kHeads, HeadKey(scope, name)));
    if (!head) return NotFoundError(fmt::format("Parameter {} not found.", name));
    const int64_t target = version.value_or(head->version);
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kVersions, NameRange(scope, name), kMaxVersions + 1));
    bool found = false;
    for (const Row& row : rows) {
      ASSIGN_OR_RETURN(Record v, Decode(row.value));
      if (v.version == target) {
        found = true;
        for (const auto& l : good)
          if (std::find(v.labels.begin(), v.labels.end(), l) == v.labels.end()) v.labels.push_back(l);
        if (v.labels.size() > static_cast<size_t>(kMaxLabelsPerVersion))
          return InvalidArgument(
              "A parameter version can have maximum 10 labels.Move one or more labels to another version and try "
              "again.",
              Error::kParameterVersionLabelLimitExceeded);
      } else {
        // A label moves: it leaves whichever other version held it.
        auto before = v.labels.size();
        std::erase_if(v.labels, [&](const std::string& l) {
          return std::find(good.begin(), good.end(), l) != good.end();
        });
        if (v.labels.size() == before) continue;
      }
      RETURN_IF_ERROR(txn.Put(kVersions, row.key, Encode(v, true)));
    }
    if (!found)
      return NotFound(fmt::format("Systems Manager could not find version {} of {}. Verify the version and try again.",
                                  target, name),
                      Error::kParameterVersionNotFound);
    out.version = target;
    return OkStatus();
  }));
  return out;
}

StatusOr<UnlabelResult> Parameters::Unlabel(const Scope& scope, std::string_view name, int64_t version,
                                            const std::vector<std::string>& labels) {
  UnlabelResult out;
  RETURN_IF_ERROR(store_.Write([&](WriteTxn& txn) -> Status {
    out = UnlabelResult{};
    ASSIGN_OR_RETURN(auto head, ReadRecord(txn, kHeads, HeadKey(scope, name)));
    if (!head) return NotFoundError(fmt::format("Parameter {} not found.", name));
    const std::string key = VersionKey(scope, name, version);
    ASSIGN_OR_RETURN(auto v, ReadRecord(txn, kVersions, key));
    if (!v)
      return NotFound(fmt::format("Systems Manager could not find version {} of {}. Verify the version and try again.",
                                  version, name),
                      Error::kParameterVersionNotFound);
    for (const auto& l : labels) {
      auto it = std::find(v->labels.begin(), v->labels.end(), l);
      if (it == v->labels.end()) {
        if (std::find(out.invalid.begin(), out.invalid.end(), l) == out.invalid.end()) out.invalid.push_back(l);
        continue;
      }
      v->labels.erase(it);
      out.removed.push_back(l);
    }
    if (out.removed.empty()) return OkStatus();
    return txn.Put(kVersions, key, Encode(*v, true));
  }));
  return out;
}

Status Parameters::AddTags(const Scope& scope, std::string_view name, const std::vector<Tag>& tags) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, txn.Get(kHeads, HeadKey(scope, name)));
    if (!head) return InvalidArgument("The resource ID is not valid. Verify the ID and try again.", Error::kInvalidResourceId);
    for (const Tag& t : tags) RETURN_IF_ERROR(txn.Put(kTags, TagKey(scope, name, t.key), t.value));
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kTags, NameRange(scope, name), kMaxTags + 1));
    if (rows.size() > kMaxTags)
      return InvalidArgument("You exceeded the maximum number of tags allowed.", Error::kTooManyTags);
    return OkStatus();
  });
}

Status Parameters::RemoveTags(const Scope& scope, std::string_view name, const std::vector<std::string>& keys) {
  return store_.Write([&](WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, txn.Get(kHeads, HeadKey(scope, name)));
    if (!head) return InvalidArgument("The resource ID is not valid. Verify the ID and try again.", Error::kInvalidResourceId);
    for (const auto& k : keys) RETURN_IF_ERROR(txn.Delete(kTags, TagKey(scope, name, k)));
    return OkStatus();
  });
}

StatusOr<std::vector<Tag>> Parameters::ListTags(const Scope& scope, std::string_view name) {
  std::vector<Tag> out;
  RETURN_IF_ERROR(store_.Read([&](ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto head, txn.Get(kHeads, HeadKey(scope, name)));
    if (!head) return InvalidArgument("The resource ID is not valid. Verify the ID and try again.", Error::kInvalidResourceId);
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kTags, NameRange(scope, name), kMaxTags + 1));
    for (const Row& row : rows) {
      store::KeyReader reader(row.key);
      for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(reader.Str().status());
      ASSIGN_OR_RETURN(std::string key, reader.Str());
      out.push_back(Tag{std::move(key), row.value});
    }
    return OkStatus();
  }));
  return out;
}

Status Parameters::ReapAccount(const AccountId& account) {
  const Range all = PrefixRange(Key().Str(account.str()).Done());
  return store_.Write([&](WriteTxn& txn) -> Status {
    for (std::string_view table : {kHeads, kVersions, kTags, kCounts}) RETURN_IF_ERROR(txn.DeleteRange(table, all));
    return OkStatus();
  });
}

}  // namespace paddock::ssm
