#include "iam/accounts.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <thread>
#include <fmt/format.h>

#include "common/encoding.h"
#include "iam/errors.h"
#include "store/key.h"

namespace paddock::iam {
namespace json = boost::json;
using store::Key;

namespace {

constexpr std::string_view kAccounts = "accounts";
constexpr std::string_view kAccessKeys = "access_keys";
constexpr std::string_view kAccountKeys = "account_keys";
constexpr std::string_view kUserKeys = "user_access_keys";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string EncodeAccount(const Account& a) {
  json::object o{{"id", a.id.str()}, {"name", a.name}, {"createdAt", EpochMillis(a.created_at)}};
  if (a.deleting) o["deleting"] = true;
  return json::serialize(o);
}

StatusOr<Account> DecodeAccount(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("corrupt account record");
  const auto& o = v.as_object();
  Account a;
  a.id = AccountId(std::string(o.at("id").as_string()));
  a.name = std::string(o.at("name").as_string());
  a.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
  const json::value* deleting = o.if_contains("deleting");
  a.deleting = deleting != nullptr && deleting->is_bool() && deleting->get_bool();
  return a;
}

std::string EncodeKey(const AccessKey& k) {
  json::object o{{"id", k.id.str()},
                 {"secret", k.secret},
                 {"account", k.account.str()},
                 {"principalArn", k.principal_arn},
                 {"createdAt", EpochMillis(k.created_at)}};
  if (!k.user_name.empty()) {
    o["userName"] = k.user_name;
    o["userId"] = k.user_id;
  }
  if (k.status == AccessKeyStatus::kInactive) o["status"] = "Inactive";
  return json::serialize(o);
}

StatusOr<AccessKey> DecodeKey(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return DataLoss("corrupt access key record");
  const auto& o = v.as_object();
  AccessKey k;
  k.id = AccessKeyId(std::string(o.at("id").as_string()));
  k.secret = std::string(o.at("secret").as_string());
  k.account = AccountId(std::string(o.at("account").as_string()));
  k.principal_arn = std::string(o.at("principalArn").as_string());
  k.created_at = FromEpochMillis(o.at("createdAt").to_number<int64_t>());
  if (const json::value* u = o.if_contains("userName"); u && u->is_string()) k.user_name = std::string(u->get_string());
  if (const json::value* u = o.if_contains("userId"); u && u->is_string()) k.user_id = std::string(u->get_string());
  if (const json::value* st = o.if_contains("status"); st && st->is_string() && st->get_string() == "Inactive")
    k.status = AccessKeyStatus::kInactive;
  return k;
}

}  // namespace

namespace {

Status NoSuchKey(const AccessKeyId& id) {
  return NotFound(fmt::format("The Access Key with id {} cannot be found.", id.str()), Error::kNoSuchEntity);
}

std::string NewKeyId() { return "AKIA" + RandomString(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"); }
std::string NewSecret() {
  return RandomString(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
}

// The key `id` when it belongs to `user_name` (empty: the root) of `account`.
StatusOr<AccessKey> ReadOwnKey(store::ReadTxn& txn, const AccountId& account, std::string_view user_name,
                               const AccessKeyId& id) {
  ASSIGN_OR_RETURN(auto v, txn.Get(kAccessKeys, Key().Str(id.str()).Done()));
  if (!v) return NoSuchKey(id);
  ASSIGN_OR_RETURN(AccessKey k, DecodeKey(*v));
  if (k.account != account || Lower(k.user_name) != Lower(user_name)) return NoSuchKey(id);
  return k;
}

// Appends the access keys that `rows` of an index (kUserKeys or kAccountKeys) name: each row's key
// is `components` strings, the key id last. A key whose record is gone is skipped.
Status AppendIndexedKeys(store::ReadTxn& txn, const std::vector<store::Row>& rows, int components,
                         std::vector<AccessKey>& out) {
  for (const auto& row : rows) {
    store::KeyReader r(row.key);
    std::string id;
    for (int i = 0; i < components; ++i) {
      ASSIGN_OR_RETURN(id, r.Str());
    }
    ASSIGN_OR_RETURN(auto v, txn.Get(kAccessKeys, Key().Str(id).Done()));
    if (!v) continue;
    ASSIGN_OR_RETURN(AccessKey k, DecodeKey(*v));
    out.push_back(std::move(k));
  }
  return OkStatus();
}

// A key may be made only for an account that exists and is not being deleted (in `txn`, so a
// deletion that commits first wins).
Status CheckLiveAccount(store::ReadTxn& txn, const AccountId& account) {
  ASSIGN_OR_RETURN(auto acct, txn.Get(kAccounts, Key().Str(account.str()).Done()));
  if (!acct) return NotFound(fmt::format("Account {} does not exist.", account.str()));
  ASSIGN_OR_RETURN(Account a, DecodeAccount(*acct));
  if (a.deleting) return FailedPrecondition(fmt::format("Account {} is being deleted.", account.str()));
  return OkStatus();
}

}  // namespace

StatusOr<AccessKey> Accounts::CreateUserAccessKey(const AccountId& account, const UserFinder& find_user) {
  AccessKey key;
  key.account = account;
  key.created_at = clock_.Now();
  key.secret = NewSecret();
  Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckLiveAccount(txn, account));
    ASSIGN_OR_RETURN(KeyOwner owner, find_user(txn));
    key.user_name = owner.user_name;
    key.user_id = owner.user_id;
    key.principal_arn = owner.arn;
    const std::string prefix = Key().Str(account.str()).Str(Lower(owner.user_name)).Done();
    ASSIGN_OR_RETURN(auto existing, txn.Scan(kUserKeys, store::PrefixRange(prefix), kKeysPerUser + 1));
    if (existing.size() >= kKeysPerUser)
      return ResourceExhausted(fmt::format("Cannot exceed quota for AccessKeysPerUser: {}", kKeysPerUser),
                               Error::kLimitExceeded);
    key.id = AccessKeyId(NewKeyId());
    RETURN_IF_ERROR(txn.Put(kAccessKeys, Key().Str(key.id.str()).Done(), EncodeKey(key)));
    RETURN_IF_ERROR(txn.Put(kUserKeys, Key().Str(account.str()).Str(Lower(owner.user_name)).Str(key.id.str()).Done(), ""));
    return txn.Put(kAccountKeys, Key().Str(account.str()).Str(key.id.str()).Done(), "");
  });
  if (!s.ok()) return s;
  return key;
}

StatusOr<std::vector<AccessKey>> Accounts::ListUserAccessKeys(const AccountId& account, std::string_view user_name) {
  if (user_name.empty()) {
    ASSIGN_OR_RETURN(std::vector<AccessKey> all, ListAccessKeys(account));
    std::erase_if(all, [](const AccessKey& k) { return !k.user_name.empty(); });
    std::sort(all.begin(), all.end(), [](const AccessKey& a, const AccessKey& b) { return a.created_at < b.created_at; });
    return all;
  }
  std::vector<AccessKey> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    const std::string prefix = Key().Str(account.str()).Str(Lower(user_name)).Done();
    ASSIGN_OR_RETURN(auto rows, txn.Scan(kUserKeys, store::PrefixRange(prefix), 100));
    return AppendIndexedKeys(txn, rows, 3, out);  // (account, user, id)
  }));
  std::sort(out.begin(), out.end(), [](const AccessKey& a, const AccessKey& b) { return a.created_at < b.created_at; });
  return out;
}

