// TLS entry points, end to end with a real TLS client (OpenSSL): certificates chosen by SNI, routers
// with `tls` served only over TLS and the others only over plain HTTP on one port, a bad
// certificate file left out, the entry-point redirection, and certResolver's warning in the API.
#include "edge/proxy/tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "edge/edge.h"
#include "edge/proxy/compile.h"
#include "edge/proxy/proxy.h"
#include "edge/proxy/switching_upstream_testing.h"
#include "edge/runtime.h"
#include "http/client.h"
#include "http/server.h"

namespace paddock::edge {
namespace {

namespace json = boost::json;

// A temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/paddock-tls-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes a self-signed certificate for `cn` (with `sans`) as <stem>.crt and <stem>.key.
CertificateFiles WriteCertificate(const TempDir& dir, const std::string& stem, const std::string& cn,
                                  std::vector<std::string> sans) {
  PemPair pair = GenerateSelfSigned(cn, sans, 30, /*ec=*/true);
  return {dir.Write(stem + ".crt", pair.cert), dir.Write(stem + ".key", pair.key)};
}

struct TlsReply {
  bool handshake = false;
  std::string subject;   // the served certificate's, RFC 2253
  std::string response;  // everything read until the server closed
  std::string version;   // "TLSv1.2", "TLSv1.3"
  std::string cipher;    // OpenSSL's name
  std::string alpn;      // the protocol the server chose; "" none
  std::shared_ptr<SSL_SESSION> session;  // to resume, once the response was read
  bool resumed = false;
};

// What the test client offers: versions up to `max_version` (0: any), TLS 1.2 `ciphers`
// (OpenSSL's names; "" its defaults), a client certificate, ALPN protocols.
struct ClientTls {
  int max_version = 0;
  std::string ciphers{};
  std::string cert_pem{};
  std::string key_pem{};
  std::string chain_pem{};  // certificates sent after the client's own (an intermediate CA's)
  std::vector<std::string> alpn{};
  SSL_SESSION* session = nullptr;  // to resume
};

// A connection to 127.0.0.1:`port` whose reads give up after 10 s; -1 when refused.
int ConnectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request over TLS to 127.0.0.1:`port`, with `sni` as the server name (none when empty); the
// request should close the connection (Connection: close). No verification: the test reads the
// certificate it was served.
TlsReply TlsRequest(uint16_t port, const std::string& sni, const std::string& request, const ClientTls& offer = {}) {
  TlsReply out;
  const int fd = ConnectLoopback(port);
  if (fd < 0) return out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  if (offer.max_version) SSL_CTX_set_max_proto_version(ctx, offer.max_version);
  if (!offer.ciphers.empty()) SSL_CTX_set_cipher_list(ctx, offer.ciphers.c_str());
  if (!offer.cert_pem.empty()) {
    BIO* cert_bio = BIO_new_mem_buf(offer.cert_pem.data(), static_cast<int>(offer.cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    BIO* key_bio = BIO_new_mem_buf(offer.key_pem.data(), static_cast<int>(offer.key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
    SSL_CTX_use_certificate(ctx, cert);
    SSL_CTX_use_PrivateKey(ctx, key);
    if (!offer.chain_pem.empty()) {
      BIO* chain_bio = BIO_new_mem_buf(offer.chain_pem.data(), static_cast<int>(offer.chain_pem.size()));
      while (X509* extra = PEM_read_bio_X509(chain_bio, nullptr, nullptr, nullptr))
        SSL_CTX_add_extra_chain_cert(ctx, extra);  // takes it
      BIO_free(chain_bio);
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cert_bio);
    BIO_free(key_bio);
  }
  if (!offer.alpn.empty()) {
    std::string wire;
    for (const std::string& p : offer.alpn) wire += static_cast<char>(p.size()) + p;
    SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
  }
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (!sni.empty()) SSL_set_tlsext_host_name(ssl, sni.c_str());
  if (offer.session) SSL_set_session(ssl, offer.session);
  if (SSL_connect(ssl) == 1) {
    out.handshake = true;
    out.version = SSL_get_version(ssl);
    out.cipher = SSL_get_cipher_name(ssl);
    const unsigned char* proto = nullptr;
    unsigned int proto_len = 0;
    SSL_get0_alpn_selected(ssl, &proto, &proto_len);
    if (proto) out.alpn.assign(reinterpret_cast<const char*>(proto), proto_len);
    if (X509* peer = SSL_get1_peer_certificate(ssl)) {
      BIO* b = BIO_new(BIO_s_mem());
      X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253);
      char* data = nullptr;
      long n = BIO_get_mem_data(b, &data);
      out.subject.assign(data, static_cast<size_t>(n));
      BIO_free(b);
      X509_free(peer);
    }
    if (!request.empty()) {
      SSL_write(ssl, request.data(), static_cast<int>(request.size()));
      char buf[4096];
      for (int n; (n = SSL_read(ssl, buf, sizeof(buf))) > 0;) {
        out.response.append(buf, static_cast<size_t>(n));
        // A copy, once the answer came (a TLS 1.3 ticket comes before it): the connection's own is
        // marked spent when the server closes without close_notify.
        if (!out.session) out.session = std::shared_ptr<SSL_SESSION>(SSL_SESSION_dup(SSL_get0_session(ssl)), SSL_SESSION_free);
      }
    }
    out.resumed = SSL_session_reused(ssl) == 1;
  }
  ERR_clear_error();
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
  return out;
}

std::string GetRequest(const std::string& host, const std::string& path = "/") {
  return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
}

TEST(TlsCertificatesTest, SelectsByExactNameThenWildcardThenTheDefault) {
  TempDir dir;
  std::vector<std::string> errors;
  auto set = TlsCertificates::Load(
      {WriteCertificate(dir, "wild", "wildcard", {"*.example.com"}),
       WriteCertificate(dir, "exact", "exact", {"a.example.com", "other.test"}),
       WriteCertificate(dir, "cn", "cn.example.org", {})},
      WriteCertificate(dir, "default", "my default", {}), errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(set->size(), 3u);
  EXPECT_EQ(set->Select("a.example.com")->subject(), "CN=exact");  // exact beats the wildcard
  EXPECT_EQ(set->Select("A.Example.COM.")->subject(), "CN=exact");
  EXPECT_EQ(set->Select("b.example.com")->subject(), "CN=wildcard");
  EXPECT_EQ(set->Select("x.b.example.com")->subject(), "CN=my default");  // one label only
  EXPECT_EQ(set->Select("example.com")->subject(), "CN=my default");
  EXPECT_EQ(set->Select("cn.example.org")->subject(), "CN=cn.example.org");  // the CN is a name too
  EXPECT_EQ(set->Select("")->subject(), "CN=my default");
  EXPECT_EQ(set->Select("a.example.com")->names(), (std::vector<std::string>{"exact", "a.example.com", "other.test"}));
}

TEST(TlsCertificatesTest, WithoutADefaultTheGeneratedOneIsServed) {
  std::vector<std::string> errors;
  auto set = TlsCertificates::Load({}, std::nullopt, errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(set->default_certificate().subject(), "CN=PADDOCK DEFAULT CERT");
  ASSERT_EQ(set->default_certificate().names().size(), 2u);
  EXPECT_TRUE(set->default_certificate().names()[1].ends_with(".paddock.default"));
  // The same generated certificate for the whole process (Traefik makes it once, at start).
  EXPECT_EQ(TlsCertificates::GeneratedOnly()->default_certificate().names(), set->default_certificate().names());
}

TEST(TlsCertificatesTest, ABadCertificateIsAnErrorNamingItsFileAndTheOthersAreServed) {
  TempDir dir;
  CertificateFiles good = WriteCertificate(dir, "good", "good.test", {"good.test"});
  CertificateFiles other = WriteCertificate(dir, "other", "other.test", {"other.test"});
  const std::string key_text = GenerateSelfSigned("x", {}, 1, true).key;
  CertificateFiles mismatched{good.cert_file, other.key_file};
  CertificateFiles garbage{dir.Write("garbage.crt", "not a certificate"), good.key_file};
  CertificateFiles missing{dir.path() + "/missing.crt", good.key_file};
  CertificateFiles bad_key{other.cert_file, dir.Write("bad.key", key_text.substr(0, 60))};
  std::vector<std::string> errors;
  auto set = TlsCertificates::Load({mismatched, good, garbage, missing, bad_key}, std::nullopt, errors);
  EXPECT_EQ(set->size(), 1u);
  EXPECT_EQ(set->Select("good.test")->subject(), "CN=good.test");
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("the key does not match"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find(garbage.cert_file), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("missing.crt: cannot be read"), std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("no readable PEM private key"), std::string::npos) << errors[3];
  for (const std::string& e : errors) EXPECT_EQ(e.find("PRIVATE KEY-----"), std::string::npos) << e;
}

// The decimal digits of a big-endian unsigned number (long division by 10), to check the serial
// label without OpenSSL's BIGNUM printing, which the code uses.
std::string DecimalOf(std::vector<unsigned char> bytes) {
  std::string digits;
  while (std::any_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b != 0; })) {
    unsigned remainder = 0;
    for (unsigned char& b : bytes) {
      const unsigned value = remainder * 256 + b;
      b = static_cast<unsigned char>(value / 10);
      remainder = value % 10;
    }
    digits.insert(digits.begin(), static_cast<char>('0' + remainder));
  }
  return digits.empty() ? "0" : digits;
}

std::string SerialOf(const std::string& cert_file) {
  std::ifstream in(cert_file);
  std::stringstream pem;
  pem << in.rdbuf();
  const std::string text = pem.str();
  BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) return {};
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
  std::vector<unsigned char> bytes(ASN1_STRING_get0_data(serial), ASN1_STRING_get0_data(serial) + ASN1_STRING_length(serial));
  X509_free(cert);
  return DecimalOf(std::move(bytes));
}

// traefik_tls_certs_not_after's series: every configured certificate and a configured default,
// labelled as Traefik's appendCertMetric labels them; the generated default is not one.
TEST(TlsCertificatesTest, ReportedAreTheConfiguredCertificatesWithTraefiksLabels) {
  TempDir dir;
  std::vector<std::string> errors;
  CertificateFiles multi = WriteCertificate(dir, "multi", "Multi Name", {"b.example.com", "A.example.com", "c.test"});
  CertificateFiles mine = WriteCertificate(dir, "default", "my default", {});
  auto set = TlsCertificates::Load({multi}, mine, errors);
  ASSERT_TRUE(errors.empty()) << errors.front();
  const std::vector<const TlsCertificate*> reported = set->Reported();
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_EQ(reported[0]->common_name(), "Multi Name");  // as written, not lower-cased
  EXPECT_EQ(reported[0]->dns_names(), "A.example.com,b.example.com,c.test");  // sorted (bytewise), joined
  EXPECT_EQ(reported[0]->serial(), SerialOf(multi.cert_file));
  EXPECT_FALSE(reported[0]->serial().empty());
  EXPECT_EQ(reported[1]->common_name(), "my default");
  EXPECT_EQ(reported[1]->dns_names(), "");
  EXPECT_EQ(reported[1]->serial(), SerialOf(mine.cert_file));
  // WriteCertificate makes them valid for 30 days from now.
  const int64_t expected = static_cast<int64_t>(std::time(nullptr)) + 30 * 86400;
  for (const TlsCertificate* cert : reported) {
    EXPECT_LE(std::abs(cert->not_after() - expected), 300) << cert->common_name();
  }

  EXPECT_TRUE(TlsCertificates::Load({multi}, std::nullopt, errors)->Reported().size() == 1u);  // no generated one
  EXPECT_TRUE(TlsCertificates::GeneratedOnly()->Reported().empty());
}

TEST(CertificateNameMatchesTest, IsTraefiksMatchDomain) {
  EXPECT_TRUE(CertificateNameMatches("a.example.com", "a.example.com"));
  EXPECT_TRUE(CertificateNameMatches("a.example.com", "*.example.com"));
  EXPECT_FALSE(CertificateNameMatches("example.com", "*.example.com"));
  EXPECT_FALSE(CertificateNameMatches("a.b.example.com", "*.example.com"));
  EXPECT_FALSE(CertificateNameMatches(".example.com", "*.example.com"));
}

// A backend that answers with the forwarding headers it was sent.
class EchoBackend {
 public:
  EchoBackend()
      : server_({}, [](const http::Request& r) {
          http::Response resp;
          resp.body = "proto=" + std::string(r.GetHeader("X-Forwarded-Proto")) +
                      " port=" + std::string(r.GetHeader("X-Forwarded-Port")) + " path=" + r.target;
          if (r.target.starts_with("/certs")) {  // passTLSClientCert's headers
            resp.body = "cert=" + std::string(r.GetHeader("X-Forwarded-Tls-Client-Cert")) +
                        " info=" + std::string(r.GetHeader("X-Forwarded-Tls-Client-Cert-Info"));
          }
          return resp;
        }) {
    auto port = server_.Start();
    EXPECT_TRUE(port.ok());
    port_ = *port;
  }
  ~EchoBackend() { server_.Stop(); }
  uint16_t port() const { return port_; }

 private:
  http::Server server_;
  uint16_t port_ = 0;
};

std::string Body(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

// The runtime of one provider's configuration `config_text` on the entry point `web`.
RuntimeConfig Runtime(const std::string& config_text) {
  return BuildRuntime({{"file", json::parse(config_text).as_object()}}, {"web"}, {"web"},
                      [](std::string_view rule) -> std::string {
                        auto parsed = Rule::Parse(rule);
                        return parsed.ok() ? std::string() : std::string(parsed.status().message());
                      },
                      {}, CheckTlsOptionsJson);
}

class TlsProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ports = proxy_.Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    port_ = ports->at("web");
  }
  void TearDown() override { proxy_.Stop(); }

  // Compiles `config_text` (a file provider's dynamic configuration; "BACKEND" is the echo
  // server's URL) and swaps it in. The compile errors.
  std::vector<std::string> Serve(std::string config_text) {
    const std::string url = "http://127.0.0.1:" + std::to_string(backend_.port());
    for (size_t at; (at = config_text.find("BACKEND")) != std::string::npos;) config_text.replace(at, 7, url);
    CompileResult compiled = Compile(Runtime(config_text), registry_);
    proxy_.SetTable(compiled.table);
    return compiled.errors;
  }

  TempDir dir_;
  EchoBackend backend_;
  ServerRegistry registry_;
  Proxy proxy_{ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 2, .router_metrics = true}};
  uint16_t port_ = 0;
};

TEST_F(TlsProxyTest, ServesTheCertificateTheServerNameSelects) {
  CertificateFiles exact = WriteCertificate(dir_, "exact", "exact", {"a.example.com"});
  CertificateFiles wild = WriteCertificate(dir_, "wild", "wildcard", {"*.example.com"});
  auto errors = Serve(fmt::format(R"J({{
    "http":{{"routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"s","tls":{{}}}}}},
            "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"BACKEND"}}]}}}}}}}},
    "tls":{{"certificates":[{{"certFile":"{}","keyFile":"{}"}},{{"certFile":"{}","keyFile":"{}"}}]}}}})J",
                                  exact.cert_file, exact.key_file, wild.cert_file, wild.key_file));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(TlsRequest(port_, "a.example.com", "").subject, "CN=exact");
  EXPECT_EQ(TlsRequest(port_, "b.example.com", "").subject, "CN=wildcard");
  EXPECT_EQ(TlsRequest(port_, "elsewhere.test", "").subject, "CN=PADDOCK DEFAULT CERT");
  EXPECT_EQ(TlsRequest(port_, "", "").subject, "CN=PADDOCK DEFAULT CERT");
  EXPECT_EQ(proxy_.Metrics().tls_certs_not_after.size(), 2u);  // the generated default is not reported

