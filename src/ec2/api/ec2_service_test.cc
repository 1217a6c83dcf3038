// EC2's Query protocol through the real front, as boto3 sends it: DescribeVpcs, DescribeSubnets
// and DescribeSecurityGroups of the default VPC (docs/contracts/default-vpc.md).
#include "ec2/api/ec2_service.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ec2/api/errors.h"
#include "ec2/api/testing/front_fixture.h"
#include "vpc/default_vpc.h"
#include "vpc/errors.h"

namespace paddock::ec2::api {
namespace {

using vpc::DefaultVpc;
using vpc::DefaultVpcFor;

const Scope kScope{AccountId("123456789012"), Region("us-east-1")};

class Ec2ServiceTest : public testing::Ec2FrontTest {
 protected:
  http::Response Call(std::string body) { return Post(std::move(body)); }
  DefaultVpc vpc_ = DefaultVpcFor(kScope);
};

TEST(Ec2ErrorsTest, EveryErrorHasItsOwnCodeAnsweredWith400) {
  std::set<std::string> codes;
  for (int i = 1; i <= static_cast<int>(Error::kDryRunOperation); ++i) {
    std::optional<aws::AwsError> e = Ec2ErrorFor(InvalidArgument("x", static_cast<Error>(i)));
    ASSERT_TRUE(e.has_value()) << i;
    EXPECT_EQ(e->http_status, 400) << e->type;
    EXPECT_TRUE(codes.insert(e->type).second) << e->type;
  }
  EXPECT_EQ(Ec2ErrorFor(InvalidArgument("x", Error::kInstanceNotFound))->type, "InvalidInstanceID.NotFound");
  EXPECT_EQ(Ec2ErrorFor(InvalidArgument("x", aws::Error::kSerialization)), std::nullopt);
  EXPECT_EQ(Ec2ErrorFor(InvalidArgument("x")), std::nullopt);  // the front's to answer
}

// The VPC owners' details, each with its own EC2 code (docs/contracts/security-group.md), all 400.
TEST(Ec2ErrorsTest, EveryVpcErrorHasItsOwnEc2CodeAnsweredWith400) {
  std::set<std::string> codes;
  for (int i = 1; i <= static_cast<int>(vpc::Error::kTagLimitExceeded); ++i) {
    std::optional<aws::AwsError> e = Ec2ErrorFor(NotFound("x", static_cast<vpc::Error>(i)));
    ASSERT_TRUE(e.has_value()) << i;
    EXPECT_EQ(e->http_status, 400) << e->type;
    EXPECT_TRUE(codes.insert(e->type).second) << e->type;
  }
  EXPECT_EQ(Ec2ErrorFor(NotFound("x", vpc::Error::kGroupNotFound))->type, "InvalidGroup.NotFound");
  EXPECT_EQ(Ec2ErrorFor(FailedPrecondition("x", vpc::Error::kDependencyViolation))->type, "DependencyViolation");
  EXPECT_EQ(Ec2ErrorFor(ResourceExhausted("x", vpc::Error::kRuleLimitExceeded))->type,
            "RulesPerSecurityGroupLimitExceeded");
  // A vpc::Error's name in logs is its own, not EC2's.
  EXPECT_EQ(ErrorDetail(vpc::Error::kGroupNotFound).ToString(), "vpc.GroupNotFound");
}

// Denies every request, in the words its DenialForm asks for, and keeps the last request asked.
class DenyAll : public aws::Authorizer {
 public:
  Status Authorize(const aws::CallContext& call, const aws::AuthRequest& request) override {
    const aws::Principal& principal = call.principal;
    asked = request;
    const bool ec2 = request.denial_form == aws::DenialForm::kUnauthorizedOperation;
    return PermissionDenied(fmt::format("{}User: {} is not authorized to perform: {}",
                                        ec2 ? "You are not authorized to perform this operation. " : "", principal.arn,
                                        request.action));
  }
  aws::AuthRequest asked;
};

TEST_F(Ec2ServiceTest, ADenialIsUnauthorizedOperationWith403InEc2sWords) {
  DenyAll authorizer;
  aws::FrontOptions options;
  options.auth.accept_any_credentials = true;
  options.auth.default_account = AccountId("123456789012");
  options.authorizer = &authorizer;
  front_ = std::make_unique<aws::ApiFront>(options, clock_, resolver_);
  front_->AddQueryService(&ec2_);
  http::Response r = Call("Action=CreateSecurityGroup&Version=2016-11-15&GroupName=web&GroupDescription=w");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(ErrorCode(r), "UnauthorizedOperation") << r.body;
  EXPECT_EQ(Between(r.body, "Message").rfind("You are not authorized to perform this operation. User: ", 0), 0u)
      << r.body;
  EXPECT_EQ(authorizer.asked.action, "ec2:CreateSecurityGroup");
  EXPECT_EQ(authorizer.asked.resource, "*");
  EXPECT_EQ(authorizer.asked.denial_form, aws::DenialForm::kUnauthorizedOperation);
  EXPECT_EQ(Ec2ErrorFor(PermissionDenied("x"))->type, "UnauthorizedOperation");
  EXPECT_EQ(Ec2ErrorFor(PermissionDenied("x"))->http_status, 403);
  // The denied create changed nothing.
  front_.reset();
  aws::FrontOptions open;
  open.auth.accept_any_credentials = true;
  open.auth.default_account = AccountId("123456789012");
  front_ = std::make_unique<aws::ApiFront>(open, clock_, resolver_);
  front_->AddQueryService(&ec2_);
  http::Response groups = Call("Action=DescribeSecurityGroups&Version=2016-11-15&GroupName.1=web");
  EXPECT_EQ(ErrorCode(groups), "InvalidGroup.NotFound") << groups.body;
}

TEST_F(Ec2ServiceTest, DescribesTheDefaultVpc) {
  http::Response r = Call("Action=DescribeVpcs&Version=2016-11-15");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("<vpcId>" + vpc_.vpc_id + "</vpcId>"), std::string::npos);
  EXPECT_NE(r.body.find("<cidrBlock>172.31.0.0/16</cidrBlock>"), std::string::npos);
  EXPECT_NE(r.body.find("<isDefault>true</isDefault>"), std::string::npos);
  http::Response filtered = Call("Action=DescribeVpcs&Version=2016-11-15&Filter.1.Name=is-default&Filter.1.Value.1=false");
  EXPECT_EQ(filtered.body.find("<item>"), std::string::npos) << filtered.body;
  http::Response missing = Call("Action=DescribeVpcs&Version=2016-11-15&VpcId.1=vpc-0123");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("<Code>InvalidVpcID.NotFound</Code>"), std::string::npos) << missing.body;
  EXPECT_NE(missing.body.find("<Response><Errors>"), std::string::npos);
}

