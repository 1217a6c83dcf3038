// The server over real sockets on 127.0.0.1: answers from a fake Authority, forwarding to an
// upstream the test runs (another dns::Server), SERVFAIL from a silent one, TC then TCP, limits.
#include "dns/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "dns/testing/fake_authority.h"
#include "dns/testing/loopback_client.h"

namespace paddock::dns {
namespace {

using namespace std::chrono_literals;

std::string Query(std::string name, uint16_t type, uint16_t id = 7, std::optional<Edns> edns = std::nullopt) {
  return testing::QueryWire(std::move(name), type, id, edns);
}

Message ParseOrDie(const std::string& wire) {
  StatusOr<Message> m = Parse(wire);
  EXPECT_TRUE(m.ok()) << (wire.empty() ? std::string("no reply") : m.status().message());
  return m.ok() ? *m : Message{};
}

// A UDP socket bound on 127.0.0.1 that never answers, and a TCP listener that never accepts: an
// upstream that is there but silent.
struct SilentUpstream {
  int udp = -1, tcp = -1;
  uint16_t port = 0;
  SilentUpstream() {
    udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = testing::Loopback(0);
    ::bind(udp, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(udp, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(tcp, 16);
  }
  ~SilentUpstream() {
    ::close(udp);
    ::close(tcp);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

// An upstream that answers every UDP query with what `answer` makes of it, whatever size or
// question that is (a misbehaving or hostile resolver), on a thread of its own.
struct RawUdpUpstream {
  int fd = -1;
  uint16_t port = 0;
  std::thread thread;
  explicit RawUdpUpstream(std::function<std::string(const Message&)> answer) {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = testing::Loopback(0);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    thread = std::thread([this, answer = std::move(answer)] {
      std::string buffer(65535, '\0');
      for (;;) {
        sockaddr_in from{};
        socklen_t from_len = sizeof from;
        ssize_t n = ::recvfrom(fd, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n <= 0) return;  // shut down
        StatusOr<Message> q = Parse(std::string_view(buffer.data(), static_cast<size_t>(n)));
        if (!q.ok()) continue;
        std::string reply = answer(*q);
        ::sendto(fd, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
      }
    });
  }
  ~RawUdpUpstream() {
    ::shutdown(fd, SHUT_RDWR);
    thread.join();
    ::close(fd);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

class DnsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream_names_.Set("example.com", 1, Answer::Records(300, {ARecord("93.184.216.34")}));
    upstream_ = std::make_unique<Server>(ServerOptions{.port = 0}, upstream_names_);
    ASSERT_TRUE(upstream_->Start().ok());
    names_.Set("web.internal", 1, Answer::Records(10, {ARecord("172.31.0.7"), ARecord("172.31.0.8")}));
    names_.Set("nope.internal", 1, Answer::NxDomain());
  }
  std::unique_ptr<Server> StartFront(ServerOptions options) {
    auto s = std::make_unique<Server>(std::move(options), names_);
    Status started = s->Start();
    EXPECT_TRUE(started.ok()) << started.message();
    return s;
  }
  std::string UpstreamAddress() const { return "127.0.0.1:" + std::to_string(upstream_->port()); }

  testing::FakeAuthority upstream_names_, names_;
  std::unique_ptr<Server> upstream_;
};

TEST_F(DnsServerTest, AnswersItsOwnNamesOverUdpAndTcp) {
  auto front = StartFront({.port = 0});
  for (bool tcp : {false, true}) {
    std::string q = Query("WEB.internal.", 1, 0x1111);
    Message m = ParseOrDie(tcp ? testing::AskTcp(front->port(), q, 5s) : testing::AskUdp(front->port(), q, 5s));
    EXPECT_EQ(m.header.id, 0x1111);
    EXPECT_TRUE(m.header.aa);
    EXPECT_EQ(m.answers.size(), 2u);
    m = ParseOrDie(tcp ? testing::AskTcp(front->port(), Query("nope.internal", 1, 2), 5s)
                       : testing::AskUdp(front->port(), Query("nope.internal", 1, 2), 5s));
    EXPECT_EQ(m.header.rcode, Rcode::kNxDomain);
  }
  ASSERT_FALSE(names_.lookups().empty());
  EXPECT_EQ(names_.lookups()[0].address, "127.0.0.1");
  EXPECT_EQ(names_.lookups()[0].name, "web.internal");
}

TEST_F(DnsServerTest, ForwardsOtherNamesAndPassesTheAnswerThroughWithTheClientsId) {
  auto front = StartFront({.port = 0, .upstreams = {UpstreamAddress()}});
  for (bool tcp : {false, true}) {
    std::string q = Query("Example.COM", 1, 0xABCD);
    Message m = ParseOrDie(tcp ? testing::AskTcp(front->port(), q, 5s) : testing::AskUdp(front->port(), q, 5s));
    EXPECT_EQ(m.header.id, 0xABCD);
    EXPECT_EQ(m.header.rcode, Rcode::kNoError);
    ASSERT_EQ(m.answers.size(), 1u);
    EXPECT_EQ(std::get<A>(m.answers[0].data).address, (std::array<uint8_t, 4>{93, 184, 216, 34}));
    EXPECT_EQ(m.answers[0].ttl, 300u);
    EXPECT_EQ(m.questions[0].name, "Example.COM");  // passed through: the upstream echoed the case
  }
  EXPECT_EQ(front->stats().forwarded, 2u);
  // The upstream saw the query with another id (ours is never reused upstream) from the front.
  EXPECT_EQ(upstream_names_.lookups().size(), 2u);
}

TEST_F(DnsServerTest, ASilentUpstreamGivesServFailAndTheNextUpstreamIsTried) {
  SilentUpstream silent;
  auto only_silent = StartFront({.port = 0, .upstreams = {silent.address()}, .forward_timeout = 200ms});
  for (bool tcp : {false, true}) {
    std::string q = Query("example.com", 1, 7);
    Message m = ParseOrDie(tcp ? testing::AskTcp(only_silent->port(), q, 5s) : testing::AskUdp(only_silent->port(), q, 5s));
    EXPECT_EQ(m.header.id, 7);
    EXPECT_EQ(m.header.rcode, Rcode::kServFail);
    EXPECT_EQ(m.questions.at(0).name, "example.com");
  }
  auto then_real = StartFront({.port = 0, .upstreams = {silent.address(), UpstreamAddress()}, .forward_timeout = 200ms});
  Message m = ParseOrDie(testing::AskUdp(then_real->port(), Query("example.com", 1, 8), 5s));
  EXPECT_EQ(m.header.rcode, Rcode::kNoError);
  EXPECT_EQ(m.answers.size(), 1u);
  auto none = StartFront({.port = 0});
  EXPECT_EQ(ParseOrDie(testing::AskUdp(none->port(), Query("example.com", 1, 9), 5s)).header.rcode, Rcode::kServFail);
}

TEST_F(DnsServerTest, ALargeAnswerIsTruncatedOverUdpAndWholeOverTcp) {
  std::vector<Record> srv;
  for (int i = 0; i < 8; ++i) srv.push_back(SrvRecord(1, 1, 8080, "task-" + std::to_string(i) + "." + std::string(60, 'x') + ".internal"));
  names_.Set("_web._tcp.internal", 33, Answer::Records(10, srv));
  auto front = StartFront({.port = 0});
  std::string q = Query("_web._tcp.internal", 33, 3);
  std::string udp = testing::AskUdp(front->port(), q, 5s);
  EXPECT_LE(udp.size(), 512u);
  Message m = ParseOrDie(udp);
  EXPECT_TRUE(m.header.tc);
  EXPECT_LT(m.answers.size(), 8u);
  m = ParseOrDie(testing::AskTcp(front->port(), q, 5s));  // what a client does on TC
  EXPECT_FALSE(m.header.tc);
  EXPECT_EQ(m.answers.size(), 8u);
}

TEST_F(DnsServerTest, TheForwardLimitAnswersServFailAtOnce) {
  SilentUpstream silent;
  auto front = StartFront({.port = 0, .upstreams = {silent.address()}, .forward_timeout = 5000ms, .max_forwards = 1});
  int fd = testing::UdpSocketTo(front->port());
  std::string first = Query("example.com", 1, 1), second = Query("example.org", 1, 2);
  ASSERT_EQ(::send(fd, first.data(), first.size(), 0), static_cast<ssize_t>(first.size()));
  ASSERT_EQ(::send(fd, second.data(), second.size(), 0), static_cast<ssize_t>(second.size()));
  // The second is over the limit: its SERVFAIL comes long before the first one's 5 s timeout.
  auto start = std::chrono::steady_clock::now();
  Message m = ParseOrDie(testing::ReceiveUdp(fd, 4s));
  EXPECT_EQ(m.header.id, 2);
  EXPECT_EQ(m.header.rcode, Rcode::kServFail);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  ::close(fd);
}

TEST_F(DnsServerTest, TheTcpConnectionLimitClosesExtraConnections) {
  auto front = StartFront({.port = 0, .max_tcp_connections = 1});
  int held = testing::TcpConnect(front->port());
  ASSERT_GE(held, 0);
  ASSERT_FALSE(testing::AskOnTcp(held, Query("web.internal", 1, 1), 5s).empty());  // accepted and counted
  int extra = testing::TcpConnect(front->port());
  ASSERT_GE(extra, 0);
  EXPECT_EQ(testing::ReadExactly(extra, 1, 5s), "");  // closed by the server: EOF, not a timeout
  EXPECT_EQ(front->stats().tcp_refused, 1u);
  ::close(extra);
  ::close(held);
}

TEST_F(DnsServerTest, OneSourceHoldsAtMostItsShareOfTcpConnections) {
  auto front = StartFront({.port = 0, .max_tcp_connections = 10, .max_tcp_connections_per_source = 2});
  int a = testing::TcpConnect(front->port()), b = testing::TcpConnect(front->port());
  ASSERT_FALSE(testing::AskOnTcp(a, Query("web.internal", 1, 1), 5s).empty());
  ASSERT_FALSE(testing::AskOnTcp(b, Query("web.internal", 1, 2), 5s).empty());
  int c = testing::TcpConnect(front->port());
  EXPECT_EQ(testing::ReadExactly(c, 1, 5s), "");  // a third from 127.0.0.1: closed
  ::close(c);
  ::close(b);
  // Once one closes, its slot is free again (the server sees the close, then the new connection).
  int d = -1;
  for (int attempt = 0; attempt < 100 && d < 0; ++attempt) {
    d = testing::TcpConnect(front->port());
    if (testing::AskOnTcp(d, Query("web.internal", 1, 3), 5s).empty()) {
      ::close(d);
      d = -1;
    }
  }
  EXPECT_GE(d, 0);
  ::close(d);
  ::close(a);
}

TEST_F(DnsServerTest, StoppingWithForwardsAndConnectionsOpenLeavesNothingBehind) {
  SilentUpstream silent;
  auto front = StartFront({.port = 0, .upstreams = {silent.address()}, .forward_timeout = 60'000ms});
  int udp = testing::UdpSocketTo(front->port());
  std::string forwarded = Query("example.com", 1, 1), tcp_forwarded = Query("example.org", 1, 3);
  ::send(udp, forwarded.data(), forwarded.size(), 0);
  int tcp = testing::TcpConnect(front->port());
  ASSERT_FALSE(testing::AskOnTcp(tcp, Query("web.internal", 1, 2), 5s).empty());
  std::string message = std::string{0, static_cast<char>(tcp_forwarded.size())} + tcp_forwarded;
  ::send(tcp, message.data(), message.size(), MSG_NOSIGNAL);
  // Datagrams are handled in order: once this is answered, the forward above is in flight.
  std::string local = Query("web.internal", 1, 4);
  ::send(udp, local.data(), local.size(), 0);
  EXPECT_EQ(ParseOrDie(testing::ReceiveUdp(udp, 5s)).header.id, 4);
  front.reset();  // a forward waiting on the upstream, a TCP session waiting on another: both go
  EXPECT_EQ(testing::ReadExactly(tcp, 1, 5s), "");
  ::close(tcp);
  ::close(udp);
}

TEST_F(DnsServerTest, AnIdleTcpConnectionIsClosed) {
  auto front = StartFront({.port = 0, .tcp_idle_timeout = 100ms});
  int fd = testing::TcpConnect(front->port());
  ASSERT_GE(fd, 0);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(testing::ReadExactly(fd, 1, 5s), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  ::close(fd);
}

TEST_F(DnsServerTest, GarbageIsAnsweredOrDroppedAndTheServerGoesOn) {
  auto front = StartFront({.port = 0});
  int fd = testing::UdpSocketTo(front->port());
  std::mt19937 rng(1);
  for (int i = 0; i < 200; ++i) {
    std::string junk(rng() % 600, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    ::send(fd, junk.data(), junk.size(), 0);
  }
  ::close(fd);
  int tcp = testing::TcpConnect(front->port());
  std::string junk("\x00\x05hello", 7);
  ::send(tcp, junk.data(), junk.size(), MSG_NOSIGNAL);
  EXPECT_EQ(testing::ReadExactly(tcp, 1, 5s), "");  // a runt: the connection is closed
  ::close(tcp);
  Message m = ParseOrDie(testing::AskUdp(front->port(), Query("web.internal", 1, 5), 5s));
  EXPECT_EQ(m.answers.size(), 2u);
  EXPECT_EQ(front->stats().queries, 202u);
}

TEST_F(DnsServerTest, ServesEveryAddressFromTheOneItWasAskedAt) {
  auto front = StartFront({.addresses = {"127.0.0.1", "127.0.0.2"}, .port = 0});
  ASSERT_NE(front->port(1), 0);
  for (auto [address, port] : {std::pair{"127.0.0.1", front->port(0)}, std::pair{"127.0.0.2", front->port(1)}}) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to = testing::Loopback(port);
    ::inet_pton(AF_INET, address, &to.sin_addr);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);  // drops replies from elsewhere
    std::string q = Query("web.internal", 1, 6);
    ::send(fd, q.data(), q.size(), 0);
    EXPECT_EQ(ParseOrDie(testing::ReceiveUdp(fd, 5s)).answers.size(), 2u) << address;
    ::close(fd);
  }
  // An address that cannot be bound: Start fails and leaves nothing bound.
  Server half(ServerOptions{.addresses = {"127.0.0.1", "192.0.2.1"}, .port = 0}, names_);
  EXPECT_FALSE(half.Start().ok());
  EXPECT_EQ(half.port(0), 0);
}

TEST_F(DnsServerTest, StopReleasesThePortAndIsIdempotent) {
  auto front = StartFront({.port = 0});
  uint16_t port = front->port();
  front->Stop();
  front->Stop();
  EXPECT_FALSE(front->Start().ok());
  Server again(ServerOptions{.port = port}, names_);
  EXPECT_TRUE(again.Start().ok());
  EXPECT_FALSE(Server(ServerOptions{.addresses = {"not-an-address"}}, names_).Start().ok());
  EXPECT_FALSE(Server(ServerOptions{.addresses = {}}, names_).Start().ok());
  EXPECT_FALSE(Server(ServerOptions{.port = 0, .upstreams = {"10.0.0.1:x"}}, names_).Start().ok());
}


// A resolver that answers a small UDP query with 100 records (about 1.6 KB) never makes the server
// an amplifier: the client gets what its own limit allows (512 octets without EDNS0), a truncated
// reply with TC set, and asks again over TCP.
TEST_F(DnsServerTest, AForwardedUdpAnswerLargerThanTheClientsLimitIsTruncated) {
  RawUdpUpstream big([](const Message& q) {
    Message r = q;
    r.header.qr = true;
    for (int i = 0; i < 100; ++i) {
      Record a = ARecord("10.0.0." + std::to_string(i));
      a.name = q.questions.at(0).name;
      r.answers.push_back(a);
    }
    return *Encode(r);
  });
  auto front = StartFront({.port = 0, .upstreams = {big.address()}, .forward_timeout = 2s});
  std::string reply = testing::AskUdp(front->port(), Query("big.example", 1, 0x4242), 5s);
  ASSERT_LE(reply.size(), 512u);
  Message m = ParseOrDie(reply);
  EXPECT_EQ(m.header.id, 0x4242);
  EXPECT_TRUE(m.header.tc);
  EXPECT_TRUE(m.answers.empty());
  EXPECT_EQ(m.questions.at(0).name, "big.example");
  // With EDNS0 asking for 4096, still no more than the server's cap (1232).
  reply = testing::AskUdp(front->port(), Query("big.example", 1, 0x4343, Edns{.udp_size = 4096}), 5s);
  EXPECT_LE(reply.size(), 1232u);
  EXPECT_TRUE(ParseOrDie(reply).header.tc);
}

// A reply with the right id but another question (RFC 5452 §9.1) is not an answer: the client
// gets SERVFAIL, never the injected records.
TEST_F(DnsServerTest, AnUpstreamReplyForAnotherQuestionIsRefused) {
  RawUdpUpstream liar([](const Message& q) {
    Message r = q;
    r.header.qr = true;
    r.questions.at(0).name = "other.example";
    Record a = ARecord("6.6.6.6");
    a.name = "other.example";
    r.answers.push_back(a);
    return *Encode(r);
  });
  auto front = StartFront({.port = 0, .upstreams = {liar.address()}, .forward_timeout = 300ms});
  Message m = ParseOrDie(testing::AskUdp(front->port(), Query("bank.example", 1, 9), 5s));
  EXPECT_EQ(m.header.rcode, Rcode::kServFail);
  EXPECT_TRUE(m.answers.empty());
}

}  // namespace
}  // namespace paddock::dns
