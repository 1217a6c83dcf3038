#include "iam/directory.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <fmt/format.h>
#include <map>

#include "common/encoding.h"
#include "iam/errors.h"
#include "iam/internal/embedded.h"
#include "store/key.h"

namespace paddock::iam {

namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kRoles = "iam_roles";
constexpr std::string_view kUsers = "iam_users";
constexpr std::string_view kPolicies = "iam_policies";
constexpr std::string_view kVersions = "iam_policy_versions";
constexpr std::string_view kInline = "iam_inline";
constexpr std::string_view kAttached = "iam_attached";
constexpr std::string_view kAttachments = "iam_attachments";
constexpr std::string_view kBoundaries = "iam_boundaries";
constexpr std::string_view kIdAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr std::string_view kAwsPolicyPrefix = "arn:aws:iam::aws:policy/";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status NoSuchEntity(std::string m) { return NotFound(std::move(m), Error::kNoSuchEntity); }
Status DeleteConflict(std::string m) { return FailedPrecondition(std::move(m), Error::kDeleteConflict); }
Status LimitExceeded(std::string m) { return ResourceExhausted(std::move(m), Error::kLimitExceeded); }

std::string NewId(std::string_view prefix) { return std::string(prefix) + RandomString(17, kIdAlphabet); }

json::array EncodeTags(const std::vector<Tag>& tags) {
  json::array a;
  for (const auto& t : tags) a.push_back(json::object{{"k", t.key}, {"v", t.value}});
  return a;
}

std::vector<Tag> DecodeTags(const json::object& o) {
  std::vector<Tag> out;
  if (const json::value* v = o.if_contains("tags"); v && v->is_array())
    for (const auto& t : v->as_array())
      out.push_back(Tag{std::string(t.at("k").as_string()), std::string(t.at("v").as_string())});
  return out;
}

std::string Str(const json::object& o, std::string_view k) {
  const json::value* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

StatusOr<json::object> ParseRecord(std::string_view text, std::string_view what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss(fmt::format("corrupt {} record", what));
  return std::move(v.as_object());
}

std::string EncodeRole(const Role& r) {
  return json::serialize(json::object{{"id", r.id},
                                      {"name", r.name},
                                      {"path", r.path},
                                      {"arn", r.arn},
                                      {"trust", r.trust_policy},
                                      {"description", r.description},
                                      {"maxSession", r.max_session_duration},
                                      {"boundary", r.boundary_arn},
                                      {"tags", EncodeTags(r.tags)},
                                      {"createdAt", EpochMillis(r.created_at)}});
}

StatusOr<Role> DecodeRole(std::string_view text) {
  ASSIGN_OR_RETURN(json::object o, ParseRecord(text, "role"));
  Role r;
  r.id = Str(o, "id");
  r.name = Str(o, "name");
  r.path = Str(o, "path");
  r.arn = Str(o, "arn");
  r.trust_policy = Str(o, "trust");
  r.description = Str(o, "description");
  r.max_session_duration = static_cast<int32_t>(o.at("maxSession").to_number<int64_t>());
  r.boundary_arn = Str(o, "boundary");
  r.tags = DecodeTags(o);
  r.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
  return r;
}

std::string EncodeUser(const User& u) {
  return json::serialize(json::object{{"id", u.id},
                                      {"name", u.name},
                                      {"path", u.path},
                                      {"arn", u.arn},
                                      {"boundary", u.boundary_arn},
                                      {"tags", EncodeTags(u.tags)},
                                      {"createdAt", EpochMillis(u.created_at)}});
}

StatusOr<User> DecodeUser(std::string_view text) {
  ASSIGN_OR_RETURN(json::object o, ParseRecord(text, "user"));
  User u;
  u.id = Str(o, "id");
  u.name = Str(o, "name");
  u.path = Str(o, "path");
  u.arn = Str(o, "arn");
  u.boundary_arn = Str(o, "boundary");
  u.tags = DecodeTags(o);
  u.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
  return u;
}

std::string EncodePolicy(const ManagedPolicy& p) {
  return json::serialize(json::object{{"id", p.id},
                                      {"name", p.name},
                                      {"path", p.path},
                                      {"arn", p.arn},
                                      {"description", p.description},
                                      {"defaultVersion", p.default_version},
                                      {"nextVersion", p.next_version},
                                      {"tags", EncodeTags(p.tags)},
                                      {"createdAt", EpochMillis(p.created_at)},
                                      {"updatedAt", EpochMillis(p.updated_at)}});
}

StatusOr<ManagedPolicy> DecodePolicy(std::string_view text) {
  ASSIGN_OR_RETURN(json::object o, ParseRecord(text, "policy"));
  ManagedPolicy p;
  p.id = Str(o, "id");
  p.name = Str(o, "name");
  p.path = Str(o, "path");
  p.arn = Str(o, "arn");
  p.description = Str(o, "description");
  p.default_version = Str(o, "defaultVersion");
  p.next_version = static_cast<uint32_t>(o.at("nextVersion").to_number<int64_t>());
  p.tags = DecodeTags(o);
  p.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
  p.updated_at = FromEpochMillis(o.at("updatedAt").to_number<int64_t>());
  return p;
}

std::string EncodeVersion(std::string_view document, TimePoint created) {
  return json::serialize(json::object{{"document", document}, {"createdAt", EpochMillis(created)}});
}

std::string PrincipalArn(const AccountId& account, std::string_view kind, std::string_view path,
                         std::string_view name) {
  return fmt::format("arn:aws:iam::{}:{}{}{}", account.str(), kind, path, name);
}

// "v3" -> 3; 0 for anything else.
uint64_t VersionNumber(std::string_view v) {
  if (v.size() < 2 || v[0] != 'v') return 0;
  uint64_t n = 0;
  for (char c : v.substr(1)) {
    if (c < '0' || c > '9' || n > 1000000) return 0;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

const AwsManagedPolicy* FindAwsPolicy(std::string_view arn) {
  for (const auto& p : AwsManagedPolicies())
    if (p.policy.arn == arn) return &p;
  return nullptr;
}

// The customer-managed policy `arn` names in `account`: its lowercased name, when the ARN is
// well-formed for the account (path and name matched against the record by the caller).
std::optional<std::string> LocalPolicyKeyName(const AccountId& account, std::string_view arn) {
  const std::string prefix = fmt::format("arn:aws:iam::{}:policy/", account.str());
  if (!arn.starts_with(prefix)) return std::nullopt;
  std::string_view rest = arn.substr(prefix.size() - 1);  // "/path/name"
  size_t slash = rest.rfind('/');
  std::string_view name = rest.substr(slash + 1);
  if (name.empty()) return std::nullopt;
  return Lower(name);
}

std::string_view TableFor(PrincipalType t) { return t == PrincipalType::kRole ? kRoles : kUsers; }

Status NoSuchPrincipal(const PrincipalRef& who) {
  return NoSuchEntity(fmt::format("The {} with name {} cannot be found.", PrincipalTypeName(who.type), who.name));
}

// Every key of `table` under `prefix`, in order.
StatusOr<std::vector<store::Row>> ScanAll(store::ReadTxn& txn, std::string_view table, const std::string& prefix) {
  std::vector<store::Row> out;
  store::Range range = store::PrefixRange(prefix);
  while (true) {
    ASSIGN_OR_RETURN(auto rows, txn.Scan(table, range, 500));
    if (rows.empty()) return out;
    range.begin = store::KeySuccessor(rows.back().key);
    for (auto& r : rows) out.push_back(std::move(r));
    if (rows.size() < 500) return out;
  }
}

StatusOr<int32_t> CountPrefix(store::ReadTxn& txn, std::string_view table, const std::string& prefix) {
  ASSIGN_OR_RETURN(auto rows, ScanAll(txn, table, prefix));
  return static_cast<int32_t>(rows.size());
}

// The last string component of a key.
StatusOr<std::string> LastStr(std::string_view key, int components) {
  store::KeyReader r(key);
  std::string s;
  for (int i = 0; i < components; ++i) {
    ASSIGN_OR_RETURN(s, r.Str());
  }
  return s;
}

// Pages `items` (already in order, each with its sort name): IAM's Marker is the sort name of the
// first item of the next page.
template <typename T>
Page<T> Paginate(std::vector<std::pair<std::string, T>> items, const PageRequest& req) {
  Page<T> page;
  size_t i = 0;
  if (!req.marker.empty())
    while (i < items.size() && items[i].first < req.marker) ++i;
  const size_t max = static_cast<size_t>(std::clamp(req.max_items, 1, 1000));
  for (; i < items.size(); ++i) {
    if (page.items.size() == max) {
      page.next_marker = items[i].first;
      break;
    }
    page.items.push_back(std::move(items[i].second));
  }
  return page;
}

// LimitExceeded when `account` already holds `quota` rows of `table`.
Status CheckQuota(store::ReadTxn& txn, std::string_view table, const AccountId& account, size_t quota,
                  std::string_view name) {
  ASSIGN_OR_RETURN(auto rows, txn.Scan(table, store::PrefixRange(Key().Str(account.str()).Done()), quota));
  if (rows.size() >= quota) return LimitExceeded(fmt::format("Cannot exceed quota for {}: {}.", name, quota));
  return OkStatus();
}

Status CheckTags(const std::vector<Tag>& tags, std::string_view quota) {
  if (tags.size() > kMaxTags) return LimitExceeded(fmt::format("Cannot exceed quota for {}: {}.", quota, kMaxTags));
  for (size_t i = 0; i < tags.size(); ++i)
    for (size_t j = i + 1; j < tags.size(); ++j)
      if (Lower(tags[i].key) == Lower(tags[j].key))
        return InvalidArgument("Duplicate tag keys found. Please note that Tag keys are case insensitive.",
                               Error::kInvalidInput);
  return OkStatus();
}

}  // namespace

std::string_view PrincipalTypeName(PrincipalType t) { return t == PrincipalType::kRole ? "role" : "user"; }

Status CheckPolicyDocument(std::string_view document, policy::DocumentKind kind) {
  return policy::ParsePolicy(document, kind).status();
}

bool IsAwsManagedArn(std::string_view arn) { return arn.starts_with(kAwsPolicyPrefix); }

const std::vector<AwsManagedPolicy>& AwsManagedPolicies() {
  static const std::vector<AwsManagedPolicy>* catalogue = [] {
    auto* out = new std::vector<AwsManagedPolicy>();
    // The catalogue is compiled in; a parse failure is a build defect, caught by iam_test.
    json::value v = json::parse(AwsManagedPoliciesJson());
    for (const auto& e : v.as_object().at("policies").as_array()) {
      const json::object& o = e.as_object();
      AwsManagedPolicy p;
      p.policy.name = Str(o, "name");
      p.policy.path = Str(o, "path");
      p.policy.id = Str(o, "id");
      p.policy.arn = fmt::format("arn:aws:iam::aws:policy{}{}", p.policy.path, p.policy.name);
      p.policy.description = Str(o, "description");
      p.policy.default_version = Str(o, "defaultVersion");
      p.policy.aws_managed = true;
      p.policy.created_at = FromEpochMillis(o.at("createDate").to_number<int64_t>() * 1000);
      p.policy.updated_at = FromEpochMillis(o.at("updateDate").to_number<int64_t>() * 1000);
      p.document = json::serialize(o.at("document"));
      out->push_back(std::move(p));
    }
    std::sort(out->begin(), out->end(),
              [](const AwsManagedPolicy& a, const AwsManagedPolicy& b) { return Lower(a.policy.name) < Lower(b.policy.name); });
    return out;
  }();
  return *catalogue;
}

Directory::Directory(store::Store& store, const Clock& clock, DirectoryQuotas quotas)
    : store_(store), clock_(clock), quotas_(quotas) {}

Status Directory::Write(const std::function<Status(store::WriteTxn&)>& fn) {
  Status s = store_.Write(fn);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return s;
}

namespace {

StatusOr<std::optional<Role>> ReadRole(store::ReadTxn& txn, const AccountId& account, std::string_view name) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kRoles, Key().Str(account.str()).Str(Lower(name)).Done()));
  if (!v) return std::optional<Role>();
  ASSIGN_OR_RETURN(Role r, DecodeRole(*v));
  return std::optional<Role>(std::move(r));
}

StatusOr<std::optional<User>> ReadUser(store::ReadTxn& txn, const AccountId& account, std::string_view name) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kUsers, Key().Str(account.str()).Str(Lower(name)).Done()));
  if (!v) return std::optional<User>();
  ASSIGN_OR_RETURN(User u, DecodeUser(*v));
  return std::optional<User>(std::move(u));
}

