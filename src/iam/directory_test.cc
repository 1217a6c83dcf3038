#include "iam/directory.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/testing/fake_clock.h"
#include "ecs/testing/temp_store.h"
#include "iam/accounts.h"
#include "iam/policy/evaluator.h"

namespace paddock::iam {
namespace {

constexpr char kTrust[] =
    R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ecs-tasks.amazonaws.com"},"Action":"sts:AssumeRole"}]})";
constexpr char kDoc[] = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:List*","Resource":"*"}]})";
constexpr char kDoc2[] = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:Describe*","Resource":"*"}]})";
constexpr char kExecPolicy[] = "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy";

RoleSpec Spec(std::string name, std::string trust, std::string boundary = "") {
  RoleSpec spec;
  spec.name = std::move(name);
  spec.trust_policy = std::move(trust);
  spec.boundary_arn = std::move(boundary);
  return spec;
}

UserSpec NamedUser(std::string name) {
  UserSpec spec;
  spec.name = std::move(name);
  return spec;
}

class DirectoryTest : public ::testing::Test {
 protected:
  DirectoryTest() : dir_(*store_, clock_), accounts_(*store_, clock_) {
    account_ = accounts_.CreateAccount(std::nullopt, "dev")->id;
  }
  Role MakeRole(const std::string& name, const std::string& path = "/") {
    RoleSpec spec;
    spec.name = name;
    spec.path = path;
    spec.trust_policy = kTrust;
    auto r = dir_.CreateRole(account_, spec);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *r;
  }
  ManagedPolicy MakePolicy(const std::string& name) {
    PolicySpec spec;
    spec.name = name;
    spec.document = kDoc;
    auto p = dir_.CreatePolicy(account_, spec);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return *p;
  }

  paddock::testing::TempStore store_;
  paddock::testing::FakeClock clock_;
  Directory dir_;
  Accounts accounts_;
  AccountId account_;
};

void ExpectError(const Status& s, Error error, std::string_view message) {
  EXPECT_TRUE(IsError(s, error)) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

TEST_F(DirectoryTest, RoleIdentityAndArn) {
  Role r = MakeRole("app", "/svc/");
  EXPECT_EQ(r.id.size(), 21u);
  EXPECT_EQ(r.id.substr(0, 4), "AROA");
  EXPECT_EQ(r.arn, "arn:aws:iam::" + account_.str() + ":role/svc/app");
  EXPECT_EQ(r.max_session_duration, 3600);
  auto found = dir_.FindRoleByArn(account_, r.arn);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->trust_policy, kTrust);
  // A wrong path, another account or another name: not this role.
  EXPECT_FALSE(dir_.FindRoleByArn(account_, "arn:aws:iam::" + account_.str() + ":role/app")->has_value());
  EXPECT_FALSE(dir_.FindRoleByArn(AccountId("111111111111"), r.arn)->has_value());
}

TEST_F(DirectoryTest, RoleNamesAreUniqueIgnoringCase) {
  MakeRole("App");
  RoleSpec spec = Spec("app", kTrust);
  ExpectError(dir_.CreateRole(account_, spec).status(), Error::kEntityAlreadyExists, "Role with name app already exists.");
  EXPECT_EQ(dir_.GetRole(account_, "APP")->name, "App");
  ExpectError(dir_.GetRole(account_, "nope").status(), Error::kNoSuchEntity, "The role with name nope cannot be found.");
}

TEST_F(DirectoryTest, MalformedTrustPolicyIsRefused) {
  RoleSpec spec = Spec("bad", "{not json");
  ExpectError(dir_.CreateRole(account_, spec).status(), Error::kMalformedPolicyDocument, "This policy contains invalid Json");
  EXPECT_FALSE(dir_.GetRole(account_, "bad").ok());
  // The grammar is the evaluator's own parser's: nothing is stored that it could not read.
  spec = Spec("bad", R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRole"}]})");
  ExpectError(dir_.CreateRole(account_, spec).status(), Error::kMalformedPolicyDocument, "Missing required field Principal");
  EXPECT_FALSE(dir_.GetRole(account_, "bad").ok());
  Role good = MakeRole("good", "/");
  ExpectError(dir_.UpdateTrustPolicy(account_, "good", R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow",)"
                                                     R"("Principal":{"Service":"ecs-tasks.amazonaws.com"},)"
                                                     R"("Action":"sts:AssumeRole","Resource":"*"}]})"),
            Error::kMalformedPolicyDocument, "Has prohibited field Resource");
  EXPECT_EQ(dir_.GetRole(account_, "good")->trust_policy, good.trust_policy);
  ExpectError(dir_.PutInlinePolicy(account_, {PrincipalType::kRole, "good"}, "p",
                                 R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",)"
                                 R"("Action":"ecs:*","Resource":"*"}]})"),
            Error::kMalformedPolicyDocument, "Policy document should not specify a principal.");
  ExpectError(dir_.PutInlinePolicy(account_, {PrincipalType::kRole, "good"}, "p",
                                 R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecs:*"}]})"),
            Error::kMalformedPolicyDocument, "Policy statement must contain resources.");
}

TEST_F(DirectoryTest, DeleteRoleConflictsWhilePoliciesRemain) {
  MakeRole("app");
  const PrincipalRef who{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.AttachPolicy(account_, who, kExecPolicy).ok());
  ExpectError(dir_.DeleteRole(account_, "app"), Error::kDeleteConflict, "Cannot delete entity, must detach all policies first.");
  ASSERT_TRUE(dir_.DetachPolicy(account_, who, kExecPolicy).ok());
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, who, "inline", kDoc).ok());
  ExpectError(dir_.DeleteRole(account_, "app"), Error::kDeleteConflict, "Cannot delete entity, must delete policies first.");
  ASSERT_TRUE(dir_.DeleteInlinePolicy(account_, who, "inline").ok());
  ASSERT_TRUE(dir_.DeleteRole(account_, "app").ok());
  EXPECT_FALSE(dir_.GetRole(account_, "app").ok());
}

