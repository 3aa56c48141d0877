// UpstreamConnection: one TCP connection to an upstream server speaking
// HTTP/1.1, with its own llhttp response parser. It carries one exchange at a
// time (attach/detach) and, between exchanges, sits idle in its UpstreamPool
// still reading so a close by the backend is seen at once.
// States: Connecting -> Active <-> Idle -> Closed (see data/upstream/POOL.md).
// Thread affinity: owning worker only.
#pragma once

#include <llhttp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "message/request.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/result.h"
#include "util/stream_writer.h"
#include "util/uv_handle.h"

namespace tlsfront::upstream {

class UpstreamPool;

class UpstreamConnection : public Deletable, public Flushable {
 public:
  // Events for the exchange currently attached. Calls happen from this
  // connection's libuv callbacks; the handler must not destroy the connection
  // inside them (hand it to the pool or to LoopContext::defer_delete instead).
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void on_upstream_connected() = 0;
    // A 1xx interim response (`informational`) or the final response head.
    virtual void on_upstream_head(http::ResponseHead&& head, bool informational) = 0;
    virtual void on_upstream_body(std::string_view data) = 0;  // valid during the call only
    // The trailer section of a chunked response (RFC 9112 §7.1.2), as
    // received (not yet validated); just before on_upstream_complete.
    virtual void on_upstream_trailers(std::vector<http::Header>&& trailers) {}
    virtual void on_upstream_complete() = 0;
    // Errc::Timeout (connect/read/send timeout), Errc::Upstream (refused,
    // reset, closed early), Errc::Protocol (malformed response).
    virtual void on_upstream_error(Error error) = 0;
    // The write queue dropped below the low watermark.
    virtual void on_upstream_writable() = 0;
  };

  enum class State { Connecting, Active, Idle, Closed };

  // `pool` is borrowed and outlives the connection (owns it or its owner's pool).
  UpstreamConnection(uv_loop_t* loop, UpstreamPool* pool, const config::Upstream& cfg);
  ~UpstreamConnection() override;
  void flush() override;

  // Starts a non-blocking connect to `addr`. Errc::Upstream on immediate failure.
  [[nodiscard]] Status connect(const sockaddr_storage& addr);

  // Binds the next exchange. `head_request`: the response to a HEAD has no body.
  void attach(Handler* handler, bool head_request);
  // Unbinds the handler (no further callbacks).
  void detach() { handler_ = nullptr; }

  // Queues request bytes (may be called while connecting); they are written
  // at the end of the loop iteration, and a write error then fails the exchange.
  void send(std::string_view bytes);
  // Writes what send() queued now rather than at the end of the iteration
  // (no on_upstream_writable from here: the caller may be inside its parser).
  // A write error fails the exchange from within this call.
  void write_now();
  size_t buffered_bytes() const { return writer_.buffered_bytes() + out_.size(); }
  // Bytes whose write has completed successfully for the current exchange.
  uint64_t bytes_written() const { return writer_.bytes_written() - written_at_attach_; }
  bool response_started() const { return response_bytes_ > 0; }

  // Response backpressure: stop/restart reading from the backend.
  void pause_reading();
  void resume_reading();

  // Pool side: park as idle (reading for EOF, idle timer armed), or check an
  // idle connection is still open before reuse (MSG_PEEK, as nginx does).
  void park_idle();
  bool still_open() const;

  // True after a complete response that allows keepalive
  // (llhttp_should_keep_alive) and the request was written in full.
  bool reusable() const { return keep_alive_ && state_ != State::Closed; }
  uint64_t requests() const { return requests_; }
  State state() const { return state_; }
  // Closes the socket; idempotent. The owner still frees the object.
  void close();

 private:
  friend struct ParserCallbacks;
  void on_connect(int status);
  void on_read(ssize_t nread, const uv_buf_t* buf);
  void on_write_done(int status);
  void on_timer();
  void arm_timer(std::chrono::milliseconds ms);
  void fail(Error error);

  // llhttp hooks.
  bool preceded_by_crlf(const char* at) const;
  int on_message_begin();
  int on_status(const char* at, size_t len);
  int on_header_field(const char* at, size_t len);
  int on_header_value(const char* at, size_t len);
  int on_header_value_complete();
  int on_headers_complete();
  int on_body(const char* at, size_t len);
  int on_message_complete();

  uv_loop_t* loop_;
  UpstreamPool* pool_;
  const config::Upstream& cfg_;
  UvHandle<uv_tcp_t> tcp_;
  LazyTimer timer_;
  // Request bytes, written at the end of the loop iteration (LoopContext
  // flush, in order with the responses to clients): the requests an
  // iteration started reach the backends together rather than one per parsed
  // request, which bought +7.5% HTTP/1.1 requests/s (bench.sh, interleaved
  // A/B; HTTP/2 unchanged; writing them before the responses bought nothing).
  std::string out_;
  bool notify_writable_ = false;  // out_ grew past the low watermark since the last notice
  uv_connect_t* connect_req_ = nullptr;
  StreamWriter writer_;
  State state_ = State::Connecting;
  Handler* handler_ = nullptr;
  llhttp_t parser_{};
  bool head_request_ = false;
  bool reading_ = false;
  bool paused_ = false;
  bool keep_alive_ = false;
  bool in_message_ = false;
  uint64_t requests_ = 0;
  uint64_t written_at_attach_ = 0;
  uint64_t response_bytes_ = 0;
  http::ResponseHead head_;
  std::string field_;
  bool in_value_ = false;
  const char* input_begin_ = nullptr;  // the buffer being parsed (address compares only)
  char tail_[2] = {0, 0};              // last two bytes of the previous read
};

}  // namespace tlsfront::upstream
