// EC2's Query-protocol conventions, for ec2::api::Ec2Service's source files: list and structure
// parameters ("GroupId.1", "IpPermissions.1.IpRanges.2.CidrIp"), filters ("Filter.1.Name",
// "Filter.1.Value.1", with EC2's * and ? wildcards), errors and the response envelope.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aws/pagination.h"
#include "aws/service.h"
#include "common/status.h"
#include "ec2/api/errors.h"

namespace paddock::ec2::api::internal {

inline constexpr std::string_view kEc2Xmlns = "http://ec2.amazonaws.com/doc/2016-11-15/";

// An EC2 client error, answered with the code ec2/api/errors.h gives `error`, HTTP 400.
inline Status Ec2Error(ec2::Error error, std::string message) { return InvalidArgument(std::move(message), error); }

// Parameters as (name, value) pairs: the request's, or a structure's members below a prefix.
using Params = std::vector<std::pair<std::string, std::string>>;

// "Name.1", "Name.2", ... in index order.
std::vector<std::string> ListParam(const Params& params, std::string_view name);

// The members of "Name.N.<member>" for each N, in index order: N -> [(member, value)].
std::map<int, Params> StructList(const Params& params, std::string_view name);

// The value of `name` among `params`, or nullopt.
std::optional<std::string> Param(const Params& params, std::string_view name);

// An integer parameter; absent: nullopt; not an integer: InvalidParameterValue.
StatusOr<std::optional<int32_t>> IntParam(const Params& params, std::string_view name);

// A boolean parameter ("true"/"false"); absent: false.
bool BoolParam(const Params& params, std::string_view name);

// "Filter.N.Name" / "Filter.N.Value.M": name -> accepted values (a value may hold * and ?).
using Filters = std::map<std::string, std::set<std::string>>;
Filters ParseFilters(const Params& params);

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

// MaxResults for paginated describes (5..1000), 0 when absent.
StatusOr<size_t> MaxResults(const Params& params);

// Where the request's NextToken, signed by `tokens` for `context`, says a paginated describe
// resumes; "" when there is none. InvalidNextToken when it does not decode.
StatusOr<std::string> NextTokenPosition(const Params& params, const aws::TokenCodec& tokens, std::string_view context);

// <{action}Response xmlns=…><requestId/>{body}</{action}Response>
std::string Response(std::string_view action, std::string_view request_id, std::string_view body);

// <name>escaped text</name>
std::string XmlText(std::string_view name, std::string_view text);

}  // namespace paddock::ec2::api::internal
