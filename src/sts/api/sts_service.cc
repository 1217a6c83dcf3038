#include "sts/api/sts_service.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <strings.h>

#include <cstdlib>

#include <boost/json.hpp>

#include "common/arn.h"
#include "iam/policy/policy.h"
#include "sts/api/models/models.h"
#include "sts/errors.h"

namespace paddock::sts::api {
namespace json = boost::json;

namespace {

constexpr std::string_view kXmlns = "https://sts.amazonaws.com/doc/2011-06-15/";
// What AssumeRole's PackedPolicySize is a percentage of (AWS does not publish its packing; this
// is the plain-text budget of a session policy, so a maximal policy reads as 100).
constexpr size_t kPackedPolicyBudget = 2048;

// Any PermissionDenied is STS's AccessDenied (ErrorFor).
Status AccessDenied(std::string message) { return PermissionDenied(std::move(message)); }
Status ValidationError(std::string message) { return InvalidArgument(std::move(message), Error::kValidation); }

std::string_view StringMember(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

std::optional<int64_t> IntMember(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || !v->is_int64()) return std::nullopt;
  return v->get_int64();
}

std::string Iso8601(TimePoint t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
}

std::string Envelope(std::string_view action, std::string_view result, std::string_view request_id) {
  return fmt::format("<{0}Response xmlns=\"{1}\"><{0}Result>{2}</{0}Result><ResponseMetadata><RequestId>{3}"
                     "</RequestId></ResponseMetadata></{0}Response>",
                     action, kXmlns, result, aws::XmlEscape(request_id));
}

std::string CredentialsXml(const IssuedCredentials& c) {
  return fmt::format(
      "<Credentials><AccessKeyId>{}</AccessKeyId><SecretAccessKey>{}</SecretAccessKey><SessionToken>{}"
      "</SessionToken><Expiration>{}</Expiration></Credentials>",
      aws::XmlEscape(c.access_key_id.str()), aws::XmlEscape(c.secret_access_key), aws::XmlEscape(c.session_token),
      Iso8601(c.expiration));
}

// Whether the caller acts as its account's root (its own keys, or a GetSessionToken session of
// them).
bool IsRoot(const aws::Principal& p) {
  return p.kind == aws::PrincipalKind::kRoot ||
         (p.kind == aws::PrincipalKind::kFederatedUser && p.arn.ends_with(":root"));
}

std::string NotAuthorized(const aws::Principal& caller, std::string_view role_arn) {
  return fmt::format("User: {} is not authorized to perform: sts:AssumeRole on resource: {}", caller.arn, role_arn);
}

}  // namespace

StsService::StsService(Sessions& sessions, RoleDirectory* roles) : sessions_(sessions), roles_(roles) {
  auto model = aws::QueryModel::Parse(StsModelJson(), Error::kValidation);
  // The model is compiled into the binary: failing to read it is a build defect, not input.
  if (!model.ok()) {
    fmt::print(stderr, "paddock: the embedded STS model is unreadable: {}\n", model.status().ToString());
    std::abort();
  }
  model_ = std::move(model).value();
}

StsService::~StsService() = default;

bool StsService::Implements(std::string_view action) const {
  return action == "GetCallerIdentity" || action == "GetSessionToken" || action == "AssumeRole";
}

std::optional<aws::ThrottleGroup> StsService::ThrottleGroupFor(std::string_view action) const {
  (void)action;  // AWS publishes no per-action STS rates (research note §1.7)
  return std::nullopt;
}

std::optional<aws::AwsError> StsService::ErrorFor(const Status& status) const {
  return StsErrorFor(status);
}

std::optional<aws::AwsError> StsErrorFor(const Status& status) {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    switch (*e) {
      case Error::kValidation: return aws::AwsError{"ValidationError", 400};
      case Error::kInvalidParameterValue: return aws::AwsError{"InvalidParameterValue", 400};
      case Error::kMalformedPolicyDocument: return aws::AwsError{"MalformedPolicyDocument", 400};
    }
  }
  if (status.code() == StatusCode::kUnauthenticated) {
    // The verifier's failures, in STS's words; every one is 403.
    std::string code = "InvalidClientTokenId";
    if (std::optional<aws::Error> e = status.detail().As<aws::Error>()) {
      switch (*e) {
        case aws::Error::kExpiredToken: code = "ExpiredToken"; break;
        case aws::Error::kMissingAuthenticationToken: code = "MissingAuthenticationToken"; break;
        case aws::Error::kInvalidSignature: code = "SignatureDoesNotMatch"; break;
        case aws::Error::kIncompleteSignature: code = "IncompleteSignature"; break;
        default: break;
      }
    }
    return aws::AwsError{std::move(code), 403};
  }
  if (status.code() == StatusCode::kPermissionDenied) return aws::AwsError{"AccessDenied", 403};
  return std::nullopt;
}

