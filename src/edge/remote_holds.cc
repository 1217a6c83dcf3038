#include "edge/remote_holds.h"

#include <chrono>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/errors.h"

namespace paddock::edge {
namespace json = boost::json;

RemoteHoldSink::RemoteHoldSink(aws::JsonClientOptions options) : client_(std::move(options)) {}

Status RemoteHoldSink::Put(std::string_view edge_id, const std::vector<Hold>& holds, std::chrono::milliseconds lease) {
  json::array list;
  list.reserve(holds.size());
  for (const Hold& h : holds)
    list.push_back(json::object{{"taskArn", h.task_arn},
                                {"drainTimeoutSeconds", std::chrono::ceil<std::chrono::seconds>(h.drain_timeout).count()}});
  json::object body{{"edgeId", edge_id},
                    {"leaseSeconds", std::chrono::ceil<std::chrono::seconds>(lease).count()},
                    {"holds", std::move(list)}};
  return Send("PutDrainHolds", body);
}

Status RemoteHoldSink::Release(std::string_view edge_id, std::string_view task_arn) {
  json::object body{{"edgeId", edge_id}, {"taskArn", task_arn}};
  return Send("ReleaseDrainHold", body);
}

bool RemoteHoldSink::unsupported() {
  std::lock_guard lock(mu_);
  return unsupported_;
}

Status RemoteHoldSink::Send(std::string_view action, const json::object& body) {
  std::lock_guard lock(mu_);
  if (unsupported_) return OkStatus();
  StatusOr<json::value> answer = client_.Call(fmt::format("{}.{}", kDrainHoldsTargetPrefix, action), body);
  if (answer.ok()) return OkStatus();
  if (answer.status().detail().Is(aws::Error::kUnknownOperation)) {
    unsupported_ = true;
    return FailedPrecondition(fmt::format("the endpoint serves no drain holds ({}): this edge holds none",
                                          kDrainHoldsTargetPrefix));
  }
  return answer.status();
}

}  // namespace paddock::edge
