// edge/proxy/tls: the certificates a TLS entry point serves — Traefik's static certificates
// (`tls.certificates[]{certFile,keyFile}` and `tls.stores.default.defaultCertificate` of the
// dynamic configuration), chosen per connection by the ClientHello's server name (SNI): a
// certificate naming it exactly, then one whose wildcard (`*.example.com`, one label) covers it,
// then the default. Without a configured default, the process's generated one ("PADDOCK DEFAULT
// CERT", self-signed, made in memory once, as Traefik's "TRAEFIK DEFAULT CERT").
//
// A set is built with each table (edge/proxy/compile.h) and swapped with it; a certificate that
// does not load is an error (naming its file, never its contents) and the others are served.
//
//   std::vector<std::string> errors;
//   auto certs = edge::TlsCertificates::Load({{"/etc/certs/a.pem", "/etc/certs/a.key"}}, std::nullopt, errors);
//   certs->Select("a.example.com")->subject;   // "CN=a.example.com"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

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

class TlsCertificates {
 public:
  // Loads `certificates` (each one's failure is appended to `errors`, and it is left out) and the
  // default: `default_certificate` when given and it loads, else the generated one. Never fails
  // as a whole.
  static std::shared_ptr<const TlsCertificates> Load(const std::vector<CertificateFiles>& certificates,
                                                     const std::optional<CertificateFiles>& default_certificate,
                                                     std::vector<std::string>& errors);
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

  // The SSL_CTX a handshake starts on: the default's, with a server-name callback that moves the
  // connection to Select()'s. The set must outlive every handshake begun on it.
  ssl_ctx_st* context() const { return default_->context(); }

 private:
  std::vector<std::shared_ptr<const TlsCertificate>> certificates_;
  std::shared_ptr<const TlsCertificate> default_;
  bool default_generated_ = false;
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