  // A configured default replaces the generated one; a reload (a new table) serves the new set.
  CertificateFiles mine = WriteCertificate(dir_, "mine", "my default", {});
  errors = Serve(fmt::format(R"J({{
    "http":{{"routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"s","tls":{{}}}}}},
            "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"BACKEND"}}]}}}}}}}},
    "tls":{{"stores":{{"default":{{"defaultCertificate":{{"certFile":"{}","keyFile":"{}"}}}}}}}}}})J",
                             mine.cert_file, mine.key_file));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(TlsRequest(port_, "a.example.com", "").subject, "CN=my default");
  // traefik_tls_certs_not_after follows the table: only the configured default is left.
  const auto reported = proxy_.Metrics().tls_certs_not_after;
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(std::get<0>(reported.begin()->first), "my default");
  EXPECT_EQ(std::get<1>(reported.begin()->first), SerialOf(mine.cert_file));
}

TEST_F(TlsProxyTest, TlsRoutersServeOnlyTlsAndTheOthersOnlyPlainHttpOnOnePort) {
  auto errors = Serve(R"J({
    "http":{"routers":{"secure":{"rule":"PathPrefix(`/secure`)","service":"s","tls":{}},
                       "plain":{"rule":"PathPrefix(`/plain`)","service":"s"}},
            "services":{"s":{"loadBalancer":{"servers":[{"url":"BACKEND"}]}}}}})J");
  EXPECT_TRUE(errors.empty()) << errors.front();
  // X-Forwarded-Port as Traefik's: the Host's port, else 443 over TLS and 80 without.
  TlsReply secure = TlsRequest(port_, "app.test", GetRequest("app.test", "/secure/x"));
  ASSERT_TRUE(secure.handshake);
  EXPECT_TRUE(secure.response.starts_with("HTTP/1.1 200 ")) << secure.response;
  EXPECT_EQ(Body(secure.response), "proto=https port=443 path=/secure/x");
  TlsReply with_port = TlsRequest(port_, "app.test", GetRequest("app.test:8443", "/secure/x"));
  EXPECT_EQ(Body(with_port.response), "proto=https port=8443 path=/secure/x");
  TlsReply plain_over_tls = TlsRequest(port_, "app.test", GetRequest("app.test", "/plain/x"));
  EXPECT_TRUE(plain_over_tls.response.starts_with("HTTP/1.1 404 ")) << plain_over_tls.response;

  http::Client client("127.0.0.1", port_);
  http::Request req;
  req.method = "GET";
  req.target = "/plain/y";
  req.headers.push_back({"Host", "app.test"});
  auto plain = client.Send(req);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->status, 200);
  EXPECT_EQ(plain->body, "proto=http port=80 path=/plain/y");
  req.target = "/secure/y";
  auto secure_over_plain = client.Send(req);
  ASSERT_TRUE(secure_over_plain.ok());
  EXPECT_EQ(secure_over_plain->status, 404);

  // Keep-alive over TLS: two requests on one connection.
  TlsReply two = TlsRequest(port_, "app.test",
                            "GET /secure/1 HTTP/1.1\r\nHost: app.test\r\n\r\n" + GetRequest("app.test", "/secure/2"));
  EXPECT_NE(two.response.find("path=/secure/1"), std::string::npos) << two.response;
  EXPECT_NE(two.response.find("path=/secure/2"), std::string::npos) << two.response;

  // Traefik's traefik_entrypoint_requests_tls_total: the five answered over TLS (each connection
  // closed after its last answer was counted).
  MetricsSnapshot m = proxy_.Metrics();
  uint64_t over_tls = 0;
  for (const auto& [key, n] : m.entry_point_tls_requests) {
    EXPECT_EQ(key.name, "web");
    EXPECT_EQ(key.tls_version, "1.3");
    EXPECT_TRUE(key.tls_cipher.starts_with("TLS_AES_") || key.tls_cipher.starts_with("TLS_CHACHA20_"))
        << key.tls_cipher;
    over_tls += n;
  }
  EXPECT_EQ(over_tls, 5u);
  // traefik_service_requests_tls_total and traefik_router_requests_tls_total: the four that reached
  // the service (the plain router's 404 over TLS reached none), by the connection's version and cipher.
  uint64_t service_tls = 0, router_tls = 0;
  for (const auto& [key, n] : m.service_tls_requests) {
    EXPECT_TRUE(key.name.starts_with("s@")) << key.name;
    EXPECT_EQ(key.tls_version, "1.3");
    EXPECT_FALSE(key.tls_cipher.empty());
    service_tls += n;
  }
  for (const auto& [key, n] : m.router_tls_requests) {
    EXPECT_TRUE(key.name.starts_with("secure@")) << key.name;
    EXPECT_TRUE(key.service.starts_with("s@")) << key.service;
    EXPECT_EQ(key.tls_version, "1.3");
    router_tls += n;
  }
  EXPECT_EQ(service_tls, 4u);
  EXPECT_EQ(router_tls, 4u);
  EXPECT_NE(RenderPrometheus(m).find("traefik_entrypoint_requests_tls_total{entrypoint=\"web\",tls_cipher=\"TLS_"),
            std::string::npos);
}

