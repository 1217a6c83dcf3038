#include "edge/proxy/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/status.h"

namespace paddock::edge {
namespace {

constexpr size_t kMaxPemBytes = 1 << 20;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// OpenSSL's queued errors as one line (they name no secret: reasons and library names only).
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

// Traefik's FileOrContent: PEM text as is, else the file's contents. `what` names it in errors.
StatusOr<std::string> FileOrContent(const std::string& value, std::string_view what) {
  if (value.empty()) return InvalidArgument(fmt::format("{} is empty", what));
  if (value.starts_with("-----BEGIN")) return value;
  std::ifstream in(value, std::ios::binary);
  if (!in) return NotFound(fmt::format("{} {}: cannot be read", what, value));
  std::string text;
  text.resize(kMaxPemBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxPemBytes) return InvalidArgument(fmt::format("{} {}: larger than 1 MiB", what, value));
  return text;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr MemBio(const std::string& text) { return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))); }

std::string SubjectText(X509* cert) {
  BioPtr out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(out.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

// What a certificate is named: its subject's CN as written (UTF-8; "" without one), and its
// subject alternative names in order — DNS names as written and IPv4 addresses — of which `dns`
// are the DNS ones.
struct SubjectNames {
  std::string common_name;
  std::vector<std::string> alt;
  std::vector<std::string> dns;
};

SubjectNames ReadSubjectNames(X509* cert) {
  SubjectNames out;
  X509_NAME* subject = X509_get_subject_name(cert);
  if (const int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0) {
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i)));
    if (n > 0) out.common_name.assign(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
    if (g->type == GEN_DNS) {
      const ASN1_IA5STRING* dns = g->d.dNSName;
      out.dns.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                           static_cast<size_t>(ASN1_STRING_length(dns)));
      out.alt.push_back(out.dns.back());
    } else if (g->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = g->d.iPAddress;
      const unsigned char* b = ASN1_STRING_get0_data(ip);
      if (ASN1_STRING_length(ip) == 4) out.alt.push_back(fmt::format("{}.{}.{}.{}", b[0], b[1], b[2], b[3]));
    }
  }
  GENERAL_NAMES_free(sans);
  return out;
}

// The names it serves: the CN, then the alternative names, lower-cased and without repeats.
std::vector<std::string> NamesOf(const SubjectNames& subject) {
  std::vector<std::string> names;
  auto add = [&](const std::string& written) {
    std::string name = Lower(written);
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  };
  add(subject.common_name);
  for (const std::string& alt : subject.alt) add(alt);
  return names;
}

// The serial number in decimal (Go's big.Int String).
std::string SerialDecimal(X509* cert) {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  char* dec = bn ? BN_bn2dec(bn) : nullptr;
  std::string out = dec ? dec : "";
  OPENSSL_free(dec);
  BN_free(bn);
  return out;
}

// notAfter in unix seconds.
int64_t NotAfterUnix(X509* cert) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// Go's cipher suite names (crypto/tls, as Traefik's CipherSuites map takes them) and OpenSSL's for
// the same suite; "" for TLS 1.3's suites, which Go does not let a configuration choose (they are
// accepted and change nothing, as in Traefik) and for TLS_FALLBACK_SCSV, which OpenSSL always
// honours.
struct GoName {
  std::string_view go;
  std::string_view openssl;
};
constexpr GoName kCipherNames[] = {
    {"TLS_RSA_WITH_RC4_128_SHA", "RC4-SHA"},
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "ECDHE-ECDSA-RC4-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA"},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_AES_128_GCM_SHA256", ""},
    {"TLS_AES_256_GCM_SHA384", ""},
    {"TLS_CHACHA20_POLY1305_SHA256", ""},
    {"TLS_FALLBACK_SCSV", ""},
};

// Traefik's default cipherSuites: Go's tls.CipherSuites() (its secure suites); the TLS 1.2 ones.
constexpr std::string_view kDefaultCiphers =
    "AES128-SHA:AES256-SHA:AES128-GCM-SHA256:AES256-GCM-SHA384:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:"
    "ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305:"
    "ECDHE-ECDSA-CHACHA20-POLY1305";

// Traefik's CurveIDs and OpenSSL's group names; "" for Go's ML-KEM hybrids, which this OpenSSL
// (3.0) does not have.
constexpr GoName kCurveNames[] = {
    {"secp256r1", "P-256"}, {"CurveP256", "P-256"}, {"secp384r1", "P-384"}, {"CurveP384", "P-384"},
    {"secp521r1", "P-521"}, {"CurveP521", "P-521"}, {"x25519", "X25519"},   {"X25519", "X25519"},
    {"x25519mlkem768", ""}, {"X25519MLKEM768", ""}, {"secp256r1mlkem768", ""}, {"SecP256r1MLKEM768", ""},
    {"secp384r1mlkem1024", ""}, {"SecP384r1MLKEM1024", ""},
};
// Go's default curve preferences without its ML-KEM hybrid.
constexpr std::string_view kDefaultGroups = "X25519:P-256:P-384:P-521";