// The customer-managed policy `arn` of `account`, or nullopt (a wrong path counts as absent).
StatusOr<std::optional<ManagedPolicy>> ReadLocalPolicy(store::ReadTxn& txn, const AccountId& account,
                                                       std::string_view arn) {
  std::optional<std::string> lname = LocalPolicyKeyName(account, arn);
  if (!lname) return std::optional<ManagedPolicy>();
  ASSIGN_OR_RETURN(auto v, txn.Get(kPolicies, Key().Str(account.str()).Str(*lname).Done()));
  if (!v) return std::optional<ManagedPolicy>();
  ASSIGN_OR_RETURN(ManagedPolicy p, DecodePolicy(*v));
  if (p.arn != arn) return std::optional<ManagedPolicy>();
  return std::optional<ManagedPolicy>(std::move(p));
}

// Any managed policy visible to `account` (its own or AWS's), with its usage counts.
StatusOr<std::optional<ManagedPolicy>> ReadAnyPolicy(store::ReadTxn& txn, const AccountId& account,
                                                     std::string_view arn) {
  std::optional<ManagedPolicy> p;
  if (IsAwsManagedArn(arn)) {
    if (const AwsManagedPolicy* a = FindAwsPolicy(arn)) p = a->policy;
  } else {
    ASSIGN_OR_RETURN(p, ReadLocalPolicy(txn, account, arn));
  }
  if (!p) return p;
  ASSIGN_OR_RETURN(p->attachment_count, CountPrefix(txn, kAttachments, Key().Str(account.str()).Str(p->arn).Done()));
  ASSIGN_OR_RETURN(p->boundary_usage_count, CountPrefix(txn, kBoundaries, Key().Str(account.str()).Str(p->arn).Done()));
  return p;
}

