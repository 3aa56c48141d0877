#include "data/quic/quic_tls.h"

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <fmt/format.h>

namespace tlsfront::quic {
namespace {

// TLS 1.3 only, without the middlebox compatibility mode (RFC 9001 §8.4);
// AES-GCM and ChaCha20 (AES-CCM is allowed by RFC 9001 but unused by
// browsers); X25519 first, then P-256, as the TCP listeners' default groups.
constexpr const char* kPriorities =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:%DISABLE_TLS13_COMPAT_MODE";

constexpr unsigned char kAlpnH3[] = "h3";

}  // namespace

Result<std::shared_ptr<const ServerCredentials>> ServerCredentials::load(
    const std::vector<config::Certificate>& certificates) {
  std::shared_ptr<ServerCredentials> creds(new ServerCredentials());
  if (int rc = gnutls_certificate_allocate_credentials(&creds->cred_); rc != 0) {
    return make_error(Errc::Internal, fmt::format("QUIC credentials: {}", gnutls_strerror(rc)));
  }
  // Index-returning API (GnuTLS ≥ 3.5.6): errors stay negative.
  gnutls_certificate_set_flags(creds->cred_, GNUTLS_CERTIFICATE_API_V2);
  for (const config::Certificate& c : certificates) {
    const int rc = gnutls_certificate_set_x509_key_file2(creds->cred_, c.cert.c_str(), c.key.c_str(),
                                                          GNUTLS_X509_FMT_PEM, nullptr, 0);
    if (rc < 0) {
      return make_error(Errc::Config,
                        fmt::format("{}: {} / {}: GnuTLS (QUIC listener): {}", c.cert_origin.empty() ? c.cert_setting
                                                                                                     : c.cert_origin,
                                    c.cert, c.key, gnutls_strerror(rc)));
    }
  }
  if (int rc = gnutls_session_ticket_key_generate(&creds->ticket_key_); rc != 0) {
    return make_error(Errc::Internal, fmt::format("QUIC ticket key: {}", gnutls_strerror(rc)));
  }
  return std::shared_ptr<const ServerCredentials>(std::move(creds));
}

ServerCredentials::~ServerCredentials() {
  if (cred_) gnutls_certificate_free_credentials(cred_);
  if (ticket_key_.data) {
    gnutls_memset(ticket_key_.data, 0, ticket_key_.size);
    gnutls_free(ticket_key_.data);
  }
}

Status QuicTlsSession::init(const ServerCredentials& credentials, ngtcp2_crypto_conn_ref* conn_ref) {
  if (int rc = gnutls_init(&session_, GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET | GNUTLS_NO_END_OF_EARLY_DATA);
      rc != 0) {
    session_ = nullptr;
    return make_error(Errc::Io, fmt::format("gnutls_init: {}", gnutls_strerror(rc)));
  }
  const char* err_pos = nullptr;
  if (int rc = gnutls_priority_set_direct(session_, kPriorities, &err_pos); rc != 0) {
    return make_error(Errc::Io, fmt::format("gnutls priorities: {}", gnutls_strerror(rc)));
  }
  if (ngtcp2_crypto_gnutls_configure_server_session(session_) != 0) {
    return make_error(Errc::Io, "ngtcp2_crypto_gnutls_configure_server_session failed");
  }
  if (int rc = gnutls_session_ticket_enable_server(session_, credentials.ticket_key()); rc != 0) {
    return make_error(Errc::Io, fmt::format("gnutls tickets: {}", gnutls_strerror(rc)));
  }
  gnutls_session_set_ptr(session_, conn_ref);
  if (int rc = gnutls_credentials_set(session_, GNUTLS_CRD_CERTIFICATE, credentials.certificates()); rc != 0) {
    return make_error(Errc::Io, fmt::format("gnutls credentials: {}", gnutls_strerror(rc)));
  }
  gnutls_datum_t alpn{const_cast<unsigned char*>(kAlpnH3), 2};
  if (int rc = gnutls_alpn_set_protocols(session_, &alpn, 1, GNUTLS_ALPN_MANDATORY); rc != 0) {
    return make_error(Errc::Io, fmt::format("gnutls ALPN: {}", gnutls_strerror(rc)));
  }
  return {};
}

QuicTlsSession::~QuicTlsSession() {
  if (session_) gnutls_deinit(session_);
}

std::string QuicTlsSession::server_name() const {
  char name[256];
  size_t len = sizeof name;
  unsigned int type = 0;
  if (gnutls_server_name_get(session_, name, &len, &type, 0) != 0 || type != GNUTLS_NAME_DNS) return {};
  return std::string(name, len);
}

std::string_view QuicTlsSession::cipher() const {
  const char* name = gnutls_ciphersuite_get(session_);
  return name ? std::string_view(name) : std::string_view();
}

bool QuicTlsSession::resumed() const { return gnutls_session_is_resumed(session_) != 0; }

}  // namespace tlsfront::quic
