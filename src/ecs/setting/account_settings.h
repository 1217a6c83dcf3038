// ecs/setting: the one owner of ECS account settings (docs/contracts/account-setting.md).
//
//   AccountSettings settings(store);
//   ASSIGN_OR_RETURN(Setting s, settings.Put(scope, caller_arn, SettingName::kContainerInsights, "enhanced",
//                                            std::nullopt));
//   // later, in CreateCluster's transaction:
//   ASSIGN_OR_RETURN(Setting e, settings.Effective(txn, scope, caller_arn, SettingName::kContainerInsights));
//
// A setting is set per (account, region) for one principal: a user, a role, or the account's root
// user, whose value is the account's default for every principal that has none of its own. What
// applies to a principal (its effective value) is its own value, else the root user's, else
// AWS's default for the setting (kDefaults in account_settings.cc, with the source of each).
//
// Records (ecs/schema.h):
//   account_settings (account, region, principal ARN, setting name) -> value
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::ecs::setting {

// botocore's SettingName enum, in the model's order.
enum class SettingName {
  kServiceLongArnFormat,
  kTaskLongArnFormat,
  kContainerInstanceLongArnFormat,
  kAwsvpcTrunking,
  kContainerInsights,
  kFargateFipsMode,
  kTagResourceAuthorization,
  kFargateTaskRetirementWaitPeriod,
  kGuardDutyActivate,
  kDefaultLogDriverMode,
  kFargateEventWindows,
};

// "containerInsights" <-> kContainerInsights. Parse: nullopt for a name that is not in the enum.
std::string_view SettingNameText(SettingName name);
std::optional<SettingName> ParseSettingName(std::string_view text);
// Every setting name, sorted by its text (the order ListAccountSettings answers in).
const std::vector<SettingName>& AllSettingNames();

// One setting as ECS's Setting shape describes it.
struct Setting {
  SettingName name;
  std::string value;
  std::string principal_arn;
  bool aws_managed = false;  // type "aws_managed" (read-only: guardDutyActivate), else "user"
};

struct ListQuery {
  std::optional<std::string> principal_arn;  // default: the caller
  std::optional<SettingName> name;
  std::optional<std::string> value;          // only with name
  bool effective = false;                    // effectiveSettings
  size_t limit = 10;                         // 1..10
  std::string after;                         // the last setting name of the previous page
};

struct Page {
  std::vector<Setting> settings;
  std::string next;  // empty when done
};

class AccountSettings {
 public:
  explicit AccountSettings(store::Store& store) : store_(store) {}

  // PutAccountSetting: sets `name` to `value` for `principal_arn` (default: the caller). Only the
  // root user or the principal itself may name a principal (else AccessDeniedException), and only
  // the root user sets fargateTaskRetirementWaitPeriod. The value must be one the setting accepts
  // (InvalidParameterException "Invalid setting 'value'", AWS's text); the long-ARN settings can
  // no longer be disabled and guardDutyActivate is read-only. Answers the setting as stored.
  StatusOr<Setting> Put(const Scope& scope, std::string_view caller_arn, SettingName name, std::string_view value,
                        const std::optional<std::string>& principal_arn);
  // PutAccountSettingDefault: Put for the account's root user, whoever calls.
  StatusOr<Setting> PutDefault(const Scope& scope, std::string_view caller_arn, SettingName name,
                               std::string_view value);
  // DeleteAccountSetting: removes the principal's own value (default: the caller); the principal
  // then has the root user's value, or AWS's default. Answers the value removed, or, when the
  // principal had none, the value that applies to it (nothing changes).
  StatusOr<Setting> Delete(const Scope& scope, std::string_view caller_arn, SettingName name,
                           const std::optional<std::string>& principal_arn);
  // ListAccountSettings: without `effective`, the principal's own values; with it, every setting
  // with the value that applies to the principal. Filtered by name and value, sorted by name.
  StatusOr<Page> List(const Scope& scope, std::string_view caller_arn, const ListQuery& q);

  // The value of `name` that applies to `principal_arn`, inside the caller's transaction (what
  // CreateCluster reads for its containerInsights default).
  StatusOr<Setting> Effective(store::ReadTxn& txn, const Scope& scope, std::string_view principal_arn,
                              SettingName name);

  Status ReapAccount(const AccountId& account);

 private:
  StatusOr<Setting> PutFor(const Scope& scope, std::string_view principal, SettingName name, std::string_view value);
  store::Store& store_;
};

// "arn:aws:iam::<account>:root".
std::string RootArn(const Scope& scope);

}  // namespace paddock::ecs::setting