TEST_F(DirectoryTest, ListRolesPagesWithMarkerAndFiltersByPath) {
  for (const char* n : {"a", "b", "c", "d"}) MakeRole(n, std::string(n) == "d" ? "/other/" : "/svc/");
  auto p1 = dir_.ListRoles(account_, "/svc/", PageRequest{"", 2});
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->items.size(), 2u);
  ASSERT_TRUE(p1->next_marker.has_value());
  auto p2 = dir_.ListRoles(account_, "/svc/", PageRequest{*p1->next_marker, 2});
  ASSERT_EQ(p2->items.size(), 1u);
  EXPECT_EQ(p2->items[0].name, "c");
  EXPECT_FALSE(p2->next_marker.has_value());
  EXPECT_EQ(dir_.ListRoles(account_, "/", PageRequest{})->items.size(), 4u);
}

TEST_F(DirectoryTest, ManagedPolicyVersionsLifecycle) {
  ManagedPolicy p = MakePolicy("read");
  EXPECT_EQ(p.id.substr(0, 4), "ANPA");
  EXPECT_EQ(p.default_version, "v1");
  for (int i = 2; i <= 5; ++i) {
    auto v = dir_.CreatePolicyVersion(account_, p.arn, kDoc2, /*set_as_default=*/i == 3);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->version_id, "v" + std::to_string(i));
  }
  ExpectError(dir_.CreatePolicyVersion(account_, p.arn, kDoc2, false).status(), Error::kLimitExceeded,
            "A managed policy can have up to 5 versions. Before you create a new version, you must delete an existing "
            "version.");
  EXPECT_EQ(dir_.GetPolicy(account_, p.arn)->default_version, "v3");
  ExpectError(dir_.DeletePolicyVersion(account_, p.arn, "v3"), Error::kDeleteConflict,
            "Cannot delete the default version of a policy.");
  auto versions = dir_.ListPolicyVersions(account_, p.arn);
  ASSERT_EQ(versions->size(), 5u);
  EXPECT_EQ(versions->front().version_id, "v5");
  ASSERT_TRUE(dir_.SetDefaultPolicyVersion(account_, p.arn, "v5").ok());
  EXPECT_EQ(dir_.GetPolicyVersion(account_, p.arn, "v5")->is_default, true);
  ExpectError(dir_.DeletePolicy(account_, p.arn), Error::kDeleteConflict,
            "This policy has more than one version. Before you delete a policy, you must delete the policy's versions. "
            "The default version is deleted with the policy.");
  for (const char* v : {"v1", "v2", "v3", "v4"}) ASSERT_TRUE(dir_.DeletePolicyVersion(account_, p.arn, v).ok());
  ASSERT_TRUE(dir_.DeletePolicy(account_, p.arn).ok());
  EXPECT_TRUE(IsError(dir_.GetPolicy(account_, p.arn).status(), Error::kNoSuchEntity));
}