// The default version's document of a visible managed policy.
StatusOr<std::optional<std::string>> DefaultDocument(store::ReadTxn& txn, const AccountId& account,
                                                     std::string_view arn) {
  if (IsAwsManagedArn(arn)) {
    if (const AwsManagedPolicy* a = FindAwsPolicy(arn)) return std::optional<std::string>(a->document);
    return std::optional<std::string>();
  }
  ASSIGN_OR_RETURN(auto p, ReadLocalPolicy(txn, account, arn));
  if (!p) return std::optional<std::string>();
  ASSIGN_OR_RETURN(auto v, txn.Get(kVersions, Key().Str(account.str()).Str(Lower(p->name)).U64(VersionNumber(p->default_version)).Done()));
  if (!v) return DataLoss(fmt::format("policy {} lacks its default version", arn));
  ASSIGN_OR_RETURN(json::object o, ParseRecord(*v, "policy version"));
  return std::optional<std::string>(Str(o, "document"));
}

Status PolicyNotAttachable(std::string_view arn) {
  return NoSuchEntity(fmt::format("Policy {} does not exist or is not attachable.", arn));
}

// CreateRole's and CreateUser's write of a new role or user `name` of `account`, whose record is
// `record`: the name must be free (ignoring case) and the account under `quota`; a boundary
// (`boundary_arn`, if set) must be a visible policy, whose usage row is added.
Status InsertPrincipal(store::WriteTxn& txn, const AccountId& account, PrincipalType type, const std::string& name,
                       const std::string& boundary_arn, size_t quota, std::string_view quota_name,
                       const std::string& record) {
  const bool role = type == PrincipalType::kRole;
  const std::string_view table = role ? kRoles : kUsers;
  const std::string lname = Lower(name);
  ASSIGN_OR_RETURN(auto existing, txn.Get(table, Key().Str(account.str()).Str(lname).Done()));
  if (existing)
    return AlreadyExists(fmt::format("{} with name {} already exists.", role ? "Role" : "User", name),
                         Error::kEntityAlreadyExists);
  RETURN_IF_ERROR(CheckQuota(txn, table, account, quota, quota_name));
  if (!boundary_arn.empty()) {
    ASSIGN_OR_RETURN(auto b, ReadAnyPolicy(txn, account, boundary_arn));
    if (!b) return PolicyNotAttachable(boundary_arn);
    RETURN_IF_ERROR(
        txn.Put(kBoundaries, Key().Str(account.str()).Str(boundary_arn).Str(PrincipalTypeName(type)).Str(lname).Done(), ""));
  }
  return txn.Put(table, Key().Str(account.str()).Str(lname).Done(), record);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Roles

StatusOr<Role> Directory::CreateRole(const AccountId& account, const RoleSpec& spec) {
  RETURN_IF_ERROR(CheckPolicyDocument(spec.trust_policy, policy::DocumentKind::kTrust));
  RETURN_IF_ERROR(CheckTags(spec.tags, "TagsPerRole"));
  Role role;
  role.id = NewId("AROA");
  role.name = spec.name;
  role.path = spec.path.empty() ? "/" : spec.path;
  role.arn = PrincipalArn(account, "role", role.path, role.name);
  role.trust_policy = spec.trust_policy;
  role.description = spec.description;
  role.max_session_duration = spec.max_session_duration;
  role.boundary_arn = spec.boundary_arn;
  role.tags = spec.tags;
  role.created_at = clock_.Now();
  RETURN_IF_ERROR(Write([&](store::WriteTxn& txn) -> Status {
    return InsertPrincipal(txn, account, PrincipalType::kRole, role.name, role.boundary_arn, quotas_.roles,
                           "RolesPerAccount", EncodeRole(role));
  }));
  return role;
}

StatusOr<Role> Directory::GetRole(const AccountId& account, std::string_view name) {
  std::optional<Role> role;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(role, ReadRole(txn, account, name));
    return OkStatus();
  }));
  if (!role) return NoSuchPrincipal({PrincipalType::kRole, std::string(name)});
  return *role;
}

