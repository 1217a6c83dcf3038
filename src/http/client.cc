// Each blocking call runs one asynchronous operation on a private io_context, so that
// beast::tcp_stream's expiry bounds every connect, handshake, write and read. Over TLS the
// tcp_stream is the lowest layer of an ssl::stream made afresh for each connection.
#include "http/client.h"

#include <array>
#include <atomic>
#include <charconv>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

namespace paddock::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr uint32_t kMaxResponseHeaderBytes = 1 << 20;

// True if `ec` means the server closed the connection, which a kept-alive connection may see
// when the server timed it out just before we reused it.
bool PeerClosed(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted || ec == bhttp::error::end_of_stream ||
         ec == ssl::error::stream_truncated;
}

void AppendDecimal(std::string& out, uint64_t v) {
  char buf[20];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

// OpenSSL's oldest queued error as text, and the queue emptied (a stale error would be taken for
// a later call's).
std::string TakeOpenSslError() {
  const char* reason = ERR_reason_error_string(ERR_peek_error());
  std::string out = reason ? reason : "unknown error";
  ERR_clear_error();
  return out;
}

StatusOr<std::shared_ptr<ssl::context>> MakeTlsContext(const ClientTlsOptions& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);  // Go's client minimum
  SSL_CTX_set_verify(native, o.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  if (o.ca_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(native) != 1)
      return Internal("cannot load the system's certificate authorities: " + TakeOpenSslError());
  } else {
    X509_STORE* store = X509_STORE_new();
    if (!store) return Internal("out of memory");
    SSL_CTX_set_cert_store(native, store);  // owned by the context from here
    BIO* bio = BIO_new_mem_buf(o.ca_pem.data(), static_cast<int>(o.ca_pem.size()));
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      if (X509_STORE_add_cert(store, cert) == 1) ++added;
      X509_free(cert);
    }
    BIO_free(bio);
    ERR_clear_error();  // the end of the PEM data is reported as an error
    if (added == 0) return InvalidArgument("the certificate authority holds no PEM certificate");
  }
  if (o.cert_pem.empty() != o.key_pem.empty())
    return InvalidArgument(o.cert_pem.empty() ? "a client key needs its certificate"
                                              : "a client certificate needs its key");
  if (!o.cert_pem.empty()) {
    error_code ec;
    ctx->use_certificate_chain(asio::buffer(o.cert_pem), ec);
    if (ec) {
      ERR_clear_error();
      return InvalidArgument("the client certificate is not a PEM certificate: " + ec.message());
    }
    ctx->use_private_key(asio::buffer(o.key_pem), ssl::context::pem, ec);
    if (ec) {
      ERR_clear_error();
      return InvalidArgument("the client key is not a PEM private key matching the certificate: " + ec.message());
    }
    if (SSL_CTX_check_private_key(native) != 1)
      return InvalidArgument("the client key is not the certificate's: " + TakeOpenSslError());
  }
  return ctx;
}

}  // namespace

