#include "console/console_service.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <utility>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/eventstream.h"
#include "aws/model.h"
#include "common/encoding.h"
#include "common/json_fields.h"
#include "console/models/paddock_console_model.h"

namespace paddock::console {
namespace {

namespace json = boost::json;

constexpr std::string_view kActions[] = {"GetConsoleInfo",     "WatchChanges",         "DescribeEdge",
                                         "ListImages",         "ListDeployments",      "DescribeDeployment",
                                         "ListDeploymentEvents", "GetDeploymentLogs",  "StopDeployment",
                                         "Redeploy"};

// The edge API path of each DescribeEdge view (edge/api.h).
std::optional<std::string_view> EdgePath(std::string_view what) {
  if (what == "overview") return "/api/overview";
  if (what == "routers") return "/api/http/routers?per_page=1000";
  if (what == "services") return "/api/http/services?per_page=1000";
  if (what == "middlewares") return "/api/http/middlewares?per_page=1000";
  if (what == "drains") return "/api/paddock/drains";
  return std::nullopt;
}

std::string Document(std::string text) { return json::serialize(json::object{{"document", std::move(text)}}); }

json::array KindNames(uint32_t kinds) {
  json::array names;
  for (size_t i = 0; i < kChangeKinds; ++i)
    if (kinds & (1u << i)) names.push_back(json::string(ChangeKindName(static_cast<ChangeKind>(i))));
  return names;
}

std::string ChangeEvent(uint64_t sequence, uint32_t kinds) {
  return json::serialize(json::object{{"sequence", sequence}, {"kinds", KindNames(kinds)}});
}

// The deploy controller's answer as this service's: its body on success, its {"error": …} text
// under the AWS error its status means.
StatusOr<std::string> FromController(const http::Response& r) {
  if (r.status >= 200 && r.status < 300) return Document(r.body);
  std::string message = "the deploy controller did not answer";
  boost::system::error_code ec;
  json::value v = json::parse(r.body, ec);
  if (!ec && v.is_object())
    if (const json::value* e = v.as_object().if_contains("error"); e != nullptr && e->is_string())
      message = std::string(e->as_string());
  switch (r.status) {
    case 400: return InvalidArgument(message);
    case 404: return NotFound(message);
    case 409: return FailedPrecondition(message);
    default: return Unavailable(fmt::format("the deploy controller answered {}: {}", r.status, message));
  }
}

}  // namespace

void ConsoleService::SetNodeParts(NodeParts parts) {
  std::lock_guard lock(mu_);
  parts_ = std::move(parts);
}

NodeParts ConsoleService::Parts() const {
  std::lock_guard lock(mu_);
  return parts_;
}

const aws::ServiceModel& ConsoleService::Model() const {
  static const aws::ServiceModel* model = [] {
    auto parsed = aws::ServiceModel::Parse(PaddockConsoleModelJson());
    if (!parsed.ok()) std::abort();  // the embedded model is part of the binary
    return parsed->release();
  }();
  return *model;
}

bool ConsoleService::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> ConsoleService::ThrottleGroupFor(std::string_view action) const {
  (void)action;
  return std::nullopt;
}

std::vector<aws::AuthRequest> ConsoleService::AuthorizationFor(const aws::CallContext& ctx,
                                                                const json::object& input) const {
  (void)input;
  if (ctx.action == "GetConsoleInfo" || ctx.action == "WatchChanges") return {};
  return {aws::AuthRequest{"paddock:" + ctx.action, "*", {}}};
}

std::optional<aws::AwsError> ConsoleService::ErrorFor(const Status& status) const {
  if (status.detail().domain() != nullptr) return std::nullopt;  // the front's own (authentication, routing)
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return aws::AwsError{"ValidationException", 400};
    case StatusCode::kNotFound: return aws::AwsError{"ResourceNotFoundException", 400};
    case StatusCode::kFailedPrecondition: return aws::AwsError{"ConflictException", 409};
    case StatusCode::kResourceExhausted: return aws::AwsError{"LimitExceededException", 400};
    case StatusCode::kPermissionDenied: return aws::AwsError{"AccessDeniedException", 400};
    case StatusCode::kUnavailable: return aws::AwsError{"ServiceUnavailableException", 503};
    default: return std::nullopt;
  }
}

