// How many queries a second the DNS server answers on loopback: one client thread keeps `window`
// queries in flight over one UDP socket (dns/testing/udp_load.h) against a server answering
// "web.internal A" with 3 records from a FakeAuthority. Prints answered queries/s and the latency
// percentiles (docs/benchmarks.md, "DNS server"; cloudmap/dns_authority_bench.cc is the same with
// Cloud Map behind the server).
//
//   build/release/src/dns/dns_server_bench [seconds=5] [window=64]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dns/server.h"
#include "dns/testing/fake_authority.h"
#include "dns/testing/udp_load.h"

using namespace paddock::dns;

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
  const testing::UdpLoad load = testing::DriveUdp(server.port(), testing::QueryWire("web.internal", 1, 0), seconds, window);
  ServerStats stats = server.stats();
  server.Stop();
  std::printf("dns_server_bench: %.1f s, window %d: %zu answered, %.0f q/s, p50 %u us, p99 %u us, lost %llu (server: %llu queries)\n",
              load.seconds, window, load.latency_us.size(), load.per_second(), load.percentile(0.50),
              load.percentile(0.99), static_cast<unsigned long long>(load.lost),
              static_cast<unsigned long long>(stats.queries));
  return 0;
}
