// Who is calling: the seam between request authentication (aws/) and the owners of keys and
// sessions (iam/, sts/, ecs/instance), which their adapters implement (iam/api/account_credentials.h,
// sts/api/session_credentials.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/principal.h"
#include "common/status.h"

namespace paddock::aws {

// Who a caller is lives in common/principal.h, so that owners (sts::Sessions) keep principals
// without linking aws/; these names are the front's and its adapters' spelling of it.
using PrincipalKind = ::paddock::PrincipalKind;
using Principal = ::paddock::Principal;

// A secret access key and what it authenticates as.
struct Credential {
  std::string secret_access_key;
  Principal principal;
  // Temporary credentials ("ASIA…", sts/sessions.h): the SHA-256 (lowercase hex) of the session
  // token every request must carry in X-Amz-Security-Token (the store keeps only the hash), and
  // when the credentials stop being valid. Empty/nullopt for long-term keys. The verifier refuses
  // a request whose token is missing or wrong (UnrecognizedClientException) and, from `expires`
  // on, every request (ExpiredTokenException).
  std::string session_token_sha256;
  std::optional<TimePoint> expires;
};

class CredentialResolver {
 public:
  virtual ~CredentialResolver() = default;
  // The credential for `id`, nullopt when there is no such key, or an error when the lookup
  // itself failed.
  virtual StatusOr<std::optional<Credential>> Lookup(const AccessKeyId& id) = 0;
};

}  // namespace paddock::aws
