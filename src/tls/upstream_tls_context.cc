#include "tls/upstream_tls_context.h"

#include <openssl/x509v3.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "config/units.h"
#include "tls/openssl_error.h"

namespace tlsfront::tls {
namespace {

int slot_ex_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The UpstreamTlsContext::id() of an SSL_CTX, kept in it: the SSL_CTX outlives
// its UpstreamTlsContext while a connection holds it.
int id_ex_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// SSL_SESS_CACHE_CLIENT with no internal store: OpenSSL hands every new
// session here (after a full handshake, or a TLS 1.3 NewSessionTicket read
// later), and the connection's slot keeps the latest if it still belongs to
// the connection's context. Returning 1 takes the reference.
int new_session_cb(SSL* ssl, SSL_SESSION* session) noexcept {
  auto* slot = static_cast<SessionSlot*>(SSL_get_ex_data(ssl, slot_ex_index()));
  if (slot == nullptr || !SSL_SESSION_is_resumable(session)) return 0;
  const auto from = reinterpret_cast<uintptr_t>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), id_ex_index()));
  if (from != slot->context) return 0;  // a context a reload replaced: its session is not resumed
  slot->session.reset(session);
  return 1;
}

int to_openssl_version(config::TlsVersion v) {
  return v == config::TlsVersion::Tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

Error load_error(const config::Upstream& u, std::string_view key, const std::string& path) {
  const std::string setting = "upstream[" + u.name + "].tls." + std::string(key);
  std::string message = "cannot load " + path;
  if (std::string q = drain_openssl_errors(); !q.empty()) message += " (" + q + ")";
  return config_error(u.tls.origin, setting, std::move(message));
}

}  // namespace

Result<std::shared_ptr<const UpstreamTlsContext>> UpstreamTlsContext::create(const config::Upstream& u) {
  const config::UpstreamTls& cfg = u.tls;
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return openssl_error(Errc::Tls, "SSL_CTX_new");
  SSL_CTX* c = ctx.get();
  const auto [lo, hi] = std::minmax_element(cfg.protocols.begin(), cfg.protocols.end());
  if (!SSL_CTX_set_min_proto_version(c, to_openssl_version(*lo)) ||
      !SSL_CTX_set_max_proto_version(c, to_openssl_version(*hi))) {
    return openssl_error(Errc::Tls, "SSL_CTX_set_min/max_proto_version");
  }
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | (cfg.session_reuse ? 0 : SSL_OP_NO_TICKET));
  SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS);
  if (cfg.verify) {
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
    if (!cfg.trusted_ca.empty()) {
      if (SSL_CTX_load_verify_file(c, cfg.trusted_ca.c_str()) != 1) return load_error(u, "trusted_ca", cfg.trusted_ca);
    } else if (SSL_CTX_set_default_verify_paths(c) != 1) {
      return openssl_error(Errc::Tls, "SSL_CTX_set_default_verify_paths");
    }
  } else {
    SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);
  }
  if (!cfg.certificate.empty()) {
    // The key first: a certificate that does not match it then drops it
    // (OpenSSL's SSL_CTX_use_certificate) and the check below says so,
    // where the other order fails in the key's loading ("key values
    // mismatch").
    if (SSL_CTX_use_PrivateKey_file(c, cfg.key.c_str(), SSL_FILETYPE_PEM) != 1) return load_error(u, "key", cfg.key);
    if (SSL_CTX_use_certificate_chain_file(c, cfg.certificate.c_str()) != 1) {
      return load_error(u, "certificate", cfg.certificate);
    }
    if (SSL_CTX_check_private_key(c) != 1) {
      drain_openssl_errors();
      return config_error(cfg.origin, "upstream[" + u.name + "].tls.key",
                          "does not match the certificate " + cfg.certificate);
    }
  }
  const bool http2 = u.protocol == config::UpstreamProtocol::H2;
  static constexpr unsigned char kH2[] = {2, 'h', '2'};
  static constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  if (SSL_CTX_set_alpn_protos(c, http2 ? kH2 : kHttp11, http2 ? sizeof kH2 : sizeof kHttp11) != 0) {
    return openssl_error(Errc::Tls, "SSL_CTX_set_alpn_protos");
  }
  if (cfg.session_reuse) {
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(c, new_session_cb);
  } else {
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  }
  static std::atomic<uint64_t> last_id{0};
  const uint64_t id = ++last_id;
  if (SSL_CTX_set_ex_data(c, id_ex_index(), reinterpret_cast<void*>(static_cast<uintptr_t>(id))) != 1) {
    return openssl_error(Errc::Tls, "SSL_CTX_set_ex_data");
  }
  return std::shared_ptr<const UpstreamTlsContext>(new UpstreamTlsContext(std::move(ctx), cfg, http2, id));
}

Result<SslPtr> UpstreamTlsContext::new_ssl(const config::Endpoint& server, SessionSlot* slot) const {
  SslPtr ssl(SSL_new(ctx_.get()));
  if (!ssl) return openssl_error(Errc::Tls, "SSL_new");
  SSL* s = ssl.get();
  // The name to verify and send: server_name, else the server's IP address
  // (a server written "localhost" is 127.0.0.1 by then), which is checked
  // but never sent (RFC 6066 §3: SNI carries host names only).
  const std::string& name = !cfg_.server_name.empty() ? cfg_.server_name : server.host;
  const bool is_ip = config::is_ip_literal(name);
  if (!is_ip && SSL_set_tlsext_host_name(s, name.c_str()) != 1) return openssl_error(Errc::Tls, "SNI");
  if (cfg_.verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(s);
    const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) : SSL_set1_host(s, name.c_str());
    if (ok != 1) return openssl_error(Errc::Tls, "the name to verify");
    // Names match whole labels; a wildcard covers one (RFC 6125 §6.4.3).
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }
  if (cfg_.session_reuse && slot != nullptr) {
    if (slot->context != id_) {
      // The slot's session (if any) is another context's: verified against
      // what that one trusted, it is not resumed here.
      slot->session.reset();
      slot->context = id_;
    }
    SSL_set_ex_data(s, slot_ex_index(), slot);
    if (slot->session) SSL_set_session(s, slot->session.get());
  }
  return ssl;
}

void UpstreamTlsContext::forget_slot(SSL* ssl) { SSL_set_ex_data(ssl, slot_ex_index(), nullptr); }

}  // namespace tlsfront::tls
