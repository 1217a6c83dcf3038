#include "iam/api/iam_service.h"

#include <charconv>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <boost/json.hpp>
#include <vector>

#include "iam/api/errors.h"
#include "iam/api/models/iam_model.h"

namespace paddock::iam::api {
namespace json = boost::json;

namespace {

constexpr std::string_view kXmlns = "https://iam.amazonaws.com/doc/2010-05-08/";

constexpr std::string_view kActions[] = {
    // Roles
    "CreateRole", "GetRole", "ListRoles", "DeleteRole", "UpdateRole", "UpdateAssumeRolePolicy", "TagRole", "UntagRole",
    "ListRoleTags", "CreateServiceLinkedRole", "PutRolePermissionsBoundary", "DeleteRolePermissionsBoundary",
    "PutUserPermissionsBoundary", "DeleteUserPermissionsBoundary",
    // Inline policies
    "PutRolePolicy", "GetRolePolicy", "ListRolePolicies", "DeleteRolePolicy", "PutUserPolicy", "GetUserPolicy",
    "ListUserPolicies", "DeleteUserPolicy",
    // Managed policies
    "CreatePolicy", "GetPolicy", "ListPolicies", "DeletePolicy", "CreatePolicyVersion", "GetPolicyVersion",
    "ListPolicyVersions", "DeletePolicyVersion", "SetDefaultPolicyVersion", "AttachRolePolicy", "DetachRolePolicy",
    "ListAttachedRolePolicies", "AttachUserPolicy", "DetachUserPolicy", "ListAttachedUserPolicies",
    // Users and access keys
    "CreateUser", "GetUser", "ListUsers", "DeleteUser", "TagUser", "UntagUser", "ListUserTags", "CreateAccessKey",
    "ListAccessKeys", "UpdateAccessKey", "DeleteAccessKey",
    // Debugging
    "SimulatePrincipalPolicy", "SimulateCustomPolicy", "GetContextKeysForPrincipalPolicy",
    "GetContextKeysForCustomPolicy"};

Status ValidationError(std::string message) { return InvalidArgument(std::move(message), Error::kValidation); }

// IAM's URL encoding of policy documents: every byte but the unreserved ones as %XX (botocore
// decodes with urllib's unquote, so a space must be %20, not '+').
std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string Iso(TimePoint t) {
  const int64_t ms = EpochMillis(t);
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", fmt::gmtime(secs));
}

std::string X(std::string_view name, std::string_view text) {
  return fmt::format("<{0}>{1}</{0}>", name, aws::XmlEscape(text));
}

std::string TagsXml(const std::vector<Tag>& tags) {
  std::string out = "<Tags>";
  for (const auto& t : tags) out += "<member>" + X("Key", t.key) + X("Value", t.value) + "</member>";
  return out + "</Tags>";
}

std::string BoundaryXml(std::string_view arn) {
  if (arn.empty()) return "";
  return "<PermissionsBoundary><PermissionsBoundaryType>PermissionsBoundaryPolicy</PermissionsBoundaryType>" +
         X("PermissionsBoundaryArn", arn) + "</PermissionsBoundary>";
}

// What GetRole/CreateRole answer; ListRoles leaves out tags, the boundary and RoleLastUsed, as
// IAM does.
std::string RoleXml(const Role& r, bool full) {
  std::string out = X("Path", r.path) + X("RoleName", r.name) + X("RoleId", r.id) + X("Arn", r.arn) +
                    X("CreateDate", Iso(r.created_at)) + X("AssumeRolePolicyDocument", UrlEncode(r.trust_policy));
  if (!r.description.empty()) out += X("Description", r.description);
  out += X("MaxSessionDuration", std::to_string(r.max_session_duration));
  if (full) {
    out += BoundaryXml(r.boundary_arn);
    if (!r.tags.empty()) out += TagsXml(r.tags);
    out += "<RoleLastUsed/>";
  }
  return out;
}

std::string UserXml(const User& u, bool full) {
  std::string out = X("Path", u.path) + X("UserName", u.name) + X("UserId", u.id) + X("Arn", u.arn) +
                    X("CreateDate", Iso(u.created_at));
  if (full) {
    out += BoundaryXml(u.boundary_arn);
    if (!u.tags.empty()) out += TagsXml(u.tags);
  }
  return out;
}

std::string PolicyXml(const ManagedPolicy& p, bool full) {
  std::string out = X("PolicyName", p.name) + X("PolicyId", p.id) + X("Arn", p.arn) + X("Path", p.path) +
                    X("DefaultVersionId", p.default_version) +
                    X("AttachmentCount", std::to_string(p.attachment_count)) +
                    X("PermissionsBoundaryUsageCount", std::to_string(p.boundary_usage_count)) +
                    "<IsAttachable>true</IsAttachable>";
  if (full && !p.description.empty()) out += X("Description", p.description);
  out += X("CreateDate", Iso(p.created_at)) + X("UpdateDate", Iso(p.updated_at));
  if (full && !p.tags.empty()) out += TagsXml(p.tags);
  return out;
}

std::string VersionXml(const PolicyVersion& v, bool with_document) {
  std::string out;
  if (with_document) out += X("Document", UrlEncode(v.document));
  return out + X("VersionId", v.version_id) + X("IsDefaultVersion", v.is_default ? "true" : "false") +
         X("CreateDate", Iso(v.created_at));
}

std::string PageTail(const std::optional<std::string>& next_marker) {
  if (!next_marker) return "<IsTruncated>false</IsTruncated>";
  return "<IsTruncated>true</IsTruncated>" + X("Marker", *next_marker);
}

std::string Response(std::string_view action, std::string_view request_id, std::optional<std::string> result) {
  std::string out = fmt::format("<{}Response xmlns=\"{}\">", action, kXmlns);
  if (result) out += fmt::format("<{0}Result>{1}</{0}Result>", action, *result);
  out += fmt::format("<ResponseMetadata><RequestId>{}</RequestId></ResponseMetadata></{}Response>",
                     aws::XmlEscape(request_id), action);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<IamService>> IamService::Create(Directory& directory, Accounts& accounts) {
  auto model = aws::QueryModel::Parse(IamModelJson());
  if (!model.ok()) return Internal("the embedded IAM model is unreadable: " + model.status().message());
  return std::unique_ptr<IamService>(new IamService(directory, accounts, std::move(model).value()));
}

IamService::IamService(Directory& directory, Accounts& accounts, std::unique_ptr<aws::QueryModel> model)
    : directory_(directory), accounts_(accounts), model_(std::move(model)) {}

IamService::~IamService() = default;

bool IamService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> IamService::ThrottleGroupFor(std::string_view) const { return std::nullopt; }

std::optional<aws::AwsError> IamService::ErrorFor(const Status& status) const { return IamErrorFor(status); }

std::string IamService::ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const {
  const bool server_fault = code == "ServiceFailure" || code == "InternalFailure";
  return aws::QueryErrorXml(code, message, request_id, server_fault);
}

namespace {

// A call's parameters, decoded and checked by the model (aws::QueryModel), as the handlers read
// them.
struct Input {
  json::object fields;

  // A scalar member as text (numbers and booleans too); nullopt when absent.
  std::optional<std::string> Get(std::string_view name) const {
    const json::value* v = fields.if_contains(name);
    if (v == nullptr) return std::nullopt;
    if (v->is_string()) return std::string(v->get_string());
    if (v->is_int64()) return std::to_string(v->get_int64());
    if (v->is_bool()) return std::string(v->get_bool() ? "true" : "false");
    return std::nullopt;
  }
  std::string Or(std::string_view name, std::string fallback) const { return Get(name).value_or(std::move(fallback)); }

  // A list member's elements (empty when absent).
  const json::array& List(std::string_view name) const {
    static const json::array kEmpty;
    const json::value* v = fields.if_contains(name);
    return v != nullptr && v->is_array() ? v->get_array() : kEmpty;
  }
};

std::string_view StrOf(const json::value& v) { return v.is_string() ? std::string_view(v.get_string()) : ""; }

// MaxItems and Marker of a list call.
StatusOr<PageRequest> PageOf(const Input& in) {
  PageRequest page;
  page.marker = in.Or("Marker", "");
  if (auto m = in.Get("MaxItems")) page.max_items = std::stoi(*m);  // checked 1..1000 by the model
  return page;
}

std::vector<Tag> TagsOf(const Input& in) {
  std::vector<Tag> out;
  for (const json::value& tag : in.List("Tags")) {
    if (!tag.is_object()) continue;
    const json::object& o = tag.get_object();
    Tag t;
    if (const json::value* k = o.if_contains("Key")) t.key = StrOf(*k);
    if (const json::value* v = o.if_contains("Value")) t.value = StrOf(*v);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> ListOf(const Input& in, std::string_view name) {
  std::vector<std::string> out;
  for (const json::value& v : in.List(name)) out.emplace_back(StrOf(v));
  return out;
}

bool IsAwsPolicyArn(std::string_view arn) { return arn.starts_with("arn:aws:iam::aws:policy/"); }

// IAM refuses changes to AWS-managed policies as it refuses any action on another account's
// resource.
Status NotAuthorized(const aws::CallContext& ctx, std::string_view arn) {
  return PermissionDenied(fmt::format("User: {} is not authorized to perform: iam:{} on resource: policy {}",
                                      ctx.principal.arn, ctx.action, arn));
}

// ContextEntries (each a ContextKeyName with its ContextKeyValues), as request context keys.
std::vector<std::pair<std::string, std::string>> ContextEntriesOf(const Input& in) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const json::value& entry : in.List("ContextEntries")) {
    if (!entry.is_object()) continue;
    const json::object& o = entry.get_object();
    const json::value* name = o.if_contains("ContextKeyName");
    const json::value* values = o.if_contains("ContextKeyValues");
    if (name == nullptr || values == nullptr || !values->is_array()) continue;
    for (const json::value& v : values->get_array()) out.emplace_back(StrOf(*name), StrOf(v));
  }
  return out;
}

std::string_view DecisionName(policy::Decision d) {
  switch (d) {
    case policy::Decision::kAllow: return "allowed";
    case policy::Decision::kExplicitDeny: return "explicitDeny";
    case policy::Decision::kImplicitDeny: return "implicitDeny";
  }
  return "implicitDeny";
}

std::string PositionXml(std::string_view name, policy::TextPosition p) {
  return fmt::format("<{0}><Line>{1}</Line><Column>{2}</Column></{0}>", name, p.line, p.column);
}

// A user or role of `account` named by its ARN (arn:aws:iam::<account>:user/<path><name> or
// role/<path><name>), as the principal a live call of it would be: the user, or a session of the
// role. `users_only`: CallerArn, which must name a user.
StatusOr<aws::Principal> SimulatedEntity(Directory& directory, const AccountId& account, const std::string& arn,
                                         bool users_only) {
  const std::string prefix = fmt::format("arn:aws:iam::{}:", account.str());
  const std::string_view entity = std::string_view(arn).substr(std::min(prefix.size(), arn.size()));
  const bool user = entity.starts_with("user/"), role = entity.starts_with("role/");
  if (!arn.starts_with(prefix) || !(user || role)) {
    // AWS's text for an ARN that names no user, group or role (an assumed-role ARN, ...); another
    // account's entity is refused the same way, whether or not it exists (Paddock's choice).
    return InvalidArgument(fmt::format("Invalid Entity Arn: {} does not clearly define entity type and name.", arn),
                           Error::kInvalidInput);
  }
  if (users_only && !user) {
    // AWS documents the rule, not its text: Paddock's wording.
    return InvalidArgument(fmt::format("Invalid CallerArn: {}. The simulated caller must be an IAM user.", arn),
                           Error::kInvalidInput);
  }
  const std::string name(entity.substr(entity.rfind('/') + 1));
  aws::Principal who;
  who.account = account;
  if (user) {
    ASSIGN_OR_RETURN(User u, directory.GetUser(account, name));
    who.kind = aws::PrincipalKind::kUser;
    who.arn = u.arn;
    who.user_id = u.id;
    who.user_name = u.name;
  } else {
    ASSIGN_OR_RETURN(Role r, directory.GetRole(account, name));
    who.kind = aws::PrincipalKind::kAssumedRole;
    who.arn = r.arn;
    who.role_arn = r.arn;
    who.user_id = r.id;
  }
  return who;
}

// The user or role a SimulatedEntity answer is.
PrincipalRef EntityOf(const aws::Principal& entity) {
  if (entity.kind == aws::PrincipalKind::kUser) return PrincipalRef{PrincipalType::kUser, entity.user_name};
  return PrincipalRef{PrincipalType::kRole, std::string(entity.role_arn.substr(entity.role_arn.rfind('/') + 1))};
}

// Appends `key` to `keys` unless it is there already in any case (context keys compare
// ignoring case; the first spelling stays).
void AddKeyOnce(std::vector<std::string>& keys, std::string key) {
  const bool seen = std::any_of(keys.begin(), keys.end(), [&](const std::string& k) {
    return k.size() == key.size() && std::equal(k.begin(), k.end(), key.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  });
  if (!seen) keys.push_back(std::move(key));
}

// The context keys the policies read that the simulated request lacks, each once as first written.
std::string MissingContextValuesXml(const policy::PolicySet& set, const policy::RequestContext& ctx) {
  std::vector<std::string> missing;
  auto add = [&](const policy::NamedPolicy& p) {
    for (std::string& key : policy::ContextKeys(p.policy))
      if (ctx.Find(key) == nullptr) AddKeyOnce(missing, std::move(key));
  };
  for (const auto& p : set.identity) add(p);
  if (set.boundary) add(*set.boundary);
  for (const auto& p : set.session) add(p);
  if (set.resource) add(*set.resource);
  std::string out = "<MissingContextValues>";
  for (const std::string& key : missing) out += X("member", key);
  return out + "</MissingContextValues>";
}

// The documents of a simulation's policy list parameter (PolicyInputList,
// PermissionsBoundaryPolicyInputList), each named <parameter>.N. The operations answer only
// NoSuchEntity, InvalidInput and PolicyEvaluation (the model): a document that does not parse is
// InvalidInput "<parameter>.N: <the parser's AWS text>".
StatusOr<std::vector<policy::NamedPolicy>> PolicyListOf(const Input& in, std::string_view parameter) {
  std::vector<policy::NamedPolicy> out;
  const json::array& inputs = in.List(parameter);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string id = fmt::format("{}.{}", parameter, i + 1);
    StatusOr<policy::Policy> parsed = policy::ParsePolicy(StrOf(inputs[i]), policy::DocumentKind::kIdentity);
    if (!parsed.ok()) return InvalidArgument(fmt::format("{}: {}", id, parsed.status().message()), Error::kInvalidInput);
    out.push_back({id, std::move(parsed).value()});
  }
  return out;
}

// ResourceOwner: the account as AWS documents it, arn:aws:iam::<account>:root. Anything else, the
// bare account ID too, is InvalidInput with AWS's text (as IAM answered a bare ID in
// boto/botocore#1346: "'123456789012' is not a valid as a Resource Owner.").
StatusOr<AccountId> ResourceOwnerOf(const std::string& owner) {
  std::string_view id = owner;
  const bool arn = id.starts_with("arn:aws:iam::") && id.ends_with(":root");
  if (arn) id = id.substr(13, id.size() - 13 - 5);
  if (!arn || id.size() != 12 || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgument(fmt::format("'{}' is not a valid as a Resource Owner.", owner), Error::kInvalidInput);
  }
  return AccountId(std::string(id));
}

// ResourceArns: each "*" or an ARN (arn:partition:service:region:account:resource, the last
// three parts possibly empty). The first that is not: InvalidInput with AWS's text (as IAM
// answered a KMS key ID in aws-containers/amazon-ecs-exec-checker#35).
Status CheckResourceArns(const std::vector<std::string>& resources) {
  for (const std::string& r : resources) {
    if (r == "*" || (r.starts_with("arn:") && std::count(r.begin(), r.end(), ':') >= 5)) continue;
    return InvalidArgument(fmt::format("ResourceNames are not in a valid ARN format: {}.", r), Error::kInvalidInput);
  }
  return OkStatus();
}

// The values ResourceHandlingOption takes (AWS's EC2 scenarios). Paddock has no EC2 resources:
// a listed scenario is accepted and changes nothing; any other value is InvalidInput.
constexpr std::string_view kResourceHandlingOptions[] = {"EC2-VPC-InstanceStore", "EC2-VPC-InstanceStore-Subnet",
                                                         "EC2-VPC-EBS", "EC2-VPC-EBS-Subnet"};

std::string SourcePolicyType(std::string_view id, policy::PolicyType layer, bool by_user) {
  if (layer == policy::PolicyType::kResource) return "resource";
  if (id.starts_with("PolicyInputList.") || id.starts_with("PermissionsBoundaryPolicyInputList."))
    return "IAM Policy";  // AWS's name for an input policy
  if (id.starts_with("arn:aws:iam::aws:")) return "aws-managed";
  if (id.starts_with("arn:") || layer == policy::PolicyType::kPermissionsBoundary) return "user-managed";
  return by_user ? "user" : "role";
}

std::string MatchedStatementsXml(const PolicyAuthorizer::Evaluation& e, bool by_user) {
  std::string out = "<MatchedStatements>";
  for (const policy::MatchedStatement& m : e.result.matched) {
    const policy::PolicySet& set = *e.policies;
    const policy::NamedPolicy* p = nullptr;
    if (m.type == policy::PolicyType::kIdentity && m.policy_index < set.identity.size()) {
      p = &set.identity[m.policy_index];
    } else if (m.type == policy::PolicyType::kPermissionsBoundary && set.boundary) {
      p = &*set.boundary;
    } else if (m.type == policy::PolicyType::kResource && set.resource) {
      p = &*set.resource;
    }
    if (p == nullptr) continue;
    out += "<member>" + X("SourcePolicyId", p->id) + X("SourcePolicyType", SourcePolicyType(p->id, m.type, by_user)) +
           PositionXml("StartPosition", p->policy.start(m.statement_index)) +
           PositionXml("EndPosition", p->policy.end(m.statement_index)) + "</member>";
  }
  return out + "</MatchedStatements>";
}

std::string BoundaryDetailXml(const policy::EvaluationResult& r) {
  if (!r.allowed_by_boundary) return "";
  return "<PermissionsBoundaryDecisionDetail>" + X("AllowedByPermissionsBoundary", *r.allowed_by_boundary ? "true" : "false") +
         "</PermissionsBoundaryDecisionDetail>";
}

// SimulatePrincipalPolicy and SimulateCustomPolicy (IamService::SetAuthorizer). The decision of
// each (action, resource) pair is PolicyAuthorizer::Evaluate's, the function behind every live
// call, so the two agree.
StatusOr<std::string> Simulate(Directory& directory, PolicyAuthorizer* authorizer, const aws::CallContext& ctx,
                               const Input& in) {
  if (authorizer == nullptr) return Internal(fmt::format("{} needs the node's authorizer", ctx.action));
  const bool custom = ctx.action == "SimulateCustomPolicy";
  const AccountId& account = ctx.scope.account;
  PolicyAuthorizer::Overrides overrides;
  overrides.only_given_policies = custom;
  // The entity whose policies decide (SimulatePrincipalPolicy), and the simulated caller. Without
  // a CallerArn, SimulateCustomPolicy has no caller: the account's root stands for it, which
  // Evaluate turns into an anonymous principal of the account (Overrides::only_given_policies).
  aws::Principal source;
  source.kind = aws::PrincipalKind::kRoot;
  source.account = account;
  source.arn = fmt::format("arn:aws:iam::{}:root", account.str());
  if (!custom) {
    ASSIGN_OR_RETURN(source, SimulatedEntity(directory, account, in.Or("PolicySourceArn", ""), false));
  }
  // CallerArn: the simulated caller, always a user (AWS: "You can specify only the ARN of an IAM
  // user"), evaluated with PolicySourceArn's policies; its own keys and tags are the caller's.
  aws::Principal caller = source;
  const auto caller_arn = in.Get("CallerArn");
  if (caller_arn) {
    ASSIGN_OR_RETURN(caller, SimulatedEntity(directory, account, std::string(*caller_arn), true));
    if (!custom) {
      overrides.policies_of = EntityOf(source);
    }
  }
  ASSIGN_OR_RETURN(overrides.extra_identity, PolicyListOf(in, "PolicyInputList"));
  ASSIGN_OR_RETURN(std::vector<policy::NamedPolicy> boundaries, PolicyListOf(in, "PermissionsBoundaryPolicyInputList"));
  if (boundaries.size() > 1) {
    // AWS: "You can input only one permissions boundary when you pass a policy to this operation."
    return InvalidArgument("PermissionsBoundaryPolicyInputList: you can input only one permissions boundary.",
                           Error::kInvalidInput);
  }
  if (!boundaries.empty()) overrides.boundary = std::move(boundaries.front());
  if (auto document = in.Get("ResourcePolicy")) {
    // AWS: CallerArn "is required if you include a ResourcePolicy" (SimulateCustomPolicy) "and
    // the PolicySourceArn is not the ARN for an IAM user" (SimulatePrincipalPolicy), so that the
    // policy's Principal element has a caller to match.
    if (caller.kind != aws::PrincipalKind::kUser) {
      return InvalidArgument(custom ? "CallerArn is required if you include a ResourcePolicy."
                                    : "CallerArn is required if you include a ResourcePolicy and the PolicySourceArn "
                                      "is not the ARN for an IAM user.",
                             Error::kInvalidInput);
    }
    StatusOr<policy::Policy> parsed = policy::ParsePolicy(*document, policy::DocumentKind::kResource);
    if (!parsed.ok()) {
      return InvalidArgument(fmt::format("ResourcePolicy: {}", parsed.status().message()), Error::kInvalidInput);
    }
    overrides.resource = policy::NamedPolicy{"ResourcePolicy", std::move(parsed).value()};
  }
  if (auto owner = in.Get("ResourceOwner")) {
    ASSIGN_OR_RETURN(overrides.resource_account, ResourceOwnerOf(*owner));
  }
  if (auto option = in.Get("ResourceHandlingOption")) {
    if (std::find(std::begin(kResourceHandlingOptions), std::end(kResourceHandlingOptions), *option) ==
        std::end(kResourceHandlingOptions)) {
      return InvalidArgument(
          fmt::format("Invalid ResourceHandlingOption: {}. Valid values are EC2-VPC-InstanceStore, "
                      "EC2-VPC-InstanceStore-Subnet, EC2-VPC-EBS and EC2-VPC-EBS-Subnet.",
                      *option),
          Error::kInvalidInput);
    }
  }
  std::vector<std::string> resources = ListOf(in, "ResourceArns");
  RETURN_IF_ERROR(CheckResourceArns(resources));
  if (resources.empty()) resources.push_back("*");
  const std::vector<std::string> actions = ListOf(in, "ActionNames");
  // EvaluationResults are the (action, resource) pairs in order; Marker is the next pair's index.
  ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
  const size_t total = actions.size() * resources.size();
  size_t first = 0;
  if (!page.marker.empty()) {
    auto [end, ec] = std::from_chars(page.marker.data(), page.marker.data() + page.marker.size(), first);
    if (ec != std::errc() || end != page.marker.data() + page.marker.size() || first >= total)
      return InvalidArgument(fmt::format("Invalid Marker: {}", page.marker), Error::kInvalidInput);
  }
  const size_t last = std::min(total, first + static_cast<size_t>(page.max_items));
  const auto context = ContextEntriesOf(in);
  // The simulated call: the caller's own keys and tags, at the simulation's time, but no source
  // address or region (AWS's simulator takes those only from ContextEntries).
  aws::CallContext simulated;
  simulated.scope.account = account;
  simulated.principal = std::move(caller);
  simulated.now = ctx.now;
  simulated.action = ctx.action;
  const bool by_user = source.kind == aws::PrincipalKind::kUser;
  std::string out = "<EvaluationResults>";
  for (size_t i = first; i < last; ++i) {
    const std::string& action = actions[i / resources.size()];
    const std::string& resource = resources[i % resources.size()];
    ASSIGN_OR_RETURN(PolicyAuthorizer::Evaluation e,
                     authorizer->Evaluate(simulated, aws::AuthRequest{action, resource, context}, &overrides));
    const std::string decision(DecisionName(e.result.decision));
    const std::string matched = MatchedStatementsXml(e, by_user);
    const std::string missing = MissingContextValuesXml(*e.policies, e.context);
    out += "<member>" + X("EvalActionName", action) + X("EvalResourceName", resource) + X("EvalDecision", decision) +
           matched;
    if (resource == "*") {
      out += missing + BoundaryDetailXml(e.result);
    } else {
      // A named resource: AWS reports the missing keys per resource, in ResourceSpecificResults;
      // each pair has its one resource there.
      out += "<MissingContextValues/>" + BoundaryDetailXml(e.result) + "<ResourceSpecificResults><member>" +
             X("EvalResourceName", resource) + X("EvalResourceDecision", decision) + matched + missing +
             BoundaryDetailXml(e.result) + "</member></ResourceSpecificResults>";
    }
    out += "</member>";
  }
  out += "</EvaluationResults>";
  out += PageTail(last < total ? std::optional<std::string>(std::to_string(last)) : std::nullopt);
  return Response(ctx.action, ctx.request_id, std::move(out));
}

// GetContextKeysForPrincipalPolicy and GetContextKeysForCustomPolicy: the context keys the
// policies read (their condition keys and the keys their variables name), each once as first
// written: the entity's identity policies (inline, then attached) for the principal form, then
// PolicyInputList. The permissions boundary is not read (AWS names "the IAM policies attached
// to the entity"; a boundary limits, it is not attached).
StatusOr<std::string> ContextKeysOf(Directory& directory, const aws::CallContext& ctx, const Input& in) {
  std::vector<policy::NamedPolicy> policies;
  if (ctx.action == "GetContextKeysForPrincipalPolicy") {
    ASSIGN_OR_RETURN(aws::Principal source,
                     SimulatedEntity(directory, ctx.scope.account, in.Or("PolicySourceArn", ""), false));
    ASSIGN_OR_RETURN(PrincipalPolicies documents, directory.PoliciesOf(ctx.scope.account, EntityOf(source), {}));
    for (const auto& d : documents.identity) {
      // A stored document parsed when it was written; one that no longer does reads no key.
      if (auto parsed = policy::ParsePolicy(d.text, policy::DocumentKind::kIdentity); parsed.ok())
        policies.push_back({d.source, std::move(parsed).value()});
    }
  }
  ASSIGN_OR_RETURN(std::vector<policy::NamedPolicy> inputs, PolicyListOf(in, "PolicyInputList"));
  for (policy::NamedPolicy& p : inputs) policies.push_back(std::move(p));
  std::vector<std::string> keys;
  for (const policy::NamedPolicy& p : policies)
    for (std::string& key : policy::ContextKeys(p.policy)) AddKeyOnce(keys, std::move(key));
  std::string out = "<ContextKeyNames>";
  for (const std::string& key : keys) out += X("member", key);
  return Response(ctx.action, ctx.request_id, out + "</ContextKeyNames>");
}

}  // namespace

StatusOr<std::string> IamService::Call(const aws::CallContext& ctx, const aws::QueryParams& params) {
  const std::string& a = ctx.action;
  const AccountId& account = ctx.scope.account;
  StatusOr<json::object> decoded = model_->Decode(a, params);
  if (!decoded.ok()) {
    if (decoded.status().code() == StatusCode::kInvalidArgument) return ValidationError(decoded.status().message());
    return decoded.status();
  }
  const Input in{std::move(decoded).value()};
  auto ok = [&](std::optional<std::string> result = std::nullopt) -> StatusOr<std::string> {
    return Response(a, ctx.request_id, std::move(result));
  };
  const PrincipalRef role{PrincipalType::kRole, in.Or("RoleName", "")};

  // ---- Roles
  if (a == "CreateRole") {
    RoleSpec spec;
    spec.name = in.Or("RoleName", "");
    spec.path = in.Or("Path", "/");
    spec.trust_policy = in.Or("AssumeRolePolicyDocument", "");
    spec.description = in.Or("Description", "");
    if (auto d = in.Get("MaxSessionDuration")) spec.max_session_duration = std::stoi(*d);
    spec.boundary_arn = in.Or("PermissionsBoundary", "");
    spec.tags = TagsOf(in);
    ASSIGN_OR_RETURN(Role r, directory_.CreateRole(account, spec));
    return ok("<Role>" + RoleXml(r, true) + "</Role>");
  }
  if (a == "GetRole") {
    ASSIGN_OR_RETURN(Role r, directory_.GetRole(account, role.name));
    return ok("<Role>" + RoleXml(r, true) + "</Role>");
  }
  if (a == "ListRoles") {
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<Role> roles, directory_.ListRoles(account, in.Or("PathPrefix", "/"), page));
    std::string out = "<Roles>";
    for (const auto& r : roles.items) out += "<member>" + RoleXml(r, false) + "</member>";
    return ok(out + "</Roles>" + PageTail(roles.next_marker));
  }
  if (a == "DeleteRole") {
    RETURN_IF_ERROR(directory_.DeleteRole(account, role.name));
    return ok();
  }
  if (a == "UpdateRole") {
    std::optional<int32_t> max;
    if (auto d = in.Get("MaxSessionDuration")) max = std::stoi(*d);
    RETURN_IF_ERROR(directory_.UpdateRole(account, role.name, in.Get("Description"), max));
    return ok("");
  }
  if (a == "UpdateAssumeRolePolicy") {
    RETURN_IF_ERROR(directory_.UpdateTrustPolicy(account, role.name, in.Or("PolicyDocument", "")));
    return ok();
  }
  if (a == "CreateServiceLinkedRole") {
    ASSIGN_OR_RETURN(Role r, directory_.CreateServiceLinkedRole(account, in.Or("AWSServiceName", ""), in.Or("Description", "")));
    return ok("<Role>" + RoleXml(r, true) + "</Role>");
  }

  // ---- Permissions boundaries
  if (a == "PutRolePermissionsBoundary" || a == "DeleteRolePermissionsBoundary" || a == "PutUserPermissionsBoundary" ||
      a == "DeleteUserPermissionsBoundary") {
    const PrincipalRef who =
        a.find("Role") != std::string::npos ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    std::optional<std::string> arn;
    if (a.starts_with("Put")) arn = in.Or("PermissionsBoundary", "");
    RETURN_IF_ERROR(directory_.SetBoundary(account, who, std::move(arn)));
    return ok();
  }

  // ---- Tags of roles and users
  if (a == "TagRole" || a == "TagUser") {
    const PrincipalRef who = a == "TagRole" ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    RETURN_IF_ERROR(directory_.TagPrincipal(account, who, TagsOf(in)));
    return ok();
  }
  if (a == "UntagRole" || a == "UntagUser") {
    const PrincipalRef who = a == "UntagRole" ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    RETURN_IF_ERROR(directory_.UntagPrincipal(account, who, ListOf(in, "TagKeys")));
    return ok();
  }
  if (a == "ListRoleTags" || a == "ListUserTags") {
    std::vector<Tag> tags;
    if (a == "ListRoleTags") {
      ASSIGN_OR_RETURN(Role r, directory_.GetRole(account, role.name));
      tags = std::move(r.tags);
    } else {
      ASSIGN_OR_RETURN(User u, directory_.GetUser(account, in.Or("UserName", "")));
      tags = std::move(u.tags);
    }
    return ok(TagsXml(tags) + "<IsTruncated>false</IsTruncated>");
  }

  // ---- Inline policies
  if (a == "PutRolePolicy" || a == "PutUserPolicy" || a == "GetRolePolicy" || a == "GetUserPolicy" ||
      a == "ListRolePolicies" || a == "ListUserPolicies" || a == "DeleteRolePolicy" || a == "DeleteUserPolicy") {
    const bool is_role = a.find("Role") != std::string::npos;
    const PrincipalRef who = is_role ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    const std::string policy = in.Or("PolicyName", "");
    if (a.starts_with("Put")) {
      RETURN_IF_ERROR(directory_.PutInlinePolicy(account, who, policy, in.Or("PolicyDocument", "")));
      return ok();
    }
    if (a.starts_with("Get")) {
      ASSIGN_OR_RETURN(std::string doc, directory_.GetInlinePolicy(account, who, policy));
      return ok(X(is_role ? "RoleName" : "UserName", who.name) + X("PolicyName", policy) +
                X("PolicyDocument", UrlEncode(doc)));
    }
    if (a.starts_with("List")) {
      ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
      ASSIGN_OR_RETURN(Page<std::string> names, directory_.ListInlinePolicies(account, who, page));
      std::string out = "<PolicyNames>";
      for (const auto& n : names.items) out += X("member", n);
      return ok(out + "</PolicyNames>" + PageTail(names.next_marker));
    }
    RETURN_IF_ERROR(directory_.DeleteInlinePolicy(account, who, policy));
    return ok();
  }

  // ---- Managed policies
  const std::string policy_arn = in.Or("PolicyArn", "");
  if (a == "CreatePolicy") {
    PolicySpec spec;
    spec.name = in.Or("PolicyName", "");
    spec.path = in.Or("Path", "/");
    spec.document = in.Or("PolicyDocument", "");
    spec.description = in.Or("Description", "");
    spec.tags = TagsOf(in);
    ASSIGN_OR_RETURN(ManagedPolicy p, directory_.CreatePolicy(account, spec));
    return ok("<Policy>" + PolicyXml(p, true) + "</Policy>");
  }
  if (a == "GetPolicy") {
    ASSIGN_OR_RETURN(ManagedPolicy p, directory_.GetPolicy(account, policy_arn));
    return ok("<Policy>" + PolicyXml(p, true) + "</Policy>");
  }
  if (a == "ListPolicies") {
    PolicyFilter filter;
    const std::string scope = in.Or("Scope", "All");
    filter.scope = scope == "AWS" ? PolicyScope::kAws : scope == "Local" ? PolicyScope::kLocal : PolicyScope::kAll;
    filter.only_attached = in.Or("OnlyAttached", "false") == "true";
    filter.path_prefix = in.Or("PathPrefix", "/");
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<ManagedPolicy> policies, directory_.ListPolicies(account, filter, page));
    std::string out = "<Policies>";
    for (const auto& p : policies.items) out += "<member>" + PolicyXml(p, false) + "</member>";
    return ok(out + "</Policies>" + PageTail(policies.next_marker));
  }
  if ((a == "DeletePolicy" || a == "CreatePolicyVersion" || a == "DeletePolicyVersion" ||
       a == "SetDefaultPolicyVersion") &&
      IsAwsPolicyArn(policy_arn))
    return NotAuthorized(ctx, policy_arn);
  if (a == "DeletePolicy") {
    RETURN_IF_ERROR(directory_.DeletePolicy(account, policy_arn));
    return ok();
  }
  if (a == "CreatePolicyVersion") {
    ASSIGN_OR_RETURN(PolicyVersion v, directory_.CreatePolicyVersion(account, policy_arn, in.Or("PolicyDocument", ""),
                                                                     in.Or("SetAsDefault", "false") == "true"));
    return ok("<PolicyVersion>" + VersionXml(v, false) + "</PolicyVersion>");
  }
  if (a == "GetPolicyVersion") {
    ASSIGN_OR_RETURN(PolicyVersion v, directory_.GetPolicyVersion(account, policy_arn, in.Or("VersionId", "")));
    return ok("<PolicyVersion>" + VersionXml(v, true) + "</PolicyVersion>");
  }
  if (a == "ListPolicyVersions") {
    ASSIGN_OR_RETURN(std::vector<PolicyVersion> versions, directory_.ListPolicyVersions(account, policy_arn));
    std::string out = "<Versions>";
    for (const auto& v : versions) out += "<member>" + VersionXml(v, false) + "</member>";
    return ok(out + "</Versions><IsTruncated>false</IsTruncated>");
  }
  if (a == "DeletePolicyVersion") {
    RETURN_IF_ERROR(directory_.DeletePolicyVersion(account, policy_arn, in.Or("VersionId", "")));
    return ok();
  }
  if (a == "SetDefaultPolicyVersion") {
    RETURN_IF_ERROR(directory_.SetDefaultPolicyVersion(account, policy_arn, in.Or("VersionId", "")));
    return ok();
  }
  if (a == "AttachRolePolicy" || a == "AttachUserPolicy" || a == "DetachRolePolicy" || a == "DetachUserPolicy") {
    const PrincipalRef who =
        a.find("Role") != std::string::npos ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    if (a.starts_with("Attach")) {
      RETURN_IF_ERROR(directory_.AttachPolicy(account, who, policy_arn));
    } else {
      RETURN_IF_ERROR(directory_.DetachPolicy(account, who, policy_arn));
    }
    return ok();
  }
  if (a == "ListAttachedRolePolicies" || a == "ListAttachedUserPolicies") {
    const PrincipalRef who = a == "ListAttachedRolePolicies" ? role : PrincipalRef{PrincipalType::kUser, in.Or("UserName", "")};
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<AttachedPolicy> attached,
                     directory_.ListAttachedPolicies(account, who, in.Or("PathPrefix", "/"), page));
    std::string out = "<AttachedPolicies>";
    for (const auto& p : attached.items) out += "<member>" + X("PolicyName", p.name) + X("PolicyArn", p.arn) + "</member>";
    return ok(out + "</AttachedPolicies>" + PageTail(attached.next_marker));
  }

