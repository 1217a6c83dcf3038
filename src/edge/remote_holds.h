// edge/remote_holds: the drain holds of an edge in a process of its own (`paddock edge`) — its
// DrainHoldSink (edge.h) over the control plane's holds service (ecs/drain/api/drain_service.h,
// X-Amz-Target prefix "PaddockEdgeV20261203"), signed with SigV4 by the edge's own credentials on
// the same signed-JSON client the ECS reader uses (aws/json_client.h). Several replicas, each with
// its own edge id, each hold their own: a task's agent waits until every one has released it.
//
//   edge::RemoteHoldSink holds({.host = "127.0.0.1", .port = 4566, .credentials = {key, secret}});
//   edge::Edge edge(options, source, &holds);  // options.edge_id names this replica
//
// Thread-safe: the edge's loop puts and releases, its start puts the first holds; one call at a
// time goes out, on one keep-alive connection. A failed call is the caller's to log: the next
// heartbeat (every lease/3) puts every hold again, and a lease that lapses blocks no stop.
//
// An endpoint without the service (real ECS, an older Paddock) answers UnknownOperationException:
// the sink then says so once (FailedPrecondition) and holds nothing from then on, as an edge
// without drain holds — Traefik's own behaviour.
#pragma once

#include <mutex>
#include <string_view>
#include <vector>

#include "aws/json_client.h"
#include "edge/edge.h"

namespace paddock::edge {

// The holds service's X-Amz-Target prefix (the server's: ecs::drain::api::kDrainTargetPrefix).
inline constexpr std::string_view kDrainHoldsTargetPrefix = "PaddockEdgeV20261203";

class RemoteHoldSink final : public DrainHoldSink {
 public:
  explicit RemoteHoldSink(aws::JsonClientOptions options);

  // PutDrainHolds: drain timeouts and the lease in whole seconds, rounded up (never shorter than
  // asked). The service's refusal (a bad edge id: InvalidArgument; another account's task:
  // PermissionDenied; too many edges: ResourceExhausted) or a transport failure (Unavailable).
  Status Put(std::string_view edge_id, const std::vector<Hold>& holds, std::chrono::milliseconds lease) override;
  // ReleaseDrainHold.
  Status Release(std::string_view edge_id, std::string_view task_arn) override;

  // Whether the endpoint answered that it serves no drain holds.
  bool unsupported();

 private:
  Status Send(std::string_view action, const boost::json::object& body);

  std::mutex mu_;
  aws::JsonClient client_;  // GUARDED_BY(mu_)
  bool unsupported_ = false;  // GUARDED_BY(mu_)
};

}  // namespace paddock::edge
