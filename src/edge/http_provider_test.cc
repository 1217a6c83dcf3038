#include "edge/http_provider.h"

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "http/server.h"

namespace paddock::edge {
namespace {
namespace json = boost::json;

TEST(ParseHttpEndpointTest, TakesHttpAndHttps) {
  auto e = ParseHttpEndpoint("http://127.0.0.1:9000/traefik?x=1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 9000);
  EXPECT_EQ(e->target, "/traefik?x=1");
  auto plain = ParseHttpEndpoint("http://config.test");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->port, 80);
  EXPECT_EQ(plain->target, "/");
  auto v6 = ParseHttpEndpoint("http://[::1]:81");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 81);
  EXPECT_FALSE(plain->tls);
  auto tls = ParseHttpEndpoint("https://config.test/x");
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "config.test");
  EXPECT_EQ(tls->port, 443);
  EXPECT_EQ(tls->target, "/x");
  auto tls_port = ParseHttpEndpoint("https://[::1]:8443");
  ASSERT_TRUE(tls_port.ok());
  EXPECT_EQ(tls_port->port, 8443);
  EXPECT_FALSE(ParseHttpEndpoint("https://").ok());
  EXPECT_FALSE(ParseHttpEndpoint("ftp://x").ok());
  EXPECT_FALSE(ParseHttpEndpoint("http://:80").ok());
  EXPECT_FALSE(ParseHttpEndpoint("http://x:99999").ok());
}

TEST(Fnv1Hash64Test, IsGosFnv1) {
  // Go: fnv.New64() of "" and of "a".
  EXPECT_EQ(Fnv1Hash64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1Hash64("a"), 0xaf63bd4c8601b7beULL);
}

class HttpProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, [this](const http::Request& r) {
      std::lock_guard lock(mu_);
      ++requests_;
      last_target_ = r.target;
      last_headers_ = r.headers;
      http::Response resp;
      resp.status = status_;
      resp.body = body_;
      return resp;
    });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok());
    endpoint_ = fmt::format("http://127.0.0.1:{}/dynamic", *port);
  }
  void TearDown() override { server_->Stop(); }
  void Serve(int status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }

  std::unique_ptr<http::Server> server_;
  std::string endpoint_;
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  int requests_ = 0;
  std::string last_target_;
  std::vector<http::Header> last_headers_;
};

TEST_F(HttpProviderTest, TakesAGoodBodySkipsAnUnchangedOneAndKeepsTheLastOnFailure) {
  const std::string first = R"J({"http":{"routers":{"r":{"rule":"Host(`a.test`)","service":"web@ecs","priority":"7"}}}})J";
  Serve(200, first);
  HttpProvider p({.endpoint = endpoint_});
  int wakes = 0;
  p.SetWake([&] { ++wakes; });
  auto polled = p.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(wakes, 1);
  EXPECT_EQ(last_target_, "/dynamic");
  auto c = p.Current();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, json::parse(R"J({"http":{"routers":{"r":{"rule":"Host(`a.test`)","service":"web@ecs","priority":7}}}})J"));

  polled = p.Poll();  // the same bytes: skipped
  ASSERT_TRUE(polled.ok());
  EXPECT_FALSE(*polled);
  EXPECT_EQ(wakes, 1);

  Serve(500, "oops");
  EXPECT_FALSE(p.Poll().ok());
  Serve(200, R"J({"http":{"routers":{"r":{"rul":"x"}}}})J");
  auto refused = p.Poll();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("http.routers.r.rul"), std::string::npos) << refused.status().message();
  Serve(200, "{not json: [");
  EXPECT_FALSE(p.Poll().ok());
  EXPECT_EQ(wakes, 1);
  EXPECT_EQ(*p.Current(), *c);  // the last good one stays

  // YAML, as Traefik's decoder reads it.
  Serve(200, "http:\n  routers:\n    r:\n      rule: Path(`/y`)\n      service: s\n");
  polled = p.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/y`)"));
}

TEST_F(HttpProviderTest, ABodyOverTheLimitIsAnErrorAndTheLastGoodOneStays) {
  const std::string good = R"J({"http":{"routers":{"r":{"rule":"Path(`/a`)","service":"s"}}}})J";
  Serve(200, good);
  HttpProvider p({.endpoint = endpoint_, .max_body_bytes = good.size() + 10});
  ASSERT_TRUE(p.Poll().ok());
  // Valid configuration, one byte over the limit: refused unread, whatever it says.
  std::string padded = R"J({"http":{"routers":{"r":{"rule":"Path(`/b`)","service":"s"}}}})J";
  padded.insert(padded.size() - 1, std::string(good.size() + 11 - padded.size(), ' '));
  ASSERT_EQ(padded.size(), good.size() + 11);
  Serve(200, padded);
  auto refused = p.Poll();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot fetch configuration data: response body too large (the response"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("longer than"), std::string::npos) << refused.status().message();
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/a`)"));
  // At the limit exactly it is taken, on the connection the refusal closed.
  padded.erase(padded.size() - 2, 1);
  Serve(200, padded);
  auto taken = p.Poll();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(p.Current()->at("http").at("routers").at("r").at("rule"), json::value("Path(`/b`)"));
}