  // ---- Users
  if (a == "CreateUser") {
    UserSpec spec;
    spec.name = in.Or("UserName", "");
    spec.path = in.Or("Path", "/");
    spec.boundary_arn = in.Or("PermissionsBoundary", "");
    spec.tags = TagsOf(in);
    ASSIGN_OR_RETURN(User u, directory_.CreateUser(account, spec));
    return ok("<User>" + UserXml(u, true) + "</User>");
  }
  // The user a user-scoped call names, or the caller: root acts for its own keys (empty name),
  // a user for itself; a role session must name a user.
  std::optional<std::string> named_user = in.Get("UserName");
  auto caller_user = [&]() -> StatusOr<std::string> {
    if (named_user) return *named_user;
    if (ctx.principal.kind == aws::PrincipalKind::kRoot) return std::string();
    if (ctx.principal.kind == aws::PrincipalKind::kUser) return ctx.principal.user_name;
    return ValidationError("Must specify userName when calling with non-User credentials");
  };
  if (a == "GetUser") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    if (name.empty()) {
      // The root user: IAM answers with its id and ARN only (no name, no path).
      ASSIGN_OR_RETURN(auto acct, accounts_.GetAccount(account));
      const TimePoint created = acct ? acct->created_at : ctx.now;
      return ok("<User>" + X("UserId", account.str()) + X("Arn", RootArn(account)) + X("CreateDate", Iso(created)) +
                "</User>");
    }
    ASSIGN_OR_RETURN(User u, directory_.GetUser(account, name));
    return ok("<User>" + UserXml(u, true) + "</User>");
  }
  if (a == "ListUsers") {
    ASSIGN_OR_RETURN(PageRequest page, PageOf(in));
    ASSIGN_OR_RETURN(Page<User> users, directory_.ListUsers(account, in.Or("PathPrefix", "/"), page));
    std::string out = "<Users>";
    for (const auto& u : users.items) out += "<member>" + UserXml(u, false) + "</member>";
    return ok(out + "</Users>" + PageTail(users.next_marker));
  }
  if (a == "DeleteUser") {
    RETURN_IF_ERROR(directory_.DeleteUser(account, in.Or("UserName", ""), &Accounts::UserHasKeys));
    return ok();
  }

  // ---- Access keys
  if (a == "CreateAccessKey") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    AccessKey key;
    if (name.empty()) {
      ASSIGN_OR_RETURN(key, accounts_.CreateAccessKey(account));
    } else {
      ASSIGN_OR_RETURN(key, accounts_.CreateUserAccessKey(account, [&](store::ReadTxn& txn) -> StatusOr<KeyOwner> {
        ASSIGN_OR_RETURN(auto user, Directory::FindUser(txn, account, name));
        if (!user) return NotFound(fmt::format("The user with name {} cannot be found.", name), Error::kNoSuchEntity);
        return KeyOwner{user->name, user->id, user->arn};
      }));
    }
    std::string out = "<AccessKey>";
    if (!key.user_name.empty()) out += X("UserName", key.user_name);
    out += X("AccessKeyId", key.id.str()) + X("Status", "Active") + X("SecretAccessKey", key.secret) +
           X("CreateDate", Iso(key.created_at)) + "</AccessKey>";
    return ok(out);
  }
  if (a == "ListAccessKeys") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    if (!name.empty()) {
      ASSIGN_OR_RETURN(User u, directory_.GetUser(account, name));
      name = u.name;
    }
    ASSIGN_OR_RETURN(std::vector<AccessKey> keys, accounts_.ListUserAccessKeys(account, name));
    std::string out = "<AccessKeyMetadata>";
    for (const auto& k : keys) {
      out += "<member>";
      if (!k.user_name.empty()) out += X("UserName", k.user_name);
      out += X("AccessKeyId", k.id.str()) +
             X("Status", k.status == AccessKeyStatus::kActive ? "Active" : "Inactive") +
             X("CreateDate", Iso(k.created_at)) + "</member>";
    }
    return ok(out + "</AccessKeyMetadata><IsTruncated>false</IsTruncated>");
  }
  if (a == "UpdateAccessKey" || a == "DeleteAccessKey") {
    ASSIGN_OR_RETURN(std::string name, caller_user());
    if (!name.empty()) RETURN_IF_ERROR(directory_.GetUser(account, name).status());
    const AccessKeyId id(in.Or("AccessKeyId", ""));
    if (a == "DeleteAccessKey") {
      RETURN_IF_ERROR(accounts_.DeleteAccessKey(account, name, id));
    } else {
      const std::string status = in.Or("Status", "");
      if (status == "Expired") return ValidationError("Status 'Expired' cannot be set by UpdateAccessKey.");
      RETURN_IF_ERROR(accounts_.SetAccessKeyStatus(account, name, id,
                                                   status == "Active" ? AccessKeyStatus::kActive : AccessKeyStatus::kInactive));
    }
    return ok();
  }
  if (a == "SimulatePrincipalPolicy" || a == "SimulateCustomPolicy") return Simulate(directory_, authorizer_, ctx, in);
  if (a == "GetContextKeysForPrincipalPolicy" || a == "GetContextKeysForCustomPolicy")
    return ContextKeysOf(directory_, ctx, in);
  return Internal(fmt::format("IAM action {} is listed but not dispatched", a));
}



