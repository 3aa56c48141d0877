// Fuzz target request_path: the bytes are a request-target for
// normalize_target() (message/request_path.h). Beyond not crashing, an
// accepted target must give a path in normal form: it starts with "/", has no
// "//", no "." or ".." segment, no "?" or "#", only uppercase percent-encoding
// and none of an unreserved character, %2F, %5C or %00; normalizing it again
// changes nothing; the query is the target's rest exactly; and an unchanged
// path is the target's own bytes. Any difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "message/request_path.h"

namespace {

using tlsfront::http::NormalizedTarget;
using tlsfront::http::PathError;
using tlsfront::http::normalize_target;

[[noreturn]] void fail(const char* what, std::string_view target, std::string_view path) {
  std::fprintf(stderr, "request_path: %s: target \"%.*s\" gave \"%.*s\"\n", what, static_cast<int>(target.size()),
               target.data(), static_cast<int>(path.size()), path.data());
  std::abort();
}

bool unreserved(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lowercase is not normal form
}

void check_normal(std::string_view target, std::string_view p) {
  if (p.empty() || p[0] != '/') fail("not starting with /", target, p);
  if (p.find("//") != std::string_view::npos) fail("//", target, p);
  if (p.find_first_of("?#\\") != std::string_view::npos) fail("? # or \\ in the path", target, p);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '/') {
      std::string_view seg = p.substr(i + 1, p.find('/', i + 1) - (i + 1));
      if (seg == "." || seg == "..") fail("dot segment", target, p);
    } else if (p[i] == '%') {
      if (i + 2 >= p.size()) fail("truncated %", target, p);
      int hi = hex(p[i + 1]), lo = hex(p[i + 2]);
      if (hi < 0 || lo < 0) fail("percent-encoding not uppercase hex", target, p);
      int v = hi * 16 + lo;
      if (unreserved(v) || v == '/' || v == '\\' || v == 0) fail("encoded octet that should be gone", target, p);
      i += 2;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string target(reinterpret_cast<const char*>(data), size);
  std::string scratch;
  NormalizedTarget n;
  if (normalize_target(target, scratch, n) != PathError::None) return 0;
  check_normal(target, n.path);
  const size_t end = target.find('?');
  const std::string_view sent_path = std::string_view(target).substr(0, end);
  if (n.query != (end == std::string::npos ? std::string_view() : std::string_view(target).substr(end))) {
    fail("query differs from the target's", target, n.query);
  }
  if (n.changed != (n.path != sent_path)) fail("changed flag wrong", target, n.path);
  if (!n.changed && n.path.data() != target.data()) fail("an unchanged path was copied", target, n.path);
  std::string again_scratch;
  NormalizedTarget again;
  if (normalize_target(n.path, again_scratch, again) != PathError::None) fail("normal form refused", target, n.path);
  if (again.path != n.path || again.changed) fail("not idempotent", target, again.path);
  return 0;
}
