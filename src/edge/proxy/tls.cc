#include "edge/proxy/tls.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
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

int OnServerName(SSL* ssl, int* /*alert*/, void* arg) {
  const auto* set = static_cast<const TlsCertificates*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  const TlsCertificate* chosen = set->Select(name ? std::string_view(name) : std::string_view());
  if (chosen->context() != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, chosen->context());
  return SSL_TLSEXT_ERR_OK;
}

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
                                                             std::vector<std::string>& errors) {
  auto set = std::make_shared<TlsCertificates>();
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
  SSL_CTX_set_tlsext_servername_callback(set->default_->context(), OnServerName);
  SSL_CTX_set_tlsext_servername_arg(set->default_->context(), set.get());
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
  std::string name = Lower(server_name);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty()) return default_.get();
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
  return default_.get();
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

}  // namespace paddock::edge
