#include "ecs/drain/api/drain_service.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/json_fields.h"
#include "ecs/api/errors.h"
#include "ecs/drain/errors.h"

namespace paddock::ecs::drain::api {
namespace json = boost::json;
using json_fields::Str;

std::string_view DrainModelJson() {
  static constexpr std::string_view kModel = R"json({
  "version": "2.0",
  "metadata": {"apiVersion": "2026-12-03", "jsonVersion": "1.1", "protocol": "json",
               "serviceId": "Paddock Edge", "signingName": "ecs",
               "targetPrefix": "PaddockEdgeV20261203"},
  "operations": {
    "PutDrainHolds": {"name": "PutDrainHolds", "input": {"shape": "PutDrainHoldsRequest"},
                      "output": {"shape": "PutDrainHoldsResponse"}},
    "ReleaseDrainHold": {"name": "ReleaseDrainHold", "input": {"shape": "ReleaseDrainHoldRequest"},
                         "output": {"shape": "ReleaseDrainHoldResponse"}},
    "DescribeDrainHolds": {"name": "DescribeDrainHolds", "input": {"shape": "DescribeDrainHoldsRequest"},
                           "output": {"shape": "DescribeDrainHoldsResponse"}}
  },
  "shapes": {
    "String": {"type": "string"},
    "Integer": {"type": "integer"},
    "BoxedInteger": {"type": "integer"},
    "Timestamp": {"type": "timestamp"},
    "StringList": {"type": "list", "member": {"shape": "String"}},
    "DrainHold": {"type": "structure", "required": ["taskArn"],
      "members": {"taskArn": {"shape": "String"}, "drainTimeoutSeconds": {"shape": "BoxedInteger"}}},
    "DrainHolds": {"type": "list", "member": {"shape": "DrainHold"}},
    "PutDrainHoldsRequest": {"type": "structure", "required": ["edgeId", "leaseSeconds", "holds"],
      "members": {"edgeId": {"shape": "String"}, "leaseSeconds": {"shape": "Integer"},
                  "holds": {"shape": "DrainHolds"}}},
    "PutDrainHoldsResponse": {"type": "structure",
      "members": {"held": {"shape": "Integer"}, "ignored": {"shape": "StringList"}}},
    "ReleaseDrainHoldRequest": {"type": "structure", "required": ["edgeId", "taskArn"],
      "members": {"edgeId": {"shape": "String"}, "taskArn": {"shape": "String"}}},
    "ReleaseDrainHoldResponse": {"type": "structure", "members": {}},
    "DescribeDrainHoldsRequest": {"type": "structure", "required": ["taskArn"],
      "members": {"taskArn": {"shape": "String"}}},
    "EdgeHold": {"type": "structure",
      "members": {"edgeId": {"shape": "String"}, "drainTimeoutSeconds": {"shape": "Integer"},
                  "leaseExpiresAt": {"shape": "Timestamp"}}},
    "EdgeHolds": {"type": "list", "member": {"shape": "EdgeHold"}},
    "DescribeDrainHoldsResponse": {"type": "structure", "members": {"holds": {"shape": "EdgeHolds"}}}
  }
})json";
  return kModel;
}

namespace {

// An integer member the model declared (the front validated its type), or `fallback` when absent.
int64_t Int(const json::object& in, std::string_view key, int64_t fallback) {
  const json::value* v = in.if_contains(key);
  if (v == nullptr || !v->is_number()) return fallback;
  if (v->is_uint64()) return v->get_uint64() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : int64_t(v->get_uint64());
  if (v->is_int64()) return v->get_int64();
  return static_cast<int64_t>(v->get_double());
}

}  // namespace

DrainService::DrainService(DrainHolds& holds) : holds_(holds) {
  auto model = aws::ServiceModel::Parse(DrainModelJson());
  if (!model.ok()) std::abort();  // the embedded model is a constant: a parse failure is a build bug
  model_ = std::move(*model);
}

