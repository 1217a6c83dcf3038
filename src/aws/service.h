// The seam where an AWS service plugs into the API front. ECS, SSM, CloudWatch Logs and Cloud
// Map (JSON 1.1) and JSON 1.0 services implement JsonService (REST-JSON: aws/rest_json.h); IAM and STS (Query/XML) will implement QueryService. The
// front does HTTP, authentication, throttling, decoding and input validation; a service sees
// only a validated input and returns its output document.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/credentials.h"
#include "aws/errors.h"
#include "aws/model.h"
#include "aws/throttle.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "http/message.h"

namespace paddock::aws {

// One authorization question: may a principal do `action` on `resource`, with these request
// context keys? The front asks each of a call's questions before it runs the call; an adapter
// asks more inside it (iam:PassRole for a launch's roles) through CallContext::authorizer.
// How an Authorizer words a denial: services word it differently, and the service asking knows
// its own (its ErrorFor names the code).
enum class DenialForm {
  // "User: <arn> is not authorized to perform: <action> on resource: <resource> because no
  // identity-based policy allows the <action> action" (ECS, IAM, STS).
  kAccessDenied,
  // EC2's UnauthorizedOperation: "You are not authorized to perform this operation. User: <arn> is
  // not authorized to perform: <action> because no identity-based policy allows the <action>
  // action" (no resource named).
  kUnauthorizedOperation,
};

struct AuthRequest {
  std::string action;    // "ecs:RunTask": IAM's service prefix and the action, as policies name it
  std::string resource;  // the resource's ARN, or "*" for an action that names none
  // Request context keys ("ecs:cluster", "aws:RequestTag/team", "aws:TagKeys", ...); a key
  // repeats for a multi-valued key. Only the action's own keys: the authorizer adds the keys every
  // request carries (time, aws:SourceIp, aws:RequestedRegion, aws:PrincipalTag/*), and these
  // replace them (what lets SimulatePrincipalPolicy's ContextEntries stand in for them).
  std::vector<std::pair<std::string, std::string>> context;
  DenialForm denial_form = DenialForm::kAccessDenied;
  // The resource's tags (aws:ResourceTag/<key>), for a resource that carries tags; null when it
  // carries none. Called at most once, during Authorize, and only when the principal's policies
  // name an aws:ResourceTag key — so a request costs no tag read unless a policy asks. A resource
  // that does not exist has no tags (an empty list), not an error.
  std::function<StatusOr<std::vector<std::pair<std::string, std::string>>>()> resource_tags = nullptr;
};

struct CallContext;

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  // OK when call.principal may make `request`; otherwise PermissionDenied with AWS's message in
  // the request's DenialForm ("User: <arn> is not authorized to perform: <action> on resource:
  // <resource> because ...") and type "AccessDeniedException", or the failure of reading the
  // principal's policies. The call gives what every question of one request shares: its time,
  // source address and region (aws:CurrentTime, aws:SourceIp, aws:RequestedRegion).
  virtual Status Authorize(const CallContext& call, const AuthRequest& request) = 0;
  // Whether Authorize can refuse `principal` anything. When false (an account's root), the front
  // neither builds a call's questions nor asks them, and gives the call no authorizer. The
  // default, true, evaluates every principal.
  virtual bool Evaluates(const Principal& principal) const {
    (void)principal;
    return true;
  }
};

struct CallContext {
  Scope scope;          // (caller's account, region from the credential scope)
  Principal principal;
  // The caller's address as the front sees it (the TCP peer, no port; IPv4-mapped IPv6 as IPv4):
  // aws:SourceIp. Empty when unknown (in-process callers, tests).
  std::string source_ip;
  // The front's authorizer, for the questions a call asks inside itself; null when this
  // principal's requests are not authorized (--accept-any-credentials, a principal the
  // authorizer does not evaluate, a container instance's agent).
  Authorizer* authorizer = nullptr;
  std::string request_id;
  std::string action;   // "RegisterTaskDefinition"
  TimePoint now;        // the request's arrival time
};

struct ThrottleGroup {
  std::string name;  // "ecs:task-definition-modify"
  BucketSpec spec;
};

