// iam/api/account_credentials: the API front's view of IAM's access keys. The owner
// (iam::Accounts) knows keys, not requests; this adapter turns an active key into the
// aws::Credential the SigV4 verifier checks and the authorizer reads.
//
//   iam::api::AccountCredentials keys(accounts);
//   aws::ApiFront front(options, clock, keys);   // or under a resolver that also knows sessions
#pragma once

#include <optional>

#include "aws/credentials.h"
#include "common/ids.h"
#include "common/status.h"
#include "iam/accounts.h"

namespace paddock::iam::api {

// The principal an access key authenticates as: the account's root (kRoot, aws:userid the
// account id) for a key without a user, else that IAM user (kUser, with its user id and name).
aws::Credential CredentialOf(const AccessKey& key);

class AccountCredentials final : public aws::CredentialResolver {
 public:
  explicit AccountCredentials(Accounts& accounts) : accounts_(accounts) {}

  // The credential of the active key `id`; nullopt for a missing or inactive key. Cached as
  // Accounts::FindActiveKey caches (a found key for at most Accounts::kCacheTtl).
  StatusOr<std::optional<aws::Credential>> Lookup(const AccessKeyId& id) override;

 private:
  Accounts& accounts_;
};

}  // namespace paddock::iam::api