DrainService::~DrainService() = default;

bool DrainService::Implements(std::string_view action) const {
  return action == "PutDrainHolds" || action == "ReleaseDrainHold" || action == "DescribeDrainHolds";
}

std::vector<aws::AuthRequest> DrainService::AuthorizationFor(const aws::CallContext& ctx,
                                                             const json::object& input) const {
  std::string resource = "*";
  if (ctx.action != "PutDrainHolds")
    if (std::string arn = Str(input, "taskArn"); arn.starts_with("arn:")) resource = std::move(arn);
  return {aws::AuthRequest{"ecs:" + ctx.action, std::move(resource), {}}};
}

std::optional<aws::AwsError> DrainService::ErrorFor(const Status& status) const {
  if (std::optional<Error> e = status.detail().As<Error>()) {
    switch (*e) {
      case Error::kTooManyEdges: return aws::AwsError{"LimitExceededException", 400};
    }
  }
  return ecs::api::EcsErrorFor(status);
}

StatusOr<std::string> DrainService::Call(const aws::CallContext& ctx, json::object& input) {
  if (ctx.action == "PutDrainHolds") return PutDrainHolds(ctx, input);
  if (ctx.action == "ReleaseDrainHold") return ReleaseDrainHold(ctx, input);
  if (ctx.action == "DescribeDrainHolds") return DescribeDrainHolds(ctx, input);
  return InvalidArgument("", aws::Error::kUnknownOperation);
}

StatusOr<std::string> DrainService::PutDrainHolds(const aws::CallContext& ctx, const json::object& in) {
  std::vector<Hold> holds;
  if (const json::value* list = in.if_contains("holds"); list != nullptr && list->is_array()) {
    // The owner bounds the count; a list far past it is refused before it is copied.
    if (list->get_array().size() > kMaxHoldsPerPut)
      return InvalidArgument(fmt::format("{} holds: an edge holds at most {} tasks.", list->get_array().size(),
                                         kMaxHoldsPerPut),
                             ecs::Error::kInvalidParameter);
    holds.reserve(list->get_array().size());
    for (const json::value& h : list->get_array()) {
      if (!h.is_object()) continue;  // the front validated the shape
      const int64_t timeout = Int(h.get_object(), "drainTimeoutSeconds", 30);
      // Out of range is the owner's to refuse (it names the bound).
      holds.push_back({Str(h.get_object(), "taskArn"), std::chrono::seconds(timeout)});
    }
  }
  const int64_t lease = Int(in, "leaseSeconds", 0);
  ASSIGN_OR_RETURN(PutResult put, holds_.Put(ctx.scope, EdgeId(Str(in, "edgeId")), holds,
                                             std::chrono::seconds(lease), ctx.now));
  json::array ignored;
  for (const std::string& arn : put.ignored) ignored.emplace_back(arn);
  return json::serialize(json::object{{"held", put.held}, {"ignored", std::move(ignored)}});
}

StatusOr<std::string> DrainService::ReleaseDrainHold(const aws::CallContext& ctx, const json::object& in) {
  RETURN_IF_ERROR(holds_.Release(ctx.scope, EdgeId(Str(in, "edgeId")), Str(in, "taskArn")));
  return std::string("{}");
}

StatusOr<std::string> DrainService::DescribeDrainHolds(const aws::CallContext& ctx, const json::object& in) {
  ASSIGN_OR_RETURN(std::vector<HoldView> views, holds_.Holds(ctx.scope, Str(in, "taskArn"), ctx.now));
  json::array out;
  for (const HoldView& v : views)
    out.push_back(json::object{
        {"edgeId", v.edge.str()},
        {"drainTimeoutSeconds", v.drain_timeout.count()},
        {"leaseExpiresAt", std::chrono::duration<double>(v.lease_until.time_since_epoch()).count()}});
  return json::serialize(json::object{{"holds", std::move(out)}});
}

}  // namespace paddock::ecs::drain::api
