// EC2's parameters through the embedded model subset and aws::QueryModel's ec2 flavour: EC2's
// names (locationName capitalized, "Name.N" lists) and EC2's MissingParameter /
// InvalidParameterValue answers (docs/contracts/security-group.md, "Input validation").
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <boost/json.hpp>

#include "aws/query_model.h"
#include "ec2/api/ec2_service.h"
#include "ec2/api/errors.h"
#include "ec2/api/models/ec2_model.h"
#include "ec2/api/testing/front_fixture.h"

namespace paddock::ec2::api {
namespace {
namespace json = boost::json;

std::unique_ptr<aws::QueryModel> Model() {
  auto model = aws::QueryModel::ParseEc2(Ec2ModelJson(), {Error::kMissingParameter, Error::kInvalidParameterValue});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return std::move(model).value();
}

TEST(Ec2QueryModelTest, HoldsExactlyTheServedOperations) {
  auto model = Model();
  const std::vector<std::string> ops = model->OperationNames();
  EXPECT_EQ(ops.size(), 11u);
  for (const std::string& op : ops) EXPECT_TRUE(model->HasOperation(op));
  for (const char* op : {"DescribeVpcs", "DescribeSubnets", "DescribeSecurityGroups", "DescribeSecurityGroupRules",
                         "CreateSecurityGroup", "DeleteSecurityGroup", "AuthorizeSecurityGroupIngress",
                         "AuthorizeSecurityGroupEgress", "RevokeSecurityGroupIngress", "RevokeSecurityGroupEgress",
                         "DescribeInstances"})
    EXPECT_TRUE(model->HasOperation(op)) << op;
}

TEST(Ec2QueryModelTest, DecodesEc2NamesAndLists) {
  auto model = Model();
  auto in = model->Decode("AuthorizeSecurityGroupEgress",
                          {{"GroupId", "sg-1"},
                           {"IpPermissions.1.IpProtocol", "tcp"},
                           {"IpPermissions.1.FromPort", "80"},
                           {"IpPermissions.1.ToPort", "81"},
                           {"IpPermissions.1.IpRanges.1.CidrIp", "10.0.0.0/8"},
                           {"IpPermissions.1.IpRanges.2.CidrIp", "10.1.0.0/16"},
                           {"IpPermissions.1.Groups.1.GroupId", "sg-2"},
                           {"TagSpecification.1.ResourceType", "security-group-rule"},
                           {"TagSpecification.1.Tag.1.Key", "k"},
                           {"TagSpecification.1.Tag.1.Value", "v"},
                           {"DryRun", "false"}});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const json::object& o = *in;
  EXPECT_EQ(o.at("GroupId"), "sg-1");
  const json::object& perm = o.at("IpPermissions").as_array().at(0).as_object();
  EXPECT_EQ(perm.at("FromPort").as_int64(), 80);
  EXPECT_EQ(perm.at("IpRanges").as_array().size(), 2u);
  EXPECT_EQ(perm.at("UserIdGroupPairs").as_array().at(0).as_object().at("GroupId"), "sg-2");
  EXPECT_EQ(o.at("TagSpecifications").as_array().at(0).as_object().at("Tags").as_array().at(0).as_object().at("Key"), "k");
  EXPECT_FALSE(o.at("DryRun").as_bool());

  // locationName capitalized: CreateSecurityGroup's Description is sent as GroupDescription.
  auto created = model->Decode("CreateSecurityGroup", {{"GroupName", "web"}, {"GroupDescription", "d"}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->at("Description"), "d");
  // Query's ".member." lists are not EC2's.
  auto described = model->Decode("DescribeSecurityGroups", {{"GroupId.1", "sg-1"}, {"GroupId.2", "sg-2"},
                                                            {"GroupName.member.1", "x"}});
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->at("GroupIds").as_array().size(), 2u);
  EXPECT_FALSE(described->contains("GroupNames"));
}

TEST(Ec2QueryModelTest, AnswersOneErrorInEc2Words) {
  auto model = Model();
  auto missing = model->Decode("CreateSecurityGroup", {{"GroupName", "web"}});
  EXPECT_EQ(missing.status().message(), "The request must contain the parameter GroupDescription");
  EXPECT_TRUE(missing.status().detail().Is(Error::kMissingParameter));
  auto egress = model->Decode("AuthorizeSecurityGroupEgress", {{"IpProtocol", "-1"}});
  EXPECT_EQ(egress.status().message(), "The request must contain the parameter GroupId");

  auto not_number = model->Decode("AuthorizeSecurityGroupIngress",
                                  {{"GroupId", "sg-1"}, {"IpPermissions.1.FromPort", "x"}, {"ToPort", "y"}});
  // One error: the first in the model's member order (IpPermissions before ToPort).
  EXPECT_EQ(not_number.status().message(), "Invalid value 'x' for FromPort");
  EXPECT_TRUE(not_number.status().detail().Is(Error::kInvalidParameterValue));
  EXPECT_EQ(model->Decode("AuthorizeSecurityGroupIngress", {{"IpPermissions.1.FromPort", "x"}}).status().message(),
            "Invalid value 'x' for FromPort");
  EXPECT_EQ(model->Decode("AuthorizeSecurityGroupIngress", {{"FromPort", "4294967297"}}).status().message(),
            "Invalid value '4294967297' for FromPort");  // an "integer" is 32 bits
  EXPECT_EQ(model->Decode("DescribeVpcs", {{"DryRun", "yes"}}).status().message(), "Invalid value 'yes' for DryRun");
  auto range = model->Decode("DescribeSecurityGroups", {{"MaxResults", "2"}});
  EXPECT_EQ(range.status().message(),
            "Value ( 2 ) for parameter maxResults is invalid. Parameter must be between 5 and 1000.");
  EXPECT_TRUE(range.status().detail().Is(Error::kInvalidParameterValue));
}

class Ec2InputValidationTest : public testing::Ec2FrontTest {
 protected:
  http::Response Call(std::string body) { return Post("Version=2016-11-15&" + std::move(body)); }
};

TEST_F(Ec2InputValidationTest, BadInputGetsEc2sErrorsThroughTheFront) {
  http::Response missing = Call("Action=AuthorizeSecurityGroupEgress&IpPermissions.1.IpProtocol=-1"
                                "&IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0%2F8");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(ErrorCode(missing), "MissingParameter");
  EXPECT_EQ(Between(missing.body, "Message"), "The request must contain the parameter GroupId");
  // Decoding comes before DryRun: a malformed dry run is not "would have succeeded".
  http::Response dry = Call("Action=CreateSecurityGroup&GroupName=x&DryRun=true");
  EXPECT_EQ(ErrorCode(dry), "MissingParameter");
  http::Response port = Call("Action=AuthorizeSecurityGroupIngress&GroupName=default&IpPermissions.1.IpProtocol=tcp"
                             "&IpPermissions.1.FromPort=eighty&IpPermissions.1.ToPort=80"
                             "&IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0%2F8");
  EXPECT_EQ(ErrorCode(port), "InvalidParameterValue");
  EXPECT_EQ(Between(port.body, "Message"), "Invalid value &apos;eighty&apos; for FromPort");
  http::Response page = Call("Action=DescribeSubnets&MaxResults=1001");
  EXPECT_EQ(ErrorCode(page), "InvalidParameterValue");
  // DescribeInstances' model bounds nothing; EC2's 5..1000 holds all the same.
  EXPECT_EQ(ErrorCode(Call("Action=DescribeInstances&MaxResults=4")), "InvalidParameterValue");
}

}  // namespace
}  // namespace paddock::ec2::api
