#include "data/upstream/upstream_tunnel.h"

#include <utility>

namespace tlsfront::upstream {

UpstreamTunnel::UpstreamTunnel(uv_loop_t* loop, UvHandle<uv_tcp_t> tcp, std::unique_ptr<UpstreamTls> tls,
                               StreamWriter& writer, std::string out, UpstreamHandler* handler, bool reading)
    : UpstreamChannel(loop), tcp_(std::move(tcp)), tls_(std::move(tls)), out_(std::move(out)), handler_(handler) {
  tcp_.get()->data = this;
  writer_.adopt(
      writer, [](void* self, int status, size_t) { static_cast<UpstreamTunnel*>(self)->on_write_done(status); }, this);
  // Records that came with the 101 are read once the handler has the tunnel.
  tls_pending_ = tls_ && tls_->pending_input() > 0;
  if (!out_.empty() || tls_pending_) LoopContext::of(loop_).schedule_flush(this);
  if (reading) {
    // The connection's read callback goes: this one takes the next read.
    uv_read_stop(tcp_.stream());
    resume_reading();
  }
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
  if (std::exchange(tls_pending_, false)) read_tls();
  write_now();
  if (state_ == State::Closed) return;
  // Written at once (no write callback will come): a sender waiting for room goes on.
  if (notify_writable_ && handler_ && writer_.buffered_bytes() < kWriteLowWatermark) {
    notify_writable_ = false;
    handler_->on_upstream_writable();
  }
}

void UpstreamTunnel::write_now() {
  if (state_ == State::Closed) return;
  if (!out_.empty()) {
    if (int rc = send_bytes(writer_, tls_.get(), out_); rc != 0) {
      fail(make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
      return;
    }
    // What was written is gone: an idle tunnel keeps no buffer.
    std::string().swap(out_);
    writer_.release_buffer();
  }
  maybe_shutdown();
}

void UpstreamTunnel::on_write_done(int status) {
  if (status != 0) {
    if (status != UV_ECANCELED) fail(make_error(Errc::Upstream, std::string("send() failed: ") + uv_strerror(status)));
    return;
  }
  if (state_ == State::Closed) return;
  writer_.release_buffer();
  maybe_shutdown();
  if (handler_ && writer_.buffered_bytes() < kWriteLowWatermark) handler_->on_upstream_writable();
}

void UpstreamTunnel::shutdown_write() {
  if (shutdown_wanted_ || state_ == State::Closed) return;
  shutdown_wanted_ = true;
  write_now();  // or when the queue drains (on_write_done)
}

void UpstreamTunnel::maybe_shutdown() {
  if (!shutdown_wanted_ || shutdown_sent_ || !writer_.idle() || !out_.empty()) return;
  if (tls_ && tls_->handshake_done()) {
    // close_notify first; the FIN follows once it is written.
    tls_->close_notify();
    if (int rc = tls_->flush(writer_); rc != 0) {
      fail(make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
      return;
    }
    if (!writer_.idle()) return;
  }
  shutdown_sent_ = true;
  auto* req = new uv_shutdown_t{};
  // libuv reports a failed shutdown through the callback; the reads still
  // see the backend's FIN or error, which end the tunnel.
  if (uv_shutdown(req, tcp_.stream(), [](uv_shutdown_t* r, int) { delete r; }) != 0) delete req;
}

void UpstreamTunnel::pause_reading() {
  if (!reading_) return;
  uv_read_stop(tcp_.stream());
  reading_ = false;
}

void UpstreamTunnel::resume_reading() {
  if (reading_ || state_ == State::Closed) return;
  int rc = uv_read_start(tcp_.stream(), LoopContext::alloc_cb, [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    if (s->data) static_cast<UpstreamTunnel*>(s->data)->on_read(n, buf);
  });
  if (rc != 0) {
    fail(make_error(Errc::Upstream, std::string("read start: ") + uv_strerror(rc)));
    return;
  }
  reading_ = true;
}

void UpstreamTunnel::on_read(ssize_t nread, const uv_buf_t* buf) {
  if (nread == 0) return;
  if (nread == UV_EOF) {
    on_end();
    return;
  }
  if (nread < 0) {
    fail(make_error(Errc::Upstream, std::string("recv() failed: ") + uv_strerror(static_cast<int>(nread))));
    return;
  }
  if (!tls_) {
    if (handler_) handler_->on_upstream_body(std::string_view(buf->base, static_cast<size_t>(nread)));
    return;
  }
  if (Result<bool> fed = tls_->feed(std::string_view(buf->base, static_cast<size_t>(nread))); !fed) {
    fail(fed.take_error());
    return;
  }
  read_tls();
}

void UpstreamTunnel::read_tls() {
  char plain[16 * 1024];  // one TLS record's plaintext at most
  while (state_ != State::Closed) {
    Result<size_t> n = tls_->read(plain, sizeof plain);
    if (!n) {
      if (n.error().code == Errc::Closed) {
        on_end();
      } else {
        fail(n.take_error());
      }
      return;
    }
    if (*n == 0) break;
    if (handler_) handler_->on_upstream_body(std::string_view(plain, *n));
  }
  if (state_ == State::Closed) return;
  // What reading made the TLS layer answer, bounded: a server that sends
  // post-handshake messages without reading ours ends the tunnel.
  bool flooded = false;
  if (int rc = tls_->answer(writer_, flooded); rc != 0) {
    fail(make_error(Errc::Upstream, std::string("write: ") + uv_strerror(rc)));
  } else if (flooded) {
    fail(UpstreamTls::flood_error());
  }
}

void UpstreamTunnel::on_end() {
  // The backend ended the tunnel (its FIN): the whole tunnel ends with it.
  close();
  if (UpstreamHandler* h = std::exchange(handler_, nullptr)) h->on_upstream_complete();
}

void UpstreamTunnel::fail(Error error) {
  close();
  const bool flooded = tls_ && tls_->flooded();  // TLS post-handshake messages past the bound
  if (UpstreamHandler* h = std::exchange(handler_, nullptr))
    h->on_upstream_error(flooded ? UpstreamFailure::InvalidResponse : UpstreamFailure::Reset, std::move(error));
}

void UpstreamTunnel::retire(std::unique_ptr<UpstreamTunnel>& tunnel) {
  std::unique_ptr<UpstreamChannel> channel(std::move(tunnel));
  UpstreamChannel::retire(channel);
}

void UpstreamTunnel::close() {
  if (state_ == State::Closed) return;
  if (tls_ && !shutdown_sent_ && out_.empty()) tls_->close_notify_now(writer_);
  transition(state_, State::Closed);
  writer_.detach();
  tcp_.close();
  reading_ = false;
}

}  // namespace tlsfront::upstream
