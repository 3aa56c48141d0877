#include "tls/ticket_key_ring.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <cstring>

#include "util/random_batch.h"

namespace tlsfront::tls {
namespace {

const SystemClock kSystemClock;

// One process-wide ex_data index each; created once, thread-safe (C++ magic
// statics). The SSL_CTX slot borrows the TicketKeyStore; the SSL slot holds a
// non-owning marker (&kTicketMarker) set when a ticket was decrypted.
int ctx_store_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}
int ssl_ticket_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}
char kTicketMarker;

TicketKeyStore* store_of(SSL* ssl) {
  SSL_CTX* ctx = SSL_get_SSL_CTX(ssl);
  if (ctx == nullptr || ctx_store_index() < 0) return nullptr;
  return static_cast<TicketKeyStore*>(SSL_CTX_get_ex_data(ctx, ctx_store_index()));
}

// The ticket cipher, fetched from the default provider once per process. A
// legacy EVP_aes_*_cbc() handed to EVP_{En,De}cryptInit_ex makes OpenSSL 3.0
// look the algorithm up in its provider store again on every ticket (an
// "implicit fetch", under the store's lock); an explicitly fetched cipher is
// used as is. Process-lifetime objects, never freed; null only if the default
// provider lacks AES-CBC, and then the legacy object is used.
const EVP_CIPHER* cipher_of(const TicketKey& key) {
  static const EVP_CIPHER* const aes256 = EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr);
  static const EVP_CIPHER* const aes128 = EVP_CIPHER_fetch(nullptr, "AES-128-CBC", nullptr);
  if (key.cipher == TicketKey::Cipher::Aes256Cbc) return aes256 != nullptr ? aes256 : EVP_aes_256_cbc();
  return aes128 != nullptr ? aes128 : EVP_aes_128_cbc();
}

// HMAC-SHA256 keyed with the key's secret (RFC 5077 §4 MAC over key_name, IV
// and encrypted state; OpenSSL computes it, we only key it).
bool init_hmac(EVP_MAC_CTX* hctx, const TicketKey& key) {
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<uint8_t*>(key.hmac_secret.data()),
                                        key.secret_bytes()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end(),
  };
  return EVP_MAC_CTX_set_params(hctx, params) == 1;
}

// SSL_CTX_set_tlsext_ticket_key_evp_cb(3) (OpenSSL 3.0). Encrypt (enc = 1):
// fill `key_name` and a fresh random `iv`, key both contexts; 1 = issue the
// ticket, 0 = no ticket (no store/ring/current key), -1 = internal error.
// Decrypt (enc = 0): 0 = unknown key (full handshake), 1 = current key,
// 2 = older key (use the ticket and issue a new one), -1 = internal error.
int ticket_key_cb(SSL* ssl, unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cctx,
                  EVP_MAC_CTX* hctx, int enc) noexcept {
  TicketKeyStore* store = store_of(ssl);
  if (store == nullptr) return 0;
  std::shared_ptr<const TicketKeyRing> ring = store->ring();
  if (!ring) return 0;
  const TimePoint now = store->now();

  if (enc == 1) {
    const TicketKey* key = ring->encryption_key(now);
    if (key == nullptr) return 0;
    const EVP_CIPHER* cipher = cipher_of(*key);
    const int iv_len = EVP_CIPHER_get_iv_length(cipher);
    // A public value: from the thread's batch of RAND_bytes (util/random_batch.h).
    if (iv_len <= 0 || iv_len > EVP_MAX_IV_LENGTH || !random_batch::fill(iv, static_cast<size_t>(iv_len))) return -1;
    std::memcpy(key_name, key->name.data(), TicketKey::kNameBytes);
    if (EVP_EncryptInit_ex(cctx, cipher, nullptr, key->aes_key.data(), iv) != 1) return -1;
    if (!init_hmac(hctx, *key)) return -1;
    store->count_issued();
    return 1;
  }

  const TicketKey* key = ring->find(std::span<const uint8_t>(key_name, TicketKey::kNameBytes), now);
  if (key == nullptr) return 0;  // counted as failed by ticket_status_cb
  if (!init_hmac(hctx, *key)) return -1;
  if (EVP_DecryptInit_ex(cctx, cipher_of(*key), nullptr, key->aes_key.data(), iv) != 1) return -1;
  return ring->is_encryption_key(key, now) ? 1 : 2;
}

