#include "wsload/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace tlsfront::wsload {
namespace {

socklen_t make_sockaddr(const std::string& ip, uint16_t port, sockaddr_storage& ss) {
  ss = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return sizeof(sockaddr_in);
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return sizeof(sockaddr_in6);
  }
  return 0;
}

}  // namespace

bool parse_address(const std::string& s, std::string& ip, uint16_t& port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  ip = s.substr(0, colon);
  if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  char* end = nullptr;
  errno = 0;
  long p = std::strtol(s.c_str() + colon + 1, &end, 10);
  if (errno != 0 || end == s.c_str() + colon + 1 || *end != '\0' || p < 1 || p > 65535) return false;
  port = static_cast<uint16_t>(p);
  sockaddr_storage ss;
  return make_sockaddr(ip, port, ss) != 0;
}

int listen_on(const std::string& ip, uint16_t port, int backlog) {
  sockaddr_storage ss;
  socklen_t len = make_sockaddr(ip, port, ss);
  if (len == 0) return errno = EINVAL, -1;
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd, backlog) != 0) {
    int e = errno;
    close(fd);
    return errno = e, -1;
  }
  return fd;
}

int connect_nonblocking(const std::string& ip, uint16_t port) {
  sockaddr_storage ss;
  socklen_t len = make_sockaddr(ip, port, ss);
  if (len == 0) return errno = EINVAL, -1;
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    return errno = e, -1;
  }
  return fd;
}

}  // namespace tlsfront::wsload
