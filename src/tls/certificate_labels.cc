#include "tls/certificate_labels.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/evp.h>

#include <cctype>

#include "tls/server_certificate.h"
#include "util/openssl_ptr.h"

namespace tlsfront::tls {
namespace {
constexpr size_t kFingerprintHexDigits = 8;  // 32 bits tell a few certificates apart

std::string subject_of(X509* x) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), X509_get_subject_name(x), 0, XN_FLAG_RFC2253) < 0) return "?";
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}
}  // namespace

std::string sha256_hex(X509* x) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!X509_digest(x, EVP_sha256(), md, &len)) return "unknown";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

CertificateLabels CertificateLabels::of(X509* leaf) {
  CertificateLabels l;
  l.subject = subject_of(leaf);
  l.key_type = key_type_of(X509_get0_pubkey(leaf));
  for (char& c : l.key_type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  l.sha256 = sha256_hex(leaf).substr(0, kFingerprintHexDigits);
  return l;
}


}  // namespace tlsfront::tls