TEST_F(TlsProxyTest, ABadCertificateFileLeavesTheOthersServing) {
  CertificateFiles good = WriteCertificate(dir_, "good", "good.test", {"good.test"});
  const std::string broken = dir_.Write("broken.crt", "-- not PEM --");
  auto errors = Serve(fmt::format(R"J({{
    "http":{{"routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"s","tls":{{}}}}}},
            "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"BACKEND"}}]}}}}}}}},
    "tls":{{"certificates":[{{"certFile":"{}","keyFile":"{}"}},{{"certFile":"{}","keyFile":"{}"}}]}}}})J",
                                  broken, good.key_file, good.cert_file, good.key_file));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(broken), std::string::npos) << errors[0];
  TlsReply r = TlsRequest(port_, "good.test", GetRequest("good.test"));
  EXPECT_EQ(r.subject, "CN=good.test");
  EXPECT_TRUE(r.response.starts_with("HTTP/1.1 200 ")) << r.response;
}

TEST_F(TlsProxyTest, ATlsConnectionBeforeAnyTableGetsTheGeneratedCertificateAnd404) {
  TlsReply r = TlsRequest(port_, "any.test", GetRequest("any.test"));
  EXPECT_EQ(r.subject, "CN=PADDOCK DEFAULT CERT");
  EXPECT_TRUE(r.response.starts_with("HTTP/1.1 404 ")) << r.response;
}

// ---- TLS options (Traefik's tls.options and a router's tls.options) ----

// A certificate authority made here, and the client certificates it signs (EC P-256, PEM).
class TestCa {
 public:
  explicit TestCa(const std::string& cn) {
    key_ = EVP_EC_gen("P-256");
    cert_ = X509_new();
    Fill(cert_, cn, key_);
    X509_set_issuer_name(cert_, X509_get_subject_name(cert_));
    Extend(cert_, cert_, NID_basic_constraints, "critical,CA:TRUE");
    Extend(cert_, cert_, NID_key_usage, "critical,keyCertSign,cRLSign");
    X509_sign(cert_, key_, EVP_sha256());
  }
  // An intermediate CA for `cn`, signed by `parent`.
  TestCa(const std::string& cn, const TestCa& parent) {
    key_ = EVP_EC_gen("P-256");
    cert_ = X509_new();
    Fill(cert_, cn, key_);
    X509_set_issuer_name(cert_, X509_get_subject_name(parent.cert_));
    Extend(cert_, parent.cert_, NID_basic_constraints, "critical,CA:TRUE");
    Extend(cert_, parent.cert_, NID_key_usage, "critical,keyCertSign,cRLSign");
    X509_sign(cert_, parent.key_, EVP_sha256());
  }
  ~TestCa() {
    X509_free(cert_);
    EVP_PKEY_free(key_);
  }
  std::string CertPem() const { return Pem(cert_); }
  // A client certificate for `cn` signed by this CA; with `sans` (OpenSSL's form: "DNS:a.test,
  // URI:spiffe://x/y") a server certificate naming them.
  PemPair Issue(const std::string& cn, const std::string& sans = "") const {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    Fill(cert, cn, key);
    X509_set_issuer_name(cert, X509_get_subject_name(cert_));
    Extend(cert, cert_, NID_basic_constraints, "critical,CA:FALSE");
    Extend(cert, cert_, NID_ext_key_usage, sans.empty() ? "clientAuth" : "serverAuth");
    if (!sans.empty()) Extend(cert, cert_, NID_subject_alt_name, sans.c_str());
    X509_sign(cert, key_, EVP_sha256());
    PemPair out{Pem(cert), ""};
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    out.key.assign(data, static_cast<size_t>(n));
    BIO_free(b);
    X509_free(cert);
    EVP_PKEY_free(key);
    return out;
  }

 private:
  static void Fill(X509* cert, const std::string& cn, EVP_PKEY* key) {
    X509_set_version(cert, 2);
    static long serial = 1;
    ASN1_INTEGER_set(X509_get_serialNumber(cert), ++serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  }
  static void Extend(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  static std::string Pem(X509* cert) {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, cert);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(b);
    return out;
  }
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
};

// A file configuration with one TLS router `r` (`rule`, `router_options` as its tls.options, "" none),
// the certificate `cert` and the TLS options `options_json` (the members of tls.options).
std::string OptionsConfig(const CertificateFiles& cert, const std::string& rule, const std::string& router_options,
                          const std::string& options_json) {
  const std::string tls = router_options.empty() ? "{}" : fmt::format(R"({{"options":"{}"}})", router_options);
  return fmt::format(R"J({{
    "http":{{"routers":{{"r":{{"rule":"{}","service":"s","tls":{}}}}},
            "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"BACKEND"}}]}}}}}}}},
    "tls":{{"certificates":[{{"certFile":"{}","keyFile":"{}"}}],"options":{{{}}}}}}})J",
                     rule, tls, cert.cert_file, cert.key_file, options_json);
}

bool Answered200(const TlsReply& r) { return r.response.starts_with("HTTP/1.1 200 "); }

TEST(TlsOptionsCheckTest, NamesAreTraefiksAndAnUnknownOneIsItsError) {
  EXPECT_EQ(CheckTlsOptions({}), "");
  EXPECT_EQ(CheckTlsOptions({.cipher_suites = std::vector<std::string>{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                                                       "TLS_CHACHA20_POLY1305_SHA256"},
                             .curve_preferences = std::vector<std::string>{"secp384r1", "X25519", "CurveP521"}}),
            "");
  EXPECT_EQ(CheckTlsOptions({.cipher_suites = std::vector<std::string>{"ECDHE-RSA-AES128-GCM-SHA256"}}),
            "invalid CipherSuite: ECDHE-RSA-AES128-GCM-SHA256");  // OpenSSL's name is not Go's
  EXPECT_EQ(CheckTlsOptions({.curve_preferences = std::vector<std::string>{"P-256"}}),
            "invalid CurveID in curvePreferences: P-256");
  EXPECT_EQ(CheckTlsOptions({.curve_preferences = std::vector<std::string>{"X25519MLKEM768"}}),
            "curvePreferences: X25519MLKEM768 is not available in the edge's OpenSSL");
  EXPECT_EQ(CheckTlsOptions({.client_auth_type = "RequireAndVerifyClientCert"}),
            "invalid clientAuthType: RequireAndVerifyClientCert, CAFiles is required");
  EXPECT_EQ(CheckTlsOptions({.client_auth_type = "Sometimes"}), "unknown client auth type \"Sometimes\"");
}

// Traefik's buildTLSConfig reads the CA files: one that cannot be read or holds no certificate is
// the option set's error, so the routers using it are disabled with it.
TEST(TlsOptionsCheckTest, ACaFileThatCannotBeReadOrHoldsNoCertificateIsTheSetsErrorAndDisablesItsRouters) {
  TempDir dir;
  const std::string junk = dir.Write("junk.pem", "not a certificate\n");
  EXPECT_EQ(CheckTlsOptions({.client_ca_files = std::vector<std::string>{dir.path() + "/missing.pem"}}),
            "caFile " + dir.path() + "/missing.pem: cannot be read");
  EXPECT_EQ(CheckTlsOptions({.client_ca_files = std::vector<std::string>{junk}}), "invalid certificate(s) in " + junk);
  EXPECT_EQ(CheckTlsOptions({.client_ca_files = std::vector<std::string>{"-----BEGIN CERTIFICATE-----\nAAAA\n"}}),
            "invalid certificate(s) content");
  const CertificateFiles ca = WriteCertificate(dir, "ca", "client CA", {});
  EXPECT_EQ(CheckTlsOptions({.client_ca_files = std::vector<std::string>{ca.cert_file}}), "");
  RuntimeConfig rt = Runtime(fmt::format(R"J({{"http":{{"routers":{{
        "a":{{"rule":"Host(`a.test`)","service":"s","tls":{{"options":"mtls"}}}},
        "b":{{"rule":"Host(`b.test`)","service":"s","tls":{{}}}}}},
      "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"http://127.0.0.1:1"}}]}}}}}}}},
    "tls":{{"options":{{"mtls":{{"clientAuth":{{"caFiles":["{}/missing.pem"]}}}}}}}}}})J",
                                         dir.path()));
  EXPECT_EQ(rt.routers.at("a@file").status, RuntimeStatus::kDisabled);
  EXPECT_THAT(rt.routers.at("a@file").errors,
              ::testing::ElementsAre("building router handler: building TLS config: caFile " + dir.path() +
                                     "/missing.pem: cannot be read"));
  EXPECT_EQ(rt.routers.at("b@file").status, RuntimeStatus::kEnabled);
}