std::vector<aws::AuthRequest> StsService::AuthorizationFor(const aws::CallContext& ctx,
                                                           const aws::QueryParams& params) const {
  if (ctx.action == "GetCallerIdentity") return {};
  std::string resource = "*";
  if (ctx.action == "AssumeRole") resource = std::string(aws::FindParam(params, "RoleArn").value_or("*"));
  return {aws::AuthRequest{"sts:" + ctx.action, std::move(resource), {}}};
}

StatusOr<std::string> StsService::Call(const aws::CallContext& ctx, const aws::QueryParams& params) {
  if (!Implements(ctx.action) || !model_->HasOperation(ctx.action))
    return InvalidArgument(fmt::format("Could not find operation {} for version 2011-06-15.", ctx.action),
                           aws::Error::kInvalidAction);
  ASSIGN_OR_RETURN(json::object input, model_->Decode(ctx.action, params));
  if (ctx.action == "GetCallerIdentity") return GetCallerIdentity(ctx);
  if (ctx.action == "GetSessionToken") return GetSessionToken(ctx, input);
  return AssumeRole(ctx, input);
}

StatusOr<std::string> StsService::GetCallerIdentity(const aws::CallContext& ctx) {
  const aws::Principal& p = ctx.principal;
  std::string user_id = p.user_id.empty() ? p.account.str() : p.user_id;
  return Envelope("GetCallerIdentity",
                  fmt::format("<Arn>{}</Arn><UserId>{}</UserId><Account>{}</Account>", aws::XmlEscape(p.arn),
                              aws::XmlEscape(user_id), aws::XmlEscape(p.account.str())),
                  ctx.request_id);
}

StatusOr<std::string> StsService::GetSessionToken(const aws::CallContext& ctx, const json::object& input) {
  const aws::Principal& caller = ctx.principal;
  if (caller.kind != aws::PrincipalKind::kRoot && caller.kind != aws::PrincipalKind::kUser)
    return AccessDenied("Cannot call GetSessionToken with session credentials");
  if (!StringMember(input, "SerialNumber").empty() || !StringMember(input, "TokenCode").empty()) {
    // Paddock has no MFA devices, so no serial number names one.
    return AccessDenied(
        "MultiFactorAuthentication failed, unable to validate MFA code. Please verify your MFA serial number is "
        "valid and associated with this user.");
  }
  int64_t seconds = IntMember(input, "DurationSeconds").value_or(kDefaultSessionTokenSeconds);
  if (caller.kind == aws::PrincipalKind::kRoot && seconds > kRootSessionTokenMaxSeconds)
    seconds = kRootSessionTokenMaxSeconds;
  ASSIGN_OR_RETURN(IssuedCredentials c, sessions_.IssueSessionToken(caller, std::chrono::seconds(seconds), ctx.now));
  return Envelope("GetSessionToken", CredentialsXml(c), ctx.request_id);
}

