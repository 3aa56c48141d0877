// Integration harness: FakeUpstream (see harness.h), a one-connection-at-a-time
// upstream on 127.0.0.1:0 that answers a request head with fixed bytes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "harness.h"

namespace tlsfront::itest {

struct FakeUpstream::State {
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::string response;
  std::atomic<int> accepted{0};
  std::thread thread;
};

FakeUpstream::FakeUpstream(std::string response, bool drop_second_request)
    : state_(std::make_shared<State>()) {
  state_->response = std::move(response);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::listen(fd, 16);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  state_->listen_fd = fd;
  if (::pipe2(state_->wake, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe2";
  State* st = state_.get();
  state_->thread = std::thread([st, drop_second_request] {
    while (true) {
      pollfd p[2] = {{st->listen_fd, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents) return;
      int c = ::accept4(st->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++st->accepted;
      std::string in;
      // Reads up to the end of the next request head; false on EOF/stop.
      auto read_head = [&] {
        char buf[4096];
        while (true) {
          if (size_t end = in.find("\r\n\r\n"); end != std::string::npos) {
            in.erase(0, end + 4);
            return true;
          }
          pollfd q[2] = {{c, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
          if (::poll(q, 2, -1) <= 0 || q[1].revents) return false;
          ssize_t n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) return false;
          in.append(buf, static_cast<size_t>(n));
        }
      };
      if (read_head()) {
        ::send(c, st->response.data(), st->response.size(), MSG_NOSIGNAL);
        if (drop_second_request) read_head();
      }
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
  });
}

FakeUpstream::~FakeUpstream() {
  (void)!::write(state_->wake[1], "x", 1);
  state_->thread.join();
  ::close(state_->listen_fd);
  ::close(state_->wake[0]);
  ::close(state_->wake[1]);
}

int FakeUpstream::accepted() const { return state_->accepted.load(); }

}  // namespace tlsfront::itest
