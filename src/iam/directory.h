// IAM's identities and policies for each account: roles (with trust policies), users, inline
// policies, customer-managed policies with versions, attachments and tags, plus the read-only
// AWS-managed policies every account sees by ARN (iam/aws_managed_policies.json).
//
//   Directory dir(store, clock);
//   RoleSpec spec{.name = "app", .trust_policy = R"({"Version":"2012-10-17","Statement":[]})"};
//   ASSIGN_OR_RETURN(Role role, dir.CreateRole(account, spec));
//   ASSIGN_OR_RETURN(ManagedPolicy p, dir.CreatePolicy(account, PolicySpec{.name = "read", .document = doc}));
//   RETURN_IF_ERROR(dir.AttachPolicy(account, {PrincipalType::kRole, "app"}, p.arn));
//   ASSIGN_OR_RETURN(PrincipalPolicies pp, dir.PoliciesOf(account, {PrincipalType::kRole, "app"}));
//
// The Directory stores and validates; it enforces nothing (iam/policy/ evaluates). Names of
// roles, users and managed policies are unique per account ignoring case, as on AWS; lists are in
// name order. Errors carry IAM's messages and an iam::Error detail (iam/errors.h: kNoSuchEntity,
// kEntityAlreadyExists, ...), which the comments below name by IAM's codes (NoSuchEntity, ...).
// Users' access keys live in iam::Accounts (the one owner of `access_keys`).
//
// Key layout (iam/schema.h); `lname` is the lowercased name:
//   iam_roles          (account, lname) -> Role JSON (tags included)
//   iam_users          (account, lname) -> User JSON (tags included)
//   iam_policies       (account, lname) -> ManagedPolicy JSON (customer-managed only)
//   iam_policy_versions (account, policy lname, version number) -> {document, createdAt}
//   iam_inline         (account, "role"|"user", principal lname, policy name) -> document
//   iam_attached       (account, "role"|"user", principal lname, policy arn) -> ""
//   iam_attachments    (account, policy arn, "role"|"user", principal lname) -> ""   AttachmentCount, DeleteConflict
//   iam_boundaries     (account, policy arn, "role"|"user", principal lname) -> ""   PermissionsBoundaryUsageCount
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "iam/errors.h"
#include "iam/policy/policy.h"
#include "store/store.h"

namespace paddock::iam {

struct Tag {
  std::string key;
  std::string value;
  bool operator==(const Tag&) const = default;
};

struct Role {
  std::string id;  // "AROA" + 17 uppercase letters and digits
  std::string name;
  std::string path;  // "/" or "/a/b/"
  std::string arn;   // arn:aws:iam::<account>:role<path><name>
  std::string trust_policy;  // the AssumeRolePolicyDocument, as the caller sent it
  std::string description;
  int32_t max_session_duration = 3600;  // seconds, 3600..43200
  std::string boundary_arn;             // the permissions boundary's policy ARN, or empty
  std::vector<Tag> tags;
  TimePoint created_at;
};

struct User {
  std::string id;  // "AIDA" + 17
  std::string name;
  std::string path;
  std::string arn;  // arn:aws:iam::<account>:user<path><name>
  std::string boundary_arn;
  std::vector<Tag> tags;
  TimePoint created_at;
};

struct ManagedPolicy {
  std::string id;  // "ANPA" + 17
  std::string name;
  std::string path;
  std::string arn;  // arn:aws:iam::<account>:policy<path><name>, or arn:aws:iam::aws:policy<path><name>
  std::string description;
  std::string default_version;  // "v1"
  uint32_t next_version = 2;    // the number CreatePolicyVersion gives next
  bool aws_managed = false;
  std::vector<Tag> tags;
  TimePoint created_at;
  TimePoint updated_at;
  // Counted in the caller's account when read (not stored).
  int32_t attachment_count = 0;
  int32_t boundary_usage_count = 0;
};

struct PolicyVersion {
  std::string version_id;  // "v3"
  std::string document;
  bool is_default = false;
  TimePoint created_at;
};

enum class PrincipalType { kRole, kUser };

// A role or a user of one account, by name.
struct PrincipalRef {
  PrincipalType type;
  std::string name;
};

struct AttachedPolicy {
  std::string name;
  std::string arn;
};

// The policy documents that apply to a role or user (for the evaluator, STS and PassRole).
struct PrincipalPolicies {
  struct Document {
    std::string source;  // the managed policy's ARN, or the inline policy's name
    std::string text;    // the JSON document
  };
  std::vector<Document> identity;     // inline policies, then attached managed policies' default versions
  std::optional<Document> boundary;   // the permissions boundary's default version, if one is set
  // A role session's managed session policies (AssumeRole's PolicyArns), default versions; one
  // that is gone is an empty policy (it allows nothing), not no gate.
  std::vector<Document> session;
  // The role's or user's own tags (aws:PrincipalTag/<key>), read with the policies so a cache of
  // this answer serves both.
  std::vector<Tag> tags;
};

// A page of a listing: items in name order, and the marker to continue from when truncated.
template <typename T>
struct Page {
  std::vector<T> items;
  std::optional<std::string> next_marker;  // set iff the list is truncated
};

// Where a listing starts and how long a page is (IAM's Marker/MaxItems; MaxItems 1..1000,
// default 100).
struct PageRequest {
  std::string marker;  // empty: from the start; otherwise a next_marker this Directory returned
  int32_t max_items = 100;
};

struct RoleSpec {
  std::string name;
  std::string path = "/";
  std::string trust_policy;
  std::string description;
  int32_t max_session_duration = 3600;
  std::string boundary_arn;
  std::vector<Tag> tags;
};

struct UserSpec {
  std::string name;
  std::string path = "/";
  std::string boundary_arn;
  std::vector<Tag> tags;
};

struct PolicySpec {
  std::string name;
  std::string path = "/";
  std::string document;
  std::string description;
  std::vector<Tag> tags;
};

enum class PolicyScope { kAll, kAws, kLocal };

struct PolicyFilter {
  PolicyScope scope = PolicyScope::kAll;
  bool only_attached = false;
  std::string path_prefix = "/";
};

// Quotas (IAM's defaults; docs/contracts/iam.md).
inline constexpr size_t kMaxTags = 50;
inline constexpr size_t kMaxPolicyVersions = 5;
inline constexpr size_t kMaxManagedPoliciesPerPrincipal = 10;

// Per-account quotas (IAM's defaults; adjustable on AWS, so a parameter here).
struct DirectoryQuotas {
  size_t roles = 1000;     // RolesPerAccount
  size_t users = 5000;     // UsersPerAccount
  size_t policies = 1500;  // PoliciesPerAccount (customer-managed)
};

class Directory {
 public:
  Directory(store::Store& store, const Clock& clock, DirectoryQuotas quotas = {});

