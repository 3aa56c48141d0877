// The RFC 8441 mapping between an HTTP/2 extended CONNECT (`:method CONNECT`
// + `:protocol`, §4) and the HTTP/1.1 Upgrade request (RFC 9110 §7.8) that
// carries it to an upstream, and back from the upstream's 101.
//
// Request: the head becomes `GET <:path>` with `upgrade` = the :protocol
// (lowercase) and `extended_connect` set (the tunnel or nothing: there is no
// ordinary request to fall back to); no body framing (the stream's DATA is
// the tunnel, not a request body). For `websocket` (RFC 8441 §5) the client
// sends no Sec-WebSocket-Key: we generate one (16 random bytes, base64, RFC
// 6455 §4.1) and drop any the client sent; Sec-WebSocket-Version, -Protocol
// and -Extensions go up as the client sent them.
// Response: a 101 to a websocket request must carry the Sec-WebSocket-Accept
// of our key (RFC 6455 §4.2.2); it is removed, since an RFC 8441 client
// expects none, and the 101 becomes the stream's 200 (RFC 8441 §5).
// Thread affinity: none (pure functions, OpenSSL's thread-safe DRBG).
#pragma once

#include <string>
#include <string_view>

#include "message/request.h"

namespace tlsfront::http {

// The Sec-WebSocket-Accept for `key` (RFC 6455 §4.2.2: base64 of the SHA-1
// of key + the GUID 258EAFA5-E914-47DA-95CA-C5AB0DC85B11).
std::string websocket_accept(std::string_view key);

// Rewrites `req` (an extended CONNECT whose :protocol is `protocol`, as
// sent) into its Upgrade request. Returns the Sec-WebSocket-Accept the
// upstream's 101 must carry, "" when `protocol` is not websocket.
std::string map_extended_connect(RequestHead& req, std::string_view protocol);

// The upstream's 101 `head` to a mapped request whose expected accept value
// is `accept` ("" : nothing to check): true when it may open the tunnel;
// Sec-WebSocket-Accept is removed from `head` either way.
bool accept_upgrade_response(ResponseHead& head, std::string_view accept);

}  // namespace tlsfront::http
