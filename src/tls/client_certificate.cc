#include "tls/client_certificate.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string_view>

namespace tlsfront::tls {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr char kHexUpper[] = "0123456789ABCDEF";

// The text `print` writes into a memory BIO; "" when it fails.
template <typename Print>
std::string bio_text(Print&& print) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return {};
  std::string out;
  if (print(bio)) {
    char* data = nullptr;
    const long len = BIO_get_mem_data(bio, &data);
    if (len > 0) out.assign(data, static_cast<size_t>(len));
  }
  BIO_free(bio);
  return out;
}

// nginx's ngx_ssl_get_subject_dn: X509_NAME_print_ex(XN_FLAG_RFC2253).
std::string rfc2253(const X509_NAME* name) {
  if (name == nullptr) return {};
  return bio_text([name](BIO* bio) { return X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) >= 0; });
}

}  // namespace

std::string client_fingerprint(X509* cert) {
  if (cert == nullptr) return {};
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &len) != 1) return {};
  std::string out(2 * size_t{len}, '\0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 0xf];
  }
  return out;
}

void append_uri_component(std::string& out, std::string_view in) {
  for (const char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHexUpper[c >> 4]);
      out.push_back(kHexUpper[c & 0xf]);
    }
  }
}

std::shared_ptr<const ClientIdentity> ClientIdentity::of(SSL* ssl) {
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) == 0) return nullptr;
  auto id = std::make_shared<ClientIdentity>();
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) {
    id->verify = "NONE";
    return id;
  }
  const long rc = SSL_get_verify_result(ssl);
  id->verify = rc == X509_V_OK ? "SUCCESS" : std::string("FAILED:") + X509_verify_cert_error_string(rc);
  id->subject_dn = rfc2253(X509_get_subject_name(cert));
  id->issuer_dn = rfc2253(X509_get_issuer_name(cert));
  id->serial = bio_text([cert](BIO* bio) { return i2a_ASN1_INTEGER(bio, X509_get0_serialNumber(cert)) >= 0; });
  id->fingerprint = client_fingerprint(cert);
  const std::string pem = bio_text([cert](BIO* bio) { return PEM_write_bio_X509(bio, cert) == 1; });
  id->escaped_pem.reserve(pem.size() * 3 / 2);
  append_uri_component(id->escaped_pem, pem);
  return id;
}

}  // namespace tlsfront::tls