// SSL_CTX_set_session_ticket_cb(3) decrypt hook: sees the outcome after
// OpenSSL checked the HMAC, so a forged ticket counts as failed too. Returns
// what OpenSSL does by default for each status; `arg` is the borrowed store.
SSL_TICKET_RETURN ticket_status_cb(SSL* ssl, SSL_SESSION*, const unsigned char*, size_t,
                                   SSL_TICKET_STATUS status, void* arg) noexcept {
  auto* store = static_cast<TicketKeyStore*>(arg);
  switch (status) {
    case SSL_TICKET_SUCCESS:
    case SSL_TICKET_SUCCESS_RENEW: {
      const bool renew = status == SSL_TICKET_SUCCESS_RENEW;
      if (store) store->count_decrypted(renew);
      if (ssl_ticket_index() >= 0) SSL_set_ex_data(ssl, ssl_ticket_index(), &kTicketMarker);
      return renew ? SSL_TICKET_RETURN_USE_RENEW : SSL_TICKET_RETURN_USE;
    }
    case SSL_TICKET_NO_DECRYPT:
      if (store) store->count_failed();
      return SSL_TICKET_RETURN_IGNORE_RENEW;
    default:  // SSL_TICKET_EMPTY: the client asks for a ticket
      return SSL_TICKET_RETURN_IGNORE_RENEW;
  }
}

}  // namespace

TicketKey::~TicketKey() {
  OPENSSL_cleanse(hmac_secret.data(), hmac_secret.size());
  OPENSSL_cleanse(aes_key.data(), aes_key.size());
}

std::string TicketKey::key_id() const {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < 4; ++i) {
    out += kHex[name[i] >> 4];
    out += kHex[name[i] & 0xf];
  }
  return out;
}

TicketKeyRing::TicketKeyRing(std::vector<TicketKey> keys) : keys_(std::move(keys)) {
  std::stable_sort(keys_.begin(), keys_.end(),
                   [](const TicketKey& a, const TicketKey& b) { return a.activates_at > b.activates_at; });
}

const TicketKey* TicketKeyRing::encryption_key(TimePoint now) const {
  for (const TicketKey& k : keys_) {
    if (k.activates_at <= now && now < k.expires_at) return &k;
  }
  return nullptr;
}

const TicketKey* TicketKeyRing::find(std::span<const uint8_t> name, TimePoint now) const {
  if (name.size() != TicketKey::kNameBytes) return nullptr;
  for (const TicketKey& k : keys_) {
    if (now < k.expires_at && CRYPTO_memcmp(k.name.data(), name.data(), TicketKey::kNameBytes) == 0) return &k;
  }
  return nullptr;
}

TicketKeyStore::TicketKeyStore(const Clock* clock) : clock_(clock ? clock : &kSystemClock) {}

void TicketKeyStore::publish(std::shared_ptr<const TicketKeyRing> ring) { ring_.store(std::move(ring)); }

std::shared_ptr<const TicketKeyRing> TicketKeyStore::ring() const { return ring_.load(); }

TicketCounters TicketKeyStore::counters() const {
  TicketCounters c;
  c.issued = issued_.load(std::memory_order_relaxed);
  c.decrypted_current = decrypted_current_.load(std::memory_order_relaxed);
  c.decrypted_renewed = decrypted_renewed_.load(std::memory_order_relaxed);
  c.failed = failed_.load(std::memory_order_relaxed);
  return c;
}

void attach(SSL_CTX* ctx, TicketKeyStore* store, const config::Tls& tls) {
  if (!tls.session_tickets || store == nullptr) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    // With SSL_OP_NO_TICKET, TLS 1.3 tickets are stateful (a session ID the
    // session cache resolves); without a cache they could never resume.
    if (!tls.session_cache.enabled) SSL_CTX_set_num_tickets(ctx, 0);
    return;
  }
  SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_ex_data(ctx, ctx_store_index(), store);
  (void)ssl_ticket_index();  // allocate before the first handshake
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key_cb);
  SSL_CTX_set_session_ticket_cb(ctx, nullptr, ticket_status_cb, store);
  SSL_CTX_set_num_tickets(ctx, static_cast<size_t>(std::max(0, tls.session_ticket_count)));
  // RFC 8446 §4.6.1 ticket_lifetime / RFC 5077 lifetime hint, in seconds.
  // Rounded up like SessionCache::install, which sets the same value.
  const auto secs = std::chrono::ceil<std::chrono::seconds>(tls.session_cache.timeout).count();
  SSL_CTX_set_timeout(ctx, static_cast<long>(std::max<decltype(secs)>(secs, 1)));
}

bool resumed_with_ticket(const SSL* ssl) {
  if (ssl == nullptr || ssl_ticket_index() < 0) return false;
  return SSL_session_reused(ssl) == 1 && SSL_get_ex_data(ssl, ssl_ticket_index()) == &kTicketMarker;
}

}  // namespace tlsfront::tls
