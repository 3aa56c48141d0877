// EarlyDataGate: one connection's decision whether its TLS 1.3 early data
// (0-RTT) may be accepted, made in OpenSSL's client hello callback and
// handed to OpenSSL's allow-early-data callback (tls/EARLY_DATA_REPLAY.md):
//
//   1. The client hello callback (cert_index.cc, after the session lookup)
//      calls on_client_hello(). A ClientHello without the early_data
//      extension ends here (NotOffered). Otherwise its first PSK binder is
//      claimed in the node's ReplayRecorder and, when a shared store is
//      configured, in that store too: the handshake is then paused
//      (SSL_CLIENT_HELLO_RETRY) until the store answers or times out, as a
//      session lookup pauses it (tls/session_lookup.h).
//   2. OpenSSL, if it would accept the early data itself (a resumed ticket
//      of this server, a fresh ticket age, max_early_data > 0), asks
//      allow_early_data(): yes only when the verdict is Accept.
//
// Verdicts:
//   NotOffered        no early_data extension
//   Accept            first sight on this node and (if asked) in the store
//   Disabled          [tls] early_data = false
//   Replay            seen before, the node's recording is full, or the node
//                     started less than ReplayRecorder::kWindow ago (no store)
//   StoreUnavailable  the shared store could not answer (down, slow, error)
//   NoPsk             no well-formed pre_shared_key extension
// State: Idle -> Pending (store asked) -> Done, or Idle -> Done.
// Lifetime and ownership as SessionLookup's: the Connection holds it in a
// shared_ptr, the store's callback a weak_ptr, the SSL's ex_data borrows it.
// Thread affinity: owning worker only.
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "tls/remote_session_store.h"
#include "tls/replay_recorder.h"

namespace tlsfront::tls {

class EarlyDataGate : public std::enable_shared_from_this<EarlyDataGate> {
 public:
  enum class State { Idle, Pending, Done };
  enum class Verdict { NotOffered, Accept, Disabled, Replay, StoreUnavailable, NoPsk };

  // `recorder` and `store` (may be null: none) are borrowed and outlive the
  // gate; `resume` is called once a pending store claim ends.
  // `start_window`: refuse within ReplayRecorder::kWindow of the node's
  // start, because tickets issued before it still decrypt (ticket keys from
  // files or Redis) and no shared store kept the recording of that time.
  EarlyDataGate(ReplayRecorder& recorder, RemoteSessionStore* store, bool start_window, std::function<void()> resume)
      : recorder_(recorder), store_(store), start_window_(start_window), resume_(std::move(resume)) {}

  // Makes this gate reachable from `ssl`. Errors: false when OpenSSL refuses the ex_data.
  [[nodiscard]] bool attach(SSL* ssl);
  static EarlyDataGate* of(const SSL* ssl);

  // Client hello callback body: SSL_CLIENT_HELLO_RETRY while the store is
  // asked, else SSL_CLIENT_HELLO_SUCCESS (never an error: a rejection only
  // turns the early data away).
  int on_client_hello(SSL* ssl);
  // SSL_CTX_set_allow_early_data_cb: 1 to accept.
  static int allow_early_data(SSL* ssl, void* arg);

  State state() const { return state_; }
  Verdict verdict() const { return verdict_; }

  // The first binder of a pre_shared_key extension body (RFC 8446 §4.2.11:
  // identities<7..2^16-1>, then binders<33..2^16-1>, each binder<32..255>);
  // none if malformed. A view into `ext`.
  static std::optional<std::string_view> first_binder(std::string_view ext);

 private:
  void decide(Verdict v);

  ReplayRecorder& recorder_;
  RemoteSessionStore* store_;
  bool start_window_;
  std::function<void()> resume_;
  State state_ = State::Idle;
  Verdict verdict_ = Verdict::NotOffered;
};

}  // namespace tlsfront::tls
