// UpstreamHandler: the events of one upstream attempt as its exchange sees
// them, whatever the upstream speaks: an UpstreamConnection (HTTP/1.1) or
// an H2UpstreamStream (one stream of a multiplexed h2c connection).
// Thread affinity: owning worker only.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "data/upstream/upstream_failure.h"
#include "message/request.h"
#include "util/result.h"

namespace tlsfront::upstream {

class UpstreamTunnel;

// Bytes: on_upstream_writable comes once a write queue that grew past this
// drops below it again.
constexpr size_t kWriteLowWatermark = 16 * 1024;
// Bytes: above this many queued for the upstream, the sender stops reading
// its client until on_upstream_writable.
constexpr size_t kWriteHighWatermark = 64 * 1024;

// Events for the exchange currently attached. Calls happen from this
// connection's libuv callbacks; the handler must not destroy the connection
// inside them (hand it to the pool or to LoopContext::defer_delete instead).
class UpstreamHandler {
 public:
  virtual ~UpstreamHandler() = default;
  virtual void on_upstream_connected() = 0;
  // A 1xx interim response (`informational`) or the final response head,
  // well-formed (http::valid_response_head): an UpstreamConnection checks
  // what llhttp passed, nghttp2 an H2Stream's fields (RFC 9113 §8.2.1) and
  // the stream its status; a malformed head fails the request instead.
  virtual void on_upstream_head(http::ResponseHead&& head, bool informational) = 0;
  virtual void on_upstream_body(std::string_view data) = 0;  // valid during the call only
  // The trailer section of a chunked response (RFC 9112 §7.1.2), as
  // received (not yet validated); just before on_upstream_complete.
  virtual void on_upstream_trailers(std::vector<http::Header>&& trailers) {}
  virtual void on_upstream_complete() = 0;
  // The bytes of one read from the backend are parsed and the response
  // goes on (more of it is to come): what was held back for batching may
  // go out now (a response compressor flushes here).
  virtual void on_upstream_read_end() {}
  // `failure` says which; `error` carries the message: Errc::Timeout
  // (connect/read/send timeout), Errc::Upstream (refused, reset, closed
  // early), Errc::Protocol (malformed response).
  virtual void on_upstream_error(UpstreamFailure failure, Error error) = 0;
  // The write queue dropped below the low watermark.
  virtual void on_upstream_writable() = 0;
  // A 101 answered an Upgrade request (HTTP/1.1 upstreams only): the
  // connection's socket is now `tunnel`, which the handler keeps (or the
  // socket closes with it), and the connection itself may go (defer_delete:
  // it still passes on the 101's head and what followed it in its read).
  // The tunnel's events come to this same handler.
  virtual void on_upstream_tunnel(std::unique_ptr<UpstreamTunnel> tunnel) = 0;
};

}  // namespace tlsfront::upstream
