// The two AWS JSON protocols, awsJson1_0 (DynamoDB, SQS, ...) and awsJson1_1 (ECS, SSM, Logs,
// ...), and the two ways they differ. A JsonService speaks the one its model names
// ("metadata": {"protocol": "json", "jsonVersion": "1.0"}); the front reads it per request.
//
// Smithy, "Differences between awsJson1_0 and awsJson1_1" (aws-json.rst.template), names
// exactly two:
//   1. Content-Type: application/x-amz-json-1.0 vs application/x-amz-json-1.1 (requests and
//      responses, errors included).
//   2. Error types: awsJson1_0 servers SHOULD send the error shape's full shape ID in the
//      body's "__type" ("com.amazonaws.dynamodb.v20120810#ResourceNotFoundException");
//      awsJson1_1 servers only its shape name ("ClusterNotFoundException"). Clients MUST accept
//      both (they keep what follows '#' and precedes ':'; botocore's BaseJSONParser does).
// Everything else — POST to "/", X-Amz-Target "<targetPrefix>.<Operation>", the JSON body, an
// empty body read as "{}", "message" beside "__type" — is shared.
//
// AWS's own JSON 1.0 services qualify the errors their request framework raises (signature,
// routing, decoding, throttling) with the framework's namespaces, not the service's:
// "com.amazon.coral.service#UnrecognizedClientException",
// "com.amazon.coral.validate#ValidationException",
// "com.amazon.coral.availability#ThrottlingException". JsonErrorType does the same.
//
//   JsonVersion v = JsonVersionOf(service.Model());
//   resp.headers.push_back({"Content-Type", std::string(JsonContentType(v))});
//   body["__type"] = JsonErrorType(v, "ResourceNotFoundException", service.ErrorNamespace());
#pragma once

#include <string>
#include <string_view>

#include "aws/model.h"

namespace paddock::aws {

enum class JsonVersion { k1_0, k1_1 };

// k1_0 when the model's metadata says "jsonVersion": "1.0"; k1_1 otherwise (botocore's default).
JsonVersion JsonVersionOf(const ServiceModel& model);

// "application/x-amz-json-1.0" or "application/x-amz-json-1.1".
std::string_view JsonContentType(JsonVersion version);

// The "__type" of an error `type` ("ResourceNotFoundException"). k1_1: `type` itself. k1_0: the
// full shape ID — the request framework's namespace for the codes it raises (above), else
// `service_namespace` ("com.amazonaws.dynamodb.v20120810"); `type` alone when that is empty.
std::string JsonErrorType(JsonVersion version, std::string_view type, std::string_view service_namespace);

}  // namespace paddock::aws
