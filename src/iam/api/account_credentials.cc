#include "iam/api/account_credentials.h"

#include <utility>

namespace paddock::iam::api {

aws::Credential CredentialOf(const AccessKey& key) {
  aws::Credential c;
  c.secret_access_key = key.secret;
  c.principal.account = key.account;
  c.principal.arn = key.principal_arn;
  c.principal.access_key_id = key.id;
  if (key.user_name.empty()) {
    c.principal.kind = aws::PrincipalKind::kRoot;
    c.principal.user_id = key.account.str();  // root's aws:userid is the account id
  } else {
    c.principal.kind = aws::PrincipalKind::kUser;
    c.principal.user_id = key.user_id;
    c.principal.user_name = key.user_name;
  }
  return c;
}

StatusOr<std::optional<aws::Credential>> AccountCredentials::Lookup(const AccessKeyId& id) {
  ASSIGN_OR_RETURN(std::optional<AccessKey> key, accounts_.FindActiveKey(id));
  if (!key) return std::optional<aws::Credential>();
  return std::optional<aws::Credential>(CredentialOf(*key));
}

}  // namespace paddock::iam::api
