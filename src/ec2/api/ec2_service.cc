#include "ec2/api/ec2_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "ec2/api/internal/ec2_query.h"
#include "ec2/api/models/ec2_model.h"
#include "vpc/default_vpc.h"
#include "vpc/ipam.h"

namespace paddock::ec2::api {

using vpc::AvailableIps;
using vpc::DefaultVpc;
using vpc::DefaultVpcFor;
using vpc::RuleDirection;
using vpc::Subnet;

using internal::CheckFilterNames;
using internal::Ec2Error;
using internal::Filters;
using internal::Input;
using internal::Matches;
using internal::ParseFilters;
using internal::Response;

namespace {

constexpr std::string_view kActions[] = {
    "DescribeVpcs",          "DescribeSubnets",         "DescribeSecurityGroups",        "DescribeSecurityGroupRules",
    "CreateSecurityGroup",   "DeleteSecurityGroup",     "AuthorizeSecurityGroupIngress", "AuthorizeSecurityGroupEgress",
    "RevokeSecurityGroupIngress", "RevokeSecurityGroupEgress", "DescribeInstances"};

}  // namespace

Ec2Service::Ec2Service(store::Store& store, vpc::SecurityGroups& groups, aws::TokenCodec tokens)
    : store_(store), groups_(groups), tokens_(std::move(tokens)) {
  auto model = aws::QueryModel::ParseEc2(Ec2ModelJson(), {Error::kMissingParameter, Error::kInvalidParameterValue});
  // The model is compiled into the binary: failing to read it is a build defect, not input.
  if (!model.ok()) {
    fmt::print(stderr, "paddock: the embedded EC2 model is unreadable: {}\n", model.status().ToString());
    std::abort();
  }
  model_ = std::move(model).value();
}

bool Ec2Service::Implements(std::string_view action) const {
  return std::find(std::begin(kActions), std::end(kActions), action) != std::end(kActions);
}

std::optional<aws::ThrottleGroup> Ec2Service::ThrottleGroupFor(std::string_view action) const {
  // EC2's buckets: describes share a generous one, changes (mutating actions) a smaller one.
  if (action.starts_with("Describe")) return aws::ThrottleGroup{"ec2:describe", aws::BucketSpec{100, 20}};
  return aws::ThrottleGroup{"ec2:modify", aws::BucketSpec{50, 5}};
}

std::vector<aws::AuthRequest> Ec2Service::AuthorizationFor(const aws::CallContext& ctx,
                                                           const aws::QueryParams& params) const {
  (void)params;
  return {aws::AuthRequest{fmt::format("ec2:{}", ctx.action), "*", {}, aws::DenialForm::kUnauthorizedOperation}};
}

std::optional<aws::AwsError> Ec2Service::ErrorFor(const Status& status) const { return Ec2ErrorFor(status); }

std::string Ec2Service::ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{}</Code><Message>{}</Message></Error>"
      "</Errors><RequestID>{}</RequestID></Response>",
      aws::XmlEscape(code), aws::XmlEscape(message), aws::XmlEscape(request_id));
}

StatusOr<std::string> Ec2Service::Call(const aws::CallContext& ctx, const aws::QueryParams& params) {
  const std::string_view a = ctx.action;
  ASSIGN_OR_RETURN(boost::json::object fields, model_->Decode(a, params));
  const Input in(fields);
  if (a == "DescribeVpcs") return DescribeVpcs(ctx, in);
  if (a == "DescribeSubnets") return DescribeSubnets(ctx, in);
  if (a == "DescribeSecurityGroups") return DescribeSecurityGroups(ctx, in);
  if (a == "DescribeSecurityGroupRules") return DescribeSecurityGroupRules(ctx, in);
  if (a == "DescribeInstances") return DescribeInstances(ctx, in);
  // EC2 answers a DryRun of a change it would make with DryRunOperation (HTTP 412 there).
  if (in.Bool("DryRun"))
    return FailedPrecondition("Request would have succeeded, but DryRun flag is set.", Error::kDryRunOperation);
  if (a == "CreateSecurityGroup") return CreateSecurityGroup(ctx, in);
  if (a == "DeleteSecurityGroup") return DeleteSecurityGroup(ctx, in);
  if (a == "AuthorizeSecurityGroupIngress") return AuthorizeRules(ctx, in, RuleDirection::kIngress);
  if (a == "AuthorizeSecurityGroupEgress") return AuthorizeRules(ctx, in, RuleDirection::kEgress);
  if (a == "RevokeSecurityGroupIngress") return RevokeRules(ctx, in, RuleDirection::kIngress);
  return RevokeRules(ctx, in, RuleDirection::kEgress);
}

