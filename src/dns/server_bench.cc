// How many queries a second the DNS server answers on loopback: one client thread keeps `window`
// queries in flight over one UDP socket (each reply is answered by the next query) against a
// server answering "web.internal A" with 3 records from a FakeAuthority. Prints answered
// queries/s and the latency percentiles (docs/benchmarks.md, "DNS server").
//
//   build/release/src/dns/dns_server_bench [seconds=5] [window=64]
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dns/server.h"
#include "dns/testing/fake_authority.h"
#include "dns/testing/loopback_client.h"

using namespace paddock::dns;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 5;
  int window = argc > 2 ? std::atoi(argv[2]) : 64;
  testing::FakeAuthority names;
  names.set_record_lookups(false);
  names.Set("web.internal", 1,
            Answer::Records(10, {ARecord("172.31.0.7"), ARecord("172.31.0.8"), ARecord("172.31.0.9")}));
  Server server(ServerOptions{.port = 0}, names);
  if (paddock::Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "dns_server_bench: %s\n", s.message().c_str());
    return 1;
  }
  int fd = testing::UdpSocketTo(server.port());
  int size = 1 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);

  Message q;
  q.header.rd = true;
  q.questions.push_back({"web.internal", 1, kClassIn});
  const std::string query = *Encode(q);
  // The client batches too (sendmmsg, recvmmsg), so that it is not what is measured: each reply
  // that comes back is answered by a new query with the next id.
  std::vector<Clock::time_point> sent(65536);
  std::vector<uint32_t> latency_us;
  latency_us.reserve(1 << 23);
  uint16_t next_id = 0;
  std::vector<std::string> queries(static_cast<size_t>(window), query);
  std::vector<mmsghdr> out(static_cast<size_t>(window)), in(static_cast<size_t>(window));
  std::vector<iovec> out_iov(out.size()), in_iov(in.size());
  std::vector<std::array<char, 1500>> replies(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
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
  send_batch(in.size());
  uint64_t lost = 0;
  Clock::time_point start = Clock::now();
  Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    int got = ::recvmmsg(fd, in.data(), static_cast<unsigned>(in.size()), MSG_WAITFORONE, nullptr);
    if (got <= 0) {
      lost += static_cast<uint64_t>(window);
      send_batch(in.size());
      continue;
    }
    Clock::time_point now = Clock::now();
    for (int i = 0; i < got; ++i) {
      if (in[static_cast<size_t>(i)].msg_len < 12) continue;
      const auto& r = replies[static_cast<size_t>(i)];
      uint16_t id = static_cast<uint16_t>(static_cast<uint8_t>(r[0]) << 8 | static_cast<uint8_t>(r[1]));
      latency_us.push_back(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - sent[id]).count()));
    }
    send_batch(static_cast<size_t>(got));
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fd);
  ServerStats stats = server.stats();
  server.Stop();
  std::sort(latency_us.begin(), latency_us.end());
  auto pct = [&](double p) { return latency_us.empty() ? 0u : latency_us[static_cast<size_t>(p * (latency_us.size() - 1))]; };
  std::printf("dns_server_bench: %.1f s, window %d: %zu answered, %.0f q/s, p50 %u us, p99 %u us, lost %llu (server: %llu queries)\n",
              elapsed, window, latency_us.size(), latency_us.size() / elapsed, pct(0.50), pct(0.99),
              static_cast<unsigned long long>(lost), static_cast<unsigned long long>(stats.queries));
  return 0;
}
