#include "cli/node_owner.h"

#include <fmt/format.h>

#include <fstream>

#include "store/key.h"

namespace paddock::cli {

namespace {

// meta[kBootstrapKey] = the 12-digit id of the account `paddock up` bootstrapped.
std::string BootstrapKey() { return store::Key().Str("bootstrap-account").Done(); }

// The first aws_access_key_id / aws_secret_access_key of an INI credentials file (Paddock writes
// one profile there), or empty strings.
std::pair<std::string, std::string> ReadKey(const std::string& path) {
  std::string key_id, secret;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&](std::string_view name) -> std::optional<std::string> {
      if (line.rfind(name, 0) != 0) return std::nullopt;
      size_t eq = line.find('=');
      if (eq == std::string::npos) return std::nullopt;
      std::string v = line.substr(eq + 1);
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
      return v;
    };
    if (auto v = value("aws_access_key_id"); v && key_id.empty()) key_id = *v;
    if (auto v = value("aws_secret_access_key"); v && secret.empty()) secret = *v;
  }
  return {key_id, secret};
}

Status Record(store::Store& store, const AccountId& account) {
  return store.Write([&](store::WriteTxn& txn) { return txn.Put("meta", BootstrapKey(), account.str()); });
}

}  // namespace

StatusOr<std::optional<AccountId>> RecordedBootstrapAccount(store::Store& store, iam::Accounts& accounts) {
  std::optional<std::string> recorded;
  RETURN_IF_ERROR(store.Read([&](store::ReadTxn& txn) -> Status {
    ASSIGN_OR_RETURN(recorded, txn.Get("meta", BootstrapKey()));
    return OkStatus();
  }));
  if (!recorded || !IsAccountId(*recorded)) return std::optional<AccountId>();
  ASSIGN_OR_RETURN(auto account, accounts.GetAccount(AccountId(*recorded)));
  if (!account) return std::optional<AccountId>();  // deleted since (admin delete-account)
  return std::optional<AccountId>(account->id);
}

StatusOr<BootstrapIdentity> EnsureBootstrapAccount(iam::Accounts& accounts, store::Store& store,
                                                   const std::string& credentials_path) {
  BootstrapIdentity out;
  auto [key_id, secret] = ReadKey(credentials_path);
  std::optional<iam::AccessKey> key;  // the file's key, when it is still valid
  if (!key_id.empty()) {
    ASSIGN_OR_RETURN(auto found, accounts.FindActiveKey(AccessKeyId(key_id)));
    if (found && found->secret == secret) key = *found;
  }

  ASSIGN_OR_RETURN(std::optional<AccountId> account, RecordedBootstrapAccount(store, accounts));
  if (!account && key) account = key->account;  // bootstrapped before the record existed
  if (!account) {
    ASSIGN_OR_RETURN(auto all, accounts.ListAccounts());
    std::vector<AccountId> named;
    for (const auto& a : all)
      if (a.name == "paddock") named.push_back(a.id);
    if (named.size() == 1) account = named.front();  // ditto, with its key file lost
  }
  if (!account) {
    ASSIGN_OR_RETURN(iam::Account created, accounts.CreateAccount(std::nullopt, "paddock"));
    out.notes.push_back(fmt::format("created account {}", created.id.str()));
    account = created.id;
  }
  RETURN_IF_ERROR(Record(store, *account));
  out.account = *account;

  if (key && key->account == *account) {
    out.access_key_id = key_id;
    out.secret_access_key = secret;
  } else {
    ASSIGN_OR_RETURN(iam::AccessKey made, accounts.CreateAccessKey(*account));
    out.notes.push_back(fmt::format("created access key {}", made.id.str()));
    out.access_key_id = made.id.str();
    out.secret_access_key = made.secret;
  }
  return out;
}

StatusOr<AccountId> Ec2Owner(const Ec2InstanceConfig& instance, const ServerConfig& server,
                             const std::optional<AccountId>& bootstrap) {
  if (!instance.account.empty()) return AccountId(instance.account);
  if (server.accept_any_credentials) return AccountId(server.default_account);
  if (bootstrap) return *bootstrap;
  return FailedPrecondition(fmt::format(
      "it has no owner: set account = \"<12-digit account id>\" in its [[ec2_instance]] table (this state directory "
      "was never bootstrapped by `paddock up`, and the instance never registers in an account it was not given)"));
}

}  // namespace paddock::cli