TEST_F(HttpProviderTest, StartPollsAtOnceAndRefusesAZeroIntervalOrTimeoutAndABadHeader) {
  Serve(200, R"J({"http":{}})J");
  HttpProvider p({.endpoint = endpoint_, .poll_interval = std::chrono::hours(1)});
  ASSERT_TRUE(p.Start().ok());
  EXPECT_TRUE(p.Current().ok());
  p.Stop();
  EXPECT_FALSE(HttpProvider({.endpoint = "ftp://127.0.0.1/"}).Start().ok());
  EXPECT_FALSE(HttpProvider({.endpoint = endpoint_, .poll_interval = std::chrono::milliseconds(0)}).Start().ok());
  EXPECT_FALSE(HttpProvider({.endpoint = endpoint_, .poll_timeout = std::chrono::milliseconds(0)}).Start().ok());
  Status bad = HttpProvider({.endpoint = endpoint_, .headers = {{"X Bad", "v"}}}).Start();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("'X Bad' is not an HTTP token"), std::string::npos) << bad.message();
  bad = HttpProvider({.endpoint = endpoint_, .headers = {{"X-Ok", "a\r\nInjected: 1"}}}).Start();
  EXPECT_NE(bad.message().find("control character"), std::string::npos) << bad.message();
  EXPECT_EQ(requests_, 1);  // none of the refused ones polled
}

TEST_F(HttpProviderTest, HeadersArriveOnEveryPollAndReplaceTheProvidersOwn) {
  Serve(200, R"J({"http":{}})J");
  HttpProvider p({.endpoint = endpoint_,
                  .headers = {{"Authorization", "Bearer t0ken"}, {"X-Tenant", "a b"}, {"host", "config.example"},
                              {"accept", "application/yaml"}}});
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(p.Poll().ok());
    std::lock_guard lock(mu_);
    http::Request seen;
    seen.headers = last_headers_;
    EXPECT_EQ(seen.GetHeader("Authorization"), "Bearer t0ken");
    EXPECT_EQ(seen.GetHeader("X-Tenant"), "a b");
    int hosts = 0, accepts = 0;
    for (const http::Header& h : last_headers_) {
      hosts += http::EqualsIgnoreCase(h.name, "Host");
      accepts += http::EqualsIgnoreCase(h.name, "Accept");
    }
    EXPECT_EQ(hosts, 1);
    EXPECT_EQ(seen.GetHeader("Host"), "config.example");
    EXPECT_EQ(accepts, 1);
    EXPECT_EQ(seen.GetHeader("Accept"), "application/yaml");
  }
  EXPECT_EQ(requests_, 2);
}