TEST_F(TlsProxyTest, MinVersionTls13RefusesATls12Client) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test"});
  auto errors = Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", R"("default":{"minVersion":"VersionTLS13"})"));
  EXPECT_TRUE(errors.empty()) << errors.front();
  TlsReply tls12 = TlsRequest(port_, "app.test", GetRequest("app.test"), {.max_version = TLS1_2_VERSION});
  EXPECT_FALSE(tls12.handshake);
  EXPECT_TRUE(tls12.response.empty());
  TlsReply tls13 = TlsRequest(port_, "app.test", GetRequest("app.test"));
  EXPECT_EQ(tls13.version, "TLSv1.3");
  EXPECT_TRUE(Answered200(tls13)) << tls13.response;

  // Without options, Traefik's default: TLS 1.2 is taken; maxVersion TLS12 keeps a 1.3 client at 1.2.
  errors = Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", ""));
  EXPECT_EQ(TlsRequest(port_, "app.test", "", {.max_version = TLS1_2_VERSION}).version, "TLSv1.2");
  errors = Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", R"("default":{"maxVersion":"VersionTLS12"})"));
  EXPECT_EQ(TlsRequest(port_, "app.test", "").version, "TLSv1.2");
}

TEST_F(TlsProxyTest, ACipherOutsideTheListIsRefused) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test"});
  // TLS 1.3's suites are accepted and change nothing, as in Traefik (Go does not configure them).
  auto errors = Serve(OptionsConfig(
      cert, "PathPrefix(`/`)", "",
      R"("default":{"cipherSuites":["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256","TLS_AES_256_GCM_SHA384"]})"));
  EXPECT_TRUE(errors.empty()) << errors.front();
  TlsReply outside = TlsRequest(port_, "app.test", GetRequest("app.test"),
                                {.max_version = TLS1_2_VERSION, .ciphers = "ECDHE-ECDSA-AES256-GCM-SHA384"});
  EXPECT_FALSE(outside.handshake);
  TlsReply inside = TlsRequest(port_, "app.test", GetRequest("app.test"),
                               {.max_version = TLS1_2_VERSION,
                                .ciphers = "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"});
  EXPECT_EQ(inside.cipher, "ECDHE-ECDSA-AES128-GCM-SHA256");
  EXPECT_TRUE(Answered200(inside)) << inside.response;
  EXPECT_TRUE(Answered200(TlsRequest(port_, "app.test", GetRequest("app.test"))));  // TLS 1.3

  // A name Go does not know is Traefik's error, and the hosts of those options are refused.
  errors = Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", R"("default":{"cipherSuites":["TLS_NOPE"]})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("invalid CipherSuite: TLS_NOPE"), std::string::npos) << errors[0];
  EXPECT_FALSE(TlsRequest(port_, "app.test", GetRequest("app.test")).handshake);
  const RouterInfo broken =
      Runtime(OptionsConfig(cert, "PathPrefix(`/`)", "", R"("default":{"cipherSuites":["TLS_NOPE"]})")).routers.at("r@file");
  EXPECT_EQ(broken.status, RuntimeStatus::kDisabled);
  ASSERT_EQ(broken.errors.size(), 1u);
  EXPECT_EQ(broken.errors[0], "building router handler: building TLS config: invalid CipherSuite: TLS_NOPE");
}

TEST_F(TlsProxyTest, SniStrictRefusesAnUnknownNameAndNoName) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test", "*.wild.test"});
  auto errors = Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", R"("default":{"sniStrict":true})"));
  EXPECT_TRUE(errors.empty()) << errors.front();
  TlsReply known = TlsRequest(port_, "app.test", GetRequest("app.test"));
  EXPECT_EQ(known.subject, "CN=app.test");
  EXPECT_TRUE(Answered200(known)) << known.response;
  EXPECT_TRUE(TlsRequest(port_, "x.wild.test", "").handshake);
  EXPECT_FALSE(TlsRequest(port_, "elsewhere.test", GetRequest("elsewhere.test")).handshake);
  EXPECT_FALSE(TlsRequest(port_, "", GetRequest("app.test")).handshake);
  // Without sniStrict the default certificate answers both.
  errors = Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", ""));
  EXPECT_EQ(TlsRequest(port_, "elsewhere.test", "").subject, "CN=PADDOCK DEFAULT CERT");
}

TEST_F(TlsProxyTest, RequireAndVerifyClientCertTakesOnlyCertificatesOfItsCa) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test"});
  TestCa ca("test client CA");
  TestCa other("another CA");
  const std::string ca_file = dir_.Write("ca.pem", ca.CertPem());
  auto errors = Serve(OptionsConfig(
      cert, "Host(`app.test`)", "mtls",
      fmt::format(R"("mtls":{{"clientAuth":{{"caFiles":["{}"],"clientAuthType":"RequireAndVerifyClientCert"}}}})",
                  ca_file)));
  EXPECT_TRUE(errors.empty()) << errors.front();
  const PemPair good = ca.Issue("good client");
  const PemPair stranger = other.Issue("stranger");
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version);
    TlsReply with_good = TlsRequest(port_, "app.test", GetRequest("app.test"),
                                    {.max_version = version, .cert_pem = good.cert, .key_pem = good.key});
    EXPECT_TRUE(Answered200(with_good)) << with_good.response;
    TlsReply without = TlsRequest(port_, "app.test", GetRequest("app.test"), {.max_version = version});
    EXPECT_TRUE(without.response.empty()) << without.response;
    TlsReply with_other = TlsRequest(port_, "app.test", GetRequest("app.test"),
                                     {.max_version = version, .cert_pem = stranger.cert, .key_pem = stranger.key});
    EXPECT_TRUE(with_other.response.empty()) << with_other.response;
  }
  // A session resumes under the options it was made with (its verified certificate with it).
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version);
    TlsReply first = TlsRequest(port_, "app.test", GetRequest("app.test"),
                                {.max_version = version, .cert_pem = good.cert, .key_pem = good.key});
    ASSERT_TRUE(Answered200(first)) << first.response;
    TlsReply again = TlsRequest(port_, "app.test", GetRequest("app.test"),
                                {.max_version = version, .session = first.session.get()});
    EXPECT_TRUE(again.resumed);
    EXPECT_TRUE(Answered200(again)) << again.response;
    // Made under the default options (other.test), it is not taken for app.test's.
    TlsReply open = TlsRequest(port_, "other.test", GetRequest("other.test"), {.max_version = version});
    TlsReply crossed = TlsRequest(port_, "app.test", GetRequest("app.test"),
                                  {.max_version = version, .session = open.session.get()});
    EXPECT_FALSE(crossed.resumed);
    EXPECT_TRUE(crossed.response.empty()) << crossed.response;
  }
  // RequireAnyClientCert takes any certificate but none; the CA is still Traefik's requirement for
  // the verifying types only.
  errors = Serve(OptionsConfig(cert, "Host(`app.test`)", "any",
                               R"("any":{"clientAuth":{"clientAuthType":"RequireAnyClientCert"}})"));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(Answered200(TlsRequest(port_, "app.test", GetRequest("app.test"),
                                     {.cert_pem = stranger.cert, .key_pem = stranger.key})));
  EXPECT_TRUE(TlsRequest(port_, "app.test", GetRequest("app.test")).response.empty());
  // A name outside the router's Host keeps the default options: no certificate asked.
  EXPECT_TRUE(TlsRequest(port_, "other.test", "").handshake);
}

// A PEM certificate's base64 on one line, as passTLSClientCert passes it.
std::string PemBody(const std::string& pem) {
  std::string out;
  std::istringstream lines(pem);
  for (std::string line; std::getline(lines, line);)
    if (!line.starts_with("-----")) out += line;
  return out;
}