StatusOr<std::optional<Role>> Directory::FindRoleByArn(const AccountId& account, std::string_view arn) {
  const std::string prefix = fmt::format("arn:aws:iam::{}:role/", account.str());
  if (!arn.starts_with(prefix)) return std::optional<Role>();
  std::string_view name = arn.substr(arn.rfind('/') + 1);
  if (name.empty()) return std::optional<Role>();
  std::optional<Role> role;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(role, ReadRole(txn, account, name));
    return OkStatus();
  }));
  if (role && role->arn != arn) role.reset();
  return role;
}

StatusOr<Page<Role>> Directory::ListRoles(const AccountId& account, std::string_view path_prefix,
                                          const PageRequest& page) {
  std::vector<std::pair<std::string, Role>> items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, ScanAll(txn, kRoles, Key().Str(account.str()).Done()));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(Role r, DecodeRole(row.value));
      if (!r.path.starts_with(path_prefix)) continue;
      std::string lname = Lower(r.name);
      items.emplace_back(std::move(lname), std::move(r));
    }
    return OkStatus();
  }));
  return Paginate(std::move(items), page);
}

namespace {

// DeleteConflict unless `who` has no inline and no attached managed policy.
Status CheckNoPolicies(store::ReadTxn& txn, const AccountId& account, const PrincipalRef& who) {
  const std::string lname = Lower(who.name);
  const std::string_view kind = PrincipalTypeName(who.type);
  ASSIGN_OR_RETURN(int32_t attached, CountPrefix(txn, kAttached, Key().Str(account.str()).Str(kind).Str(lname).Done()));
  if (attached > 0) return DeleteConflict("Cannot delete entity, must detach all policies first.");
  ASSIGN_OR_RETURN(int32_t inline_count, CountPrefix(txn, kInline, Key().Str(account.str()).Str(kind).Str(lname).Done()));
  if (inline_count > 0) return DeleteConflict("Cannot delete entity, must delete policies first.");
  return OkStatus();
}

}  // namespace

Status Directory::DeleteRole(const AccountId& account, std::string_view name) {
  const PrincipalRef who{PrincipalType::kRole, std::string(name)};
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto role, ReadRole(txn, account, name));
    if (!role) return NoSuchPrincipal(who);
    RETURN_IF_ERROR(CheckNoPolicies(txn, account, who));
    const std::string lname = Lower(name);
    if (!role->boundary_arn.empty())
      RETURN_IF_ERROR(txn.Delete(kBoundaries, Key().Str(account.str()).Str(role->boundary_arn).Str("role").Str(lname).Done()));
    return txn.Delete(kRoles, Key().Str(account.str()).Str(lname).Done());
  });
}

Status Directory::UpdateRole(const AccountId& account, std::string_view name, std::optional<std::string> description,
                             std::optional<int32_t> max_session_duration) {
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto role, ReadRole(txn, account, name));
    if (!role) return NoSuchPrincipal({PrincipalType::kRole, std::string(name)});
    if (description) role->description = *description;
    if (max_session_duration) role->max_session_duration = *max_session_duration;
    return txn.Put(kRoles, Key().Str(account.str()).Str(Lower(name)).Done(), EncodeRole(*role));
  });
}

Status Directory::UpdateTrustPolicy(const AccountId& account, std::string_view name, std::string document) {
  RETURN_IF_ERROR(CheckPolicyDocument(document, policy::DocumentKind::kTrust));
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto role, ReadRole(txn, account, name));
    if (!role) return NoSuchPrincipal({PrincipalType::kRole, std::string(name)});
    role->trust_policy = document;
    return txn.Put(kRoles, Key().Str(account.str()).Str(Lower(name)).Done(), EncodeRole(*role));
  });
}

StatusOr<Role> Directory::CreateServiceLinkedRole(const AccountId& account, std::string_view service,
                                                  std::string description) {
  // The services Paddock knows the service-linked role of: name suffix and managed policy.
  struct Known {
    std::string_view service;
    std::string_view role_suffix;
  };
  static constexpr Known kKnown[] = {{"ecs.amazonaws.com", "ECS"}};
  const Known* known = nullptr;
  for (const auto& k : kKnown)
    if (k.service == service) known = &k;
  if (known == nullptr)
    return InvalidArgument(fmt::format("Service role name for {} has not been defined.", service).substr(0, 512),
                           Error::kInvalidInput);
  RoleSpec spec;
  spec.name = fmt::format("AWSServiceRoleFor{}", known->role_suffix);
  spec.path = fmt::format("/aws-service-role/{}/", service);
  spec.description = std::move(description);
  spec.trust_policy = fmt::format(
      R"({{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"Service":"{}"}},"Action":"sts:AssumeRole"}}]}})",
      service);
  StatusOr<Role> role = CreateRole(account, spec);
  if (!role.ok() && IsError(role.status(), Error::kEntityAlreadyExists))
    return InvalidArgument(fmt::format("Service role name {} has been taken in this account, please try a different "
                                       "suffix.",
                                       spec.name),
                           Error::kInvalidInput);
  return role;
}

// ---------------------------------------------------------------------------------------------
// Users

StatusOr<User> Directory::CreateUser(const AccountId& account, const UserSpec& spec) {
  RETURN_IF_ERROR(CheckTags(spec.tags, "TagsPerUser"));
  User user;
  user.id = NewId("AIDA");
  user.name = spec.name;
  user.path = spec.path.empty() ? "/" : spec.path;
  user.arn = PrincipalArn(account, "user", user.path, user.name);
  user.boundary_arn = spec.boundary_arn;
  user.tags = spec.tags;
  user.created_at = clock_.Now();
  RETURN_IF_ERROR(Write([&](store::WriteTxn& txn) -> Status {
    return InsertPrincipal(txn, account, PrincipalType::kUser, user.name, user.boundary_arn, quotas_.users,
                           "UsersPerAccount", EncodeUser(user));
  }));
  return user;
}

StatusOr<User> Directory::GetUser(const AccountId& account, std::string_view name) {
  std::optional<User> user;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(user, ReadUser(txn, account, name));
    return OkStatus();
  }));
  if (!user) return NoSuchPrincipal({PrincipalType::kUser, std::string(name)});
  return *user;
}

