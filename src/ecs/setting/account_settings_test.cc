#include "ecs/setting/account_settings.h"

#include <gtest/gtest.h>

#include "ecs/testing/temp_store.h"
#include "ecs/api/errors.h"

namespace paddock::ecs::setting {
namespace {

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};
const Scope kOtherRegion{AccountId("123456789012"), Region("eu-west-1")};
constexpr std::string_view kRoot = "arn:aws:iam::123456789012:root";
constexpr std::string_view kAlice = "arn:aws:iam::123456789012:user/alice";
constexpr std::string_view kBob = "arn:aws:iam::123456789012:role/bob";

class AccountSettingsTest : public ::testing::Test {
 protected:
  std::string EffectiveValue(const Scope& scope, std::string_view principal, SettingName name) {
    std::string out;
    EXPECT_TRUE(store_
                    ->Read([&](store::ReadTxn& txn) -> Status {
                      ASSIGN_OR_RETURN(Setting s, settings_.Effective(txn, scope, principal, name));
                      out = s.value;
                      return OkStatus();
                    })
                    .ok());
    return out;
  }
  paddock::testing::TempStore store_;
  AccountSettings settings_{*store_};
};

TEST_F(AccountSettingsTest, NamesRoundTripAndAreListedSorted) {
  for (SettingName n : AllSettingNames()) EXPECT_EQ(ParseSettingName(SettingNameText(n)), n);
  EXPECT_EQ(ParseSettingName("dualStackIPv6"), std::nullopt);
  const auto& all = AllSettingNames();
  ASSERT_EQ(all.size(), 11u);
  EXPECT_EQ(SettingNameText(all.front()), "awsvpcTrunking");
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(),
                             [](auto a, auto b) { return SettingNameText(a) < SettingNameText(b); }));
}

TEST_F(AccountSettingsTest, EffectiveIsThePrincipalsThenTheRootsThenAwsDefault) {
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kContainerInsights), "disabled");
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kTaskLongArnFormat), "enabled");
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kDefaultLogDriverMode), "non-blocking");
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kFargateTaskRetirementWaitPeriod), "7");

  auto d = settings_.PutDefault(kScope, kAlice, SettingName::kContainerInsights, "enabled");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->principal_arn, kRoot);  // the default is the root user's setting
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kContainerInsights), "enabled");

  auto own = settings_.Put(kScope, kAlice, SettingName::kContainerInsights, "enhanced", std::nullopt);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->principal_arn, kAlice);
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kContainerInsights), "enhanced");
  EXPECT_EQ(EffectiveValue(kScope, kBob, SettingName::kContainerInsights), "enabled");
  // Settings are per region.
  EXPECT_EQ(EffectiveValue(kOtherRegion, kAlice, SettingName::kContainerInsights), "disabled");

  // Deleting Alice's own value gives her the account default again; deleting nothing changes nothing.
  auto del = settings_.Delete(kScope, kAlice, SettingName::kContainerInsights, std::nullopt);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->value, "enhanced");
  EXPECT_EQ(EffectiveValue(kScope, kAlice, SettingName::kContainerInsights), "enabled");
  auto again = settings_.Delete(kScope, kAlice, SettingName::kContainerInsights, std::nullopt);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->value, "enabled");
  EXPECT_EQ(again->principal_arn, kRoot);
}

TEST_F(AccountSettingsTest, ValuesAreCheckedAsAwsChecksThem) {
  auto code = [](const StatusOr<Setting>& s) { return s.ok() ? std::string("OK") : api::AnswerFor(s.status()).type; };
  auto bad = settings_.Put(kScope, kRoot, SettingName::kContainerInsights, "ENABLED", std::nullopt);
  EXPECT_EQ(code(bad), "InvalidParameterException");
  EXPECT_EQ(bad.status().message(), "Invalid setting 'value'");
  auto long_arn = settings_.PutDefault(kScope, kRoot, SettingName::kServiceLongArnFormat, "disabled");
  EXPECT_EQ(long_arn.status().message(), "You can no longer disable Long Arn settings.");
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kServiceLongArnFormat, "enabled")), "OK");
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kTagResourceAuthorization, "enabled")),
            "InvalidParameterException");
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kTagResourceAuthorization, "off")), "OK");
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kFargateTaskRetirementWaitPeriod, "3")),
            "InvalidParameterException");
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kFargateTaskRetirementWaitPeriod, "14")), "OK");
  EXPECT_EQ(code(settings_.Put(kScope, kAlice, SettingName::kFargateTaskRetirementWaitPeriod, "0", std::nullopt)),
            "InvalidParameterException");  // the root user's only
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kDefaultLogDriverMode, "blocking")), "OK");
  EXPECT_EQ(code(settings_.PutDefault(kScope, kRoot, SettingName::kGuardDutyActivate, "on")),
            "InvalidParameterException");
}

