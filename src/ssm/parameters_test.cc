#include "ssm/parameters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/encoding.h"
#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "store/key.h"

namespace paddock::ssm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const Scope kA{AccountId("111111111111"), Region("us-east-1")};
const Scope kB{AccountId("222222222222"), Region("us-east-1")};
const Scope kAWest{AccountId("111111111111"), Region("us-west-2")};

class ParametersTest : public ::testing::Test {
 protected:
  ParametersTest() : keys_(kms::KeyRing::InMemory({{1, RandomBytes(32)}})), params_(*store_, *keys_, clock_) {}

  PutResult MustPut(const Scope& s, PutRequest r) {
    auto got = params_.Put(s, r);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() ? *got : PutResult{};
  }
  PutRequest Req(std::string name, std::string value, ParameterType type = ParameterType::kString) {
    PutRequest r;
    r.name = std::move(name);
    r.value = std::move(value);
    r.type = type;
    r.modified_by = "arn:aws:iam::111111111111:root";
    return r;
  }
  std::vector<store::Row> RawRows(std::string_view table) {
    std::vector<store::Row> rows;
    EXPECT_TRUE(store_->Read([&](store::ReadTxn& txn) -> Status {
                  ASSIGN_OR_RETURN(rows, txn.Scan(table, store::Range{}, 100000));
                  return OkStatus();
                }).ok());
    return rows;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  std::unique_ptr<kms::KeyRing> keys_;
  Parameters params_;
};

TEST_F(ParametersTest, PutGetAndVersions) {
  EXPECT_EQ(MustPut(kA, Req("/app/db/host", "db1")).version, 1);
  auto again = params_.Put(kA, Req("/app/db/host", "db2"));
  EXPECT_TRUE(IsError(again.status(), Error::kParameterAlreadyExists));
  EXPECT_EQ(again.status().message(),
            "The parameter already exists. To overwrite this value, set the overwrite option in the request to true.");
  PutRequest over = Req("/app/db/host", "db2");
  over.overwrite = true;
  over.type.reset();  // keeps the type
  EXPECT_EQ(MustPut(kA, over).version, 2);

  auto p = params_.Get(kA, "/app/db/host", Decryption::kNo);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->value, "db2");
  EXPECT_EQ(p->version, 2);
  EXPECT_EQ(p->type, ParameterType::kString);
  EXPECT_EQ(p->arn, "arn:aws:ssm:us-east-1:111111111111:parameter/app/db/host");
  EXPECT_EQ(p->selector, "");
  auto v1 = params_.Get(kA, "/app/db/host:1", Decryption::kNo);
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->value, "db1");
  EXPECT_EQ(v1->selector, ":1");
  // By this scope's ARN, with and without a selector.
  EXPECT_EQ(params_.Get(kA, "arn:aws:ssm:us-east-1:111111111111:parameter/app/db/host:1", Decryption::kNo)->value, "db1");
  auto v9 = params_.Get(kA, "/app/db/host:9", Decryption::kNo);
  EXPECT_TRUE(IsError(v9.status(), Error::kParameterVersionNotFound));
  EXPECT_EQ(v9.status().message(),
            "Systems Manager could not find version 9 of /app/db/host. Verify the version and try again.");
  EXPECT_TRUE(IsError(params_.Get(kA, "/nope", Decryption::kNo).status(), Error::kParameterNotFound));
  EXPECT_TRUE(IsError(params_.Get(kA, "/app/db/host:1:2", Decryption::kNo).status(), Error::kParameterNotFound));
}