StatusOr<Page<User>> Directory::ListUsers(const AccountId& account, std::string_view path_prefix,
                                          const PageRequest& page) {
  std::vector<std::pair<std::string, User>> items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto rows, ScanAll(txn, kUsers, Key().Str(account.str()).Done()));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(User u, DecodeUser(row.value));
      if (!u.path.starts_with(path_prefix)) continue;
      std::string lname = Lower(u.name);
      items.emplace_back(std::move(lname), std::move(u));
    }
    return OkStatus();
  }));
  return Paginate(std::move(items), page);
}

StatusOr<std::optional<User>> Directory::FindUser(store::ReadTxn& txn, const AccountId& account,
                                                  std::string_view name) {
  return ReadUser(txn, account, name);
}

Status Directory::DeleteUser(const AccountId& account, std::string_view name, const KeyCheck& has_keys) {
  const PrincipalRef who{PrincipalType::kUser, std::string(name)};
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto user, ReadUser(txn, account, name));
    if (!user) return NoSuchPrincipal(who);
    ASSIGN_OR_RETURN(bool keys, has_keys(txn, account, user->name));
    if (keys) return DeleteConflict("Cannot delete entity, must delete access keys first.");
    RETURN_IF_ERROR(CheckNoPolicies(txn, account, who));
    const std::string lname = Lower(name);
    if (!user->boundary_arn.empty())
      RETURN_IF_ERROR(txn.Delete(kBoundaries, Key().Str(account.str()).Str(user->boundary_arn).Str("user").Str(lname).Done()));
    return txn.Delete(kUsers, Key().Str(account.str()).Str(lname).Done());
  });
}

// ---------------------------------------------------------------------------------------------
// Permissions boundaries

Status Directory::SetBoundary(const AccountId& account, const PrincipalRef& who, std::optional<std::string> arn) {
  const std::string lname = Lower(who.name);
  const std::string_view kind = PrincipalTypeName(who.type);
  return Write([&](store::WriteTxn& txn) -> Status {
    std::optional<Role> role;
    std::optional<User> user;
    std::string* boundary = nullptr;
    if (who.type == PrincipalType::kRole) {
      ASSIGN_OR_RETURN(role, ReadRole(txn, account, who.name));
      if (!role) return NoSuchPrincipal(who);
      boundary = &role->boundary_arn;
    } else {
      ASSIGN_OR_RETURN(user, ReadUser(txn, account, who.name));
      if (!user) return NoSuchPrincipal(who);
      boundary = &user->boundary_arn;
    }
    if (arn) {
      ASSIGN_OR_RETURN(auto p, ReadAnyPolicy(txn, account, *arn));
      if (!p) return PolicyNotAttachable(*arn);
    }
    if (!boundary->empty())
      RETURN_IF_ERROR(txn.Delete(kBoundaries, Key().Str(account.str()).Str(*boundary).Str(kind).Str(lname).Done()));
    *boundary = arn.value_or("");
    if (arn) RETURN_IF_ERROR(txn.Put(kBoundaries, Key().Str(account.str()).Str(*arn).Str(kind).Str(lname).Done(), ""));
    const std::string key = Key().Str(account.str()).Str(lname).Done();
    return role ? txn.Put(kRoles, key, EncodeRole(*role)) : txn.Put(kUsers, key, EncodeUser(*user));
  });
}

// ---------------------------------------------------------------------------------------------
// Tags

namespace {

// Reads, changes and writes back the tags of a role or user, in `write` (the Directory's Write:
// the tags are aws:PrincipalTag/*, so a change must make cached PoliciesOf answers stale).
Status EditTags(const std::function<Status(const std::function<Status(store::WriteTxn&)>&)>& write,
                const AccountId& account, const PrincipalRef& who, const std::function<Status(std::vector<Tag>&)>& edit) {
  return write([&](store::WriteTxn& txn) -> Status {
    const std::string key = Key().Str(account.str()).Str(Lower(who.name)).Done();
    if (who.type == PrincipalType::kRole) {
      ASSIGN_OR_RETURN(auto role, ReadRole(txn, account, who.name));
      if (!role) return NoSuchPrincipal(who);
      RETURN_IF_ERROR(edit(role->tags));
      return txn.Put(kRoles, key, EncodeRole(*role));
    }
    ASSIGN_OR_RETURN(auto user, ReadUser(txn, account, who.name));
    if (!user) return NoSuchPrincipal(who);
    RETURN_IF_ERROR(edit(user->tags));
    return txn.Put(kUsers, key, EncodeUser(*user));
  });
}

}  // namespace

Status Directory::TagPrincipal(const AccountId& account, const PrincipalRef& who, const std::vector<iam::Tag>& tags) {
  RETURN_IF_ERROR(CheckTags(tags, who.type == PrincipalType::kRole ? "TagsPerRole" : "TagsPerUser"));
  return EditTags([this](const auto& fn) { return Write(fn); }, account, who, [&](std::vector<iam::Tag>& have) -> Status {
    for (const auto& t : tags) {
      auto it = std::find_if(have.begin(), have.end(), [&](const iam::Tag& h) { return Lower(h.key) == Lower(t.key); });
      if (it != have.end()) {
        *it = t;
      } else {
        have.push_back(t);
      }
    }
    if (have.size() > kMaxTags)
      return LimitExceeded(fmt::format("Cannot exceed quota for {}: {}.",
                                       who.type == PrincipalType::kRole ? "TagsPerRole" : "TagsPerUser", kMaxTags));
    return OkStatus();
  });
}

Status Directory::UntagPrincipal(const AccountId& account, const PrincipalRef& who, const std::vector<std::string>& keys) {
  return EditTags([this](const auto& fn) { return Write(fn); }, account, who, [&](std::vector<iam::Tag>& have) -> Status {
    std::erase_if(have, [&](const iam::Tag& h) {
      return std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return Lower(k) == Lower(h.key); });
    });
    return OkStatus();
  });
}

// ---------------------------------------------------------------------------------------------
// Inline policies

namespace {

Status CheckPrincipalExists(store::ReadTxn& txn, const AccountId& account, const PrincipalRef& who) {
  ASSIGN_OR_RETURN(auto v, txn.Get(TableFor(who.type), Key().Str(account.str()).Str(Lower(who.name)).Done()));
  if (!v) return NoSuchPrincipal(who);
  return OkStatus();
}

std::string InlineKey(const AccountId& account, const PrincipalRef& who, std::string_view policy) {
  return Key().Str(account.str()).Str(PrincipalTypeName(who.type)).Str(Lower(who.name)).Str(policy).Done();
}

Status NoSuchInline(const PrincipalRef& who, std::string_view policy) {
  return NoSuchEntity(fmt::format("The {} policy with name {} cannot be found.", PrincipalTypeName(who.type), policy));
}

}  // namespace

