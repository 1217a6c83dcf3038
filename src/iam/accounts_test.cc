#include "iam/accounts.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"

namespace paddock::iam {
namespace {

class RecordingReaper : public AccountReaper {
 public:
  std::string_view Name() const override { return "recording"; }
  Status ReapAccount(const AccountId& a) override {
    reaped.push_back(a.str());
    return OkStatus();
  }
  std::vector<std::string> reaped;
};

TEST(AccountsTest, CreateLookupAndDelete) {
  paddock::testing::TempStore store;
  paddock::testing::FakeClock clock;
  Accounts accounts(*store, clock);
  auto a = accounts.CreateAccount(std::nullopt, "dev");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(IsAccountId(a->id.str()));
  auto k = accounts.CreateAccessKey(a->id);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->id.str().substr(0, 4), "AKIA");
  EXPECT_EQ(k->secret.size(), 40u);
  auto found = accounts.FindActiveKey(k->id);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->secret, k->secret);
  EXPECT_EQ((*found)->account, a->id);
  EXPECT_EQ((*found)->principal_arn, "arn:aws:iam::" + a->id.str() + ":root");
  EXPECT_TRUE((*found)->user_name.empty());

  RecordingReaper reaper;
  ASSERT_TRUE(accounts.DeleteAccount(a->id, {&reaper}, Duration::zero()).ok());
  EXPECT_EQ(reaper.reaped, std::vector<std::string>{a->id.str()});
  EXPECT_FALSE(accounts.FindActiveKey(k->id)->has_value());
  EXPECT_TRUE(accounts.ListAccounts()->empty());
}

class FailingReaper : public AccountReaper {
 public:
  std::string_view Name() const override { return "failing"; }
  Status ReapAccount(const AccountId&) override { return FailedPrecondition("a task still runs"); }
};

// `paddock admin delete-account` (cli/account_deletion.h): the keys go first; the account stays,
// marked deleting and refusing new keys, until every reaper has run.
TEST(AccountsTest, DeletionInTwoStepsKeepsTheAccountUntilItsRecordsAreReaped) {
  paddock::testing::TempStore store;
  paddock::testing::FakeClock clock;
  Accounts accounts(*store, clock);
  auto a = accounts.CreateAccount(std::nullopt, "doomed");
  auto k = accounts.CreateAccessKey(a->id);
  ASSERT_TRUE(accounts.BeginDeletion(a->id).ok());
  ASSERT_TRUE(accounts.BeginDeletion(a->id).ok());  // again: fine
  EXPECT_FALSE(accounts.FindActiveKey(k->id)->has_value());
  EXPECT_EQ(accounts.CreateAccessKey(a->id).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(accounts.ListAccounts()->size(), 1u);
  EXPECT_TRUE(accounts.ListAccounts()->front().deleting);
  FailingReaper failing;
  EXPECT_EQ(accounts.FinishDeletion(a->id, {&failing}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(accounts.ListAccounts()->size(), 1u);  // kept: running it again finishes the job
  RecordingReaper reaper;
  ASSERT_TRUE(accounts.FinishDeletion(a->id, {&reaper}).ok());
  EXPECT_EQ(reaper.reaped, std::vector<std::string>{a->id.str()});
  EXPECT_TRUE(accounts.ListAccounts()->empty());
  EXPECT_EQ(accounts.BeginDeletion(a->id).code(), StatusCode::kNotFound);
}

TEST(AccountsTest, ExplicitIdsAreCheckedAndUnique) {
  paddock::testing::TempStore store;
  paddock::testing::FakeClock clock;
  Accounts accounts(*store, clock);
  EXPECT_FALSE(accounts.CreateAccount(AccountId("123"), "x").ok());
  ASSERT_TRUE(accounts.CreateAccount(AccountId("111122223333"), "x").ok());
  EXPECT_EQ(accounts.CreateAccount(AccountId("111122223333"), "y").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(accounts.CreateAccessKey(AccountId("999999999999")).status().code(), StatusCode::kNotFound);
}

TEST(AccountsTest, KeysCreatedElsewhereAreSeenAndDeletedKeysExpireFromTheCache) {
  paddock::testing::TempStore store;
  paddock::testing::FakeClock clock;
  Accounts server(*store, clock), admin(*store, clock);  // two handles on one store, as two processes
  auto a = admin.CreateAccount(std::nullopt, "x");
  auto k = admin.CreateAccessKey(a->id);
  ASSERT_TRUE(server.FindActiveKey(k->id)->has_value());
  ASSERT_TRUE(admin.DeleteAccount(a->id, {}, Duration::zero()).ok());
  EXPECT_TRUE(server.FindActiveKey(k->id)->has_value());  // cached for up to a second
  clock.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(server.FindActiveKey(k->id)->has_value());
}

}  // namespace
}  // namespace paddock::iam
