// Arbitrary Authorization, X-Amz-Date and X-Amz-Content-Sha256 values through ParseAuthorization
// and SigV4Verifier::Verify (against a known key, so the full verification path runs).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "aws/sigv4.h"
#include "common/testing/fake_clock.h"

namespace {

using namespace paddock;

class OneKey : public aws::CredentialResolver {
 public:
  StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId& id) override {
    if (id.str() != "AKIDEXAMPLE") return std::optional<aws::Credential>();
    aws::Credential c;
    c.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    c.principal.account = AccountId("123456789012");
    c.principal.arn = "arn:aws:iam::123456789012:root";
    c.principal.access_key_id = id;
    return std::optional<aws::Credential>(std::move(c));
  }
};

// Splits the input at '\n' into up to four fields: Authorization, X-Amz-Date, content sha, body.
std::string_view Next(std::string_view& rest) {
  size_t nl = rest.find('\n');
  std::string_view field = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  return field;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static OneKey resolver;
  static testing::FakeClock clock(std::chrono::sys_days(std::chrono::year(2015) / 8 / 30) + std::chrono::hours(12));
  static aws::SigV4Verifier strict(clock, resolver, {});
  static aws::SigV4Verifier lax(clock, resolver, [] {
    aws::VerifierOptions o;
    o.accept_any_credentials = true;
    o.default_account = AccountId("000000000000");
    return o;
  }());

  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::string_view authorization = Next(rest);
  std::string_view date = Next(rest);
  std::string_view sha = Next(rest);

  auto parsed = aws::ParseAuthorization(authorization);
  if (!parsed.ok() && parsed.status().code() != StatusCode::kUnauthenticated) std::abort();

  http::Request req;
  req.method = "POST";
  req.target = "/";
  req.headers = {{"Host", "example.amazonaws.com"},
                 {"Authorization", std::string(authorization)},
                 {"X-Amz-Date", std::string(date)}};
  if (!sha.empty()) req.headers.push_back({"X-Amz-Content-Sha256", std::string(sha)});
  req.body.assign(rest);
  for (aws::SigV4Verifier* v : {&strict, &lax}) {
    auto r = v->Verify(req, "service");
    if (!r.ok() && r.status().detail().empty()) std::abort();
  }
  return 0;
}