Status Directory::PutInlinePolicy(const AccountId& account, const PrincipalRef& who, std::string_view policy_name,
                                  std::string document) {
  RETURN_IF_ERROR(CheckPolicyDocument(document, policy::DocumentKind::kIdentity));
  return Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    return txn.Put(kInline, InlineKey(account, who, policy_name), document);
  });
}

StatusOr<std::string> Directory::GetInlinePolicy(const AccountId& account, const PrincipalRef& who,
                                                 std::string_view policy_name) {
  std::string out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    ASSIGN_OR_RETURN(auto v, txn.Get(kInline, InlineKey(account, who, policy_name)));
    if (!v) return NoSuchInline(who, policy_name);
    out = std::move(*v);
    return OkStatus();
  }));
  return out;
}

StatusOr<Page<std::string>> Directory::ListInlinePolicies(const AccountId& account, const PrincipalRef& who,
                                                          const PageRequest& page) {
  std::vector<std::pair<std::string, std::string>> items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    ASSIGN_OR_RETURN(auto rows, ScanAll(txn, kInline, Key().Str(account.str()).Str(PrincipalTypeName(who.type)).Str(Lower(who.name)).Done()));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(std::string name, LastStr(row.key, 4));
      items.emplace_back(name, name);
    }
    return OkStatus();
  }));
  return Paginate(std::move(items), page);
}

Status Directory::DeleteInlinePolicy(const AccountId& account, const PrincipalRef& who,
                                     std::string_view policy_name) {
  return Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    const std::string key = InlineKey(account, who, policy_name);
    ASSIGN_OR_RETURN(auto v, txn.Get(kInline, key));
    if (!v) return NoSuchInline(who, policy_name);
    return txn.Delete(kInline, key);
  });
}

// ---------------------------------------------------------------------------------------------
// Managed policies

namespace {

Status AwsManagedIsReadOnly(std::string_view arn) {
  return PermissionDenied(fmt::format("Policy {} is an AWS managed policy and cannot be changed.", arn));
}

Status NoSuchPolicy(std::string_view arn) { return NoSuchEntity(fmt::format("Policy {} was not found.", arn)); }

}  // namespace

StatusOr<ManagedPolicy> Directory::CreatePolicy(const AccountId& account, const PolicySpec& spec) {
  RETURN_IF_ERROR(CheckPolicyDocument(spec.document, policy::DocumentKind::kIdentity));
  RETURN_IF_ERROR(CheckTags(spec.tags, "TagsPerPolicy"));
  ManagedPolicy p;
  p.id = NewId("ANPA");
  p.name = spec.name;
  p.path = spec.path.empty() ? "/" : spec.path;
  p.arn = fmt::format("arn:aws:iam::{}:policy{}{}", account.str(), p.path, p.name);
  p.description = spec.description;
  p.default_version = "v1";
  p.next_version = 2;
  p.tags = spec.tags;
  p.created_at = p.updated_at = clock_.Now();
  const std::string lname = Lower(p.name);
  RETURN_IF_ERROR(Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto existing, txn.Get(kPolicies, Key().Str(account.str()).Str(lname).Done()));
    if (existing)
      return AlreadyExists(fmt::format("A policy called {} already exists. Duplicate names are not allowed.", p.name),
                           Error::kEntityAlreadyExists);
    RETURN_IF_ERROR(CheckQuota(txn, kPolicies, account, quotas_.policies, "PoliciesPerAccount"));
    RETURN_IF_ERROR(txn.Put(kVersions, Key().Str(account.str()).Str(lname).U64(1).Done(),
                            EncodeVersion(spec.document, p.created_at)));
    return txn.Put(kPolicies, Key().Str(account.str()).Str(lname).Done(), EncodePolicy(p));
  }));
  return p;
}

StatusOr<ManagedPolicy> Directory::GetPolicy(const AccountId& account, std::string_view arn) {
  std::optional<ManagedPolicy> p;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(p, ReadAnyPolicy(txn, account, arn));
    return OkStatus();
  }));
  if (!p) return NoSuchPolicy(arn);
  return *p;
}

StatusOr<Page<ManagedPolicy>> Directory::ListPolicies(const AccountId& account, const PolicyFilter& filter,
                                                      const PageRequest& page) {
  std::vector<std::pair<std::string, ManagedPolicy>> items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    std::vector<ManagedPolicy> all;
    if (filter.scope != PolicyScope::kLocal)
      for (const auto& a : AwsManagedPolicies()) all.push_back(a.policy);
    if (filter.scope != PolicyScope::kAws) {
      ASSIGN_OR_RETURN(auto rows, ScanAll(txn, kPolicies, Key().Str(account.str()).Done()));
      for (const auto& row : rows) {
        ASSIGN_OR_RETURN(ManagedPolicy p, DecodePolicy(row.value));
        all.push_back(std::move(p));
      }
    }
    for (auto& p : all) {
      if (!p.path.starts_with(filter.path_prefix)) continue;
      ASSIGN_OR_RETURN(p.attachment_count, CountPrefix(txn, kAttachments, Key().Str(account.str()).Str(p.arn).Done()));
      ASSIGN_OR_RETURN(p.boundary_usage_count, CountPrefix(txn, kBoundaries, Key().Str(account.str()).Str(p.arn).Done()));
      if (filter.only_attached && p.attachment_count == 0) continue;
      // AWS's and the account's policies interleave by name; the ARN breaks a tie. A space sorts
      // below every character a policy name may hold, and travels in XML (the marker).
      std::string sort = Lower(p.name) + ' ' + p.arn;
      items.emplace_back(std::move(sort), std::move(p));
    }
    return OkStatus();
  }));
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return Paginate(std::move(items), page);
}

