// The API front: turns HTTP requests into service calls and service results into AWS responses.
//
//   ApiFront front(options, clock, resolver);
//   front.AddJsonService(&ecs);
//   http::Server server(http_options, [&](const http::Request& r) { return front.Handle(r); });
//
// A form-encoded request (Content-Type application/x-www-form-urlencoded, or a GET with
// Action= in the query) is a Query-protocol call: it goes to the QueryService named by the SigV4
// credential scope's service and is answered in XML. A request with neither that nor an
// X-Amz-Target whose credential scope names a RestJsonService is a REST-JSON call, routed by
// method and path (aws/rest_json.h). Otherwise, for a JSON 1.0 or 1.1 request it: picks the
// service by the X-Amz-Target prefix; verifies SigV4;
// applies the action's throttle bucket (when rate limits are on); parses the body (UTF-8,
// bounded nesting) and validates it against the model; calls the service; and answers with
// the service's application/x-amz-json-1.x (its model's jsonVersion), an x-amzn-RequestId header
// and, on error, {"__type": ..., "message": ...} with x-amzn-ErrorType and AWS's status code
// (JSON 1.0: "__type" is the full shape ID, aws/json_version.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aws/credentials.h"
#include "aws/errors.h"
#include "aws/json_version.h"
#include "aws/service.h"
#include "aws/sigv4.h"
#include "aws/throttle.h"
#include "common/clock.h"
#include "common/status.h"
#include "http/message.h"

namespace paddock::aws {

class RestJsonService;

// What the front saw of one request, for an access log (FrontOptions::observer).
struct RequestRecord {
  std::string service;  // the service's signing name ("ecs", "ec2"); empty when none was found
  std::string action;   // empty when the request named none
  std::string account;  // the caller's account; empty when it was not authenticated
  int http_status = 0;
  std::string error;    // the AWS error code; empty on success
  std::chrono::microseconds latency{0};  // from Handle's start to its answer
};

struct FrontOptions {
  VerifierOptions auth;
  bool rate_limits = false;  // --api-rate-limits=aws
  // Decides every call of every principal it evaluates (Authorizer::Evaluates) but a container
  // instance's agent (which AgentMay bounds) before the call runs; null: no authorization
  // (--accept-any-credentials). Must outlive the front.
  Authorizer* authorizer = nullptr;
  // Called once per request, on the request's thread, after its answer is made (`--access-log`,
  // cli/access_log.h). Must be cheap and thread-safe. Optional.
  std::function<void(const RequestRecord&)> observer;
  // Called after a JSON-protocol call its service answered without error (not for an event stream),
  // on the request's thread, with the call's context and the service's signing name: for readers
  // that follow what accounts change (the console's change feed). Must be cheap and thread-safe;
  // it costs a request nothing when unset. Optional.
  std::function<void(const CallContext&, std::string_view signing_name)> call_succeeded;
};

class ApiFront {
 public:
  ApiFront(FrontOptions options, const Clock& clock, CredentialResolver& resolver);
  ~ApiFront();

  // REQUIRES: called before serving; `service` outlives the front.
  void AddJsonService(JsonService* service);
  // REQUIRES: called before serving; `service` outlives the front.
  void AddQueryService(QueryService* service);
  // REQUIRES: called before serving; `service` outlives the front. (aws/rest_json.h)
  void AddRestJsonService(RestJsonService* service);

  // Thread-safe.
  http::Response Handle(const http::Request& req);

  // How many servers share every account's rate limits (FrontOptions::rate_limits): each bucket
  // of this front admits 1/servers of AWS's rate and burst (aws/throttle.h). Thread-safe; 1 until
  // called. Several servers on one store set it from their count of live servers.
  void SetRateLimitServers(int servers);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A JSON 1.1 error response: `error`'s type and status, `status`'s message. The front answers
// with the service's ErrorFor(status) when it has one, else AwsErrorFor(status) (aws/errors.h).
http::Response JsonErrorResponse(const Status& status, const AwsError& error, std::string_view request_id);
// The same in `version`'s dialect (aws/json_version.h): its Content-Type, and for JSON 1.0 the
// full shape ID in "__type", `error_namespace` qualifying the service's own error types.
http::Response JsonErrorResponse(const Status& status, const AwsError& error, std::string_view request_id,
                                 JsonVersion version, std::string_view error_namespace);

}  // namespace paddock::aws
