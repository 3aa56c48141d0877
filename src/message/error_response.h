// Responses the proxy generates itself (400, 404, 413, 431, 502, 504, ...):
// a small text body, Content-Length framing, and Connection: close when the
// connection is to be closed after it.
// Thread affinity: any thread (pure functions).
#pragma once

#include <string>
#include <string_view>

namespace tlsfront::http {

// Standard reason phrase for `status` ("Bad Gateway"), or "Unknown".
std::string_view reason_phrase(int status);

// The short text/plain body of a generated response: "502 Bad Gateway\n".
std::string make_error_body(int status);

// A complete HTTP/1.1 response for `status`, with a short text/plain body
// (omitted when `head_only`).
std::string make_error_response(int status, bool close, bool head_only);

}  // namespace tlsfront::http
