// secretsmanager/secrets: Secrets Manager's owner — named secrets per (account, region), each a
// set of versions carrying staging labels (AWSCURRENT, AWSPREVIOUS, AWSPENDING, or the caller's),
// every value sealed at rest with the node's kms::KeyRing, bound to (account, region, secret ARN,
// version id). Typed values in and out; the wire format is the adapter's
// (secretsmanager/api/secrets_manager_service.h).
//
//   secretsmanager::Secrets secrets(store, keyring, SystemClock::Get());
//   ASSIGN_OR_RETURN(auto made, secrets.Create(scope, {.name = "db/password",
//                                                      .value = SecretValue::String("hunter2")}));
//   ASSIGN_OR_RETURN(SecretVersion v, secrets.GetValue(scope, "db/password", {}));  // AWSCURRENT
//
// Every record is keyed by (account, region, name): one account never reads, lists, changes or
// deletes another's secrets, whatever name or ARN it passes (docs/contracts/secretsmanager.md).
// A secret id is a name, the secret's full ARN or a partial ARN (without the "-XXXXXX" suffix).
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
#include "secretsmanager/errors.h"
#include "store/store.h"

namespace paddock::secretsmanager {

inline constexpr std::string_view kDefaultKeyId = "alias/aws/secretsmanager";
inline constexpr std::string_view kCurrent = "AWSCURRENT";
inline constexpr std::string_view kPrevious = "AWSPREVIOUS";

// A secret's value: SecretString (text) or SecretBinary (bytes).
struct SecretValue {
  enum class Kind { kString, kBinary };
  Kind kind = Kind::kString;
  std::string bytes = {};
  static SecretValue String(std::string s) { return {Kind::kString, std::move(s)}; }
  static SecretValue Binary(std::string b) { return {Kind::kBinary, std::move(b)}; }
  bool operator==(const SecretValue&) const = default;
};

struct Tag {
  std::string key = {};
  std::string value = {};
  bool operator==(const Tag&) const = default;
};

struct CreateRequest {
  std::string name = {};
  std::optional<SecretValue> value = {};  // none: a secret without versions
  std::optional<std::string> key_id = {};  // default kDefaultKeyId
  std::optional<std::string> description = {};
  std::vector<Tag> tags = {};
  // The first version's id (ClientRequestToken, 32-64 characters); default a new UUID. A repeat
  // with the same token and value answers the first call's result and writes nothing.
  std::optional<std::string> token = {};
};

// What a write answers: CreateSecret, PutSecretValue, UpdateSecret.
struct WriteResult {
  std::string arn = {};
  std::string name = {};
  std::optional<std::string> version_id;  // the version written (or found, for a repeat)
  std::vector<std::string> stages = {};        // its stages
};

struct VersionInfo {
  std::string id = {};
  std::vector<std::string> stages = {};  // empty: deprecated
  TimePoint created = {};
  std::string key_id = {};
};

struct SecretInfo {
  std::string arn = {};
  std::string name = {};
  std::string description = {};
  std::string key_id;  // empty: the default key (DescribeSecret then names none, as AWS)
  TimePoint created = {};
  TimePoint last_changed = {};
  std::optional<TimePoint> deleted = {};        // when it was marked for deletion
  std::optional<TimePoint> deletion_date = {};  // when its recovery window ends
  std::vector<Tag> tags = {};
  std::vector<VersionInfo> versions = {};  // oldest first
};

// GetSecretValue's answer.
struct SecretVersion {
  std::string arn = {};
  std::string name = {};
  std::string version_id = {};
  SecretValue value = {};
  std::vector<std::string> stages = {};
  TimePoint created = {};
};

// Which version a read wants: by id, by stage, or both (they must agree); neither is AWSCURRENT.
struct VersionSelector {
  std::optional<std::string> version_id = {};
  std::optional<std::string> stage = {};
};

struct PutRequest {
  std::string secret_id = {};
  SecretValue value = {};
  std::optional<std::string> token = {};  // the new version's id (default a new UUID)
  // The new version's stages; default AWSCURRENT (the old current becomes AWSPREVIOUS).
  std::optional<std::vector<std::string>> stages = {};
};

struct UpdateRequest {
  std::string secret_id = {};
  std::optional<std::string> description = {};
  std::optional<std::string> key_id = {};
  std::optional<SecretValue> value = {};  // a new AWSCURRENT version, as PutRequest
  std::optional<std::string> token = {};
};

// UpdateSecretVersionStage.
struct StageMove {
  std::string secret_id = {};
  std::string stage = {};
  std::optional<std::string> remove_from = {};
  std::optional<std::string> move_to = {};
};

struct DeleteRequest {
  std::string secret_id = {};
  std::optional<int64_t> recovery_days = {};  // 7-30, default 30
  bool force = false;                     // ForceDeleteWithoutRecovery
};

struct DeleteResult {
  std::string arn = {};
  std::string name = {};
  TimePoint deletion_date = {};
};

// A ListSecrets filter: key name | description | tag-key | tag-value | all; each value matches
// as a prefix, negated by a leading '!'. A secret passes when every filter has a matching value.
struct ListFilter {
  std::string key = {};
  std::vector<std::string> values = {};
};

struct ListRequest {
  std::vector<ListFilter> filters = {};
  bool include_planned_deletion = false;
  bool descending = false;  // SortOrder desc (by name)
  size_t max_results = 100;
  std::optional<std::string> after = {};  // a SecretPage::next
};

struct SecretPage {
  std::vector<SecretInfo> items = {};
  std::optional<std::string> next = {};  // the owner's position; the adapter seals it in a NextToken
};

struct VersionPage {
  std::string arn = {};
  std::string name = {};
  std::vector<VersionInfo> items = {};
  std::optional<std::string> next = {};
};

class Secrets {
 public:
  static constexpr size_t kMaxVersions = 100;  // deprecated (stageless) versions beyond go, oldest first
  static constexpr size_t kMaxStagesPerVersion = 20;
  static constexpr size_t kMaxTags = 50;
  // Scanned rows per ListSecrets page with filters, so a filter that matches little still ends a
  // page (with a NextToken) in bounded time.
  static constexpr size_t kListScanBudget = 5000;