StatusOr<std::string> Ec2Service::DescribeVpcs(const aws::CallContext& ctx, const Input& in) {
  const DefaultVpc vpc = DefaultVpcFor(ctx.scope);
  for (const auto& id : in.Strings("VpcIds"))
    if (id != vpc.vpc_id) return Ec2Error(Error::kVpcNotFound, fmt::format("The vpc ID '{}' does not exist", id));
  const Filters filters = ParseFilters(in);
  RETURN_IF_ERROR(CheckFilterNames(filters, {"vpc-id", "cidr", "cidr-block-association.cidr-block", "is-default", "state",
                                             "owner-id", "dhcp-options-id"}));
  const bool match = Matches(filters, {{"vpc-id", vpc.vpc_id},
                                       {"cidr", vpc.cidr},
                                       {"cidr-block-association.cidr-block", vpc.cidr},
                                       {"is-default", "true"},
                                       {"state", "available"},
                                       {"owner-id", ctx.scope.account.str()},
                                       {"dhcp-options-id", vpc.dhcp_options_id}});
  std::string items;
  if (match) {
    items = fmt::format(
        "<item><vpcId>{0}</vpcId><ownerId>{1}</ownerId><state>available</state><cidrBlock>{2}</cidrBlock>"
        "<cidrBlockAssociationSet><item><cidrBlock>{2}</cidrBlock><associationId>{3}</associationId>"
        "<cidrBlockState><state>associated</state></cidrBlockState></item></cidrBlockAssociationSet>"
        "<dhcpOptionsId>{4}</dhcpOptionsId><instanceTenancy>default</instanceTenancy><isDefault>true</isDefault>"
        "<tagSet/></item>",
        vpc.vpc_id, ctx.scope.account.str(), vpc.cidr, "vpc-cidr-assoc-" + vpc.vpc_id.substr(4), vpc.dhcp_options_id);
  }
  return Response("DescribeVpcs", ctx.request_id, "<vpcSet>" + items + "</vpcSet>");
}

StatusOr<std::string> Ec2Service::DescribeSubnets(const aws::CallContext& ctx, const Input& in) {
  const DefaultVpc vpc = DefaultVpcFor(ctx.scope);
  std::vector<std::string> ids = in.Strings("SubnetIds");
  for (const auto& id : ids)
    if (vpc.FindSubnet(id) == nullptr)
      return Ec2Error(Error::kSubnetNotFound, fmt::format("The subnet ID '{}' does not exist", id));
  const Filters filters = ParseFilters(in);
  RETURN_IF_ERROR(CheckFilterNames(filters, {"subnet-id", "vpc-id", "availability-zone", "availability-zone-id",
                                             "cidr-block", "default-for-az", "state", "owner-id"}));
  std::string items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    for (const Subnet& s : vpc.subnets) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), s.id) == ids.end()) continue;
      if (!Matches(filters, {{"subnet-id", s.id},
                             {"vpc-id", vpc.vpc_id},
                             {"availability-zone", s.az},
                             {"availability-zone-id", s.az_id},
                             {"cidr-block", s.Cidr()},
                             {"default-for-az", "true"},
                             {"state", "available"},
                             {"owner-id", ctx.scope.account.str()}}))
        continue;
      ASSIGN_OR_RETURN(uint32_t available, AvailableIps(txn, ctx.scope, s));
      items += fmt::format(
          "<item><subnetId>{}</subnetId><subnetArn>{}</subnetArn><state>available</state><ownerId>{}</ownerId>"
          "<vpcId>{}</vpcId><cidrBlock>{}</cidrBlock><ipv6CidrBlockAssociationSet/>"
          "<availableIpAddressCount>{}</availableIpAddressCount><availabilityZone>{}</availabilityZone>"
          "<availabilityZoneId>{}</availabilityZoneId><defaultForAz>true</defaultForAz>"
          "<mapPublicIpOnLaunch>true</mapPublicIpOnLaunch><assignIpv6AddressOnCreation>false</assignIpv6AddressOnCreation>"
          "<ipv6Native>false</ipv6Native><enableDns64>false</enableDns64><tagSet/></item>",
          s.id, s.arn, ctx.scope.account.str(), vpc.vpc_id, s.Cidr(), available, s.az, s.az_id);
    }
    return OkStatus();
  }));
  return Response("DescribeSubnets", ctx.request_id, "<subnetSet>" + items + "</subnetSet>");
}

}  // namespace paddock::ec2::api
