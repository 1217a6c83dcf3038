// `paddock`: the one binary. Subcommands: server, up, admin.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/config.h"
#include "cli/node.h"

namespace paddock::cli {
namespace {

int Fail(const Status& s) {
  fmt::print(stderr, "paddock: {}\n", s.message().empty() ? s.ToString() : s.message());
  return 1;
}

// Adds the server flags; each overrides the config file.
void AddServerFlags(CLI::App* cmd, ServerConfig& c, std::string& config_file) {
  cmd->add_option("--config", config_file, "TOML file with any of: listen, state_dir, accept_any_credentials, "
                                           "default_account, api_rate_limits, region (flags override it)");
  cmd->add_option("--listen", c.listen, "HOST:PORT to serve the AWS APIs on (default 127.0.0.1:4566; port 0 picks one)");
  cmd->add_option("--state-dir", c.state_dir, "Directory holding the store and generated credentials (default ./.paddock)");
  cmd->add_flag("--accept-any-credentials", c.accept_any_credentials,
                "Emulator mode: accept any well-formed SigV4 request without checking its signature; the account is "
                "the access key id when it is 12 digits, otherwise --default-account");
  cmd->add_option("--default-account", c.default_account,
                  "Account for --accept-any-credentials requests whose key is not a 12-digit id (default 000000000000)");
  cmd->add_option("--api-rate-limits", c.api_rate_limits,
                  "aws: apply AWS's documented per-account token buckets (ThrottlingException when exceeded); off: none "
                  "(default off)")
      ->check(CLI::IsMember({"aws", "off"}));
  cmd->add_option("--region", c.region, "Region written into the generated AWS profile (default us-east-1)");
}

// Applies the config file first, then re-parses flags so explicit flags win.
Status ResolveConfig(CLI::App* cmd, ServerConfig& c, const std::string& config_file) {
  if (config_file.empty()) return ValidateConfig(c);
  ServerConfig from_file;
  RETURN_IF_ERROR(LoadConfigFile(config_file, from_file));
  auto explicitly = [&](const char* flag) { return cmd->count(flag) > 0; };
  if (!explicitly("--listen")) c.listen = from_file.listen;
  if (!explicitly("--state-dir")) c.state_dir = from_file.state_dir;
  if (!explicitly("--accept-any-credentials")) c.accept_any_credentials = from_file.accept_any_credentials;
  if (!explicitly("--default-account")) c.default_account = from_file.default_account;
  if (!explicitly("--api-rate-limits")) c.api_rate_limits = from_file.api_rate_limits;
  if (!explicitly("--region")) c.region = from_file.region;
  return ValidateConfig(c);
}

// Blocks SIGINT and SIGTERM in every thread started after this, so only WaitForSignal sees them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int RunServer(const ServerConfig& config, bool up) {
  sigset_t signals = BlockStopSignals();
  auto node = Node::Open(config);
  if (!node.ok()) return Fail(node.status());
  auto port = (*node)->Start();
  if (!port.ok()) return Fail(port.status());
  auto host_port = SplitListen(config.listen);
  std::string host = host_port->first == "0.0.0.0" ? "127.0.0.1" : host_port->first;
  std::string endpoint = fmt::format("http://{}:{}", host, *port);
  if (up) {
    auto boot = Bootstrap(**node, config, endpoint, /*update_home=*/true);
    if (!boot.ok()) return Fail(boot.status());
    fmt::print("Paddock is running.\n");
    fmt::print("  endpoint     {}\n", endpoint);
    fmt::print("  state        {}\n", config.state_dir);
    fmt::print("  account      {}\n", boot->account);
    fmt::print("  credentials  {} (profile 'paddock'; config in {})\n", boot->credentials_path, boot->config_path);
    for (const auto& note : boot->notes) fmt::print("  note         {}\n", note);
    fmt::print("\nTry:\n  aws --profile paddock ecs list-clusters\n\nCtrl-C stops it.\n");
  } else {
    fmt::print("paddock server listening on {}\n", endpoint);
  }
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  fmt::print("paddock: {} received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  (*node)->Stop();
  return 0;
}

}  // namespace
}  // namespace paddock::cli

