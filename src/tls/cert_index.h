// CertIndex: every configured certificate of a generation, and the choice of
// one by the client's SNI (RFC 6066 §3).
//
// Entries serving the same set of names share one TlsContext (SSL_CTX), at
// most one per key type, so a client gets ECDSA when its signature
// algorithms allow it and RSA otherwise (OpenSSL's own choice among the
// SSL_CTX's certificates, tls_choose_sigalg). The choice of context happens in
// the client hello callback (SSL_CTX_set_client_hello_cb), before OpenSSL
// parses the extensions: a TLS 1.3 PSK and a TLS 1.2 session are then checked
// against the chosen context's session ID context, so a session resumes only
// under the certificates and names it was made for.
//
// Matching, per host name (lowercase ASCII; no match for anything else):
//   1. an exact name of an entry (the first entry in file order that names it);
//   2. a wildcard "*.<rest of the name after its first label>" (RFC 6125
//      §6.4.3), likewise first in file order;
//   3. no SNI or no match: the default entry (`default = true`, else the
//      first entry), or, with tls.strict_sni, a fatal unrecognized_name
//      alert (RFC 6066 §3).
// Names claimed by an earlier entry with a different name set are reported as
// warnings (the later entry never serves them).
// Certificate store entries (tls/store_entry.h) come before every file entry
// (a name in the store is served from the store), each in a context of its
// own; the default entry is always a file entry when there is one.
//
// Thread affinity: built on the control thread; immutable afterwards and read
// by every worker through its Generation, which outlives every SSL made from it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "tls/server_certificate.h"
#include "tls/store_entry.h"
#include "tls/tls_context.h"
#include "util/result.h"

namespace tlsfront::tls {

class AcmeChallenges;
class SessionCache;
class TicketKeyStore;

class CertIndex {
 public:
  // Loads every entry of tls.certificates (ServerCertificate::load at `now`)
  // and builds one TlsContext per name set (TlsContext::create with
  // `session_cache` and `tickets`, borrowed, outliving the index).
  // Errors: those of ServerCertificate::load, check_cipher_lists
  // (tls/cipher_list.h) and TlsContext::create.
  // `store`: the certificate store's entries (already checked; shared, kept
  // alive by the index).
  [[nodiscard]] static Result<std::unique_ptr<CertIndex>> create(
      const config::Tls& tls, SessionCache* session_cache, TicketKeyStore* tickets,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now(), StoreSnapshot store = {});

  ~CertIndex();
  CertIndex(const CertIndex&) = delete;
  CertIndex& operator=(const CertIndex&) = delete;

  // The SSL_CTX new connections' SSLs are made from (the default entry's);
  // the client hello callback switches each to its SNI's context.
  SSL_CTX* initial_context() const { return default_->get(); }

  // The context for `host` (lowercase, no trailing dot; "" = no SNI) per the
  // rules above; nullptr when strict_sni refuses it.
  const TlsContext* find(std::string_view host) const;

  // Every SSL_CTX of the index (one per name set).
  std::vector<SSL_CTX*> contexts() const;

  // True when its name sets differ in client certificate policy
  // (verify_client, client_ca, crl, verify_depth; client_auth.h).
  bool mixed_client_auth() const { return mixed_client_auth_; }
  // Whether a request for `host` (lowercase, no port) may be served on a
  // connection whose handshake was made under `ctx`: the context `host`
  // would get (find()) asks for client certificates as `ctx` does, or no
  // context serves `host` (strict_sni). Otherwise a client could complete
  // the handshake under one name's policy and send its requests to another
  // name (a Host or :authority other than its SNI): the answer is 421
  // (RFC 9110 §15.5.20). Any worker thread.
  bool same_client_auth(const SSL_CTX* ctx, std::string_view host) const;

  // With [acme]: a ClientHello offering only ALPN acme-tls/1 for a name
  // `board` has a TLS-ALPN-01 challenge for is answered with that challenge's
  // certificate instead (tls/acme_challenges.h). Set before the index is
  // shared; `board` outlives it.
  void answer_acme(const AcmeChallenges* board) { acme_ = board; }
  const AcmeChallenges* acme() const { return acme_; }

  // Store entries first, then the file entries in file order; the start-up
  // log and `--test` print their reports.
  const std::vector<const ServerCertificate*>& certificates() const { return all_; }

  // One line per entry (names, key type, default), the chain report of
  // each and its client certificate settings; warnings apart (as
  // ChainReport::lines).
  std::vector<std::string> report_lines() const;
  std::vector<std::string> warnings() const;

 private:
  CertIndex() = default;
  [[nodiscard]] Status build(const config::Tls& tls, SessionCache* session_cache, TicketKeyStore* tickets);
  bool by_store(const TlsContext* ctx) const;  // `ctx` serves a store entry

  std::vector<ServerCertificate> certs_;    // file entries
  StoreSnapshot store_;                     // store entries
  std::vector<const ServerCertificate*> all_;  // store_'s then certs_'s
  std::vector<std::unique_ptr<TlsContext>> contexts_;
  std::vector<size_t> context_of_cert_;  // index into contexts_, per certs_ entry
  std::unordered_map<std::string, const TlsContext*> exact_;
  std::unordered_map<std::string, const TlsContext*> wildcard_;  // key: the name after "*."
  const TlsContext* default_ = nullptr;
  bool strict_sni_ = false;
  const AcmeChallenges* acme_ = nullptr;
  bool mixed_client_auth_ = false;
  std::vector<std::string> shadowed_;  // warnings: names an earlier entry serves
  // check_cipher_lists: exclusions of nothing; early data without a cluster-wide replay check.
  std::vector<std::string> config_warnings_;
};

}  // namespace tlsfront::tls