// OpenSSL's names for Go's `names` from `table`, joined by ':' (a name OpenSSL has no equivalent
// for is skipped); `unknown` names the first that `table` lacks.
template <size_t N>
std::string OpenSslNames(const GoName (&table)[N], const std::vector<std::string>& names, std::string& unknown,
                         std::string* without_equivalent = nullptr) {
  std::string out;
  for (const std::string& go : names) {
    auto it = std::find_if(std::begin(table), std::end(table), [&](const GoName& g) { return g.go == go; });
    if (it == std::end(table)) {
      unknown = go;
      return "";
    }
    if (it->openssl.empty()) {
      if (without_equivalent && without_equivalent->empty()) *without_equivalent = go;
      continue;
    }
    if (!out.empty()) out += ':';
    out += it->openssl;
  }
  return out;
}

int VersionOf(std::string_view name) {
  if (name == "VersionTLS10") return TLS1_VERSION;
  if (name == "VersionTLS11") return TLS1_1_VERSION;
  if (name == "VersionTLS12") return TLS1_2_VERSION;
  if (name == "VersionTLS13") return TLS1_3_VERSION;
  return 0;
}

// The protocols the edge serves over TLS: HTTP/1.1 only (no h2, no acme-tls/1).
bool Served(std::string_view protocol) { return protocol == "http/1.1"; }

int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }

// The ex_data slots of a connection: its entry point's name, and the option set it was given.
int EntryPointIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}
int OptionsIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}
// The option set's name, a copy the connection owns (freed with it): the set belongs to the table
// whose certificates shook hands, which a reload frees while the connection goes on, and every
// request's snicheck reads the name.
void FreeOptionsName(void* /*parent*/, void* name, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/,
                     void* /*argp*/) {
  delete static_cast<std::string*>(name);
}
int OptionsNameIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, FreeOptionsName);
  return index;
}

// The ClientHello's host_name (RFC 6066 server_name list); "" without one.
std::string ClientHelloServerName(SSL* ssl) {
  const unsigned char* p = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) != 1 || len < 2) return "";
  size_t list = (size_t{p[0]} << 8) | p[1];
  if (list + 2 > len) return "";
  for (size_t at = 2; at + 3 <= 2 + list;) {
    const unsigned type = p[at];
    const size_t n = (size_t{p[at + 1]} << 8) | p[at + 2];
    if (at + 3 + n > 2 + list) return "";
    if (type == TLSEXT_NAMETYPE_host_name) return std::string(reinterpret_cast<const char*>(p + at + 3), n);
    at += 3 + n;
  }
  return "";
}

// Selects the ALPN protocol: the first of the option set's served protocols the client offers.
// None in common: no ALPN when the client offered a protocol the set names but the edge does not
// serve (an h2 client is answered in HTTP/1.1 or gives up), else Go's no_application_protocol.
int OnAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
           void* /*arg*/);

// The generated default's PEM, made once per process (Traefik makes its default at start).
const PemPair& GeneratedDefault() {
  static const PemPair pair = [] {
    unsigned char random[32];
    RAND_bytes(random, sizeof(random));
    std::string hex;
    for (unsigned char b : random) hex += fmt::format("{:02x}", b);
    return GenerateSelfSigned("PADDOCK DEFAULT CERT",
                              {fmt::format("{}.{}.paddock.default", hex.substr(0, 32), hex.substr(32))});
  }();
  return pair;
}

}  // namespace

struct TlsOptionSet {
  TlsOptionSet() = default;
  TlsOptionSet(const TlsOptionSet&) = delete;
  TlsOptionSet& operator=(const TlsOptionSet&) = delete;
  ~TlsOptionSet() {
    X509_STORE_free(ca_store);
    sk_X509_NAME_pop_free(ca_names, X509_NAME_free);
  }

  std::string name;
  int min_version = TLS1_2_VERSION;
  int max_version = 0;  // 0: the highest OpenSSL has
  std::string ciphers;  // TLS 1.2 and below, OpenSSL's names; "" none: TLS 1.3 only
  std::string groups;
  bool sni_strict = false;
  int verify_mode = SSL_VERIFY_NONE;
  bool verify_any = false;  // RequestClientCert, RequireAnyClientCert: any certificate is taken
  X509_STORE* ca_store = nullptr;             // owned; clientAuth.caFiles
  STACK_OF(X509_NAME)* ca_names = nullptr;    // owned; their subjects, sent in CertificateRequest
  std::vector<std::string> alpn_configured;   // as configured; the edge selects only those it serves
  bool no_tickets = false;
  // SHA-256 of the name: sessions resume only under the option set they were made with (and
  // OpenSSL refuses to resume a verified session without one).
  unsigned char session_context[32] = {};
};

