#include "tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstring>

#include "tls/openssl_error.h"
#include "tls/session_cache.h"
#include "tls/ticket_key_ring.h"

namespace tlsfront::tls {
namespace {


const std::vector<std::string>& default_alpn() {
  static const std::vector<std::string> protocols{"h2", "http/1.1"};
  return protocols;
}

int alpn_ex_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// RFC 7301 §3.2: the server picks from the client's list, in the listener's
// preference order; with no overlap it answers no_application_protocol. A
// client that sends no ALPN gets HTTP/1.1 (the callback is not called).
int alpn_select_cb(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                   unsigned int inlen, void*) noexcept {
  const auto* mine = static_cast<const std::vector<std::string>*>(SSL_get_ex_data(ssl, alpn_ex_index()));
  for (const std::string& proto : mine ? *mine : default_alpn()) {
    for (unsigned int i = 0; i < inlen;) {
      const unsigned int len = in[i];
      if (i + 1 + len > inlen) break;
      if (len == proto.size() && std::memcmp(in + i + 1, proto.data(), len) == 0) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(len);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + len;
    }
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// Accepting the name (RFC 6066 §3) is what makes OpenSSL store it in the
// session, so a resumed TLS 1.2 connection still reports its SNI. Certificate
// selection by SNI comes with [[certificate]] (#4).
int servername_cb(SSL*, int*, void*) noexcept { return SSL_TLSEXT_ERR_OK; }

// Encrypted keys are not supported: fail instead of prompting on a terminal.
int no_passphrase_cb(char*, int, int, void*) noexcept { return 0; }

int to_openssl_version(config::TlsVersion v) {
  return v == config::TlsVersion::Tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

Error config_error_with_queue(const std::string& origin, std::string_view key, std::string message) {
  std::string q = drain_openssl_errors();
  if (!q.empty()) message += " (" + q + ")";
  return config_error(origin, key, std::move(message));
}

Status check_readable(const std::string& path, std::string_view key, const std::string& origin) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return config_error(origin, key, "cannot open \"" + path + "\": " + std::strerror(errno));
  std::fclose(f);
  return {};
}

}  // namespace

bool set_alpn_protocols(SSL* ssl, const std::vector<std::string>* protocols) {
  return SSL_set_ex_data(ssl, alpn_ex_index(), const_cast<std::vector<std::string>*>(protocols)) == 1;
}

Result<std::unique_ptr<TlsContext>> TlsContext::create(const config::Tls& tls, SessionCache* session_cache,
                                                       TicketKeyStore* tickets) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return openssl_error(Errc::Tls, "SSL_CTX_new");

  int min_v = TLS1_3_VERSION, max_v = TLS1_2_VERSION;
  for (auto v : tls.protocols) {
    min_v = std::min(min_v, to_openssl_version(v));
    max_v = std::max(max_v, to_openssl_version(v));
  }
  if (!SSL_CTX_set_min_proto_version(ctx.get(), min_v) || !SSL_CTX_set_max_proto_version(ctx.get(), max_v)) {
    return openssl_error(Errc::Tls, "setting the TLS protocol range");
  }
  uint64_t opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION;
  if (tls.prefer_server_ciphers) opts |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(ctx.get(), opts);
  // Idle keepalive connections then hold no 34 KiB record buffers.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);

  if (!SSL_CTX_set_cipher_list(ctx.get(), tls.ciphers.c_str())) {
    return config_error_with_queue(tls.ciphers_origin, "ciphers", "no usable cipher in \"" + tls.ciphers + "\"");
  }
  if (!SSL_CTX_set_ciphersuites(ctx.get(), tls.ciphersuites.c_str())) {
    return config_error_with_queue(tls.ciphersuites_origin, "ciphersuites",
                                   "invalid TLS 1.3 ciphersuite list \"" + tls.ciphersuites + "\"");
  }
  if (!SSL_CTX_set1_groups_list(ctx.get(), tls.groups.c_str())) {
    return config_error_with_queue(tls.groups_origin, "groups", "unknown group in \"" + tls.groups + "\"");
  }

  if (auto st = check_readable(tls.certificate, "certificate", tls.certificate_origin); !st) {
    return st.take_error();
  }
  if (auto st = check_readable(tls.key, "key", tls.key_origin); !st) return st.take_error();
  ERR_clear_error();
  BioPtr key_bio(BIO_new_file(tls.key.c_str(), "r"));
  EvpPkeyPtr key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase_cb, nullptr) : nullptr);
  if (!key) {
    return config_error(tls.key_origin, "key",
                        "\"" + tls.key + "\" is not a PEM private key (" + drain_openssl_errors() + ")");
  }
  auto chain = CertChain::build(tls, key.get(), std::chrono::system_clock::now());
  if (!chain) return chain.take_error();
  if (SSL_CTX_use_certificate(ctx.get(), chain->leaf()) != 1) return openssl_error(Errc::Tls, "SSL_CTX_use_certificate");
  if (SSL_CTX_set1_chain(ctx.get(), chain->intermediates()) != 1) return openssl_error(Errc::Tls, "SSL_CTX_set1_chain");
  const std::string mismatch = "\"" + tls.key + "\" does not match certificate \"" + tls.certificate + "\"";
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1) {
    drain_openssl_errors();
    return config_error(tls.key_origin, "key", mismatch);
  }
  ChainReport report = chain->report();
  if (struct stat st{}; ::stat(tls.key.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH))) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    report.warnings.push_back("key file \"" + tls.key + "\" is readable by group/others (mode " + mode +
                              "); chmod 0600 it");
  }

  X509* leaf = SSL_CTX_get0_certificate(ctx.get());
  // Session ID context (RFC 8446 §4.6.1 / RFC 5246 §7.4.1.2): sessions resume
  // only under the certificate they were made for.
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (!X509_digest(leaf, EVP_sha256(), md, &md_len)) return openssl_error(Errc::Tls, "X509_digest");
  const std::string_view sid_ctx(reinterpret_cast<const char*>(md), std::min<unsigned>(md_len, SSL_MAX_SID_CTX_LENGTH));
  if (session_cache && tls.session_cache.enabled) {
    if (auto st = session_cache->attach(ctx.get(), sid_ctx); !st) return st.take_error();
  } else {
    if (!SSL_CTX_set_session_id_context(ctx.get(), md, static_cast<unsigned>(sid_ctx.size()))) {
      return openssl_error(Errc::Tls, "SSL_CTX_set_session_id_context");
    }
    if (session_cache) {
      SessionCache::disable(ctx.get());
    } else {
      SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_SERVER);
    }
  }
  if (tickets) attach(ctx.get(), tickets, tls);
  SSL_CTX_set_alpn_select_cb(ctx.get(), alpn_select_cb, nullptr);
  SSL_CTX_set_tlsext_servername_callback(ctx.get(), servername_cb);

  std::unique_ptr<TlsContext> out(new TlsContext(std::move(ctx)));
  out->leaf_ = leaf;
  out->chain_report_ = std::move(report);
  return out;
}

}  // namespace tlsfront::tls
