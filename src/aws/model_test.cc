#include "aws/errors.h"
#include "aws/model.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "aws/testdata/test_model.h"

namespace paddock::aws {
namespace {

namespace json = boost::json;

const ServiceModel& Ecs() { return testdata::TestServiceModel(); }  // a subset of ECS's

Status Validate(std::string_view op, json::value& v) { return Ecs().ValidateInput(op, v); }

void ExpectError(std::string_view op, std::string_view body, std::string_view type, std::string_view message) {
  json::value v = json::parse(body);
  Status st = Validate(op, v);
  ASSERT_FALSE(st.ok()) << body;
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AwsErrorFor(st).type, type) << st.message();
  EXPECT_EQ(st.message(), message);
}

constexpr std::string_view kMinimalTaskDef =
    R"({"family":"web","containerDefinitions":[{"name":"app","image":"nginx","memory":512,
        "portMappings":[{"containerPort":80}]}]})";

TEST(ServiceModelTest, EmbeddedTestModelParses) {
  auto names = Ecs().OperationNames();
  EXPECT_EQ(names.size(), 12u);  // the real ECS model's 77: ecs/api/ecs_model_test.cc
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE(Ecs().HasOperation("RegisterTaskDefinition"));
  EXPECT_TRUE(Ecs().HasOperation("ListClusters"));
  EXPECT_FALSE(Ecs().HasOperation("ListBuckets"));
}

TEST(ServiceModelTest, ValidInputPasses) {
  json::value v = json::parse(kMinimalTaskDef);
  Status st = Validate("RegisterTaskDefinition", v);
  EXPECT_TRUE(st.ok()) << st.ToString();
  json::value empty = json::object();
  EXPECT_TRUE(Validate("ListClusters", empty).ok());
}

TEST(ServiceModelTest, UnknownMembersAndNullsAreDropped) {
  json::value v = json::parse(
      R"({"family":"web","bogus":1,"cpu":null,"containerDefinitions":[{"name":"a","extra":{"x":[1]}}]})");
  ASSERT_TRUE(Validate("RegisterTaskDefinition", v).ok());
  EXPECT_EQ(v, json::parse(R"({"family":"web","containerDefinitions":[{"name":"a"}]})")) << json::serialize(v);
}

TEST(ServiceModelTest, MissingRequiredMember) {
  ExpectError("RegisterTaskDefinition", R"({"containerDefinitions":[]})", "InvalidParameterException",
              "family can not be null.");
  ExpectError("RegisterTaskDefinition", R"({"family":null,"containerDefinitions":[]})",
              "InvalidParameterException", "family can not be null.");
  ExpectError("RegisterTaskDefinition",
              R"({"family":"f","containerDefinitions":[{"name":"a","dependsOn":[{"containerName":"b"}]}]})",
              "InvalidParameterException", "containerDefinitions[0].dependsOn[0].condition can not be null.");
}

TEST(ServiceModelTest, WrongTypes) {
  ExpectError("RegisterTaskDefinition", R"({"family":"web","containerDefinitions":{"name":"a"}})",
              "SerializationException",
              "Unexpected value type for 'containerDefinitions': expected a list, got an object.");
  ExpectError("ListClusters", R"({"maxResults":"10"})", "SerializationException",
              "Unexpected value type for 'maxResults': expected an integer, got a string.");
  ExpectError("ListClusters", R"({"maxResults":1.5})", "SerializationException",
              "Unexpected value type for 'maxResults': expected an integer, got a number.");
  ExpectError("ListClusters", R"({"nextToken":5})", "SerializationException",
              "Unexpected value type for 'nextToken': expected a string, got an integer.");
  ExpectError("RegisterTaskDefinition",
              R"({"family":"web","containerDefinitions":[{"name":"a","portMappings":[{"containerPort":"80"}]}]})",
              "SerializationException",
              "Unexpected value type for 'containerDefinitions[0].portMappings[0].containerPort': expected an "
              "integer, got a string.");
  ExpectError("RegisterTaskDefinition",
              R"({"family":"web","containerDefinitions":[{"name":"a","essential":"yes"}]})",
              "SerializationException",
              "Unexpected value type for 'containerDefinitions[0].essential': expected a boolean, got a string.");
  ExpectError("RegisterTaskDefinition",
              R"({"family":"web","containerDefinitions":[{"name":"a","dockerLabels":{"k":1}}]})",
              "SerializationException",
              "Unexpected value type for 'containerDefinitions[0].dockerLabels.k': expected a string, got an "
              "integer.");
  ExpectError("RegisterTaskDefinition", R"({"family":"web","containerDefinitions":[null]})",
              "InvalidParameterException", "containerDefinitions[0] can not be null.");
}

