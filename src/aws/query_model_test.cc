// The shared Query-protocol decoder (IAM's and STS's input, and EC2's in the ec2 flavour) on small
// inline models; the services' own tests cover their models (IamServiceTest.ModelValidationGivesIamsMessages,
// QueryModelTest.DecodesListsOfStructuresAndReportsNestedErrors, Ec2QueryModelTest.*).
#include "aws/query_model.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace paddock::aws {
namespace {

constexpr char kModel[] = R"({
  "operations": {"Put": {"input": {"shape": "PutRequest"}}, "Ping": {}},
  "shapes": {
    "PutRequest": {"type": "structure", "required": ["Name"], "members": {
      "Name": {"shape": "Name"}, "Mode": {"shape": "Mode"}, "Label": {"shape": "Label"},
      "Count": {"shape": "Count"}, "Flag": {"shape": "Flag"}, "Names": {"shape": "NameList"}}},
    "Name": {"type": "string", "min": 2, "max": 300, "pattern": "[\\w+=,.@-]+"},
    "Mode": {"type": "string", "enum": ["Active", "Inactive"]},
    "Label": {"type": "string", "pattern": "[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*"},
    "Count": {"type": "integer", "min": 1, "max": 10},
    "Flag": {"type": "boolean"},
    "NameList": {"type": "list", "member": {"shape": "Name"}, "max": 2},
    "NoSuchThing": {"type": "structure", "members": {}, "error": {"code": "NoSuchThing", "httpStatusCode": 404}}
  }})";

class QueryModelSharedTest : public ::testing::Test {
 protected:
  QueryModelSharedTest() : model_(std::move(QueryModel::Parse(kModel)).value()) {}
  std::unique_ptr<QueryModel> model_;
};

TEST_F(QueryModelSharedTest, DecodesTypedValuesAndTheFirstOfARepeatedName) {
  auto in = model_->Decode("Put", {{"Name", "ab"}, {"Name", "second"}, {"Count", "3"}, {"Flag", "true"},
                                   {"Names.member.1", "x1"}, {"Names.member.3", "gap"}, {"Other", "dropped"}});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(boost::json::serialize(*in), R"({"Name":"ab","Count":3,"Flag":true,"Names":["x1"]})");
  EXPECT_TRUE(model_->Decode("Ping", {}).ok());
  EXPECT_EQ(model_->Decode("Nope", {}).status().code(), StatusCode::kInternal);
  EXPECT_EQ(model_->ErrorStatus("NoSuchThing"), 404);
  EXPECT_FALSE(model_->ErrorStatus("Other").has_value());
}

TEST_F(QueryModelSharedTest, ReportsEveryBrokenConstraint) {
  auto in = model_->Decode("Put", {{"Name", "!"}, {"Mode", "Expired"}, {"Label", "caf\xc3\xa9"}, {"Count", "0"},
                                   {"Flag", "yes"}, {"Names.member.1", "aa"}, {"Names.member.2", "bb"},
                                   {"Names.member.3", "cc"}});
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(in.status().message(),
            "6 validation errors detected: "
            "Value '!' at 'name' failed to satisfy constraint: Member must have length greater than or equal to 2; "
            "Value '!' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: "
            "[\\w+=,.@-]+; "
            "Value 'Expired' at 'mode' failed to satisfy constraint: Member must satisfy enum value set: "
            "[Active, Inactive]; "
            "Value '0' at 'count' failed to satisfy constraint: Member must have value greater than or equal to 1; "
            "Value 'yes' at 'flag' failed to satisfy constraint: Member must be a boolean; "
            "Value '[\"aa\",\"bb\",\"cc\"]' at 'names' failed to satisfy constraint: Member must have length less "
            "than or equal to 2");
  // \p{L} is read as A-Za-z: an ASCII label with a space passes; a non-ASCII one is not matched.
  EXPECT_TRUE(model_->Decode("Put", {{"Name", "ab"}, {"Label", "team a:1"}}).ok());
  auto missing = model_->Decode("Put", {{"Label", "x"}});
  EXPECT_EQ(missing.status().message(),
            "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null");
}

