#include "data/upstream/upstream_socket.h"

#include <cerrno>
#include <utility>

#include "util/loop_context.h"

namespace tlsfront::upstream {
namespace {
Error write_error(const char* what, int rc) { return make_error(Errc::Upstream, std::string(what) + uv_strerror(rc)); }
}  // namespace

UpstreamSocket::UpstreamSocket(uv_loop_t* loop, Owner* owner, TlsTarget* tls, FloodAnswer flood)
    : loop_(loop), owner_(owner), target_(tls && tls->ctx ? tls : nullptr), flood_(flood) {}

UpstreamSocket::~UpstreamSocket() { close(false); }

Status UpstreamSocket::connect(const sockaddr_storage& addr) {
  if (int rc = tcp_.init([this](uv_tcp_t* h) { return uv_tcp_init(loop_, h); }, this); rc != 0) {
    transition(phase_, Phase::Closed);
    return make_error(Errc::Upstream, std::string("socket: ") + uv_strerror(rc));
  }
  uv_tcp_nodelay(tcp_.get(), 1);
  connect_req_ = new uv_connect_t{};
  connect_req_->data = this;
  int rc = uv_tcp_connect(connect_req_, tcp_.get(), reinterpret_cast<const sockaddr*>(&addr),
                          [](uv_connect_t* req, int status) {
                            auto* self = static_cast<UpstreamSocket*>(req->data);
                            delete req;
                            if (self) {
                              self->connect_req_ = nullptr;
                              self->on_connect(status);
                            }
                          });
  if (rc != 0) {
    delete connect_req_;
    connect_req_ = nullptr;
    close(false);
    return make_error(Errc::Upstream, std::string("connect: ") + uv_strerror(rc));
  }
  transition(phase_, Phase::Connecting);
  writer_.attach(
      tcp_.stream(), [](void* self, int status, size_t) { static_cast<UpstreamSocket*>(self)->on_write_done(status); },
      this);
  return {};
}

void UpstreamSocket::on_connect(int status) {
  if (status == UV_ECANCELED || phase_ == Phase::Closed) return;
  if (status != 0) {
    owner_->on_socket_error(status == UV_ECONNREFUSED ? UpstreamFailure::Refused
                            : status == UV_ETIMEDOUT  ? UpstreamFailure::TimeoutConnect
                                                      : UpstreamFailure::ConnectFailed,
                            make_error(Errc::Upstream, std::string("connect() failed: ") + uv_strerror(status)));
    return;
  }
  if (!target_) {
    transition(phase_, Phase::Open);
    start_reading();
    if (phase_ == Phase::Open) owner_->on_socket_open();
    return;
  }
  Result<std::unique_ptr<UpstreamTls>> tls = UpstreamTls::start(*target_);
  if (!tls) {
    owner_->on_socket_error(UpstreamFailure::TlsHandshake, tls.take_error());
    return;
  }
  tls_ = std::move(tls).value();
  transition(phase_, Phase::Handshaking);
  owner_->on_socket_handshaking();
  if (phase_ == Phase::Closed) return;
  if (int rc = tls_->flush(writer_); rc != 0) {
    write_failed(rc);
    return;
  }
  start_reading();
}

void UpstreamSocket::start_reading() {
  if (reading_ || paused_ || answers_held_ || (phase_ != Phase::Handshaking && phase_ != Phase::Open)) return;
  int rc = uv_read_start(tcp_.stream(), LoopContext::alloc_cb, [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    if (s->data) static_cast<UpstreamSocket*>(s->data)->on_read(n, buf);
  });
  if (rc != 0) {
    owner_->on_socket_error(UpstreamFailure::Reset,
                            make_error(Errc::Upstream, std::string("read start: ") + uv_strerror(rc)));
    return;
  }
  reading_ = true;
}

void UpstreamSocket::stop_reading() {
  if (!reading_) return;
  uv_read_stop(tcp_.stream());
  reading_ = false;
}

void UpstreamSocket::pause_reading() {
  paused_ = true;
  stop_reading();
}

bool UpstreamSocket::resume_reading() {
  paused_ = false;
  if (reading_) return false;
  start_reading();
  return reading_;
}

bool UpstreamSocket::still_open() const {
  if (phase_ != Phase::Open) return false;
  uv_os_fd_t fd;
  if (uv_fileno(tcp_.handle(), &fd) != 0) return false;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

void UpstreamSocket::read_now() {
  uv_os_fd_t fd = -1;
  if (phase_ == Phase::Closed || !tcp_.active() || uv_fileno(tcp_.handle(), &fd) != 0) return;
  char buf[16 * 1024];
  // Bounded: at most what the socket's receive buffer held.
  for (int i = 0; i < 64 && phase_ != Phase::Closed; ++i) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    const uv_buf_t b = uv_buf_init(buf, static_cast<unsigned>(n));
    on_read(n, &b);
  }
}

void UpstreamSocket::on_read(ssize_t nread, const uv_buf_t* buf) {
  if (nread == 0 || phase_ == Phase::Closed) return;
  if (nread < 0) {
    owner_->on_socket_end(static_cast<int>(nread), false);
    return;
  }
  if (tls_) {
    on_ciphertext(std::string_view(buf->base, static_cast<size_t>(nread)));
  } else {
    owner_->on_socket_data(buf->base, static_cast<size_t>(nread));
  }
}

void UpstreamSocket::on_ciphertext(std::string_view ciphertext) {
  Result<bool> done = tls_->feed(ciphertext);
  if (!done) {
    owner_->on_socket_error(phase_ == Phase::Handshaking ? UpstreamFailure::TlsHandshake : UpstreamFailure::Reset,
                            done.take_error());
    return;
  }
  if (int rc = tls_->flush(writer_); rc != 0) {
    write_failed(rc);
    return;
  }
  if (phase_ == Phase::Handshaking) {
    if (!*done) return;
    transition(phase_, Phase::Open);
    Owner* owner = owner_;
    owner->on_socket_open();
    if (phase_ == Phase::Closed || owner_ != owner) return;
  }
  read_plaintext();
}

void UpstreamSocket::read_pending() {
  if (phase_ == Phase::Open && tls_) read_plaintext();
}

void UpstreamSocket::read_plaintext() {
  Owner* const owner = owner_;
  char plain[16 * 1024];  // one TLS record's plaintext at most
  // A handover inside an owner call ends the loop: the rest is the new owner's.
  while (phase_ != Phase::Closed && owner_ == owner) {
    Result<size_t> n = tls_->read(plain, sizeof plain);
    if (!n) {
      if (n.error().code == Errc::Closed) {
        owner->on_socket_end(UV_EOF, /*close_notify=*/true);  // the server's end (RFC 8446 §6.1)
      } else {
        owner->on_socket_error(tls_->flooded() ? UpstreamFailure::InvalidResponse : UpstreamFailure::Reset,
                               n.take_error());
      }
      return;
    }
    if (*n == 0) break;
    owner->on_socket_data(plain, *n);
  }
  if (phase_ == Phase::Closed || owner_ != owner) return;
  // What reading made the TLS layer answer: bounded, as the server may
  // never read it.
  bool flooded = false;
  if (int rc = tls_->answer(writer_, flooded); rc != 0) {
    write_failed(rc);
    return;
  }
  if (!flooded) return;
  if (flood_ == FloodAnswer::HoldReads) {
    answers_held_ = true;
    stop_reading();
  } else {
    owner_->on_socket_error(UpstreamFailure::InvalidResponse, UpstreamTls::flood_error());
  }
}

void UpstreamSocket::on_write_done(int status) {
  if (status != 0) {
    if (status != UV_ECANCELED) owner_->on_socket_write_failed(write_error("send() failed: ", status));
    return;
  }
  if (writer_.buffered_bytes() < kWriteLowWatermark && std::exchange(answers_held_, false)) {
    start_reading();  // the server read our TLS answers: read it again
  }
  if (phase_ != Phase::Closed) owner_->on_socket_written();
}

void UpstreamSocket::shutdown_write() {
  if (phase_ == Phase::Closed) return;
  auto* req = new uv_shutdown_t{};
  if (uv_shutdown(req, tcp_.stream(), [](uv_shutdown_t* r, int) { delete r; }) != 0) delete req;
}

void UpstreamSocket::write_failed(int rc) { owner_->on_socket_write_failed(write_error("write: ", rc)); }

void UpstreamSocket::close(bool notify) {
  if (phase_ == Phase::Closed && !tcp_.active()) return;
  if (notify && writable_ && tls_ && phase_ != Phase::Closed) tls_->close_notify_now(writer_);
  if (phase_ != Phase::Closed) transition(phase_, Phase::Closed);
  if (connect_req_) {
    connect_req_->data = nullptr;  // freed by its own callback (UV_ECANCELED)
    connect_req_ = nullptr;
  }
  writer_.detach();
  tcp_.close();
  reading_ = false;
}

}  // namespace tlsfront::upstream
