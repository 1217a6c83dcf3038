// The only file of dns/ with Asio: sockets, timers and coroutines around dns::Responder.
#include "dns/server.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/netns.h"

namespace paddock::dns {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using error_code = boost::system::error_code;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

uint16_t IdOf(std::string_view wire) {
  return static_cast<uint16_t>(static_cast<uint8_t>(wire[0]) << 8 | static_cast<uint8_t>(wire[1]));
}
void SetId(std::string& wire, uint16_t id) {
  wire[0] = static_cast<char>(id >> 8);
  wire[1] = static_cast<char>(id & 0xFF);
}

// An id for a forwarded query from the kernel's random source (an off-path attacker must guess it
// and the socket's port; a seeded PRNG's ids could be predicted from a few observed ones).
uint16_t RandomId() {
  uint16_t id = 0;
  if (getrandom(&id, sizeof(id), 0) != sizeof(id)) id = static_cast<uint16_t>(std::random_device{}());
  return id;
}

// The end of the question that starts at offset 12 of `wire` (its name, type and class), or 0 when
// there is none or it is malformed. A question's name is never compressed (nothing precedes it).
size_t QuestionEnd(std::string_view wire) {
  size_t at = 12;
  while (at < wire.size()) {
    const auto len = static_cast<uint8_t>(wire[at]);
    if (len == 0) return at + 5 <= wire.size() ? at + 5 : 0;
    if (len > 63) return 0;
    at += 1 + len;
  }
  return 0;
}

// Whether `reply` answers `query`'s question (RFC 5452 §9.1): one question, the same name (ASCII
// case ignored), type and class.
bool AnswersQuestion(std::string_view query, std::string_view reply) {
  const size_t end = QuestionEnd(query);
  if (end == 0 || reply.size() < end || reply[4] != 0 || reply[5] != 1) return false;
  for (size_t i = 12; i < end; ++i)
    if (std::tolower(static_cast<unsigned char>(query[i])) != std::tolower(static_cast<unsigned char>(reply[i])))
      return false;
  return true;
}

// `reply` cut to its header and `query`'s question with TC set, so the client asks over TCP.
std::string Truncated(std::string_view query, std::string_view reply) {
  const size_t end = QuestionEnd(query);
  std::string out(reply.substr(0, 12));
  out[2] = static_cast<char>(static_cast<uint8_t>(out[2]) | 0x02);  // TC
  out[4] = 0, out[5] = 1;                                            // QDCOUNT 1
  for (size_t i = 6; i < 12; ++i) out[i] = 0;                        // AN, NS, AR: none
  out.append(query.substr(12, end - 12));
  return out;
}

// "10.0.0.2", "10.0.0.2:5353", "2001:db8::1", "[2001:db8::1]:5353".
StatusOr<udp::endpoint> ParseUpstream(std::string_view s) {
  std::string_view host = s, port_text;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return InvalidArgument("bad upstream " + std::string(s));
    host = s.substr(1, close - 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return InvalidArgument("bad upstream " + std::string(s));
      port_text = rest.substr(1);
    }
  } else if (std::count(s.begin(), s.end(), ':') == 1) {
    host = s.substr(0, s.find(':'));
    port_text = s.substr(s.find(':') + 1);
  }
  uint16_t port = 53;
  if (!port_text.empty()) {
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0) {
      return InvalidArgument("bad upstream port in " + std::string(s));
    }
  }
  error_code ec;
  asio::ip::address address = asio::ip::make_address(std::string(host), ec);
  if (ec) return InvalidArgument("bad upstream address " + std::string(s));
  return udp::endpoint(address, port);
}

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Authority& authority)
      : options_(std::move(options)), responder_(authority, options_.responder) {}
  ~Impl() { Stop(); }

  Status Start();
  void Stop();
  uint16_t port(size_t i) const {
    std::lock_guard lock(mu_);  // Start may be filling listeners_ on another thread
    return i < listeners_.size() ? listeners_[i]->port : 0;
  }
  ServerStats stats() const {
    return ServerStats{queries_.load(), answered_.load(), forwarded_.load(), servfail_.load(), dropped_.load(),
                       tcp_refused_.load()};
  }

 private:
  // One address's UDP socket and TCP acceptor, sharing a port.
  struct Listener {
    explicit Listener(asio::io_context& ioc) : datagrams(ioc), acceptor(ioc) {}
    asio::ip::address address;
    uint16_t port = 0;
    udp::socket datagrams;
    tcp::acceptor acceptor;
  };

  Status Bind(Listener& l, uint16_t port);
  asio::awaitable<void> UdpLoop(Listener& l);
  // What to send back to `peer` at once ("" for nothing: dropped, or forwarded).
  std::string HandleDatagram(Listener& l, std::string_view packet, const udp::endpoint& peer);
  // `udp_limit`: the responder's Decision::udp_limit for the query.
  asio::awaitable<void> ForwardForUdp(Listener& l, std::string query, udp::endpoint peer, std::string source,
                                      size_t udp_limit);
  asio::awaitable<void> AcceptLoop(Listener& l);
  asio::awaitable<void> TcpSession(std::shared_ptr<tcp::socket> socket, tcp::endpoint peer, std::string address);
  // The upstreams' reply to `query` with the query's id, or empty when none answered.
  asio::awaitable<std::string> Forward(std::string query, bool over_tcp);
  asio::awaitable<std::string> AskUdp(const udp::endpoint& upstream, const std::string& query, uint16_t id);
  asio::awaitable<std::string> AskTcp(const udp::endpoint& upstream, const std::string& query, uint16_t id);
  bool AcquireForward(const std::string& source);
  void ReleaseForward(const std::string& source);
  static void SendUdp(Listener& l, std::string_view reply, const udp::endpoint& peer) {
    error_code ignored;
    l.datagrams.send_to(asio::buffer(reply.data(), reply.size()), peer, 0, ignored);  // lossy, as UDP is
  }

  // Declaration order is destruction order reversed: what the coroutines touch outlives ioc_
  // (whose destruction destroys their frames), which outlives the sockets.
  const ServerOptions options_;
  Responder responder_;                    // I/O thread only
  std::vector<udp::endpoint> upstreams_;   // set by Start
  size_t forwards_ = 0;                    // I/O thread only
  std::map<std::string, size_t> forwards_by_source_;  // I/O thread only
  size_t tcp_connections_ = 0;             // I/O thread only
  std::map<std::string, size_t> tcp_by_source_;  // I/O thread only
  std::atomic<uint64_t> queries_{0}, answered_{0}, forwarded_{0}, servfail_{0}, dropped_{0}, tcp_refused_{0};
  mutable std::mutex mu_;                  // serializes Start and Stop
  asio::io_context ioc_{1};
  // GUARDED_BY(mu_), set by Start; the I/O thread, which Start runs only once it is filled, reads it
  // without the lock.
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::thread thread_;
};

