#include "tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "tls/client_auth.h"
#include "tls/early_data_gate.h"
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
// session, so a resumed TLS 1.2 connection still reports its SNI. The
// certificate was already chosen by SNI (CertIndex's client hello callback).
int servername_cb(SSL*, int*, void*) noexcept { return SSL_TLSEXT_ERR_OK; }

int to_openssl_version(config::TlsVersion v) {
  return v == config::TlsVersion::Tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

Error config_error_with_queue(const std::string& origin, std::string_view key, std::string message) {
  std::string q = drain_openssl_errors();
  if (!q.empty()) message += " (" + q + ")";
  return config_error(origin, key, std::move(message));
}

// nginx's (1.x, http module): SHA-1 over "HTTP" and the SHA-1 digest of each
// leaf, the last configured ssl_certificate first (nginx keeps them in a list
// it prepends to), then (with ssl_verify_client) the SHA-1 digest of each
// client CA name. `certs` is in file order, as the ssl_certificate
// directives of the server block must be. nginx does not cover its ssl_crl;
// tlsfront appends the CRLs' digest when there is a crl, so a revocation
// ends old sessions here too (they are then not shared with nginx nodes).
Result<std::string> nginx_session_id_context(std::span<const ServerCertificate* const> certs,
                                             const ClientAuthDigest& client) {
  std::string input = "HTTP";
  for (auto it = certs.rbegin(); it != certs.rend(); ++it) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (!X509_digest((*it)->chain.leaf(), EVP_sha1(), md, &md_len)) return openssl_error(Errc::Tls, "X509_digest");
    input.append(reinterpret_cast<const char*>(md), md_len);
  }
  for (const auto& name : client.ca_name_sha1) input += name;
  input += client.crl_sha256;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  if (EVP_Digest(input.data(), input.size(), out, &out_len, EVP_sha1(), nullptr) != 1) {
    return openssl_error(Errc::Tls, "SHA-1");
  }
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

// tlsfront's: SHA-256 over the sorted SHA-256 digests of the leaves, then the
// sorted names (independent of the order in the file), then the client
// certificate policy's digest when one is asked for (client_auth.h).
Result<std::string> session_id_context(std::span<const ServerCertificate* const> certs,
                                       config::SessionIdContext derivation, const ClientAuthDigest& client) {
  // A store entry's context leaves its leaves out (the names, prefixed,
  // stand for them): a swapped certificate keeps its sessions resumable.
  const bool from_store = !certs.empty() && certs.front()->from_store;
  if (derivation == config::SessionIdContext::Nginx && !from_store) return nginx_session_id_context(certs, client);
  std::vector<std::string> parts;
  if (from_store) parts.emplace_back("tlsfront certificate store");
  for (const ServerCertificate* c : certs) {
    if (c->from_store) continue;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (!X509_digest(c->chain.leaf(), EVP_sha256(), md, &md_len)) return openssl_error(Errc::Tls, "X509_digest");
    parts.emplace_back(reinterpret_cast<const char*>(md), md_len);
  }
  std::sort(parts.begin(), parts.end());
  std::vector<std::string> names;
  for (const ServerCertificate* c : certs) names.insert(names.end(), c->names.begin(), c->names.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string input;
  for (const auto& p : parts) input += p;
  for (const auto& n : names) input += n + '\0';
  input += client.policy;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  if (EVP_Digest(input.data(), input.size(), out, &out_len, EVP_sha256(), nullptr) != 1) {
    return openssl_error(Errc::Tls, "SHA-256");
  }
  return std::string(reinterpret_cast<const char*>(out), std::min<unsigned>(out_len, SSL_MAX_SID_CTX_LENGTH));
}

}  // namespace

bool set_alpn_protocols(SSL* ssl, const std::vector<std::string>* protocols) {
  return SSL_set_ex_data(ssl, alpn_ex_index(), const_cast<std::vector<std::string>*>(protocols)) == 1;
}

Result<std::unique_ptr<TlsContext>> TlsContext::create(const config::Tls& tls,
                                                       std::span<const ServerCertificate* const> certs,
                                                       SessionCache* session_cache, TicketKeyStore* tickets) {
  if (certs.empty()) return make_error(Errc::InvalidArgument, "TlsContext needs at least one certificate");
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
    return config_error_with_queue(tls.ciphers_origin, "tls.ciphers", "no usable cipher in \"" + tls.ciphers + "\"");
  }
  if (!SSL_CTX_set_ciphersuites(ctx.get(), tls.ciphersuites.c_str())) {
    return config_error_with_queue(tls.ciphersuites_origin, "tls.ciphersuites",
                                   "invalid TLS 1.3 ciphersuite list \"" + tls.ciphersuites + "\"");
  }
  if (!SSL_CTX_set1_groups_list(ctx.get(), tls.groups.c_str())) {
    return config_error_with_queue(tls.groups_origin, "tls.groups", "unknown group in \"" + tls.groups + "\"");
  }

  for (size_t i = 0; i < certs.size(); ++i) {
    const ServerCertificate& c = *certs[i];
    for (size_t j = 0; j < i; ++j) {
      if (certs[j]->key_type == c.key_type) {
        return config_error(c.config->cert_origin, c.config->cert_setting,
                            "a second " + c.key_type + " certificate for the same names as " +
                                certs[j]->config->cert_setting + " (one certificate per key type and name set)");
      }
    }
    // Each call fills the slot of the certificate's key type; the key goes
    // to the slot last filled.
    if (SSL_CTX_use_certificate(ctx.get(), c.chain.leaf()) != 1) return openssl_error(Errc::Tls, "SSL_CTX_use_certificate");
    if (SSL_CTX_set1_chain(ctx.get(), c.chain.intermediates()) != 1) return openssl_error(Errc::Tls, "SSL_CTX_set1_chain");
    if (SSL_CTX_use_PrivateKey(ctx.get(), c.key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1) {
      drain_openssl_errors();
      return config_error(c.config->key_origin, c.config->key_setting,
                          "\"" + c.config->key + "\" does not match certificate \"" + c.config->cert + "\"");
    }
  }

  // One client certificate policy per context: every entry of a name set
  // must ask the same.
  const config::ClientAuth& client_auth = certs.front()->config->client_auth;
  for (const ServerCertificate* c : certs) {
    if (!c->config->client_auth.same_policy(client_auth)) {
      return config_error(c->config->cert_origin, c->config->cert_setting,
                          "serves the same names as " + certs.front()->config->cert_setting +
                              " with other client certificate settings (client_ca, verify_client, verify_depth, "
                              "crl must be the same for a name set)");
    }
  }
  auto client = configure_client_auth(ctx.get(), client_auth);
  if (!client) return client.take_error();
  auto sid_ctx = session_id_context(certs, tls.session_id_context, *client);
  if (!sid_ctx) return sid_ctx.take_error();
  if (session_cache && tls.session_cache.enabled) {
    if (auto st = session_cache->attach(ctx.get(), *sid_ctx); !st) return st.take_error();
  } else {
    if (!SSL_CTX_set_session_id_context(ctx.get(), reinterpret_cast<const unsigned char*>(sid_ctx->data()),
                                        static_cast<unsigned>(sid_ctx->size()))) {
      return openssl_error(Errc::Tls, "SSL_CTX_set_session_id_context");
    }
    if (session_cache) {
      SessionCache::disable(ctx.get());
    } else {
      SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_SERVER);
    }
  }
  if (tickets) attach(ctx.get(), tickets, tls);
  if (tls.early_data) {
    // Tickets then carry max_early_data (RFC 8446 §4.6.1); whether a
    // ClientHello's early data is taken is EarlyDataGate's decision.
    SSL_CTX_set_max_early_data(ctx.get(), static_cast<uint32_t>(tls.max_early_data));
    SSL_CTX_set_recv_max_early_data(ctx.get(), static_cast<uint32_t>(tls.max_early_data));
    SSL_CTX_set_allow_early_data_cb(ctx.get(), EarlyDataGate::allow_early_data, nullptr);
    // OpenSSL's own anti-replay makes every ticket single-use through its
    // internal session cache, which ends stateless tickets shared by the
    // cluster's nodes; EarlyDataGate's recording is the replay protection.
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_ANTI_REPLAY);
  }
  SSL_CTX_set_alpn_select_cb(ctx.get(), alpn_select_cb, nullptr);
  SSL_CTX_set_tlsext_servername_callback(ctx.get(), servername_cb);

  std::unique_ptr<TlsContext> out(new TlsContext(std::move(ctx)));
  out->leaf_ = certs.front()->chain.leaf();  // the SSL_CTX holds a reference
  out->client_policy_ = std::move(client->policy);
  return out;
}

Result<std::unique_ptr<TlsContext>> TlsContext::create(const config::Tls& tls, SessionCache* session_cache,
                                                       TicketKeyStore* tickets) {
  std::vector<ServerCertificate> loaded;
  for (const auto& c : tls.certificates) {
    auto cert = ServerCertificate::load(c, tls, std::chrono::system_clock::now());
    if (!cert) return cert.take_error();
    loaded.push_back(std::move(cert).value());
  }
  std::vector<const ServerCertificate*> certs;
  for (const auto& c : loaded) certs.push_back(&c);
  // The SSL_CTX holds its own references to the leaves and keys.
  return create(tls, certs, session_cache, tickets);
}

}  // namespace tlsfront::tls
