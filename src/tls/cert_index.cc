#include "tls/cert_index.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <map>

#include <fmt/core.h>

#include "tls/acme_challenges.h"
#include "tls/cipher_list.h"
#include "tls/client_auth.h"
#include "tls/early_data_gate.h"
#include "tls/handshake_budget.h"
#include "tls/handshake_facts.h"
#include "tls/openssl_error.h"
#include "tls/session_cache.h"

namespace tlsfront::tls {
namespace {

int index_slot() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The host_name of the ClientHello's server_name extension (RFC 6066 §3:
// ServerNameList of {NameType, HostName<1..2^16-1>}), lowercased, without a
// trailing dot; "" when absent, malformed (OpenSSL rejects it later with
// decode_error) or not a plausible DNS name (never matches a configured one).
std::string client_server_name(SSL* ssl) {
  const unsigned char* p = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) != 1 || len < 2) return {};
  const size_t list_len = (size_t{p[0]} << 8) | p[1];
  if (list_len != len - 2 || list_len < 3) return {};
  p += 2;
  if (p[0] != TLSEXT_NAMETYPE_host_name) return {};
  const size_t name_len = (size_t{p[1]} << 8) | p[2];
  if (name_len == 0 || name_len > 253 || 3 + name_len > list_len) return {};
  std::string host(reinterpret_cast<const char*>(p + 3), name_len);
  // RFC 6066 §3 forbids the trailing dot; some clients send it anyway, and
  // nginx matches without it.
  if (host.size() > 1 && host.back() == '.') host.pop_back();
  for (char& c : host) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) {
      return {};
    }
  }
  return host;
}

// Runs before OpenSSL parses the ClientHello's extensions (PSK, session
// ticket) and before its session lookup, so both see the chosen context's
// session ID context and callbacks.
int client_hello_cb(SSL* ssl, int* alert, void* /*arg*/) noexcept {
  // First: a client over its handshake budget costs nothing more.
  if (HandshakeBudget* budget = HandshakeBudget::of(ssl); budget != nullptr && !budget->on_client_hello(ssl)) {
    *alert = SSL_AD_HANDSHAKE_FAILURE;
    return SSL_CLIENT_HELLO_ERROR;
  }
  const auto* index = static_cast<const CertIndex*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), index_slot()));
  // RFC 8737 TLS-ALPN-01: the CA's validation handshake gets the challenge
  // certificate and nothing else (no session, no early data).
  if (const AcmeChallenges* acme = index ? index->acme() : nullptr;
      acme != nullptr && acme->active_alpn() && offers_only_acme_tls(ssl)) {
    if (auto challenge = acme->alpn01(client_server_name(ssl))) {
      SSL_set_SSL_CTX(ssl, challenge.get());  // takes its own reference
      return SSL_CLIENT_HELLO_SUCCESS;
    }
  }
  if (index != nullptr) {
    const TlsContext* ctx = index->find(client_server_name(ssl));
    record_client_hello(ssl, ctx == nullptr);
    if (ctx == nullptr) {
      *alert = SSL_AD_UNRECOGNIZED_NAME;
      return SSL_CLIENT_HELLO_ERROR;
    }
    SSL_set_SSL_CTX(ssl, ctx->get());  // no-op when it is the current one (a RETRY re-entry)
    adopt_verify_mode(ssl, ctx->get());  // the name's client certificate request (client_auth.h)
  }
  const int rc = SessionCache::on_client_hello(ssl, alert, nullptr);
  if (rc != SSL_CLIENT_HELLO_SUCCESS) return rc;
  // After the session lookup: both may pause, one after the other.
  if (EarlyDataGate* gate = EarlyDataGate::of(ssl)) return gate->on_client_hello(ssl);
  return rc;
}

std::string names_key(const std::vector<std::string>& names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::string key;
  for (const auto& n : sorted) key += n + ' ';
  return key;
}

std::string list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

CertIndex::~CertIndex() = default;

Result<std::unique_ptr<CertIndex>> CertIndex::create(const config::Tls& tls, SessionCache* session_cache,
                                                     TicketKeyStore* tickets, std::chrono::system_clock::time_point now,
                                                     StoreSnapshot store) {
  std::unique_ptr<CertIndex> index(new CertIndex());
  index->strict_sni_ = tls.strict_sni;
  for (const auto& entry : tls.certificates) {
    auto cert = ServerCertificate::load(entry, tls, now);
    if (!cert) return cert.take_error();
    index->certs_.push_back(std::move(cert).value());
  }
  index->store_ = std::move(store);
  for (const auto& entry : index->store_) {
    for (const auto& cert : entry->certs) index->all_.push_back(&cert);
  }
  for (const auto& cert : index->certs_) index->all_.push_back(&cert);
  if (auto st = index->build(tls, session_cache, tickets); !st) return st.take_error();
  return index;
}

