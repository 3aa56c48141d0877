// unique_ptr aliases for OpenSSL objects, one stateless deleter per type.
// Wrap every get1/new result on the line that produces it; raw pointers only borrow.
#pragma once

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>

namespace tlsfront {

namespace detail {
template <typename T, void (*F)(T*)>
struct OpenSslDeleter {
  void operator()(T* p) const noexcept { F(p); }
};
inline void x509_stack_pop_free(STACK_OF(X509) * s) { sk_X509_pop_free(s, X509_free); }
}  // namespace detail

using SslCtxPtr = std::unique_ptr<SSL_CTX, detail::OpenSslDeleter<SSL_CTX, SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, detail::OpenSslDeleter<SSL, SSL_free>>;
using SslSessionPtr = std::unique_ptr<SSL_SESSION, detail::OpenSslDeleter<SSL_SESSION, SSL_SESSION_free>>;
using X509Ptr = std::unique_ptr<X509, detail::OpenSslDeleter<X509, X509_free>>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, detail::OpenSslDeleter<EVP_PKEY, EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, detail::OpenSslDeleter<BIO, BIO_free_all>>;
using X509StackPtr = std::unique_ptr<STACK_OF(X509), detail::OpenSslDeleter<STACK_OF(X509), detail::x509_stack_pop_free>>;
using OcspResponsePtr = std::unique_ptr<OCSP_RESPONSE, detail::OpenSslDeleter<OCSP_RESPONSE, OCSP_RESPONSE_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, detail::OpenSslDeleter<X509_STORE, X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, detail::OpenSslDeleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
using OcspBasicRespPtr = std::unique_ptr<OCSP_BASICRESP, detail::OpenSslDeleter<OCSP_BASICRESP, OCSP_BASICRESP_free>>;

}  // namespace tlsfront