TEST_F(ParametersTest, SecureStringsAreSealedAtRestAndOpenOnlyWithDecryption) {
  EXPECT_EQ(MustPut(kA, Req("/app/password", "hunter2-secret", ParameterType::kSecureString)).version, 1);
  for (const auto& row : RawRows("ssm_parameter_versions")) {
    EXPECT_EQ(row.value.find("hunter2-secret"), std::string::npos);
    EXPECT_EQ(row.value.find(HexEncode("hunter2-secret")), std::string::npos);
  }
  auto sealed = params_.Get(kA, "/app/password", Decryption::kNo);
  ASSERT_TRUE(sealed.ok());
  EXPECT_TRUE(sealed->sealed);
  EXPECT_NE(sealed->value, "hunter2-secret");
  EXPECT_EQ(sealed->key_id, "alias/aws/ssm");
  auto open = params_.Get(kA, "/app/password", Decryption::kYes);
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->sealed);
  EXPECT_EQ(open->value, "hunter2-secret");

  // A named key, kept on overwrite; another account's key ARN is refused.
  PutRequest named = Req("/app/token", "t", ParameterType::kSecureString);
  named.key_id = "alias/app";
  MustPut(kA, named);
  EXPECT_EQ(params_.Get(kA, "/app/token", Decryption::kYes)->key_id, "alias/app");
  PutRequest foreign = Req("/app/other", "t", ParameterType::kSecureString);
  foreign.key_id = "arn:aws:kms:us-east-1:222222222222:key/1234abcd-12ab-34cd-56ef-1234567890ab";
  EXPECT_TRUE(IsError(params_.Put(kA, foreign).status(), Error::kInvalidKeyId));
  foreign.key_id = "arn:aws:kms:us-east-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab";
  EXPECT_TRUE(params_.Put(kA, foreign).ok());
  PutRequest plain_with_key = Req("/app/plain", "x");
  plain_with_key.key_id = "alias/app";
  EXPECT_TRUE(IsError(params_.Put(kA, plain_with_key).status(), Error::kValidation));
}

// The attack: someone with write access to the store copies account A's sealed version row under
// account B's key (or onto another parameter, or version). It must not open.
TEST_F(ParametersTest, ACiphertextCopiedToAnotherAccountOrParameterDoesNotOpen) {
  MustPut(kA, Req("/app/password", "a-secret", ParameterType::kSecureString));
  MustPut(kB, Req("/app/password", "b-secret", ParameterType::kSecureString));
  MustPut(kA, Req("/app/other", "other-secret", ParameterType::kSecureString));
  auto version_key = [](const Scope& s, std::string_view name) {
    return store::Key().Str(s.account.str()).Str(s.region.str()).Str(name).U64(1).Done();
  };
  ASSERT_TRUE(store_->Write([&](store::WriteTxn& txn) -> Status {
                ASSIGN_OR_RETURN(auto a_row, txn.Get("ssm_parameter_versions", version_key(kA, "/app/password")));
                RETURN_IF_ERROR(txn.Put("ssm_parameter_versions", version_key(kB, "/app/password"), *a_row));
                return txn.Put("ssm_parameter_versions", version_key(kA, "/app/other"), *a_row);
              }).ok());
  auto b = params_.Get(kB, "/app/password", Decryption::kYes);
  EXPECT_EQ(b.status().code(), StatusCode::kDataLoss) << (b.ok() ? b->value : b.status().ToString());
  auto other = params_.Get(kA, "/app/other", Decryption::kYes);
  EXPECT_EQ(other.status().code(), StatusCode::kDataLoss) << (other.ok() ? other->value : "");
  EXPECT_EQ(params_.Get(kA, "/app/password", Decryption::kYes)->value, "a-secret");
}

TEST_F(ParametersTest, AccountsAndRegionsNeverSeeEachOthersParameters) {
  PutRequest tagged = Req("/shared/name", "a-value", ParameterType::kSecureString);
  tagged.tags = {{"team", "a"}};
  MustPut(kA, tagged);
  const std::string a_arn = "arn:aws:ssm:us-east-1:111111111111:parameter/shared/name";
  for (const Scope& other : {kB, kAWest}) {
    EXPECT_TRUE(IsError(params_.Get(other, "/shared/name", Decryption::kYes).status(), Error::kParameterNotFound));
    EXPECT_TRUE(IsError(params_.Get(other, a_arn, Decryption::kYes).status(), Error::kParameterNotFound));
    auto many = params_.GetMany(other, {"/shared/name", a_arn}, Decryption::kYes);
    ASSERT_TRUE(many.ok());
    EXPECT_THAT(many->found, IsEmpty());
    EXPECT_THAT(many->invalid, ElementsAre("/shared/name", a_arn));
    EXPECT_THAT(params_.Describe(other, {}, 50, std::nullopt)->items, IsEmpty());
    EXPECT_THAT(params_.ByPath(other, "/", true, {}, Decryption::kYes, 10, std::nullopt)->items, IsEmpty());
    EXPECT_TRUE(IsError(params_.History(other, "/shared/name", Decryption::kYes, 50, std::nullopt).status(),
                        Error::kParameterNotFound));
    EXPECT_TRUE(IsError(params_.Delete(other, "/shared/name"), Error::kParameterNotFound));
    EXPECT_TRUE(IsError(params_.ListTags(other, "/shared/name").status(), Error::kInvalidResourceId));
    EXPECT_TRUE(IsError(params_.AddTags(other, "/shared/name", {{"x", "y"}}), Error::kInvalidResourceId));
    EXPECT_TRUE(IsError(params_.Label(other, "/shared/name", std::nullopt, {"prod"}).status(),
                        Error::kParameterNotFound));
    // The same name in another scope is a parameter of its own: version 1, no overwrite needed.
    EXPECT_EQ(MustPut(other, Req("/shared/name", "mine")).version, 1);
  }
  auto a = params_.Get(kA, "/shared/name", Decryption::kYes);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->value, "a-value");
  EXPECT_EQ(a->version, 1);
  EXPECT_THAT(*params_.ListTags(kA, "/shared/name"), ElementsAre(Tag{"team", "a"}));
}