class Client::Impl {
 public:
  Impl(std::string host, uint16_t port, std::chrono::milliseconds timeout,
       std::shared_ptr<ssl::context> tls_context = nullptr)
      : host_(std::move(host)), port_(port), timeout_(timeout), stream_(ioc_), tls_context_(std::move(tls_context)) {
    host_header_ = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
    // Over TLS to 443, Host is the bare name, as Go's client writes it (and as virtual hosts match it).
    if (!tls_context_ || port_ != 443) {
      host_header_ += ':';
      AppendDecimal(host_header_, port_);
    }
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
      Tcp().expires_after(timeout_);
      WithStream([&](auto& stream) {
        asio::async_write(stream, buffers, [&ec](error_code write_ec, size_t) { ec = write_ec; });
      });
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
      Tcp().expires_after(timeout_);
      WithStream([&](auto& stream) {
        bhttp::async_read(stream, buffer_, parser, [&ec](error_code read_ec, size_t) { ec = read_ec; });
      });
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

  StatusOr<Response> Stream(const Request& req, const std::function<bool(std::string_view)>& on_body) {
    if (cancelled_.load()) return Unavailable("cancelled");
    BuildHead(req);
    for (int attempt = 0;; ++attempt) {
      const bool reused = connected_;
      if (!connected_) RETURN_IF_ERROR(Connect());
      const bool may_retry = reused && attempt == 0;
      std::array<asio::const_buffer, 2> buffers{asio::buffer(head_), asio::buffer(req.body)};
      error_code ec;
      Tcp().expires_after(timeout_);
      WithStream([&](auto& stream) {
        asio::async_write(stream, buffers, [&ec](error_code write_ec, size_t) { ec = write_ec; });
      });
      Run();
      if (ec) {
        Disconnect();
        if (may_retry && PeerClosed(ec)) continue;
        return Failure("sending a request to", ec);
      }
      bhttp::response_parser<bhttp::buffer_body> parser;
      parser.body_limit(boost::none);
      parser.header_limit(kMaxResponseHeaderBytes);
      Tcp().expires_after(timeout_);
      WithStream([&](auto& stream) {
        bhttp::async_read_header(stream, buffer_, parser, [&ec](error_code read_ec, size_t) { ec = read_ec; });
      });
      Run();
      if (ec) {
        bool retry = may_retry && !parser.got_some() && PeerClosed(ec);
        Disconnect();
        if (retry) continue;
        return Failure("reading a response from", ec);
      }
      Response resp;
      resp.status = static_cast<int>(parser.get().result_int());
      for (const auto& field : parser.get()) {
        resp.headers.push_back({std::string(field.name_string()), std::string(field.value())});
      }
      const bool streamed = resp.status >= 200 && resp.status < 300;
      std::array<char, 16 << 10> piece;
      while (!parser.is_done()) {
        parser.get().body().data = piece.data();
        parser.get().body().size = piece.size();
        Tcp().expires_after(timeout_);
        WithStream([&](auto& stream) {
          bhttp::async_read_some(stream, buffer_, parser, [&ec](error_code read_ec, size_t) { ec = read_ec; });
        });
        Run();
        if (ec == bhttp::error::need_buffer) ec = {};
        if (ec) {
          Disconnect();
          return Failure("reading a response from", ec);
        }
        const std::string_view got(piece.data(), piece.size() - parser.get().body().size);
        if (got.empty()) continue;
        if (!streamed) {
          if (max_body_ && resp.body.size() + got.size() > *max_body_) {
            Disconnect();
            return ResourceExhausted("the response from " + host_header_ + " is longer than " +
                                     std::to_string(*max_body_) + " bytes");
          }
          resp.body.append(got);
        } else if (!on_body(got)) {
          Disconnect();
          return resp;
        }
      }
      if (!parser.keep_alive()) Disconnect();
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
    if (tls_context_) {
      tls_.emplace(ioc_, *tls_context_);
      SSL* ssl = tls_->native_handle();
      error_code not_ip;
      asio::ip::make_address(host_, not_ip);
      if (not_ip) {
        SSL_set_tlsext_host_name(ssl, host_.c_str());
        SSL_set1_host(ssl, host_.c_str());
      } else {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host_.c_str());
      }
    }
    Tcp().expires_after(timeout_);
    Tcp().async_connect(*endpoints_, [&ec](error_code connect_ec, const tcp::endpoint&) { ec = connect_ec; });
    Run();
    if (ec) {
      Disconnect();
      return Failure("connecting to", ec);
    }
    error_code ignored;
    Tcp().socket().set_option(tcp::no_delay(true), ignored);
    if (tls_) {
      Tcp().expires_after(timeout_);
      tls_->async_handshake(ssl::stream_base::client, [&ec](error_code handshake_ec) { ec = handshake_ec; });
      Run();
      if (ec) {
        Status failed = Failure("a TLS handshake with", ec);
        if (tls_) {
          const long verify = SSL_get_verify_result(tls_->native_handle());
          if (verify != X509_V_OK)
            failed = Unavailable(std::string(failed.message()) + ": " + X509_verify_cert_error_string(verify));
        }
        ERR_clear_error();
        Disconnect();
        return failed;
      }
    }
    connected_ = true;
    return OkStatus();
  }

  void Disconnect() {
    Tcp().close();
    tls_.reset();  // a TLS session is never reused across connections
    buffer_.clear();
    connected_ = false;
  }

  // The TCP layer of the current connection.
  beast::tcp_stream& Tcp() { return tls_ ? tls_->next_layer() : stream_; }

  // Calls `f` with the stream requests travel on: the TLS one, or the TCP one.
  template <typename F>
  void WithStream(F&& f) {
    if (tls_)
      f(*tls_);
    else
      f(stream_);
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
    asio::post(ioc_, [this] { Tcp().cancel(); });
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
  beast::tcp_stream stream_;  // plain connections
  const std::shared_ptr<ssl::context> tls_context_;  // null: plain
  std::optional<ssl::stream<beast::tcp_stream>> tls_;  // the TLS connection, when there is one
  beast::flat_buffer buffer_;
  std::string head_;  // reused
  bool connected_ = false;
  std::atomic<bool> cancelled_{false};
  std::optional<tcp::resolver::results_type> endpoints_;
  std::optional<uint64_t> max_body_;
};

Client::Client(std::string host, uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(std::move(host), port, timeout)) {}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<Client>> Client::Tls(std::string host, uint16_t port, std::chrono::milliseconds timeout,
                                              const ClientTlsOptions& tls) {
  ASSIGN_OR_RETURN(std::shared_ptr<ssl::context> context, MakeTlsContext(tls));
  return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(std::move(host), port, timeout, std::move(context))));
}

Client::~Client() = default;

StatusOr<Response> Client::Send(const Request& req) { return impl_->Send(req); }

StatusOr<Response> Client::Stream(const Request& req, const std::function<bool(std::string_view)>& on_body) {
  return impl_->Stream(req, on_body);
}

void Client::Cancel() { impl_->Cancel(); }

void Client::set_max_response_body(uint64_t bytes) { impl_->set_max_response_body(bytes); }

}  // namespace paddock::http
