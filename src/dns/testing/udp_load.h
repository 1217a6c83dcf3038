// dns/testing: the load driver of the DNS benchmarks — one client thread keeping `window` copies of
// a query in flight over one UDP socket to 127.0.0.1:port, each reply answered at once by a new
// query with the next id. Both directions batch their system calls (sendmmsg, recvmmsg) so that the
// client is not what is measured; a reply's latency runs from its batch's send to its batch's
// receive. Replies lost for 200 ms: the window is sent again (and counted as lost).
//
//   testing::UdpLoad load = testing::DriveUdp(server.port(), testing::QueryWire("web.internal", 1, 0), 5.0, 64);
//   std::printf("%.0f q/s, p99 %u us\n", load.per_second(), load.percentile(0.99));
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "dns/testing/loopback_client.h"

namespace paddock::dns::testing {

struct UdpLoad {
  double seconds = 0;
  std::vector<uint32_t> latency_us;  // one per reply, sorted
  uint64_t lost = 0;                 // queries sent again after 200 ms without a reply

  double per_second() const { return seconds > 0 ? static_cast<double>(latency_us.size()) / seconds : 0; }
  uint32_t percentile(double p) const {
    return latency_us.empty() ? 0u : latency_us[static_cast<size_t>(p * static_cast<double>(latency_us.size() - 1))];
  }
};

inline UdpLoad DriveUdp(uint16_t port, const std::string& query, double seconds, int window) {
  using Clock = std::chrono::steady_clock;
  const size_t slots = static_cast<size_t>(std::max(window, 1));
  int fd = UdpSocketTo(port);
  int size = 1 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  std::vector<Clock::time_point> sent(65536);
  UdpLoad load;
  load.latency_us.reserve(1 << 23);
  uint16_t next_id = 0;
  std::vector<std::string> queries(slots, query);
  std::vector<mmsghdr> out(slots), in(slots);
  std::vector<iovec> out_iov(slots), in_iov(slots);
  std::vector<std::array<char, 1500>> replies(slots);
  for (size_t i = 0; i < slots; ++i) {
    in_iov[i] = iovec{replies[i].data(), replies[i].size()};
    in[i].msg_hdr.msg_iov = &in_iov[i];
    in[i].msg_hdr.msg_iovlen = 1;
  }
  auto send_batch = [&](size_t count) {
    Clock::time_point now = Clock::now();
    for (size_t i = 0; i < count; ++i) {
      uint16_t id = next_id++;
      queries[i][0] = static_cast<char>(id >> 8);
      queries[i][1] = static_cast<char>(id & 0xFF);
      sent[id] = now;
      out_iov[i] = iovec{queries[i].data(), queries[i].size()};
      out[i].msg_hdr = msghdr{};
      out[i].msg_hdr.msg_iov = &out_iov[i];
      out[i].msg_hdr.msg_iovlen = 1;
    }
    for (size_t done = 0; done < count;) {
      int n = ::sendmmsg(fd, out.data() + done, static_cast<unsigned>(count - done), 0);
      done += n > 0 ? static_cast<size_t>(n) : 1;
    }
  };
  timeval wait{0, 200'000};  // replies lost for this long: refill the window
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  send_batch(slots);
  Clock::time_point start = Clock::now();
  Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    int got = ::recvmmsg(fd, in.data(), static_cast<unsigned>(slots), MSG_WAITFORONE, nullptr);
    if (got <= 0) {
      load.lost += slots;
      send_batch(slots);
      continue;
    }
    Clock::time_point now = Clock::now();
    for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
      if (in[i].msg_len < 12) continue;
      const auto& r = replies[i];
      uint16_t id = static_cast<uint16_t>(static_cast<uint8_t>(r[0]) << 8 | static_cast<uint8_t>(r[1]));
      load.latency_us.push_back(
          static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - sent[id]).count()));
    }
    send_batch(static_cast<size_t>(got));
  }
  load.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fd);
  std::sort(load.latency_us.begin(), load.latency_us.end());
  return load;
}

}  // namespace paddock::dns::testing
