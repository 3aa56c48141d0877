#include "control/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <systemd/sd-daemon.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "log/log.h"

namespace tlsfront::control {

socklen_t to_sockaddr(const config::Endpoint& ep, sockaddr_storage& ss) {
  ss = {};
  if (ep.host.find(':') != std::string::npos) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(ep.port);
    return inet_pton(AF_INET6, ep.host.c_str(), &a->sin6_addr) == 1 ? sizeof(sockaddr_in6) : 0;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(ep.port);
  return inet_pton(AF_INET, ep.host.c_str(), &a->sin_addr) == 1 ? sizeof(sockaddr_in) : 0;
}

namespace {

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
  const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
  return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
}

// net.ipv4.tcp_fastopen of this network namespace; -1 when unreadable.
int tcp_fastopen_sysctl() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_fastopen");
  int value = -1;
  if (!(in >> value)) return -1;
  return value;
}

}  // namespace

int effective_tcp_fastopen(const config::Listener& listener) {
  if (listener.tcp_fastopen != config::Listener::kTcpFastOpenAuto) return listener.tcp_fastopen;
  const int sysctl = tcp_fastopen_sysctl();
  if (sysctl >= 0 && (sysctl & 0x2) != 0) return config::Listener::kTcpFastOpenDefaultQueue;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    log::warn(
        "TCP Fast Open is off: net.ipv4.tcp_fastopen is {} (the server side needs bit 0x2, e.g. "
        "sysctl -w net.ipv4.tcp_fastopen=3); set [[listen]] tcp_fastopen = 0 to silence this",
        sysctl < 0 ? std::string("unreadable") : std::to_string(sysctl));
  }
  return 0;
}

namespace {

Result<UniqueFd> bind_socket(const config::Listener& listener, bool reuseport) {
  const auto& ep = listener.address;
  sockaddr_storage ss{};
  const socklen_t len = to_sockaddr(ep, ss);
  const bool v6 = ss.ss_family == AF_INET6;
  if (len == 0) return make_error(Errc::Config, "invalid listen address " + ep.to_string());
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
  // Accepted sockets inherit it (Linux copies the listener's TCP options), so
  // no setsockopt per connection.
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) return fail("bind");
  // RFC 7413 §4.2: the server's SYN data queue; set before listen() so the
  // first SYN with a cookie is already served.
  if (const int qlen = reuseport ? effective_tcp_fastopen(listener) : 0;
      qlen > 0 && ::setsockopt(fd.get(), IPPROTO_TCP, TCP_FASTOPEN, &qlen, sizeof(qlen)) != 0) {
    return fail("setsockopt(TCP_FASTOPEN)");
  }
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

Result<std::vector<UniqueFd>> bind_listeners(const config::Listener& listener, size_t count) {
  // A port-0 probe would only prove that some port is free.
  if (listener.address.port != 0) {
    if (auto st = check_address_free(listener); !st) return st.take_error();
  }
  config::Listener same_port = listener;
  std::vector<UniqueFd> out;
  for (size_t i = 0; i < count; ++i) {
    auto fd = bind_listener(same_port);
    if (!fd) return fd.take_error();
    same_port.address = bound_address(listener.address, *fd);
    out.push_back(std::move(fd).value());
  }
  return out;
}

config::Endpoint bound_address(const config::Endpoint& configured, const UniqueFd& fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  config::Endpoint out = configured;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return out;
  out.port = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(local).sin6_port
                                               : reinterpret_cast<sockaddr_in&>(local).sin_port);
  return out;
}

Result<std::vector<UniqueFd>> adopt_activated_sockets(const std::vector<config::Listener>& listeners) {
  std::vector<UniqueFd> out(listeners.size());
  const int n = sd_listen_fds(/*unset_environment=*/1);
  if (n < 0) return make_error(Errc::Io, std::string("sd_listen_fds: ") + std::strerror(-n));
  for (int i = 0; i < n; ++i) {
    UniqueFd fd(SD_LISTEN_FDS_START + i);
    if (sd_is_socket_inet(fd.get(), AF_UNSPEC, SOCK_STREAM, /*listening=*/1, 0) <= 0) {
      return make_error(Errc::Io, "socket activation: fd " + std::to_string(fd.get()) +
                                      " is not a listening TCP socket (check the .socket unit: ListenStream=)");
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      return make_error(Errc::Io, std::string("socket activation: getsockname: ") + std::strerror(errno));
    }
    ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
    const int one = 1;  // inherited by accepted sockets, as for our own listeners
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    bool used = false;
    for (size_t l = 0; l < listeners.size() && !used; ++l) {
      sockaddr_storage want{};
      if (!out[l].valid() && to_sockaddr(listeners[l].address, want) != 0 && same_address(local, want)) {
        // systemd.socket's FastOpen= is unknown to Debian 12's systemd, so the
        // listener's TFO queue (RFC 7413 §4.2) is set here, as bind_listener
        // does; Linux allows it on a socket that already listens.
        const int qlen = effective_tcp_fastopen(listeners[l]);
        if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_FASTOPEN, &qlen, sizeof(qlen)) != 0) {
          return make_error(Errc::Io, "socket activation: setsockopt(TCP_FASTOPEN) on " +
                                          listeners[l].address.to_string() + ": " + std::strerror(errno));
        }
        out[l] = std::move(fd);
        used = true;
      }
    }
    if (!used) {
      char host[INET6_ADDRSTRLEN] = "?";
      const void* addr = local.ss_family == AF_INET6
                             ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6&>(local).sin6_addr)
                             : static_cast<const void*>(&reinterpret_cast<sockaddr_in&>(local).sin_addr);
      inet_ntop(local.ss_family, addr, host, sizeof(host));
      log::warn("socket activation: passed socket {} port {} matches no [[listen]] address; closing it", host,
                ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(local).sin6_port
                                                  : reinterpret_cast<sockaddr_in&>(local).sin_port));
    }
  }
  return out;
}

}  // namespace tlsfront::control
