// secretsmanager::Secrets on a real (temporary) SQLite store and a fake clock: the owner's rules
// as a specification — versions and stages, ClientRequestToken, deletion and recovery, lookups
// by name and ARN, tenancy, and what is stored (docs/contracts/secretsmanager.md).
#include "secretsmanager/secrets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/encoding.h"
#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "store/key.h"

namespace paddock::secretsmanager {
namespace {

using std::chrono::hours;

constexpr std::string_view kToken1 = "11111111-1111-1111-1111-111111111111";
constexpr std::string_view kToken2 = "22222222-2222-2222-2222-222222222222";
constexpr std::string_view kToken3 = "33333333-3333-3333-3333-333333333333";

class SecretsTest : public ::testing::Test {
 protected:
  SecretsTest()
      : keys_(kms::KeyRing::InMemory({{1, std::string(32, 'k')}})), secrets_(*store_, *keys_, clock_) {}

  WriteResult MustCreate(const std::string& name, const std::string& value,
                         std::optional<std::string> token = std::nullopt, const Scope* scope = nullptr) {
    auto made = secrets_.Create(scope ? *scope : scope_, {.name = name, .value = SecretValue::String(value),
                                                          .token = std::move(token)});
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? *made : WriteResult{};
  }
  std::string Current(std::string_view id, const Scope* scope = nullptr) {
    auto v = secrets_.GetValue(scope ? *scope : scope_, id, {});
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? v->value.bytes : "";
  }
  // Every row of `table`, as stored.
  std::vector<store::Row> Rows(std::string_view table) {
    std::vector<store::Row> rows;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(rows, txn.Scan(table, store::Range{"", ""}, 100000));
      return OkStatus();
    }).ok());
    return rows;
  }

  testing::TempStore store_;
  testing::FakeClock clock_;
  std::unique_ptr<kms::KeyRing> keys_;
  Secrets secrets_;
  Scope scope_{AccountId("123456789012"), Region("us-east-1")};
};

TEST_F(SecretsTest, CreateThenGetByNameFullArnAndPartialArn) {
  WriteResult made = MustCreate("db/password", "hunter2", std::string(kToken1));
  EXPECT_EQ(made.name, "db/password");
  EXPECT_EQ(made.version_id, std::string(kToken1));
  ASSERT_EQ(made.arn.size(),
            std::string("arn:aws:secretsmanager:us-east-1:123456789012:secret:db/password-").size() + 6);
  EXPECT_TRUE(made.arn.starts_with("arn:aws:secretsmanager:us-east-1:123456789012:secret:db/password-"));
  for (std::string id : {std::string("db/password"), made.arn,
                         std::string("arn:aws:secretsmanager:us-east-1:123456789012:secret:db/password")}) {
    auto v = secrets_.GetValue(scope_, id, {});
    ASSERT_TRUE(v.ok()) << id << ": " << v.status().ToString();
    EXPECT_EQ(v->value, SecretValue::String("hunter2"));
    EXPECT_EQ(v->version_id, kToken1);
    EXPECT_EQ(v->stages, std::vector<std::string>{"AWSCURRENT"});
    EXPECT_EQ(v->arn, made.arn);
  }
  // A full ARN with another suffix (a deleted and recreated secret's) names nothing.
  std::string stale = made.arn.substr(0, made.arn.size() - 6) + "zzzzzz";
  if (stale == made.arn) stale[stale.size() - 1] = 'y';
  EXPECT_TRUE(IsError(secrets_.GetValue(scope_, stale, {}).status(), Error::kResourceNotFound));
  auto missing = secrets_.GetValue(scope_, "nope", {});
  EXPECT_TRUE(IsError(missing.status(), Error::kResourceNotFound));
  EXPECT_EQ(missing.status().message(), "Secrets Manager can't find the specified secret.");
}

