// Session ticket encryption keys (STEKs, RFC 5077 §4 "recommended ticket
// construction"; RFC 8446 §4.6.1 for TLS 1.3) and their wiring into OpenSSL.
//
// A TicketKeyRing is an immutable set of keys, each with an activation and an
// expiry time: the newest active key encrypts new tickets, every unexpired key
// (including ones not yet active, distributed ahead of use) decrypts. A
// TicketKeyStore publishes the current ring to all workers through an atomic
// shared_ptr (nghttpx Worker::ticket_keys_); attach() installs OpenSSL's
// SSL_CTX_set_tlsext_ticket_key_evp_cb (OpenSSL 3.0) so that handshakes encrypt
// with the current key, decrypt with any key found by name, and ask for renewal
// (a fresh ticket) when an older key was used. Sources: ticket_key_source_local.h
// (generated, rotated in-process) and ticket_key_source_file.h (nginx key files).
//
// Trust: key material never leaves this process except through the key files
// an operator provides; it is never logged (key_id() is the loggable handle).
// Unknown or forged tickets never fail a handshake: they fall back to a full
// handshake and are counted.
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/clock.h"

namespace tlsfront::tls {

using TimePoint = std::chrono::system_clock::time_point;

// One STEK. Copyable (a copy is cleansed on its own destruction); key bytes are
// OPENSSL_cleanse()d by the destructor. Never log a TicketKey; use key_id().
struct TicketKey {
  static constexpr size_t kNameBytes = 16;     // RFC 5077 §4 key_name
  static constexpr size_t kMaxSecretBytes = 32;

  // AES-256-CBC with a 32-byte HMAC-SHA256 secret (80-byte nginx files and
  // generated keys), or AES-128-CBC with a 16-byte HMAC-SHA256 secret
  // (48-byte nginx files), exactly as nginx uses them.
  enum class Cipher { Aes256Cbc, Aes128Cbc };

  std::array<uint8_t, kNameBytes> name{};
  std::array<uint8_t, kMaxSecretBytes> hmac_secret{};  // first secret_bytes() used
  std::array<uint8_t, kMaxSecretBytes> aes_key{};      // first secret_bytes() used
  Cipher cipher = Cipher::Aes256Cbc;
  // Encrypts from activates_at (if newest); decrypts until expires_at
  // (exclusive). time_point::min()/max() mean "always"/"never".
  TimePoint activates_at = TimePoint::min();
  TimePoint expires_at = TimePoint::max();
  // Key files only: the file's modification time when it was read, the
  // nearest thing to an activation time a file key has (its activates_at is
  // "always"); tlsfront_ticket_key_age_seconds counts from it. min() otherwise.
  TimePoint file_modified_at = TimePoint::min();

  TicketKey() = default;
  TicketKey(const TicketKey&) = default;
  TicketKey& operator=(const TicketKey&) = default;
  ~TicketKey();

  // 32 for Aes256Cbc, 16 for Aes128Cbc: the length of both the AES key and
  // the HMAC secret.
  size_t secret_bytes() const { return cipher == Cipher::Aes256Cbc ? 32 : 16; }

  // Hex of the first 4 bytes of `name` ("1a2b3c4d"): safe to log, since the
  // name is sent in clear in every ticket anyway.
  std::string key_id() const;
};

// An immutable set of ticket keys. Thread affinity: any thread (const).
class TicketKeyRing {
 public:
  TicketKeyRing() = default;
  // Takes `keys` in preference order: among keys with equal activates_at the
  // earlier one encrypts (the first configured file). Keys are kept sorted by
  // activates_at, newest first.
  explicit TicketKeyRing(std::vector<TicketKey> keys);

  // The key that encrypts new tickets at `now`: the newest key with
  // activates_at <= now < expires_at; nullptr if there is none (tickets are
  // then not issued). Borrowed; valid while this ring lives.
  const TicketKey* encryption_key(TimePoint now) const;

  // The key named `name` (16 bytes) that is not expired at `now`, or nullptr.
  // Borrowed; valid while this ring lives.
  const TicketKey* find(std::span<const uint8_t> name, TimePoint now) const;