TEST_F(QueryModelSharedTest, ALongValueIsCutInTheMessage) {
  const std::string name(301, 'a');
  auto in = model_->Decode("Put", {{"Name", name}});
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().message(), "1 validation error detected: Value '" + std::string(256, 'a') +
                                       "...' at 'name' failed to satisfy constraint: Member must have length less "
                                       "than or equal to 300");
}


// The ec2 flavour (EC2's wire names and lists, one error in EC2's words) beside the Query one, on
// one model whose members carry locationName and queryName.
constexpr char kEc2Model[] = R"({
  "operations": {"Run": {"input": {"shape": "RunRequest"}}},
  "shapes": {
    "RunRequest": {"type": "structure", "required": ["Description"], "members": {
      "Description": {"shape": "S", "locationName": "groupDescription"},
      "Ids": {"shape": "SList", "locationName": "Id"},
      "Token": {"shape": "S", "locationName": "token", "queryName": "ClientToken"},
      "Count": {"shape": "Count"}, "Flag": {"shape": "Flag"}}},
    "S": {"type": "string", "min": 5},
    "SList": {"type": "list", "member": {"shape": "S", "locationName": "item"}},
    "Count": {"type": "integer", "min": 5, "max": 1000},
    "Flag": {"type": "boolean"}
  }})";

TEST(QueryModelEc2FlavourTest, ReadsEc2NamesAndLists) {
  auto model = std::move(QueryModel::ParseEc2(kEc2Model, {})).value();
  auto in = model->Decode("Run", {{"GroupDescription", "d"}, {"Id.1", "a"}, {"Id.2", "b"}, {"ClientToken", "t"},
                                  {"Token", "ignored"}, {"Count", "7"}, {"Flag", "true"}});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->at("Description"), "d");  // no length check: EC2 words its own
  EXPECT_EQ(boost::json::serialize(in->at("Ids")), R"(["a","b"])");
  EXPECT_EQ(in->at("Token"), "t");  // queryName wins over locationName
  EXPECT_EQ(in->at("Count").as_int64(), 7);

  // The Query flavour of the same model reads member names and ".member." lists, as before.
  auto query = std::move(QueryModel::Parse(kEc2Model)).value();
  auto q = query->Decode("Run", {{"Description", "hello"}, {"Ids.member.1", "abcde"}, {"Id.1", "x"}});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(boost::json::serialize(q->at("Ids")), R"(["abcde"])");
}

TEST(QueryModelEc2FlavourTest, AnswersTheFirstErrorInEc2Words) {
  auto model = std::move(QueryModel::ParseEc2(kEc2Model, {})).value();
  EXPECT_EQ(model->Decode("Run", {{"Count", "x"}}).status().message(),
            "The request must contain the parameter GroupDescription");
  EXPECT_EQ(model->Decode("Run", {{"GroupDescription", "d"}, {"Count", "x"}, {"Flag", "y"}}).status().message(),
            "Invalid value 'x' for Count");
  EXPECT_EQ(model->Decode("Run", {{"GroupDescription", "d"}, {"Count", "2147483648"}}).status().message(),
            "Invalid value '2147483648' for Count");
  EXPECT_EQ(model->Decode("Run", {{"GroupDescription", "d"}, {"Count", "4"}}).status().message(),
            "Value ( 4 ) for parameter count is invalid. Parameter must be between 5 and 1000.");
  EXPECT_EQ(model->Decode("Run", {{"GroupDescription", "d"}, {"Flag", "1"}}).status().message(),
            "Invalid value '1' for Flag");
  EXPECT_EQ(model->Decode("Run", {{"GroupDescription", "d"}}).status().code(), StatusCode::kOk);
}

}  // namespace
}  // namespace paddock::aws
