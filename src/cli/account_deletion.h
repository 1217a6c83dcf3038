// `paddock admin delete-account`: nothing of a deleted account keeps running (README, "Accounts";
// docs/security.md).
//
// `paddock admin` runs as its own process beside the server on the same state directory, so it
// cannot stop containers itself: the agents that run them do (the server's in-process agents and
// `paddock agent`s). It drives the owners and waits for the agents' word:
//
//   1. the account is marked deleting and its keys go (iam::Accounts::BeginDeletion): nothing new
//      can be started as it; then the key caches' lifetime is waited out;
//   2. its services are deleted (force), so no scheduler replaces what is stopped;
//   3. every task is asked to stop (ecs::task::Tasks::StopAccount), again each poll, until every
//      task an agent has started is confirmed STOPPED by that agent (the agent reports STOPPED once
//      its containers, network and files are gone; only that releases the address);
//   4. the records go (every reaper; tasks no agent ever started release their addresses then),
//      and the account last.
//
// Bounded: step 3 gives up after `timeout`, or at once when no server runs on the state directory
// (no live scheduler lease: no agent is there to stop anything). Then, without `force`, it fails
// naming the tasks still running and leaves the account deleting (keys gone, records kept), so
// running it again later finishes the job; with `force` the records go anyway, and each agent
// removes the account's containers when it next reconciles (the tasks are no longer assigned to
// it: agent/sweep.h).
//
//   AccountDeletionOptions o{.timeout = std::chrono::seconds(120)};
//   o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
//   RETURN_IF_ERROR(DeleteAccount(node, AccountId("123456789012"), o));
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "cli/node.h"
#include "common/ids.h"
#include "common/status.h"

namespace paddock::cli {

struct AccountDeletionOptions {
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  bool force = false;
  std::chrono::milliseconds poll = std::chrono::milliseconds(250);
  // How long the keys of the account may still be served from another process's cache.
  std::chrono::milliseconds settle = std::chrono::duration_cast<std::chrono::milliseconds>(iam::Accounts::kCacheTtl);
  // Progress lines for the operator (what is still running); may be empty.
  std::function<void(const std::string&)> progress;
};

// REQUIRES: `node` was opened (Node::Open) and not started: the caller is `paddock admin`.
// NotFound for an unknown account; FailedPrecondition (no server, without force) or Unavailable
// (timeout, without force), with the tasks still running in the message.
Status DeleteAccount(Node& node, const AccountId& account, const AccountDeletionOptions& options);

}  // namespace paddock::cli
