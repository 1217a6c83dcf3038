// The proxy's moving parts:
//   - Worker: one I/O thread with its own io_context, its own listener per entry point
//     (SO_REUSEPORT on one port) and its own idle upstream connections, so nothing on the request
//     path is shared between threads but the table (an atomic shared_ptr) and server states.
//   - Serve: one client connection (a coroutine): its first bytes say plain HTTP or TLS (Sniff:
//     then the handshake, on the current table's certificates); read a request whole, route it,
//     run its chain, forward it and relay the response as it arrives; repeat while keep-alive.
//   - Forward: one request to one server, on a pooled connection or a new one. A pooled connection
//     the server closed while idle fails before any response byte: the request is sent again once,
//     on a new connection (what every proxy does; the request was never seen by the server). The
//     response's head is read as Go's client reads it (ReadResponseHead: bare LF line endings).
//   - HealthChecker: one probe loop (a coroutine on the first worker) per health-checked server.
#include "edge/proxy/proxy.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <random>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/intrusive/list.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <fmt/format.h>

#include "edge/compress.h"
#include "edge/internal/middleware_util.h"
#include "edge/proxy/buffering.h"
#include "edge/proxy/client_stream.h"
#include "edge/proxy/send_ring.h"
#include "edge/proxy/request_path.h"
#include "edge/proxy/response_head.h"
#include "edge/proxy/sticky.h"
#include "edge/proxy/tls.h"

namespace paddock::edge {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::string_view_literals;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr size_t kRelayChunk = 16 << 10;
// buffering's retryExpression: no attempt after the 10th asks again (oxy's DefaultMaxRetryAttempts).
constexpr int kMaxBufferAttempts = 10;
// A response body up to this size that came with its head is copied behind the head: one write of
// one buffer.
constexpr size_t kCopiedBody = 4 << 10;
// Mirroring: the copies one I/O thread may have under way (more are dropped and counted), and how
// long one copy may take from its pick to its answer's end (Paddock's bounds: Traefik has none).
constexpr int kMaxMirrorCopies = 256;
constexpr std::chrono::seconds kMirrorCopyTimeout{30};
// How often a worker looks for deadlines that have passed: the precision of every timeout.
constexpr std::chrono::milliseconds kSweepPeriod{100};

// A socket's deadline, kept by its worker's sweep (every kSweepPeriod) instead of a timer armed
// and cancelled around every operation (as beast::tcp_stream does): moving it is a clock read.
// Once it has passed the sweep cancels the socket's operations and shuts it down, so the one
// under way and any after it fail; fired() tells that timeout from other failures. Registered
// with its worker's list for its whole life (so it does not move).
class Deadline : public boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  using Clock = std::chrono::steady_clock;
  using List = boost::intrusive::list<Deadline, boost::intrusive::constant_time_size<false>>;

  Deadline(List& list, tcp::socket& socket) : socket_(socket) { list.push_back(*this); }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  void After(Clock::duration d) { at_ = Clock::now() + d; }
  // After(d), and none for 0 (Traefik's "no timeout").
  void Within(Clock::duration d) {
    if (d.count() > 0)
      After(d);
    else
      Never();
  }
  void Never() { at_ = Clock::time_point::max(); }
  bool fired() const { return fired_; }
  // A client connection waiting for its next request: what Stop cancels at once.
  void set_idle(bool idle) { idle_ = idle; }
  bool idle() const { return idle_; }
  // One side of a switched connection (a WebSocket): what Stop shuts down at once, both ways.
  void set_tunnel() { tunnel_ = true; }
  bool tunnel() const { return tunnel_; }
  tcp::socket& socket() { return socket_; }

  // Fires every deadline of `list` that `now` has passed.
  static void Sweep(List& list, Clock::time_point now) {
    for (Deadline& d : list) {
      if (d.fired_ || d.at_ > now) continue;
      d.fired_ = true;
      error_code ignored;
      d.socket_.cancel(ignored);
      d.socket_.shutdown(tcp::socket::shutdown_both, ignored);
    }
  }

 private:
  tcp::socket& socket_;
  Clock::time_point at_ = Clock::time_point::max();
  bool fired_ = false;
  bool idle_ = false;
  bool tunnel_ = false;
};

// A write in two steps: Send puts what the socket takes at once (all of it, usually: no trip
// through the reactor, no coroutine), and only when some is left does the caller co_await
// Rest() for it.
//
//   SendStep send(client, pieces);
//   error_code ec = send.error();
//   if (send.left()) ec = co_await send.Rest();  // (not in a ?: — GCC 12 then awaits it always)
template <typename Stream, typename Buffers>
class SendStep {
 public:
  SendStep(Stream& stream, const Buffers& buffers) : stream_(stream), buffers_(buffers) {
    if constexpr (std::is_same_v<Stream, ClientStream>)
      sent_ = stream.SendNow(buffers, ec_);
    else if constexpr (std::is_same_v<Stream, tcp::socket>)
      sent_ = SendNow(stream, buffers, ec_);
    // (a TLS stream: everything through Rest)
  }
  bool left() const { return !ec_ && sent_ < asio::buffer_size(buffers_); }
  error_code error() const { return ec_; }
  asio::awaitable<error_code> Rest() {
    beast::buffers_suffix<Buffers> rest(buffers_);
    rest.consume(sent_);
    auto [ec, n] = co_await asio::async_write(stream_, rest, kTuple);
    co_return ec;
  }

 private:
  Stream& stream_;
  const Buffers& buffers_;
  error_code ec_;
  size_t sent_ = 0;
};

// Writes all of `buffers` to `stream`. On a plain TCP socket of a thread with a send ring, the
// send goes with the rest of its batch of handlers' sends, in one system call (send_ring.h);
// elsewhere (TLS, a thread without a ring) as SendStep sends. What the socket did not take at once
// goes through an asynchronous write.
template <typename Stream, typename Buffers>
asio::awaitable<error_code> Send(Stream& stream, const Buffers& buffers) {
  tcp::socket* plain = nullptr;
  if constexpr (std::is_same_v<Stream, ClientStream>) {
    if (!stream.is_tls()) plain = &stream.tcp();
  } else if constexpr (std::is_same_v<Stream, tcp::socket>) {
    plain = &stream;
  }
  if (SendRing* ring = SendRing::Current(); ring != nullptr && !ring->broken() && plain != nullptr) {
    auto [ec, sent] = co_await ring->Send(*plain, buffers, kTuple);
    if (ec || sent == asio::buffer_size(buffers)) co_return ec;
    beast::buffers_suffix<Buffers> rest(buffers);
    rest.consume(sent);
    auto [rest_ec, n] = co_await asio::async_write(stream, rest, kTuple);
    co_return rest_ec;
  }
  SendStep send(stream, buffers);
  error_code ec = send.error();
  if (send.left()) ec = co_await send.Rest();
  co_return ec;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Hop-by-hop headers (RFC 9110 §7.6.1, and the ones Go's ReverseProxy also drops); never forwarded.
bool HopByHop(std::string_view name) {
  static constexpr std::string_view kNames[] = {"connection", "keep-alive", "proxy-connection",
                                                "proxy-authenticate", "proxy-authorization", "te",
                                                "trailer", "transfer-encoding", "upgrade"};
  if (name.size() < 2 || name.size() > 19) return false;  // the shortest and longest of them
  switch (name[0] | 0x20) {  // what they begin with
    case 'c': case 'k': case 'p': case 't': case 'u': break;
    default: return false;
  }
  for (std::string_view n : kNames)
    if (n.size() == name.size() && IEquals(name, n)) return true;
  return false;
}


void AppendDecimal(std::string& out, uint64_t v) {
  char buf[20];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

std::string_view Reason(int status) {
  std::string_view r = bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(status)));
  if (r.empty() || r.front() == '<') return "Unknown";
  return r;
}

bool SafeHeader(std::string_view name, std::string_view value) {
  // One pass each (find_first_of is a memchr per character: a tenth of a request's time). A name
  // has no control character, space or colon (a token has none of them either).
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (c <= ' ' || c == ':' || c == 0x7f) return false;
  for (char c : value)
    if (c == '\r' || c == '\n') return false;
  return true;
}

std::string SimpleResponse(int status, std::string_view content_type, std::string_view body, bool keep_alive,
                           const HeaderList& extra = {}, bool nosniff = true) {
  std::string out;
  out.reserve(160 + body.size());
  out += "HTTP/1.1 "sv;
  AppendDecimal(out, static_cast<uint64_t>(status));
  out += ' ';
  out += Reason(status);
  out += "\r\n"sv;
  bool typed = false;
  for (const auto& [n, v] : extra) {
    if (!SafeHeader(n, v) || IEquals(n, "content-length") || IEquals(n, "connection") ||
        IEquals(n, "transfer-encoding"))
      continue;
    if (IEquals(n, "content-type")) typed = true;
    out += n;
    out += ": "sv;
    out += v;
    out += "\r\n"sv;
  }
  if (!typed && !content_type.empty()) {
    out += "Content-Type: "sv;
    out += content_type;
    out += "\r\n"sv;
  }
  if (nosniff) out += "X-Content-Type-Options: nosniff\r\n"sv;
  out += "Content-Length: "sv;
  AppendDecimal(out, body.size());
  out += "\r\n"sv;
  if (!keep_alive) out += "Connection: close\r\n"sv;
  out += "\r\n"sv;
  out += body;
  return out;
}

// What the auth server answered (forwardAuth); `reached` false: it could not be called.
struct AuthReply {
  bool reached = false;
  bool too_large = false;  // its body was over maxResponseBodySize
  int status = 0;
  HeaderList headers;
  std::string body;
};

// Auth cookies to put on the final response, per forwardAuth step that set some.
using CookiePlan = std::vector<std::pair<const ForwardAuth*, std::vector<std::string>>>;

// A series of Worker::tls_requests: the entry point's TLS series of a connection.
using TlsSeries = std::pair<const TlsKey, uint64_t>;

// What became of one request, for the metrics: the status the client got (0: none was sent), the
// service it was sent to (null: it did not reach one), the router that matched (null: none) in the
// table that routed it (held here, so the router outlives a swap) and that table's generation.
class BodyReservation;

struct Outcome {
  int status = 0;
  std::shared_ptr<const Backend> backend;
  std::shared_ptr<const Table> table;
  const Route* route = nullptr;  // in `table`
  // The loadBalancer that took the request (in `table`): the service its series are counted under,
  // as Traefik counts them (its service metrics wrap loadBalancers only, so a weighted service's
  // request is its child's). Null with no server picked.
  const Backend* answered = nullptr;
  uint64_t table_generation = 0;
  TlsSeries* tls_requests = nullptr;  // over TLS: its series of Worker::tls_requests (GUARDED_BY stats_mu)
  // Traefik's capture sizes: the request's body bytes read (by a server it was sent to, forwardAuth's
  // forwardBody, buffering) and the response's body bytes written to the client.
  uint64_t request_bytes = 0;
  uint64_t response_bytes = 0;
  int retries = 0;  // the retry middleware's extra attempts (traefik_service_retries_total)
  // The protocol label (MetricProtocol of the client's request); for grpc and grpc-web the code
  // label is the response's Grpc-Status (GrpcStatusCode; 2 when the edge answered itself).
  std::string_view protocol = "http";
  int grpc_status = 2;
  // The mirroring services the request passed through (in `table`), and whether its client went
  // away before its answer was written (then, as Traefik, no copies go to the mirrors).
  std::vector<const Backend*> mirroring;
  bool client_gone = false;
  // The client connection's read buffer and deadline (Serve's): a switch of protocols (a WebSocket)
  // relays what the client sent after its request, and lifts the deadline.
  beast::flat_buffer* client_buffer = nullptr;
  Deadline* client_deadline = nullptr;
  BodyReservation* request_reservation = nullptr;  // the request body's share of the budget (Serve's)
  std::string_view upgrade_header;  // the client's Upgrade, as received (a request without one skips UpgradeType)
  CompressPlan compress;  // the encoding the chain's compress step chose (PlanCompression); identity: none
  std::vector<const Step*> error_steps;  // the errors steps the request passed, in the chain's order
  bool head_request = false;             // HEAD: answers carry no body
  // errors: the step whose page replaced the answer, and the status it caught (what the steps
  // after it saw: their OnDone is told that one).
  const Step* caught_by = nullptr;
  int caught_status = 0;
};

// Record's shortcut key: (code, protocol, method, entry point) in one word.
uint64_t SeriesShortcut(int code, std::string_view protocol, std::string_view metric_method, size_t entry_point) {
  static constexpr std::array<std::string_view, 10> kLabels = {
      "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "EXTENSION_METHOD"};
  static constexpr std::array<std::string_view, 5> kProtocols = {"http", "websocket", "sse", "grpc-web", "grpc"};
  const size_t method = static_cast<size_t>(std::find(kLabels.begin(), kLabels.end(), metric_method) - kLabels.begin());
  const size_t proto =
      static_cast<size_t>(std::find(kProtocols.begin(), kProtocols.end(), protocol) - kProtocols.begin());
  return (static_cast<uint64_t>(static_cast<uint32_t>(code)) << 32) | (proto << 28) | (method << 24) |
         (entry_point & 0xffffff);
}

// The head of the request `x` as a server of `leaf` (`server`) gets it, into `head`: hop-by-hop
// headers dropped, X-Forwarded-* as the edge set them (Traefik without trusted IPs: a client's own
// are not believed), Host the client's with passHostHeader, Content-Length for a body of
// `body_size`. `parsed`: every header is the parser's (a token for a name, no CR or LF in a value)
// or the edge's own — no middleware ran — so none is checked. `upgrade`: the protocol the client asks
// to switch to (UpgradeType), sent on as Go's ReverseProxy does ("Connection: Upgrade").
void UpstreamHead(std::string& head, const Exchange& x, const Backend& leaf, const ServerState& server,
                  size_t body_size, bool parsed, std::string_view upgrade = {}) {
  head.clear();
  head.reserve(512 + x.path.size() + x.raw_query.size());
  head += x.method;
  head += ' ';
  head += x.path.empty() ? std::string_view("/") : std::string_view(x.path);  // Go's RequestURI
  if (!x.raw_query.empty()) {
    head += '?';
    head += x.raw_query;
  }
  head += " HTTP/1.1\r\nHost: "sv;
  if (leaf.pass_host_header && !x.host.empty()) {
    head += x.host;
  } else {
    head += server.host();
    head += ':';
    AppendDecimal(head, server.port());
  }
  head += "\r\n"sv;
  std::string_view connection;
  for (const auto& [n, v] : x.headers)
    if (IEquals(n, "connection")) connection = v;
  for (const auto& [n, v] : x.headers) {
    if (HopByHop(n) || IEquals(n, "content-length") || (!connection.empty() && mw::TokenListHas(connection, n))) continue;
    if (IEquals(n, "x-forwarded-for") || (!parsed && !SafeHeader(n, v))) continue;
    head += n;
    head += ": "sv;
    head += v;
    head += "\r\n"sv;
  }
  if (!x.omit_x_forwarded_for) {
    head += "X-Forwarded-For: "sv;
    head += x.client_ip;
    head += "\r\n"sv;
  }
  if (body_size > 0 || x.method == "POST" || x.method == "PUT" || x.method == "PATCH") {
    head += "Content-Length: "sv;
    AppendDecimal(head, body_size);
    head += "\r\n"sv;
  }
  if (!upgrade.empty()) {
    head += "Connection: Upgrade\r\nUpgrade: "sv;
    head += upgrade;
    head += "\r\n"sv;
  }
  head += "\r\n"sv;
}

// Go's ascii.IsPrint: every byte from ' ' to '~'.
bool PrintableAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= ' ' && c <= '~'; });
}