Status Accounts::SetAccessKeyStatus(const AccountId& account, std::string_view user_name, const AccessKeyId& id,
                                    AccessKeyStatus status) {
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(AccessKey k, ReadOwnKey(txn, account, user_name, id));
    k.status = status;
    return txn.Put(kAccessKeys, Key().Str(id.str()).Done(), EncodeKey(k));
  }));
  std::lock_guard lock(mu_);
  cache_.erase(id.str());
  return OkStatus();
}

Status Accounts::DeleteAccessKey(const AccountId& account, std::string_view user_name, const AccessKeyId& id) {
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    ASSIGN_OR_RETURN(AccessKey k, ReadOwnKey(txn, account, user_name, id));
    if (!k.user_name.empty())
      RETURN_IF_ERROR(txn.Delete(kUserKeys, Key().Str(account.str()).Str(Lower(k.user_name)).Str(id.str()).Done()));
    RETURN_IF_ERROR(txn.Delete(kAccountKeys, Key().Str(account.str()).Str(id.str()).Done()));
    return txn.Delete(kAccessKeys, Key().Str(id.str()).Done());
  }));
  std::lock_guard lock(mu_);
  cache_.erase(id.str());
  return OkStatus();
}

StatusOr<bool> Accounts::UserHasKeys(store::ReadTxn& txn, const AccountId& account, std::string_view user_name) {
  ASSIGN_OR_RETURN(auto rows, txn.Scan(kUserKeys, store::PrefixRange(Key().Str(account.str()).Str(Lower(user_name)).Done()), 1));
  return !rows.empty();
}

