// The patched Asio read (third_party/boost-asio): a read that took less than it asked for leaves
// its socket's next read waiting for epoll, with no recv() that would fail with EAGAIN, and no data
// is ever left unread by it. recv() is interposed here to count the calls made on the socket
// under test (Asio reads a single buffer with recv()).
#include <dlfcn.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "gtest/gtest.h"

namespace {

std::atomic<int> watched_fd{-1};
std::atomic<int> recv_calls{0};

}  // namespace

extern "C" ssize_t recv(int fd, void* data, size_t size, int flags) {
  using Recv = ssize_t (*)(int, void*, size_t, int);
  static const auto real = reinterpret_cast<Recv>(dlsym(RTLD_NEXT, "recv"));
  if (fd == watched_fd.load()) recv_calls.fetch_add(1);
  return real(fd, data, size, flags);
}

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// A connected pair on loopback: `peer` writes, `socket` (watched) is read asynchronously.
class AsioRecvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tcp::acceptor acceptor(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer_.connect(acceptor.local_endpoint());
    acceptor.accept(socket_);
    watched_fd = socket_.native_handle();
    recv_calls = 0;
  }
  void TearDown() override { watched_fd = -1; }

  void Send(const std::string& bytes) { asio::write(peer_, asio::buffer(bytes)); }

  // Starts one read of at most `size` bytes into `got_` (with `flags`), setting `done_` when it ends.
  void StartRead(size_t size, asio::socket_base::message_flags flags = 0) {
    done_ = false;
    buffer_.assign(size, '\0');
    socket_.async_receive(asio::buffer(buffer_), flags, [this](error_code ec, size_t n) {
      ASSERT_FALSE(ec) << ec.message();
      got_ = buffer_.substr(0, n);
      done_ = true;
    });
  }

  // Runs the io_context until the read ends (false if it has not within 10 s).
  bool AwaitRead() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done_ && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_one_until(deadline);
    }
    return done_;
  }

  // Starts a read before `bytes` are sent, and returns what it read when epoll reported them: no
  // report of the socket is left over (one would have the reactor try the next read at once,
  // rightly, whatever the read before it left).
  std::string ReadSentLater(const std::string& bytes, size_t size,
                            asio::socket_base::message_flags flags = 0) {
    StartRead(size, flags);
    RunReady();
    EXPECT_FALSE(done_);
    Send(bytes);
    EXPECT_TRUE(AwaitRead());
    return got_;
  }

  // Runs whatever is ready now (the reactor polled once, without waiting).
  void RunReady() {
    io_.restart();
    io_.poll();
  }

  asio::io_context io_;
  tcp::socket peer_{io_};
  tcp::socket socket_{io_};
  std::string buffer_;
  std::string got_;
  bool done_ = false;
};

TEST_F(AsioRecvTest, AReadStartedBeforeItsDataMakesOneRecvWhenTheDataComes) {
  EXPECT_EQ(ReadSentLater("first", 4096), "first");

  // The first read took 5 of 4,096 bytes: the socket was empty after it, so the next read waits
  // for epoll without trying recv() (stock Asio 1.26 tries once here, and gets EAGAIN).
  recv_calls = 0;
  StartRead(4096);
  RunReady();
  EXPECT_FALSE(done_);
  EXPECT_EQ(recv_calls.load(), 0);

  Send("second");
  ASSERT_TRUE(AwaitRead());
  EXPECT_EQ(got_, "second");
  EXPECT_EQ(recv_calls.load(), 1);
}

TEST_F(AsioRecvTest, AReadThatFilledItsBufferLeavesTheRestToTheNextReadAtOnce) {
  EXPECT_EQ(ReadSentLater("0123456789", 4), "0123");
  // A full read may have left bytes queued, and no new edge will come for them: the next read
  // must try at once.
  StartRead(4);
  RunReady();
  ASSERT_TRUE(done_);
  EXPECT_EQ(got_, "4567");
  StartRead(4096);
  RunReady();
  ASSERT_TRUE(done_);
  EXPECT_EQ(got_, "89");
}

TEST_F(AsioRecvTest, DataThatCameBetweenAShortReadAndTheNextIsRead) {
  EXPECT_EQ(ReadSentLater("a", 4096), "a");
  Send("b");  // before the next read is started, and before epoll is asked
  StartRead(4096);
  ASSERT_TRUE(AwaitRead());
  EXPECT_EQ(got_, "b");

  RunReady();  // epoll reports the socket with no read waiting
  Send("c");
  RunReady();
  StartRead(4096);
  ASSERT_TRUE(AwaitRead());
  EXPECT_EQ(got_, "c");
}

TEST_F(AsioRecvTest, APeekLeavesTheNextReadToTryAtOnce) {
  EXPECT_EQ(ReadSentLater("peeked", 4096, asio::socket_base::message_peek), "peeked");
  // The peek took less than it asked for but left the bytes queued: no edge is coming for them.
  StartRead(4096);
  RunReady();
  ASSERT_TRUE(done_);
  EXPECT_EQ(got_, "peeked");
}

// The next read on the socket ends with the end of the stream (false if it has not within 10 s).
bool NextReadIsTheEnd(asio::io_context& io, tcp::socket& socket, std::string& buffer) {
  bool eof = false;
  socket.async_receive(asio::buffer(buffer), [&eof](error_code ec, size_t) { eof = ec == asio::error::eof; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!eof && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_one_until(deadline);
  }
  return eof;
}

TEST_F(AsioRecvTest, TheEndOfTheStreamAfterAShortReadIsSeen) {
  EXPECT_EQ(ReadSentLater("last", 4096), "last");
  peer_.shutdown(tcp::socket::shutdown_send);  // an edge after the read
  EXPECT_TRUE(NextReadIsTheEnd(io_, socket_, buffer_));
}

// The data and the end of the stream come together, before epoll reports the socket: the short
// read that takes the data leaves the end queued, with no edge to come for it (the reactor
// knows it from epoll's EPOLLRDHUP).
TEST_F(AsioRecvTest, TheEndOfTheStreamThatCameWithTheDataIsSeen) {
  StartRead(4096);
  RunReady();
  ASSERT_FALSE(done_);
  Send("bye");
  peer_.shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(AwaitRead());
  EXPECT_EQ(got_, "bye");
  EXPECT_TRUE(NextReadIsTheEnd(io_, socket_, buffer_));
}

}  // namespace
