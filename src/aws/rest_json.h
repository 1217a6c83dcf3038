// The REST-JSON protocol's seam (Smithy's restJson1: Lambda, EKS, API Gateway v2, Cloud Map's
// data plane, ...): an operation is chosen by its HTTP method and its model's
// "http": {"requestUri": "/notes/{Name}/files/{Path+}?versions"}, not by a header naming it.
//
// The front routes a request that names no X-Amz-Target and is not form-encoded to the
// RestJsonService whose signing name is the SigV4 credential scope's service, verifies the
// signature, matches method and path against the service's operations, and decodes the input
// from all four places restJson1 puts it — path labels ("location": "uri", "{Name}" one
// segment, "{Name+}" the rest of the path), query parameters ("querystring", repeated for a
// list; a map without a name takes every other parameter), headers ("header"; "headers" with a
// prefix) and the JSON body (the other members, or the "payload" member as the whole body) —
// into one JSON object keyed by member name, validated against the model as JSON input is.
// It answers with the operation's "responseCode" and application/json; errors as restJson1
// says: the error type in X-Amzn-ErrorType (shape name only), the message in the body under
// the member the error shape names ("message", or Lambda's "Message"). A request that matches
// no operation gets 404 UnknownOperationException, as Smithy's server frameworks answer.
// A REST-JSON request is known by its signature's credential scope, so an unsigned one (or one
// whose Authorization does not parse) cannot reach a RestJsonService: the front answers it as
// the JSON protocol answers a request without X-Amz-Target.
//
//   class Toy final : public aws::RestJsonService { ... };
//   front.AddRestJsonService(&toy);  // the registration: one line
//
// Not supported (no served service needs them yet): output members bound to headers or the
// status code (a Call's answer is the body), blob payloads as raw bytes, endpoint host prefixes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/service.h"

namespace paddock::aws {

// Everything a REST-JSON service gives the front is JsonShapedService's (aws/service.h): its
// signing name routes requests here, and its model's operations' "http" traits choose the action.
// Call gets the validated input (labels, query, headers and body merged by member name) and its
// answer is sent with the operation's responseCode.
class RestJsonService : public JsonShapedService {};

}  // namespace paddock::aws