namespace {

// Everything of `config` but the CA files, as Traefik's buildTLSConfig reads it; "" or its error.
std::string Translate(const TlsOptionsConfig& config, TlsOptionSet& out) {
  if (!config.client_auth_type.empty()) {
    static constexpr std::string_view kTypes[] = {"NoClientCert", "RequestClientCert", "RequireAnyClientCert",
                                                  "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"};
    const std::string& type = config.client_auth_type;
    if (config.client_ca_files.empty() && (type == "VerifyClientCertIfGiven" || type == "RequireAndVerifyClientCert"))
      return fmt::format("invalid clientAuthType: {}, CAFiles is required", type);
    if (std::find(std::begin(kTypes), std::end(kTypes), type) == std::end(kTypes))
      return fmt::format("unknown client auth type \"{}\"", type);
  }
  // caFiles alone: RequireAndVerifyClientCert, as Traefik.
  const std::string type = !config.client_auth_type.empty()       ? config.client_auth_type
                           : !config.client_ca_files.empty() ? std::string("RequireAndVerifyClientCert")
                                                              : std::string("NoClientCert");
  if (type == "RequestClientCert") {
    out.verify_mode = SSL_VERIFY_PEER;
    out.verify_any = true;
  } else if (type == "RequireAnyClientCert") {
    out.verify_mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    out.verify_any = true;
  } else if (type == "VerifyClientCertIfGiven") {
    out.verify_mode = SSL_VERIFY_PEER;
  } else if (type == "RequireAndVerifyClientCert") {
    out.verify_mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  }
  if (const int v = VersionOf(config.min_version)) out.min_version = v;
  if (const int v = VersionOf(config.max_version)) out.max_version = v;
  std::string unknown;
  out.ciphers = config.cipher_suites ? OpenSslNames(kCipherNames, *config.cipher_suites, unknown)
                                     : std::string(kDefaultCiphers);
  if (!unknown.empty()) return fmt::format("invalid CipherSuite: {}", unknown);
  std::string unavailable;
  out.groups = config.curve_preferences ? OpenSslNames(kCurveNames, *config.curve_preferences, unknown, &unavailable)
                                        : std::string(kDefaultGroups);
  if (!unknown.empty()) return fmt::format("invalid CurveID in curvePreferences: {}", unknown);
  if (!unavailable.empty())
    return fmt::format("curvePreferences: {} is not available in the edge's OpenSSL", unavailable);
  out.sni_strict = config.sni_strict;
  out.alpn_configured = config.alpn_protocols.value_or(std::vector<std::string>{"h2", "http/1.1", "acme-tls/1"});
  out.no_tickets = config.disable_session_tickets;
  return "";
}

// The option set `name` of `config`, its CA files read (Traefik's words when one does not hold a
// certificate).
StatusOr<std::shared_ptr<TlsOptionSet>> BuildOptionSet(const std::string& name, const TlsOptionsConfig& config) {
  auto out = std::make_shared<TlsOptionSet>();
  out->name = name;
  SHA256(reinterpret_cast<const unsigned char*>(name.data()), name.size(), out->session_context);
  if (std::string why = Translate(config, *out); !why.empty()) return InvalidArgument(why);
  if (!config.client_ca_files.empty()) {
    out->ca_store = X509_STORE_new();
    out->ca_names = sk_X509_NAME_new_null();
    for (const std::string& file : config.client_ca_files) {
      ASSIGN_OR_RETURN(std::string pem, FileOrContent(file, "caFile"));
      BioPtr bio = MemBio(pem);
      int added = 0;
      while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
        X509_STORE_add_cert(out->ca_store, ca);
        sk_X509_NAME_push(out->ca_names, X509_NAME_dup(X509_get_subject_name(ca)));
        X509_free(ca);
        ++added;
      }
      ERR_clear_error();
      if (added == 0) {
        return InvalidArgument(file.starts_with("-----BEGIN") ? std::string("invalid certificate(s) content")
                                                               : fmt::format("invalid certificate(s) in {}", file));
      }
    }
  }
  return out;
}