Status Directory::DeletePolicy(const AccountId& account, std::string_view arn) {
  if (IsAwsManagedArn(arn)) return AwsManagedIsReadOnly(arn);
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, ReadAnyPolicy(txn, account, arn));
    if (!p) return NoSuchPolicy(arn);
    if (p->attachment_count > 0 || p->boundary_usage_count > 0)
      return DeleteConflict("Cannot delete a policy attached to entities.");
    const std::string lname = Lower(p->name);
    ASSIGN_OR_RETURN(auto versions, ScanAll(txn, kVersions, Key().Str(account.str()).Str(lname).Done()));
    if (versions.size() > 1)
      return DeleteConflict(
          "This policy has more than one version. Before you delete a policy, you must delete the policy's versions. "
          "The default version is deleted with the policy.");
    for (const auto& v : versions) RETURN_IF_ERROR(txn.Delete(kVersions, v.key));
    return txn.Delete(kPolicies, Key().Str(account.str()).Str(lname).Done());
  });
}

StatusOr<PolicyVersion> Directory::CreatePolicyVersion(const AccountId& account, std::string_view arn,
                                                       std::string document, bool set_as_default) {
  if (IsAwsManagedArn(arn)) return AwsManagedIsReadOnly(arn);
  RETURN_IF_ERROR(CheckPolicyDocument(document, policy::DocumentKind::kIdentity));
  PolicyVersion out;
  out.created_at = clock_.Now();
  out.document = document;
  RETURN_IF_ERROR(Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, ReadLocalPolicy(txn, account, arn));
    if (!p) return NoSuchPolicy(arn);
    const std::string lname = Lower(p->name);
    ASSIGN_OR_RETURN(int32_t count, CountPrefix(txn, kVersions, Key().Str(account.str()).Str(lname).Done()));
    if (static_cast<size_t>(count) >= kMaxPolicyVersions)
      return LimitExceeded(
          "A managed policy can have up to 5 versions. Before you create a new version, you must delete an existing "
          "version.");
    const uint32_t n = p->next_version++;
    out.version_id = fmt::format("v{}", n);
    if (set_as_default) p->default_version = out.version_id;
    out.is_default = set_as_default;
    p->updated_at = out.created_at;
    RETURN_IF_ERROR(txn.Put(kVersions, Key().Str(account.str()).Str(lname).U64(n).Done(), EncodeVersion(document, out.created_at)));
    return txn.Put(kPolicies, Key().Str(account.str()).Str(lname).Done(), EncodePolicy(*p));
  }));
  return out;
}

namespace {

Status NoSuchVersion(std::string_view arn, std::string_view version) {
  return NoSuchEntity(fmt::format("Policy {} version {} does not exist or is not attachable.", arn, version));
}

}  // namespace

StatusOr<PolicyVersion> Directory::GetPolicyVersion(const AccountId& account, std::string_view arn,
                                                    std::string_view version) {
  if (IsAwsManagedArn(arn)) {
    const AwsManagedPolicy* a = FindAwsPolicy(arn);
    if (a == nullptr || version != a->policy.default_version) return NoSuchVersion(arn, version);
    return PolicyVersion{std::string(version), a->document, true, a->policy.updated_at};
  }
  PolicyVersion out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, ReadLocalPolicy(txn, account, arn));
    if (!p) return NoSuchPolicy(arn);
    ASSIGN_OR_RETURN(auto v, txn.Get(kVersions, Key().Str(account.str()).Str(Lower(p->name)).U64(VersionNumber(version)).Done()));
    if (!v) return NoSuchVersion(arn, version);
    ASSIGN_OR_RETURN(json::object o, ParseRecord(*v, "policy version"));
    out.version_id = std::string(version);
    out.document = Str(o, "document");
    out.is_default = p->default_version == version;
    out.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
    return OkStatus();
  }));
  return out;
}

StatusOr<std::vector<PolicyVersion>> Directory::ListPolicyVersions(const AccountId& account, std::string_view arn) {
  if (IsAwsManagedArn(arn)) {
    const AwsManagedPolicy* a = FindAwsPolicy(arn);
    if (a == nullptr) return NoSuchPolicy(arn);
    return std::vector<PolicyVersion>{{a->policy.default_version, a->document, true, a->policy.updated_at}};
  }
  std::vector<PolicyVersion> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, ReadLocalPolicy(txn, account, arn));
    if (!p) return NoSuchPolicy(arn);
    ASSIGN_OR_RETURN(auto rows, ScanAll(txn, kVersions, Key().Str(account.str()).Str(Lower(p->name)).Done()));
    for (const auto& row : rows) {
      store::KeyReader r(row.key);
      ASSIGN_OR_RETURN(std::string acct, r.Str());
      ASSIGN_OR_RETURN(std::string lname, r.Str());
      ASSIGN_OR_RETURN(uint64_t n, r.U64());
      ASSIGN_OR_RETURN(json::object o, ParseRecord(row.value, "policy version"));
      PolicyVersion v;
      v.version_id = fmt::format("v{}", n);
      v.document = Str(o, "document");
      v.is_default = v.version_id == p->default_version;
      v.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
      out.push_back(std::move(v));
    }
    return OkStatus();
  }));
  // AWS lists the newest version first.
  std::reverse(out.begin(), out.end());
  return out;
}

Status Directory::DeletePolicyVersion(const AccountId& account, std::string_view arn, std::string_view version) {
  if (IsAwsManagedArn(arn)) return AwsManagedIsReadOnly(arn);
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, ReadLocalPolicy(txn, account, arn));
    if (!p) return NoSuchPolicy(arn);
    const std::string key = Key().Str(account.str()).Str(Lower(p->name)).U64(VersionNumber(version)).Done();
    ASSIGN_OR_RETURN(auto v, txn.Get(kVersions, key));
    if (!v) return NoSuchVersion(arn, version);
    if (p->default_version == version) return DeleteConflict("Cannot delete the default version of a policy.");
    return txn.Delete(kVersions, key);
  });
}

Status Directory::SetDefaultPolicyVersion(const AccountId& account, std::string_view arn, std::string_view version) {
  if (IsAwsManagedArn(arn)) return AwsManagedIsReadOnly(arn);
  return Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto p, ReadLocalPolicy(txn, account, arn));
    if (!p) return NoSuchPolicy(arn);
    const std::string lname = Lower(p->name);
    ASSIGN_OR_RETURN(auto v, txn.Get(kVersions, Key().Str(account.str()).Str(lname).U64(VersionNumber(version)).Done()));
    if (!v) return NoSuchVersion(arn, version);
    p->default_version = std::string(version);
    p->updated_at = clock_.Now();
    return txn.Put(kPolicies, Key().Str(account.str()).Str(lname).Done(), EncodePolicy(*p));
  });
}

