// Who is calling: the seam between request authentication (aws/) and the account store (iam/).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace paddock::aws {

// What kind of identity a principal is (IAM's principal types).
enum class PrincipalKind {
  kRoot,         // the account's root: allowed everything (its keys come from `paddock admin`/`up`)
  kUser,         // an IAM user's long-term key
  kAssumedRole,  // a role session (STS AssumeRole, a task role): temporary credentials
  kFederatedUser,  // a GetSessionToken session of a user or root: acts as that user or root
};

// The authenticated caller of a request.
struct Principal {
  AccountId account;
  // "arn:aws:iam::123456789012:root", "arn:aws:iam::123456789012:user/path/name" or
  // "arn:aws:sts::123456789012:assumed-role/name/session".
  std::string arn;
  AccessKeyId access_key_id;
  PrincipalKind kind = PrincipalKind::kRoot;
  // aws:userid: the account id for root, "AIDA…" for a user, "AROA…:session" for a role session.
  std::string user_id;
  // For a user (or a user's GetSessionToken session): the user name (aws:username).
  std::string user_name;
  // For a role session: the role's ARN ("arn:aws:iam::123456789012:role/path/name") and the
  // session's name; the session policy (JSON, may be empty) and session tags.
  std::string role_arn;
  std::string session_name;
  std::string session_policy;
  std::vector<std::pair<std::string, std::string>> session_tags;
  // A role session's managed session policies (AssumeRole's PolicyArns) and source identity
  // (sts:SourceIdentity); empty otherwise.
  std::vector<std::string> session_policy_arns;
  std::string source_identity;
  // Set when the caller is a container instance's agent (its own credential, issued when the
  // agent registered; docs/agent-protocol.md, "Identity"): that instance's ARN. Such a principal
  // may call only the actions a service lists in AgentMay, and each of those only for its own
  // instance and the tasks assigned to it. Empty for an account's own keys.
  std::string agent_of;
};

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