// Go's upgradeType: the Upgrade header's first value when Connection lists "upgrade", else "".
std::string_view UpgradeType(const HeaderList& headers) {
  bool asked = false;
  for (const auto& [n, v] : headers)
    if (IEquals(n, "connection") && mw::TokenListHas(v, "upgrade")) asked = true;
  return asked ? mw::GetHeader(headers, "upgrade") : std::string_view();
}

// Feeds `data` to `z` in slices of 64 KiB, letting the thread's other connections run between them
// (a body in hand may be 16 MiB: brotli takes a while over it).
asio::awaitable<void> EncodeSliced(asio::io_context& ioc, Compressor& z, std::string_view data, std::string& out) {
  constexpr size_t kSlice = 64 << 10;
  for (size_t at = 0; at < data.size(); at += kSlice) {
    z.Write(data.substr(at, kSlice), out);
    if (at + kSlice < data.size()) co_await asio::post(ioc, asio::use_awaitable);
  }
}

// Copies what `from` sends to `to` until a read or a write fails or the stream ends.
template <typename From, typename To>
asio::awaitable<void> Relay(From& from, To& to) {
  std::array<char, 16384> piece;  // in the coroutine's frame
  for (;;) {
    auto [rec, n] = co_await from.async_read_some(asio::buffer(piece), kTuple);
    if (n > 0) {
      auto [wec, written] = co_await asio::async_write(to, asio::buffer(piece.data(), n), kTuple);
      if (wec) co_return;
    }
    if (rec) co_return;
  }
}

// Relay(from, to), then `close` (which ends the other direction's reads) and the signal that
// this direction is over.
template <typename From, typename To>
asio::awaitable<void> RelayThenSignal(From& from, To& to, const std::function<void()>& close, bool& over,
                                      asio::steady_timer& signal) {
  co_await Relay(from, to);
  close();
  over = true;
  signal.cancel();
}

// Both directions of a switched connection at once, as Go's ReverseProxy copies them: when
// either ends, both connections are closed (`close`), and this returns once both copies are over.
template <typename A, typename B>
asio::awaitable<void> RelayBoth(asio::io_context& ioc, A& a, B& b, std::function<void()> close) {
  asio::steady_timer signal(ioc, asio::steady_timer::time_point::max());
  bool other_over = false;
  asio::co_spawn(ioc, RelayThenSignal(b, a, close, other_over, signal), asio::detached);
  co_await Relay(a, b);
  close();
  if (!other_over) co_await signal.async_wait(kTuple);
}

// SimpleResponse, noting its status and body size in `out`.
// An answer to HEAD keeps its head (its Content-Length too) and sends no body, as Go's server.
template <typename... Args>
std::string Answered(Outcome& out, int status, std::string_view content_type, std::string_view body, Args&&... args) {
  out.status = status;
  std::string response = SimpleResponse(status, content_type, body, std::forward<Args>(args)...);
  if (out.head_request) {
    response.resize(response.size() - body.size());
    body = {};
  }
  out.response_bytes = body.size();
  return response;
}

// A share of the request-body budget (ProxyOptions::max_buffered_request_bytes), given back when
// it goes out of scope.
class BodyReservation {
 public:
  explicit BodyReservation(std::atomic<uint64_t>& in_use) : in_use_(in_use) {}
  ~BodyReservation() {
    if (bytes_ != 0) in_use_.fetch_sub(bytes_, std::memory_order_relaxed);  // (most hold none: no shared write)
  }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  // Takes `bytes` unless that would put the total over `budget`.
  bool Take(uint64_t bytes, uint64_t budget) {
    uint64_t now = in_use_.load(std::memory_order_relaxed);
    do {
      if (now + bytes > budget) return false;
    } while (!in_use_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    bytes_ += bytes;
    return true;
  }
  // Gives back all but `bytes` of what it holds.
  void Keep(uint64_t bytes) {
    if (bytes >= bytes_) return;
    in_use_.fetch_sub(bytes_ - bytes, std::memory_order_relaxed);
    bytes_ = bytes;
  }

 private:
  std::atomic<uint64_t>& in_use_;
  uint64_t bytes_ = 0;
};

// An upstream answer kept whole (an error page), its body taken from the body budget (`held`).
struct CollectedReply {
  explicit CollectedReply(BodyReservation* reservation) : held(reservation) {}
  BodyReservation* held;
  std::string reason;
  HeaderList headers;
  std::string body;
  bool too_large = false;
};

// A connection to a forwardAuth server, kept alive between calls.
struct AuthConnection {
  explicit AuthConnection(asio::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool fresh = false;  // connected for this call (not taken from the pool)
  std::chrono::steady_clock::time_point parked;
};
// Idle connections kept per forwardAuth server and I/O thread, and for how long (Go's
// http.Transport default, which Traefik's forwardAuth client keeps).
constexpr size_t kMaxIdleAuthConnections = 64;
constexpr std::chrono::seconds kAuthIdleTimeout{90};

// Go's http.Transport TLSHandshakeTimeout, as Traefik sets it.
constexpr std::chrono::seconds kTlsHandshakeTimeout{10};

using UpstreamTlsStream = asio::ssl::stream<tcp::socket&>;

struct Upstream {
  std::shared_ptr<ServerState> server;
  // The servers transport it was made through (null: the static one): a pooled connection is only
  // taken by requests through the same one (a reload that changes it makes new connections, as
  // Traefik's new round tripper does).
  std::shared_ptr<const UpstreamTransport> transport;
  // Its socket and the socket's deadline, together on the heap (a Deadline does not move); over
  // TLS (an https server) `tls` on the socket, whose operations the deadline cancels as well.
  struct Socket {
    Socket(asio::io_context& ioc, Deadline::List& deadlines) : socket(ioc), deadline(deadlines, socket) {}
    tcp::socket socket;
    Deadline deadline;
    std::optional<UpstreamTlsStream> tls;
  };
  std::unique_ptr<Socket> stream;
  beast::flat_buffer buffer;
  bool reused = false;  // taken from the pool (the server may have closed it while it was idle)
};

// Reads the head of a server's response into `parser` as Go's client reads it — its lines may end
// in a bare LF (edge/proxy/response_head.h) — leaving what came after it in `buffer` for the body's
// reads. A head that does not end within `limit` bytes is header_limit; a connection closed before
// the head's end is end_of_stream when nothing came and partial_message otherwise (as Beast's
// async_read_header says them); a head Beast refuses is Beast's error.
template <typename Stream, typename Parser>
asio::awaitable<error_code> ReadResponseHead(Stream& stream, beast::flat_buffer& buffer, Parser& parser,
                                             size_t limit) {
  auto received = [&buffer] {
    return std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size());
  };
  ResponseHeadScanner scan;
  while (!scan.Scan(received())) {
    if (buffer.size() >= limit) co_return bhttp::error::header_limit;
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(beast::read_size(buffer, 65536)), kTuple);
    buffer.commit(n);
    if (ec == asio::error::eof)
      co_return buffer.size() == 0 ? bhttp::error::end_of_stream : bhttp::error::partial_message;
    if (ec) co_return ec;
  }
  if (scan.end() > limit) co_return bhttp::error::header_limit;
  if (scan.bare_lfs() > 0) {  // rare: the head again, CRLF, then the bytes after it as they came
    std::string rewritten = CrlfLineEndings(received().substr(0, scan.end()));
    rewritten.append(received().substr(scan.end()));
    buffer.clear();
    buffer.commit(asio::buffer_copy(buffer.prepare(rewritten.size()), asio::buffer(rewritten)));
    // The limit is the head's as it came; the CRs written in are not counted against it.
    const size_t rewritten_limit = std::min<size_t>(limit + scan.bare_lfs(), std::numeric_limits<uint32_t>::max());
    parser.header_limit(static_cast<uint32_t>(rewritten_limit));
  }
  error_code ec;
  buffer.consume(parser.put(buffer.data(), ec));
  // The whole head was in `buffer`: a parser that asks for more read a different head end.
  if (ec == bhttp::error::need_more || (!ec && !parser.is_header_done())) ec = bhttp::error::partial_message;
  co_return ec;
}

// One read of a piece of a response's body into `parser` from the server's connection: over its
// TLS when it has one. Not a coroutine: the awaitable of either, started when the caller awaits it
// (the same as awaiting the read itself).
template <typename Parser>
asio::awaitable<std::tuple<error_code, size_t>> ReadSomeFrom(tcp::socket& plain, UpstreamTlsStream* tls,
                                                             beast::flat_buffer& buffer, Parser& parser) {
  if (tls) return bhttp::async_read_some(*tls, buffer, parser, kTuple);
  return bhttp::async_read_some(plain, buffer, parser, kTuple);
}

// Whether a connection taken from a pool failed as one its peer closed while it was idle does:
// nothing was read, so the request never reached the peer and may go again on a new connection.
bool ClosedWhileIdle(const error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
}

// Whether `status` is in one of Traefik's HTTP code ranges (retry's and failover.errors' `status`).
bool InRanges(const std::vector<std::pair<int, int>>& ranges, int status) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [status](const auto& range) { return status >= range.first && status <= range.second; });
}

// The innermost errors step of `steps` whose statuses have `status`, or null.
const Step* ErrorStepFor(const std::vector<const Step*>& steps, int status) {
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (InRanges((*it)->errors->status, status)) return *it;
  return nullptr;
}

// The names of the routers of `table`, on any entry point.
std::set<std::string_view> RouterNames(const Table& table) {
  std::set<std::string_view> names;
  for (const auto* routes : {&table.routes, &table.tls_routes})
    for (const auto& [entry_point, list] : *routes)
      for (const Route& r : list) names.insert(r.name);
  return names;
}

}  // namespace

class Proxy::Impl {
 public:
  explicit Impl(ProxyOptions options) : options_(std::move(options)) {}
  ~Impl() { Stop(std::chrono::seconds(0)); }

  StatusOr<std::map<std::string, uint16_t>> Start();
  void Stop(std::chrono::milliseconds grace);

  void SetTable(std::shared_ptr<const Table> table) {
    // A health-checked server is not routable until its first probe passes: marked before the
    // table can route anything to it (the probe loop starts on the first worker, later).
    for (const auto& [name, backend] : table->backends) {
      if (!backend->health_check) continue;
      for (const Backend::Server& s : backend->servers)
        if (s.state->health() == Health::kUnchecked) s.state->set_health(Health::kPending);
    }
    {
      std::lock_guard lock(table_mu_);
      table_ = std::move(table);
      table_generation_.fetch_add(1, std::memory_order_release);
    }
    if (!workers_.empty()) asio::post(workers_.front()->ioc, [this] { ReconcileHealthChecks(); });
  }
  std::shared_ptr<const Table> table() const {
    std::lock_guard lock(table_mu_);
    return table_;
  }

  MetricsSnapshot Metrics() const;

  ProxyCounters counters() const {
    ProxyCounters c;
    c.requests = requests_.load();
    c.upstream_connects = connects_.load();
    c.upstream_reuses = reuses_.load();
    c.retried_stale = retried_.load();
    c.bad_gateway = bad_gateway_.load();
    c.gateway_timeout = gateway_timeout_.load();
    c.unavailable = unavailable_.load();
    c.open_connections = open_.load();
    c.refused_connections = refused_connections_.load();
    c.buffered_request_bytes = buffered_bytes_.load();
    c.upstream_tls_failures = tls_failures_.load();
    c.mirrored = mirrored_.load();
    c.mirror_failed = mirror_failed_.load();
    c.mirror_dropped = mirror_dropped_.load();
    return c;
  }
  std::string LastUpstreamError() const {
    std::lock_guard lock(upstream_error_mu_);
    return last_upstream_error_;
  }

 private:
  struct Listener {
    size_t index = 0;  // of its entry point in options_.entry_points
    uint16_t port = 0;
    std::unique_ptr<tcp::acceptor> acceptor;
  };
  struct Worker {
    // One thread runs it, and only that thread touches its sockets (Start opens the listeners
    // before the thread starts; other threads only post to it): no lock around each socket
    // operation (the scheduler's lock stays, for those posts).
    asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    std::vector<Listener> listeners;
    // Idle upstream connections by server, most recently used last.
    std::unordered_map<const ServerState*, std::vector<Upstream>> idle;
    std::unordered_map<std::string, std::vector<std::unique_ptr<AuthConnection>>> auth_idle;  // by host:port
    std::chrono::steady_clock::time_point auth_swept;  // when auth_idle was last rid of expired connections
    Deadline::List deadlines;  // of this thread's client and upstream sockets
    uint64_t table_generation = 0;  // of `table`, this thread's copy of the current table
    std::shared_ptr<const Table> table;
    std::thread thread;
    // This thread's request metrics; the lock is only ever contended by Metrics().
    std::mutex stats_mu;
    std::map<RequestKey, RequestSeries> entry_point_stats;  // GUARDED_BY(stats_mu)
    std::map<RequestKey, RequestSeries> service_stats;      // GUARDED_BY(stats_mu)
    // Record's shortcuts into the two maps above (their nodes never move), so that a request
    // builds no label strings: by SeriesShortcut, and by SeriesShortcut and backend — the latter
    // only for the backends of the table of `table_generation` (cleared on a swap: a later table's
    // backend may have an earlier one's address).
    std::unordered_map<uint64_t, RequestSeries*> entry_point_series;                  // GUARDED_BY(stats_mu)
    std::map<std::pair<uint64_t, const Backend*>, RequestSeries*> service_series;   // GUARDED_BY(stats_mu)
    std::map<std::string, int64_t> open_by_entry_point;     // GUARDED_BY(stats_mu)
    std::map<TlsKey, uint64_t> tls_requests;                // GUARDED_BY(stats_mu): by entry point
    std::map<TlsKey, uint64_t> service_tls_stats;           // GUARDED_BY(stats_mu)
    std::map<std::string, uint64_t, std::less<>> service_retries;  // GUARDED_BY(stats_mu)
    // Router series (ProxyOptions::router_metrics), and Record's shortcuts into them as above: by
    // SeriesShortcut and route, by a connection's TLS series and route (or backend) — for the
    // table of `table_generation` only.
    std::map<RequestKey, RequestSeries> router_stats;     // GUARDED_BY(stats_mu)
    std::map<TlsKey, uint64_t> router_tls_stats;          // GUARDED_BY(stats_mu)
    std::map<std::pair<uint64_t, const Route*>, RequestSeries*> router_series;    // GUARDED_BY(stats_mu)
    std::map<std::pair<const TlsSeries*, const Route*>, uint64_t*> router_tls_series;      // GUARDED_BY(stats_mu)
    std::map<std::pair<const TlsSeries*, const Backend*>, uint64_t*> service_tls_series;   // GUARDED_BY(stats_mu)
    int mirror_copies = 0;  // under way (MirrorCopies), this thread's
    // This thread's sends, a batch at a time (send_ring.h); made by the thread. The coroutines
    // still waiting on it when it goes end with the io_context, as its other suspended ones do.
    std::unique_ptr<SendRing> send_ring;
  };
  // A copy of a request for one mirror, with or without the request's body (mirrorBody).
  struct MirrorTarget {
    std::shared_ptr<const Backend> backend;
    bool with_body = true;
  };
  struct Probe {
    std::shared_ptr<ServerState> server;
    HealthCheckConfig config;
    std::shared_ptr<const UpstreamTransport> transport;  // its service's serversTransport (null: the static one)
    std::shared_ptr<bool> cancelled = std::make_shared<bool>(false);
    std::shared_ptr<asio::steady_timer> timer;
    ProbeSchedule schedule{Health::kPending};  // replaced by ReconcileHealthChecks, from the server's health
  };

