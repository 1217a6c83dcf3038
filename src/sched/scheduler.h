// sched/scheduler: the service scheduler — it keeps every service's tasks where its deployments
// want them (docs/contracts/service.md).
//
// A pass over one service reads the service's state (ecs/service) and its tasks (ecs/task) in one
// read transaction, asks sched/plan what to do, and carries it out: each stop and each launch is
// its own store transaction, and the service's new state (counts, events, rollout) commits in the
// same transaction as the launch it describes. Every one of those transactions first checks the
// leader lease's fencing epoch (sched/lease), so a deposed scheduler's late write changes nothing.
// Because a pass plans from the tasks that exist, not from what an earlier pass meant to do, a
// crash between two transactions loses or doubles nothing: the next pass sees what committed.
//
// Passes run on one thread: when a service changes (API), when one of its tasks reports (agent),
// when a wake time the plan asked for comes, and in a periodic full resync that catches anything
// missed. An idle, converged service is read but not rewritten.
//
// The scheduler holds each service's tasks between passes (ecs::task::GroupProjection): a pass
// re-reads only the tasks written since the last one (Tasks::RefreshGroup, by the stamps of the
// group's index rows, so a report taken by another server is seen as well), and the planner sees
// exactly what a read of every task would give. The resync reads every task afresh and replaces
// what is held, so a defect in the stamps cannot outlive one resync interval.
//
//   Scheduler scheduler(store, services, tasks, &instances, clock, options);
//   services.SetChangeListener([&](const ServiceKey& k) { scheduler.Wake(k); });
//   scheduler.Start();
//   ...
//   scheduler.Stop();
#pragma once

#include <chrono>
#include <functional>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "ecs/instance/instances.h"
#include "ecs/service/services.h"
#include "ecs/task/tasks.h"
#include "sched/lease.h"
#include "sched/plan.h"
#include "store/store.h"

namespace paddock::sched {

struct SchedulerOptions {
  std::string holder = "paddock";  // this server's name in the lease
  // Names of this server's earlier lives, whose live lease it takes over at once (Lease's
  // successor_of); empty: it waits out any other name's lease.
  std::string successor_of;
  std::chrono::milliseconds lease_ttl{10000};
  std::chrono::milliseconds resync_interval{10000};
  // RUNNING time before a task without health checks counts as healthy (AWS's 40 s; tasks with
  // health checks are healthy once HEALTHY). See docs/contracts/service.md.
  std::chrono::milliseconds settle = kDefaultSettle;
  // Called after the commit of a pass that wrote a service's state without launching (its events,
  // rollout state, backoffs): for readers that follow services (the console's change feed). A
  // launch is the task owner's news (Tasks' listeners). Cheap; must not call into the scheduler.
  std::function<void(const ecs::service::ServiceKey&)> service_written = nullptr;
  // Losing a host (docs/contracts/task.md): a container instance whose agent's last heartbeat is
  // older than this is lost, and the leader's sweep records its tasks STOPPED and releases what
  // they held (SweepLostHosts). Zero: no sweep. Must exceed the agent timeout
  // (ecs::instance::AgentFenceTime: agents fence themselves well before it).
  std::chrono::milliseconds host_lost{0};
  std::chrono::milliseconds backoff_base{10000};
  std::chrono::milliseconds backoff_cap{15 * 60 * 1000};
};

class Scheduler {
 public:
  // `instances` may be null (no EC2: DAEMON services find no instances).
  Scheduler(store::Store& store, ecs::service::Services& services, ecs::task::Tasks& tasks,
            ecs::instance::ContainerInstances* instances, const Clock& clock, SchedulerOptions options);
  ~Scheduler();

  // Starts the scheduler's thread: it takes the lease when it can and then runs passes.
  void Start();
  // Stops the thread (a pass in progress finishes) and gives the lease up.
  void Stop();

  // Asks for a pass over `key` soon. Thread-safe and cheap (listeners call it).
  void Wake(const ecs::service::ServiceKey& key);

  // Asks for a full resync soon (a container instance came, went or started draining: DAEMON
  // services and tasks on draining instances need a look). Thread-safe and cheap.
  void WakeAll();

