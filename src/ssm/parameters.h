// ssm/parameters: SSM Parameter Store's owner — named, versioned parameters per (account, region),
// SecureString values sealed at rest with the node's kms::KeyRing. Typed values in and out; the
// wire format is the adapter's (ssm/api/ssm_service.h).
//
//   ssm::Parameters params(store, keyring, SystemClock::Get());
//   ASSIGN_OR_RETURN(auto put, params.Put(scope, {.name = "/db/password", .value = "hunter2",
//                                                 .type = ssm::ParameterType::kSecureString}));
//   ASSIGN_OR_RETURN(ssm::Parameter p, params.Get(scope, "/db/password:1", ssm::Decryption::kYes));
//
// Every record is keyed by (account, region, name): one account never reads, lists, overwrites or
// deletes another's parameters, whatever name or ARN it passes (docs/contracts/ssm.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "kms/keyring.h"
#include "ssm/errors.h"
#include "store/store.h"

namespace paddock::ssm {

enum class ParameterType { kString, kStringList, kSecureString };
std::string_view FormatType(ParameterType t);
std::optional<ParameterType> ParseType(std::string_view s);

enum class Tier { kStandard, kAdvanced };
std::string_view FormatTier(Tier t);
// What PutParameter may ask for: a tier, or Intelligent-Tiering (Standard when the value fits).
enum class RequestedTier { kStandard, kAdvanced, kIntelligentTiering };
std::optional<RequestedTier> ParseRequestedTier(std::string_view s);

// Whether a read returns SecureString values decrypted (WithDecryption).
enum class Decryption { kNo, kYes };

struct Tag {
  std::string key;
  std::string value;
  bool operator==(const Tag&) const = default;
};

// The key SecureStrings use when PutParameter names none.
inline constexpr std::string_view kDefaultKeyId = "alias/aws/ssm";

struct PutRequest {
  std::string name;
  std::string value;
  std::optional<ParameterType> type;  // a new parameter without one is a String
  std::optional<std::string> key_id;  // SecureString only; default kDefaultKeyId
  bool overwrite = false;
  std::optional<std::string> allowed_pattern;
  std::optional<std::string> description;
  std::optional<RequestedTier> tier;
  std::optional<std::string> data_type;  // "text" (default) or "aws:ec2:image"
  std::vector<Tag> tags;                 // a new parameter's; refused together with overwrite
  std::string modified_by;               // the caller's ARN (LastModifiedUser)
};

struct PutResult {
  int64_t version = 0;
  Tier tier = Tier::kStandard;
};

// A parameter's version as readers see it (GetParameter, history), or its metadata
// (DescribeParameters: value empty).
struct Parameter {
  std::string name;
  std::string arn;
  ParameterType type = ParameterType::kString;
  // The plaintext; for a SecureString read without decryption, the sealed blob's bytes
  // (`sealed` set: the adapter answers them base64-encoded, as AWS answers a KMS ciphertext).
  std::string value;
  bool sealed = false;
  int64_t version = 0;
  std::string selector;  // ":3" or ":label" when the read named one, else empty
  TimePoint last_modified;
  std::string last_modified_user;
  std::string data_type = "text";
  std::string key_id;  // SecureString only
  std::string description;
  std::string allowed_pattern;
  Tier tier = Tier::kStandard;
  std::vector<std::string> labels;
};

struct GetManyResult {
  std::vector<Parameter> found;      // by name
  std::vector<std::string> invalid;  // the references that name nothing, as given
};

struct DeleteManyResult {
  std::vector<std::string> deleted;
  std::vector<std::string> invalid;
};

// One page of a list, and where the next starts (nullopt at the end). The position is the
// owner's; the adapter seals it in a NextToken.
struct Page {
  std::vector<Parameter> items;
  std::optional<std::string> next;
};

// A ParameterStringFilter of DescribeParameters / GetParametersByPath.
struct Filter {
  std::string key;     // "Name", "Type", "KeyId", "Tier", "Path", "DataType", "Label"
  std::string option;  // "Equals", "BeginsWith", "OneLevel", "Recursive"; empty = the key's default
  std::vector<std::string> values;
};

struct LabelResult {
  std::vector<std::string> invalid_labels;
  int64_t version = 0;
};

struct UnlabelResult {
  std::vector<std::string> removed;
  std::vector<std::string> invalid;  // labels that version does not carry
};

class Parameters {
 public:
  static constexpr int kMaxVersions = 100;
  static constexpr int kMaxLabelsPerVersion = 10;
  static constexpr int kMaxHierarchyLevels = 15;
  static constexpr size_t kMaxNameLength = 1011;
  static constexpr size_t kMaxStandardValue = 4096;
  static constexpr size_t kMaxAdvancedValue = 8192;
  static constexpr int64_t kMaxStandardParameters = 10'000;
  static constexpr int64_t kMaxAdvancedParameters = 100'000;
  static constexpr size_t kMaxTags = 50;

