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
    return authorizer_.Authorize(Call(who), aws::AuthRequest{action, "*", {}});
  }

  aws::CallContext Call(const aws::Principal& who, std::string source_ip = "", std::string region = "us-east-1") {
    aws::CallContext call;
    call.scope = Scope{AccountId(kAccount), Region(std::move(region))};
    call.principal = who;
    call.source_ip = std::move(source_ip);
    call.now = clock_.Now();
    return call;
  }

  // A DescribeClusters question about a cluster tagged `tags`, counting how often they are read.
  aws::AuthRequest DescribeTagged(std::vector<std::pair<std::string, std::string>> tags, int* reads) {
    aws::AuthRequest q{"ecs:DescribeClusters", "arn:aws:ecs:us-east-1:123456789012:cluster/c", {}};
    q.resource_tags = [tags = std::move(tags), reads]() -> StatusOr<std::vector<std::pair<std::string, std::string>>> {
      ++*reads;
      return tags;
    };
    return q;
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

// aws:PrincipalTag/<key> is the user's or role's own IAM tags, read with its policies (one cache);
// a role session's session tags override the role's tag of the same key, as on AWS. A tag change
// through this server decides the next call. ${aws:PrincipalTag/team} matches aws:ResourceTag/team.
constexpr char kSameTeam[] = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",
  "Action":"ecs:DescribeClusters","Resource":"*",
  "Condition":{"StringEquals":{"aws:ResourceTag/team":"${aws:PrincipalTag/team}"}}}]})";

TEST_F(AuthorizerTest, PrincipalTagsAreTheEntitysTagsAndSessionTagsOverrideThem) {
  const PrincipalRef alice{PrincipalType::kUser, "alice"};
  const PrincipalRef app{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "team", kSameTeam).ok());
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, app, "team", kSameTeam).ok());
  int reads = 0;
  // Untagged: the variable has no value, so the statement matches nothing.
  EXPECT_EQ(authorizer_.Authorize(Call(Alice()), DescribeTagged({{"team", "blue"}}, &reads)).code(),
            StatusCode::kPermissionDenied);
  ASSERT_TRUE(dir_.TagPrincipal(account_, alice, {{"team", "blue"}}).ok());
  EXPECT_TRUE(authorizer_.Authorize(Call(Alice()), DescribeTagged({{"team", "blue"}}, &reads)).ok());
  EXPECT_EQ(authorizer_.Authorize(Call(Alice()), DescribeTagged({{"team", "red"}}, &reads)).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(authorizer_.Authorize(Call(Alice()), DescribeTagged({}, &reads)).code(), StatusCode::kPermissionDenied);

  ASSERT_TRUE(dir_.TagPrincipal(account_, app, {{"team", "red"}}).ok());
  aws::Principal session = AppSession("s");
  EXPECT_TRUE(authorizer_.Authorize(Call(session), DescribeTagged({{"team", "red"}}, &reads)).ok());
  session.session_tags = {{"Team", "blue"}};  // keys compare ignoring case
  EXPECT_TRUE(authorizer_.Authorize(Call(session), DescribeTagged({{"team", "blue"}}, &reads)).ok());
  EXPECT_EQ(authorizer_.Authorize(Call(session), DescribeTagged({{"team", "red"}}, &reads)).code(),
            StatusCode::kPermissionDenied);
}

// A resource's tags are read only for a principal whose policies name an aws:ResourceTag key:
// every other request costs no tag read.
TEST_F(AuthorizerTest, ResourceTagsAreReadOnlyWhenAPolicyNamesThem) {
  const PrincipalRef alice{PrincipalType::kUser, "alice"};
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "ecs", kAllowEcs).ok());
  int reads = 0;
  EXPECT_TRUE(authorizer_.Authorize(Call(Alice()), DescribeTagged({{"team", "blue"}}, &reads)).ok());
  EXPECT_EQ(reads, 0);
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "team", kSameTeam).ok());
  EXPECT_TRUE(authorizer_.Authorize(Call(Alice()), DescribeTagged({{"team", "blue"}}, &reads)).ok());
  EXPECT_EQ(reads, 1);
  // A failure reading them fails the authorization (it is not taken as "no tags").
  aws::AuthRequest broken{"ecs:DescribeClusters", "arn:aws:ecs:us-east-1:123456789012:cluster/c", {}};
  broken.resource_tags = []() -> StatusOr<std::vector<std::pair<std::string, std::string>>> {
    return Unavailable("store down");
  };
  EXPECT_EQ(authorizer_.Authorize(Call(Alice()), broken).code(), StatusCode::kUnavailable);
}