int main(int argc, char** argv) {
  using namespace paddock::cli;
  CLI::App app{"Paddock: a self-hosted, Amazon ECS-compatible container platform"};
  app.require_subcommand(1);

  ServerConfig server_config, up_config;
  std::string server_config_file, up_config_file;
  CLI::App* server = app.add_subcommand("server", "Run the API server (ECS and friends) on the embedded store");
  AddServerFlags(server, server_config, server_config_file);
  CLI::App* up = app.add_subcommand(
      "up", "Run every role in one process, creating an account, an access key and the AWS profile 'paddock' on first start");
  AddServerFlags(up, up_config, up_config_file);

  CLI::App* admin = app.add_subcommand("admin", "Operator commands on a state directory (safe while a server runs)");
  admin->require_subcommand(1);
  std::string admin_state_dir = "./.paddock";
  admin->add_option("--state-dir", admin_state_dir, "State directory (default ./.paddock)");
  std::string account_id, account_name;
  CLI::App* create_account = admin->add_subcommand("create-account", "Create an account (random 12-digit id unless --id)");
  create_account->add_option("--id", account_id, "12-digit account id");
  create_account->add_option("--name", account_name, "A label for the account");
  CLI::App* create_key = admin->add_subcommand("create-access-key", "Create an access key for an account");
  create_key->add_option("--account", account_id, "12-digit account id")->required();
  admin->add_subcommand("list-accounts", "List accounts");
  CLI::App* delete_account =
      admin->add_subcommand("delete-account", "Delete an account and every resource it owns, in every region");
  delete_account->add_option("--account", account_id, "12-digit account id")->required();

  CLI11_PARSE(app, argc, argv);

  if (server->parsed()) {
    if (auto s = ResolveConfig(server, server_config, server_config_file); !s.ok()) return Fail(s);
    return RunServer(server_config, /*up=*/false);
  }
  if (up->parsed()) {
    if (auto s = ResolveConfig(up, up_config, up_config_file); !s.ok()) return Fail(s);
    return RunServer(up_config, /*up=*/true);
  }

  ServerConfig admin_config;
  admin_config.state_dir = admin_state_dir;
  auto node = Node::Open(admin_config);
  if (!node.ok()) return Fail(node.status());
  paddock::iam::Accounts& accounts = (*node)->accounts();
  if (create_account->parsed()) {
    std::optional<paddock::AccountId> id;
    if (create_account->count("--id") > 0) id = paddock::AccountId(account_id);
    auto a = accounts.CreateAccount(id, account_name);
    if (!a.ok()) return Fail(a.status());
    fmt::print("{{\"account\": \"{}\", \"name\": \"{}\"}}\n", a->id.str(), a->name);
  } else if (create_key->parsed()) {
    auto k = accounts.CreateAccessKey(paddock::AccountId(account_id));
    if (!k.ok()) return Fail(k.status());
    fmt::print("{{\"account\": \"{}\", \"accessKeyId\": \"{}\", \"secretAccessKey\": \"{}\"}}\n", k->account.str(),
               k->id.str(), k->secret);
  } else if (admin->got_subcommand("list-accounts")) {
    auto all = accounts.ListAccounts();
    if (!all.ok()) return Fail(all.status());
    for (const auto& a : *all) fmt::print("{{\"account\": \"{}\", \"name\": \"{}\"}}\n", a.id.str(), a.name);
  } else if (delete_account->parsed()) {
    auto s = accounts.DeleteAccount(paddock::AccountId(account_id), (*node)->reapers());
    if (!s.ok()) return Fail(s);
    fmt::print("{{\"deleted\": \"{}\"}}\n", account_id);
  }
  (*node)->Stop();
  return 0;
}
