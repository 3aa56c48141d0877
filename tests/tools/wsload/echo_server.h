// tlsfront_wsload --serve: a cleartext WebSocket echo server (RFC 6455) on
// one epoll loop, the backend of scripts/bench.sh's ws_* tests.
//
// Per connection: kHandshake (reading the request head, at most 8 KiB; a GET
// with Upgrade: websocket and a Sec-WebSocket-Key gets 101 with
// Sec-WebSocket-Accept, anything else 400 and close) -> kOpen (client
// frames, which must be masked, are unmasked; a message, reassembled from
// its fragments up to 1 MiB, is echoed as one unmasked frame of its opcode;
// ping -> pong with the same payload; close -> close with the same payload)
// -> kClosing (the close reply is flushed, then the socket closed). A
// protocol error (an unmasked client frame, bad framing, one frame over
// 1 MiB) sends close 1002, a fragmented message over 1 MiB close 1009, and
// goes to kClosing. Backpressure: a connection
// with over 1 MiB of unsent output stops being read until it drains.
//
// corrupt_every > 0 (a test hook): every corrupt_every-th echoed message
// has its first payload octet flipped, so a client that checks echoes
// must count errors.
//
// Runs until SIGINT/SIGTERM; returns the exit status (0, or 1 when the
// address cannot be bound).
#pragma once

#include <cstdint>
#include <string>

namespace tlsfront::wsload {

struct ServeOptions {
  std::string ip;  // IPv4 or IPv6 literal
  uint16_t port = 0;
  long corrupt_every = 0;
};

int serve(const ServeOptions& o);

}  // namespace tlsfront::wsload