TEST_F(ParametersTest, NameRules) {
  auto put = [&](std::string name) { return params_.Put(kA, Req(std::move(name), "v")).status(); };
  Status aws = put("/aws/thing");
  EXPECT_EQ(aws.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(aws.message(), "No access to reserved parameter name: /aws/thing.");
  EXPECT_EQ(put("AWSthing").code(), StatusCode::kPermissionDenied);
  Status ssm = put("/SSM/x");
  EXPECT_TRUE(IsError(ssm, Error::kValidation));
  EXPECT_THAT(std::string(ssm.message()), ::testing::StartsWith("Parameter name: can't be prefixed with \"ssm\""));
  EXPECT_TRUE(IsError(put("a/b"), Error::kValidation));
  EXPECT_EQ(put("a/b").message(), "Parameter name must be a fully qualified name.");
  EXPECT_TRUE(IsError(put("/a b"), Error::kValidation));
  EXPECT_TRUE(IsError(put("/a/"), Error::kValidation));
  EXPECT_TRUE(IsError(put("/a//b"), Error::kValidation));
  EXPECT_TRUE(IsError(put(std::string(1012, 'x')), Error::kValidation));
  std::string fifteen, sixteen;
  for (int i = 0; i < 15; ++i) fifteen += "/l";
  sixteen = fifteen + "/l";
  EXPECT_TRUE(put(fifteen).ok());
  Status deep = put(sixteen);
  EXPECT_TRUE(IsError(deep, Error::kHierarchyLevelLimitExceeded));
  EXPECT_TRUE(put("plain.name-1_x").ok());
}

TEST_F(ParametersTest, TagsWithOverwriteAndAllowedPatternAndTiers) {
  PutRequest r = Req("/p", "1234");
  r.allowed_pattern = "\\d{1,4}";
  MustPut(kA, r);
  PutRequest bad = Req("/p", "12345");
  bad.overwrite = true;
  Status mismatch = params_.Put(kA, bad).status();
  EXPECT_TRUE(IsError(mismatch, Error::kParameterPatternMismatch));  // the stored pattern still applies
  EXPECT_EQ(mismatch.message(), "Parameter value, cannot be validated against allowedPattern: \\d{1,4}");
  PutRequest bad_pattern = Req("/q", "x");
  bad_pattern.allowed_pattern = "([";
  EXPECT_TRUE(IsError(params_.Put(kA, bad_pattern).status(), Error::kInvalidAllowedPattern));

  // A tenant's pattern can neither exhaust memory when compiled nor take exponential time on the
  // largest value: refused, or answered at once.
  PutRequest huge = Req("/q", "a");
  huge.allowed_pattern = "((a{1000}){1000}){1000}";
  EXPECT_TRUE(IsError(params_.Put(kA, huge).status(), Error::kInvalidAllowedPattern));
  PutRequest evil = Req("/evil", std::string(8000, 'a') + "!");
  evil.tier = RequestedTier::kAdvanced;
  evil.allowed_pattern = "(a|a)*(a*)*b";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(IsError(params_.Put(kA, evil).status(), Error::kParameterPatternMismatch));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  PutRequest both = Req("/p", "1");
  both.overwrite = true;
  both.tags = {{"k", "v"}};
  EXPECT_TRUE(IsError(params_.Put(kA, both).status(), Error::kValidation));

  PutRequest big = Req("/big", std::string(4097, 'x'));
  Status standard = params_.Put(kA, big).status();
  EXPECT_TRUE(IsError(standard, Error::kValidation));
  big.tier = RequestedTier::kIntelligentTiering;
  EXPECT_EQ(MustPut(kA, big).tier, Tier::kAdvanced);
  PutRequest down = Req("/big", "small");
  down.overwrite = true;
  down.tier = RequestedTier::kStandard;
  EXPECT_TRUE(IsError(params_.Put(kA, down).status(), Error::kValidation));
  down.tier.reset();
  EXPECT_EQ(MustPut(kA, down).tier, Tier::kAdvanced);  // stays Advanced
}

TEST_F(ParametersTest, OnlyTheNewestHundredVersionsAreKeptUnlessALabelHoldsTheOldest) {
  PutRequest r = Req("/v", "0");
  MustPut(kA, r);
  r.overwrite = true;
  for (int i = 2; i <= 100; ++i) {
    r.value = std::to_string(i);
    MustPut(kA, r);
  }
  ASSERT_TRUE(params_.Label(kA, "/v", 1, {"first"}).ok());
  r.value = "101";
  Status held = params_.Put(kA, r).status();
  EXPECT_TRUE(IsError(held, Error::kParameterMaxVersionLimitExceeded)) << held.ToString();
  EXPECT_EQ(params_.Get(kA, "/v", Decryption::kNo)->version, 100);  // nothing written
  ASSERT_TRUE(params_.Label(kA, "/v", 2, {"first"}).ok());          // the label moves to 2
  EXPECT_EQ(params_.Get(kA, "/v:first", Decryption::kNo)->version, 2);
  EXPECT_EQ(MustPut(kA, r).version, 101);
  EXPECT_TRUE(IsError(params_.Get(kA, "/v:1", Decryption::kNo).status(), Error::kParameterVersionNotFound));
  auto page = params_.History(kA, "/v", Decryption::kNo, 50, std::nullopt);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.front().version, 2);
  EXPECT_EQ(page->items.size(), 50u);
  ASSERT_TRUE(page->next);
  auto rest = params_.History(kA, "/v", Decryption::kNo, 50, page->next);
  EXPECT_EQ(rest->items.size(), 50u);
  EXPECT_EQ(rest->items.back().version, 101);
  EXPECT_FALSE(rest->next);
}

