// AccountCredentials: what the API front makes of an account's keys (moved here from
// iam/directory_test.cc when iam::Accounts stopped depending on aws/).
#include "iam/api/account_credentials.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "iam/directory.h"

namespace paddock::iam::api {
namespace {

class AccountCredentialsTest : public ::testing::Test {
 protected:
  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  Accounts accounts_{*store_, clock_};
  Directory dir_{*store_, clock_};
  AccountCredentials credentials_{accounts_};
};

TEST_F(AccountCredentialsTest, ARootKeyIsTheRootAndAUserKeyThatUser) {
  auto account = accounts_.CreateAccount(std::nullopt, "dev");
  ASSERT_TRUE(account.ok());
  auto root_key = accounts_.CreateAccessKey(account->id);
  ASSERT_TRUE(root_key.ok());
  auto root = credentials_.Lookup(root_key->id);
  ASSERT_TRUE(root.ok() && root->has_value());
  EXPECT_EQ((*root)->secret_access_key, root_key->secret);
  EXPECT_EQ((*root)->principal.kind, aws::PrincipalKind::kRoot);
  EXPECT_EQ((*root)->principal.account, account->id);
  EXPECT_EQ((*root)->principal.arn, "arn:aws:iam::" + account->id.str() + ":root");
  EXPECT_EQ((*root)->principal.user_id, account->id.str());
  EXPECT_EQ((*root)->principal.access_key_id, root_key->id);

  UserSpec spec;
  spec.name = "ci";
  auto user = dir_.CreateUser(account->id, spec);
  ASSERT_TRUE(user.ok());
  auto find = [&](store::ReadTxn& txn) -> StatusOr<KeyOwner> {
    ASSIGN_OR_RETURN(auto u, Directory::FindUser(txn, account->id, "ci"));
    if (!u) return NotFound("no user", Error::kNoSuchEntity);
    return KeyOwner{u->name, u->id, u->arn};
  };
  auto user_key = accounts_.CreateUserAccessKey(account->id, find);
  ASSERT_TRUE(user_key.ok());
  auto cred = credentials_.Lookup(user_key->id);
  ASSERT_TRUE(cred.ok() && cred->has_value());
  EXPECT_EQ((*cred)->principal.kind, aws::PrincipalKind::kUser);
  EXPECT_EQ((*cred)->principal.arn, user->arn);
  EXPECT_EQ((*cred)->principal.user_id, user->id);
  EXPECT_EQ((*cred)->principal.user_name, "ci");

  // An inactive key, or none, authenticates nothing.
  ASSERT_TRUE(accounts_.SetAccessKeyStatus(account->id, "ci", user_key->id, AccessKeyStatus::kInactive).ok());
  EXPECT_FALSE(credentials_.Lookup(user_key->id)->has_value());
  EXPECT_FALSE(credentials_.Lookup(AccessKeyId("AKIANOSUCHKEY0000000"))->has_value());
}

}  // namespace
}  // namespace paddock::iam::api