// aws:SourceIp is the call's peer address and aws:RequestedRegion its credential scope's region;
// a question's own keys (a simulation's ContextEntries) replace them.
TEST_F(AuthorizerTest, SourceIpAndRequestedRegionComeFromTheCall) {
  const PrincipalRef alice{PrincipalType::kUser, "alice"};
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "ecs", R"({"Version":"2012-10-17","Statement":[
    {"Effect":"Allow","Action":"ecs:*","Resource":"*","Condition":{"StringEquals":{"aws:RequestedRegion":"us-east-1"}}},
    {"Effect":"Deny","Action":"*","Resource":"*","Condition":{"NotIpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]})")
                  .ok());
  const aws::AuthRequest list{"ecs:ListClusters", "*", {}};
  EXPECT_TRUE(authorizer_.Authorize(Call(Alice(), "127.0.0.1"), list).ok());
  Status far = authorizer_.Authorize(Call(Alice(), "10.1.2.3"), list);
  EXPECT_EQ(far.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(far.message().find("with an explicit deny in an identity-based policy"), std::string::npos) << far.message();
  EXPECT_EQ(authorizer_.Authorize(Call(Alice(), "127.0.0.1", "eu-west-1"), list).code(), StatusCode::kPermissionDenied);
  // Unknown source (an in-process caller): NotIpAddress on an absent key holds, so the Deny applies.
  EXPECT_EQ(authorizer_.Authorize(Call(Alice(), ""), list).code(), StatusCode::kPermissionDenied);
  const aws::AuthRequest stated{"ecs:ListClusters", "*", {{"aws:SourceIp", "127.0.0.9"}}};
  EXPECT_TRUE(authorizer_.Authorize(Call(Alice(), "10.1.2.3"), stated).ok());
}

TEST_F(AuthorizerTest, AnEc2RequestIsDeniedInEc2sWords) {
  aws::AuthRequest describe{"ec2:DescribeVpcs", "*", {}, aws::DenialForm::kUnauthorizedOperation};
  Status implicit = authorizer_.Authorize(Call(Alice()), describe);
  EXPECT_EQ(implicit.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(implicit.message(),
            "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/alice is not "
            "authorized to perform: ec2:DescribeVpcs because no identity-based policy allows the ec2:DescribeVpcs "
            "action");
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, {PrincipalType::kUser, "alice"}, "no-ec2",
                                   R"({"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"ec2:*",)"
                                   R"("Resource":"*"}]})")
                  .ok());
  EXPECT_EQ(authorizer_.Authorize(Call(Alice()), describe).message(),
            "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/alice is not "
            "authorized to perform: ec2:DescribeVpcs with an explicit deny in an identity-based policy");
  // Every other service's form names the resource.
  EXPECT_EQ(Authorize(Alice(), "ecs:ListClusters").message(),
            "User: arn:aws:iam::123456789012:user/alice is not authorized to perform: ecs:ListClusters on resource: * "
            "because no identity-based policy allows the ecs:ListClusters action");
}

