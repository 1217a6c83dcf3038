#include "aws/front.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include <boost/json.hpp>

#include "common/encoding.h"

namespace paddock::aws {
namespace json = boost::json;

namespace {

constexpr std::string_view kJsonContentType = "application/x-amz-json-1.1";
// Request bodies nest far less than this (a task definition reaches about 6 levels).
constexpr std::size_t kMaxJsonDepth = 64;

Status UnknownOperation(std::string message) {
  return InvalidArgument(std::move(message), "UnknownOperationException");
}

Status Serialization(std::string message) { return InvalidArgument(std::move(message), "SerializationException"); }

bool AcceptableContentType(std::string_view ct) {
  ct = ct.substr(0, ct.find(';'));
  while (!ct.empty() && ct.back() == ' ') ct.remove_suffix(1);
  return ct.empty() || http::EqualsIgnoreCase(ct, "application/x-amz-json-1.1") ||
         http::EqualsIgnoreCase(ct, "application/x-amz-json-1.0") || http::EqualsIgnoreCase(ct, "application/json");
}

// Parses a request body. An empty body is an empty input, as botocore sends "{}" anyway.
StatusOr<json::value> ParseBody(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::value(json::object());
  if (!IsValidUtf8(body)) return Serialization("The request body is not valid UTF-8.");
  // One parser per thread keeps its scratch buffers between requests; the values it releases
  // use the default allocator, so handlers may keep or copy them freely.
  thread_local json::parser parser(json::storage_ptr(), [] {
    json::parse_options opts;
    opts.max_depth = kMaxJsonDepth;
    return opts;
  }());
  parser.reset();
  boost::system::error_code ec;
  parser.write(body.data(), body.size(), ec);
  if (ec) {
    parser.reset();
    if (ec == json::error::too_deep)
      return Serialization(fmt::format("The request body nests deeper than {} levels.", kMaxJsonDepth));
    return Serialization(fmt::format("The request body is not valid JSON: {}.", ec.message()));
  }
  json::value v = parser.release();
  if (!v.is_object()) return Serialization("The request body must be a JSON object.");
  return v;
}

http::Response JsonResponse(int status, std::string body, std::string_view request_id) {
  http::Response resp;
  resp.status = status;
  resp.headers.reserve(3);
  resp.headers.push_back({"x-amzn-RequestId", std::string(request_id)});
  resp.headers.push_back({"Content-Type", std::string(kJsonContentType)});
  resp.body = std::move(body);
  return resp;
}

}  // namespace

AwsError AwsErrorFor(const Status& status) {
  int http_status = 400;
  std::string_view type;
  switch (status.code()) {
    case StatusCode::kOk:  // not an error; answer as a bug would be answered
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
    case StatusCode::kAborted:
      type = "ServerException";
      http_status = 500;
      break;
    case StatusCode::kUnavailable:
      type = "ServerException";
      http_status = 503;
      break;
    case StatusCode::kInvalidArgument: type = "InvalidParameterException"; break;
    // ECS answers most "not found" and state conflicts with ClientException.
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition: type = "ClientException"; break;
    case StatusCode::kPermissionDenied: type = "AccessDeniedException"; break;
    case StatusCode::kUnauthenticated: type = "UnrecognizedClientException"; break;
    case StatusCode::kResourceExhausted: type = "ThrottlingException"; break;
  }
  if (!status.aws_type().empty()) type = status.aws_type();
  if (type == "ServiceUnavailableException") http_status = 503;
  return {std::string(type), http_status};
}

http::Response JsonErrorResponse(const Status& status, std::string_view request_id) {
  AwsError error = AwsErrorFor(status);
  json::object body;
  body["__type"] = error.type;
  if (IsValidUtf8(status.message())) {
    body["message"] = status.message();
  } else {
    // Messages may quote request bytes (an Authorization header, a target); keep the body valid JSON.
    std::string message = status.message();
    for (char& c : message)
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
    body["message"] = message;
  }
  http::Response resp = JsonResponse(error.http_status, json::serialize(body), request_id);
  resp.headers.push_back({"x-amzn-ErrorType", std::move(error.type)});
  return resp;
}

class ApiFront::Impl {
 public:
  Impl(FrontOptions options, const Clock& clock, CredentialResolver& resolver)
      : options_(std::move(options)), clock_(clock), verifier_(clock, resolver, options_.auth), throttler_(clock) {}