// Moves a connection to its option set and certificate, before OpenSSL picks a version.
int OnClientHello(SSL* ssl, int* alert, void* arg) {
  const auto* set = static_cast<const TlsCertificates*>(arg);
  const std::string name = ClientHelloServerName(ssl);
  const auto* entry_point = static_cast<const std::string*>(SSL_get_ex_data(ssl, EntryPointIndex()));
  const TlsOptionSet* options = set->OptionsFor(entry_point ? *entry_point : std::string_view(), name);
  if (options == nullptr) {  // Traefik's closing route for broken options
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  const TlsCertificate* cert = set->SelectConfigured(name);
  if (cert == nullptr) {
    if (options->sni_strict) {  // Traefik: no certificate for the name, the handshake fails
      *alert = SSL_AD_UNRECOGNIZED_NAME;
      return SSL_CLIENT_HELLO_ERROR;
    }
    cert = &set->default_certificate();
  }
  if (cert->context() != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, cert->context());
  SSL_set_session_id_context(ssl, options->session_context, sizeof(options->session_context));
  // Go lets a server offer TLS 1.0 and 1.1; OpenSSL 3 does so only at security level 0.
  if (options->min_version < TLS1_2_VERSION) SSL_set_security_level(ssl, 0);
  SSL_set_min_proto_version(ssl, options->min_version);
  SSL_set_max_proto_version(ssl, options->max_version);
  if (options->ciphers.empty()) {
    SSL_set_min_proto_version(ssl, TLS1_3_VERSION);  // no TLS 1.2 suite left: as Go, only 1.3 can succeed
  } else if (SSL_set_cipher_list(ssl, options->ciphers.c_str()) != 1) {
    ERR_clear_error();
    SSL_set_min_proto_version(ssl, TLS1_3_VERSION);  // none of them in this OpenSSL (RC4, 3DES)
  }
  if (SSL_set1_groups_list(ssl, options->groups.c_str()) != 1) ERR_clear_error();
  if (options->no_tickets) SSL_set_options(ssl, SSL_OP_NO_TICKET);
  if (options->verify_mode != SSL_VERIFY_NONE) {
    SSL_set_verify(ssl, options->verify_mode, options->verify_any ? AcceptAnyCertificate : nullptr);
    if (options->ca_store) {
      SSL_set1_verify_cert_store(ssl, options->ca_store);
      SSL_set_client_CA_list(ssl, SSL_dup_CA_list(options->ca_names));
    }
  }
  SSL_set_ex_data(ssl, OptionsIndex(), const_cast<TlsOptionSet*>(options));
  // (a second ClientHello, after a HelloRetryRequest, replaces the first's)
  delete static_cast<std::string*>(SSL_get_ex_data(ssl, OptionsNameIndex()));
  SSL_set_ex_data(ssl, OptionsNameIndex(), new std::string(options->name));
  return SSL_CLIENT_HELLO_SUCCESS;
}

int OnAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
           void* /*arg*/) {
  const auto* options = static_cast<const TlsOptionSet*>(SSL_get_ex_data(ssl, OptionsIndex()));
  if (options == nullptr) return SSL_TLSEXT_ERR_NOACK;
  bool offered_configured = false;
  for (const std::string& mine : options->alpn_configured) {
    for (unsigned int at = 0; at < inlen;) {
      const unsigned int n = in[at];
      if (at + 1 + n > inlen) break;
      const std::string_view theirs(reinterpret_cast<const char*>(in + at + 1), n);
      if (theirs == mine) {
        if (Served(mine)) {
          *out = in + at + 1;
          *outlen = static_cast<unsigned char>(n);
          return SSL_TLSEXT_ERR_OK;
        }
        offered_configured = true;
      }
      at += 1 + n;
    }
  }
  if (options->alpn_configured.empty() || offered_configured) return SSL_TLSEXT_ERR_NOACK;
  // Go: a client offering http/1.1 to a server without it connects as if it had not used ALPN.
  for (unsigned int at = 0; at < inlen; at += 1 + in[at])
    if (at + 1 + in[at] <= inlen && std::string_view(reinterpret_cast<const char*>(in + at + 1), in[at]) == "http/1.1")
      return SSL_TLSEXT_ERR_NOACK;
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

}  // namespace

std::string CheckTlsOptions(const TlsOptionsConfig& config) {
  auto built = BuildOptionSet("check", config);  // its CA files read, as Traefik's buildTLSConfig reads them
  return built.ok() ? std::string() : std::string(built.status().message());
}

TlsCertificate::~TlsCertificate() { SSL_CTX_free(ctx_); }

