#include "edge/proxy/send_ring.h"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/post.hpp>

namespace paddock::edge {
namespace {

// Sends a batch may hold before it is submitted in parts (a batch is the sends of one round of a
// thread's handlers: about its ready connections).
constexpr unsigned kRingEntries = 256;

thread_local SendRing* current = nullptr;

}  // namespace

std::unique_ptr<SendRing> SendRing::Make(boost::asio::io_context& ioc) {
  auto ring = std::make_unique<io_uring>();
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (io_uring_queue_init_params(kRingEntries, ring.get(), &params) != 0) return nullptr;
  return std::unique_ptr<SendRing>(new SendRing(ioc, std::move(ring)));
}

SendRing::SendRing(boost::asio::io_context& ioc, std::unique_ptr<io_uring> ring)
    : ioc_(ioc), ring_(std::move(ring)) {}

SendRing::~SendRing() {
  // Their coroutines are never resumed: each ends, as the io_context's other suspended ones do,
  // when the io_context runs or is destroyed (Asio posts the unwinding of a dropped coroutine).
  queued_.clear();
  io_uring_queue_exit(ring_.get());
}

SendRing* SendRing::Current() { return current; }

void SendRing::SetCurrent(SendRing* ring) {
  current = ring;
  auto& before_wait = boost::asio::detail::paddock_before_wait;
  before_wait.hook = ring ? +[](void* self) { return static_cast<SendRing*>(self)->Flush(); } : nullptr;
  before_wait.arg = ring;
}

void SendRing::Queue(Entry entry) { queued_.push_back(std::move(entry)); }

bool SendRing::Flush() {
  if (queued_.empty()) return false;
  std::vector<Entry> batch;
  batch.swap(queued_);  // a send a resumed coroutine makes goes with the next batch
  queued_.reserve(batch.size());  // about the next batch's size: one allocation, not a doubling series
  for (std::size_t first = 0; first < batch.size();) {
    unsigned prepared = 0;
    std::size_t i = first;
    for (; i < batch.size() && prepared < kRingEntries && !broken_; ++i) {
      Entry& e = batch[i];
      // Read from the socket now, with nothing run between this and the submit below.
      if (!e.socket->is_open()) {
        e.result.ec = boost::asio::error::bad_descriptor;
        continue;
      }
      if (e.buffers == 0) continue;
      io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
      if (sqe == nullptr) {  // never: at most kRingEntries are prepared between submits
        broken_ = true;
        break;
      }
      e.message.msg_iov = e.iov;
      e.message.msg_iovlen = static_cast<std::size_t>(e.buffers);
      io_uring_prep_sendmsg(sqe, e.socket->native_handle(), &e.message, MSG_DONTWAIT | MSG_NOSIGNAL);
      io_uring_sqe_set_data64(sqe, i);
      e.submitted = true;
      ++prepared;
    }
    first = broken_ ? batch.size() : i;
    if (prepared == 0) continue;
    ++batches_;
    sends_ += prepared;
    // MSG_DONTWAIT: each completes within the submit (sent, or EAGAIN), so the wait never sleeps.
    unsigned seen = 0;
    int retries = 0;
    while (seen < prepared && !broken_) {
      int r = io_uring_submit_and_wait(ring_.get(), prepared - seen);
      const bool transient = r == -EINTR || r == -EAGAIN || r == -EBUSY || r == -ENOMEM;
      // Anything else is this code's mistake. Requests the kernel did not take stay in the ring, and
      // the ring is never entered again (broken_), so none can go later, to whatever its descriptor
      // number is by then; each is answered below, and later sends go one by one.
      if ((r < 0 && !transient) || (transient && ++retries > 100)) broken_ = true;
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0, seen_before = seen;
      io_uring_for_each_cqe(ring_.get(), head, cqe) {
        const uint64_t index = io_uring_cqe_get_data64(cqe);
        ++seen;
        if (index >= batch.size() || !batch[index].submitted || batch[index].reaped) continue;  // never
        batch[index].reaped = true;
        Result& result = batch[index].result;
        if (cqe->res >= 0)
          result.sent = static_cast<std::size_t>(cqe->res);
        else if (cqe->res != -EAGAIN)
          result.ec = boost::system::error_code(-cqe->res, boost::system::system_category());
      }
      io_uring_cq_advance(ring_.get(), seen - seen_before);
    }
  }
  // A send the kernel may have taken but whose completion was not seen (the ring broke): an
  // error, not "0 sent", so that its caller does not send the bytes a second time.
  for (Entry& e : batch)
    if (e.submitted && !e.reaped) e.result = Result{boost::asio::error::operation_aborted, 0};
  // The senders go on as handlers of their own, after the wait this precedes (it then polls).
  boost::asio::post(ioc_, [batch = std::move(batch)] {
    for (const Entry& e : batch) e.waiter->Complete(e.result.ec, e.result.sent);
  });
  return true;
}

}  // namespace paddock::edge