  void AddJsonService(JsonService* service) { services_.push_back(service); }

  http::Response Handle(const http::Request& req) {
    std::string request_id = RandomUuid();
    StatusOr<std::string> body = Dispatch(req, request_id);
    if (!body.ok()) return JsonErrorResponse(body.status(), request_id);
    if (body->empty()) *body = "{}";
    return JsonResponse(200, std::move(body).value(), request_id);
  }

 private:
  JsonService* FindService(std::string_view prefix) const {
    for (JsonService* s : services_)
      if (s->TargetPrefix() == prefix) return s;
    return nullptr;
  }

  StatusOr<std::string> Dispatch(const http::Request& req, const std::string& request_id) {
    const TimePoint now = clock_.Now();
    if (req.method != "POST") {
      return UnknownOperation(
          fmt::format("The JSON protocol accepts only POST requests, not {}.", req.method.substr(0, 16)));
    }
    std::string_view target = req.GetHeader("X-Amz-Target");
    if (target.empty()) return UnknownOperation("The request has no X-Amz-Target header naming the operation.");
    size_t dot = target.find('.');
    std::string_view prefix = target.substr(0, dot);
    JsonService* service = FindService(prefix);
    if (service == nullptr || dot == std::string_view::npos) {
      return UnknownOperation(fmt::format("Unknown operation: X-Amz-Target '{}' names no service this endpoint "
                                          "serves.",
                                          target.substr(0, 256)));
    }
    std::string_view action = target.substr(dot + 1);

    // AWS authenticates before it looks at the operation.
    ASSIGN_OR_RETURN(VerifiedRequest who, verifier_.Verify(req, service->SigningName()));

    if (!service->Model().HasOperation(action)) {
      return UnknownOperation(fmt::format("Unknown operation '{}'.", action.substr(0, 256)));
    }
    if (!service->Implements(action)) {
      return UnknownOperation(fmt::format("The operation '{}' is not implemented by this server.", action));
    }
    if (!AcceptableContentType(req.GetHeader("Content-Type"))) {
      return UnknownOperation(fmt::format("Unsupported Content-Type '{}': send {}.",
                                          req.GetHeader("Content-Type").substr(0, 128), kJsonContentType));
    }

    CallContext ctx;
    ctx.scope = Scope{who.principal.account, std::move(who.region)};
    if (options_.rate_limits) {
      if (std::optional<ThrottleGroup> group = service->ThrottleGroupFor(action)) {
        if (!throttler_.TryAcquire(ctx.scope, group->name, group->spec))
          return ResourceExhausted("Rate exceeded", "ThrottlingException");
      }
    }

    ASSIGN_OR_RETURN(json::value input, ParseBody(req.body));
    RETURN_IF_ERROR(service->Model().ValidateInput(action, input));

    ctx.principal = std::move(who.principal);
    ctx.request_id = request_id;
    ctx.action = action;
    ctx.now = now;
    try {
      return service->Call(ctx, input.get_object());
    } catch (const std::exception& e) {
      return Internal(fmt::format("An internal error occurred while processing {}: {}", action, e.what()),
                      "ServerException");
    } catch (...) {
      return Internal(fmt::format("An internal error occurred while processing {}.", action), "ServerException");
    }
  }

  const FrontOptions options_;
  const Clock& clock_;
  SigV4Verifier verifier_;
  Throttler throttler_;
  std::vector<JsonService*> services_;  // written only before serving
};

ApiFront::ApiFront(FrontOptions options, const Clock& clock, CredentialResolver& resolver)
    : impl_(std::make_unique<Impl>(std::move(options), clock, resolver)) {}

ApiFront::~ApiFront() = default;

void ApiFront::AddJsonService(JsonService* service) { impl_->AddJsonService(service); }

http::Response ApiFront::Handle(const http::Request& req) { return impl_->Handle(req); }

}  // namespace paddock::aws