class TlsCertificateLoader {
 public:
  // The certificate of `files`, or why not (naming the files, never their contents).
  static StatusOr<std::shared_ptr<TlsCertificate>> Load(const CertificateFiles& files) {
    ERR_clear_error();
    const std::string cert_name =
        files.cert_file.starts_with("-----BEGIN") ? std::string("certificate (inline)") : files.cert_file;
    ASSIGN_OR_RETURN(std::string cert_pem, FileOrContent(files.cert_file, "certFile"));
    ASSIGN_OR_RETURN(std::string key_pem, FileOrContent(files.key_file, "keyFile"));
    BioPtr cert_bio = MemBio(cert_pem);
    X509Ptr leaf(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
    if (!leaf) return InvalidArgument(fmt::format("{}: no PEM certificate: {}", cert_name, OpenSslErrors()));
    BioPtr key_bio = MemBio(key_pem);
    PkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
    std::fill(key_pem.begin(), key_pem.end(), '\0');
    if (!key) {
      ERR_clear_error();  // its reasons may quote nothing secret, but say only what failed
      return InvalidArgument(fmt::format("{}: its key file holds no readable PEM private key", cert_name));
    }
    auto out = std::shared_ptr<TlsCertificate>(new TlsCertificate());
    out->ctx_ = SSL_CTX_new(TLS_server_method());
    if (!out->ctx_) return Internal(fmt::format("SSL_CTX_new: {}", OpenSslErrors()));
    SSL_CTX_set_min_proto_version(out->ctx_, TLS1_2_VERSION);  // Traefik's default options
    SSL_CTX_set_options(out->ctx_, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    // A connection's ALPN is chosen on the context of its certificate, by its option set.
    SSL_CTX_set_alpn_select_cb(out->ctx_, OnAlpn, nullptr);
    if (SSL_CTX_use_certificate(out->ctx_, leaf.get()) != 1)
      return InvalidArgument(fmt::format("{}: {}", cert_name, OpenSslErrors()));
    ERR_clear_error();
    while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
      if (SSL_CTX_add0_chain_cert(out->ctx_, extra) != 1) {
        X509_free(extra);
        return InvalidArgument(fmt::format("{}: its chain: {}", cert_name, OpenSslErrors()));
      }
    }
    ERR_clear_error();  // the end of the PEM text
    if (SSL_CTX_use_PrivateKey(out->ctx_, key.get()) != 1 || SSL_CTX_check_private_key(out->ctx_) != 1) {
      ERR_clear_error();
      return InvalidArgument(fmt::format("{}: the key does not match the certificate", cert_name));
    }
    SubjectNames names = ReadSubjectNames(leaf.get());
    out->subject_ = SubjectText(leaf.get());
    out->names_ = NamesOf(names);
    out->common_name_ = std::move(names.common_name);
    out->serial_ = SerialDecimal(leaf.get());
    std::sort(names.dns.begin(), names.dns.end());  // Traefik sorts DNSNames for its metric
    out->dns_names_ = fmt::format("{}", fmt::join(names.dns, ","));
    out->not_after_ = NotAfterUnix(leaf.get());
    return out;
  }
};

std::shared_ptr<const TlsCertificates> TlsCertificates::Load(const std::vector<CertificateFiles>& certificates,
                                                             const std::optional<CertificateFiles>& default_certificate,
                                                             std::vector<std::string>& errors,
                                                             const TlsOptionsSpec& options) {
  auto set = std::make_shared<TlsCertificates>();
  if (options.options.empty()) {
    auto built = BuildOptionSet("default", {});
    if (!built.ok()) std::abort();  // Traefik's defaults always build
    set->options_["default"] = std::move(*built);
  }
  for (const auto& [name, config] : options.options) {
    auto built = BuildOptionSet(name, config);
    if (!built.ok()) {
      errors.push_back(fmt::format("tls options {}: {} (its hosts' handshakes are refused)", name,
                                   built.status().message()));
      set->options_[name] = nullptr;
      continue;
    }
    set->options_[name] = std::move(*built);
  }
  set->hosts_by_entry_point_ = options.hosts_by_entry_point;
  for (const CertificateFiles& files : certificates) {
    auto loaded = TlsCertificateLoader::Load(files);
    if (!loaded.ok()) {
      errors.push_back(fmt::format("tls certificate: {}", loaded.status().message()));
      continue;
    }
    set->certificates_.push_back(std::move(*loaded));
  }
  if (default_certificate) {
    auto loaded = TlsCertificateLoader::Load(*default_certificate);
    if (loaded.ok()) {
      set->default_ = std::move(*loaded);
    } else {
      errors.push_back(fmt::format("tls default certificate (the generated one is served): {}",
                                   loaded.status().message()));
    }
  }
  if (!set->default_) {
    const PemPair& generated = GeneratedDefault();
    auto loaded = TlsCertificateLoader::Load({generated.cert, generated.key});
    // A certificate made here a moment ago always loads.
    if (!loaded.ok()) std::abort();
    set->default_ = std::move(*loaded);
    set->default_generated_ = true;
  }
  SSL_CTX_set_client_hello_cb(set->default_->context(), OnClientHello, set.get());
  return set;
}

std::shared_ptr<const TlsCertificates> TlsCertificates::GeneratedOnly() {
  std::vector<std::string> ignored;
  return Load({}, std::nullopt, ignored);
}

std::vector<const TlsCertificate*> TlsCertificates::Reported() const {
  std::vector<const TlsCertificate*> out;
  for (const auto& cert : certificates_) out.push_back(cert.get());
  if (!default_generated_) out.push_back(default_.get());
  return out;
}

const TlsCertificate* TlsCertificates::Select(std::string_view server_name) const {
  const TlsCertificate* chosen = SelectConfigured(server_name);
  return chosen ? chosen : default_.get();
}

ssl_st* TlsCertificates::NewConnection(const std::string& entry_point) const {
  SSL* ssl = SSL_new(context());
  if (ssl) SSL_set_ex_data(ssl, EntryPointIndex(), const_cast<std::string*>(&entry_point));
  return ssl;
}

std::string_view TlsCertificates::OptionsName(const ssl_st* ssl) {
  const auto* name = static_cast<const std::string*>(SSL_get_ex_data(ssl, OptionsNameIndex()));
  return name ? std::string_view(*name) : std::string_view();
}

const TlsOptionSet* TlsCertificates::OptionsFor(std::string_view entry_point, std::string_view server_name) const {
  std::string name = Lower(server_name);
  if (!name.empty() && name.back() == '.') name.pop_back();
  std::string chosen = "default";
  if (auto ep = hosts_by_entry_point_.find(std::string(entry_point)); ep != hosts_by_entry_point_.end()) {
    const auto& hosts = ep->second;
    // Traefik's HostSNI routes: the name itself, then a `*.` pattern covering it, then `*`.
    if (auto it = hosts.find(name); !name.empty() && it != hosts.end()) {
      chosen = it->second;
    } else {
      bool found = false;
      for (const auto& [pattern, option] : hosts) {
        if (!name.empty() && pattern.starts_with("*.") && CertificateNameMatches(name, pattern)) {
          chosen = option;
          found = true;
          break;
        }
      }
      if (!found)
        if (auto any = hosts.find("*"); any != hosts.end()) chosen = any->second;
    }
  }
  auto it = options_.find(chosen);
  return it == options_.end() ? nullptr : it->second.get();
}

const TlsCertificate* TlsCertificates::SelectConfigured(std::string_view server_name) const {
  std::string name = Lower(server_name);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty()) return nullptr;
  // Exact names first, then wildcards; among several, Traefik's order (its reverse-sorted keys).
  const TlsCertificate* best = nullptr;
  std::string best_key;
  for (const bool wildcard : {false, true}) {
    for (const auto& cert : certificates_) {
      for (const std::string& pattern : cert->names()) {
        const bool matches = wildcard ? (pattern.starts_with("*.") && CertificateNameMatches(name, pattern))
                                      : pattern == name;
        if (!matches) continue;
        std::string key = fmt::format("{}", fmt::join(cert->names(), ","));
        if (!best || key > best_key) {
          best = cert.get();
          best_key = std::move(key);
        }
      }
    }
    if (best) return best;
  }
  return nullptr;
}

