#include "ecs/setting/account_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "ecs/common/reap.h"
#include "ecs/common/records.h"
#include "ecs/common/resource_arn.h"
#include "store/key.h"

namespace paddock::ecs::setting {
namespace {

constexpr std::string_view kTable = "account_settings";

// What each setting accepts and what applies when nobody set it. Sources (read 2026-12):
// - the SettingName and PutAccountSetting documentation in botocore 1.43's ECS model (values);
// - https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs-account-settings.html: the
//   long ARN formats default to enabled, containerInsights and awsvpcTrunking to disabled,
//   fargateTaskRetirementWaitPeriod to 7 days, tagResourceAuthorization to on;
// - the model's defaultLogDriverMode note: non-blocking is the default since June 25, 2025;
// - AWS refuses to disable a long ARN format today: "InvalidParameterException: You can no
//   longer disable Long Arn settings." (quoted in Terraform's and Pulumi's
//   aws_ecs_account_setting_default documentation).
struct Rule {
  SettingName name;
  std::string_view text;
  std::array<std::string_view, 3> values;  // accepted ("" = unused slot)
  std::string_view default_value;
};

constexpr Rule kRules[] = {
    {SettingName::kServiceLongArnFormat, "serviceLongArnFormat", {"enabled", "", ""}, "enabled"},
    {SettingName::kTaskLongArnFormat, "taskLongArnFormat", {"enabled", "", ""}, "enabled"},
    {SettingName::kContainerInstanceLongArnFormat, "containerInstanceLongArnFormat", {"enabled", "", ""}, "enabled"},
    {SettingName::kAwsvpcTrunking, "awsvpcTrunking", {"enabled", "disabled", ""}, "disabled"},
    {SettingName::kContainerInsights, "containerInsights", {"enabled", "disabled", "enhanced"}, "disabled"},
    {SettingName::kFargateFipsMode, "fargateFIPSMode", {"enabled", "disabled", ""}, "disabled"},
    {SettingName::kTagResourceAuthorization, "tagResourceAuthorization", {"on", "off", ""}, "on"},
    {SettingName::kFargateTaskRetirementWaitPeriod, "fargateTaskRetirementWaitPeriod", {"0", "7", "14"}, "7"},
    {SettingName::kGuardDutyActivate, "guardDutyActivate", {"", "", ""}, "off"},
    {SettingName::kDefaultLogDriverMode, "defaultLogDriverMode", {"blocking", "non-blocking", ""}, "non-blocking"},
    {SettingName::kFargateEventWindows, "fargateEventWindows", {"enabled", "disabled", ""}, "disabled"},
};

const Rule& RuleFor(SettingName name) {
  for (const Rule& r : kRules)
    if (r.name == name) return r;
  return kRules[0];  // unreachable: kRules covers the enum
}

bool IsLongArn(SettingName n) {
  return n == SettingName::kServiceLongArnFormat || n == SettingName::kTaskLongArnFormat ||
         n == SettingName::kContainerInstanceLongArnFormat;
}

Status CheckValue(SettingName name, std::string_view value) {
  if (name == SettingName::kGuardDutyActivate)
    return ParamError("guardDutyActivate is managed by Amazon GuardDuty and is read-only.");
  if (IsLongArn(name) && value == "disabled") return ParamError("You can no longer disable Long Arn settings.");
  const Rule& r = RuleFor(name);
  if (value.empty() || std::find(r.values.begin(), r.values.end(), value) == r.values.end())
    return ParamError("Invalid setting 'value'");
  return OkStatus();
}

std::string RowKey(const Scope& s, std::string_view principal, SettingName name) {
  return ScopeKey(s).Str(principal).Str(SettingNameText(name)).Done();
}

Setting Make(SettingName name, std::string value, std::string principal) {
  return Setting{name, std::move(value), std::move(principal), name == SettingName::kGuardDutyActivate};
}

// arn:aws:iam::<12 digits>:root | user/<path+name> | role/<path+name>
bool IsIamPrincipalArn(std::string_view arn, std::string_view* account) {
  constexpr std::string_view kPrefix = "arn:aws:iam::";
  if (!arn.starts_with(kPrefix)) return false;
  std::string_view rest = arn.substr(kPrefix.size());
  if (rest.size() < 13 || rest[12] != ':') return false;
  for (size_t i = 0; i < 12; ++i)
    if (rest[i] < '0' || rest[i] > '9') return false;
  *account = rest.substr(0, 12);
  std::string_view resource = rest.substr(13);
  if (resource == "root") return true;
  for (std::string_view kind : {"user/", "role/"})
    if (resource.starts_with(kind) && resource.size() > kind.size() && resource.size() <= 512) return true;
  return false;
}

// Whose setting a request names: `given` (else the caller), which the caller may act for.
StatusOr<std::string> ResolvePrincipal(const Scope& scope, std::string_view caller_arn, std::string_view action,
                                       const std::optional<std::string>& given) {
  const std::string root = RootArn(scope);
  const std::string caller = caller_arn.empty() ? root : std::string(caller_arn);
  std::string principal = given ? *given : caller;
  std::string_view account;
  if (!IsIamPrincipalArn(principal, &account)) {
    if (!given && principal.starts_with("arn:aws:sts::"))
      return ParamError("Federated users assume the account setting of the root user and can't have explicit "
                        "account settings set for them.");
    return ParamError(fmt::format(
        "The principal ARN '{}' is not valid. Specify the ARN of a user, a role or the root user of your account.",
        principal));
  }
  // "In order to use this parameter, you must be the root user, or the principal."
  if (account != scope.account.str() || (caller != root && principal != caller))
    return NotAuthorized(caller, action, principal);
  return principal;
}

}  // namespace

std::string_view SettingNameText(SettingName name) { return RuleFor(name).text; }

std::optional<SettingName> ParseSettingName(std::string_view text) {
  for (const Rule& r : kRules)
    if (r.text == text) return r.name;
  return std::nullopt;
}

const std::vector<SettingName>& AllSettingNames() {
  static const std::vector<SettingName> sorted = [] {
    std::vector<SettingName> out;
    for (const Rule& r : kRules) out.push_back(r.name);
    std::sort(out.begin(), out.end(),
              [](SettingName a, SettingName b) { return SettingNameText(a) < SettingNameText(b); });
    return out;
  }();
  return sorted;
}

std::string RootArn(const Scope& scope) { return fmt::format("arn:aws:iam::{}:root", scope.account.str()); }

StatusOr<Setting> AccountSettings::PutFor(const Scope& scope, std::string_view principal, SettingName name,
                                          std::string_view value) {
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) { return txn.Put(kTable, RowKey(scope, principal, name), value); }));
  return Make(name, std::string(value), std::string(principal));
}