TEST_F(SecretsTest, ValuesAreSealedAtRestAndBoundToTheirSecretAndVersion) {
  MustCreate("a", "plaintext-value-a");
  MustCreate("b", "plaintext-value-b");
  for (const store::Row& row : Rows("sm_secret_versions"))
    for (std::string form :
         {std::string("plaintext-value"), Base64UrlEncode("plaintext-value"), HexEncode("plaintext-value")})
      EXPECT_EQ(row.value.find(form.substr(0, 12)), std::string::npos) << "a value is stored in the clear";
  // Copying b's sealed row over a's does not make a read b's value: the seal names a's ARN.
  std::vector<store::Row> rows = Rows("sm_secret_versions");
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(
      store_->Write([&](store::WriteTxn& txn) { return txn.Put("sm_secret_versions", rows[0].key, rows[1].value); })
          .ok());
  auto swapped = secrets_.GetValue(scope_, "a", {});
  EXPECT_TRUE(IsError(swapped.status(), Error::kDecryptionFailure)) << swapped.status().ToString();
}

TEST_F(SecretsTest, PutMovesCurrentAndPreviousInOneWrite) {
  MustCreate("s", "v1", std::string(kToken1));
  auto put =
      secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v2"), .token = std::string(kToken2)});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->stages, std::vector<std::string>{"AWSCURRENT"});
  EXPECT_EQ(Current("s"), "v2");
  auto prev = secrets_.GetValue(scope_, "s", {.stage = "AWSPREVIOUS"});
  ASSERT_TRUE(prev.ok());
  EXPECT_EQ(prev->value.bytes, "v1");
  EXPECT_EQ(prev->version_id, kToken1);
  ASSERT_TRUE(
      secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v3"), .token = std::string(kToken3)}).ok());
  auto info = secrets_.Describe(scope_, "s");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->versions.size(), 3u);
  EXPECT_TRUE(info->versions[0].stages.empty());  // v1: deprecated, AWSPREVIOUS moved on
  EXPECT_EQ(info->versions[1].stages, std::vector<std::string>{"AWSPREVIOUS"});
  EXPECT_EQ(info->versions[2].stages, std::vector<std::string>{"AWSCURRENT"});
  // A version id still reads a deprecated version.
  auto old = secrets_.GetValue(scope_, "s", {.version_id = std::string(kToken1)});
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->value.bytes, "v1");
  // Id and stage must agree.
  EXPECT_TRUE(
      IsError(secrets_.GetValue(scope_, "s", {std::string(kToken1), "AWSCURRENT"}).status(), Error::kInvalidRequest));
  auto no_stage = secrets_.GetValue(scope_, "s", {.stage = "AWSPENDING"});
  EXPECT_EQ(no_stage.status().message(),
            "Secrets Manager can't find the specified secret value for staging label: AWSPENDING");
}

TEST_F(SecretsTest, PutWithStagesLeavesCurrentWhereItIs) {
  MustCreate("s", "v1", std::string(kToken1));
  auto pending = secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v2"),
                                      .token = std::string(kToken2), .stages = std::vector<std::string>{"AWSPENDING"}});
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_EQ(Current("s"), "v1");
  EXPECT_EQ(secrets_.GetValue(scope_, "s", {.stage = "AWSPENDING"})->value.bytes, "v2");
}