TEST_F(AccountSettingsTest, OnlyTheRootOrThePrincipalItselfNamesAPrincipal) {
  auto code = [](const StatusOr<Setting>& s) { return s.ok() ? std::string("OK") : api::AnswerFor(s.status()).type; };
  EXPECT_EQ(code(settings_.Put(kScope, kRoot, SettingName::kAwsvpcTrunking, "enabled", std::string(kAlice))), "OK");
  EXPECT_EQ(code(settings_.Put(kScope, kAlice, SettingName::kAwsvpcTrunking, "enabled", std::string(kAlice))), "OK");
  EXPECT_EQ(code(settings_.Put(kScope, kAlice, SettingName::kAwsvpcTrunking, "enabled", std::string(kBob))),
            "AccessDeniedException");
  EXPECT_EQ(code(settings_.Put(kScope, kRoot, SettingName::kAwsvpcTrunking, "enabled",
                               std::string("arn:aws:iam::210987654321:root"))),
            "AccessDeniedException");
  EXPECT_EQ(code(settings_.Put(kScope, kRoot, SettingName::kAwsvpcTrunking, "enabled", std::string("bob"))),
            "InvalidParameterException");
}

TEST_F(AccountSettingsTest, ListOwnOrEffectiveFilteredAndPaged) {
  ASSERT_TRUE(settings_.PutDefault(kScope, kRoot, SettingName::kContainerInsights, "enabled").ok());
  ASSERT_TRUE(settings_.Put(kScope, kAlice, SettingName::kAwsvpcTrunking, "enabled", std::nullopt).ok());

  auto own = settings_.List(kScope, kAlice, ListQuery{});
  ASSERT_TRUE(own.ok());
  ASSERT_EQ(own->settings.size(), 1u);
  EXPECT_EQ(own->settings[0].name, SettingName::kAwsvpcTrunking);

  ListQuery eff;
  eff.effective = true;
  auto first = settings_.List(kScope, kAlice, eff);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->settings.size(), 10u);
  ASSERT_FALSE(first->next.empty());
  eff.after = first->next;
  auto second = settings_.List(kScope, kAlice, eff);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->settings.size(), 1u);
  EXPECT_TRUE(second->next.empty());
  for (const auto& s : first->settings) {
    if (s.name == SettingName::kContainerInsights) {
      EXPECT_EQ(s.principal_arn, kRoot);
    }
    if (s.name == SettingName::kAwsvpcTrunking) {
      EXPECT_EQ(s.principal_arn, kAlice);
    }
    EXPECT_EQ(s.aws_managed, s.name == SettingName::kGuardDutyActivate);
  }

  ListQuery by_value;
  by_value.effective = true;
  by_value.name = SettingName::kContainerInsights;
  by_value.value = "disabled";
  auto none = settings_.List(kScope, kAlice, by_value);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->settings.empty());
  ListQuery value_only;
  value_only.value = "enabled";
  EXPECT_EQ(api::AnswerFor(settings_.List(kScope, kAlice, value_only).status()).type, "InvalidParameterException");
}

TEST_F(AccountSettingsTest, ReapAccountRemovesEverySetting) {
  ASSERT_TRUE(settings_.PutDefault(kScope, kRoot, SettingName::kContainerInsights, "enabled").ok());
  ASSERT_TRUE(settings_.ReapAccount(kScope.account).ok());
  EXPECT_EQ(EffectiveValue(kScope, kRoot, SettingName::kContainerInsights), "disabled");
}

}  // namespace
}  // namespace paddock::ecs::setting
