// LoopbackListener: the listening half of the unit tests' thread servers
// (ThreadHttpServer, ThreadTlsServer): a TCP socket on 127.0.0.1:0 (the
// kernel picks the port) and a pipe whose write end wakes the server
// thread out of accept() so that it can stop.
// Thread affinity: wake() from any thread; accept() on the server's thread.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>

namespace tlsfront {

class LoopbackListener {
 public:
  LoopbackListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ::listen(fd_, 16);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    EXPECT_EQ(::pipe2(wake_, O_CLOEXEC), 0);
  }
  ~LoopbackListener() {
    ::close(fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  uint16_t port() const { return port_; }
  // Makes accept() return -1, now or at its next call.
  void wake() { (void)!::write(wake_[1], "x", 1); }
  // The next connection (blocking), or -1 once woken.
  int accept() {
    while (true) {
      pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents) return -1;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) return c;
    }
  }

 private:
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
};

}  // namespace tlsfront