StatusOr<std::string> ConsoleService::Call(const aws::CallContext& ctx, json::object& input) {
  const NodeParts parts = Parts();
  // The node's parts are its owner account's: another account is told they do not exist.
  const bool owner = !parts.owner.str().empty() && ctx.scope.account == parts.owner;
  if (ctx.action == "GetConsoleInfo") {
    return json::serialize(json::object{
        {"account", ctx.principal.account.str()},
        {"arn", ctx.principal.arn},
        {"region", ctx.scope.region.str()},
        {"features", json::object{{"edge", owner && parts.edge != nullptr},
                                  {"deploy", owner && parts.deploy != nullptr},
                                  {"images", owner && parts.images != nullptr}}}});
  }
  if (ctx.action == "DescribeEdge") {
    if (!owner || !parts.edge) return NotFound("This server runs no edge for your account.");
    std::optional<std::string_view> path = EdgePath(json_fields::Str(input, "what"));
    if (!path) return InvalidArgument("what must be one of overview, routers, services, middlewares, drains.");
    StatusOr<std::string> body = parts.edge(*path);
    if (!body.ok()) return Unavailable(fmt::format("The edge did not answer: {}", body.status().message()));
    return Document(std::move(*body));
  }
  if (ctx.action == "ListImages") {
    if (!owner || !parts.images) return NotFound("This server shows its image store to its own account only.");
    StatusOr<std::vector<ConsoleImage>> images = parts.images();
    if (!images.ok()) return Unavailable(fmt::format("The image store did not answer: {}", images.status().message()));
    json::array out;
    for (const ConsoleImage& i : *images)
      out.push_back(json::object{{"reference", i.reference},
                                 {"manifestDigest", i.manifest_digest},
                                 {"size", i.size},
                                 {"createdAt", i.created_at_ms}});
    return json::serialize(json::object{{"images", std::move(out)}});
  }
  if (!owner || !parts.deploy) return NotFound("This server runs no deploy controller for your account.");
  return Deploy(ctx, parts, input);
}

StatusOr<std::string> ConsoleService::Deploy(const aws::CallContext& ctx, const NodeParts& parts,
                                             const json::object& input) {
  http::Request r;
  r.method = "GET";
  const std::string id = PercentEncode(json_fields::Str(input, "id"));
  std::vector<std::string> query;
  auto add = [&](std::string_view name, std::string value) {
    query.push_back(fmt::format("{}={}", name, PercentEncode(value)));
  };
  if (ctx.action == "ListDeployments") {
    r.target = "/v1/deployments";
    add("limit", "100");
    if (auto p = json_fields::OptStr(input, "project")) add("project", *p);
    if (auto t = json_fields::OptStr(input, "nextToken")) add("next_token", *t);
  } else if (ctx.action == "DescribeDeployment") {
    r.target = "/v1/deployments/" + id;
  } else if (ctx.action == "ListDeploymentEvents") {
    r.target = "/v1/deployments/" + id + "/events";
    if (const json::value* after = input.if_contains("after")) add("after", json::serialize(*after));
  } else if (ctx.action == "GetDeploymentLogs") {
    r.target = "/v1/deployments/" + id + "/logs";
    if (const json::value* start = input.if_contains("startTime")) add("start_ms", json::serialize(*start));
    if (auto t = json_fields::OptStr(input, "nextToken")) add("next_token", *t);
  } else if (ctx.action == "StopDeployment") {
    r.method = "POST";
    r.target = "/v1/deployments/" + id + "/stop";
  } else if (ctx.action == "Redeploy") {
    r.method = "POST";
    r.target = "/v1/deployments";
    r.body = json::serialize(json::object{{"from", json_fields::Str(input, "from")}});
    r.headers.push_back({"Content-Type", "application/json"});
  } else {
    return InvalidArgument(fmt::format("Unknown action {}.", ctx.action));
  }
  for (size_t i = 0; i < query.size(); ++i) r.target += (i == 0 ? "?" : "&") + query[i];
  return FromController(parts.deploy(r));
}

StatusOr<http::BodyProducer> ConsoleService::CallStream(const aws::CallContext& ctx, json::object& input) {
  (void)input;
  ASSIGN_OR_RETURN(std::unique_ptr<ChangeFeed::Watch> opened, feed_.Open(ctx.scope.account));
  std::shared_ptr<ChangeFeed::Watch> watch = std::move(opened);  // a BodyProducer must be copyable
  return http::BodyProducer([watch](http::BodyWriter& w) {
    using steady = std::chrono::steady_clock;
    const steady::time_point end = steady::now() + kWatchLifetime;
    ChangeFeed::Change first = watch->Next(steady::now());
    if (first.closed || !w.Write(aws::EncodeEvent("change", ChangeEvent(first.sequence, 0)))) return;
    while (true) {
      const steady::time_point now = steady::now();
      if (now >= end) {
        w.Write(aws::EncodeException(
            "WatchTimeoutException",
            json::serialize(json::object{{"message", "The watch ended after an hour; open another."}})));
        return;
      }
      ChangeFeed::Change c = watch->Next(std::min(now + kHeartbeat, end), kCoalesce);
      if (c.closed) return;
      if (!w.Write(aws::EncodeEvent("change", ChangeEvent(c.sequence, c.kinds)))) return;
    }
  });
}

}  // namespace paddock::console
