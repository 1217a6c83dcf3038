// The Query-protocol seam of the API front: routing by the credential scope's service, form
// decoding, XML answers and errors, authentication and throttling as for JSON services.
#include <gtest/gtest.h>

#include <map>

#include "aws/front.h"
#include "common/testing/fake_clock.h"

namespace paddock::aws {
namespace {
using namespace std::chrono_literals;

class OneKey : public CredentialResolver {
 public:
  StatusOr<std::optional<Credential>> Lookup(const AccessKeyId& id) override {
    if (id.str() != "AKIDQUERY") return std::optional<Credential>();
    Credential c;
    c.secret_access_key = "secret";
    c.principal = Principal();
    c.principal.account = AccountId("123456789012");
    c.principal.arn = "arn:aws:iam::123456789012:root";
    c.principal.access_key_id = id;
    return std::optional(c);
  }
};

// A stand-in STS: GetCallerIdentity answers from the verified principal; Echo returns its params.
class FakeSts : public QueryService {
 public:
  std::string_view SigningName() const override { return "sts"; }
  bool Implements(std::string_view action) const override { return action == "GetCallerIdentity" || action == "Echo"; }
  std::optional<ThrottleGroup> ThrottleGroupFor(std::string_view) const override {
    return ThrottleGroup{"sts:all", {1, 1}};
  }
  StatusOr<std::string> Call(const CallContext& ctx, const QueryParams& params) override {
    if (ctx.action == "Echo" && FindParam(params, "Deny")) return PermissionDenied("not you");
    if (ctx.action == "Echo") {
      std::string out = "<Echo>";
      for (const auto& [k, v] : params) out += "<P k=\"" + XmlEscape(k) + "\">" + XmlEscape(v) + "</P>";
      return out + "</Echo>";
    }
    return "<GetCallerIdentityResponse><GetCallerIdentityResult><Account>" + ctx.scope.account.str() +
           "</Account><Arn>" + ctx.principal.arn + "</Arn></GetCallerIdentityResult></GetCallerIdentityResponse>";
  }
};

class QueryFrontTest : public ::testing::Test {
 protected:
  explicit QueryFrontTest(bool rate_limits = false) { Make(rate_limits); }

  void Make(bool rate_limits) {
    FrontOptions options;
    options.rate_limits = rate_limits;
    front_ = std::make_unique<ApiFront>(options, clock_, resolver_);
    front_->AddQueryService(&sts_);
  }

  http::Response Post(std::string body, std::string service = "sts", std::string secret = "secret") {
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Host", "localhost:4566"}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    req.body = std::move(body);
    SignRequest(req, {"AKIDQUERY", secret}, "us-east-1", service, clock_.Now());
    return front_->Handle(req);
  }

  testing::FakeClock clock_;
  OneKey resolver_;
  FakeSts sts_;
  std::unique_ptr<ApiFront> front_;
};

TEST_F(QueryFrontTest, RoutesByCredentialScopeAndAnswersXml) {
  http::Response r = Post("Action=GetCallerIdentity&Version=2011-06-15");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.GetHeader("Content-Type"), "text/xml");
  EXPECT_EQ(r.GetHeader("x-amzn-RequestId").size(), 36u);
  EXPECT_EQ(r.body,
            "<GetCallerIdentityResponse><GetCallerIdentityResult><Account>123456789012</Account>"
            "<Arn>arn:aws:iam::123456789012:root</Arn></GetCallerIdentityResult></GetCallerIdentityResponse>");
}

TEST_F(QueryFrontTest, DecodesFormParameters) {
  http::Response r = Post("Action=Echo&Filter.1.Name=vpc-id&Filter.1.Value.1=a+b%26c%3D%E2%9C%93");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body,
            "<Echo><P k=\"Action\">Echo</P><P k=\"Filter.1.Name\">vpc-id</P>"
            "<P k=\"Filter.1.Value.1\">a b&amp;c=\xE2\x9C\x93</P></Echo>");
}

TEST_F(QueryFrontTest, ErrorsAreXmlWithAwsCodes) {
  http::Response missing = Post("Version=2011-06-15");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.GetHeader("x-amzn-ErrorType"), "MissingAction");
  EXPECT_NE(missing.body.find("<Code>MissingAction</Code>"), std::string::npos) << missing.body;
  EXPECT_NE(missing.body.find("<Type>Sender</Type>"), std::string::npos);

  http::Response unknown = Post("Action=AssumeRole&Version=2011-06-15");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("<Code>InvalidAction</Code>"), std::string::npos) << unknown.body;
  EXPECT_NE(unknown.body.find("Could not find operation AssumeRole for version 2011-06-15."), std::string::npos);

  http::Response bad_form = Post("Action=Echo&x=%zz");
  EXPECT_EQ(bad_form.status, 400);
  EXPECT_NE(bad_form.body.find("<Code>MalformedQueryString</Code>"), std::string::npos) << bad_form.body;

  http::Response no_such_service = Post("Action=ListUsers", "iam");
  EXPECT_EQ(no_such_service.status, 400);
  EXPECT_EQ(no_such_service.GetHeader("Content-Type"), "text/xml");
}

TEST_F(QueryFrontTest, ADenialIsAccessDeniedWith403) {
  http::Response r = Post("Action=Echo&Deny=1");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), "AccessDenied");
  EXPECT_NE(r.body.find("<Code>AccessDenied</Code>"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("<Message>not you</Message>"), std::string::npos) << r.body;
}

TEST_F(QueryFrontTest, AuthenticatesLikeJson) {
  http::Response wrong = Post("Action=GetCallerIdentity", "sts", "not-the-secret");
  EXPECT_EQ(wrong.status, 400);
  EXPECT_EQ(wrong.GetHeader("x-amzn-ErrorType"), "InvalidSignatureException");
  EXPECT_NE(wrong.body.find("<ErrorResponse>"), std::string::npos);

  http::Request unsigned_req;
  unsigned_req.method = "POST";
  unsigned_req.target = "/";
  unsigned_req.headers = {{"Host", "localhost"}, {"Content-Type", "application/x-www-form-urlencoded"}};
  unsigned_req.body = "Action=GetCallerIdentity";
  http::Response r = front_->Handle(unsigned_req);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.GetHeader("x-amzn-ErrorType"), "MissingAuthenticationTokenException");
}

TEST_F(QueryFrontTest, ThrottlesWithTheServiceBucket) {
  Make(/*rate_limits=*/true);
  EXPECT_EQ(Post("Action=GetCallerIdentity").status, 200);
  http::Response r = Post("Action=GetCallerIdentity");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("<Code>Throttling</Code>"), std::string::npos) << r.body;
  clock_.Advance(1s);
  EXPECT_EQ(Post("Action=GetCallerIdentity").status, 200);
}

TEST(XmlEscapeTest, EscapesMarkup) {
  EXPECT_EQ(XmlEscape(R"(<a href="x">'&'</a>)"), "&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;");
}

}  // namespace
}  // namespace paddock::aws