  asio::awaitable<void> Accept(Worker& w, Listener& l);
  asio::awaitable<void> Serve(Worker& w, tcp::socket socket, size_t entry_point_index, uint16_t port);
  // Answers one request read from `client`; false when the connection must close afterwards.
  // Reads the connection's first bytes into `buffer` and, when they open a TLS handshake, serves
  // the connection over TLS with the current table's certificates. False: it closed or failed.
  asio::awaitable<bool> Sniff(Worker& w, const std::string& entry_point, ClientStream& client, Deadline& deadline,
                              beast::flat_buffer& buffer,
                              std::chrono::milliseconds idle_timeout, std::chrono::milliseconds read_timeout);
  asio::awaitable<void> SweepDeadlines(Worker& w);
  asio::awaitable<bool> Handle(Worker& w, ClientStream& client, bhttp::request<bhttp::string_body>& req,
                               const std::string& entry_point, uint16_t port, const std::string& client_ip,
                               bool keep_alive, Outcome& outcome);
  asio::awaitable<bool> Forward(Worker& w, ClientStream& client, const Route& route, Exchange& x,
                                const std::string& body, bool head_request, unsigned client_version,
                                bool keep_alive, const RetryConfig* retry, const CookiePlan& cookies, Outcome& outcome);
  // A server's 101 to a request that asked to switch to `requested` (Go's handleUpgradeResponse):
  // the same protocol named, the head goes to the client as the server sent it, then bytes are
  // relayed both ways until either side ends; any other 101 is 502. The connection ends with it.
  asio::awaitable<bool> SwitchProtocols(Worker& w, ClientStream& client, Upstream& up,
                                        const bhttp::response_header<>& res, std::string_view requested,
                                        const std::vector<std::string>& set_cookies, Outcome& outcome);
  asio::awaitable<AuthReply> CallAuth(Worker& w, const ForwardAuth& auth, const Exchange& x,
                                      const std::string* body);
  // Mirroring (Traefik's): after a request was answered, the mirrors whose turn it is at each
  // mirroring level it passed (`outcome.mirroring`) get a copy, one after the other, in a coroutine
  // of its own whose answers are dropped. Bounded: kMaxMirrorCopies per thread, the copied body
  // taken from the request-body budget, kMirrorCopyTimeout a copy; a copy past a bound is dropped.
  void SendMirrors(Worker& w, const Exchange& x, const std::string& body, const Outcome& outcome, bool parsed);
  asio::awaitable<void> MirrorCopies(Worker& w, Exchange x, std::string body, std::vector<MirrorTarget> targets,
                                     std::unique_ptr<BodyReservation> reservation, bool parsed);
  // One copy to the server `pick` chose; its status (0: no answer).
  // With `collect`, the answer's headers and body are kept there (a body past
  // max_buffered_response_bytes sets too_large and ends the read).
  asio::awaitable<int> SendCopy(Worker& w, const Selection& pick, const std::string& head, std::string_view body,
                                bool head_request, CollectedReply* collect = nullptr);
  // errors (Traefik's customErrors): the page `step`'s service answers for the request, with the
  // status `original` was rewritten to; false when the client's connection is to close.
  asio::awaitable<bool> ServeErrorPage(Worker& w, ClientStream& client, const Exchange& x, const Step& step,
                                       int original, bool keep_alive, Outcome& outcome);
  // The edge's own answer `status` (plain text `body`), or the error page for it when an errors
  // step the request passed catches it.
  asio::awaitable<bool> OwnAnswer(Worker& w, ClientStream& client, const Exchange& x, Outcome& outcome, int status,
                                  std::string_view body, bool keep_alive);
  // A pooled connection to `server`, most recent first (no coroutine: the common case); one the
  // server has closed is found out by the write or the read and retried by the caller.
  std::optional<Upstream> TakeIdle(Worker& w, const std::shared_ptr<ServerState>& server,
                                   const UpstreamTransport* transport);
  // A new connection to `server` through `transport` (null: the static one) — over TLS to an https
  // server, its certificate verified; none when it cannot be made, `*timed_out` then saying
  // whether the dial timeout (or the TLS handshake's) passed.
  asio::awaitable<std::optional<Upstream>> Connect(Worker& w, const std::shared_ptr<ServerState>& server,
                                                   const std::shared_ptr<const UpstreamTransport>& transport,
                                                   bool* timed_out);
  void Park(Worker& w, Upstream up, const UpstreamTransport* transport);
  // The TLS of `transport`, or the static serversTransport's (made on first use).
  const UpstreamTls& TlsOf(const UpstreamTransport* transport);
  // Counts and reports an https server's failed handshake (Traefik logs it).
  void UpstreamTlsFailed(std::string error);
  asio::awaitable<bool> WriteAll(ClientStream& s, std::string_view data) {
    const asio::const_buffer buffer(data.data(), data.size());
    error_code ec = co_await Send(s, buffer);
    co_return !ec;
  }

  // Counts one answered request (none when no status was sent) on its entry point and service.
  void Record(Worker& w, size_t entry_point_index, std::string_view method, const Outcome& out,
              std::chrono::steady_clock::duration took);
  // The worker takes the current table if it changed, and drops the series of services it no
  // longer has (Traefik drops a removed service's series; and so they stay bounded).
  void RefreshTable(Worker& w);

  // entryPoints.<name>.http.sanitizePath (default true).
  bool SanitizesPath(std::string_view entry_point) const {
    for (const EntryPointOptions& ep : options_.entry_points)
      if (ep.name == entry_point) return ep.sanitize_path;
    return true;
  }

  void ReconcileHealthChecks();  // on worker 0
  asio::awaitable<void> ProbeLoop(std::shared_ptr<Probe> probe);
  asio::awaitable<bool> ProbeOnce(const Probe& probe);
  // The probe's request on a connected `stream` (plain or TLS): whether its status passes.
  template <typename Stream>
  asio::awaitable<bool> ProbeExchange(Stream& stream, const std::string& request, const HealthCheckConfig& c);

  const ProxyOptions options_;
  // The current table. Each worker keeps a copy and takes the lock only when the generation moved
  // (a swap), so requests share no lock. (Not std::atomic<std::shared_ptr>: libstdc++ 12's is a
  // spin lock TSan cannot see.)
  mutable std::mutex table_mu_;
  std::shared_ptr<const Table> table_ = std::make_shared<const Table>();  // GUARDED_BY(table_mu_)
  std::atomic<uint64_t> table_generation_{1};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex lifecycle_mu_;
  bool started_ = false, stopped_ = false;
  std::map<const ServerState*, std::shared_ptr<Probe>> probes_;  // worker 0 only
  // The certificates of a table that has none (the generated default only), made on first use.
  std::once_flag generated_once_;
  std::shared_ptr<const TlsCertificates> generated_;
  // The static serversTransport's TLS (options_.upstream_tls), made on first use.
  std::once_flag static_tls_once_;
  std::shared_ptr<const UpstreamTls> static_tls_;
  std::atomic<uint64_t> tls_failures_{0};
  mutable std::mutex upstream_error_mu_;
  std::string last_upstream_error_;  // GUARDED_BY(upstream_error_mu_)

  std::atomic<uint64_t> requests_{0}, connects_{0}, reuses_{0}, retried_{0}, bad_gateway_{0}, gateway_timeout_{0},
      unavailable_{0},
      open_{0}, refused_connections_{0};
  std::atomic<uint64_t> buffered_bytes_{0};  // request bodies reserved (BodyReservation)
  std::atomic<uint64_t> mirrored_{0}, mirror_failed_{0}, mirror_dropped_{0};
  std::mutex open_mu_;
  std::condition_variable open_cv_;
};

StatusOr<std::map<std::string, uint16_t>> Proxy::Impl::Start() {
  std::lock_guard lock(lifecycle_mu_);
  if (started_) return FailedPrecondition("the proxy is already started");
  const int threads = std::max(1, options_.io_threads);
  for (int i = 0; i < threads; ++i) workers_.push_back(std::make_unique<Worker>());
  std::map<std::string, uint16_t> ports;
  for (size_t index = 0; index < options_.entry_points.size(); ++index) {
    const EntryPointOptions& ep = options_.entry_points[index];
    error_code ec;
    auto address = asio::ip::make_address(ep.host, ec);
    if (ec) return InvalidArgument(fmt::format("entry point {}: '{}' is not an IP address", ep.name, ep.host));
    uint16_t port = ep.port;
    for (auto& w : workers_) {
      auto acceptor = std::make_unique<tcp::acceptor>(w->ioc);
      tcp::endpoint endpoint(address, port);
      acceptor->open(endpoint.protocol(), ec);
      if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
      if (!ec) {
        int one = 1;
        if (::setsockopt(acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
          ec = error_code(errno, boost::system::system_category());
      }
      if (!ec) acceptor->bind(endpoint, ec);
      if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec)
        return Unavailable(fmt::format("entry point {}: cannot listen on {}:{}: {}", ep.name, ep.host, port,
                                       ec.message()));
      port = acceptor->local_endpoint().port();
      w->listeners.push_back(Listener{index, port, std::move(acceptor)});
    }
    ports[ep.name] = port;
  }
  for (auto& w : workers_) {
    for (Listener& l : w->listeners) asio::co_spawn(w->ioc, Accept(*w, l), asio::detached);
    asio::co_spawn(w->ioc, SweepDeadlines(*w), asio::detached);
    w->thread = std::thread([worker = w.get()] {
      // Made by the thread that alone submits to it (null where io_uring is refused).
      worker->send_ring = SendRing::Make(worker->ioc);
      SendRing::SetCurrent(worker->send_ring.get());
      auto guard = asio::make_work_guard(worker->ioc);
      worker->ioc.run();
      SendRing::SetCurrent(nullptr);
    });
  }
  started_ = true;
  asio::post(workers_.front()->ioc, [this] { ReconcileHealthChecks(); });
  return ports;
}

void Proxy::Impl::Stop(std::chrono::milliseconds grace) {
  std::lock_guard lock(lifecycle_mu_);
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  for (auto& w : workers_) {
    asio::post(w->ioc, [worker = w.get()] {
      for (Listener& l : worker->listeners) {
        error_code ignored;
        l.acceptor->close(ignored);
      }
      for (Deadline& d : worker->deadlines) {
        error_code ignored;
        if (d.idle()) d.socket().cancel(ignored);
        if (d.tunnel()) d.socket().shutdown(tcp::socket::shutdown_both, ignored);
      }
    });
  }
  {
    std::unique_lock open_lock(open_mu_);
    open_cv_.wait_for(open_lock, grace, [this] { return open_.load() == 0; });
  }
  for (auto& w : workers_) w->ioc.stop();
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  // Coroutines left suspended are destroyed with their io_context (the workers) here.
  probes_.clear();
  workers_.clear();
}

asio::awaitable<void> Proxy::Impl::Accept(Worker& w, Listener& l) {
  while (!stopping_.load()) {
    auto [ec, socket] = co_await l.acceptor->async_accept(kTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping_.load()) co_return;
      // Out of descriptors and the like: wait a little rather than spin.
      asio::steady_timer t(w.ioc, std::chrono::milliseconds(50));
      co_await t.async_wait(kTuple);
      continue;
    }
    // Past the cap a connection is closed at once (counted in Serve from here, so a burst of
    // accepts cannot overshoot it).
    if (open_.load() >= options_.max_client_connections) {
      refused_connections_.fetch_add(1, std::memory_order_relaxed);
      socket.close(ec);
      continue;
    }
    open_.fetch_add(1);
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(w.ioc, Serve(w, std::move(socket), l.index, l.port), asio::detached);
  }
}

asio::awaitable<void> Proxy::Impl::SweepDeadlines(Worker& w) {
  asio::steady_timer timer(w.ioc);
  for (uint64_t tick = 1; !stopping_.load(); ++tick) {
    timer.expires_after(kSweepPeriod);
    co_await timer.async_wait(kTuple);
    Deadline::Sweep(w.deadlines, Deadline::Clock::now());
    if (tick % 10 != 0) continue;
    // Once a second, pooled connections past upstream_idle_timeout (shut down by the sweep) are
    // closed for good, and servers with none left leave the pool.
    for (auto it = w.idle.begin(); it != w.idle.end();) {
      std::erase_if(it->second, [](const Upstream& up) { return up.stream->deadline.fired(); });
      it = it->second.empty() ? w.idle.erase(it) : std::next(it);
    }
  }
}

asio::awaitable<void> Proxy::Impl::Serve(Worker& w, tcp::socket socket, size_t entry_point_index, uint16_t port) {
  const EntryPointOptions& ep = options_.entry_points[entry_point_index];
  const std::string& entry_point = ep.name;
  const auto read_timeout = ep.read_timeout.value_or(options_.client_read_timeout);
  const auto write_timeout = ep.write_timeout.value_or(options_.client_write_timeout);
  const auto idle_timeout = ep.idle_timeout.value_or(options_.client_idle_timeout);
  {
    std::lock_guard lock(w.stats_mu);
    ++w.open_by_entry_point[entry_point];
  }
  error_code ec;
  std::string client_ip;
  if (auto peer = socket.remote_endpoint(ec); !ec) {
    auto a = peer.address();
    client_ip = a.is_v6() && a.to_v6().is_v4_mapped()
                    ? asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string()
                    : a.to_string();
  }
  ClientStream client{std::move(socket)};
  Deadline deadline(w.deadlines, client.tcp());
  beast::flat_buffer buffer;
  bool served = co_await Sniff(w, entry_point, client, deadline, buffer, idle_timeout, read_timeout);
  TlsSeries* tls_requests = nullptr;  // this connection's series (its node never moves nor goes)
  if (served && client.is_tls()) {
    std::lock_guard lock(w.stats_mu);
    tls_requests = &*w.tls_requests
                         .try_emplace(TlsKey{options_.entry_points[entry_point_index].name,
                                             std::string(client.TlsVersion()), std::string(client.TlsCipher())})
                         .first;
  }
  while (served && !stopping_.load()) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(options_.max_request_body_bytes);
    parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    deadline.set_idle(true);
    deadline.Within(buffer.size() > 0 ? read_timeout : idle_timeout);
    auto [hec, hn] = co_await bhttp::async_read_header(client, buffer, parser, kTuple);
    deadline.set_idle(false);
    if (hec) {
      std::string answer;
      if (hec == bhttp::error::body_limit)
        answer = SimpleResponse(413, "text/plain; charset=utf-8", "Request Entity Too Large\n", false);
      else if (hec == bhttp::error::header_limit)
        answer = SimpleResponse(431, "text/plain; charset=utf-8", "Request Header Fields Too Large\n", false);
      else if (hec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() && hec != bhttp::error::end_of_stream &&
               hec != bhttp::error::partial_message)
        answer = SimpleResponse(400, "text/plain; charset=utf-8", "400 Bad Request\n", false);
      if (!answer.empty()) co_await WriteAll(client, answer);
      break;
    }
    deadline.Within(read_timeout);  // the whole request (Traefik's readTimeout)
    // The body's bytes, reserved from the edge's budget before they are read (all of
    // max_request_body_bytes when its length is not declared); released once it is answered.
    BodyReservation reservation(buffered_bytes_);
    if (!parser.is_done() && !reservation.Take(std::min<uint64_t>(parser.content_length().value_or(options_.max_request_body_bytes),
                                                                 options_.max_request_body_bytes),
                                               options_.max_buffered_request_bytes)) {
      unavailable_.fetch_add(1, std::memory_order_relaxed);
      co_await WriteAll(client, SimpleResponse(503, "text/plain; charset=utf-8", "Service Unavailable\n", false));
      break;
    }
    if (!parser.is_done()) {
      if (IEquals(std::string_view(parser.get()[bhttp::field::expect]), "100-continue"))
        if (!co_await WriteAll(client, "HTTP/1.1 100 Continue\r\n\r\n")) break;
      auto [bec, bn] = co_await bhttp::async_read(client, buffer, parser, kTuple);
      if (bec) {
        if (bec == bhttp::error::body_limit)
          co_await WriteAll(client, SimpleResponse(413, "text/plain; charset=utf-8", "Request Entity Too Large\n", false));
        break;
      }
      // A body of undeclared length held all of max_request_body_bytes while it came: now its size.
      reservation.Keep(parser.get().body().size());
    }
    // Answering it: Traefik's writeTimeout, by default 0 (a slow or long response is not cut).
    deadline.Within(write_timeout);
    auto& req = parser.get();
    const bool keep_alive = req.keep_alive() && !stopping_.load();
    requests_.fetch_add(1, std::memory_order_relaxed);
    Outcome out;
    out.tls_requests = tls_requests;
    out.client_buffer = &buffer;
    out.client_deadline = &deadline;
    out.head_request = req.method() == bhttp::verb::head;
    out.request_reservation = &reservation;
    out.upgrade_header = req[bhttp::field::upgrade];
    out.protocol = MetricProtocol(req[bhttp::field::connection], out.upgrade_header, req[bhttp::field::accept],
                                  req[bhttp::field::content_type]);
    const auto began = std::chrono::steady_clock::now();
    bool again = co_await Handle(w, client, req, entry_point, port, client_ip, keep_alive, out);
    Record(w, entry_point_index, req.method_string(), out, std::chrono::steady_clock::now() - began);
    if (!again || !keep_alive) break;
  }
  if (client.is_tls() && served && !stopping_.load()) {  // close_notify, waiting at most a second
    deadline.After(std::chrono::seconds(1));
    co_await client.ShutdownTls();
  }
  client.tcp().shutdown(tcp::socket::shutdown_send, ec);
  client.tcp().close(ec);
  {
    std::lock_guard lock(w.stats_mu);
    --w.open_by_entry_point[entry_point];
  }
  if (open_.fetch_sub(1) == 1) {
    std::lock_guard lock(open_mu_);
    open_cv_.notify_all();
  }
}

