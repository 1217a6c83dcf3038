// edge/proxy/client_stream: a client connection of an entry point — plain TCP, or TLS once its
// first bytes opened a handshake (Traefik serves both on one entry point and tells them apart by
// the first byte). One type for the proxy's request path, an Asio AsyncReadStream and
// AsyncWriteStream whichever it is; deadlines and cancellation are the TCP socket's (tcp()).
//
//   ClientStream client(std::move(socket));
//   ... read the first bytes into `buffer` through client.tcp() ...
//   if (first byte == 0x16) co_await client.Handshake(SSL_new(certificates->context()), buffer);
//   co_await bhttp::async_read_header(client, buffer, parser, ...);
#pragma once

#include <openssl/ssl.h>

#include <optional>
#include <string>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace paddock::edge {

// Sends what `socket` takes at once, without waiting (the socket is made non-blocking): the bytes
// sent, all of them usually — an answer fits a socket's send buffer. A full buffer is not an error
// (fewer bytes, `ec` clear); what is left goes through an asynchronous write.
template <typename ConstBuffers>
std::size_t SendNow(boost::asio::ip::tcp::socket& socket, const ConstBuffers& buffers, boost::system::error_code& ec) {
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  if (ec) return 0;
  std::size_t n = socket.write_some(buffers, ec);
  if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) ec = {};
  return n;
}

class ClientStream {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;

  explicit ClientStream(boost::asio::ip::tcp::socket tcp) : tcp_(std::move(tcp)) {}
  ClientStream(const ClientStream&) = delete;
  ClientStream& operator=(const ClientStream&) = delete;

  executor_type get_executor() noexcept { return tcp_.get_executor(); }
  boost::asio::ip::tcp::socket& tcp() { return tcp_; }
  bool is_tls() const { return tls_.has_value(); }
  // The negotiated version and cipher as Traefik's metrics name them ("1.3"; the IANA name,
  // "TLS_AES_128_GCM_SHA256", as Go's); empty on plain connections.
  std::string TlsVersion() {
    if (!tls_) return "";
    switch (SSL_version(tls_->native_handle())) {
      case TLS1_VERSION: return "1.0";
      case TLS1_1_VERSION: return "1.1";
      case TLS1_2_VERSION: return "1.2";
      case TLS1_3_VERSION: return "1.3";
      default: return "unknown";
    }
  }
  // The connection's OpenSSL object; null on plain connections.
  SSL* ssl() { return tls_ ? tls_->native_handle() : nullptr; }
  std::string TlsCipher() {
    if (!tls_) return "";
    const SSL_CIPHER* c = SSL_get_current_cipher(tls_->native_handle());
    const char* name = c ? SSL_CIPHER_standard_name(c) : nullptr;
    return name ? name : "unknown";
  }

  // Serves the connection over TLS from here on: the server handshake on `ssl` (owned from here),
  // given the bytes already read (`read`, all consumed). False when it fails.
  boost::asio::awaitable<bool> Handshake(SSL* ssl, boost::beast::flat_buffer& read) {
    tls_.emplace(tcp_, ssl);
    auto [ec, n] = co_await tls_->async_handshake(boost::asio::ssl::stream_base::server, read.data(),
                                                  boost::asio::as_tuple(boost::asio::use_awaitable));
    read.consume(read.size());
    co_return !ec;
  }

  // Sends TLS's close_notify (waiting at most the socket's current deadline); nothing on plain TCP.
  boost::asio::awaitable<void> ShutdownTls() {
    if (tls_) co_await tls_->async_shutdown(boost::asio::as_tuple(boost::asio::use_awaitable));
  }

  // SendNow on the socket — plain TCP only: over TLS nothing is sent here (0), and everything goes
  // through async_write_some.
  template <typename ConstBuffers>
  std::size_t SendNow(const ConstBuffers& buffers, boost::system::error_code& ec) {
    return tls_ ? 0 : paddock::edge::SendNow(tcp_, buffers, ec);
  }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          if (tls_)
            tls_->async_read_some(b, std::move(handler));
          else
            tcp_.async_read_some(b, std::move(handler));
        },
        token, buffers);
  }

  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          if (tls_)
            tls_->async_write_some(b, std::move(handler));
          else
            tcp_.async_write_some(b, std::move(handler));
        },
        token, buffers);
  }

 private:
  boost::asio::ip::tcp::socket tcp_;
  std::optional<TlsStream> tls_;
};

}  // namespace paddock::edge