TEST_F(TlsProxyTest, PassTlsClientCertPassesTheClientsCertificateAndItsInfoAndNeverTheClientsOwnHeaders) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test"});
  TestCa ca("test client CA");
  const std::string ca_file = dir_.Write("ca.pem", ca.CertPem());
  auto errors = Serve(fmt::format(R"J({{
    "http":{{"routers":{{"r":{{"rule":"Host(`app.test`)","service":"s","middlewares":["pass"],
                               "tls":{{"options":"mtls"}}}},
                         "plain":{{"rule":"Host(`plain.test`)","service":"s","middlewares":["pass"]}}}},
            "middlewares":{{"pass":{{"passTLSClientCert":{{"pem":true,
                "info":{{"subject":{{"commonName":true}},"issuer":{{"commonName":true}}}}}}}}}},
            "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"BACKEND"}}]}}}}}}}},
    "tls":{{"certificates":[{{"certFile":"{}","keyFile":"{}"}}],
           "options":{{"mtls":{{"clientAuth":{{"caFiles":["{}"],"clientAuthType":"VerifyClientCertIfGiven"}}}}}}}}}})J",
                                  cert.cert_file, cert.key_file, ca_file));
  EXPECT_TRUE(errors.empty()) << errors.front();
  const PemPair good = ca.Issue("good client");
  const TestCa intermediate("test intermediate", ca);
  const PemPair via = intermediate.Issue("via intermediate");
  const std::string forged =
      "GET /certs HTTP/1.1\r\nHost: {}\r\nX-Forwarded-Tls-Client-Cert: forged\r\n"
      "X-Forwarded-Tls-Client-Cert-Info: Subject%3D%22CN%3Dadmin%22\r\nConnection: close\r\n\r\n";
  const std::string passed = "cert=" + PemBody(good.cert) +
                             " info=Subject%3D%22CN%3Dgood+client%22%3BIssuer%3D%22CN%3Dtest+client+CA%22";
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version);
    TlsReply with_cert = TlsRequest(port_, "app.test", fmt::format(fmt::runtime(forged), "app.test"),
                                    {.max_version = version, .cert_pem = good.cert, .key_pem = good.key});
    ASSERT_TRUE(Answered200(with_cert)) << with_cert.response;
    EXPECT_EQ(Body(with_cert.response), passed);
    // A resumed session still carries the client's certificate.
    TlsReply resumed = TlsRequest(port_, "app.test", GetRequest("app.test", "/certs"),
                                  {.max_version = version, .session = with_cert.session.get()});
    EXPECT_TRUE(resumed.resumed);
    EXPECT_EQ(Body(resumed.response), passed);
    // A client that sends its intermediate CA too: its own certificate first, then the intermediate.
    TlsReply chained = TlsRequest(port_, "app.test", GetRequest("app.test", "/certs"),
                                  {.max_version = version, .cert_pem = via.cert, .key_pem = via.key,
                                   .chain_pem = intermediate.CertPem()});
    ASSERT_TRUE(Answered200(chained)) << chained.response;
    EXPECT_TRUE(Body(chained.response).starts_with("cert=" + PemBody(via.cert) + "," + PemBody(intermediate.CertPem()) +
                                                   " info=Subject%3D%22CN%3Dvia+intermediate%22%3BIssuer%3D%22CN%3D"
                                                   "test+intermediate%22%2CSubject%3D%22CN%3Dtest+intermediate%22%3B"
                                                   "Issuer%3D%22CN%3Dtest+client+CA%22"))
        << chained.response;
    // Without a certificate (allowed by VerifyClientCertIfGiven) the client's own values do not pass.
    TlsReply without = TlsRequest(port_, "app.test", fmt::format(fmt::runtime(forged), "app.test"),
                                  {.max_version = version});
    ASSERT_TRUE(Answered200(without)) << without.response;
    EXPECT_EQ(Body(without.response), "cert= info=");
  }
  // Nor over plain HTTP.
  http::Client client("127.0.0.1", port_);
  http::Request req;
  req.method = "GET";
  req.target = "/certs";
  req.headers = {{"Host", "plain.test"}, {"X-Forwarded-Tls-Client-Cert", "forged"},
                 {"X-Forwarded-Tls-Client-Cert-Info", "forged"}};
  auto plain = client.Send(req);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->body, "cert= info=");
}

TEST_F(TlsProxyTest, AWebSocketOverTlsIsRelayed) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test"});
  testing::SwitchingUpstream upstream("websocket", "hello;");
  auto errors = Serve(fmt::format(R"J({{
    "http":{{"routers":{{"r":{{"rule":"Host(`app.test`)","service":"s","tls":{{}}}}}},
            "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"http://127.0.0.1:{}"}}]}}}}}}}},
    "tls":{{"certificates":[{{"certFile":"{}","keyFile":"{}"}}]}}}})J",
                                  upstream.port(), cert.cert_file, cert.key_file));
  EXPECT_TRUE(errors.empty()) << errors.front();
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "app.test");
  ASSERT_EQ(SSL_connect(ssl), 1);
  auto write = [&](std::string_view data) { SSL_write(ssl, data.data(), static_cast<int>(data.size())); };
  auto read_until = [&](std::string_view needle) {
    std::string got;
    char buf[4096];
    for (int n; got.find(needle) == std::string::npos && (n = SSL_read(ssl, buf, sizeof(buf))) > 0;)
      got.append(buf, static_cast<size_t>(n));
    return got;
  };
  write("GET /chat HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nearly;");
  const std::string got = read_until("early;");
  EXPECT_TRUE(got.starts_with("HTTP/1.1 101 Switching Protocols\r\n")) << got;
  EXPECT_TRUE(got.ends_with("hello;early;")) << got;
  write("ping");
  EXPECT_EQ(read_until("ping"), "ping");
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
}

TEST_F(TlsProxyTest, EachHostGetsItsRoutersOptionsAndDifferentOptionsOnOneHostGetTheDefault) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"a.test", "b.test", "c.test"});
  const std::string config = fmt::format(R"J({{
    "http":{{"routers":{{
        "a":{{"rule":"Host(`a.test`)","service":"s","tls":{{"options":"tls13"}}}},
        "b":{{"rule":"Host(`b.test`)","service":"s","tls":{{}}}},
        "c1":{{"rule":"Host(`c.test`) && PathPrefix(`/1`)","service":"s","tls":{{"options":"tls13"}}}},
        "c2":{{"rule":"Host(`c.test`) && PathPrefix(`/2`)","service":"s","tls":{{"options":"default"}}}}}},
      "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"BACKEND"}}]}}}}}}}},
    "tls":{{"certificates":[{{"certFile":"{}","keyFile":"{}"}}],
           "options":{{"tls13":{{"minVersion":"VersionTLS13"}}}}}}}})J",
                                         cert.cert_file, cert.key_file);
  const ClientTls tls12{.max_version = TLS1_2_VERSION};
  EXPECT_TRUE(Serve(config).empty());
  EXPECT_FALSE(TlsRequest(port_, "a.test", GetRequest("a.test"), tls12).handshake);
  EXPECT_TRUE(Answered200(TlsRequest(port_, "A.TEST", GetRequest("a.test"))));
  EXPECT_TRUE(Answered200(TlsRequest(port_, "b.test", GetRequest("b.test"), tls12)));
  // c.test is named with tls13 and with default: the default options, and a warning on c1.
  EXPECT_TRUE(Answered200(TlsRequest(port_, "c.test", GetRequest("c.test", "/1"), tls12)));
  // Traefik's snicheck: a request for a router whose options are not the connection's is 421.
  TlsReply fronted = TlsRequest(port_, "b.test", GetRequest("a.test"));
  EXPECT_TRUE(fronted.response.starts_with("HTTP/1.1 421 ")) << fronted.response;
  EXPECT_EQ(Body(fronted.response), "Misdirected Request\n");
  EXPECT_TRUE(TlsRequest(port_, "a.test", GetRequest("b.test")).response.starts_with("HTTP/1.1 421 "));
  EXPECT_TRUE(Answered200(TlsRequest(port_, "c.test", GetRequest("b.test"))));  // both default
  RuntimeConfig rt = Runtime(fmt::format(R"J({{"http":{{"routers":{{
        "c1":{{"rule":"Host(`c.test`)","service":"s","tls":{{"options":"tls13"}}}},
        "c2":{{"rule":"Host(`c.test`)","service":"s","tls":{{}}}},
        "n":{{"rule":"PathPrefix(`/n`)","service":"s","tls":{{"options":"tls13"}}}},
        "u":{{"rule":"Host(`u.test`)","service":"s","tls":{{"options":"nope"}}}}}},
      "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"http://127.0.0.1:1"}}]}}}}}}}},
    "tls":{{"options":{{"tls13":{{"minVersion":"VersionTLS13"}}}}}}}})J"));
  // Traefik v3.7: every router in conflict on an entry point is served there by a copy named
  // `<ep>-conflicted-<name>` with the default options, the copy of one with options of its own warned.
  EXPECT_EQ(rt.routers.count("c1@file"), 0u);  // on no other entry point: gone
  EXPECT_EQ(rt.routers.count("c2@file"), 0u);
  const RouterInfo& c1 = rt.routers.at("web-conflicted-c1@file");
  EXPECT_EQ(c1.status, RuntimeStatus::kWarning);
  ASSERT_EQ(c1.errors.size(), 1u);
  EXPECT_EQ(c1.errors[0],
            "router's TLSOptions configuration is conflicting with other routers on the same entrypoint and host, "
            "default TLS options will be used instead");
  EXPECT_EQ(c1.provider, "file");
  EXPECT_EQ(c1.using_entry_points, std::vector<std::string>{"web"});
  EXPECT_EQ(rt.tls_options_by_router.at("web").at("web-conflicted-c1@file"), "default");
  EXPECT_TRUE(rt.routers.at("web-conflicted-c2@file").errors.empty());
  EXPECT_EQ(rt.tls_options_by_host.at("web").at("c.test"), "default");
  EXPECT_EQ(rt.routers.count("n@file"), 0u);  // options and no Host to choose them by: in conflict too
  ASSERT_EQ(rt.routers.at("web-conflicted-n@file").errors.size(), 1u);
  EXPECT_EQ(rt.routers.at("web-conflicted-n@file").errors[0],
            "no domain found in rule PathPrefix(`/n`), the TLS option tls13@file cannot be applied");
  EXPECT_THAT(rt.services.at("s@file").used_by,
              ::testing::ElementsAre("u@file", "web-conflicted-c1@file", "web-conflicted-c2@file",
                                     "web-conflicted-n@file"));
  EXPECT_EQ(rt.routers.at("u@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("u@file").errors[0], "building router handler: unknown TLS options: nope@file");
  EXPECT_EQ(rt.tls_options_by_host.at("web").count("u.test"), 0u);
}

TEST_F(TlsProxyTest, AlpnAdvertisesOnlyHttp11) {
  CertificateFiles cert = WriteCertificate(dir_, "app", "app.test", {"app.test"});
  EXPECT_TRUE(Serve(OptionsConfig(cert, "PathPrefix(`/`)", "", "")).empty());
  // Traefik's default list is h2, http/1.1, acme-tls/1; the edge serves HTTP/1.1 only.
  EXPECT_EQ(TlsRequest(port_, "app.test", "", {.alpn = {"h2", "http/1.1"}}).alpn, "http/1.1");
  TlsReply h2_only = TlsRequest(port_, "app.test", "", {.alpn = {"h2"}});
  EXPECT_TRUE(h2_only.handshake);
  EXPECT_EQ(h2_only.alpn, "");
  // A protocol the options do not name: Go's no_application_protocol.
  EXPECT_FALSE(TlsRequest(port_, "app.test", "", {.alpn = {"spdy/3"}}).handshake);
}

// ---- Through the Edge: the entry-point redirection and certResolver in the API ----

class NoTasks : public TaskSource {
 public:
  StatusOr<TaskRead> Read() override { return TaskRead{}; }
};

class TlsEdgeTest : public ::testing::Test {
 protected:
  void StartEdge(const std::string& dynamic_yaml) {
    const std::string url = "http://127.0.0.1:" + std::to_string(backend_.port());
    std::string text = dynamic_yaml;
    for (size_t at; (at = text.find("BACKEND")) != std::string::npos;) text.replace(at, 7, url);
    EdgeOptions o;
    o.api = EntryPointOptions{"traefik", "127.0.0.1", 0};
    o.entry_points = {{"web", "127.0.0.1", 0}, {"websecure", "127.0.0.1", 0}};
    o.entry_points[0].redirect = EntryPointRedirect{.to = "websecure"};
    o.entry_points[1].tls = websecure_tls_;
    o.entry_points[1].middlewares = websecure_middlewares_;
    o.file = dir_.Write("dynamic.yml", text);
    o.resync = std::chrono::hours(1);
    edge_ = std::make_unique<Edge>(o, source_, nullptr);
    auto ports = edge_->Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    ports_ = *ports;
  }
  void TearDown() override {
    if (edge_) edge_->Stop();
  }
  StatusOr<http::Response> Send(uint16_t port, const std::string& method, const std::string& target,
                                const std::string& host = "app.test") {
    http::Client client("127.0.0.1", port);
    http::Request r;
    r.method = method;
    r.target = target;
    if (!host.empty()) r.headers.push_back({"Host", host});
    return client.Send(r);
  }

  TempDir dir_;
  EchoBackend backend_;
  NoTasks source_;
  std::unique_ptr<Edge> edge_;
  std::map<std::string, uint16_t> ports_;
  // websecure's entry-point model (--entrypoints.websecure.http.{tls,middlewares}).
  std::optional<EntryPointTls> websecure_tls_;
  std::vector<std::string> websecure_middlewares_;
};

TEST_F(TlsEdgeTest, AnEntryPointRedirectsPlainHttpToTheTlsEntryPointAsTraefik) {
  StartEdge(R"(
http:
  routers:
    app:
      rule: PathPrefix(`/`)
      service: s
      entryPoints: [web, websecure]
      tls: {}
    plain:
      rule: PathPrefix(`/`)
      service: s
      entryPoints: [web]
  services:
    s:
      loadBalancer:
        servers: [{url: BACKEND}]
)");
  const std::string secure_port = std::to_string(ports_.at("websecure"));
  auto get = Send(ports_.at("web"), "GET", "/a/b?c=d");
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_EQ(get->status, 301);
  EXPECT_EQ(get->GetHeader("Location"), "https://app.test:" + secure_port + "/a/b?c=d");
  auto post = Send(ports_.at("web"), "POST", "/form");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status, 308);
  EXPECT_EQ(post->GetHeader("Location"), "https://app.test:" + secure_port + "/form");

  // Where it leads: TLS on websecure (and on web, which serves the tls router too).
  TlsReply r = TlsRequest(ports_.at("websecure"), "app.test", GetRequest("app.test", "/a"));
  EXPECT_EQ(Body(r.response), "proto=https port=443 path=/a") << r.response;
  // Plain HTTP on websecure is not redirected (only web's plain router exists, not on websecure).
  auto plain_secure = Send(ports_.at("websecure"), "GET", "/a");
  ASSERT_TRUE(plain_secure.ok());
  EXPECT_EQ(plain_secure->status, 404);

  // Traefik's shape in the API: the internal router and middleware, and the entry point's option.
  auto router = Send(ports_.at("traefik"), "GET", "/api/http/routers/web-to-websecure@internal", "");
  ASSERT_TRUE(router.ok());
  ASSERT_EQ(router->status, 200) << router->body;
  json::object o = json::parse(router->body).as_object();
  EXPECT_EQ(o.at("rule"), "HostRegexp(`^.+$`)");
  EXPECT_EQ(o.at("service"), "noop@internal");
  EXPECT_EQ(o.at("middlewares"), (json::array{"redirect-web-to-websecure@internal"}));
  EXPECT_EQ(o.at("status"), "enabled");
  auto ep = Send(ports_.at("traefik"), "GET", "/api/entrypoints/web", "");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(json::parse(ep->body).at("http").at("redirections"),
            json::parse(R"({"entryPoint":{"to":"websecure","scheme":"https","permanent":true,)"
                        R"("priority":9223372036854775806}})"));
}