void Proxy::Impl::Record(Worker& w, size_t entry_point_index, std::string_view method, const Outcome& out,
                         std::chrono::steady_clock::duration took) {
  if (out.status == 0) return;
  const double seconds = std::chrono::duration<double>(took).count();
  const std::string_view label = MetricMethod(method);
  const int code = IsGrpcProtocol(out.protocol) ? out.grpc_status : out.status;
  const uint64_t shortcut = SeriesShortcut(code, out.protocol, label, entry_point_index);
  auto key = [&] {
    return RequestKey{std::to_string(code), std::string(label), std::string(out.protocol),
                      options_.entry_points[entry_point_index].name};
  };
  auto count = [&](RequestSeries& s) {
    if (s.requests == 0 && s.duration.bounds != options_.duration_buckets)  // a new series
      s.duration = Histogram::WithBounds(options_.duration_buckets);
    ++s.requests;
    s.duration.Observe(seconds);
    s.request_bytes += out.request_bytes;
    s.response_bytes += out.response_bytes;
  };
  std::lock_guard lock(w.stats_mu);
  RequestSeries*& ep = w.entry_point_series[shortcut];
  if (!ep) ep = &w.entry_point_stats[key()];
  count(*ep);
  if (out.tls_requests) ++out.tls_requests->second;
  // Whether the shortcuts keyed by this table's routes and backends may be used: the worker's
  // table is the one that routed the request (a later table's may have an earlier one's address).
  const bool current = out.table_generation == w.table_generation;
  // Router series: Traefik's addRoutersLabels, and not for its internal routers (addInternals).
  if (options_.router_metrics && out.route && !out.route->name.ends_with("@internal")) {
    const Route& route = *out.route;
    auto router_key = [&] {
      RequestKey k = key();
      k.name = route.name;
      if (route.backend) k.service = route.backend->name;
      return k;
    };
    RequestSeries* series = nullptr;
    if (current) {
      RequestSeries*& cached = w.router_series[{shortcut, &route}];
      if (!cached) cached = &w.router_stats[router_key()];
      series = cached;
    } else {  // by name, pruned at the next swap if it is gone
      series = &w.router_stats[router_key()];
    }
    count(*series);
    if (out.tls_requests) {
      auto tls_key = [&] {
        const RequestKey k = router_key();
        return TlsKey{k.name, out.tls_requests->first.tls_version, out.tls_requests->first.tls_cipher, k.service};
      };
      uint64_t* n = nullptr;
      if (current) {
        uint64_t*& cached = w.router_tls_series[{out.tls_requests, &route}];
        if (!cached) cached = &w.router_tls_stats[tls_key()];
        n = cached;
      } else {
        n = &w.router_tls_stats[tls_key()];
      }
      ++*n;
    }
  }
  if (!out.backend) return;
  if (out.retries > 0) {  // the retry middleware's: under the router's service
    const std::string& name = out.backend->name;
    auto it = w.service_retries.find(std::string_view(name));
    if (it == w.service_retries.end()) it = w.service_retries.emplace(name, 0).first;
    it->second += static_cast<uint64_t>(out.retries);
  }
  // The loadBalancer that answered; with none picked, the router's service if it is a
  // loadBalancer (its 503), and nothing for a weighted one (Traefik's weighted round robin answers
  // that 503 outside any loadBalancer's metrics).
  const Backend* backend = out.answered;
  if (!backend && out.backend->children.empty()) backend = out.backend.get();
  if (!backend) return;
  RequestSeries* svc = nullptr;
  if (current) {  // the backend is one of the worker's table's
    RequestSeries*& cached = w.service_series[{shortcut, backend}];
    if (!cached) {
      RequestKey k = key();
      k.name = backend->name;
      cached = &w.service_stats[std::move(k)];
    }
    svc = cached;
  } else {  // routed by a table since replaced: by name, pruned at the next swap if it is gone
    RequestKey k = key();
    k.name = backend->name;
    svc = &w.service_stats[std::move(k)];
  }
  count(*svc);
  if (out.tls_requests) {
    auto tls_key = [&] {
      return TlsKey{backend->name, out.tls_requests->first.tls_version, out.tls_requests->first.tls_cipher};
    };
    uint64_t* n = nullptr;
    if (current) {
      uint64_t*& cached = w.service_tls_series[{out.tls_requests, backend}];
      if (!cached) cached = &w.service_tls_stats[tls_key()];
      n = cached;
    } else {
      n = &w.service_tls_stats[tls_key()];
    }
    ++*n;
  }
}

void Proxy::Impl::RefreshTable(Worker& w) {
  const uint64_t g = table_generation_.load(std::memory_order_acquire);
  if (g == w.table_generation) return;
  std::shared_ptr<const Table> table = this->table();
  std::lock_guard lock(w.stats_mu);
  table.swap(w.table);  // the old one is released after the lock
  w.table_generation = g;
  w.service_series.clear();
  w.service_tls_series.clear();
  w.router_series.clear();
  w.router_tls_series.clear();
  const auto& backends = w.table->backends;
  std::erase_if(w.service_stats, [&](const auto& entry) { return !backends.count(entry.first.name); });
  std::erase_if(w.service_tls_stats, [&](const auto& entry) { return !backends.count(entry.first.name); });
  std::erase_if(w.service_retries, [&](const auto& entry) { return !backends.count(entry.first); });
  if (!w.router_stats.empty() || !w.router_tls_stats.empty()) {
    const std::set<std::string_view> routers = RouterNames(*w.table);
    std::erase_if(w.router_stats, [&](const auto& entry) { return !routers.count(entry.first.name); });
    std::erase_if(w.router_tls_stats, [&](const auto& entry) { return !routers.count(entry.first.name); });
  }
}

MetricsSnapshot Proxy::Impl::Metrics() const {
  MetricsSnapshot m;
  for (const EntryPointOptions& ep : options_.entry_points) m.open_connections[ep.name] = 0;
  const std::shared_ptr<const Table> current = table();
  std::optional<std::set<std::string_view>> routers;  // of `current`, when some worker has router series
  std::lock_guard lifecycle(lifecycle_mu_);  // workers_ is cleared by Stop
  for (const auto& w : workers_) {
    std::lock_guard lock(w->stats_mu);
    for (const auto& [ep, n] : w->open_by_entry_point) m.open_connections[ep] += n;
    for (const auto& [key, s] : w->entry_point_stats) m.entry_point_requests[key].Merge(s);
    for (const auto& [key, n] : w->tls_requests)
      if (n > 0) m.entry_point_tls_requests[key] += n;  // a series is made at the handshake
    // Only the services and routers the table has now (Traefik drops a removed one's series).
    for (const auto& [key, s] : w->service_stats)
      if (current->backends.count(key.name)) m.service_requests[key].Merge(s);
    for (const auto& [key, n] : w->service_tls_stats)
      if (current->backends.count(key.name)) m.service_tls_requests[key] += n;
    for (const auto& [service, n] : w->service_retries)
      if (current->backends.count(service)) m.service_retries[service] += n;
    if (!w->router_stats.empty() || !w->router_tls_stats.empty()) {
      if (!routers) routers = RouterNames(*current);
      for (const auto& [key, s] : w->router_stats)
        if (routers->count(key.name)) m.router_requests[key].Merge(s);
      for (const auto& [key, n] : w->router_tls_stats)
        if (routers->count(key.name)) m.router_tls_requests[key] += n;
    }
  }
  // Traefik registers these families only with addEntryPointsLabels and addServicesLabels.
  if (!options_.entry_point_metrics) {
    m.entry_point_requests.clear();
    m.entry_point_tls_requests.clear();
  }
  if (!options_.service_metrics) {
    m.service_requests.clear();
    m.service_tls_requests.clear();
    m.service_retries.clear();
  }
  for (const auto& [name, backend] : current->backends) {
    if (!options_.service_metrics || !backend->health_check) continue;
    for (const Backend::Server& s : backend->servers) {
      const Health h = s.state->health();
      if (h == Health::kUp || h == Health::kDown) m.server_up[{name, s.state->url()}] = h == Health::kUp ? 1 : 0;
    }
  }
  if (current->certificates) {
    for (const TlsCertificate* cert : current->certificates->Reported())
      m.tls_certs_not_after[{cert->common_name(), cert->serial(), cert->dns_names()}] = cert->not_after();
  }
  return m;
}

asio::awaitable<bool> Proxy::Impl::Sniff(Worker& w, const std::string& entry_point, ClientStream& client,
                                         Deadline& deadline,
                                         beast::flat_buffer& buffer, std::chrono::milliseconds idle_timeout,
                                         std::chrono::milliseconds read_timeout) {
  deadline.set_idle(true);
  deadline.Within(idle_timeout);
  auto [ec, n] = co_await client.tcp().async_read_some(buffer.prepare(4096), kTuple);
  deadline.set_idle(false);
  if (ec || n == 0 || stopping_.load()) co_return false;
  buffer.commit(n);
  // A TLS record of type handshake (0x16); 0x80 opens an SSLv2 hello, taken as TLS for the
  // handshake to refuse (Traefik's clientHelloInfo).
  const auto first = static_cast<const unsigned char*>(buffer.data().data())[0];
  if (first != 0x16 && first != 0x80) co_return true;
  RefreshTable(w);
  // Held until the handshake is over: its server-name callback reads the set.
  std::shared_ptr<const TlsCertificates> certificates = w.table ? w.table->certificates : nullptr;
  if (!certificates) {
    std::call_once(generated_once_, [this] { generated_ = TlsCertificates::GeneratedOnly(); });
    certificates = generated_;
  }
  SSL* ssl = certificates->NewConnection(entry_point);
  if (!ssl) co_return false;
  deadline.Within(read_timeout);
  co_return co_await client.Handshake(ssl, buffer);
}