TEST_F(SecretsTest, ClientRequestTokenRepeatsAreNoOpsAndConflictsAreRefused) {
  WriteResult first = MustCreate("s", "v1", std::string(kToken1));
  // CreateSecret retried: same answer, nothing written.
  auto again =
      secrets_.Create(scope_, {.name = "s", .value = SecretValue::String("v1"), .token = std::string(kToken1)});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->arn, first.arn);
  EXPECT_EQ(again->version_id, first.version_id);
  auto other_value =
      secrets_.Create(scope_, {.name = "s", .value = SecretValue::String("v9"), .token = std::string(kToken1)});
  EXPECT_TRUE(IsError(other_value.status(), Error::kResourceExists));
  EXPECT_EQ(other_value.status().message(), "You can't modify an existing version, you can only create a new version.");
  // Same bytes, other kind: another value.
  EXPECT_TRUE(
      IsError(secrets_.Create(scope_, {.name = "s", .value = SecretValue::Binary("v1"), .token = std::string(kToken1)})
                  .status(),
              Error::kResourceExists));
  auto other_token =
      secrets_.Create(scope_, {.name = "s", .value = SecretValue::String("v1"), .token = std::string(kToken2)});
  EXPECT_TRUE(IsError(other_token.status(), Error::kResourceExists));
  EXPECT_EQ(other_token.status().message(), "The operation failed because the secret s already exists.");
  // PutSecretValue retried.
  ASSERT_TRUE(
      secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v2"), .token = std::string(kToken2)}).ok());
  auto put_again =
      secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v2"), .token = std::string(kToken2)});
  ASSERT_TRUE(put_again.ok()) << put_again.status().ToString();
  EXPECT_EQ(put_again->version_id, kToken2);
  EXPECT_EQ(secrets_.Describe(scope_, "s")->versions.size(), 2u);
  EXPECT_TRUE(IsError(
      secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v3"), .token = std::string(kToken2)})
          .status(),
      Error::kResourceExists));
  EXPECT_EQ(Current("s"), "v2");
}

TEST_F(SecretsTest, TheIdempotencyMacIsKeyedNotAPlainHash) {
  MustCreate("s", "short", std::string(kToken1));
  std::vector<store::Row> rows = Rows("sm_secret_versions");
  ASSERT_EQ(rows.size(), 1u);
  // The same value under another node key has another MAC: the stored one is no offline oracle.
  auto stranger = kms::KeyRing::InMemory({{1, std::string(32, 'j')}});
  kms::Binding at{"123456789012", "us-east-1", secrets_.Describe(scope_, "s")->arn + "|" + std::string(kToken1)};
  EXPECT_EQ(rows[0].value.find(HexEncode(*stranger->Mac(at, "s:short"))), std::string::npos);
  EXPECT_NE(rows[0].value.find(HexEncode(*keys_->Mac(at, "s:short")).substr(0, 8)), std::string::npos);
}

TEST_F(SecretsTest, UpdateSecretVersionStageRules) {
  MustCreate("s", "v1", std::string(kToken1));
  ASSERT_TRUE(secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v2"), .token = std::string(kToken2),
                                    .stages = std::vector<std::string>{"AWSPENDING"}}).ok());
  // AWSCURRENT cannot move without naming where it is.
  auto unnamed =
      secrets_.UpdateStage(scope_, {.secret_id = "s", .stage = "AWSCURRENT", .move_to = std::string(kToken2)});
  EXPECT_TRUE(IsError(unnamed.status(), Error::kInvalidParameter));
  EXPECT_NE(unnamed.status().message().find("is currently attached to version " + std::string(kToken1)),
            std::string::npos);
  // Nor be removed outright.
  EXPECT_TRUE(IsError(
      secrets_.UpdateStage(scope_, {.secret_id = "s", .stage = "AWSCURRENT", .remove_from = std::string(kToken1)})
          .status(),
      Error::kInvalidParameter));
  auto wrong_source = secrets_.UpdateStage(scope_, {"s", "AWSCURRENT", std::string(kToken2), std::string(kToken2)});
  EXPECT_EQ(wrong_source.status().message(),
            "When you move staging label AWSCURRENT, if you specify RemoveFromVersionId, it must be set to the version "
            "that currently has the staging label AWSCURRENT.");
  auto moved = secrets_.UpdateStage(scope_, {"s", "AWSCURRENT", std::string(kToken1), std::string(kToken2)});
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(Current("s"), "v2");
  EXPECT_EQ(secrets_.GetValue(scope_, "s", {.stage = "AWSPREVIOUS"})->value.bytes, "v1");
  // A custom stage comes off.
  ASSERT_TRUE(
      secrets_.UpdateStage(scope_, {.secret_id = "s", .stage = "AWSPENDING", .remove_from = std::string(kToken2)})
          .ok());
  EXPECT_TRUE(IsError(secrets_.GetValue(scope_, "s", {.stage = "AWSPENDING"}).status(), Error::kResourceNotFound));
  EXPECT_TRUE(
      IsError(secrets_.UpdateStage(scope_, {.secret_id = "s", .stage = "X", .move_to = std::string(kToken3)}).status(),
              Error::kResourceNotFound));
}

