// ClientSession: what a connection hosts once TLS is up (at once on a
// cleartext listener) — the HTTP/1.1 session (Http1Session) or, after ALPN
// "h2", the HTTP/2 session (Http2Session). The
// connection feeds it plaintext and events; the session answers through its
// ClientTransport. Interface only.
// Thread affinity: owning worker only.
#pragma once

#include <string_view>

#include "util/loop_context.h"

namespace tlsfront::http {

// A Deletable: a session that hands its connection to another
// (ClientTransport::replace_session) is deleted at the end of the loop
// iteration, not inside its own call.
class ClientSession : public Deletable {
 public:
  // Plaintext from the client; `data` is valid during the call only.
  virtual void on_data(std::string_view data) = 0;
  // False while the session takes no more input (flow control); the
  // connection then stops delivering it.
  virtual bool wants_input() const = 0;
  // The session's timer (ClientTransport::arm_timer) fired.
  virtual void on_timer() = 0;
  // The client output dropped below the low watermark.
  virtual void on_output_drained() = 0;
  // The client closed (EOF, close_notify) or reset the connection.
  virtual void on_client_closed() = 0;
  // The TLS handshake completed after the session started in early data
  // (ConnectionInfo::early_data): requests held for it go upstream now.
  // Default: nothing (a session that never starts in early data).
  // `tls_handshake_ms`: accept to handshake done, for the access log.
  virtual void on_handshake_done(double /*tls_handshake_ms*/) {}
  // Worker shutdown: finish what is in flight, accept nothing new, then close.
  virtual void on_shutdown() = 0;
  // The worker is at a resource limit (accept failed: data/worker.h): closes
  // now, as the keepalive timeout would, if the connection is idle between
  // requests (HTTP/1.1: a response done, no request begun, nothing
  // pipelined; HTTP/2: no stream in progress, GOAWAY NO_ERROR). True if it
  // did; false, doing nothing, otherwise.
  virtual bool close_if_idle() = 0;
};

}  // namespace tlsfront::http