asio::awaitable<bool> Proxy::Impl::Handle(Worker& w, ClientStream& client,
                                          bhttp::request<bhttp::string_body>& req, const std::string& entry_point,
                                          uint16_t /*port: X-Forwarded-Port is from Host, as Traefik's*/,
                                          const std::string& client_ip, bool keep_alive, Outcome& outcome) {
  Exchange x;
  x.method.assign(req.method_string());
  std::string_view target = req.target();
  size_t q = target.find('?');
  // What Traefik's entry point does before routing (request_path.h); the server is sent the same.
  RequestTarget sanitized = SanitizeRequestTarget(
      target.substr(0, q), q == std::string_view::npos ? std::string_view() : target.substr(q + 1),
      SanitizesPath(entry_point));
  if (sanitized.refusal == TargetRefusal::kMalformed) {  // Go's server, which then closes
    co_await WriteAll(client, SimpleResponse(400, "text/plain; charset=utf-8", "400 Bad Request", false, {}, false));
    co_return false;
  }
  if (sanitized.refusal == TargetRefusal::kFragment) {  // Traefik's denyFragment: a bare 400
    co_return co_await WriteAll(client, SimpleResponse(400, "", "", keep_alive, {}, false)) && keep_alive;
  }
  x.path = std::move(sanitized.path);
  x.raw_query = std::move(sanitized.query);
  x.client_ip = client_ip;
  if (client.is_tls()) x.scheme = "https";
  x.tls = client.ssl();
  x.now = std::chrono::steady_clock::now();
  // The client's own X-Forwarded-* and X-Real-Ip are not believed (Traefik without trusted IPs):
  // the edge sets them, before the chain, which may read them (redirectScheme reads the proto).
  x.headers.reserve(static_cast<size_t>(std::distance(req.begin(), req.end())) + 4);
  for (const auto& field : req) {
    std::string_view name = field.name_string();
    if (IEquals(name, "host")) {
      if (x.host.empty()) x.host.assign(field.value());
      continue;
    }
    if ((name.size() > 12 && IEquals(name.substr(0, 12), "x-forwarded-")) || IEquals(name, "x-real-ip")) continue;
    x.headers.emplace_back(std::string(name), std::string(field.value()));
  }
  // Traefik's forwardedPort: the Host's port, else 443 over TLS, else 80.
  std::string port_text = client.is_tls() ? "443" : "80";
  if (size_t colon = x.host.rfind(':'); colon != std::string::npos && colon + 1 < x.host.size() &&
                                        x.host.find(']', colon) == std::string::npos)
    port_text = x.host.substr(colon + 1);
  x.headers.emplace_back("X-Forwarded-Host", x.host);
  x.headers.emplace_back("X-Forwarded-Port", port_text);
  x.headers.emplace_back("X-Forwarded-Proto", x.scheme);
  x.headers.emplace_back("X-Real-Ip", x.client_ip);
  std::vector<std::pair<std::string_view, std::string_view>> header_views;
  header_views.reserve(x.headers.size());
  for (const auto& [n, v] : x.headers) header_views.emplace_back(n, v);
  RequestFacts facts{.method = x.method,
                     .host = x.host,
                     .path = x.path,
                     .query = x.raw_query,
                     .client_ip = x.client_ip,
                     .headers = &header_views};
  RefreshTable(w);
  outcome.table = w.table;  // this request's, whatever a swap does meanwhile
  outcome.table_generation = w.table_generation;
  const Route* route =
      outcome.table->Match(entry_point, facts, client.is_tls() ? Transport::kTls : Transport::kPlain);
  outcome.route = route;
  if (!route) {
    co_return co_await WriteAll(client, Answered(outcome, 404, "text/plain; charset=utf-8", "404 page not found\n",
                                                       keep_alive)) &&
        keep_alive;
  }
  // Traefik's snicheck: the router's options must be those the connection shook hands with.
  if (SSL* ssl = client.ssl(); ssl && TlsCertificates::OptionsName(ssl) != route->tls_options) {
    co_return co_await WriteAll(client, Answered(outcome, 421, "text/plain; charset=utf-8", "Misdirected Request\n",
                                                 keep_alive)) &&
        keep_alive;
  }
  const RetryConfig* retry = nullptr;
  CookiePlan cookies;
  // Middleware::OnDone (circuitBreaker's measure): the steps that passed the request on are told
  // its status once it is over, whichever way this returns.
  struct DoneGuard {
    const Route& route;
    const Exchange& x;
    const Outcome& outcome;
    size_t passed = 0;
    ~DoneGuard() {
      if (passed == 0 || outcome.status == 0) return;
      const auto now = std::chrono::steady_clock::now();
      // The steps inside an errors step that served its page saw the status it caught.
      const size_t inner = outcome.caught_by ? static_cast<size_t>(outcome.caught_by - route.chain.data()) : passed;
      for (size_t j = 0; j < passed; ++j)
        if (const auto& m = route.chain[j].middleware)
          m->OnDone(x, j > inner ? outcome.caught_status : outcome.status, now);
    }
  } done{*route, x, outcome};
  for (size_t i = 0; i < route->chain.size(); ++i) {
    const Step& step = route->chain[i];
    if (step.retry && !retry) retry = &*step.retry;
    std::optional<Answer> answer;
    bool nosniff = true;
    if (step.forward_auth) {
      std::shared_ptr<const ForwardAuth> auth = step.auth;
      if (!auth) {
        auto built = ForwardAuth::Build(*step.forward_auth);
        if (built.ok()) auth = std::move(*built);
      }
      nosniff = false;
      if (!auth) {
        answer = Answer{.status = 500, .headers = {}, .body = {}};
      } else {
        const ForwardAuthConfig& c = auth->config();
        // Traefik reads the body it forwards up to maxBodySize and answers 401 past it.
        if (c.forward_body && c.max_body_size >= 0 && static_cast<int64_t>(req.body().size()) > c.max_body_size) {
          answer = Answer{.status = 401, .headers = {}, .body = {}};
        } else {
          if (c.forward_body) outcome.request_bytes = req.body().size();  // read to be forwarded
          AuthReply reply = co_await CallAuth(w, *auth, x, c.forward_body ? &req.body() : nullptr);
          if (!reply.reached) {
            answer = Answer{.status = 500, .headers = {}, .body = {}};
          } else if (reply.too_large) {
            answer = Answer{.status = 401, .headers = {}, .body = {}};
          } else if (reply.status < 200 || reply.status >= 300) {
            answer = auth->Refusal(x.method, reply.status, reply.headers, std::move(reply.body));
          } else {
            auth->CopyResponseHeaders(reply.headers, x.headers);
            if (auto set = auth->AuthCookies(reply.headers); !set.empty())
              cookies.emplace_back(auth.get(), std::move(set));
            continue;
          }
        }
      }
    } else if (step.buffering) {
      outcome.request_bytes = req.body().size();  // buffering reads it whole
      answer = BufferingRequestAnswer(*step.buffering, req.body().size());
      nosniff = false;
    } else if (step.errors) {
      outcome.error_steps.push_back(&step);
    } else if (step.compress) {
      // Traefik's compress: the innermost step that picks an encoding is the one that encodes
      // (an outer one then sees its Content-Encoding and leaves the response as it is).
      if (CompressPlan plan = PlanCompression(*step.compress, x.method, x.headers);
          plan.encoding != Encoding::kIdentity)
        outcome.compress = plan;
    } else if (step.middleware) {
      answer = step.middleware->OnRequest(x);
    }
    if (answer) {
      done.passed = i;
      // An errors step before it that catches its status answers with its page instead.
      if (const Step* catcher = ErrorStepFor(outcome.error_steps, answer->status))
        co_return co_await ServeErrorPage(w, client, x, *catcher, answer->status, keep_alive, outcome) && keep_alive;
      // The middlewares before it still change the answer's headers (they wrap it, as in Traefik).
      for (size_t j = i; j-- > 0;)
        if (route->chain[j].middleware) route->chain[j].middleware->OnResponse(x, answer->status, answer->headers);
      co_return co_await WriteAll(client, Answered(outcome, answer->status, "", answer->body, keep_alive,
                                                         answer->headers, nosniff)) &&
          keep_alive;
    }
  }
  done.passed = route->chain.size();
  if (x.delay.count() > 0) {  // rateLimit's shaping
    asio::steady_timer wait(w.ioc, x.delay);
    co_await wait.async_wait(kTuple);
  }
  const bool head_request = req.method() == bhttp::verb::head;
  const bool again = co_await Forward(w, client, *route, x, req.body(), head_request, req.version(), keep_alive,
                                      retry, cookies, outcome);
  if (!outcome.mirroring.empty() && !outcome.client_gone)
    SendMirrors(w, x, req.body(), outcome, route->chain.empty());
  co_return again;
}

void Proxy::Impl::SendMirrors(Worker& w, const Exchange& x, const std::string& body, const Outcome& outcome,
                              bool parsed) {
  std::vector<MirrorTarget> targets;
  bool any_body = false;
  for (const Backend* level : outcome.mirroring) {
    // Traefik counts the request first (getActiveMirrors), then, when it mirrors the body, skips
    // mirroring one over maxBodySize.
    std::vector<std::shared_ptr<const Backend>> active = level->ActiveMirrors();
    if (level->mirror_body && level->max_mirror_body_bytes >= 0 &&
        body.size() > static_cast<uint64_t>(level->max_mirror_body_bytes))
      continue;
    for (auto& mirror : active) targets.push_back(MirrorTarget{std::move(mirror), level->mirror_body});
    any_body = any_body || (level->mirror_body && !active.empty());
  }
  if (targets.empty()) return;
  auto reservation = std::make_unique<BodyReservation>(buffered_bytes_);
  if (w.mirror_copies >= kMaxMirrorCopies ||
      (any_body && !reservation->Take(body.size(), options_.max_buffered_request_bytes))) {
    mirror_dropped_.fetch_add(targets.size(), std::memory_order_relaxed);
    return;
  }
  ++w.mirror_copies;
  // The copies outlive the request: they take neither its connection nor what it holds (an
  // inFlightReq slot is the request's, not its copies').
  Exchange copy = x;
  copy.tls = nullptr;
  copy.holds.clear();
  asio::co_spawn(w.ioc, MirrorCopies(w, std::move(copy), any_body ? body : std::string(), std::move(targets),
                                     std::move(reservation), parsed),
                 asio::detached);
}

asio::awaitable<void> Proxy::Impl::MirrorCopies(Worker& w, Exchange x, std::string body,
                                                std::vector<MirrorTarget> targets,
                                                // held by the frame: the copied body's share of the budget
                                                [[maybe_unused]] std::unique_ptr<BodyReservation> reservation,
                                                bool parsed) {
  struct Done {
    Worker& w;
    ~Done() { --w.mirror_copies; }
  } done{w};
  const bool head_request = x.method == "HEAD";
  std::string head;
  for (const MirrorTarget& target : targets) {
    if (stopping_.load()) break;
    const auto began = std::chrono::steady_clock::now();
    Selection pick = target.backend->Choose(&x.headers, x.client_ip);
    if (!pick.server) {  // the mirror's own 503, into the void
      mirror_failed_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    pick.server->Begin();
    const std::string_view copy = target.with_body ? std::string_view(body) : std::string_view();
    UpstreamHead(head, x, *pick.leaf, *pick.server, copy.size(), parsed);
    const int status = co_await SendCopy(w, pick, head, copy, head_request);
    pick.server->End();
    (status > 0 ? mirrored_ : mirror_failed_).fetch_add(1, std::memory_order_relaxed);
    // Counted under the mirror's loadBalancer, as Traefik's service metrics count it (its own
    // 502 when it got no answer).
    const std::string_view method = MetricMethod(x.method);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::lock_guard lock(w.stats_mu);
    RequestSeries& series = w.service_stats[RequestKey{std::to_string(status > 0 ? status : 502), std::string(method),
                                                       "http", pick.leaf->name}];
    if (series.requests == 0 && series.duration.bounds != options_.duration_buckets)  // a new series
      series.duration = Histogram::WithBounds(options_.duration_buckets);
    ++series.requests;
    series.duration.Observe(seconds);
    series.request_bytes += status > 0 ? copy.size() : 0;
  }
}

asio::awaitable<int> Proxy::Impl::SendCopy(Worker& w, const Selection& pick, const std::string& head,
                                           std::string_view body, bool head_request, CollectedReply* collect) {
  const UpstreamTransport* transport = pick.leaf->transport.get();
  const auto until = std::chrono::steady_clock::now() + kMirrorCopyTimeout;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<Upstream> up = TakeIdle(w, pick.server, transport);
    bool timed_out = false;
    if (!up) up = co_await Connect(w, pick.server, pick.leaf->transport, &timed_out);
    if (!up) co_return 0;
    up->stream->deadline.After(until - std::chrono::steady_clock::now());
    UpstreamTlsStream* const tls = up->stream->tls ? &*up->stream->tls : nullptr;
    const std::array<asio::const_buffer, 2> out{asio::buffer(head), asio::buffer(body.data(), body.size())};
    error_code ec;
    if (tls) {
      auto [e, n] = co_await asio::async_write(*tls, out, kTuple);
      ec = e;
    } else {
      auto [e, n] = co_await asio::async_write(up->stream->socket, out, kTuple);
      ec = e;
    }
    bhttp::response_parser<bhttp::buffer_body> rp;
    rp.body_limit(boost::none);
    rp.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    if (head_request) rp.skip(true);
    if (ec) {
    } else if (tls) {  // (not a ?: of two co_awaits: GCC 12 awaits both)
      ec = co_await ReadResponseHead(*tls, up->buffer, rp, options_.max_header_bytes);
    } else {
      ec = co_await ReadResponseHead(up->stream->socket, up->buffer, rp, options_.max_header_bytes);
    }
    if (ec) {
      // A pooled connection the server closed while it was idle: once more on a new one.
      if (up->reused && attempt == 0 && up->buffer.size() == 0 && !up->stream->deadline.fired() && ClosedWhileIdle(ec)) {
        w.idle.erase(pick.server.get());
        continue;
      }
      co_return 0;
    }
    const int status = static_cast<int>(rp.get().result_int());
    if (collect) {
      collect->reason = std::string(rp.get().reason());
      for (const auto& field : rp.get()) collect->headers.emplace_back(field.name_string(), field.value());
    }
    char sink[4096];
    while (!rp.is_done()) {  // the answer is read to its end (and dropped, unless collected)
      rp.get().body().data = sink;
      rp.get().body().size = sizeof(sink);
      auto [bec, bn] = co_await ReadSomeFrom(up->stream->socket, tls, up->buffer, rp);
      if (bec == bhttp::error::need_buffer) bec = {};
      if (bec) co_return collect ? 0 : status;  // (its connection closed, not pooled)
      if (collect) {
        const size_t got = sizeof(sink) - rp.get().body().size;
        if (collect->body.size() + got > options_.max_buffered_response_bytes ||
            !collect->held->Take(got, options_.max_buffered_request_bytes)) {
          collect->too_large = true;
          co_return status;
        }
        collect->body.append(sink, got);
      }
    }
    up->stream->deadline.Never();
    if (rp.keep_alive()) Park(w, std::move(*up), transport);
    co_return status;
  }
  co_return 0;
}

asio::awaitable<bool> Proxy::Impl::OwnAnswer(Worker& w, ClientStream& client, const Exchange& x, Outcome& outcome,
                                             int status, std::string_view body, bool keep_alive) {
  if (const Step* catcher = ErrorStepFor(outcome.error_steps, status))
    co_return co_await ServeErrorPage(w, client, x, *catcher, status, keep_alive, outcome);
  co_return co_await WriteAll(client, Answered(outcome, status, "text/plain; charset=utf-8", body, keep_alive)) &&
      keep_alive;
}

asio::awaitable<bool> Proxy::Impl::ServeErrorPage(Worker& w, ClientStream& client, const Exchange& x,
                                                  const Step& step, int original, bool keep_alive, Outcome& outcome) {
  const ErrorPagesConfig& c = *step.errors;
  int code = original;
  for (const auto& [ranges, to] : c.rewrites)
    if (InRanges(ranges, original)) {
      code = to;
      break;
    }
  // Traefik's page request: GET http://<Host><query>, the query's {status}, {originalStatus} and
  // {url} (the request's URL, query-escaped) filled in.
  std::string query;
  if (!c.query.empty()) {
    query = "/" + std::string(c.query.starts_with('/') ? std::string_view(c.query).substr(1) : std::string_view(c.query));
    std::string url = fmt::format("{}://{}{}", x.scheme, x.host, x.path);
    if (!x.raw_query.empty()) url += "?" + x.raw_query;
    auto fill = [&query](std::string_view name, const std::string& value) {
      for (size_t at; (at = query.find(name)) != std::string::npos;) query.replace(at, name.size(), value);
    };
    fill("{status}", std::to_string(code));
    fill("{originalStatus}", std::to_string(original));
    fill("{url}", mw::QueryEscape(url));
  }
  Exchange page;
  page.method = "GET";
  page.scheme = x.scheme;
  page.host = x.host;
  const size_t q = query.find('?');
  page.path = q == std::string::npos ? query : query.substr(0, q);
  if (q != std::string::npos) page.raw_query = query.substr(q + 1);
  page.client_ip = x.client_ip;
  page.omit_x_forwarded_for = true;  // the page request has no remote address
  if (c.request_headers) {
    for (const std::string& name : *c.request_headers)
      for (const auto& [n, v] : x.headers)
        if (mw::HeaderNameEquals(n, name)) page.headers.emplace_back(n, v);
  } else {
    page.headers = x.headers;
  }
  outcome.caught_by = &step;
  outcome.caught_status = original;
  Selection pick = step.error_backend->Choose(nullptr, x.client_ip);
  if (!pick.server)  // the page service's own 503, under the caught status
    co_return co_await WriteAll(client, Answered(outcome, code, "text/plain; charset=utf-8", pick.unavailable,
                                                 keep_alive)) &&
        keep_alive;
  std::string head;
  UpstreamHead(head, page, *pick.leaf, *pick.server, 0, false);
  BodyReservation held(buffered_bytes_);
  CollectedReply reply(&held);
  struct InFlight {  // the page server's request in flight, whichever way this ends
    ServerState& s;
    explicit InFlight(ServerState& state) : s(state) { s.Begin(); }
    ~InFlight() { s.End(); }
  };
  int got = 0;
  {
    InFlight in_flight(*pick.server);
    got = co_await SendCopy(w, pick, head, {}, false, &reply);
  }
  if (got == 0 || reply.too_large)  // the page service's 502, under the caught status
    co_return co_await WriteAll(client, Answered(outcome, code, "text/plain; charset=utf-8", "Bad Gateway",
                                                 keep_alive)) &&
        keep_alive;
  // The page's headers and body, with the status the step gives (Traefik's codeModifier); the
  // middlewares before the errors step wrap it, as they wrap any answer.
  HeaderList headers;
  std::string_view connection;
  for (const auto& [n, v] : reply.headers)
    if (IEquals(n, "connection")) connection = v;
  for (const auto& [n, v] : reply.headers) {
    if (HopByHop(n) || IEquals(n, "content-length") || (!connection.empty() && mw::TokenListHas(connection, n)))
      continue;
    headers.emplace_back(n, v);
  }
  if (const Route* route = outcome.route) {
    for (size_t j = static_cast<size_t>(&step - route->chain.data()); j-- > 0;)
      if (route->chain[j].middleware) route->chain[j].middleware->OnResponse(x, code, headers);
  }
  for (const auto& [n, v] : x.response_headers_to_set) headers.emplace_back(n, v);
  const bool no_body = outcome.head_request || code / 100 == 1 || code == 204 || code == 304;
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", code, Reason(code));
  for (const auto& [n, v] : headers)
    if (SafeHeader(n, v)) out += fmt::format("{}: {}\r\n", n, v);
  if (code / 100 != 1 && code != 204 && code != 304) out += fmt::format("Content-Length: {}\r\n", reply.body.size());
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  outcome.status = code;
  outcome.response_bytes = no_body ? 0 : reply.body.size();
  const std::array<asio::const_buffer, 2> pieces{asio::buffer(out),
                                                 no_body ? asio::const_buffer() : asio::buffer(reply.body)};
  error_code ec = co_await Send(client, pieces);
  co_return !ec && keep_alive;
}

