// The server is built from three parts:
//   - ServerCore owns one io_context per I/O thread (each run by that thread alone), the listener
//     (on the first), the worker pool that runs handlers, and the registry of live sessions that
//     Stop() walks. Accepted connections are dealt to the contexts in turn.
//   - Session is one accepted connection. All its state is touched only on its context's thread
//     (its "executor"), except request_/response_, which a worker owns while the session is in
//     Phase::kHandling. A context of one thread needs no strand: nothing of a session's runs
//     concurrently, and no completion wakes another thread to run it.
//   - Responses are serialized by hand into a per-connection buffer and written with one gather
//     write; Beast is used for parsing only.
//   - A streamed response (Response::stream) writes its head on the session's executor, then runs
//     its producer on a thread of its own (ServerCore::RunStream); each BodyWriter::Write posts one
//     chunk to the executor and waits for it to be written. The thread holds work on the session's
//     io_context, so its I/O thread outlives it, and Stop joins it.
#include "http/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <charconv>
#include <exception>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/netns.h"

namespace paddock::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr std::string_view kJsonContentType = "application/x-amz-json-1.1";
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr size_t kIdleReadSize = 8192;
// After an error response the connection is closed; the rest of the client's request is read
// and discarded for a bounded time first, so that closing with unread input (which sends a TCP
// reset) does not destroy the response before the client reads it. The byte bound covers a body
// several times the 1 MiB limit (a 2 MiB body left ~50 KiB unread with a 1 MiB bound, and the reset
// then lost the 413 now and then); the time bound keeps a slow sender from holding the session.
constexpr std::chrono::milliseconds kMaxDrainTime{1000};
constexpr size_t kMaxDrainBytes = 8 << 20;

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

Response ErrorResponse(int status, std::string_view type, std::string_view message) {
  Response resp;
  resp.status = status;
  resp.headers.push_back({"Content-Type", std::string(kJsonContentType)});
  resp.body = R"({"__type":)";
  AppendJsonString(resp.body, type);
  resp.body += R"(,"message":)";
  AppendJsonString(resp.body, message);
  resp.body += '}';
  return resp;
}

