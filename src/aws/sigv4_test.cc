#include "aws/errors.h"
#include "aws/sigv4.h"

#include <gtest/gtest.h>

#include <map>

#include "common/testing/fake_clock.h"

namespace paddock::aws {
namespace {

using namespace std::chrono_literals;

// 2015-08-30T12:36:00Z, the time of AWS's published SigV4 test suite.
const TimePoint kTestSuiteTime = std::chrono::sys_days(std::chrono::year(2015) / 8 / 30) + 12h + 36min;
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

class MapResolver : public CredentialResolver {
 public:
  void Add(std::string id, std::string secret, std::string account) {
    Credential c;
    c.secret_access_key = std::move(secret);
    c.principal.account = AccountId(account);
    c.principal.arn = "arn:aws:iam::" + account + ":user/alice";
    c.principal.access_key_id = AccessKeyId(id);
    creds_[id] = std::move(c);
  }
  StatusOr<std::optional<Credential>> Lookup(const AccessKeyId& id) override {
    auto it = creds_.find(id.str());
    if (it == creds_.end()) return std::optional<Credential>();
    return std::optional<Credential>(it->second);
  }

 private:
  std::map<std::string, Credential> creds_;
};

http::Request EcsRequest(std::string body = R"({"family":"web"})") {
  http::Request req;
  req.method = "POST";
  req.target = "/";
  req.headers = {{"Host", "ecs.us-east-1.amazonaws.com"},
                 {"Content-Type", "application/x-amz-json-1.1"},
                 {"X-Amz-Target", "AmazonEC2ContainerServiceV20141113.ListClusters"}};
  req.body = std::move(body);
  return req;
}

class SigV4Test : public ::testing::Test {
 protected:
  SigV4Test() : clock_(kTestSuiteTime), verifier_(clock_, resolver_, {}) {
    resolver_.Add("AKIDEXAMPLE", kSecret, "123456789012");
  }
  http::Request Signed(http::Request req, std::string_view service = "ecs") {
    SignRequest(req, {"AKIDEXAMPLE", kSecret}, "us-east-1", service, clock_.Now());
    return req;
  }
  static void ExpectError(const StatusOr<VerifiedRequest>& r, std::string_view type, std::string_view msg_part) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(AwsErrorFor(r.status()).type, type);
    EXPECT_NE(r.status().message().find(msg_part), std::string::npos) << r.status().message();
  }

  testing::FakeClock clock_;
  MapResolver resolver_;
  SigV4Verifier verifier_;
};

TEST(Sha256HexTest, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ParseAuthorizationTest, ParsesAllParts) {
  auto a = ParseAuthorization(
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
      "SignedHeaders=Host;x-amz-date, Signature=5FA00fa3");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->access_key_id, "AKIDEXAMPLE");
  EXPECT_EQ(a->date, "20150830");
  EXPECT_EQ(a->region, "us-east-1");
  EXPECT_EQ(a->service, "service");
  EXPECT_EQ(a->signed_headers, (std::vector<std::string>{"host", "x-amz-date"}));
  EXPECT_EQ(a->signature, "5fa00fa3");
}

