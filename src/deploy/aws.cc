#include "deploy/aws.h"

#include <array>
#include <cctype>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/eventstream.h"
#include "aws/json_client.h"
#include "common/encoding.h"
#include "http/message.h"

namespace paddock::deploy {
namespace json = boost::json;

namespace {

std::string_view ErrorCodeName(int code) {
  switch (static_cast<Error>(code)) {
    case Error::kThrottled: return "Throttled";
    case Error::kNotFound: return "NotFound";
    case Error::kRejected: return "Rejected";
    case Error::kDenied: return "Denied";
    case Error::kAlreadyExists: return "AlreadyExists";
    case Error::kLeaseLost: return "LeaseLost";
  }
  return "?";
}

constexpr ErrorDomain kDomain{"deploy", &ErrorCodeName};

std::string_view TargetPrefix(AwsService s) {
  switch (s) {
    case AwsService::kEcs: return "AmazonEC2ContainerServiceV20141113";
    case AwsService::kSsm: return "AmazonSSM";
    case AwsService::kLogs: return "Logs_20140328";
    case AwsService::kServiceDiscovery: return "Route53AutoNaming_v20170314";
  }
  return "";
}

std::optional<Error> Classify(std::string_view type) {
  if (type == "ThrottlingException" || type == "Throttling" || type == "TooManyRequestsException" ||
      type == "RequestLimitExceeded" || type == "ThrottledException") {
    return Error::kThrottled;
  }
  if (type.ends_with("NotFoundException") || type == "ParameterNotFound" || type == "ServiceNotActiveException" ||
      type == "ClusterNotFoundException" || type == "NamespaceNotFound" || type == "ServiceNotFound" ||
      type == "NoSuchEntity") {
    return Error::kNotFound;
  }
  if (type == "AccessDeniedException" || type == "AccessDenied") return Error::kDenied;  // JSON / Query
  if (type == "ParameterAlreadyExists" || type == "ResourceAlreadyExistsException" || type == "EntityAlreadyExists") {
    return Error::kAlreadyExists;
  }
  if (type == "ClientException" || type == "InvalidParameterException" || type == "ValidationException" ||
      type == "ParameterMaxVersionLimitExceeded" || type == "InvalidInput") {
    return Error::kRejected;
  }
  return std::nullopt;
}

// A Status for a type ("ThrottlingException", ...) and message, with Error's detail and the code
// that goes with it; `fallback` when the type is none of Error's.
Status Classified(std::string_view type, std::string_view message, StatusCode fallback) {
  StatusCode code = fallback;
  ErrorDetail detail;
  if (std::optional<Error> e = Classify(type)) {
    detail = *e;
    if (*e == Error::kThrottled) code = StatusCode::kResourceExhausted;
    if (*e == Error::kNotFound) code = StatusCode::kNotFound;
    if (*e == Error::kRejected) code = StatusCode::kInvalidArgument;
    if (*e == Error::kDenied) code = StatusCode::kPermissionDenied;
  }
  return Status(code, fmt::format("{}: {}", type, message), detail);
}

// A JSON 1.1 error answer (any status but 200) as a Status: "<type>: <message>".
Status ErrorAnswer(const http::Response& resp) {
  boost::system::error_code ec;
  json::value v = json::parse(resp.body, ec);
  std::string type(resp.GetHeader("x-amzn-ErrorType"));
  std::string message = resp.body;
  if (!ec && v.is_object()) {
    const json::object& o = v.as_object();
    if (auto* t = o.if_contains("__type"); t && t->is_string() && type.empty()) type = t->as_string();
    for (std::string_view key : {"message", "Message"}) {
      if (auto* m = o.if_contains(key); m && m->is_string()) message = m->as_string();
    }
  }
  if (size_t colon = type.find(':'); colon != std::string::npos) type.resize(colon);
  if (size_t hash = type.rfind('#'); hash != std::string::npos) type = type.substr(hash + 1);
  if (type.empty()) type = "HTTP " + std::to_string(resp.status);
  return Classified(type, message, resp.status >= 500 ? StatusCode::kUnavailable : StatusCode::kFailedPrecondition);
}

std::string JsonMessage(std::string_view payload) {
  boost::system::error_code ec;
  json::value v = json::parse(payload, ec);
  if (!ec && v.is_object()) {
    for (std::string_view key : {"message", "Message"}) {
      if (const json::value* m = v.as_object().if_contains(key); m && m->is_string()) return std::string(m->as_string());
    }
  }
  return std::string(payload);
}

// One sessionUpdate's payload.
StatusOr<LiveTailUpdate> ParseUpdate(std::string_view payload) {
  boost::system::error_code ec;
  json::value v = json::parse(payload, ec);
  if (ec || !v.is_object()) return DataLoss("StartLiveTail: a sessionUpdate that is not a JSON object");
  LiveTailUpdate u;
  const json::object& o = v.as_object();
  if (const json::value* m = o.if_contains("sessionMetadata"); m && m->is_object()) {
    if (const json::value* s = m->as_object().if_contains("sampled"); s && s->is_bool()) u.sampled = s->as_bool();
  }
  if (const json::value* rs = o.if_contains("sessionResults"); rs && rs->is_array()) {
    for (const json::value& r : rs->as_array()) {
      if (!r.is_object()) continue;
      const json::object& e = r.as_object();
      LiveTailEvent event;
      if (const json::value* x = e.if_contains("logStreamName"); x && x->is_string()) event.stream = x->as_string();
      if (const json::value* x = e.if_contains("message"); x && x->is_string()) event.message = x->as_string();
      if (const json::value* x = e.if_contains("timestamp"); x && x->is_number()) event.timestamp_ms = x->to_number<int64_t>();
      if (const json::value* x = e.if_contains("ingestionTime"); x && x->is_number()) {
        event.ingestion_ms = x->to_number<int64_t>();
      }
      u.events.push_back(std::move(event));
    }
  }
  return u;
}

}  // namespace

StatusOr<LiveTailEnd> Aws::StartLiveTail(const json::object&, const LiveTailHandler&) {
  return Unavailable("StartLiveTail: this client has no event streams");
}

const ErrorDomain& ErrorDomainOf(Error) { return kDomain; }

std::string_view AwsServiceName(AwsService s) {
  switch (s) {
    case AwsService::kEcs: return "ecs";
    case AwsService::kSsm: return "ssm";
    case AwsService::kLogs: return "logs";
    case AwsService::kServiceDiscovery: return "servicediscovery";
  }
  return "";
}

std::map<std::string, AwsEndpoint, std::less<>> AwsPublicEndpoints(std::string_view region,
                                                                  const http::ClientTlsOptions& tls) {
  std::map<std::string, AwsEndpoint, std::less<>> out;
  for (std::string_view service : {"ecs", "ssm", "logs", "servicediscovery", "sts", "ec2"}) {
    out.emplace(service, AwsEndpoint{.host = fmt::format("{}.{}.amazonaws.com", service, region), .tls = tls});
  }
  out.emplace("iam", AwsEndpoint{.host = "iam.amazonaws.com", .tls = tls, .signing_region = "us-east-1"});
  return out;
}

class HttpAws::Impl {
 public:
  explicit Impl(HttpAwsOptions o) : options_(std::move(o)) {
    for (AwsService s : {AwsService::kEcs, AwsService::kSsm, AwsService::kLogs, AwsService::kServiceDiscovery}) {
      clients_[static_cast<size_t>(s)] = std::make_unique<Slot>(ClientOptions(AwsServiceName(s)));
    }
    for (std::string_view s : {"sts", "ec2", "iam"}) query_.emplace(s, std::make_unique<Slot>(ClientOptions(s)));
  }