TEST_F(DirectoryTest, AttachmentCountsAndDeleteConflict) {
  ManagedPolicy p = MakePolicy("read");
  MakeRole("app");
  const PrincipalRef who{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.AttachPolicy(account_, who, p.arn).ok());
  ASSERT_TRUE(dir_.AttachPolicy(account_, who, p.arn).ok());  // twice: still one attachment
  EXPECT_EQ(dir_.GetPolicy(account_, p.arn)->attachment_count, 1);
  ExpectError(dir_.DeletePolicy(account_, p.arn), Error::kDeleteConflict, "Cannot delete a policy attached to entities.");
  auto only = dir_.ListPolicies(account_, PolicyFilter{PolicyScope::kAll, true, "/"}, PageRequest{});
  ASSERT_EQ(only->items.size(), 1u);
  EXPECT_EQ(only->items[0].arn, p.arn);
  ExpectError(dir_.AttachPolicy(account_, who, "arn:aws:iam::aws:policy/NoSuchPolicy"), Error::kNoSuchEntity,
            "Policy arn:aws:iam::aws:policy/NoSuchPolicy does not exist or is not attachable.");
}

TEST_F(DirectoryTest, AwsManagedPoliciesArePresentAndReadOnly) {
  for (const char* arn :
       {"arn:aws:iam::aws:policy/AdministratorAccess", "arn:aws:iam::aws:policy/ReadOnlyAccess", kExecPolicy,
        "arn:aws:iam::aws:policy/service-role/AmazonEC2ContainerServiceRole", "arn:aws:iam::aws:policy/AmazonECS_FullAccess",
        "arn:aws:iam::aws:policy/AmazonSSMReadOnlyAccess", "arn:aws:iam::aws:policy/SecretsManagerReadWrite",
        "arn:aws:iam::aws:policy/CloudWatchLogsFullAccess",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly"}) {
    auto p = dir_.GetPolicy(account_, arn);
    ASSERT_TRUE(p.ok()) << arn;
    auto v = dir_.GetPolicyVersion(account_, arn, p->default_version);
    ASSERT_TRUE(v.ok()) << arn;
    EXPECT_TRUE(CheckPolicyDocument(v->document, policy::DocumentKind::kIdentity).ok()) << arn;
  }
  EXPECT_EQ(dir_.DeletePolicy(account_, kExecPolicy).code(), StatusCode::kPermissionDenied);  // IAM: AccessDenied
  EXPECT_EQ(dir_.CreatePolicyVersion(account_, kExecPolicy, kDoc, true).status().code(), StatusCode::kPermissionDenied);
  auto aws = dir_.ListPolicies(account_, PolicyFilter{PolicyScope::kAws, false, "/service-role/"}, PageRequest{});
  EXPECT_EQ(aws->items.size(), 2u);
}

// The catalogue holds AWS's documents whole, with their default version ids and dates as
// GetPolicyVersion/ListPolicies publish them (zoph-io/IAMTrail 2026-08-22, zoph-io/MAMIP for
// SecretsManagerReadWrite v6; docs/contracts/iam.md, "Documents").
TEST_F(DirectoryTest, AwsManagedPoliciesAreAwsDocumentsWhole) {
  struct Expected {
    const char* arn;
    const char* version;
    int64_t created, updated;  // epoch seconds
    size_t statements, actions;
  };
  for (const Expected& e : {
           Expected{"arn:aws:iam::aws:policy/ReadOnlyAccess", "v188", 1423247988, 1784659350, 3, 2914},
           Expected{"arn:aws:iam::aws:policy/AmazonECS_FullAccess", "v21", 1510090614, 1723577977, 9, 127},
           Expected{"arn:aws:iam::aws:policy/SecretsManagerReadWrite", "v6", 1522865129, 1787701030, 5, 31},
           Expected{"arn:aws:iam::aws:policy/AdministratorAccess", "v1", 1423247986, 1423247986, 1, 1},
       }) {
    auto p = dir_.GetPolicy(account_, e.arn);
    ASSERT_TRUE(p.ok()) << e.arn;
    EXPECT_EQ(p->default_version, e.version) << e.arn;
    EXPECT_EQ(EpochMillis(p->created_at), e.created * 1000) << e.arn;
    EXPECT_EQ(EpochMillis(p->updated_at), e.updated * 1000) << e.arn;
    auto v = dir_.GetPolicyVersion(account_, e.arn, e.version);
    ASSERT_TRUE(v.ok()) << e.arn;
    const boost::json::value document = boost::json::parse(v->document);
    const boost::json::array& statements = document.at("Statement").as_array();
    EXPECT_EQ(statements.size(), e.statements) << e.arn;
    size_t actions = 0;
    for (const auto& st : statements) {
      const boost::json::value& a = st.at("Action");
      actions += a.is_string() ? 1 : a.as_array().size();
    }
    EXPECT_EQ(actions, e.actions) << e.arn;
  }
  auto read_only = dir_.GetPolicyVersion(account_, "arn:aws:iam::aws:policy/ReadOnlyAccess", "v188");
  const boost::json::value doc = boost::json::parse(read_only->document);
  EXPECT_EQ(doc.at("Statement").at(0).at("Sid"), "ReadOnlyActionsGroup1");
  EXPECT_EQ(doc.at("Statement").at(0).at("Action").at(0), "a4b:Get*");
  EXPECT_EQ(doc.at("Statement").at(2).at("Condition").at("StringEquals").at("s3express:SessionMode"), "ReadOnly");
  auto secrets = dir_.GetPolicyVersion(account_, "arn:aws:iam::aws:policy/SecretsManagerReadWrite", "v6");
  EXPECT_EQ(boost::json::parse(secrets->document).at("Statement").at(4).at("Sid"), "CloudFormationTagOnCreate");
  // One version each: AWS's older versions are not carried.
  EXPECT_FALSE(dir_.GetPolicyVersion(account_, "arn:aws:iam::aws:policy/ReadOnlyAccess", "v187").ok());
}

// What AWS's documents decide, through the evaluator every call uses.
class AwsManagedDecisionTest : public ::testing::Test {
 protected:
  static policy::Decision Decide(const char* name, std::string action, std::string resource,
                                 std::optional<std::string> passed_to = std::nullopt) {
    policy::PolicySet set;
    for (const auto& p : AwsManagedPolicies()) {
      if (p.policy.name != name) continue;
      auto parsed = policy::ParsePolicy(p.document, policy::DocumentKind::kIdentity);
      EXPECT_TRUE(parsed.ok()) << name;
      if (parsed.ok()) set.identity.push_back({p.policy.arn, *parsed});
    }
    EXPECT_EQ(set.identity.size(), 1u) << name;
    policy::RequestContext ctx(policy::Principal::User(AccountId("123456789012"), "alice", "AIDAALICE"),
                               std::move(action), std::move(resource));
    if (passed_to) ctx.Set("iam:PassedToService", *passed_to);
    return policy::Evaluate(ctx, set).decision;
  }
};

TEST_F(AwsManagedDecisionTest, ReadOnlyAccessReadsButDoesNotWrite) {
  using policy::Decision;
  const std::string service = "arn:aws:ecs:us-east-1:123456789012:service/web/api";
  EXPECT_EQ(Decide("ReadOnlyAccess", "ecs:DescribeServices", service), Decision::kAllow);
  EXPECT_EQ(Decide("ReadOnlyAccess", "ecs:ListTasks", "*"), Decision::kAllow);
  EXPECT_EQ(Decide("ReadOnlyAccess", "ssm:GetParameter", "arn:aws:ssm:us-east-1:123456789012:parameter/app/db"),
            Decision::kAllow);
  EXPECT_EQ(Decide("ReadOnlyAccess", "sts:GetCallerIdentity", "*"), Decision::kAllow);
  EXPECT_EQ(Decide("ReadOnlyAccess", "ecs:RunTask", "arn:aws:ecs:us-east-1:123456789012:task-definition/web:3"),
            Decision::kImplicitDeny);
  EXPECT_EQ(Decide("ReadOnlyAccess", "ecs:UpdateService", service), Decision::kImplicitDeny);
  EXPECT_EQ(Decide("ReadOnlyAccess", "ssm:PutParameter", "*"), Decision::kImplicitDeny);
  EXPECT_EQ(Decide("ReadOnlyAccess", "iam:PassRole", "arn:aws:iam::123456789012:role/app"), Decision::kImplicitDeny);
}

TEST_F(AwsManagedDecisionTest, EcsFullAccessPassesAnyRoleOnlyToEcsTasks) {
  using policy::Decision;
  const std::string role = "arn:aws:iam::123456789012:role/app-task";
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "iam:PassRole", role, "ecs-tasks.amazonaws.com"), Decision::kAllow);
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "iam:PassRole", role, "ec2.amazonaws.com"), Decision::kImplicitDeny);
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "iam:PassRole", role, "lambda.amazonaws.com"), Decision::kImplicitDeny);
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "iam:PassRole", role), Decision::kImplicitDeny);
  // Its other PassRole statements name their roles: ecsInstanceRole* to EC2 only.
  const std::string instance_role = "arn:aws:iam::123456789012:role/ecsInstanceRole";
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "iam:PassRole", instance_role, "ec2.amazonaws.com"), Decision::kAllow);
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "iam:PassRole", role, "ecs.amazonaws.com"), Decision::kImplicitDeny);
  EXPECT_EQ(Decide("AmazonECS_FullAccess", "ecs:RunTask", "*"), Decision::kAllow);
}

