#include "vpc/default_vpc.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <charconv>

#include "common/encoding.h"

namespace paddock::vpc {
namespace {

// "us-east-1" -> "use1", "eu-west-2" -> "euw2", "ap-southeast-1" -> "aps1".
std::string ZoneIdPrefix(std::string_view region) {
  std::string out;
  size_t first = region.find('-');
  size_t last = region.rfind('-');
  if (first == std::string_view::npos || last == first) return std::string(region);
  out += region.substr(0, first);
  out += region[first + 1];
  out += region.substr(last + 1);
  return out;
}

}  // namespace

std::string StableId(std::string_view prefix, const Scope& scope, std::string_view label) {
  std::string input = fmt::format("{}|{}|{}", scope.account.str(), scope.region.str(), label);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  std::string hex = HexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  return fmt::format("{}-0{}", prefix, hex.substr(0, 16));
}

std::string Ipv4ToString(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

bool IsHostAddressOtherHostsReach(uint32_t ip) {
  return ip >> 24 != 0 && ip >> 24 != 127 && ip >> 16 != 0xA9FE && ip >> 28 < 0xE;
}

bool ParseIpv4(std::string_view text, uint32_t* ip) {
  uint32_t out = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 4; ++i) {
    unsigned part = 0;
    auto [next, ec] = std::from_chars(p, end, part);
    if (ec != std::errc() || part > 255 || next == p) return false;
    out = (out << 8) | part;
    p = next;
    if (i < 3) {
      if (p == end || *p != '.') return false;
      ++p;
    }
  }
  if (p != end) return false;
  *ip = out;
  return true;
}

std::string Subnet::Cidr() const { return fmt::format("{}/{}", Ipv4ToString(network), prefix_length); }

const Subnet* DefaultVpc::FindSubnet(std::string_view id) const {
  for (const auto& s : subnets)
    if (s.id == id) return &s;
  return nullptr;
}

DefaultVpc DefaultVpcFor(const Scope& scope) {
  DefaultVpc vpc;
  vpc.vpc_id = StableId("vpc", scope, "vpc");
  vpc.dhcp_options_id = StableId("dopt", scope, "dhcp");
  vpc.security_group_id = StableId("sg", scope, "default-sg");
  vpc.security_group_arn = fmt::format("arn:aws:ec2:{}:{}:security-group/{}", scope.region.str(),
                                       scope.account.str(), vpc.security_group_id);
  const uint32_t base = (172u << 24) | (31u << 16);
  const char zones[] = {'a', 'b', 'c'};
  for (int i = 0; i < 3; ++i) {
    Subnet s;
    s.id = StableId("subnet", scope, std::string(1, zones[i]));
    s.arn = fmt::format("arn:aws:ec2:{}:{}:subnet/{}", scope.region.str(), scope.account.str(), s.id);
    s.az = scope.region.str() + zones[i];
    s.az_id = fmt::format("{}-az{}", ZoneIdPrefix(scope.region.str()), i + 1);
    s.network = base + (static_cast<uint32_t>(i) << 12);  // 172.31.0.0, .16.0, .32.0
    s.prefix_length = 20;
    vpc.subnets.push_back(std::move(s));
  }
  return vpc;
}

}  // namespace paddock::vpc