TEST_F(Ec2ServiceTest, DescribesSubnetsWithFilters) {
  http::Response all = Call("Action=DescribeSubnets&Version=2016-11-15&Filter.1.Name=vpc-id&Filter.1.Value.1=" + vpc_.vpc_id);
  ASSERT_EQ(all.status, 200) << all.body;
  for (const auto& s : vpc_.subnets) EXPECT_NE(all.body.find("<subnetId>" + s.id + "</subnetId>"), std::string::npos);
  EXPECT_NE(all.body.find("<availableIpAddressCount>4091</availableIpAddressCount>"), std::string::npos);
  http::Response zone_b = Call("Action=DescribeSubnets&Version=2016-11-15&Filter.1.Name=availability-zone&Filter.1.Value.1=us-east-1b");
  EXPECT_EQ(zone_b.body.find(vpc_.subnets[0].id), std::string::npos);
  EXPECT_NE(zone_b.body.find(vpc_.subnets[1].id), std::string::npos);
  http::Response by_id = Call("Action=DescribeSubnets&Version=2016-11-15&SubnetId.1=" + vpc_.subnets[2].id);
  EXPECT_NE(by_id.body.find("<cidrBlock>172.31.32.0/20</cidrBlock>"), std::string::npos);
  http::Response bad = Call("Action=DescribeSubnets&Version=2016-11-15&SubnetId.1=subnet-123");
  EXPECT_NE(bad.body.find("<Code>InvalidSubnetID.NotFound</Code>"), std::string::npos);
  http::Response bad_filter = Call("Action=DescribeSubnets&Version=2016-11-15&Filter.1.Name=color&Filter.1.Value.1=red");
  EXPECT_EQ(bad_filter.status, 400);
}

TEST_F(Ec2ServiceTest, DescribesTheDefaultSecurityGroup) {
  http::Response r = Call("Action=DescribeSecurityGroups&Version=2016-11-15&GroupName.1=default");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("<groupId>" + vpc_.security_group_id + "</groupId>"), std::string::npos);
  EXPECT_NE(r.body.find("<cidrIp>0.0.0.0/0</cidrIp>"), std::string::npos);
  http::Response missing = Call("Action=DescribeSecurityGroups&Version=2016-11-15&GroupId.1=sg-0123456789abcdef0");
  EXPECT_NE(missing.body.find("<Code>InvalidGroup.NotFound</Code>"), std::string::npos);
  http::Response malformed = Call("Action=DescribeSecurityGroups&Version=2016-11-15&GroupId.1=sg-123");
  EXPECT_NE(malformed.body.find("<Code>InvalidGroupId.Malformed</Code>"), std::string::npos);
}

}  // namespace
}  // namespace paddock::ec2::api