Status Server::Impl::Bind(Listener& l, uint16_t port) {
  const asio::ip::address& address = l.address;
  error_code ec;
  int fds[2] = {-1, -1};
  auto make = [&]() -> Status {
    int family = address.is_v6() ? AF_INET6 : AF_INET;
    fds[0] = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    fds[1] = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[0] < 0 || fds[1] < 0) return Unavailable(std::string("socket: ") + std::strerror(errno));
    return OkStatus();
  };
  Status made = options_.netns_path.empty() ? make() : netns::InNetworkNamespace(options_.netns_path, make);
  auto close_fds = [&] {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (!made.ok()) {
    close_fds();
    return Unavailable("DNS server: cannot make sockets: " + made.message());
  }
  udp::endpoint udp_at(address, port);
  l.datagrams.assign(udp_at.protocol(), fds[0], ec);
  if (ec) {
    close_fds();
    return Unavailable("DNS server: " + ec.message());
  }
  l.acceptor.assign(tcp::endpoint(address, port).protocol(), fds[1], ec);
  if (ec) {
    ::close(fds[1]);
    return Unavailable("DNS server: " + ec.message());
  }
  std::string where = address.to_string() + ":" + std::to_string(port);
  l.datagrams.bind(udp_at, ec);
  if (ec) return Unavailable("DNS server: cannot bind UDP " + where + ": " + ec.message());
  l.port = l.datagrams.local_endpoint(ec).port();
  l.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  l.acceptor.bind(tcp::endpoint(address, l.port), ec);
  if (ec) return Unavailable("DNS server: cannot bind TCP " + address.to_string() + ":" + std::to_string(l.port) + ": " + ec.message());
  l.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("DNS server: cannot listen on TCP " + where + ": " + ec.message());
  l.datagrams.non_blocking(true, ec);
  l.datagrams.set_option(asio::socket_base::receive_buffer_size(1 << 20), ec);  // best effort: bursts
  return OkStatus();
}

