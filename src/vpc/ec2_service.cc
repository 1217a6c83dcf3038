#include "vpc/ec2_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "vpc/default_vpc.h"
#include "vpc/ipam.h"

namespace paddock::vpc {
namespace {

constexpr std::string_view kXmlns = "http://ec2.amazonaws.com/doc/2016-11-15/";

Status Ec2Error(std::string code, std::string message) {
  return InvalidArgument(std::move(message), std::move(code));
}

// EC2's list parameters: "VpcId.1", "VpcId.2", ... in index order.
std::vector<std::string> ListParam(const aws::QueryParams& params, std::string_view name) {
  std::map<int, std::string> by_index;
  const std::string prefix = std::string(name) + ".";
  for (const auto& [k, v] : params) {
    if (!k.starts_with(prefix)) continue;
    int index = 0;
    std::string_view digits = std::string_view(k).substr(prefix.size());
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index > 0) by_index[index] = v;
  }
  std::vector<std::string> out;
  for (auto& [i, v] : by_index) out.push_back(std::move(v));
  return out;
}

// "Filter.N.Name" / "Filter.N.Value.M" -> name -> accepted values.
using Filters = std::map<std::string, std::set<std::string>>;

StatusOr<Filters> ParseFilters(const aws::QueryParams& params) {
  std::map<int, std::string> names;
  std::map<int, std::set<std::string>> values;
  for (const auto& [k, v] : params) {
    if (!k.starts_with("Filter.")) continue;
    std::string_view after = std::string_view(k).substr(7);
    int index = 0;
    auto [end, ec] = std::from_chars(after.data(), after.data() + after.size(), index);
    if (ec != std::errc() || index <= 0) continue;
    std::string_view rest(end, static_cast<size_t>(after.data() + after.size() - end));
    if (rest == ".Name") names[index] = v;
    if (rest.starts_with(".Value.")) values[index].insert(v);
  }
  Filters out;
  for (auto& [i, name] : names) out[name].insert(values[i].begin(), values[i].end());
  return out;
}

// Whether an item with these attribute values passes every filter. A filter on an attribute the
// item does not list is an error, as EC2 reports an unknown filter name.
StatusOr<bool> Matches(const Filters& filters, const std::map<std::string, std::string>& attributes) {
  for (const auto& [name, accepted] : filters) {
    auto it = attributes.find(name);
    if (it == attributes.end())
      return Ec2Error("InvalidParameterValue", fmt::format("The filter '{}' is invalid", name));
    if (!accepted.count(it->second)) return false;
  }
  return true;
}


std::string Response(std::string_view action, std::string_view request_id, std::string_view body) {
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{0}Response xmlns=\"{1}\"><requestId>{2}</requestId>{3}</{0}Response>",
                     action, kXmlns, request_id, body);
}

}  // namespace

bool Ec2Service::Implements(std::string_view action) const {
  return action == "DescribeVpcs" || action == "DescribeSubnets" || action == "DescribeSecurityGroups";
}

std::optional<aws::ThrottleGroup> Ec2Service::ThrottleGroupFor(std::string_view) const {
  // EC2's describe actions share a generous per-account bucket.
  return aws::ThrottleGroup{"ec2:describe", aws::BucketSpec{100, 20}};
}

std::string Ec2Service::ErrorXml(std::string_view code, std::string_view message, std::string_view request_id) const {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{}</Code><Message>{}</Message></Error>"
      "</Errors><RequestID>{}</RequestID></Response>",
      aws::XmlEscape(code), aws::XmlEscape(message), aws::XmlEscape(request_id));
}

StatusOr<std::string> Ec2Service::Call(const aws::CallContext& ctx, const aws::QueryParams& params) {
  if (ctx.action == "DescribeVpcs") return DescribeVpcs(ctx, params);
  if (ctx.action == "DescribeSubnets") return DescribeSubnets(ctx, params);
  return DescribeSecurityGroups(ctx, params);
}