TEST(ParseAuthorizationTest, RejectsMalformedHeaders) {
  for (std::string_view h : {"", "AWS4-HMAC-SHA256", "Basic dXNlcjpwYXNz",
                             "AWS4-HMAC-SHA256 Credential=A/20150830/us-east-1/ecs/aws4_request",
                             "AWS4-HMAC-SHA256 Credential=A/2015/us-east-1/ecs/aws4_request, SignedHeaders=host, "
                             "Signature=00",
                             "AWS4-HMAC-SHA256 Credential=A/20150830/us-east-1, SignedHeaders=host, Signature=00",
                             "AWS4-HMAC-SHA256 Credential, SignedHeaders=host, Signature=00",
                             "AWS4-HMAC-SHA256 Credential=A/20150830/us-east-1/ecs/aws4_request, SignedHeaders=, "
                             "Signature=00"}) {
    auto a = ParseAuthorization(h);
    ASSERT_FALSE(a.ok()) << h;
    EXPECT_EQ(a.status().code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(AwsErrorFor(a.status()).type, "IncompleteSignatureException") << h;
  }
  auto missing = ParseAuthorization("AWS4-HMAC-SHA256 Credential=A/20150830/us-east-1/ecs/aws4_request");
  EXPECT_NE(missing.status().message().find("Authorization header requires 'Signature' parameter."),
            std::string::npos);
}

// AWS's published test suite, case "get-vanilla".
TEST_F(SigV4Test, PublishedTestVectorGetVanilla) {
  http::Request req;
  req.method = "GET";
  req.target = "/";
  req.headers = {{"Host", "example.amazonaws.com"}};
  SignRequest(req, {"AKIDEXAMPLE", kSecret}, "us-east-1", "service", kTestSuiteTime);
  EXPECT_EQ(req.GetHeader("X-Amz-Date"), "20150830T123600Z");
  EXPECT_EQ(req.GetHeader("Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  auto v = verifier_.Verify(req, "service");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
}

// AWS's published test suite, case "get-vanilla-query-order-key-case": parameters sorted.
TEST_F(SigV4Test, PublishedTestVectorQueryOrder) {
  http::Request req;
  req.method = "GET";
  req.target = "/?Param2=value2&Param1=value1";
  req.headers = {{"Host", "example.amazonaws.com"}};
  SignRequest(req, {"AKIDEXAMPLE", kSecret}, "us-east-1", "service", kTestSuiteTime);
  EXPECT_NE(req.GetHeader("Authorization")
                .find("Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
            std::string::npos)
      << req.GetHeader("Authorization");
}

TEST_F(SigV4Test, RoundTrip) {
  auto v = verifier_.Verify(Signed(EcsRequest()), "ecs");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->principal.account.str(), "123456789012");
  EXPECT_EQ(v->principal.arn, "arn:aws:iam::123456789012:user/alice");
  EXPECT_EQ(v->region.str(), "us-east-1");
  // Again, through the signing-key cache.
  EXPECT_TRUE(verifier_.Verify(Signed(EcsRequest("{}")), "ecs").ok());
}

TEST_F(SigV4Test, HeaderValuesAreCanonicalized) {
  http::Request req = EcsRequest();
  req.headers.push_back({"X-Amz-Meta", "  a   b  "});
  http::Request signed_req = Signed(req);
  // The client signs what it sends; whitespace differences inside a value must not matter.
  for (auto& h : signed_req.headers)
    if (h.name == "Content-Type") h.value = "  application/x-amz-json-1.1 ";
  EXPECT_TRUE(verifier_.Verify(signed_req, "ecs").ok());
}

TEST_F(SigV4Test, TamperedBodyFails) {
  http::Request req = Signed(EcsRequest());
  req.body = R"({"family":"evil"})";
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException",
              "The request signature we calculated does not match the signature you provided.");
}

TEST_F(SigV4Test, TamperedSignedHeaderFails) {
  http::Request req = Signed(EcsRequest());
  for (auto& h : req.headers)
    if (h.name == "X-Amz-Target") h.value = "AmazonEC2ContainerServiceV20141113.DeleteCluster";
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException", "does not match");
}

TEST_F(SigV4Test, ContentSha256HeaderMustMatchBody) {
  http::Request req = EcsRequest();
  req.headers.push_back({"X-Amz-Content-Sha256", Sha256Hex("something else")});
  req = Signed(req);
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException", "x-amz-content-sha256");

  http::Request good = EcsRequest();
  good.headers.push_back({"X-Amz-Content-Sha256", Sha256Hex(good.body)});
  EXPECT_TRUE(verifier_.Verify(Signed(good), "ecs").ok());
}

TEST_F(SigV4Test, ExpiredSignature) {
  http::Request req = Signed(EcsRequest());
  clock_.Advance(16min);
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException",
              "Signature expired: 20150830T123600Z is now earlier than 20150830T123700Z (20150830T125200Z - 15 "
              "min.)");
}

TEST_F(SigV4Test, FutureSignature) {
  http::Request req = Signed(EcsRequest());
  clock_.Advance(-16min);
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException",
              "Signature not yet current: 20150830T123600Z is still later than 20150830T123500Z "
              "(20150830T122000Z + 15 min.)");
}

TEST_F(SigV4Test, WithinSkewPasses) {
  http::Request req = Signed(EcsRequest());
  clock_.Advance(14min);
  EXPECT_TRUE(verifier_.Verify(req, "ecs").ok());
}

TEST_F(SigV4Test, UnknownAccessKey) {
  http::Request req = EcsRequest();
  SignRequest(req, {"AKIDUNKNOWN", kSecret}, "us-east-1", "ecs", clock_.Now());
  ExpectError(verifier_.Verify(req, "ecs"), "UnrecognizedClientException",
              "The security token included in the request is invalid.");
}

TEST_F(SigV4Test, WrongSecret) {
  http::Request req = EcsRequest();
  SignRequest(req, {"AKIDEXAMPLE", "not-the-secret"}, "us-east-1", "ecs", clock_.Now());
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException", "does not match");
}

