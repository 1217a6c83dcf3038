#include "aws/front.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include <boost/json.hpp>

#include "aws/eventstream.h"
#include "aws/internal/rest_json_codec.h"
#include "aws/json_version.h"
#include "aws/rest_json.h"
#include "common/encoding.h"

namespace paddock::aws {
namespace json = boost::json;

namespace {

constexpr std::string_view kJsonContentType = "application/x-amz-json-1.1";
// Request bodies nest far less than this (a task definition reaches about 6 levels).
constexpr std::size_t kMaxJsonDepth = 64;

Status UnknownOperation(std::string message) {
  return InvalidArgument(std::move(message), Error::kUnknownOperation);
}

Status Serialization(std::string message) { return InvalidArgument(std::move(message), Error::kSerialization); }

// A container instance's agent credential is good for the agent's own calls only
// (JsonService::AgentMay); anything else is refused as IAM refuses an action no policy allows.
Status AgentMayCall(const Principal& who, bool allowed, std::string_view service, std::string_view action) {
  if (who.agent_of.empty() || allowed) return OkStatus();
  return PermissionDenied(fmt::format("User: {} is not authorized to perform: {}:{} on resource: * because no "
                                      "identity-based policy allows the {}:{} action",
                                      who.arn, service, action.substr(0, 128), service, action.substr(0, 128)));
}

// aws:SourceIp: the peer's address without its port ("127.0.0.1:53120", "[::1]:53120"), an
// IPv4-mapped IPv6 peer as its IPv4 address (what the client dialled).
std::string SourceIpOf(std::string_view remote) {
  if (remote.starts_with('[')) {
    remote = remote.substr(1, remote.find(']') - 1);
  } else if (size_t colon = remote.rfind(':'); colon != std::string_view::npos) {
    remote = remote.substr(0, colon);
  }
  if (remote.starts_with("::ffff:") && remote.find('.') != std::string_view::npos) remote.remove_prefix(7);
  return std::string(remote);
}

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

bool IsFormEncoded(std::string_view ct) {
  ct = ct.substr(0, ct.find(';'));
  while (!ct.empty() && ct.back() == ' ') ct.remove_suffix(1);
  return http::EqualsIgnoreCase(ct, "application/x-www-form-urlencoded");
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes application/x-www-form-urlencoded text ("a=1&b=x+y%21") into `out`.
Status ParseForm(std::string_view text, QueryParams& out) {
  auto decode = [](std::string_view in, std::string& dst) -> bool {
    dst.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      char c = in[i];
      if (c == '+') {
        dst += ' ';
      } else if (c == '%') {
        if (i + 2 >= in.size()) return false;  // "%" needs two hex digits
        int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
        if (hi < 0 || lo < 0) return false;
        dst += static_cast<char>(hi * 16 + lo);
        i += 2;
      } else {
        dst += c;
      }
    }
    return true;
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t amp = text.find('&', pos);
    std::string_view pair = text.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      std::string key, value;
      if (!decode(pair.substr(0, eq), key) ||
          !decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), value))
        return InvalidArgument("The request's form parameters are not valid percent-encoding.", Error::kMalformedQueryString);
      if (!IsValidUtf8(key) || !IsValidUtf8(value))
        return InvalidArgument("The request's form parameters are not valid UTF-8.", Error::kMalformedQueryString);
      out.emplace_back(std::move(key), std::move(value));
    }
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return OkStatus();
}

http::Response XmlResponse(int status, std::string body, std::string_view request_id) {
  http::Response resp;
  resp.status = status;
  resp.headers.push_back({"x-amzn-RequestId", std::string(request_id)});
  resp.headers.push_back({"Content-Type", "text/xml"});
  resp.body = std::move(body);
  return resp;
}

http::Response JsonResponse(int status, std::string body, std::string_view request_id,
                            std::string_view content_type = kJsonContentType) {
  http::Response resp;
  resp.status = status;
  resp.headers.reserve(3);
  resp.headers.push_back({"x-amzn-RequestId", std::string(request_id)});
  resp.headers.push_back({"Content-Type", std::string(content_type)});
  resp.body = std::move(body);
  return resp;
}

}  // namespace

