// Who is calling: the seam between request authentication (aws/) and the account store (iam/).
#pragma once

#include <optional>
#include <string>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::aws {

// The authenticated caller of a request.
struct Principal {
  AccountId account;
  std::string arn;  // "arn:aws:iam::123456789012:root" or a user's ARN
  AccessKeyId access_key_id;
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
};

class CredentialResolver {
 public:
  virtual ~CredentialResolver() = default;
  // The credential for `id`, nullopt when there is no such key, or an error when the lookup
  // itself failed.
  virtual StatusOr<std::optional<Credential>> Lookup(const AccessKeyId& id) = 0;
};

}  // namespace paddock::aws
