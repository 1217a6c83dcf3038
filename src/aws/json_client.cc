#include "aws/json_client.h"

#include <optional>
#include <tuple>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "aws/errors.h"
#include "common/clock.h"

namespace paddock::aws {
namespace json = boost::json;

JsonClient::JsonClient(JsonClientOptions options) : options_(std::move(options)) {
  endpoints_.emplace_back(options_.host, options_.port);
  for (const auto& e : options_.alternates) endpoints_.push_back(e);
  Connect();
}

void JsonClient::Connect() {
  std::unique_ptr<http::Client> next;
  if (!options_.tls) {
    next = std::make_unique<http::Client>(options_.host, options_.port, options_.timeout);
  } else {
    StatusOr<std::unique_ptr<http::Client>> tls =
        http::Client::Tls(options_.host, options_.port, options_.timeout, *options_.tls);
    if (tls.ok()) {
      next = std::move(*tls);
    } else {
      init_error_ = tls.status();
    }
  }
  std::lock_guard lock(http_mu_);  // Cancel may look at http_ from another thread
  std::swap(http_, next);
}

void JsonClient::Cancel() {
  std::lock_guard lock(http_mu_);
  if (http_) http_->Cancel();
}

void JsonClient::FailOver() {
  if (endpoints_.size() < 2) return;
  current_ = (current_ + 1) % endpoints_.size();
  std::tie(options_.host, options_.port) = endpoints_[current_];
  Connect();
}

namespace {

void Sign(http::Request& req, const JsonClientOptions& o, std::string_view signing_name) {
  std::string host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::erase_if(req.headers, [](const http::Header& h) { return h.name == "Host"; });
  // HTTPS on its default port is signed as the bare name, as the SDKs send it.
  if (!(o.tls && o.port == 443)) host = fmt::format("{}:{}", host, o.port);
  req.headers.insert(req.headers.begin(), {"Host", host});
  SignRequest(req, o.credentials, o.region, std::string(signing_name), SystemClock::Get().Now());
}

}  // namespace

StatusOr<http::Response> JsonClient::SendSigned(http::Request req, std::string_view signing_name) {
  if (!http_) return init_error_;
  Sign(req, options_, signing_name);
  StatusOr<http::Response> resp = http_->Send(req);
  if (!resp.ok() && resp.status().code() == StatusCode::kUnavailable) FailOver();
  return resp;
}

StatusOr<http::Response> JsonClient::StreamSigned(http::Request req, std::string_view signing_name,
                                                  const std::function<bool(std::string_view)>& on_body) {
  if (!http_) return init_error_;
  Sign(req, options_, signing_name);
  StatusOr<http::Response> resp = http_->Stream(req, on_body);
  if (!resp.ok() && resp.status().code() == StatusCode::kUnavailable) FailOver();
  return resp;
}

StatusOr<json::value> JsonClient::Call(std::string_view target, const json::object& body) {
  http::Request req;
  req.method = "POST";
  req.target = "/";
  req.headers = {{"Content-Type", "application/x-amz-json-1.1"}, {"X-Amz-Target", std::string(target)}};
  req.body = json::serialize(body);
  ASSIGN_OR_RETURN(http::Response resp, SendSigned(std::move(req), options_.signing_name));
  boost::system::error_code ec;
  json::value v = json::parse(resp.body, ec);
  if (resp.status != 200) {
    std::string type(resp.GetHeader("x-amzn-ErrorType"));
    std::string message = resp.body;
    if (!ec && v.is_object()) {
      const json::object& o = v.get_object();
      if (auto* t = o.if_contains("__type"); t && t->is_string() && type.empty()) type = t->get_string();
      if (auto* m = o.if_contains("message"); m && m->is_string()) message = m->get_string();
    }
    if (size_t colon = type.find(':'); colon != std::string::npos) type.resize(colon);
    StatusCode code = resp.status >= 500 ? StatusCode::kUnavailable : StatusCode::kFailedPrecondition;
    if (type == "AccessDeniedException") code = StatusCode::kPermissionDenied;
    if (type == "InvalidParameterException" || type == "ClientException") code = StatusCode::kInvalidArgument;
    if (type == "LimitExceededException") code = StatusCode::kResourceExhausted;
    // The answer's code, read back into aws/'s own vocabulary (an unknown key, an unknown
    // operation); a service's own codes the caller tells apart by the status code alone.
    ErrorDetail detail;
    if (std::optional<Error> a = ErrorFromAwsCode(type)) detail = *a;
    return Status(code, message, detail);
  }
  if (ec) return DataLoss(fmt::format("{}: the answer is not JSON", target));
  return v;
}

}  // namespace paddock::aws