TEST_F(SecretsTest, DeletionMarksThenReadsAreRefusedRestoreUndoesAndTheReaperPurges) {
  MustCreate("s", "v1");
  EXPECT_TRUE(
      IsError(secrets_.Delete(scope_, {.secret_id = "s", .recovery_days = 6}).status(), Error::kInvalidParameter));
  EXPECT_TRUE(
      IsError(secrets_.Delete(scope_, {.secret_id = "s", .recovery_days = 31}).status(), Error::kInvalidParameter));
  EXPECT_TRUE(IsError(secrets_.Delete(scope_, {.secret_id = "s", .recovery_days = 7, .force = true}).status(),
                      Error::kInvalidParameter));
  auto deleted = secrets_.Delete(scope_, {.secret_id = "s"});
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(deleted->deletion_date, clock_.Now() + hours(24 * 30));
  auto read = secrets_.GetValue(scope_, "s", {});
  EXPECT_TRUE(IsError(read.status(), Error::kInvalidRequest));
  EXPECT_EQ(read.status().message(),
            "You can't perform this operation on the secret because it was marked for deletion.");
  EXPECT_TRUE(IsError(secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v2")}).status(),
                      Error::kInvalidRequest));
  EXPECT_TRUE(IsError(secrets_.Create(scope_, {.name = "s", .value = SecretValue::String("v2")}).status(),
                      Error::kInvalidRequest));
  EXPECT_TRUE(secrets_.Describe(scope_, "s")->deleted.has_value());  // describable while marked
  EXPECT_TRUE(secrets_.List(scope_, {})->items.empty());
  EXPECT_EQ(secrets_.List(scope_, {.include_planned_deletion = true})->items.size(), 1u);
  ASSERT_TRUE(secrets_.Restore(scope_, "s").ok());
  EXPECT_EQ(Current("s"), "v1");
  EXPECT_TRUE(Rows("sm_deletions").empty());

  // Seven days' window, then the reaper: nothing before it ends, everything after.
  ASSERT_TRUE(secrets_.Delete(scope_, {.secret_id = "s", .recovery_days = 7}).ok());
  clock_.Advance(hours(24 * 7) - std::chrono::seconds(1));
  EXPECT_EQ(*secrets_.ReapDeleted(), 0u);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(*secrets_.ReapDeleted(), 1u);
  EXPECT_TRUE(Rows("sm_secrets").empty());
  EXPECT_TRUE(Rows("sm_secret_versions").empty());
  EXPECT_TRUE(Rows("sm_deletions").empty());
  MustCreate("s", "fresh");  // the name is free again
}

TEST_F(SecretsTest, ForceDeleteRemovesAtOnceEvenWhenMarked) {
  MustCreate("s", "v1");
  ASSERT_TRUE(secrets_.Delete(scope_, {.secret_id = "s"}).ok());
  EXPECT_TRUE(IsError(secrets_.Delete(scope_, {.secret_id = "s"}).status(), Error::kInvalidRequest));
  ASSERT_TRUE(secrets_.Delete(scope_, {.secret_id = "s", .force = true}).ok());
  EXPECT_TRUE(Rows("sm_secrets").empty());
  EXPECT_TRUE(Rows("sm_secret_versions").empty());
  EXPECT_TRUE(Rows("sm_deletions").empty());
}

