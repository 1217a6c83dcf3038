// cli/node_owner: whose node this is — the account `paddock up` bootstraps, kept in the store, and
// the account each in-process EC2 container instance ([[ec2_instance]]) belongs to.
//
// An in-process instance runs its tasks as root on this host, with host-level grants when its
// operator allowed them, so it must belong to the operator's account and nobody else's. Its owner
// is, in order (Ec2Owner):
//   1. its `account` key;
//   2. in emulator mode (accept_any_credentials), default_account: the account unsigned callers act as;
//   3. the bootstrap account recorded in this state directory by `paddock up`;
//   4. none: the instance does not register, and says it needs `account = "…"` (a plain
//      `paddock server` with real credentials on a state directory `paddock up` never bootstrapped).
// Never "the first account by id", which any tenant created by the admin might be.
//
//   ASSIGN_OR_RETURN(BootstrapIdentity me, EnsureBootstrapAccount(accounts, store, credentials_path));
//   ASSIGN_OR_RETURN(auto recorded, RecordedBootstrapAccount(store));
//   ASSIGN_OR_RETURN(AccountId owner, Ec2Owner(instance_config, server_config, recorded));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/config.h"
#include "common/ids.h"
#include "common/status.h"
#include "iam/accounts.h"
#include "store/store.h"

namespace paddock::cli {

// The account `paddock up` bootstrapped in this state directory, if it did (and it still exists).
StatusOr<std::optional<AccountId>> RecordedBootstrapAccount(store::Store& store, iam::Accounts& accounts);

struct BootstrapIdentity {
  AccountId account;
  std::string access_key_id;
  std::string secret_access_key;
  std::vector<std::string> notes;  // "created account …", "created access key …"
};

// `paddock up`'s account and key: the recorded bootstrap account (made, with the name "paddock",
// and recorded on the first start), and the key in `credentials_path` when it is still a valid key
// of that account, else a new key of it. A state directory bootstrapped before the account was
// recorded: the account of the key in `credentials_path`, else the one account named "paddock",
// else a new one. Recorded before it returns, so a restart finds the same account.
StatusOr<BootstrapIdentity> EnsureBootstrapAccount(iam::Accounts& accounts, store::Store& store,
                                                   const std::string& credentials_path);

// The owner of in-process instance `instance` (see the order above). `bootstrap` is
// RecordedBootstrapAccount's answer. FailedPrecondition, saying what to set, when there is none.
StatusOr<AccountId> Ec2Owner(const Ec2InstanceConfig& instance, const ServerConfig& server,
                             const std::optional<AccountId>& bootstrap);

}  // namespace paddock::cli