void AppendDecimal(std::string& out, uint64_t v) {
  char buf[20];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

std::string HostPort(std::string_view host, uint16_t port) {
  std::string out;
  if (host.find(':') != std::string_view::npos) {
    out += '[';
    out += host;
    out += ']';
  } else {
    out += host;
  }
  out += ':';
  AppendDecimal(out, port);
  return out;
}

bool IsParseError(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category();
}

class Session;

class ServerCore {
 public:
  ServerCore(ServerOptions options, Handler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        iocs_(MakeContexts(std::max(1, options_.io_threads))),
        acceptor_(*iocs_.front()),
        accept_retry_(*iocs_.front()) {}
  ~ServerCore() { Stop(); }

  StatusOr<uint16_t> Start();
  // REQUIRES: not called from an I/O thread or a handler.
  void Stop();

  // For sessions.
  const ServerOptions& options() const { return options_; }
  const Handler& handler() const { return handler_; }
  asio::thread_pool& workers() { return *workers_; }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // Returns false if the server is stopping or `peer` already holds
  // options().max_connections_per_peer connections; the session must then be dropped.
  bool Register(const std::shared_ptr<Session>& session, const std::string& peer);
  void Unregister(Session* session);
  // Runs `body` (a streamed response's producer and its end) on a new thread, holding work on
  // `executor`'s io_context until it returns. Stop joins it; a finished one is joined by the next
  // call.
  void RunStream(const asio::any_io_executor& executor, std::function<void()> body);

 private:
  using WorkGuard = asio::executor_work_guard<asio::io_context::executor_type>;

  // Each context runs on one thread only (concurrency hint 1).
  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int n) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < n; ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }
  void Accept();
  void OnAccept(error_code ec, tcp::socket socket);

  const ServerOptions options_;
  const Handler handler_;
  const std::vector<std::unique_ptr<asio::io_context>> iocs_;  // one per I/O thread
  std::vector<WorkGuard> work_;
  size_t next_context_ = 0;          // the context the next accepted connection gets; on iocs_[0]
  tcp::acceptor acceptor_;           // used only on iocs_[0]'s thread
  asio::steady_timer accept_retry_;  // on iocs_[0]
  std::optional<asio::thread_pool> workers_;
  std::vector<std::thread> io_threads_;

  std::mutex lifecycle_mu_;  // serializes Start and Stop
  bool started_ = false;     // GUARDED_BY(lifecycle_mu_)
  bool stopped_ = false;     // GUARDED_BY(lifecycle_mu_)

  std::mutex sessions_mu_;
  std::atomic<bool> stopping_{false};  // set under sessions_mu_, so no session registers after it
  // Each live session with its peer's address, and how many sessions each address holds.
  struct Live {
    std::weak_ptr<Session> session;
    std::string peer;
  };
  std::unordered_map<Session*, Live> sessions_;              // GUARDED_BY(sessions_mu_)
  std::unordered_map<std::string, size_t> peer_sessions_;  // GUARDED_BY(sessions_mu_)

  struct StreamThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex streams_mu_;
  std::list<StreamThread> streams_;  // GUARDED_BY(streams_mu_)
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ServerCore& server, tcp::socket socket, std::string remote_address)
      : server_(server), stream_(std::move(socket)) {
    request_.remote_address = std::move(remote_address);
  }
  ~Session() { server_.Unregister(this); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  asio::any_io_executor executor() { return stream_.get_executor(); }

  void Start() {
    asio::dispatch(executor(), [self = shared_from_this()] { self->WaitForRequest(); });
  }

  // Called on the session's executor when the server stops: a connection between requests, or
  // one whose request is still arriving, is closed now; one whose request is being handled closes
  // after its response is written.
  // A streamed response ends at its producer's next Write.
  void Shutdown() {
    if (phase_ == Phase::kIdle || phase_ == Phase::kReading || phase_ == Phase::kDraining) Close();
  }

 private:
  enum class Phase { kIdle, kReading, kHandling, kWriting, kStreaming, kDraining, kClosed };
  class ChunkWriter;

  void WaitForRequest();
  void OnIdleRead(error_code ec, size_t n);
  void ReadHeader();
  void OnHeader(error_code ec);
  void ReadBody();
  void OnBody(error_code ec);
  void OnReadError(error_code ec);
  void Dispatch();
  void RunHandler();  // on a worker thread
  void OnHandled();
  void Fail(Response resp);
  void WriteResponse(bool keep_alive, bool drain_after);
  // Serializes response_'s status line and headers into head_: framed by Content-Length, or for a
  // streamed body by Transfer-Encoding: chunked (HTTP/1.1) or the connection's close (HTTP/1.0).
  void BuildHead(bool keep_alive, bool streamed);
  void StartStream(bool keep_alive);
  void Stream(bool keep_alive);  // on the stream's own thread
  void OnWrite(error_code ec, bool keep_alive, bool drain_after);
  void Drain();
  void Close();

  ServerCore& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;  // reused across requests; may hold the start of a pipelined one
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  Phase phase_ = Phase::kIdle;
  bool keep_alive_requested_ = false;
  bool head_request_ = false;
  unsigned version_ = 11;
  bool chunked_ = false;  // the streamed response being written is chunked
  size_t body_limit_ = 0;  // the request being read's: max_body_bytes, or large_body_bytes
  size_t drained_ = 0;
  Request request_;    // owned by the worker while kHandling
  Response response_;  // written by the worker while kHandling; the stream's thread's while kStreaming
  std::string head_;   // serialized status line and headers; reused
};

void Session::WaitForRequest() {
  if (server_.stopping()) return Close();
  if (buffer_.size() > 0) return ReadHeader();  // a pipelined request is already here
  phase_ = Phase::kIdle;
  stream_.expires_after(server_.options().idle_timeout);
  stream_.async_read_some(buffer_.prepare(kIdleReadSize),
                          [self = shared_from_this()](error_code ec, size_t n) { self->OnIdleRead(ec, n); });
}

void Session::OnIdleRead(error_code ec, size_t n) {
  if (phase_ == Phase::kClosed) return;
  if (ec) return Close();
  buffer_.commit(n);
  ReadHeader();
}

void Session::ReadHeader() {
  phase_ = Phase::kReading;
  const ServerOptions& opts = server_.options();
  parser_.emplace();
  // The larger limit while the header is read (Beast checks a Content-Length against the limit as
  // the header ends); OnHeader then applies the request's own.
  body_limit_ = opts.allow_large_body ? std::max(opts.max_body_bytes, opts.large_body_bytes) : opts.max_body_bytes;
  parser_->body_limit(body_limit_);
  parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(opts.max_header_bytes, UINT32_MAX)));
  stream_.expires_after(opts.read_timeout);  // covers the whole request
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
}

