// Fuzz target quic_datagram: datagrams from a client nobody validated,
// sent over loopback UDP to a QuicEndpoint (data/quic/quic_endpoint.h) on a
// real libuv loop: the endpoint's own dispatch of what no connection owns —
// Version Negotiation, stateless resets, new-connection Initials, their
// tokens (AddressTokens) and Retry. New connections are refused at the lease
// (the TLS handshake is ngtcp2's and GnuTLS's, fuzzed upstream).
//
// Input: the first octet's low bit asks for quic_retry; then datagrams, each
// a 2-octet big-endian length and that many octets (at most 1500).
// Beyond not crashing, every answer is checked:
//   - it is a Version Negotiation (long header, version 0), a Retry (long
//     header, version 1, type 3) or a stateless reset (short header);
//   - a stateless reset is smaller than the largest datagram sent;
//   - in all, answers are at most 3 times what was sent (RFC 9000 §8: the
//     anti-amplification limit for an unvalidated address).
// Any violation aborts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "config/config.h"
#include "data/quic/quic_endpoint.h"
#include "util/loop_context.h"
#include "util/unique_fd.h"

namespace {

using tlsfront::quic::QuicEndpoint;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "quic_datagram: %s\n", what);
  std::abort();
}

struct Rig {
  uv_loop_t loop;
  std::unique_ptr<tlsfront::LoopContext> context;
  std::shared_ptr<const tlsfront::quic::ServerCredentials> credentials;
  std::unique_ptr<QuicEndpoint> endpoint;
  bool retry = false;
  int client = -1;
  sockaddr_in server{};

  Rig() {
    uv_loop_init(&loop);
    context = std::make_unique<tlsfront::LoopContext>(&loop);
    // No certificate: no handshake is ever made here (the lease refuses);
    // the credentials carry the token and reset secrets.
    auto creds = tlsfront::quic::ServerCredentials::load(tlsfront::config::Tls{}, {}, nullptr, nullptr);
    if (!creds) fail("credentials");
    credentials = std::move(creds).value();
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof server;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&server), &len) != 0) {
      fail("server socket");
    }
    tlsfront::config::Endpoint address{"127.0.0.1", ntohs(server.sin_port)};
    endpoint = std::make_unique<QuicEndpoint>(
        &loop, 0, 2, address,
        [this]() -> std::optional<QuicEndpoint::Policy> {
          return QuicEndpoint::Policy{credentials, retry};
        },
        [](const std::string&, uint16_t) -> std::optional<QuicEndpoint::Lease> { return std::nullopt; }, nullptr);
    if (!endpoint->open(tlsfront::UniqueFd(fd))) fail("endpoint open");
    client = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (client < 0 || ::bind(client, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) fail("client socket");
  }
};

Rig& rig() {
  static Rig* r = new Rig();  // lives for the process (libFuzzer never tears down)
  return *r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Rig& r = rig();
  r.retry = (data[0] & 1) != 0;
  size_t at = 1, sent = 0, largest = 0, datagrams = 0;
  while (at + 2 <= size && datagrams < 64) {
    size_t len = (static_cast<size_t>(data[at]) << 8 | data[at + 1]) % 1501;
    at += 2;
    if (len > size - at) len = size - at;
    if (len == 0) continue;
    if (::sendto(r.client, data + at, len, 0, reinterpret_cast<const sockaddr*>(&r.server), sizeof r.server) ==
        static_cast<ssize_t>(len)) {
      sent += len;
      largest = std::max(largest, len);
      ++datagrams;
    }
    at += len;
  }
  // Every datagram is read (loopback delivers at once), then what answered.
  for (size_t i = 0; i < datagrams + 2; ++i) uv_run(&r.loop, UV_RUN_NOWAIT);
  size_t answered = 0;
  uint8_t buf[65536];
  for (;;) {
    const ssize_t n = ::recv(r.client, buf, sizeof buf, 0);
    if (n < 0) break;
    if (n == 0) continue;
    answered += static_cast<size_t>(n);
    const bool long_header = (buf[0] & 0x80) != 0;
    if (long_header) {
      if (n < 5) fail("a long-header answer shorter than its version");
      const uint32_t version = static_cast<uint32_t>(buf[1]) << 24 | buf[2] << 16 | buf[3] << 8 | buf[4];
      const bool vn = version == 0;
      const bool retry = version != 0 && ((buf[0] >> 4) & 0x3) == 3;  // in the Initial's version
      if (!vn && !retry) {
        std::fprintf(stderr, "answer %zd octets, first %02x, version %08x\n", n, buf[0], version);
        fail("a long-header answer that is neither Version Negotiation nor Retry");
      }
    } else {
      if (static_cast<size_t>(n) >= largest) fail("a stateless reset not smaller than what it answers");
      if (n < 21) fail("a stateless reset shorter than 21 octets");
    }
  }
  if (answered > 3 * sent) fail("more than 3x the client's bytes answered (anti-amplification)");
  return 0;
}
