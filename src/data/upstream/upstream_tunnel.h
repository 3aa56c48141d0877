// UpstreamTunnel: the upstream half of an open tunnel. When a 101 answers an
// Upgrade request (RFC 9110 §15.2.2, §7.8), the UpstreamConnection that
// carried the request hands its UpstreamSocket (TCP, its TLS layer when the
// upstream speaks TLS, its write queue) and its unsent bytes over to one of
// these (UpstreamHandler::on_upstream_tunnel), and is freed:
// from then on the connection is bytes both ways with no parser, no timer
// (the client session keeps timeouts.tunnel) and no pool, in about a third of
// an UpstreamConnection's memory. An idle tunnel holds no buffer.
//
// Events go to the same UpstreamHandler as before the 101: the backend's
// bytes as on_upstream_body, its FIN as on_upstream_complete, a read or
// write error as on_upstream_error(Reset), room in the write queue as
// on_upstream_writable.
//   Open    -> Closed   the backend's FIN or an error (the socket is closed),
//                       or close()
//   Closed: final; nothing is sent or reported after it.
// Thread affinity: owning worker only.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_handler.h"
#include "data/upstream/upstream_socket.h"
#include "util/loop_context.h"
#include "util/state.h"

namespace tlsfront::upstream {

class UpstreamTunnel : public UpstreamChannel, public Flushable, private UpstreamSocket::Owner {
 public:
  enum class State { Open, Closed };

  // Takes over `socket` (open; its events come here from now on, TLS
  // input it holds beyond the 101 is passed on at the end of the loop
  // iteration, a write in flight completes here, reading goes on as it
  // was) and `out`, bytes queued but not yet handed to its writer.
  UpstreamTunnel(uv_loop_t* loop, std::unique_ptr<UpstreamSocket> socket, std::string out, UpstreamHandler* handler);
  ~UpstreamTunnel() override;
  void flush() override;

  // Queues bytes for the backend; written at the end of the loop iteration.
  // Nothing is sent after shutdown_write() or once Closed.
  void send(std::string_view bytes);
  // The client ended its side (an HTTP/1.1 FIN or HTTP/2 END_STREAM, RFC
  // 9113 §8.5): once every queued byte is written, shutdown(SHUT_WR) (over
  // TLS: a close_notify first, RFC 8446 §6.1, which TLS 1.3 allows as a
  // half-close); reading
  // goes on until the backend's own FIN. Idempotent.
  void shutdown_write();
  // UpstreamChannel: send() and shutdown_write() (no trailers in a tunnel).
  void send_body(std::string_view bytes) override { send(bytes); }
  void end(std::vector<http::Header>) override { shutdown_write(); }
  bool response_started() const override { return true; }  // the 101 came
  // Backpressure: stop/restart reading from the backend.
  void pause_reading() override;
  void resume_reading() override;
  // Bytes queued or in flight, for the sender's watermarks.
  size_t buffered_bytes() const override { return socket_->writer().buffered_bytes() + out_.size(); }
  // Bytes the kernel accepted over the connection's whole life.
  uint64_t bytes_written() const override { return socket_->writer().bytes_written(); }
  State state() const { return state_; }
  // When the request that opened the tunnel went up (its exchange's last
  // attempt), and the milliseconds since: the access log's
  // upstream_response_ms once the backend ends the tunnel.
  void set_attempt_start(std::chrono::steady_clock::time_point t) { attempt_start_ = t; }
  double response_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - attempt_start_).count();
  }
  // Where the events go from now on; null: nowhere.
  void set_handler(UpstreamHandler* handler) { handler_ = handler; }
  void detach() override { handler_ = nullptr; }
  // Closes the socket; idempotent.
  void close() override;
  // The owner lets go of `tunnel` (when set): no further events, the socket
  // closed, the object freed after the current callback (defer_delete).
  static void retire(std::unique_ptr<UpstreamTunnel>& tunnel);

 private:
  void write_now();
  void maybe_shutdown();
  // UpstreamSocket::Owner
  void on_socket_open() override {}  // it is open already
  void on_socket_data(const char* data, size_t len) override;
  void on_socket_end(int status, bool close_notify) override;
  void on_socket_error(UpstreamFailure failure, Error error) override { fail(failure, std::move(error)); }
  void on_socket_written() override;
  // The backend ended the tunnel (FIN or close_notify).
  void on_end();
  void fail(UpstreamFailure failure, Error error);

  std::unique_ptr<UpstreamSocket> socket_;
  std::string out_;  // queued by send(), handed to the socket at the end of the iteration
  UpstreamHandler* handler_;
  std::chrono::steady_clock::time_point attempt_start_{};
  State state_ = State::Open;
  bool notify_writable_ = false;  // out_ grew past the low watermark since the last notice
  bool shutdown_wanted_ = false;
  bool shutdown_sent_ = false;
  bool tls_pending_ = false;  // fed TLS input to pass on at the next flush
};

constexpr bool legal(UpstreamTunnel::State from, UpstreamTunnel::State to) {
  return from == UpstreamTunnel::State::Open && to == UpstreamTunnel::State::Closed;
}
constexpr const char* name(UpstreamTunnel::State s) { return s == UpstreamTunnel::State::Open ? "Open" : "Closed"; }

}  // namespace tlsfront::upstream
