// edge/proxy/send_ring: the sends of one batch of handlers in one system call. Each edge I/O thread
// owns an io_uring; a send on a plain TCP socket waits until the handlers of the thread's last
// batch of events have all run — when the thread's reactor is about to wait again (a hook of the
// patched Asio reactor, third_party/boost-asio) — and then all of them go to the kernel in one
// io_uring_enter(), each as a sendmsg(MSG_DONTWAIT) that completes there and then (sent, or EAGAIN
// when the socket's buffer is full). Their senders go on as handlers, after that wait (a poll).
// With epoll each was a send() of its own: about 1 µs a system call on the PVM guests of
// docs/benchmarks.md ("The edge", session 25).
//
//   // on the I/O thread, before its io_context runs:
//   auto ring = SendRing::Make(ioc);   // null where io_uring is refused: sends then go one by one
//   SendRing::SetCurrent(ring.get());
//   // in a coroutine on that thread:
//   auto [ec, n] = co_await SendRing::Current()->Send(socket, buffers);   // n < size: send the rest
//
// Only its thread ever submits to the ring (IORING_SETUP_SINGLE_ISSUER), and completions are only
// ever taken when it asks (IORING_SETUP_DEFER_TASKRUN), so the kernel never interrupts that thread
// or any other for the ring's sake. Each request's descriptor is read from its socket as the batch
// is submitted, on the thread, with nothing in between: a socket closed while its send waited is
// answered `bad_descriptor`, and no send can reach a descriptor number reused by another
// connection in the meantime.
#pragma once

#include <sys/uio.h>

#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>

struct io_uring;

namespace paddock::edge {

class SendRing {
 public:
  // Up to this many buffers a send; a send of more takes the first ones (its caller sends the rest).
  static constexpr int kMaxBuffers = 8;

  // A ring for the calling thread, which alone uses it, posting to `ioc` (the io_context it runs);
  // null when the kernel refuses io_uring or the flags (before Linux 6.1, kernel.io_uring_disabled).
  static std::unique_ptr<SendRing> Make(boost::asio::io_context& ioc);
  ~SendRing();
  SendRing(const SendRing&) = delete;
  SendRing& operator=(const SendRing&) = delete;

  // The calling thread's ring (null: none). SetCurrent also hooks the ring to the thread's reactor.
  static SendRing* Current();
  static void SetCurrent(SendRing* ring);

  // Sends what `socket` takes at once, with the rest of this batch's sends: completes with the
  // bytes sent (all of them usually; fewer, and no error, when the socket's buffer filled) or an
  // error. `buffers` and `socket` must stay valid until it completes (the waiting coroutine owns
  // them; the socket may be closed meanwhile, not destroyed), the socket must be of the io_context
  // this thread runs, and that io_context kept running (a queued send counts as no work of it).
  // Only while !broken().
  template <typename ConstBuffers, typename Token>
  auto Send(boost::asio::ip::tcp::socket& socket, const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this, &socket, &buffers](auto handler) {
          Entry entry;
          entry.socket = &socket;
          for (auto it = boost::asio::buffer_sequence_begin(buffers);
               it != boost::asio::buffer_sequence_end(buffers) && entry.buffers < kMaxBuffers; ++it) {
            boost::asio::const_buffer b(*it);
            if (b.size() == 0) continue;
            entry.iov[entry.buffers++] = iovec{const_cast<void*>(b.data()), b.size()};
          }
          entry.waiter = std::make_unique<WaiterFor<decltype(handler)>>(std::move(handler));
          Queue(std::move(entry));
        },
        token);
  }

  // The kernel refused a submit: nothing is submitted any more, and sends go one by one instead.
  bool broken() const { return broken_; }
  // Batches submitted so far (each one io_uring_enter, up to 256 sends), and sends in them (for
  // tests).
  uint64_t batches() const { return batches_; }
  uint64_t sends() const { return sends_; }

 private:
  struct Waiter {
    virtual ~Waiter() = default;
    virtual void Complete(boost::system::error_code ec, std::size_t n) = 0;
  };
  template <typename Handler>
  struct WaiterFor final : Waiter {
    explicit WaiterFor(Handler h) : handler(std::move(h)) {}
    void Complete(boost::system::error_code ec, std::size_t n) override {
      auto executor = boost::asio::get_associated_executor(handler);
      boost::asio::dispatch(executor, [h = std::move(handler), ec, n]() mutable { std::move(h)(ec, n); });
    }
    Handler handler;
  };
  struct Result {
    boost::system::error_code ec;
    std::size_t sent = 0;
  };
  // A queued send, and (in Flush) its request and outcome: no allocation per batch but the vector.
  struct Entry {
    boost::asio::ip::tcp::socket* socket = nullptr;
    iovec iov[kMaxBuffers];
    int buffers = 0;
    std::unique_ptr<Waiter> waiter;
    msghdr message{};
    Result result;
    bool submitted = false, reaped = false;
  };

  SendRing(boost::asio::io_context& ioc, std::unique_ptr<io_uring> ring);
  void Queue(Entry entry);
  // Submits every queued send and posts their completions; false when none was queued. Run by the
  // thread's reactor before each wait for events (SetCurrent sets the hook).
  bool Flush();

  boost::asio::io_context& ioc_;
  std::unique_ptr<io_uring> ring_;
  std::vector<Entry> queued_;
  bool broken_ = false;  // the kernel refused a submit: nothing is submitted any more
  uint64_t batches_ = 0;
  uint64_t sends_ = 0;
};

}  // namespace paddock::edge
