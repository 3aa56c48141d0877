// The entries of [tls] ciphers / ciphersuites that OpenSSL would skip without
// a word. SSL_CTX_set_cipher_list and SSL_CTX_set_ciphersuites accept a list
// as long as one entry of it is usable, so a misspelled suite
// ("ECDHE-ECDSA-AES128-GCM-SHA265") silently drops out of the configuration.
// Each entry is therefore tried on its own, against this OpenSSL (its
// ciphers(1) syntax: entries separated by ':', ',', ';' or ' ' for TLS 1.2,
// by ':' for TLS 1.3):
//   - ciphers, an entry that selects (no prefix, or '+'): an error unless it
//     names at least one cipher (a cipher, an alias like "HIGH", a "+"
//     combination like "ECDHE+AESGCM");
//   - ciphers, an exclusion ('!' or '-') of nothing: a warning, not an error,
//     since "!RC4", "!MD5", "!3DES" of many older configurations name ciphers
//     OpenSSL 3 no longer has and so exclude nothing either way;
//   - ciphers, "@STRENGTH" and "@SECLEVEL=n" are commands, accepted;
//   - ciphersuites: an error unless it names a TLS 1.3 suite exactly (case
//     and all, as OpenSSL compares them).
// A TLS 1.3 suite in ciphers, or a TLS 1.2 cipher in ciphersuites, gets a
// hint to move it.
// Thread affinity: any thread (uses a scratch SSL_CTX of its own).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "util/result.h"

namespace tlsfront::tls {

// Checks `tls.ciphers` and `tls.ciphersuites` per the rules above. Errors:
// Errc::Config "<origin>: tls.ciphers: ..." (or tls.ciphersuites), naming
// every unknown entry with its 1-based position in the list; the first list
// that has one is reported. Warnings (exclusions of nothing) are appended to
// `warnings`, each prefixed the same way.
[[nodiscard]] Status check_cipher_lists(const config::Tls& tls, std::vector<std::string>& warnings);

}  // namespace tlsfront::tls
