#include "redis/connection.h"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <openssl/ssl.h>

#include <cstring>
#include <utility>

namespace tlsfront::redis {
namespace {

// One write in flight: the request and the bytes it carries.
struct WriteReq {
  uv_write_t req{};
  std::string bytes;
};

std::string strerror_of(int uv_status) {
  // libuv's codes are negated errno values on Unix: strerror's text
  // ("Connection refused") is what operators grep for.
  return uv_status < 0 && uv_status > -4096 ? std::strerror(-uv_status) : uv_strerror(uv_status);
}

// A reply larger than this (a bulk string or array still arriving) is not
// buffered further: a broken or hostile server cannot grow our memory without
// bound. The largest legitimate reply is a certificate store entry (a chain
// and a sealed key: tens of KiB).
constexpr size_t kMaxBufferedReply = 16 << 20;

}  // namespace

Connection::Connection(Listener* listener, std::shared_ptr<const TlsContext> tls)
    : listener_(listener), tls_(std::move(tls)), reader_(redisReaderCreate()) {}

Connection::~Connection() {
  if (destroyed_ != nullptr) *destroyed_ = true;
  close_stream();
  if (reader_ != nullptr) redisReaderFree(reader_);
}

uv_stream_t* Connection::stream() const { return unix_ ? pipe_.stream() : tcp_.stream(); }

std::string Connection::open(uv_loop_t* loop, const config::Endpoint& address, const std::string& unix_socket) {
  if (reader_ == nullptr) return "out of memory";
  if (tls_) {
    auto ssl = tls_->new_ssl(address);
    if (!ssl) return ssl.error().message();
    auto stream = tls::TlsStream::create_client(std::move(ssl).value());
    if (!stream) return stream.error().message();
    tls_stream_.emplace(std::move(stream).value());
  }
  auto* req = new uv_connect_t{};
  auto cb = [](uv_connect_t* r, int status) {
    auto* self = static_cast<Connection*>(r->handle->data);  // null once closed
    delete r;
    if (self != nullptr) self->on_connect(status);
  };
  int rc = 0;
  if (!unix_socket.empty()) {
    unix_ = true;
    rc = pipe_.init([loop](uv_pipe_t* p) { return uv_pipe_init(loop, p, 0); }, this);
    if (rc == 0) uv_pipe_connect(req, pipe_.get(), unix_socket.c_str(), cb);  // errors come through cb
  } else {
    sockaddr_storage sa{};
    if (uv_ip4_addr(address.host.c_str(), address.port, reinterpret_cast<sockaddr_in*>(&sa)) != 0 &&
        uv_ip6_addr(address.host.c_str(), address.port, reinterpret_cast<sockaddr_in6*>(&sa)) != 0) {
      delete req;
      return "not an IP address";
    }
    rc = tcp_.init([loop](uv_tcp_t* t) { return uv_tcp_init(loop, t); }, this);
    if (rc == 0) {
      uv_tcp_nodelay(tcp_.get(), 1);
      rc = uv_tcp_connect(req, tcp_.get(), reinterpret_cast<const sockaddr*>(&sa), cb);
    }
  }
  if (rc != 0) {
    // No callback is coming for this request (init or connect refused at once).
    delete req;
    close_stream();
    closed_ = true;
    return strerror_of(rc);
  }
  return {};
}

void Connection::close_stream() {
  tcp_.close();
  pipe_.close();
}

void Connection::send(std::string_view bytes) {
  if (closed_) return;
  out_.append(bytes);
  if (ready_) flush();
}

void Connection::flush() {
  if (closed_) return;
  if (!tls_stream_) {
    if (!out_.empty()) write_raw(std::exchange(out_, {}));
    return;
  }
  if (ready_ && !out_.empty()) {
    if (Status st = tls_stream_->write(out_); !st) {
      fail(false, "TLS write failed: " + st.error().message());
      return;
    }
    out_.clear();
  }
  if (tls_stream_->pending_output() == 0) return;
  std::string bytes;
  tls_stream_->take_output(bytes);
  write_raw(std::move(bytes));
}

void Connection::write_raw(std::string bytes) {
  auto* w = new WriteReq;
  w->bytes = std::move(bytes);
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  const int rc = uv_write(&w->req, stream(), &buf, 1, [](uv_write_t* r, int status) {
    auto* req = reinterpret_cast<WriteReq*>(r);
    auto* self = static_cast<Connection*>(r->handle->data);  // null once closed
    delete req;
    if (self != nullptr && status < 0) self->fail(!self->ready_, strerror_of(status));
  });
  if (rc != 0) {
    delete w;
    fail(!ready_, strerror_of(rc));
  }
}

void Connection::on_connect(int status) {
  if (closed_) return;
  if (status < 0) {
    fail(true, strerror_of(status));
    return;
  }
  connected_ = true;
  const int rc = uv_read_start(
      stream(),
      [](uv_handle_t* h, size_t, uv_buf_t* buf) {
        auto* self = static_cast<Connection*>(h->data);
        static char spare[64];  // only if a read races the close
        *buf = self != nullptr ? uv_buf_init(self->buf_, sizeof self->buf_) : uv_buf_init(spare, sizeof spare);
      },
      [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
        auto* self = static_cast<Connection*>(s->data);
        if (self != nullptr) self->on_read(nread, buf->base);
      });
  if (rc != 0) {
    fail(true, strerror_of(rc));
    return;
  }
  if (tls_stream_) {
    handshake();
    return;
  }
  ready_ = true;
  flush();
  bool dead = false;
  bool* outer = std::exchange(destroyed_, &dead);
  listener_->connected();
  if (!dead) destroyed_ = outer;
}

bool Connection::handshake() {
  Result<bool> done = tls_stream_->handshake();
  if (done && *done) {
    ready_ = true;
    flush();  // the handshake's last bytes, then what waited
    if (closed_) return false;
    bool dead = false;
    bool* outer = std::exchange(destroyed_, &dead);
    listener_->connected();
    if (dead) return false;
    destroyed_ = outer;
    return !closed_;
  }
  if (done) {
    flush();  // our next handshake flight
    return !closed_;
  }
  std::string why = TlsContext::handshake_error(tls_stream_->ssl(), done.error());
  flush();  // the alert, if OpenSSL queued one
  fail(true, std::move(why));
  return false;
}

void Connection::on_read(ssize_t nread, const char* data) {
  if (closed_ || nread == 0) return;
  if (nread < 0) {
    fail(!ready_, nread == UV_EOF ? std::string("the server closed the connection") : strerror_of(static_cast<int>(nread)));
    return;
  }
  if (!tls_stream_) {
    deliver(data, static_cast<size_t>(nread));
    return;
  }
  tls_stream_->feed(std::string_view(data, static_cast<size_t>(nread)));
  if (!ready_ && !handshake()) return;
  if (ready_) read_tls();
}

bool Connection::read_tls() {
  for (;;) {
    Result<size_t> n = tls_stream_->read(buf_, sizeof buf_);
    if (n && *n > 0) {
      if (!deliver(buf_, *n)) return false;
      continue;
    }
    if (n) {
      flush();  // anything OpenSSL wants to say back (a key update)
      return !closed_;
    }
    // close_notify; a TLS error; or the server looping on post-handshake
    // messages (TlsStream's bound: the alert waits in the output).
    std::string why = n.error().code == Errc::Closed ? std::string("the server closed the connection")
                                                     : "TLS read failed: " + n.error().message();
    flush();
    fail(false, std::move(why));
    return false;
  }
}

bool Connection::deliver(const char* data, size_t len) {
  if (redisReaderFeed(reader_, data, len) != REDIS_OK) {
    fail(false, "protocol error: cannot buffer the reply");
    return false;
  }
  if (reader_->len - reader_->pos > kMaxBufferedReply) {
    fail(false, "protocol error: a reply larger than " + std::to_string(kMaxBufferedReply >> 20) + " MiB");
    return false;
  }
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
      fail(false, std::string("protocol error: ") + reader_->errstr);
      return false;
    }
    if (raw == nullptr) return true;
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> reply(static_cast<redisReply*>(raw), freeReplyObject);
    bool dead = false;
    bool* outer = std::exchange(destroyed_, &dead);
    listener_->reply(reply.get());
    if (dead) return false;
    destroyed_ = outer;
    if (closed_) return false;
  }
}

void Connection::fail(bool connecting, std::string why) {
  if (closed_) return;
  closed_ = true;
  ready_ = false;
  close_stream();
  bool dead = false;
  bool* outer = std::exchange(destroyed_, &dead);
  listener_->failed(connecting, std::move(why));
  if (!dead) destroyed_ = outer;
}

}  // namespace tlsfront::redis
