// The seam where an AWS service plugs into the API front. ECS, SSM, CloudWatch Logs and Cloud
// Map (JSON 1.1) implement JsonService; IAM and STS (Query/XML) will implement QueryService. The
// front does HTTP, authentication, throttling, decoding and input validation; a service sees
// only a validated input and returns its output document.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/fwd.hpp>

#include "aws/credentials.h"
#include "aws/model.h"
#include "aws/throttle.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace paddock::aws {

struct CallContext {
  Scope scope;          // (caller's account, region from the credential scope)
  Principal principal;
  std::string request_id;
  std::string action;   // "RegisterTaskDefinition"
  TimePoint now;        // the request's arrival time
};

struct ThrottleGroup {
  std::string name;  // "ecs:task-definition-modify"
  BucketSpec spec;
};

class JsonService {
 public:
  virtual ~JsonService() = default;
  // "AmazonEC2ContainerServiceV20141113": the X-Amz-Target prefix before the '.'.
  virtual std::string_view TargetPrefix() const = 0;
  // "ecs": the SigV4 signing name.
  virtual std::string_view SigningName() const = 0;
  virtual const ServiceModel& Model() const = 0;
  // Whether this server implements `action` (the model may define more).
  virtual bool Implements(std::string_view action) const = 0;
  // The bucket that rate-limits `action`, if any.
  virtual std::optional<ThrottleGroup> ThrottleGroupFor(std::string_view action) const = 0;
  // Runs `action` on validated input; returns the serialized JSON response body.
  virtual StatusOr<std::string> Call(const CallContext& ctx, boost::json::object& input) = 0;
};

}  // namespace paddock::aws
