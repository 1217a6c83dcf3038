#include "agent/net/internal/rtnl.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "agent/net/internal/util.h"

namespace paddock::agent::net::internal {
namespace {

// One request and its acknowledgement; the kernel's error number (0 on success).
StatusOr<int> Exchange(uint16_t type, uint16_t flags, uint32_t ip, int ifindex, uint8_t scope) {
  struct Request {
    nlmsghdr header;
    rtmsg route;
    char attributes[64];
  } req{};
  req.header.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  req.header.nlmsg_type = type;
  req.header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
  req.header.nlmsg_seq = 1;
  req.route.rtm_family = AF_INET;
  req.route.rtm_dst_len = 32;
  req.route.rtm_table = RT_TABLE_MAIN;
  req.route.rtm_protocol = RTPROT_BOOT;  // as `ip route add`
  req.route.rtm_scope = scope;
  req.route.rtm_type = RTN_UNICAST;
  auto add = [&](uint16_t kind, const void* data, size_t size) {
    auto* attr = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&req) + NLMSG_ALIGN(req.header.nlmsg_len));
    attr->rta_type = kind;
    attr->rta_len = static_cast<uint16_t>(RTA_LENGTH(size));
    std::memcpy(RTA_DATA(attr), data, size);
    req.header.nlmsg_len = NLMSG_ALIGN(req.header.nlmsg_len) + RTA_ALIGN(attr->rta_len);
  };
  const uint32_t dst = htonl(ip);
  add(RTA_DST, &dst, sizeof dst);
  add(RTA_OIF, &ifindex, sizeof ifindex);

  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Internal(fmt::format("netlink socket: {}", std::strerror(errno)));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent = sendto(fd, &req, req.header.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  if (sent != static_cast<ssize_t>(req.header.nlmsg_len)) {
    int err = errno;
    close(fd);
    return Internal(fmt::format("netlink send: {}", std::strerror(err)));
  }
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Internal(fmt::format("netlink receive: {}", std::strerror(err)));
    }
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, static_cast<unsigned>(n)); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      int error = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
      close(fd);
      return error;
    }
  }
}

}  // namespace

Status AddDeviceRoute(uint32_t ip, const std::string& device) {
  int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return NotFound(fmt::format("no interface {}", device));
  ASSIGN_OR_RETURN(int error, Exchange(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, ip, ifindex, RT_SCOPE_LINK));
  if (error == EEXIST) return AlreadyExists(fmt::format("a route to {}/32 exists", Ipv4(ip)));
  if (error != 0) return Internal(fmt::format("adding the route to {}/32 dev {}: {}", Ipv4(ip), device, std::strerror(error)));
  return OkStatus();
}

Status DeleteDeviceRoute(uint32_t ip, const std::string& device) {
  int ifindex = static_cast<int>(if_nametoindex(device.c_str()));
  if (ifindex == 0) return NotFound(fmt::format("no interface {}", device));
  ASSIGN_OR_RETURN(int error, Exchange(RTM_DELROUTE, 0, ip, ifindex, RT_SCOPE_NOWHERE));
  if (error == ESRCH) return NotFound(fmt::format("no route to {}/32 dev {}", Ipv4(ip), device));
  if (error != 0) return Internal(fmt::format("deleting the route to {}/32 dev {}: {}", Ipv4(ip), device, std::strerror(error)));
  return OkStatus();
}

}  // namespace paddock::agent::net::internal
