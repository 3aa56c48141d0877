// Fuzz target accept_encoding: the bytes are an Accept-Encoding field value
// for negotiate_encoding() (message/accept_encoding.h), against the offers
// tlsfront can make. Beyond not crashing: every weight is -1..1000; the
// chosen coding has a weight above 0 and none offered weighs more; when
// one weighs above 0, only a field naming "identity" chooses none; the same
// bytes split into two fields at their first comma negotiate the same. Any
// difference aborts.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "message/accept_encoding.h"

namespace {

using tlsfront::http::accept_weight;
using tlsfront::http::Header;
using tlsfront::http::negotiate_encoding;

[[noreturn]] void fail(const char* what, std::string_view accept) {
  std::fprintf(stderr, "accept_encoding: %s: \"%.*s\"\n", what, static_cast<int>(accept.size()), accept.data());
  std::abort();
}

void check(std::string_view accept, std::span<const std::string_view> offered) {
  const auto chosen = negotiate_encoding(accept, offered);
  int best = 0;
  for (std::string_view coding : offered) {
    const int w = accept_weight(accept, coding);
    if (w < -1 || w > 1000) fail("weight out of range", accept);
    if (w > best) best = w;
  }
  if (chosen) {
    if (*chosen >= offered.size()) fail("index out of range", accept);
    if (accept_weight(accept, offered[*chosen]) != best || best <= 0) fail("not the best acceptable coding", accept);
  } else if (best > 0) {
    // An explicit "identity" weighted above the best is the one reason to
    // send none: the field must name it.
    std::string lower(accept);
    for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    if (lower.find("identity") == std::string::npos) fail("an acceptable coding was not chosen", accept);
  }
  const size_t comma = accept.find(',');
  if (comma != std::string_view::npos) {
    std::vector<Header> fields = {{"Accept-Encoding", std::string(accept.substr(0, comma))},
                                  {"accept-encoding", std::string(accept.substr(comma + 1))}};
    if (negotiate_encoding(fields, offered) != chosen) fail("two fields negotiate differently", accept);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string_view accept(reinterpret_cast<const char*>(data), size);
  static constexpr std::array<std::string_view, 2> kBoth{"br", "gzip"};
  static constexpr std::array<std::string_view, 2> kGzipFirst{"gzip", "br"};
  static constexpr std::array<std::string_view, 1> kGzip{"gzip"};
  check(accept, kBoth);
  check(accept, kGzipFirst);
  check(accept, kGzip);
  return 0;
}
