// Ticket keys from files ([tls.ticket_keys] source = "files"), in nginx's
// ssl_session_ticket_key format so key files are interchangeable with nginx
// (nginx src/event/ngx_event_openssl.c, ngx_ssl_session_ticket_keys):
//   80 bytes: name[16] hmac_secret[32] aes_key[32]  → AES-256-CBC + HMAC-SHA256
//   48 bytes: name[16] aes_key[16]     hmac_secret[16] → AES-128-CBC + HMAC-SHA256
// (note the order differs between the two sizes). The first file's key
// encrypts; every file's key decrypts; file keys never expire while
// configured. Several nodes sharing the files resume each other's tickets;
// distributing a new first file (and keeping the old one second until tickets
// made with it have expired) is the operator's job, as with nginx.
// scripts/gen-ticket-key.sh writes an 80-byte file.
//
// Trust: a key file is a secret as sensitive as the TLS private key; files
// readable by group or others are accepted with a warning.
// Thread affinity: any thread (reads files: the control loop at start-up and
// on SIGHUP, never a worker).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "tls/ticket_key_ring.h"
#include "util/result.h"

namespace tlsfront::tls {

struct LoadedTicketKeys {
  TicketKeyRing ring;
  // Human-readable warnings to log (e.g. a key file readable by others),
  // each prefixed with the config position of `files`.
  std::vector<std::string> warnings;
};

// Parses one nginx-format key (`bytes` must be 48 or 80 long; borrowed). The
// key never expires. Errors: Errc::InvalidArgument for any other length.
[[nodiscard]] Result<TicketKey> parse_nginx_ticket_key(std::span<const uint8_t> bytes);

// Loads every file in `keys.files`, in order (the first encrypts); each key
// carries its file's modification time (TicketKey::file_modified_at).
// Errors: Errc::Config naming `keys.files_origin`, the index and the path:
// unreadable file (strerror), not a regular file, wrong size, empty list.
[[nodiscard]] Result<LoadedTicketKeys> load_ticket_key_files(const config::TicketKeys& keys);

}  // namespace tlsfront::tls
