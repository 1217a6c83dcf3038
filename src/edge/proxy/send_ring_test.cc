// The edge's send ring on real loopback sockets: a batch's sends in one submit, a closed socket's
// send answered without reaching a descriptor reused meanwhile, a full socket's partial send, EPIPE
// without SIGPIPE, and sends queued when the ring goes.
#include "edge/proxy/send_ring.h"

#include <signal.h>

#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "gtest/gtest.h"

namespace paddock::edge {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

volatile sig_atomic_t sigpipes = 0;

class SendRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ring_ = SendRing::Make(io_);
    ASSERT_NE(ring_, nullptr) << "io_uring refused here";
    SendRing::SetCurrent(ring_.get());
    acceptor_.emplace(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  }
  void TearDown() override { SendRing::SetCurrent(nullptr); }

  // A connected pair: `ours` sends through the ring, `peer` reads synchronously.
  struct Pair {
    std::unique_ptr<tcp::socket> ours, peer;
  };
  Pair Connect() {
    Pair p{std::make_unique<tcp::socket>(io_), std::make_unique<tcp::socket>(io_)};
    p.peer->connect(acceptor_->local_endpoint());
    acceptor_->accept(*p.ours);
    return p;
  }
  std::string ReadExactly(tcp::socket& s, size_t n) {
    std::string out(n, '\0');
    asio::read(s, asio::buffer(out));
    return out;
  }

  asio::io_context io_;
  std::unique_ptr<SendRing> ring_;
  std::optional<tcp::acceptor> acceptor_;
};

