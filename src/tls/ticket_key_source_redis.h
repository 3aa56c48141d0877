// The pure half of [tls.ticket_keys] source = "redis" (the I/O half is
// control/redis_ticket_keys.h; the protocol is in tls/TICKET_ROTATION.md):
// wall-clock slot arithmetic, the value format of a key stored in Redis
// (optionally wrapped with AES-256-GCM), and the ring a node builds from the
// slots it fetched plus the keys it already holds. Nothing here does I/O
// except the two secret-file readers; time comes in as arguments.
//
// Slots: with R = rotate_every, slot n covers [n*R, (n+1)*R) of the Unix
// epoch. The key of slot n lives at Redis key "<prefix>:stek:<n>", encrypts
// from n*R (activates_at) and decrypts until n*R + 2R + L (expires_at), with
// L = the ticket lifetime (tls.session_cache.timeout) — the same timeline as
// ticket_key_source_local.h, but anchored to the epoch so every node agrees.
//
// Values: "v1:"  + base64(name[16] | hmac_secret[32] | aes_key[32])  (plain)
//         "v1g:" + base64(nonce[12] | ciphertext[80] | tag[16])       (wrapped)
// Wrapped values are AES-256-GCM encryptions of the plain 80 bytes under the
// wrap key, with the Redis key name as additional authenticated data, so a
// value cannot be replayed into another slot.
//
// Trust: Redis contents are untrusted input. Without a wrap key, anyone who
// can read Redis can decrypt every ticket, and anyone who can write it can
// plant keys (and so forge sessions): use a wrap key, or an ACL user limited
// to "<prefix>:stek:*", on any Redis not private to the cluster. With a wrap
// key, plain values are refused. Key material is never logged (key_id() only).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "tls/ticket_key_ring.h"
#include "util/result.h"
#include "util/secret.h"

namespace tlsfront::tls {

// Wall-clock slot arithmetic shared by every node of a cluster. Value type;
// any thread.
class RedisSlotSchedule {
 public:
  // Never fetch more than this many slots in one MGET (a ring of 1h keys
  // living 1d has 27; a 2s rotation with 1d tickets would want 43k).
  static constexpr int64_t kMaxWindowSlots = 256;

  // `rotate_every` (R) and `ticket_lifetime` (L) must be positive.
  RedisSlotSchedule(std::chrono::milliseconds rotate_every, std::chrono::milliseconds ticket_lifetime);

  // The slot containing `now` (floor division, also before the epoch).
  int64_t slot_of(TimePoint now) const;
  // n*R since the epoch.
  TimePoint slot_start(int64_t slot) const;
  // slot_start + 2R + L: the key's expires_at.
  TimePoint key_expiry(int64_t slot) const;
  // TTL for SET ... PX written at `now`: until key_expiry + R (slack for
  // clock skew), in milliseconds, at least 1000.
  std::chrono::milliseconds redis_ttl(int64_t slot, TimePoint now) const;
  // The oldest slot whose key has not expired at `now`, but no older than
  // slot_of(now) + 1 - kMaxWindowSlots + 1 (so that the window
  // [first_live_slot, slot_of(now) + 1] has at most kMaxWindowSlots slots).
  int64_t first_live_slot(TimePoint now) const;
  // How often a node polls Redis: R/10 clamped to [1 s, 60 s].
  std::chrono::milliseconds poll_interval() const;

  std::chrono::milliseconds rotate_every() const { return rotate_every_; }
  std::chrono::milliseconds ticket_lifetime() const { return ticket_lifetime_; }

 private:
  std::chrono::milliseconds rotate_every_;
  std::chrono::milliseconds ticket_lifetime_;
};

// "<prefix>:stek:<slot>".
std::string redis_slot_key(std::string_view prefix, int64_t slot);

// A secret read from a file, and what to warn about it.
struct LoadedSecret {
  Secret secret;
  std::string warning;  // non-empty: log it (e.g. the file is readable by others)
};

// Reads the Redis password from `path`: the whole file minus one trailing
// "\n" or "\r\n" (at most 4096 bytes, not empty). A file readable by group or
// others yields a warning, not an error.
// Errors: Errc::Config naming `path`: unreadable, not a regular file, empty,
// too large. Thread affinity: any thread (blocking file I/O: start-up only).
[[nodiscard]] Result<LoadedSecret> load_redis_password_file(const std::string& path);

// Reads a wrap key from `path`: exactly 32 bytes (make one with
// `head -c 32 /dev/urandom > f && chmod 600 f`); warning as above.
// Errors: Errc::Config naming `path`: unreadable, not a regular file, size != 32.
// Thread affinity: any thread (blocking file I/O: start-up only).
[[nodiscard]] Result<LoadedSecret> load_wrap_key_file(const std::string& path);

// Encodes and decodes ticket keys stored in Redis (AES-256 keys only: Redis
// keys are always generated, never nginx 48-byte keys). Holds a copy of the
// wrap key, cleansed on destruction. Move-only; any thread (const methods).
class RedisTicketKeyCodec {
 public:
  static constexpr size_t kWrapKeyBytes = 32;
  static constexpr size_t kPlainBytes = 80;  // name | hmac | aes