StatusOr<Setting> AccountSettings::Put(const Scope& scope, std::string_view caller_arn, SettingName name,
                                       std::string_view value, const std::optional<std::string>& principal_arn) {
  RETURN_IF_ERROR(CheckValue(name, value));
  ASSIGN_OR_RETURN(std::string principal, ResolvePrincipal(scope, caller_arn, "PutAccountSetting", principal_arn));
  // "You must use the root user when you set the Fargate wait time."
  if (name == SettingName::kFargateTaskRetirementWaitPeriod && principal != RootArn(scope))
    return ParamError("The fargateTaskRetirementWaitPeriod setting can only be set for the root user.");
  return PutFor(scope, principal, name, value);
}

StatusOr<Setting> AccountSettings::PutDefault(const Scope& scope, std::string_view caller_arn, SettingName name,
                                              std::string_view value) {
  (void)caller_arn;  // any principal of the account may set the default (IAM would decide on AWS)
  RETURN_IF_ERROR(CheckValue(name, value));
  return PutFor(scope, RootArn(scope), name, value);
}

StatusOr<Setting> AccountSettings::Delete(const Scope& scope, std::string_view caller_arn, SettingName name,
                                          const std::optional<std::string>& principal_arn) {
  if (name == SettingName::kGuardDutyActivate)
    return ParamError("guardDutyActivate is managed by Amazon GuardDuty and is read-only.");
  ASSIGN_OR_RETURN(std::string principal, ResolvePrincipal(scope, caller_arn, "DeleteAccountSetting", principal_arn));
  Setting out;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    const std::string key = RowKey(scope, principal, name);
    ASSIGN_OR_RETURN(auto had, txn.Get(kTable, key));
    if (had) {
      out = Make(name, *had, principal);
      return txn.Delete(kTable, key);
    }
    ASSIGN_OR_RETURN(out, Effective(txn, scope, principal, name));
    return OkStatus();
  }));
  return out;
}

StatusOr<Setting> AccountSettings::Effective(store::ReadTxn& txn, const Scope& scope, std::string_view principal_arn,
                                             SettingName name) {
  const std::string root = RootArn(scope);
  if (!principal_arn.empty() && principal_arn != root) {
    ASSIGN_OR_RETURN(auto own, txn.Get(kTable, RowKey(scope, principal_arn, name)));
    if (own) return Make(name, *own, std::string(principal_arn));
  }
  ASSIGN_OR_RETURN(auto account_default, txn.Get(kTable, RowKey(scope, root, name)));
  if (account_default) return Make(name, *account_default, root);
  return Make(name, std::string(RuleFor(name).default_value), root);
}

StatusOr<Page> AccountSettings::List(const Scope& scope, std::string_view caller_arn, const ListQuery& q) {
  if (q.value && !q.name)
    return ParamError("The value parameter can only be used together with the name parameter.");
  if (q.limit < 1 || q.limit > 10) return ParamError("maxResults must be between 1 and 10.");
  ASSIGN_OR_RETURN(std::string principal, ResolvePrincipal(scope, caller_arn, "ListAccountSettings", q.principal_arn));
  Page page;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    for (SettingName name : AllSettingNames()) {
      if (q.name && *q.name != name) continue;
      if (!q.after.empty() && SettingNameText(name) <= q.after) continue;
      std::optional<Setting> s;
      if (q.effective) {
        ASSIGN_OR_RETURN(s, Effective(txn, scope, principal, name));
      } else {
        ASSIGN_OR_RETURN(auto own, txn.Get(kTable, RowKey(scope, principal, name)));
        if (own) s = Make(name, *own, principal);
      }
      if (!s || (q.value && s->value != *q.value)) continue;
      if (page.settings.size() == q.limit) {
        page.next = std::string(SettingNameText(page.settings.back().name));
        break;
      }
      page.settings.push_back(std::move(*s));
    }
    return OkStatus();
  }));
  return page;
}

Status AccountSettings::ReapAccount(const AccountId& account) { return ReapAccountRows(store_, kTable, account); }

}  // namespace paddock::ecs::setting
