#include "sts/api/session_credentials.h"

#include <utility>

namespace paddock::sts::api {

aws::Credential CredentialOf(const Session& session) {
  aws::Credential c;
  c.secret_access_key = session.secret_access_key;
  c.principal = session.principal;
  c.session_token_sha256 = session.session_token_sha256;
  c.expires = session.expires;
  return c;
}

StatusOr<std::optional<aws::Credential>> SessionCredentials::Lookup(const AccessKeyId& id) {
  ASSIGN_OR_RETURN(std::optional<Session> session, sessions_.Find(id));
  if (!session) return std::optional<aws::Credential>();
  return std::optional<aws::Credential>(CredentialOf(*session));
}

}  // namespace paddock::sts::api