  // True when `key` (a pointer from find()) is the encryption key at `now`;
  // false means a ticket made with it should be renewed.
  bool is_encryption_key(const TicketKey* key, TimePoint now) const { return key && key == encryption_key(now); }

  // All keys, newest activation first.
  const std::vector<TicketKey>& keys() const { return keys_; }
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }

 private:
  std::vector<TicketKey> keys_;
};

// Counters of ticket use, summed over all workers (relaxed atomics).
struct TicketCounters {
  uint64_t issued = 0;             // tickets encrypted (NewSessionTicket sent)
  uint64_t decrypted_current = 0;  // tickets decrypted with the current encryption key
  uint64_t decrypted_renewed = 0;  // decrypted with an older key; a fresh ticket is issued
  uint64_t failed = 0;             // unknown key name or bad HMAC: full handshake instead
};

// Publishes the current ring to every handshake. Owned by the Server; must
// outlive every SSL_CTX attach()ed to it (generations hold their SSL_CTXs).
// Thread affinity: publish() from any thread (the control loop in practice);
// everything else any thread.
class TicketKeyStore {
 public:
  // `clock` is borrowed and must outlive the store; nullptr means the system clock.
  explicit TicketKeyStore(const Clock* clock = nullptr);
  TicketKeyStore(const TicketKeyStore&) = delete;
  TicketKeyStore& operator=(const TicketKeyStore&) = delete;

  // Replaces the ring; handshakes already running keep the ring they loaded.
  void publish(std::shared_ptr<const TicketKeyRing> ring);
  // The current ring (nullptr before the first publish()). One atomic load.
  std::shared_ptr<const TicketKeyRing> ring() const;

  TimePoint now() const { return clock_->now(); }
  TicketCounters counters() const;

  // Called by the OpenSSL callbacks.
  void count_issued() { issued_.fetch_add(1, std::memory_order_relaxed); }
  void count_decrypted(bool renewed) {
    (renewed ? decrypted_renewed_ : decrypted_current_).fetch_add(1, std::memory_order_relaxed);
  }
  void count_failed() { failed_.fetch_add(1, std::memory_order_relaxed); }

 private:
  const Clock* clock_;
  std::atomic<std::shared_ptr<const TicketKeyRing>> ring_;
  std::atomic<uint64_t> issued_{0}, decrypted_current_{0}, decrypted_renewed_{0}, failed_{0};
};

// Configures tickets on `ctx` (borrowed) per `tls`; `store` is borrowed and
// must outlive `ctx`. Call once per SSL_CTX, before its first handshake.
//   tls.session_tickets = true: installs the key callback (encrypt with the
//     current key, decrypt with any, renew on an older key; unknown key or
//     missing ring → full handshake, never an error), a ticket status callback
//     for the counters, SSL_CTX_set_num_tickets(tls.session_ticket_count) for
//     TLS 1.3, and SSL_CTX_set_timeout(tls.session_cache.timeout, rounded up to
//     seconds) so the ticket lifetime hint and the session expiry match the
//     key lifetime. Tickets are issued only while `store` holds a ring with a
//     current key. OpenSSL 3.0 sends no new TLS 1.3 ticket after a resumption
//     with the current key (the ticket stays usable), and one after a renewal.
//   tls.session_tickets = false: SSL_OP_NO_TICKET (no RFC 5077 tickets in TLS
//     1.2; in TLS 1.3 OpenSSL then issues stateful tickets, i.e. session IDs
//     that resume through the session cache). If the session cache is also
//     disabled, SSL_CTX_set_num_tickets(0) so TLS 1.3 sends no tickets at all
//     (they could never resume). `store` may be nullptr; a nullptr `store` with
//     tls.session_tickets = true is treated the same way (tickets off).
// Thread affinity: any thread, while no handshake uses `ctx`.
// Errors: none (OpenSSL setters used here cannot fail for valid arguments).
void attach(SSL_CTX* ctx, TicketKeyStore* store, const config::Tls& tls);

// True when `ssl` (borrowed) completed a handshake that resumed a session from
// a ticket this process decrypted (ssl_resumption = "ticket"); false for a full
// handshake or a session-cache (session ID / stateful) resumption.
// Thread affinity: the SSL's owning worker.
bool resumed_with_ticket(const SSL* ssl);

}  // namespace tlsfront::tls
