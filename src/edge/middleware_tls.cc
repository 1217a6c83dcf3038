// Traefik's passTLSClientCert: what the client's certificates say, passed on to the server in two
// headers, written as Traefik v3.7 writes them from Go's parsed certificates (pkix.Name, big.Int,
// net.IP). The client's own values of both headers never arrive: the proxy drops every
// X-Forwarded-* it is sent before the chain runs.
#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "edge/internal/middleware_util.h"

namespace paddock::edge::mw {
namespace {

// A value Go's x509 parser reads as a string (parseASN1String); nullopt for any other type, which
// pkix.Name leaves out of its fields.
std::optional<std::string> NameValue(const ASN1_STRING* value) {
  switch (ASN1_STRING_type(value)) {
    case V_ASN1_BMPSTRING: {  // UTF-16, as UTF-8
      unsigned char* utf8 = nullptr;
      const int n = ASN1_STRING_to_UTF8(&utf8, value);
      if (n < 0) return std::nullopt;
      std::string out(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
      OPENSSL_free(utf8);
      return out;
    }
    case V_ASN1_UTF8STRING:
    case V_ASN1_PRINTABLESTRING:
    case V_ASN1_IA5STRING:
    case V_ASN1_NUMERICSTRING:
    case V_ASN1_T61STRING:  // Go keeps its bytes as they are
      return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                         static_cast<size_t>(ASN1_STRING_length(value)));
    default:
      return std::nullopt;
  }
}

// Traefik's getSubjectDNInfo / getIssuerDNInfo over Go's pkix.Name: every domain component in the
// name's order, then the countries, provinces, localities, organizations and (subject only)
// organizational units each in order, then the serial number and common name (the last of each
// in the name, as pkix.Name keeps one), each "X=value," with empty ones left out; the last ','
// trimmed.
std::string DistinguishedName(const X509_NAME* name, const TlsClientCertDnFields& want) {
  std::vector<std::string> domain_components, countries, provinces, localities, organizations, units;
  std::string serial_number, common_name;
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
    std::optional<std::string> value = NameValue(X509_NAME_ENTRY_get_data(entry));
    if (!value) continue;
    switch (OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry))) {
      case NID_domainComponent: domain_components.push_back(std::move(*value)); break;
      case NID_countryName: countries.push_back(std::move(*value)); break;
      case NID_stateOrProvinceName: provinces.push_back(std::move(*value)); break;
      case NID_localityName: localities.push_back(std::move(*value)); break;
      case NID_organizationName: organizations.push_back(std::move(*value)); break;
      case NID_organizationalUnitName: units.push_back(std::move(*value)); break;
      case NID_serialNumber: serial_number = std::move(*value); break;
      case NID_commonName: common_name = std::move(*value); break;
      default: break;
    }
  }
  std::string out;
  // Traefik writes a domain component even when empty; the others only when not.
  if (want.domain_component)
    for (const std::string& dc : domain_components) out += fmt::format("DC={},", dc);
  auto parts = [&out](bool wanted, const std::vector<std::string>& values, std::string_view prefix) {
    if (!wanted) return;
    for (const std::string& v : values)
      if (!v.empty()) out += fmt::format("{}={},", prefix, v);
  };
  parts(want.country, countries, "C");
  parts(want.province, provinces, "ST");
  parts(want.locality, localities, "L");
  parts(want.organization, organizations, "O");
  parts(want.organizational_unit, units, "OU");
  parts(want.serial_number, {serial_number}, "SN");
  parts(want.common_name, {common_name}, "CN");
  if (!out.empty()) out.pop_back();
  return out;
}

// Go's big.Int.String() of the serial number.
std::string SerialDecimal(X509* cert) {
  std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr), BN_free);
  if (!bn) return "";
  char* text = BN_bn2dec(bn.get());
  std::string out = text ? text : "";
  OPENSSL_free(text);
  return out;
}

// uint64(t.Unix()), as Traefik prints NB and NA.
uint64_t UnixSeconds(const ASN1_TIME* t) {
  std::tm tm{};
  if (!ASN1_TIME_to_tm(t, &tm)) return 0;
  return static_cast<uint64_t>(static_cast<int64_t>(timegm(&tm)));
}

// Traefik's getSANs: Go's DNSNames, then EmailAddresses, IPAddresses and URIs, each in order.
std::vector<std::string> SubjectAltNames(X509* cert) {
  std::unique_ptr<GENERAL_NAMES, void (*)(GENERAL_NAMES*)> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)),
      [](GENERAL_NAMES* n) { GENERAL_NAMES_free(n); });
  std::vector<std::string> by_type[4];  // DNS, email, IP, URI
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    auto text = [](const ASN1_STRING* s) {
      return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                         static_cast<size_t>(ASN1_STRING_length(s)));
    };
    switch (name->type) {
      case GEN_DNS: by_type[0].push_back(text(name->d.dNSName)); break;
      case GEN_EMAIL: by_type[1].push_back(text(name->d.rfc822Name)); break;
      case GEN_IPADD:
        by_type[2].push_back(GoIpString({ASN1_STRING_get0_data(name->d.iPAddress),
                                         static_cast<size_t>(ASN1_STRING_length(name->d.iPAddress))}));
        break;
      case GEN_URI: by_type[3].push_back(text(name->d.uniformResourceIdentifier)); break;
      default: break;
    }
  }
  std::vector<std::string> out;
  for (auto& list : by_type) out.insert(out.end(), list.begin(), list.end());
  return out;
}