TEST_F(TlsEdgeTest, ACertResolverRouterServesOnTheStaticCertificateWithAWarningAndNoKeyIsShown) {
  PemPair pair = GenerateSelfSigned("app.test", {"app.test"}, 30, true);
  const std::string cert_file = dir_.Write("app.crt", pair.cert);
  const std::string key_file = dir_.Write("app.key", pair.key);
  StartEdge(fmt::format(R"(
http:
  routers:
    app:
      rule: Host(`app.test`)
      service: s
      entryPoints: [websecure]
      tls:
        certResolver: letsencrypt
  services:
    s:
      loadBalancer:
        servers: [{{url: BACKEND}}]
tls:
  certificates:
    - certFile: {}
      keyFile: {}
)",
                        cert_file, key_file));
  TlsReply r = TlsRequest(ports_.at("websecure"), "app.test", GetRequest("app.test", "/x"));
  EXPECT_EQ(r.subject, "CN=app.test");
  EXPECT_TRUE(r.response.starts_with("HTTP/1.1 200 ")) << r.response;

  auto router = Send(ports_.at("traefik"), "GET", "/api/http/routers/app@file", "");
  ASSERT_TRUE(router.ok());
  json::object o = json::parse(router->body).as_object();
  EXPECT_EQ(o.at("status"), "warning");
  ASSERT_TRUE(o.contains("error"));
  EXPECT_NE(json::serialize(o.at("error")).find("letsencrypt"), std::string::npos) << router->body;

  // Nothing the API serves holds the key (Traefik shows no certificate either).
  const std::string key_line = pair.key.substr(pair.key.find('\n') + 1, 40);
  for (const char* path : {"/api/rawdata", "/api/overview", "/api/http/routers", "/api/entrypoints"}) {
    auto body = Send(ports_.at("traefik"), "GET", path, "");
    ASSERT_TRUE(body.ok());
    EXPECT_EQ(body->body.find(key_line), std::string::npos) << path;
    EXPECT_EQ(body->body.find("PRIVATE KEY"), std::string::npos) << path;
    EXPECT_EQ(body->body.find(key_file), std::string::npos) << path;
  }
}

// `--entrypoints.websecure.http.tls` and `.http.middlewares`: a router on web and websecure without
// a tls section is served over TLS on websecure by its copy `websecure-<name>`, behind the model's
// middlewares, and the API shows the copy and the entry point's model.
TEST_F(TlsEdgeTest, AnEntryPointsTlsModelServesItsRoutersOverTlsBehindItsMiddlewares) {
  PemPair pair = GenerateSelfSigned("app.test", {"app.test"}, 30, true);
  websecure_tls_ = EntryPointTls{};
  websecure_middlewares_ = {"tag@file"};
  StartEdge(fmt::format(R"(
http:
  routers:
    app:
      rule: Host(`app.test`)
      service: s
      entryPoints: [web, websecure]
  middlewares:
    tag:
      headers:
        customResponseHeaders:
          X-Model: websecure
  services:
    s:
      loadBalancer:
        servers: [{{url: BACKEND}}]
tls:
  certificates:
    - certFile: {}
      keyFile: {}
)",
                        dir_.Write("app.crt", pair.cert), dir_.Write("app.key", pair.key)));
  TlsReply r = TlsRequest(ports_.at("websecure"), "app.test", GetRequest("app.test", "/x"));
  EXPECT_TRUE(r.response.starts_with("HTTP/1.1 200 ")) << r.response;
  EXPECT_NE(r.response.find("X-Model: websecure"), std::string::npos) << r.response;
  auto plain = Send(ports_.at("websecure"), "GET", "/x");  // the copy is a TLS router
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->status, 404);

  auto copy = Send(ports_.at("traefik"), "GET", "/api/http/routers/websecure-app@file", "");
  ASSERT_TRUE(copy.ok());
  ASSERT_EQ(copy->status, 200) << copy->body;
  json::object o = json::parse(copy->body).as_object();
  EXPECT_EQ(o.at("entryPoints"), json::array{"websecure"});
  EXPECT_EQ(o.at("middlewares"), json::array{"tag@file"});
  EXPECT_TRUE(o.contains("tls"));
  auto original = Send(ports_.at("traefik"), "GET", "/api/http/routers/app@file", "");
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(json::parse(original->body).at("entryPoints"), json::array{"web"});
  auto ep = Send(ports_.at("traefik"), "GET", "/api/entrypoints/websecure", "");
  ASSERT_TRUE(ep.ok());
  const json::value http_fields = json::parse(ep->body).at("http");
  EXPECT_EQ(http_fields.at("middlewares"), json::array{"tag@file"});
  EXPECT_EQ(http_fields.at("tls"), json::object{});
}

