// aws/json_client: the client side of a JSON 1.1 call to an API front — one keep-alive connection
// making SigV4-signed POSTs with X-Amz-Target, and an error answer read back into a Status. What
// every Paddock process that calls another's API shares: `paddock agent` (agent/remote), and
// `paddock edge` reading ECS (edge/ecs_source.h) and holding drains (edge/remote_holds.h).
//
//   aws::JsonClient client({.host = "10.0.0.1", .port = 4566, .region = "us-east-1", .credentials = creds});
//   ASSIGN_OR_RETURN(boost::json::value v,
//                    client.Call("AmazonEC2ContainerServiceV20141113.ListClusters", boost::json::object{}));
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "aws/sigv4.h"
#include "common/status.h"
#include "http/client.h"

namespace paddock::aws {

struct JsonClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 4566;
  std::string region = "us-east-1";
  SigningCredentials credentials;
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  std::string signing_name = "ecs";  // the SigV4 credential scope's service
  // HTTPS: the endpoint's certificate checked against these options (http/client.h). Unset: plain
  // HTTP. TLS options that do not load fail every call with the reason (kInvalidArgument).
  std::optional<http::ClientTlsOptions> tls = std::nullopt;
  // Other endpoints of the same service (several servers on one store): a call that fails in
  // transport (kUnavailable: refused, reset, timed out) sends the client's next call to the next
  // endpoint in turn, host then alternates. The failed call is not sent again (it may have been
  // applied): the caller retries as it would.
  std::vector<std::pair<std::string, uint16_t>> alternates = {};
};

// Not thread-safe (one caller at a time), except Cancel.
class JsonClient {
 public:
  explicit JsonClient(JsonClientOptions options);
  // `target` is "Prefix.Action". An error answer becomes a Status with its message, and a code by
  // its AWS error type: AccessDeniedException kPermissionDenied, InvalidParameterException and
  // ClientException kInvalidArgument, LimitExceededException kResourceExhausted, any other
  // kFailedPrecondition (kUnavailable for a 5xx); and, when the type is one of aws::Error's, that
  // detail. A transport failure is kUnavailable; a 200 whose body is not JSON, kDataLoss.
  StatusOr<boost::json::value> Call(std::string_view target, const boost::json::object& body);
  // Another protocol's request on the same connection (an EC2 Query call, say): its Host header
  // set, signed for `signing_name` with the client's credentials and region, and the answer
  // returned as it came (a transport failure is kUnavailable).
  StatusOr<http::Response> SendSigned(http::Request req, std::string_view signing_name);
  // SendSigned whose 2xx answer's body is read as it arrives (http::Client::Stream): for the
  // event-stream operations (CloudWatch Logs' StartLiveTail).
  StatusOr<http::Response> StreamSigned(http::Request req, std::string_view signing_name,
                                        const std::function<bool(std::string_view)>& on_body);
  void Cancel();

  const JsonClientOptions& options() const { return options_; }

 private:
  // Connects http_ to options_.host:port (init_error_ when its TLS options do not load).
  void Connect();
  // After a transport failure: the next endpoint, if there is another.
  void FailOver();

  JsonClientOptions options_;
  std::vector<std::pair<std::string, uint16_t>> endpoints_;  // host first, then the alternates
  size_t current_ = 0;
  std::mutex http_mu_;  // guards the http_ pointer between FailOver and Cancel
  std::unique_ptr<http::Client> http_;  // null when the TLS options did not load (init_error_)
  Status init_error_;
};

}  // namespace paddock::aws
