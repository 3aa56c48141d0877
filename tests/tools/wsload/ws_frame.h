// RFC 6455 pieces tlsfront_wsload needs on both sides: the opening
// handshake's Sec-WebSocket-Accept (§4.2.2: base64(SHA-1(key + GUID))) and
// header lookup, and the base framing (§5.2): encode one frame, parse one frame out of a
// buffer. Pure functions, no I/O; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tlsfront::wsload {

// Opcodes of RFC 6455 §5.2.
enum class Opcode : uint8_t { kContinuation = 0x0, kText = 0x1, kBinary = 0x2, kClose = 0x8, kPing = 0x9, kPong = 0xA };

// Sec-WebSocket-Accept for a Sec-WebSocket-Key value (§4.2.2 step 5.4).
std::string accept_key(std::string_view key);
// The value of the first header field `name` (case-insensitive, RFC 9110
// §5.1) in an HTTP/1.1 head (start line + field lines, CRLF-separated),
// without surrounding whitespace; "" when absent.
std::string header_value(std::string_view head, std::string_view name);
// Standard base64 (RFC 4648 §4, padded) of `bytes`.
std::string base64(std::string_view bytes);

// One parsed frame; `payload` is unmasked.
struct Frame {
  bool fin = false;
  Opcode opcode = Opcode::kContinuation;
  bool masked = false;
  std::string payload;
};

enum class ParseStatus {
  kFrame,       // `out` holds a frame; `consumed` octets of the buffer were it
  kIncomplete,  // need more octets (nothing consumed)
  kError,       // a protocol error: RSV bits set, unknown opcode, a control frame
                // over 125 octets or fragmented, a 64-bit length with its top bit
                // set (§5.2), or a payload over `max_payload`
};

// Parses one frame from the start of `buf`.
ParseStatus parse_frame(std::string_view buf, size_t max_payload, Frame& out, size_t& consumed);

// Appends one frame to `out`: FIN set, `opcode`, `payload`; masked with
// `mask_key` (4 octets, §5.3) when `mask_key` is non-null (clients), else
// unmasked (servers).
void append_frame(std::string& out, Opcode opcode, std::string_view payload, const uint8_t* mask_key);

}  // namespace tlsfront::wsload
