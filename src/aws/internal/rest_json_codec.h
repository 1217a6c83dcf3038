// aws/ internal: the REST-JSON protocol's routing, input decoding and answers (aws/rest_json.h
// says what the protocol does; the front drives these).
//
//   RestJsonRoutes routes(service.Model());
//   ASSIGN_OR_RETURN(RestJsonRoute route, routes.Route(req.method, req.Path(), req.Query()));
//   ASSIGN_OR_RETURN(boost::json::value input, DecodeRestJsonInput(*route.binding, route.labels, req));
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/errors.h"
#include "aws/model.h"
#include "common/status.h"
#include "http/message.h"

namespace paddock::aws::internal {

// Path labels by label name, percent-decoded: {"Name", "todo"}, {"Path", "a/b/c.txt"}.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct RestJsonRoute {
  const HttpBinding* binding = nullptr;  // owned by the RestJsonRoutes that matched it
  Labels labels;
};

class RestJsonRoutes {
 public:
  // Every operation of `model` with its "http" trait. Templates are read once, here.
  explicit RestJsonRoutes(const ServiceModel& model);

  // The operation `method` (exact, "GET") names at `path` (raw, as received: percent-encoded)
  // with `query`: its template's literal segments equal the path's, each "{Label}" takes one
  // non-empty segment, "{Label+}" the rest (one or more segments); a template's literal query
  // ("?versions", "?a=b") must be present. When several match, the one with the most literal
  // segments wins, then a "{Label}" over a "{Label+}". None: kInvalidArgument with
  // aws::Error::kUnknownOperation.
  StatusOr<RestJsonRoute> Route(std::string_view method, std::string_view path, std::string_view query) const;

 private:
  struct Segment {
    enum class Kind { kLiteral, kLabel, kGreedy };
    Kind kind;
    std::string text;  // the literal, or the label's name
  };
  struct Template {
    HttpBinding binding;
    std::vector<Segment> segments;
    std::vector<std::pair<std::string, std::string>> query;  // literal query; value empty: any
    int literals = 0;
    bool greedy = false;
  };
  std::vector<Template> templates_;
};

// The operation's input as one JSON object keyed by member name: the body's members that the
// model binds to the body (or the "payload" member: the whole body), then each member bound
// to a label, query parameter or header, its text converted to the member's kind (integer,
// boolean, double, timestamp: epoch seconds from ISO 8601 or an HTTP date; lists from repeated
// query keys or comma-separated headers). A body member that the model binds elsewhere is
// dropped: a caller cannot smuggle a header-bound member through the body. Malformed body or
// text: kInvalidArgument with aws::Error::kSerialization.
StatusOr<boost::json::value> DecodeRestJsonInput(const HttpBinding& binding, const Labels& labels,
                                                 const http::Request& req);

// A restJson1 answer: `status`, application/json, x-amzn-RequestId; an empty body is "{}"
// except for 204.
http::Response RestJsonResponse(int status, std::string body, std::string_view request_id);

// A restJson1 error: error.http_status, X-Amzn-ErrorType: error.type, and the body
// {`message_member`: status.message()}.
http::Response RestJsonErrorResponse(const Status& status, const AwsError& error, std::string_view message_member,
                                     std::string_view request_id);

}  // namespace paddock::aws::internal