void Session::OnHeader(error_code ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec) return OnReadError(ec);
  if (const ServerOptions& opts = server_.options(); opts.allow_large_body) {
    const auto& msg = parser_->get();
    const auto field = msg.find(opts.large_body_header);
    const bool large = field != msg.end() && opts.allow_large_body(std::string_view(field->value()));
    body_limit_ = large ? std::max(opts.max_body_bytes, opts.large_body_bytes) : opts.max_body_bytes;
    if (parser_->content_length() && *parser_->content_length() > body_limit_)
      return OnReadError(bhttp::error::body_limit);
    parser_->body_limit(body_limit_);  // a chunked body is counted as it comes
  }
  if (parser_->is_done()) return Dispatch();
  if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
    asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](error_code write_ec, size_t) {
                        if (self->phase_ == Phase::kClosed) return;
                        if (write_ec) return self->Close();
                        self->ReadBody();
                      });
    return;
  }
  ReadBody();
}

void Session::ReadBody() {
  bhttp::async_read(stream_, buffer_, *parser_,
                    [self = shared_from_this()](error_code ec, size_t) { self->OnBody(ec); });
}

void Session::OnBody(error_code ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec) return OnReadError(ec);
  Dispatch();
}

void Session::OnReadError(error_code ec) {
  const ServerOptions& opts = server_.options();
  if (ec == bhttp::error::body_limit) {
    return Fail(ErrorResponse(413, "SerializationException",
                              "Request body exceeds the maximum size of " + std::to_string(body_limit_) +
                                  " bytes"));
  }
  if (ec == bhttp::error::header_limit) {
    return Fail(ErrorResponse(431, "SerializationException",
                              "Request header exceeds the maximum size of " +
                                  std::to_string(opts.max_header_bytes) + " bytes"));
  }
  // end_of_stream and partial_message mean the peer went away; timeouts close the socket.
  if (IsParseError(ec) && ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    return Fail(ErrorResponse(400, "SerializationException", "Malformed HTTP request: " + ec.message()));
  }
  Close();
}

void Session::Dispatch() {
  phase_ = Phase::kHandling;
  auto& msg = parser_->get();
  keep_alive_requested_ = parser_->keep_alive();
  head_request_ = msg.method() == bhttp::verb::head;
  version_ = msg.version();
  request_.method.assign(msg.method_string());
  request_.target.assign(msg.target());
  // Assigned into the previous request's strings: no allocation per header on a kept-alive
  // connection once its requests' headers have been seen.
  size_t n = 0;
  for (const auto& field : msg) {
    if (n == request_.headers.size()) request_.headers.emplace_back();
    Header& h = request_.headers[n++];
    h.name.assign(field.name_string());
    h.value.assign(field.value());
  }
  request_.headers.resize(n);
  request_.body = std::move(msg.body());
  parser_.reset();
  if (server_.options().run_inline && server_.options().run_inline(request_)) {
    RunHandler();
    OnHandled();
    return;
  }
  // The work guard keeps the session's I/O thread running (Stop waits for it) until the response
  // is back on the session's executor.
  asio::post(server_.workers(),
             [self = shared_from_this(), work = asio::make_work_guard(executor())]() mutable {
               self->RunHandler();
               auto ex = self->executor();
               asio::post(ex, [session = std::move(self)] { session->OnHandled(); });
             });
}

void Session::RunHandler() {
  try {
    response_ = server_.handler()(request_);
  } catch (const std::exception& e) {
    response_ = ErrorResponse(500, "InternalFailure", e.what());
  } catch (...) {
    response_ = ErrorResponse(500, "InternalFailure", "unknown exception in request handler");
  }
}

void Session::OnHandled() {
  bool keep_alive = keep_alive_requested_ && !server_.stopping() &&
                    !EqualsIgnoreCase(response_.GetHeader("Connection"), "close");
  if (response_.stream && !head_request_) return StartStream(keep_alive);
  response_.stream = nullptr;
  WriteResponse(keep_alive, /*drain_after=*/false);
}

