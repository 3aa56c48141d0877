// The HTTP rules of a file response, as pure functions: its validators
// (Last-Modified, a strong ETag), the preconditions of RFC 9110 §13.2.2
// (If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since, in that
// order) and byte ranges (RFC 9110 §14: Range, If-Range). A Range with more
// than one range is answered with the whole file (200): RFC 9110 §14.2 lets
// a server ignore Range, and no multipart/byteranges body is ever built.
// Thread affinity: none (pure functions).
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "message/request.h"

namespace tlsfront::files {

// "Sun, 06 Nov 1994 08:49:37 GMT" (IMF-fixdate, RFC 9110 §5.6.7).
std::string http_date(time_t t);
// An HTTP-date in any of the three forms RFC 9110 §5.6.7 says a recipient
// accepts (IMF-fixdate, RFC 850, asctime); nullopt when it is none of them.
std::optional<time_t> parse_http_date(std::string_view s);

// The strong entity tag of a file of `size` octets last modified at
// `mtime_ns` (nanoseconds since the epoch): "\"<mtime hex>-<size hex>\"",
// nginx's form with the mtime's nanoseconds folded in, so a file rewritten
// within one second with the same size gets a new tag. `coding` ("br",
// "gzip", "") is appended for a precompressed variant (its own octets).
std::string strong_etag(int64_t mtime_ns, uint64_t size, std::string_view coding = {});

// What the preconditions and Range of a request make of a file response.
struct FileAnswer {
  int status = 200;       // 200, 206, 304, 412 or 416
  uint64_t offset = 0;    // 206: the first octet sent
  uint64_t length = 0;    // 200, 206: octets sent (HEAD: would be)
};

// The request's fields that matter, taken from its head.
struct Preconditions {
  std::string_view method;  // "GET" or "HEAD" (others never reach a file)
  std::optional<std::string_view> if_match;
  std::optional<std::string_view> if_none_match;
  std::optional<std::string_view> if_modified_since;
  std::optional<std::string_view> if_unmodified_since;
  std::optional<std::string_view> range;
  std::optional<std::string_view> if_range;
};
Preconditions preconditions_of(const http::RequestHead& head);

// RFC 9110 §13.2.2 then §14.2 for a file of `size` octets, entity tag
// `etag`, Last-Modified `mtime` (seconds). A date that does not parse is
// ignored (§13.1.3, §13.1.4); If-Modified-Since and Range apply to GET and
// HEAD only; If-Range with a weak tag or a date other than Last-Modified
// sends the whole file; a range syntax error ignores Range; a range none of
// whose octets exist (first-pos >= size) is 416.
FileAnswer evaluate(const Preconditions& p, std::string_view etag, time_t mtime, uint64_t size);

// One byte-range of "bytes=..." against `size`: nullopt when the field is
// not one well-formed bytes range (then it is ignored); status 416 when it
// is one but unsatisfiable. Exposed for tests.
std::optional<FileAnswer> single_range(std::string_view range, uint64_t size);

// Whether the entity-tag list `list` ("*", or `"a", W/"b"`) matches `etag`:
// strong comparison (If-Match, If-Range) or weak (If-None-Match), RFC 9110
// §8.8.3.2.
bool etag_list_matches(std::string_view list, std::string_view etag, bool weak);

}  // namespace tlsfront::files
