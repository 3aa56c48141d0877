// Responses the proxy generates itself (400, 404, 413, 431, 502, 504, ...):
// a small text body, Content-Length framing, and Connection: close when the
// connection is to be closed after it; the configured response_headers rules
// with always = true apply to them as to a proxied response.
// Thread affinity: any thread (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "message/header_edit.h"

namespace tlsfront::http {

// Standard reason phrase for `status` ("Bad Gateway"), or "Unknown".
std::string_view reason_phrase(int status);

// The short text/plain body of a generated response: "502 Bad Gateway\n".
std::string make_error_body(int status);

// A complete HTTP/1.1 response for `status`, with a short text/plain body
// (omitted when `head_only`). With `edit` (the always = true response rules),
// its Server and Content-Type fields are subject to them and its fields
// appended, values from `vars`.
std::string make_error_response(int status, bool close, bool head_only, const HeaderEdit* edit = nullptr,
                                const HeaderVars* vars = nullptr);

// The header fields of a generated response before any rule: Server, Content-Type.
void append_error_headers(std::vector<Header>& out);

}  // namespace tlsfront::http