StatusOr<std::string> StsService::AssumeRole(const aws::CallContext& ctx, const json::object& input) {
  const aws::Principal& caller = ctx.principal;
  if (IsRoot(caller)) return AccessDenied("Roles may not be assumed by root accounts.");
  std::string role_arn(StringMember(input, "RoleArn"));
  RoleSessionSpec spec;
  spec.session_name = std::string(StringMember(input, "RoleSessionName"));
  spec.session_policy = std::string(StringMember(input, "Policy"));
  spec.source_identity = std::string(StringMember(input, "SourceIdentity"));
  if (const json::value* arns = input.if_contains("PolicyArns"); arns != nullptr && arns->is_array()) {
    for (const json::value& a : arns->get_array())
      if (a.is_object()) spec.policy_arns.emplace_back(StringMember(a.get_object(), "arn"));
  }
  if (const json::value* tags = input.if_contains("Tags"); tags != nullptr && tags->is_array()) {
    for (const json::value& t : tags->get_array())
      if (t.is_object())
        spec.tags.emplace_back(StringMember(t.get_object(), "Key"), StringMember(t.get_object(), "Value"));
  }
  std::string external_id(StringMember(input, "ExternalId"));
  int64_t seconds = IntMember(input, "DurationSeconds").value_or(kDefaultRoleSessionSeconds);

  // Session tags: keys are case-insensitively unique (AWS: "Duplicate tag keys found").
  for (size_t i = 0; i < spec.tags.size(); ++i)
    for (size_t j = i + 1; j < spec.tags.size(); ++j)
      if (strcasecmp(spec.tags[i].first.c_str(), spec.tags[j].first.c_str()) == 0)
        return InvalidArgument(
            "Duplicate tag keys found. Please note that Tag keys are case insensitive.", Error::kInvalidParameterValue);
  // A session policy is an identity-based document, checked by the evaluator's own parser (as
  // IAM checks what it stores), so a session never carries one it cannot read.
  if (!spec.session_policy.empty()) {
    auto policy = iam::policy::ParsePolicy(spec.session_policy, iam::policy::DocumentKind::kIdentity);
    if (!policy.ok()) return InvalidArgument(policy.status().message(), Error::kMalformedPolicyDocument);
  }

  StatusOr<Arn> parsed = ParseArn(role_arn);
  if (!parsed.ok() || parsed->service != "iam" || !parsed->resource.starts_with("role/") ||
      !IsAccountId(parsed->account))
    return ValidationError(fmt::format("{} is invalid", role_arn));
  const AccountId role_account(parsed->account);

  std::optional<AssumableRole> role;
  if (roles_ != nullptr) {
    ASSIGN_OR_RETURN(role, roles_->FindRole(role_account, role_arn));
  }
  // A role that does not exist is refused like one whose trust policy says no: AWS does not tell
  // a caller which roles exist.
  if (!role) return AccessDenied(NotAuthorized(caller, role_arn));

  TrustContext context;
  if (!external_id.empty()) context.emplace_back("sts:ExternalId", external_id);
  context.emplace_back("sts:RoleSessionName", spec.session_name);
  if (!spec.source_identity.empty()) context.emplace_back("sts:SourceIdentity", spec.source_identity);
  for (const auto& [k, v] : spec.tags) {
    context.emplace_back("aws:RequestTag/" + k, v);
    context.emplace_back("aws:TagKeys", k);
  }
  if (const json::value* keys = input.if_contains("TransitiveTagKeys"); keys != nullptr && keys->is_array()) {
    for (const json::value& k : keys->get_array())
      if (k.is_string()) context.emplace_back("sts:TransitiveTagKeys", std::string(k.get_string()));
  }
  Status trusted = roles_->TrustAdmits(*role, caller, CallOrigin{ctx.now, ctx.source_ip, ctx.scope.region}, context);
  if (trusted.code() == StatusCode::kPermissionDenied) return AccessDenied(NotAuthorized(caller, role_arn));
  RETURN_IF_ERROR(trusted);

  if (caller.kind == aws::PrincipalKind::kAssumedRole && seconds > kRoleChainingMaxSeconds)
    return ValidationError(
        "The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.");
  if (seconds > role->max_session_seconds)
    return ValidationError("The requested DurationSeconds exceeds the MaxSessionDuration set for this role.");

  ASSIGN_OR_RETURN(IssuedCredentials c,
                   sessions_.IssueRoleSession(role_account, *role, spec, std::chrono::seconds(seconds), ctx.now));
  std::string result;
  if (!spec.source_identity.empty())
    result += fmt::format("<SourceIdentity>{}</SourceIdentity>", aws::XmlEscape(spec.source_identity));
  result += fmt::format("<AssumedRoleUser><AssumedRoleId>{}</AssumedRoleId><Arn>{}</Arn></AssumedRoleUser>",
                        aws::XmlEscape(c.principal.user_id), aws::XmlEscape(c.principal.arn));
  result += CredentialsXml(c);
  if (!spec.session_policy.empty() || !spec.tags.empty() || !spec.policy_arns.empty()) {
    size_t packed = spec.session_policy.size();
    for (const auto& [k, v] : spec.tags) packed += k.size() + v.size();
    for (const auto& a : spec.policy_arns) packed += a.size();
    result += fmt::format("<PackedPolicySize>{}</PackedPolicySize>",
                          (packed * 100 + kPackedPolicyBudget - 1) / kPackedPolicyBudget);
  }
  return Envelope("AssumeRole", result, ctx.request_id);
}

}  // namespace paddock::sts::api
