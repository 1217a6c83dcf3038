// The AWS-managed policy catalogue, embedded in the binary (iam/aws_managed_policies.json, by
// cmake/embed.cmake). iam/directory.cc parses it once.
#pragma once

#include <string_view>

namespace paddock::iam {

std::string_view AwsManagedPoliciesJson();

}  // namespace paddock::iam
