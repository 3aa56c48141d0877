#include "tls/client_auth.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include "tls/openssl_error.h"

namespace tlsfront::tls {
namespace {

// verify_client = "optional": the handshake goes on whatever the chain's
// verdict; SSL_get_verify_result keeps the first error.
int accept_any_chain(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) noexcept { return 1; }

// Every PEM object `read` finds in `path`, handed to `take` in file order.
template <typename T, typename Read, typename Take>
Result<size_t> read_pem(const std::string& path, Read read, void (*free_fn)(T*), Take take) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return make_error(Errc::Config, "cannot read \"" + path + "\"");
  size_t n = 0;
  while (T* obj = read(bio.get(), nullptr, nullptr, nullptr)) {
    std::unique_ptr<T, void (*)(T*)> owned(obj, free_fn);
    if (!take(obj)) return openssl_error(Errc::Tls, "adding \"" + path + "\" to the client verify store");
    ++n;
  }
  // The loop ends at the end of the file (PEM_R_NO_START_LINE) or at a
  // malformed object, which is an error.
  const unsigned long err = ERR_peek_last_error();
  if (ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE) ERR_clear_error();
  if (ERR_peek_error() != 0) return make_error(Errc::Config, "\"" + path + "\": " + drain_openssl_errors());
  return n;
}

// Appends the DER encoding of `obj` (i2d_X509, i2d_X509_CRL) to `out`.
template <typename T>
bool append_der(std::string& out, const T* obj, int (*i2d)(const T*, unsigned char**)) {
  unsigned char* der = nullptr;
  const int len = i2d(obj, &der);
  if (len <= 0) return false;
  out.append(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
  OPENSSL_free(der);
  return true;
}

std::string digest(std::string_view in, const EVP_MD* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(in.data(), in.size(), out, &len, md, nullptr) != 1) return {};
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

Result<ClientAuthDigest> configure_client_auth(SSL_CTX* ctx, const config::ClientAuth& auth) {
  ClientAuthDigest out;
  if (!auth.enabled()) return out;
  ERR_clear_error();
  X509StorePtr store(X509_STORE_new());
  using NameStack = std::unique_ptr<STACK_OF(X509_NAME), void (*)(STACK_OF(X509_NAME)*)>;
  NameStack names(sk_X509_NAME_new_null(), [](STACK_OF(X509_NAME)* s) { sk_X509_NAME_pop_free(s, X509_NAME_free); });
  if (!store || !names) return openssl_error(Errc::Tls, "X509_STORE_new");

  std::string input = auth.verify == config::VerifyClient::Required ? "required" : "optional";
  input += static_cast<char>(auth.depth);
  const std::string ca_key = auth.setting + ".client_ca";
  auto cas = read_pem<X509>(auth.ca, PEM_read_bio_X509, X509_free, [&](X509* cert) {
    X509_NAME* name = X509_NAME_dup(X509_get_subject_name(cert));
    if (name == nullptr || !sk_X509_NAME_push(names.get(), name)) {
      X509_NAME_free(name);
      return false;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (X509_NAME_digest(name, EVP_sha1(), md, &md_len) != 1) return false;
    out.ca_name_sha1.emplace_back(reinterpret_cast<const char*>(md), md_len);
    return append_der(input, cert, i2d_X509) && X509_STORE_add_cert(store.get(), cert) == 1;
  });
  if (!cas) return config_error(auth.ca_origin, ca_key, cas.error().message());
  if (*cas == 0) return config_error(auth.ca_origin, ca_key, "no PEM certificate in \"" + auth.ca + "\"");

  if (!auth.crl.empty()) {
    const std::string crl_key = auth.setting + ".crl";
    std::string crl_der;
    auto crls = read_pem<X509_CRL>(auth.crl, PEM_read_bio_X509_CRL, X509_CRL_free, [&](X509_CRL* crl) {
      return append_der(crl_der, crl, i2d_X509_CRL) && X509_STORE_add_crl(store.get(), crl) == 1;
    });
    if (!crls) return config_error(auth.crl_origin, crl_key, crls.error().message());
    if (*crls == 0) return config_error(auth.crl_origin, crl_key, "no PEM CRL in \"" + auth.crl + "\"");
    X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
    out.crl_sha256 = digest(crl_der, EVP_sha256());
    input += crl_der;
  }
  X509_STORE_set_depth(store.get(), auth.depth);
  out.policy = digest(input, EVP_sha256());
  if (out.policy.empty()) return openssl_error(Errc::Tls, "SHA-256");

  SSL_CTX_set0_verify_cert_store(ctx, store.release());
  SSL_CTX_set_client_CA_list(ctx, names.release());
  const bool required = auth.verify == config::VerifyClient::Required;
  SSL_CTX_set_verify(ctx, required ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER,
                     required ? nullptr : accept_any_chain);
  return out;
}

void adopt_verify_mode(SSL* ssl, SSL_CTX* ctx) {
  SSL_set_verify(ssl, SSL_CTX_get_verify_mode(ctx), SSL_CTX_get_verify_callback(ctx));
}

}  // namespace tlsfront::tls
