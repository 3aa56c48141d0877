// The TLS 1.3 handshake messages tlsfront_hsload sends and reads (RFC 8446
// §4): the ClientHello it builds, the ServerHello, EncryptedExtensions and
// NewSessionTicket it parses, and the reassembly of handshake messages from
// record payloads (§5.1: a message may span records, a record may carry
// several).
//
// What the ClientHello offers, exactly: TLS_AES_128_GCM_SHA256; group
// x25519 with its key_share; signature_algorithms ecdsa_secp256r1_sha256 and
// rsa_pss_rsae_sha256; supported_versions TLS 1.3; server_name; ALPN
// http/1.1; psk_key_exchange_modes psk_dhe_ke; an empty legacy_session_id;
// and, with a ticket, pre_shared_key as the last extension (§4.2.11).
//
// Errors: parse_*() return false on any malformed or not-offered value
// (decode_error / illegal_parameter); HandshakeReader says kTooLarge for a
// message over its limit. Thread affinity: none (plain values).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "hsload/bytes.h"
#include "hsload/key_schedule.h"

namespace tlsfront::hsload {

enum class HandshakeType : uint8_t {
  kClientHello = 1,
  kServerHello = 2,
  kNewSessionTicket = 4,
  kEncryptedExtensions = 8,
  kCertificate = 11,
  kCertificateRequest = 13,
  kCertificateVerify = 15,
  kFinished = 20,
  kKeyUpdate = 24,
};

inline constexpr size_t kHandshakeHeader = 4;  // msg_type, uint24 length

// The PSK to offer from a ticket (§4.2.11, §4.6.1).
struct PskOffer {
  ByteView identity;               // the ticket
  uint32_t obfuscated_ticket_age;  // ticket age in ms + ticket_age_add, mod 2^32
};

// Builds the ClientHello handshake message (header included) into `out`.
// With `psk`, the binder is left as 32 zero octets at the end of the
// message: the caller computes it over the first
// `out.size() - kBinderSuffix` octets and writes it into the last 32.
inline constexpr size_t kBinderSuffix = 2 + 1 + kHashLen;  // binders<33..>: one binder<32..255>
void build_client_hello(std::string_view sni, const std::array<uint8_t, 32>& random, const PskOffer* psk, Bytes& out);

struct ServerHello {
  bool hello_retry_request = false;  // random is the HRR value (§4.1.3)
  ByteView key_share;                // x25519 share (32 octets)
  bool psk_selected = false;
  uint32_t selected_identity = 0;
};
// `body` is the message without its 4-octet header. False: malformed, or a
// version, suite, group or extension this client did not offer.
bool parse_server_hello(ByteView body, ServerHello& out);

// EncryptedExtensions: well-formed, and an ALPN protocol (if any) is
// http/1.1, the only one offered.
bool parse_encrypted_extensions(ByteView body);

struct NewSessionTicket {
  uint32_t lifetime_s = 0;
  uint32_t age_add = 0;
  ByteView nonce;
  ByteView ticket;
};
bool parse_new_session_ticket(ByteView body, NewSessionTicket& out);

// Handshake messages out of the plaintext of handshake records.
class HandshakeReader {
 public:
  enum class Next { kMessage, kNeedMore, kTooLarge };
  explicit HandshakeReader(size_t max_message) : max_(max_message) {}
  void append(ByteView data);
  // A message: type, and the whole message (header included, for the
  // transcript); the view stays valid until the next append().
  Next next(uint8_t& type, ByteView& message);
  bool empty() const { return start_ == buf_.size(); }

 private:
  size_t max_;
  Bytes buf_;
  size_t start_ = 0;
};

}  // namespace tlsfront::hsload