http::Response JsonErrorResponse(const Status& status, const AwsError& error, std::string_view request_id) {
  return JsonErrorResponse(status, error, request_id, JsonVersion::k1_1, {});
}

http::Response JsonErrorResponse(const Status& status, const AwsError& error, std::string_view request_id,
                                 JsonVersion version, std::string_view error_namespace) {
  json::object body;
  body["__type"] = JsonErrorType(version, error.type, error_namespace);
  if (IsValidUtf8(status.message())) {
    body["message"] = status.message();
  } else {
    // Messages may quote request bytes (an Authorization header, a target); keep the body valid JSON.
    std::string message = status.message();
    for (char& c : message)
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
    body["message"] = message;
  }
  http::Response resp = JsonResponse(error.http_status, json::serialize(body), request_id, JsonContentType(version));
  // The short name in both versions: clients read "__type" first, and the access log this header.
  resp.headers.push_back({"x-amzn-ErrorType", error.type});
  return resp;
}

class ApiFront::Impl {
 public:
  Impl(FrontOptions options, const Clock& clock, CredentialResolver& resolver)
      : options_(std::move(options)), clock_(clock), verifier_(clock, resolver, options_.auth), throttler_(clock) {}

  void AddJsonService(JsonService* service) { services_.push_back(service); }
  void AddQueryService(QueryService* service) { query_services_.push_back(service); }
  void AddRestJsonService(RestJsonService* service) {
    rest_services_.push_back({service, std::make_unique<internal::RestJsonRoutes>(service->Model())});
  }
  void SetRateLimitServers(int servers) { throttler_.SetServers(servers); }

  http::Response Handle(const http::Request& req) {
    if (!options_.observer) return Answer(req, nullptr);
    const auto start = std::chrono::steady_clock::now();
    RequestRecord record;
    http::Response resp = Answer(req, &record);
    record.http_status = resp.status;
    if (resp.status >= 400) record.error = std::string(resp.GetHeader("x-amzn-ErrorType"));
    record.latency = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
    options_.observer(record);
    return resp;
  }

 private:
  // `record`, when given, learns the service, action and account as they become known.
  http::Response Answer(const http::Request& req, RequestRecord* record) {
    std::string request_id = RandomUuid();
    if (IsQueryRequest(req)) return HandleQuery(req, request_id, record);
    if (const RestJsonEntry* rest = FindRestJsonService(req)) return HandleRestJson(*rest, req, request_id, record);
    const JsonService* service = nullptr;
    http::BodyProducer stream;
    StatusOr<std::string> body = Dispatch(req, request_id, &service, record, &stream);
    const JsonVersion version = service != nullptr ? JsonVersionOf(service->Model()) : JsonVersion::k1_1;
    if (!body.ok()) {
      std::optional<AwsError> error;
      if (service != nullptr) error = service->ErrorFor(body.status());
      return JsonErrorResponse(body.status(), error ? *error : AwsErrorFor(body.status()), request_id, version,
                               service != nullptr ? service->ErrorNamespace() : std::string_view());
    }
    if (stream) return EventStreamResponse(std::move(stream), request_id);
    if (body->empty()) *body = "{}";
    return JsonResponse(200, std::move(body).value(), request_id, JsonContentType(version));
  }

  static bool IsQueryRequest(const http::Request& req) {
    if (req.method == "POST") return IsFormEncoded(req.GetHeader("Content-Type"));
    if (req.method == "GET") {
      std::string_view q = req.Query();
      return q.starts_with("Action=") || q.find("&Action=") != std::string_view::npos;
    }
    return false;
  }

  QueryService* FindQueryService(std::string_view signing_name) const {
    for (QueryService* s : query_services_)
      if (s->SigningName() == signing_name) return s;
    return nullptr;
  }

