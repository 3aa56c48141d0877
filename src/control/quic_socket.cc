#include "control/quic_socket.h"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "control/listener.h"

namespace tlsfront::control {
namespace {

// The steering program (see the header): A = payload[0]; A = payload[A &
// 0x80 ? 6 : 1]; return A % count. A datagram too short to hold the octet
// makes the load fail, and the kernel falls back to its hash.
Status attach_steering(int fd, uint32_t count) {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),                // A = first octet
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x80, 0, 2),     // long header?
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6),                // A = DCID[0] of a long header
      BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),                  // skip the short-header load
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1),                // A = DCID[0] of a short header
      BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, count),           // A %= workers
      BPF_STMT(BPF_RET | BPF_A, 0),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0) {
    return make_error(Errc::Io, std::string("setsockopt(SO_ATTACH_REUSEPORT_CBPF) failed: ") + std::strerror(errno));
  }
  return {};
}

}  // namespace

Result<std::vector<UniqueFd>> bind_quic_sockets(const config::Listener& listener, size_t count) {
  const auto& ep = listener.address;
  sockaddr_storage ss{};
  const socklen_t len = to_sockaddr(ep, ss);
  if (len == 0) return make_error(Errc::Config, "invalid listen address " + ep.to_string());
  auto fail = [&ep](const char* what) {
    return make_error(Errc::Io,
                      std::string(what) + "() for QUIC on " + ep.to_string() + " (UDP) failed: " + std::strerror(errno));
  };
  std::vector<UniqueFd> out;
  for (size_t i = 0; i < count; ++i) {
    UniqueFd fd(::socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return fail("socket");
    int one = 1;
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) return fail("setsockopt(SO_REUSEADDR)");
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) return fail("setsockopt(SO_REUSEPORT)");
    if (ss.ss_family == AF_INET6 && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) {
      return fail("setsockopt(IPV6_V6ONLY)");
    }
    if (i == 0 && count > 1) {
      if (auto st = attach_steering(fd.get(), static_cast<uint32_t>(count)); !st) return st.take_error();
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) return fail("bind");
    out.push_back(std::move(fd));
  }
  return out;
}

}  // namespace tlsfront::control
