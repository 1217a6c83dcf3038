#include "cli/account_deletion.h"

#include <fmt/format.h>

#include <thread>

#include <boost/json.hpp>

#include "cli/stop_tasks.h"
#include "ecs/service/services.h"
#include "ecs/task/tasks.h"
#include "sched/lease.h"
#include "store/store.h"

namespace paddock::cli {
namespace {

constexpr std::string_view kReason = "Task stopped: its account was deleted";

// Deletes (force) every ACTIVE service of the account, in every region and cluster: a DRAINING
// service launches nothing, so what StopAccount stops stays stopped.
Status DeleteServices(Node& node, const AccountId& account, TimePoint now) {
  std::vector<ecs::service::ServiceKey> keys;
  std::string after;
  do {
    ecs::service::Services::KeyPage page;
    RETURN_IF_ERROR(node.store().Read([&](store::ReadTxn& txn) -> Status {
      ASSIGN_OR_RETURN(page, node.services().ListAllKeys(txn, 500, after));
      return OkStatus();
    }));
    for (auto& k : page.keys)
      if (k.scope.account == account) keys.push_back(std::move(k));
    after = page.next;
  } while (!after.empty());
  for (const auto& k : keys) {
    const std::string caller = fmt::format("arn:aws:iam::{}:root", account.str());
    boost::json::object in{{"cluster", k.cluster}, {"service", k.name}, {"force", true}};
    auto deleted = node.services().Delete(k.scope, caller, in, now);
    // Gone meanwhile (its cluster or itself): nothing of it to stop.
    if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) return deleted.status();
  }
  return OkStatus();
}

}  // namespace

Status DeleteAccount(Node& node, const AccountId& account, const AccountDeletionOptions& options) {
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  RETURN_IF_ERROR(node.accounts().BeginDeletion(account));
  say(fmt::format("account {}: its keys are deleted; stopping its services and tasks", account.str()));
  std::this_thread::sleep_for(options.settle);

  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  auto next_report = std::chrono::steady_clock::now();
  bool forced = false;
  for (;;) {
    const TimePoint now = SystemClock::Get().Now();
    RETURN_IF_ERROR(DeleteServices(node, account, now));
    ASSIGN_OR_RETURN(std::vector<ecs::task::Tasks::Unconfirmed> left, node.tasks().StopAccount(account, kReason, now));
    // A task no agent has started has no container: the reap releases it (its agent may no longer
    // start it). Every other one waits for its agent's STOPPED.
    std::erase_if(left, [](const auto& t) { return t.last_status == "PROVISIONING"; });
    if (left.empty()) {
      Status reaped = node.accounts().FinishDeletion(account, node.reapers());
      // A task moved on from PROVISIONING meanwhile: its agent got to it first; wait for it too.
      if (reaped.code() != StatusCode::kFailedPrecondition) return reaped;
      say(fmt::format("account {}: {}", account.str(), reaped.message()));
    } else {
      ASSIGN_OR_RETURN(auto server, sched::Lease::LiveHolder(node.store(), now));
      std::string why;
      if (!server) {
        why = fmt::format("no Paddock server is running on this state directory, so no agent can stop its {} "
                          "running task(s): {}. Start the server and run delete-account again",
                          left.size(), DescribeTasks(left));
      } else if (std::chrono::steady_clock::now() >= deadline) {
        why = fmt::format("{} task(s) were not confirmed stopped by their agents within {} s: {}. Run "
                          "delete-account again to keep waiting",
                          left.size(), std::chrono::duration_cast<std::chrono::seconds>(options.timeout).count(),
                          DescribeTasks(left));
      }
      if (!why.empty()) {
        if (!options.force) {
          const std::string text =
              fmt::format("account {} is being deleted (its keys are gone) but {}, or pass --force to remove its "
                          "records anyway (each agent then removes the account's containers when it next "
                          "reconciles).",
                          account.str(), why);
          return server ? Unavailable(text) : FailedPrecondition(text);
        }
        forced = true;
        say(fmt::format("account {}: --force: {}; removing its records anyway", account.str(), why));
        break;
      }
      if (std::chrono::steady_clock::now() >= next_report) {
        say(fmt::format("account {}: waiting for {} task(s) to stop: {}", account.str(), left.size(), DescribeTasks(left)));
        next_report = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      }
    }
    std::this_thread::sleep_for(options.poll);
  }
  if (forced) RETURN_IF_ERROR(node.tasks().ReapAccount(account, ecs::task::Tasks::ReapMode::kForce));
  return node.accounts().FinishDeletion(account, node.reapers());
}

}  // namespace paddock::cli
