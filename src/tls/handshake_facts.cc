#include "tls/handshake_facts.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdint>

namespace tlsfront::tls {
namespace {

int facts_slot() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// ex_data holds an integer, not a pointer: the version in the low 16 bits,
// bit 16 set when the server name was refused.
constexpr uintptr_t kSniRefused = uintptr_t{1} << 16;

uintptr_t facts(const SSL* ssl) {
  return reinterpret_cast<uintptr_t>(SSL_get_ex_data(ssl, facts_slot()));
}

bool is_grease(unsigned v) { return (v & 0x0f0f) == 0x0a0a && (v >> 8) == (v & 0xff); }

uint16_t offered_max_version(SSL* ssl) {
  const unsigned char* ext = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_supported_versions, &ext, &len) == 1 && len >= 1) {
    // ProtocolVersion versions<2..254>: a length byte, then 2-byte versions.
    const size_t list = ext[0];
    unsigned best = 0;
    for (size_t i = 1; i + 1 < len && i + 1 <= list; i += 2) {
      const unsigned v = (static_cast<unsigned>(ext[i]) << 8) | ext[i + 1];
      if (!is_grease(v) && v > best) best = v;
    }
    if (best != 0) return static_cast<uint16_t>(best);
  }
  return static_cast<uint16_t>(SSL_client_hello_get0_legacy_version(ssl));
}

}  // namespace

void record_client_hello(SSL* ssl, bool sni_refused) {
  uintptr_t v = offered_max_version(ssl);
  if (sni_refused) v |= kSniRefused;
  SSL_set_ex_data(ssl, facts_slot(), reinterpret_cast<void*>(v));
}

uint16_t client_max_version(const SSL* ssl) { return static_cast<uint16_t>(facts(ssl) & 0xffff); }

HandshakeRefusal classify_handshake_failure(const SSL* ssl) {
  if (facts(ssl) & kSniRefused) return HandshakeRefusal::SniRefused;
  const unsigned long e = ERR_peek_error();
  if (ERR_GET_LIB(e) != ERR_LIB_SSL) return HandshakeRefusal::None;
  switch (ERR_GET_REASON(e)) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_INAPPROPRIATE_FALLBACK:
      return HandshakeRefusal::ProtocolVersion;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_KEY_SHARE:
    case SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
      return HandshakeRefusal::NoSharedCipher;
    case SSL_R_NO_APPLICATION_PROTOCOL:
      return HandshakeRefusal::NoAlpnOverlap;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      return HandshakeRefusal::ClientCertificate;
    default:
      return HandshakeRefusal::None;
  }
}

}  // namespace tlsfront::tls
