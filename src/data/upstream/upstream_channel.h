// UpstreamChannel: what carries one exchange's request up and its response
// down, whatever the upstream speaks — the one interface a ProxyExchange
// talks to (nghttpx's DownstreamConnection, Envoy's upstream request):
//   UpstreamConnection  HTTP/1.1: one exchange at a time on a pooled
//                       keepalive connection; the body chunked when the
//                       head says so (RFC 9112 §7.1)
//   H2Stream            one stream of a multiplexed HTTP/2 connection (h2c
//                       or h2); the body as DATA, trailers as HEADERS
//   UpstreamTunnel      the byte tunnel a 101 leaves behind
// A channel comes from UpstreamPool::open (or a 101's handover), reports to
// the UpstreamHandler it was opened for, and goes through finish() (its
// response completed: an HTTP/1.1 connection may go back to its pool) or
// retire() (anything else). Events never destroy a channel: its owner lets
// it go through these, which defer the delete to the end of the callback.
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "message/request.h"
#include "util/loop_context.h"

namespace tlsfront::upstream {

class UpstreamChannel : public Deletable {
 public:
  explicit UpstreamChannel(uv_loop_t* loop) : loop_(loop) {}
  UpstreamChannel(const UpstreamChannel&) = delete;
  UpstreamChannel& operator=(const UpstreamChannel&) = delete;

  // Request body octets as the client's codec decoded them (no framing):
  // the channel frames them for its protocol. Queued; written at the end
  // of the loop iteration (HTTP/1.1, tunnel) or as the HTTP/2 window allows.
  virtual void send_body(std::string_view bytes) = 0;
  // The request ends. HTTP/1.1: a chunked body's last chunk with `trailers`
  // in its trailer section (RFC 9112 §7.1.2), nothing for a sized body;
  // HTTP/2: END_STREAM, on a HEADERS frame with `trailers` when there are
  // some (RFC 9113 §8.1); a tunnel: a FIN once what was queued is written
  // (RFC 9113 §8.5), `trailers` unused. Nothing is sent after it.
  virtual void end(std::vector<http::Header> trailers) = 0;
  // Writes what is queued now rather than at the end of the iteration
  // (HTTP/1.1: a request that cannot be retried goes before a backend's
  // idle close can land); a write error fails the exchange from within.
  // Others: nothing.
  virtual void write_now() {}
  // Octets queued or in flight towards the upstream: the exchange's
  // backpressure (kWriteHighWatermark, upstream_handler.h).
  virtual size_t buffered_bytes() const = 0;
  // Request octets the upstream has taken for this exchange (HTTP/1.1: head
  // and body written since the channel was opened; HTTP/2: body taken by
  // nghttp2; a tunnel: all). 0: nothing reached the server.
  virtual uint64_t bytes_written() const = 0;
  // Some of the response arrived (a tunnel: always).
  virtual bool response_started() const = 0;
  // Response backpressure: stop / restart taking the upstream's bytes.
  virtual void pause_reading() = 0;
  virtual void resume_reading() = 0;
  // No further handler call.
  virtual void detach() = 0;
  // Ends this exchange's use of the upstream: the socket closed (HTTP/1.1,
  // tunnel) or the stream reset unless it ended (HTTP/2). Idempotent.
  virtual void close() = 0;

  // The response completed: the channel goes back where it came from when
  // it can carry another exchange (`request_whole`: all of the request was
  // sent), else it is retired. `channel` is empty after.
  static void finish(std::unique_ptr<UpstreamChannel>& channel, bool request_whole);
  // No further event, closed, freed after the current callback
  // (defer_delete). `channel` is empty after; nothing when it was.
  static void retire(std::unique_ptr<UpstreamChannel>& channel);

 protected:
  // finish(): true when the channel gave itself back (to its pool) and
  // owns itself from here; false to be retired.
  virtual bool give_back(bool request_whole) { return false; }

  uv_loop_t* const loop_;
};

}  // namespace tlsfront::upstream
