// Fuzz target ticket_decrypt: the bytes are the session ticket a TLS 1.2
// client offers (RFC 5077 SessionTicket extension, SSL_set_session_ticket_ext)
// to a server SSL_CTX configured by tls::attach() with a TicketKeyRing of two
// fixed keys (the current one, AES-256, and an older one, AES-128, still
// decrypting). The handshake runs in memory up to the server's answer to the
// ClientHello, where OpenSSL asks our key callback for the key named in the
// ticket, checks the HMAC, decrypts and decodes the session, and our status
// callback counts the outcome. TLS 1.3 tickets (PSK identities) reach the
// same two callbacks and are not fuzzed separately.
//
// Seeds: with TLSFRONT_FUZZ_WRITE_SEEDS=<dir> set, the target first writes
// one real ticket per key into <dir> (full handshakes with each key current)
// and exits; tests/fuzz/corpus/ticket_decrypt holds them (the keys and the
// clock are fixed, so they stay valid).
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "tls/ticket_key_ring.h"
#include "util/clock.h"

namespace {

using tlsfront::tls::TicketKey;
using TimePoint = std::chrono::system_clock::time_point;

// 2030-01-01T00:00:00Z: both keys valid, the first one current.
const TimePoint kNow{std::chrono::seconds(1893456000)};

class FixedClock final : public tlsfront::Clock {
 public:
  TimePoint now() const override { return kNow; }
};

TicketKey make_key(uint8_t seed, TicketKey::Cipher cipher, TimePoint activates) {
  TicketKey k;
  k.cipher = cipher;
  for (size_t i = 0; i < k.name.size(); ++i) k.name[i] = static_cast<uint8_t>(seed + i);
  for (size_t i = 0; i < k.hmac_secret.size(); ++i) k.hmac_secret[i] = static_cast<uint8_t>(seed * 3 + i);
  for (size_t i = 0; i < k.aes_key.size(); ++i) k.aes_key[i] = static_cast<uint8_t>(seed * 7 + i);
  k.activates_at = activates;
  return k;
}

std::shared_ptr<const tlsfront::tls::TicketKeyRing> make_ring(bool older_current) {
  std::vector<TicketKey> keys;
  const auto day = std::chrono::hours(24);
  // The newest active key encrypts; `older_current` leaves the newer one out
  // (writing seeds made with the older key).
  if (!older_current) keys.push_back(make_key(0x10, TicketKey::Cipher::Aes256Cbc, kNow - day));
  keys.push_back(make_key(0x40, TicketKey::Cipher::Aes128Cbc, kNow - 2 * day));
  return std::make_shared<const tlsfront::tls::TicketKeyRing>(std::move(keys));
}

// A server certificate: a throwaway P-256 key and a self-signed leaf.
void add_certificate(SSL_CTX* ctx) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("fuzz.test"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_set_pubkey(cert, key);
  X509_sign(cert, key, EVP_sha256());
  if (SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) std::abort();
  X509_free(cert);
  EVP_PKEY_free(key);
}

struct Rig {
  FixedClock clock;
  tlsfront::tls::TicketKeyStore store{&clock};
  SSL_CTX* server = nullptr;
  SSL_CTX* client = nullptr;

  Rig() {
    store.publish(make_ring(false));
    server = SSL_CTX_new(TLS_server_method());
    add_certificate(server);
    tlsfront::config::Tls tls;
    tls.session_tickets = true;
    tlsfront::tls::attach(server, &store, tls);
    client = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(client, TLS1_2_VERSION);
    SSL_CTX_set_verify(client, SSL_VERIFY_NONE, nullptr);
  }
};

Rig& rig() {
  static Rig* r = new Rig();  // never destroyed (libFuzzer exits from a callback)
  return *r;
}

// Moves what `from` wrote to `to`'s input.
void pump(SSL* from, SSL* to) {
  char buf[16384];
  int n;
  while ((n = BIO_read(SSL_get_wbio(from), buf, sizeof buf)) > 0) BIO_write(SSL_get_rbio(to), buf, n);
}

struct Pair {
  SSL* c;
  SSL* s;
  Pair() : c(SSL_new(rig().client)), s(SSL_new(rig().server)) {
    SSL_set_bio(c, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_bio(s, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
  }
  ~Pair() {
    SSL_free(c);
    SSL_free(s);
  }
};

// Full handshakes with each key current; writes the ticket the server issued.
void write_seeds(const char* dir) {
  for (bool older : {false, true}) {
    rig().store.publish(make_ring(older));
    Pair p;
    for (int i = 0; i < 8; ++i) {
      SSL_do_handshake(p.c);
      pump(p.c, p.s);
      SSL_do_handshake(p.s);
      pump(p.s, p.c);
    }
    const unsigned char* ticket = nullptr;
    size_t len = 0;
    SSL_SESSION_get0_ticket(SSL_get0_session(p.c), &ticket, &len);
    if (len == 0) std::abort();
    std::ofstream(std::string(dir) + (older ? "/older_key" : "/current_key"), std::ios::binary)
        .write(reinterpret_cast<const char*>(ticket), static_cast<std::streamsize>(len));
  }
  std::exit(0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TLSFRONT_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0xffff) return 0;  // the extension's length is 16 bits
  Pair p;
  SSL_set_session_ticket_ext(p.c, const_cast<uint8_t*>(data), static_cast<int>(size));
  SSL_do_handshake(p.c);  // the ClientHello
  pump(p.c, p.s);
  SSL_do_handshake(p.s);  // decrypts the ticket (or not), answers
  return 0;
}
