// deploy/aws: how the controller calls AWS — ECS, SSM, CloudWatch Logs and Cloud Map, all JSON 1.1 —
// on any endpoint: Paddock's own or another ECS-compatible one. A seam of one function, so the
// reconcile driver runs against a real endpoint in production and the suites, and against a fake in
// its unit tests. Failures carry a typed detail the controller acts on (a throttle is never a
// deployment failure; a missing service is a fact, not an error).
//
//   HttpAws aws({.host = "127.0.0.1", .port = 4566, .credentials = creds});
//   ASSIGN_OR_RETURN(json::value v, aws.Call(AwsService::kEcs, "ListServices", {{"cluster", "default"}}));
//
// CloudWatch Logs' StartLiveTail answers an event stream that lasts: StartLiveTail reads it as it
// comes and hands each update to a handler (`deployments logs --follow`, deploy/api.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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

namespace paddock::deploy {

enum class AwsService { kEcs, kSsm, kLogs, kServiceDiscovery };

// How the controller tells AWS failures apart (Status detail).
enum class Error {
  kThrottled = 1,   // ThrottlingException and its kin: back off, never fail a deployment
  kNotFound,        // ServiceNotFoundException, ParameterNotFound, ResourceNotFoundException, NoSuchEntity, ...
  kRejected,        // ClientException, InvalidParameterException, ValidationException: a permanent error
  kDenied,          // AccessDeniedException (JSON), AccessDenied (Query)
  kAlreadyExists,   // ParameterAlreadyExists, ResourceAlreadyExistsException, EntityAlreadyExists
  kLeaseLost,       // not used by calls: the controller stopped leading mid-tick
};
const ErrorDomain& ErrorDomainOf(Error);

// One event of a StartLiveTail update.
struct LiveTailEvent {
  std::string stream;  // logStreamName
  std::string message;
  int64_t timestamp_ms = 0;
  int64_t ingestion_ms = 0;
};

// One sessionUpdate: what was ingested since the last one (AWS sends one a second, empty or not).
struct LiveTailUpdate {
  std::vector<LiveTailEvent> events;
  bool sampled = false;  // more matched than the update holds (AWS: above 500 a second)
};

// What a StartLiveTail session tells its reader, on the calling thread, in order. Each returns
// false to end the session (the connection is closed).
struct LiveTailHandler {
  // sessionStart came: every event ingested from now on will be in an update.
  std::function<bool()> started = {};
  std::function<bool(const LiveTailUpdate&)> update = {};
};

enum class LiveTailEnd {
  kStoppedByCaller,  // a handler returned false
  kEndedByServer,    // SessionTimeoutException (AWS: after three hours), or the stream ended between messages
};

class Aws {
 public:
  virtual ~Aws() = default;
  // One call. An error answer is a Status whose message is "<AWS type>: <message>" with the detail
  // above when the type is one of them; a transport failure is kUnavailable.
  virtual StatusOr<boost::json::value> Call(AwsService service, std::string_view action,
                                            const boost::json::object& body) = 0;

  // CloudWatch Logs' StartLiveTail with `body` (logGroupIdentifiers as ARNs, ...), read as it
  // arrives, on a connection of its own (a session lasts; other calls go on meanwhile). Blocks
  // until the session ends, and says how. An error when it was refused before sessionStart (the
  // answer's Status, as Call's: kDenied for AccessDeniedException, ...; an endpoint without the
  // operation answers some other refusal), when the stream carries an exception other than the
  // session's timeout or an error message (kUnavailable, the exception's type and message), when a
  // frame is malformed or the stream stops inside one (kDataLoss), or on a transport failure
  // (kUnavailable). The default: kUnavailable with no call made, for fakes and endpoints without
  // event streams.
  virtual StatusOr<LiveTailEnd> StartLiveTail(const boost::json::object& body, const LiveTailHandler& handler);
};

// The Query-protocol services (STS, EC2, IAM) the preflight asks (deploy/verify.h): one form-encoded
// call, signed for `service` ("sts", "ec2", "iam"), answered with its XML body, or an error whose
// message is the AWS error's "<Code>: <Message>", with Error's detail when the code is one of them.
class QueryAws {
 public:
  virtual ~QueryAws() = default;
  virtual StatusOr<std::string> Query(std::string_view service,
                                      const std::vector<std::pair<std::string, std::string>>& params) = 0;
};

// The text of the first <tag>...</tag> in a Query answer's XML, its entities decoded; "" if none.
std::string XmlText(std::string_view xml, std::string_view tag);

// Where one service is answered.
struct AwsEndpoint {
  std::string host;
  uint16_t port = 443;
  std::optional<http::ClientTlsOptions> tls = std::nullopt;  // HTTPS, with these checks; unset: plain HTTP
  std::string signing_region = "";  // HttpAwsOptions::region when empty (IAM's global endpoint signs for us-east-1)
};

struct HttpAwsOptions {
  // The one endpoint every service shares (Paddock's way, and LocalStack's).
  std::string host = "127.0.0.1";
  uint16_t port = 4566;
  std::string region = "us-east-1";
  aws::SigningCredentials credentials;
  std::optional<http::ClientTlsOptions> tls = std::nullopt;  // HTTPS, with these checks; unset: plain HTTP
  // An endpoint of its own for a service, by its signing name ("ecs", "ssm", "logs",
  // "servicediscovery", "sts", "ec2", "iam"): AWS's (AwsPublicEndpoints) or an operator's.
  std::map<std::string, AwsEndpoint, std::less<>> per_service = {};
};

// The services the controller calls, by signing name, at AWS's own public endpoints in `region`:
// https://<service>.<region>.amazonaws.com, and IAM's global https://iam.amazonaws.com (signed for
// us-east-1), each checked against `tls` (the system's CAs by default).
std::map<std::string, AwsEndpoint, std::less<>> AwsPublicEndpoints(std::string_view region,
                                                                  const http::ClientTlsOptions& tls = {});

// Thread-safe: one connection per service, each used under its own lock.
class HttpAws final : public Aws, public QueryAws {
 public:
  explicit HttpAws(HttpAwsOptions options);
  ~HttpAws() override;
  StatusOr<boost::json::value> Call(AwsService service, std::string_view action,
                                    const boost::json::object& body) override;
  StatusOr<LiveTailEnd> StartLiveTail(const boost::json::object& body, const LiveTailHandler& handler) override;
  StatusOr<std::string> Query(std::string_view service,
                              const std::vector<std::pair<std::string, std::string>>& params) override;
  // Called after each call with (service, action, body, ok): the controller's call log.
  void set_observer(std::function<void(AwsService, std::string_view, const boost::json::object&, bool)> observer);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

std::string_view AwsServiceName(AwsService);  // "ecs", "ssm", "logs", "servicediscovery"

}  // namespace paddock::deploy