// The certificates the client presented, its own first (Go's ConnectionState.PeerCertificates).
// OpenSSL keeps a server's peer certificate apart from the rest of the chain it was sent.
std::vector<X509*> PeerCertificates(SSL* ssl) {
  std::vector<X509*> out;
  X509* leaf = SSL_get0_peer_certificate(ssl);
  if (!leaf) return out;
  out.push_back(leaf);
  // (None after a session resumed from a ticket: OpenSSL's ticket keeps the client's own alone.)
  if (STACK_OF(X509)* rest = SSL_get_peer_cert_chain(ssl)) {
    for (int i = 0; i < sk_X509_num(rest); ++i) out.push_back(sk_X509_value(rest, i));
  }
  return out;
}

class PassTlsClientCert final : public Middleware {
 public:
  PassTlsClientCert(bool pem, std::optional<TlsClientCertInfoFields> info) : pem_(pem), info_(std::move(info)) {}

  std::optional<Answer> OnRequest(Exchange& x) const override {
    if ((!pem_ && !info_) || !x.tls) return std::nullopt;
    const std::vector<X509*> certs = PeerCertificates(x.tls);
    if (certs.empty()) return std::nullopt;  // Traefik logs it at debug level and goes on
    if (pem_) SetHeader(x.headers, "X-Forwarded-Tls-Client-Cert", TlsClientCertPem(certs));
    if (info_) SetHeader(x.headers, "X-Forwarded-Tls-Client-Cert-Info", QueryEscape(TlsClientCertInfo(*info_, certs)));
    return std::nullopt;
  }

 private:
  bool pem_;
  std::optional<TlsClientCertInfoFields> info_;
};

std::optional<TlsClientCertDnFields> ReadDnFields(Options& parent, std::string_view key, bool subject) {
  std::optional<Options> o =
      subject ? parent.Object(key, {"country", "province", "locality", "organization", "organizationalUnit",
                                    "commonName", "serialNumber", "domainComponent"})
              : parent.Object(key, {"country", "province", "locality", "organization", "commonName", "serialNumber",
                                    "domainComponent"});
  if (!o) return std::nullopt;
  TlsClientCertDnFields f;
  f.country = o->Bool("country");
  f.province = o->Bool("province");
  f.locality = o->Bool("locality");
  f.organization = o->Bool("organization");
  if (subject) f.organizational_unit = o->Bool("organizationalUnit");
  f.common_name = o->Bool("commonName");
  f.serial_number = o->Bool("serialNumber");
  f.domain_component = o->Bool("domainComponent");
  return f;
}

}  // namespace

std::string TlsClientCertPem(std::span<X509* const> certs) {
  std::string out;
  for (size_t i = 0; i < certs.size(); ++i) {
    unsigned char* der = nullptr;
    const int n = i2d_X509(certs[i], &der);
    if (i > 0) out += ',';
    if (n > 0) out += Base64({reinterpret_cast<const char*>(der), static_cast<size_t>(n)});
    OPENSSL_free(der);
  }
  return out;
}

std::string TlsClientCertInfo(const TlsClientCertInfoFields& want, std::span<X509* const> certs) {
  std::string out;
  for (size_t i = 0; i < certs.size(); ++i) {
    X509* cert = certs[i];
    std::vector<std::string> values;
    if (want.subject) {
      if (std::string s = DistinguishedName(X509_get_subject_name(cert), *want.subject); !s.empty())
        values.push_back(fmt::format("Subject=\"{}\"", s));
    }
    if (want.issuer) {
      TlsClientCertDnFields issuer = *want.issuer;
      issuer.organizational_unit = false;  // Traefik's issuer options have none
      if (std::string s = DistinguishedName(X509_get_issuer_name(cert), issuer); !s.empty())
        values.push_back(fmt::format("Issuer=\"{}\"", s));
    }
    if (want.serial_number) {
      if (std::string sn = SerialDecimal(cert); !sn.empty()) values.push_back(fmt::format("SerialNumber=\"{}\"", sn));
    }
    if (want.not_before) values.push_back(fmt::format("NB=\"{}\"", UnixSeconds(X509_get0_notBefore(cert))));
    if (want.not_after) values.push_back(fmt::format("NA=\"{}\"", UnixSeconds(X509_get0_notAfter(cert))));
    if (want.sans) {
      if (std::vector<std::string> sans = SubjectAltNames(cert); !sans.empty())
        values.push_back(fmt::format("SAN=\"{}\"", fmt::join(sans, ",")));
    }
    if (i > 0) out += ',';
    out += fmt::format("{}", fmt::join(values, ";"));
  }
  return out;
}

StatusOr<std::shared_ptr<const Middleware>> BuildPassTlsClientCert(const boost::json::value& config) {
  Options o("passTLSClientCert", config, {"pem", "info"});
  const bool pem = o.Bool("pem");
  std::optional<TlsClientCertInfoFields> info;
  if (std::optional<Options> i =
          o.Object("info", {"notAfter", "notBefore", "sans", "serialNumber", "subject", "issuer"})) {
    info.emplace();
    info->not_after = i->Bool("notAfter");
    info->not_before = i->Bool("notBefore");
    info->sans = i->Bool("sans");
    info->serial_number = i->Bool("serialNumber");
    info->subject = ReadDnFields(*i, "subject", true);
    info->issuer = ReadDnFields(*i, "issuer", false);
  }
  RETURN_IF_ERROR(o.status());
  return std::shared_ptr<const Middleware>(std::make_shared<PassTlsClientCert>(pem, std::move(info)));
}

}  // namespace paddock::edge::mw