bool CertificateNameMatches(std::string_view name, std::string_view pattern) {
  if (name == pattern) return true;
  if (!pattern.starts_with("*.")) return false;
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  return name.substr(dot) == pattern.substr(1);
}

PemPair GenerateSelfSigned(std::string_view common_name, const std::vector<std::string>& dns_names, int days, bool ec) {
  PkeyPtr key(ec ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048));
  X509Ptr cert(X509_new());
  if (!key || !cert) std::abort();  // out of memory or a broken OpenSSL: nothing to serve with
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn(common_name);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  auto add_ext = [&](int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    if (X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str())) {
      X509_add_ext(cert.get(), ext, -1);
      X509_EXTENSION_free(ext);
    }
  };
  add_ext(NID_basic_constraints, "critical,CA:FALSE");
  add_ext(NID_key_usage, "critical,digitalSignature,keyEncipherment,keyAgreement,dataEncipherment");
  add_ext(NID_ext_key_usage, "serverAuth");
  if (!dns_names.empty()) {
    std::string sans;
    for (const std::string& d : dns_names) sans += (sans.empty() ? "DNS:" : ",DNS:") + d;
    add_ext(NID_subject_alt_name, sans);
  }
  X509_sign(cert.get(), key.get(), EVP_sha256());
  PemPair out;
  BioPtr cert_out(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(cert_out.get(), cert.get());
  BioPtr key_out(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(key_out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(cert_out.get(), &data);
  out.cert.assign(data, static_cast<size_t>(n));
  n = BIO_get_mem_data(key_out.get(), &data);
  out.key.assign(data, static_cast<size_t>(n));
  return out;
}

// ---- Upstream TLS (a servers transport's) ----

UpstreamTls::~UpstreamTls() { SSL_CTX_free(ctx_); }

namespace {

// The names of a server certificate that did not match (ex_data of its connection, freed with it):
// OpenSSL keeps no peer certificate after a failed handshake, and Go's error lists them.
void FreeNames(void* /*parent*/, void* names, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/, void* /*argp*/) {
  delete static_cast<std::string*>(names);
}
int MismatchNamesIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, FreeNames);
  return index;
}
// Whether `leaf` carries one of `sans` (Traefik's VerifyPeerCertificate): a URI SAN equal to a URI
// one, case-insensitively, or a DNS name (or IP address) the certificate is valid for.
bool HasPeerSan(X509* leaf, const std::vector<UpstreamTlsConfig::PeerSan>& sans) {
  for (const UpstreamTlsConfig::PeerSan& san : sans) {
    if (san.type == "URI") {
      auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
      bool found = false;
      for (int i = 0; names && i < sk_GENERAL_NAME_num(names) && !found; ++i) {
        const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
        if (name->type != GEN_URI) continue;
        std::string_view uri(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.uniformResourceIdentifier)),
                             static_cast<size_t>(ASN1_STRING_length(name->d.uniformResourceIdentifier)));
        found = uri.size() == san.value.size() &&
                std::equal(uri.begin(), uri.end(), san.value.begin(), [](char a, char b) {
                  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                });
      }
      GENERAL_NAMES_free(names);
      if (found) return true;
    } else if (san.type == "DNSName") {
      if (X509_check_host(leaf, san.value.data(), san.value.size(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, nullptr) == 1 ||
          X509_check_ip_asc(leaf, san.value.c_str(), 0) == 1)
        return true;
    }
  }
  return false;
}