// What every JSON-shaped service gives the front, whichever protocol picks its operation: JSON
// 1.0/1.1 by X-Amz-Target (JsonService, below) or REST-JSON by method and path (RestJsonService,
// aws/rest_json.h). The front validates the input against Model(), authenticates, authorizes
// (AuthorizationFor) and throttles, then runs Call.
class JsonShapedService {
 public:
  virtual ~JsonShapedService() = default;
  // "ecs": the SigV4 signing name.
  virtual std::string_view SigningName() const = 0;
  virtual const ServiceModel& Model() const = 0;
  // Whether this server implements `action` (the model may define more).
  virtual bool Implements(std::string_view action) const = 0;
  // The bucket that rate-limits `action`, if any.
  virtual std::optional<ThrottleGroup> ThrottleGroupFor(std::string_view action) const = 0;
  // Runs `action` on validated input; returns the serialized JSON response body.
  virtual StatusOr<std::string> Call(const CallContext& ctx, boost::json::object& input) = 0;
  // Whether `action`'s output is an event stream (an output member marked "eventstream":
  // CloudWatch Logs' StartLiveTail). For such an action the front calls CallStream instead of
  // Call; a failure it returns is an ordinary error response. Otherwise the front answers 200
  // with Content-Type application/vnd.amazon.eventstream, writes the JSON protocol's
  // `initial-response` event, then runs the returned producer on the stream's own thread
  // (http::BodyProducer): it writes the operation's events (aws/eventstream.h) until it returns.
  virtual bool StreamsOutput(std::string_view action) const {
    (void)action;
    return false;
  }
  virtual StatusOr<http::BodyProducer> CallStream(const CallContext& ctx, boost::json::object& input) {
    (void)ctx;
    (void)input;
    return Internal("this service streams no operation's output");
  }
  // Whether a container instance's agent (Principal::agent_of set) may call `action` at all; the
  // front refuses every other action of such a principal with AccessDeniedException. The action
  // itself still checks that the instance or task is the agent's own.
  virtual bool AgentMay(std::string_view action) const {
    (void)action;
    return false;
  }
  // What the front must authorize before it runs ctx.action on validated `input`: by default the
  // action on "*". A service names its resources and context keys per action.
  virtual std::vector<AuthRequest> AuthorizationFor(const CallContext& ctx, const boost::json::object& input) const {
    (void)input;
    return {AuthRequest{std::string(SigningName()) + ":" + ctx.action, "*", {}}};
  }
  // The service's error table: the AWS code and HTTP status for a failure whose detail is in its
  // vocabulary (ecs::Error::kClusterNotFound -> ClusterNotFoundException 400), or nullopt to let
  // the front answer AwsErrorFor(status). Asked for every failure of a request routed here,
  // including the front's own (authentication, validation).
  virtual std::optional<AwsError> ErrorFor(const Status& status) const {
    (void)status;
    return std::nullopt;
  }
};

// The JSON 1.0/1.1 protocols: POST / with X-Amz-Target "<TargetPrefix>.<Action>".
class JsonService : public JsonShapedService {
 public:
  // "AmazonEC2ContainerServiceV20141113": the X-Amz-Target prefix before the '.'.
  virtual std::string_view TargetPrefix() const = 0;
  // JSON 1.0 services (the model's "jsonVersion": "1.0", aws/json_version.h): the Smithy
  // namespace that qualifies this service's own error types in "__type"
  // ("com.amazonaws.dynamodb.v20120810"). Unused for JSON 1.1.
  virtual std::string_view ErrorNamespace() const { return {}; }
};

// A Query-protocol request's parameters ("Action", "Version", "Filter.1.Name", ...), decoded,
// in the order they arrived.
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// The value of the first parameter named `name`, or nullopt.
std::optional<std::string_view> FindParam(const QueryParams& params, std::string_view name);

// The Query protocol (IAM, STS, EC2): form-encoded parameters in, XML out. The front routes a
// form-encoded request to the QueryService whose signing name is the SigV4 credential scope's
// service, and does authentication and throttling as for JSON services; the service decodes
// its own parameters (their flattening differs between IAM and EC2) and renders its own XML.
class QueryService {
 public:
  virtual ~QueryService() = default;
  // "iam", "sts", "ec2": the SigV4 signing name, which routes requests here.
  virtual std::string_view SigningName() const = 0;
  virtual bool Implements(std::string_view action) const = 0;
  virtual std::optional<ThrottleGroup> ThrottleGroupFor(std::string_view action) const = 0;
  // Runs ctx.action; returns the XML response body.
  virtual StatusOr<std::string> Call(const CallContext& ctx, const QueryParams& params) = 0;
  // As JsonService::AuthorizationFor.
  virtual std::vector<AuthRequest> AuthorizationFor(const CallContext& ctx, const QueryParams& params) const {
    (void)params;
    return {AuthRequest{std::string(SigningName()) + ":" + ctx.action, "*", {}}};
  }
  // As JsonService::ErrorFor: the service's table, asked first; its answer is final. Otherwise
  // the front answers AwsErrorFor(status, Dialect::kQuery).
  virtual std::optional<AwsError> ErrorFor(const Status& status) const {
    (void)status;
    return std::nullopt;
  }
  // As JsonService::AgentMay: no Query action is open to a container instance's agent unless a
  // service says so.
  virtual bool AgentMay(std::string_view action) const {
    (void)action;
    return false;
  }
  // The XML error body in this service's dialect (IAM and STS: <ErrorResponse>; EC2:
  // <Response><Errors>). The default is the IAM/STS form.
  virtual std::string ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const;
};

// <ErrorResponse><Error><Type>Sender|Receiver</Type><Code/><Message/></Error><RequestId/></ErrorResponse>
std::string QueryErrorXml(std::string_view code, std::string_view message, std::string_view request_id,
                          bool server_fault);
// Escapes &, <, >, " and ' for XML text and attribute values.
std::string XmlEscape(std::string_view text);

}  // namespace paddock::aws
