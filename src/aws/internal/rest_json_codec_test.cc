// REST-JSON routing and input decoding on a small model: template precedence, greedy labels,
// literal queries, and the conversions the toy service (testing/toy_rest) does not exercise —
// timestamps, header lists, a query map, a payload member.
#include "aws/internal/rest_json_codec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <boost/json.hpp>

#include "aws/errors.h"
#include "aws/model.h"

namespace paddock::aws::internal {
namespace {

namespace json = boost::json;

constexpr std::string_view kModel = R"({
  "metadata": {"protocol": "rest-json", "signingName": "things"},
  "operations": {
    "GetThing": {"http": {"method": "GET", "requestUri": "/things/{Id}"}, "input": {"shape": "IdInput"}},
    "ListThings": {"http": {"method": "GET", "requestUri": "/things/list"}},
    "GetSpecial": {"http": {"method": "GET", "requestUri": "/things/{Id}?special"}, "input": {"shape": "IdInput"}},
    "GetPart": {"http": {"method": "GET", "requestUri": "/things/{Id}/parts/{Rest+}/tail"}, "input": {"shape": "PartInput"}},
    "PutDoc": {"http": {"method": "POST", "requestUri": "/docs/{Id}", "responseCode": 201}, "input": {"shape": "DocInput"}},
    "Search": {"http": {"method": "GET", "requestUri": "/search"}, "input": {"shape": "SearchInput"}}
  },
  "shapes": {
    "String": {"type": "string"},
    "Integer": {"type": "integer"},
    "Double": {"type": "double"},
    "Timestamp": {"type": "timestamp"},
    "IntList": {"type": "list", "member": {"shape": "Integer"}},
    "Params": {"type": "map", "key": {"shape": "String"}, "value": {"shape": "String"}},
    "Doc": {"type": "structure", "members": {"x": {"shape": "Integer"}}},
    "IdInput": {"type": "structure", "required": ["Id"],
                "members": {"Id": {"shape": "String", "location": "uri", "locationName": "Id"}}},
    "PartInput": {"type": "structure",
                  "members": {"Id": {"shape": "String", "location": "uri", "locationName": "Id"},
                              "Rest": {"shape": "String", "location": "uri", "locationName": "Rest"}}},
    "DocInput": {"type": "structure", "payload": "Doc",
                 "members": {"Id": {"shape": "String", "location": "uri", "locationName": "Id"},
                             "Doc": {"shape": "Doc"}}},
    "SearchInput": {"type": "structure",
                    "members": {"Named": {"shape": "String", "location": "querystring", "locationName": "named"},
                                "Since": {"shape": "Timestamp", "location": "querystring", "locationName": "since"},
                                "Score": {"shape": "Double", "location": "querystring", "locationName": "score"},
                                "Modified": {"shape": "Timestamp", "location": "header", "locationName": "X-Modified"},
                                "Sizes": {"shape": "IntList", "location": "header", "locationName": "X-Sizes"},
                                "Others": {"shape": "Params", "location": "querystring"}}}
  }
})";

const ServiceModel& Model() {
  static const ServiceModel* model = ServiceModel::Parse(kModel).value().release();
  return *model;
}

const RestJsonRoutes& Routes() {
  static const RestJsonRoutes routes(Model());
  return routes;
}

std::string OperationAt(std::string_view method, std::string_view target) {
  size_t q = target.find('?');
  auto route = Routes().Route(method, target.substr(0, q),
                              q == std::string_view::npos ? std::string_view() : target.substr(q + 1));
  if (!route.ok()) {
    EXPECT_TRUE(IsError(route.status(), Error::kUnknownOperation)) << route.status().ToString();
    return "";
  }
  return route->binding->operation;
}

StatusOr<json::value> Decode(std::string method, std::string target, std::vector<http::Header> headers = {},
                             std::string body = "") {
  http::Request req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.headers = std::move(headers);
  req.body = std::move(body);
  ASSIGN_OR_RETURN(RestJsonRoute route, Routes().Route(req.method, req.Path(), req.Query()));
  return DecodeRestJsonInput(*route.binding, route.labels, req);
}