int OnUpstreamVerify(int ok, X509_STORE_CTX* ctx) {
  const int error = X509_STORE_CTX_get_error(ctx);
  // peerCertSANs: once the chain is good, the leaf must carry one of them.
  if (ok && X509_STORE_CTX_get_error_depth(ctx) == 0) {
    auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
    const auto* tls = ssl ? static_cast<const UpstreamTlsConfig*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl))) : nullptr;
    if (tls && !tls->peer_cert_sans.empty() && !HasPeerSan(X509_STORE_CTX_get_current_cert(ctx), tls->peer_cert_sans)) {
      X509_STORE_CTX_set_error(ctx, X509_V_ERR_APPLICATION_VERIFICATION);
      return 0;
    }
  }
  if (!ok && (error == X509_V_ERR_HOSTNAME_MISMATCH || error == X509_V_ERR_IP_ADDRESS_MISMATCH)) {
    auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
    X509* leaf = X509_STORE_CTX_get_current_cert(ctx);
    if (ssl && leaf && !SSL_get_ex_data(ssl, MismatchNamesIndex()))
      SSL_set_ex_data(ssl, MismatchNamesIndex(),
                      new std::string(fmt::format("{}", fmt::join(ReadSubjectNames(leaf).alt, ", "))));
  }
  return ok;
}

}  // namespace