// ---------------------------------------------------------------------------------------------
// Attachments

Status Directory::AttachPolicy(const AccountId& account, const PrincipalRef& who, std::string_view arn) {
  const std::string_view kind = PrincipalTypeName(who.type);
  const std::string lname = Lower(who.name);
  return Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    ASSIGN_OR_RETURN(auto p, ReadAnyPolicy(txn, account, arn));
    if (!p) return PolicyNotAttachable(arn);
    const std::string key = Key().Str(account.str()).Str(kind).Str(lname).Str(arn).Done();
    ASSIGN_OR_RETURN(auto existing, txn.Get(kAttached, key));
    if (existing) return OkStatus();
    ASSIGN_OR_RETURN(int32_t count, CountPrefix(txn, kAttached, Key().Str(account.str()).Str(kind).Str(lname).Done()));
    if (static_cast<size_t>(count) >= kMaxManagedPoliciesPerPrincipal)
      return LimitExceeded(fmt::format("Cannot exceed quota for PoliciesPer{}: {}.",
                                       who.type == PrincipalType::kRole ? "Role" : "User",
                                       kMaxManagedPoliciesPerPrincipal));
    RETURN_IF_ERROR(txn.Put(kAttached, key, ""));
    return txn.Put(kAttachments, Key().Str(account.str()).Str(arn).Str(kind).Str(lname).Done(), "");
  });
}

Status Directory::DetachPolicy(const AccountId& account, const PrincipalRef& who, std::string_view arn) {
  const std::string_view kind = PrincipalTypeName(who.type);
  const std::string lname = Lower(who.name);
  return Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    const std::string key = Key().Str(account.str()).Str(kind).Str(lname).Str(arn).Done();
    ASSIGN_OR_RETURN(auto existing, txn.Get(kAttached, key));
    if (!existing) return NoSuchPolicy(arn);
    RETURN_IF_ERROR(txn.Delete(kAttached, key));
    return txn.Delete(kAttachments, Key().Str(account.str()).Str(arn).Str(kind).Str(lname).Done());
  });
}

StatusOr<Page<AttachedPolicy>> Directory::ListAttachedPolicies(const AccountId& account, const PrincipalRef& who,
                                                               std::string_view path_prefix,
                                                               const PageRequest& page) {
  std::vector<std::pair<std::string, AttachedPolicy>> items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckPrincipalExists(txn, account, who));
    ASSIGN_OR_RETURN(auto rows, ScanAll(txn, kAttached, Key().Str(account.str()).Str(PrincipalTypeName(who.type)).Str(Lower(who.name)).Done()));
    for (const auto& row : rows) {
      ASSIGN_OR_RETURN(std::string arn, LastStr(row.key, 4));
      ASSIGN_OR_RETURN(auto p, ReadAnyPolicy(txn, account, arn));
      if (!p || !p->path.starts_with(path_prefix)) continue;
      items.emplace_back(arn, AttachedPolicy{p->name, arn});
    }
    return OkStatus();
  }));
  return Paginate(std::move(items), page);
}

// ---------------------------------------------------------------------------------------------
// For the evaluator

StatusOr<PrincipalPolicies> Directory::PoliciesOf(const AccountId& account, const PrincipalRef& who,
                                                  const std::vector<std::string>& session_policy_arns) {
  // A policy that is gone (a boundary, a session policy) allows nothing: an empty policy.
  static constexpr std::string_view kEmpty = R"({"Version":"2012-10-17","Statement":[]})";
  PrincipalPolicies out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    std::string boundary;
    if (who.type == PrincipalType::kRole) {
      ASSIGN_OR_RETURN(auto role, ReadRole(txn, account, who.name));
      if (!role) return NoSuchPrincipal(who);
      boundary = role->boundary_arn;
      out.tags = std::move(role->tags);
    } else {
      ASSIGN_OR_RETURN(auto user, ReadUser(txn, account, who.name));
      if (!user) return NoSuchPrincipal(who);
      boundary = user->boundary_arn;
      out.tags = std::move(user->tags);
    }
    const std::string prefix = Key().Str(account.str()).Str(PrincipalTypeName(who.type)).Str(Lower(who.name)).Done();
    ASSIGN_OR_RETURN(auto inline_rows, ScanAll(txn, kInline, prefix));
    for (auto& row : inline_rows) {
      ASSIGN_OR_RETURN(std::string name, LastStr(row.key, 4));
      out.identity.push_back({std::move(name), std::move(row.value)});
    }
    ASSIGN_OR_RETURN(auto attached, ScanAll(txn, kAttached, prefix));
    for (const auto& row : attached) {
      ASSIGN_OR_RETURN(std::string arn, LastStr(row.key, 4));
      ASSIGN_OR_RETURN(auto doc, DefaultDocument(txn, account, arn));
      if (doc) out.identity.push_back({std::move(arn), std::move(*doc)});
    }
    if (!boundary.empty()) {
      ASSIGN_OR_RETURN(auto doc, DefaultDocument(txn, account, boundary));
      out.boundary = PrincipalPolicies::Document{boundary, doc ? std::move(*doc) : std::string(kEmpty)};
    }
    for (const std::string& arn : session_policy_arns) {
      ASSIGN_OR_RETURN(auto doc, DefaultDocument(txn, account, arn));
      out.session.push_back({arn, doc ? std::move(*doc) : std::string(kEmpty)});
    }
    return OkStatus();
  }));
  return out;
}

Status Directory::ReapAccount(const AccountId& account) {
  for (std::string_view table : {kRoles, kUsers, kPolicies, kVersions, kInline, kAttached, kAttachments, kBoundaries}) {
    RETURN_IF_ERROR(Write([&](store::WriteTxn& txn) -> Status {
      ASSIGN_OR_RETURN(auto rows, ScanAll(txn, table, Key().Str(account.str()).Done()));
      for (const auto& row : rows) RETURN_IF_ERROR(txn.Delete(table, row.key));
      return OkStatus();
    }));
  }
  return OkStatus();
}

}  // namespace paddock::iam
