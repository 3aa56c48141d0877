// SessionLookup: one connection's asynchronous session-ID lookup in a
// RemoteSessionStore, done from OpenSSL's client hello callback without
// blocking the worker and without replaying the ClientHello:
//
//   1. The client hello callback (installed by SessionCache::attach for
//      store = "redis") finds a resumable session ID that the local
//      SessionCache does not hold, starts the lookup and returns
//      SSL_CLIENT_HELLO_RETRY; SSL_do_handshake then reports
//      SSL_ERROR_WANT_CLIENT_HELLO_CB (TlsStream::handshake_paused()).
//   2. The answer (or the store's timeout) puts the session, if usable, into
//      the local SessionCache and calls `resume`; the connection calls
//      SSL_do_handshake again. OpenSSL kept the ClientHello, so the callback
//      runs again, sees the lookup is done and returns SUCCESS; the session
//      callback then finds the session locally (resumption) or not (full
//      handshake). A miss, a garbage value or a timeout is never an error.
//
// What is looked up: for TLS 1.2, the ClientHello's session ID; when TLS 1.3
// will be negotiated, the legacy session ID is random (RFC 8446 §4.1.2), so
// the first PSK identity of the pre_shared_key extension is used instead when
// it is a stateful ticket, i.e. a session ID (OpenSSL sends the session ID as
// the ticket when tickets are off: SSL_OP_NO_TICKET); stateless tickets are
// longer and are never looked up (they decrypt locally).
//
// Lifetime: the Connection owns its SessionLookup through a shared_ptr and
// frees it after its SSL; the store's callback holds only a weak_ptr, so an
// answer for a closed connection is dropped. The SSL's ex_data slot borrows it.
// Thread affinity: owning worker only.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tls/remote_session_store.h"

namespace tlsfront::tls {

class SessionCache;

class SessionLookup : public std::enable_shared_from_this<SessionLookup> {
 public:
  enum class State { Idle, Pending, Done };

  // `store` is borrowed and must outlive this lookup (the worker's store);
  // `resume` is called once the pending lookup ends (not if none started).
  SessionLookup(RemoteSessionStore* store, std::function<void()> resume)
      : store_(store), resume_(std::move(resume)) {}

  // Makes this lookup reachable from `ssl` (borrowed; this must outlive the
  // SSL's use). Errors: false when OpenSSL refuses the ex_data.
  [[nodiscard]] bool attach(SSL* ssl);
  // The lookup attached to `ssl`, or nullptr.
  static SessionLookup* of(const SSL* ssl);

  State state() const { return state_; }
  RemoteSessionStore* store() const { return store_; }

  // Client hello callback body, called by the trampoline in session_cache.cc
  // with the SSL's cache and cache `key` (empty: nothing to look up). Returns
  // SSL_CLIENT_HELLO_RETRY while a lookup is pending, else SSL_CLIENT_HELLO_SUCCESS.
  int on_client_hello(SessionCache& cache, const std::string& key);

  // The session ID a ClientHello offers for resumption by ID. TLS 1.2:
  // `session_id` unless it is empty or longer than 32 bytes. When the hello
  // offers TLS 1.3 (`supported_versions`, the extension body, may be empty =
  // absent) and `server_allows_tls13`: the first identity of `pre_shared_key`
  // (the extension body, RFC 8446 §4.2.11; may be empty = absent) if it is
  // 1..32 bytes, else none. Malformed extensions give none (OpenSSL then
  // rejects the hello itself). Views into the caller's buffers.
  static std::optional<std::string_view> resumable_session_id(std::string_view session_id,
                                                              std::string_view supported_versions,
                                                              bool server_allows_tls13,
                                                              std::string_view pre_shared_key = {});

 private:
  void on_answer(SessionCache& cache, const std::string& key, std::optional<std::string> der);

  RemoteSessionStore* store_;
  std::function<void()> resume_;
  State state_ = State::Idle;
};

}  // namespace tlsfront::tls
