// Amazon Resource Names: arn:partition:service:region:account:resource.
//
//   ASSIGN_OR_RETURN(Arn arn, ParseArn("arn:aws:ecs:us-east-1:123456789012:cluster/default"));
//   arn.resource == "cluster/default"
#pragma once

#include <string>
#include <string_view>

#include "common/ids.h"
#include "common/status.h"

namespace paddock {

struct Arn {
  std::string partition;  // "aws"
  std::string service;    // "ecs"
  std::string region;
  std::string account;
  std::string resource;   // everything after the fifth colon
  std::string ToString() const;
};

// Parses an ARN. Fails with kInvalidArgument if it does not have six colon-separated parts.
StatusOr<Arn> ParseArn(std::string_view s);

// Whether `s` starts like an ARN ("arn:"), i.e. the caller meant an ARN rather than a name.
inline bool LooksLikeArn(std::string_view s) { return s.substr(0, 4) == "arn:"; }

// arn:aws:<service>:<region>:<account>:<resource>
std::string MakeArn(std::string_view service, const Scope& scope, std::string_view resource);

}  // namespace paddock