  http::Response HandleQuery(const http::Request& req, const std::string& request_id, RequestRecord* record) {
    QueryService* service = nullptr;
    StatusOr<std::string> body = DispatchQuery(req, request_id, &service, record);
    if (body.ok()) return XmlResponse(200, std::move(body).value(), request_id);
    std::optional<AwsError> claimed = service != nullptr ? service->ErrorFor(body.status()) : std::nullopt;
    AwsError error = claimed ? *claimed : AwsErrorFor(body.status(), Dialect::kQuery);
    std::string xml = service != nullptr
                          ? service->ErrorXml(error.type, body.status().message(), request_id)
                          : QueryErrorXml(error.type, body.status().message(), request_id, error.http_status >= 500);
    http::Response resp = XmlResponse(error.http_status, std::move(xml), request_id);
    resp.headers.push_back({"x-amzn-ErrorType", std::move(error.type)});
    return resp;
  }

  StatusOr<std::string> DispatchQuery(const http::Request& req, const std::string& request_id, QueryService** out,
                                      RequestRecord* record) {
    const TimePoint now = clock_.Now();
    // The credential scope names the service: Query services share one endpoint.
    std::string_view authorization = req.GetHeader("Authorization");
    std::string signing_name;
    if (!authorization.empty()) {
      ASSIGN_OR_RETURN(SigV4Authorization auth, ParseAuthorization(authorization));
      signing_name = auth.service;
    }
    QueryService* service = signing_name.empty() ? nullptr : FindQueryService(signing_name);
    *out = service;
    if (service == nullptr && !signing_name.empty())
      return UnknownOperation(fmt::format("No service named '{}' is served by this endpoint.", signing_name.substr(0, 64)));
    if (service == nullptr) {
      // Unsigned: report it as the verifier would, in the generic XML form.
      ASSIGN_OR_RETURN(VerifiedRequest unused, verifier_.Verify(req, "unknown"));
      (void)unused;
      return UnknownOperation("No service could be determined for this request.");
    }
    if (record) record->service = std::string(service->SigningName());
    ASSIGN_OR_RETURN(VerifiedRequest who, verifier_.Verify(req, service->SigningName()));
    if (record) record->account = who.principal.account.str();

    QueryParams params;
    RETURN_IF_ERROR(ParseForm(req.Query(), params));
    if (req.method == "POST") RETURN_IF_ERROR(ParseForm(req.body, params));
    std::optional<std::string_view> action = FindParam(params, "Action");
    if (record && action) record->action = std::string(action->substr(0, 128));
    if (!action || action->empty())
      return InvalidArgument("The request must contain the parameter Action.", Error::kMissingAction);
    if (!service->Implements(*action))
      return InvalidArgument(fmt::format("Could not find operation {} for version {}.", action->substr(0, 128),
                                         FindParam(params, "Version").value_or("NO_VERSION_SPECIFIED").substr(0, 32)),
                             Error::kInvalidAction);

    ASSIGN_OR_RETURN(CallContext ctx, BeginCall(*service, std::move(who), *action, req, request_id, now));
    if (ctx.authorizer != nullptr) RETURN_IF_ERROR(Authorize(ctx, service->AuthorizationFor(ctx, params)));
    try {
      return service->Call(ctx, params);
    } catch (const std::exception& e) {
      return Internal(fmt::format("An internal error occurred while processing {}: {}", ctx.action, e.what()),
                      Error::kInternalFailure);
    }
  }

  // What every protocol does once it knows the service, the verified caller and the action: an
  // agent credential's bound (AgentMay), the rate limit (before the input is read), then the call's
  // context — scope, principal, aws:SourceIp, request id, time and the authorizer of its questions.
  template <typename Service>
  StatusOr<CallContext> BeginCall(const Service& service, VerifiedRequest who, std::string_view action,
                                  const http::Request& req, const std::string& request_id, TimePoint now) {
    RETURN_IF_ERROR(AgentMayCall(who.principal, service.AgentMay(action), service.SigningName(), action));
    CallContext ctx;
    ctx.scope = Scope{who.principal.account, std::move(who.region)};
    if (options_.rate_limits) {
      if (std::optional<ThrottleGroup> group = service.ThrottleGroupFor(action)) {
        if (!throttler_.TryAcquire(ctx.scope, group->name, group->spec))
          return ResourceExhausted("Rate exceeded", Error::kThrottling);
      }
    }
    ctx.principal = std::move(who.principal);
    ctx.source_ip = SourceIpOf(req.remote_address);
    ctx.request_id = request_id;
    ctx.action = std::string(action);
    ctx.now = now;
    ctx.authorizer = AuthorizerFor(ctx.principal);
    return ctx;
  }