TEST_F(SendRingTest, TheSendsOfOneBatchOfHandlersGoInOneSubmit) {
  std::vector<Pair> pairs;
  for (int i = 0; i < 16; ++i) pairs.push_back(Connect());
  std::vector<std::string> answers;
  for (int i = 0; i < 16; ++i) answers.push_back("answer " + std::to_string(i));
  int done = 0;
  for (int i = 0; i < 16; ++i) {
    asio::co_spawn(io_, [&, i]() -> asio::awaitable<void> {
      // Two buffers, as a head and a body go.
      const std::array<asio::const_buffer, 2> pieces{asio::buffer(answers[i].data(), 7),
                                                     asio::buffer(answers[i].data() + 7, answers[i].size() - 7)};
      auto [ec, n] = co_await ring_->Send(*pairs[i].ours, pieces, kTuple);
      EXPECT_FALSE(ec) << ec.message();
      EXPECT_EQ(n, answers[i].size());
      ++done;
    }, asio::detached);
  }
  io_.run();
  EXPECT_EQ(done, 16);
  EXPECT_EQ(ring_->batches(), 1u);
  EXPECT_EQ(ring_->sends(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(ReadExactly(*pairs[i].peer, answers[i].size()), answers[i]);
}

TEST_F(SendRingTest, ABatchLargerThanTheRingGoesInParts) {
  std::vector<Pair> pairs;
  for (int i = 0; i < 300; ++i) pairs.push_back(Connect());
  const std::string answer = "ok";
  int done = 0;
  for (int i = 0; i < 300; ++i) {
    asio::co_spawn(io_, [&, i]() -> asio::awaitable<void> {
      auto [ec, n] = co_await ring_->Send(*pairs[i].ours, asio::buffer(answer), kTuple);
      if (!ec && n == answer.size()) ++done;
    }, asio::detached);
  }
  io_.run();
  EXPECT_EQ(done, 300);
  EXPECT_EQ(ring_->batches(), 2u);  // 256, then 44
  EXPECT_EQ(ring_->sends(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(ReadExactly(*pairs[i].peer, answer.size()), answer);
}

// A send of more buffers than a request holds sends the first ones; the caller sends the rest.
TEST_F(SendRingTest, MoreBuffersThanARequestHoldsSendsTheFirstOnes) {
  Pair p = Connect();
  std::vector<std::string> pieces;
  std::vector<asio::const_buffer> buffers;
  for (int i = 0; i < SendRing::kMaxBuffers + 2; ++i) pieces.push_back(std::string(1, static_cast<char>('a' + i)));
  for (const std::string& piece : pieces) buffers.push_back(asio::buffer(piece));
  size_t sent = 0;
  asio::co_spawn(io_, [&]() -> asio::awaitable<void> {
    auto [ec, n] = co_await ring_->Send(*p.ours, buffers, kTuple);
    EXPECT_FALSE(ec);
    sent = n;
  }, asio::detached);
  io_.run();
  EXPECT_EQ(sent, static_cast<size_t>(SendRing::kMaxBuffers));
  EXPECT_EQ(ReadExactly(*p.peer, sent), "abcdefgh");
}

// The descriptor is read from the socket as the batch goes: a socket closed while its send waited
// gets bad_descriptor, and a connection opened meanwhile on the same descriptor number gets none of
// the other's bytes.
TEST_F(SendRingTest, ASocketClosedWhileItsSendWaitedSendsNothingAnywhere) {
  Pair first = Connect();
  const int fd = first.ours->native_handle();
  const std::string secret = "the first connection's answer";
  error_code result;
  size_t sent = 99;
  Pair second;
  asio::co_spawn(io_, [&]() -> asio::awaitable<void> {
    auto [ec, n] = co_await ring_->Send(*first.ours, asio::buffer(secret), kTuple);
    result = ec;
    sent = n;
  }, asio::detached);
  // Runs after the send is queued, before the batch goes: the socket closes, and the next
  // connection takes its descriptor number.
  asio::post(io_, [&] {
    second.peer = std::make_unique<tcp::socket>(io_);
    second.peer->open(tcp::v4());  // its descriptor taken before the close, so the next is fd's
    first.ours->close();
    second.peer->connect(acceptor_->local_endpoint());
    second.ours = std::make_unique<tcp::socket>(io_);
    acceptor_->accept(*second.ours);
  });
  io_.run();
  ASSERT_EQ(second.ours->native_handle(), fd) << "the test needs the descriptor number reused";
  EXPECT_EQ(result, asio::error::bad_descriptor);
  EXPECT_EQ(sent, 0u);
  EXPECT_EQ(ring_->sends(), 0u);
  second.peer->non_blocking(true);
  char c;
  error_code read_ec;
  EXPECT_EQ(second.peer->read_some(asio::buffer(&c, 1), read_ec), 0u);
  EXPECT_EQ(read_ec, asio::error::would_block) << "bytes reached the connection that reused the descriptor";
}

TEST_F(SendRingTest, AFullSocketTakesWhatFitsWithoutErrorOrWaiting) {
  Pair p = Connect();
  p.ours->set_option(asio::socket_base::send_buffer_size(4096));
  p.peer->set_option(asio::socket_base::receive_buffer_size(4096));
  const std::string big(1 << 20, 'x');
  std::vector<size_t> sent;
  error_code result;
  asio::co_spawn(io_, [&]() -> asio::awaitable<void> {
    // Until the socket is full (the peer never reads): each takes what fits, none waits.
    for (int i = 0; i < 1000; ++i) {
      auto [ec, n] = co_await ring_->Send(*p.ours, asio::buffer(big), kTuple);
      sent.push_back(n);
      if (ec || n == 0) {
        result = ec;
        break;
      }
    }
  }, asio::detached);
  io_.run();  // returns: no send waited for the peer to read
  EXPECT_FALSE(result) << result.message();
  ASSERT_GE(sent.size(), 2u);
  EXPECT_GT(sent.front(), 0u);
  EXPECT_LT(sent.front(), big.size());
  EXPECT_EQ(sent.back(), 0u) << "the socket never filled";
}

// A send on a socket whose sending side is shut (as after a peer's reset mid-answer) is EPIPE:
// an error, and no SIGPIPE, which would end the process (Paddock does not ignore it).
TEST_F(SendRingTest, ASendThatWouldRaiseSigpipeIsAnErrorInstead) {
  struct sigaction count {}, old {};
  count.sa_handler = [](int) { sigpipes = sigpipes + 1; };
  sigemptyset(&count.sa_mask);
  ASSERT_EQ(::sigaction(SIGPIPE, &count, &old), 0);
  sigpipes = 0;
  Pair p = Connect();
  p.ours->shutdown(tcp::socket::shutdown_send);
  const std::string bytes = "after the shutdown";
  error_code result;
  asio::co_spawn(io_, [&]() -> asio::awaitable<void> {
    auto [ec, n] = co_await ring_->Send(*p.ours, asio::buffer(bytes), kTuple);
    result = ec;
  }, asio::detached);
  io_.run();
  ::sigaction(SIGPIPE, &old, nullptr);
  EXPECT_EQ(result, asio::error::broken_pipe) << result.message();
  EXPECT_EQ(sigpipes, 0);
  EXPECT_EQ(ring_->sends(), 1u);
}

// Coroutines whose sends were queued when the ring goes (an edge stopping mid-batch) end with it,
// unresumed; nothing is sent.
TEST_F(SendRingTest, SendsStillQueuedWhenTheRingGoesEndUnsent) {
  Pair p = Connect();
  bool sending = false, resumed = false, frame_gone = false;
  const std::string bytes = "never sent";
  struct Gone {
    bool& flag;
    ~Gone() { flag = true; }
  };
  asio::co_spawn(io_, [&]() -> asio::awaitable<void> {
    Gone gone{frame_gone};
    sending = true;
    co_await ring_->Send(*p.ours, asio::buffer(bytes), kTuple);
    resumed = true;
  }, asio::detached);
  // One handler at a time until the coroutine has queued its send (the reactor, which would
  // submit it, may run first, but not after).
  for (int i = 0; i < 10 && !sending; ++i) io_.poll_one();
  ASSERT_TRUE(sending);
  EXPECT_EQ(ring_->sends(), 0u);
  SendRing::SetCurrent(nullptr);
  ring_.reset();
  io_.restart();
  io_.run();  // the dropped coroutine unwinds here, unresumed
  EXPECT_FALSE(resumed);
  EXPECT_TRUE(frame_gone);
  p.peer->non_blocking(true);
  char c;
  error_code read_ec;
  EXPECT_EQ(p.peer->read_some(asio::buffer(&c, 1), read_ec), 0u);
  EXPECT_EQ(read_ec, asio::error::would_block);
}

}  // namespace
}  // namespace paddock::edge
