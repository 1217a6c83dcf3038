// console/change_feed: which accounts' resources just changed, for the console's live views.
//
// The node publishes a kind of change for an account whenever something of that kind commits:
// a successful write through the API (the front's call_succeeded hook), a task launched, stopped or reported
// by its agent, a scheduler pass that wrote a service, a deploy controller's tick. A console
// watching that account learns only *that* something of a kind changed — never what — and reads
// the current state again through the API, where IAM decides what it may see. So a watch reveals
// nothing another API call would not, and nothing crosses accounts.
//
//   ChangeFeed feed;
//   feed.Publish(account, ChangeKind::kEcs);                   // from any thread; cheap
//   ASSIGN_OR_RETURN(std::unique_ptr<ChangeFeed::Watch> w, feed.Open(account));
//   ChangeFeed::Change c = w->Next(deadline);                  // blocks until a change or the deadline
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/status.h"

namespace paddock::console {

// The kinds the console tells apart: roughly one per service whose views refresh together.
enum class ChangeKind : uint8_t { kEcs, kLogs, kSsm, kServiceDiscovery, kSecretsManager, kDeploy };
inline constexpr size_t kChangeKinds = 6;

// "ecs", "logs", "ssm", "servicediscovery", "secretsmanager", "deploy".
std::string_view ChangeKindName(ChangeKind kind);
// The kind of a service's writes, by its SigV4 signing name; nullopt for a service whose changes
// no view shows (IAM, STS, EC2's reads).
std::optional<ChangeKind> ChangeKindOfService(std::string_view signing_name);
// Whether an API action only reads (Describe*, List*, Get*, Filter*, Discover*, StartLiveTail, …):
// such a call publishes nothing.
bool ActionOnlyReads(std::string_view action);

class ChangeFeed {
 public:
  // Watches open at once per account (AWS caps StartLiveTail sessions at 15 per account; a console
  // tab holds one watch).
  static constexpr size_t kMaxWatchesPerAccount = 15;

  struct Change {
    uint64_t sequence = 0;  // the account's changes published so far (by this feed)
    uint32_t kinds = 0;     // bit (1 << ChangeKind) for each kind changed since the last Next
    bool closed = false;    // the feed is shutting down: the watch should end
  };

  class Watch {
   public:
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    // What changed since the previous Next (or since Open), waiting until something did, the
    // deadline passed (kinds 0) or the feed shut down (closed). Once something changed it waits
    // `coalesce` longer (not past the deadline), so a burst of commits is one answer.
    Change Next(std::chrono::steady_clock::time_point deadline,
                std::chrono::milliseconds coalesce = std::chrono::milliseconds(0));

   private:
    friend class ChangeFeed;
    struct State;
    Watch(ChangeFeed& feed, std::list<State>::iterator state) : feed_(feed), state_(state) {}
    ChangeFeed& feed_;
    std::list<State>::iterator state_;
  };

  ChangeFeed() = default;
  // REQUIRES: every watch is destroyed first.
  ~ChangeFeed() = default;
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  // Records that something of `kind` changed in `account`, and wakes that account's watches.
  // Thread-safe; a mutex and a map lookup, so every commit may call it.
  void Publish(const AccountId& account, ChangeKind kind);
  // Also hands every Publish to `relay` (set once, before serving), watched here or not: servers
  // on one database pass their changes to each other's consoles (cli/console_relay.h).
  void SetRelay(std::function<void(const AccountId&, ChangeKind)> relay);
  // Publish for a change another server relayed: wakes the account's watches here, relays nothing.
  void PublishRelayed(const AccountId& account, ChangeKind kind);
  // A watch of `account` from now on; ResourceExhausted ("LimitExceededException" in the console's
  // table) when the account holds kMaxWatchesPerAccount already.
  StatusOr<std::unique_ptr<Watch>> Open(const AccountId& account);
  // Wakes every watch for good (their Next answers closed), so a server can stop at once.
  void Shutdown();

  size_t OpenWatches(const AccountId& account) const;

 private:
  struct Account {
    uint64_t sequence = 0;
    size_t watches = 0;
  };
  std::function<void(const AccountId&, ChangeKind)> relay_;  // set before serving
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<AccountId, Account> accounts_;  // GUARDED_BY(mu_); an entry only while it has watches
  std::list<Watch::State> watches_;        // GUARDED_BY(mu_)
  bool shutdown_ = false;                  // GUARDED_BY(mu_)
};

struct ChangeFeed::Watch::State {
  AccountId account;
  uint32_t pending = 0;  // GUARDED_BY(ChangeFeed::mu_)
};

}  // namespace paddock::console
