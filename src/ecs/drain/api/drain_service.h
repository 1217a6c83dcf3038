// ecs/drain/api/drain_service: the edges' drain holds (ecs/drain/drain_holds.h) on the API front,
// for an edge in a process of its own (`paddock edge`, edge/remote_holds.h) — what the in-process
// edge of `paddock up` does by a direct call. A JSON 1.1 service under its own X-Amz-Target
// prefix, "PaddockEdgeV20261203", signed with SigV4 for the "ecs" signing name, so the front
// authenticates it like any ECS call:
//
//   PutDrainHolds      {edgeId, leaseSeconds, holds: [{taskArn, drainTimeoutSeconds?}]}
//                      -> {held, ignored: [taskArn]}
//       The edge's heartbeat (DrainHolds::Put): its holds become exactly `holds`, each live for
//       leaseSeconds (1 to 300) unless renewed; drainTimeoutSeconds is 0 to 3600 (default 30); at
//       most 10,000 holds. A STOPPED or unknown task is not held (it is in `ignored`).
//   ReleaseDrainHold   {edgeId, taskArn} -> {}
//       The edge has drained the task (DrainHolds::Release): its hold goes; the task's agent,
//       waiting in DEACTIVATING, is woken.
//   DescribeDrainHolds {taskArn} -> {holds: [{edgeId, drainTimeoutSeconds, leaseExpiresAt}]}
//       The live holds on a task, by edge (DrainHolds::Holds).
//
// Scope and tenancy. The scope is the caller's: the account of its credential, the region of its
// signature. A task ARN of another account is AccessDeniedException and nothing is written or
// answered — an edge of account B can neither hold, release nor see a task of account A; another
// region's task, or something that is not a task ARN (the long form, with its cluster), is
// InvalidParameterException.
//
// Authorization. As ECS's own actions: the IAM action is "ecs:" + the operation
// ("ecs:PutDrainHolds", "ecs:ReleaseDrainHold", "ecs:DescribeDrainHolds"); Release and Describe
// name the task's ARN as their resource (as StopTask and DescribeTasks do), Put "*" (it names up to
// 10,000 tasks, as ListTasks names none). A container instance's agent credential may call none
// of them.
//
// Errors (ErrorFor): a bad edge id, lease, drainTimeout, task ARN or too many holds is
// InvalidParameterException; another account's task AccessDeniedException; a new edge when 100
// edges of the scope hold tasks LimitExceededException.
//
//   DrainService drains(holds);
//   front.AddJsonService(&drains);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/model.h"
#include "aws/service.h"
#include "ecs/drain/drain_holds.h"

namespace paddock::ecs::drain::api {

inline constexpr std::string_view kDrainTargetPrefix = "PaddockEdgeV20261203";

class DrainService final : public aws::JsonService {
 public:
  explicit DrainService(DrainHolds& holds);
  ~DrainService() override;

  std::string_view TargetPrefix() const override { return kDrainTargetPrefix; }
  std::string_view SigningName() const override { return "ecs"; }
  const aws::ServiceModel& Model() const override { return *model_; }
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view) const override { return std::nullopt; }
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  // drain::Error::kTooManyEdges is LimitExceededException; then ECS's table (ecs/api/errors.h).
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  StatusOr<std::string> PutDrainHolds(const aws::CallContext& ctx, const boost::json::object& in);
  StatusOr<std::string> ReleaseDrainHold(const aws::CallContext& ctx, const boost::json::object& in);
  StatusOr<std::string> DescribeDrainHolds(const aws::CallContext& ctx, const boost::json::object& in);

  DrainHolds& holds_;
  std::unique_ptr<aws::ServiceModel> model_;
};

// The service's model (botocore's service JSON form), for the service and its tests.
std::string_view DrainModelJson();

}  // namespace paddock::ecs::drain::api
