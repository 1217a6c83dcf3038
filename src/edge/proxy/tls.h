// edge/proxy/tls: the certificates a TLS entry point serves — Traefik's static certificates
// (`tls.certificates[]{certFile,keyFile}` and `tls.stores.default.defaultCertificate` of the
// dynamic configuration), chosen per connection by the ClientHello's server name (SNI): a
// certificate naming it exactly, then one whose wildcard (`*.example.com`, one label) covers it,
// then the default. Without a configured default, the process's generated one ("PADDOCK DEFAULT
// CERT", self-signed, made in memory once, as Traefik's "TRAEFIK DEFAULT CERT"). With them,
// Traefik's TLS options (`tls.options.<name>`): at the ClientHello, the option set of the server
// name's host on the connection's entry point (TlsOptionsSpec, as the runtime resolves it) sets
// the connection's versions, ciphers, curves, client-certificate policy, tickets and ALPN, or
// refuses it (sniStrict without a certificate for the name, an option set that did not build).
//
// Towards https servers, UpstreamTls: a servers transport's client side (below).
//
// A set is built with each table (edge/proxy/compile.h) and swapped with it; a certificate that
// does not load is an error (naming its file, never its contents) and the others are served.
//
//   std::vector<std::string> errors;
//   auto certs = edge::TlsCertificates::Load({{"/etc/certs/a.pem", "/etc/certs/a.key"}}, std::nullopt, errors);
//   certs->Select("a.example.com")->subject;   // "CN=a.example.com"
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace paddock::edge {

// Traefik's FileOrContent pair: a path, or the PEM text itself (it starts with "-----BEGIN").
struct CertificateFiles {
  std::string cert_file;
  std::string key_file;
};

// One certificate loaded: its chain and key in a server SSL_CTX of its own.
class TlsCertificate {
 public:
  ~TlsCertificate();
  TlsCertificate(const TlsCertificate&) = delete;
  TlsCertificate& operator=(const TlsCertificate&) = delete;

  // The leaf's subject as OpenSSL prints it one-line ("CN=a.example.com"), for logs and tests.
  const std::string& subject() const { return subject_; }
  // The names it serves, lower-cased: the subject's CN, then its DNS and IP subject alternative
  // names (Traefik's getCertificateDomains).
  const std::vector<std::string>& names() const { return names_; }
  ssl_ctx_st* context() const { return ctx_; }
  // What traefik_tls_certs_not_after labels it with (Traefik's appendCertMetric): the subject's
  // CN as written, the serial number in decimal, the DNS names sorted and joined by ","; and its
  // notAfter in unix seconds.
  const std::string& common_name() const { return common_name_; }
  const std::string& serial() const { return serial_; }
  const std::string& dns_names() const { return dns_names_; }
  int64_t not_after() const { return not_after_; }

 private:
  friend class TlsCertificates;
  friend class TlsCertificateLoader;
  TlsCertificate() = default;
  ssl_ctx_st* ctx_ = nullptr;  // owned
  std::string subject_;
  std::vector<std::string> names_;
  std::string common_name_;
  std::string serial_;
  std::string dns_names_;
  int64_t not_after_ = 0;
};

// Traefik's `tls.options.<name>` (pkg/tls Options) as configured. A field left out takes Traefik's
// default (Options.SetDefaults and Go's crypto/tls): minVersion TLS 1.2, Go's default TLS 1.2
// cipher suites, X25519/P-256/P-384/P-521, ALPN h2, http/1.1, acme-tls/1, no client certificate.
struct TlsOptionsConfig {
  std::string min_version{};  // VersionTLS10..VersionTLS13; another value is ignored, as Traefik does
  std::string max_version{};
  std::optional<std::vector<std::string>> cipher_suites{};      // Go's names
  std::optional<std::vector<std::string>> curve_preferences{};  // Go's or the RFC's names
  std::vector<std::string> client_ca_files{};                   // FileOrContent
  std::string client_auth_type{};                               // "" or one of Go's five
  bool sni_strict = false;
  std::optional<std::vector<std::string>> alpn_protocols{};
  bool disable_session_tickets = false;
};

// One option set made ready for handshakes: what the ClientHello callback sets on a connection.
struct TlsOptionSet;

// What a table's TLS connections are served with besides the certificates: every option set by
// name ("default", "mine@file"), and per entry point the option set of each host name the TLS
// routers' Host matchers name (Traefik's per-SNI choice; "*" from Host(`*`) covers every name).
struct TlsOptionsSpec {
  std::map<std::string, TlsOptionsConfig> options;
  std::map<std::string, std::map<std::string, std::string>> hosts_by_entry_point;
};

// Checks `config` as Traefik's buildTLSConfig does, its CA files read: "" when it builds, else
// Traefik's words ("invalid CipherSuite: X", "invalid CurveID in curvePreferences: X", "invalid
// clientAuthType: X, CAFiles is required", "unknown client auth type \"X\"", "invalid
// certificate(s) in <file>") or, for a CA file that cannot be read, "caFile <file>: cannot be read".
std::string CheckTlsOptions(const TlsOptionsConfig& config);

class TlsCertificates {
 public:
  // Loads `certificates` (each one's failure is appended to `errors`, and it is left out) and the
  // default: `default_certificate` when given and it loads, else the generated one. Never fails
  // as a whole.
  // `options`: the TLS options (without any, or without `default`: Traefik's default options
  // serve every connection); an option set that does not build (a CA file that cannot be read)
  // is an error and the hosts that use it are refused, as Traefik's closing route.
  static std::shared_ptr<const TlsCertificates> Load(const std::vector<CertificateFiles>& certificates,
                                                     const std::optional<CertificateFiles>& default_certificate,
                                                     std::vector<std::string>& errors,
                                                     const TlsOptionsSpec& options = {});
  // Only the generated default (an entry point's before any table).
  static std::shared_ptr<const TlsCertificates> GeneratedOnly();

  // The certificate for `server_name` (case-insensitive, one trailing dot ignored): exact, then
  // wildcard, then the default (an empty name: the default). Never null.
  const TlsCertificate* Select(std::string_view server_name) const;
  const TlsCertificate& default_certificate() const { return *default_; }
  size_t size() const { return certificates_.size(); }
  // The certificates Traefik reports in traefik_tls_certs_not_after (its GetServerCertificates):
  // every configured one and a configured default, not the generated default.
  std::vector<const TlsCertificate*> Reported() const;

  // The SSL_CTX a handshake starts on: the default's, with a ClientHello callback that picks the
  // connection's option set by its server name and entry point, applies it (versions, ciphers,
  // curves, client certificates, tickets), refuses it (sniStrict, a broken option set), and moves
  // it to Select()'s certificate. The set must outlive every handshake begun on it.
  ssl_ctx_st* context() const { return default_->context(); }
  // A connection for `entry_point` (which must outlive the handshake) on this set.
  ssl_st* NewConnection(const std::string& entry_point) const;

  // The option set's name a connection shook hands with ("default", "mine@file"); "" before.
  static std::string_view OptionsName(const ssl_st* ssl);
  // The certificate exact or wildcard for `server_name`; null when only the default would do.
  const TlsCertificate* SelectConfigured(std::string_view server_name) const;
  // The option set for `server_name` on `entry_point`: its host's, else "*"'s, else `default`.
  // Null: no such set (`default` defined by two providers) or it did not build.
  const TlsOptionSet* OptionsFor(std::string_view entry_point, std::string_view server_name) const;

 private:
  std::vector<std::shared_ptr<const TlsCertificate>> certificates_;
  std::map<std::string, std::shared_ptr<const TlsOptionSet>> options_;  // null: did not build
  std::map<std::string, std::map<std::string, std::string>> hosts_by_entry_point_;
  std::shared_ptr<const TlsCertificate> default_;
  bool default_generated_ = false;
};

// A servers transport's TLS towards https servers: Traefik's ServersTransport TLS fields as its
// createTLSConfig makes them Go's tls.Config. The server's certificate is verified against
// `root_cas` (FileOrContent; none: the system's roots) and the name Go's http.Transport checks —
// `server_name`, else the host of the server's URL (a DNS name, or an IP address against the
// certificate's IP SANs) — unless `insecure_skip_verify`; that name is sent as SNI (none for an IP
// address, as Go). `certificates`: client certificates presented to a server that asks (mTLS;
// Go presents the first, as here).
//
//   std::vector<std::string> errors;
//   auto tls = edge::UpstreamTls::Build({.root_cas = {"/etc/ca.pem"}}, errors);
//   SSL* ssl = tls->NewConnection("app.internal");   // then a client handshake on it
struct UpstreamTlsConfig {
  std::string server_name{};
  bool insecure_skip_verify = false;
  std::vector<std::string> root_cas{};
  std::vector<CertificateFiles> certificates{};
  // Traefik v3.7's ServersTransport TLS choices: Go's cipher suite names (TLS 1.2 and below; none:
  // Go's defaults), `VersionTLS10`..`VersionTLS13` (none: TLS 1.2 up to 1.3, Go's client).
  std::vector<std::string> cipher_suites{};
  std::string min_version{};
  std::string max_version{};
  // peerCertSANs (and the deprecated peerCertURI, a URI one): the server's certificate must
  // verify against the roots — even with insecure_skip_verify — and carry one of them: a `URI`
  // SAN equal to the value (case-insensitive), or a `DNSName` the certificate is valid for.
  struct PeerSan {
    std::string type;  // "URI" | "DNSName"
    std::string value;
  };
  std::vector<PeerSan> peer_cert_sans{};
};

class UpstreamTls {
 public:
  // Never fails as a whole, as Traefik's: a root CA or a client certificate that cannot be read is
  // an error (appended; Traefik logs it) and left out — with root_cas given and none read, no
  // server verifies (Go's empty pool). A cipher suite or TLS version Traefik does not know, or a
  // minimum above the maximum, is Traefik's error (`invalid CipherSuite: X`, `invalid TLS minimum
  // version: X`, `invalid TLS maximum version: X`, `TLS minimum version A is above the maximum
  // version B`), and then — unlike Traefik, which falls back to Go's default TLS configuration,
  // weaker than the one asked for — no connection is made through it (NewConnection: null).
  static std::shared_ptr<const UpstreamTls> Build(const UpstreamTlsConfig& config, std::vector<std::string>& errors);
  ~UpstreamTls();
  UpstreamTls(const UpstreamTls&) = delete;
  UpstreamTls& operator=(const UpstreamTls&) = delete;

  // A client connection to the server whose URL names `url_host` (its SNI and verified name set
  // as above); null only when OpenSSL cannot make one.
  ssl_st* NewConnection(const std::string& url_host) const;
  // Why a client handshake on `ssl` failed, in Go's words where it has them ("tls: failed to
  // verify certificate: x509: certificate signed by unknown authority", "... x509: certificate is
  // valid for a.test, not b.test"), else OpenSSL's; `fallback` (the socket's error) when TLS
  // itself said nothing.
  static std::string HandshakeError(ssl_st* ssl, std::string_view fallback);
  const UpstreamTlsConfig& config() const { return config_; }

 private:
  UpstreamTls() = default;
  ssl_ctx_st* ctx_ = nullptr;  // owned
  UpstreamTlsConfig config_;
  bool broken_ = false;  // its TLS choices did not build: no connection is made
};

// A self-signed certificate and key, PEM: subject CN `common_name`, DNS SANs `dns_names`, valid
// for `days` from now, RSA 2048 (EC P-256 with `ec` — faster; tests use it). For the generated
// default and for tests.
struct PemPair {
  std::string cert;
  std::string key;
};
PemPair GenerateSelfSigned(std::string_view common_name, const std::vector<std::string>& dns_names, int days = 365,
                           bool ec = false);

// Whether `name` (lower-case) is covered by the certificate name `pattern` (lower-case): equal, or
// `*.rest` where `name` is one label followed by `.rest` (Traefik's matchDomain).
bool CertificateNameMatches(std::string_view name, std::string_view pattern);

}  // namespace paddock::edge
