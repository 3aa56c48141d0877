// The TLS 1.3 key schedule for TLS_AES_128_GCM_SHA256 (RFC 8446 §7.1, §7.3,
// §4.4.4, §4.2.11.2, §4.6.1), on libcrypto primitives only: SHA-256 through
// EVP_MD, HMAC-SHA256 (RFC 2104) built on it, X25519 through EVP_PKEY.
//
// Shapes: every secret and hash is 32 octets (Hash.length of SHA-256); a
// traffic key is 16 octets (AES-128), its IV 12. HKDF-Expand is only ever
// asked for at most 32 octets here, i.e. one HMAC block (T(1)).
//
// Errors: libcrypto failures (out of memory, a malformed peer X25519 share)
// return false / nullopt. Thread affinity: one thread (the primitives are
// fetched once by Crypto::init() and shared read-only; the HMAC and digest
// scratch contexts are per thread).
#pragma once

#include <openssl/evp.h>

#include <array>
#include <optional>
#include <string_view>

#include "hsload/bytes.h"

namespace tlsfront::hsload {

inline constexpr size_t kHashLen = 32;  // SHA-256
using Secret = std::array<uint8_t, kHashLen>;

// The algorithms, fetched once (OpenSSL 3 implicit fetches cost a lookup
// per call), and the process's one X25519 key pair.
struct Crypto {
  EVP_MD* md = nullptr;  // SHA-256
  EVP_CIPHER* aes128gcm = nullptr;
  EVP_PKEY* client_key = nullptr;           // X25519, reused for every ClientHello
  std::array<uint8_t, 32> client_public{};  // its key_share
  Secret empty_hash{};                      // SHA-256("")
  Secret zero_early_secret{};               // HKDF-Extract(0, 0): the early secret without a PSK
  static const Crypto& get();               // init() must have succeeded
  static bool init();
};

// Transcript-Hash (RFC 8446 §4.4.1): a running SHA-256 of the handshake
// messages (headers included); snapshot() hashes what was added so far.
class Transcript {
 public:
  Transcript();
  ~Transcript();
  Transcript(const Transcript&) = delete;
  Transcript& operator=(const Transcript&) = delete;
  void add(ByteView message);
  Secret snapshot() const;

 private:
  EVP_MD_CTX* ctx_;
};

Secret sha256(ByteView data);
Secret hmac_sha256(ByteView key, ByteView data);
// HKDF-Extract(salt, IKM) = HMAC-Hash(salt, IKM) (RFC 5869 §2.2).
inline Secret hkdf_extract(ByteView salt, ByteView ikm) { return hmac_sha256(salt, ikm); }
// HKDF-Expand-Label(Secret, Label, Context, Length), Length <= 32: "tls13 "
// is prefixed to `label` here.
Secret hkdf_expand_label(const Secret& secret, std::string_view label, ByteView context, size_t length);
// Derive-Secret(Secret, Label, Messages) with Transcript-Hash(Messages) given.
inline Secret derive_secret(const Secret& secret, std::string_view label, const Secret& transcript_hash) {
  return hkdf_expand_label(secret, label, transcript_hash, kHashLen);
}

// [sender]_write_key and [sender]_write_iv of a traffic secret (§7.3).
struct TrafficKeys {
  std::array<uint8_t, 16> key{};
  std::array<uint8_t, 12> iv{};
};
TrafficKeys traffic_keys(const Secret& traffic_secret);

// verify_data = HMAC(finished_key, transcript_hash), finished_key =
// HKDF-Expand-Label(base_key, "finished", "", 32) (§4.4.4; for a PSK binder
// base_key is the binder key, §4.2.11.2).
Secret finished_mac(const Secret& base_key, const Secret& transcript_hash);

// The X25519 shared secret of the client key with the server's share
// (RFC 7748 §6.1; libcrypto rejects the all-zero result).
std::optional<Secret> x25519_shared(ByteView server_share);

}  // namespace tlsfront::hsload
