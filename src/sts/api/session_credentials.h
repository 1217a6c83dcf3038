// sts/api/session_credentials: the API front's view of STS sessions. The owner (sts::Sessions)
// keeps sessions; this adapter hands the SigV4 verifier a session's secret, principal, token hash
// and expiry, which it checks (a missing or wrong X-Amz-Security-Token, an expired session).
//
//   sts::api::SessionCredentials sessions_keys(sessions);
//   aws::ApiFront front(options, clock, sessions_keys);   // or under the node's resolver
#pragma once

#include <optional>

#include "aws/credentials.h"
#include "common/ids.h"
#include "common/status.h"
#include "sts/sessions.h"

namespace paddock::sts::api {

aws::Credential CredentialOf(const Session& session);

class SessionCredentials final : public aws::CredentialResolver {
 public:
  explicit SessionCredentials(Sessions& sessions) : sessions_(sessions) {}

  // The session `id`, expired or not (the verifier tells the two apart); nullopt when there is
  // no such session. One store read, no cache (Sessions::Find).
  StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId& id) override;

 private:
  Sessions& sessions_;
};

}  // namespace paddock::sts::api