TEST_F(ParametersTest, LabelRules) {
  MustPut(kA, Req("/l", "1"));
  auto got = params_.Label(kA, "/l", std::nullopt, {"prod", "1bad", "awsx", "SSMy", "ok.label-1_x"});
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(got->invalid_labels, ElementsAre("1bad", "awsx", "SSMy"));
  EXPECT_EQ(got->version, 1);
  EXPECT_THAT(params_.Get(kA, "/l:prod", Decryption::kNo)->labels, ElementsAre("prod", "ok.label-1_x"));
  std::vector<std::string> many;
  for (int i = 0; i < 9; ++i) many.push_back("l" + std::to_string(i));
  EXPECT_TRUE(IsError(params_.Label(kA, "/l", 1, many).status(), Error::kParameterVersionLabelLimitExceeded));
  EXPECT_TRUE(IsError(params_.Label(kA, "/l", 7, {"x"}).status(), Error::kParameterVersionNotFound));

  auto removed = params_.Unlabel(kA, "/l", 1, {"prod", "never", "prod"});
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_THAT(removed->removed, ElementsAre("prod"));
  EXPECT_THAT(removed->invalid, ElementsAre("never", "prod"));
  EXPECT_TRUE(IsError(params_.Get(kA, "/l:prod", Decryption::kNo).status(), Error::kParameterNotFound));
  EXPECT_THAT(params_.Get(kA, "/l", Decryption::kNo)->labels, ElementsAre("ok.label-1_x"));
  EXPECT_TRUE(IsError(params_.Unlabel(kA, "/l", 9, {"x"}).status(), Error::kParameterVersionNotFound));
  EXPECT_TRUE(IsError(params_.Unlabel(kB, "/l", 1, {"x"}).status(), Error::kParameterNotFound));
}

