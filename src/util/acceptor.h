// Acceptor: accepts the connections of one listening socket, and can stop
// accepting for a while without giving the socket up: the building block of
// the backoff at a resource limit (too many open files, no memory), used by
// each worker's listeners and by the admin listener.
//
// Why not uv_listen: libuv's listener (uv__server_io, libuv 1.44) answers
// EMFILE/ENFILE with its reserve-descriptor trick, uv__emfile_trick: close a
// descriptor held for the purpose, accept every pending connection and close
// it at once, re-open the reserve. In a process whose threads share the
// descriptor table another thread can take the freed descriptor between the
// close and the accept; the reserve then cannot be re-opened, every later
// accept fails, and uv__server_io calls the connection callback with the
// error in a loop that only ends when that callback closes the listener. A
// callback that just returns spins in that loop at 100 % CPU, never gets
// back to the event loop (no timers, no closes, no signals), and there is
// no call that pauses a uv_listen'ed socket short of closing it. So the
// socket is watched with a uv_poll_t (readable = a connection is pending)
// and accepted with accept4(2) here: pause() is uv_poll_stop, which takes the
// descriptor out of the epoll set (libuv's uv__poll_stop), so a paused
// listener costs no wake-up however many connections wait in its backlog;
// they are accepted after resume(), or time out in the client. The socket
// stays open throughout (a SO_REUSEPORT group keeps its members; a socket
// systemd passed cannot be re-bound).
//
// Per readable event at most kBatch connections are accepted (epoll is level
// triggered: the rest come on the next iteration, after the other handles'
// I/O). accept4 errors, per accept(2) (Linux):
// - EAGAIN/EWOULDBLOCK: nothing pending; EINTR: retried;
// - ECONNABORTED, EPERM (a firewall rule) and the network errors Linux
//   passes up from the new socket (ENETDOWN, EPROTO, ENOPROTOOPT,
//   EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH): that
//   connection is gone, the next one is tried;
// - anything else (EMFILE, ENFILE, ENOBUFS, ENOMEM, or a bug such as EBADF):
//   the acceptor pauses itself and calls `failed(errno)`. It stays paused
//   until its owner calls resume() (the owner's backoff timer), so no error
//   can make it spin.
// Thread affinity: the loop's thread only.
#pragma once

#include <uv.h>

#include <functional>

#include "util/unique_fd.h"
#include "util/uv_handle.h"

namespace tlsfront {

class Acceptor {
 public:
  static constexpr int kBatch = 16;

  // Called from the loop; neither may destroy the acceptor (pause() and
  // close() are fine).
  struct Callbacks {
    // A new connection: non-blocking, close-on-exec, owned by the callee.
    std::function<void(UniqueFd fd)> accepted;
    // accept4 failed with `err` (an errno value); the acceptor is paused.
    std::function<void(int err)> failed;
  };

  Acceptor() = default;
  ~Acceptor() { close(); }
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Watches `listen_fd` (a socket in the listening state, owned from now on)
  // on `loop` and starts accepting. Returns the libuv code of uv_poll_init
  // or uv_poll_start; on error the socket is closed.
  int open(uv_loop_t* loop, UniqueFd listen_fd, Callbacks callbacks);
  // Stops / restarts watching the socket. No-ops when already so, or closed.
  void pause();
  void resume();
  bool paused() const { return paused_; }
  // Stops watching and closes the socket. Idempotent.
  void close();

 private:
  void on_readable();

  UvHandle<uv_poll_t> poll_;
  UniqueFd fd_;  // closed after poll_ (libuv must stop polling it first)
  Callbacks callbacks_;
  bool paused_ = false;
};

// The errno a connection-accept loop counts as a resource limit (EMFILE,
// ENFILE, ENOBUFS, ENOMEM): the ones a backoff can outlast.
bool is_resource_limit(int err);

}  // namespace tlsfront