  // `store`, `keys` and `clock` must outlive this.
  Parameters(store::Store& store, const kms::KeyRing& keys, const Clock& clock)
      : store_(store), keys_(keys), clock_(clock) {}

  // arn:aws:ssm:<region>:<account>:parameter/<name without its leading slash>: the resource IAM
  // policies name.
  static std::string Arn(const Scope& scope, std::string_view name);

  // Creates a parameter (version 1) or, with overwrite, its next version. Failures, each
  // writing nothing: kValidation / kReservedName / kHierarchyLevelLimitExceeded for a bad name;
  // kParameterAlreadyExists without overwrite; kInvalidAllowedPattern, kParameterPatternMismatch;
  // kInvalidKeyId (a key ARN of another account or region); kParameterLimitExceeded;
  // kParameterMaxVersionLimitExceeded when the version to prune carries a label.
  StatusOr<PutResult> Put(const Scope& scope, const PutRequest& request);

  // `reference`: a name or this scope's parameter ARN, optionally ":<version>" or ":<label>".
  // NotFound kParameterNotFound (no such parameter in this scope, including any ARN of another
  // account or region), kParameterVersionNotFound (no such version or label).
  StatusOr<Parameter> Get(const Scope& scope, std::string_view reference, Decryption decryption);
  // Get for each reference (at most 10, the model's bound); misses go to `invalid`.
  StatusOr<GetManyResult> GetMany(const Scope& scope, const std::vector<std::string>& references,
                                  Decryption decryption);

  // Removes the parameter with all its versions, labels and tags. kParameterNotFound.
  Status Delete(const Scope& scope, std::string_view name);
  StatusOr<DeleteManyResult> DeleteMany(const Scope& scope, const std::vector<std::string>& names);

  // Every kept version, oldest first, `max_results` per page from `after` (a Page::next).
  StatusOr<Page> History(const Scope& scope, std::string_view name, Decryption decryption, size_t max_results,
                         const std::optional<std::string>& after);

  // The newest versions of the parameters under `path` ("/a/b": /a/b/x, and with recursive
  // /a/b/x/y too), by name. Filters: Type, KeyId, Label (Equals). kValidation for a path that is
  // not one; kInvalidFilterKey / kInvalidFilterOption / kInvalidFilterValue.
  StatusOr<Page> ByPath(const Scope& scope, std::string_view path, bool recursive, const std::vector<Filter>& filters,
                        Decryption decryption, size_t max_results, const std::optional<std::string>& after);

  // Metadata of the scope's parameters, by name. Filters: Name (Equals, BeginsWith), Path
  // (OneLevel, Recursive), Type, KeyId, Tier, DataType (Equals).
  StatusOr<Page> Describe(const Scope& scope, const std::vector<Filter>& filters, size_t max_results,
                          const std::optional<std::string>& after);

  // Attaches `labels` to `version` (default: the newest), moving each from whatever version held
  // it. Labels that break the rules come back in invalid_labels and are not attached.
  // kParameterNotFound, kParameterVersionNotFound, kParameterVersionLabelLimitExceeded (> 10).
  StatusOr<LabelResult> Label(const Scope& scope, std::string_view name, std::optional<int64_t> version,
                              const std::vector<std::string>& labels);

  // Detaches `labels` from `version`; those it does not carry come back in `invalid`.
  // kParameterNotFound, kParameterVersionNotFound.
  StatusOr<UnlabelResult> Unlabel(const Scope& scope, std::string_view name, int64_t version,
                                  const std::vector<std::string>& labels);

  // Tags of parameter `name`. kInvalidResourceId when it does not exist.
  Status AddTags(const Scope& scope, std::string_view name, const std::vector<Tag>& tags);
  Status RemoveTags(const Scope& scope, std::string_view name, const std::vector<std::string>& keys);
  StatusOr<std::vector<Tag>> ListTags(const Scope& scope, std::string_view name);

  // Removes every parameter of `account`, in every region (iam::AccountReaper).
  Status ReapAccount(const AccountId& account);

 private:
  store::Store& store_;
  const kms::KeyRing& keys_;
  const Clock& clock_;
};

}  // namespace paddock::ssm