TEST_F(DirectoryTest, ListPoliciesPagesThroughAwsAndLocalPolicies) {
  for (const char* n : {"AdministratorAccess2", "amazon", "zeta"}) MakePolicy(n);
  auto all = dir_.ListPolicies(account_, PolicyFilter{}, PageRequest{"", 1000});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->items.size(), AwsManagedPolicies().size() + 3);
  std::vector<std::string> paged;
  PageRequest req{"", 2};
  while (true) {
    auto page = dir_.ListPolicies(account_, PolicyFilter{}, req);
    ASSERT_TRUE(page.ok());
    for (const auto& p : page->items) paged.push_back(p.arn);
    if (!page->next_marker) break;
    req.marker = *page->next_marker;
  }
  std::vector<std::string> expected;
  for (const auto& p : all->items) expected.push_back(p.arn);
  EXPECT_EQ(paged, expected);
}

TEST_F(DirectoryTest, PoliciesOfGathersInlineManagedAndBoundary) {
  ManagedPolicy p = MakePolicy("read");
  RoleSpec spec = Spec("app", kTrust, p.arn);
  ASSERT_TRUE(dir_.CreateRole(account_, spec).ok());
  const PrincipalRef who{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, who, "inline", kDoc2).ok());
  ASSERT_TRUE(dir_.AttachPolicy(account_, who, kExecPolicy).ok());
  auto pp = dir_.PoliciesOf(account_, who);
  ASSERT_TRUE(pp.ok()) << pp.status().ToString();
  ASSERT_EQ(pp->identity.size(), 2u);
  EXPECT_EQ(pp->identity[0].source, "inline");
  EXPECT_EQ(pp->identity[0].text, kDoc2);
  EXPECT_EQ(pp->identity[1].source, kExecPolicy);
  ASSERT_TRUE(pp->boundary.has_value());
  EXPECT_EQ(pp->boundary->text, kDoc);
  EXPECT_EQ(dir_.GetPolicy(account_, p.arn)->boundary_usage_count, 1);
  ExpectError(dir_.DeletePolicy(account_, p.arn), Error::kDeleteConflict, "Cannot delete a policy attached to entities.");
  // A new default version applies at once.
  ASSERT_TRUE(dir_.CreatePolicyVersion(account_, p.arn, kDoc2, true).ok());
  EXPECT_EQ(dir_.PoliciesOf(account_, who)->boundary->text, kDoc2);
  EXPECT_TRUE(IsError(dir_.PoliciesOf(account_, {PrincipalType::kUser, "app"}).status(), Error::kNoSuchEntity));
}

