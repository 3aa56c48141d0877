// Fuzz target request_path: the bytes are a request-target for
// normalize_target() (message/request_path.h). Beyond not crashing, an
// accepted target must give a path in normal form: it starts with "/", has no
// "//", no "." or ".." segment, no "?" or "#", only uppercase percent-encoding
// and none of an unreserved character, %2F, %5C or %00; normalizing it again
// changes nothing; the query is the target's rest exactly; an unchanged
// path is the target's own bytes; and the path routed on agrees with the
// path a backend resolves from what it is forwarded (check_agreement). Any
// difference aborts.
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

// RFC 3986 §6.2.2.1-2 over a path normalize_target() accepted (so every "%"
// starts two hex digits): unreserved octets decoded (%2e and %2E are "."),
// the others with uppercase hex. Decoding never makes a "/" (%2F is
// refused), so the segments are the same before and after.
std::string canonical_escapes(std::string_view p) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  auto value = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%' || i + 2 >= p.size()) {
      out += p[i];
      continue;
    }
    const int v = value(p[i + 1]) * 16 + value(p[i + 2]);
    if (unreserved(v)) {
      out += static_cast<char>(v);
    } else {
      out += {'%', kHex[v >> 4], kHex[v & 15]};
    }
    i += 2;
  }
  return out;
}

// RFC 3986 §5.2.4 as written there (rules A to E over an input and an output
// buffer; ".." above the root clamps): what an RFC 3986 or WHATWG URL
// resolver makes of the path. Independent of request_path.cc on purpose.
std::string remove_dot_segments(std::string_view in) {
  std::string out;
  auto drop_last_segment = [&] {
    const size_t k = out.rfind('/');
    out.erase(k == std::string::npos ? 0 : k);
  };
  size_t i = 0;
  while (i < in.size()) {
    const std::string_view r = in.substr(i);
    if (r.starts_with("../")) {  // A
      i += 3;
    } else if (r.starts_with("./")) {
      i += 2;
    } else if (r.starts_with("/./")) {  // B: "/./" becomes "/"
      i += 2;
    } else if (r == "/.") {  // B: "/." becomes "/", which E then moves
      out += '/';
      break;
    } else if (r.starts_with("/../")) {  // C: "/../" becomes "/"
      i += 3;
      drop_last_segment();
    } else if (r == "/..") {  // C: "/.." becomes "/"
      drop_last_segment();
      out += '/';
      break;
    } else if (r == "." || r == "..") {  // D
      break;
    } else {  // E: the first segment with its "/", up to the next "/"
      size_t j = r.find('/', r[0] == '/' ? 1 : 0);
      if (j == std::string_view::npos) j = r.size();
      out.append(r.substr(0, j));
      i += j;
    }
  }
  return out;
}

// Runs of "/" made one (nginx's merge_slashes).
std::string merge_slashes(std::string_view p) {
  std::string out;
  for (char c : p) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out += c;
  }
  return out;
}

// The upstream gets the target as sent (or, under pass_normalized, the
// routed path itself, which check_normal and the idempotence check cover).
// Backends resolve its path in one of two orders: RFC 3986 §5.2.4 / WHATWG
// URL / Envoy remove dot segments first and then keep or merge "//"; nginx
// merges "//" first, then removes dot segments. "Agree" means: the path
// routed on equals both merge_slashes(remove_dot_segments(P)) and
// remove_dot_segments(merge_slashes(P)), P being the path as sent with its
// percent-encoding in canonical form. So whichever order a backend uses,
// it resolves the same segments tlsfront routed on, and differs at most in
// runs of "/" (a backend that keeps "//" sees "/a//b" where tlsfront routed
// "/a/b": the same segments, save empty ones). A target for which the two
// orders differ ("/admin//../x") must have been refused.
void check_agreement(std::string_view target, std::string_view sent_path, std::string_view routed) {
  const std::string p = canonical_escapes(sent_path);
  const std::string dots_first = merge_slashes(remove_dot_segments(p));
  if (dots_first != routed) fail("RFC 3986 resolution (then merged) differs from the route's path", target, dots_first);
  const std::string slashes_first = remove_dot_segments(merge_slashes(p));
  if (slashes_first != routed) fail("merging then resolving differs from the route's path", target, slashes_first);
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
  check_agreement(target, sent_path, n.path);
  return 0;
}