std::optional<Upstream> Proxy::Impl::TakeIdle(Worker& w, const std::shared_ptr<ServerState>& server,
                                              const UpstreamTransport* transport) {
  auto it = w.idle.find(server.get());
  if (it == w.idle.end()) return std::nullopt;
  // Idle too long (closed), or made through another transport than the request's: dropped.
  while (!it->second.empty() &&
         (it->second.back().stream->deadline.fired() || it->second.back().transport.get() != transport))
    it->second.pop_back();
  if (it->second.empty()) return std::nullopt;
  Upstream up = std::move(it->second.back());
  it->second.pop_back();
  up.reused = true;
  reuses_.fetch_add(1, std::memory_order_relaxed);
  return up;
}

asio::awaitable<std::optional<Upstream>> Proxy::Impl::Connect(
    Worker& w, const std::shared_ptr<ServerState>& server,
    const std::shared_ptr<const UpstreamTransport>& transport_holder, bool* timed_out) {
  const UpstreamTransport* transport = transport_holder.get();
  *timed_out = false;
  error_code ec;
  auto address = asio::ip::make_address(server->host(), ec);
  if (ec) co_return std::nullopt;  // names are resolved by the compiler of the table, not here
  Upstream up;
  up.server = server;
  up.transport = transport_holder;
  up.stream = std::make_unique<Upstream::Socket>(w.ioc, w.deadlines);
  up.stream->deadline.Within(transport ? transport->dial_timeout : options_.upstream_connect_timeout);
  auto [cec] = co_await up.stream->socket.async_connect(tcp::endpoint(address, server->port()), kTuple);
  if (cec) {
    *timed_out = up.stream->deadline.fired();
    co_return std::nullopt;
  }
  up.stream->socket.set_option(tcp::no_delay(true), ec);
  if (server->tls()) {
    SSL* ssl = TlsOf(transport).NewConnection(server->url_host());
    if (!ssl) co_return std::nullopt;
    up.stream->tls.emplace(up.stream->socket, ssl);
    up.stream->deadline.After(kTlsHandshakeTimeout);
    auto [hec] = co_await up.stream->tls->async_handshake(asio::ssl::stream_base::client, kTuple);
    if (hec) {
      *timed_out = up.stream->deadline.fired();
      UpstreamTlsFailed(*timed_out ? std::string("net/http: TLS handshake timeout")
                                   : UpstreamTls::HandshakeError(ssl, hec.message()));
      co_return std::nullopt;
    }
  }
  up.stream->deadline.Never();
  connects_.fetch_add(1, std::memory_order_relaxed);
  co_return std::optional<Upstream>(std::move(up));
}

const UpstreamTls& Proxy::Impl::TlsOf(const UpstreamTransport* transport) {
  if (transport) return *transport->tls;
  std::call_once(static_tls_once_, [this] {
    std::vector<std::string> errors;
    static_tls_ = UpstreamTls::Build(options_.upstream_tls, errors);
    for (const std::string& e : errors) fmt::print(stderr, "paddock: edge: serversTransport: {}\n", e);
  });
  return *static_tls_;
}

void Proxy::Impl::UpstreamTlsFailed(std::string error) {
  tls_failures_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(upstream_error_mu_);
  if (error == last_upstream_error_) return;
  fmt::print(stderr, "paddock: edge: 502 Bad Gateway: {}\n", error);
  last_upstream_error_ = std::move(error);
}

void Proxy::Impl::Park(Worker& w, Upstream up, const UpstreamTransport* transport) {
  size_t max_idle = options_.max_idle_per_server;
  if (transport) {  // its maxIdleConnsPerHost shared out among the I/O threads, as ServersTransport::ApplyTo
    const int per_host = transport->max_idle_conns_per_host == 0 ? 2 : transport->max_idle_conns_per_host;
    const size_t threads = workers_.size();
    max_idle = per_host < 0 ? 0 : (static_cast<size_t>(per_host) + threads - 1) / threads;
  }
  if (stopping_.load() || up.server->fenced() || up.buffer.size() > 0 || max_idle == 0)
    return;  // closed by its destructor
  auto& list = w.idle[up.server.get()];
  if (list.size() >= max_idle) list.erase(list.begin());
  up.stream->deadline.Within(transport ? transport->idle_conn_timeout : options_.upstream_idle_timeout);
  list.push_back(std::move(up));
}

void Proxy::Impl::ReconcileHealthChecks() {
  // Which servers the current table health-checks, with their service's check.
  std::map<const ServerState*, std::pair<std::shared_ptr<ServerState>, const Backend*>> wanted;
  std::shared_ptr<const Table> table = this->table();
  for (const auto& [name, backend] : table->backends) {
    if (!backend->health_check) continue;
    for (const Backend::Server& s : backend->servers) wanted[s.state.get()] = {s.state, backend.get()};
  }
  for (auto it = probes_.begin(); it != probes_.end();) {
    if (auto w = wanted.find(it->first); w != wanted.end()) {
      // A reload may change the check and the transport (ProbeOnce works on copies).
      it->second->config = *w->second.second->health_check;
      it->second->transport = w->second.second->transport;
      ++it;
      continue;
    }
    *it->second->cancelled = true;
    if (it->second->timer) it->second->timer->cancel();
    it = probes_.erase(it);
  }
  for (auto& [key, entry] : wanted) {
    if (probes_.count(key)) continue;
    auto probe = std::make_shared<Probe>();
    probe->server = entry.first;
    probe->config = *entry.second->health_check;
    probe->transport = entry.second->transport;
    probe->timer = std::make_shared<asio::steady_timer>(workers_.front()->ioc);
    // Not routable until the first probe passes (Traefik routes a new server before probing it);
    // a server already known keeps its state (a reload does not reset health).
    if (probe->server->health() == Health::kUnchecked) probe->server->set_health(Health::kPending);
    probe->schedule = ProbeSchedule(probe->server->health());
    probes_[key] = probe;
    asio::co_spawn(workers_.front()->ioc, ProbeLoop(probe), asio::detached);
  }
}

asio::awaitable<void> Proxy::Impl::ProbeLoop(std::shared_ptr<Probe> probe) {
  while (!*probe->cancelled && !stopping_.load()) {
    const bool up = co_await ProbeOnce(*probe);
    if (*probe->cancelled) co_return;
    probe->server->set_health(up ? Health::kUp : Health::kDown);
    // Traefik's interval or unhealthyInterval; sooner while the server has never passed.
    const ProbeResult result = up ? ProbeResult::kPassed : ProbeResult::kFailed;
    probe->timer->expires_after(probe->schedule.After(result, probe->config));
    co_await probe->timer->async_wait(kTuple);
  }
}

asio::awaitable<bool> Proxy::Impl::ProbeOnce(const Probe& probe) {
  const ServerState& server = *probe.server;
  const HealthCheckConfig c = probe.config;  // a reload may replace the probe's meanwhile
  const std::shared_ptr<const UpstreamTransport> transport = probe.transport;
  error_code ec;
  auto address = asio::ip::make_address(server.host(), ec);
  if (ec) co_return false;
  Worker& w = *workers_.front();  // this coroutine's thread
  tcp::socket socket(w.ioc);
  Deadline deadline(w.deadlines, socket);  // the probe's timeout, to the sweep's precision
  deadline.Within(c.timeout);
  const uint16_t port = c.port > 0 ? static_cast<uint16_t>(c.port) : server.port();
  auto [cec] = co_await socket.async_connect(tcp::endpoint(address, port), kTuple);
  if (cec) co_return false;
  std::string req;
  req += c.method.empty() ? std::string_view("GET") : std::string_view(c.method);
  req += ' ';
  req += c.path.empty() || c.path.front() != '/' ? "/" + c.path : c.path;
  req += " HTTP/1.1\r\nHost: "sv;
  if (!c.hostname.empty()) {
    req += c.hostname;
  } else {
    req += server.host();
    req += ':';
    AppendDecimal(req, port);
  }
  req += "\r\nUser-Agent: Paddock-Edge health check\r\nConnection: close\r\n"sv;
  for (const auto& [n, v] : c.headers) {
    if (!SafeHeader(n, v)) continue;
    req += n;
    req += ": "sv;
    req += v;
    req += "\r\n"sv;
  }
  req += "\r\n"sv;
  // Traefik's healthCheck.scheme replaces the server URL's; its transport is the service's.
  const bool tls = c.scheme.empty() ? server.tls() : IEquals(c.scheme, "https");
  bool passed = false;
  if (tls) {
    SSL* ssl = TlsOf(transport.get()).NewConnection(server.url_host());
    if (!ssl) co_return false;
    UpstreamTlsStream stream(socket, ssl);
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::client, kTuple);
    if (hec) co_return false;
    passed = co_await ProbeExchange(stream, req, c);
  } else {
    passed = co_await ProbeExchange(socket, req, c);
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
  co_return passed;
}

template <typename Stream>
asio::awaitable<bool> Proxy::Impl::ProbeExchange(Stream& stream, const std::string& request,
                                                 const HealthCheckConfig& c) {
  auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(request), kTuple);
  if (wec) co_return false;
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::empty_body> rp;
  constexpr size_t kProbeHeadLimit = 32 << 10;
  rp.header_limit(kProbeHeadLimit);
  if (co_await ReadResponseHead(stream, buffer, rp, kProbeHeadLimit)) co_return false;
  const int status = static_cast<int>(rp.get().result_int());
  if (c.status > 0) co_return status == c.status;
  co_return status >= 200 && status < 400;
}

// Traefik's retry backoff (cenkalti/backoff's exponential one as Traefik sets it): the wait before
// retry n (0-based) is initialInterval * m^n, m = 2^(1/(attempts-1)), randomized by ±50%; none
// when initialInterval is 0.
std::chrono::nanoseconds RetryWait(const RetryConfig& r, int n) {
  if (r.attempts < 2 || r.initial_interval.count() <= 0) return std::chrono::nanoseconds(0);
  const double m = std::pow(2.0, 1.0 / static_cast<double>(r.attempts - 1));
  const double base = std::chrono::duration<double, std::nano>(r.initial_interval).count() * std::pow(m, n);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double factor = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
  return std::chrono::nanoseconds(static_cast<int64_t>(base * factor));
}