void Session::Fail(Response resp) {
  response_ = std::move(resp);
  head_request_ = false;
  version_ = 11;
  WriteResponse(/*keep_alive=*/false, /*drain_after=*/true);
}

void Session::BuildHead(bool keep_alive, bool streamed) {
  if (response_.status < 100 || response_.status > 999) response_.status = 500;  // WriteResponse reads it too
  const int status = response_.status;
  std::string_view reason = bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(status)));
  if (reason.empty() || reason.front() == '<') reason = "Unknown";

  head_.clear();
  head_ += "HTTP/1.1 ";
  AppendDecimal(head_, static_cast<uint64_t>(status));
  head_ += ' ';
  head_ += reason;
  head_ += "\r\n";
  for (const Header& h : response_.headers) {
    if (EqualsIgnoreCase(h.name, "Content-Length") || EqualsIgnoreCase(h.name, "Connection") ||
        EqualsIgnoreCase(h.name, "Transfer-Encoding")) {
      continue;  // the server owns framing
    }
    if (h.name.empty() || h.name.find_first_of("\r\n: ") != std::string::npos ||
        h.value.find_first_of("\r\n") != std::string::npos) {
      continue;  // would corrupt the response
    }
    head_ += h.name;
    head_ += ": ";
    head_ += h.value;
    head_ += "\r\n";
  }
  bool bodiless = status < 200 || status == 204 || status == 304;
  if (streamed) {
    if (chunked_) head_ += "Transfer-Encoding: chunked\r\n";
  } else if (!bodiless) {
    head_ += "Content-Length: ";
    AppendDecimal(head_, response_.body.size());
    head_ += "\r\n";
  }
  if (!keep_alive) {
    head_ += "Connection: close\r\n";
  } else if (version_ < 11) {
    head_ += "Connection: keep-alive\r\n";
  }
  head_ += "\r\n";
}

void Session::WriteResponse(bool keep_alive, bool drain_after) {
  phase_ = Phase::kWriting;
  BuildHead(keep_alive, /*streamed=*/false);
  const int status = response_.status;
  bool bodiless = status < 200 || status == 204 || status == 304;
  std::array<asio::const_buffer, 2> buffers{asio::buffer(head_), asio::const_buffer()};
  if (!bodiless && !head_request_) buffers[1] = asio::buffer(response_.body);
  stream_.expires_after(server_.options().read_timeout);
  asio::async_write(stream_, buffers,
                    [self = shared_from_this(), keep_alive, drain_after](error_code ec, size_t) {
                      self->OnWrite(ec, keep_alive, drain_after);
                    });
}

void Session::OnWrite(error_code ec, bool keep_alive, bool drain_after) {
  if (phase_ == Phase::kClosed) return;
  if (ec) return Close();
  response_ = Response();
  request_.body = std::string();  // don't hold a large body while idle
  if (drain_after) {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    phase_ = Phase::kDraining;
    drained_ = 0;
    stream_.expires_after(std::min<std::chrono::milliseconds>(kMaxDrainTime, server_.options().read_timeout));
    return Drain();
  }
  if (!keep_alive) return Close();
  WaitForRequest();
}

// The producer's BodyWriter: each Write is one chunk, written on the session's executor while the
// producer's thread waits. The session's I/O thread runs until the stream's thread releases its
// work, so a posted write always runs.
class Session::ChunkWriter final : public BodyWriter {
 public:
  explicit ChunkWriter(Session& session) : session_(session) {}

  bool Write(std::string_view data) override {
    if (session_.server_.stopping()) refused_ = true;
    if (failed_ || refused_) return false;
    if (data.empty()) return true;
    std::string bytes;
    if (session_.chunked_) {
      static constexpr char kHex[] = "0123456789abcdef";
      char size[16];
      int n = 0;
      for (size_t v = data.size(); v > 0; v >>= 4) size[n++] = kHex[v & 0xf];
      while (n > 0) bytes += size[--n];
      bytes += "\r\n";
      bytes += data;
      bytes += "\r\n";
    } else {
      bytes.assign(data);
    }
    return WriteRaw(bytes);
  }