  // `wrap_key` (borrowed, copied) empty: plain "v1:" values; 32 bytes:
  // wrapped "v1g:" values. Errors: Errc::InvalidArgument for another length.
  [[nodiscard]] static Result<RedisTicketKeyCodec> create(std::span<const uint8_t> wrap_key);

  RedisTicketKeyCodec(RedisTicketKeyCodec&&) noexcept = default;
  RedisTicketKeyCodec& operator=(RedisTicketKeyCodec&&) noexcept = default;
  ~RedisTicketKeyCodec();

  bool wraps() const { return wraps_; }

  // The Redis value for `key` (an Aes256Cbc key) stored under `redis_key`.
  // Errors: Errc::InvalidArgument for an AES-128 key, Errc::Tls when OpenSSL
  // fails (nonce generation, GCM).
  [[nodiscard]] Result<std::string> encode(const TicketKey& key, std::string_view redis_key) const;

  // The key in `value` read from `redis_key`; activates_at/expires_at are
  // left at "always"/"never" (the caller sets them from the slot).
  // Errors (messages never include key material):
  //   Errc::Protocol  malformed value (unknown version, bad base64, wrong length);
  //   Errc::Config    a wrapped value but no wrap key configured, or a plain
  //                   value while a wrap key is configured (refused: anyone
  //                   with write access to Redis could have planted it);
  //   Errc::Tls       GCM authentication failed (wrong wrap key, a value
  //                   moved between Redis keys, or tampering).
  [[nodiscard]] Result<TicketKey> decode(std::string_view value, std::string_view redis_key) const;

 private:
  RedisTicketKeyCodec() = default;
  std::array<uint8_t, kWrapKeyBytes> wrap_key_{};
  bool wraps_ = false;
};

// The keys a node holds: one per slot fetched from Redis, plus "held" keys it
// no longer finds there (a value that changed after a Redis restart or flush,
// a local fallback key made while Redis was unreachable), all kept for
// decryption until they expire. Slot keys come first in the published ring,
// so among keys with the same activation the cluster's key encrypts.
// Not thread-safe (the control loop owns it); the ring it builds is immutable.
class RedisTicketKeyState {
 public:
  explicit RedisTicketKeyState(RedisSlotSchedule schedule) : schedule_(schedule) {}

  const RedisSlotSchedule& schedule() const { return schedule_; }

  // Records `key` as the value of `slot` (its times are set from the
  // schedule). A different key already held for `slot` moves to the held
  // keys. Returns true when the set of keys changed.
  bool merge(int64_t slot, TicketKey key);

  // When no key encrypts at `now` (Redis unreachable at start-up, or for
  // longer than the ring lasts), adds a random local key for slot_of(now)
  // (activates at the slot start, so a cluster key for the slot wins as soon
  // as it is fetched). Returns true when a key was added.
  // Errors: Errc::Tls when the DRBG fails.
  [[nodiscard]] Result<bool> ensure_encryption_key(TimePoint now);

  // Drops keys expired at `now`. Returns true when the set of keys changed.
  bool prune(TimePoint now);

  // The ring to publish: slot keys (newest slot first), then held keys.
  TicketKeyRing ring() const;

  bool has_slot(int64_t slot) const { return slots_.count(slot) != 0; }
  // The key held for `slot`, or nullptr. Borrowed; valid until the next
  // merge() or prune().
  const TicketKey* slot_key(int64_t slot) const {
    auto it = slots_.find(slot);
    return it == slots_.end() ? nullptr : &it->second;
  }
  size_t size() const { return slots_.size() + held_.size(); }

 private:
  RedisSlotSchedule schedule_;
  std::map<int64_t, TicketKey> slots_;
  std::vector<TicketKey> held_;
};

}  // namespace tlsfront::tls