TEST(TakeHttpHeaderFlagsTest, TakesHeaderFlagsAndLeavesTheRest) {
  std::vector<std::string> args = {"--entrypoints.web.http.sanitizepath=false",
                                   "--providers.http.headers.Authorization=Bearer a=b",
                                   "--Providers.HTTP.Headers.X-Tenant", "blue",
                                   "--providers.http.headers.x-tenant=green",
                                   "--providers.http.headers.X-Empty=",
                                   "--entrypoints.web.http.redirections.entrypoint.to", "websecure"};
  std::map<std::string, std::string> headers;
  ASSERT_TRUE(TakeHttpHeaderFlags(args, headers).ok());
  EXPECT_EQ(args, (std::vector<std::string>{"--entrypoints.web.http.sanitizepath=false",
                                            "--entrypoints.web.http.redirections.entrypoint.to", "websecure"}));
  EXPECT_EQ(headers, (std::map<std::string, std::string>{
                         {"Authorization", "Bearer a=b"}, {"x-tenant", "green"}, {"X-Empty", ""}}));

  for (std::vector<std::string> bad : {std::vector<std::string>{"--providers.http.headers.=v"},
                                       std::vector<std::string>{"--providers.http.headers.X-A"},
                                       std::vector<std::string>{"--providers.http.headers.X-A", "--other"},
                                       std::vector<std::string>{"--providers.http.headers.X:A=v"}}) {
    std::vector<std::string> before = bad;
    std::map<std::string, std::string> kept = {{"K", "v"}};
    Status s = TakeHttpHeaderFlags(bad, kept);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << before[0];
    EXPECT_NE(s.message().find(before[0]), std::string::npos) << s.message();
    EXPECT_EQ(bad, before);
    EXPECT_EQ(kept, (std::map<std::string, std::string>{{"K", "v"}}));
  }
}

TEST_F(HttpProviderTest, AnUnreachableEndpointIsAnErrorAndNothingIsCurrent) {
  server_->Stop();
  HttpProvider p({.endpoint = endpoint_, .poll_timeout = std::chrono::seconds(2)});
  EXPECT_FALSE(p.Poll().ok());
  EXPECT_FALSE(p.Current().ok());
}

// --- https ---------------------------------------------------------------------------------

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

struct Pem {
  std::string cert;
  std::string key;
};