  // Writes `bytes` as they are; false (and every later Write false) when that failed.
  bool WriteRaw(const std::string& bytes) {
    if (failed_) return false;
    // Shared: the I/O thread may still be inside set_value when this thread wakes and returns.
    auto written = std::make_shared<std::promise<bool>>();
    std::future<bool> done = written->get_future();
    asio::post(session_.executor(), [this, &bytes, written] {
      if (session_.phase_ == Phase::kClosed) return written->set_value(false);
      session_.stream_.expires_after(session_.server_.options().read_timeout);
      asio::async_write(session_.stream_, asio::buffer(bytes),
                        [written](error_code ec, size_t) { written->set_value(!ec); });
    });
    if (!done.get()) failed_ = true;
    return !failed_;
  }

  // Whether every write so far was written (a refused one, the server stopping, was not tried).
  bool ok() const { return !failed_; }

 private:
  Session& session_;
  bool failed_ = false;   // a write failed; only the stream's thread touches these
  bool refused_ = false;  // the server is stopping
};

void Session::StartStream(bool keep_alive) {
  phase_ = Phase::kStreaming;
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive = false;  // an HTTP/1.0 stream ends when the connection does
  BuildHead(keep_alive, /*streamed=*/true);
  stream_.expires_after(server_.options().read_timeout);
  asio::async_write(stream_, asio::buffer(head_), [self = shared_from_this(), keep_alive](error_code ec, size_t) {
    if (self->phase_ == Phase::kClosed) return;
    if (ec) return self->Close();
    self->server_.RunStream(self->executor(), [self, keep_alive] { self->Stream(keep_alive); });
  });
}

void Session::Stream(bool keep_alive) {
  BodyProducer producer = std::move(response_.stream);
  response_.stream = nullptr;
  ChunkWriter writer(*this);
  bool threw = false;
  try {
    producer(writer);
  } catch (...) {
    threw = true;
  }
  producer = nullptr;  // before the work is released: it may hold what the handler lent it
  // A body cut short (a write failed, the producer threw) must not look complete: the connection
  // closes without the last chunk. A stopping server still ends the body it was writing.
  bool ended = !threw && writer.ok() && (!chunked_ || writer.WriteRaw("0\r\n\r\n"));
  asio::post(executor(), [self = shared_from_this(), ended, keep_alive] {
    if (self->phase_ == Phase::kClosed) return;
    if (!ended) return self->Close();
    self->OnWrite(error_code(), keep_alive, /*drain_after=*/false);
  });
}

void Session::Drain() {
  buffer_.consume(buffer_.size());
  stream_.async_read_some(buffer_.prepare(kIdleReadSize), [self = shared_from_this()](error_code ec, size_t n) {
    if (self->phase_ == Phase::kClosed) return;
    self->drained_ += n;
    if (ec || self->drained_ > kMaxDrainBytes) return self->Close();
    self->buffer_.commit(n);
    self->Drain();
  });
}

void Session::Close() {
  phase_ = Phase::kClosed;
  error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();  // cancels pending operations and the timer
}