  // --- Roles.
  // EntityAlreadyExists for a taken name (ignoring case); MalformedPolicyDocument for a trust
  // policy that is not a JSON object; NoSuchEntity for a boundary ARN naming no policy;
  // LimitExceeded past kMaxTags tags or the account's role quota (CreateUser and CreatePolicy
  // likewise for theirs).
  StatusOr<Role> CreateRole(const AccountId& account, const RoleSpec& spec);
  // NoSuchEntity: "The role with name X cannot be found."
  StatusOr<Role> GetRole(const AccountId& account, std::string_view name);
  // nullopt when `arn` names no role of `account` (the name decides; the path must match too).
  StatusOr<std::optional<Role>> FindRoleByArn(const AccountId& account, std::string_view arn);
  StatusOr<Page<Role>> ListRoles(const AccountId& account, std::string_view path_prefix, const PageRequest& page);
  // DeleteConflict while managed policies are attached or inline policies remain.
  Status DeleteRole(const AccountId& account, std::string_view name);
  // Each set optional replaces the field.
  Status UpdateRole(const AccountId& account, std::string_view name, std::optional<std::string> description,
                    std::optional<int32_t> max_session_duration);
  Status UpdateTrustPolicy(const AccountId& account, std::string_view name, std::string document);
  // Creates the service-linked role of `service` ("ecs.amazonaws.com" -> AWSServiceRoleForECS at
  // /aws-service-role/ecs.amazonaws.com/). InvalidInput if it exists already (AWS's answer) or if
  // the service is not one Paddock knows.
  StatusOr<Role> CreateServiceLinkedRole(const AccountId& account, std::string_view service,
                                         std::string description);

  // --- Users.
  StatusOr<User> CreateUser(const AccountId& account, const UserSpec& spec);
  StatusOr<User> GetUser(const AccountId& account, std::string_view name);
  StatusOr<Page<User>> ListUsers(const AccountId& account, std::string_view path_prefix, const PageRequest& page);
  // DeleteConflict while the user has access keys, inline policies or attached policies.
  // `has_keys` answers, inside the delete's transaction, whether the user still has keys (keys are
  // iam::Accounts' records: pass Accounts::UserHasKeys), so a key created concurrently either
  // lands before the check and blocks the delete or finds the user gone.
  using KeyCheck = std::function<StatusOr<bool>(store::ReadTxn&, const AccountId&, std::string_view user)>;
  Status DeleteUser(const AccountId& account, std::string_view name, const KeyCheck& has_keys);
  // Inside another owner's transaction: the user `name` of `account`, or nullopt.
  static StatusOr<std::optional<User>> FindUser(store::ReadTxn& txn, const AccountId& account, std::string_view name);

  // --- Permissions boundary of a role or user: `arn` set (a managed policy visible to the
  // account, else NoSuchEntity "Policy X does not exist or is not attachable.") or nullopt (none).
  Status SetBoundary(const AccountId& account, const PrincipalRef& who, std::optional<std::string> arn);

  // --- Tags of a role or user. LimitExceeded past kMaxTags; an existing key's value is replaced.
  Status TagPrincipal(const AccountId& account, const PrincipalRef& who, const std::vector<Tag>& tags);
  Status UntagPrincipal(const AccountId& account, const PrincipalRef& who, const std::vector<std::string>& keys);

