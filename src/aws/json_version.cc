#include "aws/json_version.h"

#include <fmt/format.h>

namespace paddock::aws {
namespace {

struct FrameworkError {
  std::string_view type;
  std::string_view ns;
};
// The codes the front raises for any service (aws::Error, the authorizer's denial), as AWS's
// JSON 1.0 services qualify them.
constexpr FrameworkError kFrameworkErrors[] = {
    {"UnknownOperationException", "com.amazon.coral.service"},
    {"SerializationException", "com.amazon.coral.service"},
    {"IncompleteSignatureException", "com.amazon.coral.service"},
    {"InvalidSignatureException", "com.amazon.coral.service"},
    {"MissingAuthenticationTokenException", "com.amazon.coral.service"},
    {"UnrecognizedClientException", "com.amazon.coral.service"},
    {"ExpiredTokenException", "com.amazon.coral.service"},
    {"AccessDeniedException", "com.amazon.coral.service"},
    {"InternalFailure", "com.amazon.coral.service"},
    {"ValidationException", "com.amazon.coral.validate"},
    {"ThrottlingException", "com.amazon.coral.availability"},
};

}  // namespace

JsonVersion JsonVersionOf(const ServiceModel& model) {
  return model.Metadata().json_version == "1.0" ? JsonVersion::k1_0 : JsonVersion::k1_1;
}

std::string_view JsonContentType(JsonVersion version) {
  return version == JsonVersion::k1_0 ? "application/x-amz-json-1.0" : "application/x-amz-json-1.1";
}

std::string JsonErrorType(JsonVersion version, std::string_view type, std::string_view service_namespace) {
  if (version == JsonVersion::k1_1) return std::string(type);
  for (const FrameworkError& e : kFrameworkErrors)
    if (e.type == type) return fmt::format("{}#{}", e.ns, type);
  if (service_namespace.empty()) return std::string(type);
  return fmt::format("{}#{}", service_namespace, type);
}

}  // namespace paddock::aws
