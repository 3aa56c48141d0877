// The words of the responses the proxy generates itself (400, 404, 413,
// 431, 502, 504, redirects, ...): reason phrases and the one-line text body
// (data/http/local_answer.h builds the responses).
// Thread affinity: any thread (pure functions).
#pragma once

#include <string>
#include <string_view>

namespace tlsfront::http {

// Standard reason phrase for `status` ("Bad Gateway"), or "Unknown".
std::string_view reason_phrase(int status);

// The short text/plain body of a generated response: "502 Bad Gateway\n".
std::string make_error_body(int status);

}  // namespace tlsfront::http
