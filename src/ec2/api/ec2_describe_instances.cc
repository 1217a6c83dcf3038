// Ec2Service's DescribeInstances: the container instances' hosts (ec2/instances.h) in EC2's XML
// (botocore's ec2 2016-11-15 DescribeInstancesResult): one reservation per instance. Traefik's ECS
// provider reads instanceId, privateIpAddress and instanceState for every EC2-launch task.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "ec2/api/ec2_service.h"
#include "ec2/api/internal/ec2_query.h"
#include "vpc/default_vpc.h"

namespace paddock::ec2::api {

using vpc::DefaultVpc;
using vpc::DefaultVpcFor;
using vpc::Subnet;

namespace {

using internal::Ec2Error;
using internal::Filters;
using internal::Input;
using internal::Response;
using internal::XmlText;

const std::set<std::string> kInstanceFilters = {
    "instance-id",       "instance-state-name", "instance-state-code", "private-ip-address", "private-dns-name",
    "availability-zone", "instance-type",       "image-id",            "vpc-id",             "subnet-id",
    "architecture",      "owner-id",            "reservation-id"};

// i- followed by 8 or 17 lowercase hex digits.
bool IsInstanceId(std::string_view id) {
  if (!id.starts_with("i-") || (id.size() != 10 && id.size() != 19)) return false;
  return std::all_of(id.begin() + 2, id.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string ReservationId(const Instance& i) { return "r-" + i.instance_id.substr(2); }

std::string PrivateDnsName(const Scope& scope, const std::string& ip) {
  if (ip.empty()) return "";
  std::string dashed = ip;
  std::replace(dashed.begin(), dashed.end(), '.', '-');
  if (scope.region.str() == "us-east-1") return fmt::format("ip-{}.ec2.internal", dashed);
  return fmt::format("ip-{}.{}.compute.internal", dashed, scope.region.str());
}

std::string IsoTime(TimePoint t) {
  const int64_t ms = EpochMillis(t);
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", tm, static_cast<int>(ms % 1000));
}

struct Placed {
  const Subnet* subnet = nullptr;  // the default VPC's subnet of the instance's zone, if any
};

internal::Attributes AttributesOf(const Scope& scope, const DefaultVpc& vpc, const Instance& i, const Placed& p) {
  internal::Attributes a{{"instance-id", i.instance_id},
                         {"instance-state-name", i.running ? "running" : "terminated"},
                         {"instance-state-code", i.running ? "16" : "48"},
                         {"availability-zone", i.availability_zone},
                         {"instance-type", i.instance_type},
                         {"architecture", i.architecture},
                         {"owner-id", scope.account.str()},
                         {"reservation-id", ReservationId(i)}};
  if (!i.private_ip.empty()) {
    a.emplace("private-ip-address", i.private_ip);
    a.emplace("private-dns-name", PrivateDnsName(scope, i.private_ip));
  }
  if (!i.image_id.empty()) a.emplace("image-id", i.image_id);
  if (p.subnet != nullptr) {
    a.emplace("subnet-id", p.subnet->id);
    a.emplace("vpc-id", vpc.vpc_id);
  }
  return a;
}

std::string InstanceXml(const Scope& scope, const DefaultVpc& vpc, const Instance& i, const Placed& p) {
  std::string x = "<item>";
  x += XmlText("instanceId", i.instance_id);
  if (!i.image_id.empty()) x += XmlText("imageId", i.image_id);
  x += fmt::format("<instanceState><code>{}</code><name>{}</name></instanceState>", i.running ? 16 : 48,
                   i.running ? "running" : "terminated");
  x += XmlText("privateDnsName", i.running ? PrivateDnsName(scope, i.private_ip) : "");
  x += "<dnsName/>";
  x += XmlText("reason", i.running ? "" : "Container instance deregistered");
  x += "<amiLaunchIndex>0</amiLaunchIndex><productCodes/>";
  x += XmlText("instanceType", i.instance_type);
  x += XmlText("launchTime", IsoTime(i.launch_time));
  x += "<placement>" + XmlText("availabilityZone", i.availability_zone) + "<groupName/><tenancy>default</tenancy></placement>";
  x += "<monitoring><state>disabled</state></monitoring>";
  if (i.running && p.subnet != nullptr) {
    x += XmlText("subnetId", p.subnet->id);
    x += XmlText("vpcId", vpc.vpc_id);
  }
  if (i.running && !i.private_ip.empty()) x += XmlText("privateIpAddress", i.private_ip);
  x += "<groupSet/>";
  x += XmlText("architecture", i.architecture);
  x += "<rootDeviceType>ebs</rootDeviceType><blockDeviceMapping/><virtualizationType>hvm</virtualizationType>";
  x += "<tagSet/><hypervisor>xen</hypervisor><networkInterfaceSet/><ebsOptimized>false</ebsOptimized>";
  x += "</item>";
  return x;
}

}  // namespace

StatusOr<std::string> Ec2Service::DescribeInstances(const aws::CallContext& ctx, const Input& in) {
  const std::vector<std::string> ids = in.Strings("InstanceIds");
  for (const auto& id : ids)
    if (!IsInstanceId(id)) return Ec2Error(Error::kInstanceIdMalformed, fmt::format("Invalid id: \"{}\"", id));
  const Filters filters = internal::ParseFilters(in);
  RETURN_IF_ERROR(internal::CheckFilterNames(filters, kInstanceFilters, {"tag:"}));
  ASSIGN_OR_RETURN(size_t limit, internal::MaxResults(in));
  if (!ids.empty() && limit != 0)
    return Ec2Error(Error::kInvalidParameterCombination, "The parameter instancesSet cannot be used with the parameter maxResults");
  std::string context = fmt::format("DescribeInstances|{}|{}", ctx.scope.account.str(), ctx.scope.region.str());
  for (const auto& [name, values] : filters)
    for (const auto& v : values) context += "|" + name + "=" + v;

  std::vector<Instance> found;
  std::string next;
  if (instances_ != nullptr && !ids.empty()) {
    ASSIGN_OR_RETURN(found, instances_->Find(ctx.scope, ids));
    std::vector<std::string> missing;
    for (const auto& id : ids)
      if (std::none_of(found.begin(), found.end(), [&](const Instance& i) { return i.instance_id == id; }))
        missing.push_back(id);
    if (missing.size() == 1)
      return Ec2Error(Error::kInstanceNotFound, fmt::format("The instance ID '{}' does not exist", missing[0]));
    if (!missing.empty())
      return Ec2Error(Error::kInstanceNotFound,
                      fmt::format("The instance IDs '{}' do not exist", fmt::join(missing, ", ")));
  } else if (!ids.empty()) {
    return Ec2Error(Error::kInstanceNotFound, fmt::format("The instance ID '{}' does not exist", ids[0]));
  } else if (instances_ != nullptr) {
    ASSIGN_OR_RETURN(const std::string after, internal::NextTokenPosition(in, tokens_, context));
    bool more = false;
    ASSIGN_OR_RETURN(found, instances_->List(ctx.scope, after, limit == 0 ? 1000 : limit, &more));
    if (more && !found.empty()) next = found.back().instance_id;
  }

  const DefaultVpc vpc = DefaultVpcFor(ctx.scope);
  std::string body = "<reservationSet>";
  for (const auto& i : found) {
    Placed p;
    for (const auto& s : vpc.subnets)
      if (s.az == i.availability_zone) p.subnet = &s;
    if (!internal::Matches(filters, AttributesOf(ctx.scope, vpc, i, p))) continue;
    body += "<item>" + XmlText("reservationId", ReservationId(i)) + XmlText("ownerId", ctx.scope.account.str()) +
            "<groupSet/><instancesSet>" + InstanceXml(ctx.scope, vpc, i, p) + "</instancesSet></item>";
  }
  body += "</reservationSet>";
  if (!next.empty()) body += XmlText("nextToken", tokens_.Encode(context, next));
  return Response("DescribeInstances", ctx.request_id, body);
}

}  // namespace paddock::ec2::api