StatusOr<std::string> Ec2Service::DescribeVpcs(const aws::CallContext& ctx, const aws::QueryParams& params) {
  const DefaultVpc vpc = DefaultVpcFor(ctx.scope);
  for (const auto& id : ListParam(params, "VpcId"))
    if (id != vpc.vpc_id) return Ec2Error("InvalidVpcID.NotFound", fmt::format("The vpc ID '{}' does not exist", id));
  ASSIGN_OR_RETURN(Filters filters, ParseFilters(params));
  ASSIGN_OR_RETURN(bool match, Matches(filters, {{"vpc-id", vpc.vpc_id},
                                                 {"cidr", vpc.cidr},
                                                 {"cidr-block-association.cidr-block", vpc.cidr},
                                                 {"is-default", "true"},
                                                 {"state", "available"},
                                                 {"owner-id", ctx.scope.account.str()},
                                                 {"dhcp-options-id", vpc.dhcp_options_id}}));
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

StatusOr<std::string> Ec2Service::DescribeSubnets(const aws::CallContext& ctx, const aws::QueryParams& params) {
  const DefaultVpc vpc = DefaultVpcFor(ctx.scope);
  std::vector<std::string> ids = ListParam(params, "SubnetId");
  for (const auto& id : ids)
    if (vpc.FindSubnet(id) == nullptr)
      return Ec2Error("InvalidSubnetID.NotFound", fmt::format("The subnet ID '{}' does not exist", id));
  ASSIGN_OR_RETURN(Filters filters, ParseFilters(params));
  std::string items;
  RETURN_IF_ERROR(store_.Read([&](store::ReadTxn& txn) -> Status {
    for (const Subnet& s : vpc.subnets) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), s.id) == ids.end()) continue;
      ASSIGN_OR_RETURN(bool match, Matches(filters, {{"subnet-id", s.id},
                                                     {"vpc-id", vpc.vpc_id},
                                                     {"availability-zone", s.az},
                                                     {"availability-zone-id", s.az_id},
                                                     {"cidr-block", s.Cidr()},
                                                     {"default-for-az", "true"},
                                                     {"state", "available"},
                                                     {"owner-id", ctx.scope.account.str()}}));
      if (!match) continue;
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

StatusOr<std::string> Ec2Service::DescribeSecurityGroups(const aws::CallContext& ctx, const aws::QueryParams& params) {
  const DefaultVpc vpc = DefaultVpcFor(ctx.scope);
  for (const auto& id : ListParam(params, "GroupId"))
    if (id != vpc.security_group_id)
      return Ec2Error("InvalidGroup.NotFound", fmt::format("The security group '{}' does not exist", id));
  for (const auto& name : ListParam(params, "GroupName"))
    if (name != "default")
      return Ec2Error("InvalidGroup.NotFound",
                      fmt::format("The security group '{}' does not exist in default VPC '{}'", name, vpc.vpc_id));
  ASSIGN_OR_RETURN(Filters filters, ParseFilters(params));
  ASSIGN_OR_RETURN(bool match, Matches(filters, {{"group-id", vpc.security_group_id},
                                                 {"group-name", "default"},
                                                 {"vpc-id", vpc.vpc_id},
                                                 {"description", "default VPC security group"},
                                                 {"owner-id", ctx.scope.account.str()}}));
  std::string items;
  if (match) {
    // AWS's default group: all traffic from members of the group in, all traffic out.
    items = fmt::format(
        "<item><ownerId>{0}</ownerId><groupId>{1}</groupId><groupName>default</groupName>"
        "<groupDescription>default VPC security group</groupDescription><vpcId>{2}</vpcId>"
        "<securityGroupArn>{3}</securityGroupArn>"
        "<ipPermissions><item><ipProtocol>-1</ipProtocol><groups><item><userId>{0}</userId><groupId>{1}</groupId></item>"
        "</groups><ipRanges/><ipv6Ranges/><prefixListIds/></item></ipPermissions>"
        "<ipPermissionsEgress><item><ipProtocol>-1</ipProtocol><groups/><ipRanges><item><cidrIp>0.0.0.0/0</cidrIp></item>"
        "</ipRanges><ipv6Ranges/><prefixListIds/></item></ipPermissionsEgress><tagSet/></item>",
        ctx.scope.account.str(), vpc.security_group_id, vpc.vpc_id, vpc.security_group_arn);
  }
  return Response("DescribeSecurityGroups", ctx.request_id, "<securityGroupInfo>" + items + "</securityGroupInfo>");
}

}  // namespace paddock::vpc
