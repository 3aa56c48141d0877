#include "tls/acme_challenges.h"

#include <openssl/pem.h>

#include <cstring>

#include "tls/openssl_error.h"
#include "util/openssl_ptr.h"

namespace tlsfront::tls {
namespace {

// RFC 8737 §3: the server negotiates acme-tls/1 and nothing else.
int select_acme_tls(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                    void*) noexcept {
  if (inlen == 1 + kAcmeTlsAlpn.size() && in[0] == kAcmeTlsAlpn.size() &&
      std::memcmp(in + 1, kAcmeTlsAlpn.data(), kAcmeTlsAlpn.size()) == 0) {
    *out = in + 1;
    *outlen = static_cast<unsigned char>(kAcmeTlsAlpn.size());
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

Result<std::shared_ptr<SSL_CTX>> alpn_context(const std::string& name, const AcmeChallenges::AlpnAnswer& a) {
  BioPtr cert_bio(BIO_new_mem_buf(a.cert_pem.data(), static_cast<int>(a.cert_pem.size())));
  BioPtr key_bio(BIO_new_mem_buf(a.key_pem.data(), static_cast<int>(a.key_pem.size())));
  X509Ptr cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  EvpPkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!cert || !key || !ctx || SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1 ||
      SSL_CTX_use_certificate(ctx.get(), cert.get()) != 1 || SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) {
    return openssl_error(Errc::Tls, "the tls-alpn-01 certificate of " + name);
  }
  SSL_CTX_set_alpn_select_cb(ctx.get(), select_acme_tls, nullptr);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  return ctx;
}

}  // namespace

Status AcmeChallenges::replace(std::map<std::string, std::string> http01,
                               const std::map<std::string, AlpnAnswer>& alpn01) {
  std::map<std::string, Alpn, std::less<>> next;
  Status status;
  for (const auto& [name, answer] : alpn01) {
    if (next.size() >= kMaxEntries) break;
    {
      std::lock_guard lock(mu_);
      auto it = alpn01_.find(name);
      if (it != alpn01_.end() && it->second.key_authorization == answer.key_authorization) {
        next.emplace(name, it->second);
        continue;
      }
    }
    auto ctx = alpn_context(name, answer);
    if (!ctx) {
      status = ctx.take_error();
      continue;
    }
    next.emplace(name, Alpn{answer.key_authorization, std::move(ctx).value()});
  }
  std::map<std::string, std::string, std::less<>> tokens;
  for (auto& [token, key_authorization] : http01) {
    if (tokens.size() >= kMaxEntries) break;
    tokens.emplace(token, std::move(key_authorization));
  }
  std::lock_guard lock(mu_);
  http01_ = std::move(tokens);
  alpn01_ = std::move(next);
  alpn_count_.store(alpn01_.size(), std::memory_order_relaxed);
  return status;
}

std::optional<std::string> AcmeChallenges::http01(std::string_view token) const {
  std::lock_guard lock(mu_);
  auto it = http01_.find(token);
  if (it == http01_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<SSL_CTX> AcmeChallenges::alpn01(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = alpn01_.find(name);
  return it == alpn01_.end() ? nullptr : it->second.ctx;
}

std::string AcmeChallenges::alpn_key_authorization(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = alpn01_.find(name);
  return it == alpn01_.end() ? std::string() : it->second.key_authorization;
}

bool offers_only_acme_tls(SSL* ssl) {
  const unsigned char* p = nullptr;
  size_t len = 0;
  // ProtocolNameList: a 2-byte length, then one 1-byte length + name.
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p, &len) != 1) return false;
  return len == 3 + kAcmeTlsAlpn.size() && ((size_t{p[0]} << 8) | p[1]) == len - 2 && p[2] == kAcmeTlsAlpn.size() &&
         std::memcmp(p + 3, kAcmeTlsAlpn.data(), kAcmeTlsAlpn.size()) == 0;
}

}  // namespace tlsfront::tls
