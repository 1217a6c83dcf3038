// passTLSClientCert's two headers from certificates made here, whose every field the expected texts
// spell out by Go's rules (pkix.Name's fields in Traefik's order, big.Int, Unix seconds, net.IP).
// The middleware end to end, over a real mutual-TLS connection: proxy/tls_test.cc.
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include "edge/internal/middleware_util.h"
#include "edge/middleware.h"

namespace paddock::edge::mw {
namespace {

struct Entry {
  int nid;
  int type;  // MBSTRING_UTF8, V_ASN1_BMPSTRING, ...
  std::string value;
};

void AddEntries(X509_NAME* name, const std::vector<Entry>& entries) {
  for (const Entry& e : entries) {
    if (e.type == V_ASN1_BMPSTRING) {  // UTF-16BE of an ASCII-or-Latin-1 text given as UTF-8
      ASN1_STRING* s = ASN1_STRING_type_new(V_ASN1_BMPSTRING);
      std::string utf16;
      for (size_t i = 0; i < e.value.size(); ++i) {
        unsigned cp = static_cast<unsigned char>(e.value[i]);
        if (cp >= 0xc0) cp = ((cp & 0x1f) << 6) | (static_cast<unsigned char>(e.value[++i]) & 0x3f);
        utf16 += static_cast<char>(cp >> 8);
        utf16 += static_cast<char>(cp & 0xff);
      }
      ASN1_STRING_set(s, utf16.data(), static_cast<int>(utf16.size()));
      X509_NAME_ENTRY* entry = X509_NAME_ENTRY_create_by_NID(nullptr, e.nid, V_ASN1_BMPSTRING,
                                                             ASN1_STRING_get0_data(s), ASN1_STRING_length(s));
      X509_NAME_add_entry(name, entry, -1, 0);
      X509_NAME_ENTRY_free(entry);
      ASN1_STRING_free(s);
      continue;
    }
    X509_NAME_add_entry_by_NID(name, e.nid, e.type, reinterpret_cast<const unsigned char*>(e.value.data()),
                               static_cast<int>(e.value.size()), -1, 0);
  }
}

struct CertSpec {
  std::vector<Entry> subject;
  std::vector<Entry> issuer;
  std::string serial_decimal = "1";
  int64_t not_before = 0;
  int64_t not_after = 0;
  std::string sans;  // OpenSSL's form; "" none
};

// A certificate with exactly these fields, self-signed with a throwaway key (the signature is not
// what is read).
X509* MakeCert(const CertSpec& spec) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  BIGNUM* bn = nullptr;
  BN_dec2bn(&bn, spec.serial_decimal.c_str());
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
  BN_free(bn);
  ASN1_TIME_set(X509_getm_notBefore(cert), static_cast<time_t>(spec.not_before));
  ASN1_TIME_set(X509_getm_notAfter(cert), static_cast<time_t>(spec.not_after));
  X509_set_pubkey(cert, key);
  AddEntries(X509_get_subject_name(cert), spec.subject);
  AddEntries(X509_get_issuer_name(cert), spec.issuer);
  if (!spec.sans.empty()) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, spec.sans.c_str());
    EXPECT_NE(ext, nullptr) << spec.sans;
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  EVP_PKEY_free(key);
  return cert;
}

class Certs {
 public:
  ~Certs() {
    for (X509* c : certs_) X509_free(c);
  }
  X509* Add(const CertSpec& spec) { return certs_.emplace_back(MakeCert(spec)); }
  std::vector<X509*> certs_;
};

const std::vector<Entry> kIssuer = {
    {NID_domainComponent, V_ASN1_IA5STRING, "org"},
    {NID_domainComponent, V_ASN1_IA5STRING, "paddock"},
    {NID_organizationName, MBSTRING_UTF8, "Paddock"},
    {NID_organizationName, MBSTRING_UTF8, "Paddock 2"},
    {NID_organizationalUnitName, MBSTRING_UTF8, "Edge"},
    {NID_commonName, MBSTRING_UTF8, "Test Root"},
    {NID_commonName, MBSTRING_UTF8, "Test Root 2"},
    {NID_countryName, MBSTRING_ASC, "FR"},
    {NID_countryName, MBSTRING_ASC, "US"},
    {NID_localityName, MBSTRING_UTF8, "Lyon"},
    {NID_stateOrProvinceName, MBSTRING_UTF8, "Rh\xc3\xb4ne"},
    {NID_serialNumber, MBSTRING_ASC, "42"},
    {NID_pkcs9_emailAddress, MBSTRING_ASC, "root@paddock.test"},
};

CertSpec Leaf() {
  return CertSpec{
      .subject = {{NID_countryName, MBSTRING_ASC, "FR"},
                  {NID_stateOrProvinceName, MBSTRING_UTF8, "Some-State"},
                  {NID_organizationName, MBSTRING_UTF8, "Cheese"},
                  {NID_commonName, MBSTRING_UTF8, ""},  // empty: left out
                  {NID_organizationalUnitName, MBSTRING_UTF8, "Unit"},
                  {NID_serialNumber, MBSTRING_ASC, "7"},
                  {NID_localityName, V_ASN1_BMPSTRING, "Z\xc3\xbcrich"}},
      .issuer = kIssuer,
      .serial_decimal = "123456789012345678901234567890",
      .not_before = 1544094636,
      .not_after = 4102444800,  // 2100: a GeneralizedTime
      .sans = "DNS:a.test,IP:10.0.1.2,email:x@y.test,URI:spiffe://paddock/ns/a,DNS:b.test,IP:2001:db8:0:0:0:0:0:1,"
              "IP:::ffff:1.2.3.4",
  };
}