  // The client of the service signed as `signing_name`: its own endpoint, or the shared one.
  aws::JsonClientOptions ClientOptions(std::string_view signing_name) const {
    aws::JsonClientOptions c{.host = options_.host, .port = options_.port, .region = options_.region,
                             .credentials = options_.credentials, .timeout = std::chrono::seconds(30),
                             .signing_name = std::string(signing_name), .tls = options_.tls};
    if (auto e = options_.per_service.find(signing_name); e != options_.per_service.end()) {
      c.host = e->second.host;
      c.port = e->second.port;
      c.tls = e->second.tls;
      if (!e->second.signing_region.empty()) c.region = e->second.signing_region;
    }
    return c;
  }

  StatusOr<json::value> Call(AwsService service, std::string_view action, const json::object& body) {
    Slot& slot = *clients_[static_cast<size_t>(service)];
    std::lock_guard lock(slot.mu);
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                   {"X-Amz-Target", fmt::format("{}.{}", TargetPrefix(service), action)}};
    req.body = json::serialize(body);
    StatusOr<http::Response> resp = slot.client.SendSigned(std::move(req), AwsServiceName(service));
    Status outcome = resp.ok() ? OkStatus() : resp.status();
    json::value v;
    if (resp.ok()) {
      boost::system::error_code ec;
      v = json::parse(resp->body, ec);
      if (resp->status != 200) {
        outcome = ErrorAnswer(*resp);
      } else if (ec) {
        outcome = DataLoss(fmt::format("{} {}: the answer is not JSON", AwsServiceName(service), action));
      }
    }
    if (observer_) observer_(service, action, body, outcome.ok());
    if (!outcome.ok()) return outcome;
    return v;
  }

