#include "server/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tlsfront::server {

namespace {

Result<UniqueFd> bind_socket(const config::Listener& listener, bool reuseport) {
  const auto& ep = listener.address;
  const bool v6 = ep.host.find(':') != std::string::npos;
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(ep.port);
    if (inet_pton(AF_INET6, ep.host.c_str(), &a->sin6_addr) != 1) {
      return make_error(Errc::Config, "invalid listen address " + ep.to_string());
    }
    len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(ep.port);
    if (inet_pton(AF_INET, ep.host.c_str(), &a->sin_addr) != 1) {
      return make_error(Errc::Config, "invalid listen address " + ep.to_string());
    }
    len = sizeof(sockaddr_in);
  }
  auto fail = [&ep](const char* what) {
    return make_error(Errc::Io, std::string(what) + "() to " + ep.to_string() + " failed: " + std::strerror(errno));
  };
  UniqueFd fd(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail("socket");
  int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) return fail("setsockopt(SO_REUSEADDR)");
  if (reuseport && ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return fail("setsockopt(SO_REUSEPORT)");
  }
  if (v6 && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
    return fail("setsockopt(IPV6_V6ONLY)");
  }
  // Responses are written whole per iteration; Nagle would only add latency.
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) return fail("bind");
  if (reuseport && ::listen(fd.get(), listener.backlog) != 0) return fail("listen");
  return fd;
}

}  // namespace

Status check_address_free(const config::Listener& listener) {
  auto probe = bind_socket(listener, /*reuseport=*/false);
  if (!probe) return probe.take_error();
  return {};
}

Result<UniqueFd> bind_listener(const config::Listener& listener) { return bind_socket(listener, true); }

}  // namespace tlsfront::server
