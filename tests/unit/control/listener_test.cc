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

}  // namespace
}  // namespace tlsfront::control