TEST(ServiceModelTest, IntegralDoublesBecomeIntegers) {
  json::value v = json::parse(R"({"maxResults":10.0})");
  ASSERT_TRUE(Validate("ListClusters", v).ok());
  EXPECT_TRUE(v.at("maxResults").is_int64());
}

TEST(ServiceModelTest, EnumValues) {
  ExpectError("ListTaskDefinitions", R"({"status":"FOO"})", "InvalidParameterException",
              "status must be one of [ACTIVE, INACTIVE, DELETE_IN_PROGRESS], but was FOO");
  json::value ok = json::parse(R"({"status":"INACTIVE"})");
  EXPECT_TRUE(Validate("ListTaskDefinitions", ok).ok());
}

TEST(ServiceModelTest, RangesAndLengths) {
  // CapacityProviderStrategyItem.weight is 0..1000 in the model.
  ExpectError("CreateService",
              R"({"serviceName":"s","capacityProviderStrategy":[{"capacityProvider":"FARGATE","weight":1001}]})",
              "InvalidParameterException", "capacityProviderStrategy[0].weight must be between 0 and 1000, but was 1001.");
  // Tags: list of at most 50; TagKey length 1..128.
  std::string tags = "[";
  for (int i = 0; i < 51; ++i) tags += std::string(i ? "," : "") + R"({"key":"k)" + std::to_string(i) + R"(","value":"v"})";
  tags += "]";
  ExpectError("TagResource", R"({"resourceArn":"a","tags":)" + tags + "}", "InvalidParameterException",
              "tags must contain between 0 and 50 items, but contained 51.");
  ExpectError("TagResource", R"({"resourceArn":"a","tags":[{"key":"","value":"v"}]})", "InvalidParameterException",
              "tags[0].key must have length between 1 and 128, but had length 0.");
  ExpectError("ListClusters", R"({"maxResults":4294967296})", "InvalidParameterException",
              "maxResults is out of range for a 32-bit integer, but was 4294967296.");
}

TEST(ServiceModelTest, NonObjectInput) {
  json::value v = json::parse("[1]");
  Status st = Validate("ListClusters", v);
  EXPECT_EQ(AwsErrorFor(st).type, "SerializationException");
}

TEST(ServiceModelTest, BadModels) {
  EXPECT_FALSE(ServiceModel::Parse("").ok());
  EXPECT_FALSE(ServiceModel::Parse("[]").ok());
  EXPECT_FALSE(ServiceModel::Parse(R"({"shapes":{},"operations":{"A":{"input":{"shape":"Missing"}}}})").ok());
  auto tiny = ServiceModel::Parse(R"({"shapes":{"In":{"type":"structure","members":{"x":{"shape":"S"}}},
      "S":{"type":"string"}},"operations":{"A":{"input":{"shape":"In"}},"B":{}}})");
  ASSERT_TRUE(tiny.ok()) << tiny.status().ToString();
  json::value v = json::parse(R"({"x":"y","z":1})");
  EXPECT_TRUE((*tiny)->ValidateInput("B", v).ok());
  EXPECT_TRUE(v.as_object().empty());
}

}  // namespace
}  // namespace paddock::aws
