// Accounts and access keys: who may call Paddock, and which account each key acts for.
//
//   Accounts accounts(store, clock);
//   ASSIGN_OR_RETURN(Account a, accounts.CreateAccount(std::nullopt, "dev"));
//   ASSIGN_OR_RETURN(AccessKey k, accounts.CreateAccessKey(a.id));
//
// The API front authenticates requests against the keys stored here through
// iam::api::AccountCredentials (iam/api/account_credentials.h): this owner knows nothing of aws/.
// Other processes (`paddock admin`) may change keys while a server runs: FindActiveKey caches a
// found key for at most one second and never caches a miss.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "store/store.h"

namespace paddock::iam {

struct Account {
  AccountId id;
  std::string name;
  TimePoint created_at;
  // BeginDeletion ran: the account has no keys, gets none, and its resources are being stopped.
  bool deleting = false;
};

enum class AccessKeyStatus { kActive, kInactive };

struct AccessKey {
  AccessKeyId id;
  std::string secret;
  AccountId account;
  std::string principal_arn;
  TimePoint created_at;
  // An IAM user's key: the user's name and id ("AIDA…"); both empty for the account root's keys.
  std::string user_name;
  std::string user_id;
  // An inactive key authenticates nothing (FindActiveKey does not find it) until made active again.
  AccessKeyStatus status = AccessKeyStatus::kActive;
};

// The IAM user a new key is for (iam::Directory's record, read inside the key's transaction).
struct KeyOwner {
  std::string user_name;
  std::string user_id;
  std::string arn;
};

// Removes every record of one account that a module owns. Each owner of account-scoped records
// registers one, so deleting an account reaps everything (clusters, task definitions, tags, ...).
class AccountReaper {
 public:
  virtual ~AccountReaper() = default;
  virtual std::string_view Name() const = 0;
  virtual Status ReapAccount(const AccountId& account) = 0;
};

class Accounts final {
 public:
  Accounts(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {}

  // Creates an account; `id` nullopt picks a random unused 12-digit id.
  StatusOr<Account> CreateAccount(std::optional<AccountId> id, std::string name);
  StatusOr<std::optional<Account>> GetAccount(const AccountId& id);
  StatusOr<std::vector<Account>> ListAccounts();
  // Refused (FailedPrecondition) for an account being deleted.
  StatusOr<AccessKey> CreateAccessKey(const AccountId& account);
  StatusOr<std::vector<AccessKey>> ListAccessKeys(const AccountId& account);

  // IAM users' keys (the IAM API's CreateAccessKey and friends). `user_name` empty means the
  // root's keys; user names compare ignoring case, as IAM's do.
  // `find_user` runs inside the key's transaction and fails (NoSuchEntity) when the user does not
  // exist, so a key never outlives a concurrently deleted user. LimitExceeded ("Cannot exceed
  // quota for AccessKeysPerUser: 2") at kKeysPerUser keys.
  using UserFinder = std::function<StatusOr<KeyOwner>(store::ReadTxn&)>;
  StatusOr<AccessKey> CreateUserAccessKey(const AccountId& account, const UserFinder& find_user);
  // The keys of one user (or, `user_name` empty, of the root), oldest first.
  StatusOr<std::vector<AccessKey>> ListUserAccessKeys(const AccountId& account, std::string_view user_name);
  // NoSuchEntity ("The Access Key with id X cannot be found.") unless the key is that user's.
  // Takes effect at once in this process; other processes within kCacheTtl.
  Status SetAccessKeyStatus(const AccountId& account, std::string_view user_name, const AccessKeyId& id,
                            AccessKeyStatus status);
  Status DeleteAccessKey(const AccountId& account, std::string_view user_name, const AccessKeyId& id);
  // Inside another owner's transaction (iam::Directory::DeleteUser): whether the user has keys.
  static StatusOr<bool> UserHasKeys(store::ReadTxn& txn, const AccountId& account, std::string_view user_name);
  static constexpr size_t kKeysPerUser = 2;
  // Deleting an account, in two steps (`paddock admin delete-account` stops what the account
  // runs between them: cli/account_deletion.h).
  // 1. Marks the account deleting and removes all its keys, in one transaction: from then on no
  //    request authenticates as the account (other processes drop cached keys within kCacheTtl).
  //    Again on an account already deleting: OK. NotFound for no such account.
  Status BeginDeletion(const AccountId& id);
  // How many BeginDeletion calls this process has committed. A cache of anything that holds only
  // while an account is not being deleted (the node's cache of STS sessions) is stale once this
  // changes; another process's deletions reach it within its own lifetime (kCacheTtl), as keys do.
  uint64_t DeletionsBegun() const { return deletions_begun_.load(std::memory_order_acquire); }
  // 2. Runs every reaper, then removes the account record. If a reaper fails, the account stays
  //    (deleting), and running both steps again finishes the job.
  Status FinishDeletion(const AccountId& id, const std::vector<AccountReaper*>& reapers);
  // Both, with `settle` between them (the caches' lifetime, so the reapers see everything a
  // request with a cached key could still have written). For an account with nothing running.
  Status DeleteAccount(const AccountId& id, const std::vector<AccountReaper*>& reapers,
                       Duration settle = kCacheTtl);

  // How long a found key may be served from the cache.
  static constexpr Duration kCacheTtl = std::chrono::seconds(1);

  // The active key `id`: nullopt when there is no such key or it is inactive, an error when the
  // read itself failed. Served from a cache for at most kCacheTtl; a miss is never cached.
  StatusOr<std::optional<AccessKey>> FindActiveKey(const AccessKeyId& id);

 private:
  store::Store& store_;
  const Clock& clock_;
  struct Cached {
    AccessKey key;
    TimePoint fetched;
  };
  std::mutex mu_;
  std::atomic<uint64_t> deletions_begun_{0};
  std::map<std::string, Cached> cache_;  // GUARDED_BY(mu_)
};

// The ARN a root principal of `account` is reported as ("arn:aws:iam::123456789012:root").
std::string RootArn(const AccountId& account);

}  // namespace paddock::iam
