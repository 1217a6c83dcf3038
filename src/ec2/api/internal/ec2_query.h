// EC2's Query-protocol conventions, for ec2::api::Ec2Service's source files: the call's input as
// the embedded model decoded it (Input: "GroupId.1" is GroupIds[0], "IpPermissions.1.IpRanges.2.
// CidrIp" IpPermissions[0].IpRanges[1].CidrIp), filters (Filters[].Name/Values, with EC2's * and ?
// wildcards), errors and the response envelope.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "aws/pagination.h"
#include "aws/service.h"
#include "common/status.h"
#include "ec2/api/errors.h"

namespace paddock::ec2::api::internal {

inline constexpr std::string_view kEc2Xmlns = "http://ec2.amazonaws.com/doc/2016-11-15/";

// An EC2 client error, answered with the code ec2/api/errors.h gives `error`, HTTP 400.
inline Status Ec2Error(ec2::Error error, std::string message) { return InvalidArgument(std::move(message), error); }

// A structure of the call's input as aws::QueryModel (ec2 flavour) decoded it, keyed by the
// model's member names ("GroupIds", "IpPermissions", CreateSecurityGroup's "Description" sent as
// GroupDescription). The model has already checked types, ranges and required members; members of
// another type than asked read as absent. A view: the decoded object must outlive it.
class Input {
 public:
  explicit Input(const boost::json::object& fields) : fields_(&fields) {}

  std::optional<std::string> Str(std::string_view member) const;
  std::optional<int32_t> Int(std::string_view member) const;
  bool Bool(std::string_view member) const;  // absent: false
  // A list member: its strings, or its structures, in order; absent: empty.
  std::vector<std::string> Strings(std::string_view member) const;
  std::vector<Input> Structs(std::string_view member) const;

 private:
  const boost::json::object* fields_;
};

// Filters[].Name / Filters[].Values ("Filter.N.Name" / "Filter.N.Value.M"): name -> accepted
// values (a value may hold * and ?).
using Filters = std::map<std::string, std::set<std::string>>;
Filters ParseFilters(const Input& in);

// An item's attributes for filtering; an attribute may have several values (tags, rules' peers).
using Attributes = std::multimap<std::string, std::string>;

// InvalidParameterValue unless every filter name is in `known` or starts with one of
// `known_prefixes` ("tag:").
Status CheckFilterNames(const Filters& filters, const std::set<std::string>& known,
                        const std::vector<std::string>& known_prefixes = {});

// Whether the item passes every filter: for each filter, one of the item's values of that name
// matches one of the filter's values.
bool Matches(const Filters& filters, const Attributes& attributes);

// EC2's filter wildcards: * any run of characters, ? any one.
bool GlobMatch(std::string_view pattern, std::string_view text);

// MaxResults for paginated describes (5..1000), 0 when absent. The model bounds it for most
// describes; DescribeInstances' model sets no bound, which EC2 enforces all the same.
StatusOr<size_t> MaxResults(const Input& in);

// Where the request's NextToken, signed by `tokens` for `context`, says a paginated describe
// resumes; "" when there is none. InvalidNextToken when it does not decode.
StatusOr<std::string> NextTokenPosition(const Input& in, const aws::TokenCodec& tokens, std::string_view context);

// <{action}Response xmlns=…><requestId/>{body}</{action}Response>
std::string Response(std::string_view action, std::string_view request_id, std::string_view body);

// <name>escaped text</name>
std::string XmlText(std::string_view name, std::string_view text);

}  // namespace paddock::ec2::api::internal
