// ClientTransport: what a client-side HTTP session needs from its connection
// (implemented by data::Connection, over TLS or cleartext): plaintext out, one timer,
// input flow control, close, and the hand-over to a tunnel.
// Thread affinity: owning worker only.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>

#include "data/http/client_session.h"
#include "data/http/exchange_sink.h"

namespace tlsfront::http {

class ClientTransport {
 public:
  virtual ~ClientTransport() = default;
  // Queues plaintext for the client; encrypted (TLS) and written at the end
  // of the current loop iteration, so one response becomes as few records as possible.
  virtual void send(std::string_view plaintext) = 0;
  // Plaintext and ciphertext not yet written to the socket (bytes).
  virtual size_t buffered_output() const = 0;
  // Closes after writing what is queued. `notify`: send close_notify first
  // (false when the response was cut short, so the client sees truncation).
  virtual void close(bool notify) = 0;
  // The client has sent all it will send: it asked for the close and its
  // request was read whole. A close then needs no lingering read (RST can
  // only come from input arriving after close()); the transport also assumes
  // this once it reads end of file or close_notify.
  virtual void client_done() = 0;
  // The session's single timer; fires Session::on_timer. 0 ms = next iteration.
  virtual void arm_timer(std::chrono::milliseconds ms) = 0;
  virtual void stop_timer() = 0;
  // The session can take input again: deliver buffered plaintext and read on.
  virtual void resume_input() = 0;
  // The session is idle between requests (keepalive), or a tunnel passed
  // bytes on: once what it sent is written, the transport may free the
  // buffers it grew (only those left empty), so an idle connection or
  // tunnel costs little memory (nginx frees a keepalive connection's
  // buffers likewise). Cheap to call often. Default: nothing.
  virtual void release_buffers() {}
  // The calling session hands the connection to `next` (an HTTP/1.1
  // session whose Upgrade became a tunnel: TunnelSession): from now on
  // `next` gets the input and the events, and input it wants is delivered
  // to it. The caller must return at once without touching the transport
  // again; it is deleted at the end of the loop iteration.
  virtual void replace_session(std::unique_ptr<ClientSession> next) = 0;
  // The connection's facts, built anew (as its session got them when it
  // started): for a session that keeps none between its start and its log
  // line (TunnelSession). `requests`, `tls_handshake_ms` and `early_data`
  // are the session's to set.
  virtual ConnectionInfo connection_facts() const = 0;
};

}  // namespace tlsfront::http