Status CertIndex::build(const config::Tls& tls, SessionCache* session_cache, TicketKeyStore* tickets) {
  if (all_.empty()) return make_error(Errc::Config, "tls: no certificate configured");
  if (auto st = check_cipher_lists(tls, config_warnings_); !st) return st;
  if (tls.early_data && tls.ticket_keys.source != config::TicketKeySource::Auto &&
      tls.session_cache.store != config::SessionStore::Redis) {
    config_warnings_.push_back(
        "tls.early_data: the ticket keys are shared (files or Redis) but early-data replays are recorded on this "
        "node only: every node that can decrypt a ticket accepts its early data once; set [tls.session_cache] "
        "store = \"redis\" for a cluster-wide check");
  }
  // Name set -> its entries, in file order of the set's first entry.
  std::map<std::string, size_t> set_of_key;
  std::vector<std::vector<const ServerCertificate*>> sets;
  context_of_cert_.resize(all_.size());
  for (size_t i = 0; i < all_.size(); ++i) {
    // A store entry never shares a context with file entries.
    const std::string key = (all_[i]->from_store ? "store\n" : "") + names_key(all_[i]->names);
    auto [it, added] = set_of_key.emplace(key, sets.size());
    if (added) sets.emplace_back();
    sets[it->second].push_back(all_[i]);
    context_of_cert_[i] = it->second;
  }
  const int slot = index_slot();
  if (slot < 0) return openssl_error(Errc::Tls, "SSL_CTX_get_ex_new_index");
  for (const auto& set : sets) {
    auto ctx = TlsContext::create(tls, set, session_cache, tickets);
    if (!ctx) return ctx.take_error();
    SSL_CTX_set_ex_data((*ctx)->get(), slot, this);
    // Installed after TlsContext::create's (the session cache's), which it calls.
    SSL_CTX_set_client_hello_cb((*ctx)->get(), client_hello_cb, nullptr);
    contexts_.push_back(std::move(ctx).value());
  }

  for (const auto& c : contexts_) mixed_client_auth_ |= c->client_policy() != contexts_.front()->client_policy();
  // The first file entry (else the first store entry), or the one marked default.
  default_ = contexts_[context_of_cert_[certs_.empty() ? 0 : all_.size() - certs_.size()]].get();
  for (size_t i = 0; i < all_.size(); ++i) {
    const TlsContext* ctx = contexts_[context_of_cert_[i]].get();
    if (all_[i]->config->is_default) default_ = ctx;
    for (const auto& name : all_[i]->names) {
      const bool wildcard = name.starts_with("*.");
      auto& map = wildcard ? wildcard_ : exact_;
      auto [it, added] = map.emplace(wildcard ? name.substr(2) : name, ctx);
      if (!added && it->second != ctx) {
        shadowed_.push_back(fmt::format("{}: \"{}\" is served by {}, not by \"{}\"", all_[i]->config->names_setting,
                                        name,
                                        by_store(it->second) ? "the certificate store"
                                                             : "an earlier certificate with other names",
                                        all_[i]->config->cert));
      }
    }
  }
  return {};
}

bool CertIndex::by_store(const TlsContext* ctx) const {
  for (size_t i = 0; i < all_.size(); ++i) {
    if (contexts_[context_of_cert_[i]].get() == ctx) return all_[i]->from_store;
  }
  return false;
}

bool CertIndex::same_client_auth(const SSL_CTX* ctx, std::string_view host) const {
  const TlsContext* wanted = find(host);
  if (wanted == nullptr || wanted->get() == ctx) return true;
  for (const auto& c : contexts_) {
    if (c->get() == ctx) return c->client_policy() == wanted->client_policy();
  }
  return false;
}

std::vector<SSL_CTX*> CertIndex::contexts() const {
  std::vector<SSL_CTX*> out;
  for (const auto& c : contexts_) out.push_back(c->get());
  return out;
}

const TlsContext* CertIndex::find(std::string_view host) const {
  if (!host.empty()) {
    if (auto it = exact_.find(std::string(host)); it != exact_.end()) return it->second;
    if (const size_t dot = host.find('.'); dot != std::string_view::npos && dot > 0) {
      if (auto it = wildcard_.find(std::string(host.substr(dot + 1))); it != wildcard_.end()) return it->second;
    }
  }
  return strict_sni_ ? nullptr : default_;
}

std::vector<std::string> CertIndex::report_lines() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < all_.size(); ++i) {
    const ServerCertificate& c = *all_[i];
    const bool is_default = !strict_sni_ && contexts_[context_of_cert_[i]].get() == default_;
    out.push_back(fmt::format("{}: {} certificate for {}{}{}", c.config->cert_setting, c.key_type,
                              c.names.empty() ? "no names" : list(c.names), c.names_from_san ? " (from its SAN)" : "",
                              is_default ? "; default for clients without SNI or with an unknown name" : ""));
    if (c.from_store) {
      for (const auto& e : store_) {
        if (&e->config != c.config) continue;
        out.push_back(fmt::format("  source: certificate store, region \"{}\", updated_at {} ns, sealed with key {}",
                                  e->region, e->updated_at, e->key_id));
      }
    }
    for (auto& line : c.chain.report().lines()) out.push_back("  " + line);
    if (const config::ClientAuth& a = c.config->client_auth; a.enabled()) {
      out.push_back(fmt::format("  client certificates {}: verified against client_ca \"{}\"{}, verify_depth {}",
                                a.verify == config::VerifyClient::Required ? "required" : "optional", a.ca,
                                a.crl.empty() ? "" : ", crl \"" + a.crl + "\"", a.depth));
    }
  }
  if (strict_sni_) out.push_back("tls.strict_sni: clients without SNI or with an unknown name are refused");
  return out;
}

std::vector<std::string> CertIndex::warnings() const {
  std::vector<std::string> out = shadowed_;
  out.insert(out.end(), config_warnings_.begin(), config_warnings_.end());
  for (const auto* c : all_) out.insert(out.end(), c->warnings.begin(), c->warnings.end());
  return out;
}

}  // namespace tlsfront::tls