  // For tests and the thread: take or renew the lease; the epoch when we hold it.
  StatusOr<std::optional<uint64_t>> Lead();
  // One pass over one service with `epoch` as the fence. kFailedPrecondition: fenced out;
  // kAborted: the service changed under the pass (run it again).
  Status Pass(const ecs::service::ServiceKey& key, uint64_t epoch);
  // A pass over every service. Returns how many services it looked at.
  StatusOr<size_t> Resync(uint64_t epoch);
  // The host-loss sweep with `epoch` as the fence: each instance lost at the clock's now
  // (ContainerInstances::LostInstances with options.host_lost) gets its tasks stopped
  // (Tasks::StopLostInstance) in one transaction that checks the fence first and the instance's
  // loss again; the service scheduler then replaces them (the group listener wakes their services).
  // Returns how many tasks it stopped. kFailedPrecondition with Error::kLeaseLost: fenced out,
  // nothing written by that transaction. The thread runs it every min(resync_interval,
  // host_lost / 4) while it leads.
  StatusOr<size_t> SweepLostHosts(uint64_t epoch);
  // Its part for Fargate hosts (ecs/task/fargate_capacity.h): each other server's host whose
  // offer lapsed options.host_lost ago gets its offer forgotten and its tasks stopped
  // (Tasks::StopLostFargateHost), one transaction each, the fence first.
  StatusOr<size_t> SweepLostFargateHosts(uint64_t epoch);
  // Forgets the tasks held between passes: the next pass over each service reads every task (what
  // every pass did before the projection; scheduler_bench compares the two). Scheduler thread.
  void ForgetTasks() { projections_.clear(); }

 private:
  // A service and what its tasks (and, for DAEMON or EC2 tasks, the cluster's instances) are
  // doing, read in one transaction.
  struct Snapshot {
    ecs::service::ServiceState state;
    Observed observed;
  };
  // nullopt: no such service, or INACTIVE (nothing to do).
  StatusOr<std::optional<Snapshot>> Read(store::ReadTxn& txn, const ecs::service::ServiceKey& key, TimePoint now);
  // The same from a state already loaded (nullopt when INACTIVE). kRefresh brings the held tasks
  // up to date; kReadAll reads every task and replaces them (the resync).
  enum class TaskRead { kRefresh, kReadAll };
  StatusOr<std::optional<Snapshot>> Observe(store::ReadTxn& txn, ecs::service::ServiceState state, TimePoint now,
                                            TaskRead read);
  // Decides and carries the decision out (nothing to write for an idle, converged service).
  Status Act(Snapshot& snapshot, uint64_t epoch);
  void Loop();
  bool stopping();
  // Renews the lease when a third of its life has passed since the last renewal; kFailedPrecondition
  // with Error::kLeaseLost when it is no longer ours at `epoch`. Scheduler thread only.
  Status KeepLease(uint64_t epoch);
  void AddTimer(TimePoint at, const ecs::service::ServiceKey& key);
  Status Execute(ecs::service::ServiceState& state, const Decision& decision, const Observed& observed,
                 uint64_t epoch);
  // The planner's view of `tasks` (those of the service's deployments only).
  Observed Observe(TimePoint now, const std::vector<ecs::task::GroupTask>& tasks,
                   const std::vector<InstanceView>& instances) const;
  static std::string KeyString(const ecs::service::ServiceKey& key);

  store::Store& store_;
  ecs::service::Services& services_;
  ecs::task::Tasks& tasks_;
  ecs::instance::ContainerInstances* instances_;
  const Clock& clock_;
  SchedulerOptions options_;
  Lease lease_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                                       // GUARDED_BY(mu_)
  bool resync_requested_ = false;                               // GUARDED_BY(mu_)
  std::map<std::string, ecs::service::ServiceKey> dirty_;       // GUARDED_BY(mu_)
  std::multimap<TimePoint, ecs::service::ServiceKey> timers_;   // GUARDED_BY(mu_)
  std::thread thread_;
  std::chrono::steady_clock::time_point renewed_at_{};  // the last successful Lead (scheduler thread)
  // Each service's tasks as the last pass read them, by KeyString (scheduler thread).
  std::map<std::string, ecs::task::GroupProjection> projections_;
};

}  // namespace paddock::sched
