#include "redis/tls_context.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "config/units.h"
#include "tls/openssl_error.h"

namespace tlsfront::redis {
namespace {

int to_openssl_version(config::TlsVersion v) {
  return v == config::TlsVersion::Tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

Error load_error(const config::RedisTls& cfg, std::string_view setting, std::string_view key, const std::string& path) {
  std::string message = "cannot load " + path;
  if (std::string q = tls::drain_openssl_errors(); !q.empty()) message += " (" + q + ")";
  return tls::config_error(cfg.origin, std::string(setting) + "." + std::string(key), std::move(message));
}

}  // namespace

Result<std::shared_ptr<const TlsContext>> TlsContext::create(const config::RedisTls& cfg, std::string_view setting) {
  if (!cfg.enabled) return std::shared_ptr<const TlsContext>();
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return tls::openssl_error(Errc::Tls, "SSL_CTX_new");
  SSL_CTX* c = ctx.get();
  const auto [lo, hi] = std::minmax_element(cfg.protocols.begin(), cfg.protocols.end());
  if (!SSL_CTX_set_min_proto_version(c, to_openssl_version(*lo)) ||
      !SSL_CTX_set_max_proto_version(c, to_openssl_version(*hi))) {
    return tls::openssl_error(Errc::Tls, "SSL_CTX_set_min/max_proto_version");
  }
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  if (cfg.verify) {
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
    if (!cfg.trusted_ca.empty()) {
      if (SSL_CTX_load_verify_file(c, cfg.trusted_ca.c_str()) != 1) {
        return load_error(cfg, setting, "trusted_ca", cfg.trusted_ca);
      }
    } else if (SSL_CTX_set_default_verify_paths(c) != 1) {
      return tls::openssl_error(Errc::Tls, "SSL_CTX_set_default_verify_paths");
    }
  } else {
    SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
  }
  if (!cfg.certificate.empty()) {
    // The key first, as for [upstream.tls]: a certificate that does not
    // match it then fails the check below, which says so.
    if (SSL_CTX_use_PrivateKey_file(c, cfg.key.c_str(), SSL_FILETYPE_PEM) != 1) {
      return load_error(cfg, setting, "key", cfg.key);
    }
    if (SSL_CTX_use_certificate_chain_file(c, cfg.certificate.c_str()) != 1) {
      return load_error(cfg, setting, "certificate", cfg.certificate);
    }
    if (SSL_CTX_check_private_key(c) != 1) {
      tls::drain_openssl_errors();
      return tls::config_error(cfg.origin, std::string(setting) + ".key", "does not match the certificate " + cfg.certificate);
    }
  }
  return std::shared_ptr<const TlsContext>(new TlsContext(std::move(ctx), cfg));
}

Result<SslPtr> TlsContext::new_ssl(const config::Endpoint& server) const {
  SslPtr ssl(SSL_new(ctx_.get()));
  if (!ssl) return tls::openssl_error(Errc::Tls, "SSL_new");
  SSL* s = ssl.get();
  const std::string& name = !cfg_.server_name.empty() ? cfg_.server_name : server.host;
  const bool is_ip = config::is_ip_literal(name);
  // RFC 6066 §3: SNI carries host names only.
  if (!is_ip && SSL_set_tlsext_host_name(s, name.c_str()) != 1) return tls::openssl_error(Errc::Tls, "SNI");
  if (cfg_.verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(s);
    const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) : SSL_set1_host(s, name.c_str());
    if (ok != 1) return tls::openssl_error(Errc::Tls, "the name to verify");
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }
  SSL_set_connect_state(s);
  return ssl;
}

std::string TlsContext::handshake_error(SSL* ssl, const Error& failed) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    std::string message = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      const X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      if (const char* host = X509_VERIFY_PARAM_get0_host(const_cast<X509_VERIFY_PARAM*>(param), 0)) {
        message += std::string(" (expected ") + host + ")";
      }
    }
    return message;
  }
  return failed.message();
}

}  // namespace tlsfront::redis
