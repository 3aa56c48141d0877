#include "control/listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tlsfront::control {
namespace {

// Connections skip the per-connection setsockopt(TCP_NODELAY): they rely on
// Linux copying it from the listening socket at accept.
TEST(Listener, AcceptedSocketsInheritNoDelay) {
  config::Listener l;
  l.address = config::Endpoint{"127.0.0.1", 0};
  auto fd = bind_listener(l);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  ASSERT_EQ(::getsockname(fd->get(), reinterpret_cast<sockaddr*>(&a), &len), 0);

  UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(client.valid());
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  int accepted = -1;
  for (int i = 0; i < 1000 && accepted < 0; ++i) {  // the listener is non-blocking
    accepted = ::accept4(fd->get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (accepted < 0) ::usleep(1000);
  }
  ASSERT_GE(accepted, 0);
  UniqueFd conn(accepted);
  int nodelay = 0;
  socklen_t optlen = sizeof(nodelay);
  ASSERT_EQ(::getsockopt(conn.get(), IPPROTO_TCP, TCP_NODELAY, &nodelay, &optlen), 0);
  EXPECT_NE(nodelay, 0);
}

// Port 0 binds one free port: the first worker's socket gets it from the
// kernel, every other worker's socket binds that same port (SO_REUSEPORT),
// and each of them accepts there.
TEST(Listener, PortZeroIsOneFreePortForEveryWorker) {
  for (const char* host : {"127.0.0.1", "::1"}) {
    config::Listener l;
    l.address = config::Endpoint{host, 0};
    auto fds = bind_listeners(l, 3);
    ASSERT_TRUE(fds.ok()) << host << ": " << fds.error().message();
    ASSERT_EQ(fds->size(), 3u);
    const config::Endpoint first = bound_address(l.address, fds->front());
    EXPECT_EQ(first.host, host);
    EXPECT_NE(first.port, 0) << host;
    for (const auto& fd : *fds) EXPECT_EQ(bound_address(l.address, fd).port, first.port) << host;
    // A second port-0 group is another port: the kernel never hands out one
    // that a listening socket holds.
    auto other = bind_listeners(l, 1);
    ASSERT_TRUE(other.ok()) << other.error().message();
    EXPECT_NE(bound_address(l.address, other->front()).port, first.port) << host;
  }
}

// A fixed port held by anything else fails with the address, before any
// worker's socket shares it.
TEST(Listener, FixedPortInUseFailsNamingIt) {
  config::Listener any;
  any.address = config::Endpoint{"127.0.0.1", 0};
  auto held = bind_listeners(any, 1);  // "another tlsfront"
  ASSERT_TRUE(held.ok()) << held.error().message();
  config::Listener l;
  l.address = bound_address(any.address, held->front());
  auto fds = bind_listeners(l, 2);
  ASSERT_FALSE(fds.ok());
  EXPECT_EQ(fds.error().message().find("bind() to " + l.address.to_string() + " failed: Address already in use"),
            0u)
      << fds.error().message();
}

}  // namespace
}  // namespace tlsfront::control
