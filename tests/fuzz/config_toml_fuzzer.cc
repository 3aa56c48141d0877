// Fuzz target config_toml: the bytes are a configuration file, given to
// config::load_string() (toml++ parse, then every parse_<section>.cc and the
// cross-checks), which must answer a Config or a positioned error. Non-ASCII
// bytes are fuzzed too: toml++ 3.3.0 reaches __builtin_unreachable on many
// code points wherever it tests for whitespace, which config/toml_fixed.h
// fixes; the regress-* seeds are the inputs this target found.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cfg = tlsfront::config::load_string(std::string_view(reinterpret_cast<const char*>(data), size),
                                           "/fuzz/tlsfront.toml");
  (void)cfg;
  return 0;
}