  // A connection of its own per session. The stream is decoded as it comes (aws/eventstream.h):
  // initial-response skipped, sessionStart and sessionUpdate handed on, an exception or error
  // message ends it.
  StatusOr<LiveTailEnd> StartLiveTail(const json::object& body, const LiveTailHandler& handler) {
    aws::JsonClient client(ClientOptions("logs"));
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Content-Type", "application/x-amz-json-1.1"},
                   {"Accept", "application/vnd.amazon.eventstream"},
                   {"X-Amz-Target", fmt::format("{}.StartLiveTail", TargetPrefix(AwsService::kLogs))}};
    req.body = json::serialize(body);
    aws::EventStreamDecoder decoder;
    std::vector<aws::EventStreamMessage> messages;
    Status failed;  // what ended the stream from inside (an exception, a bad frame)
    std::optional<LiveTailEnd> ended;
    auto on_body = [&](std::string_view bytes) {
      messages.clear();
      const Status fed = decoder.Feed(bytes, messages);  // the messages before a bad one still count
      for (const aws::EventStreamMessage& m : messages) {
        const std::string_view type = m.Header(":message-type");
        if (type == "event") {
          const std::string_view event = m.Header(":event-type");
          if (event == "sessionStart") {
            if (handler.started && !handler.started()) ended = LiveTailEnd::kStoppedByCaller;
          } else if (event == "sessionUpdate") {
            StatusOr<LiveTailUpdate> u = ParseUpdate(m.payload);
            if (!u.ok()) {
              failed = u.status();
            } else if (handler.update && !handler.update(*u)) {
              ended = LiveTailEnd::kStoppedByCaller;
            }
          }  // initial-response, and events this reader does not know, are skipped
        } else if (type == "exception") {
          const std::string_view exception = m.Header(":exception-type");
          if (exception == "SessionTimeoutException") {
            ended = LiveTailEnd::kEndedByServer;
          } else {
            failed = Classified(exception, JsonMessage(m.payload), StatusCode::kUnavailable);
          }
        } else if (type == "error") {
          failed = Classified(m.Header(":error-code"), m.Header(":error-message"), StatusCode::kUnavailable);
        }
        if (ended || !failed.ok()) return false;
      }
      failed = fed;
      return failed.ok();
    };
    StatusOr<http::Response> resp = client.StreamSigned(std::move(req), "logs", on_body);
    const bool answered = resp.ok() && resp->status == 200;
    if (observer_) observer_(AwsService::kLogs, "StartLiveTail", body, answered);
    if (!resp.ok()) return resp.status();
    if (resp->status != 200) return ErrorAnswer(*resp);
    if (!failed.ok()) return failed;
    if (ended) return *ended;
    if (decoder.buffered() != 0) return DataLoss("StartLiveTail: the stream stopped inside a message");
    return LiveTailEnd::kEndedByServer;
  }

  StatusOr<std::string> Query(std::string_view service, const std::vector<std::pair<std::string, std::string>>& params) {
    auto slot = query_.find(service);
    if (slot == query_.end()) return InvalidArgument(fmt::format("no Query client for {}", service));
    std::lock_guard lock(slot->second->mu);
    http::Request req;
    req.method = "POST";
    req.target = "/";
    req.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    for (const auto& [k, v] : params) {
      if (!req.body.empty()) req.body += '&';
      req.body += PercentEncode(k) + "=" + PercentEncode(v);
    }
    ASSIGN_OR_RETURN(http::Response resp, slot->second->client.SendSigned(std::move(req), service));
    if (resp.status == 200) return resp.body;
    auto text = [&](std::string_view tag) { return XmlText(resp.body, tag); };
    const std::string code = text("Code");
    ErrorDetail detail;
    if (std::optional<Error> e = Classify(code)) detail = *e;
    return Status(resp.status >= 500 ? StatusCode::kUnavailable : StatusCode::kFailedPrecondition,
                  fmt::format("{}: {}", code, text("Message")), detail);
  }

  std::function<void(AwsService, std::string_view, const json::object&, bool)> observer_;

 private:
  const HttpAwsOptions options_;

  struct Slot {
    explicit Slot(aws::JsonClientOptions o) : client(std::move(o)) {}
    std::mutex mu;
    aws::JsonClient client;
  };
  std::array<std::unique_ptr<Slot>, 4> clients_;
  std::map<std::string, std::unique_ptr<Slot>, std::less<>> query_;  // sts, ec2, iam
};

std::string XmlText(std::string_view xml, std::string_view tag) {
  const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  size_t a = xml.find(open);
  if (a == std::string_view::npos) return "";
  a += open.size();
  size_t b = xml.find(close, a);
  return b == std::string_view::npos ? "" : XmlUnescape(xml.substr(a, b - a));
}

HttpAws::HttpAws(HttpAwsOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpAws::~HttpAws() = default;

StatusOr<json::value> HttpAws::Call(AwsService service, std::string_view action, const json::object& body) {
  return impl_->Call(service, action, body);
}

StatusOr<LiveTailEnd> HttpAws::StartLiveTail(const json::object& body, const LiveTailHandler& handler) {
  return impl_->StartLiveTail(body, handler);
}

StatusOr<std::string> HttpAws::Query(std::string_view service,
                                     const std::vector<std::pair<std::string, std::string>>& params) {
  return impl_->Query(service, params);
}

void HttpAws::set_observer(std::function<void(AwsService, std::string_view, const json::object&, bool)> observer) {
  impl_->observer_ = std::move(observer);
}

}  // namespace paddock::deploy
