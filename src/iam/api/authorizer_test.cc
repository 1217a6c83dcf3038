// PolicyAuthorizer over a real Directory: which policies decide a principal's calls, and how fresh
// its cache of them is (docs/contracts/iam.md, "Freshness" and "Session policies").
#include "iam/api/authorizer.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "store/key.h"

namespace paddock::iam::api {
namespace {

constexpr char kAccount[] = "123456789012";
constexpr char kAllowEcs[] = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:*","Resource":"*"}]})";
constexpr char kAllowList[] =
    R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:ListClusters","Resource":"*"}]})";

class AuthorizerTest : public ::testing::Test {
 protected:
  AuthorizerTest() {
    UserSpec user;
    user.name = "alice";
    EXPECT_TRUE(dir_.CreateUser(account_, user).ok());
    RoleSpec role;
    role.name = "app";
    role.trust_policy = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",)"
                        R"("Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}]})";
    EXPECT_TRUE(dir_.CreateRole(account_, role).ok());
  }

  Status Authorize(const aws::Principal& who, const std::string& action) {
    return authorizer_.Authorize(who, aws::AuthRequest{action, "*", {}}, clock_.Now());
  }

  static aws::Principal Alice() {
    aws::Principal p;
    p.account = AccountId(kAccount);
    p.kind = PrincipalKind::kUser;
    p.arn = "arn:aws:iam::123456789012:user/alice";
    p.user_name = "alice";
    return p;
  }

  static aws::Principal AppSession(const std::string& session) {
    aws::Principal p;
    p.account = AccountId(kAccount);
    p.kind = PrincipalKind::kAssumedRole;
    p.arn = "arn:aws:sts::123456789012:assumed-role/app/" + session;
    p.role_arn = "arn:aws:iam::123456789012:role/app";
    p.session_name = session;
    return p;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  Directory dir_{*store_, clock_};
  PolicyAuthorizer authorizer_{dir_, clock_};
  AccountId account_{kAccount};
};

// This server's changes decide the next call; another server's (another Directory on the same
// store) within Directory::kCacheTtl, the one cache being the authorizer's.
TEST_F(AuthorizerTest, OwnChangesShowAtOnceAndAnotherServersWithinTheTtl) {
  const PrincipalRef alice{PrincipalType::kUser, "alice"};
  EXPECT_EQ(Authorize(Alice(), "ecs:ListClusters").code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "ecs", kAllowEcs).ok());
  EXPECT_TRUE(Authorize(Alice(), "ecs:ListClusters").ok());
  ASSERT_TRUE(dir_.DeleteInlinePolicy(account_, alice, "ecs").ok());
  EXPECT_EQ(Authorize(Alice(), "ecs:ListClusters").code(), StatusCode::kPermissionDenied);

  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "ecs", kAllowEcs).ok());
  EXPECT_TRUE(Authorize(Alice(), "ecs:ListClusters").ok());
  Directory other(*store_, clock_);
  ASSERT_TRUE(other.DeleteInlinePolicy(account_, alice, "ecs").ok());
  EXPECT_TRUE(Authorize(Alice(), "ecs:ListClusters").ok());  // cached, for at most kCacheTtl
  clock_.Advance(Directory::kCacheTtl);
  EXPECT_EQ(Authorize(Alice(), "ecs:ListClusters").code(), StatusCode::kPermissionDenied);
}

// AssumeRole's PolicyArns narrow the session as its Policy does: the session may do only what
// both the role and one of its session policies allow. Sessions of one role with different
// session policies do not share a decision.
TEST_F(AuthorizerTest, SessionPolicyArnsNarrowTheSession) {
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, {PrincipalType::kRole, "app"}, "ecs", kAllowEcs).ok());
  PolicySpec list;
  list.name = "list-only";
  list.document = kAllowList;
  auto managed = dir_.CreatePolicy(account_, list);
  ASSERT_TRUE(managed.ok()) << managed.status().ToString();

  aws::Principal wide = AppSession("wide");
  EXPECT_TRUE(Authorize(wide, "ecs:CreateCluster").ok());
  aws::Principal narrow = AppSession("narrow");
  narrow.session_policy_arns = {managed->arn};
  EXPECT_TRUE(Authorize(narrow, "ecs:ListClusters").ok());
  Status denied = Authorize(narrow, "ecs:CreateCluster");
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("because no session policy allows the ecs:CreateCluster action"), std::string::npos)
      << denied.message();
  EXPECT_TRUE(Authorize(wide, "ecs:CreateCluster").ok());

  // A session policy that is gone allows nothing.
  aws::Principal gone = AppSession("gone");
  gone.session_policy_arns = {"arn:aws:iam::123456789012:policy/nope"};
  EXPECT_EQ(Authorize(gone, "ecs:ListClusters").code(), StatusCode::kPermissionDenied);
}

// The Directory refuses a document the evaluator cannot read, but a store written before it did
// may hold one: it allows nothing, and the principal's other policies still decide.
TEST_F(AuthorizerTest, AStoredDocumentTheEvaluatorCannotReadAllowsNothing) {
  const PrincipalRef alice{PrincipalType::kUser, "alice"};
  ASSERT_TRUE(IsError(dir_.PutInlinePolicy(account_, alice, "odd", "{}"), Error::kMalformedPolicyDocument));
  ASSERT_TRUE(store_->Write([](store::WriteTxn& txn) {  // as an older Directory stored it
                      return txn.Put("iam_inline", store::Key().Str(kAccount).Str("user").Str("alice").Str("odd").Done(), "{}");
                    }).ok());
  EXPECT_EQ(Authorize(Alice(), "ecs:ListClusters").code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "ecs", kAllowEcs).ok());
  EXPECT_TRUE(Authorize(Alice(), "ecs:ListClusters").ok());
}

TEST_F(AuthorizerTest, AnEc2RequestIsDeniedInEc2sWords) {
  aws::AuthRequest describe{"ec2:DescribeVpcs", "*", {}, aws::DenialForm::kUnauthorizedOperation};
  Status implicit = authorizer_.Authorize(Alice(), describe, clock_.Now());
  EXPECT_EQ(implicit.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(implicit.message(),
            "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/alice is not "
            "authorized to perform: ec2:DescribeVpcs because no identity-based policy allows the ec2:DescribeVpcs "
            "action");
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, {PrincipalType::kUser, "alice"}, "no-ec2",
                                   R"({"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"ec2:*",)"
                                   R"("Resource":"*"}]})")
                  .ok());
  EXPECT_EQ(authorizer_.Authorize(Alice(), describe, clock_.Now()).message(),
            "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/alice is not "
            "authorized to perform: ec2:DescribeVpcs with an explicit deny in an identity-based policy");
  // Every other service's form names the resource.
  EXPECT_EQ(Authorize(Alice(), "ecs:ListClusters").message(),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:ListClusters on resource: * "
            "because no identity-based policy allows the ecs:ListClusters action");
}

TEST_F(AuthorizerTest, RootIsNotEvaluated) {
  aws::Principal root;
  root.account = AccountId(kAccount);
  root.kind = PrincipalKind::kRoot;
  root.arn = "arn:aws:iam::123456789012:root";
  EXPECT_FALSE(authorizer_.Evaluates(root));
  EXPECT_TRUE(authorizer_.Evaluates(Alice()));
  EXPECT_TRUE(authorizer_.Evaluates(AppSession("s")));
}

}  // namespace
}  // namespace paddock::iam::api