  // The authorizer of `principal`'s calls, or null when none of them is refused: no authorizer is
  // configured, the authorizer allows the principal everything (root), or the principal is a
  // container instance's agent, whose calls are bounded by AgentMay instead. A null answer spares
  // the request building its questions (AuthorizationFor), the hot path of every root call.
  Authorizer* AuthorizerFor(const Principal& principal) const {
    Authorizer* a = options_.authorizer;
    if (a == nullptr || !principal.agent_of.empty() || !a->Evaluates(principal)) return nullptr;
    return a;
  }

  // Every question of a call, before it runs (ctx.authorizer is set).
  static Status Authorize(const CallContext& ctx, const std::vector<AuthRequest>& questions) {
    for (const AuthRequest& q : questions) RETURN_IF_ERROR(ctx.authorizer->Authorize(ctx, q));
    return OkStatus();
  }

  JsonService* FindService(std::string_view prefix) const {
    for (JsonService* s : services_)
      if (s->TargetPrefix() == prefix) return s;
    return nullptr;
  }

  // An event-stream operation's answer (JsonShapedService::StreamsOutput): the JSON protocol's
  // initial-response event (empty: these operations' outputs have no other member), then the
  // service's events.
  static http::Response EventStreamResponse(http::BodyProducer events, std::string_view request_id) {
    http::Response resp;
    resp.headers.push_back({"x-amzn-RequestId", std::string(request_id)});
    resp.headers.push_back({"Content-Type", "application/vnd.amazon.eventstream"});
    resp.stream = [events = std::move(events)](http::BodyWriter& w) {
      if (w.Write(EncodeEvent("initial-response", "{}"))) events(w);
    };
    return resp;
  }

  // `*out` learns the service the request is routed to, once it is known; `*stream` the producer
  // of an event-stream operation's body (then the returned body is empty).
  StatusOr<std::string> Dispatch(const http::Request& req, const std::string& request_id, const JsonService** out,
                                 RequestRecord* record, http::BodyProducer* stream) {
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
    *out = service;
    if (record) {
      record->service = std::string(service->SigningName());
      record->action = std::string(action.substr(0, 128));
    }

    // AWS authenticates before it looks at the operation.
    ASSIGN_OR_RETURN(VerifiedRequest who, verifier_.Verify(req, service->SigningName()));
    if (record) record->account = who.principal.account.str();

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

    ASSIGN_OR_RETURN(CallContext ctx, BeginCall(*service, std::move(who), action, req, request_id, now));
    ASSIGN_OR_RETURN(json::value input, ParseBody(req.body));
    RETURN_IF_ERROR(service->Model().ValidateInput(action, input));
    if (ctx.authorizer != nullptr) RETURN_IF_ERROR(Authorize(ctx, service->AuthorizationFor(ctx, input.get_object())));
    try {
      if (service->StreamsOutput(action)) {
        ASSIGN_OR_RETURN(*stream, service->CallStream(ctx, input.get_object()));
        return std::string();
      }
      StatusOr<std::string> answer = service->Call(ctx, input.get_object());
      if (answer.ok() && options_.call_succeeded) options_.call_succeeded(ctx, service->SigningName());
      return answer;
    } catch (const std::exception& e) {
      return Internal(fmt::format("An internal error occurred while processing {}: {}", action, e.what()));
    } catch (...) {
      return Internal(fmt::format("An internal error occurred while processing {}.", action));
    }
  }

  // REST-JSON (aws/rest_json.h): the service and its compiled routes.
  struct RestJsonEntry {
    RestJsonService* service;
    std::unique_ptr<internal::RestJsonRoutes> routes;
  };

