// agent/task_credentials: the agent's side of a task's role credentials (issue 11). The task
// metadata endpoint (agent/metadata, /v2/credentials/<id>) asks on every request; this holds the
// set the control plane last answered (Control::TaskRoleCredentials: minted there, never on the
// node) and asks again only once it has less than metadata::kCredentialsRefreshBefore left — the
// control plane answers a new set then too. It asks at most once per kAskInterval, whatever the
// answer: a refusal or an outage is answered again until then (a role created or fixed later
// works without a restart), and so is a set the control plane still deems fresh while this
// node's clock runs ahead of it (a remote host's). A container that hammers its endpoint costs
// the control plane at most one call a second. A held set that has not expired is served while a
// refresh fails: it stays valid to its expiry (as on AWS, whatever happens to the role).
//
//   TaskCredentialsCache cache(control, agent_id, spec, clock);
//   service.RegisterCredentials(spec.task_arn, [&] { return cache.Get(); }, task_ip, network);
//
// Thread safety: thread-safe; Get holds its mutex across the control plane's call, so concurrent
// requests of one task make one call.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "agent/control.h"
#include "agent/metadata/credentials.h"
#include "common/clock.h"
#include "common/status.h"

namespace paddock::agent {

class TaskCredentialsCache {
 public:
  // `control` and `clock` must outlive the cache.
  TaskCredentialsCache(Control& control, std::string agent_id, protocol::LaunchSpec spec, Clock& clock)
      : control_(control), agent_id_(std::move(agent_id)), spec_(std::move(spec)), clock_(clock) {}

  static constexpr Duration kAskInterval = std::chrono::seconds(1);

  StatusOr<metadata::RoleCredentials> Get();

 private:
  Control& control_;
  const std::string agent_id_;
  const protocol::LaunchSpec spec_;
  Clock& clock_;
  std::mutex mu_;
  std::optional<metadata::RoleCredentials> held_;  // GUARDED_BY(mu_): the last set answered
  Status failure_;                                 // GUARDED_BY(mu_): the last call's
  TimePoint next_ask_;                             // GUARDED_BY(mu_): no call before
};

}  // namespace paddock::agent