TEST_F(TlsEdgeTest, AFilesTlsOptionsApplyToTheirRoutersHostAndTheApiShowsTheRoutersOptions) {
  PemPair pair = GenerateSelfSigned("app.test", {"app.test", "open.test"}, 30, true);
  TestCa ca("file CA");
  const PemPair client = ca.Issue("file client");
  StartEdge(fmt::format(R"(
http:
  routers:
    app:
      rule: Host(`app.test`)
      service: s
      entryPoints: [websecure]
      tls:
        options: mtls
    open:
      rule: Host(`open.test`)
      service: s
      entryPoints: [websecure]
      tls: {{}}
  services:
    s:
      loadBalancer:
        servers: [{{url: BACKEND}}]
tls:
  certificates:
    - certFile: {}
      keyFile: {}
  options:
    mtls:
      minVersion: VersionTLS13
      sniStrict: true
      clientAuth:
        caFiles: [{}]
        clientAuthType: RequireAndVerifyClientCert
)",
                        dir_.Write("app.crt", pair.cert), dir_.Write("app.key", pair.key),
                        dir_.Write("ca.pem", ca.CertPem())));
  const uint16_t port = ports_.at("websecure");
  EXPECT_TRUE(Answered200(TlsRequest(port, "app.test", GetRequest("app.test"),
                                     {.cert_pem = client.cert, .key_pem = client.key})));
  EXPECT_TRUE(TlsRequest(port, "app.test", GetRequest("app.test")).response.empty());
  EXPECT_FALSE(TlsRequest(port, "app.test", GetRequest("app.test"),
                          {.max_version = TLS1_2_VERSION, .cert_pem = client.cert, .key_pem = client.key})
                   .handshake);
  // open.test keeps Traefik's default options: TLS 1.2, no client certificate.
  EXPECT_TRUE(Answered200(TlsRequest(port, "open.test", GetRequest("open.test"), {.max_version = TLS1_2_VERSION})));

  auto router = Send(ports_.at("traefik"), "GET", "/api/http/routers/app@file", "");
  ASSERT_TRUE(router.ok());
  json::object o = json::parse(router->body).as_object();
  EXPECT_EQ(o.at("status"), "enabled") << router->body;
  EXPECT_EQ(o.at("tls").as_object().at("options"), "mtls") << router->body;
}

// ---- https servers: a servers transport's TLS (Traefik's serversTransports) ----

template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  return pred();
}

// The edge under test (TlsProxyTest's proxy_) in front of an https server: another proxy that
// serves TLS with `server.crt` (app.test, localhost; its default certificate too) and routes
// Host(`localhost`) to the echo backend, which answers "proto=https ..." for what came over TLS.
class UpstreamTlsTest : public TlsProxyTest {
 protected:
  void SetUp() override {
    TlsProxyTest::SetUp();
    auto ports = server_.Start();
    ASSERT_TRUE(ports.ok()) << ports.status().ToString();
    server_port_ = ports->at("web");
    server_cert_ = WriteCertificate(dir_, "server", "app.test", {"app.test", "localhost"});
    other_cert_ = WriteCertificate(dir_, "other", "other", {"other.test"});
    StartServer();
  }
  void TearDown() override {
    server_.Stop();
    TlsProxyTest::TearDown();
  }

  // The https server's configuration: its router's tls.options `router_options` ("" none) and the
  // members `options_json` of tls.options.
  void StartServer(const std::string& router_options = "", const std::string& options_json = "") {
    const std::string cert = fmt::format(R"({{"certFile":"{}","keyFile":"{}"}})", server_cert_.cert_file,
                                         server_cert_.key_file);
    const std::string config = fmt::format(R"J({{
      "http":{{"routers":{{"r":{{"rule":"Host(`localhost`)","service":"s","tls":{}}}}},
              "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"http://127.0.0.1:{}"}}]}}}}}}}},
      "tls":{{"certificates":[{}],"stores":{{"default":{{"defaultCertificate":{}}}}},"options":{{{}}}}}}})J",
                                           router_options.empty() ? "{}" : fmt::format(R"({{"options":"{}"}})", router_options),
                                           backend_.port(), cert, cert, options_json);
    CompileResult c = Compile(Runtime(config), server_registry_);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();
    server_.SetTable(c.table);
  }

  // Serves the edge's configuration: the service `s` with the https server ("UPSTREAM") and
  // `lb_extra` in its loadBalancer, a router to it, and the serversTransports `transports_json`.
  std::vector<std::string> ServeEdge(const std::string& lb_extra, const std::string& transports_json) {
    return Serve(fmt::format(R"J({{"http":{{
        "routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"s"}}}},
        "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"https://localhost:{}"}}]{}}}}}}},
        "serversTransports":{{{}}}}}}})J",
                             server_port_, lb_extra, transports_json));
  }
  std::string RootCa(const CertificateFiles& cert) const {
    return fmt::format(R"("rootCAs":["{}"])", cert.cert_file);
  }

  static StatusOr<http::Response> Get(http::Client& client) {
    http::Request req;
    req.method = "GET";
    req.target = "/x";
    req.headers.push_back({"Host", "localhost"});
    return client.Send(req);
  }
  StatusOr<http::Response> Get() {
    http::Client client("127.0.0.1", port_);
    return Get(client);
  }

  Proxy server_{ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}}, .io_threads = 1}};
  ServerRegistry server_registry_;
  uint16_t server_port_ = 0;
  CertificateFiles server_cert_, other_cert_;
};

TEST_F(UpstreamTlsTest, AVerifiedHttpsServerIsServedOverTlsOnPooledConnections) {
  auto errors = ServeEdge(R"(,"serversTransport":"ca")", R"("ca":{)" + RootCa(server_cert_) + "}");
  ASSERT_TRUE(errors.empty()) << errors.front();
  http::Client client("127.0.0.1", port_);
  for (int i = 0; i < 3; ++i) {
    auto r = Get(client);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->body, "proto=https port=443 path=/x");  // the https server's forwarding headers
  }
  const ProxyCounters c = proxy_.counters();
  EXPECT_EQ(c.upstream_connects, 1u);  // one keep-alive client, one I/O thread: one TLS connection
  EXPECT_EQ(c.upstream_reuses, 2u);
  EXPECT_EQ(c.upstream_tls_failures, 0u);
}

TEST_F(UpstreamTlsTest, AnUnknownCaOrAnotherNameIs502WithGosX509ErrorAndInsecureSkipVerifyServesIt) {
  // The system's roots (no rootCAs) do not hold the server's self-signed certificate.
  auto errors = ServeEdge("", "");
  ASSERT_TRUE(errors.empty()) << errors.front();
  auto r = Get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 502);
  EXPECT_EQ(r->body, "Bad Gateway");
  EXPECT_EQ(proxy_.LastUpstreamError(), "tls: failed to verify certificate: x509: certificate signed by unknown authority");
  // Another CA than the server's.
  errors = ServeEdge(R"(,"serversTransport":"other")", R"("other":{)" + RootCa(other_cert_) + "}");
  ASSERT_TRUE(errors.empty()) << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
  // The right CA, but serverName names another host: SNI and the verified name are serverName.
  errors = ServeEdge(R"(,"serversTransport":"named")",
                     R"("named":{"serverName":"wrong.test",)" + RootCa(server_cert_) + "}");
  ASSERT_TRUE(errors.empty()) << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
  EXPECT_EQ(proxy_.LastUpstreamError(),
            "tls: failed to verify certificate: x509: certificate is valid for app.test, localhost, not wrong.test");
  // serverName the certificate names: served.
  errors = ServeEdge(R"(,"serversTransport":"named")",
                     R"("named":{"serverName":"app.test",)" + RootCa(server_cert_) + "}");
  ASSERT_TRUE(errors.empty()) << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(proxy_.counters().upstream_tls_failures, 3u);
  // insecureSkipVerify: any certificate.
  errors = ServeEdge(R"(,"serversTransport":"insecure")", R"("insecure":{"insecureSkipVerify":true})");
  ASSERT_TRUE(errors.empty()) << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, "proto=https port=443 path=/x");
  // A root CA file that cannot be read is an error, and verifies nothing.
  errors = ServeEdge(R"(,"serversTransport":"missing")", R"("missing":{"rootCAs":["/nonexistent/ca.pem"]})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors.front().find("serversTransport missing@file: error while reading rootCAs"), std::string::npos)
      << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
}

TEST_F(UpstreamTlsTest, TheStaticServersTransportVerifiesServicesWithoutOne) {
  Proxy edge(ProxyOptions{.entry_points = {{"web", "127.0.0.1", 0}},
                          .io_threads = 1,
                          .upstream_tls = {.root_cas = {server_cert_.cert_file}}});
  auto ports = edge.Start();
  ASSERT_TRUE(ports.ok());
  CompileResult c = Compile(Runtime(fmt::format(R"J({{"http":{{
      "routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"s"}}}},
      "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"https://localhost:{}"}}],
                                          "serversTransport":"default@internal"}}}}}}}}}})J",
                                                server_port_)),
                            registry_);
  ASSERT_TRUE(c.errors.empty()) << c.errors.front();
  edge.SetTable(c.table);
  http::Client client("127.0.0.1", ports->at("web"));
  auto r = Get(client);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  edge.Stop();
}

