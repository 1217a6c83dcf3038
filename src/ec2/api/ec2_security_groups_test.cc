// EC2's security-group actions through the real front, as boto3 sends them
// (docs/contracts/security-group.md): parameters in, EC2's XML and errors out.
#include "ec2/api/ec2_service.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ec2/api/testing/front_fixture.h"

namespace paddock::ec2::api {
namespace {

class Ec2SecurityGroupApiTest : public testing::Ec2FrontTest {
 protected:
  http::Response Call(std::string body) { return Post("Version=2016-11-15&" + std::move(body)); }
};

TEST_F(Ec2SecurityGroupApiTest, CreateAuthorizeDescribeRevokeDelete) {
  http::Response created = Call(
      "Action=CreateSecurityGroup&GroupName=web&GroupDescription=web+tier&TagSpecification.1.ResourceType=security-group"
      "&TagSpecification.1.Tag.1.Key=team&TagSpecification.1.Tag.1.Value=core");
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = Between(created.body, "groupId");
  EXPECT_TRUE(id.starts_with("sg-"));
  EXPECT_NE(created.body.find("<tagSet><item><key>team</key><value>core</value></item></tagSet>"), std::string::npos);
  EXPECT_NE(created.body.find("<CreateSecurityGroupResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"),
            std::string::npos);

  http::Response added = Call("Action=AuthorizeSecurityGroupIngress&GroupId=" + id +
                              "&IpPermissions.1.IpProtocol=tcp&IpPermissions.1.FromPort=80&IpPermissions.1.ToPort=80"
                              "&IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0%2F8&IpPermissions.1.IpRanges.1.Description=lan"
                              "&IpPermissions.1.IpRanges.2.CidrIp=192.168.0.0%2F16"
                              "&IpPermissions.2.IpProtocol=-1&IpPermissions.2.Groups.1.GroupId=" + id);
  ASSERT_EQ(added.status, 200) << added.body;
  EXPECT_NE(added.body.find("<return>true</return>"), std::string::npos);
  EXPECT_EQ(std::count(added.body.begin(), added.body.end(), '\n'), 1);  // one XML declaration line
  size_t n = 0;
  for (size_t p = added.body.find("<securityGroupRuleId>"); p != std::string::npos;
       p = added.body.find("<securityGroupRuleId>", p + 1))
    ++n;
  EXPECT_EQ(n, 3u);
  EXPECT_NE(added.body.find("<referencedGroupInfo><groupId>" + id + "</groupId><userId>123456789012</userId>"),
            std::string::npos);

  http::Response described = Call("Action=DescribeSecurityGroups&GroupId.1=" + id);
  ASSERT_EQ(described.status, 200) << described.body;
  EXPECT_NE(described.body.find("<ipPermissions><item><ipProtocol>tcp</ipProtocol><fromPort>80</fromPort><toPort>80</toPort>"
                                "<groups></groups><ipRanges><item><cidrIp>10.0.0.0/8</cidrIp><description>lan</description>"
                                "</item><item><cidrIp>192.168.0.0/16</cidrIp></item></ipRanges>"),
            std::string::npos)
      << described.body;
  EXPECT_NE(described.body.find("<item><ipProtocol>-1</ipProtocol><groups><item><userId>123456789012</userId><groupId>" + id),
            std::string::npos);

  // The legacy flat parameters.
  http::Response flat = Call("Action=AuthorizeSecurityGroupIngress&GroupName=web&IpProtocol=udp&FromPort=53&ToPort=53"
                             "&CidrIp=10.0.0.0%2F8");
  ASSERT_EQ(flat.status, 200) << flat.body;
  const std::string udp_rule = Between(flat.body, "securityGroupRuleId");

  http::Response dup = Call("Action=AuthorizeSecurityGroupIngress&GroupId=" + id + "&IpProtocol=udp&FromPort=53&ToPort=53"
                            "&CidrIp=10.0.0.0%2F8");
  EXPECT_EQ(dup.status, 400);
  EXPECT_EQ(ErrorCode(dup), "InvalidPermission.Duplicate");
  EXPECT_NE(dup.body.find("<Response><Errors><Error>"), std::string::npos);

  http::Response rules = Call("Action=DescribeSecurityGroupRules&Filter.1.Name=group-id&Filter.1.Value.1=" + id);
  ASSERT_EQ(rules.status, 200) << rules.body;
  EXPECT_NE(rules.body.find("<cidrIpv4>10.0.0.0/8</cidrIpv4><description>lan</description>"), std::string::npos);
  EXPECT_NE(rules.body.find("<securityGroupRuleArn>arn:aws:ec2:us-east-1:123456789012:security-group-rule/"),
            std::string::npos);

  http::Response revoked = Call("Action=RevokeSecurityGroupIngress&GroupId=" + id + "&SecurityGroupRuleId.1=" + udp_rule);
  ASSERT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_NE(revoked.body.find("<return>true</return>"), std::string::npos);
  EXPECT_NE(revoked.body.find("<revokedSecurityGroupRuleSet><item><securityGroupRuleId>" + udp_rule), std::string::npos);
  http::Response unknown = Call("Action=RevokeSecurityGroupIngress&GroupId=" + id +
                                "&IpPermissions.1.IpProtocol=tcp&IpPermissions.1.FromPort=9&IpPermissions.1.ToPort=9"
                                "&IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0%2F8");
  ASSERT_EQ(unknown.status, 200) << unknown.body;
  EXPECT_NE(unknown.body.find("<return>false</return><unknownIpPermissionSet><item><ipProtocol>tcp</ipProtocol>"),
            std::string::npos);

  // In use by its own rules only: deletable.
  http::Response deleted = Call("Action=DeleteSecurityGroup&GroupId=" + id);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_NE(deleted.body.find("<return>true</return><groupId>" + id + "</groupId>"), std::string::npos);
  http::Response gone = Call("Action=DeleteSecurityGroup&GroupId=" + id);
  EXPECT_EQ(ErrorCode(gone), "InvalidGroup.NotFound");
}

TEST_F(Ec2SecurityGroupApiTest, ErrorsAndPagination) {
  EXPECT_EQ(ErrorCode(Call("Action=CreateSecurityGroup&GroupName=x")), "MissingParameter");
  EXPECT_EQ(ErrorCode(Call("Action=CreateSecurityGroup&GroupName=x&GroupDescription=d&TagSpecification.1.ResourceType=instance"
                           "&TagSpecification.1.Tag.1.Key=a&TagSpecification.1.Tag.1.Value=b")),
            "InvalidParameterValue");
  EXPECT_EQ(ErrorCode(Call("Action=DeleteSecurityGroup")), "MissingParameter");
  EXPECT_EQ(ErrorCode(Call("Action=AuthorizeSecurityGroupIngress&GroupName=default&IpProtocol=tcp&FromPort=x&ToPort=1"
                           "&CidrIp=1.0.0.0%2F8")),
            "InvalidParameterValue");
  EXPECT_EQ(ErrorCode(Call("Action=AuthorizeSecurityGroupIngress&GroupName=default&CidrIp=1.0.0.0%2F8&IpProtocol=-1"
                           "&IpPermissions.1.IpProtocol=-1&IpPermissions.1.IpRanges.1.CidrIp=2.0.0.0%2F8")),
            "InvalidParameterCombination");
  EXPECT_EQ(ErrorCode(Call("Action=CreateSecurityGroup&GroupName=x&GroupDescription=d&DryRun=true")), "DryRunOperation");
  EXPECT_EQ(ErrorCode(Call("Action=DescribeSecurityGroups&Filter.1.Name=color&Filter.1.Value.1=red")),
            "InvalidParameterValue");
  EXPECT_EQ(ErrorCode(Call("Action=DescribeSecurityGroups&MaxResults=2")), "InvalidParameterValue");

  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(Call(fmt::format("Action=CreateSecurityGroup&GroupName=g{}&GroupDescription=d", i)).status, 200);
  std::set<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    http::Response r = Call("Action=DescribeSecurityGroups&MaxResults=5" + (token.empty() ? "" : "&NextToken=" + token));
    ASSERT_EQ(r.status, 200) << r.body;
    for (size_t p = r.body.find("<groupName>"); p != std::string::npos; p = r.body.find("<groupName>", p + 1))
      seen.insert(r.body.substr(p + 11, r.body.find('<', p + 11) - p - 11));
    token = Between(r.body, "nextToken");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(seen.size(), 7u);  // six and the default group
  http::Response tampered = Call("Action=DescribeSecurityGroups&MaxResults=5&NextToken=abc");
  EXPECT_EQ(ErrorCode(tampered), "InvalidNextToken");
  // A filter with EC2's wildcards.
  http::Response wild = Call("Action=DescribeSecurityGroups&Filter.1.Name=group-name&Filter.1.Value.1=g%3F");
  ASSERT_EQ(wild.status, 200);
  EXPECT_NE(wild.body.find("<groupName>g5</groupName>"), std::string::npos);
  EXPECT_EQ(wild.body.find("<groupName>default</groupName>"), std::string::npos);
}

}  // namespace
}  // namespace paddock::ec2::api