std::vector<aws::AuthRequest> IamService::AuthorizationFor(const aws::CallContext& ctx,
                                                           const aws::QueryParams& params) const {
  const std::string account = ctx.principal.account.str();
  auto param = [&](std::string_view name) { return std::string(aws::FindParam(params, name).value_or("")); };
  // An entity's ARN as IAM authorizes it, path included (a policy may grant `role/svc/*`): with
  // the path a create gives, else the stored role's or user's ARN (one read; IAM calls are not a
  // hot path), else at "/" (no such entity: the call answers NoSuchEntity if it may ask at all).
  auto arn = [&](std::string_view kind, std::string_view name) {
    if (ctx.action.starts_with("Create") && !param("Path").empty())
      return fmt::format("arn:aws:iam::{}:{}{}{}", account, kind, param("Path"), name);
    if (kind == "role") {
      if (auto r = directory_.GetRole(ctx.principal.account, name); r.ok()) return r->arn;
    } else if (kind == "user") {
      if (auto u = directory_.GetUser(ctx.principal.account, name); u.ok()) return u->arn;
    }
    return fmt::format("arn:aws:iam::{}:{}/{}", account, kind, name);
  };
  aws::AuthRequest q{"iam:" + ctx.action, "*", {}};
  const std::string user = param("UserName"), role = param("RoleName"), policy_arn = param("PolicyArn");
  if (!role.empty()) {
    q.resource = arn("role", role);
  } else if (!user.empty()) {
    q.resource = arn("user", user);
  } else if (!policy_arn.empty()) {
    q.resource = policy_arn;
  } else if (ctx.action == "CreatePolicy") {
    q.resource = arn("policy", param("PolicyName"));
  } else if ((ctx.action == "SimulatePrincipalPolicy" || ctx.action == "GetContextKeysForPrincipalPolicy") &&
             !param("PolicySourceArn").empty()) {
    q.resource = param("PolicySourceArn");
  } else if (ctx.action == "CreateServiceLinkedRole") {
    q.resource = fmt::format("arn:aws:iam::{}:role/aws-service-role/{}/*", account, param("AWSServiceName"));
  } else if (ctx.principal.kind == aws::PrincipalKind::kUser &&
             (ctx.action == "GetUser" || ctx.action == "CreateAccessKey" || ctx.action == "ListAccessKeys" ||
              ctx.action == "UpdateAccessKey" || ctx.action == "DeleteAccessKey")) {
    q.resource = ctx.principal.arn;  // a user's call about itself
  }
  if (!policy_arn.empty() && (ctx.action.starts_with("Attach") || ctx.action.starts_with("Detach"))) {
    q.context.emplace_back("iam:PolicyARN", policy_arn);
  }
  if (std::string boundary = param("PermissionsBoundary"); !boundary.empty()) {
    q.context.emplace_back("iam:PermissionsBoundary", boundary);
  }
  return {std::move(q)};
}

}  // namespace paddock::iam::api