TlsClientCertDnFields AllDn() {
  return {.country = true, .province = true, .locality = true, .organization = true, .organizational_unit = true,
          .common_name = true, .serial_number = true, .domain_component = true};
}

TEST(PassTlsClientCertTest, InfoWritesEveryAskedFieldInTraefiksOrder) {
  Certs certs;
  X509* leaf = certs.Add(Leaf());
  const TlsClientCertInfoFields all{
      .not_after = true, .not_before = true, .sans = true, .serial_number = true, .subject = AllDn(), .issuer = AllDn()};
  const std::vector<X509*> one{leaf};
  // The subject's empty CN is left out; the issuer has no OU (Traefik's issuer options have none),
  // its last CN stands for it (pkix.Name keeps one), its e-mail address is in no field; the SANs
  // come by type — DNS names, e-mail addresses, IPs (Go's form: an IPv4-mapped one dotted), URIs.
  EXPECT_EQ(TlsClientCertInfo(all, one),
            "Subject=\"C=FR,ST=Some-State,L=Z\xc3\xbcrich,O=Cheese,OU=Unit,SN=7\";"
            "Issuer=\"DC=org,DC=paddock,C=FR,C=US,ST=Rh\xc3\xb4ne,L=Lyon,O=Paddock,O=Paddock 2,SN=42,CN=Test Root 2\";"
            "SerialNumber=\"123456789012345678901234567890\";NB=\"1544094636\";NA=\"4102444800\";"
            "SAN=\"a.test,b.test,x@y.test,10.0.1.2,2001:db8::1,1.2.3.4,spiffe://paddock/ns/a\"");
  // Some fields only; a requested part the name lacks (the subject's DC) adds nothing.
  const TlsClientCertInfoFields some{.not_after = true,
                                     .subject = TlsClientCertDnFields{.organization = true, .domain_component = true},
                                     .issuer = TlsClientCertDnFields{.country = true}};
  EXPECT_EQ(TlsClientCertInfo(some, one), "Subject=\"O=Cheese\";Issuer=\"C=FR,C=US\";NA=\"4102444800\"");
  // A subject with none of the parts asked for is left out whole; certificates are joined by ','.
  X509* bare = certs.Add(CertSpec{.subject = {{NID_commonName, MBSTRING_UTF8, "bare"}},
                                  .issuer = {{NID_commonName, MBSTRING_UTF8, "bare"}},
                                  .serial_decimal = "2",
                                  .not_before = 0,
                                  .not_after = 86400,
                                  .sans = ""});
  const std::vector<X509*> two{leaf, bare};
  EXPECT_EQ(TlsClientCertInfo(some, two),
            "Subject=\"O=Cheese\";Issuer=\"C=FR,C=US\";NA=\"4102444800\",NA=\"86400\"");
  EXPECT_EQ(TlsClientCertInfo(TlsClientCertInfoFields{}, two), ",");
}

std::string PemBody(X509* cert) {  // the PEM text without its armour and line breaks
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  const std::string pem(data, static_cast<size_t>(n));
  BIO_free(b);
  std::string out;
  for (size_t start = 0; start < pem.size();) {
    size_t end = std::min(pem.find('\n', start), pem.size());
    std::string_view line(pem.data() + start, end - start);
    if (!line.starts_with("-----")) out += line;
    start = end + 1;
  }
  return out;
}

TEST(PassTlsClientCertTest, PemIsEachCertificatesPemBodyOnOneLineJoinedByCommas) {
  Certs certs;
  X509* a = certs.Add(Leaf());
  CertSpec other = Leaf();
  other.subject = {{NID_commonName, MBSTRING_UTF8, "b"}};
  X509* b = certs.Add(other);
  EXPECT_EQ(TlsClientCertPem(std::vector<X509*>{a}), PemBody(a));
  EXPECT_EQ(TlsClientCertPem(std::vector<X509*>{a, b}), PemBody(a) + "," + PemBody(b));
  EXPECT_EQ(PemBody(a).find_first_of("\r\n-"), std::string::npos);
}

TEST(PassTlsClientCertTest, InfoIsQueryEscapedAsGosQueryEscape) {
  EXPECT_EQ(QueryEscape("Subject=\"C=FR,O=A B\";NA=\"1\",x~_.-\xc3\xa9/"),
            "Subject%3D%22C%3DFR%2CO%3DA+B%22%3BNA%3D%221%22%2Cx~_.-%C3%A9%2F");
}

TEST(PassTlsClientCertTest, WithoutAClientCertificateNothingIsAdded) {
  auto built = BuildMiddleware(boost::json::parse(R"({"passTLSClientCert":{"pem":true,"info":{"notAfter":true}}})")
                                   .as_object());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Exchange x;  // plain HTTP: no TLS connection
  x.headers = {{"Accept", "*/*"}};
  EXPECT_FALSE(built->middleware->OnRequest(x));
  EXPECT_EQ(x.headers, (HeaderList{{"Accept", "*/*"}}));
}

}  // namespace
}  // namespace paddock::edge::mw
