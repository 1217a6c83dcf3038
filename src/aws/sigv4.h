// AWS Signature Version 4: signing (for clients, the CLI and the load driver) and verification
// (for the API front).
//
//   aws::SignRequest(req, {"AKID", "secret"}, "us-east-1", "ecs", clock.Now());
//   aws::SigV4Verifier verifier(clock, resolver);
//   StatusOr<aws::VerifiedRequest> who = verifier.Verify(req);
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aws/credentials.h"
#include "common/clock.h"
#include "common/status.h"
#include "http/message.h"

namespace paddock::aws {

// The parts of an "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/ecs/aws4_request,
// SignedHeaders=host;x-amz-date, Signature=..." header.
struct SigV4Authorization {
  std::string access_key_id;
  std::string date;     // scope date, YYYYMMDD
  std::string region;   // from the credential scope
  std::string service;  // from the credential scope
  std::string terminator;  // the scope's last part; valid only when "aws4_request"
  std::vector<std::string> signed_headers;  // lowercase, in the order given
  std::string signature;                    // lowercase hex
};

// Parses an Authorization header. Fails with kUnauthenticated and AWS's
// Error::kIncompleteSignature / message when a part is missing or malformed.
StatusOr<SigV4Authorization> ParseAuthorization(std::string_view header);

struct SigningCredentials {
  std::string access_key_id;
  std::string secret_access_key;
};

// Adds X-Amz-Date, X-Amz-Content-Sha256 (optional) and Authorization headers for `now`.
// Signs host, x-amz-date, x-amz-target (when present) and content-type (when present).
void SignRequest(http::Request& req, const SigningCredentials& creds, std::string_view region,
                 std::string_view service, TimePoint now);

// The SHA-256 of `data`, lowercase hex.
std::string Sha256Hex(std::string_view data);

// The identity a verified request carries.
struct VerifiedRequest {
  Principal principal;
  Region region;  // from the credential scope
};

struct VerifierOptions {
  // Emulator mode: accept any well-formed SigV4 request without checking the signature. The
  // account is the access key id when it is 12 digits, otherwise default_account.
  bool accept_any_credentials = false;
  AccountId default_account;
  std::chrono::seconds max_skew{15 * 60};
};

// Verifies SigV4 Authorization headers. Thread-safe. Derived signing keys are cached per
// (secret, date, region, service); signatures are compared in constant time.
class SigV4Verifier {
 public:
  SigV4Verifier(const Clock& clock, CredentialResolver& resolver, VerifierOptions options);
  ~SigV4Verifier();

  // `expected_service` is the signing name of the service the request is addressed to ("ecs").
  // Errors are kUnauthenticated with an aws::Error detail (aws/errors.h): kMissingAuthenticationToken,
  // kIncompleteSignature, kUnrecognizedClient (also for temporary credentials without their session
  // token or with a wrong one), kExpiredToken (temporary credentials past their expiry),
  // kInvalidSignature (also for "Signature expired").
  StatusOr<VerifiedRequest> Verify(const http::Request& req, std::string_view expected_service);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::aws
