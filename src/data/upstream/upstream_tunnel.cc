#include "data/upstream/upstream_tunnel.h"

#include <utility>

namespace tlsfront::upstream {

UpstreamTunnel::UpstreamTunnel(uv_loop_t* loop, std::unique_ptr<UpstreamSocket> socket, std::string out,
                               UpstreamHandler* handler)
    : UpstreamChannel(loop), socket_(std::move(socket)), out_(std::move(out)), handler_(handler) {
  socket_->set_owner(this);
  // Records that came with the 101 are read once the handler has the tunnel.
  tls_pending_ = socket_->pending_input();
  if (!out_.empty() || tls_pending_) LoopContext::of(loop_).schedule_flush(this);
}

UpstreamTunnel::~UpstreamTunnel() {
  LoopContext::of(loop_).cancel_flush(this);
  close();
}

void UpstreamTunnel::send(std::string_view bytes) {
  if (state_ == State::Closed || shutdown_wanted_ || bytes.empty()) return;
  out_.append(bytes);
  if (buffered_bytes() >= kWriteLowWatermark) notify_writable_ = true;  // a sender may now wait for room
  LoopContext::of(loop_).schedule_flush(this);
}

void UpstreamTunnel::flush() {
  if (std::exchange(tls_pending_, false) && state_ != State::Closed) socket_->read_pending();
  write_now();
  if (state_ == State::Closed) return;
  // Written at once (no write callback will come): a sender waiting for room goes on.
  if (notify_writable_ && handler_ && socket_->writer().buffered_bytes() < kWriteLowWatermark) {
    notify_writable_ = false;
    handler_->on_upstream_writable();
  }
}

void UpstreamTunnel::write_now() {
  if (state_ == State::Closed) return;
  if (!out_.empty()) {
    if (int rc = socket_->send(out_); rc != 0) {
      fail(UpstreamFailure::Reset, make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
      return;
    }
    // What was written is gone: an idle tunnel keeps no buffer.
    std::string().swap(out_);
    socket_->writer().release_buffer();
  }
  maybe_shutdown();
}

void UpstreamTunnel::on_socket_written() {
  if (state_ == State::Closed) return;
  socket_->writer().release_buffer();
  maybe_shutdown();
  if (handler_ && socket_->writer().buffered_bytes() < kWriteLowWatermark) handler_->on_upstream_writable();
}

void UpstreamTunnel::shutdown_write() {
  if (shutdown_wanted_ || state_ == State::Closed) return;
  shutdown_wanted_ = true;
  write_now();  // or when the queue drains (on_socket_written)
}

void UpstreamTunnel::maybe_shutdown() {
  if (!shutdown_wanted_ || shutdown_sent_ || !socket_->writer().idle() || !out_.empty()) return;
  if (UpstreamTls* tls = socket_->tls(); tls && tls->handshake_done()) {
    // close_notify first; the FIN follows once it is written.
    tls->close_notify();
    if (int rc = tls->flush(socket_->writer()); rc != 0) {
      fail(UpstreamFailure::Reset, make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
      return;
    }
    if (!socket_->writer().idle()) return;
  }
  shutdown_sent_ = true;
  socket_->shutdown_write();
}

void UpstreamTunnel::pause_reading() { socket_->pause_reading(); }

void UpstreamTunnel::resume_reading() {
  if (state_ != State::Closed) socket_->resume_reading();
}

void UpstreamTunnel::on_socket_data(const char* data, size_t len) {
  if (handler_) handler_->on_upstream_body(std::string_view(data, len));
}

void UpstreamTunnel::on_socket_end(int status, bool) {
  if (status == UV_EOF) {
    on_end();
    return;
  }
  fail(UpstreamFailure::Reset, make_error(Errc::Upstream, std::string("recv() failed: ") + uv_strerror(status)));
}

void UpstreamTunnel::on_end() {
  // The backend ended the tunnel (its FIN): the whole tunnel ends with it.
  close();
  if (UpstreamHandler* h = std::exchange(handler_, nullptr)) h->on_upstream_complete();
}

void UpstreamTunnel::fail(UpstreamFailure failure, Error error) {
  close();
  if (UpstreamHandler* h = std::exchange(handler_, nullptr)) h->on_upstream_error(failure, std::move(error));
}

void UpstreamTunnel::retire(std::unique_ptr<UpstreamTunnel>& tunnel) {
  std::unique_ptr<UpstreamChannel> channel(std::move(tunnel));
  UpstreamChannel::retire(channel);
}

void UpstreamTunnel::close() {
  if (state_ == State::Closed) return;
  transition(state_, State::Closed);
  // A close_notify unless the end was written already (shutdown_write).
  socket_->close(!shutdown_sent_ && out_.empty());
}

}  // namespace tlsfront::upstream