TEST_F(SecretsTest, AccountsAndRegionsNeverSeeEachOthersSecrets) {
  WriteResult mine = MustCreate("shared-name", "mine");
  const Scope other{AccountId("210987654321"), Region("us-east-1")};
  const Scope other_region{AccountId("123456789012"), Region("eu-west-1")};
  for (const Scope* s : {&other, &other_region}) {
    for (const std::string& id : {std::string("shared-name"), mine.arn}) {
      EXPECT_TRUE(IsError(secrets_.GetValue(*s, id, {}).status(), Error::kResourceNotFound)) << id;
      EXPECT_TRUE(IsError(secrets_.Describe(*s, id).status(), Error::kResourceNotFound)) << id;
      EXPECT_TRUE(IsError(secrets_.Put(*s, {.secret_id = id, .value = SecretValue::String("x")}).status(),
                          Error::kResourceNotFound));
      EXPECT_TRUE(IsError(secrets_.Delete(*s, {.secret_id = id, .force = true}).status(), Error::kResourceNotFound));
      EXPECT_TRUE(IsError(secrets_.TagResource(*s, id, {{"k", "v"}}), Error::kResourceNotFound));
      EXPECT_FALSE(secrets_.ArnOf(*s, id)->has_value());
    }
    EXPECT_TRUE(secrets_.List(*s, {.include_planned_deletion = true})->items.empty());
  }
  // The other account's own secret of the same name is its own.
  MustCreate("shared-name", "theirs", std::nullopt, &other);
  EXPECT_EQ(Current("shared-name", &other), "theirs");
  EXPECT_EQ(Current("shared-name"), "mine");
  // Reaping the other account leaves mine.
  ASSERT_TRUE(secrets_.ReapAccount(other.account).ok());
  EXPECT_EQ(Current("shared-name"), "mine");
  EXPECT_TRUE(IsError(secrets_.GetValue(other, "shared-name", {}).status(), Error::kResourceNotFound));
}

TEST_F(SecretsTest, ListPagesFiltersAndOrders) {
  for (std::string name : {"app/a", "app/b", "app/c", "db/x", "db/y"}) MustCreate(name, "v");
  ASSERT_TRUE(secrets_.TagResource(scope_, "db/x", {{"team", "data"}}).ok());
  std::vector<std::string> seen;
  std::optional<std::string> after;
  do {
    auto page = secrets_.List(scope_, {.max_results = 2, .after = after});
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_LE(page->items.size(), 2u);
    for (const SecretInfo& s : page->items) seen.push_back(s.name);
    after = page->next;
  } while (after);
  EXPECT_EQ(seen, (std::vector<std::string>{"app/a", "app/b", "app/c", "db/x", "db/y"}));
  auto desc = secrets_.List(scope_, {.descending = true, .max_results = 2});
  ASSERT_EQ(desc->items.size(), 2u);
  EXPECT_EQ(desc->items[0].name, "db/y");
  EXPECT_EQ(secrets_.List(scope_, {.descending = true, .max_results = 10, .after = desc->next})->items.size(), 3u);
  auto prefixed = secrets_.List(scope_, {.filters = {{"name", {"db/"}}}});
  EXPECT_EQ(prefixed->items.size(), 2u);
  auto negated = secrets_.List(scope_, {.filters = {{"name", {"!app/"}}}});
  EXPECT_EQ(negated->items.size(), 2u);
  auto tagged = secrets_.List(scope_, {.filters = {{"tag-key", {"team"}}, {"tag-value", {"data"}}}});
  ASSERT_EQ(tagged->items.size(), 1u);
  EXPECT_EQ(tagged->items[0].name, "db/x");
  EXPECT_TRUE(IsError(secrets_.List(scope_, {.filters = {{"bogus", {"x"}}}}).status(), Error::kInvalidParameter));
}