// PoliciesOf reads the store: this Directory's changes and another process's (another Directory
// on the same store) show at once (the authorizer's cache is the one over it: AuthorizerTest).
// Session policy ARNs come back as their default versions; one that is gone as an empty policy.
TEST_F(DirectoryTest, PoliciesOfSeesEveryChangeAtOnceAndReadsSessionPolicies) {
  MakeRole("app");
  const PrincipalRef who{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, who, "a", kDoc).ok());
  EXPECT_EQ(dir_.PoliciesOf(account_, who)->identity.size(), 1u);
  ASSERT_TRUE(dir_.PutInlinePolicy(account_, who, "b", kDoc2).ok());
  EXPECT_EQ(dir_.PoliciesOf(account_, who)->identity.size(), 2u);
  Directory other(*store_, clock_);
  ASSERT_TRUE(other.DeleteInlinePolicy(account_, who, "b").ok());
  EXPECT_EQ(dir_.PoliciesOf(account_, who)->identity.size(), 1u);

  ManagedPolicy p = MakePolicy("session");
  const std::string gone = "arn:aws:iam::" + account_.str() + ":policy/gone";
  auto with_session = dir_.PoliciesOf(account_, who, {p.arn, gone});
  ASSERT_TRUE(with_session.ok()) << with_session.status().ToString();
  ASSERT_EQ(with_session->session.size(), 2u);
  EXPECT_EQ(with_session->session[0].source, p.arn);
  EXPECT_EQ(with_session->session[0].text, kDoc);
  EXPECT_EQ(with_session->session[1].text, R"({"Version":"2012-10-17","Statement":[]})");
}