// Authorize remembers decisions by the keys the policies read; it must answer every question as a
// fresh, full evaluation (Evaluate) does. Questions differing in each input a policy reads — the
// action, the resource, a variable (${aws:username}), the source address, the region, a request
// tag, a multivalued key, a principal tag, a resource tag and the time — are asked in an order
// that repeats each several times (so most answers come from memory), across a change of policy
// and of principal tag, and every answer is compared with Evaluate's.
TEST_F(AuthorizerTest, RememberedDecisionsAnswerAsAFullEvaluationDoes) {
  const PrincipalRef alice{PrincipalType::kUser, "alice"};
  constexpr char kPolicy[] = R"({"Version":"2012-10-17","Statement":[
    {"Effect":"Allow","Action":["ecs:Describe*","ecs:List*"],"Resource":"*",
     "Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}},
    {"Effect":"Allow","Action":"ecs:UpdateService","Resource":"arn:aws:ecs:*:*:service/${aws:username}/*"},
    {"Effect":"Allow","Action":"ecs:TagResource","Resource":"*",
     "Condition":{"StringEquals":{"aws:RequestTag/team":"${aws:PrincipalTag/team}"},
                  "ForAllValues:StringEquals":{"aws:TagKeys":["team","env"]}}},
    {"Effect":"Allow","Action":"ecs:StopTask","Resource":"*",
     "Condition":{"StringEquals":{"aws:ResourceTag/owner":"alice"}}},
    {"Effect":"Deny","Action":"*","Resource":"*","Condition":{"StringEquals":{"aws:RequestedRegion":"eu-west-1"}}},
    {"Effect":"Deny","Action":"ecs:List*","Resource":"*",
     "Condition":{"DateGreaterThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}}]})";
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "mixed", kPolicy).ok());
  ASSERT_TRUE(dir_.TagPrincipal(account_, alice, {{"team", "blue"}}).ok());

  struct Question {
    std::string action, resource, ip, region;
    std::vector<std::pair<std::string, std::string>> keys;
    std::vector<std::pair<std::string, std::string>> resource_tags;
  };
  const std::string svc = "arn:aws:ecs:us-east-1:123456789012:service/";
  const std::vector<Question> questions = {
      {"ecs:DescribeServices", "*", "10.1.2.3", "us-east-1", {}, {}},
      {"ecs:DescribeServices", "*", "192.168.1.1", "us-east-1", {}, {}},
      {"ecs:ListClusters", "*", "10.9.9.9", "us-east-1", {}, {}},
      {"ecs:ListClusters", "*", "10.9.9.9", "eu-west-1", {}, {}},
      {"ecs:RunTask", "*", "10.9.9.9", "us-east-1", {}, {}},
      {"ecs:UpdateService", svc + "alice/web", "", "us-east-1", {}, {}},
      {"ecs:UpdateService", svc + "bob/web", "", "us-east-1", {}, {}},
      {"ecs:TagResource", "*", "", "us-east-1", {{"aws:RequestTag/team", "blue"}, {"aws:TagKeys", "team"}}, {}},
      {"ecs:TagResource", "*", "", "us-east-1", {{"aws:RequestTag/team", "red"}, {"aws:TagKeys", "team"}}, {}},
      {"ecs:TagResource", "*", "", "us-east-1",
       {{"aws:RequestTag/team", "blue"}, {"aws:TagKeys", "team"}, {"aws:TagKeys", "env"}}, {}},
      {"ecs:TagResource", "*", "", "us-east-1",
       {{"aws:RequestTag/team", "blue"}, {"aws:TagKeys", "team"}, {"aws:TagKeys", "cost"}}, {}},
      {"ecs:StopTask", "arn:aws:ecs:us-east-1:123456789012:task/c/1", "", "us-east-1", {}, {{"owner", "alice"}}},
      {"ecs:StopTask", "arn:aws:ecs:us-east-1:123456789012:task/c/1", "", "us-east-1", {}, {{"owner", "bob"}}},
  };
  int compared = 0, allowed = 0;
  auto ask_all = [&](const std::string& when) {
    for (int round = 0; round < 3; ++round) {
      for (const Question& q : questions) {
        aws::AuthRequest request{q.action, q.resource, q.keys};
        auto tags = q.resource_tags;
        request.resource_tags = [tags]() -> StatusOr<std::vector<std::pair<std::string, std::string>>> { return tags; };
        const aws::CallContext call = Call(Alice(), q.ip, q.region);
        const Status got = authorizer_.Authorize(call, request);
        auto fresh = authorizer_.Evaluate(call, request);
        ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
        const bool want = fresh->result.decision == policy::Decision::kAllow;
        EXPECT_EQ(got.ok(), want) << when << ": " << q.action << " " << q.resource << " " << q.ip << " " << q.region
                                  << " " << got.ToString();
        if (!want) {
          EXPECT_EQ(got.message(), policy::DenialMessage(fresh->context, fresh->result)) << when;
        }
        ++compared;
        allowed += want ? 1 : 0;
      }
    }
  };
  ask_all("first");
  clock_.Advance(std::chrono::hours(24 * 365 * 5));  // past 2030-01-01: the List* deny applies
  ask_all("after the date");
  ASSERT_TRUE(dir_.TagPrincipal(account_, alice, {{"team", "red"}}).ok());
  ask_all("after the principal tag changed");
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, alice, "mixed", kAllowEcs).ok());
  ask_all("after the policy changed");
  // The comparison is not vacuous: both answers occur.
  EXPECT_EQ(compared, 4 * 3 * static_cast<int>(questions.size()));
  EXPECT_GT(allowed, 0);
  EXPECT_LT(allowed, compared);
}