  // The REST-JSON service a request is for: no X-Amz-Target, and its credential scope names it.
  const RestJsonEntry* FindRestJsonService(const http::Request& req) const {
    if (rest_services_.empty() || req.HasHeader("X-Amz-Target")) return nullptr;
    std::string_view authorization = req.GetHeader("Authorization");
    if (authorization.empty()) return nullptr;
    StatusOr<SigV4Authorization> auth = ParseAuthorization(authorization);
    if (!auth.ok()) return nullptr;
    for (const RestJsonEntry& e : rest_services_)
      if (e.service->SigningName() == auth->service) return &e;
    return nullptr;
  }

  http::Response HandleRestJson(const RestJsonEntry& entry, const http::Request& req, const std::string& request_id,
                                RequestRecord* record) {
    StatusOr<std::pair<int, std::string>> out = DispatchRestJson(entry, req, request_id, record);
    if (out.ok()) return internal::RestJsonResponse(out->first, std::move(out->second), request_id);
    std::optional<AwsError> claimed = entry.service->ErrorFor(out.status());
    AwsError error = claimed ? *claimed : AwsErrorFor(out.status());
    // Smithy's server frameworks answer a request no operation's route matches with 404.
    if (!claimed && IsError(out.status(), Error::kUnknownOperation)) error.http_status = 404;
    // restJson1 services (Lambda, EKS, ...) answer a denial with 403, as the Query dialect does.
    if (!claimed && error.type == "AccessDeniedException") error.http_status = 403;
    return internal::RestJsonErrorResponse(out.status(), error, entry.service->Model().ErrorMessageMember(error.type),
                                           request_id);
  }

  // The response code and body of the call `req` routes to.
  StatusOr<std::pair<int, std::string>> DispatchRestJson(const RestJsonEntry& entry, const http::Request& req,
                                                          const std::string& request_id, RequestRecord* record) {
    const TimePoint now = clock_.Now();
    RestJsonService& service = *entry.service;
    if (record) record->service = std::string(service.SigningName());
    // AWS authenticates before it looks at the operation.
    ASSIGN_OR_RETURN(VerifiedRequest who, verifier_.Verify(req, service.SigningName()));
    if (record) record->account = who.principal.account.str();
    ASSIGN_OR_RETURN(internal::RestJsonRoute route, entry.routes->Route(req.method, req.Path(), req.Query()));
    const std::string& action = route.binding->operation;
    if (record) record->action = action;
    if (!service.Implements(action))
      return UnknownOperation(fmt::format("The operation '{}' is not implemented by this server.", action));

    ASSIGN_OR_RETURN(CallContext ctx, BeginCall(service, std::move(who), action, req, request_id, now));
    ASSIGN_OR_RETURN(json::value input, internal::DecodeRestJsonInput(*route.binding, route.labels, req));
    RETURN_IF_ERROR(service.Model().ValidateInput(action, input));
    if (ctx.authorizer != nullptr) RETURN_IF_ERROR(Authorize(ctx, service.AuthorizationFor(ctx, input.get_object())));
    try {
      ASSIGN_OR_RETURN(std::string body, service.Call(ctx, input.get_object()));
      return std::pair<int, std::string>(route.binding->response_code, std::move(body));
    } catch (const std::exception& e) {
      return Internal(fmt::format("An internal error occurred while processing {}: {}", action, e.what()));
    }
  }

  const FrontOptions options_;
  const Clock& clock_;
  SigV4Verifier verifier_;
  Throttler throttler_;
  std::vector<JsonService*> services_;  // written only before serving
  std::vector<QueryService*> query_services_;  // written only before serving
  std::vector<RestJsonEntry> rest_services_;   // written only before serving
};

ApiFront::ApiFront(FrontOptions options, const Clock& clock, CredentialResolver& resolver)
    : impl_(std::make_unique<Impl>(std::move(options), clock, resolver)) {}

ApiFront::~ApiFront() = default;

void ApiFront::AddQueryService(QueryService* service) { impl_->AddQueryService(service); }

void ApiFront::AddJsonService(JsonService* service) { impl_->AddJsonService(service); }

void ApiFront::AddRestJsonService(RestJsonService* service) { impl_->AddRestJsonService(service); }

http::Response ApiFront::Handle(const http::Request& req) { return impl_->Handle(req); }

void ApiFront::SetRateLimitServers(int servers) { impl_->SetRateLimitServers(servers); }

}  // namespace paddock::aws