TEST_F(DirectoryTest, BoundariesAreSetReplacedAndRemoved) {
  ManagedPolicy p = MakePolicy("boundary");
  MakeRole("app");
  const PrincipalRef who{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.SetBoundary(account_, who, p.arn).ok());
  EXPECT_EQ(dir_.GetRole(account_, "app")->boundary_arn, p.arn);
  EXPECT_EQ(dir_.GetPolicy(account_, p.arn)->boundary_usage_count, 1);
  EXPECT_EQ(dir_.PoliciesOf(account_, who)->boundary->text, kDoc);
  ASSERT_TRUE(dir_.SetBoundary(account_, who, kExecPolicy).ok());
  EXPECT_EQ(dir_.GetPolicy(account_, p.arn)->boundary_usage_count, 0);
  EXPECT_EQ(dir_.PoliciesOf(account_, who)->boundary->source, kExecPolicy);
  ASSERT_TRUE(dir_.SetBoundary(account_, who, std::nullopt).ok());
  EXPECT_FALSE(dir_.PoliciesOf(account_, who)->boundary.has_value());
  EXPECT_TRUE(IsError(dir_.SetBoundary(account_, who, "arn:aws:iam::aws:policy/Nope"), Error::kNoSuchEntity));
  EXPECT_TRUE(IsError(dir_.SetBoundary(account_, {PrincipalType::kUser, "nobody"}, p.arn), Error::kNoSuchEntity));
  ASSERT_TRUE(dir_.DeletePolicy(account_, p.arn).ok());
}

TEST_F(DirectoryTest, AccountQuotasOnRolesUsersAndPolicies) {
  Directory small(*store_, clock_, DirectoryQuotas{.roles = 2, .users = 1, .policies = 1});
  ASSERT_TRUE(small.CreateRole(account_, Spec("r1", kTrust)).ok());
  ASSERT_TRUE(small.CreateRole(account_, Spec("r2", kTrust)).ok());
  ExpectError(small.CreateRole(account_, Spec("r3", kTrust)).status(), Error::kLimitExceeded,
            "Cannot exceed quota for RolesPerAccount: 2.");
  ASSERT_TRUE(small.CreateUser(account_, NamedUser("u1")).ok());
  ExpectError(small.CreateUser(account_, NamedUser("u2")).status(), Error::kLimitExceeded,
            "Cannot exceed quota for UsersPerAccount: 1.");
  PolicySpec ps;
  ps.name = "p1";
  ps.document = kDoc;
  ASSERT_TRUE(small.CreatePolicy(account_, ps).ok());
  ps.name = "p2";
  ExpectError(small.CreatePolicy(account_, ps).status(), Error::kLimitExceeded, "Cannot exceed quota for PoliciesPerAccount: 1.");
  // Another account has its own.
  ASSERT_TRUE(small.CreateRole(AccountId("111111111111"), Spec("r3", kTrust)).ok());
}

