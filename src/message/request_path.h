// Request-target normalization for routing (RFC 3986 §6.2.2, §5.2.4).
//
// normalize_target() turns an origin-form request-target ("/path?query") into
// the path routes are matched against:
//   - percent-encoded unreserved characters (ALPHA DIGIT - . _ ~, RFC 3986
//     §2.3) are decoded; every other percent-encoding is kept, its hex
//     uppercased (§6.2.2.1: %2f and %2F are the same octet);
//   - "." and ".." segments are removed (§5.2.4), also when written %2e
//     (§2.3: %2E is "."), empty segments kept as §5.2.4 keeps them;
//   - then runs of "/" are merged into one ("//a///b" is "/a/b"), as nginx
//     does (merge_slashes);
//   - the query ("?" and after) is never normalized and never part of the path.
// Rejected (the caller answers 400 and routes nothing), with the reason:
//   - ".." that would climb above "/" (RFC 3986 clamps it; a client that
//     sends it is probing);
//   - ".." that would remove an empty segment ("/admin//../x",
//     "/admin//%2e%2e/x", "/admin//./../x", "/a/b//.."): the upstream gets
//     the target as sent (unless pass_normalized), and backends read it two
//     ways: RFC 3986 §5.2.4 and WHATWG URL (Envoy too) remove the empty
//     segment ("/admin/x"), while a server that merges slashes first (nginx,
//     merge_slashes on) removes "admin" ("/x"). No route chosen can agree
//     with both, so neither is routed. With this refused, every accepted
//     path is the same whether slashes are merged before or after dot
//     segments are removed: the route's path is what the upstream resolves,
//     up to runs of "/" (tests/fuzz/request_path_fuzzer.cc checks it);
//   - %2F or %5C (an encoded "/" or "\"): a backend that decodes it sees a
//     different path than the one routed on;
//   - %00, and a "%" not followed by two hex digits (RFC 3986 §2.1);
//   - percent-encoded octets that are not well-formed UTF-8 (RFC 3629 §4:
//     overlong forms such as %C0%AE, surrogates, stray continuation bytes);
//   - a raw byte outside printable ASCII, a raw "\" and a fragment ("#",
//     never sent by a client, RFC 9112 §3.2);
//   - a target that is not origin-form (the asterisk-form "*" is the
//     caller's to handle).
//
// Cost: an already-normal path (no "%", no "//", no "." or ".." segment,
// which is nearly every request) takes one scan and no allocation: the
// result's path points into `target`. Otherwise the normalized path is built
// in `scratch` (one allocation of at most the target's size) in linear time,
// whatever the number of "../".
// Thread affinity: none (pure function).
#pragma once

#include <string>
#include <string_view>

namespace tlsfront::http {

enum class PathError {
  None,
  NotOriginForm,  // does not start with "/"
  AboveRoot,      // ".." above "/"
  DotDotEmpty,    // ".." that would remove an empty segment ("//..")
  EncodedSlash,   // %2F or %5C
  EncodedNul,     // %00
  BadPercent,     // "%" without two hex digits
  BadUtf8,        // percent-encoded octets that are not well-formed UTF-8
  BadByte,        // raw control, space, DEL, non-ASCII byte or "\"
  Fragment,       // "#"
};

// Short lower-case words for logs and tests ("above root", "encoded slash").
const char* describe(PathError error);

// The value of the hex digit `c` (either case), or -1.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct NormalizedTarget {
  std::string_view path;   // normalized path: into the target when unchanged, else into the scratch string
  std::string_view query;  // "" or "?..." exactly as sent
  bool changed = false;    // path differs from the target's path as sent
};

// Normalizes `target`; on PathError::None fills `out`, whose views borrow
// `target` and `scratch` (both must outlive them).
PathError normalize_target(std::string_view target, std::string& scratch, NormalizedTarget& out);

}  // namespace tlsfront::http