TEST_F(UpstreamTlsTest, ATransportsClientCertificateIsPresentedToAServerThatRequiresOne) {
  TestCa ca("edge client CA");
  const std::string ca_file = dir_.Write("client-ca.pem", ca.CertPem());
  StartServer("mtls", fmt::format(
                          R"("mtls":{{"clientAuth":{{"caFiles":["{}"],"clientAuthType":"RequireAndVerifyClientCert"}}}})",
                          ca_file));
  const PemPair client = ca.Issue("the edge");
  const std::string cert_file = dir_.Write("client.crt", client.cert);
  const std::string key_file = dir_.Write("client.key", client.key);
  // Without a certificate the server refuses the handshake.
  auto errors = ServeEdge(R"(,"serversTransport":"ca")", R"("ca":{)" + RootCa(server_cert_) + "}");
  ASSERT_TRUE(errors.empty()) << errors.front();
  auto r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
  EXPECT_EQ(proxy_.counters().upstream_tls_failures, 1u);
  EXPECT_NE(proxy_.LastUpstreamError().find("certificate required"), std::string::npos) << proxy_.LastUpstreamError();
  // With the transport's certificate it is served.
  errors = ServeEdge(R"(,"serversTransport":"mtls")",
                     fmt::format(R"("mtls":{{{},"certificates":[{{"certFile":"{}","keyFile":"{}"}}]}})",
                                 RootCa(server_cert_), cert_file, key_file));
  ASSERT_TRUE(errors.empty()) << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, "proto=https port=443 path=/x");
}

// Traefik v3.7's peerCertSANs (and peerCertURI, deprecated): after the chain verifies against the
// roots — with insecureSkipVerify too — the server's certificate must carry one of them.
TEST_F(UpstreamTlsTest, PeerCertSansAreCheckedAfterTheChainEvenWithInsecureSkipVerify) {
  TestCa ca("workload CA");
  const PemPair issued = ca.Issue("web", "DNS:localhost,URI:spiffe://paddock/web");
  server_cert_ = {dir_.Write("web.crt", issued.cert), dir_.Write("web.key", issued.key)};
  StartServer();
  const std::string roots = fmt::format(R"("rootCAs":["{}"])", dir_.Write("workload-ca.pem", ca.CertPem()));
  auto status_through = [&](const std::string& transport) {
    auto errors = ServeEdge(R"(,"serversTransport":"t")", R"("t":{)" + roots + "," + transport + "}");
    EXPECT_TRUE(errors.empty()) << errors.front();
    auto r = Get();
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(status_through(R"("peerCertSANs":[{"type":"URI","value":"SPIFFE://paddock/web"}])"), 200);
  EXPECT_EQ(status_through(R"("insecureSkipVerify":true,"peerCertSANs":[{"type":"DNSName","value":"localhost"}])"),
            200);
  EXPECT_EQ(status_through(R"("peerCertSANs":[{"type":"URI","value":"spiffe://paddock/db"},
                                              {"type":"DNSName","value":"db.test"}])"),
            502);
  EXPECT_EQ(proxy_.LastUpstreamError(), "no matching SAN in peer certificate");
  // peerCertURI is a URI SAN, with Traefik's deprecation warning.
  auto errors = ServeEdge(R"(,"serversTransport":"t")", R"("t":{)" + roots + R"(,"peerCertURI":"spiffe://paddock/web"})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "serversTransport t@file: PeerCertURI option is deprecated, please use PeerCertSANs instead");
  auto r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  // insecureSkipVerify does not skip the chain when SANs are asked for: the system's roots do not
  // hold the workload CA.
  errors = ServeEdge(R"(,"serversTransport":"t")",
                     R"("t":{"insecureSkipVerify":true,"peerCertSANs":[{"type":"DNSName","value":"localhost"}]})");
  ASSERT_TRUE(errors.empty()) << errors.front();
  r = Get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
  EXPECT_EQ(proxy_.LastUpstreamError(), "tls: failed to verify certificate: x509: certificate signed by unknown authority");
}

// A transport's minVersion, maxVersion and cipherSuites bound the handshake with the server, and a
// value Traefik does not know is its error — after which nothing is sent through the transport
// (Traefik falls back to Go's default TLS configuration instead).
TEST_F(UpstreamTlsTest, ATransportsTlsVersionsAndCipherSuitesBoundTheHandshake) {
  // The server: TLS 1.2 only, one cipher suite.
  StartServer("old", R"("old":{"maxVersion":"VersionTLS12","cipherSuites":["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]})");
  auto through = [&](const std::string& transport) {
    auto errors = ServeEdge(R"(,"serversTransport":"t")", R"("t":{)" + RootCa(server_cert_) + transport + "}");
    auto r = Get();
    EXPECT_TRUE(r.ok());
    return std::pair{r.ok() ? r->status : 0, errors.empty() ? std::string() : errors.front()};
  };
  EXPECT_EQ(through(""), std::pair(200, std::string()));
  EXPECT_EQ(through(R"(,"minVersion":"VersionTLS13")"), std::pair(502, std::string()));
  EXPECT_EQ(through(R"(,"cipherSuites":["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"])"), std::pair(502, std::string()));
  EXPECT_EQ(through(R"(,"maxVersion":"VersionTLS12","cipherSuites":["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"])"),
            std::pair(200, std::string()));
  const uint64_t connects = proxy_.counters().upstream_connects;
  EXPECT_EQ(through(R"(,"cipherSuites":["TLS_NOPE"])"),
            std::pair(502, std::string("serversTransport t@file: invalid CipherSuite: TLS_NOPE")));
  EXPECT_EQ(through(R"(,"minVersion":"TLS1.2")"),
            std::pair(502, std::string("serversTransport t@file: invalid TLS minimum version: TLS1.2")));
  EXPECT_EQ(through(R"(,"maxVersion":"VersionTLS14")"),
            std::pair(502, std::string("serversTransport t@file: invalid TLS maximum version: VersionTLS14")));
  EXPECT_EQ(through(R"(,"minVersion":"VersionTLS13","maxVersion":"VersionTLS12")"),
            std::pair(502, std::string("serversTransport t@file: TLS minimum version VersionTLS13 is above the maximum "
                                       "version VersionTLS12")));
  EXPECT_EQ(proxy_.counters().upstream_connects, connects);  // none made through a transport in error
}

TEST_F(UpstreamTlsTest, AHealthCheckOverHttpsMarksTheServerUpAndAFailedVerificationDown) {
  // The server's URL is http (its port takes both); healthCheck.scheme=https probes it over TLS,
  // where its router answers, with the service's transport. Over plain HTTP nothing answers 2xx.
  const std::string url = fmt::format("http://localhost:{}", server_port_);
  auto serve = [&](const std::string& scheme, const std::string& transport) {
    return Serve(fmt::format(R"J({{"http":{{
        "routers":{{"r":{{"rule":"PathPrefix(`/`)","service":"s"}}}},
        "services":{{"s":{{"loadBalancer":{{"servers":[{{"url":"{}"}}],"serversTransport":"{}",
            "healthCheck":{{"scheme":"{}","path":"/health","hostname":"localhost","interval":"50ms"}}}}}}}},
        "serversTransports":{{"good":{{{}}},"bad":{{{}}}}}}}}})J",
                             url, transport, scheme, RootCa(server_cert_), RootCa(other_cert_)));
  };
  auto errors = serve("https", "good");
  ASSERT_TRUE(errors.empty()) << errors.front();
  std::shared_ptr<ServerState> state = proxy_.table()->backends.at("s@file")->servers.at(0).state;
  EXPECT_TRUE(WaitFor([&] { return state->health() == Health::kUp; }));
  // The same server (its health kept across reloads), now verified against another CA: DOWN.
  errors = serve("https", "bad");
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(WaitFor([&] { return state->health() == Health::kDown; }));
  // Back to the good CA: UP again; and plain HTTP (the URL's scheme) finds only a 404: DOWN.
  errors = serve("https", "good");
  EXPECT_TRUE(WaitFor([&] { return state->health() == Health::kUp; }));
  errors = serve("", "good");
  EXPECT_TRUE(WaitFor([&] { return state->health() == Health::kDown; }));
}

TEST(ServersTransportRuntimeTest, AnUnknownTransportPutsTheServiceInErrorInTraefiksWords) {
  RuntimeConfig rt = Runtime(R"J({"http":{
      "routers":{"r":{"rule":"PathPrefix(`/`)","service":"s"},"h":{"rule":"Path(`/h`)","service":"h"},
                 "ok":{"rule":"Path(`/ok`)","service":"ok"}},
      "services":{"s":{"loadBalancer":{"servers":[{"url":"https://10.0.0.1"},{"url":"https://10.0.0.2"}],
                                       "serversTransport":"nope"}},
                  "h":{"loadBalancer":{"serversTransport":"nope@http","healthCheck":{"path":"/"}}},
                  "ok":{"loadBalancer":{"servers":[{"url":"https://10.0.0.1"}],"serversTransport":"mine"}}},
      "serversTransports":{"mine":{"insecureSkipVerify":true}}}})J");
  const ServiceInfo& s = rt.services.at("s@file");
  EXPECT_EQ(s.status, RuntimeStatus::kDisabled);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0],
            "error building proxy for server URL https://10.0.0.1: getting RoundTripper: servers transport not found "
            "nope@file");
  EXPECT_EQ(rt.routers.at("r@file").status, RuntimeStatus::kDisabled);
  EXPECT_EQ(rt.routers.at("r@file").errors, s.errors);
  // Without servers, the health checker's lookup says it.
  ASSERT_EQ(rt.services.at("h@file").errors.size(), 1u);
  EXPECT_EQ(rt.services.at("h@file").errors[0], "getting RoundTripper: servers transport not found nope@http");
  // A transport of the provider: no error, and the service shows its qualified name (Traefik's
  // in-place GetQualifiedName).
  const ServiceInfo& ok = rt.services.at("ok@file");
  EXPECT_EQ(ok.status, RuntimeStatus::kEnabled);
  EXPECT_EQ(json::serialize(ok.config.at("loadBalancer").at("serversTransport")), R"("mine@file")");
  EXPECT_EQ(rt.servers_transports.count("mine@file"), 1u);
}

}  // namespace
}  // namespace paddock::edge
