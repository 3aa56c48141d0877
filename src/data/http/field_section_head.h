// FieldSectionHead: the request head of an HTTP/2 or HTTP/3 request stream
// assembled from its decoded field section (RFC 9113 §8.3, RFC 9114 §4.3),
// the same for both codecs: the pseudo-header fields become the method,
// target and authority (and :protocol, RFC 8441 / RFC 9220), cookie crumbs
// are joined with "; " into one field (RFC 9113 §8.2.3, RFC 9114 §4.2.1),
// Content-Length is parsed (the codec library checked it is one integer),
// User-Agent goes to the record. finish() turns :authority into the Host
// field an HTTP/1.1 upstream needs and infers the body's framing.
// Trust: every byte comes from the client; nghttp2 / nghttp3 have already
// refused what the RFCs forbid (uppercase names, connection-specific
// fields, bad pseudo-headers).
// Thread affinity: owning worker only.
#pragma once

#include <string>
#include <string_view>

#include "data/http/request_record.h"

namespace tlsfront::http {

class FieldSectionHead {
 public:
  // finish(): the request is malformed (RFC 9113 §8.1.1, RFC 9114 §4.1.2):
  // a stream error, not an answer.
  static constexpr int kMalformed = -1;

  // One field of the head (after the codec counted it against its limit).
  void add(RequestRecord& record, std::string_view name, std::string_view value);
  // After the last field, `end_stream`: no body follows. Returns 0;
  // kMalformed when a Host field names another authority than :authority
  // (RFC 9113 §8.3.1, RFC 9114 §4.3.1); 400 when the host is not a valid
  // one (request.h valid_host). Sets the routing host, appends the joined
  // cookie, and for a request without Content-Length (not a tunnel): chunked
  // to the upstream when a body follows, Content-Length 0 for a bodiless
  // POST, PUT or PATCH.
  int finish(RequestRecord& record, bool end_stream);
  // :protocol as received ("" when none).
  const std::string& protocol() const { return protocol_; }
  // Frees what only admission needed (a tunnel may stay open for hours).
  void release();

 private:
  std::string authority_;
  std::string cookie_;
  std::string protocol_;
};

}  // namespace tlsfront::http