// A certificate and its EC P-256 key: a CA (`issuer` null: self-signed, CA:TRUE) or a leaf signed
// by `issuer`, for serverAuth and clientAuth, with subjectAltName `sans` ("IP:127.0.0.1,DNS:x").
// The minimal part of edge/proxy/tls.cc's GenerateSelfSigned, copied (that one makes only
// self-signed serverAuth leaves with DNS names, and edge/proxy is not this test's to link).
Pem MakeCertificate(const std::string& common_name, const std::string& sans, const Pem* issuer) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
  X509* issuer_cert = cert;
  EVP_PKEY* issuer_key = key;
  if (issuer) {
    BIO* b = BIO_new_mem_buf(issuer->cert.data(), static_cast<int>(issuer->cert.size()));
    issuer_cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    b = BIO_new_mem_buf(issuer->key.data(), static_cast<int>(issuer->key.size()));
    issuer_key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
    BIO_free(b);
  }
  X509_set_issuer_name(cert, X509_get_subject_name(issuer_cert));
  auto add_ext = [&](int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer_cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    ASSERT_NE(ext, nullptr) << value;
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add_ext(NID_subject_key_identifier, "hash");
  if (issuer) {
    add_ext(NID_authority_key_identifier, "keyid");
    add_ext(NID_basic_constraints, "critical,CA:FALSE");
    add_ext(NID_key_usage, "critical,digitalSignature");
    add_ext(NID_ext_key_usage, "serverAuth,clientAuth");
    add_ext(NID_subject_alt_name, sans);
  } else {
    add_ext(NID_basic_constraints, "critical,CA:TRUE");
    add_ext(NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  X509_sign(cert, issuer_key, EVP_sha256());
  Pem out;
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, cert);
  char* data = nullptr;
  const long cert_size = BIO_get_mem_data(b, &data);
  out.cert.assign(data, static_cast<size_t>(cert_size));
  BIO_free(b);
  b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  const long key_size = BIO_get_mem_data(b, &data);
  out.key.assign(data, static_cast<size_t>(key_size));
  BIO_free(b);
  if (issuer) {
    X509_free(issuer_cert);
    EVP_PKEY_free(issuer_key);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

// An HTTPS server on 127.0.0.1, one connection at a time on its own thread: it answers each request
// 200 with `body` and closes the connection, and records the request's headers and the handshakes
// that failed. With a client CA it requires a client certificate that CA signed.
class TlsServer {
 public:
  TlsServer() : acceptor_(ioc_, {asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Loop(); });
  }
  ~TlsServer() {
    stopping_ = true;
    asio::ip::tcp::socket wake(ioc_);
    boost::system::error_code ec;
    wake.connect({asio::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  void Serve(Pem cert, std::string client_ca, std::string body) {
    std::lock_guard lock(mu_);
    cert_ = std::move(cert);
    client_ca_ = std::move(client_ca);
    body_ = std::move(body);
  }
  std::vector<http::Header> last_headers() {
    std::lock_guard lock(mu_);
    return last_headers_;
  }
  int requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int failed_handshakes() {
    std::lock_guard lock(mu_);
    return failed_handshakes_;
  }

 private:
  void Loop() {
    for (;;) {
      asio::ip::tcp::socket socket(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (stopping_) return;
      if (!ec) Handle(std::move(socket));
    }
  }

  void Handle(asio::ip::tcp::socket socket) {
    ssl::context ctx(ssl::context::tls_server);
    std::string body;
    {
      std::lock_guard lock(mu_);
      ctx.use_certificate_chain(asio::buffer(cert_.cert));
      ctx.use_private_key(asio::buffer(cert_.key), ssl::context::pem);
      if (!client_ca_.empty()) {
        ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
        ctx.add_certificate_authority(asio::buffer(client_ca_));
      }
      body = body_;
    }
    ssl::stream<asio::ip::tcp::socket> tls(std::move(socket), ctx);
    boost::system::error_code ec;
    tls.handshake(ssl::stream_base::server, ec);
    if (ec) {
      std::lock_guard lock(mu_);
      ++failed_handshakes_;
      return;
    }
    beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> req;
    bhttp::read(tls, buffer, req, ec);
    if (ec) {  // TLS 1.3: a client certificate refused after the client's handshake is seen here
      std::lock_guard lock(mu_);
      ++failed_handshakes_;
      return;
    }
    {
      std::lock_guard lock(mu_);
      ++requests_;
      last_headers_.clear();
      for (const auto& field : req)
        last_headers_.push_back({std::string(field.name_string()), std::string(field.value())});
    }
    bhttp::response<bhttp::string_body> resp(bhttp::status::ok, 11);
    resp.body() = body;
    resp.keep_alive(false);
    resp.prepare_payload();
    bhttp::write(tls, resp, ec);
    tls.lowest_layer().close(ec);
  }

  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  Pem cert_;               // GUARDED_BY(mu_)
  std::string client_ca_;  // GUARDED_BY(mu_)
  std::string body_;       // GUARDED_BY(mu_)
  std::vector<http::Header> last_headers_;  // GUARDED_BY(mu_)
  int requests_ = 0;                        // GUARDED_BY(mu_)
  int failed_handshakes_ = 0;               // GUARDED_BY(mu_)
  std::thread thread_;
};

class HttpsProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "paddock-https-provider-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ca_ = MakeCertificate("Test CA", "", nullptr);
    server_cert_ = MakeCertificate("127.0.0.1", "IP:127.0.0.1,DNS:localhost", &ca_);
    endpoint_ = fmt::format("https://127.0.0.1:{}/dynamic", server_.port());
    server_.Serve(server_cert_, "", std::string(kBody));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  static constexpr std::string_view kBody = R"J({"http":{"routers":{"r":{"rule":"Path(`/tls`)","service":"s"}}}})J";
  std::filesystem::path dir_;
  Pem ca_;
  Pem server_cert_;
  TlsServer server_;
  std::string endpoint_;
};

TEST_F(HttpsProviderTest, PolledWhenTlsCaNamesTheServersCa) {
  HttpProvider p({.endpoint = endpoint_, .tls = HttpProviderTls{.ca = Write("ca.pem", ca_.cert)}});
  ASSERT_TRUE(p.Start().ok());
  auto c = p.Current();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->at("http").at("routers").at("r").at("rule"), json::value("Path(`/tls`)"));
  // The CA given as PEM text, as Traefik takes it too.
  HttpProvider inline_ca({.endpoint = endpoint_, .tls = HttpProviderTls{.ca = ca_.cert}});
  auto polled = inline_ca.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  EXPECT_EQ(server_.requests(), 2);
}

TEST_F(HttpsProviderTest, AnUntrustedCertificateIsRefusedLoggedAndTheLastGoodConfigurationStays) {
  // No tls options: the system's CAs, which do not hold the test CA.
  HttpProvider system({.endpoint = endpoint_});
  auto refused = system.Poll();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("certificate verify failed"), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(system.Current().ok());

  HttpProvider p({.endpoint = endpoint_, .tls = HttpProviderTls{.ca = Write("ca.pem", ca_.cert)}});
  ASSERT_TRUE(p.Poll().ok());
  const auto good = p.Current();
  ASSERT_TRUE(good.ok());
  // The server turns to a certificate of another CA, serving another configuration.
  const Pem other_ca = MakeCertificate("Other CA", "", nullptr);
  server_.Serve(MakeCertificate("127.0.0.1", "IP:127.0.0.1", &other_ca), "",
                R"J({"http":{"routers":{"r":{"rule":"Path(`/other`)","service":"s"}}}})J");
  testing::internal::CaptureStderr();
  refused = p.Poll();
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("certificate verify failed"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(log.find("http provider: " + endpoint_), std::string::npos) << log;
  EXPECT_NE(log.find("certificate verify failed"), std::string::npos) << log;
  EXPECT_NE(log.find("keeping the last good configuration"), std::string::npos) << log;
  EXPECT_EQ(*p.Current(), *good);
  EXPECT_EQ(server_.requests(), 1);
}

TEST_F(HttpsProviderTest, AnAddressTheCertificateDoesNotNameIsRefused) {
  server_.Serve(MakeCertificate("config.test", "DNS:config.test", &ca_), "", std::string(kBody));
  HttpProvider p({.endpoint = endpoint_, .tls = HttpProviderTls{.ca = ca_.cert}});
  auto refused = p.Poll();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("IP address mismatch"), std::string::npos) << refused.status().message();
  // By name: localhost is named by the server's usual certificate, and checked as a DNS name.
  server_.Serve(server_cert_, "", std::string(kBody));
  HttpProvider by_name({.endpoint = fmt::format("https://localhost:{}/dynamic", server_.port()),
                        .tls = HttpProviderTls{.ca = ca_.cert}});
  auto polled = by_name.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
}

TEST_F(HttpsProviderTest, InsecureSkipVerifyAcceptsAnyCertificate) {
  const Pem other_ca = MakeCertificate("Other CA", "", nullptr);
  server_.Serve(MakeCertificate("elsewhere.test", "DNS:elsewhere.test", &other_ca), "", std::string(kBody));
  HttpProvider p({.endpoint = endpoint_, .tls = HttpProviderTls{.insecure_skip_verify = true}});
  auto polled = p.Poll();
  ASSERT_TRUE(polled.ok()) << polled.status().ToString();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(server_.requests(), 1);
}

TEST_F(HttpsProviderTest, MutualTlsSucceedsOnlyWithTheClientCertificateAndHeadersArrive) {
  const Pem client_ca = MakeCertificate("Client CA", "", nullptr);
  const Pem client = MakeCertificate("edge", "DNS:edge.test", &client_ca);
  server_.Serve(server_cert_, client_ca.cert, std::string(kBody));
  const std::map<std::string, std::string> headers = {{"Authorization", "Bearer t0ken"}};

  HttpProvider without({.endpoint = endpoint_, .headers = headers, .tls = HttpProviderTls{.ca = ca_.cert}});
  EXPECT_FALSE(without.Poll().ok());
  EXPECT_FALSE(without.Current().ok());
  EXPECT_EQ(server_.requests(), 0);

  // A certificate the server's CA did not sign is refused too.
  const Pem stranger = MakeCertificate("edge", "DNS:edge.test", &ca_);
  HttpProvider wrong({.endpoint = endpoint_,
                      .tls = HttpProviderTls{.ca = ca_.cert, .cert = stranger.cert, .key = stranger.key}});
  EXPECT_FALSE(wrong.Poll().ok());
  EXPECT_EQ(server_.requests(), 0);

  HttpProvider with({.endpoint = endpoint_, .headers = headers,
                     .tls = HttpProviderTls{.ca = Write("ca.pem", ca_.cert), .cert = Write("edge.crt", client.cert),
                                            .key = Write("edge.key", client.key)}});
  ASSERT_TRUE(with.Start().ok());
  ASSERT_TRUE(with.Current().ok()) << with.Current().status().ToString();
  EXPECT_EQ(server_.requests(), 1);
  http::Request seen;
  seen.headers = server_.last_headers();
  EXPECT_EQ(seen.GetHeader("Authorization"), "Bearer t0ken");
  EXPECT_EQ(seen.GetHeader("Accept"), "application/json");
}

TEST_F(HttpsProviderTest, StartRefusesTlsFilesThatCannotBeReadOrDoNotLoad) {
  const Pem client = MakeCertificate("edge", "DNS:edge.test", &ca_);
  const Pem other = MakeCertificate("other", "DNS:other.test", &ca_);
  const std::string missing = (dir_ / "missing.pem").string();
  struct Case {
    HttpProviderTls tls;
    std::string error;
  } cases[] = {
      {{.ca = missing}, "tls.ca: cannot read " + missing + ": No such file or directory"},
      {{.cert = missing, .key = client.key}, "tls.cert: cannot read " + missing},
      {{.cert = client.cert, .key = missing}, "tls.key: cannot read " + missing},
      {{.ca = Write("empty.pem", "not a certificate\n")}, "tls: the certificate authority holds no PEM certificate"},
      {{.cert = client.cert}, "tls: a client certificate needs its key"},
      {{.key = client.key}, "tls: a client key needs its certificate"},
      {{.cert = Write("junk.crt", "junk"), .key = client.key}, "tls: the client certificate is not a PEM certificate"},
      {{.cert = client.cert, .key = other.key}, "tls: the client key is not"},
  };
  for (const Case& c : cases) {
    // Over http:// too: Traefik checks its tls options at Init whatever the endpoint.
    for (const std::string& endpoint : {endpoint_, std::string("http://127.0.0.1:1/")}) {
      Status s = HttpProvider({.endpoint = endpoint, .tls = c.tls}).Start();
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.error;
      EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    }
  }
  EXPECT_EQ(server_.requests(), 0);
  EXPECT_EQ(server_.failed_handshakes(), 0);
}

}  // namespace
}  // namespace paddock::edge