TEST(RestJsonRoutesTest, TheMostSpecificTemplateWins) {
  EXPECT_EQ(OperationAt("GET", "/things/list"), "ListThings");  // a literal beats a label
  EXPECT_EQ(OperationAt("GET", "/things/abc"), "GetThing");
  EXPECT_EQ(OperationAt("GET", "/things/abc?special"), "GetSpecial");  // the literal query
  EXPECT_EQ(OperationAt("GET", "/things/abc?other=1"), "GetThing");
  EXPECT_EQ(OperationAt("GET", "/things/abc/parts/a/b/tail"), "GetPart");
  EXPECT_EQ(OperationAt("POST", "/docs/d1"), "PutDoc");
}

TEST(RestJsonRoutesTest, NoMatchIsUnknownOperation) {
  EXPECT_EQ(OperationAt("DELETE", "/things/abc"), "");        // the method
  EXPECT_EQ(OperationAt("GET", "/things/abc/parts/tail"), "");  // a greedy label takes >= 1 segment
  EXPECT_EQ(OperationAt("GET", "/things/%zz"), "");           // not percent-encoding
  EXPECT_EQ(OperationAt("GET", "/things/%FF"), "");           // not UTF-8
  EXPECT_EQ(OperationAt("GET", "/"), "");
}

TEST(RestJsonDecodeTest, LabelsAreDecodedAndAGreedyLabelKeepsItsSlashes) {
  auto input = Decode("GET", "/things/a%20b/parts/x/y%2Fz/tail");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(*input, (json::value{{"Id", "a b"}, {"Rest", "x/y/z"}}));
}

TEST(RestJsonDecodeTest, QueryAndHeaderTextBecomesTheMembersType) {
  auto input = Decode("GET", "/search?named=n&since=2026-12-01T10:00:00.5Z&score=2.5&a=1&b=2",
                      {{"x-modified", "Tue, 01 Dec 2026 10:00:00 GMT"}, {"X-Sizes", "1, 2,3"}});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(*input, (json::value{{"Named", "n"},
                                 {"Since", 1796119200.5},
                                 {"Score", 2.5},
                                 {"Modified", 1796119200.0},
                                 {"Sizes", json::array{1, 2, 3}},
                                 {"Others", json::object{{"a", "1"}, {"b", "2"}}}}));
}

TEST(RestJsonDecodeTest, MalformedTextIsASerializationError) {
  for (auto [target, header] : std::vector<std::pair<std::string, http::Header>>{
           {"/search?since=yesterday", {"X-Other", ""}},
           {"/search?score=high", {"X-Other", ""}},
           // Not finite: JSON has no form for them (found by aws_rest_json_decoder_fuzz).
           {"/search?score=nan", {"X-Other", ""}},
           {"/search?score=inf", {"X-Other", ""}},
           {"/search?since=-infinity", {"X-Other", ""}},
           {"/search", {"X-Sizes", "1,x"}},
           {"/search", {"X-Modified", "2026-13-45"}},
       }) {
    auto input = Decode("GET", target, {header});
    ASSERT_FALSE(input.ok()) << target;
    EXPECT_TRUE(IsError(input.status(), Error::kSerialization)) << input.status().ToString();
  }
}

TEST(RestJsonDecodeTest, APayloadMemberIsTheWholeBody) {
  auto input = Decode("POST", "/docs/d1", {}, R"({"x": 7})");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  EXPECT_EQ(*input, (json::value{{"Doc", {{"x", 7}}}, {"Id", "d1"}}));
  auto bad = Decode("POST", "/docs/d1", {}, R"({"x": )");
  EXPECT_TRUE(IsError(bad.status(), Error::kSerialization)) << bad.status().ToString();
}

TEST(RestJsonModelTest, BindingsAndErrorMessageMembersComeFromTheModel) {
  EXPECT_EQ(Model().Metadata().protocol, "rest-json");
  EXPECT_EQ(Model().Metadata().signing_name, "things");
  std::vector<HttpBinding> bindings = Model().HttpBindings();
  auto doc = std::find_if(bindings.begin(), bindings.end(), [](const HttpBinding& b) { return b.operation == "PutDoc"; });
  ASSERT_NE(doc, bindings.end());
  EXPECT_EQ(doc->response_code, 201);
  EXPECT_EQ(doc->payload, "Doc");
  EXPECT_EQ(Model().ErrorMessageMember("NoSuchShape"), "message");
}

}  // namespace
}  // namespace paddock::aws::internal