StatusOr<uint16_t> ServerCore::Start() {
  std::lock_guard lock(lifecycle_mu_);
  if (started_ || stopped_) return FailedPrecondition("the HTTP server was already started");
  const std::string where = HostPort(options_.host, options_.port);

  error_code ec;
  tcp::resolver resolver(*iocs_.front());
  auto results = resolver.resolve(options_.host, std::to_string(options_.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Unavailable("cannot resolve the listen address " + where + ": " +
                       (ec ? ec.message() : std::string("no addresses")));
  }
  tcp::endpoint endpoint = results.begin()->endpoint();

  auto fail = [&](std::string message) {
    error_code ignored;
    acceptor_.close(ignored);
    return Unavailable(std::move(message));
  };
  if (options_.netns_path.empty()) {
    acceptor_.open(endpoint.protocol(), ec);
  } else {
    int fd = -1;
    Status made = netns::InNetworkNamespace(options_.netns_path, [&]() -> Status {
      fd = ::socket(endpoint.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return Unavailable(std::strerror(errno));
      return OkStatus();
    });
    if (!made.ok()) return fail("cannot listen on " + where + " in " + options_.netns_path + ": " + made.message());
    acceptor_.assign(endpoint.protocol(), fd, ec);
    if (ec) ::close(fd);
  }
  if (ec) return fail("cannot listen on " + where + ": " + ec.message());
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("cannot listen on " + where + ": " + ec.message());
  acceptor_.bind(endpoint, ec);
  if (ec == asio::error::address_in_use) return fail("address " + where + " is in use");
  if (ec) return fail("cannot bind " + where + ": " + ec.message());
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen on " + where + ": " + ec.message());
  uint16_t port = acceptor_.local_endpoint(ec).port();
  if (ec) return fail("cannot listen on " + where + ": " + ec.message());

  started_ = true;
  workers_.emplace(static_cast<size_t>(std::max(1, options_.worker_threads)));
  for (const auto& ioc : iocs_) work_.emplace_back(ioc->get_executor());
  asio::post(acceptor_.get_executor(), [this] { Accept(); });
  for (const auto& ioc : iocs_) io_threads_.emplace_back([&ioc = *ioc] { ioc.run(); });
  return port;
}

void ServerCore::Accept() {
  asio::io_context& next = *iocs_[next_context_++ % iocs_.size()];
  acceptor_.async_accept(next.get_executor(), [this](error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void ServerCore::OnAccept(error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    // Out of descriptors, say: back off instead of spinning.
    accept_retry_.expires_after(std::chrono::milliseconds(50));
    accept_retry_.async_wait([this](error_code timer_ec) {
      if (!timer_ec && acceptor_.is_open()) Accept();
    });
    return;
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::string remote, address;
  tcp::endpoint peer = socket.remote_endpoint(ignored);
  if (!ignored) {
    address = peer.address().to_string();
    remote = HostPort(address, peer.port());
  }
  auto session = std::make_shared<Session>(*this, std::move(socket), std::move(remote));
  // Refused: the session (and its socket) is destroyed here, closing the connection at once.
  if (Register(session, address)) session->Start();
  Accept();
}

void ServerCore::RunStream(const asio::any_io_executor& executor, std::function<void()> body) {
  std::lock_guard lock(streams_mu_);
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->done->load(std::memory_order_acquire)) {
      it->thread.join();
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread t([body = std::move(body), done, work = asio::make_work_guard(executor)]() mutable {
    body();
    body = nullptr;
    work.reset();
    done->store(true, std::memory_order_release);
  });
  streams_.push_back(StreamThread{std::move(t), std::move(done)});
}

bool ServerCore::Register(const std::shared_ptr<Session>& session, const std::string& peer) {
  std::lock_guard lock(sessions_mu_);
  if (stopping_.load(std::memory_order_relaxed)) return false;
  const size_t cap = options_.max_connections_per_peer;
  if (cap > 0) {
    size_t& held = peer_sessions_[peer];
    if (held >= cap) return false;
    ++held;
  }
  sessions_.emplace(session.get(), Live{session, peer});
  return true;
}

void ServerCore::Unregister(Session* session) {
  std::lock_guard lock(sessions_mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;  // never registered (refused)
  if (options_.max_connections_per_peer > 0) {
    auto held = peer_sessions_.find(it->second.peer);
    if (held != peer_sessions_.end() && --held->second == 0) peer_sessions_.erase(held);
  }
  sessions_.erase(it);
}

void ServerCore::Stop() {
  std::lock_guard lock(lifecycle_mu_);
  if (!started_ || stopped_) {
    stopped_ = true;
    return;
  }
  stopped_ = true;

  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard sessions_lock(sessions_mu_);
    stopping_.store(true, std::memory_order_release);
    live.reserve(sessions_.size());
    for (auto& [ptr, entry] : sessions_) {
      if (auto session = entry.session.lock()) live.push_back(std::move(session));
    }
  }
  asio::post(acceptor_.get_executor(), [this] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
  });
  for (auto& session : live) {
    auto ex = session->executor();
    asio::post(ex, [s = std::move(session)] { s->Shutdown(); });
  }
  live.clear();

  // The I/O threads return once every session has closed; sessions with a request in a handler
  // hold work until their response is written.
  work_.clear();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  {
    // Every stream's thread has released its work (the I/O threads returned), so these end now.
    std::lock_guard streams_lock(streams_mu_);
    for (StreamThread& st : streams_) st.thread.join();
    streams_.clear();
  }
  workers_->join();
}

}  // namespace

class Server::Impl : public ServerCore {
 public:
  using ServerCore::ServerCore;
};

Server::Server(ServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

Server::~Server() { Stop(); }

StatusOr<uint16_t> Server::Start() { return impl_->Start(); }

void Server::Stop() { impl_->Stop(); }

}  // namespace paddock::http
