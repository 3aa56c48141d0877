// Response compression: whether tlsfront compresses one upstream response
// for its client, and the head of a response it compresses. The body itself
// goes through a ContentEncoder (message/content_encoder.h), driven by
// ProxyExchange. The rules (RFC 9110 §8.4, §12.5.3, §8.8.3;
// docs/configuration.md "[compression]"):
//
// A response is *compressible* when its route compresses (compress is not
// empty), its status is 2xx with content other than 206 (not 204, 205), it
// has no Content-Encoding (already encoded) and no Content-Range, no
// Cache-Control: no-transform (§7.7: a proxy must not transform it), a
// Content-Type whose media type (parameters ignored, case-insensitive) is
// in compress_types, and a Content-Length of at least compress_min_bytes
// (an unknown length, chunked or close-delimited, counts as large enough;
// an empty body never does).
// A compressible response gets `Vary: Accept-Encoding` whatever the client
// accepts (merged into an existing Vary; none added when Vary is "*"), as
// nginx's gzip_vary does: a cache must not hand the identity body to a
// client that asked for gzip, nor the other way round. It is *compressed*
// when moreover the request was not HEAD and its Accept-Encoding chose a
// coding (message/accept_encoding.h): Content-Length goes (HTTP/1.1 sends
// chunked, HTTP/2 DATA until END_STREAM), Content-Encoding is set, a strong
// ETag becomes weak (W/"..."; the bytes differ from the upstream's, §8.8.1),
// Accept-Ranges goes (ranges of the upstream's bytes no longer apply).
// A HEAD response is never changed but for Vary: it describes the identity
// representation its GET would have had without Accept-Encoding.
// Thread affinity: any thread (pure functions over the given heads).
#pragma once

#include <optional>
#include <string_view>

#include "config/config.h"
#include "message/content_encoder.h"
#include "message/request.h"

namespace tlsfront::http {

enum class CompressionVerdict {
  Untouched,  // not compressible: passed on as received
  VaryOnly,   // compressible, but this client gets the identity body
  Compress,   // compressed with the accepted coding
};

// The coding `request` accepts among `c.encodings` (server order, client
// q-values first); nullopt when none or when compression is off.
std::optional<ContentCoding> accepted_coding(const config::Compression& c, const RequestHead& request);

// What happens to the final response `head` (hop-by-hop fields removed, the
// route's response_headers applied) to a `method` request; `accepted`: the
// client accepts one of the route's codings.
CompressionVerdict judge_response(const config::Compression& c, std::string_view method, const ResponseHead& head,
                                  bool accepted);

// Adds "Accept-Encoding" to Vary (a new field, or the last Vary field's
// list), unless Vary already lists it or is "*".
void add_vary_accept_encoding(std::vector<Header>& headers);

// Turns `head` into the head of its body compressed with `coding`: as
// above, Content-Length dropped, Content-Encoding set, Vary, weak ETag, no
// Accept-Ranges.
void mark_compressed(ResponseHead& head, ContentCoding coding);

// The configured level of `coding`.
int compression_level(const config::Compression& c, ContentCoding coding);

}  // namespace tlsfront::http