Status Server::Impl::Start() {
  std::lock_guard lock(mu_);
  if (!listeners_.empty()) return FailedPrecondition("DNS server already started (a server starts once)");
  if (options_.addresses.empty()) return InvalidArgument("DNS server: no listen address");
  upstreams_.clear();
  for (const std::string& u : options_.upstreams) {
    ASSIGN_OR_RETURN(udp::endpoint e, ParseUpstream(u));
    upstreams_.push_back(e);
  }
  auto close_all = [&] {
    error_code ignored;
    for (auto& l : listeners_) {
      l->datagrams.close(ignored);
      l->acceptor.close(ignored);
    }
  };
  for (const std::string& a : options_.addresses) {
    error_code ec;
    auto l = std::make_unique<Listener>(ioc_);
    l->address = asio::ip::make_address(a, ec);
    if (ec) {
      close_all();
      listeners_.clear();
      return InvalidArgument("DNS server: bad listen address " + a);
    }
    // Port 0: UDP picks a port, TCP takes the same one; another process may hold it over TCP.
    Status bound;
    for (int attempt = 0; attempt < 8; ++attempt) {
      bound = Bind(*l, options_.port);
      if (bound.ok() || options_.port != 0) break;
      error_code ignored;
      l->datagrams.close(ignored);
      l->acceptor.close(ignored);
    }
    listeners_.push_back(std::move(l));
    if (!bound.ok()) {
      close_all();
      listeners_.clear();
      return bound;
    }
  }
  // Never forward to ourselves.
  std::erase_if(upstreams_, [&](const udp::endpoint& e) {
    return std::any_of(listeners_.begin(), listeners_.end(),
                       [&](const auto& l) { return e.address() == l->address && e.port() == l->port; });
  });
  for (auto& l : listeners_) {
    asio::co_spawn(ioc_, UdpLoop(*l), asio::detached);
    asio::co_spawn(ioc_, AcceptLoop(*l), asio::detached);
  }
  thread_ = std::thread([this] { ioc_.run(); });
  return OkStatus();
}

void Server::Impl::Stop() {
  std::lock_guard lock(mu_);
  if (!thread_.joinable()) return;
  ioc_.stop();
  thread_.join();
  error_code ignored;
  for (auto& l : listeners_) {  // the I/O thread is gone: nothing else touches them now
    l->datagrams.close(ignored);
    l->acceptor.close(ignored);
  }
}

