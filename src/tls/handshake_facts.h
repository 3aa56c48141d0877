// What a server-side handshake tells the metrics beyond its outcome: the
// highest TLS version the ClientHello offered (the downgrade alarm: clients
// that can do no better than TLS 1.1 show up here even though they are
// refused), and why a handshake was refused when tlsfront refused it.
//
// The ClientHello facts are recorded by the client hello callback (in the
// SSL's ex_data, no allocation) and read once the handshake ended, well or
// not. The highest offered version is the largest entry of the
// supported_versions extension (RFC 8446 §4.2.1), GREASE values (RFC 8701)
// ignored, or the legacy_version field when the extension is absent
// (TLS 1.2 and older clients, RFC 5246 §7.4.1.2).
// Thread affinity: the SSL's worker.
#pragma once

#include <cstdint>

#include "util/openssl_ptr.h"

namespace tlsfront::tls {

// Why tlsfront refused a handshake; None for every other failure (a closed
// connection, garbage, a bad record).
enum class HandshakeRefusal {
  None,
  ProtocolVersion,  // no TLS version in common (protocol_version alert)
  NoSharedCipher,   // no cipher suite, group or signature algorithm in common (handshake_failure)
  NoAlpnOverlap,    // the client offered ALPN, none of ours (no_application_protocol, RFC 7301 §3.2)
  SniRefused,       // strict_sni: no or an unknown server name (unrecognized_name, RFC 6066 §3)
  ClientCertificate,  // verify_client = "required": no certificate, or one that does not verify (client_auth.h)
};

// Called by the client hello callback; `sni_refused` when it refuses the
// server name. Idempotent (the callback may run again after a pause).
void record_client_hello(SSL* ssl, bool sni_refused);

// The highest version the ClientHello offered (0x0304 for TLS 1.3, 0x0303
// for TLS 1.2, ... 0x0300 for SSL 3.0); 0 when no ClientHello was seen.
uint16_t client_max_version(const SSL* ssl);

// After SSL_do_handshake failed, with OpenSSL's error queue not yet drained.
HandshakeRefusal classify_handshake_failure(const SSL* ssl);

}  // namespace tlsfront::tls