asio::awaitable<AuthReply> Proxy::Impl::CallAuth(Worker& w, const ForwardAuth& auth, const Exchange& x,
                                                 const std::string* body) {
  AuthReply reply;
  const AuthAddress& a = auth.address();
  const std::string_view method = auth.Method(x);
  std::string head;
  head.reserve(512);
  head += method;
  head += ' ';
  head += a.target;
  head += " HTTP/1.1\r\nHost: "sv;
  head += a.authority;
  head += "\r\n"sv;
  for (const auto& [n, v] : auth.RequestHeaders(x)) {
    if (!SafeHeader(n, v)) continue;
    head += n;
    head += ": "sv;
    head += v;
    head += "\r\n"sv;
  }
  const bool with_body = body && !body->empty();
  if (with_body || method == "POST" || method == "PUT" || method == "PATCH") {
    head += "Content-Length: "sv;
    AppendDecimal(head, with_body ? body->size() : 0);
    head += "\r\n"sv;
  }
  head += "\r\n"sv;
  // Kept alive between calls, as Traefik's client does: a pooled connection first; one the auth
  // server closed while it sat idle is found out by the write or the read and the call is made
  // again, once, on a new connection.
  const std::string pool_key = a.host + ":" + std::to_string(a.port);
  if (const auto now = std::chrono::steady_clock::now(); now - w.auth_swept > std::chrono::seconds(1)) {
    w.auth_swept = now;  // (an address no longer configured keeps nothing open past the timeout)
    for (auto it = w.auth_idle.begin(); it != w.auth_idle.end();) {
      std::erase_if(it->second, [&](const auto& c) { return now - c->parked > kAuthIdleTimeout; });
      it = it->second.empty() ? w.auth_idle.erase(it) : std::next(it);
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<AuthConnection> conn;
    if (auto it = w.auth_idle.find(pool_key); it != w.auth_idle.end() && !it->second.empty()) {
      conn = std::move(it->second.back());
      it->second.pop_back();
    } else {
      conn = std::make_unique<AuthConnection>(w.ioc);
      conn->stream.expires_after(kForwardAuthTimeout);
      std::vector<tcp::endpoint> endpoints;
      error_code ec;
      auto address = asio::ip::make_address(a.host, ec);
      if (!ec) {
        endpoints.emplace_back(address, a.port);
      } else {
        tcp::resolver resolver(w.ioc);
        asio::steady_timer deadline(w.ioc, kForwardAuthTimeout);
        deadline.async_wait([&resolver](error_code e) {
          if (!e) resolver.cancel();
        });
        auto [rec, results] = co_await resolver.async_resolve(a.host, std::to_string(a.port), kTuple);
        deadline.cancel();
        if (rec) co_return reply;
        for (const auto& entry : results) endpoints.push_back(entry.endpoint());
      }
      auto [cec, connected] = co_await conn->stream.async_connect(endpoints, kTuple);
      if (cec) co_return reply;
      conn->stream.socket().set_option(tcp::no_delay(true), ec);
      conn->fresh = true;
    }
    conn->stream.expires_after(kForwardAuthTimeout);
    std::array<asio::const_buffer, 2> out{asio::buffer(head),
                                          with_body ? asio::buffer(*body) : asio::const_buffer()};
    auto [wec, wn] = co_await asio::async_write(conn->stream, out, kTuple);
    bhttp::response_parser<bhttp::string_body> rp;
    rp.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    // maxResponseBodySize (-1: none), within the edge's own bound (ProxyOptions::max_auth_response_bytes).
    const int64_t limit = auth.config().max_response_body_size;
    rp.body_limit(limit >= 0 ? std::min<uint64_t>(static_cast<uint64_t>(limit), options_.max_auth_response_bytes)
                             : options_.max_auth_response_bytes);
    if (method == "HEAD") rp.skip(true);
    error_code rec = wec;
    if (!wec) rec = co_await ReadResponseHead(conn->stream, conn->buffer, rp, options_.max_header_bytes);
    if (!rec) {
      auto [e, n] = co_await bhttp::async_read(conn->stream, conn->buffer, rp, kTuple);
      rec = e;
    }
    if (rec == bhttp::error::body_limit) {
      reply.reached = true;
      reply.too_large = true;
      co_return reply;
    }
    if (rec) {
      if (!conn->fresh && !rp.got_some() && ClosedWhileIdle(rec)) {
        w.auth_idle.erase(pool_key);  // the rest are as old
        continue;
      }
      co_return reply;
    }
    auto& res = rp.get();
    reply.reached = true;
    reply.status = static_cast<int>(res.result_int());
    for (const auto& field : res)
      reply.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    reply.body = std::move(res.body());
    if (rp.keep_alive() && conn->buffer.size() == 0 && !stopping_.load()) {
      auto& idle = w.auth_idle[pool_key];
      if (idle.size() >= kMaxIdleAuthConnections) idle.erase(idle.begin());
      conn->fresh = false;
      conn->parked = std::chrono::steady_clock::now();
      conn->stream.expires_never();
      idle.push_back(std::move(conn));
    }
    co_return reply;
  }
  co_return reply;
}

asio::awaitable<bool> Proxy::Impl::SwitchProtocols(Worker& w, ClientStream& client, Upstream& up,
                                                   const bhttp::response_header<>& res, std::string_view requested,
                                                   const std::vector<std::string>& set_cookies, Outcome& outcome) {
  bool upgrade_listed = false;  // in any of its Connection headers, as Go reads them
  for (const auto& field : res)
    if (field.name() == bhttp::field::connection && mw::TokenListHas(field.value(), "upgrade")) upgrade_listed = true;
  const std::string_view offered = upgrade_listed ? std::string_view(res[bhttp::field::upgrade]) : std::string_view();
  if (!IEquals(offered, requested) || requested.empty()) {
    // Go's error: backend tried to switch protocol "<offered>" when "<requested>" was requested.
    bad_gateway_.fetch_add(1, std::memory_order_relaxed);
    co_await WriteAll(client, Answered(outcome, 502, "text/plain; charset=utf-8", "Bad Gateway", false));
    co_return false;
  }
  outcome.status = 101;
  // The server's head as it came (Go writes the 101's headers untouched, hop-by-hop ones too),
  // and whatever the server sent after it.
  std::string head = "HTTP/1.1 101 ";
  head += res.reason().empty() ? std::string_view("Switching Protocols") : std::string_view(res.reason());
  head += "\r\n";
  for (const std::string& cookie : set_cookies) {  // a sticky cookie Traefik's balancer set before proxying
    head += "Set-Cookie: "sv;
    head += cookie;
    head += "\r\n"sv;
  }
  for (const auto& field : res) {
    head += field.name_string();
    head += ": "sv;
    head += field.value();
    head += "\r\n"sv;
  }
  head += "\r\n"sv;
  head.append(static_cast<const char*>(up.buffer.data().data()), up.buffer.size());
  up.buffer.clear();
  if (!co_await WriteAll(client, head)) co_return false;
  // From now on the connection is the two peers': no deadline (Stop still ends it at once), and
  // nothing of the request's body budget held.
  if (outcome.client_deadline) {
    outcome.client_deadline->Never();
    outcome.client_deadline->set_tunnel();
  }
  up.stream->deadline.set_tunnel();
  if (outcome.request_reservation) outcome.request_reservation->Keep(0);
  if (stopping_.load()) co_return false;  // Stop may have passed the deadlines before they were marked
  tcp::socket& upstream = up.stream->socket;
  UpstreamTlsStream* const upstream_tls = up.stream->tls ? &*up.stream->tls : nullptr;
  // What the client sent after its request goes first.
  if (outcome.client_buffer && outcome.client_buffer->size() > 0) {
    error_code ec;
    if (upstream_tls)
      std::tie(ec, std::ignore) = co_await asio::async_write(*upstream_tls, outcome.client_buffer->data(), kTuple);
    else
      std::tie(ec, std::ignore) = co_await asio::async_write(upstream, outcome.client_buffer->data(), kTuple);
    outcome.client_buffer->clear();
    if (ec) co_return false;
  }
  std::function<void()> close = [&client, &upstream] {
    error_code ignored;
    client.tcp().shutdown(tcp::socket::shutdown_both, ignored);
    upstream.shutdown(tcp::socket::shutdown_both, ignored);
  };
  if (upstream_tls)
    co_await RelayBoth(w.ioc, client, *upstream_tls, std::move(close));
  else
    co_await RelayBoth(w.ioc, client, upstream, std::move(close));
  co_return false;
}

asio::awaitable<bool> Proxy::Impl::Forward(Worker& w, ClientStream& client, const Route& route, Exchange& x,
                                           const std::string& body, bool head_request, unsigned client_version,
                                           bool keep_alive, const RetryConfig* retry, const CookiePlan& cookies,
                                           Outcome& outcome) {
  outcome.backend = route.backend;
  // Sticky cookies naming a routable server or child service win over round robin; a weighted
  // service picks its child first (edge/proxy/table.h, Backend::Choose).
  Selection pick;
  if (route.backend) pick = route.backend->Choose(&x.headers, x.client_ip);
  if (!pick.mirroring.empty()) outcome.mirroring = pick.mirroring;
  // failover.errors keeps the body to send it again: one over its maxRequestBodyBytes is refused.
  if (pick.failover && pick.failover->failover_max_body_bytes >= 0 &&
      body.size() > static_cast<uint64_t>(pick.failover->failover_max_body_bytes))
    co_return co_await OwnAnswer(w, client, x, outcome, 413, "Request body too large\n", keep_alive);
  std::shared_ptr<ServerState> server = pick.server;
  if (!server) {
    unavailable_.fetch_add(1, std::memory_order_relaxed);
    co_return co_await OwnAnswer(w, client, x, outcome, 503, pick.unavailable, keep_alive);
  }
  server->Begin();
  struct EndGuard {
    std::shared_ptr<ServerState>& s;
    ~EndGuard() {
      if (s) s->End();
    }
  } end_guard{server};

  // The request as the server gets it (UpstreamHead). Without middlewares every header is the
  // parser's or the edge's own: nothing to check.
  std::string head;
  // After the middlewares, as Go reads it (none can have added an Upgrade when none ran).
  const std::string_view upgrade =
      outcome.upgrade_header.empty() && route.chain.empty() ? std::string_view() : UpgradeType(x.headers);
  if (!PrintableAscii(upgrade)) {  // Go: client tried to switch to invalid protocol
    bad_gateway_.fetch_add(1, std::memory_order_relaxed);
    co_return co_await OwnAnswer(w, client, x, outcome, 502, "Bad Gateway", keep_alive);
  }
  auto build_head = [&] { UpstreamHead(head, x, *pick.leaf, *server, body.size(), route.chain.empty(), upgrade); };
  build_head();
  std::vector<const ServerState*> refused;  // servers that refused the connection: never sent anything

  // retry (Traefik's): another attempt, after its backoff, on a fresh Pick() — when no server could
  // be connected to (nothing was written), or when the status is one of retry's `status` ranges
  // (idempotent methods unless retryNonIdempotentMethod; a body within maxRequestBodyBytes).
  const auto started = std::chrono::steady_clock::now();
  int retries = 0;
  auto may_retry = [&] {
    if (!retry || retries + 1 >= retry->attempts) return false;
    return retry->timeout.count() <= 0 || std::chrono::steady_clock::now() - started < retry->timeout;
  };
  // The request goes to `next` from now on (its server counted in flight instead of the last's).
  auto move_to = [&](Selection next) {
    server->End();
    pick = std::move(next);
    server = pick.server;
    server->Begin();
    build_head();
  };
  auto next_attempt = [&]() -> asio::awaitable<bool> {
    if (auto wait = RetryWait(*retry, retries); wait.count() > 0) {
      asio::steady_timer t(w.ioc, wait);
      co_await t.async_wait(kTuple);
    }
    ++retries;
    outcome.retries = retries;
    refused.clear();
    Selection again = route.backend->Choose(nullptr, x.client_ip);
    if (!again.server) co_return false;
    move_to(std::move(again));
    co_return true;
  };

  // buffering's retryExpression (oxy's buffer): after an attempt whose answer it holds — a
  // response read whole, or the 502/504 a server that cannot be reached or does not answer gets —
  // the request goes again, to a fresh pick, while the predicate holds (attempts from 1; none
  // after the 10th, as oxy).
  const std::optional<ResponseBuffering> buffering = ResponseBufferingOf(route.chain);
  const RetryExpression* const buffer_retry = buffering ? buffering->retry : nullptr;
  int buffer_attempt = 1;
  auto resend = [&](int code) {
    if (buffer_retry == nullptr || buffer_attempt > kMaxBufferAttempts ||
        !buffer_retry->Matches({.method = x.method, .attempt = buffer_attempt, .response_code = code}))
      return false;
    Selection again = route.backend->Choose(nullptr, x.client_ip);
    if (!again.server) return false;
    ++buffer_attempt;
    refused.clear();
    move_to(std::move(again));
    return true;
  };

  for (int attempt = 0;; ++attempt) {
    outcome.answered = pick.leaf;
    const UpstreamTransport* transport = pick.leaf->transport.get();
    std::optional<Upstream> up = TakeIdle(w, server, transport);
    bool connect_timed_out = false;
    if (!up) up = co_await Connect(w, server, pick.leaf->transport, &connect_timed_out);
    if (!up) {
      // Nothing was sent: another routable server may take the request (a task that has just
      // died, a server still binding its port).
      refused.push_back(server.get());
      Selection other;
      for (size_t i = 0, n = route.backend->ServerCount(); i < n && !other.server; ++i) {
        Selection candidate = route.backend->Choose(nullptr, x.client_ip);
        if (candidate.server &&
            std::find(refused.begin(), refused.end(), candidate.server.get()) == refused.end())
          other = std::move(candidate);
      }
      if (other.server) {
        move_to(std::move(other));
        --attempt;  // a refused connect is not the stale-connection retry
        continue;
      }
      if (may_retry() && !retry->disable_retry_on_network_error && co_await next_attempt()) {
        attempt = -1;
        continue;
      }
      if (resend(connect_timed_out ? 504 : 502)) {
        attempt = -1;
        continue;
      }
      if (connect_timed_out) {  // Go's dial timeout is a net.Error whose Timeout() is true: Traefik's 504
        gateway_timeout_.fetch_add(1, std::memory_order_relaxed);
        co_return co_await OwnAnswer(w, client, x, outcome, 504, "Gateway Timeout", keep_alive);
      }
      bad_gateway_.fetch_add(1, std::memory_order_relaxed);
      co_return co_await OwnAnswer(w, client, x, outcome, 502, "Bad Gateway", keep_alive);
    }
    // Traefik's responseHeaderTimeout: the request sent and the response's head read within it.
    if (const auto limit = transport ? transport->response_header_timeout : options_.upstream_response_timeout;
        limit.count() > 0)
      up->stream->deadline.After(limit);
    tcp::socket& upstream = up->stream->socket;
    // An https server's connection: every read and write goes through its TLS (a branch per
    // operation, so the plain path is as it was).
    UpstreamTlsStream* const upstream_tls = up->stream->tls ? &*up->stream->tls : nullptr;
    const bool timed = pick.leaf != nullptr && pick.leaf->strategy == LbStrategy::kLeastTime;
    const auto sent_at = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    error_code wec;
    if (upstream_tls) {
      const std::array<asio::const_buffer, 2> out{asio::buffer(head), asio::buffer(body)};
      auto [e, n] = co_await asio::async_write(*upstream_tls, out, kTuple);
      wec = e;
    } else if (body.empty()) {  // one buffer (without a send ring: send(), not sendmsg())
      const asio::const_buffer out = asio::buffer(head);
      wec = co_await Send(upstream, out);
    } else {
      const std::array<asio::const_buffer, 2> out{asio::buffer(head), asio::buffer(body)};
      wec = co_await Send(upstream, out);
    }
    if (!wec) outcome.request_bytes = body.size();  // the server read it
    bhttp::response_parser<bhttp::buffer_body> rp;
    rp.body_limit(boost::none);
    rp.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    if (head_request) rp.skip(true);
    error_code rec = wec;
    if (!wec && upstream_tls)
      rec = co_await ReadResponseHead(*upstream_tls, up->buffer, rp, options_.max_header_bytes);
    else if (!wec)
      rec = co_await ReadResponseHead(upstream, up->buffer, rp, options_.max_header_bytes);
    if (rec && up->stream->deadline.fired()) {  // Go's net.Error Timeout(): Traefik answers 504
      up.reset();
      if (resend(504)) {
        attempt = -1;
        continue;
      }
      gateway_timeout_.fetch_add(1, std::memory_order_relaxed);
      co_return co_await OwnAnswer(w, client, x, outcome, 504, "Gateway Timeout", keep_alive);
    }
    up->stream->deadline.Never();  // the body is not bounded (Traefik's is not)
    if (rec) {
      // No response came. On a pooled connection the server had closed while it was idle the
      // request never reached it: send it again, once, on a new connection.
      if (up->reused && attempt == 0 && up->buffer.size() == 0 && ClosedWhileIdle(rec)) {
        retried_.fetch_add(1, std::memory_order_relaxed);
        // The rest of this thread's idle connections to the server are as old: drop them too.
        w.idle.erase(server.get());
        continue;
      }
      // A server that refused the handshake's end (TLS 1.3 checks the client's certificate after
      // the client is done): its alert is what this read got.
      if (upstream_tls && rec.category() == asio::error::get_ssl_category())
        UpstreamTlsFailed(fmt::format("remote error: tls: {}", rec.message()));
      if (resend(502)) {
        up.reset();
        attempt = -1;
        continue;
      }
      bad_gateway_.fetch_add(1, std::memory_order_relaxed);
      co_return co_await OwnAnswer(w, client, x, outcome, 502, "Bad Gateway", keep_alive);
    }

    if (timed)  // leasttime's measure: the response's first byte (its head, here) after the request went
      server->RecordResponseTime(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - sent_at));
    // The response's head, as the client gets it.
    auto& res = rp.get();
    const int status = static_cast<int>(res.result_int());
    if (status == 101) co_return co_await SwitchProtocols(w, client, *up, res, upgrade, pick.set_cookies, outcome);
    // failover.errors: the main's answer has one of the failover's statuses: dropped, and the
    // request goes to the fallback.
    if (const Backend* level = pick.failover; level && InRanges(level->failover_statuses, status)) {
      up.reset();  // its body unread: the connection is closed, not pooled
      Selection fallback = level->ChooseFallback(&x.headers, x.client_ip);
      if (!fallback.server) {
        unavailable_.fetch_add(1, std::memory_order_relaxed);
        co_return co_await OwnAnswer(w, client, x, outcome, 503, fallback.unavailable, keep_alive);
      }
      refused.clear();
      move_to(std::move(fallback));
      attempt = -1;
      continue;
    }
    if (retry && !retry->status.empty() && may_retry() &&
        (retry->retry_non_idempotent_method || (x.method != "POST" && x.method != "PATCH" && x.method != "LOCK")) &&
        static_cast<int64_t>(body.size()) <= retry->max_request_body_bytes &&
        InRanges(retry->status, status)) {
      up.reset();  // its body unread: the connection is closed, not pooled
      if (co_await next_attempt()) {
        attempt = -1;
        continue;
      }
      unavailable_.fetch_add(1, std::memory_order_relaxed);
      co_return co_await OwnAnswer(w, client, x, outcome, 503, "no available server\n", keep_alive);
    }
    const bool no_body = head_request || status / 100 == 1 || status == 204 || status == 304;
    // buffering: the whole body in hand before anything goes to the client (edge/proxy/buffering.h),
    // held in memory: at most the chain's maxResponseBodyBytes and the edge's own bound, and taken
    // from the body budget as it comes (given back when this attempt is done with it).
    std::optional<std::string> buffered;
    BodyReservation buffered_held(buffered_bytes_);
    if (buffering) {
      buffered.emplace();
      const uint64_t configured = static_cast<uint64_t>(buffering->max_bytes);
      const uint64_t max = configured > 0 ? std::min<uint64_t>(configured, options_.max_buffered_response_bytes)
                                          : options_.max_buffered_response_bytes;
      uint64_t seen = no_body ? 0 : rp.content_length().value_or(0);
      bool too_large = seen > max;
      if (!no_body && !too_large) {
        auto piece = std::make_unique<char[]>(kRelayChunk);
        while (!rp.is_done()) {
          res.body().data = piece.get();
          res.body().size = kRelayChunk;
          auto [bec, bn] = co_await ReadSomeFrom(upstream, upstream_tls, up->buffer, rp);
          if (bec == bhttp::error::need_buffer) bec = {};
          // A server that breaks off mid-body: Go's ReverseProxy aborts the handler, and the client's
          // connection is closed without an answer.
          if (bec) co_return false;
          const size_t got = kRelayChunk - res.body().size;
          if (!buffered_held.Take(got, options_.max_buffered_request_bytes)) {
            too_large = true;  // the edge's body budget is spent: as over the limit
            break;
          }
          buffered->append(piece.get(), got);
          seen = buffered->size();
          if (seen > max) {
            too_large = true;
            break;
          }
        }
      }
      if (!too_large && resend(status)) {
        up.reset();
        attempt = -1;
        continue;
      }
      if (too_large) {
        up.reset();  // its body unread: closed, not pooled
        Answer answer = ResponseTooLarge();
        for (size_t j = ResponseTooLargeStep(route.chain, seen); j-- > 0;)
          if (route.chain[j].middleware) route.chain[j].middleware->OnResponse(x, answer.status, answer.headers);
        co_return co_await WriteAll(client, Answered(outcome, answer.status, "", answer.body, keep_alive,
                                                     answer.headers, false)) &&
            keep_alive;
      }
    }
    // errors: a status an errors step the request passed catches gets its page instead.
    if (const Step* catcher = ErrorStepFor(outcome.error_steps, status)) {
      up.reset();  // its body unread: closed, not pooled
      co_return co_await ServeErrorPage(w, client, x, *catcher, status, keep_alive, outcome);
    }
    outcome.status = status;
    if (IsGrpcProtocol(outcome.protocol)) outcome.grpc_status = GrpcStatusCode(res["Grpc-Status"]);
    // compress (edge/compress.h): a chosen encoding adds Vary; whether the body is encoded is decided
    // on its first bytes, read ahead into `ahead` (from the body budget, at most the buffered
    // response's bound: past it the response goes as it is).
    const CompressPlan& plan = outcome.compress;
    const bool vary = plan.encoding != Encoding::kIdentity;
    std::string ahead;
    BodyReservation ahead_held(buffered_bytes_);
    bool encode = false;
    std::string sniffed_type;
    if (vary && !no_body) {
      const ResponseFacts facts{.content_encoding = res[bhttp::field::content_encoding],
                                .content_type = res[bhttp::field::content_type],
                                .has_content_type = res.find(bhttp::field::content_type) != res.end(),
                                .content_range = res[bhttp::field::content_range],
                                .content_length = res[bhttp::field::content_length],
                                .no_gzip_compression = res.find("No-Gzip-Compression") != res.end()};
      // Go's ReverseProxy flushes each write of a response without a length, or of an event stream.
      bool flushed = !rp.content_length();
      if (StatusOr<MediaType> m = ParseMediaType(facts.content_type); m.ok() && m->type == "text/event-stream")
        flushed = true;
      if (buffered) {
        encode = DecideCompression(plan, facts, *buffered, true, &sniffed_type) == CompressVerdict::kCompress;
      } else {
        auto piece = std::make_unique<char[]>(kRelayChunk);
        for (;;) {
          const CompressVerdict verdict =
              DecideCompression(plan, facts, ahead, rp.is_done(), &sniffed_type, flushed);
          if (verdict != CompressVerdict::kNeedMore) {
            encode = verdict == CompressVerdict::kCompress;
            break;
          }
          res.body().data = piece.get();
          res.body().size = kRelayChunk;
          auto [aec, an] = co_await ReadSomeFrom(upstream, upstream_tls, up->buffer, rp);
          if (aec == bhttp::error::need_buffer) aec = {};
          if (aec) co_return false;  // a server that broke off: as mid-body, the client's connection closes
          const size_t got = kRelayChunk - res.body().size;
          const bool within = ahead_held.Take(got, options_.max_buffered_request_bytes) &&
                              ahead.size() + got <= options_.max_buffered_response_bytes;
          ahead.append(piece.get(), got);
          if (!within) break;  // the edge's bound: relayed as it is
        }
      }
    }
    // An encoder's memory comes from the body budget too: past it the response goes as it is.
    BodyReservation encoder_held(buffered_bytes_);
    std::unique_ptr<Compressor> encoder =
        encode && encoder_held.Take(CompressorMemory(plan.encoding), options_.max_buffered_request_bytes)
            ? MakeCompressor(plan.encoding)
            : nullptr;
    encode = encoder != nullptr;
    bool chunked_out = false;
    bool keep = keep_alive;
    std::string out_head;
    out_head.reserve(512);
    out_head += "HTTP/1.1 "sv;
    AppendDecimal(out_head, static_cast<uint64_t>(status));
    out_head += ' ';
    std::string_view reason = res.reason();
    out_head += reason.empty() ? Reason(status) : reason;
    out_head += "\r\n"sv;
    if (vary) out_head += "Vary: Accept-Encoding\r\n"sv;  // Traefik's compress adds it before the server's
    std::string_view res_connection = res[bhttp::field::connection];
    HeaderList changed;
    bool any_response_middleware = false;
    for (const Step& step : route.chain)
      if (step.middleware) any_response_middleware = true;
    if (!cookies.empty()) any_response_middleware = true;
    // New sticky cookies for the levels whose cookie did not name what was picked (none, a stale or
    // bogus one, an older form, or another server took the request after a refusal or a retry).
    if (!pick.set_cookies.empty()) any_response_middleware = true;
    std::string_view content_length;
    if (any_response_middleware) {
      // Traefik's balancer sets its cookie before the backend's headers are copied in.
      for (const std::string& c : pick.set_cookies) changed.emplace_back("Set-Cookie", c);
      for (const auto& field : res) changed.emplace_back(std::string(field.name_string()), std::string(field.value()));
      for (const Step& step : route.chain)
        if (step.middleware) step.middleware->OnResponse(x, status, changed);
      for (const auto& [auth, set] : cookies) auth->ApplyCookies(set, changed);
    }
    // `parsed`: as the parser read it, which took only a token for a name and no CR or LF in a value.
    auto emit = [&](std::string_view n, std::string_view v, bool parsed) {
      if (HopByHop(n) || (!res_connection.empty() && mw::TokenListHas(res_connection, n)) || (!parsed && !SafeHeader(n, v)))
        return;
      // gzhttp drops Accept-Ranges from what it gzips, and its No-Gzip-Compression always.
      if (plan.encoding == Encoding::kGzip &&
          ((encode && IEquals(n, "accept-ranges")) || IEquals(n, "no-gzip-compression")))
        return;
      if (IEquals(n, "content-length")) {
        content_length = v;
        return;
      }
      out_head += n;
      out_head += ": "sv;
      out_head += v;
      out_head += "\r\n"sv;
    };
    if (any_response_middleware) {
      for (const auto& [n, v] : changed) emit(n, v, false);
      for (const auto& [n, v] : x.response_headers_to_set) emit(n, v, false);
    } else {
      for (const auto& field : res) emit(field.name_string(), field.value(), true);
    }
    if (encode) {
      out_head += "Content-Encoding: "sv;
      out_head += EncodingName(plan.encoding);
      out_head += "\r\n"sv;
    }
    if (!sniffed_type.empty()) {  // gzhttp's: a response without Content-Type gets the sniffed one
      out_head += "Content-Type: "sv;
      out_head += sniffed_type;
      out_head += "\r\n"sv;
    }
    // An encoded body in hand (buffered, or all read ahead) goes with its length; one still coming
    // is chunked (HTTP/1.1) or ends with the connection.
    std::optional<std::string> encoded_whole;
    if (encoder && (buffered || rp.is_done())) {
      encoded_whole.emplace();
      co_await EncodeSliced(w.ioc, *encoder, buffered ? std::string_view(*buffered) : std::string_view(ahead),
                            *encoded_whole);
      encoder->Finish(*encoded_whole);
      if (encoder->failed()) co_return false;  // nothing sent yet: the client's connection closes
    }
    if (encoded_whole) {
      out_head += "Content-Length: "sv;
      AppendDecimal(out_head, encoded_whole->size());
      out_head += "\r\n"sv;
    } else if (encoder) {
      if (client_version >= 11) {
        out_head += "Transfer-Encoding: chunked\r\n"sv;
        chunked_out = true;
      } else {
        keep = false;
      }
    } else if (no_body) {
      if (head_request && !content_length.empty()) {
        out_head += "Content-Length: "sv;
        out_head += content_length;
        out_head += "\r\n"sv;
      }
    } else if (buffered) {
      out_head += "Content-Length: "sv;
      AppendDecimal(out_head, buffered->size());
      out_head += "\r\n"sv;
    } else if (rp.content_length()) {
      out_head += "Content-Length: "sv;
      AppendDecimal(out_head, *rp.content_length());
      out_head += "\r\n"sv;
    } else if (client_version >= 11) {
      out_head += "Transfer-Encoding: chunked\r\n"sv;
      chunked_out = true;
    } else {
      keep = false;  // an HTTP/1.0 client reads to the close
    }
    if (!keep) out_head += "Connection: close\r\n"sv;
    out_head += "\r\n"sv;

    // The body, as it arrives; the head goes with its first piece.
    std::unique_ptr<char[]> chunk;
    bool upstream_ok = true;
    bool client_ok = true;
    bool whole = rp.is_done();  // the response is all relayed (or, below, all in hand)
    if (encoded_whole) {  // compress: the whole body encoded, with its length
      const std::array<asio::const_buffer, 2> pieces{asio::buffer(out_head), asio::buffer(*encoded_whole)};
      error_code ec = co_await Send(client, pieces);
      client_ok = !ec;
      if (client_ok) outcome.response_bytes = encoded_whole->size();
      whole = true;
    } else if (encoder || !ahead.empty()) {
      // compress's read-ahead goes first (encoded, or as it came), then the rest as it arrives,
      // each piece encoded and flushed (Traefik flushes too: its ReverseProxy every 100 ms).
      bool head_sent = false;
      auto send_out = [&](std::string_view data, bool last) -> asio::awaitable<bool> {
        std::string framed;
        if (!head_sent) {
          framed = out_head;
          head_sent = true;
        }
        if (chunked_out) {
          if (!data.empty()) {
            framed += fmt::format("{:x}\r\n", data.size());
            framed += data;
            framed += "\r\n"sv;
          }
          if (last) framed += "0\r\n\r\n"sv;
        } else {
          framed += data;
        }
        if (framed.empty()) co_return true;
        co_return co_await WriteAll(client, framed);
      };
      std::string out;
      if (encoder) {
        co_await EncodeSliced(w.ioc, *encoder, ahead, out);
        encoder->Flush(out);
      } else {
        out = std::move(ahead);
      }
      outcome.response_bytes += out.size();
      if (encoder && encoder->failed()) {
        client_ok = false;
      } else {
        client_ok = co_await send_out(out, rp.is_done());
      }
      // What was read ahead is out: its memory and its share of the budget go back.
      std::string().swap(ahead);
      std::string().swap(out);
      ahead_held.Keep(0);
      auto piece = std::make_unique<char[]>(kRelayChunk);
      while (client_ok && !rp.is_done()) {
        res.body().data = piece.get();
        res.body().size = kRelayChunk;
        auto [bec, bn] = co_await ReadSomeFrom(upstream, upstream_tls, up->buffer, rp);
        if (bec == bhttp::error::need_buffer) bec = {};
        if (bec) {
          upstream_ok = false;
          break;
        }
        const size_t got = kRelayChunk - res.body().size;
        const bool last = rp.is_done();
        out.clear();
        if (encoder) {
          encoder->Write(std::string_view(piece.get(), got), out);
          if (last)
            encoder->Finish(out);
          else
            encoder->Flush(out);
        } else {
          out.assign(piece.get(), got);
        }
        outcome.response_bytes += out.size();
        if (encoder && encoder->failed()) {
          client_ok = false;
        } else {
          client_ok = co_await send_out(out, last);
        }
      }
      whole = upstream_ok && rp.is_done();
    } else if (buffered) {
      std::array<asio::const_buffer, 2> pieces{asio::buffer(out_head),
                                               no_body ? asio::const_buffer() : asio::buffer(*buffered)};
      error_code ec = co_await Send(client, pieces);
      client_ok = !ec;
      if (client_ok && !no_body) outcome.response_bytes = buffered->size();
      whole = true;
    } else if (whole) {
      client_ok = co_await WriteAll(client, out_head);
    } else if (!chunked_out && !rp.chunked() && rp.content_length() && *rp.content_length() <= up->buffer.size()) {
      // A small body that came with its head (the common case): head and body in one write —
      // of one buffer (send(), not sendmsg()) when it is a few KiB.
      const size_t n = static_cast<size_t>(*rp.content_length());
      const char* body_bytes = static_cast<const char*>(up->buffer.data().data());
      if (n <= kCopiedBody) {
        out_head.append(body_bytes, n);
        const asio::const_buffer whole_answer = asio::buffer(out_head);
        error_code ec = co_await Send(client, whole_answer);
        client_ok = !ec;
      } else {
        const std::array<asio::const_buffer, 2> pieces{asio::buffer(out_head), asio::buffer(body_bytes, n)};
        error_code ec = co_await Send(client, pieces);
        client_ok = !ec;
      }
      if (client_ok) outcome.response_bytes = n;
      up->buffer.consume(n);
      whole = true;
    } else {
      chunk = std::make_unique<char[]>(kRelayChunk);
      bool head_sent = false;
      while (!rp.is_done()) {
        res.body().data = chunk.get();
        res.body().size = kRelayChunk;
        auto [bec, bn] = co_await ReadSomeFrom(upstream, upstream_tls, up->buffer, rp);
        if (bec == bhttp::error::need_buffer) bec = {};
        if (bec) {
          upstream_ok = false;
          break;
        }
        const size_t got = kRelayChunk - res.body().size;
        const bool last = rp.is_done();
        if (got == 0 && !last) continue;
        char pre[24];
        size_t pre_len = 0;
        std::string_view post;
        if (chunked_out) {
          if (got > 0) pre_len = fmt::format_to_n(pre, sizeof(pre), "{:x}\r\n", got).size;
          post = got > 0 ? (last ? std::string_view("\r\n0\r\n\r\n") : std::string_view("\r\n"))
                         : std::string_view("0\r\n\r\n");
        }
        std::array<asio::const_buffer, 4> pieces{head_sent ? asio::const_buffer() : asio::buffer(out_head),
                                                 asio::buffer(pre, pre_len), asio::buffer(chunk.get(), got),
                                                 asio::buffer(post.data(), post.size())};
        head_sent = true;
        error_code ec = co_await Send(client, pieces);
        if (ec) {
          client_ok = false;
          break;
        }
        outcome.response_bytes += got;
      }
      if (!head_sent && client_ok) client_ok = co_await WriteAll(client, out_head);
    }
    outcome.client_gone = !client_ok;
    if (upstream_ok && client_ok && (whole || rp.is_done()) && rp.keep_alive()) Park(w, std::move(*up), transport);
    // A server that broke off mid-body leaves the client a truncated response: close its connection.
    co_return upstream_ok && client_ok && keep;
  }
}

}  // namespace paddock::edge

namespace paddock::edge {

Proxy::Proxy(ProxyOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Proxy::~Proxy() = default;
StatusOr<std::map<std::string, uint16_t>> Proxy::Start() { return impl_->Start(); }
void Proxy::Stop(std::chrono::milliseconds grace) { impl_->Stop(grace); }
void Proxy::SetTable(std::shared_ptr<const Table> table) { impl_->SetTable(std::move(table)); }
std::shared_ptr<const Table> Proxy::table() const { return impl_->table(); }
ProxyCounters Proxy::counters() const { return impl_->counters(); }
std::string Proxy::LastUpstreamError() const { return impl_->LastUpstreamError(); }
MetricsSnapshot Proxy::Metrics() const { return impl_->Metrics(); }

}  // namespace paddock::edge