asio::awaitable<void> Server::Impl::UdpLoop(Listener& l) {
  // Datagrams are read and answered in batches (recvmmsg, sendmmsg): at tens of thousands of
  // queries a second the system calls are most of the cost. A query longer than a slot (4 KiB;
  // queries are a question and an OPT record, well under 512 octets) is dropped.
  constexpr size_t kBatch = 32, kSlot = 4096;
  std::vector<char> buffers(kBatch * kSlot);
  std::array<mmsghdr, kBatch> in{}, out{};
  std::array<iovec, kBatch> in_iov{}, out_iov{};
  std::array<udp::endpoint, kBatch> peers;
  std::array<std::string, kBatch> replies;
  for (;;) {
    auto [wait_ec] = co_await l.datagrams.async_wait(udp::socket::wait_read, kTuple);
    if (wait_ec) {
      if (wait_ec == asio::error::operation_aborted || !l.datagrams.is_open()) co_return;
      continue;
    }
    for (size_t i = 0; i < kBatch; ++i) {
      in_iov[i] = iovec{buffers.data() + i * kSlot, kSlot};
      in[i].msg_hdr = msghdr{};
      in[i].msg_hdr.msg_iov = &in_iov[i];
      in[i].msg_hdr.msg_iovlen = 1;
      in[i].msg_hdr.msg_name = peers[i].data();
      in[i].msg_hdr.msg_namelen = static_cast<socklen_t>(peers[i].capacity());
    }
    int got = ::recvmmsg(l.datagrams.native_handle(), in.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (got <= 0) continue;  // nothing after all (EAGAIN), or an error of one datagram
    unsigned sending = 0;
    for (int i = 0; i < got; ++i) {
      if (in[i].msg_hdr.msg_flags & MSG_TRUNC) {
        queries_.fetch_add(1, std::memory_order_relaxed);
        dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      peers[i].resize(in[i].msg_hdr.msg_namelen);
      replies[i] = HandleDatagram(l, std::string_view(buffers.data() + i * kSlot, in[i].msg_len), peers[i]);
      if (replies[i].empty()) continue;
      out_iov[sending] = iovec{replies[i].data(), replies[i].size()};
      out[sending].msg_hdr = msghdr{};
      out[sending].msg_hdr.msg_iov = &out_iov[sending];
      out[sending].msg_hdr.msg_iovlen = 1;
      out[sending].msg_hdr.msg_name = peers[i].data();
      out[sending].msg_hdr.msg_namelen = static_cast<socklen_t>(peers[i].size());
      ++sending;
    }
    for (unsigned sent = 0; sent < sending;) {  // lossy, as UDP is: a failed datagram is skipped
      int n = ::sendmmsg(l.datagrams.native_handle(), out.data() + sent, sending - sent, MSG_DONTWAIT);
      sent += n > 0 ? static_cast<unsigned>(n) : 1;
    }
  }
}

std::string Server::Impl::HandleDatagram(Listener& l, std::string_view packet, const udp::endpoint& peer) {
  queries_.fetch_add(1, std::memory_order_relaxed);
  std::string address = peer.address().to_string();
  Decision d = responder_.Respond(packet, QuerySource{options_.listener, address, peer.port(), false});
  switch (d.action) {
    case Decision::Action::kDrop:
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return {};
    case Decision::Action::kReply:
      answered_.fetch_add(1, std::memory_order_relaxed);
      return std::move(d.reply);
    case Decision::Action::kForward:
      if (!AcquireForward(address)) {
        servfail_.fetch_add(1, std::memory_order_relaxed);
        return ServFailFor(packet);
      }
      asio::co_spawn(ioc_, ForwardForUdp(l, std::string(packet), peer, std::move(address), d.udp_limit),
                     asio::detached);
      return {};
  }
  return {};
}

asio::awaitable<void> Server::Impl::ForwardForUdp(Listener& l, std::string query, udp::endpoint peer,
                                                  std::string source, size_t udp_limit) {
  std::string reply = co_await Forward(query, false);
  ReleaseForward(source);
  if (reply.empty()) {
    servfail_.fetch_add(1, std::memory_order_relaxed);
    reply = ServFailFor(query);
  } else {
    forwarded_.fetch_add(1, std::memory_order_relaxed);
    // The upstream answers the size the query asked for; the client gets no more than its own
    // limit (capped as the server's own answers are), else a truncated reply: never an amplifier.
    if (reply.size() > udp_limit) reply = Truncated(query, reply);
  }
  if (!reply.empty() && l.datagrams.is_open()) SendUdp(l, reply, peer);
}

bool Server::Impl::AcquireForward(const std::string& source) {
  if (forwards_ >= options_.max_forwards) return false;
  size_t& mine = forwards_by_source_[source];
  if (mine >= options_.max_forwards_per_source) return false;
  ++mine;
  ++forwards_;
  return true;
}

void Server::Impl::ReleaseForward(const std::string& source) {
  --forwards_;
  auto it = forwards_by_source_.find(source);
  if (it != forwards_by_source_.end() && --it->second == 0) forwards_by_source_.erase(it);
}

asio::awaitable<std::string> Server::Impl::Forward(std::string query, bool over_tcp) {
  uint16_t client_id = IdOf(query);
  for (const udp::endpoint& upstream : upstreams_) {
    const uint16_t id = RandomId();
    SetId(query, id);
    std::string reply;  // (no co_await inside ?: — g++ 12 miscompiles it)
    if (over_tcp) {
      reply = co_await AskTcp(upstream, query, id);
    } else {
      reply = co_await AskUdp(upstream, query, id);
    }
    if (!reply.empty() && AnswersQuestion(query, reply)) {
      SetId(reply, client_id);
      co_return reply;
    }
  }
  co_return std::string();
}

asio::awaitable<std::string> Server::Impl::AskUdp(const udp::endpoint& upstream, const std::string& query,
                                                   uint16_t id) {
  // A fresh socket per forward: a random source port, and connect() makes the kernel drop
  // datagrams from anyone but the upstream.
  auto socket = std::make_shared<udp::socket>(ioc_);
  error_code ec;
  socket->open(upstream.protocol(), ec);
  if (!ec) socket->connect(upstream, ec);
  if (ec) co_return std::string();
  asio::steady_timer timer(ioc_);
  timer.expires_after(options_.forward_timeout);
  timer.async_wait([socket](error_code e) {
    error_code ignored;
    if (!e) socket->close(ignored);
  });
  auto [send_ec, sent] = co_await socket->async_send(asio::buffer(query), kTuple);
  if (send_ec) co_return std::string();
  std::string buffer(65535, '\0');
  for (;;) {
    auto [receive_ec, n] = co_await socket->async_receive(asio::buffer(buffer), kTuple);
    if (receive_ec) co_return std::string();  // the timer closed it, or the upstream refused (ICMP)
    if (n >= kHeaderSize && IdOf(buffer) == id && (static_cast<uint8_t>(buffer[2]) & 0x80)) {
      timer.cancel();
      buffer.resize(n);
      co_return buffer;
    }
  }
}

asio::awaitable<std::string> Server::Impl::AskTcp(const udp::endpoint& upstream, const std::string& query,
                                                   uint16_t id) {
  auto socket = std::make_shared<tcp::socket>(ioc_);
  asio::steady_timer timer(ioc_);
  timer.expires_after(options_.forward_timeout);
  timer.async_wait([socket](error_code e) {
    error_code ignored;
    if (!e) socket->close(ignored);
  });
  auto [connect_ec] = co_await socket->async_connect(tcp::endpoint(upstream.address(), upstream.port()), kTuple);
  if (connect_ec) co_return std::string();
  std::string message;
  message.push_back(static_cast<char>(query.size() >> 8));
  message.push_back(static_cast<char>(query.size() & 0xFF));
  message += query;
  auto [write_ec, written] = co_await asio::async_write(*socket, asio::buffer(message), kTuple);
  if (write_ec) co_return std::string();
  std::array<uint8_t, 2> length{};
  auto [length_ec, l] = co_await asio::async_read(*socket, asio::buffer(length), kTuple);
  if (length_ec) co_return std::string();
  std::string reply(size_t{length[0]} << 8 | length[1], '\0');
  auto [reply_ec, r] = co_await asio::async_read(*socket, asio::buffer(reply), kTuple);
  timer.cancel();
  if (reply_ec || reply.size() < kHeaderSize || IdOf(reply) != id || !(static_cast<uint8_t>(reply[2]) & 0x80))
    co_return std::string();
  co_return reply;
}

asio::awaitable<void> Server::Impl::AcceptLoop(Listener& l) {
  asio::steady_timer backoff(ioc_);
  for (;;) {
    auto [ec, socket] = co_await l.acceptor.async_accept(kTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !l.acceptor.is_open()) co_return;
      backoff.expires_after(std::chrono::milliseconds(50));  // out of descriptors, say: do not spin
      co_await backoff.async_wait(kTuple);
      continue;
    }
    error_code peer_ec;
    tcp::endpoint peer = socket.remote_endpoint(peer_ec);
    std::string address = peer_ec ? std::string() : peer.address().to_string();
    auto mine = tcp_by_source_.find(address);
    if (tcp_connections_ >= options_.max_tcp_connections ||
        (mine != tcp_by_source_.end() && mine->second >= options_.max_tcp_connections_per_source)) {
      tcp_refused_.fetch_add(1, std::memory_order_relaxed);
      error_code ignored;
      socket.close(ignored);
      continue;
    }
    ++tcp_connections_;
    ++tcp_by_source_[address];
    asio::co_spawn(ioc_, TcpSession(std::make_shared<tcp::socket>(std::move(socket)), peer, std::move(address)),
                   asio::detached);
  }
}

asio::awaitable<void> Server::Impl::TcpSession(std::shared_ptr<tcp::socket> socket, tcp::endpoint peer,
                                               std::string address) {
  asio::steady_timer idle(ioc_);
  std::string query;
  for (;;) {
    idle.expires_after(options_.tcp_idle_timeout);  // cancels the previous wait
    idle.async_wait([socket](error_code e) {
      error_code ignored;
      if (!e) socket->close(ignored);
    });
    std::array<uint8_t, 2> length{};
    auto [length_ec, l] = co_await asio::async_read(*socket, asio::buffer(length), kTuple);
    if (length_ec) break;
    query.assign(size_t{length[0]} << 8 | length[1], '\0');
    auto [query_ec, q] = co_await asio::async_read(*socket, asio::buffer(query), kTuple);
    if (query_ec) break;
    queries_.fetch_add(1, std::memory_order_relaxed);
    Decision d = responder_.Respond(query, QuerySource{options_.listener, address, peer.port(), true});
    std::string reply;
    if (d.action == Decision::Action::kDrop) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      break;
    } else if (d.action == Decision::Action::kReply) {
      answered_.fetch_add(1, std::memory_order_relaxed);
      reply = std::move(d.reply);
    } else if (AcquireForward(address)) {
      reply = co_await Forward(query, true);
      ReleaseForward(address);
      (reply.empty() ? servfail_ : forwarded_).fetch_add(1, std::memory_order_relaxed);
    } else {
      servfail_.fetch_add(1, std::memory_order_relaxed);
    }
    if (reply.empty()) reply = ServFailFor(query);
    if (reply.empty() || reply.size() > 0xFFFF) break;
    std::string message;
    message.reserve(reply.size() + 2);
    message.push_back(static_cast<char>(reply.size() >> 8));
    message.push_back(static_cast<char>(reply.size() & 0xFF));
    message += reply;
    auto [write_ec, w] = co_await asio::async_write(*socket, asio::buffer(message), kTuple);
    if (write_ec) break;
  }
  idle.cancel();
  error_code ignored;
  socket->close(ignored);
  --tcp_connections_;
  if (auto it = tcp_by_source_.find(address); it != tcp_by_source_.end() && --it->second == 0) tcp_by_source_.erase(it);
}

Server::Server(ServerOptions options, Authority& authority)
    : impl_(std::make_unique<Impl>(std::move(options), authority)) {}
Server::~Server() = default;
Status Server::Start() { return impl_->Start(); }
uint16_t Server::port(size_t i) const { return impl_->port(i); }
void Server::Stop() { impl_->Stop(); }
ServerStats Server::stats() const { return impl_->stats(); }

}  // namespace paddock::dns