std::string RootArn(const AccountId& account) { return fmt::format("arn:aws:iam::{}:root", account.str()); }

StatusOr<Account> Accounts::CreateAccount(std::optional<AccountId> id, std::string name) {
  if (id && !IsAccountId(id->str()))
    return InvalidArgument(fmt::format("Invalid account id '{}': an account id is 12 digits.", id->str()));
  Account account;
  account.name = std::move(name);
  account.created_at = clock_.Now();
  Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
    for (int attempt = 0; attempt < 16; ++attempt) {
      account.id = id ? *id : AccountId(RandomString(1, "123456789") + RandomString(11, "0123456789"));
      ASSIGN_OR_RETURN(auto existing, txn.Get(kAccounts, Key().Str(account.id.str()).Done()));
      if (!existing) return txn.Put(kAccounts, Key().Str(account.id.str()).Done(), EncodeAccount(account));
      if (id) return AlreadyExists(fmt::format("Account {} already exists.", id->str()));
    }
    return Internal("could not pick an unused account id");
  });
  if (!s.ok()) return s;
  return account;
}

StatusOr<std::optional<Account>> Accounts::GetAccount(const AccountId& id) {
  std::optional<Account> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto v, txn.Get(kAccounts, Key().Str(id.str()).Done()));
    if (v) {
      ASSIGN_OR_RETURN(out, DecodeAccount(*v));
    }
    return OkStatus();
  }));
  return out;
}

StatusOr<std::vector<Account>> Accounts::ListAccounts() {
  std::vector<Account> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    std::string begin;
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kAccounts, {begin, ""}, 500));
      for (auto& row : rows) {
        ASSIGN_OR_RETURN(Account a, DecodeAccount(row.value));
        out.push_back(std::move(a));
      }
      if (rows.size() < 500) return OkStatus();
      begin = store::KeySuccessor(rows.back().key);
    }
  }));
  return out;
}

StatusOr<AccessKey> Accounts::CreateAccessKey(const AccountId& account) {
  AccessKey key;
  key.account = account;
  key.principal_arn = RootArn(account);
  key.created_at = clock_.Now();
  key.secret = NewSecret();
  Status s = store_.Write([&](store::WriteTxn& txn) -> Status {
    RETURN_IF_ERROR(CheckLiveAccount(txn, account));
    key.id = AccessKeyId(NewKeyId());
    RETURN_IF_ERROR(txn.Put(kAccessKeys, Key().Str(key.id.str()).Done(), EncodeKey(key)));
    return txn.Put(kAccountKeys, Key().Str(account.str()).Str(key.id.str()).Done(), "");
  });
  if (!s.ok()) return s;
  return key;
}

StatusOr<std::vector<AccessKey>> Accounts::ListAccessKeys(const AccountId& account) {
  std::vector<AccessKey> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    store::Range range = store::PrefixRange(Key().Str(account.str()).Done());
    std::vector<store::Row> rows;
    while (true) {
      ASSIGN_OR_RETURN(auto page, txn.Scan(kAccountKeys, range, 1000));
      if (page.empty()) break;
      range.begin = store::KeySuccessor(page.back().key);
      for (auto& row : page) rows.push_back(std::move(row));
    }
    return AppendIndexedKeys(txn, rows, 2, out);  // (account, id)
  }));
  return out;
}