TEST_F(ParametersTest, ByPathAndDescribe) {
  for (std::string n : {"/a/x", "/a/y", "/a/b/z", "/ab/w", "/c", "top"}) MustPut(kA, Req(n, "v-" + n));
  auto names = [](const Page& p) {
    std::vector<std::string> out;
    for (const auto& i : p.items) out.push_back(i.name);
    return out;
  };
  EXPECT_THAT(names(*params_.ByPath(kA, "/a", false, {}, Decryption::kNo, 10, std::nullopt)),
              ElementsAre("/a/x", "/a/y"));
  EXPECT_THAT(names(*params_.ByPath(kA, "/a", true, {}, Decryption::kNo, 10, std::nullopt)),
              ElementsAre("/a/b/z", "/a/x", "/a/y"));
  EXPECT_THAT(names(*params_.ByPath(kA, "/", false, {}, Decryption::kNo, 10, std::nullopt)), ElementsAre("/c"));
  // Pages of one.
  std::vector<std::string> all;
  std::optional<std::string> after;
  do {
    auto page = params_.ByPath(kA, "/", true, {}, Decryption::kNo, 1, after);
    ASSERT_TRUE(page.ok());
    for (auto& n : names(*page)) all.push_back(n);
    after = page->next;
  } while (after);
  EXPECT_THAT(all, ElementsAre("/a/b/z", "/a/x", "/a/y", "/ab/w", "/c"));
  EXPECT_TRUE(IsError(params_.ByPath(kA, "/a", false, {{"Name", "", {"x"}}}, Decryption::kNo, 10, std::nullopt).status(),
                      Error::kInvalidFilterKey));
  EXPECT_TRUE(IsError(params_.ByPath(kA, "a", false, {}, Decryption::kNo, 10, std::nullopt).status(), Error::kValidation));

  auto described = params_.Describe(kA, {}, 50, std::nullopt);
  ASSERT_TRUE(described.ok());
  EXPECT_THAT(names(*described), ElementsAre("/a/b/z", "/a/x", "/a/y", "/ab/w", "/c", "top"));
  for (const auto& p : described->items) EXPECT_EQ(p.value, "");
  EXPECT_THAT(names(*params_.Describe(kA, {{"Name", "BeginsWith", {"/a/"}}}, 50, std::nullopt)),
              ElementsAre("/a/b/z", "/a/x", "/a/y"));
  EXPECT_THAT(names(*params_.Describe(kA, {{"Path", "OneLevel", {"/a"}}}, 50, std::nullopt)),
              ElementsAre("/a/x", "/a/y"));
  EXPECT_THAT(names(*params_.Describe(kA, {{"Name", "Equals", {"top"}}}, 50, std::nullopt)), ElementsAre("top"));
  auto first = params_.Describe(kA, {}, 4, std::nullopt);
  ASSERT_TRUE(first->next);
  EXPECT_THAT(names(*params_.Describe(kA, {}, 4, first->next)), ElementsAre("/c", "top"));
  EXPECT_TRUE(IsError(params_.Describe(kA, {{"Label", "", {"x"}}}, 50, std::nullopt).status(), Error::kInvalidFilterKey));
  EXPECT_TRUE(IsError(params_.Describe(kA, {{"Type", "BeginsWith", {"S"}}}, 50, std::nullopt).status(),
                      Error::kInvalidFilterOption));
}

TEST_F(ParametersTest, DeleteRemovesEveryRowAndReapRemovesTheAccount) {
  PutRequest r = Req("/d", "1", ParameterType::kSecureString);
  r.tags = {{"a", "b"}};
  MustPut(kA, r);
  r.overwrite = true;
  r.tags.clear();
  MustPut(kA, r);
  MustPut(kA, Req("/d2", "x"));
  MustPut(kB, Req("/d", "b's"));
  ASSERT_TRUE(params_.Delete(kA, "/d").ok());
  Status again = params_.Delete(kA, "/d");
  EXPECT_TRUE(IsError(again, Error::kParameterNotFound));
  EXPECT_EQ(again.message(), "Parameter /d not found.");
  auto many = params_.DeleteMany(kA, {"/d2", "/d", "/d2"});
  ASSERT_TRUE(many.ok());
  EXPECT_THAT(many->deleted, ElementsAre("/d2"));
  EXPECT_THAT(many->invalid, ElementsAre("/d"));
  // Only B's rows are left: its head, version and the count.
  EXPECT_EQ(RawRows("ssm_parameters").size(), 1u);
  EXPECT_EQ(RawRows("ssm_parameter_versions").size(), 1u);
  EXPECT_THAT(RawRows("ssm_tags"), IsEmpty());
  EXPECT_EQ(RawRows("ssm_parameter_counts").size(), 1u);
  ASSERT_TRUE(params_.ReapAccount(kB.account).ok());
  for (auto t : {"ssm_parameters", "ssm_parameter_versions", "ssm_tags", "ssm_parameter_counts"})
    EXPECT_THAT(RawRows(t), IsEmpty()) << t;
}

}  // namespace
}  // namespace paddock::ssm