TEST_F(SigV4Test, WrongServiceScope) {
  ExpectError(verifier_.Verify(Signed(EcsRequest(), "ssm"), "ecs"), "InvalidSignatureException",
              "Credential should be scoped to correct service: 'ecs'. ");
}

TEST_F(SigV4Test, InvalidRegion) {
  http::Request req = EcsRequest();
  SignRequest(req, {"AKIDEXAMPLE", kSecret}, "US_EAST", "ecs", clock_.Now());
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException",
              "Credential should be scoped to a valid region, not 'US_EAST'. ");
}

TEST_F(SigV4Test, ScopeProblemsAreReportedTogether) {
  http::Request req = Signed(EcsRequest(), "ssm");
  for (auto& h : req.headers) {
    if (h.name == "Authorization") {
      h.value.replace(h.value.find("aws4_request"), 12, "aws5_request");
    }
    if (h.name == "X-Amz-Date") h.value = "20150831T123600Z";
  }
  auto r = verifier_.Verify(req, "ecs");
  EXPECT_EQ(r.status().message(),
            "Credential should be scoped to correct service: 'ecs'. Credential should be scoped with a valid "
            "terminator: 'aws4_request', not 'aws5_request'. Date in Credential scope does not match YYYYMMDD "
            "from ISO-8601 version of date from HTTP: '20150830' != '20150831', from '20150831T123600Z'.");
}

TEST_F(SigV4Test, MismatchShowsCanonicalRequest) {
  http::Request req = Signed(EcsRequest());
  req.body = "{}";
  auto r = verifier_.Verify(req, "ecs");
  EXPECT_NE(r.status().message().find("The Canonical String for this request should have been\n'POST\n/\n\n"),
            std::string::npos)
      << r.status().message();
}

TEST_F(SigV4Test, ScopeDateMustMatchRequestDate) {
  http::Request req = Signed(EcsRequest());
  for (auto& h : req.headers)
    if (h.name == "X-Amz-Date") h.value = "20150831T123600Z";
  ExpectError(verifier_.Verify(req, "ecs"), "InvalidSignatureException", "Date in Credential scope");
}

TEST_F(SigV4Test, MissingAuthorization) {
  ExpectError(verifier_.Verify(EcsRequest(), "ecs"), "MissingAuthenticationTokenException",
              "Request is missing Authentication Token");
}

TEST_F(SigV4Test, MissingDate) {
  http::Request req = Signed(EcsRequest());
  std::erase_if(req.headers, [](const http::Header& h) { return h.name == "X-Amz-Date"; });
  ExpectError(verifier_.Verify(req, "ecs"), "IncompleteSignatureException",
              "requires existence of either a 'X-Amz-Date' or a 'Date' header");
}

TEST_F(SigV4Test, MalformedDate) {
  http::Request req = Signed(EcsRequest());
  for (auto& h : req.headers)
    if (h.name == "X-Amz-Date") h.value = "2015-08-30T12:36:00Z";
  ExpectError(verifier_.Verify(req, "ecs"), "IncompleteSignatureException", "ISO-8601");
}

TEST_F(SigV4Test, HostMustBeSigned) {
  http::Request req = EcsRequest();
  std::erase_if(req.headers, [](const http::Header& h) { return h.name == "Host"; });
  req = Signed(req);
  req.headers.push_back({"Host", "ecs.us-east-1.amazonaws.com"});
  ExpectError(verifier_.Verify(req, "ecs"), "IncompleteSignatureException", "'Host'");
}

TEST_F(SigV4Test, EmulatorModeAcceptsAnySignature) {
  SigV4Verifier lax(clock_, resolver_, {.accept_any_credentials = true, .default_account = AccountId("000000000000")});
  http::Request req = EcsRequest();
  SignRequest(req, {"111122223333", "whatever"}, "eu-west-1", "ecs", clock_.Now() - 24h);
  auto v = lax.Verify(req, "ecs");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->principal.account.str(), "111122223333");
  EXPECT_EQ(v->principal.arn, "arn:aws:iam::111122223333:root");
  EXPECT_EQ(v->region.str(), "eu-west-1");

  SignRequest(req, {"test", "test"}, "us-east-1", "ecs", clock_.Now());
  v = lax.Verify(req, "ecs");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->principal.account.str(), "000000000000");
  EXPECT_EQ(v->principal.access_key_id.str(), "test");

  // Still has to be a SigV4 request.
  EXPECT_EQ(AwsErrorFor(lax.Verify(EcsRequest(), "ecs").status()).type, "MissingAuthenticationTokenException");
}

}  // namespace
}  // namespace paddock::aws