Status Accounts::DeleteAccount(const AccountId& id, const std::vector<AccountReaper*>& reapers, Duration settle) {
  RETURN_IF_ERROR(BeginDeletion(id));
  // A server in another process may still accept a request with a key it cached just before the
  // delete; waiting out the cache's lifetime first means the reapers see everything such a
  // request could have written.
  if (settle > Duration::zero()) std::this_thread::sleep_for(settle);
  return FinishDeletion(id, reapers);
}

Status Accounts::BeginDeletion(const AccountId& id) {
  std::vector<std::string> key_ids;
  RETURN_IF_ERROR(store_.Write([&](store::WriteTxn& txn) -> Status {
    key_ids.clear();
    ASSIGN_OR_RETURN(auto account, txn.Get(kAccounts, Key().Str(id.str()).Done()));
    if (!account) return NotFound(fmt::format("Account {} does not exist.", id.str()));
    ASSIGN_OR_RETURN(Account a, DecodeAccount(*account));
    const store::Range range = store::PrefixRange(Key().Str(id.str()).Done());
    while (true) {
      ASSIGN_OR_RETURN(auto rows, txn.Scan(kAccountKeys, range, 1000));
      if (rows.empty()) break;
      for (const auto& row : rows) {
        store::KeyReader r(row.key);
        ASSIGN_OR_RETURN(std::string acct, r.Str());
        ASSIGN_OR_RETURN(std::string key_id, r.Str());
        ASSIGN_OR_RETURN(auto record, txn.Get(kAccessKeys, Key().Str(key_id).Done()));
        if (record) {
          ASSIGN_OR_RETURN(AccessKey k, DecodeKey(*record));
          if (!k.user_name.empty())
            RETURN_IF_ERROR(txn.Delete(kUserKeys, Key().Str(id.str()).Str(Lower(k.user_name)).Str(key_id).Done()));
        }
        RETURN_IF_ERROR(txn.Delete(kAccessKeys, Key().Str(key_id).Done()));
        RETURN_IF_ERROR(txn.Delete(kAccountKeys, row.key));
        key_ids.push_back(std::move(key_id));
      }
    }
    a.deleting = true;
    return txn.Put(kAccounts, Key().Str(id.str()).Done(), EncodeAccount(a));
  }));
  deletions_begun_.fetch_add(1, std::memory_order_release);
  std::lock_guard lock(mu_);
  for (const auto& k : key_ids) cache_.erase(k);
  return OkStatus();
}

Status Accounts::FinishDeletion(const AccountId& id, const std::vector<AccountReaper*>& reapers) {
  for (AccountReaper* reaper : reapers) {
    Status s = reaper->ReapAccount(id);
    if (!s.ok()) return Status(s.code(), fmt::format("reaping {}: {}", reaper->Name(), s.message()));
  }
  return store_.Write([&](store::WriteTxn& txn) { return txn.Delete(kAccounts, Key().Str(id.str()).Done()); });
}

StatusOr<std::optional<AccessKey>> Accounts::FindActiveKey(const AccessKeyId& id) {
  TimePoint now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(id.str());
    if (it != cache_.end() && now - it->second.fetched < kCacheTtl) return std::optional(it->second.key);
  }
  std::optional<AccessKey> out;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(auto v, txn.Get(kAccessKeys, Key().Str(id.str()).Done()));
    if (!v) return OkStatus();
    ASSIGN_OR_RETURN(AccessKey k, DecodeKey(*v));
    if (k.status == AccessKeyStatus::kInactive) return OkStatus();
    out = std::move(k);
    return OkStatus();
  }));
  std::lock_guard lock(mu_);
  if (out) {
    cache_[id.str()] = Cached{*out, now};
  } else {
    cache_.erase(id.str());
  }
  return out;
}

}  // namespace paddock::iam
