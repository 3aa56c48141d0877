#include "util/acceptor.h"

#include <sys/socket.h>

#include <cerrno>

namespace tlsfront {
namespace {

// accept(2), Linux: this pending connection is gone (or refused by a
// firewall rule); the next one may be fine.
bool connection_gone(int err) {
  switch (err) {
    case ECONNABORTED:
    case EPERM:
    case ENETDOWN:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool is_resource_limit(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

int Acceptor::open(uv_loop_t* loop, UniqueFd listen_fd, Callbacks callbacks) {
  close();
  callbacks_ = std::move(callbacks);
  int rc = poll_.init([&](uv_poll_t* h) { return uv_poll_init_socket(loop, h, listen_fd.get()); }, this);
  if (rc != 0) return rc;  // listen_fd closes here
  fd_ = std::move(listen_fd);
  paused_ = true;
  resume();
  if (paused_) {
    close();
    return UV_EINVAL;
  }
  return 0;
}

void Acceptor::pause() {
  if (paused_ || !poll_.active()) return;
  uv_poll_stop(poll_.get());
  paused_ = true;
}

void Acceptor::resume() {
  if (!paused_ || !poll_.active()) return;
  const int rc = uv_poll_start(poll_.get(), UV_READABLE, [](uv_poll_t* h, int status, int) {
    if (h->data) static_cast<Acceptor*>(h->data)->on_readable();
  });
  paused_ = rc != 0;
}

void Acceptor::close() {
  poll_.close();  // uv_close stops polling the descriptor before it is closed
  fd_.reset();
  paused_ = false;
}

void Acceptor::on_readable() {
  // A status error from uv_poll (EBADF) also ends in accept4's errno below.
  for (int i = 0; i < kBatch && !paused_ && fd_.valid(); ++i) {
    const int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      callbacks_.accepted(UniqueFd(fd));  // may pause() or close() this acceptor
      continue;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    if (err == EINTR || connection_gone(err)) continue;
    pause();
    callbacks_.failed(err);
    return;
  }
}

}  // namespace tlsfront
