// Who a request's caller is, in IAM's terms: owned by no service. aws/ authenticates requests
// as one (aws/credentials.h re-exports it as aws::Principal); sts/ mints sessions that carry one;
// iam/api authorizes one. Header only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/ids.h"

namespace paddock {

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

}  // namespace paddock