  // `store`, `keys` and `clock` must outlive this.
  Secrets(store::Store& store, const kms::KeyRing& keys, const Clock& clock)
      : store_(store), keys_(keys), clock_(clock) {}

  // Creates a secret (and, with a value, its first version, AWSCURRENT). Failures, each writing
  // nothing: kValidation (name), kInvalidParameter (a key id or tag refused), kResourceExists (the
  // name is taken; or the token names a version whose value differs), kInvalidRequest (the name
  // belongs to a secret marked for deletion).
  StatusOr<WriteResult> Create(const Scope& scope, const CreateRequest& request);

  // The value of the selected version. kResourceNotFound (no such secret, version or stage),
  // kInvalidRequest (marked for deletion; id and stage disagree), kDecryptionFailure.
  StatusOr<SecretVersion> GetValue(const Scope& scope, std::string_view secret_id, const VersionSelector& which);

  // A new version. Stages move to it in the same transaction: AWSCURRENT's old holder becomes
  // AWSPREVIOUS. A repeat with the token of an existing version and the same value answers that
  // version; with another value kResourceExists.
  StatusOr<WriteResult> Put(const Scope& scope, const PutRequest& request);
  StatusOr<WriteResult> Update(const Scope& scope, const UpdateRequest& request);
  StatusOr<WriteResult> UpdateStage(const Scope& scope, const StageMove& move);

  StatusOr<SecretInfo> Describe(const Scope& scope, std::string_view secret_id);
  StatusOr<SecretPage> List(const Scope& scope, const ListRequest& request);
  // Versions oldest first; without include_deprecated only those with a stage.
  StatusOr<VersionPage> ListVersions(const Scope& scope, std::string_view secret_id, bool include_deprecated,
                                     size_t max_results, const std::optional<std::string>& after);

  // Marks the secret for deletion after the recovery window, or with force removes it now.
  StatusOr<DeleteResult> Delete(const Scope& scope, const DeleteRequest& request);
  // Cancels a scheduled deletion (a secret not marked answers as restored).
  StatusOr<WriteResult> Restore(const Scope& scope, std::string_view secret_id);

  Status TagResource(const Scope& scope, std::string_view secret_id, const std::vector<Tag>& tags);
  Status UntagResource(const Scope& scope, std::string_view secret_id, const std::vector<std::string>& keys);

  // The ARN `secret_id` names in this scope, or nullopt when it names no secret here (the
  // front's authorization question asks about it).
  StatusOr<std::optional<std::string>> ArnOf(const Scope& scope, std::string_view secret_id);
  // The secret's tags for aws:ResourceTag conditions; empty for a missing secret.
  StatusOr<std::vector<Tag>> TagsOf(const Scope& scope, std::string_view secret_id);

  // Removes, node-wide, up to `limit` secrets whose recovery window ended by now. Returns how many.
  StatusOr<size_t> ReapDeleted(size_t limit = 1000);
  // Removes every secret of `account`, in every region (iam::AccountReaper).
  Status ReapAccount(const AccountId& account);

 private:
  store::Store& store_;
  const kms::KeyRing& keys_;
  const Clock& clock_;
};

}  // namespace paddock::secretsmanager