std::shared_ptr<const UpstreamTls> UpstreamTls::Build(const UpstreamTlsConfig& config,
                                                      std::vector<std::string>& errors) {
  auto out = std::shared_ptr<UpstreamTls>(new UpstreamTls());
  out->config_ = config;
  out->ctx_ = SSL_CTX_new(TLS_client_method());
  if (!out->ctx_) std::abort();  // out of memory: nothing to serve with
  SSL_CTX_set_app_data(out->ctx_, &out->config_);  // for OnUpstreamVerify's peerCertSANs
  SSL_CTX_set_min_proto_version(out->ctx_, TLS1_2_VERSION);  // Go's client default
  // peerCertSANs verify the chain even with insecureSkipVerify (Traefik's VerifyPeerCertificate);
  // the server's name is checked only without it (NewConnection).
  SSL_CTX_set_verify(out->ctx_,
                     config.insecure_skip_verify && config.peer_cert_sans.empty() ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     OnUpstreamVerify);
  // Traefik's createTLSConfig: each cipher suite and version must be one it knows.
  std::string unknown;
  const std::string ciphers = OpenSslNames(kCipherNames, config.cipher_suites, unknown);
  const int min_version = config.min_version.empty() ? TLS1_2_VERSION : VersionOf(config.min_version);
  const int max_version = config.max_version.empty() ? TLS1_3_VERSION : VersionOf(config.max_version);
  std::string refused;
  if (!unknown.empty())
    refused = fmt::format("invalid CipherSuite: {}", unknown);
  else if (min_version == 0)
    refused = fmt::format("invalid TLS minimum version: {}", config.min_version);
  else if (max_version == 0)
    refused = fmt::format("invalid TLS maximum version: {}", config.max_version);
  else if (!config.min_version.empty() && !config.max_version.empty() && min_version > max_version)
    refused = fmt::format("TLS minimum version {} is above the maximum version {}", config.min_version,
                          config.max_version);
  if (!refused.empty()) {
    errors.push_back(refused);
    out->broken_ = true;
    return out;
  }
  // Go lets a client offer TLS 1.0 and 1.1; OpenSSL 3 does so only at security level 0.
  if (min_version < TLS1_2_VERSION) SSL_CTX_set_security_level(out->ctx_, 0);
  SSL_CTX_set_min_proto_version(out->ctx_, min_version);
  SSL_CTX_set_max_proto_version(out->ctx_, max_version);
  if (!config.cipher_suites.empty() &&
      (ciphers.empty() || SSL_CTX_set_cipher_list(out->ctx_, ciphers.c_str()) != 1)) {
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(out->ctx_, TLS1_3_VERSION);  // no TLS 1.2 suite left: as Go, only 1.3
  }
  if (config.root_cas.empty()) {
    SSL_CTX_set_default_verify_paths(out->ctx_);  // the system's roots, as Go's nil RootCAs
  } else {
    X509_STORE* store = SSL_CTX_get_cert_store(out->ctx_);
    for (const std::string& ca : config.root_cas) {
      auto pem = FileOrContent(ca, "rootCA");
      if (!pem.ok()) {
        errors.push_back(fmt::format("error while reading rootCAs: {}", pem.status().message()));
        continue;
      }
      BioPtr bio = MemBio(*pem);
      while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
        X509_STORE_add_cert(store, cert);
        X509_free(cert);
      }
      ERR_clear_error();  // the end of the PEM text (Go's AppendCertsFromPEM skips what is not a certificate)
    }
  }
  for (const CertificateFiles& files : config.certificates) {
    auto loaded = TlsCertificateLoader::Load(files);
    if (!loaded.ok()) {
      errors.push_back(fmt::format("unable to append certificate to the servers transport: {}",
                                   loaded.status().message()));
      continue;
    }
    // The first that loads is presented (Go presents Certificates[0] to a server that asks).
    SSL_CTX* from = (*loaded)->context();
    if (SSL_CTX_use_certificate(out->ctx_, SSL_CTX_get0_certificate(from)) != 1 ||
        SSL_CTX_use_PrivateKey(out->ctx_, SSL_CTX_get0_privatekey(from)) != 1) {
      ERR_clear_error();
      errors.push_back("unable to append certificate to the servers transport");
      continue;
    }
    STACK_OF(X509)* chain = nullptr;
    if (SSL_CTX_get0_chain_certs(from, &chain) == 1 && chain)
      for (int i = 0; i < sk_X509_num(chain); ++i) SSL_CTX_add1_chain_cert(out->ctx_, sk_X509_value(chain, i));
    break;
  }
  return out;
}

ssl_st* UpstreamTls::NewConnection(const std::string& url_host) const {
  if (broken_) return nullptr;
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) return nullptr;
  const std::string& name = config_.server_name.empty() ? url_host : config_.server_name;
  in6_addr six{};
  in_addr four{};
  const bool ip = inet_pton(AF_INET, name.c_str(), &four) == 1 || inet_pton(AF_INET6, name.c_str(), &six) == 1;
  if (!ip && !name.empty()) SSL_set_tlsext_host_name(ssl, name.c_str());
  if (!config_.insecure_skip_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (ip)
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    else
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  }
  return ssl;
}

std::string UpstreamTls::HandshakeError(ssl_st* ssl, std::string_view fallback) {
  const long verify = SSL_get_verify_result(ssl);
  std::string queued;
  if (ERR_peek_error() != 0) queued = OpenSslErrors();
  if (verify == X509_V_OK) {
    if (!queued.empty()) return fmt::format("remote error: tls: {}", queued);
    return std::string(fallback);
  }
  std::string x509;
  switch (verify) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      x509 = "certificate signed by unknown authority";
      break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH: {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      std::string wanted;
      if (const char* host = X509_VERIFY_PARAM_get0_host(param, 0)) {
        wanted = host;
      } else if (char* ip = X509_VERIFY_PARAM_get1_ip_asc(param)) {
        wanted = ip;
        OPENSSL_free(ip);
      }
      const auto* names = static_cast<const std::string*>(SSL_get_ex_data(ssl, MismatchNamesIndex()));
      x509 = !names || names->empty() ? std::string("certificate relies on legacy Common Name field, use SANs instead")
                                      : fmt::format("certificate is valid for {}, not {}", *names, wanted);
      break;
    }
    case X509_V_ERR_APPLICATION_VERIFICATION:  // peerCertSANs (OnUpstreamVerify): Traefik's own words
      return "no matching SAN in peer certificate";
    default:
      x509 = X509_verify_cert_error_string(verify);
  }
  return fmt::format("tls: failed to verify certificate: x509: {}", x509);
}

}  // namespace paddock::edge