TEST_F(SecretsTest, NamesKeyIdsAndTagsAreChecked) {
  EXPECT_TRUE(IsError(secrets_.Create(scope_, {.name = "bad name"}).status(), Error::kValidation));
  EXPECT_TRUE(
      IsError(secrets_.Create(scope_, {.name = "k", .key_id = "arn:aws:kms:us-east-1:210987654321:key/abc"}).status(),
              Error::kEncryptionFailure));
  EXPECT_TRUE(secrets_.Create(scope_, {.name = "k", .key_id = "arn:aws:kms:us-east-1:123456789012:key/abc"}).ok());
  EXPECT_TRUE(
      IsError(secrets_.Create(scope_, {.name = "t", .tags = {{"aws:x", "y"}}}).status(), Error::kInvalidParameter));
  // A secret without a value has no AWSCURRENT until its first Put, which gets AWSCURRENT anyway.
  ASSERT_TRUE(secrets_.Create(scope_, {.name = "empty"}).ok());
  EXPECT_TRUE(IsError(secrets_.GetValue(scope_, "empty", {}).status(), Error::kResourceNotFound));
  ASSERT_TRUE(secrets_.Put(scope_, {.secret_id = "empty", .value = SecretValue::Binary(std::string("\0\1", 2)),
                                    .stages = std::vector<std::string>{"custom"}}).ok());
  auto v = secrets_.GetValue(scope_, "empty", {});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->value, SecretValue::Binary(std::string("\0\1", 2)));
}

TEST_F(SecretsTest, DeprecatedVersionsBeyondTheCapArePruned) {
  MustCreate("s", "v0");
  for (size_t i = 1; i <= Secrets::kMaxVersions + 5; ++i)
    ASSERT_TRUE(secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("v" + std::to_string(i))}).ok());
  EXPECT_EQ(secrets_.Describe(scope_, "s")->versions.size(), Secrets::kMaxVersions);
  EXPECT_EQ(Rows("sm_secret_versions").size(), Secrets::kMaxVersions);
  auto page = secrets_.ListVersions(scope_, "s", /*include_deprecated=*/false, 100, std::nullopt);
  EXPECT_EQ(page->items.size(), 2u);  // AWSPREVIOUS and AWSCURRENT
  auto all = secrets_.ListVersions(scope_, "s", true, 60, std::nullopt);
  EXPECT_EQ(all->items.size(), 60u);
  ASSERT_TRUE(all->next);
  EXPECT_EQ(secrets_.ListVersions(scope_, "s", true, 60, all->next)->items.size(), 40u);
}

TEST_F(SecretsTest, ConcurrentPutsLeaveExactlyOneCurrentAndOnePrevious) {
  MustCreate("s", "v0");
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 15; ++i)
        EXPECT_TRUE(
            secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String(fmt::format("{}-{}", t, i))}).ok());
    });
  for (std::thread& w : writers) w.join();
  auto info = secrets_.Describe(scope_, "s");
  ASSERT_TRUE(info.ok());
  int current = 0, previous = 0;
  for (const VersionInfo& v : info->versions) {
    current += std::count(v.stages.begin(), v.stages.end(), "AWSCURRENT");
    previous += std::count(v.stages.begin(), v.stages.end(), "AWSPREVIOUS");
  }
  EXPECT_EQ(current, 1);
  EXPECT_EQ(previous, 1);
  EXPECT_EQ(info->versions.size(), Secrets::kMaxVersions);
  EXPECT_EQ(info->versions.back().stages, std::vector<std::string>{"AWSCURRENT"});  // the last write is current
  EXPECT_EQ(Rows("sm_secret_versions").size(), Secrets::kMaxVersions);
}

TEST_F(SecretsTest, ValuesAndRetriesSurviveAKeyRotation) {
  MustCreate("s", "before", std::string(kToken1));
  ASSERT_TRUE(keys_->Rotate().ok());
  EXPECT_EQ(Current("s"), "before");
  auto retry =
      secrets_.Create(scope_, {.name = "s", .value = SecretValue::String("before"), .token = std::string(kToken1)});
  EXPECT_TRUE(retry.ok()) << retry.status().ToString();
  ASSERT_TRUE(secrets_.Put(scope_, {.secret_id = "s", .value = SecretValue::String("after")}).ok());
  EXPECT_EQ(Current("s"), "after");
  EXPECT_EQ(secrets_.GetValue(scope_, "s", {.stage = "AWSPREVIOUS"})->value.bytes, "before");
}

}  // namespace
}  // namespace paddock::secretsmanager
