#include "hsload/key_schedule.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>

namespace tlsfront::hsload {
namespace {

Crypto g_crypto;
bool g_ready = false;

// The X25519 exchange, set up once: a derive context on the client key and
// one peer key whose public value is replaced for every handshake
// (EVP_PKEY_set1_encoded_public_key), so a derive costs no provider fetch,
// no key or context allocation — only the scalar multiplication.
EVP_PKEY_CTX* g_derive = nullptr;
EVP_PKEY* g_peer = nullptr;

// Scratch digest context for sha256()/hmac_sha256(), reused (no allocation
// per HMAC).
EVP_MD_CTX* scratch() {
  thread_local EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  return ctx;
}

void digest(std::initializer_list<ByteView> parts, uint8_t* out) {
  EVP_MD_CTX* ctx = scratch();
  EVP_DigestInit_ex2(ctx, Crypto::get().md, nullptr);
  for (ByteView p : parts) EVP_DigestUpdate(ctx, p.data(), p.size());
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, out, &len);
}

}  // namespace

bool Crypto::init() {
  if (g_ready) return true;
  Crypto& c = g_crypto;
  c.md = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  c.aes128gcm = EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);
  c.client_key = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
  if (c.md == nullptr || c.aes128gcm == nullptr || c.client_key == nullptr) return false;
  size_t len = c.client_public.size();
  if (EVP_PKEY_get_raw_public_key(c.client_key, c.client_public.data(), &len) != 1 || len != 32) return false;
  g_peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, c.client_public.data(), len);
  g_derive = EVP_PKEY_CTX_new_from_pkey(nullptr, c.client_key, nullptr);
  if (g_peer == nullptr || g_derive == nullptr || EVP_PKEY_derive_init(g_derive) != 1 ||
      EVP_PKEY_derive_set_peer_ex(g_derive, g_peer, 0) != 1)
    return false;
  g_ready = true;
  c.empty_hash = sha256({});
  Secret zeros{};
  c.zero_early_secret = hkdf_extract(zeros, zeros);
  return true;
}

const Crypto& Crypto::get() { return g_crypto; }

Transcript::Transcript() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex2(ctx_, Crypto::get().md, nullptr); }
Transcript::~Transcript() { EVP_MD_CTX_free(ctx_); }
void Transcript::add(ByteView message) { EVP_DigestUpdate(ctx_, message.data(), message.size()); }

Secret Transcript::snapshot() const {
  Secret out{};
  EVP_MD_CTX* copy = scratch();
  EVP_MD_CTX_copy_ex(copy, ctx_);
  unsigned len = 0;
  EVP_DigestFinal_ex(copy, out.data(), &len);
  return out;
}

Secret sha256(ByteView data) {
  Secret out{};
  digest({data}, out.data());
  return out;
}

Secret hmac_sha256(ByteView key, ByteView data) {
  constexpr size_t kBlock = 64;  // SHA-256's block size
  uint8_t k0[kBlock] = {};
  if (key.size() > kBlock) {
    digest({key}, k0);
  } else {
    std::memcpy(k0, key.data(), key.size());
  }
  uint8_t pad[kBlock];
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k0[i] ^ 0x36;
  Secret inner{};
  digest({ByteView(pad, kBlock), data}, inner.data());
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k0[i] ^ 0x5c;
  Secret out{};
  digest({ByteView(pad, kBlock), inner}, out.data());
  OPENSSL_cleanse(k0, sizeof k0);
  return out;
}

Secret hkdf_expand_label(const Secret& secret, std::string_view label, ByteView context, size_t length) {
  // HkdfLabel (§7.1) followed by HKDF-Expand's counter octet 0x01 (T(1)),
  // on the stack: label and context are at most 255 octets each.
  constexpr std::string_view kPrefix = "tls13 ";
  uint8_t info[2 + 1 + 255 + 1 + 255 + 1];
  size_t label_len = std::min<size_t>(kPrefix.size() + label.size(), 255);
  size_t context_len = std::min<size_t>(context.size(), 255);
  size_t n = 0;
  info[n++] = static_cast<uint8_t>(length >> 8);
  info[n++] = static_cast<uint8_t>(length);
  info[n++] = static_cast<uint8_t>(label_len);
  std::memcpy(info + n, kPrefix.data(), kPrefix.size());
  std::memcpy(info + n + kPrefix.size(), label.data(), label_len - kPrefix.size());
  n += label_len;
  info[n++] = static_cast<uint8_t>(context_len);
  if (context_len > 0) std::memcpy(info + n, context.data(), context_len);
  n += context_len;
  info[n++] = 1;
  Secret t = hmac_sha256(secret, ByteView(info, n));
  Secret out{};
  std::memcpy(out.data(), t.data(), std::min(length, kHashLen));
  return out;
}

TrafficKeys traffic_keys(const Secret& traffic_secret) {
  TrafficKeys k;
  Secret key = hkdf_expand_label(traffic_secret, "key", {}, k.key.size());
  Secret iv = hkdf_expand_label(traffic_secret, "iv", {}, k.iv.size());
  std::memcpy(k.key.data(), key.data(), k.key.size());
  std::memcpy(k.iv.data(), iv.data(), k.iv.size());
  return k;
}

Secret finished_mac(const Secret& base_key, const Secret& transcript_hash) {
  Secret finished_key = hkdf_expand_label(base_key, "finished", {}, kHashLen);
  return hmac_sha256(finished_key, transcript_hash);
}

std::optional<Secret> x25519_shared(ByteView server_share) {
  if (server_share.size() != 32 || EVP_PKEY_set1_encoded_public_key(g_peer, server_share.data(), 32) != 1)
    return std::nullopt;
  Secret out{};
  size_t len = out.size();
  // X25519 fails on an all-zero result (a low-order share, RFC 7748 §6.1).
  if (EVP_PKEY_derive(g_derive, out.data(), &len) != 1 || len != out.size()) return std::nullopt;
  return out;
}

}  // namespace tlsfront::hsload