// A simulation's overrides (SimulatePrincipalPolicy, SimulateCustomPolicy): a resource-based
// policy naming the user grants on its own in the same account, but another owner needs the
// identity side too; a given boundary replaces the entity's; with only_given_policies the
// entity's own policies do not decide, and root stands for an anonymous caller of the account.
TEST_F(AuthorizerTest, SimulationOverridesAddAResourcePolicyABoundaryOrOnlyTheGivenPolicies) {
  auto parsed = [](const char* json, policy::DocumentKind kind) {
    auto p = policy::ParsePolicy(json, kind);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  };
  const aws::AuthRequest get{"s3:GetObject", "arn:aws:s3:::b/k", {}};
  auto decide = [&](const aws::Principal& who, const PolicyAuthorizer::Overrides& o) {
    auto e = authorizer_.Evaluate(Call(who), get, &o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? e->result.decision : policy::Decision::kImplicitDeny;
  };
  PolicyAuthorizer::Overrides o;
  EXPECT_EQ(decide(Alice(), o), policy::Decision::kImplicitDeny);
  o.resource = policy::NamedPolicy{
      "ResourcePolicy", parsed(R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",)"
                               R"("Principal":{"AWS":"arn:aws:iam::123456789012:user/alice"},)"
                               R"("Action":"s3:GetObject","Resource":"*"}]})",
                               policy::DocumentKind::kResource)};
  EXPECT_EQ(decide(Alice(), o), policy::Decision::kAllow);
  o.resource_account = AccountId("210987654321");
  EXPECT_EQ(decide(Alice(), o), policy::Decision::kImplicitDeny);
  o.extra_identity.push_back(
      {"PolicyInputList.1", parsed(R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*",)"
                                   R"("Resource":"*"}]})",
                                   policy::DocumentKind::kIdentity)});
  EXPECT_EQ(decide(Alice(), o), policy::Decision::kAllow);
  o.boundary = policy::NamedPolicy{"PermissionsBoundaryPolicyInputList.1", parsed(kAllowList, policy::DocumentKind::kIdentity)};
  EXPECT_EQ(decide(Alice(), o), policy::Decision::kImplicitDeny);

  // Only the given policies: alice's own Allow does not decide.
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, {PrincipalType::kUser, "alice"}, "ecs", kAllowEcs).ok());
  PolicyAuthorizer::Overrides custom;
  custom.only_given_policies = true;
  const aws::AuthRequest list{"ecs:ListClusters", "*", {}};
  auto e = authorizer_.Evaluate(Call(Alice()), list, &custom);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->result.decision, policy::Decision::kImplicitDeny);
  custom.extra_identity.push_back({"PolicyInputList.1", parsed(kAllowList, policy::DocumentKind::kIdentity)});
  aws::Principal root;
  root.account = AccountId(kAccount);
  root.kind = PrincipalKind::kRoot;
  root.arn = "arn:aws:iam::123456789012:root";
  e = authorizer_.Evaluate(Call(root), list, &custom);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->result.decision, policy::Decision::kAllow);
  EXPECT_EQ(e->context.Find("aws:PrincipalArn"), nullptr);  // no caller: no principal keys
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
