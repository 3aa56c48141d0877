#include "data/quic/quic_tls.h"

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <strings.h>

#include <fmt/format.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>

#include "tls/ocsp_stapler.h"
#include "tls/server_certificate.h"
#include "tls/ticket_key_ring.h"
#include "util/openssl_ptr.h"
#include "util/secret.h"

namespace tlsfront::quic {
namespace {

// TLS 1.3 only, without the middlebox compatibility mode (RFC 9001 §8.4);
// AES-GCM and ChaCha20 (AES-CCM is allowed by RFC 9001 but unused by
// browsers); X25519 first, then P-256, as the TCP listeners' default groups.
constexpr const char* kPriorities =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:%DISABLE_TLS13_COMPAT_MODE";

constexpr unsigned char kAlpnH3[] = "h3";
constexpr size_t kTicketMasterBytes = 64;                // GnuTLS's TICKET_MASTER_KEY_SIZE
constexpr unsigned kMaxTicketLifetimeS = 7 * 24 * 3600;  // RFC 8446 §4.6.1
// GnuTLS's anti-replay key: 12 octets of its window's start, then the binder.
constexpr size_t kAntiReplayKeyPrefix = 12;

// GnuTLS's status_request callback for one certificate (`ptr`: its
// stapler), as tls::attach_ocsp's status callback over TCP: a copy of the
// current response, else the stapler's policy. GnuTLS asks only when the
// client sent status_request and a certificate is sent (not on resumption).
int staple_ocsp(gnutls_session_t, void* ptr, gnutls_datum_t* response) noexcept {
  auto* stapler = static_cast<tls::OcspStapler*>(ptr);
  std::shared_ptr<const tls::OcspStaple> staple = stapler->staple();
  if (!staple) {
    if (stapler->policy() != config::StaplePolicy::Lenient) {
      stapler->count_refused();
      return GNUTLS_E_INTERNAL_ERROR;  // the handshake fails (internal_error alert)
    }
    stapler->count_unstapled();
    return GNUTLS_E_NO_CERTIFICATE_STATUS;
  }
  // GnuTLS frees it (gnutls_free).
  response->data = static_cast<unsigned char*>(gnutls_malloc(staple->der.size()));
  if (response->data == nullptr) {
    stapler->count_unstapled();
    return GNUTLS_E_NO_CERTIFICATE_STATUS;
  }
  std::memcpy(response->data, staple->der.data(), staple->der.size());
  response->size = static_cast<unsigned>(staple->der.size());
  stapler->count_stapled();
  return 0;
}

// `cert`'s chain (leaf, then the intermediates sent) and key as PEM, for
// GnuTLS. The key's text is wiped by Secret.
bool to_pem(const tls::ServerCertificate& cert, std::string& chain, Secret& key) {
  BioPtr out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_X509(out.get(), cert.chain.leaf()) != 1) return false;
  STACK_OF(X509)* intermediates = cert.chain.intermediates();
  for (int i = 0; intermediates != nullptr && i < sk_X509_num(intermediates); ++i) {
    if (PEM_write_bio_X509(out.get(), sk_X509_value(intermediates, i)) != 1) return false;
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);
  chain.assign(data, static_cast<size_t>(len));
  BioPtr key_out(BIO_new(BIO_s_secmem()));
  if (!key_out || PEM_write_bio_PrivateKey(key_out.get(), cert.key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return false;
  }
  const long n = BIO_get_mem_data(key_out.get(), &data);
  key = Secret(std::string(data, static_cast<size_t>(n)));
  return true;
}

}  // namespace

Result<std::shared_ptr<const ServerCredentials>> ServerCredentials::load(
    const config::Tls& tls, const std::vector<const tls::ServerCertificate*>& certificates,
    const tls::TicketKeyStore* tickets, const tls::OcspRegistry* ocsp) {
  std::shared_ptr<ServerCredentials> creds(new ServerCredentials());
  creds->tickets_ = tickets;
  creds->session_tickets_ = tls.session_tickets;
  const auto lifetime_s = std::chrono::duration_cast<std::chrono::seconds>(tls.session_cache.timeout).count();
  creds->ticket_lifetime_s_ = static_cast<unsigned>(std::clamp<int64_t>(lifetime_s, 1, kMaxTicketLifetimeS));
  if (int rc = gnutls_certificate_allocate_credentials(&creds->cred_); rc != 0) {
    return make_error(Errc::Internal, fmt::format("QUIC credentials: {}", gnutls_strerror(rc)));
  }
  // Index-returning API (GnuTLS ≥ 3.5.6): errors stay negative.
  gnutls_certificate_set_flags(creds->cred_, GNUTLS_CERTIFICATE_API_V2);
  std::vector<const tls::ServerCertificate*> ordered;  // files first (see the header)
  for (bool store : {false, true}) {
    for (const tls::ServerCertificate* c : certificates) {
      if (c->from_store == store) ordered.push_back(c);
    }
  }
  for (const tls::ServerCertificate* c : ordered) {
    const config::Certificate& cfg = *c->config;
    const std::string origin =
        fmt::format("{}: {}", cfg.cert_origin.empty() ? cfg.cert_setting : cfg.cert_origin, cfg.cert);
    std::string chain;
    Secret key;
    if (!to_pem(*c, chain, key)) {
      return make_error(Errc::Internal, fmt::format("{}: QUIC listener: the chain or key cannot be written", origin));
    }
    const gnutls_datum_t chain_d{reinterpret_cast<unsigned char*>(chain.data()), static_cast<unsigned>(chain.size())};
    const gnutls_datum_t key_d{reinterpret_cast<unsigned char*>(const_cast<char*>(key.str().data())),
                               static_cast<unsigned>(key.str().size())};
    const int rc =
        gnutls_certificate_set_x509_key_mem2(creds->cred_, &chain_d, &key_d, GNUTLS_X509_FMT_PEM, nullptr, 0);
    if (rc < 0) {
      return make_error(Errc::Config, fmt::format("{}: GnuTLS (QUIC listener): {}", origin, gnutls_strerror(rc)));
    }
    tls::OcspStapler* stapler = ocsp ? ocsp->find(c->chain.leaf()) : nullptr;
    if (stapler != nullptr) {
      gnutls_certificate_set_ocsp_status_request_function2(creds->cred_, static_cast<unsigned>(rc), staple_ocsp,
                                                           stapler);
    }
  }
  if (int rc = gnutls_rnd(GNUTLS_RND_KEY, creds->fallback_master_, sizeof creds->fallback_master_); rc != 0) {
    return make_error(Errc::Internal, fmt::format("QUIC ticket key: {}", gnutls_strerror(rc)));
  }
  return std::shared_ptr<const ServerCredentials>(std::move(creds));
}

ServerCredentials::~ServerCredentials() {
  if (cred_) gnutls_certificate_free_credentials(cred_);
  gnutls_memset(fallback_master_, 0, sizeof fallback_master_);
}

bool derive_from_ticket_key(const tls::TicketKey& key, std::string_view label, uint8_t* out, size_t len) {
  uint8_t ikm[2 * tls::TicketKey::kMaxSecretBytes];
  const size_t n = key.secret_bytes();
  std::memcpy(ikm, key.hmac_secret.data(), n);
  std::memcpy(ikm + n, key.aes_key.data(), n);
  const gnutls_datum_t ikm_d{ikm, static_cast<unsigned>(2 * n)};
  const gnutls_datum_t salt{const_cast<uint8_t*>(key.name.data()), static_cast<unsigned>(key.name.size())};
  uint8_t prk[32];
  const gnutls_datum_t prk_d{prk, sizeof prk};
  const gnutls_datum_t info{reinterpret_cast<unsigned char*>(const_cast<char*>(label.data())),
                            static_cast<unsigned>(label.size())};
  const bool ok = gnutls_hkdf_extract(GNUTLS_MAC_SHA256, &ikm_d, &salt, prk) == 0 &&
                  gnutls_hkdf_expand(GNUTLS_MAC_SHA256, &prk_d, &info, out, len) == 0;
  gnutls_memset(ikm, 0, sizeof ikm);
  gnutls_memset(prk, 0, sizeof prk);
  return ok;
}

bool ServerCredentials::ticket_master(uint8_t out[64]) const {
  std::shared_ptr<const tls::TicketKeyRing> ring = tickets_ ? tickets_->ring() : nullptr;
  const tls::TicketKey* key = ring ? ring->encryption_key(tickets_->now()) : nullptr;
  if (key == nullptr) {
    if (tickets_ != nullptr && ring != nullptr) return false;  // the ring has no key to encrypt with now
    std::memcpy(out, fallback_master_, kTicketMasterBytes);
    return true;
  }
  return derive_from_ticket_key(*key, "tlsfront quic ticket master", out, kTicketMasterBytes);
}

AntiReplayWindows::AntiReplayWindows(Claim claim) : claim_(std::make_shared<Claim>(std::move(claim))) { rotate(); }

void AntiReplayWindows::rotate() {
  const auto now = std::chrono::steady_clock::now();
  while (!windows_.empty() && now - windows_.front().started >= kWindow - kStep) windows_.pop_front();
  gnutls_anti_replay_t raw = nullptr;
  if (gnutls_anti_replay_init(&raw) != 0) return;
  std::shared_ptr<Claim> claim = claim_;
  std::shared_ptr<gnutls_anti_replay_st> context(raw,
                                                 [claim](gnutls_anti_replay_t c) { gnutls_anti_replay_deinit(c); });
  gnutls_anti_replay_set_window(raw, static_cast<unsigned>(std::chrono::milliseconds(kWindow).count()));
  gnutls_anti_replay_set_add_function(raw, add);
  gnutls_anti_replay_set_ptr(raw, claim.get());
  windows_.push_back(Window{now, std::move(context)});
}

std::shared_ptr<gnutls_anti_replay_st> AntiReplayWindows::for_session() const {
  return windows_.empty() ? nullptr : windows_.front().context;
}

int AntiReplayWindows::add(void* claim, time_t, const gnutls_datum_t* key, const gnutls_datum_t*) {
  if (key == nullptr || key->size <= kAntiReplayKeyPrefix) return GNUTLS_E_DB_ENTRY_EXISTS;
  const std::string_view binder(reinterpret_cast<const char*>(key->data) + kAntiReplayKeyPrefix,
                                key->size - kAntiReplayKeyPrefix);
  return (*static_cast<Claim*>(claim))(binder) ? 0 : GNUTLS_E_DB_ENTRY_EXISTS;
}

Status QuicTlsSession::init(const ServerCredentials& credentials, ngtcp2_crypto_conn_ref* conn_ref,
                            std::shared_ptr<gnutls_anti_replay_st> anti_replay) {
  anti_replay_ = std::move(anti_replay);
  unsigned flags = GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET | GNUTLS_NO_END_OF_EARLY_DATA;
  if (anti_replay_) flags |= GNUTLS_ENABLE_EARLY_DATA;
  if (int rc = gnutls_init(&session_, flags); rc != 0) {
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
  uint8_t master[kTicketMasterBytes];
  if (credentials.session_tickets() && credentials.ticket_master(master)) {
    const gnutls_datum_t key{master, sizeof master};
    const int rc = gnutls_session_ticket_enable_server(session_, &key);  // GnuTLS keeps a copy
    gnutls_memset(master, 0, sizeof master);
    if (rc != 0) return make_error(Errc::Io, fmt::format("gnutls tickets: {}", gnutls_strerror(rc)));
    gnutls_db_set_cache_expiration(session_, static_cast<int>(credentials.ticket_lifetime_s()));
    if (anti_replay_) {
      gnutls_anti_replay_enable(session_, anti_replay_.get());
      // QUIC's early data is not limited by the TLS max_early_data_size
      // (RFC 9001 §4.6.1: it must be 0xffffffff; flow control bounds it).
      gnutls_record_set_max_early_data_size(session_, 0xffffffffu);
    }
  } else {
    anti_replay_.reset();  // no tickets, no resumption, no early data
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

bool QuicTlsSession::certificate_covers(std::string_view host) {
  if (host.empty() || host == covered_host_) return true;
  const gnutls_datum_t* der = gnutls_certificate_get_ours(session_);
  if (der == nullptr) {
    // A resumed session sent no certificate: the name it was made for.
    const std::string sni = server_name();
    return sni.empty() || strncasecmp(sni.c_str(), std::string(host).c_str(), sni.size() + 1) == 0;
  }
  gnutls_x509_crt_t crt = nullptr;
  if (gnutls_x509_crt_init(&crt) != 0) return false;
  bool covers = false;
  if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) == 0) {
    std::string h(host);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    unsigned char ip[16];
    const int family = h.find(':') != std::string::npos ? AF_INET6 : AF_INET;
    if (inet_pton(family, h.c_str(), ip) == 1) {
      covers = gnutls_x509_crt_check_ip(crt, ip, family == AF_INET6 ? 16 : 4, 0) != 0;
    } else {
      covers = gnutls_x509_crt_check_hostname2(crt, h.c_str(), 0) != 0;
    }
  }
  gnutls_x509_crt_deinit(crt);
  if (covers) covered_host_.assign(host);
  return covers;
}

bool QuicTlsSession::early_data_accepted() const {
  return (gnutls_session_get_flags(session_) & GNUTLS_SFLAGS_EARLY_DATA) != 0;
}

}  // namespace tlsfront::quic
