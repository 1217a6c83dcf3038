// deploy/testing/fake_ecs: an in-memory ECS and SSM behind deploy::Aws, for the deploy controller's
// unit tests — the calls the reconcile driver makes (ListServices, DescribeServices with TAGS,
// CreateService, UpdateService, DeleteService, TagResource, RegisterTaskDefinition, CreateCluster,
// ListTasks, DescribeTasks; SSM PutParameter, GetParametersByPath, DeleteParameters), answered as
// ECS answers them and failed as HttpAws fails them (a Status whose message is "<Type>: <message>",
// with deploy::Error's detail). Time comes from the test's clock; tasks move only when the test
// calls Settle(). Every call is logged; faults are injected per call, per action, or as a crash.
//
//   FakeClock clock;
//   FakeEcs ecs(clock);
//   Controller controller(store, deployments, ecs, nullptr, clock, options);
//   controller.Tick();                   // creates the service
//   ecs.Settle();                        // its desiredCount tasks now RUNNING, with addresses
//   ecs.FailEvery(FakeEcs::Match::AnyOf(AwsService::kEcs), AwsError("ThrottlingException", "Rate exceeded"));
//   ecs.CrashAfter(ecs.calls() + 3);     // the 3rd call from now is the process's last
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "common/clock.h"
#include "common/status.h"
#include "deploy/aws.h"

namespace paddock::deploy::testing {

// The Status HttpAws returns for an AWS error answer of `type` (e.g. "ThrottlingException"):
// message "<type>: <message>", and the code and deploy::Error detail HttpAws classifies it with.
Status AwsError(std::string_view type, std::string_view message);

// Whether `action` changes anything (the driver's writes): Create*, Update*, Delete*, Put*,
// Register*, TagResource.
bool IsWriteAction(std::string_view action);

struct FakeCall {
  int seq = 0;  // 1, 2, ... over the fake's life
  AwsService service = AwsService::kEcs;
  std::string action;
  boost::json::object body;
  TimePoint at;
  Status outcome;  // OK, or the error answered (injected or ECS's own)
  bool write = false;
};

struct FakeTask {
  std::string arn;
  std::string cluster;
  std::string service_name;
  std::string task_definition;  // its ARN
  std::string container;        // the task definition's first container
  std::optional<int> port;      // that container's first containerPort
  std::string last_status;      // RUNNING | STOPPED
  std::string desired_status;
  std::string address;          // "10.0.0.7"
  std::string stopped_reason;
};

// One ECS deployment of a service (DescribeServices' deployments[]).
struct FakeRollout {
  std::string id;
  std::string status;  // PRIMARY | ACTIVE
  std::string task_definition;
  TimePoint created_at;
  std::string rollout_state;  // IN_PROGRESS | COMPLETED
  int failed_tasks = 0;       // ECS's failedTasks: tasks of this rollout that failed (set by hand)
};

struct FakeService {
  std::string arn;
  std::string name;
  std::string cluster = "default";
  std::string status = "ACTIVE";  // ACTIVE | DRAINING | INACTIVE
  std::string task_definition;
  int desired = 0;
  int running = 0;
  int pending = 0;
  std::string launch_type = "FARGATE";
  boost::json::object network_configuration;
  std::vector<std::pair<std::string, std::string>> tags;
  std::vector<FakeRollout> deployments;
  std::vector<std::pair<std::string, std::string>> events;  // (id, message), newest first
  TimePoint created_at;
};

struct FakeEcsOptions {
  std::string region = "us-east-1";
  std::string account = "000000000000";
  std::vector<std::string> clusters = {"default"};  // the clusters that exist at the start
  int page_limit = 100;  // ListServices/ListTasks pages hold at most this many, whatever maxResults says
};

// Thread-safe. Test controls are neither logged nor failed.
class FakeEcs final : public Aws {
 public:
  explicit FakeEcs(Clock& clock, FakeEcsOptions options = {});
  ~FakeEcs() override;

  StatusOr<boost::json::value> Call(AwsService service, std::string_view action,
                                    const boost::json::object& body) override;

  // ---- The world -------------------------------------------------------------------------------
  // Every ACTIVE service runs exactly desiredCount RUNNING tasks of its current task definition
  // (others are STOPPED, new ones get fresh addresses), its rollouts collapse into one COMPLETED
  // PRIMARY, and a DRAINING service's tasks stop and it becomes INACTIVE.
  void Settle();
  // A service made by hand (another controller's, or an orphan): its ARN. `s.arn` empty: derived.
  // Its running count and tasks follow at the next Settle().
  std::string AddService(FakeService s);
  // The newest service of that name (any status), or nullopt.
  std::optional<FakeService> Service(std::string_view name) const;
  // Changes the newest service of that name by hand; false when there is none.
  bool EditService(std::string_view name, const std::function<void(FakeService&)>& edit);
  std::vector<FakeService> ActiveServices() const;
  // RUNNING tasks of every service.
  std::vector<FakeTask> RunningTasks() const;
  // Successful RegisterTaskDefinition calls of `family`.
  int Registrations(std::string_view family) const;
  // Every revision of `family`: ARN -> ACTIVE, INACTIVE or DELETE_IN_PROGRESS.
  std::map<std::string, std::string> RevisionStatuses(std::string_view family) const;
  // SSM: name -> value.
  std::map<std::string, std::string> Parameters() const;

  // ---- Faults ----------------------------------------------------------------------------------
  struct Match {
    std::optional<AwsService> service;  // nullopt: any
    std::string action;                 // "": any
    static Match Action(std::string_view a) { return Match{std::nullopt, std::string(a)}; }
    static Match AnyOf(AwsService s) { return Match{s, ""}; }
  };
  // The `nth` (1-based) call matching `m` from now on fails with `status`, once.
  void FailNth(Match m, int nth, Status status);
  // Every call matching `m` fails with `status` until ClearFaults (a throttle storm, a lost right).
  void FailEvery(Match m, Status status);
  void ClearFaults();
  // Call number `seq` (FakeCall::seq) is performed; every later call answers kUnavailable, as a
  // dead process's would never arrive. Recover() ends it (the restarted process).
  void CrashAfter(int seq);
  bool crashed() const;
  void Recover();

  // ---- The log ---------------------------------------------------------------------------------
  std::vector<FakeCall> Log() const;
  int calls() const;  // the seq of the latest call, 0 before any
  // The calls after seq `after`, and among them those that performed a write.
  std::vector<FakeCall> Since(int after) const;
  int WritesSince(int after) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::deploy::testing
