// Each blocking call runs one asynchronous operation on a private io_context, so that
// beast::tcp_stream's expiry bounds every connect, write and read.
#include "http/client.h"

#include <array>
#include <atomic>
#include <charconv>
#include <optional>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

namespace paddock::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr uint32_t kMaxResponseHeaderBytes = 1 << 20;

// True if `ec` means the server closed the connection, which a kept-alive connection may see
// when the server timed it out just before we reused it.
bool PeerClosed(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == bhttp::error::end_of_stream;
}

void AppendDecimal(std::string& out, uint64_t v) {
  char buf[20];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

}  // namespace

class Client::Impl {
 public:
  Impl(std::string host, uint16_t port, std::chrono::milliseconds timeout)
      : host_(std::move(host)), port_(port), timeout_(timeout), stream_(ioc_) {
    host_header_ = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
    host_header_ += ':';
    AppendDecimal(host_header_, port_);
  }

  StatusOr<Response> Send(const Request& req) {
    if (cancelled_.load()) return Unavailable("cancelled");
    BuildHead(req);
    const bool head_request = req.method == "HEAD";
    for (int attempt = 0;; ++attempt) {
      const bool reused = connected_;
      if (!connected_) RETURN_IF_ERROR(Connect());
      const bool may_retry = reused && attempt == 0;

      std::array<asio::const_buffer, 2> buffers{asio::buffer(head_), asio::buffer(req.body)};
      error_code ec;
      stream_.expires_after(timeout_);
      asio::async_write(stream_, buffers, [&ec](error_code write_ec, size_t) { ec = write_ec; });
      Run();
      if (ec) {
        Disconnect();
        if (may_retry && PeerClosed(ec)) continue;
        return Failure("sending a request to", ec);
      }

      bhttp::response_parser<bhttp::string_body> parser;
      if (max_body_)
        parser.body_limit(*max_body_);
      else
        parser.body_limit(boost::none);
      parser.header_limit(kMaxResponseHeaderBytes);
      if (head_request) parser.skip(true);
      stream_.expires_after(timeout_);
      bhttp::async_read(stream_, buffer_, parser, [&ec](error_code read_ec, size_t) { ec = read_ec; });
      Run();
      if (ec) {
        bool retry = may_retry && !parser.got_some() && PeerClosed(ec);
        Disconnect();
        if (retry) continue;
        if (ec == bhttp::error::body_limit)
          return ResourceExhausted("the response from " + host_header_ + " is longer than " +
                                   std::to_string(*max_body_) + " bytes");
        return Failure("reading a response from", ec);
      }
      if (!parser.keep_alive()) Disconnect();

      auto msg = parser.release();
      Response resp;
      resp.status = static_cast<int>(msg.result_int());
      resp.headers.reserve(static_cast<size_t>(std::distance(msg.begin(), msg.end())));
      for (const auto& field : msg) {
        resp.headers.push_back({std::string(field.name_string()), std::string(field.value())});
      }
      resp.body = std::move(msg.body());
      return resp;
    }
  }

 private:
  Status Connect() {
    error_code ec;
    if (!endpoints_) {
      tcp::resolver resolver(ioc_);
      auto results = resolver.resolve(host_, std::to_string(port_), tcp::resolver::numeric_service, ec);
      if (ec) return Unavailable("cannot resolve " + host_header_ + ": " + ec.message());
      endpoints_ = std::move(results);
    }
    stream_.expires_after(timeout_);
    stream_.async_connect(*endpoints_, [&ec](error_code connect_ec, const tcp::endpoint&) { ec = connect_ec; });
    Run();
    if (ec) {
      Disconnect();
      return Failure("connecting to", ec);
    }
    error_code ignored;
    stream_.socket().set_option(tcp::no_delay(true), ignored);
    connected_ = true;
    return OkStatus();
  }

  void Disconnect() {
    stream_.close();
    buffer_.clear();
    connected_ = false;
  }

  void Run() {
    ioc_.restart();
    ioc_.run();
    if (cancelled_.load()) Disconnect();
  }

 public:
  void Cancel() {
    cancelled_.store(true);
    // Runs on the thread inside Send's Run (or at the next Run, which then fails at once).
    asio::post(ioc_, [this] { stream_.cancel(); });
  }
  void set_max_response_body(uint64_t bytes) { max_body_ = bytes; }

 private:

  Status Failure(std::string_view what, const error_code& ec) const {
    std::string message(what);
    message += ' ';
    message += host_header_;
    message += ": ";
    if (ec == beast::error::timeout) {
      message += "timed out after " + std::to_string(timeout_.count()) + " ms";
    } else {
      message += ec.message();
    }
    return Unavailable(std::move(message));
  }

  void BuildHead(const Request& req) {
    head_.clear();
    head_ += req.method.empty() ? std::string_view("GET") : std::string_view(req.method);
    head_ += ' ';
    head_ += req.target.empty() ? std::string_view("/") : std::string_view(req.target);
    head_ += " HTTP/1.1\r\n";
    if (!req.HasHeader("Host")) {
      head_ += "Host: ";
      head_ += host_header_;
      head_ += "\r\n";
    }
    for (const Header& h : req.headers) {
      if (EqualsIgnoreCase(h.name, "Content-Length") || EqualsIgnoreCase(h.name, "Transfer-Encoding")) continue;
      head_ += h.name;
      head_ += ": ";
      head_ += h.value;
      head_ += "\r\n";
    }
    head_ += "Content-Length: ";
    AppendDecimal(head_, req.body.size());
    head_ += "\r\n\r\n";
  }

  const std::string host_;
  const uint16_t port_;
  const std::chrono::milliseconds timeout_;
  std::string host_header_;  // "host:port"
  asio::io_context ioc_{1};
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string head_;  // reused
  bool connected_ = false;
  std::atomic<bool> cancelled_{false};
  std::optional<tcp::resolver::results_type> endpoints_;
  std::optional<uint64_t> max_body_;
};

Client::Client(std::string host, uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(std::move(host), port, timeout)) {}

Client::~Client() = default;

StatusOr<Response> Client::Send(const Request& req) { return impl_->Send(req); }

void Client::Cancel() { impl_->Cancel(); }

void Client::set_max_response_body(uint64_t bytes) { impl_->set_max_response_body(bytes); }

}  // namespace paddock::http