  // --- Inline policies of a role or user.
  Status PutInlinePolicy(const AccountId& account, const PrincipalRef& who, std::string_view policy_name,
                         std::string document);
  // NoSuchEntity: "The role policy with name X cannot be found." (user: "The user policy …").
  StatusOr<std::string> GetInlinePolicy(const AccountId& account, const PrincipalRef& who,
                                        std::string_view policy_name);
  StatusOr<Page<std::string>> ListInlinePolicies(const AccountId& account, const PrincipalRef& who,
                                                 const PageRequest& page);
  Status DeleteInlinePolicy(const AccountId& account, const PrincipalRef& who, std::string_view policy_name);

  // --- Managed policies. An `arn` is a customer-managed policy of `account` or an AWS-managed one.
  StatusOr<ManagedPolicy> CreatePolicy(const AccountId& account, const PolicySpec& spec);
  StatusOr<ManagedPolicy> GetPolicy(const AccountId& account, std::string_view arn);
  StatusOr<Page<ManagedPolicy>> ListPolicies(const AccountId& account, const PolicyFilter& filter,
                                             const PageRequest& page);
  // DeleteConflict while attached or used as a boundary, or while non-default versions exist.
  Status DeletePolicy(const AccountId& account, std::string_view arn);
  // LimitExceeded at kMaxPolicyVersions versions.
  StatusOr<PolicyVersion> CreatePolicyVersion(const AccountId& account, std::string_view arn, std::string document,
                                              bool set_as_default);
  StatusOr<PolicyVersion> GetPolicyVersion(const AccountId& account, std::string_view arn, std::string_view version);
  StatusOr<std::vector<PolicyVersion>> ListPolicyVersions(const AccountId& account, std::string_view arn);
  // DeleteConflict for the default version.
  Status DeletePolicyVersion(const AccountId& account, std::string_view arn, std::string_view version);
  Status SetDefaultPolicyVersion(const AccountId& account, std::string_view arn, std::string_view version);

  // --- Attachments. Attaching twice is OK (as on AWS); detaching an unattached policy is
  // NoSuchEntity. LimitExceeded past kMaxManagedPoliciesPerPrincipal.
  Status AttachPolicy(const AccountId& account, const PrincipalRef& who, std::string_view arn);
  Status DetachPolicy(const AccountId& account, const PrincipalRef& who, std::string_view arn);
  StatusOr<Page<AttachedPolicy>> ListAttachedPolicies(const AccountId& account, const PrincipalRef& who,
                                                      std::string_view path_prefix, const PageRequest& page);

  // --- For the evaluator, STS and PassRole.
  // NoSuchEntity when the role or user does not exist. `session_policy_arns` (a role session's
  // PolicyArns) are read into `session`. Read from the store on every call: the one cache over
  // it is the authorizer's (iam/api/authorizer.h), which keys on Generation() and kCacheTtl.
  StatusOr<PrincipalPolicies> PoliciesOf(const AccountId& account, const PrincipalRef& who,
                                         const std::vector<std::string>& session_policy_arns = {});
  // How long a cache over PoliciesOf may serve an answer: another process's writes (`paddock
  // admin delete-account`, another server on the store) must show within it.
  static constexpr Duration kCacheTtl = std::chrono::seconds(1);
  // Changes with every write through this Directory: an answer of PoliciesOf taken at generation
  // G is current while Generation() is still G and it is younger than kCacheTtl (another
  // process's writes show within that).
  uint64_t Generation() const { return generation_.load(std::memory_order_acquire); }

  // Removes every IAM record of `account` (the AWS-managed catalogue is not the account's).
  Status ReapAccount(const AccountId& account);

 private:
  // store_.Write, then a new generation: every cached PoliciesOf answer is stale.
  Status Write(const std::function<Status(store::WriteTxn&)>& fn);

  store::Store& store_;
  const Clock& clock_;
  const DirectoryQuotas quotas_;
  std::atomic<uint64_t> generation_{0};
};

// kMalformedPolicyDocument with AWS's message for the first problem unless `document` is a valid
// policy document of `kind` (the evaluator's own parser: iam/policy/policy.h), so that nothing
// stored is a document the evaluator cannot read. Trust policies are kTrust; inline, managed and
// boundary documents kIdentity.
Status CheckPolicyDocument(std::string_view document, policy::DocumentKind kind);

// The AWS-managed policies (iam/aws_managed_policies.json), parsed once: each with its default
// version's document.
struct AwsManagedPolicy {
  ManagedPolicy policy;
  std::string document;
};
const std::vector<AwsManagedPolicy>& AwsManagedPolicies();
// Whether `arn` names an AWS-managed policy ("arn:aws:iam::aws:policy/...").
bool IsAwsManagedArn(std::string_view arn);

std::string_view PrincipalTypeName(PrincipalType t);  // "role" | "user"

}  // namespace paddock::iam
