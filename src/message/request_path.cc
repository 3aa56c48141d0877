#include "message/request_path.h"

#include <array>
#include <cstdint>
#include <cstring>

namespace tlsfront::http {
namespace {

// What the fast scan must look at: everything else is an ordinary path byte.
enum : uint8_t { kPlain = 0, kSlash, kPercent, kQuery, kFragment, kBad };

constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = (c <= 0x20 || c >= 0x7f) ? kBad : kPlain;
  t['/'] = kSlash;
  t['%'] = kPercent;
  t['?'] = kQuery;
  t['#'] = kFragment;
  t['\\'] = kBad;
  return t;
}
constexpr std::array<uint8_t, 256> kClass = make_classes();

// RFC 3986 §2.3.
bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// "." or ".." from `i` (just after a "/") up to the segment's end.
bool dot_segment_at(std::string_view s, size_t i) {
  auto ends_segment = [&](size_t j) { return j == s.size() || s[j] == '/' || s[j] == '?' || s[j] == '#'; };
  if (i >= s.size() || s[i] != '.') return false;
  if (ends_segment(i + 1)) return true;
  return s[i + 1] == '.' && ends_segment(i + 2);
}

// Well-formed UTF-8 (RFC 3629 §4) over the decoded octets, one at a time.
struct Utf8Check {
  int need = 0;  // continuation bytes still expected
  unsigned char lo = 0x80, hi = 0xbf;  // range of the next continuation byte

  bool feed(unsigned char b) {
    if (need > 0) {
      if (b < lo || b > hi) return false;
      --need;
      lo = 0x80;
      hi = 0xbf;
      return true;
    }
    if (b < 0x80) return true;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b == 0xe0) lo = 0xa0;  // overlong
      if (b == 0xed) hi = 0x9f;  // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b == 0xf0) lo = 0x90;  // overlong
      if (b == 0xf4) hi = 0x8f;  // above U+10FFFF
    } else {
      return false;  // C0, C1 (overlong), F5..FF, or a stray continuation byte
    }
    return true;
  }
};

// RFC 3986 §5.2.4 on a path that starts with "/", in place: the output
// buffer is p[0, w), "/" + segment repeated, empty segments included (the
// input's "/" at r - 1 is always at or after w). Then runs of "/" are
// merged. Fails when ".." would climb above the root or remove an empty
// segment (request_path.h says why). Linear: ".." scans back over the one
// segment it removes.
PathError remove_dot_segments(std::string& p) {
  const size_t n = p.size();
  size_t w = 0;
  size_t r = 1;  // the current segment starts at r, after its "/"
  for (;;) {
    size_t e = p.find('/', r);
    if (e == std::string::npos) e = n;
    const size_t len = e - r;
    const bool last = e == n;
    if (len == 1 && p[r] == '.') {
      if (last) p[w++] = '/';  // "/a/." is "/a/"
    } else if (len == 2 && p[r] == '.' && p[r + 1] == '.') {
      if (w == 0) return PathError::AboveRoot;
      size_t k = w - 1;  // the "/" before the output's last segment
      while (p[k] != '/') --k;
      if (k == w - 1) return PathError::DotDotEmpty;
      w = k;
      if (last) p[w++] = '/';  // "/a/b/.." is "/a/"
    } else {
      p[w++] = '/';
      std::memmove(p.data() + w, p.data() + r, len);
      w += len;
    }
    if (last) break;
    r = e + 1;
  }
  size_t m = 0;
  for (size_t i = 0; i < w; ++i) {
    if (p[i] == '/' && m > 0 && p[m - 1] == '/') continue;
    p[m++] = p[i];
  }
  p.resize(m);
  return PathError::None;
}

}  // namespace

const char* describe(PathError error) {
  switch (error) {
    case PathError::None:
      return "none";
    case PathError::NotOriginForm:
      return "not origin-form";
    case PathError::AboveRoot:
      return "above root";
    case PathError::DotDotEmpty:
      return "\"..\" after an empty segment";
    case PathError::EncodedSlash:
      return "encoded slash";
    case PathError::EncodedNul:
      return "encoded NUL";
    case PathError::BadPercent:
      return "bad percent-encoding";
    case PathError::BadUtf8:
      return "invalid UTF-8";
    case PathError::BadByte:
      return "bad byte";
    case PathError::Fragment:
      return "fragment";
  }
  return "?";
}

PathError normalize_target(std::string_view target, std::string& scratch, NormalizedTarget& out) {
  if (target.empty() || target[0] != '/') return PathError::NotOriginForm;

  // The fast scan: find the path's end and whether it is already normal.
  // Ordinary bytes take one table lookup each; only "/", "%", "?" and "#"
  // (and bad bytes) leave the inner loop.
  const auto* const begin = reinterpret_cast<const unsigned char*>(target.data());
  const auto* const stop = begin + target.size();
  const unsigned char* p = begin;
  size_t end = target.size();
  bool normal = true;
  for (;;) {
    while (p < stop && kClass[*p] == kPlain) ++p;
    if (p == stop) break;
    const uint8_t k = kClass[*p];
    if (k == kSlash) {
      const size_t next = static_cast<size_t>(p + 1 - begin);
      if (p + 1 < stop && (p[1] == '/' || (p[1] == '.' && dot_segment_at(target, next)))) normal = false;
      ++p;
      continue;
    }
    if (k == kPercent) {
      normal = false;
      ++p;
      continue;
    }
    if (k == kQuery) {
      end = static_cast<size_t>(p - begin);
      break;
    }
    return k == kFragment ? PathError::Fragment : PathError::BadByte;
  }
  const std::string_view path = target.substr(0, end);
  out.query = target.substr(end);
  if (normal) {
    out.path = path;
    out.changed = false;
    return PathError::None;
  }

  // Percent-encoding first (so %2e%2e is ".."), then the dot segments, then
  // the slashes.
  static constexpr char kHex[] = "0123456789ABCDEF";
  scratch.clear();
  scratch.reserve(path.size());
  Utf8Check utf8;
  for (size_t i = 0; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c != '%') {
      if (!utf8.feed(c)) return PathError::BadUtf8;  // ASCII where a continuation byte was due
      scratch.push_back(static_cast<char>(c));
      continue;
    }
    if (i + 2 >= path.size()) return PathError::BadPercent;
    const int hi = hex_value(path[i + 1]), lo = hex_value(path[i + 2]);
    if (hi < 0 || lo < 0) return PathError::BadPercent;
    const auto v = static_cast<unsigned char>(hi * 16 + lo);
    if (v == 0) return PathError::EncodedNul;
    if (v == '/' || v == '\\') return PathError::EncodedSlash;
    if (!utf8.feed(v)) return PathError::BadUtf8;
    if (unreserved(v)) {
      scratch.push_back(static_cast<char>(v));
    } else {
      scratch.push_back('%');
      scratch.push_back(kHex[v >> 4]);
      scratch.push_back(kHex[v & 15]);
    }
    i += 2;
  }
  if (utf8.need > 0) return PathError::BadUtf8;
  if (const PathError e = remove_dot_segments(scratch); e != PathError::None) return e;
  out.changed = scratch != path;
  out.path = out.changed ? std::string_view(scratch) : path;  // unchanged: always the target's own bytes
  return PathError::None;
}

}  // namespace tlsfront::http
