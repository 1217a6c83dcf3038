// dns/server: a DNS server over UDP and TCP (RFC 1035 §4.2, RFC 7766's two-octet length prefix)
// answering from an Authority (dns/responder.h) and forwarding everything else to upstream
// resolvers.
//
//   testing::FakeAuthority names;  // or the node's Cloud Map view
//   dns::Server server(dns::ServerOptions{.addresses = {"127.0.0.1"}, .port = 0, .upstreams = {"10.0.0.2"}}, names);
//   RETURN_IF_ERROR(server.Start());
//   uint16_t port = server.port();  // UDP and TCP share it
//   ...
//   server.Stop();
//
// Forwarding. A query the Authority does not claim is sent as it came (only its id is replaced
// by a random one) to the first upstream, over the transport the client used, from a fresh
// socket with a random port; the first reply that has that id (and, over UDP, comes from that
// upstream's address) is passed back unparsed with the client's id. No reply within
// forward_timeout: the next upstream; none left: SERVFAIL. With no upstreams every forward is
// SERVFAIL at once.
//
// Bounds (a task must not exhaust the node). At most max_forwards forwards are in flight, and at
// most max_forwards_per_source from one client address: a query over either limit is answered
// SERVFAIL at once. At most max_tcp_connections TCP connections are open, at most
// max_tcp_connections_per_source from one address (more are closed as they are accepted); a connection idle for tcp_idle_timeout, or whose message does not arrive
// within it, is closed; queries on one connection are answered in order.
//
// Addresses: each gets a UDP socket and a TCP listener of its own (a reply leaves from the address
// the query was sent to, as stub resolvers check), all served by the same thread, Authority and
// limits — one server per VPC namespace listens on both 169.254.169.253 and the VPC's base + 2.
//
// Threads: one I/O thread runs everything, including Authority::Lookup (which must not block).
// Start, Stop, port and stats may be called from any thread; the destructor stops.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "dns/responder.h"

namespace paddock::dns {

struct ServerOptions {
  std::vector<std::string> addresses = {"127.0.0.1"};  // IPv4 or IPv6 literals; at least one
  uint16_t port = 53;  // 0: an ephemeral port per address (the same for its UDP and TCP)
  // Non-empty: every socket is made inside this network namespace (a /var/run/netns/<name> path,
  // common/netns.h), so the addresses are that namespace's.
  std::string netns_path{};
  std::string listener{};  // passed to the Authority as QuerySource::listener (which VPC, say)
  // "10.0.0.2", "10.0.0.2:5353", "2001:db8::1", "[2001:db8::1]:5353". Default: none; the node
  // fills it with UpstreamsFromResolvConf of the host's /etc/resolv.conf.
  std::vector<std::string> upstreams{};
  std::chrono::milliseconds forward_timeout{2000};  // per upstream tried
  size_t max_forwards = 256;
  size_t max_forwards_per_source = 64;
  size_t max_tcp_connections = 64;
  size_t max_tcp_connections_per_source = 8;
  std::chrono::milliseconds tcp_idle_timeout{10'000};
  ResponderOptions responder{};
};

struct ServerStats {
  uint64_t queries = 0;      // messages received (UDP datagrams and TCP messages)
  uint64_t answered = 0;     // replies from the Authority (records, NXDOMAIN, NODATA, errors)
  uint64_t forwarded = 0;    // replies passed through from an upstream
  uint64_t servfail = 0;     // forwards that failed or were over a limit
  uint64_t dropped = 0;      // messages not answered (runts, responses)
  uint64_t tcp_refused = 0;  // connections closed at accept for a max_tcp_connections*
};

class Server {
 public:
  Server(ServerOptions options, Authority& authority);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds UDP and TCP on every address:port and starts serving; once (FailedPrecondition after
  // a Start that succeeded, even if stopped since). Unavailable when one cannot be
  // bound (nothing stays bound then); InvalidArgument for a bad address or upstream.
  Status Start();
  // The port bound on addresses[i]; 0 before Start succeeded.
  uint16_t port(size_t i = 0) const;
  // Closes the sockets and joins the I/O thread; forwards in flight are abandoned. Idempotent.
  void Stop();

  ServerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paddock::dns
