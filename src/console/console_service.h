// console/console_service: the web console's own API, PaddockConsole (JSON 1.1, X-Amz-Target
// "PaddockConsole_20261204.<Action>", signing name and IAM prefix "paddock"). Everything the
// console shows of ECS, CloudWatch Logs, SSM and Cloud Map it reads through those services' own
// APIs, signed in the browser; this service adds only what has no AWS API:
//
//   GetConsoleInfo     who the caller is and which of the node's parts it may see (no question asked)
//   WatchChanges       an event stream (AWS event-stream framing, as StartLiveTail's): a `change`
//                      event {"sequence", "kinds": ["ecs", …]} whenever something of the caller's
//                      account changed (console/change_feed.h), one at once, one every 15 s when
//                      nothing did; ends after an hour with WatchTimeoutException (no question asked:
//                      it tells only that something of a kind changed in the caller's own account)
//   DescribeEdge       the edge's Traefik-shaped API (routers, services with serverStatus, …)
//   ListImages         the node's image store
//   ListDeployments, DescribeDeployment, ListDeploymentEvents, GetDeploymentLogs, StopDeployment,
//   Redeploy           the deploy controller's API (deploy/api.h), as its own answers
//
// The last three groups are the node's, not an account's: `paddock up`'s edge routes its bootstrap
// account's tasks, its controller deploys as that account, and its images serve every tenant. They
// answer only that account's principals (NodeParts::owner), each call authorized as
// `paddock:<Action>` on "*" like any other; another account is told the part does not exist.
//
//   console::ChangeFeed feed;
//   console::ConsoleService console(feed);
//   front.AddJsonService(&console);
//   console.SetNodeParts({.owner = account, .edge = …, .deploy = …, .images = …});  // once they run
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/service.h"
#include "common/ids.h"
#include "console/change_feed.h"
#include "http/message.h"

namespace paddock::console {

struct ConsoleImage {
  std::string reference;
  std::string manifest_digest;
  uint64_t size = 0;
  int64_t created_at_ms = 0;
};

// The parts of the node the console shows beyond the AWS APIs. Each function may be null (the
// node has no such part); each must be thread-safe.
struct NodeParts {
  AccountId owner;
  // GET `path` on the edge's API (/api/overview, /api/http/routers, …): the body of a 200, or why not.
  std::function<StatusOr<std::string>(std::string_view path)> edge = nullptr;
  // The deploy controller's API (deploy/api.h) called as its own client: the response as it answers.
  std::function<http::Response(const http::Request&)> deploy = nullptr;
  std::function<StatusOr<std::vector<ConsoleImage>>()> images = nullptr;
};

class ConsoleService final : public aws::JsonService {
 public:
  // How long a watch lasts, and how often an idle one says it is alive.
  static constexpr std::chrono::seconds kWatchLifetime{3600};
  static constexpr std::chrono::seconds kHeartbeat{15};
  // Changes closer together than this go out as one event.
  static constexpr std::chrono::milliseconds kCoalesce{100};

  // `feed` must outlive the service.
  explicit ConsoleService(ChangeFeed& feed) : feed_(feed) {}

  // Thread-safe; the parts start after the API serves (`paddock up` starts its edge and controller
  // against it).
  void SetNodeParts(NodeParts parts);

  std::string_view TargetPrefix() const override { return "PaddockConsole_20261204"; }
  std::string_view SigningName() const override { return "paddock"; }
  const aws::ServiceModel& Model() const override;
  bool Implements(std::string_view action) const override;
  std::optional<aws::ThrottleGroup> ThrottleGroupFor(std::string_view action) const override;
  StatusOr<std::string> Call(const aws::CallContext& ctx, boost::json::object& input) override;
  bool StreamsOutput(std::string_view action) const override { return action == "WatchChanges"; }
  StatusOr<http::BodyProducer> CallStream(const aws::CallContext& ctx, boost::json::object& input) override;
  std::vector<aws::AuthRequest> AuthorizationFor(const aws::CallContext& ctx,
                                                 const boost::json::object& input) const override;
  std::optional<aws::AwsError> ErrorFor(const Status& status) const override;

 private:
  NodeParts Parts() const;
  StatusOr<std::string> Deploy(const aws::CallContext& ctx, const NodeParts& parts, const boost::json::object& input);

  ChangeFeed& feed_;
  mutable std::mutex mu_;
  NodeParts parts_;  // GUARDED_BY(mu_)
};

}  // namespace paddock::console
