// The backend's response text: reason phrases, generated bodies, chunk
// framing, and the numbers its routes take from their paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tlsfront::backend {

// The reason phrase of `status` (RFC 9110 §15); "Status" for one not listed.
const char* reason(int status);
// `len` bytes of the body pattern from `offset`: byte i is 'a' + i % 26.
std::string pattern(std::uint64_t offset, std::size_t len);
// `data` as one chunk of a chunked body (RFC 9112 §7.1).
std::string chunk(std::string_view data);
// A decimal of at most 15 digits, all of `s`; false otherwise.
bool parse_number(std::string_view s, std::uint64_t& out);

}  // namespace tlsfront::backend
