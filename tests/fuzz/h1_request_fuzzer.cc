// Fuzz target h1_request: the bytes are what a client sends on one HTTP/1.1
// connection (after TLS), into an Http1Session whose requests go to a real
// upstream on loopback answering 200 "ok" (DataPathRig). Covers llhttp in
// strict mode and everything Http1Session adds (framing and smuggling
// checks, Host, obs-fold, limits, Expect, pipelining, 400/408/413/417/431),
// admission, ProxyExchange and the response path back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data_path_rig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tlsfront::fuzz::DataPathRig::get().run(tlsfront::fuzz::DataPathRig::Protocol::Http1,
                                         std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