TEST_F(DirectoryTest, UserKeysAuthenticateAsTheUserUntilInactiveOrDeleted) {
  UserSpec spec = NamedUser("ci");
  auto user = dir_.CreateUser(account_, spec);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->id.substr(0, 4), "AIDA");
  auto find = [&](store::ReadTxn& txn) -> StatusOr<KeyOwner> {
    ASSIGN_OR_RETURN(auto u, Directory::FindUser(txn, account_, "ci"));
    if (!u) return NotFound("no user", Error::kNoSuchEntity);
    return KeyOwner{u->name, u->id, u->arn};
  };
  auto k1 = accounts_.CreateUserAccessKey(account_, find);
  ASSERT_TRUE(k1.ok());
  ASSERT_TRUE(accounts_.CreateUserAccessKey(account_, find).ok());
  ExpectError(accounts_.CreateUserAccessKey(account_, find).status(), Error::kLimitExceeded,
            "Cannot exceed quota for AccessKeysPerUser: 2");
  // What the front makes of the key (its PrincipalKind): iam/api/account_credentials_test.cc.
  auto found = accounts_.FindActiveKey(k1->id);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->principal_arn, user->arn);
  EXPECT_EQ((*found)->user_id, user->id);
  EXPECT_EQ((*found)->user_name, "ci");

  ASSERT_TRUE(accounts_.SetAccessKeyStatus(account_, "ci", k1->id, AccessKeyStatus::kInactive).ok());
  EXPECT_FALSE(accounts_.FindActiveKey(k1->id)->has_value());
  ASSERT_TRUE(accounts_.SetAccessKeyStatus(account_, "ci", k1->id, AccessKeyStatus::kActive).ok());
  EXPECT_TRUE(accounts_.FindActiveKey(k1->id)->has_value());
  // Another user's (or the root's) name does not reach this key.
  EXPECT_TRUE(IsError(accounts_.DeleteAccessKey(account_, "", k1->id), Error::kNoSuchEntity));

  ExpectError(dir_.DeleteUser(account_, "ci", &Accounts::UserHasKeys), Error::kDeleteConflict,
            "Cannot delete entity, must delete access keys first.");
  auto keys = accounts_.ListUserAccessKeys(account_, "ci");
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->size(), 2u);
  for (const auto& k : *keys) ASSERT_TRUE(accounts_.DeleteAccessKey(account_, "ci", k.id).ok());
  EXPECT_FALSE(accounts_.FindActiveKey(k1->id)->has_value());
  ASSERT_TRUE(dir_.DeleteUser(account_, "ci", &Accounts::UserHasKeys).ok());
  EXPECT_TRUE(IsError(accounts_.CreateUserAccessKey(account_, find).status(), Error::kNoSuchEntity));
}

TEST_F(DirectoryTest, TagsReplaceByKeyAndAreCapped) {
  MakeRole("app");
  const PrincipalRef who{PrincipalType::kRole, "app"};
  ASSERT_TRUE(dir_.TagPrincipal(account_, who, {{"team", "a"}, {"env", "dev"}}).ok());
  ASSERT_TRUE(dir_.TagPrincipal(account_, who, {{"team", "b"}}).ok());
  ASSERT_TRUE(dir_.UntagPrincipal(account_, who, {"env"}).ok());
  EXPECT_EQ(dir_.GetRole(account_, "app")->tags, (std::vector<Tag>{{"team", "b"}}));
  std::vector<Tag> many;
  for (int i = 0; i < 50; ++i) many.push_back({"k" + std::to_string(i), "v"});
  ExpectError(dir_.TagPrincipal(account_, who, many), Error::kLimitExceeded, "Cannot exceed quota for TagsPerRole: 50.");
}

TEST_F(DirectoryTest, ServiceLinkedRoleForEcs) {
  auto r = dir_.CreateServiceLinkedRole(account_, "ecs.amazonaws.com", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name, "AWSServiceRoleForECS");
  EXPECT_EQ(r->path, "/aws-service-role/ecs.amazonaws.com/");
  EXPECT_TRUE(IsError(dir_.CreateServiceLinkedRole(account_, "ecs.amazonaws.com", "").status(), Error::kInvalidInput));
  EXPECT_TRUE(IsError(dir_.CreateServiceLinkedRole(account_, "nothing.amazonaws.com", "").status(), Error::kInvalidInput));
}

TEST_F(DirectoryTest, ReapAccountRemovesEverything) {
  MakeRole("app");
  MakePolicy("read");
  ASSERT_TRUE(dir_.CreateUser(account_, NamedUser("ci")).ok());
  ASSERT_TRUE(dir_.ReapAccount(account_).ok());
  EXPECT_TRUE(dir_.ListRoles(account_, "/", {})->items.empty());
  EXPECT_TRUE(dir_.ListUsers(account_, "/", {})->items.empty());
  EXPECT_TRUE(dir_.ListPolicies(account_, PolicyFilter{PolicyScope::kLocal, false, "/"}, {})->items.empty());
}

}  // namespace
}  // namespace paddock::iam
